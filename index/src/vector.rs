//! The vector index over an agent's items: exact search over quantized
//! vectors, in two stages.
//!
//! Each vector is kept as 8-bit integers with one scale (`value ≈ q ×
//! scale`: 4 bytes a dimension become 1) and as a binary code, one bit a
//! dimension: the signs of the vector after a fixed random rotation. A
//! search scores every accepted item's code against the rotated query at
//! 4 bits (the query's magnitudes, the code's signs: [`QueryPlanes`]),
//! walks them best first, and scores the first [`RESCORE_POOL`] (or more,
//! for larger limits) by the dot product of the query with their 8-bit
//! vectors. Nothing is built on insert, so apply costs a quantization;
//! nothing is rebuilt on restore, where the quantized vectors are read
//! back as they were; and a search is a pure function of the vectors and
//! the query, whatever order of commits or restarts led to them, so replay
//! answers like live by construction. Callers that hold the vectors' texts
//! score the best again at full precision (the memory's vector retriever
//! does).
//!
//! Measured on 100,000 Zipfian one-line texts with the default static
//! model (BENCHMARKS.md, "Issue 39, part 2"), recall@10 against exact
//! search over the unquantized vectors: 0.667 with the Hamming distance
//! between codes and 1,000 rescored (every search before); 0.785 with the
//! 4-bit query; 0.958 with 5,000 rescored and the best 20 scored again at
//! full precision.

/// How many candidates, best by their codes, are scored by their 8-bit
/// vectors at least. Recall@10 on 100,000 Zipfian texts, the best 20 then
/// scored at full precision: 0.814 at 1,000, 0.891 at 2,000, 0.945 at
/// 4,000, 0.958 at 5,000, 0.978 at 8,000 (BENCHMARKS.md).
const RESCORE_POOL: usize = 5000;
/// Candidates scored per result asked for, when that is more than the pool.
const RESCORE_PER_RESULT: usize = 10;

/// Dot product with eight independent accumulators. A plain sum is one
/// dependency chain the compiler may not reorder (float addition is not
/// associative), so it cannot use SIMD; eight lanes can, and the order of
/// additions is still fixed, so results are the same on every run.
#[cfg(test)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
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

/// [`dot`] of a float query with an 8-bit vector, before its scale.
pub(crate) fn dot_quantized(query: &[f32], quantized: &[i8]) -> f32 {
    const LANES: usize = 8;
    let mut lanes = [0.0f32; LANES];
    let q_chunks = query.chunks_exact(LANES);
    let v_chunks = quantized.chunks_exact(LANES);
    let tail: f32 = q_chunks.remainder().iter().zip(v_chunks.remainder()).map(|(x, y)| x * f32::from(*y)).sum();
    for (q_chunk, v_chunk) in q_chunks.zip(v_chunks) {
        for lane in 0..LANES {
            lanes[lane] += q_chunk[lane] * f32::from(v_chunk[lane]);
        }
    }
    lanes.iter().sum::<f32>() + tail
}

/// A vector as 8-bit integers and the scale that brings them back:
/// `value ≈ quantized × scale`, the largest magnitude mapped to ±127.
#[derive(Debug, Clone, PartialEq)]
pub struct QuantizedVector {
    pub scale: f32,
    pub values: Vec<i8>,
    /// Its binary code (see [`Rotation`]) as an index computed it, so that
    /// a restore need not rotate every vector again; empty when not known.
    pub code: Vec<u64>,
}

impl QuantizedVector {
    pub fn of(vector: &[f32]) -> QuantizedVector {
        let largest = vector.iter().fold(0.0f32, |largest, value| largest.max(value.abs()));
        if largest == 0.0 || !largest.is_finite() {
            return QuantizedVector { scale: 0.0, values: vec![0; vector.len()], code: Vec::new() };
        }
        let values = vector.iter().map(|value| (value / largest * 127.0).round() as i8).collect();
        QuantizedVector { scale: largest / 127.0, values, code: Vec::new() }
    }
}

