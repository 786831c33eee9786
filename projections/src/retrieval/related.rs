//! What the best hits lead to, and what an item is to a question: the
//! graph walk ranked by relevance, the expansion by the rare words of the
//! best hits, each conversation turn's turn before, and the tests of an
//! item against what the question asks (its kind, its speaker, how much it
//! says).

use super::{AnswerKind, GRAPH_HOPS, Ranking, SearchFilters, SearchRequest, SeqMap, SeqSet, cosines};
use crate::error::ProjectionError;
use crate::item::MemoryItem;
use crate::memory::{AgentMemory, resolve_entity};
use mneme_index::embed::embedded_text;

/// The conversation turn before each message among `found`, and each
/// found message's reply: `(turn, the turn before it)`. A turn's turn
/// before is the previous message of its conversation (the same
/// correlation id, or none) said within [`TURN_GAP_NANOS`] before it,
/// among the few items before it in the log, when it asks something: a
/// reply carries the question it answers, not the statement it reacts to.
pub(super) fn conversation_neighbours(
    memory: &AgentMemory,
    found: &[u64],
    accept: &dyn Fn(u64) -> bool,
) -> SeqMap<u64> {
    let mut previous = SeqMap::default();
    for seq in found {
        let Some(item) = memory.items().get(*seq).filter(|item| item.kind == MESSAGE_KIND) else { continue };
        let before = memory.items().range(..*seq).rev().take(NEIGHBOUR_SCAN).find(|other| turn_follows(other, item));
        if let Some(before) = before.filter(|before| asks(before) && accept(before.seq)) {
            previous.insert(*seq, before.seq);
        }
        if !asks(item) {
            continue;
        }
        let after = memory.items().range(seq + 1..).take(NEIGHBOUR_SCAN).find(|other| turn_follows(item, other));
        if let Some(after) = after.filter(|after| accept(after.seq)) {
            previous.insert(after.seq, *seq);
        }
    }
    previous
}

/// What else speaks of the rare words of the best hits: the names,
/// identifiers and other words that few items hold, taken from the two
/// best BM25 and the two best vector hits (not the query's own), then
/// searched for. It finds the second half of a multi-step answer: the
/// turn that names the dog "Noodle" after the one that said the new dog
/// is called Noodle, the run that raised the error the top hit names.
/// The hits it starts from are left out: they are found already. Only
/// hits `seed` keeps are started from: what the people the question
/// names told, when it names some.
pub(super) fn expansion_ranking(
    memory: &AgentMemory,
    keywords: &str,
    rankings: [&Ranking; 2],
    filters: &SearchFilters,
    candidates: usize,
    accept: &dyn Fn(u64) -> bool,
    seed: &dyn Fn(u64) -> bool,
) -> Result<Ranking, ProjectionError> {
    let seeds: Vec<u64> = rankings
        .iter()
        .flat_map(|ranking| ranking.iter().filter(|(_, seq)| seed(*seq)).take(EXPANSION_SEEDS))
        .map(|(_, seq)| *seq)
        .collect();
    let asked = memory.indexes().bm25().text_terms(keywords);
    let most_documents =
        u32::try_from((memory.indexes().bm25().documents() / EXPANSION_RARITY).max(EXPANSION_MIN_DOCUMENTS))
            .unwrap_or(u32::MAX);
    let mut terms: Vec<String> = Vec::new();
    for seq in &seeds {
        let Some(item) = memory.items().get(*seq) else { continue };
        let rare = memory.indexes().bm25().rare_terms(
            embedded_text(item.text.body()),
            most_documents,
            EXPANSION_TERMS_PER_HIT + asked.len(),
        );
        let new: Vec<String> = rare
            .into_iter()
            .map(|(_, term)| term)
            .filter(|term| !asked.contains(term) && !terms.contains(term))
            .take(EXPANSION_TERMS_PER_HIT)
            .collect();
        terms.extend(new);
    }
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let holds = |seq: u64| memory.items().holds(seq);
    let fetch = (candidates + seeds.len()).saturating_add(memory.items().hidden());
    let scored = memory.indexes().bm25().search_terms(&terms, fetch, filters.kinds.item_kinds(), &holds)?;
    Ok(scored.into_iter().filter(|(_, seq)| accept(*seq) && !seeds.contains(seq)).take(candidates).collect())
}

