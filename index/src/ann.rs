//! An approximate nearest-neighbour graph over quantized vectors: one
//! immutable segment of hnsw_rs's HNSW, for memories too large to scan.
//!
//! A segment is built once, from a fixed list of vectors, one insert at a
//! time in the order given (callers give seq order), by hnsw_rs, whose
//! level generator is seeded with a constant: the same vectors in the same
//! order build the same graph, on every run. It is never inserted into
//! again (a loaded hnsw_rs graph would restart its level generator, so
//! growing one after a restart would not build what a process that never
//! restarted builds); larger segments are built anew from the vectors of
//! smaller ones.
//!
//! The graph holds each vector as its 8-bit values followed by the four
//! bytes of its scale ([`encode`]), and measures `1 - cosine` between two
//! such vectors ([`ScaledCosine`]). A search walks the graph with the query
//! quantized the same way, then scores every candidate it returns with the
//! float query against the 8-bit vector, exactly as the exact scan of
//! [`crate::vector`] scores it: the two tiers give one item one score.

use std::path::Path;

use hnsw_rs::api::AnnT;
use hnsw_rs::hnswio::HnswIo;
use hnsw_rs::prelude::{Distance, Hnsw};

use crate::error::IndexError;
use crate::vector::{QuantizedVector, dot_quantized};

/// Links per node and layer (layer 0 keeps twice as many).
pub const MAX_CONNECTIONS: usize = 16;
/// Candidates kept while linking a new node.
pub const EF_CONSTRUCTION: usize = 128;
/// Layers at most.
const MAX_LAYERS: usize = 16;
/// Bytes of the scale after the values.
const SCALE_BYTES: usize = 4;

/// `1 - cosine` of two [`encode`]d vectors, at least 0 (hnsw_rs requires
/// distances that are not negative; two vectors that close are equal for
/// any search).
#[derive(Clone, Copy, Default)]
pub struct ScaledCosine;

impl Distance<i8> for ScaledCosine {
    fn eval(&self, a: &[i8], b: &[i8]) -> f32 {
        let (a_values, a_scale) = decode(a);
        let (b_values, b_scale) = decode(b);
        (1.0 - dot_i8(a_values, b_values) as f32 * a_scale * b_scale).max(0.0)
    }
}

/// The dot product of two 8-bit vectors, exactly (integer sums are
/// associative, so the compiler vectorises it and the result is the same
/// in any order).
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(*x) * i32::from(*y)).sum()
}

/// A quantized vector as the graph holds it: its values, then its scale's
/// four bytes (little-endian) as `i8`s.
pub fn encode(vector: &QuantizedVector) -> Vec<i8> {
    let mut encoded = Vec::with_capacity(vector.values.len() + SCALE_BYTES);
    encoded.extend_from_slice(&vector.values);
    encoded.extend(vector.scale.to_le_bytes().map(|byte| byte as i8));
    encoded
}

fn decode(encoded: &[i8]) -> (&[i8], f32) {
    let (values, scale) = encoded.split_at(encoded.len().saturating_sub(SCALE_BYTES));
    let bytes: [u8; SCALE_BYTES] = std::array::from_fn(|byte| scale.get(byte).map_or(0, |value| *value as u8));
    (values, f32::from_le_bytes(bytes))
}

/// One immutable HNSW graph and the vectors it holds (by seq, ascending).
pub struct AnnSegment {
    graph: Hnsw<'static, i8, ScaledCosine>,
    dimensions: usize,
    /// The seqs it holds, ascending; the graph's data id of a vector is
    /// its seq.
    seqs: Vec<u64>,
}

impl std::fmt::Debug for AnnSegment {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("AnnSegment")
            .field("dimensions", &self.dimensions)
            .field("vectors", &self.seqs.len())
            .finish()
    }
}

impl AnnSegment {
    /// Builds a graph of `vectors` (of `dimensions` values each), inserted
    /// one at a time in the order given.
    pub fn build(dimensions: usize, vectors: impl ExactSizeIterator<Item = (u64, QuantizedVector)>) -> AnnSegment {
        let graph = Hnsw::new(MAX_CONNECTIONS, vectors.len().max(1), MAX_LAYERS, EF_CONSTRUCTION, ScaledCosine);
        let mut seqs = Vec::with_capacity(vectors.len());
        for (seq, vector) in vectors {
            debug_assert_eq!(vector.values.len(), dimensions);
            graph.insert_slice((&encode(&vector), seq as usize));
            seqs.push(seq);
        }
        seqs.sort_unstable();
        AnnSegment { graph, dimensions, seqs }
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.seqs.is_empty()
    }

