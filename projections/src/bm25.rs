//! The BM25 full-text index over an agent's memory items (tantivy, in RAM).
//!
//! The index is derived state: it is rebuilt from items on restore and never
//! persisted on its own, so it cannot disagree with the checkpoint.

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, QueryParser, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TEXT, TextFieldIndexing, TextOptions, Value,
};
use tantivy::tokenizer::{LowerCaser, TextAnalyzer, WhitespaceTokenizer};
use tantivy::{DocAddress, Index, IndexReader, IndexWriter, ReloadPolicy, Score, Searcher, TantivyDocument, Term, doc};

use crate::error::ProjectionError;

/// One writer thread and tantivy's smallest arena: an agent's memory is small
/// and there may be many agents in one process.
const WRITER_THREADS: usize = 1;
const WRITER_MEMORY_BYTES: usize = 15_000_000;
/// The analyzer of the `code` field: identifiers are indexed whole.
const IDENTIFIER_ANALYZER: &str = "identifiers";
/// How much more an exact identifier match counts than a word match: an
/// agent that types `rotate_signing_keys` means that symbol, not the words.
const IDENTIFIER_BOOST: f32 = 2.0;

pub(crate) struct Bm25Index {
    index: Index,
    writer: IndexWriter,
    reader: IndexReader,
    seq_field: Field,
    text_field: Field,
    /// Identifiers of the text (`rotate_signing_keys`, `TokenExpiredError`,
    /// `auth::token`), whole: the `text` field's tokenizer splits them into
    /// common words, which drowns an exact identifier among prose.
    code_field: Field,
    kind_field: Field,
    uncommitted: bool,
}

impl Bm25Index {
    pub fn new() -> Result<Bm25Index, ProjectionError> {
        let mut schema = Schema::builder();
        let seq_field = schema.add_u64_field("seq", INDEXED | STORED | FAST);
        let text_field = schema.add_text_field("text", TEXT);
        let kind_field = schema.add_text_field("kind", STRING);
        let identifier_indexing = TextFieldIndexing::default()
            .set_tokenizer(IDENTIFIER_ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs);
        let code_field =
            schema.add_text_field("code", TextOptions::default().set_indexing_options(identifier_indexing));
        let index = Index::create_in_ram(schema.build());
        index.tokenizers().register(
            IDENTIFIER_ANALYZER,
            TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(LowerCaser).build(),
        );
        let writer = index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Bm25Index { index, writer, reader, seq_field, text_field, code_field, kind_field, uncommitted: false })
    }

    pub fn add(&mut self, seq: u64, kind: &str, text: &str) -> Result<(), ProjectionError> {
        let identifiers = identifiers(text).join(" ");
        self.writer.add_document(doc!(
            self.seq_field => seq,
            self.text_field => text,
            self.code_field => identifiers,
            self.kind_field => kind,
        ))?;
        self.uncommitted = true;
        Ok(())
    }

    /// Makes everything added so far searchable. A no-op when nothing changed,
    /// so callers may call it before every query.
    pub fn commit(&mut self) -> Result<(), ProjectionError> {
        if self.uncommitted {
            self.writer.commit()?;
            self.reader.reload()?;
            self.uncommitted = false;
        }
        Ok(())
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
    /// Searches what was committed: callers [`Bm25Index::commit`] first.
    pub fn search(&self, query: &str, limit: usize, kinds: &[String]) -> Result<Vec<(f32, u64)>, ProjectionError> {
        let mut parser = QueryParser::for_index(&self.index, vec![self.text_field, self.code_field]);
        parser.set_field_boost(self.code_field, IDENTIFIER_BOOST);
        let (parsed, _ignored_syntax_errors) = parser.parse_query_lenient(query);
        let query = self.restrict_to_kinds(parsed, kinds);
        let searcher = self.reader.searcher();
        let limit = limit.max(1);
        let mut fetch = limit;
        let top = loop {
            let top = searcher.search(&query, &TopDocs::with_limit(fetch).order_by_score())?;
            let all_fetched = top.len() < fetch;
            let cutoff_score = top.get(limit - 1).map(|(score, _)| *score);
            let last_score = top.last().map(|(score, _)| *score);
            if all_fetched || last_score < cutoff_score {
                break top;
            }
            fetch = fetch.saturating_mul(2);
        };
        let mut hits = self.seqs_of(&searcher, &top)?;
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        Ok(hits)
    }

    fn restrict_to_kinds(&self, query: Box<dyn Query>, kinds: &[String]) -> Box<dyn Query> {
        if kinds.is_empty() {
            return query;
        }
        let any_kind: Vec<(Occur, Box<dyn Query>)> = kinds
            .iter()
            .map(|kind| {
                let term = Term::from_field_text(self.kind_field, kind);
                (Occur::Should, Box::new(TermQuery::new(term, IndexRecordOption::Basic)) as Box<dyn Query>)
            })
            .collect();
        Box::new(BooleanQuery::new(vec![(Occur::Must, query), (Occur::Must, Box::new(BooleanQuery::new(any_kind)))]))
    }

    fn seqs_of(&self, searcher: &Searcher, top: &[(Score, DocAddress)]) -> Result<Vec<(f32, u64)>, ProjectionError> {
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top.iter() {
            let stored: TantivyDocument = searcher.doc(*address)?;
            if let Some(seq) = stored.get_first(self.seq_field).and_then(|value| value.as_u64()) {
                hits.push((*score, seq));
            }
        }
        Ok(hits)
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
}