/// Items the fact graph links to what the question is about, ranked by
/// how well they answer it. The walk starts from the entities the query
/// names (and the filter's), [`GRAPH_HOPS`] hops, and from those the
/// best BM25 and vector hits name, one hop, counting half. What it
/// reaches ranks by closeness, by similarity to the question, and by
/// whether it is the kind of item the question asks for, equally: hop
/// distance alone put the decision two hops from a file behind
/// everything one hop away. Scores are in `[0, 1]` and fused as they
/// are, so a walk from the hits alone never weighs like one from what
/// the question names.
pub(super) fn graph_ranking(
    memory: &AgentMemory,
    request: &SearchRequest,
    seeds: GraphSeeds,
    accept: &dyn Fn(u64) -> bool,
) -> Ranking {
    let graph = memory.graph();
    let view = graph.view();
    let mut entities = view.entities_in_text(&request.query);
    if let Some(entity) = &request.filters.entity {
        entities.extend(resolve_entity(&view, entity));
    }
    entities.sort();
    entities.dedup();
    let reachable = |near: Vec<(u64, f32)>| -> Vec<(f32, u64)> {
        near.into_iter().map(|(seq, closeness)| (closeness, seq)).collect()
    };
    let named = reachable(view.best_items_near(&entities, GRAPH_HOPS, accept, GRAPH_POOL));
    let mut from_hits: Vec<String> = Vec::new();
    for seq in seeds.hits.iter().take(GRAPH_SEED_HITS) {
        if let Some(item) = memory.items().get(*seq) {
            from_hits.extend(view.entities_in_text(embedded_text(item.text.as_str())));
        }
    }
    from_hits.sort();
    from_hits.dedup();
    from_hits.retain(|entity| !entities.contains(entity));
    // One hop from what the hits name: two reach most of the memory
    // through its busiest entities.
    let known: SeqSet = named.iter().map(|(_, seq)| *seq).collect();
    let unknown = |seq: u64| !known.contains(&seq) && accept(seq);
    let seeded = reachable(view.best_items_near(&from_hits, HIT_HOPS, &unknown, GRAPH_POOL / 2));
    let cosine = match seeds.query_vector {
        Some(query_vector) => cosines(memory, query_vector, &[], named.iter().chain(seeded.iter()).map(|(_, seq)| seq)),
        None => SeqMap::default(),
    };
    // Each part in [0, 1]: closeness (by the best of its walk),
    // similarity, and kind; a walk from the hits counts half.
    let relevance = |pool: Vec<(f32, u64)>, origin: f32| -> Ranking {
        let best = pool.iter().map(|(closeness, _)| *closeness).fold(f32::EPSILON, f32::max);
        pool.into_iter()
            .map(|(closeness, seq)| {
                let similarity = cosine.get(&seq).copied().unwrap_or(0.0).clamp(0.0, 1.0);
                let wanted = seeds
                    .wants
                    .is_some_and(|wants| memory.items().get(seq).is_some_and(|item| answers_as(item, wants)));
                let kind = if wanted { 1.0 } else { 0.0 };
                (origin * (closeness / best + similarity + kind) / 3.0, seq)
            })
            .collect()
    };
    let mut ranked = relevance(named, 1.0);
    ranked.extend(relevance(seeded, SEEDED_BY_HITS));
    ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    ranked.truncate(seeds.candidates);
    ranked
}

/// What the graph walk starts from besides the query's own entities.
pub(super) struct GraphSeeds<'a> {
    /// The best BM25 and vector hits, best first.
    pub(super) hits: Vec<u64>,
    pub(super) query_vector: Option<&'a [f32]>,
    /// The kind of answer the question asks for.
    pub(super) wants: Option<AnswerKind>,
    pub(super) candidates: usize,
}

/// How many of the best BM25 and of the best vector hits lend their rare
/// words to the expansion.
const EXPANSION_SEEDS: usize = 2;
/// How many rare words each of them lends.
const EXPANSION_TERMS_PER_HIT: usize = 2;
/// A word is rare when at most one document in this many holds it, or at
/// most [`EXPANSION_MIN_DOCUMENTS`].
const EXPANSION_RARITY: u64 = 500;
const EXPANSION_MIN_DOCUMENTS: u64 = 3;

/// How many of the best hits seed the graph walk.
const GRAPH_SEED_HITS: usize = 4;
/// What a walk from the entities of the best hits counts, against one from
/// the entities the query names.
const SEEDED_BY_HITS: f32 = 0.5;
/// How far the walk from the entities of the best hits goes.
const HIT_HOPS: usize = 0;
/// How many items the walk reaches are scored.
const GRAPH_POOL: usize = 400;

pub(super) const MESSAGE_KIND: &str = "message_recorded";
/// How many items before (or after) a turn the turn before it (or its
/// reply) is looked for.
const NEIGHBOUR_SCAN: usize = 8;
/// The longest pause within a conversation: a message six hours after the
/// last one starts another.
const TURN_GAP_NANOS: i64 = 6 * 3600 * 1_000_000_000;

/// The longest pause within a session of messages: a message more than an
/// hour after the one before it starts another session.
const SESSION_GAP_NANOS: i64 = 3600 * 1_000_000_000;
/// How many items before a message its session's start is looked for.
const SESSION_SCAN: usize = 64;

