//! Hand-written recognisers for what free text mentions: file paths, code
//! identifiers, error names, text in backticks, event ids.
//!
//! They aim for few false positives rather than full recall: a wrong
//! mention adds a misleading edge to every query that walks through it,
//! while a missed one only loses a link that the full-text index still
//! finds. Hence the rules below: a path needs a file extension (or a
//! well-known extension-less name), an identifier needs an `_` or two
//! camel-case humps, and random-looking tokens (ids, hashes, secrets) are
//! refused.

use std::collections::BTreeSet;

/// Extensions that make a slash-less word a file name (`Cargo.toml`,
/// `client.py`). Paths with a `/` accept any alphanumeric extension.
const KNOWN_EXTENSIONS: &[&str] = &[
    "bash", "c", "cc", "cfg", "cjs", "clj", "cmake", "conf", "cpp", "cs", "css", "csv", "cxx", "dart", "diff", "erl",
    "ex", "exs", "go", "gql", "gradle", "graphql", "h", "hcl", "hh", "hpp", "hrl", "hs", "htm", "html", "ini", "ipynb",
    "java", "jl", "js", "json", "jsonl", "jsx", "kt", "kts", "less", "lock", "lua", "md", "mjs", "mk", "ml", "mm",
    "nim", "patch", "php", "pl", "proto", "ps1", "py", "pyi", "r", "rb", "rs", "rst", "sass", "scala", "scss", "sh",
    "sql", "svelte", "swift", "tf", "toml", "ts", "tsv", "tsx", "txt", "vue", "xml", "yaml", "yml", "zig", "zsh",
];

/// "Extensions" of names that are not files even with a `/` in them:
/// `acme/auth-service.git`, `example.com/a.com`.
const NON_FILE_EXTENSIONS: &[&str] = &["com", "dev", "git", "internal", "io", "local", "net", "org"];

/// Files that are commonly named without an extension.
const KNOWN_FILE_NAMES: &[&str] =
    &["Dockerfile", "Gemfile", "Jenkinsfile", "Justfile", "LICENSE", "Makefile", "Procfile", "Rakefile", "Vagrantfile"];

/// Path segments of toolchains and installed dependencies. Stack traces
/// are full of them and they are never what an agent works on, so paths
/// through them are dropped from tool outputs.
const LIBRARY_MARKERS: &[&str] = &[
    "/rustc/",
    "/.cargo/registry/",
    "/.cargo/git/",
    "/.rustup/",
    "site-packages/",
    "dist-packages/",
    "/lib/python",
    "node_modules/",
    "/usr/lib/",
    "/usr/local/lib/",
    "/usr/local/go/",
    "/go/pkg/mod/",
    "<frozen ",
];

/// Backticked words that are literals or keywords, not names.
const BACKTICK_STOPWORDS: &[&str] =
    &["None", "Self", "True", "False", "NULL", "false", "nil", "none", "null", "self", "this", "true", "undefined"];

/// What a text mentions, each list deduplicated and in order of first
/// appearance.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Mentions {
    /// Normalised paths (see [`PathContext::normalise`]).
    pub files: Vec<String>,
    /// Code identifiers: snake_case, CamelCase, `a::b` paths, `name()`
    /// calls and backticked names.
    pub symbols: Vec<String>,
    /// Error and exception type names.
    pub errors: Vec<String>,
}

impl Mentions {
    fn push(list: &mut Vec<String>, seen: &mut BTreeSet<String>, value: &str) {
        if seen.insert(value.to_string()) {
            list.push(value.to_string());
        }
    }
}

/// Where the paths of a text are relative to: the workspace root (the
/// `cwd` of a tool call) and the directory a command changed into first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PathContext {
    /// Absolute workspace root; absolute paths under it become relative.
    pub root: Option<String>,
    /// Directory, relative to the root, that relative paths are in.
    pub subdir: Option<String>,
    /// Directory that `./` and `../` paths are relative to, when it is not
    /// `subdir`: the directory of a file whose content is being read, since
    /// `import … from "../src/session.js"` is relative to its file.
    pub dot_base: Option<String>,
}

