//! Symbols defined in source text: `fn name`, `def name`, `function name`,
//! `class Name`, `struct Name` and their relatives, per language.
//!
//! Only the start of a line counts (after indentation and modifiers such as
//! `pub` or `export`), and only in files whose extension names a language,
//! so that prose ("the function to call") and comments stay out.

use super::mentions::is_identifier;

/// Languages whose definitions are recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Language {
    Rust,
    Python,
    /// JavaScript and TypeScript.
    Script,
    Go,
}

/// Names every codebase defines many times over (trait methods,
/// constructors, dunders): as symbols they would join unrelated files
/// through one hub node, so they are not recorded.
const UBIQUITOUS_NAMES: &[&str] = &[
    "as_mut",
    "as_ref",
    "clone",
    "cmp",
    "constructor",
    "default",
    "deref",
    "deref_mut",
    "drop",
    "eq",
    "fmt",
    "from",
    "from_str",
    "hash",
    "index",
    "into",
    "is_empty",
    "len",
    "main",
    "ne",
    "new",
    "next",
    "partial_cmp",
    "setUp",
    "tearDown",
    "tests",
    "toString",
    "to_string",
    "try_from",
    "valueOf",
];

/// The language of a file, by extension.
pub(crate) fn language_of(path: &str) -> Option<Language> {
    let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
    match extension.as_str() {
        "rs" => Some(Language::Rust),
        "py" | "pyi" => Some(Language::Python),
        "js" | "mjs" | "cjs" | "jsx" | "ts" | "tsx" | "mts" | "cts" => Some(Language::Script),
        "go" => Some(Language::Go),
        _ => None,
    }
}

/// Names defined in `lines`, deduplicated, in order of appearance.
pub(crate) fn definitions<'a>(language: Language, lines: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for line in lines {
        if let Some(name) = definition_in_line(language, line)
            && !names.iter().any(|known| known == name)
        {
            names.push(name.to_string());
        }
    }
    names
}

/// The name a line defines, if it is a definition.
pub(crate) fn definition_in_line(language: Language, line: &str) -> Option<&str> {
    let line = line.trim_start();
    let name = match language {
        Language::Rust => rust_definition(line),
        Language::Python => python_definition(line),
        Language::Script => script_definition(line),
        Language::Go => go_definition(line),
    }?;
    let recordable = name.len() >= 2
        && is_identifier(name)
        && !(name.starts_with("__") && name.ends_with("__"))
        && !UBIQUITOUS_NAMES.contains(&name);
    recordable.then_some(name)
}

/// The identifier at the start of `text`.
fn leading_identifier(text: &str) -> Option<&str> {
    let end =
        text.find(|character: char| !(character.is_ascii_alphanumeric() || character == '_')).unwrap_or(text.len());
    let name = &text[..end];
    is_identifier(name).then_some(name)
}

/// Strips any of `modifiers` from the front of `line`, repeatedly.
fn strip_modifiers<'a>(mut line: &'a str, modifiers: &[&str]) -> &'a str {
    loop {
        let before = line;
        for modifier in modifiers {
            if let Some(rest) = line.strip_prefix(modifier) {
                line = rest.trim_start();
            }
        }
        if line == before {
            return line;
        }
    }
}

fn rust_definition(line: &str) -> Option<&str> {
    let mut line = line;
    loop {
        let before = line;
        // `pub(crate)`, `pub(super)`, `pub(in path)`.
        if let Some(rest) = line.strip_prefix("pub(") {
            line = rest.split_once(')').map_or(rest, |(_, after)| after).trim_start();
        }
        // `extern "C" fn`.
        if let Some(rest) = line.strip_prefix("extern \"") {
            line = rest.split_once('"').map_or(rest, |(_, after)| after).trim_start();
        }
        line = strip_modifiers(line, &["pub ", "async ", "const ", "unsafe ", "default "]);
        if line == before {
            break;
        }
    }
    ["fn ", "struct ", "enum ", "trait ", "union ", "type "]
        .iter()
        .find_map(|keyword| line.strip_prefix(keyword))
        .and_then(|rest| leading_identifier(rest.trim_start()))
}

fn python_definition(line: &str) -> Option<&str> {
    let line = strip_modifiers(line, &["async "]);
    ["def ", "class "]
        .iter()
        .find_map(|keyword| line.strip_prefix(keyword))
        .and_then(|rest| leading_identifier(rest.trim_start()))
}

