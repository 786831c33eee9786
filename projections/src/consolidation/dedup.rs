//! Near duplicates: candidates by MinHash LSH over content words, confirmed
//! by the lexical check ("tests pass" is never "tests fail") and by
//! embedding cosine, then grouped around a survivor.

use std::collections::{BTreeMap, BTreeSet};

use super::lexical::{ContentTerms, candidate_pairs, content_terms, lexically_equivalent, minhash};
use super::policy::ConsolidationPolicy;
use super::view::{ConsolidationView, is_live};
use crate::item::MemoryItem;
use crate::retrieval::embedded_text;

/// A group of near duplicates: the survivor answers for the others.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeVerdict {
    pub survivor: String,
    pub merged: Vec<String>,
    /// The lowest cosine between the survivor and a merged item.
    pub similarity: f32,
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let denominator = norm(a) * norm(b);
    if denominator == 0.0 { 0.0 } else { dot / denominator }
}

/// Which of two duplicates survives: the pinned, then the more important,
/// then the more cited, then the older (the first time it was said).
fn survivor_rank(item: &MemoryItem) -> (bool, u32, u32, std::cmp::Reverse<u64>) {
    let importance = (item.importance.unwrap_or(0.5) * 1000.0) as u32;
    (item.pinned, importance, item.citations, std::cmp::Reverse(item.seq))
}

pub fn merge_verdicts(view: &ConsolidationView, policy: &ConsolidationPolicy) -> Vec<MergeVerdict> {
    let candidates: Vec<&MemoryItem> = view
        .items
        .iter()
        .filter(|item| is_live(item) && policy.dedup_kinds.iter().any(|kind| kind == item.kind))
        .filter(|item| !view.in_open_contradictions.contains(&item.item_id))
        .collect();
    let terms: BTreeMap<u64, ContentTerms> =
        candidates.iter().map(|item| (item.seq, content_terms(&item.text))).collect();
    let signatures: Vec<_> = terms.iter().map(|(seq, terms)| (*seq, minhash(terms))).collect();
    let by_seq: BTreeMap<u64, &MemoryItem> = candidates.iter().map(|item| (item.seq, *item)).collect();
    let mut vectors: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    let mut confirmed: BTreeMap<u64, Vec<(u64, f32)>> = BTreeMap::new();
    for (first, second) in candidate_pairs(&signatures) {
        let (a, b) = (by_seq[&first], by_seq[&second]);
        if a.kind != b.kind || !lexically_equivalent(&terms[&first], &terms[&second]) {
            continue;
        }
        for item in [a, b] {
            vectors.entry(item.seq).or_insert_with(|| view.embedder.embed(embedded_text(&item.text)));
        }
        let similarity = cosine(&vectors[&first], &vectors[&second]);
        if similarity >= policy.dedup_cosine {
            confirmed.entry(first).or_default().push((second, similarity));
            confirmed.entry(second).or_default().push((first, similarity));
        }
    }
    // Survivors in rank order take their confirmed neighbours: a group is a
    // star around its survivor, so every merged item was checked against
    // the one that answers for it (no chains of "similar to similar").
    let mut order: Vec<u64> = confirmed.keys().copied().collect();
    order.sort_by_key(|seq| std::cmp::Reverse(survivor_rank(by_seq[seq])));
    let mut taken: BTreeSet<u64> = BTreeSet::new();
    let mut verdicts = Vec::new();
    for survivor in order {
        if taken.contains(&survivor) {
            continue;
        }
        let mut merged: Vec<(u64, f32)> = confirmed[&survivor]
            .iter()
            .copied()
            .filter(|(seq, _)| !taken.contains(seq) && !by_seq[seq].pinned)
            .collect();
        if merged.is_empty() {
            continue;
        }
        merged.sort_by_key(|(seq, _)| *seq);
        taken.insert(survivor);
        taken.extend(merged.iter().map(|(seq, _)| *seq));
        verdicts.push(MergeVerdict {
            survivor: by_seq[&survivor].item_id.clone(),
            similarity: merged.iter().map(|(_, similarity)| *similarity).fold(1.0, f32::min),
            merged: merged.iter().map(|(seq, _)| by_seq[seq].item_id.clone()).collect(),
        });
    }
    verdicts
}
