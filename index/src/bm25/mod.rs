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
//! The index is derived state. In RAM ([`TextIndex::new`]) it is rebuilt
//! from items on restore. On disk ([`TextIndex::open`], what `mneme serve`
//! uses) a restart opens it instead: each memory's snapshot names the
//! index and its owner number and carries its statistics; a restored
//! memory takes its documents over after checking them against its items
//! (the documents past its checkpoint are deleted, the tail re-adds them)
//! and re-adds them all when they do not match. The index works in RAM and
//! is written to disk before each checkpoint is saved (see
//! `text_dir.rs`), so what a snapshot names is on disk; deleting the
//! index's directory costs a re-index, never a wrong answer.
//!
//! The swarm's index ([`TextIndex`]) is here; a memory's view of it
//! ([`Bm25Index`]: its documents, statistics and searches) is in `view.rs`.

mod view;

use std::collections::{HashMap, HashSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tantivy::indexer::{IndexWriterOptions, LogMergePolicy};
use tantivy::query::{BooleanQuery, Occur, Query, RangeQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STORED, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{
    Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, TextAnalyzer, WhitespaceTokenizer,
};
use tantivy::{
    DocSet, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy, SegmentReader, TERMINATED, Term, doc,
};

use crate::IndexError;
use crate::text_dir::CheckpointedDirectory;

pub use view::{Bm25Index, SavedText};

/// tantivy's smallest arena; the writer flushes a segment when it is full.
const WRITER_MEMORY_BYTES: usize = 15_000_000;
/// Segments under this many documents count as this size when the merge
/// policy groups segments of like size (tantivy's default is 10,000). A
/// commit per query makes a segment of a few documents; with 10,000, every
/// eighth such segment was merged with every other segment under 10,000
/// documents, so a memory of 10,000 items was merged whole again and
/// again (the merge thread took 44 % of the samples of `bench latency`,
/// and publish → queryable p99 was 15-18 ms; with 100, 7-10 ms, and search
/// at 100,000 items is unchanged).
const MERGE_MIN_LAYER_DOCS: u32 = 100;
/// The analyzer of the `code` field: identifiers are indexed whole.
const IDENTIFIER_ANALYZER: &str = "identifiers";
/// The analyzer of the `text` field: tantivy's `default` (words, long
/// ones dropped, lower case) and an English stemmer, so that "adopted"
/// finds "adopt" and "hobbies" finds "hobby". Queries go through it too.
const TEXT_ANALYZER: &str = "mneme_text";
/// Words longer than this are dropped from the `text` field (tantivy's
/// `default` analyzer does the same): base64, hashes, minified code.
const LONGEST_WORD: usize = 40;
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
    /// Set when the index is on disk.
    disk: Option<OnDisk>,
    /// The owner of each agent's documents, and which owners a memory
    /// holds now: see [`Owners`].
    owners: Mutex<Owners>,
    /// Set by an erasure: the next commit merges the segments holding
    /// deleted documents, so that erased terms leave the index's files.
    merge_deletes: AtomicBool,
}

/// A text index on disk.
struct OnDisk {
    directory: CheckpointedDirectory,
    /// Names this index in snapshots: a snapshot's owner number means
    /// something only in the index that gave it.
    id: u128,
    /// The owner of the swarm's shared documents, the same across restarts.
    shared_owner: u64,
    /// Shared documents found in the index on open that no shared entry
    /// has taken over yet (see [`TextIndex::take_shared_document`]).
    orphans: Mutex<HashSet<u64>>,
    /// The last commit made durable.
    durable: AtomicU64,
}

/// Who owns the documents of the index.
#[derive(Default)]
struct Owners {
    /// Each agent's current owner: a memory's, or, on disk, the one the
    /// last commit recorded for an agent whose memory has not come back
    /// yet (it is taken over by [`TextIndex::claim`]).
    of_agent: HashMap<String, u64>,
    /// Owners a live [`Bm25Index`] holds.
    live: HashSet<u64>,
}

/// What a commit on disk records beside its segments (tantivy's commit
/// payload).
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    format: u32,
    id: String,
    next_owner: u64,
    shared_owner: u64,
    owners: std::collections::BTreeMap<String, u64>,
}

