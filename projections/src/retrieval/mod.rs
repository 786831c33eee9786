//! Search over an agent's memory: BM25, vector, graph, or all three fused,
//! with filters and an optional explanation of every hit.
//!
//! A query is read first (`analysis.rs`: keywords for BM25, the time it
//! names, the kind of answer it wants); each retriever ranks candidates;
//! a conversation turn carries the turn before it, so a reply is found
//! through the question it answers; and the candidates are fused
//! (`fusion.rs`: by normalised scores, or by reciprocal rank). Ties rank the
//! newer item first, so a live memory and its replay answer identically.

mod analysis;
mod fusion;
mod phases;
mod related;

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;

use mneme_events::{Scope, Timestamp};

use crate::error::ProjectionError;
use crate::graph::IndexHasher;
#[cfg(test)]
use crate::item::MAX_HIT_TEXT_BYTES;
pub(crate) use crate::item::hit_text;
use crate::item::{MemoryItem, ProvenanceRef};
use crate::memory::{AgentMemory, resolve_entity};
use crate::superseded::{Supersessions, supersessions};
pub use analysis::{AnswerKind, QueryAnalysis, TimeAnchor, TimeRange, analyze};
use fusion::{ScoreInputs, fuse, fuse_scores, single};
pub use mneme_api::search::{Fusion, KindFilter, RetrievalWeights, SearchFilters, SearchMode, SearchRequest};
use mneme_index::embed::embedded_text;
use mneme_index::{PreparedSearch, VectorSet};
use phases::search_phases;
use related::{BRIEF_MESSAGE_WORDS, GraphSeeds, MESSAGE_KIND, answers_as, asks, content_words, said_by, told_by};
use related::{conversation_neighbours, expansion_ranking, graph_ranking, session_boost};

/// How many candidates each retriever contributes per requested hit. Under
/// reciprocal rank fusion a rank past 20 adds at most 1/80 of a weight, so
/// deeper candidate lists cost latency and change little.
const CANDIDATES_PER_HIT: usize = 2;
const MIN_CANDIDATES: usize = 20;
/// How many of the vector index's best are scored again at full precision
/// (see [`refined`]): the 8-bit scores find the nearest, not their order
/// in the last hundredths, where near neighbours differ. On 100,000
/// Zipfian texts, the best 20 and the best 50 find the same share of the
/// exact 10 nearest (BENCHMARKS.md, "Issue 39, part 2").
const REFINED_VECTORS: usize = 20;
/// Hops from the query's entities that graph retrieval looks.
const GRAPH_HOPS: usize = 2;

/// Where one retriever ranked a hit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RetrieverRank {
    /// `bm25`, `vector`, `deep`, `graph`, `expansion`, `usage` or `recency`;
    /// a boost (`time`, `speaker`, `identifier`, `kind`, `context`, `brevity`) with rank 0.
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

const NANOS_PER_DAY: f32 = 86_400e9;
/// How much of an item's text is looked through for an identifier the
/// question names.
const IDENTIFIER_SCAN_BYTES: usize = 64 * 1024;

/// Whether the item's text holds one of `identifiers` (lower case) as a
/// whole identifier, in its first [`IDENTIFIER_SCAN_BYTES`].
fn holds_identifier(item: &MemoryItem, identifiers: &[String]) -> bool {
    mneme_index::identifiers(mneme_index::tokens::floor_char_boundary(item.text.body(), IDENTIFIER_SCAN_BYTES))
        .iter()
        .any(|found| identifiers.iter().any(|wanted| found.eq_ignore_ascii_case(wanted)))
}

/// Maps and sets of seqs, hashed by a fixed multiplicative hasher: a search
/// builds a dozen of them over its few hundred candidates, and SipHash
/// showed in its profile. Never iterated where order could show.
pub(crate) type SeqMap<V> = HashMap<u64, V, BuildHasherDefault<IndexHasher>>;
pub(crate) type SeqSet = HashSet<u64, BuildHasherDefault<IndexHasher>>;

