//! What an agent keeps of its own: core memory (always at the top of its
//! context), the notes it writes, and the swarm's timeline as it sees it.

use serde::{Deserialize, Serialize};

use crate::handoffs::HandoffDelivery;

/// `GET …/agents/{agent}/core`: the agent's core memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreMemoryAnswer {
    pub agent: String,
    /// The agent's `role` in `swarm.toml`.
    pub role: Option<String>,
    /// What it works on: its latest open `task_updated` or `handoff_received`.
    pub task: Option<CoreTask>,
    /// From the handoffs it works on and the preferences it sees.
    pub constraints: Vec<CoreConstraint>,
    /// Received and not yet acknowledged, oldest first.
    pub pending_handoffs: Vec<HandoffDelivery>,
    /// The blocks it wrote, by name: the `max_blocks` most recently
    /// written.
    pub blocks: Vec<CoreBlock>,
    /// The most tokens a block may hold (`core.block_tokens`).
    pub block_tokens: usize,
    /// How many blocks it has, shown or not (more than `max_blocks` only
    /// when they were published straight to the log).
    pub blocks_total: usize,
    /// The most blocks it may have (`core.max_blocks`).
    pub max_blocks: usize,
    /// The memory's checkpoint when it was read.
    pub as_of_seq: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreTask {
    /// The `task_updated` task id, or the handoff's id.
    pub task_id: String,
    pub title: String,
    /// `open`, `in_progress`, `blocked`, or `handed_off`.
    pub status: String,
    /// `task_updated` or `handoff_received`.
    pub source: String,
    /// The sender of the handoff.
    pub from: Option<String>,
    pub seq: u64,
    pub event_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreConstraint {
    pub text: String,
    /// `handoff` or `preference`.
    pub source: String,
    /// The event it comes from.
    pub seq: u64,
    pub event_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreBlock {
    pub name: String,
    pub content: String,
    pub tokens: usize,
    /// The block on the log is longer than `block_tokens` (published
    /// around the API) and is shown cut to it.
    pub truncated: bool,
    /// The `core_memory_updated` event that wrote it.
    pub seq: u64,
    pub event_id: String,
    pub updated_at: mneme_events::Timestamp,
}

/// `POST …/agents/{agent}/core`: replaces one block (empty `content`
/// clears it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CoreUpdateBody {
    /// The block's name: letters, digits, `_` and `-`.
    pub block: String,
    /// The block's whole new content, at most `core.block_tokens` tokens.
    pub content: String,
}

/// What a write answers once the agent's memory has applied it: a read
/// that follows sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Written {
    /// The event written.
    pub event_id: String,
    pub seq: u64,
    /// The item it made, for an event that makes one (a note).
    pub item_id: Option<String>,
    /// The same event was already on the log.
    pub duplicate: bool,
}

/// What `POST …/core` answers: the write, and core memory after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CoreUpdated {
    pub written: Written,
    pub core: CoreMemoryAnswer,
}

/// `POST …/agents/{agent}/notes`: a note into the agent's memory.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoteBody {
    /// What to remember, in the agent's own words.
    pub text: String,
    /// Labels, e.g. `gotcha`, `todo`.
    #[serde(default)]
    pub tags: Vec<String>,
    /// 0..1; consolidation keeps important notes longer.
    pub importance: Option<f32>,
    /// `private` (the default: only this agent sees it) or `shared`.
    pub scope: Option<String>,
    /// The task it belongs to (the event's `correlation_id`).
    pub task: Option<String>,
}

/// `GET …/agents/{agent}/timeline`: what the swarm did, as the agent sees
/// it, in log order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineAnswer {
    pub agent: String,
    pub entries: Vec<TimelineEntry>,
    /// Where the next page starts (`since_seq`).
    pub next_seq: u64,
    /// Whether the log goes on past this page.
    pub more: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimelineEntry {
    pub seq: u64,
    pub ts: mneme_events::Timestamp,
    pub agent: String,
    pub kind: String,
    pub task: Option<String>,
    pub event_id: String,
    /// The event as memory reads it, cut to a few hundred characters.
    pub text: String,
}
