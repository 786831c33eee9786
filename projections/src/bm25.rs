//! BM25 full-text search over memory items (tantivy, in RAM).
//!
//! One [`TextIndex`] serves every memory of a swarm: one tantivy index and
//! one writer (one indexing thread, one merge thread), whatever the number
//! of agents. A writer holds a 15 MB arena and six threads by default, so a
//! writer per memory made a thousand small memories cost 11 GiB and 6,000
//! threads. Each memory's documents carry its owner number, and a memory
//! searches only its own ([`Bm25Index`]).
//!
//! Scores are a function of the memory alone. BM25 weighs a term by how
//! many documents hold it and a document by its length against the
//! average; tantivy's own statistics would count every memory's documents,
//! so a memory's ranking would move with another agent's (private)
//! activity, and a deleted document would count until its segment merged.
//! Each memory keeps its documents' statistics itself (document count,
//! tokens per field, documents per term: what its own analyzers make of
//! each text) and hands them to tantivy at search time. Equal scores rank
//! the newer item first, and the cut at `limit` waits for every tie, so
//! segment layout and commit history never show in results either.
//!
//! The index is derived state: it is rebuilt from items on restore and
//! never persisted on its own, so it cannot disagree with the checkpoint.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tantivy::collector::TopDocs;
use tantivy::indexer::IndexWriterOptions;
use tantivy::query::{
    Bm25StatisticsProvider, BooleanQuery, ConstScoreQuery, Occur, Query, QueryParser, TermQuery, TermSetQuery,
};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TEXT, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{LowerCaser, TextAnalyzer, WhitespaceTokenizer};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, TantivyDocument, Term, doc};

use crate::error::ProjectionError;

/// tantivy's smallest arena; the writer flushes a segment when it is full.
const WRITER_MEMORY_BYTES: usize = 15_000_000;
/// The analyzer of the `code` field: identifiers are indexed whole.
const IDENTIFIER_ANALYZER: &str = "identifiers";
/// The analyzer tantivy's `TEXT` fields use.
const TEXT_ANALYZER: &str = "default";
/// How much more an exact identifier match counts than a word match: an
/// agent that types `rotate_signing_keys` means that symbol, not the words.
const IDENTIFIER_BOOST: f32 = 2.0;

/// The full-text index of a swarm's memories. Cheap to share: memories
/// hold it by `Arc`.
pub struct TextIndex {
    index: Index,
    writer: Mutex<IndexWriter>,
    reader: IndexReader,
    fields: Fields,
    /// Numbers the memories that write here.
    next_owner: AtomicU64,
    /// Bumped by every change; `committed` is its value at the last commit.
    changes: AtomicU64,
    committed: AtomicU64,
}

#[derive(Clone, Copy)]
struct Fields {
    owner: Field,
    seq: Field,
    text: Field,
    /// Identifiers of the text (`rotate_signing_keys`, `TokenExpiredError`,
    /// `auth::token`), whole: the `text` field's tokenizer splits them into
    /// common words, which drowns an exact identifier among prose.
    code: Field,
    kind: Field,
}

impl std::fmt::Debug for TextIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextIndex").field("owners", &self.next_owner.load(Ordering::Relaxed)).finish_non_exhaustive()
    }
}

impl TextIndex {
    pub fn new() -> Result<Arc<TextIndex>, ProjectionError> {
        let mut schema = Schema::builder();
        let owner = schema.add_u64_field("owner", INDEXED);
        let seq = schema.add_u64_field("seq", INDEXED | STORED | FAST);
        let text = schema.add_text_field("text", TEXT);
        let kind = schema.add_text_field("kind", STRING);
        let identifier_indexing = TextFieldIndexing::default()
            .set_tokenizer(IDENTIFIER_ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let code = schema.add_text_field("code", TextOptions::default().set_indexing_options(identifier_indexing));
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(
            IDENTIFIER_ANALYZER,
            TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(LowerCaser).build(),
        );
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY_BYTES)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer = index.writer_with_options(options)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Arc::new(TextIndex {
            index,
            writer: Mutex::new(writer),
            reader,
            fields: Fields { owner, seq, text, code, kind },
            next_owner: AtomicU64::new(0),
            changes: AtomicU64::new(0),
            committed: AtomicU64::new(0),
        }))
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        // A panic while holding the lock leaves the writer as usable as
        // before: tantivy's own state is behind its own locks.
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Makes every change made so far searchable, unless a commit since
    /// `change` did already.
    fn commit_through(&self, change: u64) -> Result<(), ProjectionError> {
        if self.committed.load(Ordering::Acquire) >= change {
            return Ok(());
        }
        let mut writer = self.writer();
        // Another memory may have committed while this one waited.
        let latest = self.changes.load(Ordering::Acquire);
        if self.committed.load(Ordering::Acquire) >= change {
            return Ok(());
        }
        writer.commit()?;
        self.reader.reload()?;
        self.committed.store(latest, Ordering::Release);
        Ok(())
    }

