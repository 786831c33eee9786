//! Normalised signatures of failures, read from the output of a failed run.
//!
//! A signature names a failure independently of where the code happens to
//! be today: the language, the error type, and the innermost application
//! frames of the stack (function names only; paths, line and column numbers
//! and library frames are dropped), innermost first and joined by `<`
//! ("called from"): `python:KeyError:_session_from<refresh<get`. Two runs
//! that fail the same way get the same signature even after unrelated
//! lines moved, which is what lets a later edit be recognised as the fix.
//!
//! Recognised: Python tracebacks (native and pytest's long and short
//! formats, and its summary lines as a last resort), Rust panics (with or
//! without a backtrace) and compiler errors, JavaScript/Node stack traces,
//! Go panics, fatal errors and test failures.

use super::mentions::{is_identifier, looks_random};
use super::names::collapse_whitespace;

/// Frames kept in a signature: enough to tell apart two failures of the
/// same type, few enough that refactoring a distant caller keeps it.
pub(crate) const MAX_FRAMES: usize = 3;

/// Distinct failures taken from one output. Test runs report several;
/// beyond a handful they are almost always one cause seen many times.
pub(crate) const MAX_SIGNATURES: usize = 4;

/// Longest failure message kept as a node attribute, in characters.
const MAX_MESSAGE_CHARS: usize = 200;

/// One recognised failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FailureSignature {
    /// `python`, `rust`, `rustc`, `js` or `go`.
    pub language: &'static str,
    /// The exception class (`KeyError`), the panic category
    /// (`assertion_failed`), or the compiler error code (`E0432`).
    pub error_type: String,
    /// Innermost application frames, at most [`MAX_FRAMES`].
    pub frames: Vec<String>,
    /// The first line of the failure's message.
    pub message: String,
}

impl FailureSignature {
    fn new(language: &'static str, error_type: impl Into<String>, mut frames: Vec<String>, message: &str) -> Self {
        frames.dedup();
        frames.truncate(MAX_FRAMES);
        let message: String = collapse_whitespace(message).chars().take(MAX_MESSAGE_CHARS).collect();
        FailureSignature { language, error_type: error_type.into(), frames, message }
    }

    /// The signature text: `language:type`, then `:` and the frames joined
    /// by `<` when there are any.
    pub(crate) fn key(&self) -> String {
        let mut key = format!("{}:{}", self.language, self.error_type);
        if !self.frames.is_empty() {
            key.push(':');
            key.push_str(&self.frames.join("<"));
        }
        key
    }

    /// Whether the type is a class name (an exception type worth its own
    /// entity), rather than a category or an error code.
    pub(crate) fn type_is_class(&self) -> bool {
        matches!(self.language, "python" | "js") && is_identifier(&self.error_type)
    }
}

/// The failures in `output`, in order of appearance, deduplicated by
/// signature, at most [`MAX_SIGNATURES`].
pub(crate) fn failure_signatures(output: &str) -> Vec<FailureSignature> {
    let lines: Vec<&str> = output.lines().collect();
    let mut found: Vec<(usize, FailureSignature)> = Vec::new();
    let python = python_tracebacks(&lines);
    let python = if python.is_empty() { pytest_sections(&lines) } else { python };
    let python = if python.is_empty() { pytest_summary(&lines) } else { python };
    found.extend(python);
    found.extend(rust_panics(&lines));
    found.extend(rustc_errors(&lines));
    found.extend(javascript_errors(&lines));
    let go = go_panics(&lines);
    let go = if go.is_empty() { go_test_failures(&lines) } else { go };
    found.extend(go);
    found.sort_by_key(|(line, _)| *line);
    let mut signatures: Vec<FailureSignature> = Vec::new();
    for (_, signature) in found {
        if signatures.len() == MAX_SIGNATURES {
            break;
        }
        if !signatures.iter().any(|known| known.key() == signature.key()) {
            signatures.push(signature);
        }
    }
    signatures
}

/// A frame name safe inside a signature: `<` and `>` separate frames, so
/// `<module>` becomes `module` and `Object.<anonymous>` `Object.anonymous`.
fn clean_frame(name: &str) -> String {
    name.trim().chars().filter(|character| !matches!(character, '<' | '>')).collect()
}

