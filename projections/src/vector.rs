//! The vector index over an agent's items: HNSW (hnsw_rs) on unit vectors.
//!
//! Derived state, like the BM25 index: a snapshot keeps the vectors and a
//! restore inserts them again in seq order. hnsw_rs draws node levels from a
//! generator with a fixed seed, so inserting the same vectors in the same
//! order builds the same graph: a replayed index answers like the live one.
//! For the same reason forgotten items stay in the graph and are filtered out
//! of results (hnsw_rs cannot delete, and rebuilding without them would
//! build a different graph).

use hnsw_rs::prelude::{Distance, FilterT, Hnsw};

/// Links per node and layer: hnsw_rs's usual value for a few hundred
/// dimensions; more costs memory and insert time for little recall.
const MAX_CONNECTIONS: usize = 16;
const MAX_LAYERS: usize = 16;
/// Candidates explored per insert: the main cost of ingest into the vector
/// index (lowered from 100, which halved the apply rate). Recall against
/// exact search at this value is not measured yet.
const EF_CONSTRUCTION: usize = 64;
/// Candidates explored per search, at least.
const MIN_EF_SEARCH: usize = 64;
/// hnsw_rs sizes its tables from this hint; it is not a limit.
const CAPACITY_HINT: usize = 100_000;

/// `1 - cosine` for unit vectors, clamped at 0. hnsw_rs's own dot distance
/// asserts `dot <= 1`, which rounding breaks for a vector and itself.
#[derive(Clone, Copy, Default)]
pub(crate) struct UnitCosineDistance;

impl Distance<f32> for UnitCosineDistance {
    fn eval(&self, a: &[f32], b: &[f32]) -> f32 {
        (1.0 - dot(a, b)).max(0.0)
    }
}

/// Dot product with eight independent accumulators. A plain sum is one
/// dependency chain the compiler may not reorder (float addition is not
/// associative), so it cannot use SIMD; eight lanes can, and the order of
/// additions is still fixed, so results are the same on every run. Most of
/// the time of an HNSW insert is spent here.
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 8;
    let mut lanes = [0.0f32; LANES];
    let a_chunks = a.chunks_exact(LANES);
    let b_chunks = b.chunks_exact(LANES);
    let tail: f32 = a_chunks.remainder().iter().zip(b_chunks.remainder()).map(|(x, y)| x * y).sum();
    for (a_chunk, b_chunk) in a_chunks.zip(b_chunks) {
        for lane in 0..LANES {
            lanes[lane] += a_chunk[lane] * b_chunk[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// Passes a candidate to hnsw_rs's search only if the predicate accepts its
/// seq, so filters apply inside the search instead of thinning its results.
struct SeqFilter<'a>(&'a dyn Fn(u64) -> bool);

impl FilterT for SeqFilter<'_> {
    fn hnsw_filter(&self, id: &usize) -> bool {
        (self.0)(*id as u64)
    }
}

pub(crate) struct VectorIndex {
    hnsw: Hnsw<'static, f32, UnitCosineDistance>,
    dimensions: usize,
    len: usize,
}

impl VectorIndex {
    pub fn new(dimensions: usize) -> VectorIndex {
        let hnsw = Hnsw::new(MAX_CONNECTIONS, CAPACITY_HINT, MAX_LAYERS, EF_CONSTRUCTION, UnitCosineDistance);
        VectorIndex { hnsw, dimensions, len: 0 }
    }

    /// Adds the vector of the item at `seq`. Callers insert in seq order.
    pub fn insert(&mut self, seq: u64, vector: &[f32]) {
        debug_assert_eq!(vector.len(), self.dimensions);
        self.hnsw.insert((vector, seq as usize));
        self.len += 1;
    }

    /// The `limit` nearest items accepted by `accept` (all when `None`), as
    /// (cosine similarity, seq), best first; equal similarities rank the
    /// newer item first.
    pub fn search(&self, query: &[f32], limit: usize, accept: Option<&dyn Fn(u64) -> bool>) -> Vec<(f32, u64)> {
        if self.len == 0 || limit == 0 {
            return Vec::new();
        }
        let ef_search = (limit * 2).max(MIN_EF_SEARCH);
        let filter = accept.map(SeqFilter);
        let mut hits: Vec<(f32, u64)> = self
            .hnsw
            .search_filter(query, limit, ef_search, filter.as_ref().map(|filter| filter as &dyn FilterT))
            .into_iter()
            .map(|neighbour| (1.0 - neighbour.distance, neighbour.d_id as u64))
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        hits
    }

    /// Every (seq, vector), in seq order, for snapshots.
    pub fn vectors(&self) -> Vec<(u64, Vec<f32>)> {
        // hnsw_rs's point iterator unwraps the entry point: never iterate an
        // empty index.
        if self.len == 0 {
            return Vec::new();
        }
        let mut vectors: Vec<(u64, Vec<f32>)> = self
            .hnsw
            .get_point_indexation()
            .into_iter()
            .map(|point| (point.get_origin_id() as u64, point.get_v().to_vec()))
            .collect();
        vectors.sort_by_key(|(seq, _)| *seq);
        vectors
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{Embedder, HashedNgramEmbedder};

    fn index_of(texts: &[&str]) -> (VectorIndex, HashedNgramEmbedder) {
        let embedder = HashedNgramEmbedder::default();
        let mut index = VectorIndex::new(embedder.dimensions());
        for (position, text) in texts.iter().enumerate() {
            index.insert(position as u64 + 1, &embedder.embed(text));
        }
        (index, embedder)
    }

    #[test]
    fn finds_the_nearest_and_respects_the_filter() {
        let (index, embedder) =
            index_of(&["token refresh failed", "database migration done", "the token refresh failed again"]);
        let query = embedder.embed("token refresh failure");
        let hits = index.search(&query, 2, None);
        assert_eq!(hits.len(), 2);
        assert!(hits.iter().all(|(_, seq)| *seq != 2), "{hits:?}");
        let only_second = index.search(&query, 2, Some(&|seq| seq == 2));
        assert_eq!(only_second.iter().map(|(_, seq)| *seq).collect::<Vec<_>>(), vec![2]);
    }

    #[test]
    fn identical_inserts_answer_identically() {
        let texts: Vec<String> =
            (0..300).map(|n| format!("note {n} about cache {} and token {}", n % 7, n % 11)).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (first, embedder) = index_of(&texts);
        let (second, _) = index_of(&texts);
        for query in ["cache 3", "token 5", "note 42"] {
            let query = embedder.embed(query);
            assert_eq!(first.search(&query, 10, None), second.search(&query, 10, None));
        }
        assert_eq!(first.vectors().len(), 300);
    }

    #[test]
    fn the_lane_dot_product_equals_the_plain_one_closely() {
        let a: Vec<f32> = (0..259).map(|n| (n as f32 * 0.37).sin()).collect();
        let b: Vec<f32> = (0..259).map(|n| (n as f32 * 0.11).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - plain).abs() < 1e-4);
        assert_eq!(dot(&a, &b), dot(&a, &b));
    }

    #[test]
    fn an_empty_index_has_no_vectors_and_finds_nothing() {
        let (index, embedder) = index_of(&[]);
        assert!(index.vectors().is_empty());
        assert!(index.search(&embedder.embed("anything"), 3, None).is_empty());
    }

    #[test]
    fn an_empty_text_vector_does_not_panic() {
        let (index, embedder) = index_of(&["", "something"]);
        assert_eq!(index.search(&embedder.embed(""), 5, None).len(), 2);
    }
}
