//! Events that change items this memory already holds rather than create
//! one: forgets, archives, decays, citations, retrievals, pins, merges,
//! contradictions detected and resolved, and purges.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{ContradictionResolution, ContradictionResolved, Event, EventKind, MemoryPurged, Scope};

use super::{AgentMemory, MemoryGraph, ResolvedContradiction};
use crate::error::ProjectionError;
use crate::graph::Holding;
use crate::item::{ItemState, MemoryItem, ProvenanceRef};
use crate::phases::PurgedEvent;

/// What a purge erased from a memory (see [`AgentMemory::erased_by`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErasedByPurge {
    /// The erased events' seqs, ascending.
    pub seqs: Vec<u64>,
    /// The phases that held one of them.
    pub phases: Vec<String>,
}

/// Whether a memory holds what an item id names, for a purge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purgeable {
    Held,
    /// A purge erased it already.
    Erased,
}

impl AgentMemory {
    /// Events that change existing items rather than create one. An event
    /// naming an item this memory does not hold changes nothing: the item
    /// may belong to another agent; the event itself stays on the log.
    pub(super) fn apply_change(&mut self, provenance: ProvenanceRef, event: &Event) -> Result<(), ProjectionError> {
        match &event.kind {
            EventKind::MemoryForgotten(forgotten) => {
                self.change_state(&forgotten.item_id, provenance, ItemState::Forgotten)
            }
            EventKind::MemoryArchived(archived) => {
                self.change_state(&archived.item_id, provenance, ItemState::Archived)
            }
            EventKind::MemoryDecayed(decayed) => self.change_state(&decayed.item_id, provenance, ItemState::Decayed),
            EventKind::MemoryCited(cited) => {
                if let Some(item) = self.item_mut(&cited.item_id) {
                    item.citations = item.citations.saturating_add(1);
                    item.provenance.push(provenance);
                    // Used again: a demoted memory is back in play.
                    if item.state == ItemState::Decayed {
                        item.state = ItemState::Active;
                    }
                }
            }
            EventKind::MemoryIgnored(ignored) => {
                if let Some(item) = self.item_mut(&ignored.item_id) {
                    item.ignored = item.ignored.saturating_add(1);
                    item.provenance.push(provenance);
                }
            }
            EventKind::MemoriesRetrieved(retrieved) => {
                for count in &retrieved.counts {
                    if let Some(item) = self.item_mut(&count.item_id) {
                        item.retrievals = item.retrievals.saturating_add(count.count);
                        item.provenance.push(provenance);
                    }
                }
            }
            EventKind::MemoryPinned(pinned) => self.set_pinned(&pinned.item_id, provenance, true),
            EventKind::MemoryUnpinned(unpinned) => self.set_pinned(&unpinned.item_id, provenance, false),
            EventKind::MemoriesMerged(merged) => self.merge(&merged.survivor, &merged.merged, provenance),
            EventKind::ContradictionDetected(detected) => self.contradictions.detected(detected, provenance),
            EventKind::ContradictionResolved(resolved) => self.resolve_contradiction(resolved, provenance, event),
            EventKind::MemoryPurged(purged) => {
                let author = purged.of_agent.as_deref().unwrap_or(&event.agent).to_string();
                self.purge(purged, &author, provenance)?
            }
            // Compressed phases are the phase tracker's and links the
            // graph's; both were applied before this.
            _ => {}
        }
        Ok(())
    }

    fn item_mut(&mut self, item_id: &str) -> Option<&mut MemoryItem> {
        let seq = self.items.seq_of(item_id)?;
        self.changes.item(seq);
        self.items.get_mut(seq)
    }

    fn change_state(&mut self, item_id: &str, provenance: ProvenanceRef, new_state: ItemState) {
        let Some(item) = self.item_mut(item_id) else { return };
        item.provenance.push(provenance);
        // Forgetting, merging and purging are final; archiving a forgotten
        // item does not revive it.
        if item.state.is_final() || item.state == new_state {
            return;
        }
        // A pin holds whoever asks: a verdict scanned before the pin was
        // applied, or an agent's own forget, changes nothing until the item
        // is unpinned (a purge is not a state change and erases anyway).
        if item.pinned && new_state.removes_from_context() {
            return;
        }
        let seq = item.seq;
        // Hidden items stay in the BM25 and vector indexes and are filtered
        // out of results: a tantivy delete keeps counting in term statistics
        // until segments merge, so scores would depend on commit history and
        // replay would rank differently from live.
        self.items.set_state(seq, new_state);
        self.working.remove(seq);
    }

    fn set_pinned(&mut self, item_id: &str, provenance: ProvenanceRef, pinned: bool) {
        if let Some(item) = self.item_mut(item_id) {
            item.pinned = pinned;
            item.provenance.push(provenance);
        }
    }

