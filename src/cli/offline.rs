//! Command-line verbs that work on a data dir directly, with no server
//! running (the embedded log allows one process at a time).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use mneme_actors::{SnapshotStore, SwarmConfig, continue_from_log, memory_actor::restore_or_new, rebuild_from_log};
use mneme_events::Erasures;
use mneme_nats::{EventLog, SledLog, SledOptions};

use crate::model;
use crate::server::backend;
use crate::service::log::{entry_json, page_with_erased, stubs_in};

pub async fn tail(
    data_dir: &Path,
    swarm: &str,
    agent: Option<&str>,
    from_seq: u64,
    follow: bool,
) -> anyhow::Result<ExitCode> {
    let dir = data_dir.join("log");
    let log =
        SledLog::open(&dir, swarm, SledOptions::default()).with_context(|| format!("opening {}", dir.display()))?;
    // No eraser runs here: what purges erased is as the server recorded it.
    let erasures = Erasures::of(&log.erasures().await?);
    let json = |entry: &mneme_api::log::LogEntry| serde_json::to_string(entry).expect("a log entry is JSON");
    let mut next_seq = from_seq.max(1);
    if follow {
        let mut entries = log.subscribe(next_seq, agent).await?;
        while let Some(entry) = entries.next().await {
            let entry = entry?;
            // Erased records leave gaps: their stubs come first.
            for stub in stubs_in(&erasures, next_seq..entry.seq, agent) {
                out!("{}", json(&stub));
            }
            next_seq = entry.seq + 1;
            out!("{}", entry_json(&entry, &erasures));
        }
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        let entries = log.read(next_seq, agent, 1000).await?;
        let shown = page_with_erased(&entries, next_seq, agent, 1000, &erasures);
        let Some(last) = shown.last() else { return Ok(ExitCode::SUCCESS) };
        next_seq = last.seq() + 1;
        for entry in &shown {
            out!("{}", json(entry));
        }
    }
}

/// Carries the purges recorded since the server last started into the log
/// and the data dir, as `mneme serve` would at its next start.
pub async fn erase(config: &SwarmConfig, json: bool) -> anyhow::Result<ExitCode> {
    let opened = backend::open_log_and_broker(config).await?;
    let (_, carried) = crate::server::erasure::carry_pending(config, opened).await?;
    let carried = carried.unwrap_or_default();
    if json {
        let report = serde_json::json!({
            "purges": carried.purges,
            "erased": carried.erased,
            "rewritten": carried.rewritten,
            "handoff_packages": carried.handoff_packages,
        });
        out!("{}", serde_json::to_string_pretty(&report)?);
    } else if carried.purges == 0 {
        out!("nothing to erase: every purge recorded is already carried into the log");
    } else {
        out!(
            "{} purges carried into the log: {} records erased, {} rewritten without what they quoted, {} handoff \
             packages deleted; snapshots and the text index removed (memories are rebuilt at the next start)",
            carried.purges,
            carried.erased,
            carried.rewritten,
            carried.handoff_packages
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Rebuilds `agent` from the log and compares it with the memory persisted
/// in the data dir: its snapshot plus the log's tail, which is exactly what
/// the server would hold after a restart.
pub async fn replay(config: &SwarmConfig, agent: &str, verify: bool, json: bool) -> anyhow::Result<ExitCode> {
    let swarm = &config.swarm.name;
    let log = backend::open_log(config).await?;
    let snapshot_dir = backend::snapshot_dir(config);
    let store = SnapshotStore::open(&snapshot_dir).with_context(|| {
        format!("opening the snapshot store in {} (is a server running on it?)", snapshot_dir.display())
    })?;
    // The deep model too: the server's memories apply its recorded vectors
    // (never running it), and a snapshot names it.
    let memory_config = config
        .memory_config(model::load_configured_embedder(config)?)
        .with_deep_embedder(model::load_deep_model(config)?);
    let spinner = crate::progress::spinner(&format!("restoring {agent}'s persisted memory"));
    let lost_tails = mneme_actors::LostTails::default();
    let persisted = restore_or_new(&store, swarm, agent, memory_config.clone(), log.last_seq().await?, &lost_tails)?;
    let snapshot_seq = persisted.checkpoint();
    let (persisted, tail) = continue_from_log(log.as_ref(), persisted, None).await?;
    spinner.set_message(format!("rebuilding {agent}'s memory from the log"));
    let (_, rebuilt) = rebuild_from_log(log.as_ref(), agent, memory_config, Some(persisted.checkpoint())).await?;
    spinner.finish_and_clear();
    let persisted_digest = persisted.digest();
    let matches = persisted_digest == rebuilt.digest && persisted.checkpoint() == rebuilt.checkpoint;
    let exit = if verify && !matches { ExitCode::FAILURE } else { ExitCode::SUCCESS };
    if json {
        let report = serde_json::json!({
            "agent": agent,
            "seq": rebuilt.checkpoint,
            "digest": rebuilt.digest,
            "entries_read": rebuilt.entries_read,
            "persisted_seq": persisted.checkpoint(),
            "persisted_digest": persisted_digest,
            "snapshot_seq": snapshot_seq,
            "tail_entries": tail.entries_read,
            "matches": matches,
        });
        out!("{}", serde_json::to_string_pretty(&report)?);
        return Ok(exit);
    }
    out!("agent {agent}: replayed {} entries to seq {}", rebuilt.entries_read, rebuilt.checkpoint);
    out!("  replayed digest  {}", rebuilt.digest);
    out!("  persisted digest {persisted_digest} (snapshot at seq {snapshot_seq} + {} tail entries)", tail.entries_read);
    out!("  {}", if matches { "MATCH" } else { "MISMATCH" });
    Ok(exit)
}
