//! The NATS JetStream log: one stream per swarm, the agent in the subject.
//!
//! - Events: stream `MNEME_<swarm>` on `mneme.<swarm>.*.events.>`; each event
//!   is one message on `mneme.<swarm>.<agent>.events.<kind>`, its JSON wire
//!   form as payload and its id as `Nats-Msg-Id`, so the server deduplicates.
//!   The stream sequence is the log sequence.
//! - Dead letters: stream `MNEME_<swarm>_DEADLETTER` on
//!   `mneme.<swarm>.deadletter`; the offending record's bytes as payload and
//!   the rest in `Mneme-*` headers.
//! - Erasures: stream `MNEME_<swarm>_ERASURES` on `mneme.<swarm>.erasures`;
//!   what each purge erased (`ErasureRecord`, JSON), one message per
//!   record, the last one for a purge's seq standing.
//! - Records rewritten in place (erasure): stream `MNEME_<swarm>_REPLACED`
//!   on `mneme.<swarm>.replaced`, the redacted copy as payload and the
//!   record's seq in header `Mneme-Seq` (see `replaced.rs`).
//! - Handoff packages: stream `MNEME_<swarm>_HANDOFFS` on
//!   `mneme.<swarm>.*.handoff`, the handoff id as `Nats-Msg-Id`, so that a
//!   recipient that was away reads them with a durable consumer (see
//!   `broker.rs`).
//! - Durable consumer positions: key-value bucket `MNEME_<swarm>_positions`,
//!   the sequence as decimal text (readable with the `nats` CLI).
//!
//! Deduplication is the server's: it holds within the stream's
//! `duplicate_window` (see [`JetStreamOptions::duplicate_window`]). A
//! duplicate's publish ack carries the sequence of the original message,
//! which is what [`Appended`] must report once the message there is read
//! and found to be the same event (else the append fails as a conflicting
//! duplicate); nothing is kept in memory. Reading is in `read.rs`.

use std::collections::{BTreeMap, BTreeSet};
use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use async_nats::jetstream::consumer;
use async_nats::jetstream::message::PublishMessage;
use async_nats::jetstream::{self, kv, stream};
use async_trait::async_trait;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::{StreamExt, TryStreamExt};
use mneme_events::{DecodeLimits, ErasureRecord, Event};
use tokio::sync::Semaphore;

mod lease;
mod open;
mod options;
mod read;
mod replaced;

pub(crate) use open::connect_client;
pub use options::{Credentials, JetStreamOptions};

use open::Opened;
use replaced::{Replaced, secure_delete};

use read::{
    READ_REQUEST_TIMEOUT, ReadFailure, ReadRetry, create_reading_consumer, delete_in_background, entry_of_message,
    fetch_messages,
};

use crate::error::{validate_consumer_name, validate_name};
use crate::{Appended, DeadLetter, EventLog, InvalidRecord, Lease, LogEntry, LogError, Seq, subjects};

/// Duplicate seqs closer than this are read back in one read (see
/// `JetStreamLog::read_in_runs`).
const DUPLICATE_READ_GAP: Seq = 256;
/// The header naming the subject whose last sequence
/// `Nats-Expected-Last-Subject-Sequence` is about (nats-server 2.11+): an
/// append as a lease's holder expects the role's fence subject to end at
/// its fence.
const EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT: &str = "Nats-Expected-Last-Subject-Sequence-Subject";

/// Publish acks awaited at once. Also the capacity of the JetStream context's
/// own in-flight limit, see [`JetStreamLog::publish_permits`].
const MAX_ACKS_IN_FLIGHT: usize = 4096;

/// Messages published before their acks are awaited, per batch chunk.
const PUBLISH_CHUNK: usize = 1024;

/// Pauses between attempts to publish what JetStream did not acknowledge,
/// or to read what a restart or an election interrupted: the first retry
/// comes quickly (a reconnect takes milliseconds on a
/// restarted server), later ones back off to the longest.
const RETRY_FIRST_DELAY: Duration = Duration::from_millis(50);

const RETRY_LONGEST_DELAY: Duration = Duration::from_secs(1);

/// Messages fetched per pull request while a subscription catches up.
const SUBSCRIBE_BATCH: usize = 256;

/// How long a caught-up subscription's pull request waits on the server for
/// a new message. The server answers an idle pull when it expires, so no
/// answer by then (plus [`SUBSCRIBE_PULL_GRACE`]) means the pull was lost
/// with the server: this bounds how long a subscription stalls after a
/// server restart, and costs one request per expiry while idle.
const SUBSCRIBE_PULL_EXPIRES: Duration = Duration::from_secs(2);

const SUBSCRIBE_PULL_GRACE: Duration = Duration::from_secs(1);

/// Failed pulls in a row that a subscription answers by starting a new
/// consumer without reporting them.
const QUIET_PULL_FAILURES: u32 = 3;

/// Pause before a subscription retries after a failure, so that an outage
/// produces a trickle of errors, not a busy loop.
const SUBSCRIBE_RETRY_DELAY: Duration = Duration::from_millis(500);

