//! The embedded log: one sled database in a data directory, one tree per swarm.
//!
//! Everything about an append lives in the swarm's tree under one-byte key
//! prefixes, so that a single `apply_batch` makes a whole batch of events —
//! records, id index, per-agent index and agent registry — appear atomically:
//!
//! | key | value |
//! |---|---|
//! | `e` seq (u64 BE) | the record: agent length (u8), agent, payload |
//! | `i` id (u128 BE) | seq (u64 BE) |
//! | `a` agent 0x00 seq (u64 BE) | empty: the per-agent index |
//! | `g` agent | empty: the agent registry |
//! | `p` consumer | seq (u64 BE): durable consumer positions |
//! | `n` | the next sequence (u64 BE), once a record was erased |
//! | `t` seq (u64 BE) | when the append batch starting at that seq was stored (unix ns, i64 BE) |
//!
//! A record's payload is `mneme_events::storage::encode(event)`, or the bytes
//! given to [`EventLog::append_raw`]. The record carries the agent it was filed
//! under, like a NATS subject does, so that a record whose payload is not an
//! event still has an agent, and an event filed under the wrong agent is
//! recognised as such. Agent names never contain 0x00 (they are validated), so
//! the per-agent index keys of two agents never interleave.
//!
//! A record's append time ([`LogEntry::appended_at`]) is its batch's: the
//! `t` key at or below its seq. One key per batch keeps appends as cheap as
//! before, and a read finds the times of a page in one range scan. Records
//! stored before these keys existed have none.
//!
//! Dead letters live in a second tree per swarm, keyed by the offending
//! record's sequence, and what purges erased (`ErasureRecord`, JSON) in a
//! third, keyed by the purge's sequence.
//!
//! sled calls may block on disk, so everything but `open` runs on tokio's
//! blocking pool.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use mneme_events::{DecodeLimits, ErasureRecord, Event, EventId, Timestamp, storage};
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::error::{validate_consumer_name, validate_name};
use crate::lease::validate_role;
use crate::{Appended, DeadLetter, EventLog, InvalidRecord, Lease, LogEntry, LogError, Seq};

const EVENT_PREFIX: u8 = b'e';
const ID_PREFIX: u8 = b'i';
const AGENT_RECORD_PREFIX: u8 = b'a';
const AGENT_PREFIX: u8 = b'g';
const POSITION_PREFIX: u8 = b'p';
const TIME_PREFIX: u8 = b't';
/// The next sequence, kept once an erasure may have removed the last
/// record (which `open` would otherwise derive it from).
const NEXT_SEQ_KEY: [u8; 1] = [b'n'];

/// Records read per round trip to the blocking pool while following the log.
const SUBSCRIBE_BATCH: usize = 256;

/// How the embedded log trades durability for speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SledOptions {
    /// Flush to disk before an append (or a position or dead letter) returns.
    /// Without it sled flushes in the background every 500 ms, and a crash of
    /// the machine can lose what was acknowledged in that time.
    pub flush_on_append: bool,
    /// Events larger than `limits.max_event_bytes` (as JSON) are refused on
    /// append. Reads take any size: what was accepted stays readable.
    pub limits: DecodeLimits,
}

impl Default for SledOptions {
    fn default() -> Self {
        SledOptions { flush_on_append: true, limits: DecodeLimits::default() }
    }
}

/// The embedded [`EventLog`]: a sled database in a data directory.
///
/// One process at a time may open a data directory (sled holds a file lock).
/// Subscriptions are notified by appends made through this value, which is
/// every append, since no other process can write.
pub struct SledLog {
    shared: Arc<Shared>,
}

/// The state shared by the log and the blocking tasks it runs. Live
/// subscriptions hold it weakly, so that dropping the [`SledLog`] closes the
/// database and releases its lock.
struct Shared {
    swarm: String,
    db: sled::Db,
    events: sled::Tree,
    dead_letters: sled::Tree,
    erasures: sled::Tree,
    options: SledOptions,
    /// The next sequence to assign. Held for the whole of an append, so that
    /// the dedup check and the sequence assignment of two appends never
    /// interleave.
    next_seq: Mutex<Seq>,
    /// The highest committed sequence; wakes subscriptions up.
    last_seq: watch::Sender<Seq>,
    /// One process holds the embedded log, so its leases live in it.
    leases: Mutex<LocalLeases>,
}

/// The embedded log's leases: by role, the holder and epoch; the epoch
/// counts the takes since the log opened.
#[derive(Default)]
struct LocalLeases {
    held: HashMap<String, (String, u64)>,
    epochs: u64,
}

/// A dead letter as stored: self-describing JSON, so the layout can grow
/// without a format byte.
#[derive(Serialize, Deserialize)]
struct StoredDeadLetter {
    agent: String,
    reason: String,
    raw: Vec<u8>,
}