    fn changed(&self) -> u64 {
        self.changes.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A new owner number, for a memory's own documents or the swarm's
    /// shared ones.
    pub(crate) fn new_owner(&self) -> u64 {
        self.next_owner.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds a document of `owner`; returns the change that added it.
    pub(crate) fn add_document(&self, owner: u64, seq: u64, kind: &str, text: &str) -> Result<u64, ProjectionError> {
        let fields = self.fields;
        let identifiers = identifiers(text).join(" ");
        self.writer().add_document(doc!(
            fields.owner => owner,
            fields.seq => seq,
            fields.text => text,
            fields.code => identifiers,
            fields.kind => kind,
        ))?;
        Ok(self.changed())
    }

    /// Deletes the shared document of `seq`. A term delete, not a query: a
    /// seq's event is either shared (one document, the swarm's) or its
    /// author's alone, so the seq names the document, and tantivy applies
    /// term deletes far faster than query deletes.
    pub(crate) fn delete_shared_document(&self, seq: u64) {
        self.writer().delete_term(Term::from_field_u64(self.fields.seq, seq));
        self.changed();
    }

    /// What a text adds to BM25's statistics, as the index's analyzers see
    /// it: counted once for a shared text, added by every memory holding it.
    pub(crate) fn term_counts(&self, text: &str) -> TermCounts {
        let identifiers = identifiers(text).join(" ");
        let mut terms = Vec::new();
        let text_tokens = self.analyze(self.fields.text, TEXT_ANALYZER, text, &mut terms);
        let code_tokens = self.analyze(self.fields.code, IDENTIFIER_ANALYZER, &identifiers, &mut terms);
        terms.sort_unstable();
        terms.dedup();
        TermCounts { text_tokens, code_tokens, terms: terms.into_boxed_slice() }
    }

    /// Pushes the keys of the field's terms of `text` to `terms`; returns
    /// its tokens.
    fn analyze(&self, field: Field, analyzer: &str, text: &str, terms: &mut Vec<u64>) -> u64 {
        let Some(mut analyzer) = self.index.tokenizers().get(analyzer) else { return 0 };
        let mut stream = analyzer.token_stream(text);
        let mut tokens = 0u64;
        while let Some(token) = stream.next() {
            tokens += 1;
            terms.push(term_key(&Term::from_field_text(field, &token.text)));
        }
        tokens
    }
}

/// A term as statistics count it: a 64-bit hash of the term (field and
/// text). Eight bytes per distinct term of a document instead of the term,
/// for every memory holding it; two terms sharing a key (about one chance
/// in 10^7 among a million distinct terms) would share their document
/// frequency, the same way live and on replay.
fn term_key(term: &Term) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    term.hash(&mut hasher);
    hasher.finish()
}

/// A text's share of BM25's statistics: tokens per field and the keys of
/// its distinct terms (of both fields).
#[derive(Default, Clone, Debug)]
pub(crate) struct TermCounts {
    text_tokens: u64,
    code_tokens: u64,
    terms: Box<[u64]>,
}

/// One memory's documents and their statistics: see the module's
/// documentation.
pub(crate) struct Bm25Index {
    shared: Arc<TextIndex>,
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

impl Bm25Index {
    /// An empty view of `shared` for a new memory.
    pub fn new(shared: Arc<TextIndex>, shared_owner: Option<u64>) -> Bm25Index {
        let owner = shared.new_owner();
        Bm25Index { shared, owner, shared_owner, stats: OwnStatistics::default(), last_change: 0 }
    }