/// The kind token of records appended with [`EventLog::append_raw`]: they
/// are not known to be events, so they have no kind.
const RAW_KIND_TOKEN: &str = "raw";

/// How long the handoffs stream remembers handoff ids, at least. After a
/// restart the handoff router publishes every pending handoff again, for
/// the plain subscribers who missed it; within this window the stream
/// stores each handoff once, so a durable consumer sees no copy. Handoffs
/// are few, so a long window costs little server memory.
const HANDOFF_DUPLICATE_WINDOW: Duration = Duration::from_secs(7 * 24 * 60 * 60);

const REASON_HEADER: &str = "Mneme-Reason";
const SEQ_HEADER: &str = "Mneme-Seq";
const AGENT_HEADER: &str = "Mneme-Agent";

/// The [`EventLog`] on NATS JetStream.
pub struct JetStreamLog {
    swarm: String,
    context: jetstream::Context,
    events: stream::Stream,
    dead_letters: stream::Stream,
    erasures: stream::Stream,
    positions: kv::Store,
    /// Records rewritten in place, and the stream of their copies (see
    /// `replaced.rs`).
    replaced: Replaced,
    copies: stream::Stream,
    limits: DecodeLimits,
    /// Bounds the publishes whose acks are outstanding, across concurrent
    /// appends. The JetStream context has the same limit, but it takes its
    /// permits one publish at a time: two appends that each hold some and
    /// wait for more could wait for each other forever. Taking a whole
    /// chunk's permits here at once rules that out.
    publish_permits: Arc<Semaphore>,
    /// See [`JetStreamOptions::publish_retry_window`]; already capped.
    publish_retry_window: Duration,
    /// See [`JetStreamOptions::read_retry_window`].
    read_retry_window: Duration,
    leases: lease::LeaseBucket,
}

impl JetStreamLog {
    /// The connection, for core NATS beside the log (see `broker.rs`).
    pub(crate) fn client(&self) -> async_nats::Client {
        self.context.client()
    }

    pub(crate) fn swarm_name(&self) -> &str {
        &self.swarm
    }

    /// Publishes a handoff package to `mneme.<swarm>.<agent>.handoff`, where
    /// the handoffs stream keeps it, with `handoff_id` as `Nats-Msg-Id`, and
    /// waits for the stream's ack, publishing again like an append does.
    /// Plain subscribers on the subject get every publish, a repeated one
    /// too; the stream stores a handoff once within its duplicate window.
    pub(crate) async fn publish_handoff_package(
        &self,
        agent: &str,
        handoff_id: &str,
        package_json: Vec<u8>,
    ) -> Result<(), LogError> {
        validate_name("agent", agent)?;
        let subject = subjects::handoff_subject(&self.swarm, agent);
        let message = PublishMessage::build().payload(Bytes::from(package_json)).message_id(handoff_id);
        self.publish_all(vec![(subject, message)], self.publish_retry_window).await?;
        Ok(())
    }

    /// Securely deletes the messages of the handoffs stream whose
    /// `Nats-Msg-Id` is one of these handoff ids.
    pub(crate) async fn erase_handoff_packages(
        &self,
        handoff_ids: &[mneme_events::EventId],
    ) -> Result<usize, LogError> {
        if handoff_ids.is_empty() {
            return Ok(0);
        }
        let wanted: BTreeSet<String> = handoff_ids.iter().map(ToString::to_string).collect();
        let stream = self.context.get_stream(subjects::handoffs_stream(&self.swarm)).await.map_err(LogError::nats)?;
        let messages = fetch_messages(&stream, 1, None, usize::MAX, self.read_retry_window).await?;
        let mut erased = 0;
        for message in &messages {
            let id = message.headers.as_ref().and_then(|headers| headers.get("Nats-Msg-Id")).map(|id| id.as_str());
            if id.is_some_and(|id| wanted.contains(id))
                && secure_delete(&stream, read::stream_sequence(message)?).await?
            {
                erased += 1;
            }
        }
        Ok(erased)
    }

    /// Connects to the server at `url` and opens (creating if needed) the
    /// streams and bucket of `swarm`. `url` may list several servers of one
    /// cluster separated by commas; the client connects to one of them and
    /// fails over to the others.
    pub async fn connect(url: &str, swarm: &str, options: JetStreamOptions) -> Result<JetStreamLog, LogError> {
        validate_name("swarm", swarm)?;
        let client = connect_client(url, options.credentials.as_ref(), &format!("mneme-{swarm}")).await?;
        JetStreamLog::from_client(client, swarm, options).await
    }

