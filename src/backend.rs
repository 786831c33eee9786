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
