//! Opening the log a configuration names.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use mneme_actors::{LogBackend, SwarmConfig};
use mneme_nats::{EventLog, JetStreamLog, JetStreamOptions, SledLog, SledOptions};

/// The embedded log's folder under the data dir.
pub fn embedded_log_dir(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("log")
}

/// The snapshot store's folder under the data dir.
pub fn snapshot_dir(config: &SwarmConfig) -> std::path::PathBuf {
    config.log.data_dir.join("snapshots")
}

pub async fn open_log(config: &SwarmConfig) -> anyhow::Result<Arc<dyn EventLog>> {
    let swarm = &config.swarm.name;
    let limits = config.decode_limits();
    match config.log.backend {
        LogBackend::Embedded => {
            let dir = embedded_log_dir(config);
            let log = SledLog::open(&dir, swarm, SledOptions { limits, ..SledOptions::default() })
                .with_context(|| format!("opening the embedded log in {}", dir.display()))?;
            Ok(Arc::new(log))
        }
        LogBackend::Nats => {
            let options = JetStreamOptions {
                duplicate_window: Duration::from_secs(config.log.duplicate_window_secs),
                max_age: (config.log.max_age_secs > 0).then(|| Duration::from_secs(config.log.max_age_secs)),
                replicas: config.log.replicas,
                limits,
                ..JetStreamOptions::default()
            };
            let log = JetStreamLog::connect(&config.log.nats_url, swarm, options)
                .await
                .with_context(|| format!("connecting to NATS JetStream at {}", config.log.nats_url))?;
            Ok(Arc::new(log))
        }
    }
}