    /// Opens (creating if needed) the streams and bucket of `swarm` on an
    /// existing connection. `options.credentials` is not used: the client is
    /// already authenticated.
    pub async fn from_client(
        client: async_nats::Client,
        swarm: &str,
        options: JetStreamOptions,
    ) -> Result<JetStreamLog, LogError> {
        validate_name("swarm", swarm)?;
        let context = jetstream::ContextBuilder::new()
            .max_ack_inflight(MAX_ACKS_IN_FLIGHT)
            .backpressure_on_inflight(true)
            .build(client);
        let Opened { events, dead_letters, erasures, replaced: copies, positions } =
            open::open_with_retries(&context, swarm, &options).await?;
        let replaced = Replaced::load(&copies, swarm, options.read_retry_window).await?;
        let leases = lease::LeaseBucket::new(
            context.clone(),
            swarm,
            options.lease_ttl,
            options.replicas,
            options.read_retry_window,
        );
        Ok(JetStreamLog {
            leases,
            swarm: swarm.to_string(),
            context,
            events,
            dead_letters,
            erasures,
            positions,
            replaced,
            copies,
            limits: options.limits,
            publish_permits: Arc::new(Semaphore::new(MAX_ACKS_IN_FLIGHT)),
            publish_retry_window: options.publish_retry_window.min(options.duplicate_window / 2),
            read_retry_window: options.read_retry_window,
        })
    }

    /// Publishes messages in order and returns their acks in the same order,
    /// retrying for up to `retry_window`: only messages with an id may be
    /// retried, since only they deduplicate.
    async fn publish_all(
        &self,
        messages: Vec<(String, PublishMessage)>,
        retry_window: Duration,
    ) -> Result<Vec<jetstream::publish::PublishAck>, LogError> {
        let mut acks = Vec::with_capacity(messages.len());
        let mut messages = messages.into_iter().peekable();
        while messages.peek().is_some() {
            let chunk: Vec<_> = messages.by_ref().take(PUBLISH_CHUNK).collect();
            acks.extend(self.publish_chunk_until_acknowledged(&chunk, retry_window).await?);
        }
        Ok(acks)
    }

    /// Publishes a chunk, then publishes again what was not acknowledged,
    /// with the same message ids, until all is acknowledged or the retry
    /// window is over. A message whose ack was lost may be stored already:
    /// the server then deduplicates the retry and acks it with the original
    /// sequence (and `duplicate`).
    async fn publish_chunk_until_acknowledged(
        &self,
        chunk: &[(String, PublishMessage)],
        retry_window: Duration,
    ) -> Result<Vec<jetstream::publish::PublishAck>, LogError> {
        let chunk_len = u32::try_from(chunk.len()).unwrap_or(u32::MAX);
        let _permits = self.publish_permits.acquire_many(chunk_len).await.map_err(|_| LogError::Closed)?;
        let started = tokio::time::Instant::now();
        let mut acks: Vec<Option<jetstream::publish::PublishAck>> = vec![None; chunk.len()];
        let mut delay = RETRY_FIRST_DELAY;
        let mut attempts = 0;
        loop {
            attempts += 1;
            let Some(failure) = self.publish_unacknowledged(chunk, &mut acks).await else {
                return Ok(acks.into_iter().flatten().collect());
            };
            if failure.fenced {
                // Only appends as a lease's holder name an expected sequence;
                // the caller names the role.
                return Err(LogError::Fenced { role: String::new() });
            }
            if !failure.transient {
                return Err(LogError::Nats(failure.message));
            }
            let unacknowledged = acks.iter().filter(|ack| ack.is_none()).count();
            if started.elapsed() + delay > retry_window {
                return Err(LogError::PublishNotAcknowledged {
                    unacknowledged,
                    attempts,
                    waited: started.elapsed(),
                    last_error: failure.message,
                });
            }
            tracing::debug!(attempts, unacknowledged, error = %failure.message, "publishing again");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(RETRY_LONGEST_DELAY);
        }
    }

    /// One attempt: publishes, in order, the messages of `chunk` that have no
    /// ack yet, all before awaiting any ack (an ack's timeout only starts
    /// when it is awaited, and awaiting one by one would cost a round trip
    /// per message), and fills in the acks that arrive. Returns the first
    /// failure, if any.
    async fn publish_unacknowledged(
        &self,
        chunk: &[(String, PublishMessage)],
        acks: &mut [Option<jetstream::publish::PublishAck>],
    ) -> Option<PublishFailure> {
        let mut pending = Vec::new();
        let mut first_failure = None;
        for (index, (subject, message)) in chunk.iter().enumerate().filter(|(index, _)| acks[*index].is_none()) {
            match self.context.send_publish(subject.clone(), message.clone()).await {
                Ok(ack) => pending.push((index, ack.into_future())),
                Err(error) => {
                    // The connection is down or refused the message: what
                    // follows would fail the same way.
                    first_failure = Some(PublishFailure::of(&error, &format!("could not publish to {subject}")));
                    break;
                }
            }
        }
        let (indexes, futures): (Vec<usize>, Vec<_>) = pending.into_iter().unzip();
        for (index, answer) in indexes.into_iter().zip(futures::future::join_all(futures).await) {
            match answer {
                Ok(ack) => acks[index] = Some(ack),
                Err(error) => {
                    let failure = PublishFailure::of(&error, "publish not acknowledged by JetStream");
                    first_failure.get_or_insert(failure);
                }
            }
        }
        first_failure
    }

