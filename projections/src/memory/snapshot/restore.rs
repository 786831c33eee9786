//! Reading a snapshot back: a memory from one body, or from a head and the
//! chunks it names, refused when it is of another format, agent or
//! configuration, or incomplete.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{EventId, Scope};

use super::sections::{Sections, decode};
use super::{
    ContradictionRecord, HandoffSnapshotRecord, ItemRecord, MemoryChunk, MemorySnapshot, ResolvedRecord,
    SentBundleRecord, VectorRecord, memory_item, resolution_from_code,
};
use crate::chunks::{Changes, GraphPart, SNAPSHOT_FORMAT, SnapshotPart};
use crate::error::ProjectionError;
use crate::graph::{FactGraph, SwarmGraph};
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::memory::items::SeenId;
use crate::memory::{
    AgentMemory, Contradictions, HandoffRecord, Handoffs, MemoryConfig, OpenContradiction, ResolvedContradiction,
    SentBundle,
};
use crate::phases::{PHASE_CHUNK, PhaseRecord, PhaseTracker};
use crate::working::{WorkingEntry, WorkingTier};
use mneme_index::vector::QuantizedVector;
use mneme_index::{Bm25Index, SavedText};

impl AgentMemory {
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
        let chunks = Chunks::read(&snapshot, read)?;
        // The graph is rebuilt on a thread of its own while the items are:
        // about half of a restore each, and independent.
        let graph_head = std::mem::take(&mut snapshot.graph_head);
        let graph_chunks = chunks.graph;
        let graph = std::thread::Builder::new()
            .name("restore-graph".to_string())
            .spawn(move || FactGraph::from_parts(&graph_head, graph_chunks))
            .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot start restoring the graph: {error}")))?;
        let found = (chunks.items.len() as u64, chunks.seen.len() as u64);
        let announced = (snapshot.item_count, snapshot.seen_count);
        if found != announced {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "snapshot is incomplete: (items, applied ids) {found:?} where the head announced {announced:?}"
            )));
        }
        let vectors = vectors_by_seq(chunks.vectors, config.embedder.dimensions())?;
        let deep_dimensions = config.deep_embedder.as_ref().map_or(0, |deep| deep.dimensions());
        let deep = vectors_by_seq(chunks.deep, deep_dimensions)?;
        let items = items_in_order(chunks.items)?;
        let saved = snapshot.text.take().map(|record| SavedText {
            index_id: record.index_id,
            owner: record.owner,
            documents: record.documents,
            text_tokens: record.text_tokens,
            code_tokens: record.code_tokens,
            document_frequency: record.document_frequency,
        });
        let restored = RestoredItems { checkpoint: snapshot.checkpoint, saved, items, vectors, deep };
        let mut memory = AgentMemory::with_restored_items(swarm, agent, config, restored)?;
        let mut seen_records = chunks.seen;
        seen_records.sort_unstable_by_key(|(_, seq, _)| *seq);
        for (id, seq, fingerprint) in seen_records {
            memory.items.see(EventId(id), SeenId { seq, fingerprint });
        }
        memory.graph = graph.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        memory.phases = PhaseTracker::from_record(snapshot.phases, chunks.own_phases, chunks.shared_phases)
            .map_err(ProjectionError::CorruptSnapshot)?;
        memory.contradictions =
            restored_contradictions(snapshot.open_contradictions, snapshot.resolved_contradictions)?;
        memory.handoffs = restored_handoffs(snapshot.handoffs, snapshot.sent_bundles);
        memory.core = snapshot.core;
        let working_entries = snapshot
            .working
            .into_iter()
            .map(|record| WorkingEntry { seq: record.seq, text: record.text, tokens: record.tokens as usize })
            .collect();
        let config = &memory.config;
        memory.working =
            WorkingTier::restore(config.working_tier_tokens, config.working_item_max_tokens, working_entries);
        memory.checkpoint = snapshot.checkpoint;
        memory.changes = Changes::default();
        memory.unheld_shared = memory.unheld_in_swarm_graph()?;
        Ok(memory)
    }

    /// An empty memory at the snapshot's text index, filled with its items
    /// (and their documents and vectors, taken over from the index on disk
    /// when it has them, else indexed again). Filled in place, so that what
    /// it takes of the swarm's shared content is given back (on drop) if
    /// the restore fails half-way.
    fn with_restored_items(
        swarm: &str,
        agent: &str,
        config: MemoryConfig,
        restored: RestoredItems,
    ) -> Result<AgentMemory, ProjectionError> {
        let RestoredItems { checkpoint, saved, items, mut vectors, mut deep } = restored;
        let config = config.fitted();
        let own_seqs: Vec<u64> = items
            .iter()
            .filter(|(item, prefix)| prefix.is_none() && item.state != ItemState::Purged)
            .map(|(item, _)| item.seq)
            .collect();
        let (bm25, documents_kept) = Bm25Index::restore(
            config.shared.text_index().clone(),
            Some(config.shared.owner()),
            agent,
            saved,
            checkpoint,
            &own_seqs,
        )?;
        drop(own_seqs);
        let mut memory = AgentMemory::with_text_index(swarm, agent, config, bm25);
        memory.indexes.set_text_reused(documents_kept);
        if let Some(directory) = memory.config.vector_graphs.clone() {
            let deep_dimensions = memory.config.deep_embedder.as_ref().map(|deep| deep.dimensions());
            memory.config.shared.restore_vector_graphs_once(&directory, deep_dimensions);
            memory.indexes.restore_vector_graphs(&directory, agent);
        }
        let config = memory.config.clone();
        for (mut item, shared_prefix) in items {
            // Hidden items stay indexed (see `AgentMemory::change_state`);
            // purged ones do not (see `AgentMemory::purge`).
            if item.state != ItemState::Purged {
                let vector = vectors.remove(&item.seq).ok_or_else(|| {
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
                        if let Some(deep) = deep.remove(&item.seq) {
                            let dimensions = deep.values.len();
                            config.shared.insert_deep(item.seq, dimensions, deep);
                            memory.indexes.mark_deep_shared(item.seq);
                        }
                        if !documents_kept {
                            let bm25 = memory.indexes.bm25_mut();
                            config.shared.count_terms(item.seq, &entry, |terms| {
                                bm25.hold_shared(terms, entry.change, 1);
                            });
                        }
                        item.text = ItemText::shared(entry, item.agent == agent);
                    }
                    None => {
                        if !documents_kept {
                            memory.indexes.bm25_mut().add(item.seq, item.kind, &item.text)?;
                        }
                        memory.indexes.insert_quantized(item.seq, vector);
                        if let Some(deep) = deep.remove(&item.seq) {
                            memory.indexes.add_deep_own(item.seq, deep);
                        }
                    }
                }
            }
            memory.items.insert(item);
        }
        if let Some(seq) = vectors.keys().chain(deep.keys()).next() {
            return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} has no item")));
        }
        memory.indexes.finish_restore();
        memory.indexes.commit()?;
        Ok(memory)
    }

    /// The events of the swarm's graph at or below the checkpoint that this
    /// memory does not hold. Refuses a swarm graph that does not cover the
    /// memory: every shared event up to its checkpoint must be there.
    fn unheld_in_swarm_graph(&self) -> Result<BTreeSet<u64>, ProjectionError> {
        let swarm_graph = self.config.shared.graph();
        // Shared events past what the graph covers would be missing from
        // it (a memory with none there, every agent's private events,
        // needs nothing of it).
        let missing = self
            .items
            .range(swarm_graph.covers() + 1..=self.checkpoint.max(swarm_graph.covers() + 1))
            .any(|item| item.scope != Scope::Private);
        if missing {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "the swarm's graph covers the log up to seq {}, the memory's snapshot up to {}, with shared events in between",
                swarm_graph.covers(),
                self.checkpoint
            )));
        }
        Ok(swarm_graph
            .graph()
            .event_seqs_through(self.checkpoint)
            .filter(|seq| self.items.get(*seq).is_none_or(|item| item.state == ItemState::Purged))
            .collect())
    }
}

