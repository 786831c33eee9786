//! Snapshots: an agent's memory and its checkpoint, as a head and chunks.
//!
//! The snapshot types are the only serialisable form of projection state;
//! derived structures (the BM25 index) are rebuilt from items on restore.
//!
//! The head holds the checkpoint, the configuration it was taken under and
//! everything small, and names every chunk the snapshot consists of. The
//! bulk is in chunks: items, their vectors and the ids of the events
//! applied by seq ([`MEMORY_CHUNK`] seqs to a chunk), the fact graph's
//! nodes and edges by storage index, its event times by seq. A memory
//! records which chunks changed since its last snapshot was saved
//! ([`AgentMemory::snapshot_delta`]), so a snapshot writes the head and
//! those chunks, not the whole memory; the store writes them and the head
//! in one atomic batch, so head and chunks always agree.
//!
//! A chunk's bytes are a run of sections, each a little-endian u64 length
//! and an rkyv archive of bounded size: rkyv's relative pointers are
//! 32-bit, so a single archive past 2 GiB cannot be read back.
//! [`AgentMemory::to_snapshot`] lays the head and every chunk end to end in
//! one body, for tests and tools.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{ContradictionResolution, EventId, EventKind, HandoffBundle, HandoffPackage, Scope, Timestamp};
use rkyv::rancor;
use rkyv::util::AlignedVec;

use crate::bm25::{Bm25Index, SavedText};
use crate::error::ProjectionError;
use crate::graph::snapshot::GraphPart;
use crate::graph::{FactGraph, SwarmGraph};
use crate::handoffs::HandoffRecord;
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::memory::{AgentMemory, MemoryConfig, OpenContradiction, ResolvedContradiction, SeenId};
use crate::phases::{PHASE_CHUNK, PhasePart, PhaseRecord, PhaseTracker, PhaseTrackerRecord};
use crate::vector::QuantizedVector;
use crate::working::{WorkingEntry, WorkingTier};

/// Bumped whenever the snapshot layout or the meaning of its fields changes;
/// older snapshots are then refused and memory is rebuilt from the log.
pub const SNAPSHOT_FORMAT: u32 = 15;

/// The size a snapshot section is cut at: well inside rkyv's 2 GiB reach,
/// and small enough that encoding one does not double a large memory's
/// footprint at once.
pub const SNAPSHOT_SECTION_BYTES: usize = 64 << 20;

/// The largest archive rkyv's 32-bit relative pointers can address.
const RKYV_ARCHIVE_LIMIT: usize = i32::MAX as usize;

/// Items, vectors and applied ids per chunk, by seq.
pub const MEMORY_CHUNK: u64 = 4096;

/// One chunk of a memory's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SnapshotPart {
    /// Items with seqs in `[n × MEMORY_CHUNK, (n + 1) × MEMORY_CHUNK)`.
    Items(u32),
    /// The vectors of those items.
    Vectors(u32),
    /// The ids of the events applied in that range of seqs.
    Seen(u32),
    /// Fact graph nodes `[n × 4096, (n + 1) × 4096)` by storage index.
    GraphNodes(u32),
    /// Fact graph edges, the same way.
    GraphEdges(u32),
    /// Times and ids of the graph's events, by seq.
    GraphEvents(u32),
    /// The edges whose provenance holds each seq, by seq.
    GraphEdgeProvenance(u32),
    /// The agent's own phases `[n × 64, (n + 1) × 64)` by index.
    Phases(u32),
    /// The other agents' shared phases, the same way.
    SharedPhases(u32),
    /// Of the swarm's graph (see [`crate::graph::SwarmGraph`]): what each
    /// shared event touched, by seq, [`MEMORY_CHUNK`] seqs to a chunk.
    SwarmTouched(u32),
}

impl SnapshotPart {
    /// A stable name: `items/00000003`.
    pub fn name(&self) -> String {
        let (section, index) = self.code();
        let section = match section {
            0 => "items",
            1 => "vectors",
            2 => "seen",
            3 => "graph-nodes",
            4 => "graph-edges",
            5 => "graph-events",
            6 => "phases",
            7 => "shared-phases",
            9 => "swarm-touched",
            _ => "graph-edge-provenance",
        };
        format!("{section}/{index:08x}")
    }

    pub(crate) fn code(&self) -> (u8, u32) {
        match *self {
            SnapshotPart::Items(index) => (0, index),
            SnapshotPart::Vectors(index) => (1, index),
            SnapshotPart::Seen(index) => (2, index),
            SnapshotPart::GraphNodes(index) => (3, index),
            SnapshotPart::GraphEdges(index) => (4, index),
            SnapshotPart::GraphEvents(index) => (5, index),
            SnapshotPart::Phases(index) => (6, index),
            SnapshotPart::SharedPhases(index) => (7, index),
            SnapshotPart::GraphEdgeProvenance(index) => (8, index),
            SnapshotPart::SwarmTouched(index) => (9, index),
        }
    }