const PAYLOAD_FORMAT: u32 = 1;

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
    /// An index in RAM, rebuilt by every restore.
    pub fn new() -> Result<Arc<TextIndex>, IndexError> {
        let index = Index::create_in_ram(schema());
        TextIndex::with_index(index, None, 0, HashMap::new())
    }

    /// The index kept in `directory`, created there if there is none (or
    /// if the one there is damaged, of another schema or format: it is
    /// derived state, and memories rebuild what they miss).
    ///
    /// Besides the index, says why an index found there was not used.
    pub fn open(directory: &Path) -> Result<(Arc<TextIndex>, Option<String>), IndexError> {
        let disk_error = |error: std::io::Error| IndexError::Index(tantivy::TantivyError::from(error));
        let discarded = match TextIndex::open_existing(directory) {
            Ok(Some(index)) => return Ok((index, None)),
            Ok(None) => None,
            Err(why) => Some(why),
        };
        CheckpointedDirectory::wipe(directory).map_err(disk_error)?;
        let lazy = CheckpointedDirectory::open(directory).map_err(disk_error)?;
        let index = Index::create(lazy.clone(), schema(), IndexSettings::default())?;
        let mut id_bytes = [0u8; 16];
        getrandom::fill(&mut id_bytes).map_err(|error| disk_error(std::io::Error::other(error)))?;
        let id = u128::from_le_bytes(id_bytes);
        let disk = OnDisk {
            directory: lazy,
            id,
            shared_owner: 0,
            orphans: Mutex::new(HashSet::new()),
            durable: AtomicU64::new(0),
        };
        Ok((TextIndex::with_index(index, Some(disk), 1, HashMap::new())?, discarded))
    }

    /// The index in `directory` if there is a usable one.
    fn open_existing(directory: &Path) -> Result<Option<Arc<TextIndex>>, String> {
        let lazy = CheckpointedDirectory::open(directory).map_err(|error| error.to_string())?;
        if !Index::exists(&lazy).map_err(|error| error.to_string())? {
            return Ok(None);
        }
        let index = Index::open(lazy.clone()).map_err(|error| error.to_string())?;
        if index.schema() != schema() {
            return Err("its schema is not this version's".to_string());
        }
        if !lazy.is_durable() {
            // Committed after its last checkpoint: intact after a killed
            // process, maybe not after a lost machine.
            let damaged = index.validate_checksum().map_err(|error| error.to_string())?;
            if !damaged.is_empty() {
                return Err(format!("damaged files: {damaged:?}"));
            }
        }
        let metas = index.load_metas().map_err(|error| error.to_string())?;
        let Some(payload) = metas.payload else { return Err("it has no commit of mneme's".to_string()) };
        let payload: Payload = serde_json::from_str(&payload).map_err(|error| error.to_string())?;
        if payload.format != PAYLOAD_FORMAT {
            return Err(format!("its format is {}, this version's {PAYLOAD_FORMAT}", payload.format));
        }
        let id = u128::from_str_radix(&payload.id, 16).map_err(|error| error.to_string())?;
        let disk = OnDisk {
            directory: lazy,
            id,
            shared_owner: payload.shared_owner,
            orphans: Mutex::new(HashSet::new()),
            durable: AtomicU64::new(0),
        };
        let text_index =
            TextIndex::with_index(index, Some(disk), payload.next_owner, payload.owners.into_iter().collect())
                .map_err(|error| error.to_string())?;
        let shared = text_index.seqs_of_owner(payload.shared_owner).map_err(|error| error.to_string())?;
        if let Some(disk) = &text_index.disk {
            *lock(&disk.orphans) = shared.into_iter().collect();
        }
        Ok(Some(text_index))
    }

    fn with_index(
        index: Index,
        disk: Option<OnDisk>,
        next_owner: u64,
        of_agent: HashMap<String, u64>,
    ) -> Result<Arc<TextIndex>, IndexError> {
        let fields = Fields::of(&index.schema())?;
        index.tokenizers().register(
            IDENTIFIER_ANALYZER,
            TextAnalyzer::builder(WhitespaceTokenizer::default()).filter(LowerCaser).build(),
        );
        index.tokenizers().register(
            TEXT_ANALYZER,
            TextAnalyzer::builder(SimpleTokenizer::default())
                .filter(RemoveLongFilter::limit(LONGEST_WORD))
                .filter(LowerCaser)
                .filter(Stemmer::new(Language::English))
                .build(),
        );
        let options = IndexWriterOptions::builder()
            .memory_budget_per_thread(WRITER_MEMORY_BYTES)
            .num_worker_threads(1)
            .num_merge_threads(1)
            .build();
        let writer: IndexWriter = index.writer_with_options(options)?;
        let mut policy = LogMergePolicy::default();
        policy.set_min_layer_size(MERGE_MIN_LAYER_DOCS);
        writer.set_merge_policy(Box::new(policy));
        let reader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into()?;
        Ok(Arc::new(TextIndex {
            index,
            writer: Mutex::new(writer),
            reader,
            fields,
            next_owner: AtomicU64::new(next_owner),
            changes: AtomicU64::new(0),
            committed: AtomicU64::new(0),
            disk,
            owners: Mutex::new(Owners { of_agent, live: HashSet::new() }),
            merge_deletes: AtomicBool::new(false),
        }))
    }

    fn writer(&self) -> std::sync::MutexGuard<'_, IndexWriter> {
        // A panic while holding the lock leaves the writer as usable as
        // before: tantivy's own state is behind its own locks.
        self.writer.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn owners(&self) -> MutexGuard<'_, Owners> {
        lock(&self.owners)
    }

    /// Makes every change made so far searchable, unless a commit since
    /// `change` did already. A kept index's commit records the owners (see
    /// [`Payload`]) and stays in RAM: [`TextIndex::make_durable`] writes
    /// it to disk.
    fn is_committed_through(&self, change: u64) -> bool {
        self.committed.load(Ordering::Acquire) >= change
    }

    fn commit_through(&self, change: u64) -> Result<(), IndexError> {
        self.commit_if(change, false)
    }

    /// Commits unless a commit since `change` did already; `always`
    /// commits anyway (a kept index's commit records the owners). Never
    /// lowers `committed`: memories ask it whether what they added is
    /// searchable, from other threads.
    fn commit_if(&self, change: u64, always: bool) -> Result<(), IndexError> {
        if !always && self.committed.load(Ordering::Acquire) >= change {
            return Ok(());
        }
        let mut writer = self.writer();
        // Another memory may have committed while this one waited.
        let latest = self.changes.load(Ordering::Acquire);
        if !always && self.committed.load(Ordering::Acquire) >= change {
            return Ok(());
        }
        match &self.disk {
            None => {
                writer.commit()?;
            }
            Some(disk) => {
                let payload = Payload {
                    format: PAYLOAD_FORMAT,
                    id: format!("{:032x}", disk.id),
                    next_owner: self.next_owner.load(Ordering::Acquire),
                    shared_owner: disk.shared_owner,
                    owners: self.owners().of_agent.iter().map(|(agent, owner)| (agent.clone(), *owner)).collect(),
                };
                let payload = serde_json::to_string(&payload).expect("the payload is plain data");
                let mut commit = writer.prepare_commit()?;
                commit.set_payload(&payload);
                commit.commit()?;
            }
        }
        if self.merge_deletes.swap(false, Ordering::AcqRel) {
            // Erased terms stay in a segment's files until it is merged.
            let segments: Vec<_> = self
                .index
                .searchable_segment_metas()?
                .into_iter()
                .filter(|segment| segment.has_deletes())
                .map(|segment| segment.id())
                .collect();
            // A merge already running on one of them refuses this one: the
            // next commit tries again (that merge drops deleted documents
            // too).
            if !segments.is_empty() && writer.merge(&segments).wait().is_err() {
                self.merge_deletes.store(true, Ordering::Release);
            }
        }
        self.reader.reload()?;
        self.committed.fetch_max(latest, Ordering::AcqRel);
        Ok(())
    }

    /// Commits everything and, for a kept index, writes it to disk,
    /// synced: what a checkpoint saved after this names is on disk. Cheap when nothing changed since the
    /// last call.
    pub(crate) fn make_durable(&self) -> Result<(), IndexError> {
        let Some(disk) = &self.disk else { return Ok(()) };
        let latest = self.changes.load(Ordering::Acquire);
        // `durable` is one past the last change made durable, 0 for none.
        if disk.durable.load(Ordering::Acquire) > latest {
            return Ok(());
        }
        // A commit even with no change: it records the owners.
        self.commit_if(latest.max(1), true)?;
        // Holding the writer: no commit runs while the files are written.
        let _writer = self.writer();
        disk.directory.make_durable().map_err(|error| IndexError::Index(error.into()))?;
        disk.durable.fetch_max(latest + 1, Ordering::AcqRel);
        Ok(())
    }

    fn changed(&self) -> u64 {
        self.changes.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A new owner number.
    fn new_owner(&self) -> u64 {
        self.next_owner.fetch_add(1, Ordering::Relaxed)
    }

    /// The owner of the swarm's shared documents: on disk always the same
    /// one, in RAM a new one for each `SharedContent` (mneme-projections).
    pub fn shared_owner(&self) -> u64 {
        match &self.disk {
            Some(disk) => disk.shared_owner,
            None => self.new_owner(),
        }
    }

    /// A new owner for `agent`'s documents, held by a new [`Bm25Index`].
    /// Documents of an earlier owner of the agent that no memory holds
    /// (left by the last process) are deleted; those of a live one go when
    /// its memory is dropped.
    fn register_new_owner(&self, agent: &str) -> u64 {
        let owner = self.new_owner();
        let left_behind = {
            let mut owners = self.owners();
            owners.live.insert(owner);
            owners.of_agent.insert(agent.to_string(), owner).filter(|previous| !owners.live.contains(previous))
        };
        // Not under the owners' lock: a commit takes the writer, then it.
        if let Some(previous) = left_behind {
            self.delete_owner(previous);
        }
        owner
    }

    /// Takes over `agent`'s documents of owner `owner` in the index `id`,
    /// which the last process left: true if they are there for the taking.
    fn claim(&self, agent: &str, id: u128, owner: u64) -> bool {
        let Some(disk) = &self.disk else { return false };
        let mut owners = self.owners();
        let claimable = disk.id == id && owners.of_agent.get(agent) == Some(&owner) && !owners.live.contains(&owner);
        if claimable {
            owners.live.insert(owner);
        }
        claimable
    }

    /// Where a snapshot finds its memory's documents again: this index's id
    /// and the owner, on disk.
    fn location(&self, owner: u64) -> Option<(u128, u64)> {
        self.disk.as_ref().map(|disk| (disk.id, owner))
    }

    /// A memory's documents leave with it when it was replaced (a restore
    /// or a rebuild made a new one) or when the index is in RAM; on disk,
    /// the current memory of an agent keeps them for the next process.
    fn release_owner(&self, owner: u64) {
        let delete = {
            let mut owners = self.owners();
            owners.live.remove(&owner);
            let current = owners.of_agent.values().any(|current| *current == owner);
            if self.disk.is_none() && current {
                owners.of_agent.retain(|_, current| *current != owner);
            }
            self.disk.is_none() || !current
        };
        if delete {
            self.delete_owner(owner);
        }
    }

    fn delete_owner(&self, owner: u64) {
        self.writer().delete_term(Term::from_field_u64(self.fields.owner, owner));
        self.changed();
    }

    /// Deletes what the last process left that no memory took over: the
    /// documents of agents whose memory did not come back, and shared
    /// documents no memory holds. Called once every memory the process
    /// serves has been restored; until then they may still be claimed.
    pub fn sweep_unclaimed(&self) -> Result<(), IndexError> {
        let Some(disk) = &self.disk else { return Ok(()) };
        let orphans = std::mem::take(&mut *lock(&disk.orphans));
        for seq in orphans {
            self.delete_shared_document(seq);
        }
        let kept: HashSet<u64> = {
            let mut owners = self.owners();
            let live = owners.live.clone();
            owners.of_agent.retain(|_, owner| live.contains(owner));
            live
        };
        let searcher = self.reader.searcher();
        let mut gone = HashSet::new();
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(self.fields.owner)?;
            let mut terms = inverted.terms().stream().map_err(io_error)?;
            while terms.advance() {
                let key: [u8; 8] = terms.key().try_into().map_err(|_| {
                    IndexError::Index(tantivy::TantivyError::InternalError("an owner term is not a u64".into()))
                })?;
                let owner = u64::from_be_bytes(key);
                if owner != disk.shared_owner && !kept.contains(&owner) {
                    gone.insert(owner);
                }
            }
        }
        for owner in gone {
            self.delete_owner(owner);
        }
        Ok(())
    }

    /// The seqs of `owner`'s documents in the last commit, ascending.
    fn seqs_of_owner(&self, owner: u64) -> Result<Vec<u64>, IndexError> {
        let searcher = self.reader.searcher();
        let term = Term::from_field_u64(self.fields.owner, owner);
        let mut seqs = Vec::new();
        for segment in searcher.segment_readers() {
            seqs_in_segment(segment, &term, &mut seqs)?;
        }
        seqs.sort_unstable();
        Ok(seqs)
    }

    /// Deletes `owner`'s documents past `seq`.
    fn delete_owner_after(&self, owner: u64, seq: u64) -> Result<(), IndexError> {
        let fields = self.fields;
        let owner: Box<dyn Query> =
            Box::new(TermQuery::new(Term::from_field_u64(fields.owner, owner), IndexRecordOption::Basic));
        let after: Box<dyn Query> =
            Box::new(RangeQuery::new(Bound::Excluded(Term::from_field_u64(fields.seq, seq)), Bound::Unbounded));
        self.writer().delete_query(Box::new(BooleanQuery::new(vec![(Occur::Must, owner), (Occur::Must, after)])))?;
        self.changed();
        Ok(())
    }

    /// Adds a document of `owner`; returns the change that added it.
    pub fn add_document(&self, owner: u64, seq: u64, kind: &str, text: &str) -> Result<u64, IndexError> {
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

    /// Takes over the shared document of `seq` if the last process left it
    /// in the index: true if it is there (and needs no adding).
    pub fn take_shared_document(&self, seq: u64) -> bool {
        self.disk.as_ref().is_some_and(|disk| lock(&disk.orphans).remove(&seq))
    }

    /// Deletes the shared document of `seq`. A term delete, not a query: a
    /// seq's event is either shared (one document, the swarm's) or its
    /// author's alone, so the seq names the document, and tantivy applies
    /// term deletes far faster than query deletes.
    pub fn delete_shared_document(&self, seq: u64) {
        self.writer().delete_term(Term::from_field_u64(self.fields.seq, seq));
        self.changed();
    }

    /// After an erasure deleted documents: commits, and merges the
    /// segments holding deleted documents, so that the erased terms leave
    /// the index's files (and RAM) now rather than at some later merge.
    pub fn erase_deleted(&self) -> Result<(), IndexError> {
        self.merge_deletes.store(true, Ordering::Release);
        self.commit_through(self.changed())
    }

    /// What a text adds to BM25's statistics, as the index's analyzers see
    /// it: counted once for a shared text, added by every memory holding it.
    pub fn term_counts(&self, text: &str) -> TermCounts {
        let identifiers = identifiers(text).join(" ");
        let mut terms = Vec::new();
        let text_tokens = self.analyze(self.fields.text, TEXT_ANALYZER, text, &mut terms);
        let code_tokens = self.analyze(self.fields.code, IDENTIFIER_ANALYZER, &identifiers, &mut terms);
        terms.sort_unstable();
        terms.dedup();
        TermCounts { text_tokens, code_tokens, terms: terms.into_boxed_slice() }
    }

    /// The tokens of `text` as the `text` field's analyzer makes them.
    pub(crate) fn text_tokens(&self, text: &str) -> Vec<String> {
        let Some(mut analyzer) = self.index.tokenizers().get(TEXT_ANALYZER) else { return Vec::new() };
        let mut stream = analyzer.token_stream(text);
        let mut tokens = Vec::new();
        while let Some(token) = stream.next() {
            tokens.push(token.text.clone());
        }
        tokens
    }

    /// The keys of a query's distinct terms, as the `text` and the `code`
    /// field analyze it.
    pub(crate) fn query_terms(&self, query: &str) -> (Vec<u64>, Vec<u64>) {
        let identifiers = identifiers(query).join(" ");
        let (mut text, mut code) = (Vec::new(), Vec::new());
        self.analyze(self.fields.text, TEXT_ANALYZER, query, &mut text);
        self.analyze(self.fields.code, IDENTIFIER_ANALYZER, &identifiers, &mut code);
        for terms in [&mut text, &mut code] {
            terms.sort_unstable();
            terms.dedup();
        }
        (text, code)
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

/// The fields of the index, by name.
fn schema() -> Schema {
    let mut schema = Schema::builder();
    schema.add_u64_field("owner", INDEXED);
    schema.add_u64_field("seq", INDEXED | STORED | FAST);
    let text_indexing = TextFieldIndexing::default()
        .set_tokenizer(TEXT_ANALYZER)
        .set_index_option(IndexRecordOption::WithFreqsAndPositions);
    schema.add_text_field("text", TextOptions::default().set_indexing_options(text_indexing));
    schema.add_text_field("kind", STRING);
    let identifier_indexing =
        TextFieldIndexing::default().set_tokenizer(IDENTIFIER_ANALYZER).set_index_option(IndexRecordOption::WithFreqs);
    schema.add_text_field("code", TextOptions::default().set_indexing_options(identifier_indexing));
    schema.build()
}

impl Fields {
    fn of(schema: &Schema) -> Result<Fields, IndexError> {
        let field = |name: &str| schema.get_field(name).map_err(IndexError::Index);
        Ok(Fields {
            owner: field("owner")?,
            seq: field("seq")?,
            text: field("text")?,
            code: field("code")?,
            kind: field("kind")?,
        })
    }
}

/// Pushes the seqs of the live documents of `owner` (a term of the owner
/// field) in one segment.
fn seqs_in_segment(segment: &SegmentReader, owner: &Term, seqs: &mut Vec<u64>) -> Result<(), IndexError> {
    let postings = segment.inverted_index(owner.field())?.read_postings(owner, IndexRecordOption::Basic);
    let Some(mut postings) = postings.map_err(io_error)? else {
        return Ok(());
    };
    let column = segment.fast_fields().u64("seq")?;
    let mut doc = postings.doc();
    while doc != TERMINATED {
        if !segment.is_deleted(doc)
            && let Some(seq) = column.first(doc)
        {
            seqs.push(seq);
        }
        doc = postings.advance();
    }
    Ok(())
}

fn io_error(error: std::io::Error) -> IndexError {
    IndexError::Index(error.into())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // Each guarded value is consistent between statements.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A text's share of BM25's statistics: tokens per field and the keys of
/// its distinct terms (of both fields).
#[derive(Default, Clone, Debug, PartialEq)]
pub struct TermCounts {
    text_tokens: u64,
    code_tokens: u64,
    terms: Box<[u64]>,
}

/// The identifiers in a text: words joined by `_`, `::` or `.` between
/// letters, or CamelCase with two humps or more. Everything else is prose
/// and left to the `text` field.
pub fn identifiers(text: &str) -> Vec<&str> {
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