fn script_definition(line: &str) -> Option<&str> {
    let line = strip_modifiers(line, &["export ", "default ", "declare ", "abstract ", "async "]);
    if let Some(rest) =
        ["function* ", "function ", "class ", "interface ", "enum "].iter().find_map(|k| line.strip_prefix(k))
    {
        return leading_identifier(rest.trim_start());
    }
    if let Some(rest) = line.strip_prefix("type ") {
        let name = leading_identifier(rest.trim_start())?;
        let after = rest.trim_start()[name.len()..].trim_start();
        return (after.starts_with('=') || after.starts_with('<')).then_some(name);
    }
    // `const name = (…) =>`, `const name = async function`, `let name = x =>`.
    let rest = ["const ", "let ", "var "].iter().find_map(|keyword| line.strip_prefix(keyword))?.trim_start();
    let name = leading_identifier(rest)?;
    let value = rest[name.len()..].trim_start().strip_prefix('=')?.trim_start();
    let value = value.strip_prefix("async ").unwrap_or(value).trim_start();
    let is_function = value.starts_with('(')
        || value.starts_with("function")
        || leading_identifier(value).is_some_and(|parameter| value[parameter.len()..].trim_start().starts_with("=>"));
    is_function.then_some(name)
}

fn go_definition(line: &str) -> Option<&str> {
    if let Some(rest) = line.strip_prefix("func ") {
        let rest = rest.trim_start();
        // A method: skip the receiver `(s *Server)`.
        let rest = match rest.strip_prefix('(') {
            Some(receiver) => receiver.split_once(')')?.1.trim_start(),
            None => rest,
        };
        return leading_identifier(rest);
    }
    let rest = line.strip_prefix("type ")?;
    leading_identifier(rest.trim_start())
}

/// The lines of a tool's listing of a file, without the line numbers that
/// `cat -n` and read tools put in front (`   12  code`, `12\tcode`,
/// `12│ code`): numbered when at least four in five non-blank lines are.
pub(crate) fn source_lines(output: &str) -> Vec<&str> {
    let lines: Vec<&str> = output.lines().collect();
    let non_blank: Vec<&&str> = lines.iter().filter(|line| !line.trim().is_empty()).collect();
    let numbered = non_blank.iter().filter(|line| strip_line_number(line).is_some()).count();
    if non_blank.len() >= 2 && numbered * 5 >= non_blank.len() * 4 {
        lines.iter().map(|line| strip_line_number(line).unwrap_or(line)).collect()
    } else {
        lines
    }
}

fn strip_line_number(line: &str) -> Option<&str> {
    let trimmed = line.trim_start();
    let digits = trimmed.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = &trimmed[digits..];
    if rest.trim().is_empty() {
        return Some("");
    }
    if let Some(code) = rest.strip_prefix('\t').or_else(|| rest.strip_prefix("  ")) {
        return Some(code);
    }
    let rest = rest.trim_start_matches(' ');
    ['│', '|', '→', ':']
        .into_iter()
        .find_map(|separator| rest.strip_prefix(separator))
        .map(|code| code.strip_prefix(' ').unwrap_or(code))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defined(language: Language, source: &str) -> Vec<String> {
        definitions(language, source.lines())
    }

    #[test]
    fn rust_definitions() {
        let source = "pub(crate) async fn refresh_access_token(\npub struct TokenPair {\nimpl Foo {\n    fn new() -> Self\n\
                      const LIMIT: u32 = 1;\npub const fn limit() {}\n// fn commented\nenum RefreshError {";
        assert_eq!(defined(Language::Rust, source), vec!["refresh_access_token", "TokenPair", "limit", "RefreshError"]);
    }

    #[test]
    fn python_script_and_go_definitions() {
        assert_eq!(
            defined(
                Language::Python,
                "class AuthClient:\n    def __init__(self):\n    async def refresh(self) -> None:"
            ),
            vec!["AuthClient", "refresh"]
        );
        assert_eq!(
            defined(
                Language::Script,
                "export function scheduleRefresh(s) {\nexport const msUntilRefresh = (s) => 1;\nconst x = 3;\n\
                 class Api {}\nexport type Session = {\nlet f = y => y;"
            ),
            vec!["scheduleRefresh", "msUntilRefresh", "Api", "Session"]
        );
        assert_eq!(
            defined(
                Language::Go,
                "func (s *Server) handle(w http.ResponseWriter) {\nfunc parseClaims() {}\ntype Issuer struct {"
            ),
            vec!["handle", "parseClaims", "Issuer"]
        );
    }

    #[test]
    fn prose_is_not_source() {
        assert_eq!(language_of("docs/auth.md"), None);
        assert_eq!(language_of("web/src/session.js"), Some(Language::Script));
    }

    #[test]
    fn line_numbers_are_stripped() {
        let output = "   1  \"\"\"Client.\"\"\"\n   2  \n  14  class Session:\n  25      def login(self):";
        assert_eq!(source_lines(output), vec!["\"\"\"Client.\"\"\"", "", "class Session:", "    def login(self):"]);
        assert_eq!(source_lines("fn a() {}\nfn b() {}"), vec!["fn a() {}", "fn b() {}"]);
    }
}