    pub(crate) fn from_code((section, index): (u8, u32)) -> Result<SnapshotPart, ProjectionError> {
        Ok(match section {
            0 => SnapshotPart::Items(index),
            1 => SnapshotPart::Vectors(index),
            2 => SnapshotPart::Seen(index),
            3 => SnapshotPart::GraphNodes(index),
            4 => SnapshotPart::GraphEdges(index),
            5 => SnapshotPart::GraphEvents(index),
            6 => SnapshotPart::Phases(index),
            7 => SnapshotPart::SharedPhases(index),
            8 => SnapshotPart::GraphEdgeProvenance(index),
            9 => SnapshotPart::SwarmTouched(index),
            other => return Err(ProjectionError::CorruptSnapshot(format!("unknown snapshot section {other}"))),
        })
    }

    pub(crate) fn of_graph(part: GraphPart) -> SnapshotPart {
        match part {
            GraphPart::Nodes(index) => SnapshotPart::GraphNodes(index),
            GraphPart::Edges(index) => SnapshotPart::GraphEdges(index),
            GraphPart::Events(index) => SnapshotPart::GraphEvents(index),
            GraphPart::EdgeProvenance(index) => SnapshotPart::GraphEdgeProvenance(index),
        }
    }

    fn of_phases(part: PhasePart) -> SnapshotPart {
        match part {
            PhasePart::Own(index) => SnapshotPart::Phases(index),
            PhasePart::Shared(index) => SnapshotPart::SharedPhases(index),
        }
    }

    pub(crate) fn graph(&self) -> Option<GraphPart> {
        match *self {
            SnapshotPart::GraphNodes(index) => Some(GraphPart::Nodes(index)),
            SnapshotPart::GraphEdges(index) => Some(GraphPart::Edges(index)),
            SnapshotPart::GraphEvents(index) => Some(GraphPart::Events(index)),
            SnapshotPart::GraphEdgeProvenance(index) => Some(GraphPart::EdgeProvenance(index)),
            _ => None,
        }
    }

    /// The seqs a memory chunk covers.
    fn seqs(index: u32) -> std::ops::Range<u64> {
        u64::from(index) * MEMORY_CHUNK..(u64::from(index) + 1) * MEMORY_CHUNK
    }

    fn of_seq(seq: u64) -> u32 {
        (seq / MEMORY_CHUNK) as u32
    }
}

/// What a snapshot writes: the head, and the chunks that changed since the
/// last one was saved (all of them for a memory never saved).
pub struct SnapshotDelta {
    pub checkpoint: u64,
    pub head: Vec<u8>,
    /// Changed chunks and their bytes.
    pub written: Vec<(SnapshotPart, Vec<u8>)>,
    /// Every chunk of the snapshot, changed or not (as the head names
    /// them): the store drops any other it holds.
    pub parts: Vec<SnapshotPart>,
}

/// Which chunks changed since the last snapshot was saved: bookkeeping,
/// not state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changes {
    pub(crate) parts: BTreeSet<SnapshotPart>,
    /// Everything: a memory never saved.
    pub(crate) all: bool,
}

impl Changes {
    pub(crate) fn everything() -> Changes {
        Changes { parts: BTreeSet::new(), all: true }
    }

    /// The item (and its vector) at `seq` changed.
    pub(crate) fn item(&mut self, seq: u64) {
        let index = SnapshotPart::of_seq(seq);
        self.parts.insert(SnapshotPart::Items(index));
        self.parts.insert(SnapshotPart::Vectors(index));
    }

    /// The event at `seq` was applied (its id is remembered).
    pub(crate) fn seen(&mut self, seq: u64) {
        self.parts.insert(SnapshotPart::Seen(SnapshotPart::of_seq(seq)));
    }
}

/// The bulk of a memory chunk: one section of it.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
enum MemoryChunk {
    Items(Vec<ItemRecord>),
    /// (seq, scale, 8-bit values, binary code) in seq order: the vector
    /// index as it was, read back without embedding, quantizing or
    /// rotating anything again.
    Vectors(Vec<(u64, f32, Vec<i8>, Vec<u64>)>),
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
    open_contradictions: Vec<(String, String, String, String, u64, u128)>,
    /// Resolved contradictions: (id, a, b, resolution, seq, event id).
    resolved_contradictions: Vec<(String, String, String, u8, u64, u128)>,
    handoffs: Vec<HandoffSnapshotRecord>,
    /// Bundles of the handoffs this agent sent: (handoff id, its seq, bundle).
    sent_bundles: Vec<(u128, u64, HandoffBundle)>,
    /// Where the memory's documents are in a text index on disk, and their
    /// statistics; `None` in RAM (a restore indexes the items again).
    text: Option<TextRecord>,
}

