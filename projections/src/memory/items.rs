//! The items a memory holds, with the bookkeeping that answers for them:
//! which event ids were applied (the dedup key), which items are held
//! (not purged), which are hidden from searches, and the seqs of each kind.
//!
//! Everything but the items themselves and the applied ids is derived from
//! them, kept in step here and rebuilt on restore.

use std::collections::{BTreeMap, HashMap};
use std::ops::RangeBounds;

use mneme_events::EventId;

use crate::item::{ItemState, MemoryItem};

/// An event id this memory applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeenId {
    pub(crate) seq: u64,
    /// [`content_fingerprint`](super::content_fingerprint) of the event
    /// applied under the id.
    pub(crate) fingerprint: u64,
}

/// A memory's items, by the seq of the event that created each.
#[derive(Default)]
pub struct Items {
    by_seq: BTreeMap<u64, MemoryItem>,
    /// Every event id applied, with its seq and its content's fingerprint:
    /// ids are the dedup key, and the log only deduplicates within its
    /// window. The fingerprint tells a repeat of the event from a different
    /// event under the same id.
    seen_ids: HashMap<EventId, SeenId>,
    /// The ids of `seen_ids` by seq, in the order they were applied (seq
    /// order): snapshots keep them in chunks by seq.
    seen_order: Vec<(u64, EventId)>,
    /// The seqs of the items not purged. A search asks it of every vector
    /// and BM25 candidate, a thousand per query: a lookup in `by_seq` cost
    /// a cache miss per level of the tree.
    held: roaring::RoaringTreemap,
    /// Item seqs by kind, ascending. Context finds decisions and
    /// preferences without a scan.
    seqs_by_kind: HashMap<&'static str, Vec<u64>>,
    /// Items still in the BM25 and vector indexes that no search may
    /// return (forgotten, merged); searches over-fetch by this.
    hidden: usize,
}

impl Items {
    pub fn len(&self) -> usize {
        self.by_seq.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_seq.is_empty()
    }

    /// The item created by the event at `seq`.
    pub fn get(&self, seq: u64) -> Option<&MemoryItem> {
        self.by_seq.get(&seq)
    }

    /// The item whose id is exactly `item_id`.
    pub fn by_id(&self, item_id: &str) -> Option<&MemoryItem> {
        self.seq_of(item_id).and_then(|seq| self.by_seq.get(&seq))
    }

    /// The seq of the item whose id is exactly `item_id`. An item's id is
    /// its creating event's, so the applied ids find it: no map of item ids
    /// of its own (two copies of every id were 70 bytes an item).
    pub fn seq_of(&self, item_id: &str) -> Option<u64> {
        let id: EventId = item_id.parse().ok()?;
        let seq = self.seen_ids.get(&id)?.seq;
        self.by_seq.get(&seq).is_some_and(|item| item.item_id == item_id).then_some(seq)
    }

    /// Items in log order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &MemoryItem> {
        self.by_seq.values()
    }

    /// The items created in `seqs`, in log order.
    pub fn range(&self, seqs: impl RangeBounds<u64>) -> impl DoubleEndedIterator<Item = &MemoryItem> {
        self.by_seq.range(seqs).map(|(_, item)| item)
    }

    /// The newest item.
    pub fn last(&self) -> Option<&MemoryItem> {
        self.by_seq.values().next_back()
    }

    /// Whether this memory holds the item's text: an item not purged
    /// (shared documents and vectors in the swarm's indexes may be of
    /// items it has not reached, or has purged).
    pub fn holds(&self, seq: u64) -> bool {
        debug_assert_eq!(
            self.held.contains(seq),
            self.by_seq.get(&seq).is_some_and(|item| item.state != ItemState::Purged),
            "`held` is the seqs of the items not purged"
        );
        self.held.contains(seq)
    }

    /// How many items are not purged.
    pub fn held_count(&self) -> u64 {
        self.held.len()
    }

    /// The seqs of the items not purged.
    pub(crate) fn held(&self) -> &roaring::RoaringTreemap {
        &self.held
    }

    /// How many items the indexes still hold that no search may return.
    pub fn hidden(&self) -> usize {
        self.hidden
    }

    /// The seqs of the items of `kind`, ascending.
    pub fn seqs_of_kind(&self, kind: &str) -> &[u64] {
        self.seqs_by_kind.get(kind).map_or(&[], Vec::as_slice)
    }

    /// Where and as what the event `id` was applied.
    pub(crate) fn seen(&self, id: &EventId) -> Option<SeenId> {
        self.seen_ids.get(id).copied()
    }

    /// The ids applied, by seq.
    pub(crate) fn seen_order(&self) -> &[(u64, EventId)] {
        &self.seen_order
    }

    /// Every id applied, in no order.
    pub(crate) fn seen_ids(&self) -> impl Iterator<Item = (EventId, SeenId)> + '_ {
        self.seen_ids.iter().map(|(id, seen)| (*id, *seen))
    }

    /// Records the event `id` as applied at `seq`; ids come in seq order.
    pub(super) fn see(&mut self, id: EventId, seen: SeenId) {
        self.seen_ids.insert(id, seen);
        self.seen_order.push((seen.seq, id));
    }

    /// Adds an item, in seq order (a new one, or one restored).
    pub(super) fn insert(&mut self, item: MemoryItem) {
        self.seqs_by_kind.entry(item.kind).or_default().push(item.seq);
        if item.state != ItemState::Purged {
            self.held.insert(item.seq);
            if !item.state.is_searchable() {
                self.hidden += 1;
            }
        }
        self.by_seq.insert(item.seq, item);
    }

    /// The item at `seq`, to change: through [`Items::set_state`] when its
    /// state changes.
    pub(super) fn get_mut(&mut self, seq: u64) -> Option<&mut MemoryItem> {
        self.by_seq.get_mut(&seq)
    }

    /// Changes the state of the item at `seq`, keeping what is held and
    /// hidden in step.
    pub(super) fn set_state(&mut self, seq: u64, state: ItemState) {
        let Some(item) = self.by_seq.get_mut(&seq) else { return };
        let was = item.state;
        if was == state || was == ItemState::Purged {
            return;
        }
        item.state = state;
        let was_hidden = !was.is_searchable();
        if state == ItemState::Purged {
            self.held.remove(seq);
            if was_hidden {
                self.hidden -= 1;
            }
            // A purged item leaves the indexes (see `AgentMemory::purge`).
            return;
        }
        match (was_hidden, !state.is_searchable()) {
            (false, true) => self.hidden += 1,
            (true, false) => self.hidden -= 1,
            _ => {}
        }
    }
}

impl std::ops::Index<u64> for Items {
    type Output = MemoryItem;

    fn index(&self, seq: u64) -> &MemoryItem {
        &self.by_seq[&seq]
    }
}

impl<'a> IntoIterator for &'a Items {
    type Item = &'a MemoryItem;
    type IntoIter = std::collections::btree_map::Values<'a, u64, MemoryItem>;

    fn into_iter(self) -> Self::IntoIter {
        self.by_seq.values()
    }
}