    /// The seqs it holds, ascending.
    pub fn seqs(&self) -> &[u64] {
        &self.seqs
    }

    pub fn contains(&self, seq: u64) -> bool {
        self.seqs.binary_search(&seq).is_ok()
    }

    /// The (about) `limit` nearest vectors that `accept` keeps, as (cosine
    /// similarity, seq) scored like the exact scan scores them, best first,
    /// the newer first among equals. `breadth` is how many candidates the
    /// walk keeps (hnsw_rs's `ef`); at least `limit` are kept. Fewer than
    /// `limit` come back when the walk met fewer accepted vectors.
    pub fn search(
        &self,
        query: &[f32],
        limit: usize,
        breadth: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> Vec<(f32, u64)> {
        if limit == 0 || self.seqs.is_empty() {
            return Vec::new();
        }
        let encoded = encode(&QuantizedVector::of(query));
        let breadth = breadth.max(limit);
        let neighbours = match accept {
            Some(accept) => {
                let filter = |id: &usize| accept(*id as u64);
                self.graph.search_filter(&encoded, breadth, breadth, Some(&filter))
            }
            None => self.graph.search(&encoded, breadth, breadth),
        };
        let mut hits: Vec<(f32, u64)> = neighbours
            .iter()
            .filter_map(|neighbour| {
                let seq = neighbour.d_id as u64;
                let data = self.graph.get_point_indexation().get_point_data(&neighbour.p_id)?;
                let (values, scale) = decode(&data);
                Some((dot_quantized(query, values) * scale, seq))
            })
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        hits
    }

    /// Writes the graph to `directory` as hnsw_rs's two files,
    /// `{basename}.hnsw.graph` and `{basename}.hnsw.data`, replacing them.
    pub fn save(&self, directory: &Path, basename: &str) -> Result<(), IndexError> {
        self.graph
            .file_dump(directory, basename)
            .map(|_| ())
            .map_err(|error| IndexError::Ann(format!("saving the graph {basename} in {}: {error:#}", directory.display())))
    }

    /// Reads a graph [`AnnSegment::save`] wrote. `dimensions` and `seqs`
    /// are what the caller recorded beside it; both are checked against
    /// the graph.
    pub fn load(directory: &Path, basename: &str, dimensions: usize, mut seqs: Vec<u64>) -> Result<AnnSegment, IndexError> {
        let failed = |what: String| IndexError::Ann(format!("loading the graph {basename} from {}: {what}", directory.display()));
        // hnsw_rs ties a loaded graph's lifetime to its loader, for graphs
        // whose data stays memory-mapped; this one copies its data in, so
        // the loader (a path and a few options) is kept for the process.
        let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(directory, basename)));
        let graph: Hnsw<'static, i8, ScaledCosine> = loader.load_hnsw().map_err(|error| failed(format!("{error:#}")))?;
        if graph.get_nb_point() != seqs.len() {
            return Err(failed(format!("it holds {} vectors where {} were recorded", graph.get_nb_point(), seqs.len())));
        }
        if seqs.is_empty() {
            return Ok(AnnSegment { graph, dimensions, seqs });
        }
        let held = graph.get_point_indexation().get_data_dimension();
        if held != dimensions + SCALE_BYTES {
            return Err(failed(format!("its vectors have {} values where {dimensions} were expected", held.saturating_sub(SCALE_BYTES))));
        }
        seqs.sort_unstable();
        let mut ids: Vec<u64> =
            graph.get_point_indexation().into_iter().map(|point| point.get_origin_id() as u64).collect();
        ids.sort_unstable();
        if ids != seqs {
            return Err(failed("its vectors are not those recorded".to_string()));
        }
        Ok(AnnSegment { graph, dimensions, seqs })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{Embedder, HashedNgramEmbedder};
    use crate::vector::VectorIndex;

    fn texts(count: usize) -> Vec<String> {
        (0..count).map(|n| format!("note {n} about cache {} and token {} in module m{}", n % 7, n % 11, n % 97)).collect()
    }