/// A snapshot's items, their vectors and the text index's statistics as
/// saved with them.
struct RestoredItems {
    checkpoint: u64,
    saved: Option<SavedText>,
    /// Each with the length of its shared prefix if it is shared.
    items: Vec<(MemoryItem, Option<usize>)>,
    vectors: BTreeMap<u64, QuantizedVector>,
    /// The deep vectors of the items that took one.
    deep: BTreeMap<u64, QuantizedVector>,
}

/// What a snapshot's chunks hold, read in the order its head names them.
struct Chunks {
    items: Vec<ItemRecord>,
    vectors: Vec<VectorRecord>,
    deep: Vec<VectorRecord>,
    seen: Vec<(u128, u64, u64)>,
    graph: Vec<(GraphPart, Vec<u8>)>,
    own_phases: Vec<PhaseRecord>,
    shared_phases: Vec<PhaseRecord>,
}

impl Chunks {
    /// Reads every part the head names, refusing one that is empty or
    /// holds what another part should.
    fn read(
        snapshot: &MemorySnapshot,
        read: &mut dyn FnMut(SnapshotPart) -> Result<Vec<u8>, ProjectionError>,
    ) -> Result<Chunks, ProjectionError> {
        let mut chunks = Chunks {
            items: Vec::new(),
            vectors: Vec::new(),
            deep: Vec::new(),
            seen: Vec::new(),
            graph: Vec::new(),
            own_phases: Vec::new(),
            shared_phases: Vec::new(),
        };
        for code in snapshot.parts.iter().copied() {
            let part = SnapshotPart::from_code(code)?;
            let bytes = read(part)?;
            let mut sections = Sections { rest: &bytes };
            if let Some(graph_part) = part.graph() {
                let chunk = sections
                    .next_bytes("graph chunk")?
                    .ok_or_else(|| ProjectionError::CorruptSnapshot(format!("chunk {} is empty", part.name())))?;
                chunks.graph.push((graph_part, chunk.to_vec()));
                continue;
            }
            let mut found = false;
            while let Some(archive) = sections.next_archive("chunk")? {
                found = true;
                if !chunks.take(part, decode::<MemoryChunk>(&archive, "chunk")?) {
                    return Err(ProjectionError::CorruptSnapshot(format!("chunk {} is not what it says", part.name())));
                }
            }
            if !found {
                return Err(ProjectionError::CorruptSnapshot(format!("chunk {} is empty", part.name())));
            }
        }
        Ok(chunks)
    }

