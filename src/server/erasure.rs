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

fn remove_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(error).with_context(|| format!("removing {}", dir.display())),
    }
}
