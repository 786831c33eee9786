//! The generator's only source of randomness: one seeded stream, drawn
//! from in a fixed order, so the same seed gives the same swarm.

/// SplitMix64: small, fast, and the same on every platform and Rust
/// release, which neither std's hashers nor an outside crate promise.
pub(crate) struct SeededRandom {
    state: u64,
}

impl SeededRandom {
    pub(crate) fn new(seed: u64) -> SeededRandom {
        SeededRandom { state: seed ^ 0x6d6e_656d_655f_6576 }
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut mixed = self.state;
        mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        mixed ^ (mixed >> 31)
    }

    /// A number in `0..bound`; the modulo bias is negligible for the small
    /// bounds used here.
    pub(crate) fn below(&mut self, bound: usize) -> usize {
        (self.next_u64() % bound as u64) as usize
    }

    /// A number in `low..=high`.
    pub(crate) fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next_u64() % (high - low + 1)
    }

    pub(crate) fn chance(&mut self, probability: f64) -> bool {
        ((self.next_u64() >> 11) as f64 / (1u64 << 53) as f64) < probability
    }

    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// `count` distinct indices below `bound` (`count` <= `bound`).
    pub(crate) fn distinct<const N: usize>(&mut self, bound: usize) -> [usize; N] {
        let mut chosen = [0; N];
        for position in 0..N {
            chosen[position] = loop {
                let candidate = self.below(bound);
                if !chosen[..position].contains(&candidate) {
                    break candidate;
                }
            };
        }
        chosen
    }

    pub(crate) fn hex(&mut self, digits: usize) -> String {
        let text = format!("{:016x}", self.next_u64());
        text[..digits.min(16)].to_string()
    }
}