impl PathContext {
    /// Paths of `cwd` (absolute) and then `cd <dir>` (absolute or relative).
    pub(crate) fn new(cwd: Option<&str>, cd: Option<&str>) -> PathContext {
        let root = cwd.map(|cwd| cwd.trim().trim_end_matches('/')).filter(|cwd| cwd.starts_with('/') && cwd.len() > 1);
        let mut context = PathContext { root: root.map(str::to_string), subdir: None, dot_base: None };
        if let Some(directory) = cd {
            context.subdir = context.normalise(directory);
        }
        context
    }

    /// The same context, with `./` and `../` paths relative to the
    /// directory of `file` (a workspace-relative path).
    pub(crate) fn inside_file(&self, file: &str) -> PathContext {
        let directory = file.rsplit_once('/').map_or("", |(directory, _)| directory);
        PathContext { dot_base: Some(directory.to_string()), ..self.clone() }
    }

    /// The workspace-relative form of a path: `file://` and `./` dropped,
    /// `.` and `..` resolved, the root stripped from absolute paths, the
    /// subdirectory (or, for `./` and `../` paths, the dot base) prepended
    /// to relative ones. `None` for an empty path, the root itself, or a
    /// relative path that climbs out of the workspace.
    pub(crate) fn normalise(&self, raw: &str) -> Option<String> {
        let raw = raw.trim();
        let raw = raw.strip_prefix("file://").unwrap_or(raw);
        let absolute = raw.starts_with('/');
        let dotted = raw.starts_with("./") || raw.starts_with("../");
        let base = if dotted && self.dot_base.is_some() { &self.dot_base } else { &self.subdir };
        let mut joined = String::new();
        if !absolute && let Some(base) = base.as_deref().filter(|base| !base.is_empty()) {
            joined.push_str(base);
            joined.push('/');
        }
        joined.push_str(raw);
        let resolved = resolve_dots(&joined, absolute);
        if resolved == ".." || resolved.starts_with("../") {
            return None;
        }
        if absolute && let Some(root) = &self.root {
            if resolved == *root {
                return None;
            }
            if let Some(relative) = resolved.strip_prefix(root.as_str()).and_then(|rest| rest.strip_prefix('/')) {
                return (!relative.is_empty()).then(|| relative.to_string());
            }
        }
        (!resolved.is_empty() && resolved != "/").then_some(resolved)
    }
}

/// Resolves `.` and `..` segments and drops empty ones; `..` that climbs
/// above the start of a relative path is kept.
fn resolve_dots(path: &str, absolute: bool) -> String {
    let mut segments: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.last().is_some_and(|last| *last != "..") {
                    segments.pop();
                } else if !absolute {
                    segments.push("..");
                }
            }
            other => segments.push(other),
        }
    }
    let joined = segments.join("/");
    if absolute { format!("/{joined}") } else { joined }
}

/// Whether `candidate` (already cut out of its text) names a file: a
/// file name with an extension containing a letter, where a slash-less
/// name needs a known extension; or a well-known extension-less name.
pub(crate) fn looks_like_path(candidate: &str) -> bool {
    if candidate.len() < 3 || candidate.len() > 512 || candidate.contains("//") {
        return false;
    }
    if !candidate.bytes().all(is_path_byte) {
        return false;
    }
    let file_name = candidate.rsplit('/').next().unwrap_or(candidate);
    if KNOWN_FILE_NAMES.contains(&file_name) {
        return true;
    }
    let Some((stem, extension)) = file_name.rsplit_once('.') else { return false };
    let stem_ok = stem.bytes().any(|byte| byte.is_ascii_alphabetic());
    let extension_ok = (1..=10).contains(&extension.len())
        && extension.bytes().all(|byte| byte.is_ascii_alphanumeric())
        && extension.bytes().any(|byte| byte.is_ascii_alphabetic());
    if !stem_ok || !extension_ok {
        return false;
    }
    let extension = extension.to_ascii_lowercase();
    if candidate.contains('/') {
        return !NON_FILE_EXTENSIONS.contains(&extension.as_str());
    }
    KNOWN_EXTENSIONS.binary_search(&extension.as_str()).is_ok() && !is_framework_name(stem, &extension)
}