/// See [`SavedText`].
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

impl AgentMemory {
    /// The head and the chunks changed since the last snapshot was saved
    /// ([`AgentMemory::mark_snapshot_saved`]); every chunk for a memory
    /// never saved (or restored from one body).
    pub fn snapshot_delta(&self) -> Result<SnapshotDelta, ProjectionError> {
        self.delta(self.changes.all, SNAPSHOT_SECTION_BYTES)
    }

    /// The head and every chunk.
    pub fn full_snapshot(&self) -> Result<SnapshotDelta, ProjectionError> {
        self.delta(true, SNAPSHOT_SECTION_BYTES)
    }

    /// The last delta taken is stored: from now on only what changes after
    /// it is written.
    pub fn mark_snapshot_saved(&mut self) {
        self.changes = Changes::default();
        self.graph.mark_saved();
        self.phases.mark_saved();
    }

    /// The memory and its checkpoint as one body: the head, then every
    /// chunk in the order the head names them.
    pub fn to_snapshot(&self) -> Result<Vec<u8>, ProjectionError> {
        self.to_snapshot_in_sections(SNAPSHOT_SECTION_BYTES)
    }

    /// [`AgentMemory::to_snapshot`] with each chunk cut into sections of
    /// about `section_bytes`; any size gives the same memory back.
    pub fn to_snapshot_in_sections(&self, section_bytes: usize) -> Result<Vec<u8>, ProjectionError> {
        let delta = self.delta(true, section_bytes)?;
        let mut body = Vec::new();
        // The swarm's graph first, as it stands (it covers this memory's
        // checkpoint), so that the body restores on its own.
        let floor = self.config.shared.retain_floor(&self.agent, self.checkpoint);
        let swarm_graph = self.config.shared.graph().delta(true, self.checkpoint, floor)?;
        append_bytes(&mut body, &swarm_graph.head);
        for (_, bytes) in &swarm_graph.written {
            append_bytes(&mut body, bytes);
        }
        append_bytes(&mut body, &delta.head);
        for (_, bytes) in &delta.written {
            append_bytes(&mut body, bytes);
        }
        Ok(body)
    }

    /// Every chunk the memory's snapshot consists of now.
    fn parts(&self) -> Vec<SnapshotPart> {
        let mut item_chunks: Vec<u32> = self.items.keys().map(|seq| SnapshotPart::of_seq(*seq)).collect();
        item_chunks.dedup();
        let mut seen_chunks: Vec<u32> = self.seen_order.iter().map(|(seq, _)| SnapshotPart::of_seq(*seq)).collect();
        seen_chunks.dedup();
        let mut parts: Vec<SnapshotPart> = item_chunks.iter().map(|index| SnapshotPart::Items(*index)).collect();
        parts.extend(item_chunks.iter().map(|index| SnapshotPart::Vectors(*index)));
        parts.extend(seen_chunks.into_iter().map(SnapshotPart::Seen));
        parts.extend(self.graph.parts().into_iter().map(SnapshotPart::of_graph));
        parts.extend(self.phases.parts().into_iter().map(SnapshotPart::of_phases));
        parts
    }

