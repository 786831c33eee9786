//! Snapshots: an agent's memory and its checkpoint in one body, so that
//! state and checkpoint are always written together.
//!
//! The snapshot types are the only serialisable form of projection state;
//! derived structures (the BM25 index) are rebuilt from items on restore.
//!
//! A body is a run of sections, each a little-endian u64 length and an rkyv
//! archive: first the head (everything but the bulk), then the items, the
//! vectors and the fact graph's bytes in sections of bounded size. rkyv's
//! relative pointers are 32-bit, so a single archive past 2 GiB cannot be
//! read back; a million-event memory is larger than that.

use std::collections::BTreeMap;

use mneme_events::{ContradictionResolution, EventId, EventKind, HandoffBundle, HandoffPackage, Scope, Timestamp};
use rkyv::rancor;
use rkyv::util::AlignedVec;

use crate::error::ProjectionError;
use crate::graph::FactGraph;
use crate::handoffs::HandoffRecord;
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::memory::{AgentMemory, MemoryConfig, OpenContradiction, ResolvedContradiction, SeenId};
use crate::phases::{PhaseTracker, PhaseTrackerRecord};
use crate::vector::QuantizedVector;
use crate::working::{WorkingEntry, WorkingTier};

/// Bumped whenever the snapshot layout or the meaning of its fields changes;
/// older snapshots are then refused and memory is rebuilt from the log.
pub const SNAPSHOT_FORMAT: u32 = 10;

/// The size a snapshot section is cut at: well inside rkyv's 2 GiB reach,
/// and small enough that encoding one does not double a large memory's
/// footprint at once.
pub const SNAPSHOT_SECTION_BYTES: usize = 64 << 20;

/// The largest archive rkyv's 32-bit relative pointers can address.
const RKYV_ARCHIVE_LIMIT: usize = i32::MAX as usize;

/// Everything but the items, vectors and graph, which follow in sections of
/// their own; the counts say how many of each must follow, so that a body
/// cut short is refused rather than restored with part of its memory.
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
    item_count: u64,
    vector_count: u64,
    graph_bytes: u64,
    working: Vec<WorkingRecord>,
    /// (event id, seq, content fingerprint).
    seen_ids: Vec<(u128, u64, u64)>,
    phases: PhaseTrackerRecord,
    /// Open contradictions: (id, a, b, reason, seq, event id).
    open_contradictions: Vec<(String, String, String, String, u64, u128)>,
    /// Resolved contradictions: (id, a, b, resolution, seq, event id).
    resolved_contradictions: Vec<(String, String, String, u8, u64, u128)>,
    handoffs: Vec<HandoffSnapshotRecord>,
    /// Bundles of the handoffs this agent sent: (handoff id, its seq, bundle).
    sent_bundles: Vec<(u128, u64, HandoffBundle)>,
}

/// The bulk of a memory, after the head, in order: items, then vectors,
/// then the graph.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
enum SnapshotSection {
    Items(Vec<ItemRecord>),
    /// (seq, scale, 8-bit values) in seq order: the vector index as it
    /// was, read back without embedding or quantizing anything again.
    Vectors(Vec<(u64, f32, Vec<i8>)>),
    /// A slice of the fact graph's own snapshot.
    Graph(Vec<u8>),
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
    /// The memory and its checkpoint as bytes.
    pub fn to_snapshot(&self) -> Result<Vec<u8>, ProjectionError> {
        self.to_snapshot_in_sections(SNAPSHOT_SECTION_BYTES)
    }

