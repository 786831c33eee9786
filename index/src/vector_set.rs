//! Vectors by seq that may arrive in any order, searched as one set: the
//! swarm's shared vectors (memories restored or catching up take entries
//! older than the newest), a memory's private ones, and the deep vectors
//! an enricher records after their items, in the order it computed them.
//!
//! A set is a tail, scanned exactly ([`VectorIndex`]), and, once it has
//! grown past [`AnnPolicy::seal_at`] vectors, immutable segments searched
//! through an HNSW graph each ([`AnnSegment`]). When the tail reaches
//! `seal_at` live vectors it is sealed into a segment, whose graph is
//! built on a thread of its own, off the write path; when
//! [`AnnPolicy::merge_factor`] segments of one size class exist, they are
//! merged into one, built anew from their vectors. Which vectors go into
//! which segment is decided when they are sealed or merged, from the order
//! of inserts and drops alone; only when a graph becomes searchable depends
//! on time. Until it does, a segment is answered by what it was made of:
//! the graphs of the segments merged into it, or an exact scan of its
//! vectors.
//!
//! ```text
//!   insert ──▶ tail (exact scan) ──seal──▶ segment ──merge──▶ larger segment
//!                                      (graph built on a thread)
//! ```

use std::collections::HashSet;
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::ann::AnnSegment;
use crate::vector::{QuantizedVector, VectorIndex};

/// Once there are this many dropped vectors in the tail, and they are a
/// quarter of it or more, it is rebuilt without them.
const COMPACT_AFTER_DEAD: usize = 1024;
/// Vectors that arrive older than the newest wait in a small index of
/// their own, merged into the main one once it holds this many, or an
/// eighth of the main one.
const MERGE_LATE_AFTER: usize = 1024;

/// When a set builds graphs, and how widely they are searched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AnnPolicy {
    /// Live vectors in the tail at which it is sealed into a segment;
    /// `usize::MAX` never seals (every search is an exact scan).
    pub seal_at: usize,
    /// Segments of one size class merged into one.
    pub merge_factor: usize,
    /// Candidates a graph search keeps (hnsw_rs's `ef`), at least the
    /// number asked for.
    pub breadth: usize,
}

impl AnnPolicy {
    /// No graph: the tail takes every vector.
    pub const EXACT: AnnPolicy = AnnPolicy { seal_at: usize::MAX, merge_factor: usize::MAX, breadth: 0 };
}

impl Default for AnnPolicy {
    fn default() -> AnnPolicy {
        AnnPolicy { seal_at: 16_384, merge_factor: 4, breadth: 96 }
    }
}

/// What answers for a segment whose graph is not built yet.
enum StandIn {
    Graph(Arc<AnnSegment>),
    Exact(Arc<VectorIndex>),
}

/// Vectors sealed together: their exact copy (for lookups by seq and
/// merges), and their graph once built.
struct Segment {
    vectors: Arc<VectorIndex>,
    graph: Option<Arc<AnnSegment>>,
    /// While `graph` is `None`: what it was made of.
    stand_ins: Vec<StandIn>,
    build: Option<JoinHandle<AnnSegment>>,
}

impl Segment {
    /// A segment of `vectors`, its graph built on a thread of its own.
    fn building(vectors: VectorIndex, stand_ins: Vec<StandIn>) -> Segment {
        let vectors = Arc::new(vectors);
        let input = vectors.clone();
        let build = std::thread::Builder::new()
            .name("mneme-ann-build".to_string())
            .spawn(move || AnnSegment::build(input.dimensions(), input.quantized().collect::<Vec<_>>().into_iter()))
            .ok();
        let stand_ins = if stand_ins.is_empty() { vec![StandIn::Exact(vectors.clone())] } else { stand_ins };
        Segment { vectors, graph: None, stand_ins, build }
    }

    /// Installs the graph if its build has finished (or, with `wait`,
    /// once it has). A build that panicked leaves the segment scanned
    /// exactly.
    fn poll(&mut self, wait: bool) -> bool {
        let finished = self.build.as_ref().is_some_and(|build| wait || build.is_finished());
        if !finished {
            return false;
        }
        if let Some(Ok(graph)) = self.build.take().map(JoinHandle::join) {
            self.graph = Some(Arc::new(graph));
            self.stand_ins.clear();
        } else {
            self.stand_ins = vec![StandIn::Exact(self.vectors.clone())];
        }
        true
    }

    /// Whether its vectors, or a graph standing in for it, hold `seq`.
    fn holds(&self, seq: u64) -> bool {
        self.vectors.contains(seq)
            || self.stand_ins.iter().any(|stand_in| matches!(stand_in, StandIn::Graph(graph) if graph.contains(seq)))
    }

