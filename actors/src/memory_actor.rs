//! `MemoryActor`: owns one agent's memory, applies its log entries in order,
//! answers queries, and snapshots memory and checkpoint together.
//!
//! Memory actors run on worker arbiters, never on the arbiter that drives
//! log and network IO: indexing and tantivy commits take milliseconds.

use std::time::{Duration, Instant};

use actix::prelude::*;
use mneme_nats::{DeadLetter, LogEntry};
use mneme_projections::{
    AgentMemory, AppliedEvent, ContextRequest, ContextResponse, ProjectionError, SearchHit, SearchRequest,
};
use tokio::sync::watch;

use crate::error::ActorsError;
use crate::snapshot_store::SnapshotStore;

/// When a memory actor writes a snapshot.
#[derive(Debug, Clone, Copy)]
pub struct CheckpointPolicy {
    pub every_events: u64,
    pub interval: Duration,
    pub mailbox_capacity: usize,
}

pub struct MemoryActor {
    memory: AgentMemory,
    store: SnapshotStore,
    policy: CheckpointPolicy,
    /// Sequence of the last snapshot written.
    snapshot_seq: u64,
    events_since_snapshot: u64,
    first_unsaved_at: Option<Instant>,
    /// Tells waiting queries how far this memory has applied the log.
    applied_seq: watch::Sender<u64>,
}

impl MemoryActor {
    pub fn new(
        memory: AgentMemory,
        store: SnapshotStore,
        policy: CheckpointPolicy,
        applied_seq: watch::Sender<u64>,
    ) -> MemoryActor {
        let snapshot_seq = memory.checkpoint();
        applied_seq.send_replace(memory.checkpoint());
        MemoryActor {
            memory,
            store,
            policy,
            snapshot_seq,
            events_since_snapshot: 0,
            first_unsaved_at: None,
            applied_seq,
        }
    }

    fn snapshot_if_due(&mut self) -> Result<Option<u64>, ActorsError> {
        let due_by_count = self.events_since_snapshot >= self.policy.every_events;
        let due_by_time = self.first_unsaved_at.is_some_and(|since| since.elapsed() >= self.policy.interval);
        if due_by_count || due_by_time { self.snapshot().map(Some) } else { Ok(None) }
    }

    /// Writes memory and checkpoint as one snapshot; returns its sequence.
    fn snapshot(&mut self) -> Result<u64, ActorsError> {
        let checkpoint = self.memory.checkpoint();
        if checkpoint == self.snapshot_seq {
            return Ok(checkpoint);
        }
        let span = tracing::info_span!("checkpoint", agent = %self.memory.agent(), seq = checkpoint);
        let _entered = span.enter();
        let started = Instant::now();
        self.memory.commit()?;
        let body = self.memory.to_snapshot()?;
        self.store.save(self.memory.swarm(), self.memory.agent(), &body)?;
        self.snapshot_seq = checkpoint;
        self.events_since_snapshot = 0;
        self.first_unsaved_at = None;
        metrics::counter!("mneme_snapshots_written_total").increment(1);
        metrics::histogram!("mneme_snapshot_seconds").record(started.elapsed().as_secs_f64());
        tracing::debug!(bytes = body.len(), "snapshot written");
        Ok(checkpoint)
    }
}

impl Actor for MemoryActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.policy.mailbox_capacity);
        // The timer only checks; the snapshot itself is taken when due.
        let tick = (self.policy.interval / 2).max(Duration::from_millis(10));
        ctx.run_interval(tick, |actor, _| {
            if let Err(error) = actor.snapshot_if_due() {
                tracing::error!(agent = %actor.memory.agent(), %error, "periodic snapshot failed");
            }
        });
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Err(error) = self.snapshot() {
            tracing::error!(agent = %self.memory.agent(), %error, "final snapshot failed");
        }
    }
}

/// Entries of this agent's log, in order, to apply.
#[derive(Message)]
#[rtype(result = "Result<ApplyReport, ActorsError>")]
pub struct ApplyBatch(pub Vec<LogEntry>);

/// What a batch did. Dead letters are for the feed to file on the log.
#[derive(Debug, Default)]
pub struct ApplyReport {
    pub applied: usize,
    pub duplicates: usize,
    pub redelivered: usize,
    pub dead_letters: Vec<DeadLetter>,
    /// The checkpoint after the batch.
    pub checkpoint: u64,
    /// Set when a snapshot was written: its sequence.
    pub snapshot_seq: Option<u64>,
}

impl Handler<ApplyBatch> for MemoryActor {
    type Result = Result<ApplyReport, ActorsError>;

    fn handle(&mut self, batch: ApplyBatch, _: &mut Self::Context) -> Self::Result {
        let span = tracing::debug_span!("apply", agent = %self.memory.agent(), entries = batch.0.len());
        let _entered = span.enter();
        let mut report = ApplyReport::default();
        for entry in batch.0 {
            apply_log_entry(&mut self.memory, entry, &mut report);
        }
        let changed = (report.applied + report.dead_letters.len()) as u64;
        if changed > 0 {
            self.events_since_snapshot += changed;
            self.first_unsaved_at.get_or_insert_with(Instant::now);
        }
        let agent = self.memory.agent().to_string();
        metrics::counter!("mneme_events_applied_total", "agent" => agent.clone()).increment(report.applied as u64);
        metrics::counter!("mneme_events_dead_lettered_total", "agent" => agent)
            .increment(report.dead_letters.len() as u64);
        report.checkpoint = self.memory.checkpoint();
        report.snapshot_seq = self.snapshot_if_due()?;
        self.applied_seq.send_replace(report.checkpoint);
        Ok(report)
    }
}

