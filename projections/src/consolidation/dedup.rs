//! Near duplicates: candidates by MinHash LSH over content words, confirmed
//! by the lexical check ("tests pass" is never "tests fail") and by
//! embedding cosine, then grouped around a survivor.

use std::collections::{BTreeMap, BTreeSet};

use super::lexical::{
    ContentTerms, MinHashSignature, candidate_pairs, content_terms, lexically_equivalent, minhash, value_conflict,
};
use super::policy::ConsolidationPolicy;
use super::shared_scan::{SharedScan, cosine, is_dedup_candidate, is_shared};
use super::view::ConsolidationView;
use crate::item::MemoryItem;
use mneme_index::embed::embedded_text;

/// A group of near duplicates: the survivor answers for the others.
#[derive(Debug, Clone, PartialEq)]
pub struct MergeVerdict {
    pub survivor: String,
    pub merged: Vec<String>,
    /// The lowest cosine between the survivor and a merged item.
    pub similarity: f32,
}

/// Which of two duplicates survives in `agent`'s memory: the pinned, then
/// the agent's own (another agent's copy, whatever importance its
/// publisher gave it, never replaces what this agent said in its own
/// memory), then the more important, then the more cited, then the older
/// (the first time it was said).
fn survivor_rank(item: &MemoryItem, agent: &str) -> (bool, bool, u32, u32, std::cmp::Reverse<u64>) {
    let importance = (item.importance.unwrap_or(0.5) * 1000.0) as u32;
    (item.pinned, item.agent == agent, importance, item.citations, std::cmp::Reverse(item.seq))
}

/// `shared`: what the run worked out once for the swarm's shared items;
/// only the pairs with one of this memory's private items are compared
/// here.
/// Answers the merges, and the pairs (older seq, newer seq) that say the
/// same but for a value, which are contradictions rather than duplicates.
pub fn merge_verdicts(
    view: &ConsolidationView,
    policy: &ConsolidationPolicy,
    shared: &SharedScan,
) -> (Vec<MergeVerdict>, Vec<(u64, u64)>) {
    let candidates: Vec<&MemoryItem> = view
        .items
        .iter()
        .filter(|item| is_dedup_candidate(item, policy))
        .filter(|item| !view.in_open_contradictions.contains(&item.item_id))
        .collect();
    let from_shared = |item: &MemoryItem| is_shared(item) && shared.texts.contains_key(&item.seq);
    let own_terms: BTreeMap<u64, ContentTerms> = candidates
        .iter()
        .filter(|item| !from_shared(item))
        .map(|item| (item.seq, content_terms(item.text.body())))
        .collect();
    let own_signatures: BTreeMap<u64, MinHashSignature> =
        own_terms.iter().map(|(seq, terms)| (*seq, minhash(terms))).collect();
    let terms_of = |seq: u64| own_terms.get(&seq).unwrap_or_else(|| &shared.texts[&seq].terms);
    let signatures: Vec<(u64, &MinHashSignature)> = candidates
        .iter()
        .map(|item| (item.seq, own_signatures.get(&item.seq).unwrap_or_else(|| &shared.texts[&item.seq].signature)))
        .collect();
    let by_seq: BTreeMap<u64, &MemoryItem> = candidates.iter().map(|item| (item.seq, *item)).collect();
    let mut vectors: BTreeMap<u64, Vec<f32>> = BTreeMap::new();
    let mut confirmed: BTreeMap<u64, Vec<(u64, f32)>> = BTreeMap::new();
    let mut confirm = |first: u64, second: u64, similarity: f32| {
        confirmed.entry(first).or_default().push((second, similarity));
        confirmed.entry(second).or_default().push((first, similarity));
    };
    // A memory of shared items only has no pair left to compare itself.
    let pairs = if own_terms.is_empty() { Vec::new() } else { candidate_pairs(&signatures) };
    let mut conflicts = Vec::new();
    for (first, second) in pairs {
        let (a, b) = (by_seq[&first], by_seq[&second]);
        // Two shared items: compared once for the whole run, below.
        if (from_shared(a) && from_shared(b)) || a.kind != b.kind {
            continue;
        }
        let (a_terms, b_terms) = (terms_of(first), terms_of(second));
        let duplicate = lexically_equivalent(a_terms, b_terms);
        if !duplicate && !value_conflict(a_terms, b_terms) {
            continue;
        }
        for item in [a, b] {
            if !shared.vectors.contains_key(&item.seq) {
                vectors.entry(item.seq).or_insert_with(|| view.embedder.embed(embedded_text(item.text.body())));
            }
        }
        let vector = |seq: u64| shared.vectors.get(&seq).unwrap_or_else(|| &vectors[&seq]);
        let similarity = cosine(vector(first), vector(second));
        if similarity < policy.dedup_cosine {
            continue;
        }
        if duplicate {
            confirm(first, second, similarity);
        } else {
            conflicts.push((first.min(second), first.max(second)));
        }
    }
    for &(first, second, similarity) in &shared.duplicates {
        if by_seq.contains_key(&first) && by_seq.contains_key(&second) {
            confirm(first, second, similarity);
        }
    }
    conflicts.extend(
        shared
            .value_conflicts
            .iter()
            .filter(|(first, second)| by_seq.contains_key(first) && by_seq.contains_key(second))
            .copied(),
    );
    conflicts.sort_unstable();
    conflicts.dedup();
    // Each item's confirmed neighbours in seq order, whichever pass found
    // them.
    for neighbours in confirmed.values_mut() {
        neighbours.sort_by_key(|(seq, _)| *seq);
    }
    // Survivors in rank order take their confirmed neighbours: a group is a
    // star around its survivor, so every merged item was checked against
    // the one that answers for it (no chains of "similar to similar").
    let mut order: Vec<u64> = confirmed.keys().copied().collect();
    order.sort_by_key(|seq| std::cmp::Reverse(survivor_rank(by_seq[seq], &view.agent)));
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
    (verdicts, conflicts)
}
