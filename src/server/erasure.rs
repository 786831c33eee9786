//! Carrying purges into the data dir and the log at start (issue 35): see
//! `mneme_actors::erasure_pass` for what leaves the log. Here is what
//! leaves the data dir: sled's files are compacted, and the snapshots and
//! the text index — built from the log as it was — are removed, so every
//! memory is rebuilt from the erased log.
//!
//! A marker file, `erasure.pending`, is written before the first step and
//! removed after the last: a start cut short anywhere in between finds it
//! and does it all again (every step is idempotent).

use std::path::{Path, PathBuf};

use anyhow::Context;
use mneme_actors::{CarriedErasures, LogBackend, SwarmConfig, carry_erasures, erasures_pending};
use mneme_nats::SledLog;

use super::backend::{self, OpenedLog};

/// The marker of a pass under way, under the data dir.
pub fn marker_path(config: &SwarmConfig) -> PathBuf {
    config.log.data_dir.join("erasure.pending")
}

/// Carries the purges recorded since the last pass into the log and the
/// data dir, if any; answers the log to run on (opened again on the
/// embedded log, which is compacted closed) and what was carried.
pub async fn carry_pending(
    config: &SwarmConfig,
    opened: OpenedLog,
) -> anyhow::Result<(OpenedLog, Option<CarriedErasures>)> {
    let marker = marker_path(config);
    let pending = marker.exists()
        || erasures_pending(opened.log.as_ref()).await.context("reading which purges the log has carried")?;
    if !pending {
        return Ok((opened, None));
    }
    tracing::info!("purges recorded since the last start: erasing them from the log and rebuilding memories");
    write_marker(&marker)?;
    let carried = carry_erasures(opened.log.as_ref(), opened.broker.as_deref())
        .await
        .context("erasing purged records from the log")?;
    let opened = match config.log.backend {
        LogBackend::Embedded => {
            drop(opened);
            let dir = backend::embedded_log_dir(config);
            let (before, after) =
                SledLog::compact(&dir).with_context(|| format!("compacting the embedded log in {}", dir.display()))?;
            tracing::info!(bytes_before = before, bytes_after = after, "embedded log compacted");
            None
        }
        LogBackend::Nats => Some(opened),
    };
    for derived in [backend::snapshot_dir(config), backend::text_index_dir(config)] {
        remove_dir(&derived)?;
    }
    std::fs::remove_file(&marker).with_context(|| format!("removing {}", marker.display()))?;
    tracing::info!(
        purges = carried.purges,
        erased = carried.erased,
        rewritten = carried.rewritten,
        handoff_packages = carried.handoff_packages,
        "purges carried into the log; memories are rebuilt from it"
    );
    let opened = match opened {
        Some(opened) => opened,
        None => backend::open_log_and_broker(config).await?,
    };
    Ok((opened, Some(carried)))
}

fn write_marker(marker: &Path) -> anyhow::Result<()> {
    let file = std::fs::File::create(marker).with_context(|| format!("writing {}", marker.display()))?;
    file.sync_all().with_context(|| format!("writing {}", marker.display()))?;
    if let Some(dir) = marker.parent() {
        std::fs::File::open(dir)
            .and_then(|dir| dir.sync_all())
            .with_context(|| format!("syncing {}", dir.display()))?;
    }
    Ok(())
}

pub(crate) fn remove_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("removing {}", dir.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_events::{DecodeLimits, ErasedEvent, ErasureRecord, PurgeRef, decode_json};
    use mneme_nats::{EventLog, SledOptions};

    fn holding(dir: &Path, needle: &str) -> Vec<PathBuf> {
        let mut found = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                found.extend(holding(&path, needle));
            } else if std::fs::read(&path).unwrap().windows(needle.len()).any(|window| window == needle.as_bytes()) {
                found.push(path);
            }
        }
        found
    }

    #[tokio::test]
    async fn a_start_cut_short_after_the_log_was_erased_finishes_the_erasure_at_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = SwarmConfig::parse("[swarm]\nname = \"demo\"\n", "test").unwrap();
        config.log.data_dir = dir.path().to_path_buf();
        let secret = "wahoo-5150";
        let message = decode_json(
            serde_json::json!({"id": "01KH0000000000000000000001", "swarm": "demo", "agent": "coder",
                "ts": "2026-01-06T10:00:00Z", "kind": "message_recorded",
                "data": {"role": "user", "text": format!("the key is {secret}")}})
            .to_string()
            .as_bytes(),
            &DecodeLimits::default(),
        )
        .unwrap();
        let log = SledLog::open(&backend::embedded_log_dir(&config), "demo", SledOptions::default()).unwrap();
        log.append(std::slice::from_ref(&message)).await.unwrap();
        log.record_erasure(&ErasureRecord {
            purge: PurgeRef { agent: "coder".to_string(), seq: 2, event_id: mneme_events::EventId::new() },
            events: vec![ErasedEvent::of(1, &message)],
            phases: Vec::new(),
        })
        .await
        .unwrap();
        // A derived file built from the unerased log.
        std::fs::create_dir_all(backend::snapshot_dir(&config)).unwrap();
        std::fs::write(backend::snapshot_dir(&config).join("chunk"), secret).unwrap();
        // The pass ran up to the log's erasure, and the process died.
        write_marker(&marker_path(&config)).unwrap();
        carry_erasures(&log, None).await.unwrap();
        drop(log);
        assert!(!holding(dir.path(), secret).is_empty(), "the erased bytes are still in sled's files and the snapshot");

        // The next start finds the marker: nothing is pending on the log,
        // and the erasure is finished all the same.
        let opened = backend::open_log_and_broker(&config).await.unwrap();
        assert!(!erasures_pending(opened.log.as_ref()).await.unwrap());
        let (opened, carried) = carry_pending(&config, opened).await.unwrap();
        assert_eq!(carried.map(|carried| carried.erased), Some(0), "erased before the cut");
        assert!(holding(dir.path(), secret).is_empty(), "{:?}", holding(dir.path(), secret));
        assert!(!marker_path(&config).exists() && !backend::snapshot_dir(&config).exists());
        assert!(opened.log.read(1, None, 10).await.unwrap().is_empty());
        // And the start after that has nothing to do.
        let (_, carried) = carry_pending(&config, opened).await.unwrap();
        assert_eq!(carried, None);
    }
}
