//! Vectors by seq that may arrive in any order, searched as one set: the
//! swarm's shared vectors (memories restored or catching up take entries
//! older than the newest), a memory's private ones, and the deep vectors
//! an enricher records after their items, in the order it computed them.
//!
//! Below [`AnnPolicy::graph_from`] vectors a set is a tail scanned
//! exactly ([`VectorIndex`]). Past it, the set grows an HNSW graph
//! ([`AnnGraph`]) off the write path, on one of the process's few builder
//! threads (shared by every graph, see `workers`): the tail is
//! sealed into a batch every [`AnnPolicy::batch`] vectors, and the builder
//! inserts the batches' vectors in the order they were sealed. A batch is
//! scanned exactly until the builder has inserted all of it; a search asks
//! the graph, and scans the tail and the batches not inserted yet. Which
//! vectors go into which batch, and so the order of inserts and the graph,
//! is a function of the order of inserts and drops alone; only how far the
//! builder has got, at the time of a search, depends on time.
//!
//! ```text
//!   insert ──▶ tail ──seal──▶ batch ──builder worker──▶ graph
//!              (scanned)      (scanned until inserted)   (searched)
//! ```
//!
//! A graph cannot take a vector out: dropped vectors stay in it, and
//! searches leave them out.
//!
//! A graph saved with a snapshot ([`AnnGraph::save_named`]) is given back
//! to the empty set of a restored memory ([`VectorSet::restore_graph`])
//! before its vectors are inserted: those the graph holds join it without
//! being linked again, and [`VectorSet::finish_restore`] leaves out of
//! searches whatever it holds that the restore did not insert.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;

use crate::ann::AnnGraph;
use crate::error::IndexError;
use crate::vector::{QuantizedVector, ScanOrder, VectorIndex, rescore_pool};

/// Once there are this many dropped vectors in the tail, and they are a
/// quarter of it or more, it is rebuilt without them.
const COMPACT_AFTER_DEAD: usize = 1024;
/// Vectors that arrive older than the newest wait in a small index of
/// their own, merged into the main one once it holds this many, or an
/// eighth of the main one.
const MERGE_LATE_AFTER: usize = 1024;

/// When a set grows a graph, and how widely it searches it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnPolicy {
    /// Vectors at which the set starts its graph (all it holds then are
    /// the first batch); `usize::MAX`: never (every search is a scan).
    pub graph_from: usize,
    /// Vectors in the tail at which it is sealed into a batch for the
    /// builder, once the graph is started.
    pub batch: usize,
    /// Candidates a graph search keeps (hnsw_rs's `ef`), at least the
    /// number asked for.
    pub breadth: usize,
}

impl AnnPolicy {
    /// No graph: the tail takes every vector.
    pub const EXACT: AnnPolicy = AnnPolicy { graph_from: usize::MAX, batch: usize::MAX, breadth: 0 };
}

/// Measured with `mneme-tools bench search` (BENCHMARKS.md, issue 39): at
/// 100,000 vectors the scan is still faster than the graph, and on the
/// benchmark's Zipfian texts more accurate (recall@10 0.667 in 1.3 ms
/// against 0.551 in 2.0 ms at breadth 256); the scan grows linearly and
/// the graph about logarithmically, so the graph starts where the scan
/// passes a few milliseconds.
impl Default for AnnPolicy {
    fn default() -> AnnPolicy {
        AnnPolicy { graph_from: 250_000, batch: 4_096, breadth: 256 }
    }
}

