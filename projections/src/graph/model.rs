//! The public shapes of the fact graph: entity kinds, nodes, edges, queries
//! and subgraphs, and the names of the relations extraction produces.

use std::collections::BTreeMap;
use std::fmt;

use mneme_events::Timestamp;

use crate::item::ProvenanceRef;

/// Index of a node in the graph's nodes.
pub(crate) type NodeIndex = u32;
/// Index of an edge in the graph's edges.
pub(crate) type EdgeIndex = u32;
/// Index of a relation name in the graph's relations.
pub(crate) type RelationIndex = u32;

/// What an entity is. The kind is also the prefix of the entity's id:
/// `file:src/auth/token.rs`, `agent:coder`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntityKind {
    /// A path in the workspace, relative to the workspace root when known.
    File,
    /// A function, type or other code identifier, by its bare name.
    Symbol,
    /// An error type (`error:KeyError`) or a normalised failure signature
    /// (`error:python:KeyError:_session_from<refresh<get`).
    Error,
    /// A tool an agent calls (`tool:bash`).
    Tool,
    /// A normalised shell command (`command:cargo test`).
    Command,
    /// A decision, by the id of the event that made it.
    Decision,
    /// A task, by its task id.
    Task,
    /// An agent of the swarm.
    Agent,
    /// Anything named in a fact that is not one of the typed kinds, by its
    /// lowercased name.
    Concept,
    /// A preference or convention, by its key.
    Preference,
    /// The memory item of one event (`item:<event id>`): the source of the
    /// `references` edges for what that event mentions.
    Item,
}

impl EntityKind {
    /// Every kind, in the order used to break ties when a name is ambiguous:
    /// the more specific kinds first.
    pub const ALL: [EntityKind; 11] = [
        EntityKind::File,
        EntityKind::Symbol,
        EntityKind::Error,
        EntityKind::Task,
        EntityKind::Decision,
        EntityKind::Agent,
        EntityKind::Preference,
        EntityKind::Command,
        EntityKind::Tool,
        EntityKind::Concept,
        EntityKind::Item,
    ];

    /// The lowercase name, which is also the id prefix.
    pub fn as_str(self) -> &'static str {
        match self {
            EntityKind::File => "file",
            EntityKind::Symbol => "symbol",
            EntityKind::Error => "error",
            EntityKind::Tool => "tool",
            EntityKind::Command => "command",
            EntityKind::Decision => "decision",
            EntityKind::Task => "task",
            EntityKind::Agent => "agent",
            EntityKind::Concept => "concept",
            EntityKind::Preference => "preference",
            EntityKind::Item => "item",
        }
    }

    /// The kind named `name` (as returned by [`EntityKind::as_str`]).
    pub fn from_name(name: &str) -> Option<EntityKind> {
        EntityKind::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// Position in [`EntityKind::ALL`]: lower is preferred when a name
    /// resolves to entities of several kinds.
    pub(crate) fn preference_rank(self) -> usize {
        EntityKind::ALL.iter().position(|kind| *kind == self).unwrap_or(EntityKind::ALL.len())
    }

    /// Agents and tools touch nearly every event of a swarm: reaching one
    /// says nothing about relevance, so traversals do not expand through them.
    pub(crate) fn is_hub(self) -> bool {
        matches!(self, EntityKind::Agent | EntityKind::Tool)
    }

    /// Whether implicit mentions of this kind's names must match the exact
    /// letter case: code names (`Session` the class is not "session" the
    /// word) do; names of people, tasks and ideas do not.
    pub(crate) fn name_is_case_sensitive(self) -> bool {
        matches!(self, EntityKind::File | EntityKind::Symbol | EntityKind::Error)
    }
}

impl fmt::Display for EntityKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Builds the id of an entity: `<kind>:<key>`.
pub(crate) fn entity_id(kind: EntityKind, key: &str) -> String {
    format!("{}:{key}", kind.as_str())
}

/// One entity of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// Stable id, `<kind>:<key>`, e.g. `file:src/auth/token.rs`.
    pub id: String,
    pub kind: EntityKind,
    /// Human-readable name: the path, the identifier, a decision's title, a
    /// concept as first written.
    pub name: String,
    /// Kind-specific attributes, e.g. `status` and `title` of a task,
    /// `choice` of a decision, `value` of a preference, `error_type` and
    /// `message` of a failure signature.
    pub attributes: BTreeMap<String, String>,
    /// When the entity starts to hold, in event time; `None` when it always
    /// has (most entities: a file does not start to exist when first read).
    pub valid_from: Option<Timestamp>,
    /// When the entity stops holding: a decision is closed by the decision
    /// that supersedes it.
    pub valid_to: Option<Timestamp>,
    /// The seq of the event that first closed the node: whether it was
    /// closed as of an earlier seq (see [`Node::is_closed_at`]).
    pub(crate) closed_seq: Option<u64>,
    /// The events that created the node or changed its name, attributes or
    /// validity, in log order. Events that only link the node to others are
    /// in the provenance of those edges (and in [`crate::graph::FactGraph::items_of`]).
    pub provenance: Vec<ProvenanceRef>,
}

