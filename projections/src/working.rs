//! The working tier: the most recent turns (messages and tool results) that
//! fit a token budget, oldest evicted first.

use std::collections::VecDeque;

use mneme_index::tokens;

/// One turn as the working tier shows it: cut to the per-item bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WorkingEntry {
    pub seq: u64,
    pub text: String,
    pub tokens: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct WorkingTier {
    budget_tokens: usize,
    item_max_tokens: usize,
    entries: VecDeque<WorkingEntry>,
    used_tokens: usize,
}

impl WorkingTier {
    pub fn new(budget_tokens: usize, item_max_tokens: usize) -> WorkingTier {
        WorkingTier { budget_tokens, item_max_tokens, entries: VecDeque::new(), used_tokens: 0 }
    }

    /// Adds a turn, cut to the per-item bound, and evicts the oldest turns
    /// until the tier fits its budget again.
    pub fn push(&mut self, seq: u64, text: &str) {
        let (text, tokens) = tokens::truncate(text, self.item_max_tokens);
        self.used_tokens += tokens;
        self.entries.push_back(WorkingEntry { seq, text, tokens });
        while self.used_tokens > self.budget_tokens {
            let Some(evicted) = self.entries.pop_front() else { break };
            self.used_tokens -= evicted.tokens;
        }
    }

    /// Drops a turn (forgotten or archived).
    pub fn remove(&mut self, seq: u64) {
        if let Some(position) = self.entries.iter().position(|entry| entry.seq == seq) {
            let removed = self.entries.remove(position).expect("position was just found");
            self.used_tokens -= removed.tokens;
        }
    }

    /// Oldest first.
    pub fn entries(&self) -> impl DoubleEndedIterator<Item = &WorkingEntry> + ExactSizeIterator {
        self.entries.iter()
    }

    #[cfg(test)]
    pub fn used_tokens(&self) -> usize {
        self.used_tokens
    }

    pub fn restore(budget_tokens: usize, item_max_tokens: usize, entries: Vec<WorkingEntry>) -> WorkingTier {
        let used_tokens = entries.iter().map(|entry| entry.tokens).sum();
        WorkingTier { budget_tokens, item_max_tokens, entries: entries.into(), used_tokens }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_turns_within_budget() {
        let mut tier = WorkingTier::new(20, 10);
        for seq in 1..=10 {
            tier.push(seq, "one two three four five");
        }
        assert!(tier.used_tokens() <= 20);
        let seqs: Vec<u64> = tier.entries().map(|entry| entry.seq).collect();
        assert_eq!(seqs.last(), Some(&10));
        assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]));
        assert_eq!(tier.used_tokens(), tier.entries().map(|entry| entry.tokens).sum::<usize>());
    }

    #[test]
    fn a_long_turn_is_cut_to_the_item_bound() {
        let mut tier = WorkingTier::new(1000, 10);
        tier.push(1, &"word ".repeat(500));
        let entry = tier.entries().next().unwrap();
        assert!(entry.tokens <= 10);
    }
}