/// A fixed random rotation of the vector space, so that one sign bit per
/// dimension tells vectors apart: without it, sparse vectors (the hashed
/// n-gram embedder's) and vectors whose mass sits in a few dimensions get
/// codes that are mostly alike. Two rounds of random sign flips and the
/// Walsh–Hadamard transform, over the dimensions padded to a power of two:
/// `O(d log d)`, the same additions in the same order on every run.
///
/// Recall@10 on 50,000 texts with a pool of 1,000: static model 0.94
/// unrotated, 0.97 rotated; hashed n-grams 0.44 unrotated, 0.98 rotated.
#[derive(Clone)]
struct Rotation {
    padded: usize,
    signs: [Vec<bool>; 2],
}

impl Rotation {
    const SEEDS: [u64; 2] = [0x9e37_79b9_7f4a_7c15, 0x0123_4567_89ab_cdef];

    fn new(dimensions: usize) -> Rotation {
        let padded = dimensions.max(1).next_power_of_two();
        let signs = Self::SEEDS.map(|seed| {
            let mut state = seed;
            (0..padded)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    state & 1 == 1
                })
                .collect()
        });
        Rotation { padded, signs }
    }

    fn words(&self) -> usize {
        self.padded.div_ceil(64)
    }

    /// `vector` rotated, over the padded dimensions.
    fn rotate(&self, vector: impl Iterator<Item = f32>) -> Vec<f32> {
        let mut rotated = vec![0.0f32; self.padded];
        for (slot, value) in rotated.iter_mut().zip(vector) {
            *slot = value;
        }
        for signs in &self.signs {
            for (value, flip) in rotated.iter_mut().zip(signs) {
                if *flip {
                    *value = -*value;
                }
            }
            walsh_hadamard(&mut rotated);
        }
        rotated
    }

    /// Appends the sign bits of the rotated `vector` to `codes`.
    fn push_code(&self, vector: impl Iterator<Item = f32>, codes: &mut Vec<u64>) {
        let rotated = self.rotate(vector);
        for chunk in rotated.chunks(64) {
            let mut word = 0u64;
            for (bit, value) in chunk.iter().enumerate() {
                if *value > 0.0 {
                    word |= 1 << bit;
                }
            }
            codes.push(word);
        }
    }
}

/// The unnormalised fast Walsh–Hadamard transform, in place; `values.len()`
/// is a power of two.
fn walsh_hadamard(values: &mut [f32]) {
    let mut half = 1;
    while half < values.len() {
        for block in values.chunks_exact_mut(half * 2) {
            let (left, right) = block.split_at_mut(half);
            for (a, b) in left.iter_mut().zip(right.iter_mut()) {
                let (x, y) = (*a, *b);
                *a = x + y;
                *b = x - y;
            }
        }
        half *= 2;
    }
}

/// Bits of the query's 4-bit levels: 4 planes.
const QUERY_BITS: usize = 4;
const _: () = assert!(QUERY_BITS == 4, "the kernel adds four planes");

/// How many candidates ahead of the one scored the walk prefetches.
const PREFETCH_AHEAD: usize = 8;