    /// Takes in one archive of `part`; false when it is not what the part
    /// says (another kind, or records of other seqs).
    fn take(&mut self, part: SnapshotPart, chunk: MemoryChunk) -> bool {
        let in_range = |seq: u64, index: u32| SnapshotPart::seqs(index).contains(&seq);
        match (part, chunk) {
            (SnapshotPart::Items(index), MemoryChunk::Items(records)) => {
                let fits = records.iter().all(|record| in_range(record.seq, index));
                self.items.extend(records);
                fits
            }
            (SnapshotPart::Vectors(index), MemoryChunk::Vectors(records)) => {
                let fits = records.iter().all(|(seq, _, _, _)| in_range(*seq, index));
                self.vectors.extend(records);
                fits
            }
            (SnapshotPart::Vectors(index), MemoryChunk::DeepVectors(records)) => {
                let fits = records.iter().all(|(seq, _, _, _)| in_range(*seq, index));
                self.deep.extend(records);
                fits
            }
            (SnapshotPart::Seen(index), MemoryChunk::Seen(records)) => {
                let fits = records.iter().all(|(_, seq, _)| in_range(*seq, index));
                self.seen.extend(records);
                fits
            }
            // Chunks are named in index order: each starts where the ones
            // before it ended.
            (SnapshotPart::Phases(index), MemoryChunk::Phases(records)) => {
                let fits = self.own_phases.len() == index as usize * PHASE_CHUNK;
                self.own_phases.extend(records);
                fits
            }
            (SnapshotPart::SharedPhases(index), MemoryChunk::Phases(records)) => {
                let fits = self.shared_phases.len() == index as usize * PHASE_CHUNK;
                self.shared_phases.extend(records);
                fits
            }
            _ => false,
        }
    }
}

