//! An approximate nearest-neighbour graph over quantized vectors
//! (hnsw_rs's HNSW), for memories too large to scan.
//!
//! A graph grows one insert at a time, in the order its owner gives
//! (arrival order, which for a memory is log order). hnsw_rs draws each
//! node's layer from a generator seeded with a constant, so the same
//! vectors inserted in the same order build the same graph on every run: a
//! replay builds what the live process built. A graph saved and loaded is
//! the graph that was saved; but the loaded one's layer generator starts
//! again from its seed, so the nodes inserted after a restart may take
//! other layers than they would have without it. That changes which near
//! neighbours a search may miss, never the score of one it finds.
//!
//! The graph holds each vector as its 8-bit values followed by the four
//! bytes of its scale ([`encode`]), and measures `1 - cosine` between two
//! such vectors ([`ScaledCosine`]). A search walks the graph with the query
//! quantized the same way, then scores every candidate it returns with the
//! float query against the 8-bit vector, exactly as the exact scan of
//! [`crate::vector`] scores it: the two tiers give one item one score.

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// The dot product of two 8-bit vectors, exactly: integer sums are
/// associative, so any vectorisation gives the same result, and the AVX2
/// one (16 products at a time) is taken when the CPU has it.
#[allow(unsafe_code, reason = "calls the AVX2 kernel once the CPU was found to have it")]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU was just found to have the instructions.
        return unsafe { dot_i8_avx2(a, b) };
    }
    dot_i8_portable(a, b)
}

/// Sixteen values at a time: widened to 16 bits, multiplied and summed
/// in pairs into eight 32-bit lanes (`vpmaddwd`), which cannot overflow
/// (two products of at most 128² each).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(unsafe_code, reason = "unaligned loads of 16 bytes within the slices' bounds")]
fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi32, _mm_cvtsi128_si32, _mm_hadd_epi32, _mm_loadu_si128, _mm256_add_epi32,
        _mm256_cvtepi8_epi16, _mm256_extracti128_si256, _mm256_madd_epi16, _mm256_setzero_si256,
    };
    let length = a.len().min(b.len());
    let chunks = length / 16;
    let mut sum = _mm256_setzero_si256();
    for chunk in 0..chunks {
        // SAFETY: bytes `16 * chunk .. 16 * chunk + 16` lie within both slices.
        let (x, y) = unsafe {
            (
                _mm_loadu_si128(a.as_ptr().add(16 * chunk).cast::<__m128i>()),
                _mm_loadu_si128(b.as_ptr().add(16 * chunk).cast::<__m128i>()),
            )
        };
        sum = _mm256_add_epi32(sum, _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), _mm256_cvtepi8_epi16(y)));
    }
    let halves = _mm_add_epi32(_mm256_extracti128_si256::<0>(sum), _mm256_extracti128_si256::<1>(sum));
    let pairs = _mm_hadd_epi32(halves, halves);
    let total = _mm_cvtsi128_si32(_mm_hadd_epi32(pairs, pairs));
    total + dot_i8_portable(&a[16 * chunks..length], &b[16 * chunks..length])
}

#[inline(always)]
fn dot_i8_portable(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(x, y)| i32::from(i16::from(*x) * i16::from(*y))).sum()
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
    match encoded.split_last_chunk::<SCALE_BYTES>() {
        Some((values, scale)) => (values, f32::from_le_bytes(scale.map(|byte| byte as u8))),
        None => (&[], 0.0),
    }
}

/// An HNSW graph of quantized vectors, grown one insert at a time.
/// Inserts take `&self` (one thread inserts, searches read meanwhile).
pub struct AnnGraph {
    graph: Hnsw<'static, i8, ScaledCosine>,
    dimensions: usize,
    /// Vectors inserted.
    count: AtomicUsize,
    /// Held by an insert, and by a save: a saved graph is whole.
    writing: Mutex<()>,
}

impl std::fmt::Debug for AnnGraph {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("AnnGraph").field("dimensions", &self.dimensions).field("vectors", &self.len()).finish()
    }
}

impl AnnGraph {
    /// An empty graph for vectors of `dimensions` values, sized for about
    /// `capacity` of them (it grows past that).
    pub fn new(dimensions: usize, capacity: usize) -> AnnGraph {
        AnnGraph {
            graph: Hnsw::new(MAX_CONNECTIONS, capacity.max(1), MAX_LAYERS, EF_CONSTRUCTION, ScaledCosine),
            dimensions,
            count: AtomicUsize::new(0),
            writing: Mutex::new(()),
        }
    }

    /// A graph of `vectors`, inserted in the order given.
    pub fn build(dimensions: usize, vectors: impl ExactSizeIterator<Item = (u64, QuantizedVector)>) -> AnnGraph {
        let graph = AnnGraph::new(dimensions, vectors.len());
        for (seq, vector) in vectors {
            graph.insert(seq, &vector);
        }
        graph
    }

