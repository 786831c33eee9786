//! Extraction from tool results: which files an agent read, changed and
//! searched, which commands it ran, how they failed, and what fixed them.
//!
//! Tools are recognised by name, generically: the name is lowercased and
//! stripped of namespaces (`mcp__fs__read_file` → `read_file`,
//! `functions.bash` → `bash`), then matched against the families below;
//! an unknown name is classified by the shape of its arguments.

use mneme_events::ToolResultRecorded;

use super::command::{first_simple_command, normalise_command, shell_join};
use super::extract::MentionSource;
use super::json::{self, Arguments, JsonValue};
use super::listing::{diff_files, diff_sections, diffstat_files, search_lines};
use super::mentions::{PathContext, TextSource, is_error_name, is_identifier, looks_like_path};
use super::model::{EntityKind, relation};
use super::names::bounded_key;
use super::signature::failure_signatures;
use super::source::{definitions, language_of, source_lines};
use super::store::{EdgeIndex, EdgeTerms, EventContext, FactGraph, NodeIndex};

const READ_TOOLS: &[&str] = &[
    "cat",
    "file_read",
    "fs_read",
    "get_file_contents",
    "open",
    "open_file",
    "read",
    "read_file",
    "read_files",
    "read_many_files",
    "read_text_file",
    "readfile",
    "view",
    "view_file",
];
const MODIFY_TOOLS: &[&str] = &[
    "append_file",
    "append_to_file",
    "apply_patch",
    "create",
    "create_file",
    "delete_file",
    "edit",
    "edit_file",
    "insert",
    "multi_edit",
    "multiedit",
    "notebook_edit",
    "patch",
    "replace",
    "replace_in_file",
    "search_replace",
    "str_replace",
    "write",
    "write_file",
    "write_to_file",
];
/// Editors whose `command` argument says what they do (`view`, `create`,
/// `str_replace`, `insert`).
const EDITOR_TOOLS: &[&str] =
    &["editor", "file_editor", "str_replace_based_edit_tool", "str_replace_editor", "text_editor"];
const RUN_TOOLS: &[&str] = &[
    "bash",
    "cmd",
    "command",
    "container_exec",
    "exec",
    "execute",
    "execute_command",
    "local_shell",
    "powershell",
    "run",
    "run_command",
    "run_in_terminal",
    "run_shell_command",
    "run_terminal_cmd",
    "sh",
    "shell",
    "shell_exec",
    "terminal",
    "zsh",
];
const SEARCH_TOOLS: &[&str] = &[
    "code_search",
    "codebase_search",
    "find_in_files",
    "grep",
    "grep_search",
    "rg",
    "ripgrep",
    "search",
    "search_code",
    "search_files",
];

/// Programs whose file arguments a shell command reads.
const READING_PROGRAMS: &[&str] = &["bat", "cat", "head", "less", "more", "nl", "tail"];
/// Programs whose output is search hits.
const SEARCHING_PROGRAMS: &[&str] = &["ack", "ag", "grep", "rg"];

const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "filepath",
    "file",
    "filename",
    "target_file",
    "absolute_path",
    "relative_path",
    "notebook_path",
];
const PATH_LIST_KEYS: &[&str] = &["paths", "files", "file_paths"];
const COMMAND_KEYS: &[&str] = &["cmd", "command", "script", "commandLine", "command_line"];
const CWD_KEYS: &[&str] = &["cwd", "workdir", "working_directory", "directory"];
const NEW_TEXT_KEYS: &[&str] = &["new_string", "new_str", "replacement", "insert_text"];
const OLD_TEXT_KEYS: &[&str] = &["old_string", "old_str"];
const CONTENT_KEYS: &[&str] = &["content", "contents", "file_text", "text", "code"];
const PATCH_KEYS: &[&str] = &["patch", "input", "diff"];
const PATTERN_KEYS: &[&str] = &["pattern", "query", "regex", "search", "search_term", "q"];
const SCOPE_KEYS: &[&str] = &["path", "directory", "dir", "include", "file"];

/// What a tool call did, as far as files and commands go.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Invocation {
    Read { paths: Vec<String> },
    Modify { edits: Vec<FileEdit> },
    Run { command: String },
    Search { pattern: Option<String>, scope: Option<String> },
    Other,
}