/// `Node.js`, `Next.js`, `Vue.js`: a capitalised word with a script
/// extension is a product name in prose, not a file. (`src/App.js` with a
/// directory is still a file.)
fn is_framework_name(stem: &str, extension: &str) -> bool {
    matches!(extension, "js" | "ts")
        && stem.chars().next().is_some_and(char::is_uppercase)
        && stem.chars().skip(1).all(|character| character.is_ascii_lowercase() || character.is_ascii_digit())
}

fn is_path_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'/' | b'~' | b'+' | b'@')
}

fn is_identifier_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The byte ranges of path-like runs in `text`, with the candidate path of
/// each (a `file://` URL's path; other URLs are skipped).
fn path_runs(text: &str) -> Vec<(usize, usize, &str)> {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        if !is_path_byte(bytes[position]) {
            position += 1;
            continue;
        }
        let start = position;
        while position < bytes.len() && is_path_byte(bytes[position]) {
            position += 1;
        }
        runs.push((start, position, &text[start..position]));
    }
    runs
}

/// Paths mentioned in `text`, cut out and trimmed but not yet normalised.
/// With `skip_libraries`, paths into toolchains and dependencies are
/// dropped (for tool outputs). Also returns the byte spans they cover, so
/// that identifier scanning can skip them.
fn raw_paths(text: &str, skip_libraries: bool) -> (Vec<String>, Vec<(usize, usize)>) {
    let mut paths = Vec::new();
    let mut spans = Vec::new();
    // Where the line of the current run starts, found by scanning only the
    // text since the previous run: searching back from each run to the last
    // newline made a long single-line output quadratic (a 1 MB line of
    // paths took 20 s to apply).
    let mut line_start = 0;
    let mut scanned_to = 0;
    for (start, end, run) in path_runs(text) {
        if let Some(newline) = text[scanned_to..start].rfind('\n') {
            line_start = scanned_to + newline + 1;
        }
        scanned_to = start;
        let before = &text[..start];
        let after = &text[end..];
        let mut candidate = run;
        if candidate.starts_with("//") {
            // Only `file://` URLs name files; `https://…` and `//` comments do not.
            if before.ends_with("file:") {
                candidate = &candidate[2..];
            } else {
                spans.push((start, end));
                continue;
            }
        }
        if before.ends_with("://") || after.starts_with("://") {
            spans.push((start, end));
            continue;
        }
        // Sentence punctuation after a path, a truncation marker before it.
        let candidate = candidate.trim_end_matches(['.', '-', '/']).trim_start_matches('@');
        let candidate = candidate.strip_prefix("...").unwrap_or(candidate);
        let candidate = strip_diff_prefix(candidate, &text[line_start..start]);
        if after.starts_with('(') || !looks_like_path(candidate) {
            continue;
        }
        let full = if run.starts_with("//") {
            format!("/{}", candidate.trim_start_matches('/'))
        } else {
            candidate.to_string()
        };
        if skip_libraries && is_library_path(&full) {
            spans.push((start, end));
            continue;
        }
        spans.push((start, end));
        paths.push(full);
    }
    (paths, spans)
}

