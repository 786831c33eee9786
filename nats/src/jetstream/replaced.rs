//! Records rewritten in place (`EventLog::replace`): a stream's messages
//! cannot be rewritten, so the redacted copy of a record is published to
//! stream `MNEME_<swarm>_REPLACED` (subject `mneme.<swarm>.replaced`, the
//! record's seq in header `Mneme-Seq`) and the record's message is securely
//! deleted. A record rewritten again gets a new copy, and the earlier copy
//! is securely deleted once the new one is stored. Every read of the log
//! merges the copies in at their seqs: this module holds them, loaded when
//! the log opens, and does the merging.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use async_nats::jetstream::{self, stream};
use mneme_events::{DecodeLimits, Event, Timestamp, decode_json};

use super::read::{fetch_messages, stream_sequence};
use crate::{LogEntry, LogError, Seq};

/// The header naming the seq of the record a copy stands for.
pub(super) const SEQ_HEADER: &str = "Mneme-Seq";

/// The header keeping the time the record a copy stands for was stored
/// (unix nanoseconds): a redaction does not change when an event was
/// written.
pub(super) const APPENDED_AT_HEADER: &str = "Mneme-Appended-At";

/// One record's copy, and the message of the copies' stream that holds it.
#[derive(Clone)]
struct Copy {
    entry: LogEntry,
    message: Seq,
}

/// The copies of the records rewritten in place, by seq.
#[derive(Clone, Default)]
pub(super) struct Replaced {
    copies: Arc<RwLock<BTreeMap<Seq, Copy>>>,
}

impl Replaced {
    /// The copies the stream holds. Of two copies of one record (a rewrite
    /// cut before the earlier copy was deleted), the later stands and the
    /// earlier is deleted now.
    pub(super) async fn load(stream: &stream::Stream, swarm: &str, window: Duration) -> Result<Replaced, LogError> {
        let messages = fetch_messages(stream, 1, None, usize::MAX, window).await?;
        let mut copies: BTreeMap<Seq, Copy> = BTreeMap::new();
        for message in &messages {
            let at = stream_sequence(message)?;
            let seq = message
                .headers
                .as_ref()
                .and_then(|headers| headers.get(SEQ_HEADER))
                .and_then(|value| value.as_str().parse::<Seq>().ok())
                .ok_or_else(|| LogError::Corrupt(format!("copy {at} of the copies' stream names no record seq")))?;
            let appended_at = message
                .headers
                .as_ref()
                .and_then(|headers| headers.get(APPENDED_AT_HEADER))
                .and_then(|value| value.as_str().parse::<i64>().ok())
                .map(Timestamp::from_unix_nanos);
            let event = decode_copy(seq, &message.payload)?;
            if event.swarm != swarm {
                return Err(LogError::Corrupt(format!("the copy of seq {seq} is of swarm {:?}", event.swarm)));
            }
            let entry = LogEntry { seq, agent: event.agent.clone(), record: Ok(event), appended_at };
            if let Some(earlier) = copies.insert(seq, Copy { entry, message: at }) {
                secure_delete(stream, earlier.message).await?;
            }
        }
        Ok(Replaced { copies: Arc::new(RwLock::new(copies)) })
    }

    /// The highest seq rewritten.
    pub(super) fn last(&self) -> Option<Seq> {
        self.copies.read().unwrap_or_else(PoisonError::into_inner).keys().next_back().copied()
    }

    /// Records that the copy of the record at `seq`, `event` (the record
    /// was stored at `appended_at`), is stored as message `message` of the
    /// copies' stream; answers the message of the
    /// copy it replaces, which the caller deletes.
    pub(super) fn stored(&self, seq: Seq, event: &Event, appended_at: Option<Timestamp>, message: Seq) -> Option<Seq> {
        let entry = LogEntry { seq, agent: event.agent.clone(), record: Ok(event.clone()), appended_at };
        let mut copies = self.copies.write().unwrap_or_else(PoisonError::into_inner);
        copies.insert(seq, Copy { entry, message }).map(|earlier| earlier.message)
    }

    /// `entries`, read from `from` on (one agent's, if named) and at most
    /// `max`, with the copies in that stretch merged in at their seqs: a
    /// copy stands for its record if both were read (a rewrite cut between
    /// its two steps).
    pub(super) fn merge(&self, entries: Vec<LogEntry>, from: Seq, agent: Option<&str>, max: usize) -> Vec<LogEntry> {
        let copies = self.copies.read().unwrap_or_else(PoisonError::into_inner);
        if copies.is_empty() {
            return entries;
        }
        // A full page reaches up to its last entry; a short one to the end.
        let through = if entries.len() >= max { entries.last().map_or(Seq::MAX, |entry| entry.seq) } else { Seq::MAX };
        let mut merged: BTreeMap<Seq, LogEntry> = entries.into_iter().map(|entry| (entry.seq, entry)).collect();
        for (seq, copy) in copies.range(from.max(1)..=through) {
            if agent.is_none_or(|agent| copy.entry.agent == agent) {
                merged.insert(*seq, copy.entry.clone());
            }
        }
        merged.into_values().take(max).collect()
    }
}

/// Deletes a message of `stream`, overwriting it in the server's files;
/// answers whether it was there (one already gone is not an error).
pub(super) async fn secure_delete(stream: &jetstream::stream::Stream, seq: Seq) -> Result<bool, LogError> {
    use async_nats::jetstream::ErrorCode;
    use async_nats::jetstream::stream::DeleteMessageErrorKind;
    // `STREAM.MSG.DELETE` without `no_erase`: the server overwrites the
    // message in its files.
    match stream.delete_message(seq).await {
        Ok(_) => Ok(true),
        Err(error) => match error.kind() {
            // Not there (deleted before, or never): the server says "no
            // message found", under one of these codes (10057 is any
            // failed delete, so its text decides).
            DeleteMessageErrorKind::JetStream(error)
                if [ErrorCode::NO_MESSAGE_FOUND, ErrorCode::SEQUENCE_NOT_FOUND].contains(&error.error_code())
                    || (error.error_code() == ErrorCode::STREAM_MESSAGE_DELETE_FAILED
                        && error.to_string().contains("no message found")) =>
            {
                Ok(false)
            }
            _ => Err(LogError::nats(error)),
        },
    }
}

fn decode_copy(seq: Seq, bytes: &[u8]) -> Result<Event, LogError> {
    let unlimited = DecodeLimits { max_event_bytes: usize::MAX };
    decode_json(bytes, &unlimited)
        .map_err(|error| LogError::Corrupt(format!("the copy of the record at seq {seq} is not an event: {error}")))
}
