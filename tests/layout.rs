//! The code's layout, as ARCHITECTURE.md states it, held to the tree:
//! files are split by job long before 1,000 lines and functions of the crates
//! long before 120, the service layer and the NATS transport know nothing
//! of HTTP, and only the CLI imports from the CLI.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 1000;

/// The most lines a function of the crates spans, from its `fn` to its closing
/// brace (doc comments and attributes not counted; its comments and blank
/// lines counted). The longest is `cli::run`, one arm a verb, at about a
/// hundred: a function that does several jobs is split long before this.
const MAX_FUNCTION_LINES: usize = 120;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, leaving out build output, virtualenvs and
/// test folders.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | "tests" | ".venv" | ".git" | "node_modules") {
                rust_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_source_file_outside_tests_reaches_a_thousand_lines() {
    let mut files = Vec::new();
    rust_files(repo_root(), &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_LINES)
                .then(|| format!("{} ({lines} lines)", path.strip_prefix(repo_root()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}

#[test]
fn the_service_layer_and_the_nats_transport_do_not_know_http() {
    for folder in ["src/service", "src/nats"] {
        let mut files = Vec::new();
        rust_files(&repo_root().join(folder), &mut files);
        assert!(!files.is_empty(), "{folder} has no files");
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            // Code, not the comments that point the reader to the HTTP side.
            let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
            for http in ["crate::http", "actix_web", "ureq"] {
                let uses = code.iter().find(|line| line.contains(http));
                assert!(uses.is_none(), "{} uses {http}: {uses:?}", path.display());
            }
        }
    }
}

/// The typed HTTP client is `mneme::client`, not part of the command line:
/// the MCP stdio relay and the tools speak HTTP through it, and nothing
/// outside `src/cli/` reaches into the CLI's verbs, except the `mneme`
/// binary, which only calls `cli::main`.
#[test]
fn nothing_outside_the_cli_imports_from_it() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    rust_files(&repo_root().join("tools"), &mut files);
    let cli = repo_root().join("src/cli");
    let binary = repo_root().join("src/main.rs");
    let outside: Vec<&PathBuf> = files.iter().filter(|path| !path.starts_with(&cli) && **path != binary).collect();
    assert!(outside.len() > 40, "found only {} files outside src/cli", outside.len());
    for path in outside {
        let text = std::fs::read_to_string(path).unwrap();
        let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
        for cli_path in ["crate::cli", "mneme::cli", "super::cli"] {
            let uses = code.iter().find(|line| names_path(line, cli_path));
            assert!(uses.is_none(), "{} uses {cli_path}: {uses:?}", path.display());
        }
    }
}

/// Whether `line` names the module path `path` itself (`crate::cli`,
/// `crate::cli::x`), not one it is the start of (`crate::client`).
fn names_path(line: &str, path: &str) -> bool {
    line.match_indices(path).any(|(at, _)| {
        let next = line[at + path.len()..].chars().next();
        !next.is_some_and(|next| next.is_alphanumeric() || next == '_')
    })
}

/// The crates' floors, as ARCHITECTURE.md's code map lays them out: each
/// crate depends only on the Mneme crates below it, so no import can run
/// back up (`index` knows no event, `projections` no log, `api` no memory,
/// `actors` no wire type: answers are built in `src/service/`).
#[test]
fn each_crate_depends_only_on_the_crates_below_it() {
    let floors: [(&str, &[&str]); 6] = [
        ("events", &[]),
        ("index", &[]),
        ("nats", &["mneme-events"]),
        ("api", &["mneme-events"]),
        ("projections", &["mneme-api", "mneme-events", "mneme-index"]),
        ("actors", &["mneme-events", "mneme-index", "mneme-nats", "mneme-projections"]),
    ];
    for (crate_dir, allowed) in floors {
        let manifest = std::fs::read_to_string(repo_root().join(crate_dir).join("Cargo.toml")).unwrap();
        let mut in_dependencies = false;
        let mut found = Vec::new();
        for line in manifest.lines() {
            if line.starts_with('[') {
                in_dependencies = line == "[dependencies]";
            } else if in_dependencies && line.starts_with("mneme-") {
                found.push(line.split(['.', ' ', '=']).next().unwrap().to_string());
            }
        }
        found.sort();
        assert_eq!(found, allowed, "{crate_dir}/Cargo.toml's Mneme dependencies");
    }
}

/// Each query to a memory actor is its own message with its own answer
/// (`mneme_actors::queries`), so the service never matches on an answer it
/// did not ask for.
#[test]
fn the_service_layer_has_no_unreachable_arms() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src/service"), &mut files);
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
        let found = code.iter().find(|line| line.contains("unreachable!"));
        assert!(found.is_none(), "{}: {found:?}", path.display());
    }
}

/// The text of a struct's body, from `pub struct {name} {` to its `}`.
fn struct_body<'a>(text: &'a str, name: &str) -> &'a str {
    let start = text.find(&format!("pub struct {name} {{")).unwrap_or_else(|| panic!("no struct {name}"));
    let end = start + text[start..].find("\n}").unwrap();
    &text[start..end]
}