    fn delta(&self, everything: bool, section_bytes: usize) -> Result<SnapshotDelta, ProjectionError> {
        // What the snapshot names of the text index is on disk before it.
        self.bm25.make_durable()?;
        let parts = self.parts();
        let changed: BTreeSet<SnapshotPart> = if everything {
            parts.iter().copied().collect()
        } else {
            let mut changed = self.changes.parts.clone();
            changed.extend(self.graph.changed_parts().into_iter().map(SnapshotPart::of_graph));
            changed.extend(self.phases.changed_parts().map(SnapshotPart::of_phases));
            changed
        };
        let graph_parts: Vec<GraphPart> =
            parts.iter().filter(|part| changed.contains(part)).filter_map(SnapshotPart::graph).collect();
        let mut graph_chunks: BTreeMap<GraphPart, Vec<u8>> = self.graph.chunks(&graph_parts)?.into_iter().collect();
        let mut written = Vec::new();
        for part in parts.iter().filter(|part| changed.contains(part)) {
            let bytes = match part.graph() {
                Some(graph_part) => {
                    let mut body = Vec::new();
                    append_bytes(&mut body, &graph_chunks.remove(&graph_part).expect("every changed graph part"));
                    body
                }
                None => self.chunk(*part, section_bytes)?,
            };
            written.push((*part, bytes));
        }
        let head = MemorySnapshot {
            format: SNAPSHOT_FORMAT,
            swarm: self.swarm.clone(),
            agent: self.agent.clone(),
            working_tier_tokens: self.config.working_tier_tokens as u64,
            working_item_max_tokens: self.config.working_item_max_tokens as u64,
            embedder_model_id: self.config.embedder.model_id().to_string(),
            large_output_bytes: self.config.large_output_bytes as u64,
            admitted_agents: self.config.admitted_agents.as_ref().map(|admitted| admitted.iter().cloned().collect()),
            handoff_bundle_tokens: self.config.handoff_bundle_tokens as u64,
            checkpoint: self.checkpoint,
            parts: parts.iter().map(SnapshotPart::code).collect(),
            item_count: self.items.len() as u64,
            seen_count: self.seen_order.len() as u64,
            graph_head: self.graph.snapshot_head()?,
            working: self
                .working
                .entries()
                .map(|entry| WorkingRecord { seq: entry.seq, text: entry.text.clone(), tokens: entry.tokens as u64 })
                .collect(),
            phases: self.phases.to_record(),
            open_contradictions: self
                .open_contradictions
                .values()
                .map(|open| {
                    (
                        open.contradiction_id.clone(),
                        open.a.clone(),
                        open.b.clone(),
                        open.reason.clone(),
                        open.provenance.seq,
                        open.provenance.event_id.0,
                    )
                })
                .collect(),
            resolved_contradictions: self
                .resolved_contradictions
                .values()
                .map(|resolved| {
                    (
                        resolved.contradiction_id.clone(),
                        resolved.a.clone(),
                        resolved.b.clone(),
                        resolution_code(resolved.resolution),
                        resolved.provenance.seq,
                        resolved.provenance.event_id.0,
                    )
                })
                .collect(),
            handoffs: self
                .handoffs
                .values()
                .map(|record| HandoffSnapshotRecord {
                    handoff_id: record.handoff_id.0,
                    from: record.from.clone(),
                    received: (record.received.seq, record.received.event_id.0),
                    package: record.package.clone(),
                    acknowledged: record.acknowledged.map(|reference| (reference.seq, reference.event_id.0)),
                })
                .collect(),
            sent_bundles: self.sent_bundles.iter().map(|(id, (seq, bundle))| (id.0, *seq, bundle.clone())).collect(),
            text: self.bm25.saved().map(|saved| TextRecord {
                index_id: saved.index_id,
                owner: saved.owner,
                documents: saved.documents,
                text_tokens: saved.text_tokens,
                code_tokens: saved.code_tokens,
                document_frequency: saved.document_frequency,
            }),
        };
        let mut head_bytes = Vec::new();
        append_section(&mut head_bytes, "head", &head)?;
        Ok(SnapshotDelta { checkpoint: self.checkpoint, head: head_bytes, written, parts })
    }

    /// One chunk's bytes, but the graph's: its records in sections of about
    /// `section_bytes`.
    fn chunk(&self, part: SnapshotPart, section_bytes: usize) -> Result<Vec<u8>, ProjectionError> {
        let mut body = Vec::new();
        match part {
            SnapshotPart::Items(index) => {
                let mut records = Vec::new();
                let mut bytes = 0;
                for item in self.items.range(SnapshotPart::seqs(index)).map(|(_, item)| item) {
                    bytes += item_record_bytes(item);
                    records.push(item_record(item));
                    if bytes >= section_bytes {
                        append_section(&mut body, "items", &MemoryChunk::Items(std::mem::take(&mut records)))?;
                        bytes = 0;
                    }
                }
                append_section(&mut body, "items", &MemoryChunk::Items(records))?;
            }
            SnapshotPart::Vectors(index) => {
                // Its own vectors and those of the shared items it holds
                // (the swarm's copy may be gone when it is restored).
                let shared = self.shared_vectors();
                let mut vectors = Vec::new();
                for item in self.items.range(SnapshotPart::seqs(index)).map(|(_, item)| item) {
                    if item.state == ItemState::Purged {
                        continue;
                    }
                    let vector = match item.text.shared_entry() {
                        Some(_) => shared.quantized_of(item.seq),
                        None => self.vectors.quantized_of(item.seq),
                    };
                    let vector = vector.ok_or_else(|| {
                        ProjectionError::CorruptSnapshot(format!("the vector of seq {} is missing", item.seq))
                    })?;
                    vectors.push((item.seq, vector.scale, vector.values, vector.code));
                }
                let dimensions = self.config.embedder.dimensions();
                let per_section = (section_bytes / (64 + dimensions + dimensions / 8)).max(1);
                for section in vectors.chunks(per_section) {
                    append_section(&mut body, "vectors", &MemoryChunk::Vectors(section.to_vec()))?;
                }
                if vectors.is_empty() {
                    append_section(&mut body, "vectors", &MemoryChunk::Vectors(Vec::new()))?;
                }
            }
            SnapshotPart::Seen(index) => {
                let range = SnapshotPart::seqs(index);
                let start = self.seen_order.partition_point(|(seq, _)| *seq < range.start);
                let end = self.seen_order.partition_point(|(seq, _)| *seq < range.end);
                let seen: Vec<(u128, u64, u64)> = self.seen_order[start..end]
                    .iter()
                    .map(|(seq, id)| (id.0, *seq, self.seen_ids.get(id).map_or(0, |seen| seen.fingerprint)))
                    .collect();
                append_section(&mut body, "seen ids", &MemoryChunk::Seen(seen))?;
            }
            SnapshotPart::Phases(index) => {
                let records = self.phases.chunk(PhasePart::Own(index));
                append_section(&mut body, "phases", &MemoryChunk::Phases(records))?;
            }
            SnapshotPart::SharedPhases(index) => {
                let records = self.phases.chunk(PhasePart::Shared(index));
                append_section(&mut body, "shared phases", &MemoryChunk::Phases(records))?;
            }
            graph => unreachable!("{graph:?}: `delta` writes the graph's parts together, in one pass"),
        }
        Ok(body)
    }