    /// `memories_merged`: the merged items leave every query and the
    /// survivor answers for them, with the union of their provenance. A
    /// survivor this memory does not hold, or one no longer searchable,
    /// merges nothing: the merged items would vanish without an heir.
    fn merge(&mut self, survivor_id: &str, merged_ids: &[String], provenance: ProvenanceRef) {
        let Some(survivor_seq) = self.items.seq_of(survivor_id) else { return };
        if !self.items[survivor_seq].state.is_searchable() {
            return;
        }
        let mut inherited: Vec<ProvenanceRef> = Vec::new();
        for merged_id in merged_ids {
            let Some(seq) = self.items.seq_of(merged_id) else { continue };
            let merged = &self.items[seq];
            if seq == survivor_seq || merged.state.is_final() || merged.pinned {
                continue;
            }
            inherited.extend(self.items[seq].provenance.iter().copied());
            self.change_state(merged_id, provenance, ItemState::Merged);
        }
        self.changes.item(survivor_seq);
        let survivor = self.items.get_mut(survivor_seq).expect("the survivor's seq was just looked up");
        // The creating event stays first; what it inherits joins the events
        // that changed it, in log order.
        let created = survivor.creating_event();
        survivor.provenance.extend(inherited);
        survivor.provenance.push(provenance);
        survivor.provenance.retain(|reference| *reference != created);
        survivor.provenance.sort_unstable();
        survivor.provenance.dedup();
        survivor.provenance.insert(0, created);
    }

    /// `contradiction_resolved`: the contradiction is settled, and the
    /// losing side's fact or decision stops being valid at the resolution's
    /// time. `merged` keeps the newer side (`b`) and merges the older into
    /// it; `both_valid` closes nothing.
    fn resolve_contradiction(&mut self, resolved: &ContradictionResolved, provenance: ProvenanceRef, event: &Event) {
        let Some(open) = self.contradictions.take_open(&resolved.contradiction_id) else { return };
        let losers: Vec<&str> = match resolved.resolution {
            ContradictionResolution::AWins => vec![open.b.as_str()],
            ContradictionResolution::BWins | ContradictionResolution::Merged => vec![open.a.as_str()],
            ContradictionResolution::BothValid => Vec::new(),
        };
        for loser in losers {
            let Some(item) = self.item(loser) else { continue };
            let created = item.creating_event();
            if self.config.shared.graph().graph().has_event(created.seq) && item.scope != Scope::Private {
                let shared = self.config.shared.graph();
                let holding = Holding { through: self.checkpoint, unheld: &self.unheld_shared };
                self.graph.close_shared_asserted(shared.graph(), created, event.ts, provenance.seq, event, &|seq| {
                    holding.holds(seq)
                });
            } else {
                self.graph.close_asserted_by(created, event.ts, provenance.seq, event);
            }
            if let Some(item) = self.item_mut(loser) {
                item.provenance.push(provenance);
            }
        }
        if resolved.resolution == ContradictionResolution::Merged {
            self.merge(&open.b, std::slice::from_ref(&open.a), provenance);
        }
        self.contradictions.settled(ResolvedContradiction {
            contradiction_id: open.contradiction_id,
            a: open.a,
            b: open.b,
            resolution: resolved.resolution,
            provenance,
        });
    }

