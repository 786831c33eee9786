//! Search over an agent's memory: BM25, vector, graph, or all three fused by
//! reciprocal rank, with filters and an optional explanation of every hit.
//!
//! Fusion is reciprocal rank fusion (Cormack et al.): each retriever ranks
//! candidates, and a hit scores `sum(weight / (rrf_k + rank))` over the
//! retrievers that found it. A mild recency prior is fused the same way, as a
//! ranking of the candidates newest first. Ties rank the newer item first, so
//! a live memory and its replay answer identically.

use std::collections::{BTreeMap, HashSet};
use std::str::FromStr;

use mneme_events::{Scope, Timestamp};

use crate::error::ProjectionError;
use crate::item::{MemoryItem, ProvenanceRef};
use crate::memory::{AgentMemory, resolve_entity};
use crate::superseded::Supersessions;
use crate::vector::VectorIndex;

/// How many candidates each retriever contributes per requested hit. Under
/// reciprocal rank fusion a rank past 20 adds at most 1/80 of a weight, so
/// deeper candidate lists cost latency and change little.
const CANDIDATES_PER_HIT: usize = 2;
const MIN_CANDIDATES: usize = 20;
/// Hops from the query's entities that graph retrieval looks.
const GRAPH_HOPS: usize = 2;
/// Text longer than this is embedded by its beginning: the static model
/// averages tokens, and a long tool output would drown its own first lines.
pub(crate) const EMBEDDED_TEXT_BYTES: usize = 2000;

/// Which retrievers answer a search.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SearchMode {
    Bm25,
    Vector,
    Graph,
    /// All three, fused by reciprocal rank.
    #[default]
    Hybrid,
}

impl SearchMode {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Bm25 => "bm25",
            SearchMode::Vector => "vector",
            SearchMode::Graph => "graph",
            SearchMode::Hybrid => "hybrid",
        }
    }
}

impl FromStr for SearchMode {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "bm25" => Ok(SearchMode::Bm25),
            "vector" => Ok(SearchMode::Vector),
            "graph" => Ok(SearchMode::Graph),
            "hybrid" => Ok(SearchMode::Hybrid),
            other => Err(format!("unknown search mode {other:?}; expected bm25, vector, graph or hybrid")),
        }
    }
}

/// Conditions every hit must meet. Empty means no condition.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SearchFilters {
    /// Only items of these kinds (wire names).
    pub kinds: Vec<String>,
    /// Only items whose event time is at or after this.
    pub since: Option<Timestamp>,
    /// Only items whose event time is before this.
    pub until: Option<Timestamp>,
    pub scopes: Vec<Scope>,
    /// Only items linked in the fact graph to this entity (id or name).
    pub entity: Option<String>,
    pub correlation_id: Option<String>,
}

/// Weights of the fused rankings: the one type of them. `swarm.toml`'s
/// `[retrieval]` section is this (`rrf_k`, `bm25_weight`, `vector_weight`,
/// `graph_weight`, `recency_weight`, `usage_weight`; what it leaves out is
/// the default), and a search request may override each weight.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalWeights {
    /// The `k` of reciprocal rank fusion: `score = sum(weight / (k + rank))`.
    pub rrf_k: f32,
    #[serde(rename = "bm25_weight")]
    pub bm25: f32,
    #[serde(rename = "vector_weight")]
    pub vector: f32,
    #[serde(rename = "graph_weight")]
    pub graph: f32,
    /// Weight of the recency prior, fused like a fourth retriever that ranks
    /// candidates newest first.
    #[serde(rename = "recency_weight")]
    pub recency: f32,
    /// Weight of the usage prior: candidates that were cited more than
    /// ignored (and retrieved often) ranked by how useful they proved.
    #[serde(rename = "usage_weight")]
    pub usage: f32,
}

impl Default for RetrievalWeights {
    fn default() -> Self {
        RetrievalWeights { rrf_k: 60.0, bm25: 1.0, vector: 1.0, graph: 1.0, recency: 0.25, usage: 0.25 }
    }
}

/// A search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRequest {
    pub query: String,
    pub k: usize,
    pub mode: SearchMode,
    pub filters: SearchFilters,
    pub weights: RetrievalWeights,
    /// Report each retriever's rank and score per hit.
    pub explain: bool,
}