    /// Restores a memory from [`AgentMemory::to_snapshot`] bytes. Refuses a
    /// snapshot of another format, agent or configuration, or cut short.
    pub fn from_snapshot(
        bytes: &[u8],
        swarm: &str,
        agent: &str,
        config: MemoryConfig,
    ) -> Result<AgentMemory, ProjectionError> {
        let mut sections = Sections { rest: bytes };
        let empty = || ProjectionError::CorruptSnapshot("empty".into());
        let swarm_head = sections.next_bytes("swarm graph head")?.ok_or_else(empty)?;
        let swarm_graph = SwarmGraph::from_snapshot_parts(swarm_head, &mut |part| {
            sections.next_bytes("swarm graph chunk")?.map(<[u8]>::to_vec).ok_or_else(|| {
                ProjectionError::CorruptSnapshot(format!("snapshot is cut short before {}", part.name()))
            })
        })?;
        let config = config.fitted();
        config.shared.adopt_graph(swarm_graph);
        let head = sections.next_bytes("head")?.ok_or_else(empty)?;
        let mut memory = AgentMemory::from_snapshot_parts(
            head,
            &mut |part| {
                sections.next_bytes("chunk")?.map(<[u8]>::to_vec).ok_or_else(|| {
                    ProjectionError::CorruptSnapshot(format!("snapshot is cut short before {}", part.name()))
                })
            },
            swarm,
            agent,
            config,
        )?;
        // Whoever saves it next has none of its chunks.
        memory.changes = Changes::everything();
        Ok(memory)
    }