    /// The records at `seqs`, read in runs: seqs less than
    /// `DUPLICATE_READ_GAP` apart share one read, so a retried batch of
    /// thousands of events costs a few reads.
    async fn read_in_runs(&self, mut seqs: Vec<Seq>) -> Result<BTreeMap<Seq, Result<Event, InvalidRecord>>, LogError> {
        seqs.sort_unstable();
        seqs.dedup();
        let mut records = BTreeMap::new();
        let mut start = 0;
        while start < seqs.len() {
            let mut end = start;
            while end + 1 < seqs.len() && seqs[end + 1] - seqs[end] <= DUPLICATE_READ_GAP {
                end += 1;
            }
            let (first, last) = (seqs[start], seqs[end]);
            let span = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
            for entry in self.read(first, None, span).await? {
                if seqs[start..=end].binary_search(&entry.seq).is_ok() {
                    records.insert(entry.seq, entry.record);
                }
            }
            start = end + 1;
        }
        Ok(records)
    }

    /// [`EventLog::append`], each message published on the condition that
    /// `fence` — a fence subject and the seq of its last record — still
    /// stands, when given: [`LogError::Fenced`] once it does not.
    async fn append_with(&self, events: &[Event], fence: Option<(String, Seq)>) -> Result<Vec<Appended>, LogError> {
        let mut messages = Vec::with_capacity(events.len());
        for event in events {
            if event.swarm != self.swarm {
                return Err(LogError::ForeignSwarm {
                    id: event.id,
                    event_swarm: event.swarm.clone(),
                    log_swarm: self.swarm.clone(),
                });
            }
            self.check_size(event)?;
            let json = event.to_json();
            let subject = subjects::event_subject(&self.swarm, &event.agent, event.kind_name());
            let mut message = PublishMessage::build().payload(Bytes::from(json)).message_id(event.id.to_string());
            if let Some((fence_subject, fence_seq)) = &fence {
                message = message
                    .expected_last_subject_sequence(*fence_seq)
                    .header(EXPECTED_LAST_SUBJECT_SEQUENCE_SUBJECT, fence_subject.as_str());
            }
            messages.push((subject, message));
        }
        let acks = self.publish_all(messages, self.publish_retry_window).await?;
        let appended: Vec<Appended> = events
            .iter()
            .zip(acks)
            .map(|(event, ack)| Appended { id: event.id, seq: ack.sequence, duplicate: ack.duplicate })
            .collect();
        // The server deduplicates by `Nats-Msg-Id` alone: a duplicate's ack
        // names the message stored under the id, which must hold this event
        // for the answer to be true. A whole batch retried after a lost ack
        // is all duplicates, usually of one run of seqs: those are read in
        // runs, one reading consumer per run, not one per event.
        let duplicate_seqs: Vec<Seq> =
            appended.iter().filter(|appended| appended.duplicate).map(|appended| appended.seq).collect();
        if duplicate_seqs.is_empty() {
            return Ok(appended);
        }
        let stored = self.read_in_runs(duplicate_seqs).await?;
        for (index, (event, appended)) in events.iter().zip(&appended).enumerate() {
            if !appended.duplicate {
                continue;
            }
            // No message at the seq: it was erased (`EventLog::erase`; the
            // duplicate window is far shorter than any retention), and the
            // event was stored there.
            let same = stored
                .get(&appended.seq)
                .is_none_or(|record| record.as_ref().is_ok_and(|stored| stored.same_content(event)));
            if !same {
                return Err(LogError::ConflictingDuplicate { id: event.id, index, original_seq: appended.seq });
            }
        }
        Ok(appended)
    }

    /// What a read of the events stream needs, owned.
    fn reader(&self) -> Reader {
        Reader {
            events: self.events.clone(),
            swarm: self.swarm.clone(),
            replaced: self.replaced.clone(),
            retry_window: self.read_retry_window,
        }
    }
}

/// Why a publish failed, and whether publishing again may succeed.
struct PublishFailure {
    message: String,
    transient: bool,
    /// Refused because the fence it was published under no longer stands.
    fenced: bool,
}

impl PublishFailure {
    fn of(error: &jetstream::context::PublishError, what: &str) -> PublishFailure {
        PublishFailure {
            message: format!("{what}: {error}"),
            transient: publish_error_is_transient(error),
            fenced: error.kind() == jetstream::context::PublishErrorKind::WrongLastSequence,
        }
    }
}

/// Failures that a server restart or a leader election causes, and that go
/// away by themselves: no ack in time, a broken connection, no responders
/// (the stream is not loaded yet, or has no leader), and JetStream's own
/// "temporarily unavailable" answers. A message the server refuses for what
/// it is (too large, a wrong expected sequence) fails the same way again.
fn publish_error_is_transient(error: &jetstream::context::PublishError) -> bool {
    use jetstream::context::PublishErrorKind;
    match error.kind() {
        PublishErrorKind::TimedOut
        | PublishErrorKind::BrokenPipe
        | PublishErrorKind::StreamNotFound
        | PublishErrorKind::MaxAckPending => true,
        PublishErrorKind::WrongLastMessageId
        | PublishErrorKind::WrongLastSequence
        | PublishErrorKind::MaxPayloadExceeded => false,
        PublishErrorKind::Other => {
            let api_error =
                std::error::Error::source(error).and_then(|source| source.downcast_ref::<jetstream::Error>());
            // A refusal with a client-error status (400, 413…) is about the
            // message; anything else (503, or not an API answer) is not.
            api_error.is_none_or(|api_error| !(400..500).contains(&api_error.code()))
        }
    }
}

