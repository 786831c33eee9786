//! Leases on JetStream (see `crate::lease`): a key per role in the swarm's
//! bucket `MNEME_<swarm>_leases`, whose `max_age` is the lease's time to
//! live. The bucket is made the first time a lease is taken, so that a
//! process that takes none needs no permission on it.

use std::time::Duration;

use async_nats::jetstream::{self, kv, stream};
use bytes::Bytes;
use tokio::sync::OnceCell;

use crate::lease::validate_role;
use crate::{Lease, LogError, subjects};

pub(super) struct LeaseBucket {
    context: jetstream::Context,
    name: String,
    swarm: String,
    ttl: Duration,
    replicas: usize,
    store: OnceCell<kv::Store>,
}

impl LeaseBucket {
    pub(super) fn new(context: jetstream::Context, swarm: &str, ttl: Duration, replicas: usize) -> LeaseBucket {
        LeaseBucket {
            context,
            name: subjects::leases_bucket(swarm),
            swarm: swarm.to_string(),
            ttl,
            replicas,
            store: OnceCell::new(),
        }
    }

    async fn store(&self) -> Result<&kv::Store, LogError> {
        self.store
            .get_or_try_init(|| async {
                match self.context.get_key_value(&self.name).await {
                    Ok(store) => Ok(store),
                    Err(_) => self
                        .context
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
                        .map_err(|error| LogError::Nats(format!("could not create the bucket {}: {error}", self.name))),
                }
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
    Lease { role: role.to_string(), holder: holder.to_string(), epoch: revision, revision }
}
