//! The tools' inputs, each with the JSON Schema an MCP host shows its model,
//! and the one output that is not an API answer already.

use mneme_api::context::PhaseAnswer;
use mneme_api::memory::ItemAnswer;
use mneme_api::search::SearchMode;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in words.
    pub query: String,
    /// How to search; hybrid unless given.
    pub mode: Option<SearchMode>,
    /// How many hits, 1 to 1000 (default 10).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Only these event kinds, e.g. `["decision_made", "note_written"]`;
    /// `["phase"]` searches completed phases (what each found) instead.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only items of this task (correlation id).
    pub task: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// What the agent is about to do or asks about.
    #[serde(default)]
    pub query: String,
    /// Token budget of the whole context (default: the agent's
    /// `context_budget` in swarm.toml). The text answered fits it.
    #[schemars(range(min = 1))]
    pub budget_tokens: Option<usize>,
    /// The file the agent has open.
    pub current_file: Option<String>,
    /// Errors the agent just saw.
    #[serde(default)]
    pub recent_errors: Vec<String>,
    /// What the agent is doing: it decides how the budget is shared.
    pub activity: Option<Activity>,
    /// 0..1: how much room to give detail.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub thinking_budget: Option<f32>,
}

/// What an agent is doing, for context.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Activity {
    /// Writing code: decisions, constraints, relevant code facts.
    Coding,
    /// Chasing a failure: errors, fixes, active facts.
    Debugging,
    /// Reviewing work: decisions and what they rest on.
    Reviewing,
    /// Planning: tasks, handoffs, phases.
    Planning,
}

impl Activity {
    pub fn as_str(self) -> &'static str {
        match self {
            Activity::Coding => "coding",
            Activity::Debugging => "debugging",
            Activity::Reviewing => "reviewing",
            Activity::Planning => "planning",
        }
    }
}

/// A level of a phase, most compressed first.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PhaseLevel {
    /// One line.
    Index,
    /// A few lines.
    Compressed,
    /// A paragraph (the default).
    Summary,
    /// What the phase found, file by file.
    Findings,
    /// Every event's text.
    Full,
}

impl From<PhaseLevel> for mneme_api::query::PhaseLevel {
    /// The tool offers every level but the original events, which are
    /// the log's to show.
    fn from(level: PhaseLevel) -> mneme_api::query::PhaseLevel {
        use mneme_api::query::PhaseLevel as Level;
        match level {
            PhaseLevel::Index => Level::Index,
            PhaseLevel::Compressed => Level::Compressed,
            PhaseLevel::Summary => Level::Summary,
            PhaseLevel::Findings => Level::Findings,
            PhaseLevel::Full => Level::Full,
        }
    }
}

/// Who may read a note.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NoteScope {
    /// Only this agent (the default).
    Private,
    /// Every agent of the swarm.
    Shared,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteArgs {
    /// What to remember, in the agent's own words.
    pub text: String,
    /// Labels, e.g. `gotcha`, `todo`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// 0..1; consolidation keeps important notes longer.
    #[schemars(range(min = 0.0, max = 1.0))]
    pub importance: Option<f32>,
    /// Who may read it; private unless given.
    pub scope: Option<NoteScope>,
    /// The task it belongs to (the event's `correlation_id`).
    pub task: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TimelineArgs {
    /// Events after this seq.
    pub since_seq: Option<u64>,
    /// Or events from this RFC 3339 time.
    pub since: Option<String>,
    /// At most this many entries, 1 to 500 (default 50).
    #[schemars(range(min = 1, max = 500))]
    pub limit: Option<usize>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// An item id (from search, context or provenance): the item with its
    /// state and provenance.
    pub item_id: Option<String>,
    /// Or a phase id (from context's index): the phase at `level`.
    pub phase_id: Option<String>,
    /// The phase's level; summary unless given.
    pub level: Option<PhaseLevel>,
}

/// An item, or a phase at a level: whichever was asked for.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Recalled {
    pub item: Option<ItemAnswer>,
    pub phase: Option<PhaseAnswer>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ItemArgs {
    /// The item's id.
    pub item_id: String,
    /// Why, kept on the log.
    pub reason: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PinArgs {
    /// The item's id.
    pub item_id: String,
    /// Why, kept on the log.
    pub reason: Option<String>,
    /// Take the pin off instead (so that the item may be forgotten).
    #[serde(default)]
    pub unpin: bool,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CiteArgs {
    /// The id of an item the agent used.
    pub item_id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphArgs {
    /// An entity id (`file:src/auth/token.rs`) or name (`src/auth/token.rs`).
    pub entity: String,
    /// How far to walk, 1 to 4 (default 2).
    #[schemars(range(min = 1, max = 4))]
    pub hops: Option<usize>,
    /// Only facts valid at this RFC 3339 time.
    pub as_of: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProvenanceArgs {
    /// The item's id.
    pub item_id: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AckArgs {
    /// The handoff's id (from handoffs_pending or core memory).
    pub handoff_id: String,
    pub note: Option<String>,
}
