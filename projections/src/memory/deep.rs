//! The deep tier of a memory: vectors of a stronger model than the write
//! path's, recorded on the log by the enricher (`embeddings_computed`) and
//! applied here like any other event. Replay applies the recorded vectors
//! and never embeds again.
//!
//! An item takes the first vector recorded for it by the memory's deep
//! model ([`MemoryConfig::deep_embedder`](super::MemoryConfig)); a later
//! one, one of another model, one for an item this memory does not hold,
//! one published by another agent than the item's author, and a shared
//! item's in a private event (which the other memories holding the item do
//! not see, so their first vector would be another) change nothing. A shared item's vector is kept once per swarm
//! ([`SharedContent`](crate::SharedContent)), its private items' here; each
//! memory counts an item enriched only once it applied the event itself,
//! so a memory behind the others answers as it would alone.

use mneme_events::{EmbeddingsComputed, Event, Scope};
use mneme_index::vector::QuantizedVector;

use super::AgentMemory;
use crate::item::{ItemState, MemoryItem};

impl AgentMemory {
    /// Applies an `embeddings_computed` event at `seq`; answers how many
    /// items took a vector from it.
    pub(super) fn apply_embeddings(&mut self, event: &Event, computed: &EmbeddingsComputed) -> usize {
        let Some(deep) = &self.config.deep_embedder else { return 0 };
        let dimensions = deep.dimensions();
        if computed.dimensions as usize != dimensions || !computed.is_of(deep.model_id()) {
            return 0;
        }
        let mut taken = 0;
        for vector in &computed.vectors {
            let Some(item) = self.items.by_id(&vector.event_id.to_string()) else { continue };
            if item.agent != event.agent || item.state == ItemState::Purged || self.indexes.has_deep(item.seq) {
                continue;
            }
            // A shared item's vector only from an event every memory that
            // holds it sees: the first one is then the same in all of them.
            let shared = item.text.is_shared();
            if shared && event.scope == Scope::Private {
                continue;
            }
            let seq = item.seq;
            let quantized = QuantizedVector { scale: vector.scale, values: vector.values.0.clone(), code: Vec::new() };
            if shared {
                self.config.shared.insert_deep(seq, dimensions, quantized);
                self.indexes.mark_deep_shared(seq);
            } else {
                self.indexes.add_deep_own(seq, quantized);
            }
            self.changes.item(seq);
            taken += 1;
        }
        taken
    }

    /// How many of the memory's items (not purged) have a deep vector.
    pub fn deep_count(&self) -> u64 {
        self.indexes.deep_count()
    }

    /// The items that wait for a deep vector: not purged, with no vector
    /// of the deep model applied here; in log order, at most `limit`, from
    /// seq `after` on. Empty without a deep model.
    pub fn awaiting_deep(&self, after: u64, limit: usize) -> Vec<&MemoryItem> {
        if self.config.deep_embedder.is_none() {
            return Vec::new();
        }
        let mut waiting = self.items.held() - self.indexes.deep_applied();
        waiting.remove_range(..=after);
        waiting.iter().take(limit).filter_map(|seq| self.items.get(seq)).collect()
    }

    /// How many items wait for a deep vector: (its own private ones, the
    /// swarm's shared ones it holds).
    pub fn deep_backlog_by_scope(&self) -> (u64, u64) {
        if self.config.deep_embedder.is_none() {
            return (0, 0);
        }
        let waiting = self.items.held() - self.indexes.deep_applied();
        let shared =
            waiting.iter().filter(|seq| self.items.get(*seq).is_some_and(|item| item.text.is_shared())).count();
        (waiting.len() - shared as u64, shared as u64)
    }

    /// How many items wait for a deep vector (see [`AgentMemory::awaiting_deep`]).
    pub fn deep_backlog(&self) -> u64 {
        if self.config.deep_embedder.is_none() {
            return 0;
        }
        self.items.held_count().saturating_sub(self.indexes.deep_count())
    }
}

impl AgentMemory {
    /// Hashes the deep model, and each item's deep vector in seq order.
    pub(super) fn hash_deep(&self, hasher: &mut crate::digest::ContentHasher) {
        hasher.text(self.config.deep_model_id().unwrap_or(""));
        hasher.number(self.indexes.deep_count());
        let shared = self.shared_deep_vectors();
        for seq in self.indexes.deep_applied() {
            let vector = self
                .indexes
                .deep_vectors()
                .quantized_of(seq)
                .or_else(|| shared.as_ref().and_then(|shared| shared.quantized_of(seq)));
            hasher.number(seq);
            if let Some(vector) = vector {
                hasher.bytes(&vector.scale.to_le_bytes());
                hasher.bytes(&vector.values.iter().map(|value| *value as u8).collect::<Vec<u8>>());
            }
        }
    }
}