/// `a/src/x.rs` in a diff header (`diff --git a/… b/…`, `--- a/…`,
/// `+++ b/…`) is `src/x.rs`.
fn strip_diff_prefix<'a>(candidate: &'a str, line_before: &str) -> &'a str {
    let in_header = line_before.starts_with("diff --git ") || line_before == "--- " || line_before == "+++ ";
    match candidate.strip_prefix("a/").or_else(|| candidate.strip_prefix("b/")) {
        Some(path) if in_header => path,
        _ => candidate,
    }
}

fn is_library_path(path: &str) -> bool {
    LIBRARY_MARKERS.iter().any(|marker| path.contains(marker))
}

/// How much to believe identifiers in a text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TextSource {
    /// Written by an agent or a person: messages, decisions, facts,
    /// handoffs. Every recogniser applies.
    Prose,
    /// Printed by a tool: source code, test logs, traces. Paths (outside
    /// libraries) and error names are believed; identifiers are only
    /// candidates, kept by the caller when the graph already knows them,
    /// because code output is full of names that matter nowhere else.
    ToolOutput,
}

/// Everything `text` mentions, paths normalised in `context`.
pub(crate) fn mentions(text: &str, context: &PathContext, source: TextSource) -> Mentions {
    let mut found = Mentions::default();
    let mut seen_files = BTreeSet::new();
    let mut seen_symbols = BTreeSet::new();
    let mut seen_errors = BTreeSet::new();
    let (paths, path_spans) = raw_paths(text, source == TextSource::ToolOutput);
    for path in paths {
        if let Some(normalised) = context.normalise(&path) {
            Mentions::push(&mut found.files, &mut seen_files, &normalised);
        }
    }
    if source == TextSource::Prose {
        for span in backtick_spans(text) {
            match classify_backticked(span) {
                Some(Backticked::File(path)) => {
                    if let Some(normalised) = context.normalise(path) {
                        Mentions::push(&mut found.files, &mut seen_files, &normalised);
                    }
                }
                Some(Backticked::Symbols(symbols)) => {
                    for symbol in symbols {
                        push_identifier(&mut found, &mut seen_symbols, &mut seen_errors, symbol);
                    }
                }
                None => {}
            }
        }
    }
    // Path spans and identifier runs both come in text order, and spans do
    // not overlap: one cursor walks the spans alongside the runs. (Testing
    // every span for every run was quadratic: a 1 MB message of
    // `file:line` references took 20 s to apply.)
    let mut next_span = 0;
    for (start, end) in identifier_runs(text) {
        while next_span < path_spans.len() && path_spans[next_span].1 <= start {
            next_span += 1;
        }
        if path_spans.get(next_span).is_some_and(|(span_start, span_end)| start >= *span_start && end <= *span_end) {
            continue;
        }
        let run = &text[start..end];
        // `take()` names a function in prose; in code output every call
        // would, so there only distinctive names count.
        let is_call = source == TextSource::Prose && text[end..].starts_with("()");
        for identifier in identifiers_of_run(run, is_call) {
            push_identifier(&mut found, &mut seen_symbols, &mut seen_errors, identifier);
        }
    }
    found
}

fn push_identifier(
    found: &mut Mentions,
    seen_symbols: &mut BTreeSet<String>,
    seen_errors: &mut BTreeSet<String>,
    identifier: &str,
) {
    if is_error_name(identifier) {
        Mentions::push(&mut found.errors, seen_errors, identifier);
    } else {
        Mentions::push(&mut found.symbols, seen_symbols, identifier);
    }
}

/// Byte ranges of identifier runs, `::`-joined paths kept whole.
fn identifier_runs(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut runs = Vec::new();
    let mut position = 0;
    while position < bytes.len() {
        if !is_identifier_byte(bytes[position]) {
            position += 1;
            continue;
        }
        let start = position;
        loop {
            while position < bytes.len() && is_identifier_byte(bytes[position]) {
                position += 1;
            }
            let continues_path = bytes.get(position..position + 3).is_some_and(|next| {
                next[0] == b':' && next[1] == b':' && (next[2].is_ascii_alphabetic() || next[2] == b'_')
            });
            if !continues_path {
                break;
            }
            position += 2;
        }
        runs.push((start, position));
    }
    runs
}

