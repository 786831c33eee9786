//! What a run works out once for the swarm's shared items, whoever holds
//! them: each shared message's or fact's content terms and MinHash
//! signature, and which pairs of them are near duplicates (MinHash
//! candidates confirmed by the lexical check and by embedding cosine).
//! Every memory of the swarm holds the same shared items, so without this
//! each agent's scan did that work again, on the same texts.
//!
//! Each agent's scan then reads it through its own view: a shared pair
//! counts for a memory only if both items are dedup candidates there (live,
//! not on a side of one of its open contradictions), and pairs with one of
//! the agent's private items are found and confirmed by its own scan, the
//! shared side's terms and signature taken from here.
//!
//! Texts are compared as their authors wrote them ([`ItemText::body`]), so
//! two agents' copies of the same words are the same words in every memory
//! (before, the other agents compared them with `(from author)` in front,
//! and short copies fell under the lexical threshold).
//!
//! [`ItemText::body`]: crate::item::ItemText::body

use std::collections::BTreeMap;

use mneme_events::Scope;

use super::lexical::{
    ContentTerms, MinHashSignature, candidate_pairs, content_terms, lexically_equivalent, minhash, value_conflict,
};
use super::policy::ConsolidationPolicy;
use super::view::{ConsolidationView, is_live};
use crate::item::MemoryItem;
use mneme_index::embed::embedded_text;

/// One shared item as the dedup pass compares it.
pub(crate) struct SharedText {
    pub(crate) kind: &'static str,
    pub(crate) terms: ContentTerms,
    pub(crate) signature: MinHashSignature,
}

/// The shared items of one run, compared once.
#[derive(Default)]
pub struct SharedScan {
    /// Every shared item of a dedup kind that is live in at least one of
    /// the memories read, by seq.
    pub(crate) texts: BTreeMap<u64, SharedText>,
    /// Confirmed near-duplicate pairs among them: (smaller seq, larger
    /// seq, cosine).
    pub(crate) duplicates: Vec<(u64, u64, f32)>,
    /// Pairs (older seq, newer seq) that say the same but for a value (see
    /// `lexical::value_conflict`): contradictions, not duplicates.
    pub(crate) value_conflicts: Vec<(u64, u64)>,
    /// The vectors embedded to confirm them, kept for the pairs an agent's
    /// scan finds between one of these and a private item.
    pub(crate) vectors: BTreeMap<u64, Vec<f32>>,
}

impl std::fmt::Debug for SharedScan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedScan")
            .field("texts", &self.texts.len())
            .field("duplicates", &self.duplicates.len())
            .field("vectors", &self.vectors.len())
            .finish()
    }
}

/// Whether the dedup pass compares the item at all (in some memory).
pub(crate) fn is_dedup_candidate(item: &MemoryItem, policy: &ConsolidationPolicy) -> bool {
    is_live(item) && policy.dedup_kinds.iter().any(|kind| kind == item.kind)
}

/// Whether the item is one of the swarm's shared items (held by every
/// memory that may see it), rather than its memory's own private one.
pub(crate) fn is_shared(item: &MemoryItem) -> bool {
    item.scope != Scope::Private
}

pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { dot / denominator }
}

impl SharedScan {
    /// Compares the shared items of `views` (the memories of one run):
    /// each item once, however many memories hold it.
    pub fn new(views: &[&ConsolidationView], policy: &ConsolidationPolicy) -> SharedScan {
        let mut items: BTreeMap<u64, &MemoryItem> = BTreeMap::new();
        for view in views {
            for item in view.items.iter().filter(|item| is_shared(item) && is_dedup_candidate(item, policy)) {
                items.entry(item.seq).or_insert(item);
            }
        }
        let texts: BTreeMap<u64, SharedText> = items
            .iter()
            .map(|(&seq, item)| {
                let terms = content_terms(item.text.body());
                let signature = minhash(&terms);
                (seq, SharedText { kind: item.kind, terms, signature })
            })
            .collect();
        let signatures: Vec<(u64, &MinHashSignature)> =
            texts.iter().map(|(seq, text)| (*seq, &text.signature)).collect();
        let mut vectors: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
        let mut duplicates = Vec::new();
        let mut value_conflicts = Vec::new();
        if let Some(view) = views.first() {
            for (first, second) in candidate_pairs(&signatures) {
                let (a, b) = (&texts[&first], &texts[&second]);
                if a.kind != b.kind {
                    continue;
                }
                let duplicate = lexically_equivalent(&a.terms, &b.terms);
                if !duplicate && !value_conflict(&a.terms, &b.terms) {
                    continue;
                }
                for seq in [first, second] {
                    vectors.entry(seq).or_insert_with(|| view.embedder.embed(embedded_text(items[&seq].text.body())));
                }
                let similarity = cosine(&vectors[&first], &vectors[&second]);
                if similarity < policy.dedup_cosine {
                    continue;
                }
                if duplicate {
                    duplicates.push((first, second, similarity));
                } else {
                    value_conflicts.push((first.min(second), first.max(second)));
                }
            }
        }
        SharedScan { texts, duplicates, value_conflicts, vectors }
    }

    /// Shared items compared.
    pub fn items(&self) -> usize {
        self.texts.len()
    }

    /// Near-duplicate pairs confirmed among them.
    pub fn duplicate_pairs(&self) -> usize {
        self.duplicates.len()
    }
}