/// One file changed by a tool call, with the text it added and removed
/// when the arguments show it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
struct FileEdit {
    path: String,
    added: Vec<String>,
    removed: Vec<String>,
    /// The call replaced the whole file: every definition not in `added`
    /// is gone.
    whole_file: bool,
}

impl FactGraph {
    /// `tool_result_recorded`: the agent `uses` the tool; then, by what the
    /// call did: `reads` / `modifies` / `runs`, `fails_with`, `fixes`,
    /// `defines`, search `references`; and mentions in the output.
    pub(crate) fn apply_tool_result(&mut self, result: &ToolResultRecorded, context: &EventContext) {
        let tool_name = result.tool.trim();
        let agent = self.publisher(context);
        let tool = self.entity(EntityKind::Tool, &bounded_key(&tool_name.to_lowercase()), tool_name, context);
        self.link(agent, relation::USES, tool, context);
        let arguments = json::parse(&result.args.0).unwrap_or_else(|| JsonValue::Object(Default::default()));
        let workspace = PathContext::new(arguments.first_string(CWD_KEYS), None);
        let succeeded = !result.failed();
        let mut output_paths = workspace.clone();
        match classify(tool_name, &arguments) {
            Invocation::Read { paths } if succeeded => {
                if let [path] = paths.as_slice()
                    && let Some(file) = workspace.normalise(path)
                {
                    output_paths = workspace.inside_file(&file);
                }
                self.apply_read(agent, &paths, &result.output, &workspace, context)
            }
            Invocation::Modify { edits } if succeeded => {
                self.apply_modify(agent, &edits, &result.output, &workspace, context)
            }
            Invocation::Run { command } => {
                output_paths = self.apply_run(agent, &command, result, &workspace, context);
            }
            Invocation::Search { pattern, scope } if succeeded => {
                self.apply_search(pattern.as_deref(), scope.as_deref(), &result.output, &workspace, context)
            }
            Invocation::Read { .. } | Invocation::Modify { .. } | Invocation::Search { .. } | Invocation::Other => {}
        }
        self.link_mentions(MentionSource::Item, &result.output, &output_paths, TextSource::ToolOutput, context);
    }

    /// Reads: `reads` each file; the symbols a single file's listing
    /// defines.
    fn apply_read(
        &mut self,
        agent: NodeIndex,
        paths: &[String],
        output: &str,
        workspace: &PathContext,
        context: &EventContext,
    ) {
        let files: Vec<(NodeIndex, String)> = paths
            .iter()
            .filter_map(|path| workspace.normalise(path))
            .map(|path| (self.file_node(&path, context), path))
            .collect();
        for (file, _) in &files {
            self.link(agent, relation::READS, *file, context);
        }
        if let [(file, path)] = files.as_slice() {
            self.link_definitions(*file, path, source_lines(output), context);
        }
    }

    /// Edits and writes: `modifies` each file (and tells the fix tracker);
    /// `defines` for the definitions added; closes `defines` for those
    /// removed, or for all that a whole-file write no longer has.
    fn apply_modify(
        &mut self,
        agent: NodeIndex,
        edits: &[FileEdit],
        output: &str,
        workspace: &PathContext,
        context: &EventContext,
    ) {
        for edit in edits {
            let Some(path) = workspace.normalise(&edit.path) else { continue };
            let file = self.file_node(&path, context);
            self.link(agent, relation::MODIFIES, file, context);
            self.failures.record_edit(file, context.provenance());
            let Some(language) = language_of(&path) else { continue };
            let added = definitions(language, edit.added.iter().map(String::as_str));
            let removed = definitions(language, edit.removed.iter().map(String::as_str));
            for name in &added {
                let symbol = self.symbol_node(name, context);
                self.link(file, relation::DEFINES, symbol, context);
            }
            let open_definitions = self.open_edges_from(file, relation::DEFINES);
            for edge in open_definitions {
                let name = &self.node_at(self.edges[edge as usize].to).name;
                let gone = if edit.whole_file {
                    !added.contains(name)
                } else {
                    removed.contains(name) && !added.contains(name)
                };
                if gone {
                    self.close_edge(edge, context.ts, context);
                }
            }
        }
        if let [edit] = edits
            && let Some(path) = workspace.normalise(&edit.path)
        {
            let file = self.file_node(&path, context);
            self.link_definitions(file, &path, source_lines(output), context);
        }
    }

