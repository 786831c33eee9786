//! Leases on JetStream (see `crate::lease`): a key per role in the swarm's
//! bucket `MNEME_<swarm>_leases`, whose `max_age` is the lease's time to
//! live. The bucket is made the first time a lease is taken, so that a
//! process that takes none needs no permission on it; a cluster that
//! cannot place it yet (just started, a peer not yet seen: "no suitable
//! peers for placement") is asked again within the read retry window.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use tokio::sync::OnceCell;

use super::open::bucket_creation_is_transient;
use super::{RETRY_FIRST_DELAY, RETRY_LONGEST_DELAY};
use crate::lease::validate_role;
use crate::{Lease, LogError, subjects};

pub(super) struct LeaseBucket {
    context: jetstream::Context,
    name: String,
    swarm: String,
    ttl: Duration,
    replicas: usize,
    /// How long making the bucket is tried again on transient failures.
    retry_window: Duration,
    store: OnceCell<kv::Store>,
}

impl LeaseBucket {
    pub(super) fn new(
        context: jetstream::Context,
        swarm: &str,
        ttl: Duration,
        replicas: usize,
        retry_window: Duration,
    ) -> LeaseBucket {
        LeaseBucket {
            context,
            name: subjects::leases_bucket(swarm),
            swarm: swarm.to_string(),
            ttl,
            replicas,
            retry_window,
            store: OnceCell::new(),
        }
    }

    async fn store(&self) -> Result<&kv::Store, LogError> {
        self.store
            .get_or_try_init(|| async {
                let started = tokio::time::Instant::now();
                let mut delay = RETRY_FIRST_DELAY;
                loop {
                    let error = match self.open_or_create().await {
                        Ok(store) => return Ok(store),
                        Err(error) => error,
                    };
                    if !bucket_creation_is_transient(error.kind()) || started.elapsed() + delay > self.retry_window {
                        return Err(LogError::Nats(format!("could not create the bucket {}: {error}", self.name)));
                    }
                    tracing::debug!(bucket = %self.name, %error, "making the leases bucket again");
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(RETRY_LONGEST_DELAY);
                }
            })
            .await
    }

    async fn open_or_create(&self) -> Result<kv::Store, jetstream::context::CreateKeyValueError> {
        if let Ok(store) = self.context.get_key_value(&self.name).await {
            return Ok(store);
        }
        self.context
            .create_key_value(kv::Config {
                bucket: self.name.clone(),
                description: format!("Mneme leases of swarm {}", self.swarm),
                history: 1,
                max_age: self.ttl,
                storage: stream::StorageType::File,
                num_replicas: self.replicas,
                ..Default::default()
            })
            .await
    }

    pub(super) async fn take(&self, role: &str, holder: &str) -> Result<Option<Lease>, LogError> {
        validate_role(role)?;
        let store = self.store().await?;
        match store.create(role, Bytes::from(holder.to_string())).await {
            Ok(revision) => Ok(Some(lease(role, holder, revision))),
            Err(error) if error.kind() == kv::CreateErrorKind::AlreadyExists => {
                // Its own lease, from before a restart of this holder: taken
                // again under a new epoch.
                let Some(entry) = store.entry(role).await.map_err(LogError::nats)? else { return Ok(None) };
                if entry.operation != kv::Operation::Put || entry.value.as_ref() != holder.as_bytes() {
                    return Ok(None);
                }
                match store.update(role, Bytes::from(holder.to_string()), entry.revision).await {
                    Ok(revision) => Ok(Some(lease(role, holder, revision))),
                    Err(error) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(None),
                    Err(error) => Err(LogError::nats(error)),
                }
            }
            Err(error) => Err(LogError::nats(error)),
        }
    }

    pub(super) async fn renew(&self, lease: &mut Lease) -> Result<(), LogError> {
        let store = self.store().await?;
        match store.update(&lease.role, Bytes::from(lease.holder.clone()), lease.revision).await {
            Ok(revision) => {
                lease.revision = revision;
                Ok(())
            }
            Err(error) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => {
                Err(LogError::LeaseLost { role: lease.role.clone() })
            }
            Err(error) => Err(LogError::nats(error)),
        }
    }

