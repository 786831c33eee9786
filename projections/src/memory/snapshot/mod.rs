//! Snapshots: an agent's memory and its checkpoint, as a head and chunks.
//!
//! The snapshot types are the only serialisable form of projection state;
//! derived structures (the BM25 index) are rebuilt from items on restore.
//!
//! The head holds the checkpoint, the configuration it was taken under and
//! everything small, and names every chunk the snapshot consists of. The
//! bulk is in chunks: items, their vectors and the ids of the events
//! applied by seq ([`MEMORY_CHUNK`](crate::MEMORY_CHUNK) seqs to a chunk), the fact graph's
//! nodes and edges by storage index, its event times by seq. A memory
//! records which chunks changed since its last snapshot was saved
//! ([`AgentMemory::snapshot_delta`](crate::AgentMemory::snapshot_delta)),
//! so a snapshot writes the head and those chunks, not the whole memory;
//! the store writes them and the head in one atomic batch, so head and
//! chunks always agree.
//!
//! A chunk's bytes are a run of sections, each a little-endian u64 length
//! and an rkyv archive of bounded size: rkyv's relative pointers are
//! 32-bit, so a single archive past 2 GiB cannot be read back.
//! [`AgentMemory::to_snapshot`](crate::AgentMemory::to_snapshot) lays the
//! head and every chunk end to end in one body, for tests and tools.
//!
//! The records of the head and chunks are here; a snapshot is written in
//! `save.rs`, read back in `restore.rs`, and framed in sections by
//! `sections.rs`.

mod restore;
mod save;
mod sections;

use mneme_events::{ContradictionResolution, EventId, EventKind, HandoffBundle, HandoffPackage, Scope, Timestamp};

use crate::error::ProjectionError;
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::phases::{PhaseRecord, PhaseTrackerRecord};

/// A vector: (seq, scale, 8-bit values, binary code).
type VectorRecord = (u64, f32, Vec<i8>, Vec<u64>);
/// An open contradiction: (id, a, b, reason, seq, event id).
type ContradictionRecord = (String, String, String, String, u64, u128);
/// A settled contradiction: (id, a, b, resolution code, seq, event id).
type ResolvedRecord = (String, String, String, u8, u64, u128);
/// A handoff's bundle as sent: (handoff id, seq, bundle, task item seqs).
type SentBundleRecord = (u128, u64, HandoffBundle, Vec<u64>);

/// The bulk of a memory chunk: one section of it.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
enum MemoryChunk {
    Items(Vec<ItemRecord>),
    /// (seq, scale, 8-bit values, binary code) in seq order: the vector
    /// index as it was, read back without embedding, quantizing or
    /// rotating anything again.
    Vectors(Vec<VectorRecord>),
    /// The deep vectors of the chunk's items that took one, in seq order,
    /// with the vectors (after them, in the same part).
    DeepVectors(Vec<VectorRecord>),
    /// (event id, seq, content fingerprint).
    Seen(Vec<(u128, u64, u64)>),
    /// Phases in index order.
    Phases(Vec<PhaseRecord>),
}

/// Everything but the bulk, which is in the chunks it names.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct MemorySnapshot {
    format: u32,
    swarm: String,
    agent: String,
    working_tier_tokens: u64,
    working_item_max_tokens: u64,
    embedder_model_id: String,
    /// The deep model's, if the memory had one.
    deep_model_id: Option<String>,
    large_output_bytes: u64,
    /// Sorted; `None`: every agent's shared events were taken in.
    admitted_agents: Option<Vec<String>>,
    handoff_bundle_tokens: u64,
    checkpoint: u64,
    /// Every chunk of the snapshot: (section, index).
    parts: Vec<(u8, u32)>,
    item_count: u64,
    seen_count: u64,
    graph_head: Vec<u8>,
    working: Vec<WorkingRecord>,
    phases: PhaseTrackerRecord,
    /// Open contradictions: (id, a, b, reason, seq, event id).
    open_contradictions: Vec<ContradictionRecord>,
    /// Resolved contradictions: (id, a, b, resolution, seq, event id).
    resolved_contradictions: Vec<ResolvedRecord>,
    handoffs: Vec<HandoffSnapshotRecord>,
    /// Bundles of the handoffs this agent sent: (handoff id, its seq,
    /// bundle, the seqs of the task items it was assembled from).
    sent_bundles: Vec<SentBundleRecord>,
    /// Core memory (see `core.rs`).
    core: crate::core::CoreState,
    /// Where the memory's documents are in a text index on disk, and their
    /// statistics; `None` in RAM (a restore indexes the items again).
    text: Option<TextRecord>,
}