/// One retriever's candidates, best first: (score, seq).
pub(crate) type Ranking = Vec<(f32, u64)>;

/// Searches the memory. Forgotten items never come back; filters apply to
/// every retriever before ranks are counted. Reads what was committed:
/// refuses a memory with items applied since its last
/// [`AgentMemory::commit`].
pub fn search(memory: &AgentMemory, request: &SearchRequest) -> Result<Vec<SearchHit>, ProjectionError> {
    if !memory.is_committed() {
        return Err(ProjectionError::Uncommitted { checkpoint: memory.checkpoint() });
    }
    if request.k == 0 || request.query.trim().is_empty() && request.filters.entity.is_none() {
        return Ok(Vec::new());
    }
    let now = memory.items().last().map_or(Timestamp(0), |item| item.ts);
    let mut analysis = analyze(&request.query, now);
    if let Some(anchor) = analysis.anchor.as_ref().filter(|_| analysis.time.is_none()) {
        analysis.time = anchored_time(memory, anchor, &analysis.keywords)?;
    }
    if request.filters.kinds == KindFilter::Phases {
        return Ok(search_phases(memory, request, &analysis));
    }
    let entity_items = items_of_entity_filter(memory, &request.filters);
    let accept = |seq: u64| accepts(memory, seq, &request.filters, entity_items.as_ref());
    let found = Candidates::gather(memory, request, &analysis, entity_items.as_ref(), &accept)?;
    let mut weights = request.weights;
    // The vector weight, split between the static and the deep vectors
    // when the query was embedded by the deep model.
    let deep_weight = if found.deep_query.is_some() { weights.vector * weights.deep_share } else { 0.0 };
    weights.vector -= deep_weight;
    let fused = match request.mode {
        SearchMode::Bm25 => single(vec![("bm25", 1.0, found.bm25)]),
        SearchMode::Vector => single(vec![("vector", 1.0, found.vector)]),
        SearchMode::Graph => single(vec![("graph", 1.0, found.graph)]),
        SearchMode::Hybrid => {
            let usage = if weights.usage > 0.0 {
                usage_ranking(memory, [&found.bm25, &found.vector, &found.graph, &found.deep])
            } else {
                Vec::new()
            };
            match weights.fusion {
                Fusion::Rrf => fuse(
                    vec![
                        ("bm25", weights.bm25, found.bm25),
                        ("vector", weights.vector, found.vector),
                        ("graph", weights.graph, found.graph),
                        ("deep", deep_weight, found.deep),
                        ("usage", weights.usage, usage),
                    ],
                    weights.recency,
                    weights.rrf_k,
                ),
                Fusion::Score => fuse_by_score(memory, &weights, deep_weight, &analysis, &found, &usage, now, &accept),
            }
        }
    };
    let fused = if found.score_fusion && weights.session_weight > 0.0 {
        session_boost(memory, fused, weights.session_weight, &accept)
    } else {
        fused
    };
    let supersessions = supersessions(memory);
    Ok(fused
        .into_iter()
        .filter(|(_, seq, _)| accept(*seq))
        .take(request.k)
        .map(|(score, seq, ranks)| {
            let explain = if request.explain { ranks } else { Vec::new() };
            hit(memory, seq, score, explain, &supersessions)
        })
        .collect())
}

/// What the retrievers found for a question, before fusion.
struct Candidates<'q> {
    /// The keywords BM25 was asked: the analysis's, less the names of the
    /// speakers the question names.
    keywords: String,
    bm25: Ranking,
    vector: Ranking,
    graph: Ranking,
    expansion: Ranking,
    /// The items nearest the query by their deep vectors (see
    /// `memory/deep.rs`), when the query was embedded by the deep model.
    deep: Ranking,
    query_vector: Option<Vec<f32>>,
    /// The query as the deep model embeds it: only when the memory has a
    /// deep model, holds deep vectors, and the request weighs them.
    deep_query: Option<Vec<f32>>,
    /// Whether the hits are fused by score (hybrid): the boosts and the
    /// extra passes apply only then.
    score_fusion: bool,
    /// The time the question names, when it lifts what falls in it.
    in_time: Option<TimeRange>,
    /// The people the question names who speak in this memory.
    speakers: Vec<&'q str>,
}