    /// `memory_purged`: erases the named items, every item with an event
    /// time before `before`, and the near duplicates merged into any of
    /// them (they said the same thing), from memory: item text, working
    /// tier, what the fact graph extracted from their events (see
    /// `FactGraph::redact`), phase notes and levels (see
    /// `PhaseTracker::redact`), the reasons of contradictions they are a
    /// side of, and the BM25 and vector indexes (rebuilt without them, so
    /// that no posting or embedding of the text survives, and so that a
    /// replay, which rebuilds them the same way, ranks the same). Snapshots
    /// written from now on hold none of it; the log still holds the events
    /// (docs/src/erasure.md).
    /// `author`: whose items `before` erases; another agent's items in this
    /// memory are theirs to erase, not this agent's.
    fn purge(&mut self, purged: &MemoryPurged, author: &str, provenance: ProvenanceRef) -> Result<(), ProjectionError> {
        let mut targets: Vec<u64> =
            purged.item_ids.iter().filter_map(|item_id| self.items.seq_of(item_id.trim())).collect();
        if let Some(before) = purged.before {
            targets
                .extend(self.items.iter().filter(|item| item.ts < before && item.agent == author).map(|item| item.seq));
        }
        let merged_into_targets: Vec<u64> = targets
            .iter()
            .flat_map(|seq| self.items[*seq].provenance.iter().map(|reference| reference.seq))
            .filter(|seq| self.items.get(*seq).is_some_and(|item| item.state == ItemState::Merged))
            .collect();
        targets.extend(merged_into_targets);
        targets.sort_unstable();
        targets.dedup();
        let mut erased: BTreeMap<u64, PurgedEvent> = BTreeMap::new();
        let mut erased_ids: BTreeSet<String> = BTreeSet::new();
        let mut released = Vec::new();
        for seq in targets {
            self.changes.item(seq);
            let item = self.items.get_mut(seq).expect("targets are seqs of items");
            item.provenance.push(provenance);
            if item.state == ItemState::Purged {
                continue;
            }
            self.items.set_state(seq, ItemState::Purged);
            let item = self.items.get_mut(seq).expect("targets are seqs of items");
            let text = std::mem::take(&mut item.text);
            item.pinned = false;
            if text.shared_entry().is_some() {
                // This memory no longer holds the swarm's copy: erased once
                // no memory does.
                drop(text);
                released.push(seq);
            }
            self.working.remove(seq);
            erased.insert(seq, PurgedEvent { kind: item.kind, task: item.correlation_id.clone() });
            erased_ids.insert(item.item_id.clone());
        }
        for seq in released {
            self.config.shared.release(seq)?;
        }
        // Core memory: the own updates named or reached, and what the
        // erased items made of its task and preferences.
        let named_ids: BTreeSet<mneme_events::EventId> =
            purged.item_ids.iter().filter_map(|item_id| item_id.trim().parse().ok()).collect();
        let own_before = purged.before.filter(|_| author == self.agent);
        let erased_items: BTreeSet<u64> = erased.keys().copied().collect();
        self.core.purge(&named_ids, own_before, &erased_items, provenance.seq);
        if !erased.is_empty() {
            self.handoffs.redact_received(&erased_items, &erased_ids);
            // What ended an erased item goes with it: the resolution that
            // made it lose closed its fact or decision in this graph, on a
            // copy when the item was shared, and the copy carries the
            // item's name. Whether the copy exists depends on whether the
            // swarm's graph still held the item when the resolution was
            // applied (another memory may have applied the purge first),
            // so it is erased either way.
            let mut graph_seqs: BTreeSet<u64> = erased.keys().copied().collect();
            graph_seqs.extend(self.contradictions.resolutions_that_ended(&erased_ids));
            self.graph.redact(&graph_seqs);
            let shared_graph = self.config.shared.graph();
            let shared_seqs: Vec<u64> =
                erased.keys().copied().filter(|seq| shared_graph.graph().has_event(*seq)).collect();
            drop(shared_graph);
            self.unheld_shared.extend(shared_seqs);
            let graph = MemoryGraph::of(&self.graph, &self.config.shared, self.checkpoint, &self.unheld_shared);
            self.phases.redact(&erased, &graph.view());
            self.handoffs.redact_sent(&erased_items, &graph.view());
            drop(graph);
            // Phase texts searched may quote what was erased.
            self.indexes.forget_phase_documents();
            self.contradictions.redact(&erased_ids);
            self.rebuild_indexes_without_purged()?;
        }
        Ok(())
    }

    /// What the purge at `purge_seq` erased from this memory, once it is
    /// applied: the seqs of the events (items' creating events, and own
    /// core memory updates) and the ids of the phases that held one. A
    /// purge that names items erased already names them again.
    pub fn erased_by(&self, purge_seq: u64) -> ErasedByPurge {
        let mut seqs: BTreeSet<u64> = self
            .items
            .iter()
            .filter(|item| {
                item.state == ItemState::Purged && item.provenance.iter().any(|reference| reference.seq == purge_seq)
            })
            .map(|item| item.seq)
            .collect();
        seqs.extend(self.core.updates().iter().filter(|update| update.erased_by == Some(purge_seq)).map(|u| u.seq));
        let phases = self
            .phases
            .phases()
            .iter()
            .filter(|phase| phase.event_seqs.iter().any(|seq| seqs.contains(seq)))
            .map(|phase| phase.phase_id.clone())
            .collect();
        ErasedByPurge { seqs: seqs.into_iter().collect(), phases }
    }

    /// Whether `item_id` names something a purge of this memory erases (an
    /// item, or one of the agent's own core memory updates), and if so
    /// whether a purge erased it already.
    pub fn purgeable(&self, item_id: &str) -> Option<Purgeable> {
        if let Some(item) = self.item(item_id) {
            return Some(if item.state == ItemState::Purged { Purgeable::Erased } else { Purgeable::Held });
        }
        let update = self.core.update(item_id.trim().parse().ok()?)?;
        Some(if update.erased_by.is_some() { Purgeable::Erased } else { Purgeable::Held })
    }

    /// Rebuilds the BM25 and vector indexes from every item not purged, in
    /// seq order: what a restore from snapshot builds, so live, restored and
    /// replayed memories rank alike.
    fn rebuild_indexes_without_purged(&mut self) -> Result<(), ProjectionError> {
        let mut bm25 = self.indexes.bm25().empty_like();
        for item in self.items.iter().filter(|item| item.state != ItemState::Purged) {
            match item.text.shared_entry() {
                Some(entry) => {
                    self.config.shared.count_terms(item.seq, entry, |terms| bm25.hold_shared(terms, entry.change, 1))
                }
                None => bm25.add(item.seq, item.kind, &item.text)?,
            }
        }
        bm25.commit()?;
        let items = &self.items;
        // Dropping the old view deletes its documents.
        self.indexes.rebuilt(bm25, |seq| items.get(seq).is_some_and(|item| item.state != ItemState::Purged));
        Ok(self.config.shared.text_index().erase_deleted()?)
    }
}