/// The write side of a memory (`projections/src/memory/`) keeps its state
/// in components with private fields, composed by `AgentMemory`; queries
/// are functions over `&AgentMemory` elsewhere and add no `impl` to it.
#[test]
fn the_memory_is_extended_only_inside_its_module_and_its_state_is_private() {
    let components = [
        ("memory/mod.rs", "AgentMemory"),
        ("memory/items.rs", "Items"),
        ("memory/indexes.rs", "Indexes"),
        ("memory/contradictions.rs", "Contradictions"),
        ("memory/handoffs.rs", "Handoffs"),
        ("core.rs", "CoreState"),
    ];
    state_kept_inside("memory", "AgentMemory", &components, &[]);
}

/// The fact graph's impl blocks span the files of `graph/` (extraction,
/// queries, history, snapshots): its fields are visible there and nowhere
/// else, and the rest of the crate reads it through methods.
#[test]
fn the_fact_graph_is_extended_only_inside_its_module_and_its_state_is_private() {
    let components = [("graph/store.rs", "FactGraph"), ("graph/swarm.rs", "SwarmGraph")];
    state_kept_inside("graph", "FactGraph", &components, &["pub(super)"]);
    state_kept_inside("graph", "SwarmGraph", &[], &[]);
}

/// No `impl` of `name` under `projections/src` outside `module/`, and no
/// field of the `components` more visible than `allowed`.
fn state_kept_inside(module: &str, name: &str, components: &[(&str, &str)], allowed: &[&str]) {
    let source = repo_root().join("projections/src");
    let mut files = Vec::new();
    rust_files(&source, &mut files);
    assert!(files.len() > 50, "found only {} files", files.len());
    let mut outside = Vec::new();
    for path in &files {
        if path.starts_with(source.join(module)) {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        for line in text.lines().filter(|line| !line.trim_start().starts_with("//")) {
            let words: Vec<&str> = line.split(|c: char| !c.is_alphanumeric() && c != '_').collect();
            if line.trim_start().starts_with("impl") && words.contains(&name) {
                outside.push(format!("{}: {}", path.strip_prefix(repo_root()).unwrap().display(), line.trim()));
            }
        }
    }
    assert!(outside.is_empty(), "extend {name} inside projections/src/{module}/ only: {outside:#?}");
    for (file, component) in components {
        let text = std::fs::read_to_string(source.join(file)).unwrap();
        let public: Vec<&str> = struct_body(&text, component)
            .lines()
            .skip(1)
            .map(str::trim)
            .filter(|line| {
                (line.starts_with("pub ") || line.starts_with("pub("))
                    && !allowed.iter().any(|visibility| line.starts_with(&format!("{visibility} ")))
            })
            .collect();
        assert!(public.is_empty(), "{component}'s fields are its own; read them through methods: {public:?}");
    }
}

#[test]
fn no_function_in_the_crates_spans_more_than_120_lines() {
    let mut files = Vec::new();
    for crate_source in ["src", "events/src", "index/src", "nats/src", "projections/src", "api/src", "actors/src"] {
        rust_files(&repo_root().join(crate_source), &mut files);
    }
    let mut functions = 0;
    let mut long = Vec::new();
    for path in &files {
        let code = code_only(&std::fs::read_to_string(path).unwrap());
        for function in functions_of(&code) {
            functions += 1;
            if function.lines > MAX_FUNCTION_LINES {
                let path = path.strip_prefix(repo_root()).unwrap().display();
                long.push(format!("{path}:{} {} ({} lines)", function.line, function.name, function.lines));
            }
        }
    }
    assert!(functions > 1000, "found only {functions} functions in the crates: the scanner below is broken");
    assert!(long.is_empty(), "split these by job: {long:?}");
}

/// The scanner counts what the compiler would: braces in strings,
/// characters and comments are not code, lifetimes are not characters,
/// a declaration without a body is no function, and tests are left out.
#[test]
fn the_function_scanner_reads_rust_as_the_compiler_does() {
    let text = r##"
/// fn documented() { in a doc comment }
fn first<'a>(text: &'a str, bytes: [u8; 2]) -> &'a str {
    let _ = ('{', '\'', "}}{", r#"}"{"#, b"{");
    /* { /* } */ } */
    text
}

trait Declared {
    fn declared(&self);
}

fn second() {}

#[cfg(test)]
mod tests {
    fn in_a_test() {
    }
}
"##;
    let found: Vec<(String, usize, usize)> = functions_of(&code_only(text))
        .into_iter()
        .map(|function| (function.name, function.line, function.lines))
        .collect();
    assert_eq!(found, [("first".to_string(), 3, 5), ("second".to_string(), 13, 1)]);
}

/// A function found in the source: its name, the line of its `fn`, and
/// how many lines it spans to its closing brace.
struct Function {
    name: String,
    line: usize,
    lines: usize,
}

fn is_identifier(character: char) -> bool {
    character.is_alphanumeric() || character == '_'
}