impl SearchRequest {
    /// A hybrid search with default weights and no filters.
    pub fn new(query: impl Into<String>, k: usize) -> SearchRequest {
        SearchRequest {
            query: query.into(),
            k,
            mode: SearchMode::default(),
            filters: SearchFilters::default(),
            weights: RetrievalWeights::default(),
            explain: false,
        }
    }

    pub fn with_mode(mut self, mode: SearchMode) -> SearchRequest {
        self.mode = mode;
        self
    }
}

/// Where one retriever ranked a hit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetrieverRank {
    /// `bm25`, `vector`, `graph`, `usage` or `recency`.
    pub retriever: &'static str,
    /// 1 for the retriever's best candidate.
    pub rank: usize,
    /// The retriever's own score: BM25 score, cosine similarity, graph
    /// closeness, or for recency the item's seq.
    pub score: f32,
}

/// One search result, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    pub item_id: String,
    pub seq: u64,
    pub kind: &'static str,
    /// The fused score in hybrid mode, else the retriever's score.
    pub score: f32,
    pub text: String,
    /// Whose event the item came from.
    pub agent: String,
    pub scope: Scope,
    pub ts: Timestamp,
    pub provenance: Vec<ProvenanceRef>,
    /// The id of the event that superseded what the item states: a later
    /// decision, a retraction, the winning side of a contradiction.
    pub superseded_by: Option<String>,
    /// Filled when the request asked to explain.
    pub explain: Vec<RetrieverRank>,
}

/// A hit quotes at most this much of its item's text: a search answering
/// ten shared 1 MB messages was 10 MB to copy, serialise and send, and made
/// every search of every agent that sees them slow. The item's whole text
/// is at `GET …/items/{item_id}`.
pub const MAX_HIT_TEXT_BYTES: usize = 16 * 1024;

/// The text of a hit: the item's, or its first `MAX_HIT_TEXT_BYTES` marked
/// with how long the whole is and where it is.
fn hit_text(text: &str, item_id: &str) -> String {
    if text.len() <= MAX_HIT_TEXT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_HIT_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} …[truncated: {} bytes in all, at …/items/{item_id}]", &text[..end], text.len())
}

/// One retriever's candidates, best first: (score, seq).
type Ranking = Vec<(f32, u64)>;

impl AgentMemory {
    /// Searches the memory. Forgotten items never come back; filters apply to
    /// every retriever before ranks are counted.
    pub fn search(&mut self, request: &SearchRequest) -> Result<Vec<SearchHit>, ProjectionError> {
        if request.k == 0 || request.query.trim().is_empty() && request.filters.entity.is_none() {
            return Ok(Vec::new());
        }
        self.bm25.commit()?;
        let entity_items = self.items_of_entity_filter(&request.filters);
        let accept = |seq: u64| self.accepts(seq, &request.filters, entity_items.as_ref());
        let candidates = (request.k * CANDIDATES_PER_HIT).max(MIN_CANDIDATES);
        let use_bm25 = matches!(request.mode, SearchMode::Bm25 | SearchMode::Hybrid);
        let use_vector = matches!(request.mode, SearchMode::Vector | SearchMode::Hybrid);
        let use_graph = matches!(request.mode, SearchMode::Graph | SearchMode::Hybrid);
        let bm25 = if use_bm25 { self.bm25_ranking(request, candidates, &accept)? } else { Vec::new() };
        let vector = if use_vector {
            self.vector_ranking(&request.query, candidates, &request.filters, &accept)
        } else {
            Vec::new()
        };
        let graph = if use_graph { self.graph_ranking(request, candidates, &accept) } else { Vec::new() };
        let weights = request.weights;
        let rankings: Vec<(&'static str, f32, Ranking)> = match request.mode {
            SearchMode::Bm25 => vec![("bm25", 1.0, bm25)],
            SearchMode::Vector => vec![("vector", 1.0, vector)],
            SearchMode::Graph => vec![("graph", 1.0, graph)],
            SearchMode::Hybrid => {
                let usage = if weights.usage > 0.0 { self.usage_ranking([&bm25, &vector, &graph]) } else { Vec::new() };
                vec![
                    ("bm25", weights.bm25, bm25),
                    ("vector", weights.vector, vector),
                    ("graph", weights.graph, graph),
                    ("usage", weights.usage, usage),
                ]
            }
        };
        let fused = if request.mode == SearchMode::Hybrid {
            fuse(rankings, weights.recency, weights.rrf_k)
        } else {
            single(rankings)
        };
        let supersessions = self.supersessions();
        Ok(fused
            .into_iter()
            .take(request.k)
            .map(|(score, seq, ranks)| {
                let explain = if request.explain { ranks } else { Vec::new() };
                self.hit(seq, score, explain, &supersessions)
            })
            .collect())
    }

