//! What the agents see of the code: the task's function as read, and
//! what the test runners and compilers print about it.

use super::random::SeededRandom;
use super::world::{Language, TaskWorld, camel_case};
use super::{CRATE_NAME, CRATE_VERSION};

/// The task's function as the investigation reads it: numbered lines, the
/// buggy line the edits replace, and the line a type fix touches.
pub(super) struct CodeShape {
    pub(super) first_line: u32,
    pub(super) lines: Vec<String>,
    pub(super) buggy_line: u32,
    pub(super) indent: &'static str,
    pub(super) buggy_code: String,
    pub(super) type_fix: Option<(u32, String, String)>,
}

impl CodeShape {
    pub(super) fn of(world: &TaskWorld) -> CodeShape {
        let (symbol, error, field, limit, noun) =
            (&world.symbol, &world.error_name, world.field, world.limit, world.noun);
        let line = world.failing_line;
        match world.language {
            Language::Rust => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("    /// Adds one {noun} to the running {field}."),
                    format!("    pub fn {symbol}(&mut self, entry: &Entry) -> Result<u64, {error}> {{"),
                    format!("        let current = self.{field};"),
                    "        let delta = entry.amount;".to_string(),
                    format!("        tracing::debug!(current, delta, \"{symbol}\");"),
                    format!("        let total = checked(current + delta, {limit}).unwrap();"),
                    format!("        self.{field} = total;"),
                    "        Ok(total)".to_string(),
                    "    }".to_string(),
                ],
                buggy_line: line,
                indent: "        ",
                buggy_code: format!("let total = checked(current + delta, {limit}).unwrap();"),
                type_fix: Some((
                    line - 2,
                    "let delta = entry.amount;".to_string(),
                    "let delta = u64::from(entry.amount);".to_string(),
                )),
            },
            Language::Python => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("    def {symbol}(self, entry):"),
                    format!("        \"\"\"Add one {noun} to the running {field}.\"\"\""),
                    format!("        current, delta = self.{field}, entry[\"amount\"]"),
                    "        total = current + delta".to_string(),
                    format!("        if total > {limit}:"),
                    format!("            raise {error}(f\"{field} {{total}} exceeds {limit}\")"),
                    format!("        self.{field} = total"),
                    "        return total".to_string(),
                ],
                buggy_line: line - 2,
                indent: "        ",
                buggy_code: "total = current + delta".to_string(),
                type_fix: Some((
                    line - 3,
                    format!("current, delta = self.{field}, entry[\"amount\"]"),
                    format!("current, delta = int(self.{field}), int(entry[\"amount\"])"),
                )),
            },
            Language::JavaScript => CodeShape {
                first_line: line - 5,
                lines: vec![
                    format!("  /** Adds one {noun} to the running {field}. */"),
                    format!("  {symbol}(entry) {{"),
                    format!("    const current = this.{field}, delta = entry.amount;"),
                    "    const total = current + delta;".to_string(),
                    format!("    if (total > {limit}) {{"),
                    format!("      throw new {error}(`{field} ${{total}} exceeds {limit}`);"),
                    "    }".to_string(),
                    format!("    this.{field} = total;"),
                    "    return total;".to_string(),
                ],
                buggy_line: line - 2,
                indent: "    ",
                buggy_code: "const total = current + delta;".to_string(),
                type_fix: None,
            },
        }
    }

    pub(super) fn last_line(&self) -> u32 {
        self.first_line + self.lines.len() as u32 - 1
    }

    /// The listing with line numbers, as `read_file` shows it.
    pub(super) fn numbered(&self) -> String {
        numbered_lines(self.first_line, &self.lines)
    }

    /// The lines around the buggy line after it was replaced by `code`, as
    /// an edit tool echoes them (the function's header is not among them).
    pub(super) fn snippet_with(&self, code: &str) -> String {
        let index = (self.buggy_line - self.first_line) as usize;
        let mut lines = self.lines[index - 1..=index + 1].to_vec();
        lines[1] = format!("{}{code}", self.indent);
        numbered_lines(self.buggy_line - 1, &lines)
    }
}

