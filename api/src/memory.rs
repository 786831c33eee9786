//! Answers about one agent's memory: search hits, the fact graph around an
//! entity, an item and its state, the memory's digest and a replay's.

use std::collections::BTreeMap;

use mneme_events::Timestamp;
use serde::{Deserialize, Serialize};

use crate::log::ProvenanceRef;

/// `GET …/agents/{agent}/search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SearchAnswer {
    pub swarm: String,
    pub agent: String,
    /// `bm25`, `vector`, `graph` or `hybrid`.
    pub mode: String,
    /// The embedding model the query's vector was compared with, in the
    /// modes that use vectors (`vector`, `hybrid`); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vector_model: Option<String>,
    /// Best first.
    pub hits: Vec<Hit>,
}

/// One memory found by a search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hit {
    pub item_id: String,
    pub seq: u64,
    /// The kind of the event that created the item.
    pub kind: String,
    /// The fused score in hybrid mode, else the retriever's own.
    pub score: f32,
    /// The item's text, quoted up to 16 KiB.
    pub text: String,
    /// Whose event the item came from.
    pub agent: String,
    pub scope: String,
    pub ts: Timestamp,
    pub provenance: Vec<ProvenanceRef>,
    /// The event that superseded what the item states, if one did.
    pub superseded_by: Option<String>,
    /// With `explain=true`: each retriever that found the item, with its
    /// rank (1 = best) and score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explain: Option<BTreeMap<String, RetrieverRank>>,
}

/// Where one retriever ranked a hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RetrieverRank {
    pub rank: usize,
    pub score: f32,
}

/// `GET …/agents/{agent}/graph`: the fact graph around an entity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphAnswer {
    /// The entity's node id.
    pub center: String,
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphNode {
    pub id: String,
    /// `agent`, `tool`, `file`, `item`, `decision`, `entity`…
    pub kind: String,
    pub name: String,
    pub provenance: Vec<ProvenanceRef>,
}

/// A fact between two nodes, with the time it held and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct GraphEdge {
    pub id: String,
    pub from: String,
    pub to: String,
    pub relation: String,
    pub valid_from: Option<Timestamp>,
    /// `None`: still valid.
    pub valid_to: Option<Timestamp>,
    /// The seq of the event that recorded it.
    pub recorded_seq: u64,
    pub confidence: Option<f64>,
    pub provenance: Vec<ProvenanceRef>,
}

/// `GET …/agents/{agent}/digest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Digest {
    pub agent: String,
    /// The memory's checkpoint: the last seq it applied.
    pub seq: u64,
    pub digest: String,
    pub items: usize,
    pub snapshot_seq: u64,
}

/// `POST …/agents/{agent}/replay?verify=true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReplayAnswer {
    pub agent: String,
    /// The seq the replay rebuilt up to.
    pub seq: u64,
    pub digest: String,
    pub entries_read: usize,
    pub dead_lettered: usize,
    pub live_seq: Option<u64>,
    pub live_digest: Option<String>,
    /// Whether the replayed memory equals the live one; `None` when they
    /// stand at different seqs.
    pub matches: Option<bool>,
}

/// `GET …/agents/{agent}/items`: items per state, and a page of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ItemStates {
    pub agent: String,
    /// `active`, `archived`, `decayed`, `forgotten`, `merged`, `purged` → count.
    pub states: BTreeMap<String, usize>,
    /// How many items are pinned, whatever their state.
    pub pinned: usize,
    /// The page asked for (`state`, `before_seq`, `limit`), newest first.
    pub items: Vec<ListedItem>,
    /// Where the next (older) page starts, as `before_seq`; null on the last.
    pub next_before_seq: Option<u64>,
}

/// One item of a page: what it says and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListedItem {
    pub item_id: String,
    pub seq: u64,
    pub kind: String,
    pub agent: String,
    pub ts: Timestamp,
    pub state: String,
    pub pinned: bool,
    /// Empty once purged; past 16 KiB cut as a search hit's is (the whole
    /// is at `…/items/{item_id}`).
    pub text: String,
    /// The event that superseded it: a later decision, a retraction, or
    /// the side that won a contradiction against it.
    pub superseded_by: Option<String>,
}

/// `GET …/agents/{agent}/items/{item_id}`: one memory and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ItemAnswer {
    pub item_id: String,
    pub seq: u64,
    pub kind: String,
    pub agent: String,
    pub scope: String,
    pub ts: Timestamp,
    pub state: String,
    pub pinned: bool,
    pub importance: Option<f64>,
    pub retrievals: u32,
    pub citations: u32,
    pub ignored: u32,
    pub text: String,
    pub provenance: Vec<ProvenanceRef>,
    pub superseded_by: Option<String>,
}
