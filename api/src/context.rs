//! Answers about what an agent should know: budgeted context, and its
//! phases at each level of compression.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::Timestamp;
use serde::{Deserialize, Serialize};

use crate::log::{LogEntry, ProvenanceRef};

/// `GET`/`POST …/agents/{agent}/context`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextAnswer {
    /// The rendered context, tiers in order.
    pub text: String,
    /// Tokens of `text`: never more than `budget`.
    pub tokens: usize,
    pub budget: usize,
    /// The thinking policy the budget was split by.
    pub policy: String,
    /// Per tier (`critical`, `working`, `relevant`, `phases`, `background`…):
    /// how its budget was set and used.
    pub tiers: BTreeMap<String, TierUsage>,
    /// The memory's checkpoint the context was assembled at.
    pub as_of_seq: u64,
    /// Set when the system layer contributed (tier `system`): the system
    /// log's seq its part was assembled at. The context is a function of
    /// the swarm's log up to `as_of_seq` and the system log up to this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub as_of_system_seq: Option<u64>,
    pub items: Vec<ContextItem>,
}

/// How one tier's budget was set and used, in tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TierUsage {
    /// Its share of the budget before rebalancing.
    pub share: usize,
    /// What it was given after the other tiers' unused tokens moved.
    pub allocated: usize,
    pub used: usize,
    /// What it would have used without a limit.
    pub wanted: usize,
}

/// One memory in the context, and why it is there.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextItem {
    pub tier: String,
    pub reason: String,
    pub item_id: String,
    pub seq: u64,
    pub kind: String,
    pub text: String,
    /// Tokens of its line in `text`.
    pub tokens: usize,
    pub provenance: Vec<ProvenanceRef>,
    /// The event that superseded it, if one did.
    pub superseded_by: Option<String>,
}

/// `GET …/agents/{agent}/phases`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhasesAnswer {
    pub agent: String,
    /// The agent's own phases, open ones too.
    pub phases: Vec<PhaseHeading>,
    /// The other agents' shared phases, as this memory sees them.
    pub shared_phases: Vec<PhaseHeading>,
    /// Task roll-ups, the most recently completed first.
    pub tasks: Vec<TaskRollup>,
    pub session_summary: String,
}

/// What every phase answer says of a phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseHeading {
    pub phase_id: String,
    pub agent: String,
    pub name: String,
    /// `explicit` (phase events) or `task` (a task's span).
    pub boundary: String,
    pub task: Option<String>,
    /// `open` or `completed`.
    pub status: String,
    pub goal: Option<String>,
    pub outcome: Option<String>,
    pub started_seq: u64,
    pub started_at: Timestamp,
    pub completed_seq: Option<u64>,
    pub completed_at: Option<Timestamp>,
    /// How many events the phase holds; in a phase answer at level
    /// `original`, the events themselves as the log holds them.
    pub events: PhaseEvents,
    /// Who compressed it (`extractive`, a model), once completed.
    pub compressor: Option<String>,
    /// Its `index` level, once completed.
    pub index: Option<String>,
    pub provenance: Vec<ProvenanceRef>,
}

/// A task's phases rolled up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskRollup {
    pub task: String,
    pub title: Option<String>,
    pub phase_ids: Vec<String>,
    pub index: String,
    pub summary: String,
}

/// `GET …/agents/{agent}/phases/{phase_id}?level=…`: the heading, and the
/// phase at the level asked for: `text` for index, compressed, summary and
/// findings; `full` for the structured record; at `original`, the heading's
/// `events` lists the events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseAnswer {
    #[serde(flatten)]
    pub heading: PhaseHeading,
    pub level: String,
    /// At a text level (index, compressed, summary, findings).
    #[serde(flatten)]
    pub text: Option<PhaseText>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full: Option<PhaseFull>,
}

/// A phase at a text level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseText {
    pub text: String,
    pub tokens: usize,
    /// The level's token bound; null where it has none.
    pub bound: Option<usize>,
}

/// A phase's events: counted, or (level `original`) listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum PhaseEvents {
    Count(usize),
    Original(Vec<LogEntry>),
}

/// The `full` level: what the phase did, as a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseFull {
    pub event_seqs: Vec<u64>,
    /// Events per kind.
    pub kinds: BTreeMap<String, u32>,
    pub item_tokens: u64,
    pub decisions: Vec<PhaseDecision>,
    pub files_read: BTreeSet<String>,
    pub files_modified: BTreeSet<String>,
    pub symbols: BTreeSet<String>,
    pub commands: Vec<PhaseCommand>,
    pub errors: Vec<PhaseError>,
    pub facts: Vec<String>,
    pub handoffs: Vec<String>,
    pub messages: Vec<PhaseMessage>,
    pub message_count: u32,
    pub levels: Option<PhaseLevels>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseDecision {
    pub seq: u64,
    pub item_id: String,
    pub title: String,
    pub choice: String,
    pub rationale: String,
    pub supersedes: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseCommand {
    pub command: String,
    pub runs: u32,
    pub failures: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseError {
    pub error: String,
    pub command: String,
    pub first_seq: u64,
    pub fixed_by: Vec<String>,
    pub fixed_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseMessage {
    pub seq: u64,
    pub role: String,
    pub text: String,
}

/// Every text level of a completed phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PhaseLevels {
    pub compressor: String,
    pub index: String,
    pub compressed: String,
    pub summary: String,
    pub findings: String,
}
