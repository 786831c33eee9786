//! What the memories of a swarm hold once for all of them.
//!
//! A shared (or system) event enters every agent's memory. Its text, its
//! BM25 document and its vector are the same in each (the other agents read
//! it as `(from author) …`, the author without that prefix), so the swarm
//! keeps them once, in [`SharedContent`], and each memory that holds the
//! item points at the [`SharedEntry`]: the text is embedded once, indexed
//! once and kept in RAM once, however many agents see it. What differs
//! between memories stays in each memory: the item's state, pins, usage
//! counts and provenance, the BM25 statistics (each memory counts the
//! documents it holds, so its scores are what they would be alone), the
//! fact graph and the phases.
//!
//! An entry lives while a memory holds it: memories take it when they apply
//! the event ([`SharedContent::acquire`]) or restore it from a snapshot,
//! and give it back when they purge the item or are dropped
//! ([`SharedContent::release`]). The last one to give it back takes its
//! text, document and vector out of the swarm's indexes. Which memory
//! builds an entry, and when, changes nothing a memory answers: an entry is
//! a function of its event, and each memory reads only the entries it
//! holds.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};

use crate::error::ProjectionError;
use crate::graph::{SwarmGraph, TouchedEdge};
use crate::item::SharedEntry;
use mneme_index::vector::QuantizedVector;
use mneme_index::{AnnPolicy, IndexError, VectorSet};
use mneme_index::{TermCounts, TextIndex};

/// The text, BM25 document and vector of every shared event some memory
/// of the swarm holds.
pub struct SharedContent {
    text_index: Arc<TextIndex>,
    /// The owner number of the shared documents in `text_index`.
    owner: u64,
    dimensions: usize,
    entries: Mutex<HashMap<u64, Slot>>,
    vectors: RwLock<VectorSet>,
    /// The deep vectors of shared items, as the first memory to apply
    /// their `embeddings_computed` event took them; `None` until one did.
    /// A memory reads only those of items it took a deep vector for.
    deep: RwLock<Option<VectorSet>>,
    /// The memories of the swarm alive now (see [`MemoryRegistration`]).
    memories: AtomicUsize,
    /// What the shared events say, extracted once (see [`SwarmGraph`]).
    /// `parking_lot`'s, read recursively: a query reads it in nested
    /// calls, and std's lock would block a nested read behind a waiting
    /// writer (another memory applying a shared event).
    graph: parking_lot::RwLock<SwarmGraph>,
    /// Whether the swarm graph was restored (or found missing) yet: the
    /// first memory to restore does it, before any memory reads it.
    graph_restored: Mutex<bool>,
    /// Whether the swarm's vector graphs were restored (or tried) yet.
    vector_graphs_restored: Mutex<bool>,
    /// One save of the swarm graph at a time.
    graph_saving: Mutex<()>,
    /// Every agent that had a memory here, with the checkpoint of its last
    /// stored snapshot (0: none): what erased events touched is kept while
    /// one of them may still apply them (see `SwarmGraph::release_retained`).
    saved: Mutex<BTreeMap<String, u64>>,
}

/// Counts a memory among the swarm's while it lives: an entry keeps its
/// term counts only while a memory may still need them.
pub(crate) struct MemoryRegistration(Arc<SharedContent>);

impl Drop for MemoryRegistration {
    fn drop(&mut self) {
        self.0.memories.fetch_sub(1, Ordering::Relaxed);
    }
}

struct Slot {
    entry: Arc<SharedEntry>,
    /// Memories holding the entry.
    holders: usize,
}

impl std::fmt::Debug for SharedContent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedContent").field("entries", &self.lock_entries().len()).finish_non_exhaustive()
    }
}

impl SharedContent {
    /// Shared content for the memories of one swarm, whose vectors have
    /// `dimensions` dimensions, indexed in `text_index`.
    pub fn new(text_index: Arc<TextIndex>, dimensions: usize) -> Arc<SharedContent> {
        SharedContent::with_vector_graph(text_index, dimensions, AnnPolicy::default())
    }