fn is_library_frame_path(path: &str) -> bool {
    ["site-packages/", "dist-packages/", "/lib/python", "<frozen ", "node_modules/", "/rustc/", "/.cargo/registry/"]
        .iter()
        .any(|marker| path.contains(marker))
}

// ---------------------------------------------------------------- Python

/// `Traceback (most recent call last):` blocks. In a chain ("During
/// handling of the above exception…", "…was the direct cause…") only the
/// last exception is kept: it is the one that escaped.
fn python_tracebacks(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found: Vec<(usize, FailureSignature)> = Vec::new();
    let mut previous_end: Option<usize> = None;
    let mut index = 0;
    while index < lines.len() {
        if !lines[index].trim_start().starts_with("Traceback (most recent call last)") {
            index += 1;
            continue;
        }
        let (signature, end) = python_traceback_at(lines, index);
        let chained = previous_end.is_some_and(|previous_end| {
            lines[previous_end..index].iter().any(|line| {
                line.contains("During handling of the above exception") || line.contains("was the direct cause of")
            })
        });
        if let Some(signature) = signature {
            if chained {
                found.pop();
            }
            found.push((index, signature));
        }
        previous_end = Some(end);
        index = end.max(index + 1);
    }
    found
}

/// Parses the traceback whose header is at `header`; returns it and the
/// index of the line after its exception line.
fn python_traceback_at(lines: &[&str], header: usize) -> (Option<FailureSignature>, usize) {
    let mut frames = Vec::new();
    let mut index = header + 1;
    while index < lines.len() {
        let line = lines[index];
        if let Some((path, function)) = python_frame(line) {
            if !is_library_frame_path(path) {
                frames.push(clean_frame(function));
            }
        } else if !(line.starts_with(' ') || line.starts_with('\t') || line.trim().is_empty()) {
            break;
        }
        index += 1;
    }
    let Some(exception_line) = lines.get(index) else { return (None, index) };
    let signature = python_exception(exception_line).map(|(error_type, message)| {
        frames.reverse();
        FailureSignature::new("python", error_type, frames, message)
    });
    (signature, index + 1)
}

/// `  File "path", line 12, in function` → (path, function).
fn python_frame(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim_start().strip_prefix("File \"")?;
    let (path, rest) = rest.split_once('"')?;
    let (_, function) = rest.split_once(", in ")?;
    Some((path, function.trim()))
}

/// `KeyError: 'refresh_token'`, `requests.exceptions.HTTPError: 404`,
/// `AssertionError` → (type without its module, message).
fn python_exception(line: &str) -> Option<(String, &str)> {
    let (qualified, message) = match line.split_once(':') {
        Some((qualified, message)) => (qualified.trim(), message.trim()),
        None => (line.trim(), ""),
    };
    let error_type = qualified.rsplit('.').next()?;
    let valid = qualified.split('.').all(is_identifier) && error_type.starts_with(|c: char| c.is_ascii_uppercase());
    valid.then(|| (error_type.to_string(), message))
}

/// pytest's long (`--tb=long`/`auto`) and short (`--tb=short`) failure
/// sections, each headed by `____ test_name ____`.
fn pytest_sections(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let headers: Vec<usize> = (0..lines.len()).filter(|&index| is_pytest_section_header(lines[index])).collect();
    let mut found = Vec::new();
    for (position, &start) in headers.iter().enumerate() {
        let end = headers.get(position + 1).copied().unwrap_or(lines.len());
        let end = (start + 1..end).find(|&index| lines[index].starts_with("====")).unwrap_or(end);
        if let Some(signature) = pytest_section(&lines[start + 1..end]) {
            found.push((start, signature));
        }
    }
    found
}

fn is_pytest_section_header(line: &str) -> bool {
    let trimmed = line.trim();
    trimmed.len() > 8
        && trimmed.starts_with("___")
        && trimmed.ends_with("___")
        && trimmed.trim_matches('_').trim().contains(|c: char| c.is_alphanumeric())
        && !trimmed.trim_matches('_').trim().starts_with('_')
        && trimmed.contains(' ')
}