    /// Shell runs: the command and `runs`; what the command reads, searches
    /// or diffs; `fails_with` on failure, `fixes` on a pass after a failure.
    /// Returns the path context of its output (its `cd` applied).
    fn apply_run(
        &mut self,
        agent: NodeIndex,
        raw_command: &str,
        result: &ToolResultRecorded,
        workspace: &PathContext,
        context: &EventContext,
    ) -> PathContext {
        let Some(command) = normalise_command(raw_command) else { return workspace.clone() };
        let paths = PathContext::new(workspace.root.as_deref(), command.directory.as_deref());
        let node = self.entity(EntityKind::Command, &bounded_key(&command.text), &command.text, context);
        self.link(agent, relation::RUNS, node, context);
        let words = first_simple_command(&command.text);
        let succeeded = !result.failed();
        if succeeded {
            self.apply_program_effects(agent, &words, &result.output, &paths, context);
        }
        let is_git = words.first().is_some_and(|program| program == "git");
        self.apply_diffs(&result.output, is_git, &paths, context);
        match result.exit_code {
            Some(0) => self.resolve_failures(node, context),
            Some(code) => self.record_failure(node, &command.text, code, &result.output, context),
            None => {}
        }
        self.link_mentions(MentionSource::Item, &command.text, &paths, TextSource::ToolOutput, context);
        paths
    }

    /// A shell command that reads files (`cat`, `head`…) or searches them
    /// (`grep`, `rg`, `git grep`) has the effects of the matching tool.
    fn apply_program_effects(
        &mut self,
        agent: NodeIndex,
        words: &[String],
        output: &str,
        paths: &PathContext,
        context: &EventContext,
    ) {
        let Some(program) = words.first().map(|word| word.rsplit('/').next().unwrap_or(word)) else { return };
        let arguments: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        if READING_PROGRAMS.contains(&program) {
            let files: Vec<String> = arguments
                .iter()
                .filter(|word| !word.starts_with('-') && looks_like_path(word))
                .map(|word| word.to_string())
                .collect();
            self.apply_read(agent, &files, output, paths, context);
        } else if SEARCHING_PROGRAMS.contains(&program) || (program == "git" && arguments.first() == Some(&"grep")) {
            let skip = usize::from(program == "git");
            let mut operands = arguments[skip..].iter().filter(|word| !word.starts_with('-'));
            let pattern = operands.next().map(|word| word.to_string());
            let scope = operands.next().map(|word| word.to_string());
            self.apply_search(pattern.as_deref(), scope.as_deref(), output, paths, context);
        }
    }

    /// A diff in the output (`git diff`, `git show`, a patch): the item
    /// `modifies` each file it changes, and each file `defines` what the
    /// diff adds. For git commands, a `--stat` listing names files too
    /// (elsewhere `path | 12` is too common a shape to trust).
    fn apply_diffs(&mut self, output: &str, is_git: bool, paths: &PathContext, context: &EventContext) {
        let mut changed: Vec<(String, Vec<&str>)> = diff_sections(output)
            .into_iter()
            .filter_map(|section| paths.normalise(section.path).map(|path| (path, section.added)))
            .collect();
        if is_git {
            changed.extend(
                diffstat_files(output)
                    .into_iter()
                    .filter_map(|path| paths.normalise(path))
                    .map(|path| (path, Vec::new())),
            );
        }
        if changed.is_empty() {
            return;
        }
        let item = self.item_node(context);
        for (path, added) in changed {
            let file = self.file_node(&path, context);
            self.link(item, relation::MODIFIES, file, context);
            self.link_definitions(file, &path, added, context);
        }
    }

