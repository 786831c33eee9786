//! Consolidation, contradictions and purges: the swarm-wide commands and
//! what they answer.

use serde::{Deserialize, Serialize};

use crate::log::ProvenanceRef;

/// `POST /v1/swarms/{swarm}/consolidate`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConsolidationAnswer {
    pub swarm: String,
    pub dry_run: bool,
    pub elapsed_ms: u64,
    /// 0 on a dry run.
    pub events_written: usize,
    /// Events holding the run's verdicts: a real run writes them (with one
    /// event per agent of retrieval counts, when it recorded any, which
    /// make up the rest of `events_written`); a dry run counts the same.
    pub verdict_events: usize,
    /// The swarm's shared items, compared once for every agent of the run.
    pub shared: SharedScan,
    pub agents: Vec<AgentConsolidation>,
}

/// What a run compared once for all its agents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SharedScan {
    pub items: usize,
    pub duplicate_pairs: usize,
    pub scan_ms: f64,
}

/// One agent's part of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentConsolidation {
    pub agent: String,
    /// Items in the memory when it was read.
    pub items: usize,
    pub retrievals_recorded: usize,
    pub events_written: usize,
    /// Events holding this agent's verdicts (written, or on a dry run to be
    /// written).
    pub verdict_events: usize,
    /// Verdicts left out because even alone their event was larger than
    /// the log takes.
    pub verdicts_dropped: usize,
    pub scan_ms: f64,
    #[serde(flatten)]
    pub plan: Plan,
}

/// What a scan decided: counts of everything, and the first 1,000 verdicts
/// of each kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Plan {
    /// The memory's checkpoint when it was read.
    pub checkpoint: u64,
    pub counts: VerdictCounts,
    pub contradictions: Vec<ContradictionVerdict>,
    pub merges: Vec<MergeVerdict>,
    pub forgotten: Vec<Forgotten>,
    pub decayed: Vec<Decayed>,
    pub links: Vec<Link>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerdictCounts {
    pub contradictions: usize,
    pub merges: usize,
    pub merged_items: usize,
    pub forgotten: usize,
    pub decayed: usize,
    pub links: usize,
    /// Verdicts left for the next run (`max_outcomes_per_run`).
    pub deferred: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContradictionVerdict {
    pub contradiction_id: String,
    /// The older side's item id.
    pub a: String,
    /// The newer side's item id.
    pub b: String,
    /// `single_valued_fact`, `negated_fact` or `decision_reversed`.
    pub rule: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MergeVerdict {
    pub survivor: String,
    pub merged: Vec<String>,
    /// The lowest cosine between the survivor and a merged item.
    pub similarity: f32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Forgotten {
    pub item_id: String,
    pub score: f32,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Decayed {
    pub item_id: String,
    pub score: f32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Link {
    pub a: String,
    pub b: String,
    pub reason: String,
}

/// `GET /v1/swarms/{swarm}/contradictions[?agent=A]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContradictionsAnswer {
    pub open: Vec<Contradiction>,
    pub resolved: Vec<Contradiction>,
}

/// A contradiction in one agent's memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Contradiction {
    pub contradiction_id: String,
    /// Whose memory holds it.
    pub agent: String,
    /// `open` or `resolved`.
    pub status: String,
    pub a: String,
    pub b: String,
    /// Why the two cannot both hold (open ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// `a_wins`, `b_wins`, `both_valid` or `merged` (resolved ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<String>,
    /// The event that detected it (open) or resolved it (resolved).
    pub provenance: Vec<ProvenanceRef>,
}

/// `POST /v1/swarms/{swarm}/contradictions/{id}/resolve` body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveBody {
    /// `a_wins`, `b_wins`, `both_valid` or `merged`.
    pub resolution: String,
    pub note: Option<String>,
}

/// What resolving answers once the memory applied it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Resolved {
    /// The `contradiction_resolved` event.
    pub event_id: String,
    pub seq: u64,
    pub contradiction: Contradiction,
    /// The same contradiction in the other memories that held it open,
    /// each settled by its own `contradiction_resolved` (its `provenance`).
    #[serde(default)]
    pub also_resolved: Vec<Contradiction>,
}

/// `POST /v1/swarms/{swarm}/purge` body: item ids, or an agent and a time.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeBody {
    /// Whose memory; without it, every memory that holds one of `item_ids`.
    pub agent: Option<String>,
    #[serde(default)]
    pub item_ids: Vec<String>,
    /// Every item of `agent` with an event time before this (RFC 3339).
    pub before: Option<String>,
    pub reason: Option<String>,
}

/// What a purge answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PurgeAnswer {
    /// One tombstone per memory it erased from.
    pub purged: Vec<Purged>,
    /// Items a memory holds that an earlier purge erased already.
    pub already_purged: Vec<AlreadyPurged>,
    /// When nothing was left to erase: why no tombstone was appended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What became of the original events on the log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub log: Option<String>,
}

/// One memory's tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Purged {
    pub agent: String,
    pub event_id: String,
    pub seq: u64,
    pub item_ids: Vec<String>,
    pub before: Option<String>,
    pub purged_items_in_memory: usize,
    /// The snapshot written after the purge, if it could be yet.
    pub snapshot_seq: Option<u64>,
    pub snapshot: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AlreadyPurged {
    pub agent: String,
    pub item_id: String,
}
