//! One memory's view of the swarm's text index: its own documents, their
//! BM25 statistics, and searches scored by them alone.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tantivy::collector::TopDocs;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, TermQuery, TermSetQuery,
};
use tantivy::schema::{Field, IndexRecordOption, Value};
use tantivy::{DocAddress, Score, Searcher, TantivyDocument, Term};

use super::{Fields, IDENTIFIER_BOOST, TermCounts, TextIndex, term_key};
use crate::IndexError;

/// One memory's documents and their statistics: see the module's
/// documentation.
pub struct Bm25Index {
    shared: Arc<TextIndex>,
    agent: String,
    owner: u64,
    /// The owner of the swarm's shared documents, which this memory's
    /// searches read too (only those it holds, see [`Bm25Index::search`]).
    shared_owner: Option<u64>,
    stats: OwnStatistics,
    /// The last change this memory made; searches commit up to it.
    last_change: u64,
}

/// BM25's statistics over one memory's documents.
#[derive(Default, Clone)]
struct OwnStatistics {
    documents: u64,
    text_tokens: u64,
    code_tokens: u64,
    /// By [`term_key`].
    document_frequency: HashMap<u64, u32>,
}

/// A memory's statistics as tantivy asks for them.
struct ViewStatistics<'a> {
    stats: &'a OwnStatistics,
    fields: Fields,
}

impl Bm25StatisticsProvider for ViewStatistics<'_> {
    fn total_num_tokens(&self, field: Field) -> tantivy::Result<u64> {
        let (stats, fields) = (self.stats, self.fields);
        Ok(if field == fields.text {
            stats.text_tokens
        } else if field == fields.code {
            stats.code_tokens
        } else {
            0
        })
    }

    fn total_num_docs(&self) -> tantivy::Result<u64> {
        Ok(self.stats.documents)
    }

    fn doc_freq(&self, term: &Term) -> tantivy::Result<u64> {
        Ok(self.stats.document_frequency.get(&term_key(term)).copied().map_or(0, u64::from))
    }
}

/// What a snapshot keeps of a memory's documents in an index on disk:
/// where they are, and their statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct SavedText {
    pub index_id: u128,
    pub owner: u64,
    pub documents: u64,
    pub text_tokens: u64,
    pub code_tokens: u64,
    /// By term key, ascending.
    pub document_frequency: Vec<(u64, u32)>,
}

impl Bm25Index {
    /// An empty view of `shared` for a new memory of `agent`.
    pub fn new(shared: Arc<TextIndex>, shared_owner: Option<u64>, agent: &str) -> Bm25Index {
        let owner = shared.register_new_owner(agent);
        Bm25Index {
            shared,
            agent: agent.to_string(),
            owner,
            shared_owner,
            stats: OwnStatistics::default(),
            last_change: 0,
        }
    }

    /// The view of a memory restored at `checkpoint` whose own indexed
    /// items are `own_seqs` (ascending): its documents taken over from the
    /// index on disk when `saved` names them and they are exactly those
    /// (true), else a new, empty view to fill (false). Its documents past
    /// the checkpoint are deleted: the log's tail adds them again.
    pub fn restore(
        shared: Arc<TextIndex>,
        shared_owner: Option<u64>,
        agent: &str,
        saved: Option<SavedText>,
        checkpoint: u64,
        own_seqs: &[u64],
    ) -> Result<(Bm25Index, bool), IndexError> {
        if let Some(saved) = saved
            && shared.claim(agent, saved.index_id, saved.owner)
        {
            let found = shared.seqs_of_owner(saved.owner)?;
            let up_to_checkpoint = found.partition_point(|seq| *seq <= checkpoint);
            if found[..up_to_checkpoint] == *own_seqs {
                let mut last_change = 0;
                if up_to_checkpoint < found.len() {
                    shared.delete_owner_after(saved.owner, checkpoint)?;
                    last_change = shared.changes.load(Ordering::Acquire);
                }
                let stats = OwnStatistics {
                    documents: saved.documents,
                    text_tokens: saved.text_tokens,
                    code_tokens: saved.code_tokens,
                    document_frequency: saved.document_frequency.into_iter().collect(),
                };
                let index = Bm25Index {
                    shared,
                    agent: agent.to_string(),
                    owner: saved.owner,
                    shared_owner,
                    stats,
                    last_change,
                };
                return Ok((index, true));
            }
            // Not what the memory holds: its documents go (see
            // `register_new_owner`) and it is indexed again.
            shared.owners().live.remove(&saved.owner);
        }
        Ok((Bm25Index::new(shared, shared_owner, agent), false))
    }