/// Asks the CPU to bring `values` into its cache; a hint, with no effect
/// on what any read returns.
#[allow(unsafe_code, reason = "a prefetch hint on memory inside a live slice")]
fn prefetch<T>(values: &[T]) {
    #[cfg(target_arch = "x86_64")]
    for line in 0..std::mem::size_of_val(values).div_ceil(64) {
        // SAFETY: the pointer is inside a live slice (a non-empty one: the
        // range is empty otherwise); a prefetch reads nothing the program
        // sees and cannot fault.
        unsafe {
            let byte = values.as_ptr().cast::<i8>().add(line * 64);
            std::arch::x86_64::_mm_prefetch(byte, std::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = values;
}

/// The rotated query at 4 bits, as bit planes over the code's words: the
/// first stage scores each code against it by `QUERY_BITS` popcounts a
/// word, the query's magnitudes kept where the Hamming distance between
/// two codes keeps only its signs.
struct QueryPlanes {
    /// Per code word, bit `b` of the level of each of its dimensions.
    planes: Vec<[u64; QUERY_BITS]>,
    words: usize,
    /// What a set bit of a code adds besides its level: the lowest
    /// rotated value in levels' widths (negative unless every value is
    /// positive), times [`LEVEL_SCALE`].
    offset_per_bit: i64,
    /// The highest estimate any code could reach: a distance is `most -
    /// estimate`.
    most: i64,
    /// The highest distance any code could be at.
    range: usize,
}

/// Fixed-point scale of `offset_per_bit`: levels are integers, the offset
/// is not.
const LEVEL_SCALE: i64 = 4;

impl QueryPlanes {
    /// The code of a vector `x` has a bit set where its rotation is
    /// positive; `<r, x>` is estimated, up to a scale and a constant, by
    /// the sum of the rotated query `r` over those bits. With `r_i ≈ low +
    /// width * level_i`, that sum is `low * popcount + width * Σ level`:
    /// in units of `width`, `Σ level + (low / width) * popcount`.
    fn of(rotated: &[f32], words: usize) -> QueryPlanes {
        let levels = (1u32 << QUERY_BITS) - 1;
        let (low, high) =
            rotated.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(low, high), v| (low.min(*v), high.max(*v)));
        let width = if high > low && (high - low).is_finite() { (high - low) / levels as f32 } else { 1.0 };
        let low = if low.is_finite() { low } else { 0.0 };
        let mut planes = vec![[0u64; QUERY_BITS]; words];
        for (dimension, value) in rotated.iter().enumerate() {
            let level = (((value - low) / width).round() as u32).min(levels);
            for (bit, plane) in planes[dimension / 64].iter_mut().enumerate() {
                if level >> bit & 1 == 1 {
                    *plane |= 1 << (dimension % 64);
                }
            }
        }
        let offset_per_bit = ((low / width) * LEVEL_SCALE as f32).round() as i64;
        let bits = (words * 64) as i64;
        // An estimate runs from `bits * min(offset, 0)` (every bit set and
        // no level) to `bits * (levels + max(offset, 0))`.
        let most = bits * (i64::from(levels) * LEVEL_SCALE + offset_per_bit.max(0));
        let range = most - bits * offset_per_bit.min(0);
        QueryPlanes { planes, words, offset_per_bit, most, range: range as usize }
    }

    /// Each code's distance to the query, `best - estimate` (lower is
    /// nearer), into `distances`.
    #[allow(unsafe_code, reason = "calls the popcnt kernel once the CPU was found to have it")]
    fn distances(&self, codes: &[u64], distances: &mut Vec<u32>) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("popcnt") {
            // SAFETY: the CPU was just found to have the instruction.
            unsafe { self.distances_popcnt(codes, distances) };
            return;
        }
        self.distances_portable(codes, distances);
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "popcnt")]
    fn distances_popcnt(&self, codes: &[u64], distances: &mut Vec<u32>) {
        self.distances_portable(codes, distances);
    }

    #[inline(always)]
    fn distances_portable(&self, codes: &[u64], distances: &mut Vec<u32>) {
        distances.clear();
        for code in codes.chunks_exact(self.words) {
            let (mut levels, mut set) = (0u32, 0u32);
            for (bits, plane) in code.iter().zip(&self.planes) {
                set += bits.count_ones();
                levels += (bits & plane[0]).count_ones()
                    + ((bits & plane[1]).count_ones() << 1)
                    + ((bits & plane[2]).count_ones() << 2)
                    + ((bits & plane[3]).count_ones() << 3);
            }
            let estimate = i64::from(levels) * LEVEL_SCALE + i64::from(set) * self.offset_per_bit;
            distances.push((self.most - estimate).clamp(0, self.range as i64) as u32);
        }
    }
}