    /// The candidates that proved useful (positive usage score), most
    /// useful first; equal scores rank the newer first. Only candidates
    /// already found rank here: usage reorders, it never adds.
    fn usage_ranking(&self, rankings: [&Ranking; 3]) -> Ranking {
        let mut seqs: Vec<u64> = rankings.iter().flat_map(|ranking| ranking.iter().map(|(_, seq)| *seq)).collect();
        seqs.sort_unstable();
        seqs.dedup();
        let mut useful: Ranking = seqs
            .into_iter()
            .filter_map(|seq| {
                let score = self.items.get(&seq)?.usage_score();
                (score > 0.0).then_some((score, seq))
            })
            .collect();
        useful.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        useful
    }

    fn hit(&self, seq: u64, score: f32, explain: Vec<RetrieverRank>, supersessions: &Supersessions) -> SearchHit {
        let item = &self.items[&seq];
        SearchHit {
            item_id: item.item_id.clone(),
            seq,
            kind: item.kind,
            score,
            text: hit_text(&item.text, &item.item_id),
            agent: item.agent.clone(),
            scope: item.scope,
            ts: item.ts,
            provenance: item.provenance.clone(),
            superseded_by: supersessions.of(self, item),
            explain,
        }
    }

    /// Items linked to the filter's entity, if the filter names one. An
    /// entity the graph does not know matches nothing.
    fn items_of_entity_filter(&self, filters: &SearchFilters) -> Option<HashSet<u64>> {
        let entity = filters.entity.as_deref()?;
        let graph = self.graph();
        let view = graph.view();
        let ids = resolve_entity(&view, entity);
        Some(view.items_near(&ids, 1, None).into_iter().map(|(seq, _)| seq).collect())
    }

    /// Whether this memory holds the item's text (shared documents and
    /// vectors in the swarm's indexes may be of items it has not reached,
    /// or has purged).
    fn holds(&self, seq: u64) -> bool {
        self.items.get(&seq).is_some_and(|item| item.state != crate::item::ItemState::Purged)
    }

    fn accepts(&self, seq: u64, filters: &SearchFilters, entity_items: Option<&HashSet<u64>>) -> bool {
        let Some(item) = self.items.get(&seq) else { return false };
        item.state.is_searchable()
            && item_passes(item, filters)
            && entity_items.is_none_or(|allowed| allowed.contains(&seq))
    }

    fn bm25_ranking(
        &self,
        request: &SearchRequest,
        candidates: usize,
        accept: &dyn Fn(u64) -> bool,
    ) -> Result<Ranking, ProjectionError> {
        // Forgotten and filtered-out items are still in the index: fetch
        // enough that `candidates` survive. Kinds filter inside the index.
        let others_filter = request.filters.since.is_some()
            || request.filters.until.is_some()
            || !request.filters.scopes.is_empty()
            || request.filters.entity.is_some()
            || request.filters.correlation_id.is_some();
        let widened = if others_filter { candidates * 8 } else { candidates };
        let fetch = widened.saturating_add(self.hidden_count);
        let holds = |seq: u64| self.holds(seq);
        let scored = self.bm25.search(&request.query, fetch, &request.filters.kinds, &holds)?;
        Ok(scored.into_iter().filter(|(_, seq)| accept(*seq)).take(candidates).collect())
    }

    fn vector_ranking(
        &self,
        query: &str,
        candidates: usize,
        filters: &SearchFilters,
        accept: &dyn Fn(u64) -> bool,
    ) -> Ranking {
        let query_vector = self.config.embedder.embed(embedded_text(query));
        // With nothing to filter out, the index searches without calling
        // back for every candidate it visits.
        let unfiltered = self.hidden_count == 0 && *filters == SearchFilters::default();
        let shared = self.shared_vectors();
        // The swarm's shared vectors include items this memory does not
        // hold (not reached yet, or purged here): those are filtered out.
        let holds = |seq: u64| self.holds(seq);
        let filter: Option<&dyn Fn(u64) -> bool> = match (unfiltered, shared.len() == 0) {
            (true, true) => None,
            (true, false) => Some(&holds),
            (false, _) => Some(accept),
        };
        let [main, late] = shared.indexes();
        VectorIndex::search_all(&[&self.vectors, main, late], &query_vector, candidates, filter)
    }