/// What a read of the events stream needs, owned, so that a subscription
/// can read pages after `subscribe` returned.
#[derive(Clone)]
struct Reader {
    events: stream::Stream,
    swarm: String,
    replaced: Replaced,
    retry_window: Duration,
}

impl Reader {
    /// [`EventLog::read`]: the messages there now, with the copies of
    /// records rewritten in place merged in.
    async fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        // Events only: the stream's fence records are not events.
        let filter = Some(match agent {
            Some(agent) => subjects::agent_events_filter(&self.swarm, agent),
            None => subjects::swarm_events_filter(&self.swarm),
        });
        let messages = fetch_messages(&self.events, from, filter, max, self.retry_window).await?;
        let entries =
            messages.iter().map(|message| entry_of_message(&self.swarm, message)).collect::<Result<Vec<_>, _>>()?;
        Ok(self.replaced.merge(entries, from, agent, max))
    }
}

/// A subscription: reading pages up to the last record rewritten in place,
/// then following the stream.
enum Subscription {
    CatchingUp {
        reader: Box<Reader>,
        agent: Option<String>,
        filter_subject: String,
        from: Seq,
        last: Seq,
        page: std::collections::VecDeque<LogEntry>,
    },
    Following(Box<Follower>),
}

/// Follows the events stream from `next` on, in order and without gaps.
///
/// Behind it is one ephemeral pull consumer at a time. While behind, it
/// fetches batches that the server answers at once; once caught up, it
/// long-polls for a single message, so that no batch is ever buffered on a
/// timer (the client drops what a pull request had buffered when its timer
/// runs out, which a reader held up by backpressure would hit). A pull left
/// unanswered past its expiry means the server went away with it; a skipped
/// consumer sequence means a message was lost between server and client.
/// Either way the follower starts a new consumer at the next undelivered
/// sequence. (The client's ordered consumer does much the same, but stalls
/// for about 15 s after a server restart.)
struct Follower {
    stream: stream::Stream,
    swarm: String,
    filter_subject: String,
    /// The next stream sequence to deliver.
    next: Seq,
    consumer: Option<consumer::PullConsumer>,
    /// The consumer sequence of the last message from `consumer`.
    consumer_seq: u64,
    pull: Option<consumer::pull::Batch>,
    received_in_pull: usize,
    /// The last pull found nothing: wait for the next message instead of
    /// fetching.
    caught_up: bool,
    /// Pulls failed in a row; see [`QUIET_PULL_FAILURES`].
    failed_pulls: u32,
}

impl Follower {
    fn new(stream: stream::Stream, swarm: String, filter_subject: String, from: Seq) -> Self {
        Follower {
            stream,
            swarm,
            filter_subject,
            next: from.max(1),
            consumer: None,
            consumer_seq: 0,
            pull: None,
            received_in_pull: 0,
            caught_up: false,
            failed_pulls: 0,
        }
    }

    /// The next entry, or a failure; after a failure the follower starts
    /// over from the next undelivered sequence when polled again.
    async fn next_entry(&mut self) -> Result<LogEntry, LogError> {
        loop {
            if self.consumer.is_none() {
                match create_reading_consumer(&self.stream, self.next, self.filter_subject.clone()).await {
                    Ok(consumer) => {
                        self.consumer = Some(consumer);
                        self.consumer_seq = 0;
                    }
                    Err(error) => {
                        tokio::time::sleep(SUBSCRIBE_RETRY_DELAY).await;
                        return Err(error);
                    }
                }
            }
            let message = match self.next_message().await {
                Ok(Some(message)) => message,
                Ok(None) => continue,
                Err(error) => {
                    self.start_over();
                    // A pull fails when its consumer is gone, as after a
                    // server restart: a new consumer cures that, so only a
                    // failure that persists is reported.
                    self.failed_pulls += 1;
                    if self.failed_pulls <= QUIET_PULL_FAILURES {
                        continue;
                    }
                    self.failed_pulls = 0;
                    tokio::time::sleep(SUBSCRIBE_RETRY_DELAY).await;
                    return Err(error);
                }
            };
            self.failed_pulls = 0;
            let info = message
                .info()
                .map_err(|error| LogError::Nats(format!("message without JetStream metadata: {error}")))?;
            if info.consumer_sequence != self.consumer_seq + 1 {
                self.start_over();
                continue;
            }
            self.consumer_seq = info.consumer_sequence;
            self.next = info.stream_sequence + 1;
            return entry_of_message(&self.swarm, &message);
        }
    }