pub(super) fn numbered_lines(first_line: u32, lines: &[String]) -> String {
    let mut text = String::new();
    for (offset, line) in lines.iter().enumerate() {
        if offset > 0 {
            text.push('\n');
        }
        text.push_str(&format!("{:>5}  {line}", first_line + offset as u32));
    }
    text
}

const RUSTC_LIBRARY_HASH: &str = "90b35a6239c3d8bdabc530a6a0816f7ff89a0aaf";

/// The task's test run before the fix: a real-looking failure with the
/// error name, the path and the line where it is raised. Templates are
/// written as the runners print them, flush left.
pub(super) fn failing_test_output(world: &TaskWorld, random: &mut SeededRandom) -> (String, i32) {
    let (path, line, column) = (&world.path, world.failing_line, world.failing_column);
    let (error, field, limit, attempted) = (&world.error_name, world.field, world.limit, world.attempted);
    let (test_path, test_name, symbol, module) = (&world.test_path, &world.test_name, &world.symbol, world.module);
    let test_line = line + random.between(60, 240) as u32;
    match world.language {
        Language::Rust => {
            let (test, stem, rustc) = (world.rust_test_path(), &world.stem, RUSTC_LIBRARY_HASH);
            let (seconds, hash, filtered) =
                (random.between(300, 4000) as f64 / 100.0, random.hex(16), random.between(20, 300));
            let output = format!(
                r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds:.2}s
     Running unittests src/lib.rs (target/debug/deps/{CRATE_NAME}-{hash})

running 1 test
test {test} ... FAILED

failures:

---- {test} stdout ----

thread '{test}' panicked at {path}:{line}:{column}:
called `Result::unwrap()` on an `Err` value: {error} {{ {field}: {attempted}, limit: {limit} }}
stack backtrace:
   0: rust_begin_unwind
             at /rustc/{rustc}/library/std/src/panicking.rs:665:5
   1: core::panicking::panic_fmt
             at /rustc/{rustc}/library/core/src/panicking.rs:76:14
   2: core::result::unwrap_failed
             at /rustc/{rustc}/library/core/src/result.rs:1700:5
   3: {CRATE_NAME}::{module}::{stem}::{symbol}
             at ./{path}:{line}:{column}
   4: {CRATE_NAME}::{test}
             at ./{path}:{test_line}:9
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.


failures:
    {test}

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; {filtered} filtered out; finished in 0.02s

error: test failed, to rerun pass `--lib`"#
            );
            (output, 101)
        }
        Language::Python => {
            let qualified = format!("{module}.{}.{error}", world.stem);
            let output = format!(
                r#"============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /repo
configfile: pyproject.toml
collected 1 item

{test_path} F                                                  [100%]

=================================== FAILURES ===================================
_________________________ {test_name} _________________________
Traceback (most recent call last):
  File "/repo/{test_path}", line {test_line}, in {test_name}
    {module}.{symbol}(entry)
  File "/repo/{path}", line {line}, in {symbol}
    raise {error}(f"{field} {{total}} exceeds {limit}")
{qualified}: {field} {attempted} exceeds {limit}
=========================== short test summary info ============================
FAILED {test_path}::{test_name} - {qualified}: {field} {attempted} exceeds {limit}
============================== 1 failed in 0.{}s ==============================="#,
                random.between(11, 99),
            );
            (output, 1)
        }
        Language::JavaScript => {
            let class = camel_case(module, true);
            let output = format!(
                r#"✖ {test_name} ({}.{}ms)
  {error}: {field} {attempted} exceeds {limit}
      at {class}.{symbol} (file:///repo/{path}:{line}:{column})
      at TestContext.<anonymous> (file:///repo/{test_path}:{test_line}:14)
      at Test.runInAsyncScope (node:async_hooks:214:14)
      at Test.run (node:internal/test_runner/test:1047:25)
      at async Test.processPendingSubtests (node:internal/test_runner/test:744:7)
ℹ tests 1
ℹ suites 0
ℹ pass 0
ℹ fail 1
ℹ cancelled 0
ℹ skipped 0
ℹ todo 0
ℹ duration_ms {}.{}"#,
                random.between(1, 9),
                random.between(10, 99),
                random.between(30, 90),
                random.between(1, 9),
            );
            (output, 1)
        }
    }
}

/// A passing run of tests, each line naming one test.
pub(super) fn passing_tests_output(language: Language, tests: &[String], random: &mut SeededRandom) -> String {
    let count = tests.len();
    match language {
        Language::Rust => {
            let lines: Vec<String> = tests.iter().map(|test| format!("test {test} ... ok")).collect();
            let (seconds, hash, filtered) =
                (random.between(200, 3000) as f64 / 100.0, random.hex(16), random.between(0, 400));
            format!(
                r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
    Finished `test` profile [unoptimized + debuginfo] target(s) in {seconds:.2}s
     Running unittests src/lib.rs (target/debug/deps/{CRATE_NAME}-{hash})

running {count} tests
{}

test result: ok. {count} passed; 0 failed; 0 ignored; 0 measured; {filtered} filtered out; finished in 0.{:02}s"#,
                lines.join("\n"),
                random.between(1, 99),
            )
        }
        Language::Python => {
            let percent = |index: usize| (index + 1) * 100 / count.max(1);
            let lines: Vec<String> = tests
                .iter()
                .enumerate()
                .map(|(index, test)| format!("{test} PASSED [{:>3}%]", percent(index)))
                .collect();
            format!(
                r#"============================= test session starts ==============================
platform linux -- Python 3.12.3, pytest-8.3.4, pluggy-1.5.0
rootdir: /repo
collected {count} items

{}

============================== {count} passed in {}.{:02}s ==============================="#,
                lines.join("\n"),
                random.between(0, 9),
                random.between(1, 99),
            )
        }
        Language::JavaScript => {
            let lines: Vec<String> = tests
                .iter()
                .map(|test| format!("✔ {test} ({}.{}ms)", random.between(0, 9), random.between(1, 99)))
                .collect();
            format!(
                r#"{}
ℹ tests {count}
ℹ suites 0
ℹ pass {count}
ℹ fail 0
ℹ cancelled 0
ℹ skipped 0
ℹ todo 0
ℹ duration_ms {}.{}"#,
                lines.join("\n"),
                random.between(40, 900),
                random.between(1, 9),
            )
        }
    }
}

/// The compile or type-check failure after the first edit, at the edited line.
pub(super) fn build_failure_output(world: &TaskWorld, code: &str, line: u32, first_edit: &str) -> String {
    let (path, field, column) = (&world.path, world.field, world.failing_column);
    let (message, label) = match code {
        "E0308" => ("mismatched types".to_string(), "expected `u64`, found `u32`"),
        "E0599" => (
            format!("no method named `as_{field}` found for type `u32` in the current scope"),
            "method not found in `u32`",
        ),
        "E0425" => ("cannot find value `delta` in this scope".to_string(), "not found in this scope"),
        "E0382" => ("borrow of moved value: `entry`".to_string(), "value borrowed here after move"),
        mypy_code => {
            let message = match mypy_code {
                "arg-type" => {
                    format!(r#"Argument 1 to "{}" has incompatible type "str"; expected "int""#, world.symbol)
                }
                "assignment" => {
                    r#"Incompatible types in assignment (expression has type "float", variable has type "int")"#
                        .to_string()
                }
                _ => format!(r#"Item "None" of "Optional[Entry]" has no attribute "{field}""#),
            };
            let checked = 10 + line % 40;
            return format!(
                "{path}:{line}: error: {message}  [{mypy_code}]\nFound 1 error in 1 file (checked {checked} source files)"
            );
        }
    };
    let gutter = " ".repeat(line.to_string().len());
    format!(
        r#"   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)
error[{code}]: {message}
{gutter}--> {path}:{line}:{column}
{gutter} |
{line} |         {first_edit}
{gutter} |                     ^^^^^ {label}

For more information about this error, try `rustc --explain {code}`.
error: could not compile `{CRATE_NAME}` (lib) due to 1 previous error"#
    )
}