    /// Items linked in the fact graph to the entities the query names (and
    /// to the filter's entity), nearest first.
    fn graph_ranking(&self, request: &SearchRequest, candidates: usize, accept: &dyn Fn(u64) -> bool) -> Ranking {
        let graph = self.graph();
        let view = graph.view();
        let mut entities = view.entities_in_text(&request.query);
        if let Some(entity) = &request.filters.entity {
            entities.extend(resolve_entity(&view, entity));
        }
        entities.sort();
        entities.dedup();
        if entities.is_empty() {
            return Vec::new();
        }
        view.items_near(&entities, GRAPH_HOPS, None)
            .into_iter()
            .filter(|(seq, _)| accept(*seq))
            .take(candidates)
            .map(|(seq, score)| (score, seq))
            .collect()
    }
}

fn item_passes(item: &MemoryItem, filters: &SearchFilters) -> bool {
    (filters.kinds.is_empty() || filters.kinds.iter().any(|kind| kind == item.kind))
        && filters.since.is_none_or(|since| item.ts >= since)
        && filters.until.is_none_or(|until| item.ts < until)
        && (filters.scopes.is_empty() || filters.scopes.contains(&item.scope))
        && filters.correlation_id.as_ref().is_none_or(|wanted| item.correlation_id.as_ref() == Some(wanted))
}

/// The beginning of a text, cut at a character boundary, for embedding:
/// what the vector index embeds of an item, and of a query.
pub fn embedded_text(text: &str) -> &str {
    if text.len() <= EMBEDDED_TEXT_BYTES {
        return text;
    }
    let mut end = EMBEDDED_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// One retriever's ranking as hits: its own scores, its own order.
fn single(rankings: Vec<(&'static str, f32, Ranking)>) -> Vec<(f32, u64, Vec<RetrieverRank>)> {
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
fn fuse(
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

    /// Issue 17, item 4: a hit quotes at most `MAX_HIT_TEXT_BYTES` of its
    /// item, cut at a character and saying where the rest is.
    #[test]
    fn a_hit_quotes_a_huge_text_cut_and_says_where_the_whole_is() {
        assert_eq!(hit_text("short", "01KF"), "short");
        let cut = hit_text(&"é".repeat(MAX_HIT_TEXT_BYTES), "01KF");
        assert!(cut.len() < MAX_HIT_TEXT_BYTES + 100, "{}", cut.len());
        assert!(cut.ends_with(&format!("[truncated: {} bytes in all, at …/items/01KF]", 2 * MAX_HIT_TEXT_BYTES)));
    }

    #[test]
    fn fusion_rewards_agreement_and_breaks_ties_by_recency() {
        let rankings = vec![("bm25", 1.0, vec![(9.0, 1), (8.0, 2)]), ("vector", 1.0, vec![(0.9, 2), (0.8, 3)])];
        let fused = fuse(rankings, 0.0, 60.0);
        // Seq 2 is found by both retrievers, so it comes first; then seq 1
        // (rank 1 in bm25: 1/61) before seq 3 (rank 2 in vector: 1/62).
        let order: Vec<u64> = fused.iter().map(|(_, seq, _)| *seq).collect();
        assert_eq!(order, vec![2, 1, 3]);
        assert_eq!(fused[0].2.len(), 2);
        let tied = fuse(vec![("bm25", 1.0, vec![(1.0, 4)]), ("vector", 1.0, vec![(1.0, 7)])], 0.0, 60.0);
        assert_eq!(tied.iter().map(|(_, seq, _)| *seq).collect::<Vec<_>>(), vec![7, 4]);
    }

    #[test]
    fn the_recency_prior_orders_otherwise_equal_hits() {
        let fused = fuse(vec![("bm25", 1.0, vec![(1.0, 5)]), ("vector", 1.0, vec![(1.0, 9)])], 0.25, 60.0);
        assert_eq!(fused[0].1, 9);
        assert!(fused[0].2.iter().any(|rank| rank.retriever == "recency" && rank.rank == 1));
    }

    #[test]
    fn modes_parse_and_print() {
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
            assert_eq!(mode.as_str().parse::<SearchMode>(), Ok(mode));
        }
        assert!("fuzzy".parse::<SearchMode>().is_err());
    }
}