    /// A failed run: an error entity per failure signature in the output
    /// (or, when none is recognised, one named by the exit code and the
    /// command), `fails_with` from the command, and a watch for the fix.
    fn record_failure(
        &mut self,
        command: NodeIndex,
        command_text: &str,
        exit_code: i32,
        output: &str,
        context: &EventContext,
    ) {
        let mut errors: Vec<(NodeIndex, EdgeIndex)> = Vec::new();
        let signatures = failure_signatures(output);
        for signature in &signatures {
            let key = signature.key();
            let error = self.entity(EntityKind::Error, &bounded_key(&key), &key, context);
            if !self.node_at(error).attributes.contains_key("error_type") {
                self.set_attribute(error, "language", signature.language, context);
                self.set_attribute(error, "error_type", &signature.error_type, context);
                if !signature.message.is_empty() {
                    self.set_attribute(error, "message", &signature.message, context);
                }
            }
            if signature.type_is_class() {
                let error_type = self.entity(EntityKind::Error, &signature.error_type, &signature.error_type, context);
                self.link(error, relation::INSTANCE_OF, error_type, context);
            }
            errors.push((error, self.link(command, relation::FAILS_WITH, error, context)));
        }
        if signatures.is_empty() {
            let key = format!("exit_{exit_code}:{command_text}");
            let error = self.entity(EntityKind::Error, &bounded_key(&key), &key, context);
            self.set_attribute(error, "exit_code", &exit_code.to_string(), context);
            errors.push((error, self.link(command, relation::FAILS_WITH, error, context)));
        }
        self.failures.record_failure(command, &errors, context.seq);
    }

    /// A passing run of a watched command: its `fails_with` edges close,
    /// and each file edited since an error's latest failure `fixes` it,
    /// with the edits and this run as provenance.
    fn resolve_failures(&mut self, command: NodeIndex, context: &EventContext) {
        for resolution in self.failures.resolve(command) {
            self.close_edge(resolution.fails_with, context.ts, context);
            for (file, edits) in resolution.fixed_by {
                self.link_with(file, relation::FIXES, resolution.error, context, &edits, EdgeTerms::default());
            }
        }
    }

    /// Search hits: with a pattern that is a code name, each matched file
    /// `references` that symbol; otherwise the item `references` the files.
    /// Hit lines that are definitions give `defines`.
    fn apply_search(
        &mut self,
        pattern: Option<&str>,
        scope: Option<&str>,
        output: &str,
        paths: &PathContext,
        context: &EventContext,
    ) {
        let mut hits: Vec<(String, Vec<&str>)> = Vec::new();
        for line in search_lines(output) {
            let Some(path) = paths.normalise(line.path) else { continue };
            match hits.iter_mut().find(|(known, _)| *known == path) {
                Some((_, texts)) => texts.push(line.text),
                None => hits.push((path, vec![line.text])),
            }
        }
        // Searching one file prints its lines without the file name.
        if hits.is_empty()
            && !output.trim().is_empty()
            && let Some(path) = scope.filter(|scope| looks_like_path(scope)).and_then(|scope| paths.normalise(scope))
        {
            hits.push((path, output.lines().collect()));
        }
        let target = pattern
            .map(str::trim)
            .filter(|pattern| is_code_name(pattern))
            .map(|pattern| self.symbol_node(pattern, context));
        for (path, texts) in hits {
            let file = self.file_node(&path, context);
            match target {
                Some(symbol) => {
                    self.link(file, relation::REFERENCES, symbol, context);
                }
                None => {
                    let item = self.item_node(context);
                    self.link(item, relation::REFERENCES, file, context);
                }
            }
            self.link_definitions(file, &path, texts, context);
        }
    }

    /// `file —defines→ symbol` for each definition among `lines`, when the
    /// file's language is known.
    fn link_definitions<'a>(
        &mut self,
        file: NodeIndex,
        path: &str,
        lines: impl IntoIterator<Item = &'a str>,
        context: &EventContext,
    ) {
        let Some(language) = language_of(path) else { return };
        for name in definitions(language, lines) {
            let symbol = self.symbol_node(&name, context);
            self.link(file, relation::DEFINES, symbol, context);
        }
    }

    /// The entity of a code name: error types are errors, so that a class
    /// definition, its mentions and its failures meet in one node.
    fn symbol_node(&mut self, name: &str, context: &EventContext) -> NodeIndex {
        let kind = if is_error_name(name) { EntityKind::Error } else { EntityKind::Symbol };
        self.entity(kind, &bounded_key(name), name, context)
    }

    /// Open edges of `relation` leaving `node`.
    fn open_edges_from(&self, node: NodeIndex, relation: &str) -> Vec<EdgeIndex> {
        self.adjacency[node as usize]
            .facts
            .iter()
            .copied()
            .filter(|&edge| {
                let record = &self.edges[edge as usize];
                record.from == node && record.valid_to().is_none() && self.relation_name(record) == relation
            })
            .collect()
    }
}

/// A search pattern that names code: an identifier or a `::` path.
fn is_code_name(pattern: &str) -> bool {
    is_identifier(pattern) || (pattern.contains("::") && pattern.split("::").all(is_identifier))
}