pub struct VectorIndex {
    dimensions: usize,
    rotation: Rotation,
    /// Code words per vector.
    words: usize,
    /// The seq of each vector, ascending (callers insert in seq order).
    seqs: Vec<u64>,
    codes: Vec<u64>,
    values: Vec<i8>,
    scales: Vec<f32>,
}

impl VectorIndex {
    pub fn new(dimensions: usize) -> VectorIndex {
        let rotation = Rotation::new(dimensions);
        VectorIndex {
            dimensions,
            words: rotation.words(),
            rotation,
            seqs: Vec::new(),
            codes: Vec::new(),
            values: Vec::new(),
            scales: Vec::new(),
        }
    }

    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.seqs.len()
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    /// How many vectors the index holds.
    pub fn seq_count(&self) -> usize {
        self.seqs.len()
    }

    /// Whether the index holds a vector of `seq`.
    pub fn contains(&self, seq: u64) -> bool {
        self.seqs.binary_search(&seq).is_ok()
    }

    /// The vector of `seq`, as [`VectorIndex::quantized`] gives it.
    pub fn quantized_of(&self, seq: u64) -> Option<QuantizedVector> {
        self.seqs.binary_search(&seq).ok().map(|position| self.quantized_at(position))
    }

    /// The cosine similarity of the item at `seq` to `query`, as a search
    /// scores it; `None` when the index does not hold it.
    pub fn similarity(&self, seq: u64, query: &[f32]) -> Option<f32> {
        let position = self.seqs.binary_search(&seq).ok()?;
        let values = &self.values[position * self.dimensions..(position + 1) * self.dimensions];
        Some(dot_quantized(query, values) * self.scales[position])
    }

    /// Adds the vector of the item at `seq`. Callers insert in seq order.
    pub fn insert(&mut self, seq: u64, vector: &[f32]) {
        self.insert_quantized(seq, QuantizedVector::of(vector));
    }

    /// Adds a vector as [`VectorIndex::quantized`] gave it: what a restore
    /// does, so that it holds exactly what the live index held.
    pub fn insert_quantized(&mut self, seq: u64, vector: QuantizedVector) {
        debug_assert_eq!(vector.values.len(), self.dimensions);
        debug_assert!(self.seqs.last().is_none_or(|last| *last < seq), "vectors are inserted in seq order");
        let mut values = vector.values;
        values.resize(self.dimensions, 0);
        // The code is computed from what is kept, so that a restored index,
        // which reads back only that, has the same codes as the live one.
        let scale = vector.scale;
        if vector.code.len() == self.words {
            self.codes.extend_from_slice(&vector.code);
        } else {
            self.rotation.push_code(values.iter().map(|value| f32::from(*value) * scale), &mut self.codes);
        }
        self.values.extend_from_slice(&values);
        self.scales.push(vector.scale);
        self.seqs.push(seq);
    }