fn pytest_section(lines: &[&str]) -> Option<FailureSignature> {
    let mut frames: Vec<String> = Vec::new();
    let mut last_definition: Option<&str> = None;
    let mut error_type: Option<String> = None;
    let mut message: Option<&str> = None;
    let mut asserted = false;
    for line in lines {
        if let Some(function) = pytest_short_frame(line) {
            frames.push(clean_frame(function));
        } else if let Some(function) = python_definition(line) {
            last_definition = Some(function);
        } else if line.starts_with('>') {
            if let Some(function) = last_definition.take() {
                frames.push(clean_frame(function));
            }
        } else if let Some(text) = line.strip_prefix('E').filter(|rest| rest.starts_with(' ')) {
            let text = text.trim();
            if message.is_none() {
                message = Some(text);
            }
            asserted |= text.starts_with("assert ");
            if error_type.is_none() {
                error_type = python_exception(text).filter(|_| text.contains(':')).map(|(error_type, _)| error_type);
            }
        } else if let Some(located_type) = pytest_location_type(line) {
            error_type = Some(located_type.to_string());
        }
    }
    let error_type = error_type.or_else(|| asserted.then(|| "AssertionError".to_string()))?;
    frames.reverse();
    Some(FailureSignature::new("python", error_type, frames, message.unwrap_or("")))
}

/// `tests/test_client.py:37: in test_get` → `test_get`.
fn pytest_short_frame(line: &str) -> Option<&str> {
    let (location, function) = line.split_once(": in ")?;
    let (_, line_number) = location.rsplit_once(':')?;
    let is_frame = line_number.bytes().all(|byte| byte.is_ascii_digit()) && !line.starts_with(' ');
    (is_frame && is_identifier(function.trim()) && !is_library_frame_path(location)).then(|| function.trim())
}

/// `    def get(self, path):` → `get`.
fn python_definition(line: &str) -> Option<&str> {
    let rest = line.trim_start();
    let rest = rest.strip_prefix("async ").unwrap_or(rest);
    let rest = rest.strip_prefix("def ")?;
    let name = rest.split('(').next()?.trim();
    is_identifier(name).then_some(name)
}

/// `authsvc/client.py:34: KeyError` → `KeyError`.
fn pytest_location_type(line: &str) -> Option<&str> {
    let (location, error_type) = line.rsplit_once(": ")?;
    let (_, line_number) = location.rsplit_once(':')?;
    let error_type = error_type.trim();
    let is_location = !line_number.is_empty() && line_number.bytes().all(|byte| byte.is_ascii_digit());
    let type_name = error_type.rsplit('.').next()?;
    (is_location && error_type.split('.').all(is_identifier) && type_name.starts_with(|c: char| c.is_ascii_uppercase()))
        .then_some(type_name)
}

/// `FAILED tests/test_x.py::test_name - KeyError: 'x'`, when nothing better
/// was printed (`--tb=no`, `-q`).
fn pytest_summary(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(rest) = line.strip_prefix("FAILED ").or_else(|| line.strip_prefix("ERROR ")) else { continue };
        let (node_id, reason) = rest.split_once(" - ").unwrap_or((rest, ""));
        let Some((_, test_name)) = node_id.trim().rsplit_once("::") else { continue };
        let test_name = test_name.split('[').next().unwrap_or(test_name);
        let error_type = python_exception(reason).map_or_else(|| "failed".to_string(), |(error_type, _)| error_type);
        found.push((index, FailureSignature::new("python", error_type, vec![clean_frame(test_name)], reason)));
    }
    found
}

// ------------------------------------------------------------------ Rust

/// `thread 'name' panicked at …` with its message and, when printed, the
/// backtrace that follows.
fn rust_panics(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some((thread, location, inline_message)) = rust_panic_header(line) else { continue };
        let message = inline_message.unwrap_or_else(|| lines.get(index + 1).map_or("", |line| line.trim()));
        let mut frames = rust_backtrace_frames(&lines[index + 1..]);
        if frames.is_empty() {
            frames.extend(rust_thread_frame(thread).or_else(|| location_file_name(location)));
        }
        found.push((index, FailureSignature::new("rust", rust_panic_category(message), frames, message)));
    }
    found
}