impl<'q> Candidates<'q> {
    /// Asks the request's retrievers, then, under score fusion, the extra
    /// passes over the time and the people the question names (their own
    /// candidates join the others: boosts, not filters; "the hobby she took
    /// up in May" may be answered by what she said in June, or by what her
    /// friend said) and the expansion by the best hits' rare words.
    fn gather(
        memory: &AgentMemory,
        request: &SearchRequest,
        analysis: &'q QueryAnalysis,
        entity_items: Option<&SeqSet>,
        accept: &dyn Fn(u64) -> bool,
    ) -> Result<Candidates<'q>, ProjectionError> {
        let candidates = (request.k * CANDIDATES_PER_HIT).max(MIN_CANDIDATES);
        let use_bm25 = matches!(request.mode, SearchMode::Bm25 | SearchMode::Hybrid);
        let use_vector = matches!(request.mode, SearchMode::Vector | SearchMode::Hybrid);
        let use_graph = matches!(request.mode, SearchMode::Graph | SearchMode::Hybrid);
        let query_vector =
            (use_vector || use_graph).then(|| memory.config().embedder.embed(embedded_text(&request.query)));
        let mut bm25 = if use_bm25 {
            bm25_ranking(memory, &analysis.keywords, &request.filters, candidates, accept, false)?
        } else {
            Vec::new()
        };
        // The vector scan's first stage, done once for every pass below
        // (the question's time, its people) that asks the same query.
        let shared_vectors = memory.shared_vectors();
        let scan = query_vector
            .as_deref()
            .filter(|_| use_vector)
            .map(|query| VectorSet::prepare(&[memory.indexes().vectors(), &shared_vectors], query));
        let mut vector = match &scan {
            Some(scan) => vector_ranking(memory, scan, candidates, &request.filters, accept, false),
            None => Vec::new(),
        };
        let weights = request.weights;
        let score_fusion = request.mode == SearchMode::Hybrid && weights.fusion == Fusion::Score;
        let speakers: Vec<&str> = if score_fusion && weights.speaker_weight > 0.0 {
            let found = |name: &str| {
                bm25.iter()
                    .chain(&vector)
                    .any(|(_, seq)| memory.items().get(*seq).is_some_and(|item| said_by(item, name)))
            };
            analysis.names.iter().map(String::as_str).filter(|name| found(name)).collect()
        } else {
            Vec::new()
        };
        // A speaker's name matches, in BM25, every item the speaker said
        // (another agent's item reads "(from talia) …"), the shortest
        // most: the speaker boost weighs who said it, so BM25 weighs
        // what was said, without the name.
        let keywords = without_names(&analysis.keywords, &speakers);
        if use_bm25 && keywords != analysis.keywords {
            bm25 = bm25_ranking(memory, &keywords, &request.filters, candidates, accept, false)?;
        }
        // So does the deep model's reading of it: the question less the
        // speakers' names.
        let deep_query = deep_query(memory, request, &without_names(&request.query, &speakers));
        let mut deep = match &deep_query {
            Some(deep_query) => deep_ranking(memory, deep_query, candidates, accept),
            None => Vec::new(),
        };
        // The graph walks from the first passes' best hits.
        let graph_seeds: Vec<u64> = bm25.iter().take(2).chain(vector.iter().take(2)).map(|(_, seq)| *seq).collect();
        let in_time = analysis.time.filter(|_| score_fusion && weights.time_weight > 0.0);
        if let Some(range) = in_time {
            let filters = narrowed_to(&request.filters, range);
            let accept_in_time = |seq: u64| accepts(memory, seq, &filters, entity_items);
            let (more_bm25, more_vector) =
                focused(memory, &keywords, scan.as_ref(), &filters, candidates, &accept_in_time, false)?;
            merge_ranking(&mut bm25, more_bm25);
            merge_ranking(&mut vector, more_vector);
            if let Some(deep_query) = &deep_query {
                merge_ranking(&mut deep, deep_ranking(memory, deep_query, candidates, &accept_in_time));
            }
        }
        // What the people named told (everything, when it names nobody).
        let told = |seq: u64| {
            speakers.is_empty()
                || memory.items().get(seq).is_some_and(|item| speakers.iter().any(|name| told_by(item, name)))
        };
        if !speakers.is_empty() {
            let accept_said = |seq: u64| accept(seq) && told(seq);
            let (more_bm25, more_vector) =
                focused(memory, &keywords, scan.as_ref(), &request.filters, candidates, &accept_said, true)?;
            merge_ranking(&mut bm25, more_bm25);
            merge_ranking(&mut vector, more_vector);
            if let Some(deep_query) = &deep_query {
                merge_ranking(&mut deep, deep_ranking(memory, deep_query, candidates, &accept_said));
            }
        }
        // The scan reads the shared vectors under their lock, which the
        // graph's cosines take again: it is let go first (a second read
        // lock on one thread may wait on a writer queued between the two).
        drop(scan);
        drop(shared_vectors);
        let graph = if use_graph {
            let query_vector = query_vector.as_deref();
            let seeds = GraphSeeds { hits: graph_seeds, query_vector, wants: analysis.wants, candidates };
            graph_ranking(memory, request, seeds, accept)
        } else {
            Vec::new()
        };
        let expansion = if score_fusion && weights.expansion_weight > 0.0 && use_bm25 {
            expansion_ranking(memory, &keywords, [&bm25, &vector], &request.filters, candidates, accept, &told)?
        } else {
            Vec::new()
        };
        Ok(Candidates {
            keywords,
            bm25,
            vector,
            graph,
            expansion,
            deep,
            query_vector,
            deep_query,
            score_fusion,
            in_time,
            speakers,
        })
    }
}

