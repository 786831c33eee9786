//! The event log: Mneme's only source of truth.
//!
//! [`EventLog`] is the contract — append with dedup by event id, read in
//! order from a sequence, live subscription, durable consumer positions and a
//! dead-letter place — and it has two implementations with the same
//! semantics: [`SledLog`] (embedded, the default) and [`JetStreamLog`] (NATS
//! JetStream). One log value serves one swarm.
//!
//! This crate is the only one that touches the network or the log's storage.

mod broker;
mod error;
mod jetstream;
mod lease;
pub mod placement;
#[cfg(feature = "testsuite")]
pub mod server;
mod sled_log;
pub mod subjects;

use async_trait::async_trait;
use futures::stream::BoxStream;
use mneme_events::{ErasureRecord, Event, EventId};

pub use broker::{Broker, QueryRequest};
pub use error::LogError;
pub use jetstream::{Credentials, JetStreamLog, JetStreamOptions};
pub use lease::Lease;
pub use sled_log::{SledLog, SledOptions};

/// A position in a swarm's log. Assigned by the log, starting at 1, strictly
/// increasing; never reused.
pub type Seq = u64;

/// What the log answered for one appended event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Appended {
    pub id: EventId,
    pub seq: Seq,
    /// The id was already on the log; `seq` is the original one and nothing
    /// new was stored.
    pub duplicate: bool,
}

/// One record read from the log.
#[derive(Debug, Clone)]
pub struct LogEntry {
    pub seq: Seq,
    /// The agent the record was filed under (its subject token on NATS).
    pub agent: String,
    /// The decoded, validated event, or why the record is not one.
    pub record: Result<Event, InvalidRecord>,
    /// When the log stored the record, by its own clock: JetStream's
    /// publish time; on the embedded log, the time of the append batch.
    /// For audit only: an event's `ts` is its publisher's, and no
    /// projection reads this (replay gives the same memory whenever it
    /// runs). `None` for records the embedded log stored before it kept
    /// these times.
    pub appended_at: Option<mneme_events::Timestamp>,
}

/// A record on the log that is not a valid event of this swarm, e.g. bytes
/// published to an events subject by a third party with a plain NATS client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidRecord {
    pub reason: String,
    pub raw: Vec<u8>,
}

/// A record moved aside because it could not be applied, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    /// Sequence of the offending record on the events log.
    pub seq: Seq,
    pub agent: String,
    pub reason: String,
    pub raw: Vec<u8>,
}

/// The log contract shared by the embedded and the JetStream log.
///
/// Every implementation must pass the contract suite in
/// `nats/tests/contract.rs`.
/// Room the logs leave above `max_event_bytes` for what an event's stored
/// JSON adds to the JSON its publisher sent: `scope` and `schema_version`
/// written out, numbers in their shortest form. An event of exactly
/// `max_event_bytes` as sent is stored (it was refused on the embedded log,
/// which measured its rkyv form).
pub const STORED_FORM_HEADROOM: usize = 4 * 1024;

