//! How [`JetStreamLog`](super::JetStreamLog) reaches the server and
//! creates the swarm's streams, and how it authenticates.

use std::fmt;
use std::time::Duration;

use mneme_events::DecodeLimits;

/// How to reach the server and how to create the swarm's streams. Stream
/// settings apply when a stream is created; an existing stream keeps its
/// configuration.
#[derive(Debug, Clone)]
pub struct JetStreamOptions {
    /// How long the server remembers event ids: a retry of an append within
    /// this window is deduplicated; after it, an event whose id is already
    /// on the log would be stored again. Longer windows cost server memory.
    pub duplicate_window: Duration,
    /// The largest message the events stream accepts, headers included.
    /// The server's own `max_payload` (1 MiB unless configured) also applies.
    pub max_message_bytes: i32,
    /// Drop events older than this; `None` keeps them forever. Mneme replays
    /// from the log, so an age limit is a decision to forget.
    pub max_age: Option<Duration>,
    /// Copies of each stream in a JetStream cluster (1, 3 or 5).
    pub replicas: usize,
    /// How long an append keeps publishing again, with the same ids, what
    /// JetStream did not acknowledge: a server restarting or a stream
    /// electing a leader answers nothing for a few seconds. Retrying is safe
    /// because ids deduplicate, so it is capped at half the
    /// `duplicate_window`. Zero fails an append at its first unacknowledged
    /// publish.
    pub publish_retry_window: Duration,
    /// How long a read (of the log or the dead letters) keeps trying again
    /// after a failure that a restart or an election causes: a reading
    /// consumer placed on a server that then goes away answers 503 until it
    /// is recreated. Reads change nothing, so retrying is always safe. Zero
    /// fails a read at its first failure.
    pub read_retry_window: Duration,
    /// How long opening the swarm's streams and bucket keeps trying again
    /// after a failure that a restart or an election causes. Longer than a
    /// read's: a process starting right after a node of a cluster was lost
    /// waits for every stream of the swarm to elect a leader, one after
    /// another, and one unanswered request already takes the client's
    /// request timeout.
    pub open_retry_window: Duration,
    /// Events larger than `limits.max_event_bytes` (as JSON) are refused on
    /// append. Reads take any size: what was accepted stays readable.
    pub limits: DecodeLimits,
    pub credentials: Option<Credentials>,
    /// How long a lease lives after its last renewal (see `crate::lease`):
    /// the longest a role goes unheld when its holder dies.
    pub lease_ttl: Duration,
}

impl Default for JetStreamOptions {
    fn default() -> Self {
        JetStreamOptions {
            duplicate_window: Duration::from_secs(120),
            max_message_bytes: 0,
            max_age: None,
            replicas: 1,
            publish_retry_window: Duration::from_secs(20),
            read_retry_window: Duration::from_secs(10),
            open_retry_window: Duration::from_secs(60),
            limits: DecodeLimits::default(),
            credentials: None,
            lease_ttl: Duration::from_secs(3),
        }
        .with_limits(DecodeLimits::default())
    }
}

impl JetStreamOptions {
    /// Sets the event size limit and sizes the stream's messages to match,
    /// with room for the stored form and the headers.
    pub fn with_limits(mut self, limits: DecodeLimits) -> Self {
        let headroom = crate::STORED_FORM_HEADROOM + 4 * 1024;
        self.max_message_bytes = i32::try_from(limits.max_event_bytes + headroom).unwrap_or(i32::MAX);
        self.limits = limits;
        self
    }

    /// Authenticates with a user and password.
    pub fn with_user_password(mut self, user: impl Into<String>, password: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::UserPassword { user: user.into(), password: password.into() });
        self
    }

    /// Authenticates with a token.
    pub fn with_token(mut self, token: impl Into<String>) -> Self {
        self.credentials = Some(Credentials::Token(token.into()));
        self
    }
}

/// How to authenticate to the NATS server.
#[derive(Clone)]
pub enum Credentials {
    UserPassword { user: String, password: String },
    Token(String),
}

/// Secrets stay out of logs and panic messages.
impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credentials::UserPassword { user, .. } => {
                f.debug_struct("UserPassword").field("user", user).field("password", &"<redacted>").finish()
            }
            Credentials::Token(_) => f.debug_tuple("Token").field(&"<redacted>").finish(),
        }
    }
}