/// Hybrid search's default fusion: each retriever's normalised scores,
/// weighted and added (see `fusion.rs`), with the turn before each
/// conversation turn, the boosts the question earns (its time, its people,
/// the identifiers it names, the kind of answer it wants), brief messages
/// and questions kept down, and the priors of usage and recency.
#[allow(clippy::too_many_arguments, reason = "the candidates and every weight they are fused by")]
fn fuse_by_score(
    memory: &AgentMemory,
    weights: &RetrievalWeights,
    deep_weight: f32,
    analysis: &QueryAnalysis,
    found: &Candidates<'_>,
    usage: &Ranking,
    now: Timestamp,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(f32, u64, Vec<RetrieverRank>)> {
    let query_vector = found.query_vector.as_deref().unwrap_or(&[]);
    let seqs: Vec<u64> = [&found.bm25, &found.vector, &found.graph, &found.expansion, &found.deep]
        .iter()
        .flat_map(|ranking| ranking.iter().map(|(_, seq)| *seq))
        .collect();
    let previous =
        if weights.context_share > 0.0 { conversation_neighbours(memory, &seqs, accept) } else { SeqMap::default() };
    // The vector ranking's scores are full-precision cosines (`refined`):
    // the others' are the index's, of the same scale within its error.
    let cosine =
        cosines(memory, query_vector, &found.vector, seqs.iter().chain(previous.keys()).chain(previous.values()));
    let deep_cosine = match &found.deep_query {
        Some(deep_query) => {
            deep_cosines(memory, deep_query, seqs.iter().chain(previous.keys()).chain(previous.values()))
        }
        None => SeqMap::default(),
    };
    let mut boosts = Vec::new();
    let all: SeqSet = cosine.keys().chain(seqs.iter()).copied().collect();
    // The candidates whose item passes `test`.
    let members = |test: &dyn Fn(&MemoryItem) -> bool| -> SeqSet {
        all.iter().copied().filter(|seq| memory.items().get(*seq).is_some_and(test)).collect()
    };
    if let Some(range) = found.in_time {
        boosts.push(("time", weights.time_weight, members(&|item| range.contains(item.ts))));
    }
    if !found.speakers.is_empty() {
        let said = members(&|item| found.speakers.iter().any(|name| told_by(item, name)));
        boosts.push(("speaker", weights.speaker_weight, said));
    }
    if !analysis.identifiers.is_empty() && weights.identifier_weight > 0.0 {
        let holding = members(&|item| holds_identifier(item, &analysis.identifiers));
        boosts.push(("identifier", weights.identifier_weight, holding));
    }
    if let Some(wants) = analysis.wants.filter(|_| weights.kind_weight > 0.0) {
        boosts.push(("kind", weights.kind_weight, members(&|item| answers_as(item, wants))));
    }
    let keeps: SeqMap<f32> = if weights.brevity_floor < 1.0 {
        all.iter()
            .filter_map(|seq| {
                let item = memory.items().get(*seq).filter(|item| item.kind == MESSAGE_KIND)?;
                let words = content_words(item.text.body(), BRIEF_MESSAGE_WORDS);
                let floor = weights.brevity_floor;
                let brief = (words < BRIEF_MESSAGE_WORDS)
                    .then(|| floor + (1.0 - floor) * words as f32 / BRIEF_MESSAGE_WORDS as f32);
                // A question tells nothing: the reply that answers it
                // carries it (`conversation_neighbours`).
                let question = asks(item).then_some(floor);
                brief.into_iter().chain(question).reduce(f32::min).map(|keep| (*seq, keep))
            })
            .collect()
    } else {
        SeqMap::default()
    };
    let ages: SeqMap<f32> = all
        .iter()
        .filter_map(|seq| {
            let item = memory.items().get(*seq)?;
            let nanos = now.unix_nanos().saturating_sub(item.ts.unix_nanos());
            Some((*seq, nanos as f32 / NANOS_PER_DAY))
        })
        .collect();
    fuse_scores(ScoreInputs {
        bm25: (weights.bm25, &found.bm25),
        bm25_best_possible: memory.indexes().bm25().best_possible_score(&found.keywords),
        vector: (weights.vector, &found.vector),
        deep: (deep_weight, &found.deep),
        graph: (weights.graph, &found.graph),
        expansion: (weights.expansion_weight, &found.expansion),
        cosine: &cosine,
        deep_cosine: &deep_cosine,
        previous: &previous,
        context_share: weights.context_share,
        usage: (weights.usage, usage),
        recency: weights.recency,
        ages: &ages,
        boosts,
        keeps: &keeps,
    })
}

/// The time on the anchor's side of the event it names: the item BM25
/// ranks first for the question's keywords among the items that hold
/// the anchor's words ("what did the ledger use before the migration":
/// the item that best matches "ledger use migration" and names the
/// migration); `None` when none does.
fn anchored_time(
    memory: &AgentMemory,
    anchor: &TimeAnchor,
    keywords: &str,
) -> Result<Option<TimeRange>, ProjectionError> {
    let filters = SearchFilters::default();
    let accept = |seq: u64| accepts(memory, seq, &filters, None);
    let phrase = memory.indexes().bm25().text_terms(&anchor.phrase);
    let names_event = |seq: u64| {
        accept(seq)
            && memory.items().get(seq).is_some_and(|item| {
                let terms = memory.indexes().bm25().text_terms(item.text.indexed());
                phrase.iter().all(|term| terms.binary_search(term).is_ok())
            })
    };
    let best = bm25_ranking(memory, keywords, &filters, 1, &names_event, true)?;
    Ok(best.first().and_then(|(_, seq)| memory.items().get(*seq)).map(|item| anchor.range(item.ts)))
}

/// `text` (a question, or its keywords) less the words that are one of
/// `names` (lower case), a possessive's "'s" with them; all of `text`
/// when nothing else would be left.
fn without_names(text: &str, names: &[&str]) -> String {
    if names.is_empty() {
        return text.to_string();
    }
    let named = |word: &str| {
        let word = word.trim_end_matches(|c: char| !c.is_alphanumeric());
        let word = word.strip_suffix("'s").or_else(|| word.strip_suffix("’s")).unwrap_or(word);
        names.iter().any(|name| word.eq_ignore_ascii_case(name))
    };
    let kept: Vec<&str> = text.split_whitespace().filter(|word| !named(word)).collect();
    if kept.is_empty() { text.to_string() } else { kept.join(" ") }
}

/// BM25 and vector candidates among the items `accept` keeps.
fn focused(
    memory: &AgentMemory,
    keywords: &str,
    scan: Option<&PreparedSearch<'_>>,
    filters: &SearchFilters,
    candidates: usize,
    accept: &dyn Fn(u64) -> bool,
    narrowed: bool,
) -> Result<(Ranking, Ranking), ProjectionError> {
    let bm25 = bm25_ranking(memory, keywords, filters, candidates, accept, narrowed)?;
    let vector = match scan {
        Some(scan) => vector_ranking(memory, scan, candidates, filters, accept, narrowed),
        None => Vec::new(),
    };
    Ok((bm25, vector))
}

/// The cosine similarity of each item's vector to the query's: as `known`
/// scored it (the vector ranking, at full precision), else as the index
/// scores it.
fn cosines<'a>(
    memory: &AgentMemory,
    query: &[f32],
    known: &[(f32, u64)],
    seqs: impl Iterator<Item = &'a u64>,
) -> SeqMap<f32> {
    if query.is_empty() {
        return SeqMap::default();
    }
    let shared = memory.shared_vectors();
    let own = memory.indexes().vectors();
    let mut cosine: SeqMap<f32> = known.iter().map(|(score, seq)| (*seq, *score)).collect();
    for seq in seqs {
        if cosine.contains_key(seq) {
            continue;
        }
        let similarity = own.similarity(*seq, query).or_else(|| shared.similarity(*seq, query));
        if let Some(similarity) = similarity {
            cosine.insert(*seq, similarity);
        }
    }
    cosine
}

