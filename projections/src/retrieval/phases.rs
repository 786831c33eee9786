//! Completed phases as search results: `kind=phase` searches what each
//! phase found (its `findings` level, headed by its name, goal and
//! outcome) instead of the items.
//!
//! A memory has a few phases per task, hundreds where it has a hundred
//! thousand items, so they are scored one by one at query time, against
//! terms and vectors derived from their text on first use and kept until
//! the phase's text changes: no index to snapshot, the same live and on
//! replay (the levels are a function of the log).

use mneme_events::{PHASE_SEARCH_KIND, Scope, Timestamp};

use super::{QueryAnalysis, RetrieverRank, SearchFilters, SearchHit, SearchMode, SearchRequest, SeqSet, hit_text};
use crate::memory::AgentMemory;
use crate::phases::{Phase, PhaseLevel};
use mneme_index::embed::embedded_text;

/// What a phase is searched by, derived from its text.
#[derive(Debug, Clone)]
pub(crate) struct PhaseDocument {
    /// What the text was derived from.
    version: PhaseVersion,
    text: String,
    /// Its distinct terms as the BM25 text field's analyzer makes them,
    /// sorted.
    terms: Vec<String>,
    vector: Vec<f32>,
}

/// A phase's completion, how many events made it (a `phase_compressed`
/// adds one), and whether a purge redacted it: its text changes with these.
type PhaseVersion = (Option<u64>, usize, bool);

/// Every completed phase's document, by phase id: derived, never saved.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseDocuments(std::collections::HashMap<String, PhaseDocument>);

/// A phase's searchable text: what it was, and what it found.
fn phase_text(phase: &Phase) -> Option<String> {
    let findings = phase.levels.as_ref()?.text(PhaseLevel::Findings)?;
    let mut text = format!("Phase {} ({})", phase.name, phase.agent);
    if let Some(goal) = &phase.goal {
        text.push_str(&format!(", goal: {goal}"));
    }
    if let Some(outcome) = &phase.outcome {
        text.push_str(&format!(", outcome: {outcome}"));
    }
    text.push_str(".\n");
    text.push_str(findings);
    Some(text)
}

fn version(phase: &Phase) -> PhaseVersion {
    (phase.completed_seq, phase.provenance.len(), phase.redacted)
}

impl AgentMemory {
    /// The completed phases that best answer the request (`kinds` is
    /// `["phase"]`), best first. BM25 counts as the share of the query's
    /// term weight (idf in this memory) the phase's text holds; the vector
    /// part is the cosine to the question; hybrid adds the two, and the time
    /// and speaker boosts the question earns. Filters apply to the phase:
    /// its completion time, its completing event's scope, its task, and an
    /// entity linked to one of its events.
    pub(super) fn search_phases(&mut self, request: &SearchRequest, analysis: &QueryAnalysis) -> Vec<SearchHit> {
        self.refresh_phase_documents();
        let entity_items = self.items_of_entity_filter(&request.filters);
        let query_vector = match request.mode {
            SearchMode::Bm25 => None,
            _ => Some(self.config.embedder.embed(embedded_text(&request.query))),
        };
        let weighted = self.bm25.term_weights(&analysis.keywords);
        let total: f32 = weighted.iter().map(|(_, weight)| weight).sum();
        let weights = request.weights;
        let tracker = &self.phases;
        let mut scored: Vec<(f32, &Phase, Vec<RetrieverRank>)> = tracker
            .phases()
            .iter()
            .chain(tracker.shared_phases())
            .filter(|phase| self.phase_passes(phase, &request.filters, entity_items.as_ref()))
            .filter_map(|phase| {
                let document = self.phase_documents.0.get(&phase.phase_id)?;
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
                let document = &self.phase_documents.0[&phase.phase_id];
                let completed_seq = phase.completed_seq.unwrap_or(phase.started_seq);
                SearchHit {
                    item_id: phase.phase_id.clone(),
                    seq: completed_seq,
                    kind: PHASE_SEARCH_KIND,
                    score,
                    text: hit_text(&document.text, &phase.phase_id),
                    agent: phase.agent.clone(),
                    scope: self.phase_scope(phase),
                    ts: phase.completed_at.unwrap_or(phase.started_at),
                    provenance: phase.provenance.clone(),
                    superseded_by: None,
                    explain: if request.explain { parts } else { Vec::new() },
                }
            })
            .collect()
    }

    /// Derives the documents of phases completed, recompressed or redacted
    /// since the last search of phases.
    fn refresh_phase_documents(&mut self) {
        let tracker = &self.phases;
        let stale: Vec<(String, String, PhaseVersion)> = tracker
            .phases()
            .iter()
            .chain(tracker.shared_phases())
            .filter(|phase| phase.is_completed())
            .filter(|phase| {
                self.phase_documents.0.get(&phase.phase_id).is_none_or(|document| document.version != version(phase))
            })
            .filter_map(|phase| Some((phase.phase_id.clone(), phase_text(phase)?, version(phase))))
            .collect();
        for (phase_id, text, version) in stale {
            let terms = self.bm25.text_terms(&text);
            let vector = self.config.embedder.embed(embedded_text(&text));
            self.phase_documents.0.insert(phase_id, PhaseDocument { version, text, terms, vector });
        }
    }

    fn phase_passes(&self, phase: &Phase, filters: &SearchFilters, entity_items: Option<&SeqSet>) -> bool {
        let at: Timestamp = phase.completed_at.unwrap_or(phase.started_at);
        phase.is_completed()
            && filters.since.is_none_or(|since| at >= since)
            && filters.until.is_none_or(|until| at < until)
            && (filters.scopes.is_empty() || filters.scopes.contains(&self.phase_scope(phase)))
            && filters.correlation_id.as_ref().is_none_or(|task| phase.task.as_ref() == Some(task))
            && entity_items.is_none_or(|items| phase.event_seqs.iter().any(|seq| items.contains(seq)))
    }

    /// A phase is as visible as the event that completed it (private when
    /// that is unknown).
    fn phase_scope(&self, phase: &Phase) -> Scope {
        phase.completed_seq.and_then(|seq| self.items.get(&seq)).map_or(Scope::Private, |item| item.scope)
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    if na == 0.0 || nb == 0.0 {
        return 0.0;
    }
    a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>() / (na * nb)
}
