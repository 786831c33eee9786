//! Listings that tools print about files: search hits (`grep`, `rg`),
//! diffs and diffstats (`git diff`, `git show`, patches).

use super::mentions::looks_like_path;

/// One line of search output: the file it is in and the text of the line
/// (empty for a files-only listing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchLine<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// Parses grep/ripgrep output: `path:12:text` (a match), `path-12-text` (a
/// context line), `path:text` (no line numbers), or a bare `path`
/// (`--files-with-matches`). Separators (`--`) and unrecognised lines are
/// skipped.
pub(crate) fn search_lines(output: &str) -> Vec<SearchLine<'_>> {
    output.lines().filter_map(search_line).collect()
}

fn search_line(line: &str) -> Option<SearchLine<'_>> {
    if line.trim().is_empty() || line == "--" {
        return None;
    }
    for (index, _) in line.match_indices(':') {
        let path = &line[..index];
        if looks_like_path(path) {
            let after = &line[index + 1..];
            return Some(SearchLine { path, text: skip_position(after, ':').unwrap_or(after) });
        }
    }
    for (index, _) in line.match_indices('-') {
        let path = &line[..index];
        if let Some(text) = skip_position(&line[index + 1..], '-')
            && looks_like_path(path)
        {
            return Some(SearchLine { path, text });
        }
    }
    let whole = line.trim();
    looks_like_path(whole).then_some(SearchLine { path: whole, text: "" })
}

/// `12:text` → `text` (and `12:4:text` with a column → `text`).
fn skip_position(text: &str, separator: char) -> Option<&str> {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let rest = text[digits..].strip_prefix(separator)?;
    let column_digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    match rest[column_digits..].strip_prefix(separator) {
        Some(after_column) if column_digits > 0 => Some(after_column),
        _ => Some(rest),
    }
}

/// One file of a diff: its path and the lines the diff adds and removes
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffSection<'a> {
    pub path: &'a str,
    pub added: Vec<&'a str>,
    pub removed: Vec<&'a str>,
}

/// The files a diff or patch changes, in order of their headers:
/// `diff --git a/X b/Y`, `+++ b/Y` (`--- a/X` when the new side is
/// `/dev/null`), and `*** Update File: X` style patch headers. Unprefixed
/// paths (`--no-prefix`) are accepted too. Text before the first header
/// (a commit message) belongs to no file.
pub(crate) fn diff_sections(text: &str) -> Vec<DiffSection<'_>> {
    let mut sections: Vec<DiffSection> = Vec::new();
    let mut current: Option<usize> = None;
    let mut old_path: Option<&str> = None;
    for line in text.lines() {
        if let Some(old) = line.strip_prefix("--- ") {
            old_path = Some(old.strip_prefix("a/").unwrap_or(old));
            continue;
        }
        if let Some(header) = diff_header(line, &mut old_path) {
            if let Some(path) = header.filter(|path| *path != "/dev/null" && looks_like_path(path)) {
                let index = match sections.iter().position(|section| section.path == path) {
                    Some(index) => index,
                    None => {
                        sections.push(DiffSection { path, added: Vec::new(), removed: Vec::new() });
                        sections.len() - 1
                    }
                };
                current = Some(index);
            }
            continue;
        }
        let Some(section) = current.map(|index| &mut sections[index]) else { continue };
        if let Some(added) = line.strip_prefix('+') {
            section.added.push(added);
        } else if let Some(removed) = line.strip_prefix('-') {
            section.removed.push(removed);
        }
    }
    sections
}

/// `Some(path)` if `line` is a file header (`Some(None)` for a header
/// whose path cannot be read), `None` for any other line.
fn diff_header<'a>(line: &'a str, old_path: &mut Option<&'a str>) -> Option<Option<&'a str>> {
    let path = if let Some(header) = line.strip_prefix("diff --git ") {
        header.split_once(" b/").map(|(_, new)| new).or_else(|| header.split_once(' ').map(|(_, new)| new))
    } else if let Some(new) = line.strip_prefix("+++ ") {
        if new.trim() == "/dev/null" { old_path.take() } else { Some(new.strip_prefix("b/").unwrap_or(new)) }
    } else {
        let header = ["*** Update File: ", "*** Add File: ", "*** Delete File: ", "*** Move to: "]
            .iter()
            .find_map(|header| line.strip_prefix(header))?;
        Some(header)
    };
    Some(path.map(|path| path.split('\t').next().unwrap_or(path).trim()))
}

/// The files a diff changes (see [`diff_sections`]).
pub(crate) fn diff_files(text: &str) -> Vec<&str> {
    diff_sections(text).into_iter().map(|section| section.path).collect()
}

/// The files of a `--stat` listing: ` src/auth/token.rs | 59 +++--`.
/// Truncated (`.../token.rs`) and rename (`{a => b}`) entries are skipped.
pub(crate) fn diffstat_files(output: &str) -> Vec<&str> {
    let mut files = Vec::new();
    for line in output.lines() {
        let Some((path, change)) = line.split_once(" | ") else { continue };
        let path = path.trim();
        let change = change.trim_start();
        let is_change = change.starts_with(|c: char| c.is_ascii_digit()) || change.starts_with("Bin");
        if is_change
            && !path.starts_with("...")
            && !path.contains("=>")
            && looks_like_path(path)
            && !files.contains(&path)
        {
            files.push(path);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn search_output_formats() {
        let output = "clients/python/authsvc/client.py-12-\nclients/python/authsvc/client.py:14:class Session:\n--\n\
                      web/src/session.js:12:3:export function loadSession() {\nsrc/auth/token.rs\nnot a path: at all";
        let lines = search_lines(output);
        assert_eq!(
            lines,
            vec![
                SearchLine { path: "clients/python/authsvc/client.py", text: "" },
                SearchLine { path: "clients/python/authsvc/client.py", text: "class Session:" },
                SearchLine { path: "web/src/session.js", text: "export function loadSession() {" },
                SearchLine { path: "src/auth/token.rs", text: "" },
            ]
        );
    }

    #[test]
    fn diff_headers_and_stats() {
        let diff = "diff --git a/src/a.rs b/src/a.rs\n--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-x\n+y\n\
                    --- a/old.py\n+++ /dev/null\n*** Update File: web/x.js";
        assert_eq!(diff_files(diff), vec!["src/a.rs", "old.py", "web/x.js"]);
        let stat = " src/auth/token.rs | 59 +\n .../deep/thing.rs | 2 +-\n 2 files changed, 61 insertions(+)";
        assert_eq!(diffstat_files(stat), vec!["src/auth/token.rs"]);
        let sections =
            diff_sections("commit 1\n+not a file line\n--- a/x.rs\n+++ b/x.rs\n-fn old() {}\n+fn new_one() {}\n ctx");
        assert_eq!(
            sections,
            vec![DiffSection { path: "x.rs", added: vec!["fn new_one() {}"], removed: vec!["fn old() {}"] }]
        );
    }
}
