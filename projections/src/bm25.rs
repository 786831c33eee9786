//! The BM25 full-text index over an agent's memory items (tantivy, in RAM).
//!
//! The index is derived state: it is rebuilt from items on restore and never
//! persisted on its own, so it cannot disagree with the checkpoint.

use tantivy::collector::TopDocs;
use tantivy::query::QueryParser;
use tantivy::schema::{FAST, Field, INDEXED, STORED, STRING, Schema, TEXT, Value};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, doc};

use crate::error::ProjectionError;

/// One writer thread and tantivy's smallest arena: an agent's memory is small
/// and there may be many agents in one process.
const WRITER_THREADS: usize = 1;
const WRITER_MEMORY_BYTES: usize = 15_000_000;

pub(crate) struct Bm25Index {
    index: Index,
    writer: IndexWriter,
    reader: IndexReader,
    seq_field: Field,
    text_field: Field,
    uncommitted: bool,
}

impl Bm25Index {
    pub fn new() -> Result<Bm25Index, ProjectionError> {
        let mut schema = Schema::builder();
        let seq_field = schema.add_u64_field("seq", INDEXED | STORED | FAST);
        let text_field = schema.add_text_field("text", TEXT);
        schema.add_text_field("kind", STRING);
        let index = Index::create_in_ram(schema.build());
        let writer = index.writer_with_num_threads(WRITER_THREADS, WRITER_MEMORY_BYTES)?;
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Bm25Index { index, writer, reader, seq_field, text_field, uncommitted: false })
    }

    pub fn add(&mut self, seq: u64, kind: &str, text: &str) -> Result<(), ProjectionError> {
        let kind_field = self.index.schema().get_field("kind")?;
        self.writer.add_document(doc!(self.seq_field => seq, self.text_field => text, kind_field => kind))?;
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

    /// The `limit` best-scoring item seqs for a free-text query. Query syntax
    /// errors never fail a search: the parser is lenient, because agents type
    /// paths, stack frames and punctuation, not tantivy syntax.
    pub fn search(&mut self, query: &str, limit: usize) -> Result<Vec<(f32, u64)>, ProjectionError> {
        self.commit()?;
        let parser = QueryParser::for_index(&self.index, vec![self.text_field]);
        let (parsed, _ignored_syntax_errors) = parser.parse_query_lenient(query);
        let searcher = self.reader.searcher();
        let top = searcher.search(&parsed, &TopDocs::with_limit(limit.max(1)).order_by_score())?;
        let mut hits = Vec::with_capacity(top.len());
        for (score, address) in top {
            let stored: TantivyDocument = searcher.doc(address)?;
            if let Some(seq) = stored.get_first(self.seq_field).and_then(|value| value.as_u64()) {
                hits.push((score, seq));
            }
        }
        // Ties break by recency so that equal scores rank the same on every
        // replay, whatever the segment layout.
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)));
        hits.truncate(limit);
        Ok(hits)
    }
}
