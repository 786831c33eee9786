//! Writing a snapshot: the head and the chunks that changed, or every
//! chunk, or one body of them all.

use std::collections::{BTreeMap, BTreeSet};

use super::sections::{append_bytes, append_section};
use super::{
    HandoffSnapshotRecord, MemoryChunk, MemorySnapshot, TextRecord, VectorRecord, WorkingRecord, item_record,
    item_record_bytes, resolution_code,
};
use crate::chunks::{
    Changes, GraphPart, PhasePart, SNAPSHOT_FORMAT, SNAPSHOT_SECTION_BYTES, SnapshotDelta, SnapshotPart,
};
use crate::error::ProjectionError;
use crate::item::ItemState;
use crate::memory::AgentMemory;

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
        let mut item_chunks: Vec<u32> = self.items.iter().map(|item| SnapshotPart::of_seq(item.seq)).collect();
        item_chunks.dedup();
        let mut seen_chunks: Vec<u32> =
            self.items.seen_order().iter().map(|(seq, _)| SnapshotPart::of_seq(*seq)).collect();
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
        self.indexes.bm25().make_durable()?;
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
        let head = self.head(&parts)?;
        let mut head_bytes = Vec::new();
        append_section(&mut head_bytes, "head", &head)?;
        Ok(SnapshotDelta { checkpoint: self.checkpoint, head: head_bytes, written, parts })
    }

    /// The head: the configuration the memory was shaped by, its
    /// checkpoint, the parts it consists of, and what is not kept in
    /// chunks (working tier, phases' head, contradictions, handoffs, core
    /// memory, the text index's statistics).
    fn head(&self, parts: &[SnapshotPart]) -> Result<MemorySnapshot, ProjectionError> {
        Ok(MemorySnapshot {
            format: SNAPSHOT_FORMAT,
            swarm: self.swarm.clone(),
            agent: self.agent.clone(),
            working_tier_tokens: self.config.working_tier_tokens as u64,
            working_item_max_tokens: self.config.working_item_max_tokens as u64,
            embedder_model_id: self.config.embedder.model_id().to_string(),
            deep_model_id: self.config.deep_model_id().map(str::to_string),
            large_output_bytes: self.config.large_output_bytes as u64,
            admitted_agents: self.config.admitted_agents.as_ref().map(|admitted| admitted.iter().cloned().collect()),
            handoff_bundle_tokens: self.config.handoff_bundle_tokens as u64,
            checkpoint: self.checkpoint,
            parts: parts.iter().map(SnapshotPart::code).collect(),
            item_count: self.items.len() as u64,
            seen_count: self.items.seen_order().len() as u64,
            graph_head: self.graph.snapshot_head()?,
            working: self
                .working
                .entries()
                .map(|entry| WorkingRecord { seq: entry.seq, text: entry.text.clone(), tokens: entry.tokens as u64 })
                .collect(),
            phases: self.phases.to_record(),
            open_contradictions: self
                .contradictions
                .open()
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
                .contradictions
                .resolved()
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
                .received_by_id()
                .map(|record| HandoffSnapshotRecord {
                    handoff_id: record.handoff_id.0,
                    from: record.from.clone(),
                    received: (record.received.seq, record.received.event_id.0),
                    package: record.package.clone(),
                    acknowledged: record.acknowledged.map(|reference| (reference.seq, reference.event_id.0)),
                })
                .collect(),
            sent_bundles: self
                .handoffs
                .sent()
                .map(|(id, sent)| (id.0, sent.seq, sent.bundle.clone(), sent.task_items.clone()))
                .collect(),
            core: self.core.clone(),
            text: self.indexes.bm25().saved().map(|saved| TextRecord {
                index_id: saved.index_id,
                owner: saved.owner,
                documents: saved.documents,
                text_tokens: saved.text_tokens,
                code_tokens: saved.code_tokens,
                document_frequency: saved.document_frequency,
            }),
        })
    }

    /// The deep vectors of the items of chunk `index` that took one here.
    fn deep_records(&self, index: u32) -> Result<Vec<VectorRecord>, ProjectionError> {
        let shared = self.shared_deep_vectors();
        let mut records = Vec::new();
        for item in self.items.range(SnapshotPart::seqs(index)) {
            if item.state == ItemState::Purged || !self.indexes.has_deep(item.seq) {
                continue;
            }
            let vector = match item.text.shared_entry() {
                Some(_) => shared.as_ref().and_then(|shared| shared.quantized_of(item.seq)),
                None => self.indexes.deep_vectors().quantized_of(item.seq),
            };
            let vector = vector.ok_or_else(|| {
                ProjectionError::CorruptSnapshot(format!("the deep vector of seq {} is missing", item.seq))
            })?;
            records.push((item.seq, vector.scale, vector.values, vector.code));
        }
        Ok(records)
    }

    /// One chunk's bytes, but the graph's: its records in sections of about
    /// `section_bytes`.
    fn chunk(&self, part: SnapshotPart, section_bytes: usize) -> Result<Vec<u8>, ProjectionError> {
        let mut body = Vec::new();
        match part {
            SnapshotPart::Items(index) => {
                let mut records = Vec::new();
                let mut bytes = 0;
                for item in self.items.range(SnapshotPart::seqs(index)) {
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
                for item in self.items.range(SnapshotPart::seqs(index)) {
                    if item.state == ItemState::Purged {
                        continue;
                    }
                    let vector = match item.text.shared_entry() {
                        Some(_) => shared.quantized_of(item.seq),
                        None => self.indexes.vectors().quantized_of(item.seq),
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
                drop(shared);
                let deep = self.deep_records(index)?;
                if let Some(deep_dimensions) = self.config.deep_embedder.as_ref().map(|deep| deep.dimensions()) {
                    let per_section = (section_bytes / (64 + deep_dimensions + deep_dimensions / 8)).max(1);
                    for section in deep.chunks(per_section) {
                        append_section(&mut body, "deep vectors", &MemoryChunk::DeepVectors(section.to_vec()))?;
                    }
                }
            }
            SnapshotPart::Seen(index) => {
                let range = SnapshotPart::seqs(index);
                let seen_order = self.items.seen_order();
                let start = seen_order.partition_point(|(seq, _)| *seq < range.start);
                let end = seen_order.partition_point(|(seq, _)| *seq < range.end);
                let seen: Vec<(u128, u64, u64)> = seen_order[start..end]
                    .iter()
                    .map(|(seq, id)| (id.0, *seq, self.items.seen(id).map_or(0, |seen| seen.fingerprint)))
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
}