/// A read-only question to an agent's memory.
#[derive(Message)]
#[rtype(result = "Result<QueryAnswer, ActorsError>")]
pub enum Query {
    Search(SearchRequest),
    Context(ContextRequest),
    Status,
}

#[derive(Debug)]
pub enum QueryAnswer {
    Search(Vec<SearchHit>),
    Context(ContextResponse),
    Status(AgentStatus),
}

/// Where an agent's memory stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStatus {
    pub agent: String,
    pub checkpoint: u64,
    pub snapshot_seq: u64,
    pub digest: String,
    pub items: usize,
}

impl Query {
    fn verb(&self) -> &'static str {
        match self {
            Query::Search(_) => "search",
            Query::Context(_) => "context",
            Query::Status => "status",
        }
    }
}

impl Handler<Query> for MemoryActor {
    type Result = Result<QueryAnswer, ActorsError>;

    fn handle(&mut self, query: Query, _: &mut Self::Context) -> Self::Result {
        let verb = query.verb();
        let span = tracing::debug_span!("query", agent = %self.memory.agent(), verb);
        let _entered = span.enter();
        let started = Instant::now();
        let answer = match query {
            Query::Search(request) => QueryAnswer::Search(self.memory.search(&request)?),
            Query::Context(request) => QueryAnswer::Context(self.memory.context(&request)?),
            Query::Status => QueryAnswer::Status(AgentStatus {
                agent: self.memory.agent().to_string(),
                checkpoint: self.memory.checkpoint(),
                snapshot_seq: self.snapshot_seq,
                digest: self.memory.digest(),
                items: self.memory.item_count(),
            }),
        };
        metrics::histogram!("mneme_query_seconds", "verb" => verb).record(started.elapsed().as_secs_f64());
        Ok(answer)
    }
}

/// Write a snapshot now (before shutdown, or on demand).
#[derive(Message)]
#[rtype(result = "Result<u64, ActorsError>")]
pub struct TakeSnapshot;

impl Handler<TakeSnapshot> for MemoryActor {
    type Result = Result<u64, ActorsError>;

    fn handle(&mut self, _: TakeSnapshot, _: &mut Self::Context) -> Self::Result {
        self.snapshot()
    }
}

/// Restores an agent's memory from its snapshot, or starts it empty when
/// there is none or it cannot be used (it is then rebuilt from the log).
pub fn restore_or_new(
    store: &SnapshotStore,
    swarm: &str,
    agent: &str,
    config: mneme_projections::MemoryConfig,
) -> Result<AgentMemory, ActorsError> {
    use crate::snapshot_store::SnapshotProblem;
    match store.load(swarm, agent)? {
        Ok(body) => match AgentMemory::from_snapshot(&body, swarm, agent, config) {
            Ok(memory) => return Ok(memory),
            Err(ProjectionError::CorruptSnapshot(why)) => {
                tracing::warn!(%swarm, %agent, %why, "snapshot unusable; rebuilding from the log");
            }
            Err(other) => return Err(other.into()),
        },
        Err(SnapshotProblem::Damaged(why)) => {
            tracing::warn!(%swarm, %agent, %why, "snapshot damaged; rebuilding from the log");
        }
        Err(SnapshotProblem::Missing) => {}
    }
    Ok(AgentMemory::new(swarm, agent, config)?)
}

/// Applies one log entry: events are applied, and a record that is not a
/// valid event, or that the projection refuses, is skipped and reported as a
/// dead letter. Shared by live memory and replay so that both treat every
/// record the same way.
pub(crate) fn apply_log_entry(memory: &mut AgentMemory, entry: LogEntry, report: &mut ApplyReport) {
    let seq = entry.seq;
    if seq <= memory.checkpoint() {
        // Redelivered after a reconnect or restart: already in memory.
        report.redelivered += 1;
        return;
    }
    let outcome = match entry.record {
        Ok(event) => match memory.apply(seq, &event) {
            Ok(AppliedEvent::Applied) => Ok(()),
            Ok(AppliedEvent::DuplicateId { .. }) => {
                report.duplicates += 1;
                Ok(())
            }
            Err(error) => Err((error.to_string(), event.to_json().into_bytes())),
        },
        Err(invalid) => Err((invalid.reason, invalid.raw)),
    };
    match outcome {
        Ok(()) => report.applied += 1,
        Err((reason, raw)) => {
            tracing::warn!(agent = %memory.agent(), seq, %reason, "record dead-lettered");
            memory.skip(seq).expect("seq was checked to be above the checkpoint");
            report.dead_letters.push(DeadLetter { seq, agent: memory.agent().to_string(), reason, raw });
        }
    }
}