impl SledLog {
    /// Opens (or creates) the log of `swarm` in the sled database at `dir`.
    ///
    /// Blocks while sled recovers the database; call it at start-up or from
    /// a blocking task.
    pub fn open(dir: &Path, swarm: &str, options: SledOptions) -> Result<SledLog, LogError> {
        validate_name("swarm", swarm)?;
        finish_interrupted_compaction(dir)?;
        let db = sled::Config::new().path(dir).open().map_err(|error| open_error(error, dir))?;
        let events = db.open_tree(format!("events/{swarm}"))?;
        let dead_letters = db.open_tree(format!("deadletters/{swarm}"))?;
        let erasures = db.open_tree(format!("erasures/{swarm}"))?;
        let last_record = match events.scan_prefix([EVENT_PREFIX]).next_back() {
            Some(entry) => seq_of_key(&entry?.0)?,
            None => 0,
        };
        let kept_next = match events.get(NEXT_SEQ_KEY)? {
            Some(value) => decode_seq(&value, "the next sequence")?,
            None => 0,
        };
        let last_seq = last_record.max(kept_next.saturating_sub(1));
        let shared = Shared {
            swarm: swarm.to_string(),
            db,
            events,
            dead_letters,
            erasures,
            options,
            next_seq: Mutex::new(last_seq + 1),
            last_seq: watch::Sender::new(last_seq),
            leases: Mutex::new(LocalLeases::default()),
        };
        Ok(SledLog { shared: Arc::new(shared) })
    }

    /// Rewrites the database at `dir` into a fresh one that holds only what
    /// is live, and puts it in its place. sled never overwrites a value in
    /// its files: a removed or replaced one stays there until sled cleans
    /// its segment, which 0.34 does not promise to do. This is how erased
    /// records ([`EventLog::erase`]) leave the disk. No log may be open on
    /// `dir`. Answers the bytes of its files before and after.
    pub fn compact(dir: &Path) -> Result<(u64, u64), LogError> {
        finish_interrupted_compaction(dir)?;
        let before = bytes_under(dir)?;
        let fresh_dir = beside(dir, "compacting");
        if fresh_dir.exists() {
            std::fs::remove_dir_all(&fresh_dir).map_err(io_error)?;
        }
        {
            let old = sled::Config::new().path(dir).open().map_err(|error| open_error(error, dir))?;
            let fresh = sled::Config::new().path(&fresh_dir).open()?;
            for name in old.tree_names() {
                let (from, to) = (old.open_tree(&name)?, fresh.open_tree(&name)?);
                for entry in from.iter() {
                    let (key, value) = entry?;
                    to.insert(key, value)?;
                }
            }
            fresh.flush()?;
        }
        // Swapped by two renames; a crash between them is finished by the
        // next open (`finish_interrupted_compaction`).
        let old_dir = beside(dir, "old");
        std::fs::rename(dir, &old_dir).map_err(io_error)?;
        std::fs::rename(&fresh_dir, dir).map_err(io_error)?;
        std::fs::remove_dir_all(&old_dir).map_err(io_error)?;
        Ok((before, bytes_under(dir)?))
    }

    /// Runs `work` on tokio's blocking pool: sled reads and writes may wait
    /// on the disk, which must not stall the async workers.
    async fn blocking<T, F>(&self, work: F) -> Result<T, LogError>
    where
        T: Send + 'static,
        F: FnOnce(&Shared) -> Result<T, LogError> + Send + 'static,
    {
        run_blocking(Arc::clone(&self.shared), work).await
    }

    /// Makes what was just written durable, if the options ask for it.
    /// Tells subscriptions how far the log goes. Called only after the flush,
    /// so that nothing is applied (and snapshotted) before it is durable.
    fn wake_subscribers(&self) {
        let next_seq = *self.shared.next_seq.lock().unwrap_or_else(PoisonError::into_inner);
        self.shared.last_seq.send_replace(next_seq - 1);
    }

    async fn flush_if_asked(&self) -> Result<(), LogError> {
        if self.shared.options.flush_on_append {
            // The blocking flush on a blocking thread, not `flush_async`:
            // many concurrent `flush_async` calls (a thousand feeds storing
            // their positions at once) deadlock sled 0.34.7's IO pool
            // (spacejam/sled#1308), which `mneme bench memory` hit with
            // 1,000 agents.
            self.blocking(|shared| {
                shared.db.flush()?;
                Ok(())
            })
            .await?;
        }
        Ok(())
    }
}