    /// Links `seq`'s vector into the graph. The graph is a function of the
    /// vectors and the order of their inserts (hnsw_rs draws each node's
    /// layer from a generator seeded with a constant); callers insert from
    /// one thread, and each seq once.
    pub fn insert(&self, seq: u64, vector: &QuantizedVector) {
        debug_assert_eq!(vector.values.len(), self.dimensions);
        let _writing = self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.graph.insert_slice((&encode(vector), seq as usize));
        self.count.fetch_add(1, Ordering::Release);
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// How many vectors it holds.
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The seqs it holds, in no order.
    pub fn seqs(&self) -> Vec<u64> {
        let _writing = self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.graph.get_point_indexation().into_iter().map(|point| point.get_origin_id() as u64).collect()
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
        if limit == 0 || self.is_empty() {
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
        let points = self.graph.get_point_indexation();
        let mut hits: Vec<(f32, u64)> = neighbours
            .iter()
            .filter_map(|neighbour| {
                let data = points.get_point_data(&neighbour.p_id)?;
                let (values, scale) = decode(&data);
                Some((dot_quantized(query, values) * scale, neighbour.d_id as u64))
            })
            .collect();
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        hits
    }

    /// Writes the graph to `directory` as hnsw_rs's two files,
    /// `{basename}.hnsw.graph` and `{basename}.hnsw.data`, replacing them;
    /// inserts wait meanwhile. Returns how many vectors it wrote.
    pub fn save(&self, directory: &Path, basename: &str) -> Result<usize, IndexError> {
        let _writing = self.writing.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        self.graph.file_dump(directory, basename).map_err(|error| {
            IndexError::Ann(format!("saving the graph {basename} in {}: {error:#}", directory.display()))
        })?;
        Ok(self.len())
    }

    /// Saves the graph as `{name}.hnsw.graph`, `{name}.hnsw.data` and
    /// `{name}.count` (how many vectors the files hold) in `directory`:
    /// written under temporary names, then renamed, the count last, so a
    /// save cut short leaves files [`AnnGraph::load_named`] refuses.
    /// Returns how many vectors it wrote.
    pub fn save_named(&self, directory: &Path, name: &str) -> Result<usize, IndexError> {
        let failed = |error: std::io::Error| {
            IndexError::Ann(format!("saving the graph {name} in {}: {error}", directory.display()))
        };
        std::fs::create_dir_all(directory).map_err(failed)?;
        let temporary = format!("{name}.saving");
        let count = self.save(directory, &temporary)?;
        for suffix in ["hnsw.graph", "hnsw.data"] {
            std::fs::rename(
                directory.join(format!("{temporary}.{suffix}")),
                directory.join(format!("{name}.{suffix}")),
            )
            .map_err(failed)?;
        }
        let count_file = directory.join(format!("{name}.count"));
        let written = directory.join(format!("{temporary}.count"));
        std::fs::write(&written, count.to_string()).map_err(failed)?;
        std::fs::rename(&written, &count_file).map_err(failed)?;
        Ok(count)
    }

    /// Reads a graph [`AnnGraph::save_named`] saved; `None` when there is
    /// none. Files that do not agree with each other, or that hnsw_rs
    /// cannot read (it panics on some), are refused.
    pub fn load_named(directory: &Path, name: &str, dimensions: usize) -> Result<Option<AnnGraph>, IndexError> {
        let count_file = directory.join(format!("{name}.count"));
        let count = match std::fs::read_to_string(&count_file) {
            Ok(count) => count,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(IndexError::Ann(format!("reading {}: {error}", count_file.display()))),
        };
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| IndexError::Ann(format!("{} does not hold a count", count_file.display())))?;
        let (directory, name) = (directory.to_path_buf(), name.to_string());
        let loaded = std::panic::catch_unwind(move || AnnGraph::load(&directory, &name, dimensions, count));
        loaded.map_err(|_| IndexError::Ann("hnsw_rs could not read the graph's files".to_string()))?.map(Some)
    }

    /// Reads a graph [`AnnGraph::save`] wrote, of vectors of `dimensions`
    /// values; `count` is how many the save said it wrote.
    pub fn load(directory: &Path, basename: &str, dimensions: usize, count: usize) -> Result<AnnGraph, IndexError> {
        let failed = |what: String| {
            IndexError::Ann(format!("loading the graph {basename} from {}: {what}", directory.display()))
        };
        for suffix in ["hnsw.graph", "hnsw.data"] {
            let path = directory.join(format!("{basename}.{suffix}"));
            if !path.is_file() {
                return Err(failed(format!("{} is missing", path.display())));
            }
        }
        // hnsw_rs ties a loaded graph's lifetime to its loader, for graphs
        // whose data stays memory-mapped; this one copies its data in, so
        // the loader (a path and a few options) is kept for the process.
        let loader: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(directory, basename)));
        let graph: Hnsw<'static, i8, ScaledCosine> =
            loader.load_hnsw().map_err(|error| failed(format!("{error:#}")))?;
        if graph.get_nb_point() != count {
            return Err(failed(format!("it holds {} vectors where {count} were saved", graph.get_nb_point())));
        }
        let held = graph.get_point_indexation().get_data_dimension();
        if count > 0 && held != dimensions + SCALE_BYTES {
            return Err(failed(format!(
                "its vectors have {} values where {dimensions} were expected",
                held.saturating_sub(SCALE_BYTES)
            )));
        }
        Ok(AnnGraph { graph, dimensions, count: AtomicUsize::new(count), writing: Mutex::new(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::{Embedder, HashedNgramEmbedder};
    use crate::vector::VectorIndex;

    fn texts(count: usize) -> Vec<String> {
        (0..count)
            .map(|n| format!("note {n} about cache {} and token {} in module m{}", n % 7, n % 11, n % 97))
            .collect()
    }

    fn vectors(texts: &[String]) -> (Vec<(u64, QuantizedVector)>, HashedNgramEmbedder) {
        let embedder = HashedNgramEmbedder::default();
        let vectors = texts
            .iter()
            .enumerate()
            .map(|(n, text)| (n as u64 + 1, QuantizedVector::of(&embedder.embed(text))))
            .collect();
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
        assert!((0.0..0.01).contains(&distance), "{distance}");
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
        let graph = AnnGraph::build(embedder.dimensions(), vectors.into_iter());
        assert_eq!(graph.len(), 3000);
        let mut found = 0;
        let queries = ["note 42 about cache 0", "token 5 in module m13", "cache 3 and token 7", "module m96"];
        for query in queries {
            let query = embedder.embed(query);
            let wanted = exact.search(&query, 10, None);
            let hits = graph.search(&query, 10, 64, None);
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
        let graph = AnnGraph::build(embedder.dimensions(), vectors.into_iter());
        let even = |seq: u64| seq.is_multiple_of(2);
        let hits = graph.search(&embedder.embed("cache 3"), 10, 64, Some(&even));
        assert_eq!(hits.len(), 10);
        assert!(hits.iter().all(|(_, seq)| even(*seq)), "{hits:?}");
    }

    /// The same vectors in the same order build the same graph: two builds
    /// and a saved and loaded one answer every query alike; a load checks
    /// what it reads.
    #[test]
    fn builds_are_reproducible_and_a_loaded_graph_answers_alike() {
        let texts = texts(2000);
        let (vectors, embedder) = vectors(&texts);
        let first = AnnGraph::build(embedder.dimensions(), vectors.clone().into_iter());
        let second = AnnGraph::build(embedder.dimensions(), vectors.clone().into_iter());
        let directory = tempfile::tempdir().expect("a temporary directory");
        assert_eq!(first.save(directory.path(), "graph-1").expect("saved"), 2000);
        let loaded = AnnGraph::load(directory.path(), "graph-1", embedder.dimensions(), 2000).expect("loaded");
        let mut seqs = loaded.seqs();
        seqs.sort_unstable();
        assert_eq!(seqs, (1..=2000).collect::<Vec<u64>>());
        for query in ["note 7", "cache 2 and token 3", "module m50", "nothing like it"] {
            let query = embedder.embed(query);
            let hits = first.search(&query, 10, 32, None);
            assert_eq!(hits, second.search(&query, 10, 32, None));
            assert_eq!(hits, loaded.search(&query, 10, 32, None));
        }
        let wrong = AnnGraph::load(directory.path(), "graph-1", embedder.dimensions(), 1999);
        assert!(matches!(&wrong, Err(IndexError::Ann(message)) if message.contains("1999 were saved")), "{wrong:?}");
        let other = AnnGraph::load(directory.path(), "graph-1", 7, 2000);
        assert!(matches!(&other, Err(IndexError::Ann(message)) if message.contains("7 were expected")), "{other:?}");
        let missing = AnnGraph::load(directory.path(), "graph-2", embedder.dimensions(), 2000);
        assert!(matches!(missing, Err(IndexError::Ann(message)) if message.contains("graph-2.hnsw.graph is missing")));
    }

    #[test]
    fn an_empty_graph_finds_nothing() {
        let graph = AnnGraph::new(8, 0);
        assert!(graph.is_empty());
        assert!(graph.search(&[0.5; 8], 5, 16, None).is_empty());
    }

    #[test]
    fn the_avx2_dot_product_equals_the_portable_one() {
        let a: Vec<i8> = (0..391).map(|n| ((n * 37) % 255) as i8).collect();
        let b: Vec<i8> = (0..391).map(|n| ((n * 101) % 253) as i8).collect();
        for length in [0, 5, 16, 17, 384, 391] {
            assert_eq!(dot_i8(&a[..length], &b[..length]), dot_i8_portable(&a[..length], &b[..length]));
        }
        let extreme = vec![-128i8; 384];
        assert_eq!(dot_i8(&extreme, &extreme), 384 * 128 * 128);
    }
}