    /// Restores a memory from a snapshot's head and its chunks, read by
    /// `read` in the order the head names them. Refuses a snapshot of
    /// another format, agent or configuration, or missing a chunk.
    pub fn from_snapshot_parts(
        head: &[u8],
        read: &mut dyn FnMut(SnapshotPart) -> Result<Vec<u8>, ProjectionError>,
        swarm: &str,
        agent: &str,
        config: MemoryConfig,
    ) -> Result<AgentMemory, ProjectionError> {
        let mut head_sections = Sections { rest: head };
        let mut snapshot: MemorySnapshot = match head_sections.next_archive("head")? {
            Some(archive) => decode(&archive, "head")?,
            None => return Err(ProjectionError::CorruptSnapshot("empty snapshot".to_string())),
        };
        check_compatible(&snapshot, swarm, agent, &config)?;
        let mut item_records = Vec::new();
        let mut vector_records = Vec::new();
        let mut seen_records = Vec::new();
        let mut graph_chunks = Vec::new();
        let (mut own_phases, mut shared_phases) = (Vec::new(), Vec::new());
        for code in snapshot.parts.iter().copied() {
            let part = SnapshotPart::from_code(code)?;
            let bytes = read(part)?;
            if let Some(graph_part) = part.graph() {
                let mut sections = Sections { rest: &bytes };
                let chunk = sections
                    .next_bytes("graph chunk")?
                    .ok_or_else(|| ProjectionError::CorruptSnapshot(format!("chunk {} is empty", part.name())))?;
                graph_chunks.push((graph_part, chunk.to_vec()));
                continue;
            }
            let mut sections = Sections { rest: &bytes };
            let mut found = false;
            while let Some(archive) = sections.next_archive("chunk")? {
                found = true;
                let in_range = |seq: u64, index: u32| SnapshotPart::seqs(index).contains(&seq);
                let fits = match (part, decode::<MemoryChunk>(&archive, "chunk")?) {
                    (SnapshotPart::Items(index), MemoryChunk::Items(records)) => {
                        let fits = records.iter().all(|record| in_range(record.seq, index));
                        item_records.extend(records);
                        fits
                    }
                    (SnapshotPart::Vectors(index), MemoryChunk::Vectors(records)) => {
                        let fits = records.iter().all(|(seq, _, _, _)| in_range(*seq, index));
                        vector_records.extend(records);
                        fits
                    }
                    (SnapshotPart::Seen(index), MemoryChunk::Seen(records)) => {
                        let fits = records.iter().all(|(_, seq, _)| in_range(*seq, index));
                        seen_records.extend(records);
                        fits
                    }
                    // Chunks are named in index order: each starts where
                    // the ones before it ended.
                    (SnapshotPart::Phases(index), MemoryChunk::Phases(records)) => {
                        let fits = own_phases.len() == index as usize * PHASE_CHUNK;
                        own_phases.extend(records);
                        fits
                    }
                    (SnapshotPart::SharedPhases(index), MemoryChunk::Phases(records)) => {
                        let fits = shared_phases.len() == index as usize * PHASE_CHUNK;
                        shared_phases.extend(records);
                        fits
                    }
                    _ => false,
                };
                if !fits {
                    return Err(ProjectionError::CorruptSnapshot(format!("chunk {} is not what it says", part.name())));
                }
            }
            if !found {
                return Err(ProjectionError::CorruptSnapshot(format!("chunk {} is empty", part.name())));
            }
        }
        // The graph is rebuilt on a thread of its own while the items are:
        // about half of a restore each, and independent.
        let graph_head = std::mem::take(&mut snapshot.graph_head);
        let graph = std::thread::Builder::new()
            .name("restore-graph".to_string())
            .spawn(move || FactGraph::from_parts(&graph_head, graph_chunks))
            .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot start restoring the graph: {error}")))?;
        let found = (item_records.len() as u64, seen_records.len() as u64);
        let announced = (snapshot.item_count, snapshot.seen_count);
        if found != announced {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "snapshot is incomplete: (items, applied ids) {found:?} where the head announced {announced:?}"
            )));
        }
        let mut vectors_by_seq: BTreeMap<u64, QuantizedVector> = BTreeMap::new();
        for (seq, scale, values, code) in vector_records {
            if values.len() != config.embedder.dimensions() || !scale.is_finite() {
                return Err(ProjectionError::CorruptSnapshot(format!(
                    "vector of seq {seq} has {} dimensions and scale {scale}, the model {} dimensions",
                    values.len(),
                    config.embedder.dimensions()
                )));
            }
            if vectors_by_seq.insert(seq, QuantizedVector { scale, values, code }).is_some() {
                return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} is there twice")));
            }
        }
        let mut items = Vec::with_capacity(item_records.len());
        let mut previous_seq = None;
        for record in item_records {
            if previous_seq.is_some_and(|previous| previous >= record.seq) {
                return Err(ProjectionError::CorruptSnapshot(format!("item of seq {} is out of order", record.seq)));
            }
            previous_seq = Some(record.seq);
            let shared_prefix = record.shared_prefix.map(|prefix| prefix as usize);
            items.push((memory_item(record)?, shared_prefix));
        }
        // The memory's own documents in the text index: taken over if the
        // index on disk has them, else indexed again.
        let config = config.fitted();
        let own_seqs: Vec<u64> = items
            .iter()
            .filter(|(item, prefix)| prefix.is_none() && item.state != ItemState::Purged)
            .map(|(item, _)| item.seq)
            .collect();
        let saved = snapshot.text.map(|record| SavedText {
            index_id: record.index_id,
            owner: record.owner,
            documents: record.documents,
            text_tokens: record.text_tokens,
            code_tokens: record.code_tokens,
            document_frequency: record.document_frequency,
        });
        let (bm25, documents_kept) = Bm25Index::restore(
            config.shared.text_index().clone(),
            Some(config.shared.owner()),
            agent,
            saved,
            snapshot.checkpoint,
            &own_seqs,
        )?;
        drop(own_seqs);
        // Filled in place, so that what it takes of the swarm's shared
        // content is given back (on drop) if the restore fails half-way.
        let mut memory = AgentMemory::with_text_index(swarm, agent, config, bm25);
        memory.text_reused = documents_kept;
        let config = memory.config.clone();
        for (mut item, shared_prefix) in items {
            // Hidden items stay indexed (see `AgentMemory::change_state`);
            // purged ones do not (see `AgentMemory::purge`).
            if item.state != ItemState::Purged {
                let vector = vectors_by_seq.remove(&item.seq).ok_or_else(|| {
                    ProjectionError::CorruptSnapshot(format!("item of seq {} has no vector", item.seq))
                })?;
                match shared_prefix {
                    Some(prefix) => {
                        if prefix > item.text.len() || !item.text.is_char_boundary(prefix) {
                            return Err(ProjectionError::CorruptSnapshot(format!(
                                "shared item of seq {} has a prefix of {prefix} bytes in {} bytes of text",
                                item.seq,
                                item.text.len()
                            )));
                        }
                        // The record's text becomes the entry's, moved, not copied.
                        let text = std::mem::take(&mut item.text).into_string();
                        let entry = config.shared.acquire_restored(item.seq, item.kind, text, prefix, vector)?;
                        if !documents_kept {
                            config.shared.count_terms(item.seq, &entry, |terms| {
                                memory.bm25.hold_shared(terms, entry.change, 1);
                            });
                        }
                        item.text = ItemText::shared(entry, item.agent == agent);
                    }
                    None => {
                        if !documents_kept {
                            memory.bm25.add(item.seq, item.kind, &item.text)?;
                        }
                        memory.vectors.insert_quantized(item.seq, vector);
                    }
                }
                if !item.state.is_searchable() {
                    memory.hidden_count += 1;
                }
            }
            memory.seqs_by_kind.entry(item.kind).or_default().push(item.seq);
            memory.items.insert(item.seq, item);
        }
        if let Some(seq) = vectors_by_seq.keys().next() {
            return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} has no item")));
        }
        memory.bm25.commit()?;
        seen_records.sort_unstable_by_key(|(_, seq, _)| *seq);
        for (id, seq, fingerprint) in seen_records {
            memory.seen_ids.insert(EventId(id), SeenId { seq, fingerprint });
            memory.seen_order.push((seq, EventId(id)));
        }
        let graph = graph.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        let phases = PhaseTracker::from_record(snapshot.phases, own_phases, shared_phases)
            .map_err(ProjectionError::CorruptSnapshot)?;
        let open_contradictions = snapshot
            .open_contradictions
            .into_iter()
            .map(|(contradiction_id, a, b, reason, seq, event_id)| {
                let provenance = ProvenanceRef { seq, event_id: EventId(event_id) };
                (contradiction_id.clone(), OpenContradiction { contradiction_id, a, b, reason, provenance })
            })
            .collect();
        let mut resolved_contradictions = BTreeMap::new();
        for (contradiction_id, a, b, resolution, seq, event_id) in snapshot.resolved_contradictions {
            let provenance = ProvenanceRef { seq, event_id: EventId(event_id) };
            let resolution = resolution_from_code(resolution)?;
            resolved_contradictions.insert(
                contradiction_id.clone(),
                ResolvedContradiction { contradiction_id, a, b, resolution, provenance },
            );
        }
        let reference = |(seq, event_id): (u64, u128)| ProvenanceRef { seq, event_id: EventId(event_id) };
        let handoffs = snapshot
            .handoffs
            .into_iter()
            .map(|record| {
                let handoff_id = EventId(record.handoff_id);
                let record = HandoffRecord {
                    handoff_id,
                    from: record.from,
                    received: reference(record.received),
                    package: record.package,
                    acknowledged: record.acknowledged.map(reference),
                };
                (handoff_id, record)
            })
            .collect();
        let working_entries = snapshot
            .working
            .into_iter()
            .map(|record| WorkingEntry { seq: record.seq, text: record.text, tokens: record.tokens as usize })
            .collect();
        memory.checkpoint = snapshot.checkpoint;
        memory.working =
            WorkingTier::restore(config.working_tier_tokens, config.working_item_max_tokens, working_entries);
        memory.graph = graph;
        memory.phases = phases;
        memory.open_contradictions = open_contradictions;
        memory.resolved_contradictions = resolved_contradictions;
        memory.handoffs = handoffs;
        memory.sent_bundles =
            snapshot.sent_bundles.into_iter().map(|(id, seq, bundle)| (EventId(id), (seq, bundle))).collect();
        memory.changes = Changes::default();
        // What it reads of the swarm's graph: every shared event up to its
        // checkpoint must be there, and it sees those it holds.
        {
            let swarm_graph = memory.config.shared.graph();
            // Shared events past what the graph covers would be missing
            // from it (a memory with none there, every agent's private
            // events, needs nothing of it).
            let missing = memory
                .items
                .range(swarm_graph.covers() + 1..=memory.checkpoint.max(swarm_graph.covers() + 1))
                .any(|(_, item)| item.scope != Scope::Private);
            if missing {
                return Err(ProjectionError::CorruptSnapshot(format!(
                    "the swarm's graph covers the log up to seq {}, the memory's snapshot up to {}, with shared events in between",
                    swarm_graph.covers(),
                    memory.checkpoint
                )));
            }
            let unheld: BTreeSet<u64> = swarm_graph
                .graph()
                .events
                .range(..=memory.checkpoint)
                .map(|(seq, _)| *seq)
                .filter(|seq| memory.items.get(seq).is_none_or(|item| item.state == ItemState::Purged))
                .collect();
            drop(swarm_graph);
            memory.unheld_shared = unheld;
        }
        Ok(memory)
    }
}