/// The identifiers one run stands for: a `::` path whole plus its
/// recognisable segments; a single word when it is snake_case, CamelCase,
/// an error name, or a plain word written as a call (`take()`).
fn identifiers_of_run(run: &str, is_call: bool) -> Vec<&str> {
    if run.contains("::") {
        let segments: Vec<&str> = run.split("::").collect();
        let mut identifiers = Vec::new();
        if segments.iter().all(|segment| is_identifier(segment)) {
            identifiers.push(run);
        }
        identifiers.extend(segments.into_iter().filter(|segment| is_distinctive_identifier(segment)));
        return identifiers;
    }
    let plain_call = is_call && is_identifier(run) && run.len() >= 3 && !run.bytes().all(|b| b.is_ascii_digit());
    if is_distinctive_identifier(run) || plain_call { vec![run] } else { Vec::new() }
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
pub(crate) fn is_identifier(word: &str) -> bool {
    let mut bytes = word.bytes();
    bytes.next().is_some_and(|first| first.is_ascii_alphabetic() || first == b'_') && bytes.all(is_identifier_byte)
}

/// An identifier that is recognisably code on its own: an error name,
/// snake_case with an inner `_`, or CamelCase with two humps; never a
/// random-looking token.
pub(crate) fn is_distinctive_identifier(word: &str) -> bool {
    is_identifier(word) && (is_error_name(word) || is_snake_identifier(word) || is_camel_identifier(word))
}

/// `\w+(Error|Exception)`: `KeyError`, `TokenExpiredError`.
pub(crate) fn is_error_name(word: &str) -> bool {
    let stem = word.strip_suffix("Error").or_else(|| word.strip_suffix("Exception"));
    stem.is_some_and(|stem| !stem.is_empty() && stem.bytes().any(|byte| byte.is_ascii_alphabetic()))
        && is_identifier(word)
        && !looks_random(word)
}

/// snake_case or SCREAMING_SNAKE_CASE: an `_` between two alphanumerics,
/// at least four characters, no random-looking segment.
fn is_snake_identifier(word: &str) -> bool {
    let bytes = word.as_bytes();
    let inner_underscore = bytes
        .windows(3)
        .any(|window| window[1] == b'_' && window[0].is_ascii_alphanumeric() && window[2].is_ascii_alphanumeric());
    inner_underscore
        && word.len() >= 4
        && word.bytes().any(|byte| byte.is_ascii_alphabetic())
        && word.split('_').all(|segment| !looks_random(segment))
}

/// CamelCase or camelCase with at least two humps (`TokenIssuer`,
/// `msUntilRefresh`, `localStorage`), with lowercase letters (so not an
/// acronym such as `HTTP`) and not random-looking.
fn is_camel_identifier(word: &str) -> bool {
    word.len() >= 4
        && !word.contains('_')
        && word.bytes().any(|byte| byte.is_ascii_lowercase())
        && camel_humps(word) >= 2
        && !looks_random(word)
}

/// Number of words in a camel-case identifier: an uppercase letter after a
/// lowercase letter or digit starts one, as does the last capital of an
/// acronym before a lowercase letter (`HTTPServer` is two).
fn camel_humps(word: &str) -> usize {
    let bytes = word.as_bytes();
    let mut humps = 1;
    for index in 1..bytes.len() {
        let current = bytes[index];
        if !current.is_ascii_uppercase() {
            continue;
        }
        let previous = bytes[index - 1];
        let next_is_lower = bytes.get(index + 1).is_some_and(u8::is_ascii_lowercase);
        if previous.is_ascii_lowercase()
            || previous.is_ascii_digit()
            || (previous.is_ascii_uppercase() && next_is_lower)
        {
            humps += 1;
        }
    }
    humps
}

/// Tokens, hashes and ids (`4q9Xc2W0mZbH7tKp`, `3f9a2c1d8e7b6a50`) switch
/// between letters and digits, or between cases, far more often than
/// names do.
pub(crate) fn looks_random(word: &str) -> bool {
    let bytes = word.as_bytes();
    let digit_switches = bytes.windows(2).filter(|pair| pair[0].is_ascii_digit() != pair[1].is_ascii_digit()).count();
    let case_switches = bytes
        .windows(2)
        .filter(|pair| pair[0].is_ascii_alphabetic() && pair[1].is_ascii_alphabetic())
        .filter(|pair| pair[0].is_ascii_uppercase() != pair[1].is_ascii_uppercase())
        .count();
    let hex_like = bytes.len() >= 8
        && bytes.iter().all(u8::is_ascii_hexdigit)
        && bytes.iter().any(u8::is_ascii_digit)
        && bytes.iter().any(u8::is_ascii_alphabetic);
    digit_switches >= 3 || case_switches * 2 > bytes.len() + 4 || hex_like
}

/// The contents of single-backtick spans on one line; fenced blocks
/// (```` ``` ````) are skipped whole.
pub(crate) fn backtick_spans(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let after_open = &rest[open..];
        if let Some(body) = after_open.strip_prefix("```") {
            rest = match body.find("```") {
                Some(close) => &body[close + 3..],
                None => "",
            };
            continue;
        }
        let body = &after_open[1..];
        match body.find(['`', '\n']) {
            Some(close) if body.as_bytes()[close] == b'`' => {
                spans.push(&body[..close]);
                rest = &body[close + 1..];
            }
            Some(close) => rest = &body[close..],
            None => break,
        }
    }
    spans
}

