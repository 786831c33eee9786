//! The haystack around the story: file reads, searches, passing and
//! flaky runs, git, listings, private notes and chatter that carry no
//! ground truth.

use serde_json::json;

use super::outputs::{numbered_lines, passing_tests_output};
use super::vocabulary::{
    CODE_COMMENTS, COMMIT_TYPES, FILE_STEMS, FILLER_TEST_SUFFIXES, MODULES, SYMBOL_NOUNS, SYMBOL_VERBS,
};
use super::world::{Language, camel_case};
use super::{CRATE_NAME, Extra, Generator, TaskRun};

impl Generator {
    /// Events that carry no ground truth: what agents do between the
    /// story's beats. None of them names a task's file, symbol or error.
    pub(super) fn filler(&mut self, run: &TaskRun, owner: &str, count: usize) {
        for _ in 0..count {
            let language = if self.random.chance(0.7) {
                run.world.language
            } else {
                *self.random.pick(&[Language::Rust, Language::Python, Language::JavaScript])
            };
            match self.random.below(100) {
                0..=27 => self.filler_read(owner, language),
                28..=37 => self.filler_grep(owner, language),
                38..=51 => self.filler_test_run(owner, language),
                52..=58 => self.filler_git(owner, &run.world.task_id),
                59..=64 => self.filler_listing(owner, language),
                65..=67 => self.filler_scratch_note(owner, language),
                68..=69 => self.filler_flaky_run(owner),
                70..=84 => self.filler_chatter(owner, language),
                _ => {
                    let other = self.random.pick(&self.agents).clone();
                    self.filler_chatter(&other, language)
                }
            }
        }
    }

    /// A file no task is about: (module, stem, path).
    fn filler_path(&mut self, language: Language) -> (&'static str, &'static str, String) {
        loop {
            let module = *self.random.pick(MODULES);
            let stem = *self.random.pick(FILE_STEMS);
            let path = language.source_path(module, stem);
            if !self.reserved_paths.contains(&path) {
                return (module, stem, path);
            }
        }
    }

    fn filler_symbol(&mut self, language: Language) -> String {
        let snake = format!("{}_{}", self.random.pick(SYMBOL_VERBS), self.random.pick(SYMBOL_NOUNS));
        language.function_name(&snake)
    }

    pub(super) fn filler_test_name(&mut self, language: Language, module: &str) -> String {
        let snake = format!("{}_{}", self.random.pick(SYMBOL_NOUNS), self.random.pick(FILLER_TEST_SUFFIXES));
        match language {
            Language::Rust => format!("{module}::{}::tests::{snake}", self.random.pick(FILE_STEMS)),
            Language::Python => format!("tests/{module}/test_{}.py::test_{snake}", self.random.pick(FILE_STEMS)),
            Language::JavaScript => snake,
        }
    }

    fn filler_code_line(&mut self, language: Language) -> String {
        let symbol = self.filler_symbol(language);
        let noun = *self.random.pick(SYMBOL_NOUNS);
        let other = *self.random.pick(SYMBOL_NOUNS);
        let type_name = camel_case(noun, true);
        let comment = *self.random.pick(CODE_COMMENTS);
        let choice = self.random.below(6);
        match (language, choice) {
            (Language::Rust, 0) => format!("pub fn {symbol}(&self, {noun}: &{type_name}) -> anyhow::Result<u64> {{"),
            (Language::Rust, 1) => {
                format!("    let {noun} = self.{other}.get(&{noun}_id).copied().unwrap_or_default();")
            }
            (Language::Rust, 2) => format!("    // {comment}"),
            (Language::Rust, 3) => format!("    self.{other}.insert({noun}.id, {noun}.clone());"),
            (Language::Rust, 4) => format!("pub struct {type_name}{} {{", camel_case(other, true)),
            (Language::Rust, _) => format!("    pub {noun}: u64,"),
            (Language::Python, 0) => format!("def {symbol}(self, {noun}):"),
            (Language::Python, 1) => format!("    {noun} = self.{other}.get({noun}_id, 0)"),
            (Language::Python, 2) => format!("    # {comment}"),
            (Language::Python, 3) => format!("    self.{other}[{noun}.id] = {noun}"),
            (Language::Python, 4) => format!("class {type_name}{}:", camel_case(other, true)),
            (Language::Python, _) => format!("    {noun}: int = 0"),
            (Language::JavaScript, 0) => format!("export function {symbol}({noun}) {{"),
            (Language::JavaScript, 1) => format!("  const {noun} = this.{other}.get({noun}Id) ?? 0;"),
            (Language::JavaScript, 2) => format!("  // {comment}"),
            (Language::JavaScript, 3) => format!("  this.{other}.set({noun}.id, {noun});"),
            (Language::JavaScript, 4) => format!("export class {type_name}{} {{", camel_case(other, true)),
            (Language::JavaScript, _) => format!("  {noun} = 0;"),
        }
    }

    fn filler_read(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let first_line = self.random.between(1, 300) as u32;
        let lines: Vec<String> = (0..self.random.between(6, 14)).map(|_| self.filler_code_line(language)).collect();
        let last_line = first_line + lines.len() as u32 - 1;
        let args = json!({"path": path, "start_line": first_line, "end_line": last_line});
        self.tool(agent, "read_file", args, numbered_lines(first_line, &lines), 0, Extra::default());
    }