    /// The next message of the current pull request, making the request as
    /// needed; `None` when the request ended or there is no consumer.
    async fn next_message(&mut self) -> Result<Option<jetstream::Message>, LogError> {
        let Some(consumer) = &self.consumer else {
            return Ok(None);
        };
        let pull = match &mut self.pull {
            Some(pull) => pull,
            None => {
                let pull = if self.caught_up {
                    consumer.batch().max_messages(1).expires(SUBSCRIBE_PULL_EXPIRES).messages().await
                } else {
                    consumer.fetch().max_messages(SUBSCRIBE_BATCH).messages().await
                };
                let pull = pull.map_err(|error| LogError::Nats(format!("pull request failed: {error}")))?;
                self.received_in_pull = 0;
                self.pull.insert(pull)
            }
        };
        match tokio::time::timeout(SUBSCRIBE_PULL_EXPIRES + SUBSCRIBE_PULL_GRACE, pull.next()).await {
            Ok(Some(Ok(message))) => {
                self.received_in_pull += 1;
                Ok(Some(message))
            }
            Ok(Some(Err(error))) => Err(LogError::Nats(format!("pull request failed: {error}"))),
            Ok(None) => {
                self.pull = None;
                self.caught_up = self.received_in_pull == 0;
                Ok(None)
            }
            Err(_unanswered) => {
                // The server went away with the request (and, being
                // in-memory, with the consumer).
                self.start_over();
                Ok(None)
            }
        }
    }

    fn start_over(&mut self) {
        self.pull = None;
        self.caught_up = false;
        if let Some(consumer) = self.consumer.take() {
            delete_in_background(&self.stream, &consumer);
        }
    }
}

/// Header values are single lines: a reason spanning lines would corrupt the
/// message framing.
fn header_safe(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}

fn dead_letter_of_message(message: &jetstream::Message) -> Result<DeadLetter, LogError> {
    let header =
        |name: &str| message.headers.as_ref().and_then(|headers| headers.get(name)).map(|value| value.as_str());
    let malformed = |what: &str| {
        let stream_seq = message.info().map(|info| info.stream_sequence).unwrap_or_default();
        LogError::Corrupt(format!("dead letter {stream_seq} {what}"))
    };
    let seq = header(SEQ_HEADER)
        .ok_or_else(|| malformed("has no Mneme-Seq header"))?
        .parse()
        .map_err(|_| malformed("has a Mneme-Seq header that is not a sequence"))?;
    Ok(DeadLetter {
        seq,
        agent: header(AGENT_HEADER).unwrap_or_default().to_string(),
        reason: header(REASON_HEADER).unwrap_or_default().to_string(),
        raw: message.payload.to_vec(),
    })
}

#[async_trait]
impl EventLog for JetStreamLog {
    fn swarm(&self) -> &str {
        &self.swarm
    }

    fn max_event_bytes(&self) -> usize {
        self.limits.max_event_bytes
    }

    async fn append(&self, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        self.append_with(events, None).await
    }

    async fn append_raw(&self, agent: &str, raw: &[u8]) -> Result<Seq, LogError> {
        validate_name("agent", agent)?;
        let subject = subjects::event_subject(&self.swarm, agent, RAW_KIND_TOKEN);
        let message = PublishMessage::build().payload(Bytes::copy_from_slice(raw));
        // Without an id a retry could store the record twice: no retry.
        let acks = self.publish_all(vec![(subject, message)], Duration::ZERO).await?;
        Ok(acks[0].sequence)
    }

    async fn read(&self, from: Seq, agent: Option<&str>, max: usize) -> Result<Vec<LogEntry>, LogError> {
        if let Some(agent) = agent {
            validate_name("agent", agent)?;
        }
        self.reader().read(from, agent, max).await
    }