    /// What answers for it in a merged segment still being built.
    fn stand_ins(&self) -> Vec<StandIn> {
        match &self.graph {
            Some(graph) => vec![StandIn::Graph(graph.clone())],
            None => self
                .stand_ins
                .iter()
                .map(|stand_in| match stand_in {
                    StandIn::Graph(graph) => StandIn::Graph(graph.clone()),
                    StandIn::Exact(vectors) => StandIn::Exact(vectors.clone()),
                })
                .collect(),
        }
    }
}

/// The tail, two indexes each in seq order: `main` takes the newest,
/// `late` those older than the newest; and the sealed segments, oldest
/// first. Dropped vectors wait for a compaction of the tail or a merge of
/// their segment, and searches leave them out.
pub struct VectorSet {
    policy: AnnPolicy,
    main: VectorIndex,
    late: VectorIndex,
    segments: Vec<Segment>,
    /// The newest seq ever inserted: a newer one goes to `main` at once.
    newest: Option<u64>,
    /// Dropped vectors of the tail.
    dead_tail: HashSet<u64>,
    /// Dropped vectors of segments (or of the graphs standing in for a
    /// merged segment, until its own graph is built).
    dead_sealed: HashSet<u64>,
}

impl VectorSet {
    pub fn new(dimensions: usize) -> VectorSet {
        VectorSet::with_policy(dimensions, AnnPolicy::default())
    }

    pub fn with_policy(dimensions: usize, policy: AnnPolicy) -> VectorSet {
        VectorSet {
            policy,
            main: VectorIndex::new(dimensions),
            late: VectorIndex::new(dimensions),
            segments: Vec::new(),
            newest: None,
            dead_tail: HashSet::new(),
            dead_sealed: HashSet::new(),
        }
    }

    pub fn dimensions(&self) -> usize {
        self.main.dimensions()
    }

    pub fn policy(&self) -> AnnPolicy {
        self.policy
    }

    /// How many vectors the set holds, dropped ones not yet compacted
    /// away included.
    pub fn len(&self) -> usize {
        self.tail_len() + self.segments.iter().map(|segment| segment.vectors.seq_count()).sum::<usize>()
    }

