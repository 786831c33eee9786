//! Opening (creating if needed) the streams and the bucket of a swarm.
//!
//! Opening is idempotent (`get_or_create`), so it is retried like a read:
//! a cluster that has just lost or restarted a node answers nothing, or
//! "no leader", for a few seconds while it elects one, and a process that
//! starts in that moment (a `mneme replay`, a restarted server) should wait
//! for it rather than fail. A bad name or configuration fails at once.

use async_nats::jetstream::context::{CreateKeyValueErrorKind, CreateStreamError, CreateStreamErrorKind};
use async_nats::jetstream::{self, kv, stream};

use super::read::{ReadFailure, ReadRetry};
use super::{Credentials, HANDOFF_DUPLICATE_WINDOW, JetStreamOptions};
use crate::{LogError, subjects};

/// What [`open_with_retries`] opened.
pub(super) struct Opened {
    pub(super) events: stream::Stream,
    pub(super) dead_letters: stream::Stream,
    pub(super) erasures: stream::Stream,
    pub(super) replaced: stream::Stream,
    pub(super) positions: kv::Store,
}

/// Opens the swarm's events, dead-letter, erasure, copy and handoff streams and its
/// positions bucket, retrying transient failures for up to
/// `options.open_retry_window`.
pub(super) async fn open_with_retries(
    context: &jetstream::Context,
    swarm: &str,
    options: &JetStreamOptions,
) -> Result<Opened, LogError> {
    let mut retry = ReadRetry::new(options.open_retry_window);
    loop {
        match open(context, swarm, options).await {
            Ok(opened) => return Ok(opened),
            Err(failure) => retry.wait_after(failure).await?,
        }
    }
}

async fn open(context: &jetstream::Context, swarm: &str, options: &JetStreamOptions) -> Result<Opened, ReadFailure> {
    let events = context
        .get_or_create_stream(stream::Config {
            name: subjects::events_stream(swarm),
            description: Some(format!("Mneme event log of swarm {swarm}")),
            subjects: events_stream_subjects(swarm),
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window: options.duplicate_window,
            max_message_size: options.max_message_bytes,
            max_age: options.max_age.unwrap_or_default(),
            num_replicas: options.replicas,
            ..Default::default()
        })
        .await
        .map_err(|error| stream_failure(format!("could not open the events stream of {swarm}"), &error))?;
    let events = with_fence_subjects(context, events, swarm).await?;
    let dead_letters = open_side_stream(
        context,
        options,
        subjects::deadletter_stream(swarm),
        format!("Mneme dead letters of swarm {swarm}"),
        subjects::deadletter_subject(swarm),
    )
    .await?;
    let erasures = open_side_stream(
        context,
        options,
        subjects::erasures_stream(swarm),
        format!("Mneme erasures of swarm {swarm}: what each purge erased"),
        subjects::erasures_subject(swarm),
    )
    .await?;
    let replaced = open_side_stream(
        context,
        options,
        subjects::replaced_stream(swarm),
        format!("Mneme records of swarm {swarm} rewritten in place (redacted copies)"),
        subjects::replaced_subject(swarm),
    )
    .await?;
    open_handoffs_stream(context, swarm, options).await?;
    let positions = open_positions_bucket(context, swarm, options.replicas).await?;
    Ok(Opened { events, dead_letters, erasures, replaced, positions })
}

/// The events stream's subjects: every agent's events, and the fences of the
/// swarm's leases (see `crate::lease`).
fn events_stream_subjects(swarm: &str) -> Vec<String> {
    vec![subjects::swarm_events_filter(swarm), subjects::swarm_fences_filter(swarm)]
}

/// An events stream made before leases were fenced captures no fence
/// subject: it is given it, once, keeping the rest of its configuration.
async fn with_fence_subjects(
    context: &jetstream::Context,
    mut events: stream::Stream,
    swarm: &str,
) -> Result<stream::Stream, ReadFailure> {
    let fences = subjects::swarm_fences_filter(swarm);
    let mut config = events.cached_info().config.clone();
    if config.subjects.contains(&fences) {
        return Ok(events);
    }
    config.subjects.push(fences);
    context.update_stream(&config).await.map_err(|error| ReadFailure {
        message: format!("could not add the fence subject to the events stream of {swarm}: {error}"),
        transient: false,
    })?;
    events.info().await.map_err(|error| ReadFailure {
        message: format!("could not read the events stream of {swarm}: {error}"),
        transient: true,
    })?;
    Ok(events)
}

/// Opens a stream kept beside the events (dead letters, erasures, copies): one
/// subject, no age limit, the events stream's replicas and duplicate
/// window.
async fn open_side_stream(
    context: &jetstream::Context,
    options: &JetStreamOptions,
    name: String,
    description: String,
    subject: String,
) -> Result<stream::Stream, ReadFailure> {
    let failure = format!("could not open the stream {name}");
    context
        .get_or_create_stream(stream::Config {
            name,
            description: Some(description),
            subjects: vec![subject],
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window: options.duplicate_window,
            num_replicas: options.replicas,
            ..Default::default()
        })
        .await
        .map_err(|error| stream_failure(failure, &error))
}