async fn run_blocking<T, F>(shared: Arc<Shared>, work: F) -> Result<T, LogError>
where
    T: Send + 'static,
    F: FnOnce(&Shared) -> Result<T, LogError> + Send + 'static,
{
    match tokio::task::spawn_blocking(move || work(&shared)).await {
        Ok(result) => result,
        Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
        // The runtime is shutting down: nothing will read the answer anyway.
        Err(_) => Err(LogError::Closed),
    }
}

/// sled reports a held file lock as a plain I/O error whose message is the
/// only tell; it is the one open failure people can fix themselves, so it
/// gets its own variant.
fn open_error(error: sled::Error, dir: &Path) -> LogError {
    match &error {
        sled::Error::Io(io) if io.to_string().contains("could not acquire lock") => {
            LogError::Locked { path: dir.display().to_string() }
        }
        _ => LogError::Storage(error),
    }
}

impl SledLog {
    /// [`EventLog::append`], as the holder of `lease` when given: the
    /// lease is checked under the same lock as the write, so a lease
    /// released or taken over is never appended under.
    async fn append_as(&self, lease: Option<Lease>, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        // Encoding is pure CPU work and may refuse the batch; it is done
        // before anything is locked or written.
        let mut records = Vec::with_capacity(events.len());
        for event in events {
            if event.swarm != self.shared.swarm {
                return Err(LogError::ForeignSwarm {
                    id: event.id,
                    event_swarm: event.swarm.clone(),
                    log_swarm: self.shared.swarm.clone(),
                });
            }
            // Measured as JSON, like JetStream and the API: the limit is one
            // number whichever log is behind it (the stored rkyv form can be
            // larger, and an event of exactly the limit was refused).
            self.check_size(event)?;
            let payload = storage::encode(event)?;
            records.push(PendingRecord {
                id: Some(event.id),
                agent: event.agent.clone(),
                value: record_value(&event.agent, &payload),
            });
        }
        let stored = self
            .blocking(move |shared| {
                let leases = shared.leases.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(lease) = &lease
                    && leases.held.get(&lease.role) != Some(&(lease.holder.clone(), lease.epoch))
                {
                    return Err(LogError::Fenced { role: lease.role.clone() });
                }
                shared.append(records)
            })
            .await?;
        self.flush_if_asked().await?;
        self.wake_subscribers();
        let appended = events
            .iter()
            .zip(stored)
            .map(|(event, (seq, duplicate))| Appended { id: event.id, seq, duplicate })
            .collect();
        Ok(appended)
    }
}

#[async_trait]
impl EventLog for SledLog {
    fn swarm(&self) -> &str {
        &self.shared.swarm
    }

    fn max_event_bytes(&self) -> usize {
        self.shared.options.limits.max_event_bytes
    }

    async fn append(&self, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        self.append_as(None, events).await
    }

    async fn append_fenced(&self, lease: &Lease, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        self.append_as(Some(lease.clone()), events).await
    }

    async fn append_raw(&self, agent: &str, raw: &[u8]) -> Result<Seq, LogError> {
        validate_name("agent", agent)?;
        let record = PendingRecord { id: None, agent: agent.to_string(), value: record_value(agent, raw) };
        let stored = self.blocking(move |shared| shared.append(vec![record])).await?;
        self.flush_if_asked().await?;
        self.wake_subscribers();
        let (seq, _duplicate) = stored[0];
        Ok(seq)
    }

