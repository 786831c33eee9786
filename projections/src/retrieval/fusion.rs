//! How the retrievers' candidates become one ranking.
//!
//! Two ways, chosen by `[retrieval] fusion`:
//!
//! - **`score`** (the default): each retriever's scores are brought to
//!   `[0, 1]` and added, weighted. BM25 counts as the share of the score
//!   the query could reach at best in this memory, so a hit on a rare
//!   identifier weighs near 1 and one on two common words of a reworded
//!   question far less: BM25 speaks as loudly as it matched. Cosines go
//!   from the worst to the best of the vector candidates (over at least
//!   0.25, so that near-equal cosines stay near-equal); graph scores
//!   count as the graph ranking gives them (in `[0, 1]`). Every candidate's
//!   cosine is computed exactly, whichever
//!   retriever found it, so a hit BM25 found is not penalised for missing
//!   the vector list and equal vectors score equally. A rare word that BM25
//!   alone finds keeps its whole margin: rank-based fusion turned a BM25
//!   score of 11.4 against 3 into one rank step, the size of a rank step
//!   between two vector ties.
//! - **`rrf`**: reciprocal rank fusion (Cormack et al.),
//!   `sum(weight / (rrf_k + rank))`, the fusion of earlier releases.
//!
//! On top of either, small priors: recency (under score fusion it halves
//! with every week of age before the memory's newest item, a function of
//! the item alone), usage (cited more than ignored), the time the question
//! names, and the kind of item it asks for. Ties rank the newer item first, so a live memory and its
//! replay answer identically.

use std::collections::BTreeMap;

use super::{Ranking, RetrieverRank, SeqMap, SeqSet};