/// `text` with its comments and its string and character literals blanked
/// out (their newlines kept): what is left of braces and `fn` is code.
fn code_only(text: &str) -> Vec<char> {
    let chars: Vec<char> = text.chars().collect();
    let mut code = chars.clone();
    let mut at = 0;
    while at < chars.len() {
        let starts = |prefix: &str| prefix.chars().enumerate().all(|(index, c)| chars.get(at + index) == Some(&c));
        let after_identifier = at > 0 && is_identifier(chars[at - 1]);
        let end = if starts("//") {
            (at..chars.len()).find(|&index| chars[index] == '\n').unwrap_or(chars.len())
        } else if starts("/*") {
            let (mut depth, mut index) = (0, at);
            loop {
                if chars.get(index..index + 2) == Some(&['/', '*']) {
                    depth += 1;
                    index += 2;
                } else if chars.get(index..index + 2) == Some(&['*', '/']) {
                    depth -= 1;
                    index += 2;
                    if depth == 0 {
                        break index;
                    }
                } else if index >= chars.len() {
                    break index;
                } else {
                    index += 1;
                }
            }
        } else if let Some(end) = (!after_identifier).then(|| raw_string_end(&chars, at)).flatten() {
            end
        } else if chars[at] == '"' {
            let mut index = at + 1;
            while index < chars.len() && chars[index] != '"' {
                index += if chars[index] == '\\' { 2 } else { 1 };
            }
            index + 1
        } else if chars[at] == '\'' && chars.get(at + 1) == Some(&'\\') {
            (at + 2..chars.len()).find(|&index| chars[index] == '\'').map_or(chars.len(), |index| index + 1)
        } else if chars[at] == '\'' && chars.get(at + 2) == Some(&'\'') {
            at + 3
        } else {
            // Code, or a lifetime's quote.
            at += 1;
            continue;
        };
        let end = end.min(chars.len());
        for character in &mut code[at..end] {
            if *character != '\n' {
                *character = ' ';
            }
        }
        at = end;
    }
    code
}

/// Where the raw string (`r"…"`, `r#"…"#`, `br"…"`) starting at `at` ends,
/// if one starts there.
fn raw_string_end(chars: &[char], at: usize) -> Option<usize> {
    let r = if chars[at] == 'b' { at + 1 } else { at };
    if chars.get(r) != Some(&'r') {
        return None;
    }
    let hashes = chars[r + 1..].iter().take_while(|&&c| c == '#').count();
    let quote = r + 1 + hashes;
    if chars.get(quote) != Some(&'"') {
        return None;
    }
    let closing: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    let end = (quote + 1..chars.len()).find(|&index| chars[index..].starts_with(&closing));
    Some(end.map_or(chars.len(), |end| end + closing.len()))
}

/// Where the brace opened at `open` closes.
fn closing_brace(code: &[char], open: usize) -> usize {
    let mut depth = 0;
    for (index, &character) in code.iter().enumerate().skip(open) {
        match character {
            '{' => depth += 1,
            '}' if depth == 1 => return index,
            '}' => depth -= 1,
            _ => {}
        }
    }
    code.len()
}

/// Every function with a body in `code` (as [`code_only`] leaves it),
/// leaving out the modules marked `#[cfg(test)]`.
fn functions_of(code: &[char]) -> Vec<Function> {
    let text: String = code.iter().collect();
    let line_of = |at: usize| code[..at].iter().filter(|&&c| c == '\n').count() + 1;
    let mut tests = Vec::new();
    for (at, _) in text.match_indices("#[cfg(test)]") {
        let at = text[..at].chars().count();
        let Some(open) = (at..code.len()).find(|&index| matches!(code[index], '{' | ';')) else { continue };
        let between: String = code[at..open].iter().collect();
        if code[open] == '{' && between.split_whitespace().any(|word| word == "mod") {
            tests.push(at..closing_brace(code, open));
        }
    }
    let mut functions = Vec::new();
    for at in 0..code.len().saturating_sub(3) {
        let keyword = code[at] == 'f' && code[at + 1] == 'n' && code[at + 2].is_whitespace();
        if !keyword || (at > 0 && is_identifier(code[at - 1])) || tests.iter().any(|test| test.contains(&at)) {
            continue;
        }
        let name_at = (at + 2..code.len()).find(|&index| !code[index].is_whitespace()).unwrap_or(code.len());
        let name: String = code[name_at..].iter().take_while(|&&c| is_identifier(c)).collect();
        if name.is_empty() {
            continue;
        }
        let mut depth = 0i32;
        let mut body = None;
        for (index, &character) in code.iter().enumerate().skip(name_at) {
            match character {
                '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '{' if depth == 0 => {
                    body = Some(index);
                    break;
                }
                ';' if depth == 0 => break,
                _ => {}
            }
        }
        let Some(open) = body else { continue };
        let (line, last) = (line_of(at), line_of(closing_brace(code, open)));
        functions.push(Function { name, line, lines: last - line + 1 });
    }
    functions
}