/// The query embedded by the memory's deep model: only when it has one,
/// holds deep vectors, and the request weighs them (a query embedded for
/// nothing would cost the deep model's time).
fn deep_query(memory: &AgentMemory, request: &SearchRequest, text: &str) -> Option<Vec<f32>> {
    let deep = memory.config().deep_embedder.as_ref()?;
    let weights = &request.weights;
    let wanted = request.mode == SearchMode::Hybrid
        && weights.vector > 0.0
        && weights.deep_share > 0.0
        && memory.deep_count() > 0;
    wanted.then(|| deep.embed(embedded_text(text)))
}

/// The items `accept` keeps nearest the query by their deep vectors,
/// among those that took one in this memory.
fn deep_ranking(memory: &AgentMemory, query: &[f32], candidates: usize, accept: &dyn Fn(u64) -> bool) -> Ranking {
    let shared = memory.shared_deep_vectors();
    let mut sets: Vec<&VectorSet> = vec![memory.indexes().deep_vectors()];
    sets.extend(shared.as_ref());
    // The swarm's deep vectors include items this memory has not applied
    // a vector for yet: those are filtered out.
    let enriched = |seq: u64| memory.indexes().has_deep(seq) && accept(seq);
    VectorSet::search(&sets, query, candidates, Some(&enriched))
}