    async fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        if let Some(agent) = agent {
            validate_name("agent", agent)?;
        }
        let agent = agent.map(str::to_string);
        // Only what `last_seq` announces: a record committed by an append
        // that has not yet flushed and announced it stays unread, so no
        // reader sees past `last_seq` (the handoff router waits for memories
        // up to `min(seq, last_seq)` of a record it has read).
        let announced = *self.shared.last_seq.borrow();
        let mut entries = self.blocking(move |shared| shared.read(from, agent.as_deref(), max)).await?;
        entries.truncate(entries.partition_point(|entry| entry.seq <= announced));
        Ok(entries)
    }

    async fn subscribe(
        &self,
        from: Seq,
        agent: Option<&str>,
    ) -> Result<BoxStream<'static, Result<LogEntry, LogError>>, LogError> {
        if let Some(agent) = agent {
            validate_name("agent", agent)?;
        }
        let subscription = Subscription {
            shared: Arc::downgrade(&self.shared),
            last_seq: self.shared.last_seq.subscribe(),
            next: from.max(1),
            agent: agent.map(str::to_string),
            buffered: std::collections::VecDeque::new(),
        };
        // The state is `None` once the stream has ended with an error.
        let stream = futures::stream::unfold(Some(subscription), |subscription| async move {
            let mut subscription = subscription?;
            match subscription.next_entry().await {
                Ok(entry) => Some((Ok(entry), Some(subscription))),
                Err(error) => Some((Err(error), None)),
            }
        });
        Ok(stream.boxed())
    }

    async fn last_seq(&self) -> Result<Seq, LogError> {
        // Only this process writes the database, so the in-memory value is
        // authoritative.
        Ok(*self.shared.last_seq.borrow())
    }

    async fn agents(&self) -> Result<Vec<String>, LogError> {
        self.blocking(|shared| {
            // sled orders keys bytewise, which for ASCII names is the sorted
            // order the contract asks for.
            shared
                .events
                .scan_prefix([AGENT_PREFIX])
                .map(|entry| {
                    let (key, _) = entry?;
                    String::from_utf8(key[1..].to_vec())
                        .map_err(|_| LogError::Corrupt(format!("agent registry key {key:?} is not UTF-8")))
                })
                .collect()
        })
        .await
    }

    async fn take_lease(&self, role: &str, holder: &str) -> Result<Option<Lease>, LogError> {
        validate_role(role)?;
        let mut leases = self.shared.leases.lock().unwrap_or_else(PoisonError::into_inner);
        if leases.held.get(role).is_some_and(|(held_by, _)| held_by != holder) {
            return Ok(None);
        }
        leases.epochs += 1;
        let epoch = leases.epochs;
        leases.held.insert(role.to_string(), (holder.to_string(), epoch));
        Ok(Some(Lease { role: role.to_string(), holder: holder.to_string(), epoch, revision: epoch, fence: 0 }))
    }

    async fn renew_lease(&self, lease: &mut Lease) -> Result<(), LogError> {
        let leases = self.shared.leases.lock().unwrap_or_else(PoisonError::into_inner);
        match leases.held.get(&lease.role) {
            Some((holder, epoch)) if *holder == lease.holder && *epoch == lease.epoch => Ok(()),
            _ => Err(LogError::LeaseLost { role: lease.role.clone() }),
        }
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), LogError> {
        let mut leases = self.shared.leases.lock().unwrap_or_else(PoisonError::into_inner);
        if leases.held.get(&lease.role).is_some_and(|(holder, epoch)| *holder == lease.holder && *epoch == lease.epoch)
        {
            leases.held.remove(&lease.role);
        }
        Ok(())
    }

    async fn lease_holder(&self, role: &str) -> Result<Option<String>, LogError> {
        validate_role(role)?;
        let leases = self.shared.leases.lock().unwrap_or_else(PoisonError::into_inner);
        Ok(leases.held.get(role).map(|(holder, _)| holder.clone()))
    }

    async fn load_position(&self, consumer: &str) -> Result<Option<Seq>, LogError> {
        validate_consumer_name(consumer)?;
        let key = prefixed(POSITION_PREFIX, consumer.as_bytes());
        self.blocking(move |shared| match shared.events.get(&key)? {
            Some(value) => Ok(Some(decode_seq(&value, "consumer position")?)),
            None => Ok(None),
        })
        .await
    }

    async fn store_position(&self, consumer: &str, seq: Seq) -> Result<(), LogError> {
        validate_consumer_name(consumer)?;
        let key = prefixed(POSITION_PREFIX, consumer.as_bytes());
        self.blocking(move |shared| {
            shared.events.insert(key, &seq.to_be_bytes())?;
            Ok(())
        })
        .await?;
        self.flush_if_asked().await
    }

    async fn dead_letter(&self, letter: DeadLetter) -> Result<(), LogError> {
        let stored = StoredDeadLetter { agent: letter.agent, reason: letter.reason, raw: letter.raw };
        let value = serde_json::to_vec(&stored)
            .map_err(|error| LogError::Corrupt(format!("dead letter not encodable: {error}")))?;
        self.blocking(move |shared| {
            // The first letter filed for a record stays: filing again (a
            // consumer retrying after a crash) must not multiply letters.
            let _already_filed =
                shared.dead_letters.compare_and_swap(letter.seq.to_be_bytes(), None::<&[u8]>, Some(value))?;
            Ok(())
        })
        .await?;
        self.flush_if_asked().await
    }

    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, LogError> {
        self.blocking(|shared| {
            shared
                .dead_letters
                .iter()
                .map(|entry| {
                    let (key, value) = entry?;
                    let seq = decode_seq(&key, "dead letter key")?;
                    let stored: StoredDeadLetter = serde_json::from_slice(&value)
                        .map_err(|error| LogError::Corrupt(format!("dead letter for seq {seq}: {error}")))?;
                    Ok(DeadLetter { seq, agent: stored.agent, reason: stored.reason, raw: stored.raw })
                })
                .collect()
        })
        .await
    }

    async fn record_erasure(&self, record: &ErasureRecord) -> Result<(), LogError> {
        let value = serde_json::to_vec(record)
            .map_err(|error| LogError::Corrupt(format!("erasure record not encodable: {error}")))?;
        let key = record.purge.seq.to_be_bytes();
        self.blocking(move |shared| {
            shared.erasures.insert(key, value)?;
            Ok(())
        })
        .await?;
        self.flush_if_asked().await
    }

    async fn erase(&self, seqs: &[Seq]) -> Result<usize, LogError> {
        let seqs = seqs.to_vec();
        self.blocking(move |shared| shared.erase(&seqs)).await
    }

    async fn replace(&self, replacements: &[(Seq, Event)]) -> Result<usize, LogError> {
        let mut records = Vec::with_capacity(replacements.len());
        for (seq, event) in replacements {
            records.push((*seq, event.id, event.agent.clone(), record_value(&event.agent, &storage::encode(event)?)));
        }
        self.blocking(move |shared| shared.replace(&records)).await
    }

    async fn erasures(&self) -> Result<Vec<ErasureRecord>, LogError> {
        self.blocking(|shared| {
            shared
                .erasures
                .iter()
                .map(|entry| {
                    let (key, value) = entry?;
                    let seq = decode_seq(&key, "erasure key")?;
                    serde_json::from_slice(&value).map_err(|error| {
                        LogError::Corrupt(format!("erasure record of the purge at seq {seq}: {error}"))
                    })
                })
                .collect()
        })
        .await
    }
}