    /// What a snapshot keeps of this view, when its index is on disk.
    pub fn saved(&self) -> Option<SavedText> {
        let (index_id, owner) = self.shared.location(self.owner)?;
        let mut document_frequency: Vec<(u64, u32)> =
            self.stats.document_frequency.iter().map(|(term, count)| (*term, *count)).collect();
        document_frequency.sort_unstable();
        Some(SavedText {
            index_id,
            owner,
            documents: self.stats.documents,
            text_tokens: self.stats.text_tokens,
            code_tokens: self.stats.code_tokens,
            document_frequency,
        })
    }

    /// Commits and syncs the index (see [`TextIndex::make_durable`]).
    pub fn make_durable(&self) -> Result<(), IndexError> {
        self.shared.make_durable()
    }

    /// A new, empty view of the same index: what a rebuild fills, while
    /// this one keeps answering until it is replaced (and dropped).
    pub fn empty_like(&self) -> Bm25Index {
        Bm25Index::new(self.shared.clone(), self.shared_owner, &self.agent)
    }

    /// The highest score a document of this memory could reach for
    /// `query`: each of its terms matched as often as BM25 counts at most
    /// (`k1 + 1` times its IDF), identifiers at their boost; a term no
    /// document holds counts at the IDF of a term held by none, the
    /// highest. A search's scores over it say how much of the query a hit
    /// matched, comparable across queries: a hit on a rare identifier is
    /// near 1, a hit on two common words of a reworded question far below,
    /// and so is a hit on one word of a question whose other words no
    /// item holds ("what books has she read": "reading" matches, "books"
    /// nothing).
    pub fn best_possible_score(&self, query: &str) -> f32 {
        const K1_PLUS_ONE: f32 = 2.2;
        let (text, code) = self.shared.query_terms(query);
        let documents = self.stats.documents as f32;
        let idf = |key: &u64| -> f32 {
            match self.stats.document_frequency.get(key) {
                Some(&frequency) if frequency > 0 => {
                    let frequency = frequency as f32;
                    (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln()
                }
                // A term no document holds: the question asks for
                // something no item words that way, and the best any
                // item can match falls short of it by its (highest) IDF.
                _ => (1.0 + (documents + 0.5) / 0.5).ln(),
            }
        };
        let text: f32 = text.iter().map(idf).sum();
        let code: f32 = code.iter().map(idf).sum();
        K1_PLUS_ONE * (text + IDENTIFIER_BOOST * code)
    }

    /// Adds a document of this memory's own.
    pub fn add(&mut self, seq: u64, kind: &str, text: &str) -> Result<(), IndexError> {
        let counts = self.shared.term_counts(text);
        self.count(&counts, 1);
        self.last_change = self.shared.add_document(self.owner, seq, kind, text)?;
        Ok(())
    }

    /// Counts a shared document this memory now holds (`sign` 1) or no
    /// longer holds (-1) in its statistics; `change` is the one that added
    /// the document to the index.
    pub fn hold_shared(&mut self, counts: &TermCounts, change: u64, sign: i64) {
        self.count(counts, sign);
        self.last_change = self.last_change.max(change);
    }

    /// Adds `sign` × a document to the statistics: its distinct terms to
    /// the document frequencies, its tokens to the fields' totals.
    fn count(&mut self, counts: &TermCounts, sign: i64) {
        self.stats.documents = self.stats.documents.saturating_add_signed(sign);
        self.stats.text_tokens = self.stats.text_tokens.saturating_add_signed(sign * counts.text_tokens as i64);
        self.stats.code_tokens = self.stats.code_tokens.saturating_add_signed(sign * counts.code_tokens as i64);
        for term in counts.terms.iter() {
            let entry = self.stats.document_frequency.entry(*term).or_default();
            *entry = entry.saturating_add_signed(sign as i32);
            if *entry == 0 {
                self.stats.document_frequency.remove(term);
            }
        }
    }

    /// Makes everything added so far searchable. Cheap when nothing changed,
    /// so callers may call it before every query.
    pub fn commit(&mut self) -> Result<(), IndexError> {
        self.shared.commit_through(self.last_change)
    }

    /// Whether everything added so far is searchable: a commit since the
    /// last change made it so (this memory's, or another's of the swarm).
    pub fn is_committed(&self) -> bool {
        self.shared.is_committed_through(self.last_change)
    }

    /// The `limit` best-scoring item seqs for a free-text query, only of
    /// `kinds` when that is not empty. The query is words and "quoted
    /// phrases", nothing else (see [`words_and_phrases`]): agents type
    /// paths, stack frames and punctuation, not tantivy syntax, and a
    /// caller must not reach fields, ranges or wildcards through it.
    ///
    /// Equal scores rank by recency, and the cut at `limit` is made only
    /// after every hit tied with the last kept one is known: tantivy breaks
    /// ties by segment order, which depends on commit history, so a live
    /// memory and its replay would otherwise keep different hits.
    ///
    /// Shared documents count only when `holds` says this memory holds
    /// them (the swarm's index may hold shared items it has not reached
    /// yet, or has purged).
    ///
    /// Searches what was committed: callers [`Bm25Index::commit`] first.
    pub fn search(
        &self,
        query: &str,
        limit: usize,
        kinds: &[&str],
        holds: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(f32, u64)>, IndexError> {
        let fields = self.shared.fields;
        let mut parser = QueryParser::for_index(&self.shared.index, vec![fields.text, fields.code]);
        parser.set_field_boost(fields.code, IDENTIFIER_BOOST);
        let (parsed, _ignored_syntax_errors) = parser.parse_query_lenient(&words_and_phrases(query));
        self.search_query(parsed, limit, kinds, holds)
    }

    /// The `limit` best items for any of `terms` of the `text` field, as
    /// its analyzer made them (see [`Bm25Index::rare_terms`]); otherwise as
    /// [`Bm25Index::search`].
    pub fn search_terms(
        &self,
        terms: &[String],
        limit: usize,
        kinds: &[&str],
        holds: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(f32, u64)>, IndexError> {
        let field = self.shared.fields.text;
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .iter()
            .map(|term| {
                let query: Box<dyn Query> =
                    Box::new(TermQuery::new(Term::from_field_text(field, term), IndexRecordOption::WithFreqs));
                (Occur::Should, query)
            })
            .collect();
        self.search_query(Box::new(BooleanQuery::new(clauses)), limit, kinds, holds)
    }

    /// The distinct terms of `text` (as the `text` field's analyzer makes
    /// them), each with its idf in this memory; a term no document holds
    /// weighs as one that a single document holds.
    pub fn term_weights(&self, text: &str) -> Vec<(String, f32)> {
        let field = self.shared.fields.text;
        let documents = self.stats.documents as f32;
        self.text_terms(text)
            .into_iter()
            .map(|term| {
                let frequency = self
                    .stats
                    .document_frequency
                    .get(&term_key(&Term::from_field_text(field, &term)))
                    .copied()
                    .unwrap_or(0)
                    .max(1) as f32;
                let idf = (1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).ln().max(0.0);
                (term, idf)
            })
            .collect()
    }

    /// The distinct terms of `text` as the `text` field's analyzer makes them.
    pub fn text_terms(&self, text: &str) -> Vec<String> {
        let mut terms = self.shared.text_tokens(text);
        terms.sort();
        terms.dedup();
        terms
    }

    /// How many documents this memory holds.
    pub fn documents(&self) -> u64 {
        self.stats.documents
    }

    /// The terms of `text` (as the `text` field's analyzer makes them) that
    /// at most `most_documents` of this memory's documents hold, rarest
    /// first, at most `limit` of them: the names, identifiers and other
    /// rare words a hit carries, which find what else speaks of them.
    pub fn rare_terms(&self, text: &str, most_documents: u32, limit: usize) -> Vec<(u32, String)> {
        let field = self.shared.fields.text;
        let mut rare: Vec<(u32, String)> = self
            .shared
            .text_tokens(text)
            .into_iter()
            .filter_map(|token| {
                let frequency = *self.stats.document_frequency.get(&term_key(&Term::from_field_text(field, &token)))?;
                (frequency <= most_documents).then_some((frequency, token))
            })
            .collect();
        rare.sort();
        rare.dedup();
        rare.truncate(limit);
        rare
    }

    /// Runs `query` over this memory's documents: see [`Bm25Index::search`].
    fn search_query(
        &self,
        query: Box<dyn Query>,
        limit: usize,
        kinds: &[&str],
        holds: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(f32, u64)>, IndexError> {
        let fields = self.shared.fields;
        let query = self.restrict(query, kinds);
        let searcher = self.shared.reader.searcher();
        let statistics = ViewStatistics { stats: &self.stats, fields };
        let limit = limit.max(1);
        let mut fetch = limit;
        let top = loop {
            let collector = TopDocs::with_limit(fetch).order_by_score();
            let top = searcher.search_with_statistics_provider(&query, &collector, &statistics)?;
            let all_fetched = top.len() < fetch;
            let mut hits = self.seqs_of(&searcher, &top)?;
            hits.retain(|(_, seq)| holds(*seq));
            let cutoff_score = hits.get(limit - 1).map(|(score, _)| *score);
            let last_score = top.last().map(|(score, _)| *score);
            if all_fetched || last_score < cutoff_score {
                break hits;
            }
            fetch = fetch.saturating_mul(2);
        };
        let mut hits = top;
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        Ok(hits)
    }

    /// The query, only over this memory's documents and `kinds`; the
    /// restrictions filter without scoring.
    fn restrict(&self, query: Box<dyn Query>, kinds: &[&str]) -> Box<dyn Query> {
        let fields = self.shared.fields;
        // A union of term queries, not a term set: a set builds a bitset of
        // every document of its terms on each search.
        let owner_query = |owner: u64| -> Box<dyn Query> {
            Box::new(TermQuery::new(Term::from_field_u64(fields.owner, owner), IndexRecordOption::Basic))
        };
        let owners: Box<dyn Query> = match self.shared_owner {
            None => owner_query(self.owner),
            Some(shared) => Box::new(BooleanQuery::new(vec![
                (Occur::Should, owner_query(self.owner)),
                (Occur::Should, owner_query(shared)),
            ])),
        };
        let mut clauses: Vec<(Occur, Box<dyn Query>)> =
            vec![(Occur::Must, query), (Occur::Must, Box::new(ConstScoreQuery::new(owners, 0.0)))];
        if !kinds.is_empty() {
            let kinds = TermSetQuery::new(kinds.iter().map(|kind| Term::from_field_text(fields.kind, kind)));
            clauses.push((Occur::Must, Box::new(ConstScoreQuery::new(Box::new(kinds), 0.0))));
        }
        Box::new(BooleanQuery::new(clauses))
    }

    fn seqs_of(&self, searcher: &Searcher, top: &[(Score, DocAddress)]) -> Result<Vec<(f32, u64)>, IndexError> {
        let seq_field = self.shared.fields.seq;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top.iter() {
            let stored: TantivyDocument = searcher.doc(*address)?;
            if let Some(seq) = stored.get_first(seq_field).and_then(|value| value.as_u64()) {
                hits.push((*score, seq));
            }
        }
        Ok(hits)
    }
}

/// `text` as the query parser must read it: each whitespace-separated
/// word, and each run of text between double quotes, becomes one quoted
/// phrase, so that no character of it is query syntax (fields, ranges,
/// wildcards, boosts, `+`, `-`, parentheses). A quoted word is what the
/// parser makes of the bare word (one term, or the phrase of its tokens
/// when the analyzer splits it), so plain queries rank as they always
/// did. `\` and an unmatched `"` are separators, as the analyzer would
/// make them.
pub(crate) fn words_and_phrases(text: &str) -> String {
    let mut query = String::with_capacity(text.len() + 8);
    let mut push = |unit: &str| {
        let unit = unit.replace('\\', " ");
        if !unit.trim().is_empty() {
            if !query.is_empty() {
                query.push(' ');
            }
            query.push('"');
            query.push_str(unit.trim());
            query.push('"');
        }
    };
    let mut rest = text;
    while let Some(open) = rest.find('"') {
        let (before, after) = rest.split_at(open);
        before.split_whitespace().for_each(&mut push);
        let after = &after[1..];
        match after.find('"') {
            Some(close) => {
                push(&after[..close]);
                rest = &after[close + 1..];
            }
            None => {
                rest = after;
                break;
            }
        }
    }
    rest.split_whitespace().for_each(&mut push);
    query
}

impl Drop for Bm25Index {
    /// A memory that is gone takes its documents out of the shared index
    /// (see [`TextIndex::release_owner`]); the next commit makes that
    /// visible and merges reclaim the space.
    fn drop(&mut self) {
        self.shared.release_owner(self.owner);
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    fn index_with(shared: &Arc<TextIndex>, texts: &[&str]) -> Bm25Index {
        let mut index = Bm25Index::new(shared.clone(), None, "agent");
        for (position, text) in texts.iter().enumerate() {
            index.add(position as u64 + 1, "message_recorded", text).unwrap();
        }
        index.commit().unwrap();
        index
    }

    /// Another memory's documents in the same index change neither what a
    /// memory finds nor how it scores it.
    #[test]
    fn a_memory_scores_alike_alone_and_beside_others() {
        let texts = ["token refresh failed", "database migration done", "the token cache expired", "token token"];
        let alone = index_with(&TextIndex::new().unwrap(), &texts);
        let shared = TextIndex::new().unwrap();
        let noise: Vec<&str> = ["token everywhere token", "refresh the token", "more token noise"].repeat(5);
        let _noise = index_with(&shared, &noise);
        let beside = index_with(&shared, &texts);
        for query in ["token", "token refresh", "database", "cache expired"] {
            let expected = alone.search(query, 10, &[], &|_| true).unwrap();
            assert!(!expected.is_empty());
            assert_eq!(beside.search(query, 10, &[], &|_| true).unwrap(), expected, "{query}");
        }
    }

    /// Issue 35, F8: `q=text:*` answered 500, and fields, ranges and
    /// wildcards reached tantivy. A query is its words and quoted phrases.
    #[test]
    fn f8_search_text_is_words_and_phrases_never_query_syntax() {
        let index = index_with(
            &TextIndex::new().unwrap(),
            &["token refresh failed in auth.rs", "refresh the token cache", "kind of code: text"],
        );
        let search = |query: &str| index.search(query, 10, &[], &|_| true).unwrap();
        for syntax in ["text:*", "code:*", "*", "seq:[0 TO 10]", "kind:message_recorded", "tok*", "(", "\\", "\""] {
            assert!(search(syntax).iter().all(|(_, seq)| *seq == 3), "{syntax}: {:?}", search(syntax));
        }
        assert_eq!(search("text:*"), search("text"));
        assert_eq!(search("-token"), search("token"));
        assert_eq!(search("+refresh"), search("refresh"));
        assert_eq!(search("(refresh)^9"), search("\"refresh 9\""));
        // Words rank as they did; a quoted phrase needs its words in order.
        assert_eq!(search("token refresh").len(), 2);
        assert_eq!(search("\"token refresh\"").iter().map(|hit| hit.1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(search("auth.rs").iter().map(|hit| hit.1).collect::<Vec<_>>(), vec![1]);
        assert_eq!(words_and_phrases("a \"b c\" d\\e \"f"), r#""a" "b c" "d e" "f""#);
    }

    /// A word of the query that no document holds still counts in the
    /// best possible score, at the highest IDF: a hit on the query's other
    /// words matched only part of it.
    #[test]
    fn a_word_no_document_holds_keeps_the_best_possible_score_out_of_reach() {
        let index = index_with(
            &TextIndex::new().unwrap(),
            &["my boss is reading dune", "the train was late", "we cooked dinner", "a quiet evening"],
        );
        let (hits, matched) = (index.search("read", 10, &[], &|_| true).unwrap(), index.best_possible_score("read"));
        assert_eq!(hits.len(), 1);
        assert!(hits[0].0 <= matched * 1.0001, "{hits:?} over {matched}");
        let asked = index.best_possible_score("books read");
        // The unheld word adds the IDF of a word held by none of the 4:
        // ln(1 + 4.5 / 0.5), times k1 + 1.
        let unheld = 2.2 * (1.0f32 + 4.5 / 0.5).ln();
        assert!((asked - matched - unheld).abs() < 1e-4, "{asked} = {matched} + {unheld}");
        assert_eq!(index.search("books read", 10, &[], &|_| true).unwrap(), hits);
    }

    #[test]
    fn a_dropped_memory_leaves_the_index() {
        let shared = TextIndex::new().unwrap();
        let first = index_with(&shared, &["alpha beta"]);
        drop(first);
        let mut second = index_with(&shared, &["gamma"]);
        second.commit().unwrap();
        let searcher = shared.reader.searcher();
        assert_eq!(searcher.num_docs(), 1);
    }

    #[test]
    fn kinds_filter_without_scoring() {
        let shared = TextIndex::new().unwrap();
        let mut index = Bm25Index::new(shared, None, "agent");
        index.add(1, "message_recorded", "token refresh").unwrap();
        index.add(2, "decision_made", "token refresh").unwrap();
        index.commit().unwrap();
        let all = index.search("token", 10, &[], &|_| true).unwrap();
        let decisions = index.search("token", 10, &["decision_made"], &|_| true).unwrap();
        assert_eq!(decisions, vec![(all[0].0, 2)]);
        assert_eq!(all[0].0, all[1].0);
    }

    /// Documents the last process left are taken over by the memory that
    /// comes back; those of a memory that does not go at the sweep.
    #[test]
    fn an_index_on_disk_keeps_what_a_memory_takes_over_and_sweeps_the_rest() {
        let directory = tempfile::tempdir().unwrap();
        let saved = {
            let (shared, discarded) = TextIndex::open(directory.path()).unwrap();
            assert_eq!(discarded, None);
            let mut kept = Bm25Index::new(shared.clone(), None, "kept");
            let mut gone = Bm25Index::new(shared.clone(), None, "gone");
            for seq in 1..=3 {
                kept.add(seq, "message_recorded", "token refresh failed").unwrap();
                gone.add(seq + 10, "message_recorded", "database migration").unwrap();
            }
            kept.make_durable().unwrap();
            kept.saved().unwrap()
        };
        let (shared, discarded) = TextIndex::open(directory.path()).unwrap();
        assert_eq!(discarded, None);
        let (mut kept, reused) =
            Bm25Index::restore(shared.clone(), None, "kept", Some(saved.clone()), 2, &[1, 2]).unwrap();
        assert!(reused);
        // Claimed once: a second memory of the agent cannot take them too.
        let (_again, reused_again) = Bm25Index::restore(shared.clone(), None, "kept", Some(saved), 2, &[1, 2]).unwrap();
        assert!(!reused_again);
        drop(_again);
        shared.sweep_unclaimed().unwrap();
        kept.commit().unwrap();
        shared.commit_through(shared.changed()).unwrap();
        assert_eq!(shared.seqs_of_owner(kept.owner).unwrap(), [1, 2]);
        assert_eq!(shared.reader.searcher().num_docs(), 2);
        let hits = kept.search("token", 10, &[], &|_| true).unwrap();
        assert_eq!(hits.iter().map(|(_, seq)| *seq).collect::<Vec<_>>(), [2, 1]);
    }

    /// Memories of a swarm share the index from their own threads: one
    /// making it durable (a commit it forces) must never make another's
    /// committed documents read as uncommitted, which a search refuses.
    #[test]
    fn committed_documents_stay_committed_while_another_memory_makes_the_index_durable() {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        let directory = tempfile::tempdir().unwrap();
        let (shared, _) = TextIndex::open(directory.path()).unwrap();
        let mut first = Bm25Index::new(shared.clone(), None, "first");
        first.add(1, "message_recorded", "token refresh failed").unwrap();
        first.commit().unwrap();
        let mut second = Bm25Index::new(shared.clone(), None, "second");
        let (stop, reads, uncommitted) = (AtomicBool::new(false), AtomicUsize::new(0), AtomicUsize::new(0));
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !stop.load(Ordering::Acquire) {
                    reads.fetch_add(1, Ordering::Relaxed);
                    if !first.is_committed() {
                        uncommitted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
            for seq in 2..30 {
                second.add(seq, "message_recorded", "database migration").unwrap();
                second.make_durable().unwrap();
            }
            stop.store(true, Ordering::Release);
        });
        assert!(reads.load(Ordering::Relaxed) > 0);
        assert_eq!(uncommitted.load(Ordering::Relaxed), 0, "of {} reads", reads.load(Ordering::Relaxed));
    }

    #[test]
    fn a_damaged_index_on_disk_is_replaced() {
        let directory = tempfile::tempdir().unwrap();
        {
            let (shared, _) = TextIndex::open(directory.path()).unwrap();
            let mut index = Bm25Index::new(shared, None, "agent");
            index.add(1, "message_recorded", "token").unwrap();
            index.make_durable().unwrap();
        }
        std::fs::write(directory.path().join("meta.json"), b"{ not json").unwrap();
        let (shared, discarded) = TextIndex::open(directory.path()).unwrap();
        assert!(discarded.is_some());
        assert_eq!(shared.reader.searcher().num_docs(), 0);
    }

    /// Whether any segment's term dictionary still has `word` in the text
    /// field, deleted documents included.
    fn indexed_anywhere(shared: &TextIndex, word: &str) -> bool {
        let searcher = shared.reader.searcher();
        searcher.segment_readers().iter().any(|segment| {
            let inverted = segment.inverted_index(shared.fields.text).unwrap();
            inverted.terms().get(word.as_bytes()).unwrap().is_some()
        })
    }

    /// Deleting a document leaves its terms in its segment until a merge;
    /// an erasure merges at once.
    #[test]
    fn an_erasure_takes_the_erased_terms_out_of_the_segments() {
        let shared = TextIndex::new().unwrap();
        let kept = index_with(&shared, &["token refresh", "database migration", "the zyxsecret launch code"]);
        shared.delete_shared_document(3);
        shared.commit_through(shared.changed()).unwrap();
        assert!(indexed_anywhere(&shared, "zyxsecret"), "a plain delete keeps the term until a merge");
        shared.erase_deleted().unwrap();
        assert!(!indexed_anywhere(&shared, "zyxsecret"));
        assert!(indexed_anywhere(&shared, "token"));
        assert_eq!(kept.search("token", 10, &[], &|_| true).unwrap().len(), 1);
    }
}
