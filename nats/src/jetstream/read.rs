//! Reading the events stream: ephemeral pull consumers that fetch what is
//! there now, again from the message after the last one read when a server
//! restart or an election interrupts them, and the decoding of a message
//! into a log entry.

use std::time::Duration;

use async_nats::jetstream::consumer::{self, AckPolicy, DeliverPolicy};
use async_nats::jetstream::{self, stream};
use futures::StreamExt;
use mneme_events::{DecodeLimits, Timestamp, decode_json};

use super::{RETRY_FIRST_DELAY, RETRY_LONGEST_DELAY};
use crate::{InvalidRecord, LogEntry, LogError, Seq, subjects};

/// How long one request of a read (creating a reading consumer, the
/// stream's state) waits for an answer. An election can take longer: the
/// request is then made again.
pub(super) const READ_REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// Messages asked for per pull request while reading.
pub(super) const FETCH_BATCH: usize = 1024;

/// How long the server keeps an ephemeral consumer nobody pulls from: a
/// crashed reader's consumer, or a subscription whose owner stopped polling
/// (it then recreates its consumer when polled again).
pub(super) const CONSUMER_INACTIVE_THRESHOLD: Duration = Duration::from_secs(10);

/// Decodes a message of the events stream: the agent comes from the subject,
/// the event from the JSON payload, and the two must agree.
pub(super) fn entry_of_message(swarm: &str, message: &jetstream::Message) -> Result<LogEntry, LogError> {
    let seq = stream_sequence(message)?;
    let appended_at = Some(published(message)?);
    let subject = message.subject.as_str();
    let raw = message.payload.as_ref();
    // The stream only takes `mneme.<swarm>.*.events.>`, so this holds unless
    // the stream was reconfigured by hand.
    let Some(agent) = subjects::agent_of_subject(swarm, subject) else {
        let reason = format!("subject {subject:?} is not an events subject of swarm {swarm:?}");
        let record = Err(InvalidRecord { reason, raw: raw.to_vec() });
        return Ok(LogEntry { seq, agent: String::new(), record, appended_at });
    };
    // The size limit is enforced when appending; an event accepted under an
    // older, larger limit must stay readable, or replay would differ.
    let unlimited = DecodeLimits { max_event_bytes: usize::MAX };
    let decode = |bytes: &[u8]| decode_json(bytes, &unlimited).map_err(|error| error.to_string());
    let record = crate::decode_record(swarm, agent, decode, raw).and_then(|event| {
        // The subject's kind token is what consumers filter on; it must not lie.
        let kind_token = subject.rsplit_once(".events.").map_or("", |(_, kind)| kind);
        if kind_token == event.kind_name() {
            Ok(event)
        } else {
            let reason = format!("event of kind {:?} was filed under kind {kind_token:?}", event.kind_name());
            Err(InvalidRecord { reason, raw: raw.to_vec() })
        }
    });
    Ok(LogEntry { seq, agent: agent.to_string(), record, appended_at })
}

/// Reads up to `max` messages of `stream` with `seq >= from` (optionally only
/// those on `filter_subject`), as they are now, through ephemeral pull
/// consumers. A failure that a server restart or an election causes is
/// retried, from the message after the last one read, until `retry_window`
/// is over.
pub(super) async fn fetch_messages(
    stream: &stream::Stream,
    from: Seq,
    filter_subject: Option<String>,
    max: usize,
    retry_window: Duration,
) -> Result<Vec<jetstream::Message>, LogError> {
    let filter_subject = filter_subject.unwrap_or_default();
    let mut retry = ReadRetry::new(retry_window);
    let mut messages = Vec::new();
    loop {
        let next = match messages.last() {
            Some(last) => stream_sequence(last)? + 1,
            None => from,
        };
        let wanted = max - messages.len();
        let Err(failure) = fetch_messages_once(stream, next, &filter_subject, wanted, &mut messages).await else {
            return Ok(messages);
        };
        retry.wait_after(failure).await?;
    }
}

/// One attempt of [`fetch_messages`]: one consumer from `from`, its messages
/// pushed onto `messages` as they come, so that a failure part way keeps
/// what was read.
pub(super) async fn fetch_messages_once(
    stream: &stream::Stream,
    from: Seq,
    filter_subject: &str,
    max: usize,
    messages: &mut Vec<jetstream::Message>,
) -> Result<(), ReadFailure> {
    if max == 0 {
        return Ok(());
    }
    // A request sent while the connection is down can be lost with it and
    // would only fail at the client's request timeout; a shorter wait lets
    // the retry catch a server that is back.
    let creation = stream.create_consumer(reading_consumer_config(from, filter_subject.to_string()));
    let consumer = tokio::time::timeout(READ_REQUEST_TIMEOUT, creation)
        .await
        .map_err(|_| ReadFailure {
            message: format!("could not create a reading consumer: no answer in {READ_REQUEST_TIMEOUT:?}"),
            transient: true,
        })?
        .map_err(|error| ReadFailure::of_consumer_creation(&error))?;
    let fetched = fetch_pending(&consumer, max, messages).await;
    delete_in_background(stream, &consumer);
    fetched
}