/// The deep cosine similarity to the query of each item that took a deep
/// vector in this memory.
fn deep_cosines<'a>(memory: &AgentMemory, query: &[f32], seqs: impl Iterator<Item = &'a u64>) -> SeqMap<f32> {
    let shared = memory.shared_deep_vectors();
    let own = memory.indexes().deep_vectors();
    let mut cosine = SeqMap::default();
    for seq in seqs {
        if cosine.contains_key(seq) || !memory.indexes().has_deep(*seq) {
            continue;
        }
        let similarity = own.similarity(*seq, query).or_else(|| shared.as_ref()?.similarity(*seq, query));
        if let Some(similarity) = similarity {
            cosine.insert(*seq, similarity);
        }
    }
    cosine
}

/// The candidates that proved useful (positive usage score), most
/// useful first; equal scores rank the newer first. Only candidates
/// already found rank here: usage reorders, it never adds.
fn usage_ranking(memory: &AgentMemory, rankings: [&Ranking; 4]) -> Ranking {
    let mut seqs: Vec<u64> = rankings.iter().flat_map(|ranking| ranking.iter().map(|(_, seq)| *seq)).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let mut useful: Ranking = seqs
        .into_iter()
        .filter_map(|seq| {
            let score = memory.items().get(seq)?.usage_score();
            (score > 0.0).then_some((score, seq))
        })
        .collect();
    useful.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    useful
}