/// A record about to be appended.
struct PendingRecord {
    /// `None` for raw records, which are not deduplicated.
    id: Option<EventId>,
    agent: String,
    value: Vec<u8>,
}

impl Shared {
    /// Appends records in one atomic batch and returns, per record, its
    /// sequence and whether it was a duplicate: ids already stored, or
    /// repeated earlier in the same batch, get their original sequence back
    /// and store nothing. A record under a stored id whose content differs
    /// refuses the whole batch ([`LogError::ConflictingDuplicate`]).
    fn append(&self, records: Vec<PendingRecord>) -> Result<Vec<(Seq, bool)>, LogError> {
        // A panic while the lock was held cannot have left `next_seq` ahead of
        // or behind the tree: it is only advanced after the batch committed.
        let mut next_seq = self.next_seq.lock().unwrap_or_else(PoisonError::into_inner);
        let mut seq = *next_seq;
        let mut batch = sled::Batch::default();
        let mut assigned_in_batch: HashMap<EventId, (Seq, usize)> = HashMap::new();
        let mut appended = Vec::with_capacity(records.len());
        for (index, record) in records.iter().enumerate() {
            if let Some(id) = record.id {
                let original = match assigned_in_batch.get(&id) {
                    Some(&(original, earlier)) => Some((original, records[earlier].value.clone())),
                    None => match self.stored_seq_of(id)? {
                        // Erased: the event was stored there; nothing is left
                        // to compare with.
                        Some(original) if self.events.get(event_key(original))?.is_none() => {
                            appended.push((original, true));
                            continue;
                        }
                        Some(original) => Some((original, self.stored_value(original)?)),
                        None => None,
                    },
                };
                if let Some((original, original_value)) = original {
                    if !self.same_event(original, &original_value, &record.value) {
                        return Err(LogError::ConflictingDuplicate { id, index, original_seq: original });
                    }
                    appended.push((original, true));
                    continue;
                }
                batch.insert(&id_key(id), &seq.to_be_bytes());
                assigned_in_batch.insert(id, (seq, index));
            }
            batch.insert(&event_key(seq), record.value.as_slice());
            batch.insert(agent_record_key(&record.agent, seq), &[]);
            batch.insert(prefixed(AGENT_PREFIX, record.agent.as_bytes()), &[]);
            appended.push((seq, false));
            seq += 1;
        }
        if seq != *next_seq {
            // Under the lock: batches are stamped in seq order.
            batch.insert(&time_key(*next_seq), &Timestamp::now().unix_nanos().to_be_bytes());
            self.events.apply_batch(batch)?;
            *next_seq = seq;
        }
        Ok(appended)
    }

    /// Removes the records at `seqs` and their agent index keys in one
    /// batch, keeping their ids (see [`EventLog::erase`]) and the next
    /// sequence.
    fn erase(&self, seqs: &[Seq]) -> Result<usize, LogError> {
        let next_seq = self.next_seq.lock().unwrap_or_else(PoisonError::into_inner);
        let mut batch = sled::Batch::default();
        let mut erased = 0;
        for &seq in seqs {
            let Some(value) = self.events.get(event_key(seq))? else { continue };
            batch.remove(&event_key(seq));
            if let Some((agent, _)) = split_record_value(&value) {
                batch.remove(agent_record_key(agent, seq));
            }
            erased += 1;
        }
        batch.insert(&NEXT_SEQ_KEY, &next_seq.to_be_bytes());
        self.events.apply_batch(batch)?;
        self.events.flush()?;
        Ok(erased)
    }