    pub(super) async fn release(&self, lease: &Lease) -> Result<(), LogError> {
        let store = self.store().await?;
        match store.delete_expect_revision(&lease.role, Some(lease.revision)).await {
            Ok(()) => Ok(()),
            // Lost already: another holder's lease, or none, is left alone.
            Err(error) if error.kind() == kv::UpdateErrorKind::WrongLastRevision => Ok(()),
            Err(error) => Err(LogError::nats(error)),
        }
    }

    pub(super) async fn holder(&self, role: &str) -> Result<Option<String>, LogError> {
        validate_role(role)?;
        let store = self.store().await?;
        let entry = store.entry(role).await.map_err(LogError::nats)?;
        Ok(entry
            .filter(|entry| entry.operation == kv::Operation::Put)
            .map(|entry| String::from_utf8_lossy(&entry.value).into_owned()))
    }
}

fn lease(role: &str, holder: &str, revision: u64) -> Lease {
    Lease { role: role.to_string(), holder: holder.to_string(), epoch: revision, revision, fence: 0 }
}

/// The header naming the holder's epoch on a fence record.
const EPOCH_HEADER: &str = "Mneme-Lease-Epoch";
/// How often a fence is tried again when another holder's fence came in
/// between reading the last one and setting one.
const FENCE_ATTEMPTS: usize = 5;

/// The last fence on `role`'s subject: its seq and the epoch it carries.
async fn last_fence(events: &stream::Stream, subject: &str) -> Result<Option<(u64, u64)>, LogError> {
    match events.get_last_raw_message_by_subject(subject).await {
        Ok(message) => {
            let epoch =
                message.headers.get(EPOCH_HEADER).and_then(|value| value.as_str().parse().ok()).ok_or_else(|| {
                    LogError::Corrupt(format!("fence {} on {subject} names no epoch", message.sequence))
                })?;
            Ok(Some((message.sequence, epoch)))
        }
        Err(error) if error.kind() == stream::LastRawMessageErrorKind::NoMessageFound => Ok(None),
        Err(error) => Err(LogError::nats(format!("could not read the fence on {subject}: {error}"))),
    }
}

/// Sets `lease`'s fence: a record on the role's fence subject, published on
/// the condition that the subject's last record is still the one read
/// before, and refused when that one carries a newer epoch (a holder that
/// took the role after this one). Answers false when this holder is
/// fenced out already.
pub(super) async fn set_fence(
    context: &jetstream::Context,
    events: &stream::Stream,
    swarm: &str,
    lease: &mut Lease,
) -> Result<bool, LogError> {
    let subject = subjects::fence_subject(swarm, &lease.role);
    for _ in 0..FENCE_ATTEMPTS {
        let last = last_fence(events, &subject).await?;
        if last.is_some_and(|(_, epoch)| epoch > lease.epoch) {
            return Ok(false);
        }
        let message = async_nats::jetstream::message::PublishMessage::build()
            .payload(Bytes::from(lease.holder.clone()))
            .header(EPOCH_HEADER, lease.epoch.to_string())
            .expected_last_subject_sequence(last.map_or(0, |(seq, _)| seq));
        let ack = context
            .send_publish(subject.clone(), message)
            .await
            .map_err(|error| LogError::nats(format!("could not set the fence on {subject}: {error}")))?
            .await;
        match ack {
            Ok(ack) => {
                lease.fence = ack.sequence;
                return Ok(true);
            }
            Err(error) if error.kind() == jetstream::context::PublishErrorKind::WrongLastSequence => continue,
            Err(error) => return Err(LogError::nats(format!("could not set the fence on {subject}: {error}"))),
        }
    }
    Ok(false)
}

/// Checks that `lease`'s fence still stands: another fence means another
/// holder took the role ([`LogError::LeaseLost`]). A fence gone with the
/// stream's age limit is set again.
pub(super) async fn check_fence(
    context: &jetstream::Context,
    events: &stream::Stream,
    swarm: &str,
    lease: &mut Lease,
) -> Result<(), LogError> {
    let subject = subjects::fence_subject(swarm, &lease.role);
    match last_fence(events, &subject).await? {
        Some((seq, _)) if seq == lease.fence => Ok(()),
        Some(_) => Err(LogError::LeaseLost { role: lease.role.clone() }),
        None => match set_fence(context, events, swarm, lease).await? {
            true => Ok(()),
            false => Err(LogError::LeaseLost { role: lease.role.clone() }),
        },
    }
}