    /// [`SharedContent::new`], with the shared vectors' graph started and
    /// searched as `policy` says.
    pub fn with_vector_graph(text_index: Arc<TextIndex>, dimensions: usize, policy: AnnPolicy) -> Arc<SharedContent> {
        let owner = text_index.shared_owner();
        Arc::new(SharedContent {
            text_index,
            owner,
            dimensions,
            entries: Mutex::new(HashMap::new()),
            vectors: RwLock::new(VectorSet::with_policy(dimensions, policy)),
            deep: RwLock::new(None),
            memories: AtomicUsize::new(0),
            graph: parking_lot::RwLock::new(SwarmGraph::new()),
            graph_restored: Mutex::new(false),
            vector_graphs_restored: Mutex::new(false),
            graph_saving: Mutex::new(()),
            saved: Mutex::new(BTreeMap::new()),
        })
    }

    /// Restores the swarm graph with `load` unless it was done already;
    /// `load` answers `None` when there is no usable snapshot of it (the
    /// graph is then built again by the memories from the log). A graph
    /// that has applied events already is kept.
    pub fn restore_graph_once(&self, load: impl FnOnce() -> Option<SwarmGraph>) {
        let mut restored = self.graph_restored.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if *restored {
            return;
        }
        *restored = true;
        if self.graph().through() > 0 {
            return;
        }
        if let Some(graph) = load() {
            *self.graph_mut() = graph;
        }
    }

    /// `agent`'s memory stored a snapshot at `checkpoint` (with the swarm
    /// graph covering it).
    pub fn note_saved(&self, agent: &str, checkpoint: u64) {
        let floor = {
            let mut saved = self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            let entry = saved.entry(agent.to_string()).or_insert(0);
            *entry = (*entry).max(checkpoint);
            saved.values().copied().min().unwrap_or(0)
        };
        self.graph_mut().release_retained(floor);
    }

    /// The lowest checkpoint any memory could restart from, counting
    /// `agent`'s as `checkpoint` (its snapshot about to be stored).
    pub(crate) fn retain_floor(&self, agent: &str, checkpoint: u64) -> u64 {
        let saved = self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        saved.iter().map(|(other, seq)| if other == agent { checkpoint } else { *seq }).min().unwrap_or(checkpoint)
    }

    /// Takes over `graph` if it covers more of the log than the swarm's
    /// (a memory restored from one body that carries its swarm graph).
    pub(crate) fn adopt_graph(&self, graph: SwarmGraph) {
        let mut current = self.graph_mut();
        if graph.covers() > current.covers() {
            *current = graph;
        }
    }

    /// Saves the swarm graph with `save` (answering the bytes written) if
    /// it changed or does not cover
    /// `covers` yet (the checkpoint of the memory about to save its own
    /// snapshot, which must never be ahead of the graph's). The delta is
    /// taken and marked saved under the graph's lock, so that nothing a
    /// memory applies meanwhile is lost; if `save` fails, the next save
    /// writes everything.
    pub fn save_graph<E>(
        &self,
        agent: &str,
        covers: u64,
        mut save: impl FnMut(&crate::chunks::SnapshotDelta) -> Result<usize, E>,
    ) -> Result<usize, E>
    where
        E: From<ProjectionError>,
    {
        let _one_at_a_time = self.graph_saving.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let floor = self.retain_floor(agent, covers);
        let take = |everything: bool| -> Result<Option<crate::chunks::SnapshotDelta>, ProjectionError> {
            let mut graph = self.graph_mut();
            if !everything && graph.saved_through(covers) {
                return Ok(None);
            }
            let delta = graph.delta(everything, covers, floor)?;
            graph.mark_saved(covers);
            Ok(Some(delta))
        };
        let Some(delta) = take(false)? else { return Ok(0) };
        // The store may lack chunks this graph thinks it saved (it was
        // restored from elsewhere, or a save failed): then all of it.
        if let Ok(written) = save(&delta) {
            return Ok(written);
        }
        let everything = take(true)?.expect("a whole snapshot is always taken");
        save(&everything).inspect_err(|_| self.graph_mut().mark_unsaved())
    }

