//! The fact graph: entities and relations extracted deterministically from
//! events, valid in event time, recorded in log time, each with the
//! sequences of the events behind it.
//!
//! [`FactGraph`] is a projection like the others: a pure function of the
//! events applied to it in log order. No clock, no randomness, no IO; maps
//! are ordered and every output is sorted, so a replay rebuilds the same
//! graph, [`FactGraph::digest`] for digest.
//!
//! # Entities
//!
//! Ids are `<kind>:<key>` ([`EntityKind`]): `file:src/auth/token.rs`,
//! `symbol:refresh_access_token`, `error:python:KeyError:_session_from<refresh<get`
//! (a failure signature) or `error:KeyError` (an error type),
//! `command:cargo test`, `tool:bash`, `decision:<event id>`,
//! `task:<task id>`, `agent:coder`, `concept:<lowercased name>`,
//! `preference:<key>`, and `item:<event id>` for the event whose text
//! mentions other entities. A code name that is an error type
//! (`TokenExpiredError`) is an error entity wherever it appears, so that its
//! definition, its mentions and its failures meet in one node. Keys longer
//! than 200 bytes are cut and hashed. Edge ids are `<from> -<relation>-> <to>`.
//!
//! # Extraction rules
//!
//! - `tool_result_recorded` (tools are recognised by name, generically;
//!   see `tools.rs`): the agent `uses` the tool. A read (`read_file`, `cat`,
//!   `view`, `open`…) → agent `reads` file; an edit or write (`edit_file`,
//!   `write_file`, `str_replace`, `apply_patch`, `create_file`…) → agent
//!   `modifies` file; a shell run (`bash`, `shell`, `exec`… with a `cmd` or
//!   `command` argument; `git` with `args`) → agent `runs` command, the
//!   command normalised (whitespace collapsed, leading `cd X &&` and
//!   `VAR=value` dropped). Reads, edits, search hits and diffs give
//!   file `defines` symbol for the definitions they show (`fn`, `def`,
//!   `function`, `class`, `struct`…); an edit that removes a definition,
//!   or a whole-file write without it, closes that `defines`. A failed run
//!   (exit code ≠ 0) gives command `fails_with` error, one per normalised
//!   failure signature in the output (see `signature.rs`), each
//!   exception-type signature `instance_of` its type; a later run of the
//!   same command with exit code 0 closes those `fails_with` edges and
//!   links every file edited since the error's latest failure: file
//!   `fixes` error, with the edits and the passing run as provenance (a
//!   result without an exit code settles nothing either way). A
//!   search (`grep`, `rg`, `search`…) for a code name gives matched file
//!   `references` symbol; for anything else, the item `references` the
//!   matched files. A diff in any output (`diff --git a/… b/…`, or a git
//!   `--stat`) gives item `modifies` file. Failed reads, edits and searches
//!   give nothing but mentions: the file was not read or changed.
//! - `decision_made`: the decision, agent `decided` it; `supersedes` the
//!   decision it names, whose validity it closes at its own time (the
//!   superseded decision is kept, valid until then).
//! - `fact_asserted`: subject —predicate→ object (predicate in
//!   snake_case) with the confidence, valid from `valid_from` (default:
//!   the event's time) to `valid_to`; agent `asserted` subject. Subject and
//!   object are a written id, a path, an error name, a code identifier, a
//!   known name, or else a concept. Only a retraction closes a fact: a new
//!   object for the same subject and predicate leaves the old one valid
//!   (contradictions are settled by consolidation, not here).
//! - `fact_retracted`: closes the fact at `valid_to` (default: its time).
//! - `handoff_sent`: agent `handed_off_to` agent; the task, which
//!   `references` each artifact that is a path; the item `references` the
//!   task and each decision handed over.
//! - `task_updated`: the task with `status`, `title` and `note`
//!   attributes. `preference_set`: the preference with its `value`.
//! - Mentions, in messages, decisions, facts, handoffs, tasks, preferences,
//!   phases (written text) and in tool outputs: the event's item (or the
//!   decision, task or preference it is about) `references` what it
//!   mentions (see `mentions.rs`): paths (with a file extension),
//!   error names (`…Error`, `…Exception`), code identifiers (snake_case
//!   with an `_`, CamelCase with two humps, `a::b` paths, `name()`, text in
//!   backticks), names of known agents, tasks, preferences, commands and
//!   concepts, and event ids of known decisions. In tool outputs,
//!   identifiers only count when the graph already knows them.
//!
//! # Time and provenance
//!
//! Every edge has `valid_from`/`valid_to` in event time (an extracted
//! relation is valid from its first event) and `recorded_seq` in log time;
//! a relation that ends and starts again gets a new interval (a new edge,
//! `#2` appended to its id). A node's provenance is every event that
//! created it or changed its name, attributes or validity; an edge's, every
//! event that created, confirmed (a second read of the same file) or closed
//! it. [`FactGraph::items_of`] indexes, per entity, every event that
//! created, changed, related or mentioned it.
//!
//! # Queries
//!
//! [`FactGraph::neighbourhood`] and [`FactGraph::items_near`] walk at most
//! [`MAX_HOPS`] hops, [`MAX_FACT_EDGES_PER_NODE`] +
//! [`MAX_MENTION_EDGES_PER_NODE`] edges per node and
//! [`MAX_SUBGRAPH_NODES`] nodes, so a query's cost does not grow with the
//! log.

mod command;
mod extract;
mod fixes;
mod history;
mod json;
mod listing;
mod lookup;
mod mentions;
mod model;
mod names;
mod overlay;
mod query;
mod redact;
mod signature;
pub(crate) mod snapshot;
mod source;
mod store;
mod swarm;
mod tools;
mod view;

pub use history::FixOfFailure;
pub use model::{Edge, EntityKind, GraphQuery, Node, Subgraph, relation};
pub(crate) use query::IndexHasher;
pub use query::{
    MAX_FACT_EDGES_PER_NODE, MAX_HOPS, MAX_ITEMS_PER_ENTITY, MAX_MENTION_EDGES_PER_NODE, MAX_SUBGRAPH_NODES,
};
pub use snapshot::GRAPH_SNAPSHOT_FORMAT;
pub use store::FactGraph;
pub(crate) use store::TouchedEdge;
pub use swarm::SwarmGraph;
pub(crate) use tools::is_edit_tool;
pub use view::GraphView;
pub(crate) use view::Holding;