/// Whether a tool of this name edits files (`edit_file`, `apply_patch`,
/// `str_replace_based_edit_tool`, `mcp__fs__write_file`…), by name alone.
pub(crate) fn is_edit_tool(tool_name: &str) -> bool {
    let name = base_tool_name(tool_name);
    MODIFY_TOOLS.contains(&name.as_str()) || EDITOR_TOOLS.contains(&name.as_str())
}

/// The family of a tool, by name, then by arguments.
fn classify(tool_name: &str, arguments: &JsonValue) -> Invocation {
    let name = base_tool_name(tool_name);
    let name = name.as_str();
    if EDITOR_TOOLS.contains(&name) {
        return classify_editor(arguments);
    }
    if READ_TOOLS.contains(&name) {
        return Invocation::Read { paths: argument_paths(arguments) };
    }
    if MODIFY_TOOLS.contains(&name) {
        return Invocation::Modify {
            edits: file_edits(arguments, name.starts_with("write") || name.starts_with("create")),
        };
    }
    if name == "git" {
        return git_invocation(arguments);
    }
    if RUN_TOOLS.contains(&name) {
        return run_invocation(arguments).unwrap_or(Invocation::Other);
    }
    if SEARCH_TOOLS.contains(&name) {
        return search_invocation(arguments);
    }
    // An unknown tool, judged by its arguments.
    if let Some(run) = run_invocation(arguments) {
        return run;
    }
    let has_path = !argument_paths(arguments).is_empty();
    if has_path && arguments.first_string(&[CONTENT_KEYS, NEW_TEXT_KEYS].concat()).is_some() {
        return Invocation::Modify { edits: file_edits(arguments, arguments.first_string(CONTENT_KEYS).is_some()) };
    }
    if arguments.first_string(PATCH_KEYS).is_some_and(|patch| !diff_files(patch).is_empty()) {
        return Invocation::Modify { edits: file_edits(arguments, false) };
    }
    if arguments.first_string(&["pattern", "regex"]).is_some() {
        return search_invocation(arguments);
    }
    Invocation::Other
}

/// `mcp__fs__read_file` → `read_file`, `functions.bash` → `bash`.
fn base_tool_name(tool_name: &str) -> String {
    let lowered = tool_name.trim().to_lowercase();
    let last = lowered.rsplit(['.', '/', ':']).next().unwrap_or(&lowered);
    last.rsplit("__").next().unwrap_or(last).to_string()
}

fn classify_editor(arguments: &JsonValue) -> Invocation {
    match arguments.first_string(&["command", "action", "operation"]) {
        Some("view" | "read") => Invocation::Read { paths: argument_paths(arguments) },
        Some("create" | "write") => Invocation::Modify { edits: file_edits(arguments, true) },
        Some(_) => Invocation::Modify { edits: file_edits(arguments, false) },
        None => Invocation::Other,
    }
}

fn git_invocation(arguments: &JsonValue) -> Invocation {
    let words = arguments.strings(&["args", "arguments", "argv"]);
    let command = if words.is_empty() {
        match arguments.first_string(&["command", "subcommand", "cmd"]) {
            Some(text) => text.trim().to_string(),
            None => return Invocation::Other,
        }
    } else {
        shell_join(words)
    };
    let command = if command == "git" || command.starts_with("git ") { command } else { format!("git {command}") };
    Invocation::Run { command }
}

fn run_invocation(arguments: &JsonValue) -> Option<Invocation> {
    if let Some(command) = arguments.first_string(COMMAND_KEYS) {
        return Some(Invocation::Run { command: command.to_string() });
    }
    let words = arguments.strings(COMMAND_KEYS);
    (!words.is_empty()).then(|| Invocation::Run { command: shell_join(words) })
}

fn search_invocation(arguments: &JsonValue) -> Invocation {
    Invocation::Search {
        pattern: arguments.first_string(PATTERN_KEYS).map(str::to_string),
        scope: arguments.first_string(SCOPE_KEYS).map(str::to_string),
    }
}

/// The file paths among the arguments.
fn argument_paths(arguments: &JsonValue) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for path in arguments.first_string(PATH_KEYS).into_iter().chain(arguments.strings(PATH_LIST_KEYS)) {
        let path = path.trim();
        if !path.is_empty() && !paths.iter().any(|known| known == path) {
            paths.push(path.to_string());
        }
    }
    paths
}

