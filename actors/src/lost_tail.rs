//! A log that lost its tail: snapshots (and stored positions) past the
//! log's end describe events the log no longer has — acknowledged writes a
//! broker lost in a power cut before they reached its disk, or a log
//! restored from an older copy. Memory is then rebuilt from the log, never
//! served from the snapshot, and this says so where an operator looks: an
//! error in the log, `mneme_log_tail_lost_events{swarm}` and
//! `mneme_log_tail_lost_memories_total{swarm}`, and the swarm's `lost_tail`
//! in `/healthz`.

use std::sync::{Arc, Mutex};

use crate::error::ActorsError;
use crate::snapshot_store::SnapshotStore;

/// Before any memory of `swarm` starts: the snapshots in `store` past the
/// log's end `log_end`, if they are. The stored swarm graph covers every
/// memory snapshot saved with it, so its coverage says it for all.
pub fn snapshots_past_the_log(
    store: &SnapshotStore,
    swarm: &str,
    log_end: u64,
) -> Result<Option<LostTail>, ActorsError> {
    Ok(store.coverage(swarm)?.filter(|(covers, _)| *covers > log_end).map(|(snapshot_seq, agents)| LostTail {
        snapshot_seq,
        log_end,
        agents,
    }))
}

/// What one swarm's start found of a lost tail, if anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostTail {
    /// The highest checkpoint of a snapshot past the log's end.
    pub snapshot_seq: u64,
    /// The log's last seq when the process started.
    pub log_end: u64,
    /// The memories rebuilt from the log because of it, by agent.
    pub agents: Vec<String>,
}

impl LostTail {
    /// How many events past the log's end the snapshots had applied.
    pub fn events_lost(&self) -> u64 {
        self.snapshot_seq.saturating_sub(self.log_end)
    }
}

/// The lost tail one swarm's memories found as they started, shared by the
/// supervisor (which records it) and the service (which shows it).
#[derive(Debug, Clone, Default)]
pub struct LostTails {
    found: Arc<Mutex<Option<LostTail>>>,
}

impl LostTails {
    /// `agent`'s snapshot of swarm `swarm` stops at `snapshot_seq`, past
    /// the log's end `log_end`: its memory is rebuilt from the log.
    pub fn record(&self, swarm: &str, agent: &str, snapshot_seq: u64, log_end: u64) {
        tracing::error!(
            %swarm, %agent, snapshot_seq, log_end, events_lost = snapshot_seq.saturating_sub(log_end),
            "THE LOG LOST ITS TAIL: the snapshot is past the log's end (acknowledged events lost by the broker, \
             or the log restored from an older copy); rebuilding this memory from the log. Events after seq \
             {log_end} that were applied before are gone from the log and from memory; see RELIABILITY.md"
        );
        let mut found = self.found.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let tail = found.get_or_insert_with(|| LostTail { snapshot_seq, log_end, agents: Vec::new() });
        tail.snapshot_seq = tail.snapshot_seq.max(snapshot_seq);
        if !tail.agents.iter().any(|known| known == agent) {
            tail.agents.push(agent.to_string());
            tail.agents.sort();
        }
        metrics::counter!("mneme_log_tail_lost_memories_total", "swarm" => swarm.to_string()).increment(1);
        metrics::gauge!("mneme_log_tail_lost_events", "swarm" => swarm.to_string()).set(tail.events_lost() as f64);
    }

    /// `found`, found before any memory started: every memory of the swarm
    /// is rebuilt from the log.
    pub fn record_before_start(&self, swarm: &str, found: &LostTail) {
        for agent in &found.agents {
            self.record(swarm, agent, found.snapshot_seq, found.log_end);
        }
        if found.agents.is_empty() {
            self.record(swarm, "(the swarm graph)", found.snapshot_seq, found.log_end);
        }
    }

    /// What was found, if anything.
    pub fn found(&self) -> Option<LostTail> {
        self.found.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_highest_snapshot_and_every_agent_rebuilt_are_kept() {
        let tails = LostTails::default();
        assert_eq!(tails.found(), None);
        tails.record("demo", "coder", 120, 100);
        tails.record("demo", "reviewer", 150, 100);
        tails.record("demo", "coder", 110, 100);
        let found = tails.found().expect("recorded");
        assert_eq!((found.snapshot_seq, found.log_end, found.events_lost()), (150, 100, 50));
        assert_eq!(found.agents, ["coder", "reviewer"]);
    }
}