fn hit(
    memory: &AgentMemory,
    seq: u64,
    score: f32,
    explain: Vec<RetrieverRank>,
    supersessions: &Supersessions,
) -> SearchHit {
    let item = &memory.items()[seq];
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
        superseded_by: supersessions.of(memory, item),
        explain,
    }
}

/// Items linked to the filter's entity, if the filter names one. An
/// entity the graph does not know matches nothing.
fn items_of_entity_filter(memory: &AgentMemory, filters: &SearchFilters) -> Option<SeqSet> {
    let entity = filters.entity.as_deref()?;
    let graph = memory.graph();
    let view = graph.view();
    let ids = resolve_entity(&view, entity);
    Some(view.items_near(&ids, 1, None).into_iter().map(|(seq, _)| seq).collect())
}

fn accepts(memory: &AgentMemory, seq: u64, filters: &SearchFilters, entity_items: Option<&SeqSet>) -> bool {
    if memory.items().hidden() == 0 && entity_items.is_none() && *filters == SearchFilters::default() {
        // Nothing hidden and nothing filtered: what it holds.
        return memory.items().holds(seq);
    }
    let Some(item) = memory.items().get(seq) else { return false };
    item.state.is_searchable()
        && item_passes(item, filters)
        && entity_items.is_none_or(|allowed| allowed.contains(&seq))
}

/// `narrowed`: `accept` keeps fewer items than `filters` say (a pass
/// over one speaker's items).
fn bm25_ranking(
    memory: &AgentMemory,
    keywords: &str,
    filters: &SearchFilters,
    candidates: usize,
    accept: &dyn Fn(u64) -> bool,
    narrowed: bool,
) -> Result<Ranking, ProjectionError> {
    // Forgotten and filtered-out items are still in the index: fetch
    // enough that `candidates` survive. Kinds filter inside the index.
    let others_filter = narrowed
        || filters.since.is_some()
        || filters.until.is_some()
        || !filters.scopes.is_empty()
        || filters.entity.is_some()
        || filters.correlation_id.is_some();
    let widened = if others_filter { candidates * 8 } else { candidates };
    let fetch = widened.saturating_add(memory.items().hidden());
    let holds = |seq: u64| memory.items().holds(seq);
    let scored = memory.indexes().bm25().search(keywords, fetch, filters.kinds.item_kinds(), &holds)?;
    Ok(scored.into_iter().filter(|(_, seq)| accept(*seq)).take(candidates).collect())
}

/// `scan`: the query's scan over the memory's own vectors and the
/// swarm's shared ones ([`VectorSet::prepare`]).
fn vector_ranking(
    memory: &AgentMemory,
    scan: &PreparedSearch<'_>,
    candidates: usize,
    filters: &SearchFilters,
    accept: &dyn Fn(u64) -> bool,
    narrowed: bool,
) -> Ranking {
    // With nothing to filter out, the index searches without calling
    // back for every candidate it visits.
    let unfiltered = !narrowed && memory.items().hidden() == 0 && *filters == SearchFilters::default();
    // The swarm's shared vectors include items this memory does not
    // hold (not reached yet, or purged here): those are filtered out.
    let holds = |seq: u64| memory.items().holds(seq);
    let shared_is_empty = scan.sets().iter().skip(1).all(|set| set.is_empty());
    let filter: Option<&dyn Fn(u64) -> bool> = match (unfiltered, shared_is_empty) {
        (true, true) => None,
        (true, false) => Some(&holds),
        (false, _) => Some(accept),
    };
    let hits = scan.search(candidates, filter);
    refined(memory, scan.query(), hits)
}