/// Opens the stream of the swarm's handoff packages: the events stream's
/// storage, size, age and replica settings, and a duplicate window of at
/// least [`HANDOFF_DUPLICATE_WINDOW`] (the server wants it no longer than
/// the age limit).
async fn open_handoffs_stream(
    context: &jetstream::Context,
    swarm: &str,
    options: &JetStreamOptions,
) -> Result<stream::Stream, ReadFailure> {
    let mut duplicate_window = options.duplicate_window.max(HANDOFF_DUPLICATE_WINDOW);
    if let Some(max_age) = options.max_age {
        duplicate_window = duplicate_window.min(max_age);
    }
    context
        .get_or_create_stream(stream::Config {
            name: subjects::handoffs_stream(swarm),
            description: Some(format!("Mneme handoff packages of swarm {swarm}")),
            subjects: vec![subjects::swarm_handoffs_filter(swarm)],
            storage: stream::StorageType::File,
            retention: stream::RetentionPolicy::Limits,
            duplicate_window,
            max_message_size: options.max_message_bytes,
            max_age: options.max_age.unwrap_or_default(),
            num_replicas: options.replicas,
            ..Default::default()
        })
        .await
        .map_err(|error| stream_failure(format!("could not open the handoffs stream of {swarm}"), &error))
}

async fn open_positions_bucket(
    context: &jetstream::Context,
    swarm: &str,
    replicas: usize,
) -> Result<kv::Store, ReadFailure> {
    let bucket = subjects::positions_bucket(swarm);
    match context.get_key_value(&bucket).await {
        Ok(store) => Ok(store),
        // `GetBucket` is both "not there yet" and "no answer in time": try
        // creating it. If another process creates it at the same moment,
        // creating an identical bucket again succeeds; if the server did
        // not answer, creating fails as transient too.
        Err(error) if error.kind() == jetstream::context::KeyValueErrorKind::GetBucket => context
            .create_key_value(kv::Config {
                bucket: bucket.clone(),
                description: format!("Mneme durable consumer positions of swarm {swarm}"),
                history: 1,
                storage: stream::StorageType::File,
                num_replicas: replicas,
                ..Default::default()
            })
            .await
            .map_err(|error| ReadFailure {
                message: format!("could not create the bucket {bucket}: {error}"),
                transient: bucket_creation_is_transient(error.kind()),
            }),
        Err(error) => {
            let transient = error.kind() != jetstream::context::KeyValueErrorKind::InvalidStoreName;
            Err(ReadFailure { message: format!("could not open the bucket {bucket}: {error}"), transient })
        }
    }
}

/// Whether making a bucket may succeed when asked again: anything but a
/// bad name or a configuration the server does not support (no answer, a
/// cluster that cannot place it yet).
pub(super) fn bucket_creation_is_transient(kind: CreateKeyValueErrorKind) -> bool {
    !matches!(
        kind,
        CreateKeyValueErrorKind::InvalidStoreName
            | CreateKeyValueErrorKind::TooLongHistory
            | CreateKeyValueErrorKind::LimitMarkersNotSupported
    )
}

/// No answer, no JetStream yet, or a server error (5xx: no leader, cluster
/// not ready) is what an election looks like; a client error (4xx: a
/// configuration the existing stream refuses) or a bad name would repeat.
fn stream_failure(what: String, error: &CreateStreamError) -> ReadFailure {
    let transient = match error.kind() {
        CreateStreamErrorKind::TimedOut
        | CreateStreamErrorKind::JetStreamUnavailable
        | CreateStreamErrorKind::Response
        | CreateStreamErrorKind::ResponseParse => true,
        CreateStreamErrorKind::JetStream(api_error) => !(400..500).contains(&api_error.code()),
        CreateStreamErrorKind::EmptyStreamName
        | CreateStreamErrorKind::InvalidStreamName
        | CreateStreamErrorKind::DomainAndExternalSet
        | CreateStreamErrorKind::NotFound => false,
    };
    ReadFailure { message: format!("{what}: {error}"), transient }
}

/// Connects to the NATS server at `url` (several servers of one cluster
/// separated by commas: the client fails over between them), as `name`.
pub(crate) async fn connect_client(
    url: &str,
    credentials: Option<&Credentials>,
    name: &str,
) -> Result<async_nats::Client, LogError> {
    let mut connect_options = async_nats::ConnectOptions::new().name(name);
    connect_options = match credentials {
        Some(Credentials::UserPassword { user, password }) => {
            connect_options.user_and_password(user.clone(), password.clone())
        }
        Some(Credentials::Token(token)) => connect_options.token(token.clone()),
        None => connect_options,
    };
    let server_urls: Vec<&str> = url.split(',').map(str::trim).filter(|url| !url.is_empty()).collect();
    connect_options
        .connect(server_urls.as_slice())
        .await
        .map_err(|error| LogError::Nats(format!("could not connect to NATS at {url}: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_election_is_transient_and_a_bad_name_is_not() {
        for kind in [CreateStreamErrorKind::TimedOut, CreateStreamErrorKind::JetStreamUnavailable] {
            let failure = stream_failure("opening".into(), &CreateStreamError::new(kind));
            assert!(failure.transient, "{}", failure.message);
        }
        for kind in [CreateStreamErrorKind::InvalidStreamName, CreateStreamErrorKind::NotFound] {
            let failure = stream_failure("opening".into(), &CreateStreamError::new(kind));
            assert!(!failure.transient, "{}", failure.message);
            assert!(failure.message.starts_with("opening: "), "{}", failure.message);
        }
    }
}