/// The files an editing call changes, with what it adds and removes:
/// a patch argument's sections, or the path arguments with the new and old
/// text (`new_string`/`old_string`, `content`, or `edits: [{…}]`).
fn file_edits(arguments: &JsonValue, whole_file: bool) -> Vec<FileEdit> {
    if let Some(patch) = arguments.first_string(PATCH_KEYS) {
        let sections = patch_sections(patch);
        if !sections.is_empty() {
            return sections;
        }
    }
    let lines = |text: &str| text.lines().map(str::to_string).collect::<Vec<_>>();
    let mut added: Vec<String> = Vec::new();
    let mut removed: Vec<String> = Vec::new();
    for text in arguments.first_string(CONTENT_KEYS).into_iter().chain(arguments.first_string(NEW_TEXT_KEYS)) {
        added.extend(lines(text));
    }
    removed.extend(arguments.first_string(OLD_TEXT_KEYS).map(lines).unwrap_or_default());
    for edit in arguments.get("edits").and_then(JsonValue::as_array).map(Vec::as_slice).unwrap_or_default() {
        added.extend(edit.first_string(NEW_TEXT_KEYS).map(lines).unwrap_or_default());
        removed.extend(edit.first_string(OLD_TEXT_KEYS).map(lines).unwrap_or_default());
    }
    let whole_file = whole_file && arguments.first_string(CONTENT_KEYS).is_some();
    argument_paths(arguments)
        .into_iter()
        .map(|path| FileEdit { path, added: added.clone(), removed: removed.clone(), whole_file })
        .collect()
}

/// The files of a patch with the lines it adds and removes in each.
fn patch_sections(patch: &str) -> Vec<FileEdit> {
    diff_sections(patch)
        .into_iter()
        .map(|section| FileEdit {
            path: section.path.to_string(),
            added: section.added.into_iter().map(str::to_string).collect(),
            removed: section.removed.into_iter().map(str::to_string).collect(),
            whole_file: false,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arguments(text: &str) -> JsonValue {
        json::parse(text).expect("valid JSON")
    }

    #[test]
    fn tools_are_recognised_by_name_and_shape() {
        assert_eq!(
            classify("mcp__fs__read_file", &arguments(r#"{"path":"src/a.rs"}"#)),
            Invocation::Read { paths: vec!["src/a.rs".to_string()] }
        );
        assert_eq!(
            classify("functions.bash", &arguments(r#"{"cmd":"cargo test"}"#)),
            Invocation::Run { command: "cargo test".to_string() }
        );
        assert_eq!(
            classify("git", &arguments(r#"{"args":["commit","-m","fix: x (#1)"]}"#)),
            Invocation::Run { command: "git commit -m 'fix: x (#1)'".to_string() }
        );
        assert_eq!(
            classify("str_replace_based_edit_tool", &arguments(r#"{"command":"view","path":"a.py"}"#)),
            Invocation::Read { paths: vec!["a.py".to_string()] }
        );
        assert_eq!(
            classify("my_custom_runner", &arguments(r#"{"command":["npm","test"]}"#)),
            Invocation::Run { command: "npm test".to_string() }
        );
        assert_eq!(classify("list_dir", &arguments(r#"{"path":"src"}"#)), Invocation::Other);
    }

    #[test]
    fn edits_carry_added_and_removed_text() {
        let edits =
            file_edits(&arguments(r#"{"path":"a.py","old_string":"def a():\n","new_string":"def b():\n"}"#), false);
        assert_eq!(
            edits,
            vec![FileEdit {
                path: "a.py".to_string(),
                added: vec!["def b():".to_string()],
                removed: vec!["def a():".to_string()],
                whole_file: false,
            }]
        );
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n-fn old() {}\n+fn new_name() {}\n*** Add File: src/b.rs\n+pub fn b() {}\n*** End Patch";
        let edits = file_edits(&arguments(&format!("{{\"input\":{}}}", json_string(patch))), false);
        assert_eq!(edits.iter().map(|edit| edit.path.as_str()).collect::<Vec<_>>(), vec!["src/a.rs", "src/b.rs"]);
        assert_eq!(edits[1].added, vec!["pub fn b() {}".to_string()]);
    }

    fn json_string(text: &str) -> String {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n"))
    }
}