/// Lifts the messages of each conversation session by the best fused
/// score among them, `weight` times its share of the best hit's: the
/// turns around the best answer are more likely part of it than turns
/// of a session nothing matched. A session is a run of messages no more
/// than [`SESSION_GAP_NANOS`] apart, of the same correlation; it is
/// named by its first message among the [`SESSION_SCAN`] before.
/// Items other than messages are left as they are.
pub(super) fn session_boost(
    memory: &AgentMemory,
    mut fused: Vec<(f32, u64, Vec<super::RetrieverRank>)>,
    weight: f32,
    accept: &dyn Fn(u64) -> bool,
) -> Vec<(f32, u64, Vec<super::RetrieverRank>)> {
    let best = fused.iter().filter(|(_, seq, _)| accept(*seq)).map(|(score, _, _)| *score).fold(0.0f32, f32::max);
    if best <= 0.0 {
        return fused;
    }
    let sessions: Vec<Option<u64>> = fused.iter().map(|(_, seq, _)| session_of(memory, *seq)).collect();
    let mut session_best: SeqMap<f32> = SeqMap::default();
    for ((score, seq, _), session) in fused.iter().zip(&sessions) {
        if let Some(session) = session.filter(|_| accept(*seq)) {
            let entry = session_best.entry(session).or_insert(0.0);
            *entry = entry.max(*score);
        }
    }
    for ((score, _, ranks), session) in fused.iter_mut().zip(&sessions) {
        let Some(lift) = session.and_then(|session| session_best.get(&session)) else { continue };
        let gain = weight * (lift / best).clamp(0.0, 1.0);
        *score += gain;
        ranks.push(super::RetrieverRank { retriever: "session", rank: 0, score: gain });
    }
    fused.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
    fused
}

/// The first message of the session the message at `seq` is part of;
/// `None` for other items.
fn session_of(memory: &AgentMemory, seq: u64) -> Option<u64> {
    let item = memory.items().get(seq).filter(|item| item.kind == MESSAGE_KIND)?;
    let mut first = (seq, item);
    for other in memory.items().range(..seq).rev().take(SESSION_SCAN) {
        let before = &other.seq;
        if other.kind != MESSAGE_KIND {
            continue;
        }
        let (_, later) = first;
        if other.correlation_id != later.correlation_id
            || later.ts.unix_nanos().saturating_sub(other.ts.unix_nanos()) > SESSION_GAP_NANOS
        {
            break;
        }
        first = (*before, other);
    }
    Some(first.0)
}

/// Whether a message asks something: a reply to it answers it ("How was
/// the trip?" / "We just got back from Lisbon"), where a reply to a
/// statement reacts to it ("Ha! Classic.") and carries none of it.
pub(super) fn asks(item: &MemoryItem) -> bool {
    item.text.body().contains('?')
}

/// Whether `later` answers `earlier` in a conversation: both messages, of
/// the same correlation, close in time, and said by different speakers
/// (agent or role): one agent's two statements in a row are not a question
/// and its answer.
fn turn_follows(earlier: &MemoryItem, later: &MemoryItem) -> bool {
    earlier.kind == MESSAGE_KIND
        && later.kind == MESSAGE_KIND
        && earlier.correlation_id == later.correlation_id
        && earlier.state.is_searchable()
        && later.ts.unix_nanos().saturating_sub(earlier.ts.unix_nanos()) <= TURN_GAP_NANOS
        && (earlier.agent != later.agent || role_of(earlier) != role_of(later))
}

/// A message with fewer words than this that are not stop words (its role
/// aside) keeps only part of its score (see `brevity_floor`).
pub(super) const BRIEF_MESSAGE_WORDS: usize = 8;

/// The words of a message that are not stop words, counted up to `most`;
/// its leading `[role]` does not count.
pub(super) fn content_words(body: &str, most: usize) -> usize {
    let text = body.strip_prefix('[').and_then(|rest| rest.split_once("] ")).map_or(body, |(_, text)| text);
    text.split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|word| word.chars().count() >= 2 && !crate::words::is_stop_word(&word.to_lowercase()))
        .take(most)
        .count()
}

/// Whether the item is the kind of answer `wants` names: a decision for
/// "what was decided"; for "what fixed", a decision or a tool result that
/// edited files (by the tool's name, as the graph classifies tools).
pub(super) fn answers_as(item: &MemoryItem, wants: AnswerKind) -> bool {
    match wants {
        AnswerKind::Decision => item.kind == "decision_made",
        AnswerKind::Fix => {
            item.kind == "decision_made"
                || item.kind == "tool_result_recorded"
                    && item
                        .text
                        .body()
                        .strip_prefix("$ ")
                        .and_then(|rest| rest.split([' ', '\n']).next())
                        .is_some_and(crate::graph::is_edit_tool)
        }
        AnswerKind::Person | AnswerKind::Date | AnswerKind::Place => false,
    }
}

/// Whether `name` (lower case) said the item: it is its agent's, or a
/// message in that role.
pub(super) fn said_by(item: &MemoryItem, name: &str) -> bool {
    item.agent.eq_ignore_ascii_case(name) || role_of(item).is_some_and(|role| role.eq_ignore_ascii_case(name))
}

/// Whether `name` (lower case) said the item and it tells something: a
/// question someone asks is about whom they ask ("How was your trip?"),
/// not about them.
pub(super) fn told_by(item: &MemoryItem, name: &str) -> bool {
    said_by(item, name) && !asks(item)
}

/// The role a message item was said in: its text begins `[role] `.
fn role_of(item: &MemoryItem) -> Option<&str> {
    item.text.body().strip_prefix('[')?.split_once("] ").map(|(role, _)| role)
}