/// Fetches what was pending when `consumer` was created, up to `max`:
/// "what is there now", not what arrives while reading.
pub(super) async fn fetch_pending(
    consumer: &consumer::PullConsumer,
    max: usize,
    messages: &mut Vec<jetstream::Message>,
) -> Result<(), ReadFailure> {
    let pending = usize::try_from(consumer.cached_info().num_pending).unwrap_or(usize::MAX);
    let wanted = pending.min(max);
    let mut fetched = 0;
    while fetched < wanted {
        let batch_size = (wanted - fetched).min(FETCH_BATCH);
        let mut batch = consumer.fetch().max_messages(batch_size).messages().await.map_err(|error| {
            let transient = !matches!(error.kind(), consumer::pull::BatchErrorKind::Serialize);
            ReadFailure { message: format!("could not fetch messages: {error}"), transient }
        })?;
        let before = fetched;
        while let Some(message) = batch.next().await {
            // The client reports the server's status answers (503 when the
            // consumer's server went away, 409 when the consumer was
            // deleted) as opaque errors; a new consumer gets past all of them.
            let message = message.map_err(|error| ReadFailure {
                message: format!("could not fetch messages: {error}"),
                transient: true,
            })?;
            messages.push(message);
            fetched += 1;
        }
        // Messages counted as pending can disappear before they are fetched
        // (an age limit, a purge): stop instead of asking forever.
        if fetched == before {
            break;
        }
    }
    Ok(())
}

/// The stream sequence of a message read from a stream.
pub(super) fn stream_sequence(message: &jetstream::Message) -> Result<Seq, LogError> {
    let info = message
        .info()
        .map_err(|error| LogError::Nats(format!("message read from a stream has no JetStream metadata: {error}")))?;
    Ok(info.stream_sequence)
}

/// When the stream stored a message (its metadata's publish time).
pub(super) fn published(message: &jetstream::Message) -> Result<Timestamp, LogError> {
    let info = message
        .info()
        .map_err(|error| LogError::Nats(format!("message read from a stream has no JetStream metadata: {error}")))?;
    let nanos = i64::try_from(info.published.unix_timestamp_nanos())
        .map_err(|_| LogError::Corrupt(format!("message {} was stored at an impossible time", info.stream_sequence)))?;
    Ok(Timestamp::from_unix_nanos(nanos))
}

/// Why a read failed, and whether reading again may succeed.
pub(super) struct ReadFailure {
    pub(super) message: String,
    pub(super) transient: bool,
}

/// The pauses between attempts of one read, and when to give up.
pub(super) struct ReadRetry {
    started: tokio::time::Instant,
    window: Duration,
    delay: Duration,
    attempts: u32,
}

impl ReadRetry {
    pub(super) fn new(window: Duration) -> ReadRetry {
        ReadRetry { started: tokio::time::Instant::now(), window, delay: RETRY_FIRST_DELAY, attempts: 0 }
    }

    /// After a failed attempt: waits before the next one, or, if the failure
    /// would repeat or the window is over, returns the error to give up with.
    pub(super) async fn wait_after(&mut self, failure: ReadFailure) -> Result<(), LogError> {
        self.attempts += 1;
        let waited = self.started.elapsed();
        if !failure.transient || waited + self.delay > self.window {
            let attempts = self.attempts;
            return Err(LogError::Nats(format!("{} (after {attempts} attempts in {waited:?})", failure.message)));
        }
        tracing::debug!(attempts = self.attempts, error = %failure.message, "reading again");
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(RETRY_LONGEST_DELAY);
        Ok(())
    }
}

impl ReadFailure {
    /// No answer in time or no responders is what a restart or an election
    /// looks like; so is a JetStream error other than a client error (4xx:
    /// no such stream, a bad configuration), which would only repeat.
    pub(super) fn of_consumer_creation(error: &jetstream::stream::ConsumerError) -> ReadFailure {
        use jetstream::stream::ConsumerErrorKind;
        let transient = match error.kind() {
            ConsumerErrorKind::TimedOut | ConsumerErrorKind::Request | ConsumerErrorKind::Other => true,
            ConsumerErrorKind::JetStream(api_error) => !(400..500).contains(&api_error.code()),
            ConsumerErrorKind::InvalidConsumerType | ConsumerErrorKind::InvalidName => false,
        };
        ReadFailure { message: format!("could not create a reading consumer: {error}"), transient }
    }
}

/// Deletes an ephemeral consumer that is done with. This frees the server's
/// memory now instead of after the inactive threshold; nobody waits for it,
/// and if it fails the threshold cleans up.
pub(super) fn delete_in_background(stream: &stream::Stream, consumer: &consumer::PullConsumer) {
    let consumer_name = consumer.cached_info().name.clone();
    let stream = stream.clone();
    tokio::spawn(async move {
        if let Err(error) = stream.delete_consumer(&consumer_name).await {
            tracing::debug!(%error, consumer = %consumer_name, "ephemeral consumer not deleted");
        }
    });
}

/// Creates an ephemeral pull consumer delivering the events stream from
/// `from` on, without acks: the log's readers keep their own positions.
pub(super) async fn create_reading_consumer(
    stream: &stream::Stream,
    from: Seq,
    filter_subject: String,
) -> Result<consumer::PullConsumer, LogError> {
    stream
        .create_consumer(reading_consumer_config(from, filter_subject))
        .await
        .map_err(|error| LogError::Nats(format!("could not create a reading consumer: {error}")))
}

pub(super) fn reading_consumer_config(from: Seq, filter_subject: String) -> consumer::pull::Config {
    consumer::pull::Config {
        deliver_policy: DeliverPolicy::ByStartSequence { start_sequence: from.max(1) },
        filter_subject,
        ack_policy: AckPolicy::None,
        inactive_threshold: CONSUMER_INACTIVE_THRESHOLD,
        memory_storage: true,
        num_replicas: 1,
        ..Default::default()
    }
}
