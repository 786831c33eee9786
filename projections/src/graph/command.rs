//! Shell commands: the normal form that identifies a command across runs,
//! and just enough shell tokenising to find the program and its arguments.

use super::names::collapse_whitespace;

/// A command as an entity: its identity and where it ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NormalisedCommand {
    /// Trimmed, whitespace collapsed, without leading `cd <dir> &&` and
    /// `VAR=value` prefixes: `cd web && npm test` and `npm test` are the
    /// same command, and so are `RUST_BACKTRACE=1 cargo test` and
    /// `cargo test` (the environment changes what is printed, not what is
    /// tested, and an agent typically adds it only to rerun a failure).
    pub text: String,
    /// The directory of the leading `cd`s, joined, if any.
    pub directory: Option<String>,
}

/// Normalises `raw`; `None` if it is blank.
pub(crate) fn normalise_command(raw: &str) -> Option<NormalisedCommand> {
    let collapsed = collapse_whitespace(raw);
    if collapsed.is_empty() {
        return None;
    }
    let tokens = tokenize(&collapsed);
    let mut position = 0;
    let mut directory: Option<String> = None;
    while let [
        Token::Word { text: program, .. },
        Token::Word { text: target, .. },
        Token::Operator { text: "&&" | ";", .. },
        ..,
    ] = &tokens[position..]
    {
        if program != "cd" {
            break;
        }
        directory = Some(match directory {
            Some(previous) if !target.starts_with('/') => format!("{previous}/{target}"),
            _ => target.clone(),
        });
        position += 3;
    }
    if matches!(tokens.get(position), Some(Token::Word { text, .. }) if text == "env") {
        position += 1;
    }
    while matches!(tokens.get(position), Some(Token::Word { text, .. }) if is_assignment(text)) {
        position += 1;
    }
    let text = match tokens.get(position) {
        Some(token) => collapsed[token.start()..].trim().to_string(),
        // Nothing but `cd` and assignments: that is the command.
        None => collapsed,
    };
    Some(NormalisedCommand { text, directory })
}

/// `NAME=value`, a shell variable assignment.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        let mut bytes = name.bytes();
        bytes.next().is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
            && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
    })
}

/// The words of the first simple command of `command` (up to the first
/// `|`, `&&`, `||` or `;`), quotes removed.
pub(crate) fn first_simple_command(command: &str) -> Vec<String> {
    tokenize(command)
        .into_iter()
        .map_while(|token| match token {
            Token::Word { text, .. } => Some(text),
            Token::Operator { .. } => None,
        })
        .collect()
}

/// Joins argument words into one command line, quoting a word (POSIX
/// single quotes) when it holds anything but plainly safe characters.
pub(crate) fn shell_join<'a>(words: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = words.into_iter().map(quote_word).collect();
    quoted.join(" ")
}

fn quote_word(word: &str) -> String {
    let safe =
        !word.is_empty() && word.bytes().all(|byte| byte.is_ascii_alphanumeric() || b"@%+=:,./-_^~".contains(&byte));
    if safe { word.to_string() } else { format!("'{}'", word.replace('\'', r"'\''")) }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// A word with quotes and escapes removed, and where it starts.
    Word { text: String, start: usize },
    /// `|`, `||`, `&&`, `;` or `&`.
    Operator { text: &'static str, start: usize },
}

impl Token {
    fn start(&self) -> usize {
        match self {
            Token::Word { start, .. } | Token::Operator { start, .. } => *start,
        }
    }
}

/// Splits a command line into words and control operators, honouring
/// single quotes, double quotes and backslashes. Redirections and
/// substitutions are left inside words: nothing here needs them.
fn tokenize(line: &str) -> Vec<Token> {
    let mut tokens = Vec::new();
    let mut characters = line.char_indices().peekable();
    while let Some(&(start, character)) = characters.peek() {
        if character.is_whitespace() {
            characters.next();
            continue;
        }
        if let Some(operator) = operator_at(&line[start..]) {
            for _ in 0..operator.len() {
                characters.next();
            }
            tokens.push(Token::Operator { text: operator, start });
            continue;
        }
        let mut word = String::new();
        let mut quote: Option<char> = None;
        while let Some(&(offset, character)) = characters.peek() {
            match quote {
                Some(open) if character == open => {
                    quote = None;
                }
                Some('"') if character == '\\' => {
                    characters.next();
                    if let Some(&(_, escaped)) = characters.peek() {
                        word.push(escaped);
                    }
                }
                Some(_) => word.push(character),
                None if character.is_whitespace() || operator_at(&line[offset..]).is_some() => break,
                None if character == '\'' || character == '"' => quote = Some(character),
                None if character == '\\' => {
                    characters.next();
                    if let Some(&(_, escaped)) = characters.peek() {
                        word.push(escaped);
                    }
                }
                None => word.push(character),
            }
            characters.next();
        }
        tokens.push(Token::Word { text: word, start });
    }
    tokens
}

fn operator_at(rest: &str) -> Option<&'static str> {
    ["&&", "||", "|", ";", "&"].into_iter().find(|operator| rest.starts_with(operator)).filter(|operator| {
        // `2>&1` and `&>` are redirections, not the background operator.
        *operator != "&" || !(rest.starts_with("&>") || rest.starts_with("&1") || rest.starts_with("&2"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(raw: &str) -> (String, Option<String>) {
        let command = normalise_command(raw).expect("not blank");
        (command.text, command.directory)
    }

    #[test]
    fn strips_cd_prefixes_and_environment() {
        assert_eq!(normalised("  cd web &&   npm test "), ("npm test".to_string(), Some("web".to_string())));
        assert_eq!(
            normalised("cd clients/python && pytest --tb=native"),
            ("pytest --tb=native".to_string(), Some("clients/python".to_string()))
        );
        assert_eq!(normalised("RUST_BACKTRACE=1 cargo test"), ("cargo test".to_string(), None));
        assert_eq!(normalised("cd a; cd b && env A=1 B='x y' make"), ("make".to_string(), Some("a/b".to_string())));
        assert_eq!(normalised("cd /tmp"), ("cd /tmp".to_string(), None));
        assert_eq!(normalise_command(" \n "), None);
    }

    #[test]
    fn keeps_pipelines_and_quotes() {
        assert_eq!(
            normalised("curl -s https://x/metrics |  grep -E 'auth_(refresh|session)'").0,
            "curl -s https://x/metrics | grep -E 'auth_(refresh|session)'"
        );
    }

    #[test]
    fn first_simple_command_unquotes() {
        assert_eq!(first_simple_command(r#"grep -rn "fn main" src | head"#), vec!["grep", "-rn", "fn main", "src"]);
        assert_eq!(first_simple_command("cargo test 2>&1 && echo ok"), vec!["cargo", "test", "2>&1"]);
    }

    #[test]
    fn joins_with_quotes_when_needed() {
        assert_eq!(shell_join(["commit", "-m", "feat(auth): it's done"]), r#"commit -m 'feat(auth): it'\''s done'"#);
        assert_eq!(shell_join(["diff", "main...HEAD", "--", "src/a.rs"]), "diff main...HEAD -- src/a.rs");
    }
}