/// See [`SavedText`](mneme_index::SavedText).
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct TextRecord {
    index_id: u128,
    owner: u64,
    documents: u64,
    text_tokens: u64,
    code_tokens: u64,
    document_frequency: Vec<(u64, u32)>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct HandoffSnapshotRecord {
    handoff_id: u128,
    from: String,
    received: (u64, u128),
    package: Option<HandoffPackage>,
    acknowledged: Option<(u64, u128)>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct ItemRecord {
    item_id: String,
    seq: u64,
    kind: String,
    agent: String,
    scope: Scope,
    ts: Timestamp,
    correlation_id: Option<String>,
    importance: Option<f32>,
    /// A shared item's text is the swarm's copy (`(from author) …`), with
    /// the bytes of its author prefix here; `None` for the memory's own.
    text: String,
    shared_prefix: Option<u32>,
    state: u8,
    pinned: bool,
    retrievals: u32,
    citations: u32,
    ignored: u32,
    provenance: Vec<(u64, u128)>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WorkingRecord {
    seq: u64,
    text: String,
    tokens: u64,
}
/// About the bytes an item's record takes archived, to cut sections by.
fn item_record_bytes(item: &MemoryItem) -> usize {
    let strings = item.item_id.len()
        + item.kind.len()
        + item.agent.len()
        + item.text.len()
        + item.correlation_id.as_ref().map_or(0, String::len);
    128 + strings + 24 * item.provenance.len()
}
fn item_record(item: &MemoryItem) -> ItemRecord {
    ItemRecord {
        item_id: item.item_id.clone(),
        seq: item.seq,
        kind: item.kind.to_string(),
        agent: item.agent.clone(),
        scope: item.scope,
        ts: item.ts,
        correlation_id: item.correlation_id.clone(),
        importance: item.importance,
        text: match item.text.shared_entry() {
            Some(entry) => entry.text.clone(),
            None => item.text.to_string(),
        },
        shared_prefix: item.text.shared_entry().map(|entry| entry.author_prefix as u32),
        state: match item.state {
            ItemState::Active => 0,
            ItemState::Archived => 1,
            ItemState::Forgotten => 2,
            ItemState::Decayed => 3,
            ItemState::Merged => 4,
            ItemState::Purged => 5,
        },
        pinned: item.pinned,
        retrievals: item.retrievals,
        citations: item.citations,
        ignored: item.ignored,
        provenance: item.provenance.iter().map(|reference| (reference.seq, reference.event_id.0)).collect(),
    }
}

fn memory_item(record: ItemRecord) -> Result<MemoryItem, ProjectionError> {
    let kind = EventKind::NAMES
        .iter()
        .copied()
        .find(|name| *name == record.kind)
        .ok_or_else(|| ProjectionError::CorruptSnapshot(format!("unknown item kind {:?}", record.kind)))?;
    let state = match record.state {
        0 => ItemState::Active,
        1 => ItemState::Archived,
        2 => ItemState::Forgotten,
        3 => ItemState::Decayed,
        4 => ItemState::Merged,
        5 => ItemState::Purged,
        other => return Err(ProjectionError::CorruptSnapshot(format!("unknown item state {other}"))),
    };
    Ok(MemoryItem {
        item_id: record.item_id,
        seq: record.seq,
        kind,
        agent: record.agent,
        scope: record.scope,
        ts: record.ts,
        correlation_id: record.correlation_id,
        importance: record.importance,
        text: ItemText::from(record.text),
        state,
        pinned: record.pinned,
        retrievals: record.retrievals,
        citations: record.citations,
        ignored: record.ignored,
        provenance: record
            .provenance
            .into_iter()
            .map(|(seq, event_id)| ProvenanceRef { seq, event_id: EventId(event_id) })
            .collect(),
    })
}

fn resolution_code(resolution: ContradictionResolution) -> u8 {
    match resolution {
        ContradictionResolution::AWins => 0,
        ContradictionResolution::BWins => 1,
        ContradictionResolution::BothValid => 2,
        ContradictionResolution::Merged => 3,
    }
}

fn resolution_from_code(code: u8) -> Result<ContradictionResolution, ProjectionError> {
    Ok(match code {
        0 => ContradictionResolution::AWins,
        1 => ContradictionResolution::BWins,
        2 => ContradictionResolution::BothValid,
        3 => ContradictionResolution::Merged,
        other => return Err(ProjectionError::CorruptSnapshot(format!("unknown contradiction resolution {other}"))),
    })
}
