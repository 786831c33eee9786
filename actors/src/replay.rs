//! Rebuilding an agent's memory from the log alone, and checking that the
//! live memory is what the log says it should be.

use std::collections::BTreeMap;

use mneme_nats::{EventLog, Seq};
use mneme_projections::{AgentMemory, MemoryConfig, ProjectionError};

use crate::error::ActorsError;
use crate::memory_actor::{ApplyReport, apply_log_entry, poisoned_reason};

/// Entries read from the log per page while rebuilding.
const PAGE: usize = 2048;

/// The outcome of a replay, and of its comparison with a live memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayReport {
    pub agent: String,
    /// Checkpoint the rebuilt memory reached.
    pub checkpoint: Seq,
    pub digest: String,
    pub entries_read: usize,
    pub dead_lettered: usize,
    /// The live memory compared against, if any.
    pub live_checkpoint: Option<Seq>,
    pub live_digest: Option<String>,
}

impl ReplayReport {
    /// `None` when there was nothing to compare with.
    pub fn matches(&self) -> Option<bool> {
        self.live_digest.as_ref().map(|live| *live == self.digest && self.live_checkpoint == Some(self.checkpoint))
    }
}

/// Builds a fresh memory of `agent` from the swarm's events with `seq <= up_to`
/// (all of them when `None`). Applying runs on blocking threads, page by
/// page, so a long replay does not stall the async runtime.
pub async fn rebuild_from_log(
    log: &dyn EventLog,
    agent: &str,
    config: MemoryConfig,
    up_to: Option<Seq>,
) -> Result<(AgentMemory, ReplayReport), ActorsError> {
    let memory = AgentMemory::new(log.swarm(), agent, config)?;
    let (memory, report) = continue_from_log(log, memory, up_to).await?;
    Ok((memory, report))
}

/// What [`apply_from_log`] read and dead-lettered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApplyTotals {
    pub entries_read: usize,
    pub dead_lettered: usize,
}

/// Applies to `memory` the events after its checkpoint, up to `up_to`, and
/// reports its digest ([`apply_from_log`] without the digest, which reads
/// the whole memory).
pub async fn continue_from_log(
    log: &dyn EventLog,
    memory: AgentMemory,
    up_to: Option<Seq>,
) -> Result<(AgentMemory, ReplayReport), ActorsError> {
    let (memory, totals) = apply_from_log(log, memory, up_to).await?;
    let report = ReplayReport {
        agent: memory.agent().to_string(),
        checkpoint: memory.checkpoint(),
        digest: memory.digest(),
        entries_read: totals.entries_read,
        dead_lettered: totals.dead_lettered,
        live_checkpoint: None,
        live_digest: None,
    };
    Ok((memory, report))
}

/// Applies to `memory` the events after its checkpoint, up to `up_to`, and
/// commits its text index.
///
/// If applying an event panics, the memory is half-changed: it is rebuilt
/// from an empty one with that event dead-lettered, as live memory does.
pub async fn apply_from_log(
    log: &dyn EventLog,
    memory: AgentMemory,
    up_to: Option<Seq>,
) -> Result<(AgentMemory, ApplyTotals), ActorsError> {
    let (swarm, agent, config) = (memory.swarm().to_string(), memory.agent().to_string(), memory.config().clone());
    let mut poisoned = BTreeMap::new();
    let mut memory = memory;
    loop {
        match continue_with_poisoned(log, memory, up_to, &poisoned).await {
            Err(ActorsError::Projection(ProjectionError::ApplyPanicked { seq, message })) => {
                tracing::error!(%agent, seq, panic = %message, "applying an event panicked; replaying without it");
                poisoned.insert(seq, poisoned_reason(&message));
                memory = AgentMemory::new(&swarm, &agent, config.clone())?;
            }
            other => return other,
        }
    }
}

async fn continue_with_poisoned(
    log: &dyn EventLog,
    mut memory: AgentMemory,
    up_to: Option<Seq>,
    poisoned: &BTreeMap<u64, String>,
) -> Result<(AgentMemory, ApplyTotals), ActorsError> {
    let mut totals = ApplyReport::default();
    let mut entries_read = 0;
    loop {
        let from = memory.checkpoint() + 1;
        let mut page = log.read(from, None, PAGE).await?;
        let exhausted = page.len() < PAGE;
        if let Some(limit) = up_to {
            page.retain(|entry| entry.seq <= limit);
        }
        if page.is_empty() {
            break;
        }
        let reached_limit = up_to.is_some_and(|limit| page.last().is_some_and(|entry| entry.seq >= limit));
        entries_read += page.len();
        let poisoned = poisoned.clone();
        let (returned_memory, page_report) = tokio::task::spawn_blocking(move || {
            let mut report = ApplyReport::default();
            for entry in page {
                if let Err(failure) = apply_log_entry(&mut memory, entry, &poisoned, &mut report) {
                    return (memory, Err(failure));
                }
            }
            (memory, Ok(report))
        })
        .await
        .expect("applying a page of events does not panic");
        memory = returned_memory;
        let page_report = page_report?;
        totals.dead_letters.extend(page_report.dead_letters);
        if exhausted || reached_limit {
            break;
        }
    }
    memory.commit()?;
    Ok((memory, ApplyTotals { entries_read, dead_lettered: totals.dead_letters.len() }))
}

/// Rebuilds `agent` from the log up to `live_checkpoint` and compares the
/// result with the live memory's digest.
pub async fn verify_against_log(
    log: &dyn EventLog,
    agent: &str,
    config: MemoryConfig,
    live_checkpoint: Seq,
    live_digest: &str,
) -> Result<ReplayReport, ActorsError> {
    let (_, mut report) = rebuild_from_log(log, agent, config, Some(live_checkpoint)).await?;
    report.live_checkpoint = Some(live_checkpoint);
    report.live_digest = Some(live_digest.to_string());
    Ok(report)
}