    async fn subscribe(
        &self,
        from: Seq,
        agent: Option<&str>,
    ) -> Result<BoxStream<'static, Result<LogEntry, LogError>>, LogError> {
        if let Some(agent) = agent {
            validate_name("agent", agent)?;
        }
        // Events only: the stream's fence records are not events.
        let filter_subject = match agent {
            Some(agent) => subjects::agent_events_filter(&self.swarm, agent),
            None => subjects::swarm_events_filter(&self.swarm),
        };
        let from = from.max(1);
        // Records rewritten in place have no message: up to the last of
        // them the subscription reads pages, which merge the copies in,
        // then follows the stream from there.
        let state = match self.replaced.last().filter(|last| *last >= from) {
            Some(last) => Subscription::CatchingUp {
                reader: Box::new(self.reader()),
                agent: agent.map(str::to_string),
                filter_subject,
                from,
                last,
                page: std::collections::VecDeque::new(),
            },
            None => Subscription::Following(Box::new(Follower::new(
                self.events.clone(),
                self.swarm.clone(),
                filter_subject,
                from,
            ))),
        };
        let entries = futures::stream::unfold(state, |mut state| async move {
            loop {
                match &mut state {
                    Subscription::Following(follower) => {
                        let entry = follower.next_entry().await;
                        return Some((entry, state));
                    }
                    Subscription::CatchingUp { reader, agent, filter_subject, from, last, page } => {
                        if let Some(entry) = page.pop_front() {
                            return Some((Ok(entry), state));
                        }
                        if *from > *last {
                            let follower = Follower::new(
                                reader.events.clone(),
                                reader.swarm.clone(),
                                filter_subject.clone(),
                                *from,
                            );
                            state = Subscription::Following(Box::new(follower));
                            continue;
                        }
                        match reader.read(*from, agent.as_deref(), read::FETCH_BATCH).await {
                            Ok(read) => match read.last().map(|entry| entry.seq) {
                                Some(end) => {
                                    *from = end + 1;
                                    page.extend(read);
                                }
                                // Nothing more: follow from here.
                                None => *last = 0,
                            },
                            Err(error) => return Some((Err(error), state)),
                        }
                    }
                }
            }
        });
        Ok(entries.boxed())
    }

    async fn last_seq(&self) -> Result<Seq, LogError> {
        let mut retry = ReadRetry::new(self.read_retry_window);
        loop {
            let failure = match tokio::time::timeout(READ_REQUEST_TIMEOUT, self.events.get_info()).await {
                Ok(Ok(info)) => return Ok(info.state.last_sequence),
                Ok(Err(error)) => {
                    use jetstream::context::RequestErrorKind;
                    let transient = matches!(error.kind(), RequestErrorKind::NoResponders | RequestErrorKind::TimedOut);
                    let message = format!("could not read the events stream's state: {error}");
                    ReadFailure { message, transient }
                }
                Err(_) => ReadFailure {
                    message: format!("could not read the events stream's state: no answer in {READ_REQUEST_TIMEOUT:?}"),
                    transient: true,
                },
            };
            retry.wait_after(failure).await?;
        }
    }

    async fn last_event_seq(&self) -> Result<Seq, LogError> {
        let filter = subjects::swarm_events_filter(&self.swarm);
        let mut retry = ReadRetry::new(self.read_retry_window);
        let last_message = loop {
            let failure =
                match tokio::time::timeout(READ_REQUEST_TIMEOUT, self.events.get_last_raw_message_by_subject(&filter))
                    .await
                {
                    Ok(Ok(message)) => break message.sequence,
                    Ok(Err(error)) if error.kind() == stream::LastRawMessageErrorKind::NoMessageFound => break 0,
                    Ok(Err(error)) => ReadFailure {
                        message: format!("could not read the events stream's last event: {error}"),
                        transient: !matches!(error.kind(), stream::LastRawMessageErrorKind::InvalidSubject),
                    },
                    Err(_) => ReadFailure {
                        message: format!(
                            "could not read the events stream's last event: no answer in {READ_REQUEST_TIMEOUT:?}"
                        ),
                        transient: true,
                    },
                };
            retry.wait_after(failure).await?;
        };
        // A record rewritten in place has no message, yet it is an event.
        Ok(last_message.max(self.replaced.last().unwrap_or(0)))
    }

    async fn agents(&self) -> Result<Vec<String>, LogError> {
        let subjects_with_counts =
            self.events.info_with_subjects(subjects::swarm_events_filter(&self.swarm)).await.map_err(LogError::nats)?;
        let subjects: Vec<(String, usize)> = subjects_with_counts.try_collect().await.map_err(LogError::nats)?;
        let agents: BTreeSet<String> = subjects
            .iter()
            .filter_map(|(subject, _count)| subjects::agent_of_subject(&self.swarm, subject))
            .map(str::to_string)
            .collect();
        Ok(agents.into_iter().collect())
    }

    async fn take_lease(&self, role: &str, holder: &str) -> Result<Option<Lease>, LogError> {
        let Some(mut lease) = self.leases.take(role, holder).await? else { return Ok(None) };
        match lease::set_fence(&self.context, &self.events, &self.swarm, &mut lease).await {
            Ok(true) => Ok(Some(lease)),
            // A newer holder fenced the role while this one took the key
            // (its lease expired meanwhile): not this one's.
            Ok(false) => Ok(None),
            Err(error) => {
                // Without a fence the lease is no use: given up, so that the
                // next attempt (of any process) starts clean.
                if let Err(releasing) = self.leases.release(&lease).await {
                    tracing::warn!(role, %releasing, "could not give up a lease whose fence failed");
                }
                Err(error)
            }
        }
    }

    async fn renew_lease(&self, lease: &mut Lease) -> Result<(), LogError> {
        self.leases.renew(lease).await?;
        lease::check_fence(&self.context, &self.events, &self.swarm, lease).await
    }

    async fn append_fenced(&self, lease: &Lease, events: &[Event]) -> Result<Vec<Appended>, LogError> {
        let fence = (subjects::fence_subject(&self.swarm, &lease.role), lease.fence);
        self.append_with(events, Some(fence)).await.map_err(|error| match error {
            LogError::Fenced { .. } => LogError::Fenced { role: lease.role.clone() },
            error => error,
        })
    }

    async fn release_lease(&self, lease: &Lease) -> Result<(), LogError> {
        self.leases.release(lease).await
    }

    async fn lease_holder(&self, role: &str) -> Result<Option<String>, LogError> {
        self.leases.holder(role).await
    }

    async fn load_position(&self, consumer: &str) -> Result<Option<Seq>, LogError> {
        validate_consumer_name(consumer)?;
        let Some(value) = self.positions.get(consumer).await.map_err(LogError::nats)? else {
            return Ok(None);
        };
        let seq = std::str::from_utf8(&value).ok().and_then(|text| text.parse().ok());
        match seq {
            Some(seq) => Ok(Some(seq)),
            None => Err(LogError::Corrupt(format!("position of consumer {consumer:?} is {value:?}, not a sequence"))),
        }
    }

    async fn store_position(&self, consumer: &str, seq: Seq) -> Result<(), LogError> {
        validate_consumer_name(consumer)?;
        self.positions.put(consumer, Bytes::from(seq.to_string())).await.map_err(LogError::nats)?;
        Ok(())
    }

    async fn dead_letter(&self, letter: DeadLetter) -> Result<(), LogError> {
        let message = PublishMessage::build()
            .payload(Bytes::from(letter.raw))
            .header(REASON_HEADER, header_safe(&letter.reason))
            .header(SEQ_HEADER, letter.seq.to_string())
            .header(AGENT_HEADER, header_safe(&letter.agent))
            // Filing the same record again, e.g. by a consumer retrying after
            // a crash, is deduplicated by the server within the window; past
            // it, `dead_letters` keeps the first letter per sequence.
            .message_id(format!("deadletter-{}", letter.seq));
        self.publish_all(vec![(subjects::deadletter_subject(&self.swarm), message)], self.publish_retry_window).await?;
        Ok(())
    }

    async fn dead_letters(&self) -> Result<Vec<DeadLetter>, LogError> {
        let messages = fetch_messages(&self.dead_letters, 1, None, usize::MAX, self.read_retry_window).await?;
        let mut letters = messages.iter().map(dead_letter_of_message).collect::<Result<Vec<_>, _>>()?;
        // Stable: of several letters for one record, the first filed stays.
        letters.sort_by_key(|letter| letter.seq);
        letters.dedup_by_key(|letter| letter.seq);
        Ok(letters)
    }

    async fn record_erasure(&self, record: &ErasureRecord) -> Result<(), LogError> {
        let payload = serde_json::to_vec(record)
            .map_err(|error| LogError::Corrupt(format!("erasure record not encodable: {error}")))?;
        // No message id: a record written again (the eraser retrying, or
        // recording more) replaces the earlier one when read.
        let message = PublishMessage::build().payload(Bytes::from(payload));
        self.publish_all(vec![(subjects::erasures_subject(&self.swarm), message)], self.publish_retry_window).await?;
        Ok(())
    }

    async fn erasures(&self) -> Result<Vec<ErasureRecord>, LogError> {
        let messages = fetch_messages(&self.erasures, 1, None, usize::MAX, self.read_retry_window).await?;
        let mut records: BTreeMap<Seq, ErasureRecord> = BTreeMap::new();
        for message in &messages {
            let record: ErasureRecord = serde_json::from_slice(&message.payload)
                .map_err(|error| LogError::Corrupt(format!("erasure record on the erasures stream: {error}")))?;
            records.insert(record.purge.seq, record);
        }
        Ok(records.into_values().collect())
    }

    async fn erase(&self, seqs: &[Seq]) -> Result<usize, LogError> {
        let mut erased = 0;
        for &seq in seqs {
            if secure_delete(&self.events, seq).await? {
                erased += 1;
            }
        }
        Ok(erased)
    }

    async fn replace(&self, replacements: &[(Seq, Event)]) -> Result<usize, LogError> {
        let mut appended_at = Vec::with_capacity(replacements.len());
        for (seq, event) in replacements {
            let stored = self.read(*seq, None, 1).await?.into_iter().find(|entry| entry.seq == *seq);
            match stored {
                Some(LogEntry { record: Ok(stored), appended_at: at, .. })
                    if stored.id == event.id && stored.agent == event.agent =>
                {
                    appended_at.push(at);
                }
                _ => {
                    return Err(LogError::Corrupt(format!(
                        "the record at seq {seq} is not event {} of agent {:?}: not replaced",
                        event.id, event.agent
                    )));
                }
            }
        }
        // The copy first: a rewrite cut between the two steps leaves both,
        // and reads prefer the copy.
        for ((seq, event), appended_at) in replacements.iter().zip(appended_at) {
            let mut message = PublishMessage::build()
                .payload(Bytes::from(event.to_json()))
                .header(replaced::SEQ_HEADER, seq.to_string());
            if let Some(at) = appended_at {
                message = message.header(replaced::APPENDED_AT_HEADER, at.unix_nanos().to_string());
            }
            let subject = subjects::replaced_subject(&self.swarm);
            let acks = self.publish_all(vec![(subject, message)], self.publish_retry_window).await?;
            if let Some(earlier) = self.replaced.stored(*seq, event, appended_at, acks[0].sequence) {
                secure_delete(&self.copies, earlier).await?;
            }
            secure_delete(&self.events, *seq).await?;
        }
        Ok(replacements.len())
    }
}