    /// Keeps only the vectors whose seq `keep` accepts, in order: a purge
    /// takes the purged items' vectors out (nothing else depends on them).
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let mut kept = self.empty_like();
        for position in 0..self.seqs.len() {
            if keep(self.seqs[position]) {
                kept.push_from(self, position);
            }
        }
        *self = kept;
    }

    /// The vectors of both indexes (of the same dimensions, no seq in
    /// both), in seq order.
    pub fn merged(&self, other: &VectorIndex) -> VectorIndex {
        let mut merged = self.empty_like();
        let (mut left, mut right) = (0, 0);
        while left < self.seqs.len() || right < other.seqs.len() {
            let take_left =
                right == other.seqs.len() || (left < self.seqs.len() && self.seqs[left] < other.seqs[right]);
            if take_left {
                merged.push_from(self, left);
                left += 1;
            } else {
                merged.push_from(other, right);
                right += 1;
            }
        }
        merged
    }

    fn empty_like(&self) -> VectorIndex {
        VectorIndex {
            dimensions: self.dimensions,
            rotation: self.rotation.clone(),
            words: self.words,
            seqs: Vec::new(),
            codes: Vec::new(),
            values: Vec::new(),
            scales: Vec::new(),
        }
    }

    /// Copies `from`'s vector at `position` to the end, code and all.
    fn push_from(&mut self, from: &VectorIndex, position: usize) {
        debug_assert!(self.seqs.last().is_none_or(|last| *last < from.seqs[position]));
        self.seqs.push(from.seqs[position]);
        self.codes.extend_from_slice(&from.codes[position * from.words..(position + 1) * from.words]);
        self.values.extend_from_slice(&from.values[position * from.dimensions..(position + 1) * from.dimensions]);
        self.scales.push(from.scales[position]);
    }

    /// The newest seq held.
    pub fn last_seq(&self) -> Option<u64> {
        self.seqs.last().copied()
    }

    fn quantized_at(&self, position: usize) -> QuantizedVector {
        let values = self.values[position * self.dimensions..(position + 1) * self.dimensions].to_vec();
        let code = self.codes[position * self.words..(position + 1) * self.words].to_vec();
        QuantizedVector { scale: self.scales[position], values, code }
    }

    /// The `limit` nearest items accepted by `accept` (all when `None`), as
    /// (cosine similarity, seq), best first; equal similarities rank the
    /// newer item first. `accept` is asked only about the candidates walked,
    /// nearest first, until the pool is full.
    #[cfg(test)]
    pub fn search(&self, query: &[f32], limit: usize, accept: Option<&dyn Fn(u64) -> bool>) -> Vec<(f32, u64)> {
        VectorIndex::search_all(&[self], query, limit, accept)
    }

    /// Searches several indexes (of the same dimensions) as if they were
    /// one: the same candidates, order and scores as one index holding all
    /// their vectors would give. Candidates are walked by their codes'
    /// distance to the query (a counting sort: distances are integers
    /// within [`QueryPlanes`]'s range), the newer first among equals, until
    /// the pool is full.
    pub fn search_all(
        indexes: &[&VectorIndex],
        query: &[f32],
        limit: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> Vec<(f32, u64)> {
        VectorIndex::search_all_scoring(indexes, query, limit, rescore_pool(limit), accept)
    }

    /// [`VectorIndex::search_all`], scoring `pool` candidates by their
    /// 8-bit vectors (at least `limit`): for measuring what the pool buys.
    pub fn search_all_scoring(
        indexes: &[&VectorIndex],
        query: &[f32],
        limit: usize,
        pool: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> Vec<(f32, u64)> {
        if limit == 0 {
            return Vec::new();
        }
        ScanOrder::of(indexes, query).best(query, limit, pool, accept)
    }

    /// Every (seq, quantized vector), in seq order.
    pub fn quantized(&self) -> impl Iterator<Item = (u64, QuantizedVector)> + '_ {
        (0..self.seqs.len()).map(|position| (self.seqs[position], self.quantized_at(position)))
    }
}

/// How many candidates a search for `limit` scores by their 8-bit vectors.
pub(crate) fn rescore_pool(limit: usize) -> usize {
    RESCORE_POOL.max(limit.saturating_mul(RESCORE_PER_RESULT))
}

/// The first stage of a search over several indexes (of the same
/// dimensions) for one query: every vector's distance as its code
/// estimates it, and the order the second stage walks them in (nearest
/// first, the newer first among equals: a counting sort, distances being
/// integers within [`QueryPlanes`]'s range). A search that asks the same
/// query again under other filters (the memory's passes over the time and
/// the people a question names) computes it once.
pub struct ScanOrder<'a> {
    indexes: Vec<&'a VectorIndex>,
    /// Every vector as (index, position), newest first.
    newest_first: Vec<(u32, u32)>,
    /// Ranks into `newest_first`, nearest first.
    order: Vec<u32>,
}