    /// [`AgentMemory::to_snapshot`] with the bulk cut into sections of about
    /// `section_bytes` each; any size gives the same memory back.
    pub fn to_snapshot_in_sections(&self, section_bytes: usize) -> Result<Vec<u8>, ProjectionError> {
        // Its own vectors and those of the shared items it holds (the
        // swarm's copy may be gone when it is restored), in seq order.
        let mut vectors: Vec<(u64, f32, Vec<i8>)> =
            self.vectors.quantized().map(|(seq, vector)| (seq, vector.scale, vector.values)).collect();
        {
            let shared = self.shared_vectors();
            for item in self.items.values().filter(|item| item.text.shared_entry().is_some()) {
                let vector = shared.quantized_of(item.seq).ok_or_else(|| {
                    ProjectionError::CorruptSnapshot(format!("the shared vector of seq {} is missing", item.seq))
                })?;
                vectors.push((item.seq, vector.scale, vector.values));
            }
        }
        vectors.sort_unstable_by_key(|(seq, _, _)| *seq);
        let graph = self.graph.to_snapshot()?;
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
            item_count: self.items.len() as u64,
            vector_count: vectors.len() as u64,
            graph_bytes: graph.len() as u64,
            working: self
                .working
                .entries()
                .map(|entry| WorkingRecord { seq: entry.seq, text: entry.text.clone(), tokens: entry.tokens as u64 })
                .collect(),
            seen_ids: self.seen_ids.iter().map(|(id, seen)| (id.0, seen.seq, seen.fingerprint)).collect(),
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
        };
        let mut body = Vec::new();
        append_section(&mut body, "head", &head)?;
        let mut items = Vec::new();
        let mut items_bytes = 0;
        for item in self.items.values() {
            items_bytes += item_record_bytes(item);
            items.push(item_record(item));
            if items_bytes >= section_bytes {
                append_section(&mut body, "items", &SnapshotSection::Items(std::mem::take(&mut items)))?;
                items_bytes = 0;
            }
        }
        if !items.is_empty() {
            append_section(&mut body, "items", &SnapshotSection::Items(items))?;
        }
        let vector_bytes = 32 + self.config.embedder.dimensions();
        for chunk in vectors.chunks((section_bytes / vector_bytes).max(1)) {
            append_section(&mut body, "vectors", &SnapshotSection::Vectors(chunk.to_vec()))?;
        }
        for chunk in graph.chunks(section_bytes.max(1)) {
            append_section(&mut body, "graph", &SnapshotSection::Graph(chunk.to_vec()))?;
        }
        Ok(body)
    }

    /// Restores a memory from [`AgentMemory::to_snapshot`] bytes. Refuses a
    /// snapshot of another format, agent or configuration.
    pub fn from_snapshot(
        bytes: &[u8],
        swarm: &str,
        agent: &str,
        config: MemoryConfig,
    ) -> Result<AgentMemory, ProjectionError> {
        let mut sections = Sections { rest: bytes };
        let snapshot: MemorySnapshot = match sections.next_archive("head")? {
            Some(archive) => decode(&archive, "head")?,
            None => return Err(ProjectionError::CorruptSnapshot("empty snapshot".to_string())),
        };
        check_compatible(&snapshot, swarm, agent, &config)?;
        let mut item_records = Vec::new();
        let mut vector_records = Vec::new();
        let mut graph_bytes = Vec::new();
        while let Some(archive) = sections.next_archive("section")? {
            // Sections come in order: items, vectors, graph.
            match decode::<SnapshotSection>(&archive, "section")? {
                SnapshotSection::Items(chunk) if vector_records.is_empty() && graph_bytes.is_empty() => {
                    item_records.extend(chunk)
                }
                SnapshotSection::Vectors(chunk) if graph_bytes.is_empty() => vector_records.extend(chunk),
                SnapshotSection::Graph(chunk) => graph_bytes.extend_from_slice(&chunk),
                _ => return Err(ProjectionError::CorruptSnapshot("snapshot sections out of order".to_string())),
            }
        }
        let found = (item_records.len() as u64, vector_records.len() as u64, graph_bytes.len() as u64);
        let announced = (snapshot.item_count, snapshot.vector_count, snapshot.graph_bytes);
        if found != announced {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "snapshot is incomplete: (items, vectors, graph bytes) {found:?} where the head announced {announced:?}"
            )));
        }
        let mut vectors_by_seq: BTreeMap<u64, QuantizedVector> = BTreeMap::new();
        let mut previous_seq = None;
        for (seq, scale, values) in vector_records {
            if values.len() != config.embedder.dimensions() || !scale.is_finite() {
                return Err(ProjectionError::CorruptSnapshot(format!(
                    "vector of seq {seq} has {} dimensions and scale {scale}, the model {} dimensions",
                    values.len(),
                    config.embedder.dimensions()
                )));
            }
            if previous_seq.is_some_and(|previous| previous >= seq) {
                return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} is out of order")));
            }
            previous_seq = Some(seq);
            vectors_by_seq.insert(seq, QuantizedVector { scale, values });
        }
        // Filled in place, so that what it takes of the swarm's shared
        // content is given back (on drop) if the restore fails half-way.
        let mut memory = AgentMemory::new(swarm, agent, config)?;
        let config = memory.config.clone();
        for record in item_records {
            let shared_prefix = record.shared_prefix.map(|prefix| prefix as usize);
            let mut item = memory_item(record)?;
            // Hidden items stay indexed (see `AgentMemory::change_state`);
            // purged ones do not (see `AgentMemory::purge`).
            if item.state != ItemState::Purged {
                match shared_prefix {
                    Some(prefix) => {
                        let vector = vectors_by_seq.remove(&item.seq).ok_or_else(|| {
                            ProjectionError::CorruptSnapshot(format!("shared item of seq {} has no vector", item.seq))
                        })?;
                        if prefix > item.text.len() || !item.text.is_char_boundary(prefix) {
                            return Err(ProjectionError::CorruptSnapshot(format!(
                                "shared item of seq {} has a prefix of {prefix} bytes in {} bytes of text",
                                item.seq,
                                item.text.len()
                            )));
                        }
                        let entry = config.shared.acquire_restored(
                            item.seq,
                            item.kind,
                            item.text.to_string(),
                            prefix,
                            vector,
                        )?;
                        memory.bm25.hold_shared(&entry.terms, entry.change, 1);
                        item.text = ItemText::shared(entry, item.agent == agent);
                    }
                    None => memory.bm25.add(item.seq, item.kind, &item.text)?,
                }
                if !item.state.is_searchable() {
                    memory.hidden_count += 1;
                }
            }
            memory.seq_by_item_id.insert(item.item_id.clone(), item.seq);
            memory.seqs_by_kind.entry(item.kind).or_default().push(item.seq);
            memory.items.insert(item.seq, item);
        }
        memory.bm25.commit()?;
        for (seq, vector) in vectors_by_seq {
            memory.vectors.insert_quantized(seq, vector);
        }
        let graph = FactGraph::from_snapshot(&graph_bytes)?;
        drop(graph_bytes);
        let phases = PhaseTracker::from_record(snapshot.phases).map_err(ProjectionError::CorruptSnapshot)?;
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
        memory.seen_ids = snapshot
            .seen_ids
            .into_iter()
            .map(|(id, seq, fingerprint)| (EventId(id), SeenId { seq, fingerprint }))
            .collect();
        memory.working =
            WorkingTier::restore(config.working_tier_tokens, config.working_item_max_tokens, working_entries);
        memory.graph = graph;
        memory.phases = phases;
        memory.open_contradictions = open_contradictions;
        memory.resolved_contradictions = resolved_contradictions;
        memory.handoffs = handoffs;
        memory.sent_bundles =
            snapshot.sent_bundles.into_iter().map(|(id, seq, bundle)| (EventId(id), (seq, bundle))).collect();
        Ok(memory)
    }
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

impl Sections<'_> {
    fn next_archive(&mut self, what: &str) -> Result<Option<AlignedVec<16>>, ProjectionError> {
        if self.rest.is_empty() {
            return Ok(None);
        }
        let truncated = || ProjectionError::CorruptSnapshot(format!("snapshot is cut short in a {what}"));
        let (length, rest) = self.rest.split_first_chunk::<8>().ok_or_else(truncated)?;
        let length = usize::try_from(u64::from_le_bytes(*length)).map_err(|_| truncated())?;
        if length > rest.len() {
            return Err(truncated());
        }
        let (archive, rest) = rest.split_at(length);
        self.rest = rest;
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