/// → (thread name, location, message when printed on the same line, as
/// before Rust 1.73: `panicked at 'msg', src/x.rs:1:2`).
fn rust_panic_header(line: &str) -> Option<(&str, &str, Option<&str>)> {
    let rest = line.trim_start().strip_prefix("thread '")?;
    let (thread, rest) = rest.split_once("' panicked at ")?;
    let rest = rest.trim_end();
    if let Some(quoted) = rest.strip_prefix('\'') {
        let (message, location) = quoted.rsplit_once("', ")?;
        return Some((thread, location, Some(message)));
    }
    Some((thread, rest.trim_end_matches(':'), None))
}

/// Application frames of the backtrace following a panic header, up to
/// the next panic or the end of the test's output.
fn rust_backtrace_frames(lines: &[&str]) -> Vec<String> {
    let mut frames = Vec::new();
    for line in lines {
        let trimmed = line.trim();
        if trimmed.starts_with("thread '") || trimmed.starts_with("failures:") || trimmed.starts_with("---- ") {
            break;
        }
        let Some((number, symbol)) = trimmed.split_once(": ") else { continue };
        if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) || is_rust_library_symbol(symbol) {
            continue;
        }
        if let Some(function) = rust_function_name(symbol) {
            frames.push(function);
        }
    }
    frames
}

/// Frames of the standard library, the test harness, async runtimes and
/// the C start-up code.
fn is_rust_library_symbol(symbol: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "std::",
        "core::",
        "alloc::",
        "__rustc::",
        "rust_begin_unwind",
        "rust_panic",
        "test::",
        "<std::",
        "<core::",
        "<alloc::",
        "<F as ",
        "<T as ",
        "tokio::",
        "<tokio::",
        "futures_",
        "backtrace::",
        "__rust",
        "__libc_start",
    ];
    const EXACT: &[&str] = &["main", "_start", "start_thread", "clone", "clone3", "<unknown>"];
    PREFIXES.iter().any(|prefix| symbol.starts_with(prefix)) || EXACT.contains(&symbol.trim())
}