/// Appends bytes behind their little-endian u64 length.
fn append_bytes(body: &mut Vec<u8>, bytes: &[u8]) {
    body.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    body.extend_from_slice(bytes);
}

/// Appends one section: its archive's length, then the archive. Refuses an
/// archive rkyv could not read back rather than write an unusable snapshot.
fn append_section<T>(body: &mut Vec<u8>, what: &str, value: &T) -> Result<(), ProjectionError>
where
    T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<AlignedVec, rkyv::ser::allocator::ArenaHandle<'a>, rancor::Error>,
        >,
{
    let archive = rkyv::to_bytes::<rancor::Error>(value)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot encode the {what}: {error}")))?;
    if archive.len() > RKYV_ARCHIVE_LIMIT {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "the snapshot's {what} section is {} bytes, past rkyv's {RKYV_ARCHIVE_LIMIT}",
            archive.len()
        )));
    }
    body.extend_from_slice(&(archive.len() as u64).to_le_bytes());
    body.extend_from_slice(&archive);
    Ok(())
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

/// Reads a body's sections one by one, aligned for rkyv.
struct Sections<'body> {
    rest: &'body [u8],
}

impl<'body> Sections<'body> {
    fn next_bytes(&mut self, what: &str) -> Result<Option<&'body [u8]>, ProjectionError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let truncated = || ProjectionError::CorruptSnapshot(format!("snapshot is cut short in a {what}"));
        let (length, rest) = self.rest.split_first_chunk::<8>().ok_or_else(truncated)?;
        let length = usize::try_from(u64::from_le_bytes(*length)).map_err(|_| truncated())?;
        if length > rest.len() {
            return Err(truncated());
        }
        let (bytes, rest) = rest.split_at(length);
        self.rest = rest;
        Ok(Some(bytes))
    }

    fn next_archive(&mut self, what: &str) -> Result<Option<AlignedVec<16>>, ProjectionError> {
        let Some(archive) = self.next_bytes(what)? else { return Ok(None) };
        let mut aligned: AlignedVec<16> = AlignedVec::with_capacity(archive.len());
        aligned.extend_from_slice(archive);
        Ok(Some(aligned))
    }
}