#[async_trait]
pub trait EventLog: Send + Sync + 'static {
    /// The swarm this log holds.
    fn swarm(&self) -> &str;

    /// The largest event publishers may send, in bytes of JSON as sent
    /// (inclusive: `decode_json` refuses more).
    fn max_event_bytes(&self) -> usize;

    /// Whether the log would take `event` by its size: what `append` checks
    /// first. Both logs measure the event's JSON as Mneme writes it, which
    /// may be a little longer than what its publisher sent (fields left to
    /// their defaults are written out), so they take up to
    /// [`STORED_FORM_HEADROOM`] bytes over `max_event_bytes`. Writers of
    /// derived events (verdicts) ask before they append, and split or leave
    /// out what does not fit rather than fail.
    fn check_size(&self, event: &Event) -> Result<(), LogError> {
        let bytes = event.to_json().len();
        let limit = self.max_event_bytes();
        if bytes > limit.saturating_add(STORED_FORM_HEADROOM) {
            return Err(LogError::EventTooLarge { id: event.id, bytes, limit });
        }
        Ok(())
    }

    /// Appends events in order and returns, per event, its sequence. An event
    /// whose id is already on the log is not stored again; its original
    /// sequence is returned with `duplicate: true` — only when the record
    /// stored there is the same event (`Event::same_content`: equal but for
    /// `ts` and `schema_version`). Under an id whose stored record differs
    /// (another event, or a record that is not a valid event) the
    /// append fails with [`LogError::ConflictingDuplicate`] naming the
    /// event's index in the batch and the stored seq: an id is its
    /// publisher's promise that the content is the same.
    ///
    /// On the embedded log a batch is all-or-nothing and ids deduplicate
    /// forever. On JetStream each event is its own message: a failed batch
    /// may be partly stored, and retrying it whole is safe because ids
    /// deduplicate — within the stream's duplicate window only. An id
    /// re-published after the window is stored again under a new seq; agent
    /// memories skip ids they have applied, so it is not applied twice (and
    /// dead-letter it as `conflicting_duplicate` if its content differs).
    /// On JetStream a conflict is found after the publish, so the batch's
    /// other events are stored.
    async fn append(&self, events: &[Event]) -> Result<Vec<Appended>, LogError>;

    /// Appends bytes that are not known to be an event, under `agent`'s
    /// subject. For importing foreign logs and for testing what a consumer
    /// does with a bad record; Mneme's own API never calls it.
    async fn append_raw(&self, agent: &str, raw: &[u8]) -> Result<Seq, LogError>;

    /// Reads up to `max` records with `seq >= from`, in order, optionally only
    /// those of one agent. Returns what is there now; never waits.
    async fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError>;

    /// The records at exactly these sequences, in sequence order; sequences
    /// not on the log are left out. For provenance, which names events by
    /// seq. The default reads one record per seq; a log with random access
    /// may do better.
    async fn read_seqs(&self, seqs: &[Seq]) -> Result<Vec<LogEntry>, LogError> {
        let mut wanted: Vec<Seq> = seqs.to_vec();
        wanted.sort_unstable();
        wanted.dedup();
        let mut entries = Vec::with_capacity(wanted.len());
        for seq in wanted {
            if let Some(entry) = self.read(seq, None, 1).await?.into_iter().find(|entry| entry.seq == seq) {
                entries.push(entry);
            }
        }
        Ok(entries)
    }

    /// Like [`EventLog::read`], then keeps following the log as it grows.
    async fn subscribe(
        &self,
        from: Seq,
        agent: Option<&str>,
    ) -> Result<BoxStream<'static, Result<LogEntry, LogError>>, LogError>;

    /// The highest sequence on the log, 0 when it is empty. It counts
    /// every record the log gave a seq to, erased ones and records that are
    /// not events (a lease's fence on JetStream): what the log's end is, for
    /// telling whether it lost its tail.
    async fn last_seq(&self) -> Result<Seq, LogError>;

    /// The seq of the last event on the log, 0 when there is none: what a
    /// memory must have applied to hold the whole log. Records that are
    /// not events and erased records are passed over, so it may be below
    /// [`EventLog::last_seq`]. The default answers `last_seq`, for a log
    /// that gives seqs to events only.
    async fn last_event_seq(&self) -> Result<Seq, LogError> {
        self.last_seq().await
    }

    /// Every agent with at least one record on the log, sorted.
    async fn agents(&self) -> Result<Vec<String>, LogError>;

    /// The position a named durable consumer last stored, if any.
    async fn load_position(&self, consumer: &str) -> Result<Option<Seq>, LogError>;

    /// Takes the lease on `role` for `holder` (see [`Lease`]) and sets its
    /// fence: `None` while another holder's lease on it lives. A holder
    /// that takes a lease it already holds gets it again, under a new epoch
    /// on JetStream.
    async fn take_lease(&self, role: &str, holder: &str) -> Result<Option<Lease>, LogError>;

    /// Renews `lease` for another time to live: [`LogError::LeaseLost`]
    /// once it expired or another holder took the role over (or fenced it).
    async fn renew_lease(&self, lease: &mut Lease) -> Result<(), LogError>;

    /// [`EventLog::append`] as the holder of `lease`: refused with
    /// [`LogError::Fenced`] once another holder took the role over, however
    /// long this one was paused. On JetStream every message is published on
    /// the condition that the role's fence is still this holder's, so the
    /// server itself refuses it; of a batch refused part way, what was
    /// stored before the new fence stays (and ids deduplicate a retry).
    async fn append_fenced(&self, lease: &Lease, events: &[Event]) -> Result<Vec<Appended>, LogError>;

    /// Gives `lease` up, so that another process may take the role at once;
    /// a lease already lost is left as it is.
    async fn release_lease(&self, lease: &Lease) -> Result<(), LogError>;

    /// Who holds the lease on `role` now, if anyone.
    async fn lease_holder(&self, role: &str) -> Result<Option<String>, LogError>;

    /// Stores a durable consumer's position; it survives restarts.
    async fn store_position(&self, consumer: &str, seq: Seq) -> Result<(), LogError>;

    /// Files a record as dead: on NATS it is published to
    /// `mneme.<swarm>.deadletter`; on the embedded log it goes to a
    /// dead-letter tree. Filing the same `seq` twice keeps one letter.
    async fn dead_letter(&self, letter: DeadLetter) -> Result<(), LogError>;

    /// Dead letters, in order of the offending records' sequences.
    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, LogError>;

    /// Records, beside the log, what the purge at `record.purge.seq`
    /// erased (Mneme's eraser writes it once the purging memory applied the
    /// tombstone). On NATS it is published to `mneme.<swarm>.erasures`
    /// (stream `MNEME_<swarm>_ERASURES`); on the embedded log it goes to an
    /// erasure tree. Recording a purge again replaces its record.
    async fn record_erasure(&self, record: &ErasureRecord) -> Result<(), LogError>;

    /// Every erasure recorded, one per purge, in order of the purges' seqs.
    async fn erasures(&self) -> Result<Vec<ErasureRecord>, LogError>;

    /// Deletes the records at these sequences from the log's storage
    /// (erasure, issue 35): reads pass over them from then on, the last
    /// sequence does not change and the next append takes the sequence it
    /// would have, and an event whose record was erased, appended again
    /// under its id, is answered as a duplicate at its old sequence. On
    /// JetStream each message is deleted with secure erase (overwritten in
    /// the stream's files); on the embedded log the records leave the
    /// tree, and their bytes leave sled's files when the log is compacted
    /// (`SledLog::compact`). Answers how many of the records were there;
    /// erasing a sequence again is not an error.
    async fn erase(&self, seqs: &[Seq]) -> Result<usize, LogError>;

    /// Rewrites records in place (erasure, issue 35): each `(seq, event)`
    /// puts `event` — a redacted copy of the record at `seq`, with its id
    /// and agent — where that record was. Reads, `read_seqs` and
    /// subscriptions give the new event at its old seq from then on, and
    /// the old bytes leave the log's storage as an erased record's do. On
    /// the embedded log the record is overwritten in the tree; on JetStream
    /// the copy is kept in the positions bucket (under `replaced.<seq>`,
    /// an earlier copy securely deleted) and the message securely deleted.
    /// A seq that holds no record, or a record of another id or agent, is
    /// refused ([`LogError::Corrupt`]) before anything is written. Answers
    /// how many records were rewritten.
    async fn replace(&self, replacements: &[(Seq, Event)]) -> Result<usize, LogError>;
}

/// Decodes a record's bytes as an event of `swarm` filed under `agent`.
/// Shared by both logs so that "what is a bad record" has one answer.
pub(crate) fn decode_record(
    swarm: &str,
    agent: &str,
    decode: impl FnOnce(&[u8]) -> Result<Event, String>,
    raw: &[u8],
) -> Result<Event, InvalidRecord> {
    let invalid = |reason: String| InvalidRecord { reason, raw: raw.to_vec() };
    let event = decode(raw).map_err(invalid)?;
    if event.swarm != swarm {
        return Err(invalid(format!("event swarm {:?} does not match the log's swarm {swarm:?}", event.swarm)));
    }
    if event.agent != agent {
        return Err(invalid(format!(
            "event agent {:?} does not match the agent {agent:?} it was filed under",
            event.agent
        )));
    }
    Ok(event)
}
