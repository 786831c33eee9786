//! Reading a snapshot back: a memory from one body, or from a head and the
//! chunks it names, refused when it is of another format, agent or
//! configuration, or incomplete.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{EventId, Scope};

use super::sections::{Sections, decode};
use super::{MemoryChunk, MemorySnapshot, memory_item, resolution_from_code};
use crate::chunks::{Changes, SNAPSHOT_FORMAT, SnapshotPart};
use crate::error::ProjectionError;
use crate::graph::{FactGraph, SwarmGraph};
use crate::item::{ItemState, ItemText, ProvenanceRef};
use crate::memory::items::SeenId;
use crate::memory::{
    AgentMemory, Contradictions, HandoffRecord, Handoffs, MemoryConfig, OpenContradiction, ResolvedContradiction,
    SentBundle,
};
use crate::phases::{PHASE_CHUNK, PhaseTracker};
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
        memory.indexes.set_text_reused(documents_kept);
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
                    }
                }
            }
            memory.items.insert(item);
        }
        if let Some(seq) = vectors_by_seq.keys().next() {
            return Err(ProjectionError::CorruptSnapshot(format!("vector of seq {seq} has no item")));
        }
        memory.indexes.commit()?;
        seen_records.sort_unstable_by_key(|(_, seq, _)| *seq);
        for (id, seq, fingerprint) in seen_records {
            memory.items.see(EventId(id), SeenId { seq, fingerprint });
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
        memory.contradictions = Contradictions::restored(open_contradictions, resolved_contradictions);
        let sent_bundles = snapshot
            .sent_bundles
            .into_iter()
            .map(|(id, seq, bundle, task_items)| (EventId(id), SentBundle { seq, bundle, task_items }))
            .collect();
        memory.handoffs = Handoffs::restored(handoffs, sent_bundles);
        memory.core = snapshot.core;
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
                .any(|item| item.scope != Scope::Private);
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
                .filter(|seq| memory.items.get(*seq).is_none_or(|item| item.state == ItemState::Purged))
                .collect();
            drop(swarm_graph);
            memory.unheld_shared = unheld;
        }
        Ok(memory)
    }
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
