use mneme_events::EventId;

/// The one error type of `mneme-nats`.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("embedded log storage failed: {0}")]
    Storage(#[from] sled::Error),
    #[error(
        "the embedded log at {path} is in use by another process (is a `mneme serve` running on \
         this data dir?)"
    )]
    Locked { path: String },
    #[error("NATS request failed: {0}")]
    Nats(String),
    #[error("event could not be encoded for the log: {0}")]
    Encoding(#[from] mneme_events::Error),
    #[error("invalid consumer name {0:?}: use letters, digits, '_' and '-'")]
    InvalidConsumerName(String),
    #[error("invalid {role} name: {reason}")]
    InvalidName { role: &'static str, reason: String },
    #[error("event {id} belongs to swarm {event_swarm:?}, this log holds swarm {log_swarm:?}")]
    ForeignSwarm { id: EventId, event_swarm: String, log_swarm: String },
    #[error(
        "event {id} is {bytes} bytes as stored, over the limit of {limit} bytes (log.max_event_bytes, with \
         4096 bytes of room for the fields the stored form writes out)"
    )]
    EventTooLarge { id: EventId, bytes: usize, limit: usize },
    #[error(
        "event {id} (at index {index} of the batch) conflicts with the event stored under the same id at seq \
         {original_seq}: an id names one event, and this one's content differs; publish it under a new id"
    )]
    ConflictingDuplicate { id: EventId, index: usize, original_seq: u64 },
    #[error("the log holds a malformed internal record: {0}")]
    Corrupt(String),
    #[error(
        "JetStream did not acknowledge {unacknowledged} published messages after {attempts} attempts over \
         {waited:?}: {last_error}"
    )]
    PublishNotAcknowledged { unacknowledged: usize, attempts: u32, waited: std::time::Duration, last_error: String },
    #[error("nats-server: {0}")]
    Server(String),
    #[error("the log is closed")]
    Closed,
    #[error("the lease on {role} is lost: it expired or another process took it over")]
    LeaseLost { role: String },
    #[error(
        "refused: this process no longer holds the lease on {role} (another process fenced it out and \
         appends as its holder now)"
    )]
    Fenced { role: String },
}

impl LogError {
    pub(crate) fn nats(error: impl std::fmt::Display) -> LogError {
        LogError::Nats(error.to_string())
    }
}

/// Checks a durable consumer's name. Names become sled keys and NATS KV keys,
/// so they keep to an alphabet both accept without escaping.
pub(crate) fn validate_consumer_name(name: &str) -> Result<(), LogError> {
    let valid = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if valid { Ok(()) } else { Err(LogError::InvalidConsumerName(name.to_string())) }
}

/// Checks a swarm or agent name given to the log directly (not inside an
/// event, where decoding already checked it): names become subject tokens and
/// key prefixes.
pub(crate) fn validate_name(role: &'static str, name: &str) -> Result<(), LogError> {
    mneme_events::validate_name(name).map_err(|error| LogError::InvalidName { role, reason: error.message })
}