/// The graph, and the builder worker that inserts its batches.
struct Builder {
    graph: Arc<AnnGraph>,
    /// The worker's queue; `None` when no worker could be started.
    worker: Option<&'static Worker>,
    /// Batches inserted, counted from the first sealed.
    inserted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl Builder {
    fn start(graph: AnnGraph) -> Builder {
        Builder {
            graph: Arc::new(graph),
            worker: workers::assign(),
            inserted: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Queues `batch` behind this graph's earlier ones; false when no
    /// worker will insert it.
    fn send(&self, batch: Arc<VectorIndex>) -> bool {
        let Some(worker) = self.worker else { return false };
        let job = Job { graph: self.graph.clone(), batch, inserted: self.inserted.clone(), stop: self.stop.clone() };
        worker.jobs.send(job).is_ok()
    }

    fn inserted(&self) -> u64 {
        self.inserted.load(Ordering::Acquire)
    }

    /// Whether a worker still inserts this graph's batches.
    fn working(&self) -> bool {
        self.worker.is_some_and(|worker| worker.alive.load(Ordering::Acquire))
    }
}

impl Drop for Builder {
    /// The worker skips what is left of this graph's batches.
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One batch of one graph, for a worker.
struct Job {
    graph: Arc<AnnGraph>,
    batch: Arc<VectorIndex>,
    inserted: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// A builder thread with its queue.
struct Worker {
    jobs: Sender<Job>,
    /// False once the thread has ended (a panic in an insert).
    alive: Arc<AtomicBool>,
}

/// The process's graph builders: every graph of every memory is built by
/// one of a few threads, half the cores (at least one), not by a thread
/// of its own. A memory holds two graphs once its static and deep vectors
/// pass [`AnnPolicy::graph_from`], and a process many memories: a thread
/// each would take the cores the write path and queries need (a replay of
/// 1,000,000 events with deep vectors applied at half its rate while two
/// builders ran). A graph keeps its worker, which inserts its batches in
/// the order they were sealed, so that the graph is the same whichever
/// worker builds it.
mod workers {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::mpsc::{Receiver, channel};

    use super::{Arc, Job, Worker};

    struct Workers {
        workers: Vec<&'static Worker>,
        next: AtomicUsize,
    }

    static WORKERS: OnceLock<Workers> = OnceLock::new();

    /// The worker a new graph's batches go to, in turn; `None` when no
    /// thread could be started.
    pub(super) fn assign() -> Option<&'static Worker> {
        let pool = WORKERS.get_or_init(|| {
            let threads = std::thread::available_parallelism().map_or(1, |cores| (cores.get() / 2).max(1));
            let workers = (0..threads).filter_map(start).map(|worker| &*Box::leak(Box::new(worker))).collect();
            Workers { workers, next: AtomicUsize::new(0) }
        });
        if pool.workers.is_empty() {
            return None;
        }
        let index = pool.next.fetch_add(1, Ordering::Relaxed) % pool.workers.len();
        Some(pool.workers[index])
    }

    fn start(index: usize) -> Option<Worker> {
        let (jobs, receiver) = channel();
        let alive = Arc::new(AtomicBool::new(true));
        let flag = alive.clone();
        std::thread::Builder::new()
            .name(format!("mneme-ann-build-{index}"))
            .spawn(move || {
                let _ended = Ended(flag);
                insert_batches(&receiver);
            })
            .ok()?;
        Some(Worker { jobs, alive })
    }

    /// Marks the worker ended however its thread ends.
    struct Ended(Arc<AtomicBool>);

    impl Drop for Ended {
        fn drop(&mut self) {
            self.0.store(false, Ordering::Release);
        }
    }

    /// Inserts each batch's vectors in seq order, then counts the batch;
    /// a batch of a dropped set is skipped.
    fn insert_batches(jobs: &Receiver<Job>) {
        while let Ok(job) = jobs.recv() {
            let Job { graph, batch, inserted, stop } = job;
            let mut stopped = false;
            for (seq, vector) in batch.quantized() {
                if stop.load(Ordering::Relaxed) {
                    stopped = true;
                    break;
                }
                graph.insert(seq, &vector);
            }
            // Let go of the batch first, so that the set usually takes it
            // back without a copy.
            drop(batch);
            if !stopped {
                inserted.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}

/// Vectors by seq, arriving in any order, as two indexes each in seq
/// order: `main` takes the newest, `late` those older than its newest,
/// merged into `main` when they grow.
struct Ordered {
    main: VectorIndex,
    late: VectorIndex,
}

impl Ordered {
    fn new(dimensions: usize) -> Ordered {
        Ordered { main: VectorIndex::new(dimensions), late: VectorIndex::new(dimensions) }
    }

    fn len(&self) -> usize {
        self.main.seq_count() + self.late.seq_count()
    }

    fn indexes(&self) -> [&VectorIndex; 2] {
        [&self.main, &self.late]
    }

    fn contains(&self, seq: u64) -> bool {
        self.main.contains(seq) || self.late.contains(seq)
    }

    /// Adds a vector of a seq it does not hold.
    fn push(&mut self, seq: u64, vector: QuantizedVector) {
        if self.main.last_seq().is_none_or(|last| last < seq) {
            self.main.insert_quantized(seq, vector);
            return;
        }
        if self.late.last_seq().is_none_or(|last| last < seq) {
            self.late.insert_quantized(seq, vector);
        } else {
            let mut single = VectorIndex::new(self.main.dimensions());
            single.insert_quantized(seq, vector);
            self.late = self.late.merged(&single);
        }
        if self.late.seq_count() >= MERGE_LATE_AFTER.max(self.main.seq_count() / 8) {
            self.main = self.main.merged(&self.late);
            self.late.retain(|_| false);
        }
    }

    fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        self.main.retain(&keep);
        self.late.retain(&keep);
    }

    /// Every vector, in seq order, leaving it empty.
    fn take(&mut self) -> VectorIndex {
        let taken = self.main.merged(&self.late);
        *self = Ordered::new(self.main.dimensions());
        taken
    }
}

/// The tail, two indexes each in seq order: `main` takes the newest,
/// `late` those older than the newest; the batches sealed for the graph;
/// and the graph. Dropped vectors leave the tail at its next compaction,
/// and searches leave them out meanwhile.
pub struct VectorSet {
    policy: AnnPolicy,
    tail: Ordered,
    /// The seqs a graph loaded from a snapshot holds that have not been
    /// inserted again yet, and the vectors of those that have (kept for
    /// lookups; the graph answers for them).
    restoring: HashSet<u64>,
    restored: Ordered,
    /// Sealed batches, oldest first, with the number of the first: those
    /// numbered below `builder.inserted()` are in the graph.
    batches: Vec<Arc<VectorIndex>>,
    first_batch: u64,
    /// The vectors of batches in the graph, for lookups by seq: merged
    /// as they come, so that there are few (sizes halve along the list).
    held: Vec<VectorIndex>,
    builder: Option<Builder>,
    /// The newest seq ever inserted: a newer one goes to `main` at once.
    newest: Option<u64>,
    /// Dropped vectors of the tail.
    dead_tail: HashSet<u64>,
    /// Dropped vectors of batches, held ones and the graph.
    dead_sealed: HashSet<u64>,
    /// How many vectors the graph held when it was last saved.
    saved: AtomicUsize,
}

impl VectorSet {
    pub fn new(dimensions: usize) -> VectorSet {
        VectorSet::with_policy(dimensions, AnnPolicy::default())
    }

    pub fn with_policy(dimensions: usize, policy: AnnPolicy) -> VectorSet {
        VectorSet {
            policy,
            tail: Ordered::new(dimensions),
            restoring: HashSet::new(),
            restored: Ordered::new(dimensions),
            batches: Vec::new(),
            first_batch: 0,
            held: Vec::new(),
            builder: None,
            newest: None,
            dead_tail: HashSet::new(),
            dead_sealed: HashSet::new(),
            saved: AtomicUsize::new(0),
        }
    }

    pub fn dimensions(&self) -> usize {
        self.tail.main.dimensions()
    }

    pub fn policy(&self) -> AnnPolicy {
        self.policy
    }

    /// How many vectors the set holds, dropped ones not yet compacted
    /// away included.
    pub fn len(&self) -> usize {
        self.holders().map(VectorIndex::seq_count).sum()
    }

    fn tail_len(&self) -> usize {
        self.tail.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many vectors its graph holds (`None`: no graph).
    pub fn graph_len(&self) -> Option<usize> {
        self.builder.as_ref().map(|builder| builder.graph.len())
    }

    /// The graph, once started (to save it: [`AnnGraph::save_named`]).
    pub fn graph(&self) -> Option<&Arc<AnnGraph>> {
        self.builder.as_ref().map(|builder| &builder.graph)
    }

    /// Starts this empty set's graph from one saved with a snapshot: the
    /// vectors it holds join it again, as the restore inserts them, without
    /// being linked again. Refused when the set holds vectors already or
    /// the graph's dimensions differ.
    pub fn restore_graph(&mut self, graph: AnnGraph) -> Result<(), IndexError> {
        if !self.is_empty() || self.builder.is_some() {
            return Err(IndexError::Ann("a graph is restored into an empty set only".to_string()));
        }
        if graph.dimensions() != self.dimensions() {
            return Err(IndexError::Ann(format!(
                "the graph's vectors have {} dimensions where the set's have {}",
                graph.dimensions(),
                self.dimensions()
            )));
        }
        self.restoring = graph.seqs().into_iter().collect();
        self.saved = AtomicUsize::new(graph.len());
        self.builder = Some(Builder::start(graph));
        Ok(())
    }

    /// The graph, when it has grown by a tenth since it was last saved or
    /// restored: a save writes the whole graph, so it is not
    /// saved with every snapshot.
    pub fn graph_to_save(&self) -> Option<&Arc<AnnGraph>> {
        let graph = self.graph()?;
        let saved = self.saved.load(Ordering::Acquire);
        (graph.len() > saved && (saved == 0 || graph.len() >= saved + saved / 10)).then_some(graph)
    }

    /// Notes that the graph was saved holding `count` vectors.
    pub fn graph_saved(&self, count: usize) {
        self.saved.fetch_max(count, Ordering::AcqRel);
    }

    /// Ends a restore: the restored graph's vectors that were not inserted
    /// again (their items are gone) are left out of every search.
    pub fn finish_restore(&mut self) {
        self.dead_sealed.extend(self.restoring.drain());
    }

    /// Every index holding a vector.
    fn holders(&self) -> impl Iterator<Item = &VectorIndex> {
        self.tail
            .indexes()
            .into_iter()
            .chain(self.restored.indexes())
            .chain(self.batches.iter().map(Arc::as_ref))
            .chain(self.held.iter())
    }

    pub fn quantized_of(&self, seq: u64) -> Option<QuantizedVector> {
        self.holders().find_map(|index| index.quantized_of(seq))
    }

    /// Whether a vector of `seq` is held (dropped or not).
    pub fn contains(&self, seq: u64) -> bool {
        self.holders().any(|index| index.contains(seq))
    }

    /// The cosine similarity of `seq`'s vector to `query`.
    pub fn similarity(&self, seq: u64, query: &[f32]) -> Option<f32> {
        self.holders().find_map(|index| index.similarity(seq, query))
    }

    /// Adds `seq`'s vector; one already held (dropped or not) is kept as it
    /// is: callers give a seq one vector, a function of the log.
    pub fn insert(&mut self, seq: u64, vector: QuantizedVector) {
        if !self.restoring.is_empty() && self.restoring.remove(&seq) {
            self.newest = self.newest.max(Some(seq));
            self.restored.push(seq, vector);
            return;
        }
        if self.newest.is_none_or(|newest| newest < seq) {
            self.newest = Some(seq);
        } else {
            let revived = self.dead_tail.remove(&seq) | self.dead_sealed.remove(&seq);
            if revived || self.contains(seq) {
                return;
            }
        }
        self.tail.push(seq, vector);
        self.seal_if_due();
        self.poll();
    }

    /// Starts the graph once the set holds `graph_from` vectors, then seals
    /// the tail into a batch for it every `batch` vectors.
    fn seal_if_due(&mut self) {
        let due = match self.builder {
            None => self.len() >= self.policy.graph_from,
            Some(_) => self.tail_len() >= self.policy.batch,
        };
        if !due {
            return;
        }
        let dimensions = self.dimensions();
        let builder = self
            .builder
            .get_or_insert_with(|| Builder::start(AnnGraph::new(dimensions, self.policy.graph_from.saturating_mul(2))));
        let dead = std::mem::take(&mut self.dead_tail);
        let mut tail = self.tail.take();
        tail.retain(|seq| !dead.contains(&seq));
        let batch = Arc::new(tail);
        builder.send(batch.clone());
        self.batches.push(batch);
    }

    /// Moves the batches the builder has inserted to the held vectors.
    fn poll(&mut self) {
        let Some(builder) = &self.builder else { return };
        let inserted = builder.inserted();
        while self.first_batch < inserted && !self.batches.is_empty() {
            let batch = self.batches.remove(0);
            self.first_batch += 1;
            // A copy only when the builder still holds the batch.
            let batch = Arc::try_unwrap(batch).unwrap_or_else(|shared| shared.merged(&VectorIndex::new(0)));
            self.held.push(batch);
            // Merged while the last is at least half the one before it:
            // the held indexes' sizes at least halve along the list.
            while let [.., before, last] = self.held.as_slice()
                && last.seq_count() * 2 >= before.seq_count()
            {
                let last = self.held.pop().expect("two held");
                let before = self.held.pop().expect("two held");
                self.held.push(before.merged(&last));
            }
        }
    }

    /// Waits until the builder has inserted every sealed batch.
    pub fn settle(&mut self) {
        while let Some(builder) = &self.builder {
            if builder.inserted() >= self.first_batch + self.batches.len() as u64 || !builder.working() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        self.poll();
    }

    /// Drops `seq`'s vector, lazily: it is compacted away with others.
    pub fn drop_vector(&mut self, seq: u64) {
        if self.tail.contains(seq) {
            self.dead_tail.insert(seq);
        } else if self.contains(seq) {
            self.dead_sealed.insert(seq);
            return;
        } else {
            return;
        }
        if self.dead_tail.len() >= COMPACT_AFTER_DEAD && self.dead_tail.len() * 4 >= self.tail_len() {
            let dead = std::mem::take(&mut self.dead_tail);
            self.tail.retain(|seq| !dead.contains(&seq));
        }
    }

    /// Keeps only the vectors `keep` accepts, now: the tail loses the
    /// others; sealed ones are left out of every search.
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let dead = std::mem::take(&mut self.dead_tail);
        self.tail.retain(|seq| keep(seq) && !dead.contains(&seq));
        let sealed = self.batches.iter().map(Arc::as_ref).chain(self.held.iter()).chain(self.restored.indexes());
        let dropped: Vec<u64> =
            sealed.flat_map(|index| index.quantized().map(|(seq, _)| seq)).filter(|seq| !keep(*seq)).collect();
        self.dead_sealed.extend(dropped);
    }

    /// Whether `seq` is dropped (and so left out of searches).
    fn is_dead(&self, seq: u64) -> bool {
        self.dead_tail.contains(&seq) || self.dead_sealed.contains(&seq)
    }

    /// The `limit` nearest vectors of all `sets` (of the same dimensions)
    /// that `accept` keeps (all when `None`), as (cosine similarity, seq),
    /// best first, the newer first among equals. The tails and the batches
    /// not yet in a graph are scanned as one ([`VectorIndex::search_all`]);
    /// each graph is searched for `limit` of its own; the hits are merged.
    pub fn search(
        sets: &[&VectorSet],
        query: &[f32],
        limit: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> Vec<(f32, u64)> {
        if limit == 0 {
            return Vec::new();
        }
        VectorSet::prepare(sets, query).search(limit, accept)
    }

    /// [`VectorSet::search`] for one query asked several times under
    /// different filters: the scan's first stage is computed here, once.
    pub fn prepare<'a>(sets: &[&'a VectorSet], query: &'a [f32]) -> PreparedSearch<'a> {
        let mut scanned: Vec<&VectorIndex> = Vec::new();
        let mut graphs: Vec<(&VectorSet, &AnnGraph, usize)> = Vec::new();
        for set in sets {
            scanned.extend(set.tail.indexes());
            let inserted = set.builder.as_ref().map_or(0, Builder::inserted);
            let waiting =
                set.batches.iter().enumerate().filter(|(number, _)| set.first_batch + *number as u64 >= inserted);
            scanned.extend(waiting.map(|(_, batch)| batch.as_ref()));
            if let Some(builder) = &set.builder {
                graphs.push((set, &builder.graph, set.policy.breadth));
            }
        }
        PreparedSearch { sets: sets.to_vec(), query, scan: ScanOrder::of(&scanned, query), graphs }
    }
}

/// A search of several [`VectorSet`]s for one query, its scan's first stage
/// done ([`VectorSet::prepare`]).
pub struct PreparedSearch<'a> {
    sets: Vec<&'a VectorSet>,
    query: &'a [f32],
    scan: ScanOrder<'a>,
    graphs: Vec<(&'a VectorSet, &'a AnnGraph, usize)>,
}

impl PreparedSearch<'_> {
    /// The sets searched, in the order given.
    pub fn sets(&self) -> &[&VectorSet] {
        &self.sets
    }

    /// The query.
    pub fn query(&self) -> &[f32] {
        self.query
    }

    /// As [`VectorSet::search`] answers.
    pub fn search(&self, limit: usize, accept: Option<&dyn Fn(u64) -> bool>) -> Vec<(f32, u64)> {
        if limit == 0 {
            return Vec::new();
        }
        let sets = &self.sets;
        let any_dead = sets.iter().any(|set| !set.dead_tail.is_empty() || !set.dead_sealed.is_empty());
        let live_and_accepted =
            |seq: u64| !sets.iter().any(|set| set.is_dead(seq)) && accept.is_none_or(|accept| accept(seq));
        let accept: Option<&dyn Fn(u64) -> bool> = if any_dead { Some(&live_and_accepted) } else { accept };
        let mut hits = self.scan.best(self.query, limit, rescore_pool(limit), accept);
        if self.graphs.is_empty() {
            return hits;
        }
        for (set, graph, breadth) in &self.graphs {
            // Scored from the set's own vectors: a graph restored from a
            // snapshot may hold vectors not inserted again yet (left out
            // here), and only the set's vectors are the log's.
            let found = graph.search(self.query, limit, *breadth, accept);
            hits.extend(found.into_iter().filter_map(|(_, seq)| Some((set.similarity(seq, self.query)?, seq))));
        }
        // A vector being inserted may be found both in its batch and in
        // the graph, with one score: its copies sort side by side.
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.dedup_by_key(|hit| hit.1);
        hits.truncate(limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vector(seq: u64) -> QuantizedVector {
        let mut values = vec![0.0f32; 8];
        values[(seq % 8) as usize] = 1.0;
        values[((seq / 8) % 8) as usize] += 0.5;
        QuantizedVector::of(&values)
    }

    /// One scan's first stage walked under several filters answers, for
    /// each, what a search of its own gives, and what an exact ranking of
    /// the kept vectors gives (the sets are small: the pool holds them
    /// all).
    #[test]
    fn a_prepared_scan_walked_under_several_filters_answers_each_alike() {
        let (mut own, mut shared) = (VectorSet::new(8), VectorSet::new(8));
        for seq in 1..=400u64 {
            if seq.is_multiple_of(3) { &mut shared } else { &mut own }.insert(seq, vector(seq));
        }
        let query = [0.9, 0.1, 0.0, 0.4, 0.0, 0.0, 0.2, 0.0];
        let sets = [&own, &shared];
        let prepared = VectorSet::prepare(&sets, &query);
        let even = |seq: u64| seq.is_multiple_of(2);
        let late = |seq: u64| seq > 350;
        let filters: [Option<&dyn Fn(u64) -> bool>; 3] = [None, Some(&even), Some(&late)];
        for filter in filters {
            let walked = prepared.search(10, filter);
            assert_eq!(walked, VectorSet::search(&sets, &query, 10, filter));
            let mut exact: Vec<(f32, u64)> = (1..=400u64)
                .filter(|seq| filter.is_none_or(|keep| keep(*seq)))
                .map(|seq| (sets.iter().find_map(|set| set.similarity(seq, &query)).unwrap(), seq))
                .collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            exact.truncate(10);
            assert_eq!(walked, exact);
            assert!(walked.iter().all(|(_, seq)| filter.is_none_or(|keep| keep(*seq))));
        }
    }

    /// Vectors that come older than the newest are all kept, each once,
    /// and found by seq; each index stays in seq order.
    #[test]
    fn vectors_arriving_out_of_order_are_kept_once_each() {
        let mut set = VectorSet::new(8);
        let seqs: Vec<u64> = (1..=3000).rev().step_by(7).chain((1..=3000).step_by(5)).collect();
        for seq in &seqs {
            set.insert(*seq, vector(*seq));
        }
        let mut wanted: Vec<u64> = seqs.clone();
        wanted.sort_unstable();
        wanted.dedup();
        assert_eq!(set.len(), wanted.len());
        assert!(wanted.iter().all(|seq| set.quantized_of(*seq).map(|held| held.values) == Some(vector(*seq).values)));
        for index in set.holders() {
            let held: Vec<u64> = index.quantized().map(|(seq, _)| seq).collect();
            assert!(held.windows(2).all(|pair| pair[0] < pair[1]), "each index in seq order");
        }
    }

    #[test]
    fn dropped_vectors_are_compacted_away_and_retain_takes_them_out_at_once() {
        let mut set = VectorSet::new(8);
        for seq in 1..=4000 {
            set.insert(seq, vector(seq));
        }
        for seq in 1..=1023 {
            set.drop_vector(seq);
        }
        assert_eq!(set.len(), 4000, "not compacted yet");
        set.drop_vector(1024);
        assert_eq!(set.len(), 2976);
        set.drop_vector(4000);
        set.retain(|seq| seq % 2 == 0);
        assert_eq!(set.len(), 1487);
        assert!(set.quantized_of(4000).is_none() && set.quantized_of(3998).is_some());
        // A vector dropped and given back is the one held.
        set.drop_vector(2000);
        set.insert(2000, vector(1));
        assert_eq!(set.quantized_of(2000).map(|held| held.values), Some(vector(2000).values));
        // Dropping what is not held marks nothing: a later insert lands.
        set.drop_vector(5000);
        set.insert(5000, vector(5000));
        assert!(set.contains(5000));
    }

    use crate::embed::{Embedder, HashedNgramEmbedder};

    const SMALL: AnnPolicy = AnnPolicy { graph_from: 600, batch: 250, breadth: 64 };

    fn text(seq: u64) -> String {
        format!("note {seq} about cache {} and token {} in module m{}", seq % 7, seq % 11, seq % 97)
    }

    fn embedded(embedder: &HashedNgramEmbedder, seq: u64) -> QuantizedVector {
        QuantizedVector::of(&embedder.embed(&text(seq)))
    }

    /// A set past its graph's start finds nearly what one exact index of
    /// the same vectors finds, with its scores, and nothing dropped.
    #[test]
    fn a_graph_answers_like_the_exact_scan_and_leaves_dropped_vectors_out() {
        let embedder = HashedNgramEmbedder::default();
        let mut set = VectorSet::with_policy(embedder.dimensions(), SMALL);
        let mut exact = VectorIndex::new(embedder.dimensions());
        // Mostly in order, some late.
        let seqs: Vec<u64> =
            (1..=2000u64).filter(|seq| seq % 10 != 3).chain((1..=2000).filter(|seq| seq % 10 == 3)).collect();
        for seq in &seqs {
            set.insert(*seq, embedded(&embedder, *seq));
        }
        for seq in 1..=2000u64 {
            exact.insert_quantized(seq, embedded(&embedder, seq));
        }
        set.settle();
        let in_graph = set.graph_len().expect("a graph");
        assert!((1750..=2000).contains(&in_graph), "{in_graph} in the graph");
        assert_eq!(set.len(), 2000);
        assert!((1..=2000).all(|seq| set.quantized_of(seq).is_some()));
        for seq in (1..=2000).step_by(9) {
            set.drop_vector(seq);
        }
        let dropped = |seq: u64| seq % 9 == 1;
        let mut found = 0;
        for query in ["note 42 about cache 0", "token 5 in module m13", "cache 3 and token 7", "module m96"] {
            let query = embedder.embed(query);
            let wanted = exact.search(&query, 10, Some(&|seq| !dropped(seq)));
            let hits = VectorSet::search(&[&set], &query, 10, None);
            assert_eq!(hits.len(), 10);
            for (score, seq) in &hits {
                assert!(!dropped(*seq), "dropped {seq} found");
                assert_eq!(Some(*score), exact.similarity(*seq, &query), "seq {seq}");
            }
            found += wanted.iter().filter(|hit| hits.contains(hit)).count();
        }
        assert!(found >= 38, "{found} of the 40 found");
    }

    /// The graph is a function of the inserts and drops: two sets given
    /// the same ones answer alike once their builders caught up, however
    /// far each had got at each search; before, every hit is live.
    #[test]
    fn the_same_inserts_build_the_same_graph() {
        let embedder = HashedNgramEmbedder::default();
        let mut first = VectorSet::with_policy(embedder.dimensions(), SMALL);
        let mut second = VectorSet::with_policy(embedder.dimensions(), SMALL);
        for seq in 1..=1500u64 {
            for set in [&mut first, &mut second] {
                set.insert(seq, embedded(&embedder, seq));
                if seq % 5 == 0 {
                    set.drop_vector(seq - 2);
                }
            }
            // The second waits for its builder as it goes.
            second.settle();
            if seq % 250 == 0 {
                let query = embedder.embed(&format!("cache {} module m{}", seq % 7, seq % 97));
                let hits = VectorSet::search(&[&first], &query, 10, None);
                assert!(hits.iter().all(|(_, hit)| hit % 5 != 3 || *hit > seq - 2), "{hits:?}");
            }
        }
        first.settle();
        assert_eq!(first.graph_len(), second.graph_len());
        for query in ["note 7", "cache 2 and token 3", "module m50", "token 10 in module m1"] {
            let query = embedder.embed(query);
            assert_eq!(VectorSet::search(&[&first], &query, 10, None), VectorSet::search(&[&second], &query, 10, None));
        }
    }

    /// A retain takes vectors out of what was sealed at once; a vector
    /// given back after its drop is found again.
    #[test]
    fn retain_reaches_sealed_vectors_and_a_vector_given_back_returns() {
        let embedder = HashedNgramEmbedder::default();
        let mut set = VectorSet::with_policy(embedder.dimensions(), SMALL);
        for seq in 1..=1400u64 {
            set.insert(seq, embedded(&embedder, seq));
        }
        set.settle();
        set.retain(|seq| seq % 2 == 0);
        let query = embedder.embed(&text(101));
        let hits = VectorSet::search(&[&set], &query, 20, None);
        assert_eq!(hits.len(), 20);
        assert!(hits.iter().all(|(_, seq)| seq % 2 == 0), "{hits:?}");
        set.insert(101, embedded(&embedder, 101));
        let hits = VectorSet::search(&[&set], &query, 1, None);
        assert_eq!(hits.first().map(|(_, seq)| *seq), Some(101));
    }
}
