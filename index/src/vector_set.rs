//! Vectors by seq that may arrive in any order, searched as one
//! [`VectorIndex`]: the swarm's shared vectors (memories restored or
//! catching up take entries older than the newest), and the deep vectors
//! an enricher records after their items, in the order it computed them.

use std::collections::HashSet;

use crate::vector::{QuantizedVector, VectorIndex};

/// Once there are this many dropped vectors, and they are a quarter of the
/// set or more, the indexes are rebuilt without them.
const COMPACT_AFTER_DEAD: usize = 1024;
/// Vectors that arrive older than the newest wait in a small index of
/// their own, merged into the main one once it holds this many, or an
/// eighth of the main one.
const MERGE_LATE_AFTER: usize = 1024;

/// Two indexes, each in seq order: `main` takes the newest, `late` those
/// older than its newest. Dropped vectors wait for a compaction in `dead`:
/// readers filter by what they hold, so they never see them.
pub struct VectorSet {
    main: VectorIndex,
    late: VectorIndex,
    dead: HashSet<u64>,
}

impl VectorSet {
    pub fn new(dimensions: usize) -> VectorSet {
        VectorSet { main: VectorIndex::new(dimensions), late: VectorIndex::new(dimensions), dead: HashSet::new() }
    }

    pub fn dimensions(&self) -> usize {
        self.main.dimensions()
    }

    /// The indexes to search (with [`VectorIndex::search_all`]).
    pub fn indexes(&self) -> [&VectorIndex; 2] {
        [&self.main, &self.late]
    }

    /// How many vectors the indexes hold, dropped ones not yet compacted
    /// away included.
    pub fn len(&self) -> usize {
        self.main.seq_count() + self.late.seq_count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn quantized_of(&self, seq: u64) -> Option<QuantizedVector> {
        self.main.quantized_of(seq).or_else(|| self.late.quantized_of(seq))
    }

    /// Whether a vector of `seq` is held (dropped or not).
    pub fn contains(&self, seq: u64) -> bool {
        self.main.contains(seq) || self.late.contains(seq)
    }

    /// The cosine similarity of `seq`'s vector to `query`.
    pub fn similarity(&self, seq: u64, query: &[f32]) -> Option<f32> {
        self.main.similarity(seq, query).or_else(|| self.late.similarity(seq, query))
    }

    /// Adds `seq`'s vector; one already held (dropped or not) is kept as it
    /// is: callers give a seq one vector, a function of the log.
    pub fn insert(&mut self, seq: u64, vector: QuantizedVector) {
        if self.dead.remove(&seq) {
            // Still in an index.
            return;
        }
        if self.main.last_seq().is_none_or(|last| last < seq) {
            self.main.insert_quantized(seq, vector);
            return;
        }
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

    /// Drops `seq`'s vector, lazily: it is compacted away with others.
    pub fn drop_vector(&mut self, seq: u64) {
        if !self.contains(seq) {
            return;
        }
        self.dead.insert(seq);
        if self.dead.len() >= COMPACT_AFTER_DEAD && self.dead.len() * 4 >= self.len() {
            let dead = std::mem::take(&mut self.dead);
            self.main.retain(|seq| !dead.contains(&seq));
            self.late.retain(|seq| !dead.contains(&seq));
        }
    }

    /// Keeps only the vectors `keep` accepts, now.
    pub fn retain(&mut self, keep: impl Fn(u64) -> bool) {
        let dead = std::mem::take(&mut self.dead);
        self.main.retain(|seq| keep(seq) && !dead.contains(&seq));
        self.late.retain(|seq| keep(seq) && !dead.contains(&seq));
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
        for index in set.indexes() {
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
}