/// The vectors by seq, each of the model's dimensions and there once.
fn vectors_by_seq(
    records: Vec<VectorRecord>,
    dimensions: usize,
) -> Result<BTreeMap<u64, QuantizedVector>, ProjectionError> {
    let mut vectors = BTreeMap::new();
    for (seq, scale, values, code) in records {
        if values.len() != dimensions || !scale.is_finite() {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "vector of seq {seq} has {} dimensions and scale {scale}, the model {dimensions} dimensions",
                values.len(),
            )));
        }
        if vectors.insert(seq, QuantizedVector { scale, values, code }).is_some() {
            return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} is there twice")));
        }
    }
    Ok(vectors)
}

/// The items, each with the length of its shared prefix if it is shared;
/// refused out of seq order.
fn items_in_order(records: Vec<ItemRecord>) -> Result<Vec<(MemoryItem, Option<usize>)>, ProjectionError> {
    let mut items = Vec::with_capacity(records.len());
    let mut previous_seq = None;
    for record in records {
        if previous_seq.is_some_and(|previous| previous >= record.seq) {
            return Err(ProjectionError::CorruptSnapshot(format!("item of seq {} is out of order", record.seq)));
        }
        previous_seq = Some(record.seq);
        let shared_prefix = record.shared_prefix.map(|prefix| prefix as usize);
        items.push((memory_item(record)?, shared_prefix));
    }
    Ok(items)
}

/// The contradictions as the snapshot kept them.
fn restored_contradictions(
    open: Vec<ContradictionRecord>,
    resolved: Vec<ResolvedRecord>,
) -> Result<Contradictions, ProjectionError> {
    let open = open
        .into_iter()
        .map(|(contradiction_id, a, b, reason, seq, event_id)| {
            let provenance = ProvenanceRef { seq, event_id: EventId(event_id) };
            (contradiction_id.clone(), OpenContradiction { contradiction_id, a, b, reason, provenance })
        })
        .collect();
    let mut settled = BTreeMap::new();
    for (contradiction_id, a, b, resolution, seq, event_id) in resolved {
        let provenance = ProvenanceRef { seq, event_id: EventId(event_id) };
        let resolution = resolution_from_code(resolution)?;
        settled
            .insert(contradiction_id.clone(), ResolvedContradiction { contradiction_id, a, b, resolution, provenance });
    }
    Ok(Contradictions::restored(open, settled))
}

/// The handoffs received and the bundles sent, as the snapshot kept them.
fn restored_handoffs(received: Vec<HandoffSnapshotRecord>, sent: Vec<SentBundleRecord>) -> Handoffs {
    let reference = |(seq, event_id): (u64, u128)| ProvenanceRef { seq, event_id: EventId(event_id) };
    let received = received
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
    let sent = sent
        .into_iter()
        .map(|(id, seq, bundle, task_items)| (EventId(id), SentBundle { seq, bundle, task_items }))
        .collect();
    Handoffs::restored(received, sent)
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
    if snapshot.deep_model_id.as_deref() != config.deep_model_id() {
        return Err(ProjectionError::CorruptSnapshot(format!(
            "snapshot took deep vectors of {:?}, the configured deep model is {:?}",
            snapshot.deep_model_id,
            config.deep_model_id()
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