/// The vector index's hits, the best [`REFINED_VECTORS`] scored again by
/// their full-precision vectors when the model embeds in microseconds (the
/// static model, hashed n-grams), best first. The index holds 8-bit vectors
/// (a quarter of the memory), whose error is of the order of the
/// differences between near neighbours; an item's static vector is a pure
/// function of its text, so it is embedded again (microseconds for the
/// static model) rather than kept. Replay and restore answer alike: the
/// text is the log's.
fn refined(memory: &AgentMemory, query: &[f32], mut hits: Ranking) -> Ranking {
    let embedder = &memory.config().embedder;
    // A transformer as the static model (`[embedder] kind = "minilm"`)
    // would take tens of milliseconds a text: its 8-bit order stands.
    let refined = if embedder.embeds_in_microseconds() { REFINED_VECTORS } else { 0 };
    for (score, seq) in hits.iter_mut().take(refined) {
        if let Some(item) = memory.items().get(*seq) {
            *score = full_cosine(query, &embedder.embed(embedded_text(item.text.indexed())));
        }
    }
    hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    hits
}

/// The dot product of two unit vectors, summed in a fixed order.
fn full_cosine(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn item_passes(item: &MemoryItem, filters: &SearchFilters) -> bool {
    filters.kinds.admits(item.kind)
        && filters.since.is_none_or(|since| item.ts >= since)
        && filters.until.is_none_or(|until| item.ts < until)
        && (filters.scopes.is_empty() || filters.scopes.contains(&item.scope))
        && filters.correlation_id.as_ref().is_none_or(|wanted| item.correlation_id.as_ref() == Some(wanted))
}

/// `filters`, and only items of `range` too.
fn narrowed_to(filters: &SearchFilters, range: TimeRange) -> SearchFilters {
    let since = filters.since.map_or(range.since, |since| since.max(range.since));
    let until = filters.until.map_or(range.until, |until| until.min(range.until));
    SearchFilters { since: Some(since), until: Some(until), ..filters.clone() }
}

/// Adds `more`'s candidates that `ranking` lacks, keeping it best first.
fn merge_ranking(ranking: &mut Ranking, more: Ranking) {
    let known: SeqSet = ranking.iter().map(|(_, seq)| *seq).collect();
    ranking.extend(more.into_iter().filter(|(_, seq)| !known.contains(seq)));
    ranking.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
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
    fn the_names_of_speakers_leave_the_keywords_and_the_question() {
        assert_eq!(without_names("hobbies Talia picked", &["talia"]), "hobbies picked");
        assert_eq!(without_names("hobbies Talia picked", &[]), "hobbies Talia picked");
        // Nothing but the name: the keywords stay.
        assert_eq!(without_names("Talia", &["talia"]), "Talia");
        assert_eq!(without_names("What is Talia's new job?", &["talia"]), "What is new job?");
        assert_eq!(without_names("Has Talia ever been abroad?", &["talia"]), "Has ever been abroad?");
        assert_eq!(without_names("Did Jon and Talia meet?", &["talia", "jon"]), "Did and meet?");
        assert_eq!(without_names("Talia?", &["talia"]), "Talia?");
        // Only whole names: "Talias" and "Natalia" are other words.
        assert_eq!(without_names("Natalia met Talias", &["talia"]), "Natalia met Talias");
    }

    #[test]
    fn modes_parse_and_print() {
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
            assert_eq!(mode.as_str().parse::<SearchMode>(), Ok(mode));
        }
        assert!("fuzzy".parse::<SearchMode>().is_err());
    }
}