enum Backticked<'a> {
    File(&'a str),
    Symbols(Vec<&'a str>),
}

/// A backticked span is code by the writer's own account, so a lone
/// lowercase word counts there (`claims`, `presented`). Spans that are
/// not a single name (`refresh_token = %`) give nothing here; the general
/// recognisers still scan their words.
fn classify_backticked(span: &str) -> Option<Backticked<'_>> {
    let span = span.trim();
    if looks_like_path(span) {
        return Some(Backticked::File(span));
    }
    let name = span.strip_suffix("()").unwrap_or(span);
    if name.contains("::") {
        let segments: Vec<&str> = name.split("::").collect();
        if !segments.iter().all(|segment| is_identifier(segment)) {
            return None;
        }
        let mut symbols = vec![name];
        symbols.extend(segments.into_iter().filter(|segment| is_distinctive_identifier(segment)));
        return Some(Backticked::Symbols(symbols));
    }
    // `session.expiresAt`, `self.refresh()`: the member is the name.
    let last = name.rsplit('.').next().unwrap_or(name);
    let all_identifiers = name.split('.').all(is_identifier);
    if !all_identifiers || last.len() < 2 || BACKTICK_STOPWORDS.contains(&last) || looks_random(last) {
        return None;
    }
    Some(Backticked::Symbols(vec![last]))
}

/// Whitespace-separated words with surrounding punctuation trimmed, for
/// looking up names the graph already knows.
pub(crate) fn words(text: &str) -> Vec<&str> {
    text.split_whitespace()
        .map(|word| {
            word.trim_matches(|character: char| {
                matches!(
                    character,
                    '.' | ','
                        | ';'
                        | ':'
                        | '!'
                        | '?'
                        | '('
                        | ')'
                        | '['
                        | ']'
                        | '{'
                        | '}'
                        | '"'
                        | '\''
                        | '`'
                        | '<'
                        | '>'
                        | '*'
                )
            })
        })
        .filter(|word| !word.is_empty())
        .collect()
}