    /// Overwrites the records at these seqs in one batch, each checked to
    /// hold an event of the same id and agent first (see
    /// [`EventLog::replace`]).
    fn replace(&self, records: &[(Seq, EventId, String, Vec<u8>)]) -> Result<usize, LogError> {
        let _next_seq = self.next_seq.lock().unwrap_or_else(PoisonError::into_inner);
        let mut batch = sled::Batch::default();
        for (seq, id, agent, value) in records {
            let Some(stored) = self.events.get(event_key(*seq))? else {
                return Err(LogError::Corrupt(format!("no record at seq {seq} to replace")));
            };
            match self.entry(*seq, &stored).record {
                Ok(event) if event.id == *id && event.agent == *agent => {}
                _ => {
                    return Err(LogError::Corrupt(format!(
                        "the record at seq {seq} is not event {id} of agent {agent:?}: not replaced"
                    )));
                }
            }
            batch.insert(&event_key(*seq), value.as_slice());
        }
        self.events.apply_batch(batch)?;
        self.events.flush()?;
        Ok(records.len())
    }

    /// The stored bytes of the record at `seq`, which the id index names.
    fn stored_value(&self, seq: Seq) -> Result<Vec<u8>, LogError> {
        match self.events.get(event_key(seq))? {
            Some(value) => Ok(value.to_vec()),
            None => Err(LogError::Corrupt(format!("the id index names seq {seq}, which holds no record"))),
        }
    }

    /// Whether two record values hold the same event: the same bytes, or
    /// decoded events with the same content (a retry may carry a new time;
    /// an older storage format may have written the first).
    fn same_event(&self, seq: Seq, stored: &[u8], candidate: &[u8]) -> bool {
        if stored == candidate {
            return true;
        }
        match (self.entry(seq, stored).record, self.entry(seq, candidate).record) {
            (Ok(stored), Ok(candidate)) => stored.same_content(&candidate),
            _ => false,
        }
    }

    fn stored_seq_of(&self, id: EventId) -> Result<Option<Seq>, LogError> {
        match self.events.get(id_key(id))? {
            Some(value) => Ok(Some(decode_seq(&value, "id index entry")?)),
            None => Ok(None),
        }
    }

    fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        let mut entries = self.read_records(from, agent, max)?;
        self.stamp(&mut entries)?;
        Ok(entries)
    }

    /// Sets each entry's `appended_at` from the `t` keys: the last one at or
    /// below the first entry's seq, then every later one up to the last
    /// entry's, walked beside the entries (both are in seq order).
    fn stamp(&self, entries: &mut [LogEntry]) -> Result<(), LogError> {
        let Some(first) = entries.first() else { return Ok(()) };
        let first = first.seq;
        let decode = |entry: sled::Result<(sled::IVec, sled::IVec)>| -> Result<(Seq, Timestamp), LogError> {
            let (key, value) = entry?;
            let nanos: [u8; 8] = value
                .as_ref()
                .try_into()
                .map_err(|_| LogError::Corrupt(format!("append time {value:?} is not 8 bytes")))?;
            Ok((seq_of_key(&key)?, Timestamp::from_unix_nanos(i64::from_be_bytes(nanos))))
        };
        let mut current = self.events.range(time_key(0)..=time_key(first)).next_back().map(decode).transpose()?;
        // Lazy: it reads no further than the last entry's seq (and one key).
        let mut later = self.events.range(time_key(first + 1)..=time_key(Seq::MAX)).map(decode).peekable();
        for entry in entries {
            let reached = |next: &Result<(Seq, Timestamp), LogError>| match next {
                Ok((seq, _)) => *seq <= entry.seq,
                Err(_) => true,
            };
            while let Some(next) = later.next_if(reached) {
                current = Some(next?);
            }
            entry.appended_at = current.map(|(_, at)| at);
        }
        Ok(())
    }

    fn read_records(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        let from = from.max(1);
        match agent {
            None => self
                .events
                .range(event_key(from)..=event_key(Seq::MAX))
                .take(max)
                .map(|entry| {
                    let (key, value) = entry?;
                    Ok(self.entry(seq_of_key(&key)?, &value))
                })
                .collect(),
            Some(agent) => self
                .events
                .range(agent_record_key(agent, from)..=agent_record_key(agent, Seq::MAX))
                .take(max)
                .map(|entry| {
                    let (key, _) = entry?;
                    let seq = seq_of_key(&key)?;
                    let value = self
                        .events
                        .get(event_key(seq))?
                        .ok_or_else(|| LogError::Corrupt(format!("agent index points at missing record {seq}")))?;
                    Ok(self.entry(seq, &value))
                })
                .collect(),
        }
    }

    /// Decodes one stored record. A record that is not a valid event of this
    /// swarm is returned as such, never as an error: a bad record must not
    /// stop a consumer.
    fn entry(&self, seq: Seq, value: &[u8]) -> LogEntry {
        let Some((agent, payload)) = split_record_value(value) else {
            let reason = "the record's envelope (agent length and name) is corrupt".to_string();
            let record = Err(InvalidRecord { reason, raw: value.to_vec() });
            return LogEntry { seq, agent: String::new(), record, appended_at: None };
        };
        // No size limit here: the limit is enforced when appending, and an
        // event accepted under an older, larger limit must stay readable, or
        // a replay would dead-letter what the live memory applied.
        let decode = |bytes: &[u8]| storage::decode(bytes).map_err(|error| error.to_string());
        let record = crate::decode_record(&self.swarm, agent, decode, payload);
        LogEntry { seq, agent: agent.to_string(), record, appended_at: None }
    }
}