fn decode<T>(archive: &AlignedVec<16>, what: &str) -> Result<T, ProjectionError>
where
    T: rkyv::Archive,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<T, rkyv::api::high::HighDeserializer<rancor::Error>>,
{
    rkyv::from_bytes::<T, rancor::Error>(archive)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot decode the snapshot's {what}: {error}")))
}

fn check_compatible(
    snapshot: &MemorySnapshot,
    swarm: &str,
    agent: &str,
    config: &MemoryConfig,
) -> Result<(), ProjectionError> {
    if snapshot.format != SNAPSHOT_FORMAT {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot format {} is not {SNAPSHOT_FORMAT}",
            snapshot.format
        )));
    }
    if snapshot.swarm != swarm || snapshot.agent != agent {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot is of {}/{}, not {swarm}/{agent}",
            snapshot.swarm, snapshot.agent
        )));
    }
    let snapshot_config = (snapshot.working_tier_tokens, snapshot.working_item_max_tokens);
    let wanted_config = (config.working_tier_tokens as u64, config.working_item_max_tokens as u64);
    if snapshot_config != wanted_config {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot was taken with working tier (budget, item max) {snapshot_config:?}, \
             the configuration now says {wanted_config:?}"
        )));
    }
    if snapshot.large_output_bytes != config.large_output_bytes as u64 {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot was taken with large outputs over {} bytes compressed, the configuration now says {}",
            snapshot.large_output_bytes, config.large_output_bytes
        )));
    }
    let wanted_admitted: Option<Vec<String>> =
        config.admitted_agents.as_ref().map(|admitted| admitted.iter().cloned().collect());
    let snapshot_admitted: Option<Vec<String>> = snapshot
        .admitted_agents
        .as_ref()
        .map(|admitted| admitted.iter().map(|agent| agent.as_str().to_string()).collect());
    if snapshot_admitted != wanted_admitted {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot took in the shared events of {snapshot_admitted:?} (None: every agent), the \
             configuration now admits {wanted_admitted:?}"
        )));
    }
    if snapshot.handoff_bundle_tokens != config.handoff_bundle_tokens as u64 {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot assembled handoff bundles of {} tokens, the configuration now says {}",
            snapshot.handoff_bundle_tokens, config.handoff_bundle_tokens
        )));
    }
    if snapshot.embedder_model_id != config.embedder.model_id() {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot was embedded with {}, the configured model is {}",
            snapshot.embedder_model_id,
            config.embedder.model_id()
        )));
    }
    Ok(())
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