/// Whether `word` has the shape of a ULID (26 Crockford base-32
/// characters), i.e. may be an event id.
pub(crate) fn looks_like_ulid(word: &str) -> bool {
    word.len() == 26
        && word.bytes().all(|byte| {
            byte.is_ascii_digit()
                || (byte.is_ascii_alphabetic() && !matches!(byte.to_ascii_uppercase(), b'I' | b'L' | b'O' | b'U'))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prose(text: &str) -> Mentions {
        mentions(text, &PathContext::default(), TextSource::Prose)
    }

    #[test]
    fn paths_need_an_extension_or_a_known_name() {
        for path in ["src/auth/token.rs", "Cargo.toml", "client.py", "web/test/session.test.js", "docker/Dockerfile"] {
            assert!(looks_like_path(path), "{path}");
        }
        for not_path in
            ["/v1/token/refresh", "feat/214-token-refresh", "v0.4.2", "e.g", "Node.js", "example.com", "and/or"]
        {
            assert!(!looks_like_path(not_path), "{not_path}");
        }
    }

    #[test]
    fn prose_mentions_paths_identifiers_and_errors() {
        let found = prose(
            "Findings: src/config.rs:14 sets access_ttl_secs; require_auth maps TokenExpiredError to 401. \
             See https://github.com/acme/x/blob/main/src/lib.rs and call take() on `claims` (TokenIssuer::verify).",
        );
        assert_eq!(found.files, vec!["src/config.rs"]);
        assert_eq!(found.errors, vec!["TokenExpiredError"]);
        assert_eq!(
            found.symbols,
            vec!["claims", "access_ttl_secs", "require_auth", "take", "TokenIssuer::verify", "TokenIssuer"]
        );
    }

    #[test]
    fn random_tokens_and_plain_words_are_not_identifiers() {
        let found = prose("the token rt_4q9Xc2W0mZbH7tKp1sVd8eYf in build 3f9a2c1d8e7b6a50 uses HTTP and JSON");
        assert!(found.symbols.is_empty(), "{:?}", found.symbols);
    }

    #[test]
    fn paths_are_normalised_against_the_workspace() {
        let context = PathContext::new(Some("/repo"), Some("clients/python"));
        assert_eq!(context.normalise("tests/test_client.py").as_deref(), Some("clients/python/tests/test_client.py"));
        assert_eq!(context.normalise("/repo/web/src/session.js").as_deref(), Some("web/src/session.js"));
        assert_eq!(context.normalise("file:///repo/web/src/api.js").as_deref(), Some("web/src/api.js"));
        assert_eq!(context.normalise("../../src/lib.rs").as_deref(), Some("src/lib.rs"));
        assert_eq!(PathContext::default().normalise("./src//a/../b.rs").as_deref(), Some("src/b.rs"));
    }

    #[test]
    fn tool_outputs_drop_library_paths_and_urls() {
        let output = "   at ./src/auth/token.rs:125:9\n   at /rustc/4eb1/library/core/src/panicking.rs:75:14\n\
                      at msUntilRefresh (file:///repo/web/src/session.js:41:25)\n\
                      see https://github.com/acme/auth-service/actions/runs/8812";
        let found = mentions(output, &PathContext::new(Some("/repo"), None), TextSource::ToolOutput);
        assert_eq!(found.files, vec!["src/auth/token.rs", "web/src/session.js"]);
    }

    #[test]
    fn backticks_and_fences() {
        assert_eq!(backtick_spans("a `b` c ```\nlet `x` = 1;\n``` d `e`"), vec!["b", "e"]);
        let found = prose("use `session.expiresAt`, not `None`; `resp.json()` is fine");
        assert_eq!(found.symbols, vec!["expiresAt", "json"]);
    }

    #[test]
    fn ulids() {
        assert!(looks_like_ulid("01KE99G5EWXQ4J8Z88DSDYM055"));
        assert!(!looks_like_ulid("01KE99G5EWXQ4J8Z88DSDYM05"));
        assert!(!looks_like_ulid("01KE99G5EWXQ4J8Z88DSDYMO55"));
    }
}