/// The function of a demangled symbol: `::{{closure}}`, the hash suffix and
/// generic arguments dropped, then the last path segment:
/// `auth_service::auth::token::tests::rotates::{{closure}}` → `rotates`,
/// `<app::Pg as app::Store>::find::h0123456789abcdef` → `find`.
fn rust_function_name(symbol: &str) -> Option<String> {
    let mut depth = 0usize;
    let mut without_generics = String::with_capacity(symbol.len());
    for character in symbol.chars() {
        match character {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            _ if depth == 0 => without_generics.push(character),
            _ => {}
        }
    }
    let segments: Vec<&str> = without_generics
        .split("::")
        .filter(|segment| !segment.is_empty() && *segment != "{{closure}}")
        .filter(|segment| {
            !(segment.len() == 17 && segment.starts_with('h') && segment[1..].bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .collect();
    let last = segments.last()?.trim();
    is_identifier(last).then(|| last.to_string())
}

/// A test thread is named after the test: its last segment is the frame.
fn rust_thread_frame(thread: &str) -> Option<String> {
    let name = thread.rsplit("::").next()?;
    (!matches!(name, "main" | "<unnamed>") && is_identifier(name)).then(|| name.to_string())
}

/// `src/auth/token.rs:125:9` → `token.rs`: when nothing else names where
/// a panic happened, the file does (its directories and position do not
/// enter the signature).
fn location_file_name(location: &str) -> Option<String> {
    let path = location.trim().split(':').next()?;
    let file_name = path.rsplit('/').next()?;
    let plausible = !file_name.is_empty() && !file_name.contains(char::is_whitespace) && file_name.contains('.');
    plausible.then(|| file_name.to_string())
}

fn rust_panic_category(message: &str) -> &'static str {
    let message = message.trim();
    if message.starts_with("assertion") {
        "assertion_failed"
    } else if message.contains("`Option::unwrap()` on a `None` value") {
        "unwrap_none"
    } else if message.contains("`Result::unwrap()` on an `Err` value") {
        "unwrap_err"
    } else if message.contains("index out of bounds") {
        "index_out_of_bounds"
    } else if message.starts_with("attempt to") && message.contains("overflow") {
        "arithmetic_overflow"
    } else if message.contains("divide by zero") {
        "divide_by_zero"
    } else if message.starts_with("not yet implemented") {
        "todo"
    } else if message.starts_with("not implemented") {
        "unimplemented"
    } else if message.contains("entered unreachable code") {
        "unreachable"
    } else {
        "panic"
    }
}

/// `error[E0432]: …` and uncoded `error: …` diagnostics that point at a
/// source location (` --> src/auth/token.rs:7:5`), which leaves out
/// summary lines such as `error: could not compile`.
fn rustc_errors(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some((code, message)) = rustc_diagnostic(line) else { continue };
        let location = lines[index + 1..]
            .iter()
            .take(4)
            .find_map(|line| line.trim_start().strip_prefix("--> "))
            .and_then(location_file_name);
        let Some(file_name) = location else { continue };
        found.push((index, FailureSignature::new("rustc", code, vec![file_name], message)));
    }
    found
}

/// → (code or `error`, message).
fn rustc_diagnostic(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix("error")?;
    if let Some(coded) = rest.strip_prefix('[') {
        let (code, message) = coded.split_once("]: ")?;
        let valid = code.len() == 5 && code.starts_with('E') && code[1..].bytes().all(|byte| byte.is_ascii_digit());
        return valid.then_some((code, message));
    }
    rest.strip_prefix(": ").map(|message| ("error", message))
}

// ------------------------------------------------------------ JavaScript

/// `TypeError: message` followed by `    at …` frames (Node, Deno, browsers
/// in V8 format, and the test runners that print them).
fn javascript_errors(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some((error_type, message)) = javascript_error_header(line) else { continue };
        let frame_lines: Vec<&str> =
            lines[index + 1..].iter().map(|line| line.trim()).take_while(|line| line.starts_with("at ")).collect();
        if frame_lines.is_empty() {
            continue;
        }
        let frames = frame_lines.iter().filter_map(|line| javascript_frame(line)).collect();
        found.push((index, FailureSignature::new("js", error_type, frames, message)));
    }
    found
}

/// `TypeError: Cannot read…`, `AssertionError [ERR_ASSERTION]: …`,
/// `Error: boom` → (type, message).
fn javascript_error_header(line: &str) -> Option<(&str, &str)> {
    let trimmed = line.trim();
    let (head, message) = trimmed.split_once(": ")?;
    let error_type = head.split(" [").next()?.trim();
    let error_type = error_type.strip_prefix("Uncaught ").unwrap_or(error_type);
    let is_error_type = error_type == "Error"
        || ((error_type.ends_with("Error") || error_type.ends_with("Exception")) && !looks_random(error_type));
    (is_error_type && is_identifier(error_type)).then_some((error_type, message))
}

/// `at msUntilRefresh (file:///repo/web/src/session.js:41:25)` →
/// `msUntilRefresh`; runtime-internal and dependency frames → `None`;
/// frames without a function name → `anonymous`.
fn javascript_frame(line: &str) -> Option<String> {
    let rest = line.strip_prefix("at ")?.trim();
    let (name, location) = match rest.strip_suffix(')').and_then(|inner| inner.rsplit_once(" (")) {
        Some((name, location)) => (Some(name), location),
        None => (None, rest),
    };
    if location.starts_with("node:") || location.contains("node_modules/") || location.starts_with("internal/") {
        return None;
    }
    let name = name.map(|name| name.trim_start_matches("async ").trim_start_matches("new ").trim());
    let cleaned = clean_frame(name.filter(|name| !name.is_empty()).unwrap_or("anonymous"));
    Some(cleaned)
}

// -------------------------------------------------------------------- Go

