//! Opening the log a configuration names.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mneme_actors::{LogBackend, SwarmConfig};
use mneme_nats::{Broker, EventLog, JetStreamLog, JetStreamOptions, SledLog, SledOptions};

/// The embedded log's folder under the data dir.
pub fn embedded_log_dir(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("log")
}

/// The snapshot store's folder under the data dir.
pub fn snapshot_dir(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("snapshots")
}

/// Where `mneme serve` keeps the swarm's full-text index (derived state:
/// deleting it costs a re-index at the next start, nothing else).
pub fn text_index_dir(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("text-index")
}

/// The log a configuration names and, on NATS, the broker beside it: the
/// same connection carries events, handoff packages and query requests.
pub struct OpenedLog {
    pub log: Arc<dyn EventLog>,
    pub broker: Option<Arc<dyn Broker>>,
}

pub async fn open_log(config: &SwarmConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    Ok(open_log_and_broker(config).await?.log)
}

pub async fn open_log_and_broker(config: &SwarmConfig) -> anyhow::Result<OpenedLog> {
    let swarm = &config.swarm.name;
    let limits = config.decode_limits();
    match config.log.backend {
        LogBackend::Embedded => {
            let dir = embedded_log_dir(config);
            let log = SledLog::open(&dir, swarm, SledOptions { limits, ..SledOptions::default() })
                .with_context(|| format!("opening the embedded log in {}", dir.display()))?;
            Ok(OpenedLog { log: Arc::new(log), broker: None })
        }
        LogBackend::Nats => {
            // `--nats` and MNEME_NATS_URL bypass the file's checks.
            mneme_actors::swarm_config::check_nats_url(&config.log.nats_url).map_err(anyhow::Error::msg)?;
            let options = JetStreamOptions {
                duplicate_window: Duration::from_secs(config.log.duplicate_window_secs),
                max_age: (config.log.max_age_secs > 0).then(|| Duration::from_secs(config.log.max_age_secs)),
                replicas: config.log.replicas,
                publish_retry_window: Duration::from_millis(config.log.publish_retry_ms),
                read_retry_window: Duration::from_millis(config.log.read_retry_ms),
                lease_ttl: config.lease_ttl(),
                credentials: config.nats_credentials(),
                ..JetStreamOptions::default()
            }
            .with_limits(limits);
            let log = JetStreamLog::connect(&config.log.nats_url, swarm, options)
                .await
                .with_context(|| format!("connecting to NATS JetStream at {}", config.log.nats_url))?;
            let log = Arc::new(log);
            Ok(OpenedLog { log: log.clone(), broker: Some(log) })
        }
    }
}

/// The environment variable that gives the key behind derived event ids
/// (64 hexadecimal digits), for deployments whose data dir does not last.
pub const ID_KEY_VARIABLE: &str = "MNEME_ID_KEY";

/// The key file under the data dir.
pub fn id_key_path(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("id.key")
}

/// The deployment's key behind the ids Mneme derives for its own events
/// (`mneme_events::derived`): from `MNEME_ID_KEY`, else from `<data dir>/id.key`,
/// made on first start from the OS's random source (mode 0600, written
/// whole or not at all). The same key must come back at every start, or a
/// verdict or delivery repeated across the restart gets a new id and is
/// written twice; an unreadable key file stops the start rather than
/// making a new key.
pub fn id_key(config: &SwarmConfig) -> anyhow::Result<mneme_events::IdKey> {
    use mneme_events::IdKey;
    if let Ok(text) = std::env::var(ID_KEY_VARIABLE) {
        return IdKey::from_hex(&text).map_err(|problem| anyhow::anyhow!("{ID_KEY_VARIABLE}: {problem}"));
    }
    let path = id_key_path(config);
    match std::fs::read_to_string(&path) {
        Ok(text) => IdKey::from_hex(&text).map_err(|problem| {
            anyhow::anyhow!(
                "the id key {} is damaged ({problem}); restore it, or set {ID_KEY_VARIABLE}: a new key would give \
                 verdicts and deliveries repeated after this start new ids",
                path.display()
            )
        }),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            use std::io::Write;
            use std::os::unix::fs::OpenOptionsExt;
            let key = IdKey::generate().map_err(|error| anyhow::anyhow!("generating an id key: {error}"))?;
            let partial = path.with_extension("key.partial");
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(0o600)
                .open(&partial)
                .with_context(|| format!("creating {}", partial.display()))?;
            file.write_all(key.to_hex().as_bytes())
                .and_then(|()| file.sync_all())
                .with_context(|| format!("writing {}", partial.display()))?;
            std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
            tracing::info!(path = %path.display(), "made a new key for derived event ids");
            Ok(key)
        }
        Err(error) => Err(error).with_context(|| format!("reading the id key {}", path.display())),
    }
}

/// The position under which a swarm's log keeps the fingerprint of the id
/// key its processes derive ids with.
const ID_KEY_FINGERPRINT: &str = "id-key-fingerprint";

/// Replicas of a swarm must derive the same ids (a delivery or verdict
/// repeated by a new holder of the writer lease is then a duplicate the
/// log drops): the first process to start on the log records a fingerprint
/// of its key there (not the key), and a process whose key gives another
/// fingerprint refuses to start.
pub async fn check_id_key_is_shared(log: &dyn mneme_nats::EventLog, key: &mneme_events::IdKey) -> anyhow::Result<()> {
    // 63 bits of a keyed derivation: a position holds a u64.
    let mine = (key.derive("mneme", "id_key_fingerprint", log.swarm()).0 as u64) >> 1;
    let recorded = match log.load_position(ID_KEY_FINGERPRINT).await? {
        Some(recorded) => recorded,
        None => {
            log.store_position(ID_KEY_FINGERPRINT, mine).await?;
            // Two first starts at once: the last store stands.
            log.load_position(ID_KEY_FINGERPRINT).await?.unwrap_or(mine)
        }
    };
    if recorded != mine {
        anyhow::bail!(
            "another process serving swarm {:?} on this NATS derives event ids with another key: every process of \
             a swarm must have the same one (set {ID_KEY_VARIABLE} to the same 64 hex digits for all of them, or \
             copy the first one's <data dir>/id.key)",
            log.swarm()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_id_key_is_made_once_kept_private_and_read_back_the_same() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = SwarmConfig::parse("[swarm]\nname = \"demo\"\n", "test").expect("a minimal config");
        config.log.data_dir = dir.path().to_path_buf();
        // SAFETY of the test: no other test sets or reads this variable.
        assert!(std::env::var(ID_KEY_VARIABLE).is_err());
        let first = id_key(&config).expect("made");
        let mode = std::fs::metadata(id_key_path(&config)).expect("key file").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(id_key(&config).expect("read back"), first);
        std::fs::write(id_key_path(&config), "not a key").expect("damage it");
        let error = format!("{:#}", id_key(&config).expect_err("damaged"));
        assert!(error.contains("id.key is damaged") && !error.contains("not a key"), "{error}");
    }
}