    /// The swarm's graph of shared events, to read.
    pub fn graph(&self) -> parking_lot::RwLockReadGuard<'_, SwarmGraph> {
        self.graph.read_recursive()
    }

    /// The swarm's graph, to restore or save.
    pub(crate) fn graph_mut(&self) -> parking_lot::RwLockWriteGuard<'_, SwarmGraph> {
        self.graph.write()
    }

    /// Drives the record at `seq` into the swarm's graph if nothing did yet
    /// (see [`SwarmGraph::drive`]): the swarm's feed calls this for every
    /// record it reads, in log order, before it routes them.
    ///
    /// A panic in extraction (a bug: every event shape extracts without
    /// one, see the hostile-events property test) is contained, and false
    /// answered for the caller to report; the graph keeps what the event
    /// had changed until then.
    pub fn drive_graph_with(
        &self,
        seq: u64,
        event: &mneme_events::Event,
        admitted: Option<&std::collections::BTreeSet<String>>,
    ) -> bool {
        if seq <= self.graph().covers() {
            return true;
        }
        let drive = std::panic::AssertUnwindSafe(|| self.graph_mut().drive(seq, event, admitted));
        std::panic::catch_unwind(drive).is_ok()
    }

    /// The log held nothing more for the swarm's graph up to `seq`.
    pub fn graph_covers(&self, seq: u64) {
        self.graph_mut().advance_to(seq);
    }

    /// [`SharedContent::drive_graph_with`], answering what the event
    /// touched there.
    pub(crate) fn drive_graph(
        &self,
        seq: u64,
        event: &mneme_events::Event,
        admitted: Option<&std::collections::BTreeSet<String>>,
    ) -> Vec<TouchedEdge> {
        {
            let graph = self.graph();
            if seq <= graph.covers() {
                return graph.touched_at(seq);
            }
        }
        let mut graph = self.graph_mut();
        graph.drive(seq, event, admitted);
        graph.touched_at(seq)
    }

    /// Counts a new memory of the swarm until the registration is dropped.
    pub(crate) fn register(self: &Arc<Self>, agent: &str) -> MemoryRegistration {
        self.memories.fetch_add(1, Ordering::Relaxed);
        self.saved.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).entry(agent.to_string()).or_insert(0);
        MemoryRegistration(self.clone())
    }

    pub fn text_index(&self) -> &Arc<TextIndex> {
        &self.text_index
    }

    /// The owner number of shared documents in the text index.
    pub(crate) fn owner(&self) -> u64 {
        self.owner
    }

    pub(crate) fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// Hands the entry's share of BM25's statistics to `count`: counted
    /// from its text unless kept, and kept only while some memory of the
    /// swarm does not hold the entry yet (one that does not may still
    /// need them). They are a function of the text, so counting them
    /// again gives the same.
    pub(crate) fn count_terms(&self, seq: u64, entry: &SharedEntry, count: impl FnOnce(&TermCounts)) {
        let mut kept = entry.terms.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let terms = kept.get_or_insert_with(|| Arc::new(self.text_index.term_counts(&entry.text))).clone();
        let held_by_all =
            self.lock_entries().get(&seq).is_some_and(|slot| slot.holders >= self.memories.load(Ordering::Relaxed));
        if held_by_all {
            *kept = None;
        }
        drop(kept);
        count(&terms);
    }

    /// How many shared entries some memory holds.
    pub fn len(&self) -> usize {
        self.lock_entries().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock_entries(&self) -> MutexGuard<'_, HashMap<u64, Slot>> {
        // The map is consistent between statements; a panic elsewhere
        // while it was held leaves it usable.
        self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    pub(crate) fn vectors(&self) -> RwLockReadGuard<'_, VectorSet> {
        self.vectors.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// When the swarm's vector sets (and its memories' own) start a graph,
    /// and how widely they search it.
    pub fn vector_graph(&self) -> AnnPolicy {
        self.vectors().policy()
    }

    /// Saves the swarm's graphs (of shared items' vectors, static and
    /// deep) that grew enough, as `~shared` and `~shared.deep` (no agent
    /// can be called so).
    pub(crate) fn save_vector_graphs(&self, directory: &std::path::Path) -> Result<usize, IndexError> {
        let vectors = self.vectors();
        let deep = self.deep_vectors();
        let mut sets = vec![("~shared".to_string(), &*vectors)];
        sets.extend(deep.as_ref().map(|deep| ("~shared.deep".to_string(), deep)));
        crate::memory::save_graphs(directory, sets)
    }

    /// Starts the swarm's (empty) vector sets from their saved graphs,
    /// once, before the first memory restores into them; a set that holds
    /// vectors already keeps building its own.
    pub(crate) fn restore_vector_graphs_once(&self, directory: &std::path::Path, deep_dimensions: Option<usize>) {
        let mut attempted = self.vector_graphs_restored.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if std::mem::replace(&mut *attempted, true) {
            return;
        }
        let mut vectors = self.vectors.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if vectors.is_empty() {
            crate::memory::restore_graph(directory, "~shared", &mut vectors);
        }
        drop(vectors);
        let mut deep = self.deep.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let (None, Some(dimensions)) = (deep.as_ref(), deep_dimensions) {
            let mut set = VectorSet::with_policy(dimensions, self.vector_graph());
            crate::memory::restore_graph(directory, "~shared.deep", &mut set);
            if set.graph().is_some() {
                *deep = Some(set);
            }
        }
    }

    /// How many vectors the swarm's graphs hold (of shared items, static
    /// and deep).
    pub(crate) fn vectors_in_graphs(&self) -> usize {
        let deep = self.deep_vectors().as_ref().and_then(VectorSet::graph_len).unwrap_or(0);
        self.vectors().graph_len().unwrap_or(0) + deep
    }

    /// See [`crate::AgentMemory::settle_vector_graphs`].
    pub(crate) fn settle_vector_graphs(&self) {
        self.vectors.write().unwrap_or_else(|poisoned| poisoned.into_inner()).settle();
        if let Some(deep) = self.deep.write().unwrap_or_else(|poisoned| poisoned.into_inner()).as_mut() {
            deep.settle();
        }
    }

    /// The deep vectors of shared items (see `memory/deep.rs`).
    pub(crate) fn deep_vectors(&self) -> RwLockReadGuard<'_, Option<VectorSet>> {
        self.deep.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The deep vector of the shared item at `seq`, unless one is held:
    /// every memory takes the same one, the first its log records.
    pub(crate) fn insert_deep(&self, seq: u64, dimensions: usize, vector: QuantizedVector) {
        let mut deep = self.deep.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        let policy = self.vector_graph();
        let set = deep.get_or_insert_with(|| VectorSet::with_policy(dimensions, policy));
        if set.dimensions() == dimensions {
            set.insert(seq, vector);
        }
    }

    /// The entry of the shared event at `seq`, for one more memory. Built
    /// on first use: `text` gives the text as other agents read it and the
    /// bytes of its author prefix, `embed` its vector.
    pub(crate) fn acquire(
        &self,
        seq: u64,
        kind: &str,
        text: impl FnOnce() -> (String, usize),
        embed: impl FnOnce(&str) -> QuantizedVector,
    ) -> Result<Arc<SharedEntry>, ProjectionError> {
        if let Some(entry) = self.hold_existing(seq) {
            return Ok(entry);
        }
        let (text, author_prefix) = text();
        let vector = embed(&text);
        self.insert(seq, kind, text, author_prefix, vector)
    }

    /// The entry of the shared event at `seq`, for a memory restored from
    /// its snapshot, which kept the text and vector.
    pub(crate) fn acquire_restored(
        &self,
        seq: u64,
        kind: &str,
        text: String,
        author_prefix: usize,
        vector: QuantizedVector,
    ) -> Result<Arc<SharedEntry>, ProjectionError> {
        self.acquire(seq, kind, move || (text, author_prefix), move |_| vector)
    }

    fn hold_existing(&self, seq: u64) -> Option<Arc<SharedEntry>> {
        let mut entries = self.lock_entries();
        let slot = entries.get_mut(&seq)?;
        slot.holders += 1;
        Some(slot.entry.clone())
    }

    fn insert(
        &self,
        seq: u64,
        kind: &str,
        text: String,
        author_prefix: usize,
        vector: QuantizedVector,
    ) -> Result<Arc<SharedEntry>, ProjectionError> {
        let mut entries = self.lock_entries();
        // Another memory may have built it meanwhile.
        if let Some(slot) = entries.get_mut(&seq) {
            slot.holders += 1;
            return Ok(slot.entry.clone());
        }
        // Indexed as the other agents read it: who said it is part of what
        // a question may name (`eval` loses fixed-by recall without it).
        // The last process may have left the document in the index.
        let change = if self.text_index.take_shared_document(seq) {
            0
        } else {
            self.text_index.add_document(self.owner, seq, kind, &text)?
        };
        self.vectors.write().unwrap_or_else(|poisoned| poisoned.into_inner()).insert(seq, vector);
        let entry = Arc::new(SharedEntry { text, author_prefix, terms: Mutex::new(None), change });
        entries.insert(seq, Slot { entry: entry.clone(), holders: 1 });
        Ok(entry)
    }

    /// One memory no longer holds the entry at `seq` (it purged the item,
    /// or the memory is gone). The last holder takes the entry out.
    pub(crate) fn release(&self, seq: u64) -> Result<(), ProjectionError> {
        let mut entries = self.lock_entries();
        let Some(slot) = entries.get_mut(&seq) else { return Ok(()) };
        slot.holders -= 1;
        if slot.holders > 0 {
            return Ok(());
        }
        entries.remove(&seq);
        self.text_index.delete_shared_document(seq);
        self.vectors.write().unwrap_or_else(|poisoned| poisoned.into_inner()).drop_vector(seq);
        if let Some(deep) = self.deep.write().unwrap_or_else(|poisoned| poisoned.into_inner()).as_mut() {
            deep.drop_vector(seq);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_index::embed::{Embedder, HashedNgramEmbedder};

    fn content() -> (Arc<SharedContent>, HashedNgramEmbedder) {
        let embedder = HashedNgramEmbedder::default();
        (SharedContent::new(TextIndex::new().unwrap(), embedder.dimensions()), embedder)
    }

    fn take(content: &SharedContent, embedder: &HashedNgramEmbedder, seq: u64, built: &mut usize) -> Arc<SharedEntry> {
        content
            .acquire(
                seq,
                "message_recorded",
                || {
                    *built += 1;
                    (format!("(from coder) shared text {seq}"), "(from coder) ".len())
                },
                |text| QuantizedVector::of(&embedder.embed(text)),
            )
            .unwrap()
    }

    #[test]
    fn an_entry_is_built_once_and_leaves_with_its_last_holder() {
        let (content, embedder) = content();
        let mut built = 0;
        let first = take(&content, &embedder, 7, &mut built);
        let second = take(&content, &embedder, 7, &mut built);
        assert_eq!(built, 1);
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(&first.text[first.author_prefix..], "shared text 7");
        content.release(7).unwrap();
        assert_eq!(content.len(), 1);
        content.release(7).unwrap();
        assert!(content.is_empty());
        // Needed again (a memory catching up): built again.
        take(&content, &embedder, 7, &mut built);
        assert_eq!(built, 2);
        assert_eq!(content.vectors().len(), 1);
    }

    #[test]
    fn term_counts_are_kept_only_while_a_memory_does_not_hold_the_entry() {
        let (content, embedder) = content();
        let kept = |entry: &SharedEntry| entry.terms.lock().unwrap().is_some();
        let mut counted = Vec::new();
        let (coder, reviewer) = (content.register("coder"), content.register("reviewer"));
        let mut built = 0;
        let entry = take(&content, &embedder, 7, &mut built);
        content.count_terms(7, &entry, |terms| counted.push(terms.clone()));
        assert!(kept(&entry), "the reviewer has yet to count them");
        take(&content, &embedder, 7, &mut built);
        content.count_terms(7, &entry, |terms| counted.push(terms.clone()));
        assert!(!kept(&entry), "every memory holds the entry");
        // A third memory, or a rebuild, counts them again: the same.
        let planner = content.register("planner");
        content.count_terms(7, &entry, |terms| counted.push(terms.clone()));
        assert!(kept(&entry));
        assert!(counted.windows(2).all(|pair| pair[0] == pair[1]));
        drop((coder, reviewer, planner));
        assert_eq!(content.memories.load(Ordering::Relaxed), 0);
    }
}