    /// A new, empty view of the same index: what a rebuild fills, while
    /// this one keeps answering until it is replaced (and dropped).
    pub fn empty_like(&self) -> Bm25Index {
        Bm25Index::new(self.shared.clone(), self.shared_owner)
    }

    /// Adds a document of this memory's own.
    pub fn add(&mut self, seq: u64, kind: &str, text: &str) -> Result<(), ProjectionError> {
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
    pub fn commit(&mut self) -> Result<(), ProjectionError> {
        self.shared.commit_through(self.last_change)
    }

    /// The `limit` best-scoring item seqs for a free-text query, only of
    /// `kinds` when that is not empty. Query syntax errors never fail a
    /// search: the parser is lenient, because agents type paths, stack frames
    /// and punctuation, not tantivy syntax.
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
        kinds: &[String],
        holds: &dyn Fn(u64) -> bool,
    ) -> Result<Vec<(f32, u64)>, ProjectionError> {
        let fields = self.shared.fields;
        let mut parser = QueryParser::for_index(&self.shared.index, vec![fields.text, fields.code]);
        parser.set_field_boost(fields.code, IDENTIFIER_BOOST);
        let (parsed, _ignored_syntax_errors) = parser.parse_query_lenient(query);
        let query = self.restrict(parsed, kinds);
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
    fn restrict(&self, query: Box<dyn Query>, kinds: &[String]) -> Box<dyn Query> {
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

    fn seqs_of(&self, searcher: &Searcher, top: &[(Score, DocAddress)]) -> Result<Vec<(f32, u64)>, ProjectionError> {
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

impl Drop for Bm25Index {
    /// A memory that is gone (replaced by a restore or a rebuild, or
    /// stopped) takes its documents out of the shared index; the next
    /// commit makes that visible and merges reclaim the space.
    fn drop(&mut self) {
        let term = Term::from_field_u64(self.shared.fields.owner, self.owner);
        self.shared.writer().delete_term(term);
        self.shared.changed();
    }
}

/// The identifiers in a text: words joined by `_`, `::` or `.` between
/// letters, or CamelCase with two humps or more. Everything else is prose
/// and left to the `text` field.
pub(crate) fn identifiers(text: &str) -> Vec<&str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':' || c == '.'))
        .map(|word| word.trim_matches(|c: char| c == ':' || c == '.' || c == '_'))
        .filter(|word| is_identifier(word))
        .collect()
}

fn is_identifier(word: &str) -> bool {
    let has_letter = word.chars().any(char::is_alphabetic);
    let joined = word.contains('_') || word.contains("::") || (word.contains('.') && !word.ends_with('.'));
    let humps = word.chars().skip(1).filter(char::is_ascii_uppercase).count();
    let camel =
        word.chars().next().is_some_and(char::is_alphabetic) && humps >= 1 && word.chars().any(char::is_lowercase);
    has_letter && word.len() >= 3 && (joined || camel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_kept_whole_and_prose_is_not() {
        let text = "panic in rotate_signing_keys (auth::token) raised TokenExpiredError; see main.rs. The end, v2.0";
        assert_eq!(identifiers(text), ["rotate_signing_keys", "auth::token", "TokenExpiredError", "main.rs", "v2.0"]);
        assert!(identifiers("the quick brown fox, at 10.5 percent.").is_empty());
    }

    fn index_with(shared: &Arc<TextIndex>, texts: &[&str]) -> Bm25Index {
        let mut index = Bm25Index::new(shared.clone(), None);
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
        let mut index = Bm25Index::new(shared, None);
        index.add(1, "message_recorded", "token refresh").unwrap();
        index.add(2, "decision_made", "token refresh").unwrap();
        index.commit().unwrap();
        let all = index.search("token", 10, &[], &|_| true).unwrap();
        let decisions = index.search("token", 10, &["decision_made".to_string()], &|_| true).unwrap();
        assert_eq!(decisions, vec![(all[0].0, 2)]);
        assert_eq!(all[0].0, all[1].0);
    }
}