/// Follows the log: reads in batches from `next`, and once caught up waits
/// for the next append. Holds the log weakly: when the log is dropped, the
/// stream ends with [`LogError::Closed`].
struct Subscription {
    shared: Weak<Shared>,
    last_seq: watch::Receiver<Seq>,
    next: Seq,
    agent: Option<String>,
    buffered: std::collections::VecDeque<LogEntry>,
}

impl Subscription {
    async fn next_entry(&mut self) -> Result<LogEntry, LogError> {
        loop {
            if let Some(entry) = self.buffered.pop_front() {
                return Ok(entry);
            }
            let shared = self.shared.upgrade().ok_or(LogError::Closed)?;
            // Everything up to `observed` was committed before this read
            // starts, so the read sees it; anything later wakes the wait below.
            let observed = *self.last_seq.borrow_and_update();
            let (next, agent) = (self.next, self.agent.clone());
            let mut batch =
                run_blocking(shared, move |shared| shared.read(next, agent.as_deref(), SUBSCRIBE_BATCH)).await?;
            // What an append committed but has not announced yet waits for
            // its announcement (see `SledLog::read`).
            batch.truncate(batch.partition_point(|entry| entry.seq <= observed));
            match batch.last() {
                Some(last) => {
                    self.next = last.seq + 1;
                    self.buffered.extend(batch);
                }
                None => {
                    // With an agent filter, records of other agents advance
                    // the log without producing anything: skip past them so
                    // the wait does not return at once forever.
                    self.next = self.next.max(observed + 1);
                    let next = self.next;
                    self.last_seq.wait_for(|last| *last >= next).await.map_err(|_| LogError::Closed)?;
                }
            }
        }
    }
}

/// `<dir>.<what>`, beside `dir`.
fn beside(dir: &Path, what: &str) -> std::path::PathBuf {
    let mut name = dir.as_os_str().to_owned();
    name.push(format!(".{what}"));
    std::path::PathBuf::from(name)
}

/// A compaction cut short between its two renames left the database at
/// `<dir>.compacting` (complete: it was flushed before the first rename)
/// and the old one at `<dir>.old`: puts the new one in place. Cut short
/// before the first rename, the fresh copy is dropped by the next
/// compaction and the old database is still in place.
fn finish_interrupted_compaction(dir: &Path) -> Result<(), LogError> {
    let (fresh_dir, old_dir) = (beside(dir, "compacting"), beside(dir, "old"));
    if !dir.exists() && old_dir.exists() && fresh_dir.exists() {
        std::fs::rename(&fresh_dir, dir).map_err(io_error)?;
    }
    if dir.exists() && old_dir.exists() {
        std::fs::remove_dir_all(&old_dir).map_err(io_error)?;
    }
    Ok(())
}

fn bytes_under(dir: &Path) -> Result<u64, LogError> {
    let mut bytes = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_error)? {
            let entry = entry.map_err(io_error)?;
            let metadata = entry.metadata().map_err(io_error)?;
            if metadata.is_dir() {
                dirs.push(entry.path());
            } else {
                bytes += metadata.len();
            }
        }
    }
    Ok(bytes)
}

fn io_error(error: std::io::Error) -> LogError {
    LogError::Storage(sled::Error::Io(error))
}

fn prefixed(prefix: u8, rest: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + rest.len());
    key.push(prefix);
    key.extend_from_slice(rest);
    key
}

fn event_key(seq: Seq) -> [u8; 9] {
    let mut key = [EVENT_PREFIX; 9];
    key[1..].copy_from_slice(&seq.to_be_bytes());
    key
}