    fn vectors(texts: &[String]) -> (Vec<(u64, QuantizedVector)>, HashedNgramEmbedder) {
        let embedder = HashedNgramEmbedder::default();
        let vectors =
            texts.iter().enumerate().map(|(n, text)| (n as u64 + 1, QuantizedVector::of(&embedder.embed(text)))).collect();
        (vectors, embedder)
    }

    #[test]
    fn encoding_keeps_values_and_scale() {
        let vector = QuantizedVector::of(&[0.8, -0.36, 0.48]);
        let encoded = encode(&vector);
        let (values, scale) = decode(&encoded);
        assert_eq!(values, vector.values.as_slice());
        assert_eq!(scale, vector.scale);
        let distance = ScaledCosine.eval(&encoded, &encoded);
        assert!(distance < 0.01 && distance >= 0.0, "{distance}");
    }

    /// On a corpus with structure, the graph finds nearly all of what the
    /// exact scan finds, with the exact scan's scores.
    #[test]
    fn finds_what_the_exact_scan_finds_with_its_scores() {
        let texts = texts(3000);
        let (vectors, embedder) = vectors(&texts);
        let mut exact = VectorIndex::new(embedder.dimensions());
        for (seq, vector) in &vectors {
            exact.insert_quantized(*seq, vector.clone());
        }
        let segment = AnnSegment::build(embedder.dimensions(), vectors.into_iter());
        assert_eq!(segment.len(), 3000);
        let mut found = 0;
        let queries = ["note 42 about cache 0", "token 5 in module m13", "cache 3 and token 7", "module m96"];
        for query in queries {
            let query = embedder.embed(query);
            let wanted = exact.search(&query, 10, None);
            let hits = segment.search(&query, 10, 64, None);
            for (score, seq) in &hits {
                assert_eq!(Some(*score), exact.similarity(*seq, &query), "seq {seq}");
            }
            found += wanted.iter().filter(|hit| hits.contains(hit)).count();
        }
        assert!(found >= 38, "{found} of the 40 found");
    }

    #[test]
    fn the_filter_keeps_only_accepted_vectors() {
        let texts = texts(500);
        let (vectors, embedder) = vectors(&texts);
        let segment = AnnSegment::build(embedder.dimensions(), vectors.into_iter());
        let even = |seq: u64| seq.is_multiple_of(2);
        let hits = segment.search(&embedder.embed("cache 3"), 10, 64, Some(&even));
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|(_, seq)| even(*seq)), "{hits:?}");
    }

    /// The same vectors in the same order build the same graph: two builds
    /// and a saved and loaded one answer every query alike.
    #[test]
    fn builds_are_reproducible_and_a_loaded_graph_answers_alike() {
        let texts = texts(2000);
        let (vectors, embedder) = vectors(&texts);
        let first = AnnSegment::build(embedder.dimensions(), vectors.clone().into_iter());
        let second = AnnSegment::build(embedder.dimensions(), vectors.clone().into_iter());
        let directory = tempfile::tempdir().expect("a temporary directory");
        first.save(directory.path(), "segment-1").expect("saved");
        let seqs: Vec<u64> = vectors.iter().map(|(seq, _)| *seq).collect();
        let loaded =
            AnnSegment::load(directory.path(), "segment-1", embedder.dimensions(), seqs.clone()).expect("loaded");
        for query in ["note 7", "cache 2 and token 3", "module m50", "nothing like it"] {
            let query = embedder.embed(query);
            let hits = first.search(&query, 10, 32, None);
            assert_eq!(hits, second.search(&query, 10, 32, None));
            assert_eq!(hits, loaded.search(&query, 10, 32, None));
        }
        let wrong = AnnSegment::load(directory.path(), "segment-1", embedder.dimensions(), seqs[1..].to_vec());
        assert!(matches!(wrong, Err(IndexError::Ann(message)) if message.contains("1999 were recorded")));
        let missing = AnnSegment::load(directory.path(), "segment-2", embedder.dimensions(), seqs);
        assert!(matches!(missing, Err(IndexError::Ann(message)) if message.contains("segment-2")));
    }

    #[test]
    fn an_empty_segment_finds_nothing() {
        let segment = AnnSegment::build(8, std::iter::empty::<(u64, QuantizedVector)>().collect::<Vec<_>>().into_iter());
        assert!(segment.is_empty());
        assert!(segment.search(&[0.5; 8], 5, 16, None).is_empty());
    }
}
