//! Completed phases as search results: `kind=phase` searches what each
//! phase found (its `findings` level, headed by its name, goal and
//! outcome) instead of the items.
//!
//! A memory has a few phases per task, hundreds where it has a hundred
//! thousand items, so they are scored one by one at query time, against
//! terms and vectors derived from their text on first use (the memory's
//! [`PhaseDocuments`](crate::memory::PhaseDocuments)) and kept until
//! the phase's text changes: no index to snapshot, the same live and on
//! replay (the levels are a function of the log).

use mneme_events::{PHASE_SEARCH_KIND, Scope, Timestamp};

use super::{
    QueryAnalysis, RetrieverRank, SearchFilters, SearchHit, SearchMode, SearchRequest, SeqSet, hit_text,
    items_of_entity_filter,
};
use crate::memory::AgentMemory;
use crate::phases::Phase;
use mneme_index::embed::embedded_text;

/// The completed phases that best answer the request (`kinds` is
/// `["phase"]`), best first. BM25 counts as the share of the query's
/// term weight (idf in this memory) the phase's text holds; the vector
/// part is the cosine to the question; hybrid adds the two, and the time
/// and speaker boosts the question earns. Filters apply to the phase:
/// its completion time, its completing event's scope, its task, and an
/// entity linked to one of its events.
pub(super) fn search_phases(memory: &AgentMemory, request: &SearchRequest, analysis: &QueryAnalysis) -> Vec<SearchHit> {
    let documents = memory.indexes().phase_documents(memory.phases(), memory.config().embedder.as_ref());
    let entity_items = items_of_entity_filter(memory, &request.filters);
    let query_vector = match request.mode {
        SearchMode::Bm25 => None,
        _ => Some(memory.config().embedder.embed(embedded_text(&request.query))),
    };
    let weighted = memory.indexes().bm25().term_weights(&analysis.keywords);
    let total: f32 = weighted.iter().map(|(_, weight)| weight).sum();
    let weights = request.weights;
    let tracker = memory.phases();
    let mut scored: Vec<(f32, &Phase, Vec<RetrieverRank>)> = tracker
        .phases()
        .iter()
        .chain(tracker.shared_phases())
        .filter(|phase| phase_passes(memory, phase, &request.filters, entity_items.as_ref()))
        .filter_map(|phase| {
            let document = documents.get(&phase.phase_id)?;
            let matched: f32 = weighted
                .iter()
                .filter(|(term, _)| document.terms.binary_search(term).is_ok())
                .map(|(_, weight)| weight)
                .sum();
            let lexical = if total > 0.0 { matched / total } else { 0.0 };
            let cosine = query_vector.as_ref().map_or(0.0, |query| cosine(query, &document.vector).clamp(0.0, 1.0));
            let mut parts = Vec::new();
            let mut score = 0.0;
            let mut add = |retriever: &'static str, part: f32| {
                if part > 0.0 {
                    score += part;
                    parts.push(RetrieverRank { retriever, rank: 0, score: part });
                }
            };
            match request.mode {
                SearchMode::Bm25 => add("bm25", lexical),
                SearchMode::Vector => add("vector", cosine),
                SearchMode::Graph | SearchMode::Hybrid => {
                    add("bm25", weights.bm25 * lexical);
                    add("vector", weights.vector * cosine);
                }
            }
            if request.mode == SearchMode::Hybrid {
                let at = phase.completed_at.unwrap_or(phase.started_at);
                if analysis.time.is_some_and(|range| range.contains(at)) {
                    add("time", weights.time_weight);
                }
                if analysis.names.iter().any(|name| phase.agent.eq_ignore_ascii_case(name)) {
                    add("speaker", weights.speaker_weight);
                }
            }
            (score > 0.0).then_some((score, phase, parts))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.completed_seq.cmp(&a.1.completed_seq)));
    scored
        .into_iter()
        .take(request.k)
        .map(|(score, phase, parts)| {
            let document = documents.get(&phase.phase_id).expect("a scored phase has a document");
            let completed_seq = phase.completed_seq.unwrap_or(phase.started_seq);
            SearchHit {
                item_id: phase.phase_id.clone(),
                seq: completed_seq,
                kind: PHASE_SEARCH_KIND,
                score,
                text: hit_text(&document.text, &phase.phase_id),
                agent: phase.agent.clone(),
                scope: phase_scope(memory, phase),
                ts: phase.completed_at.unwrap_or(phase.started_at),
                provenance: phase.provenance.clone(),
                superseded_by: None,
                explain: if request.explain { parts } else { Vec::new() },
            }
        })
        .collect()
}

fn phase_passes(memory: &AgentMemory, phase: &Phase, filters: &SearchFilters, entity_items: Option<&SeqSet>) -> bool {
    let at: Timestamp = phase.completed_at.unwrap_or(phase.started_at);
    phase.is_completed()
        && filters.since.is_none_or(|since| at >= since)
        && filters.until.is_none_or(|until| at < until)
        && (filters.scopes.is_empty() || filters.scopes.contains(&phase_scope(memory, phase)))
        && filters.correlation_id.as_ref().is_none_or(|task| phase.task.as_ref() == Some(task))
        && entity_items.is_none_or(|items| phase.event_seqs.iter().any(|seq| items.contains(seq)))
}

/// A phase is as visible as the event that completed it (private when
/// that is unknown).
fn phase_scope(memory: &AgentMemory, phase: &Phase) -> Scope {
    phase.completed_seq.and_then(|seq| memory.items().get(seq)).map_or(Scope::Private, |item| item.scope)
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (na * nb)
}