/// A pure function of the rankings: what [`fuse_scores`] needs to know.
pub(super) struct ScoreInputs<'a> {
    pub bm25: (f32, &'a Ranking),
    /// The highest BM25 score the query could reach in this memory: BM25
    /// scores count as their share of it (see
    /// `Bm25Index::best_possible_score`); 0 counts them by the best found.
    pub bm25_best_possible: f32,
    pub vector: (f32, &'a Ranking),
    /// The deep vectors' ranking; its weight is 0 when the query was not
    /// embedded by the deep model.
    pub deep: (f32, &'a Ranking),
    pub graph: (f32, &'a Ranking),
    /// Items holding the rare words of the best hits, scored by the best.
    pub expansion: (f32, &'a Ranking),
    /// Every candidate's cosine similarity to the query, found by the
    /// vector retriever or not (missing: no vector).
    pub cosine: &'a SeqMap<f32>,
    /// Every candidate's deep cosine, for those that took a deep vector.
    pub deep_cosine: &'a SeqMap<f32>,
    /// The conversation turn before a candidate, for replies found through
    /// what they answer, and how much of its score a reply takes.
    pub previous: &'a SeqMap<u64>,
    pub context_share: f32,
    pub usage: (f32, &'a Ranking),
    pub recency: f32,
    /// Each candidate's age in days before the memory's newest item: the
    /// recency prior halves every [`RECENCY_HALF_LIFE_DAYS`]. A function of
    /// the item alone, so that no other candidate moves it.
    pub ages: &'a SeqMap<f32>,
    /// Named boosts: the items in each set gain the weight.
    pub boosts: Vec<(&'static str, f32, SeqSet)>,
    /// What share of its retrievers' score and of its boosts a candidate
    /// keeps (missing: all of it): short messages that say little ("Ha, I
    /// love that.") match every question a little and answer none.
    pub keeps: &'a SeqMap<f32>,
}

/// The least cosine spread the vector scores are stretched over (see
/// `fuse_scores`).
const MIN_COSINE_SPREAD: f32 = 0.25;

/// The recency prior halves with every this many days of age.
pub(super) const RECENCY_HALF_LIFE_DAYS: f32 = 7.0;

/// What the `recency` prior adds at most, relative to one retriever's best.
const RECENCY_SCALE: f32 = 0.1;

/// Score fusion: see the module's documentation. Best first.
pub(super) fn fuse_scores(inputs: ScoreInputs) -> Vec<(f32, u64, Vec<RetrieverRank>)> {
    let mut candidates: BTreeMap<u64, Vec<RetrieverRank>> = BTreeMap::new();
    let rankings = [
        ("bm25", inputs.bm25.1),
        ("vector", inputs.vector.1),
        ("graph", inputs.graph.1),
        ("expansion", inputs.expansion.1),
        ("deep", inputs.deep.1),
    ];
    for (name, ranking) in rankings {
        for (position, (score, seq)) in ranking.iter().enumerate() {
            candidates.entry(*seq).or_default().push(RetrieverRank {
                retriever: name,
                rank: position + 1,
                score: *score,
            });
        }
    }
    // A reply joins the candidates when the turn it answers is one.
    let replies: SeqMap<u64> = inputs.previous.iter().map(|(reply, previous)| (*previous, *reply)).collect();
    let found: Vec<u64> = candidates.keys().copied().collect();
    for seq in found {
        if let Some(reply) = replies.get(&seq) {
            candidates.entry(*reply).or_default();
        }
    }

    let bm25 = if inputs.bm25_best_possible > 0.0 {
        inputs.bm25.1.iter().map(|(score, seq)| (*seq, (score / inputs.bm25_best_possible).min(1.0))).collect()
    } else {
        by_best(inputs.bm25.1)
    };
    // Graph scores are in [0, 1] already (see `graph_ranking`).
    let graph: SeqMap<f32> = inputs.graph.1.iter().map(|(score, seq)| (*seq, score.clamp(0.0, 1.0))).collect();
    let vector = cosine_scale(inputs.vector.1, inputs.cosine);
    let deep_only = cosine_scale(inputs.deep.1, inputs.deep_cosine);
    // An item without a deep vector (not enriched yet) counts its static
    // one here too: enrichment's backlog does not push it down.
    let deep = |seq: u64| -> f32 { if inputs.deep_cosine.contains_key(&seq) { deep_only(seq) } else { vector(seq) } };
    let usage = by_best(inputs.usage.1);
    let expansion = by_best(inputs.expansion.1);
    let recency: SeqMap<f32> =
        inputs.ages.iter().map(|(seq, days)| (*seq, 0.5f32.powf(days.max(0.0) / RECENCY_HALF_LIFE_DAYS))).collect();

    let mut hits: Vec<(f32, u64, Vec<RetrieverRank>)> = candidates
        .into_iter()
        .map(|(seq, mut ranks)| {
            let own = |map: &SeqMap<f32>, seq: u64| map.get(&seq).copied().unwrap_or(0.0);
            let context = inputs.previous.get(&seq).copied();
            let with_context = |score: &dyn Fn(u64) -> f32| -> f32 {
                let before = context.map_or(0.0, score);
                score(seq) + inputs.context_share * before
            };
            let bm25_part = with_context(&|seq| own(&bm25, seq));
            let vector_part = with_context(&vector);
            let deep_part = if inputs.deep.0 > 0.0 { with_context(&deep) } else { 0.0 };
            let keeps = inputs.keeps.get(&seq).copied().unwrap_or(1.0);
            let mut score = keeps
                * (inputs.bm25.0 * bm25_part
                    + inputs.vector.0 * vector_part
                    + inputs.deep.0 * deep_part
                    + inputs.graph.0 * own(&graph, seq)
                    + inputs.expansion.0 * own(&expansion, seq))
                + inputs.usage.0 * own(&usage, seq)
                + inputs.recency * RECENCY_SCALE * own(&recency, seq);
            if keeps < 1.0 {
                ranks.push(RetrieverRank { retriever: "brevity", rank: 0, score: keeps });
            }
            if context.is_some() && inputs.context_share > 0.0 {
                ranks.push(RetrieverRank { retriever: "context", rank: 0, score: inputs.context_share });
            }
            // A brief message keeps the same share of its boosts: said by
            // the person asked about, or in the month asked about, "Ha!
            // Classic." still answers nothing.
            for (name, weight, members) in &inputs.boosts {
                if members.contains(&seq) {
                    score += keeps * weight;
                    ranks.push(RetrieverRank { retriever: name, rank: 0, score: keeps * weight });
                }
            }
            (score, seq, ranks)
        })
        .collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    hits
}

/// Cosines brought to `[0, 1]`: from the worst to the best of `ranking`'s
/// candidates, over a spread of at least [`MIN_COSINE_SPREAD`] (among a
/// few candidates of near-equal cosines, min-max would turn a difference
/// of 0.01 into one of 1); 0 without a cosine.
fn cosine_scale<'a>(ranking: &Ranking, cosine: &'a SeqMap<f32>) -> impl Fn(u64) -> f32 + 'a {
    let (worst, best) = ranking
        .iter()
        .fold((f32::INFINITY, f32::NEG_INFINITY), |(low, high), (score, _)| (low.min(*score), high.max(*score)));
    let spread = (best - worst).max(MIN_COSINE_SPREAD);
    move |seq: u64| -> f32 {
        match cosine.get(&seq) {
            Some(cosine) if best.is_finite() => ((cosine - (best - spread)) / spread).clamp(0.0, 1.0),
            _ => 0.0,
        }
    }
}

/// Scores divided by the best one: `[0, 1]`, the best 1.
fn by_best(ranking: &Ranking) -> SeqMap<f32> {
    let best = ranking.iter().map(|(score, _)| *score).fold(0.0f32, f32::max);
    if best <= 0.0 {
        return SeqMap::default();
    }
    ranking.iter().map(|(score, seq)| (*seq, score / best)).collect()
}

/// One retriever's ranking as hits: its own scores, its own order.
pub(super) fn single(rankings: Vec<(&'static str, f32, Ranking)>) -> Vec<(f32, u64, Vec<RetrieverRank>)> {
    let Some((name, _, ranking)) = rankings.into_iter().next() else { return Vec::new() };
    ranking
        .into_iter()
        .enumerate()
        .map(|(position, (score, seq))| {
            (score, seq, vec![RetrieverRank { retriever: name, rank: position + 1, score }])
        })
        .collect()
}

/// Reciprocal rank fusion of the rankings, plus the recency prior over every
/// candidate. Best first; equal scores rank the newer item first.
pub(super) fn fuse(
    rankings: Vec<(&'static str, f32, Ranking)>,
    recency_weight: f32,
    rrf_k: f32,
) -> Vec<(f32, u64, Vec<RetrieverRank>)> {
    let mut fused: BTreeMap<u64, (f32, Vec<RetrieverRank>)> = BTreeMap::new();
    for (name, weight, ranking) in rankings {
        for (position, (score, seq)) in ranking.into_iter().enumerate() {
            let entry = fused.entry(seq).or_insert((0.0, Vec::new()));
            entry.0 += weight / (rrf_k + (position + 1) as f32);
            entry.1.push(RetrieverRank { retriever: name, rank: position + 1, score });
        }
    }
    if recency_weight > 0.0 {
        // Newest first: the BTreeMap is in seq order, so reverse it.
        for (position, (seq, entry)) in fused.iter_mut().rev().enumerate() {
            entry.0 += recency_weight / (rrf_k + (position + 1) as f32);
            entry.1.push(RetrieverRank { retriever: "recency", rank: position + 1, score: *seq as f32 });
        }
    }
    let mut hits: Vec<(f32, u64, Vec<RetrieverRank>)> =
        fused.into_iter().map(|(seq, (score, ranks))| (score, seq, ranks)).collect();
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs<'a>(
        bm25: &'a Ranking,
        vector: &'a Ranking,
        cosine: &'a SeqMap<f32>,
        previous: &'a SeqMap<u64>,
    ) -> ScoreInputs<'a> {
        static EMPTY: Ranking = Vec::new();
        static KEEPS_ALL: std::sync::LazyLock<SeqMap<f32>> = std::sync::LazyLock::new(SeqMap::default);
        ScoreInputs {
            bm25: (1.0, bm25),
            bm25_best_possible: 0.0,
            vector: (1.0, vector),
            deep: (0.0, &EMPTY),
            graph: (1.0, &EMPTY),
            expansion: (0.5, &EMPTY),
            cosine,
            deep_cosine: &KEEPS_ALL,
            previous,
            context_share: 0.5,
            usage: (0.25, &EMPTY),
            recency: 0.25,
            ages: &KEEPS_ALL,
            boosts: Vec::new(),
            keeps: &KEEPS_ALL,
        }
    }

    fn order(hits: &[(f32, u64, Vec<RetrieverRank>)]) -> Vec<u64> {
        hits.iter().map(|(_, seq, _)| *seq).collect()
    }

    #[test]
    fn rrf_rewards_agreement_and_breaks_ties_by_recency() {
        let rankings = vec![("bm25", 1.0, vec![(9.0, 1), (8.0, 2)]), ("vector", 1.0, vec![(0.9, 2), (0.8, 3)])];
        let fused = fuse(rankings, 0.0, 60.0);
        // Seq 2 is found by both retrievers, so it comes first; then seq 1
        // (rank 1 in bm25: 1/61) before seq 3 (rank 2 in vector: 1/62).
        assert_eq!(order(&fused), vec![2, 1, 3]);
        assert_eq!(fused[0].2.len(), 2);
        let tied = fuse(vec![("bm25", 1.0, vec![(1.0, 4)]), ("vector", 1.0, vec![(1.0, 7)])], 0.0, 60.0);
        assert_eq!(order(&tied), vec![7, 4]);
    }

    #[test]
    fn the_recency_prior_orders_otherwise_equal_hits() {
        let fused = fuse(vec![("bm25", 1.0, vec![(1.0, 5)]), ("vector", 1.0, vec![(1.0, 9)])], 0.25, 60.0);
        assert_eq!(fused[0].1, 9);
        assert!(fused[0].2.iter().any(|rank| rank.retriever == "recency" && rank.rank == 1));
    }

    /// Issue 21: a unique word BM25 ranks far ahead must not lose to newer
    /// items the vector model cannot tell apart from it.
    #[test]
    fn a_rare_word_bm25_finds_is_not_outvoted_by_vector_ties() {
        // Seq 10 holds the word (BM25 11.4); 11 to 14 are newer items whose
        // vectors equal its own, and which BM25 scores low.
        let bm25: Ranking = vec![(11.4, 10), (3.0, 14), (2.9, 13)];
        let vector: Ranking = vec![(0.95, 14), (0.95, 13), (0.95, 12), (0.95, 11), (0.95, 10), (0.40, 2)];
        let cosine: SeqMap<f32> = vector.iter().map(|(score, seq)| (*seq, *score)).collect();
        let fused = fuse_scores(inputs(&bm25, &vector, &cosine, &SeqMap::default()));
        assert_eq!(fused[0].1, 10, "{fused:?}");
        // Under RRF the same candidates put it behind a newer tie.
        let rrf = fuse(vec![("bm25", 1.0, bm25.clone()), ("vector", 1.0, vector.clone())], 0.25, 60.0);
        assert_ne!(rrf[0].1, 10);
    }

    #[test]
    fn a_reply_is_found_through_the_turn_it_answers() {
        // Turn 5 asks "how was the trip?" and BM25 finds it; turn 6, the
        // reply ("we just got back from Lisbon…"), shares no word with
        // the query and is only middling for the vector retriever.
        let bm25: Ranking = vec![(8.0, 5), (7.0, 40), (6.5, 41)];
        let vector: Ranking = vec![(0.8, 40), (0.7, 6), (0.6, 41), (0.3, 5)];
        let cosine: SeqMap<f32> = vector.iter().map(|(score, seq)| (*seq, *score)).collect();
        let previous = SeqMap::from_iter([(6, 5)]);
        let fused = fuse_scores(inputs(&bm25, &vector, &cosine, &previous));
        let rank_of = |seq: u64| order(&fused).iter().position(|found| *found == seq).unwrap();
        // The reply now ranks above the question it answers.
        assert!(rank_of(6) < rank_of(5), "{fused:?}");
        let without = fuse_scores(inputs(&bm25, &vector, &cosine, &SeqMap::default()));
        let rank_without = order(&without).iter().position(|found| *found == 6).unwrap();
        assert!(rank_of(6) < rank_without, "context lifts the reply: {fused:?}");
        // A reply whose question was found joins the candidates.
        let cosine = SeqMap::from_iter([(5, 0.3), (7, 0.1)]);
        let previous = SeqMap::from_iter([(7, 5)]);
        let joined = fuse_scores(inputs(&bm25, &vector, &cosine, &previous));
        assert!(order(&joined).contains(&7));
    }

    #[test]
    fn boosts_add_their_weight_and_say_so() {
        let bm25: Ranking = vec![(2.0, 1), (1.9, 2)];
        let cosine = SeqMap::default();
        let previous = SeqMap::default();
        let no_vectors = Vec::new();
        let mut inputs = inputs(&bm25, &no_vectors, &cosine, &previous);
        inputs.boosts.push(("time", 0.3, SeqSet::from_iter([2])));
        let fused = fuse_scores(inputs);
        assert_eq!(order(&fused), vec![2, 1]);
        assert!(fused[0].2.iter().any(|rank| rank.retriever == "time"));
    }
}