impl<'a> ScanOrder<'a> {
    pub fn of(indexes: &[&'a VectorIndex], query: &[f32]) -> ScanOrder<'a> {
        let indexes: Vec<&VectorIndex> = indexes.iter().copied().filter(|index| !index.seqs.is_empty()).collect();
        let Some(first) = indexes.first() else {
            return ScanOrder { indexes, newest_first: Vec::new(), order: Vec::new() };
        };
        debug_assert!(indexes.iter().all(|index| index.dimensions == first.dimensions));
        let planes = QueryPlanes::of(&first.rotation.rotate(query.iter().copied()), first.words);
        let distances: Vec<Vec<u32>> = indexes
            .iter()
            .map(|index| {
                let mut distances = Vec::with_capacity(index.seqs.len());
                planes.distances(&index.codes, &mut distances);
                distances
            })
            .collect();
        // Every vector, newest first: a merge of the indexes' seq orders.
        let total: usize = indexes.iter().map(|index| index.seqs.len()).sum();
        let mut newest_first: Vec<(u32, u32)> = Vec::with_capacity(total);
        let mut remaining: Vec<usize> = indexes.iter().map(|index| index.seqs.len()).collect();
        if let [only] = indexes.as_slice() {
            newest_first.extend((0..only.seqs.len() as u32).rev().map(|position| (0, position)));
            remaining[0] = 0;
        }
        loop {
            let next = (0..indexes.len())
                .filter(|which| remaining[*which] > 0)
                .max_by_key(|which| indexes[*which].seqs[remaining[*which] - 1]);
            let Some(which) = next else { break };
            remaining[which] -= 1;
            newest_first.push((which as u32, remaining[which] as u32));
        }
        // By distance (a counting sort), newest first among equals.
        let mut starts = vec![0u32; planes.range + 2];
        for (which, position) in &newest_first {
            starts[distances[*which as usize][*position as usize] as usize + 1] += 1;
        }
        for bucket in 1..starts.len() {
            starts[bucket] += starts[bucket - 1];
        }
        let mut order = vec![0u32; total];
        for (rank, (which, position)) in newest_first.iter().enumerate() {
            let bucket = &mut starts[distances[*which as usize][*position as usize] as usize];
            order[*bucket as usize] = rank as u32;
            *bucket += 1;
        }
        ScanOrder { indexes, newest_first, order }
    }

    /// The best `limit` of the vectors `accept` keeps: the first `pool` of
    /// them in walking order (at least `limit`) scored by their 8-bit
    /// vectors, best first.
    pub fn best(
        &self,
        query: &[f32],
        limit: usize,
        pool: usize,
        accept: Option<&dyn Fn(u64) -> bool>,
    ) -> Vec<(f32, u64)> {
        let pool = pool.max(limit);
        let mut hits: Vec<(f32, u64)> = Vec::with_capacity(pool.min(self.order.len()));
        for (walked, rank) in self.order.iter().enumerate() {
            // The candidates lie anywhere in the index: ask for the 8-bit
            // values of one a few steps ahead while this one is scored.
            // So are its seq and scale, and the position of the one after.
            if let Some(ahead) = self.order.get(walked + PREFETCH_AHEAD) {
                let (which, position) = self.newest_first[*ahead as usize];
                let (index, position) = (self.indexes[which as usize], position as usize);
                prefetch(&index.values[position * index.dimensions..][..index.dimensions]);
                prefetch(std::slice::from_ref(&index.seqs[position]));
                prefetch(std::slice::from_ref(&index.scales[position]));
            }
            if let Some(further) = self.order.get(walked + 2 * PREFETCH_AHEAD) {
                prefetch(std::slice::from_ref(&self.newest_first[*further as usize]));
            }
            let (which, position) = self.newest_first[*rank as usize];
            let (index, position) = (self.indexes[which as usize], position as usize);
            let seq = index.seqs[position];
            if accept.is_some_and(|accept| !accept(seq)) {
                continue;
            }
            let values = &index.values[position * index.dimensions..(position + 1) * index.dimensions];
            hits.push((dot_quantized(query, values) * index.scales[position], seq));
            if hits.len() == pool {
                break;
            }
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        hits
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
    fn scores_are_the_cosine_within_quantization_error() {
        let embedder = HashedNgramEmbedder::default();
        let texts = ["token refresh failed", "database migration done", "cache eviction under load"];
        let mut index = VectorIndex::new(embedder.dimensions());
        for (position, text) in texts.iter().enumerate() {
            index.insert(position as u64 + 1, &embedder.embed(text));
        }
        let query = embedder.embed("token refresh failure in the cache");
        for (score, seq) in index.search(&query, 3, None) {
            let exact = dot(&query, &embedder.embed(texts[seq as usize - 1]));
            assert!((score - exact).abs() < 0.02, "seq {seq}: {score} against {exact}");
        }
    }

    /// Past the pool, the binary codes choose what is scored: the nearest
    /// by exact cosine must still come first on a corpus with structure.
    #[test]
    fn the_binary_stage_keeps_the_nearest_in_a_large_index() {
        let texts: Vec<String> = (0..5000)
            .map(|n| format!("note {n} about cache {} and token {} in module m{}", n % 7, n % 11, n % 97))
            .collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (index, embedder) = index_of(&texts);
        let mut found = 0;
        let queries = ["note 4242 about cache 0", "token 5 in module m13", "cache 3 and token 7"];
        for query in queries {
            let vector = embedder.embed(query);
            let mut exact: Vec<(f32, u64)> =
                texts.iter().enumerate().map(|(n, text)| (dot(&vector, &embedder.embed(text)), n as u64 + 1)).collect();
            exact.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
            let hits: Vec<u64> = index.search(&vector, 10, None).into_iter().map(|(_, seq)| seq).collect();
            found += exact[..10].iter().filter(|(_, seq)| hits.contains(seq)).count();
        }
        assert!(found >= 28, "{found} of the 30 nearest found");
    }

    #[test]
    fn identical_inserts_answer_identically_and_a_restore_too() {
        let texts: Vec<String> =
            (0..3000).map(|n| format!("note {n} about cache {} and token {}", n % 7, n % 11)).collect();
        let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (first, embedder) = index_of(&texts);
        let (second, _) = index_of(&texts);
        let mut restored = VectorIndex::new(embedder.dimensions());
        for (seq, vector) in first.quantized() {
            restored.insert_quantized(seq, vector);
        }
        for query in ["cache 3", "token 5", "note 42"] {
            let query = embedder.embed(query);
            let hits = first.search(&query, 10, None);
            assert_eq!(hits, second.search(&query, 10, None));
            assert_eq!(hits, restored.search(&query, 10, None));
        }
        assert_eq!(first.len(), 3000);
    }

    /// Two indexes searched together answer as one index of all their
    /// vectors, whichever index holds which vector.
    #[test]
    fn indexes_searched_together_answer_as_one() {
        let embedder = HashedNgramEmbedder::default();
        let texts: Vec<String> =
            (0..400).map(|n| format!("item {n} about token {} and cache {}", n % 7, n % 13)).collect();
        let mut whole = VectorIndex::new(embedder.dimensions());
        let mut thirds = VectorIndex::new(embedder.dimensions());
        let mut rest = VectorIndex::new(embedder.dimensions());
        for (position, text) in texts.iter().enumerate() {
            let seq = position as u64 + 1;
            let vector = embedder.embed(text);
            whole.insert(seq, &vector);
            if seq.is_multiple_of(3) { &mut thirds } else { &mut rest }.insert(seq, &vector);
        }
        for query in ["token 3", "cache 12 item", "item 77"] {
            let vector = embedder.embed(query);
            assert_eq!(VectorIndex::search_all(&[&thirds, &rest], &vector, 10, None), whole.search(&vector, 10, None));
            let accept = |seq: u64| seq.is_multiple_of(2);
            assert_eq!(
                VectorIndex::search_all(&[&rest, &thirds], &vector, 10, Some(&accept)),
                whole.search(&vector, 10, Some(&accept))
            );
        }
    }

    #[test]
    fn merged_indexes_hold_every_vector_in_seq_order_with_the_same_codes() {
        let embedder = HashedNgramEmbedder::default();
        let mut odd = VectorIndex::new(embedder.dimensions());
        let mut even = VectorIndex::new(embedder.dimensions());
        let mut whole = VectorIndex::new(embedder.dimensions());
        for seq in 1..=9u64 {
            let vector = embedder.embed(&format!("text {seq}"));
            whole.insert(seq, &vector);
            if seq % 2 == 1 { &mut odd } else { &mut even }.insert(seq, &vector);
        }
        let merged = odd.merged(&even);
        assert_eq!(merged.seqs, whole.seqs);
        assert_eq!(merged.codes, whole.codes);
        assert_eq!(merged.values, whole.values);
    }

    #[test]
    fn retain_takes_vectors_out() {
        let (mut index, embedder) = index_of(&["alpha beta", "gamma delta", "alpha gamma"]);
        index.retain(|seq| seq != 1);
        let seqs: Vec<u64> = index.search(&embedder.embed("alpha beta"), 5, None).into_iter().map(|(_, s)| s).collect();
        assert_eq!(index.len(), 2);
        assert!(!seqs.contains(&1), "{seqs:?}");
    }

    /// The first stage's estimate is the sum of the rotated query over a
    /// code's set bits, within the query's 4-bit rounding: half a level
    /// per set bit, and the offset's fixed point.
    #[test]
    fn the_first_stage_estimates_the_query_summed_over_the_set_bits() {
        let embedder = HashedNgramEmbedder::default();
        let index = index_of(&["token refresh failed", "database migration done", "cache eviction under load", ""]).0;
        for query in ["token refresh failure", "a migration of the database", "z"] {
            let rotated = index.rotation.rotate(embedder.embed(query).into_iter());
            let planes = QueryPlanes::of(&rotated, index.words);
            let (low, high) = rotated.iter().fold((f32::MAX, f32::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
            let width = (high - low) / 15.0;
            let mut distances = Vec::new();
            planes.distances(&index.codes, &mut distances);
            assert_eq!(distances.len(), 4);
            for (code, distance) in index.codes.chunks_exact(index.words).zip(&distances) {
                assert!(*distance as usize <= planes.range);
                let bit = |dimension: usize| code[dimension / 64] >> (dimension % 64) & 1 == 1;
                let set = (0..rotated.len()).filter(|d| bit(*d)).count() as f32;
                let summed: f32 = (0..rotated.len()).filter(|d| bit(*d)).map(|d| rotated[d]).sum();
                let estimate = (planes.most - i64::from(*distance)) as f32 / LEVEL_SCALE as f32 * width;
                let bound = set * width * (0.5 + 0.5 / LEVEL_SCALE as f32) + 1e-4;
                assert!((estimate - summed).abs() <= bound, "{query}: {estimate} against {summed} (± {bound})");
            }
        }
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
        assert_eq!(index.quantized().count(), 0);
        assert!(index.search(&embedder.embed("anything"), 3, None).is_empty());
    }

    #[test]
    fn an_empty_text_vector_does_not_panic() {
        let (index, embedder) = index_of(&["", "something"]);
        assert_eq!(index.search(&embedder.embed(""), 5, None).len(), 2);
    }
}