    fn tail_len(&self) -> usize {
        self.main.seq_count() + self.late.seq_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// (segments, of which searchable through their own finished graph).
    pub fn segment_counts(&self) -> (usize, usize) {
        (self.segments.len(), self.segments.iter().filter(|segment| segment.graph.is_some()).count())
    }

    /// Every index holding a vector: the tail's two, then the segments'.
    fn holders(&self) -> impl Iterator<Item = &VectorIndex> {
        [&self.main, &self.late].into_iter().chain(self.segments.iter().map(|segment| segment.vectors.as_ref()))
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
        self.poll(false);
        if self.newest.is_none_or(|newest| newest < seq) {
            self.newest = Some(seq);
            self.main.insert_quantized(seq, vector);
        } else {
            self.dead_tail.remove(&seq);
            self.dead_sealed.remove(&seq);
            if self.contains(seq) {
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
        self.seal_if_due();
    }

    /// Seals the tail into a segment once it holds `seal_at` live
    /// vectors, then merges runs of `merge_factor` segments of one size
    /// class.
    fn seal_if_due(&mut self) {
        if self.tail_len().saturating_sub(self.dead_tail.len()) < self.policy.seal_at {
            return;
        }
        let dead = std::mem::take(&mut self.dead_tail);
        let mut tail = self.main.merged(&self.late);
        tail.retain(|seq| !dead.contains(&seq));
        self.main = VectorIndex::new(self.dimensions());
        self.late = VectorIndex::new(self.dimensions());
        self.segments.push(Segment::building(tail, Vec::new()));
        while let Some(range) = self.mergeable() {
            let merged: Vec<Segment> = self.segments.drain(range.clone()).collect();
            let mut vectors = VectorIndex::new(self.dimensions());
            for segment in &merged {
                vectors = vectors.merged(&segment.vectors);
            }
            let dead = &self.dead_sealed;
            vectors.retain(|seq| !dead.contains(&seq));
            let stand_ins = merged.iter().flat_map(Segment::stand_ins).collect();
            self.segments.insert(range.start, Segment::building(vectors, stand_ins));
        }
    }

    /// The first run of `merge_factor` consecutive segments of one size
    /// class (`seal_at × merge_factor^class` vectors and up).
    fn mergeable(&self) -> Option<std::ops::Range<usize>> {
        let factor = self.policy.merge_factor.max(2);
        let class = |segment: &Segment| {
            let mut size = segment.vectors.seq_count() / self.policy.seal_at.max(1);
            let mut class = 0u32;
            while size >= factor {
                size /= factor;
                class += 1;
            }
            class
        };
        let classes: Vec<u32> = self.segments.iter().map(class).collect();
        (0..classes.len().saturating_sub(factor - 1))
            .find(|start| classes[*start..*start + factor].iter().all(|class| *class == classes[*start]))
            .map(|start| start..start + factor)
    }

    /// Installs the graphs whose builds have finished; with `wait`, waits
    /// for every build first.
    pub fn poll(&mut self, wait: bool) {
        let mut installed = false;
        for segment in &mut self.segments {
            installed |= segment.poll(wait);
        }
        if installed && !self.dead_sealed.is_empty() {
            // Vectors a merge left out, once no graph standing in holds
            // them, are gone.
            let segments = &self.segments;
            self.dead_sealed.retain(|seq| segments.iter().any(|segment| segment.holds(*seq)));
        }
    }

    /// Waits for every graph being built, and installs them.
    pub fn settle(&mut self) {
        self.poll(true);
    }

    /// Drops `seq`'s vector, lazily: it is compacted away with others.
    pub fn drop_vector(&mut self, seq: u64) {
        if self.main.contains(seq) || self.late.contains(seq) {
            self.dead_tail.insert(seq);
        } else if self.segments.iter().any(|segment| segment.vectors.contains(seq)) {
            self.dead_sealed.insert(seq);
            return;
        } else {
            return;
        }
        if self.dead_tail.len() >= COMPACT_AFTER_DEAD && self.dead_tail.len() * 4 >= self.tail_len() {
            let dead = std::mem::take(&mut self.dead_tail);
            self.main.retain(|seq| !dead.contains(&seq));
            self.late.retain(|seq| !dead.contains(&seq));
        }
    }

    /// Keeps only the vectors `keep` accepts, now: the tail loses the
    /// others, and segments leave them out of every search until a merge
    /// rebuilds them without them.
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let dead = std::mem::take(&mut self.dead_tail);
        self.main.retain(|seq| keep(seq) && !dead.contains(&seq));
        self.late.retain(|seq| keep(seq) && !dead.contains(&seq));
        for segment in &self.segments {
            self.dead_sealed.extend(segment.vectors.quantized().map(|(seq, _)| seq).filter(|seq| !keep(*seq)));
        }
    }

    /// Whether `seq` is dropped (and so left out of searches).
    fn is_dead(&self, seq: u64) -> bool {
        self.dead_tail.contains(&seq) || self.dead_sealed.contains(&seq)
    }

    /// The `limit` nearest vectors of all `sets` (of the same dimensions)
    /// that `accept` keeps (all when `None`), as (cosine similarity, seq),
    /// best first, the newer first among equals. The tails, and segments
    /// answered by a scan, are scanned as one ([`VectorIndex::search_all`]);
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
        let any_dead = sets.iter().any(|set| !set.dead_tail.is_empty() || !set.dead_sealed.is_empty());
        let live_and_accepted =
            |seq: u64| !sets.iter().any(|set| set.is_dead(seq)) && accept.is_none_or(|accept| accept(seq));
        let accept: Option<&dyn Fn(u64) -> bool> = if any_dead { Some(&live_and_accepted) } else { accept };
        let mut exact: Vec<&VectorIndex> = Vec::new();
        let mut graphs: Vec<(&AnnSegment, usize)> = Vec::new();
        for set in sets {
            exact.extend([&set.main, &set.late]);
            for segment in &set.segments {
                if let Some(graph) = &segment.graph {
                    graphs.push((graph, set.policy.breadth));
                    continue;
                }
                for stand_in in &segment.stand_ins {
                    match stand_in {
                        StandIn::Graph(graph) => graphs.push((graph, set.policy.breadth)),
                        StandIn::Exact(vectors) => exact.push(vectors),
                    }
                }
            }
        }
        let mut hits = VectorIndex::search_all(&exact, query, limit, accept);
        if graphs.is_empty() {
            return hits;
        }
        for (graph, breadth) in graphs {
            hits.extend(graph.search(query, limit, breadth, accept));
        }
        // One seq has one score wherever it was found: its copies sort
        // side by side.
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.dedup_by_key(|hit| hit.1);
        hits.truncate(limit);
        hits
    }
}

impl Drop for VectorSet {
    /// Waits for builds still running, so that no thread outlives its set.
    fn drop(&mut self) {
        for segment in &mut self.segments {
            if let Some(build) = segment.build.take() {
                let _ = build.join();
            }
        }
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

    const SMALL: AnnPolicy = AnnPolicy { seal_at: 300, merge_factor: 2, breadth: 64 };

    fn text(seq: u64) -> String {
        format!("note {seq} about cache {} and token {} in module m{}", seq % 7, seq % 11, seq % 97)
    }

    fn embedded(embedder: &HashedNgramEmbedder, seq: u64) -> QuantizedVector {
        QuantizedVector::of(&embedder.embed(&text(seq)))
    }

    /// A set that sealed and merged segments, once their graphs are built,
    /// finds nearly what one exact index of the same vectors finds, with
    /// its scores, and nothing dropped.
    #[test]
    fn segments_answer_like_the_exact_scan_and_leave_dropped_vectors_out() {
        let embedder = HashedNgramEmbedder::default();
        let mut set = VectorSet::with_policy(embedder.dimensions(), SMALL);
        let mut exact = VectorIndex::new(embedder.dimensions());
        // Mostly in order, some late.
        let seqs: Vec<u64> = (1..=2000u64).filter(|seq| seq % 10 != 3).chain((1..=2000).filter(|seq| seq % 10 == 3)).collect();
        for seq in &seqs {
            set.insert(*seq, embedded(&embedder, *seq));
        }
        for seq in 1..=2000u64 {
            exact.insert_quantized(seq, embedded(&embedder, seq));
        }
        set.settle();
        let (segments, built) = set.segment_counts();
        assert!(segments >= 2 && built == segments, "{segments} segments, {built} built");
        assert_eq!(set.len(), 2000);
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

    /// Which vectors go into which segment is a function of the inserts
    /// and drops: two sets given the same ones answer alike once built,
    /// whenever their builds finished; before, every hit is a live vector.
    #[test]
    fn the_same_inserts_build_the_same_segments() {
        let embedder = HashedNgramEmbedder::default();
        let mut first = VectorSet::with_policy(embedder.dimensions(), SMALL);
        let mut second = VectorSet::with_policy(embedder.dimensions(), SMALL);
        for seq in 1..=1500u64 {
            first.insert(seq, embedded(&embedder, seq));
            if seq % 5 == 0 {
                first.drop_vector(seq - 2);
            }
            // The second waits for every graph as it goes.
            second.insert(seq, embedded(&embedder, seq));
            if seq % 5 == 0 {
                second.drop_vector(seq - 2);
            }
            second.settle();
            if seq % 250 == 0 {
                let query = embedder.embed(&format!("cache {} module m{}", seq % 7, seq % 97));
                let hits = VectorSet::search(&[&first], &query, 10, None);
                assert!(hits.iter().all(|(_, seq)| seq % 5 != 3 && *seq <= 1500), "{hits:?}");
            }
        }
        first.settle();
        assert_eq!(first.segment_counts(), second.segment_counts());
        for query in ["note 7", "cache 2 and token 3", "module m50", "token 10 in module m1"] {
            let query = embedder.embed(query);
            assert_eq!(VectorSet::search(&[&first], &query, 10, None), VectorSet::search(&[&second], &query, 10, None));
        }
    }

    /// A retain takes vectors out of segments at once; a merge then
    /// leaves them out of the rebuilt graph; a vector given back after
    /// its drop is found again.
    #[test]
    fn retain_reaches_sealed_vectors_and_a_vector_given_back_returns() {
        let embedder = HashedNgramEmbedder::default();
        let mut set = VectorSet::with_policy(embedder.dimensions(), SMALL);
        for seq in 1..=700u64 {
            set.insert(seq, embedded(&embedder, seq));
        }
        set.retain(|seq| seq % 2 == 0);
        let query = embedder.embed(&text(101));
        let hits = VectorSet::search(&[&set], &query, 20, None);
        assert!(hits.iter().all(|(_, seq)| seq % 2 == 0), "{hits:?}");
        // More inserts seal and merge the segments holding odd seqs.
        for seq in 701..=1400u64 {
            set.insert(seq, embedded(&embedder, seq));
        }
        set.settle();
        let hits = VectorSet::search(&[&set], &query, 20, Some(&|seq| seq <= 700));
        assert!(hits.iter().all(|(_, seq)| seq % 2 == 0), "{hits:?}");
        set.insert(101, embedded(&embedder, 101));
        let hits = VectorSet::search(&[&set], &query, 1, None);
        assert_eq!(hits.first().map(|(_, seq)| *seq), Some(101));
    }
}

