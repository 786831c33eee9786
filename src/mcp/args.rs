//! The tools' inputs, each with the JSON Schema an MCP host shows its model,
//! and the one output that is not an API answer already.

use mneme_api::context::PhaseAnswer;
use mneme_api::memory::ItemAnswer;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchArgs {
    /// What to look for, in words.
    pub query: String,
    /// `hybrid` (default: full text, vectors and the fact graph fused),
    /// `bm25`, `vector` or `graph`.
    pub mode: Option<String>,
    /// How many hits, 1 to 1000 (default 10).
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
    /// `context_budget` in swarm.toml).
    pub budget_tokens: Option<usize>,
    /// The file the agent has open.
    pub current_file: Option<String>,
    /// Errors the agent just saw.
    #[serde(default)]
    pub recent_errors: Vec<String>,
    /// `coding`, `debugging`, `reviewing`, `planning`.
    pub activity: Option<String>,
    /// 0..1: how much room to give detail.
    pub thinking_budget: Option<f32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecallArgs {
    /// An item id (from search, context or provenance): the item with its
    /// state and provenance.
    pub item_id: Option<String>,
    /// Or a phase id (from context's index): the phase at `level`.
    pub phase_id: Option<String>,
    /// `index`, `compressed`, `summary`, `findings` or `full`.
    pub level: Option<String>,
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
    /// How far to walk, 1 to 3 (default 1).
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