impl Node {
    /// Whether the node holds at event time `at`.
    pub fn is_valid_at(&self, at: Timestamp) -> bool {
        is_within(self.valid_from, self.valid_to, at)
    }

    /// Whether the node had been closed as of the event at `seq` (that
    /// event included).
    pub(crate) fn is_closed_at(&self, seq: u64) -> bool {
        self.closed_seq.is_some_and(|closed| closed <= seq)
    }
}

/// One relation between two entities, valid over an interval of event time
/// and recorded at a position of the log.
#[derive(Debug, Clone, PartialEq)]
pub struct Edge {
    /// `<from> -<relation>-> <to>`, with `#2`, `#3`... appended for the
    /// second and later validity intervals of the same triple.
    pub id: String,
    pub from: String,
    pub to: String,
    /// snake_case relation name (see [`relation`]).
    pub relation: String,
    /// Start of validity in event time (inclusive).
    pub valid_from: Option<Timestamp>,
    /// End of validity in event time (exclusive); `None` while it holds.
    pub valid_to: Option<Timestamp>,
    /// Sequence of the event that created this edge (log time).
    pub recorded_seq: u64,
    /// Confidence of an asserted fact; `None` for extracted relations.
    pub confidence: Option<f32>,
    /// The events that created, confirmed or closed the edge, in log order.
    pub provenance: Vec<ProvenanceRef>,
}

impl Edge {
    /// Whether the edge holds at event time `at`.
    pub fn is_valid_at(&self, at: Timestamp) -> bool {
        is_within(self.valid_from, self.valid_to, at)
    }
}

/// `from <= at < to`, an absent bound being unbounded.
pub(crate) fn is_within(from: Option<Timestamp>, to: Option<Timestamp>, at: Timestamp) -> bool {
    from.is_none_or(|from| from <= at) && to.is_none_or(|to| at < to)
}

/// A neighbourhood request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphQuery {
    /// An entity id (`file:src/auth/token.rs`), or a name that resolves to
    /// one (`src/auth/token.rs`, `coder`, `TokenExpiredError`).
    pub entity: String,
    /// How far to walk, in edges; clamped to [`crate::graph::MAX_HOPS`].
    pub hops: usize,
    /// Only edges with these relations; empty means all.
    pub relations: Vec<String>,
    /// Only nodes and edges valid at this event time (the center is shown
    /// even if it is not); `None` means all of history, closed intervals
    /// included.
    pub as_of: Option<Timestamp>,
}

impl GraphQuery {
    /// All relations, all of history.
    pub fn new(entity: impl Into<String>, hops: usize) -> GraphQuery {
        GraphQuery { entity: entity.into(), hops, relations: Vec::new(), as_of: None }
    }
}

/// The part of the graph around one entity.
#[derive(Debug, Clone, PartialEq)]
pub struct Subgraph {
    /// Id of the entity the query resolved to.
    pub center: String,
    /// The center and every node reached, sorted by id.
    pub nodes: Vec<Node>,
    /// Every edge walked, sorted by id.
    pub edges: Vec<Edge>,
}

/// The relation names extraction produces. Predicates of asserted facts are
/// relations too, normalised to snake_case.
pub mod relation {
    /// agent → file: the agent read the file.
    pub const READS: &str = "reads";
    /// agent → file: the agent edited or wrote the file; item → file: a diff
    /// shown by that event changes the file.
    pub const MODIFIES: &str = "modifies";
    /// agent → command: the agent ran the command.
    pub const RUNS: &str = "runs";
    /// command → error: a run of the command failed with the error.
    pub const FAILS_WITH: &str = "fails_with";
    /// file → error: the file was edited after the failure and the command
    /// then passed.
    pub const FIXES: &str = "fixes";
    /// file → symbol: the file defines the symbol.
    pub const DEFINES: &str = "defines";
    /// item/decision/task/preference → anything it mentions; file → symbol
    /// for the files a search for the symbol matched; task → artifact file.
    pub const REFERENCES: &str = "references";
    /// agent → decision.
    pub const DECIDED: &str = "decided";
    /// decision → the decision it replaces.
    pub const SUPERSEDES: &str = "supersedes";
    /// agent → agent.
    pub const HANDED_OFF_TO: &str = "handed_off_to";
    /// agent → the subject of a fact it asserted.
    pub const ASSERTED: &str = "asserted";
    /// agent → tool.
    pub const USES: &str = "uses";
    /// failure signature → its error type (`error:python:KeyError:…` →
    /// `error:KeyError`).
    pub const INSTANCE_OF: &str = "instance_of";
    /// memory —related_to→ memory: consolidation found they share entities
    /// or a task.
    pub const RELATED_TO: &str = "related_to";
}