fn time_key(seq: Seq) -> [u8; 9] {
    let mut key = [TIME_PREFIX; 9];
    key[1..].copy_from_slice(&seq.to_be_bytes());
    key
}

fn id_key(id: EventId) -> [u8; 17] {
    let mut key = [ID_PREFIX; 17];
    key[1..].copy_from_slice(&id.0.to_be_bytes());
    key
}

fn agent_record_key(agent: &str, seq: Seq) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + agent.len() + 1 + 8);
    key.push(AGENT_RECORD_PREFIX);
    key.extend_from_slice(agent.as_bytes());
    key.push(0);
    key.extend_from_slice(&seq.to_be_bytes());
    key
}

/// The sequence in the last eight bytes of an `e`, `a` or `t` key.
fn seq_of_key(key: &[u8]) -> Result<Seq, LogError> {
    let tail = key.len().checked_sub(8).map(|start| &key[start..]);
    tail.and_then(|tail| tail.try_into().ok())
        .map(Seq::from_be_bytes)
        .ok_or_else(|| LogError::Corrupt(format!("key {key:?} does not end in a sequence")))
}

fn decode_seq(bytes: &[u8], what: &str) -> Result<Seq, LogError> {
    let bytes: [u8; 8] =
        bytes.try_into().map_err(|_| LogError::Corrupt(format!("{what} is {} bytes, not 8", bytes.len())))?;
    Ok(Seq::from_be_bytes(bytes))
}

fn record_value(agent: &str, payload: &[u8]) -> Vec<u8> {
    // Agent names are validated to at most 64 bytes, so the length fits a u8.
    let agent_len = u8::try_from(agent.len()).expect("agent names are at most 64 bytes");
    let mut value = Vec::with_capacity(1 + agent.len() + payload.len());
    value.push(agent_len);
    value.extend_from_slice(agent.as_bytes());
    value.extend_from_slice(payload);
    value
}

fn split_record_value(value: &[u8]) -> Option<(&str, &[u8])> {
    let (agent_len, rest) = value.split_first()?;
    let agent_len = usize::from(*agent_len);
    if rest.len() < agent_len {
        return None;
    }
    let (agent, payload) = rest.split_at(agent_len);
    Some((std::str::from_utf8(agent).ok()?, payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_carry_their_agent() {
        let value = record_value("coder", b"payload");
        assert_eq!(split_record_value(&value), Some(("coder", &b"payload"[..])));
        assert_eq!(split_record_value(&[9, b'a']), None);
        assert_eq!(split_record_value(&[]), None);
    }

    #[test]
    fn sequences_are_read_back_from_keys() {
        assert_eq!(seq_of_key(&event_key(42)).ok(), Some(42));
        assert_eq!(seq_of_key(&agent_record_key("coder", 7)).ok(), Some(7));
        assert!(seq_of_key(b"e12").is_err());
    }

    /// An append commits its batch, flushes, then announces `last_seq`.
    /// A record committed and not yet announced must not be read: the
    /// handoff router read a `handoff_sent` by subscription while
    /// `last_seq` was one short, so it waited for the sender's memory only
    /// up to the seq before it, and found no bundle (a flaky
    /// `tests/hostile_clients.rs`).
    #[tokio::test]
    async fn nothing_is_read_before_last_seq_announces_it() {
        use futures::StreamExt;
        let dir = tempfile::tempdir().unwrap();
        let log = SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap();
        let record = |text: &str| PendingRecord {
            id: None,
            agent: "coder".to_string(),
            value: record_value("coder", text.as_bytes()),
        };
        log.shared.append(vec![record("first")]).unwrap();
        log.wake_subscribers();
        // Committed, as an append is between its batch and its flush.
        log.shared.append(vec![record("second")]).unwrap();
        assert_eq!(log.last_seq().await.unwrap(), 1);
        assert_eq!(log.read(1, None, 10).await.unwrap().len(), 1);
        assert_eq!(log.read(1, Some("coder"), 10).await.unwrap().len(), 1);
        let mut subscription = log.subscribe(1, None).await.unwrap();
        assert_eq!(subscription.next().await.unwrap().unwrap().seq, 1);
        let early = tokio::time::timeout(std::time::Duration::from_millis(200), subscription.next()).await;
        assert!(early.is_err(), "read seq 2 before it was announced");
        log.wake_subscribers();
        assert_eq!(subscription.next().await.unwrap().unwrap().seq, 2);
        assert_eq!(log.read(1, None, 10).await.unwrap().len(), 2);
    }

    #[test]
    fn agent_index_keys_of_prefix_names_do_not_interleave() {
        // "ab" sorts after every key of "a" thanks to the 0x00 separator.
        assert!(agent_record_key("a", Seq::MAX) < agent_record_key("ab", 0));
    }
}