/// `panic: …` and `fatal error: …` with the goroutine trace that follows.
fn go_panics(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        let message = line.strip_prefix("panic: ").or_else(|| line.strip_prefix("fatal error: "));
        let Some(message) = message else {
            index += 1;
            continue;
        };
        let Some(goroutine) = (index + 1..lines.len()).take(8).find(|&at| lines[at].starts_with("goroutine ")) else {
            index += 1;
            continue;
        };
        let frames = go_frames(&lines[goroutine + 1..]);
        let message = message.trim_end_matches(" [recovered]");
        found.push((index, FailureSignature::new("go", go_panic_category(line, message), frames, message)));
        // One panic per trace: a re-panic prints its own `panic:` line first.
        index = goroutine + 1;
    }
    found
}

/// Function lines of a goroutine trace (each followed by a tab-indented
/// `file.go:line` line), runtime and test-harness frames dropped.
fn go_frames(lines: &[&str]) -> Vec<String> {
    let mut frames = Vec::new();
    for pair in lines.windows(2) {
        let (function_line, location_line) = (pair[0], pair[1]);
        if function_line.trim().is_empty() && !frames.is_empty() {
            break;
        }
        if function_line.starts_with(char::is_whitespace) || !location_line.starts_with('\t') {
            continue;
        }
        if !location_line.contains(".go:") {
            continue;
        }
        if let Some(function) = go_function_name(function_line) {
            frames.push(function);
        }
    }
    frames
}

/// `github.com/acme/auth/token.(*Issuer).Refresh(0xc000010000, {0x0, 0x0})`
/// → `Issuer.Refresh`; `main.main()` → `main`; runtime, testing and
/// reflect frames → `None`.
fn go_function_name(line: &str) -> Option<String> {
    let line = line.trim().trim_start_matches("created by ");
    let line = line.split(" in goroutine").next()?;
    let without_arguments = strip_trailing_arguments(line);
    let local = without_arguments.rsplit('/').next()?;
    let (package, function) = local.split_once('.')?;
    if matches!(package, "runtime" | "testing" | "reflect") {
        return None;
    }
    let function: String = function.chars().filter(|character| !matches!(character, '(' | ')' | '*')).collect();
    (!function.is_empty()).then_some(function)
}

/// Drops a trailing balanced `( … )` argument list.
fn strip_trailing_arguments(line: &str) -> &str {
    if !line.ends_with(')') {
        return line;
    }
    let mut depth = 0usize;
    for (offset, character) in line.char_indices().rev() {
        match character {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    return &line[..offset];
                }
            }
            _ => {}
        }
    }
    line
}

fn go_panic_category(line: &str, message: &str) -> &'static str {
    let message = message.trim();
    if line.starts_with("fatal error: ") {
        return if message.contains("deadlock") {
            "deadlock"
        } else if message.contains("concurrent map") {
            "concurrent_map_access"
        } else {
            "fatal_error"
        };
    }
    match message.strip_prefix("runtime error: ") {
        Some(runtime) if runtime.contains("nil pointer dereference") => "nil_pointer_dereference",
        Some(runtime) if runtime.starts_with("index out of range") => "index_out_of_range",
        Some(runtime) if runtime.starts_with("slice bounds out of range") => "slice_bounds_out_of_range",
        Some(runtime) if runtime.contains("divide by zero") => "divide_by_zero",
        Some(_) => "runtime_error",
        None if message.starts_with("assignment to entry in nil map") => "nil_map_assignment",
        None => "panic",
    }
}

/// `--- FAIL: TestRefresh (0.00s)`, when no panic explains the failure.
fn go_test_failures(lines: &[&str]) -> Vec<(usize, FailureSignature)> {
    let mut found = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix("--- FAIL: ") else { continue };
        let Some(test_name) = rest.split_whitespace().next() else { continue };
        // The first reason line after the header, if the test printed one.
        let message = lines.get(index + 1).map(|line| line.trim()).unwrap_or("");
        // A subtest (`TestRefresh/expired`) fails as part of its test.
        let frame = test_name.split('/').next().unwrap_or(test_name);
        found.push((index, FailureSignature::new("go", "test_failed", vec![clean_frame(frame)], message)));
    }
    found
}