    fn filler_grep(&mut self, agent: &str, language: Language) {
        let symbol = self.filler_symbol(language);
        let hits: Vec<String> = (0..self.random.between(0, 4))
            .map(|_| {
                let (_, _, path) = self.filler_path(language);
                format!("{path}:{}:    let value = {symbol}(input);", self.random.between(5, 500))
            })
            .collect();
        let args = json!({"pattern": symbol, "path": ".", "fixed_strings": true});
        let exit_code = if hits.is_empty() { 1 } else { 0 };
        self.tool(agent, "grep", args, hits.join("\n"), exit_code, Extra::default());
    }

    fn filler_test_run(&mut self, agent: &str, language: Language) {
        let module = *self.random.pick(MODULES);
        let tests: Vec<String> =
            (0..self.random.between(3, 9)).map(|_| self.filler_test_name(language, module)).collect();
        let command = match language {
            Language::Rust => format!("cargo test -p {CRATE_NAME} {module}::"),
            Language::Python => format!("pytest -v tests/{module}"),
            Language::JavaScript => format!("node --test web/test/{module}/"),
        };
        let output = passing_tests_output(language, &tests, &mut self.random);
        self.bash(agent, &command, output, 0, Extra::default());
    }

    /// A distractor: an unrelated test that fails once (an assertion on
    /// numbers), with no ground truth attached.
    fn filler_flaky_run(&mut self, agent: &str) {
        let (module, stem, path) = self.filler_path(Language::Rust);
        let case = format!("{}_{}", self.random.pick(SYMBOL_NOUNS), self.random.pick(FILLER_TEST_SUFFIXES));
        let test = format!("{module}::{stem}::tests::{case}");
        let (left, right) = (self.random.between(1, 999), self.random.between(1000, 1999));
        let (line, column) = (self.random.between(20, 600), self.random.between(5, 40));
        let output = format!(
            r#"running 1 test
test {test} ... FAILED

failures:

---- {test} stdout ----

thread '{test}' panicked at {path}:{line}:{column}:
assertion `left == right` failed
  left: {left}
 right: {right}
note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace


failures:
    {test}

test result: FAILED. 0 passed; 1 failed; 0 ignored; 0 measured; 12 filtered out; finished in 0.03s"#
        );
        self.bash(agent, &format!("cargo test -p {CRATE_NAME} {test}"), output, 101, Extra::default());
    }

    fn filler_git(&mut self, agent: &str, task_id: &str) {
        if self.random.chance(0.5) {
            let lines: Vec<String> = (0..5)
                .map(|_| {
                    let (hash, kind) = (self.random.hex(7), *self.random.pick(COMMIT_TYPES));
                    let (module, symbol) = (*self.random.pick(MODULES), self.filler_symbol(Language::Rust));
                    format!("{hash} {kind}({module}): tidy {symbol}")
                })
                .collect();
            self.tool(agent, "git", json!({"args": ["log", "--oneline", "-5"]}), lines.join("\n"), 0, Extra::default());
        } else {
            let output = format!("On branch fix/{task_id}\nnothing to commit, working tree clean");
            self.tool(agent, "git", json!({"args": ["status"]}), output, 0, Extra::default());
        }
    }

    fn filler_listing(&mut self, agent: &str, language: Language) {
        let module = *self.random.pick(MODULES);
        let (directory, extension) = match language {
            Language::Rust => (format!("src/{module}"), "rs"),
            Language::Python => (format!("services/{module}"), "py"),
            Language::JavaScript => (format!("web/src/{module}"), "js"),
        };
        let files: Vec<String> =
            (0..self.random.between(3, 9)).map(|_| format!("{}.{extension}", self.random.pick(FILE_STEMS))).collect();
        self.bash(agent, &format!("ls {directory}"), files.join("\n"), 0, Extra::default());
    }

    fn filler_scratch_note(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let symbol = self.filler_symbol(language);
        let text = match self.random.below(3) {
            0 => format!("scratch: check {path} around line {} later", self.random.between(10, 600)),
            1 => format!("note to self: {symbol} might need a benchmark before #{}", self.random.between(100, 9999)),
            _ => format!(
                "todo: ask about the {} flag on line {} of {path}",
                self.random.pick(SYMBOL_NOUNS),
                self.random.between(10, 600)
            ),
        };
        let data = json!({"role": "scratchpad", "text": text});
        self.emit(agent, "message_recorded", data, Extra { private: true, ..Extra::default() });
    }

    fn filler_chatter(&mut self, agent: &str, language: Language) {
        let (_, _, path) = self.filler_path(language);
        let symbol = self.filler_symbol(language);
        let number = self.random.between(100, 99_999);
        let text = match self.random.below(8) {
            0 => format!("Reading {path} next to see how {symbol} is used."),
            1 => format!("CI run #{number} on main is green ({} jobs).", self.random.between(4, 40)),
            2 => format!("Rebased on main at {}; no conflicts.", self.random.hex(7)),
            3 => format!("Skimmed {path} up to line {}: nothing there explains this issue.", number % 700),
            4 => format!("Waiting for integration job #{number} before touching anything else."),
            5 => format!("FYI {symbol} in {path} has an old TODO (#{number}); leaving it alone."),
            6 => format!(
                "Benchmarks for {symbol}: p50 {} us, p99 {} us, unchanged.",
                self.random.between(5, 400),
                number % 9000 + 400
            ),
            _ => format!(
                "Deploy train {number} leaves at {:02}:{:02} UTC.",
                self.random.between(0, 23),
                self.random.between(0, 59)
            ),
        };
        self.message(agent, text, Extra::default());
    }
}
