//! `MemoryActor`: owns one agent's memory, applies its log entries in order,
//! answers queries, and snapshots memory and checkpoint together.
//!
//! Memory actors run on worker arbiters, never on the arbiter that drives
//! log and network IO: indexing and tantivy commits take milliseconds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mneme_events::EventId;
use mneme_index::tokens;
use mneme_nats::{DeadLetter, LogEntry};
use mneme_projections::phases::EXTRACTIVE_COMPRESSOR;
use mneme_projections::{AgentMemory, AppliedEvent, ProjectionError};
use tokio::sync::watch;

use crate::error::ActorsError;
use crate::lost_tail::LostTails;
use crate::phase_compressor::{PhaseCompletedNotice, PhaseCompressor};
use crate::phase_summarizer::PhaseSummaryRequest;
use crate::snapshot_store::SnapshotStore;

pub mod queries;

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
    /// Records skipped as dead whose letters the feed has not yet confirmed
    /// filed. No snapshot is written while there are any: a snapshot past an
    /// unfiled letter would lose it for good if the process died, whereas
    /// without one the record is read, skipped and filed again on restart.
    unfiled_dead_letters: BTreeSet<u64>,
    /// Tells waiting queries how far this memory has applied the log (the
    /// feed moves it on too, past records that were not for this memory).
    applied_seq: Arc<watch::Sender<u64>>,
    /// Where phases that complete while live are sent to be summarised.
    summaries: Option<SummaryLink>,
    /// Times each item was returned by a search or a context since the
    /// consolidator last took the counts. Query traffic is not on the log,
    /// so these change nothing until the consolidator records them as a
    /// `memories_retrieved` event.
    retrievals: BTreeMap<String, u32>,
    /// Seqs of valid events whose application panicked, with the reason
    /// their dead letters give: skipped when delivered again.
    poisoned: BTreeMap<u64, String>,
    /// The digest of the memory at a checkpoint. A memory is a function of
    /// the log up to its checkpoint, so the digest changes only when the
    /// checkpoint does: every status query (a handoff stream's opening, a
    /// feed's resubscription, `…/digest`) hashing the whole memory again
    /// let 200 stream openings keep a path-heavy memory busy for minutes.
    digest_cache: Option<(u64, String)>,
}

/// A memory actor's link to the phase compressor.
#[derive(Clone)]
pub struct SummaryLink {
    pub compressor: Addr<PhaseCompressor>,
    /// Phases completed at or below this seq were completed before this
    /// process started: they are not summarised again on catch-up.
    pub live_after_seq: u64,
    /// The transcript sent with a phase is cut to this many tokens.
    pub max_transcript_tokens: usize,
}

impl MemoryActor {
    pub fn new(
        memory: AgentMemory,
        store: SnapshotStore,
        policy: CheckpointPolicy,
        applied_seq: impl Into<Arc<watch::Sender<u64>>>,
    ) -> MemoryActor {
        let applied_seq = applied_seq.into();
        let snapshot_seq = memory.checkpoint();
        applied_seq.send_replace(memory.checkpoint());
        MemoryActor {
            memory,
            store,
            policy,
            snapshot_seq,
            events_since_snapshot: 0,
            first_unsaved_at: None,
            unfiled_dead_letters: BTreeSet::new(),
            applied_seq,
            summaries: None,
            retrievals: BTreeMap::new(),
            poisoned: BTreeMap::new(),
            digest_cache: None,
        }
    }

    /// After a panic while applying `seq`: the memory may be half-changed,
    /// so it goes back to its last snapshot (or to empty), and `seq` is
    /// skipped when the feed delivers the log again from there.
    fn recover_from_panic(&mut self, seq: u64, message: &str) -> Result<(), ActorsError> {
        self.poisoned.insert(seq, poisoned_reason(message));
        let swarm = self.memory.swarm().to_string();
        let agent = self.memory.agent().to_string();
        let config = self.memory.config().clone();
        // The log's end is not asked again here: it was checked when the
        // memory first started, and the snapshot is this process's own.
        self.memory = restore_or_new(&self.store, &swarm, &agent, config, u64::MAX, &LostTails::default())?;
        self.digest_cache = None;
        self.snapshot_seq = self.memory.checkpoint();
        self.events_since_snapshot = 0;
        self.first_unsaved_at = None;
        tracing::error!(
            %agent, seq, panic = message, restored_to = self.memory.checkpoint(),
            "applying an event panicked; memory restored, the event will be dead-lettered"
        );
        Ok(())
    }

    /// Summarise phases that complete from now on with a model.
    pub fn with_summaries(mut self, link: Option<SummaryLink>) -> MemoryActor {
        self.summaries = link;
        self
    }

    /// Sends the phase the last applied event completed to the compressor,
    /// if a model is configured, the phase completed live, and no summary of
    /// it is recorded yet.
    fn notify_completed_phase(&self, seq: u64, event_id: EventId) {
        let Some(link) = &self.summaries else { return };
        let Some(phase) = self.memory.phases().completed_by_last_event() else { return };
        if phase.completed_seq != Some(seq) {
            return;
        }
        let extractive = phase.levels.as_ref().is_some_and(|levels| levels.compressor == EXTRACTIVE_COMPRESSOR);
        if seq <= link.live_after_seq || !extractive {
            return;
        }
        let Ok(phase_id) = phase.phase_id.parse::<EventId>() else { return };
        let transcript_lines: Vec<String> = phase
            .event_seqs
            .iter()
            .filter_map(|seq| self.memory.item_at(*seq))
            .map(|item| format!("[seq {} {}] {}", item.seq, item.kind, item.text))
            .collect();
        let (transcript, _) = tokens::truncate(&transcript_lines.join("\n"), link.max_transcript_tokens);
        let request = PhaseSummaryRequest {
            swarm: self.memory.swarm().to_string(),
            agent: self.memory.agent().to_string(),
            phase_id: phase.phase_id.clone(),
            phase_name: phase.name.clone(),
            goal: phase.goal.clone(),
            outcome: phase.outcome.clone(),
            extractive_findings: phase.levels.as_ref().map(|levels| levels.findings.clone()).unwrap_or_default(),
            transcript,
        };
        link.compressor.do_send(PhaseCompletedNotice {
            request,
            phase_id,
            completed_by: event_id,
            completed_at: phase.completed_at,
            correlation_id: phase.task.clone(),
        });
    }

    /// Takes a snapshot if the policy says one is due; errors are logged,
    /// not returned, because the state they would have saved is still in
    /// memory and in the log.
    fn snapshot_if_due(&mut self) -> Option<u64> {
        // A snapshot writes the head and the chunks that changed, but the
        // head (BM25 statistics, asserted facts, task roll-ups) grows with
        // the memory (18.6 MiB and 0.47 s after 1,000 events at 1,000,000
        // items), so snapshotting every N events would still grow with
        // memory size. Waiting for a quarter of the memory's size in new
        // events (or the interval) keeps snapshot work proportional to
        // ingest, and the tail replayed on restart proportional to memory.
        let count_threshold = self.policy.every_events.max(self.memory.item_count() as u64 / 4);
        let due_by_count = self.events_since_snapshot >= count_threshold;
        let due_by_time = self.first_unsaved_at.is_some_and(|since| since.elapsed() >= self.policy.interval);
        if !(due_by_count || due_by_time) {
            return None;
        }
        match self.snapshot() {
            Ok(snapshot_seq) => snapshot_seq,
            Err(error) => {
                tracing::error!(agent = %self.memory.agent(), %error, "snapshot failed; will retry");
                None
            }
        }
    }

    /// Writes memory and checkpoint as one snapshot; returns its sequence,
    /// or `None` while dead letters wait to be filed.
    fn snapshot(&mut self) -> Result<Option<u64>, ActorsError> {
        let checkpoint = self.memory.checkpoint();
        if checkpoint == self.snapshot_seq {
            return Ok(Some(checkpoint));
        }
        if !self.unfiled_dead_letters.is_empty() {
            tracing::debug!(agent = %self.memory.agent(), "snapshot deferred until dead letters are filed");
            return Ok(None);
        }
        let span = tracing::info_span!("checkpoint", agent = %self.memory.agent(), seq = checkpoint);
        let _entered = span.enter();
        let started = Instant::now();
        // Started and written are both logged so that a crash between them
        // can be told apart from one outside a snapshot (tests/crash.rs).
        tracing::debug!(agent = %self.memory.agent(), snapshot_seq = checkpoint, "snapshot started");
        self.memory.commit()?;
        let (swarm, agent) = (self.memory.swarm().to_string(), self.memory.agent().to_string());
        // The swarm's graph first: a memory's snapshot must never be ahead
        // of the graph it reads shared events from.
        let graph_bytes = self.store.save_swarm_graph(&swarm, &agent, &self.memory.config().shared, checkpoint)?;
        // The head and what changed since the last snapshot; everything
        // when the store lacks what the memory thinks it holds.
        let bytes = match self.store.save(&swarm, &agent, &self.memory.snapshot_delta()?) {
            Err(ActorsError::SnapshotIncomplete(why)) => {
                tracing::warn!(%agent, %why, "writing the whole snapshot");
                self.store.save(&swarm, &agent, &self.memory.full_snapshot()?)?
            }
            written => written?,
        } + graph_bytes;
        // The vector graphs that grew by a tenth since their last save: a
        // failure costs a rebuild after a restart, never the snapshot.
        match self.memory.save_vector_graphs() {
            Ok(0) => {}
            Ok(vectors) => tracing::info!(%agent, vectors, "vector graphs saved"),
            Err(error) => tracing::warn!(%agent, %error, "vector graphs not saved; a restart builds them again"),
        }
        self.memory.mark_snapshot_saved();
        self.memory.config().shared.note_saved(&agent, checkpoint);
        self.snapshot_seq = checkpoint;
        self.events_since_snapshot = 0;
        self.first_unsaved_at = None;
        metrics::counter!("mneme_snapshots_written_total", "swarm" => swarm.clone()).increment(1);
        metrics::histogram!("mneme_snapshot_seconds", "swarm" => swarm.clone()).record(started.elapsed().as_secs_f64());
        metrics::counter!("mneme_snapshot_bytes_written_total", "swarm" => swarm.clone()).increment(bytes as u64);
        tracing::debug!(agent = %self.memory.agent(), snapshot_seq = checkpoint, bytes, "snapshot written");
        Ok(Some(checkpoint))
    }
}

impl Actor for MemoryActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(self.policy.mailbox_capacity);
        // The timer only checks; the snapshot itself is taken when due.
        let tick = (self.policy.interval / 2).max(Duration::from_millis(10));
        ctx.run_interval(tick, |actor, _| {
            actor.snapshot_if_due();
        });
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        if let Err(error) = self.snapshot() {
            tracing::error!(agent = %self.memory.agent(), %error, "final snapshot failed");
        }
    }
}

/// Entries of the swarm's log for this memory, in order, to apply; the
/// log up to `through` held nothing else for it.
#[derive(Message)]
#[rtype(result = "ApplyReport")]
pub struct ApplyBatch {
    pub entries: Vec<LogEntry>,
    pub through: u64,
}

/// What a batch did. Dead letters are for the feed to file on the log.
#[derive(Debug, Default)]
pub struct ApplyReport {
    pub applied: usize,
    pub duplicates: usize,
    /// Events under an id already applied with other content (see
    /// [`AppliedEvent::ConflictingDuplicate`]): this agent's own are also
    /// in `dead_letters`, other agents' are skipped here and dead-lettered
    /// by their author's memory.
    pub conflicting_duplicates: usize,
    pub redelivered: usize,
    /// Records of other agents this memory may not see (private, not
    /// admitted, or not valid events), skipped.
    pub not_visible: usize,
    pub dead_letters: Vec<DeadLetter>,
    /// The checkpoint after the batch.
    pub checkpoint: u64,
    /// Set when a snapshot was written: its sequence.
    pub snapshot_seq: Option<u64>,
    /// Set when applying stopped at an entry because of a fault of this
    /// process (not of the event), e.g. the index failed: the entries from
    /// there on were not applied and must be delivered again.
    pub stalled: Option<String>,
}

impl Handler<ApplyBatch> for MemoryActor {
    type Result = MessageResult<ApplyBatch>;

    fn handle(&mut self, batch: ApplyBatch, _: &mut Self::Context) -> Self::Result {
        self.catch_up_checkpoint();
        let span = tracing::debug_span!("apply", agent = %self.memory.agent(), entries = batch.entries.len());
        let _entered = span.enter();
        let mut report = ApplyReport::default();
        for entry in batch.entries {
            let seq = entry.seq;
            let event_id = entry.record.as_ref().ok().map(|event| event.id);
            if let Err(error) = apply_log_entry(&mut self.memory, entry, &self.poisoned, &mut report) {
                if let ProjectionError::ApplyPanicked { seq, message } = &error {
                    // What this batch applied before the panic went with the
                    // half-changed memory; the feed delivers it again.
                    report = ApplyReport::default();
                    if let Err(restore_error) = self.recover_from_panic(*seq, message) {
                        tracing::error!(agent = %self.memory.agent(), %restore_error, "cannot restore after a panic");
                    }
                } else {
                    tracing::error!(agent = %self.memory.agent(), seq, %error, "applying stalled; will retry");
                }
                report.stalled = Some(format!("seq {seq}: {error}"));
                break;
            }
            if let Some(event_id) = event_id {
                self.notify_completed_phase(seq, event_id);
            }
        }
        if report.stalled.is_none() {
            self.memory.advance_to(batch.through);
        }
        self.unfiled_dead_letters.extend(report.dead_letters.iter().map(|letter| letter.seq));
        let changed = (report.applied + report.dead_letters.len()) as u64;
        if changed > 0 {
            self.events_since_snapshot += changed;
            self.first_unsaved_at.get_or_insert_with(Instant::now);
        }
        let labels = [("swarm", self.memory.swarm().to_string()), ("agent", self.memory.agent().to_string())];
        metrics::counter!("mneme_events_applied_total", &labels).increment(report.applied as u64);
        metrics::counter!("mneme_conflicting_duplicates_total", &labels)
            .increment(report.conflicting_duplicates as u64);
        metrics::counter!("mneme_events_dead_lettered_total", &labels).increment(report.dead_letters.len() as u64);
        report.checkpoint = self.memory.checkpoint();
        report.snapshot_seq = self.snapshot_if_due();
        self.applied_seq.send_replace(report.checkpoint);
        MessageResult(report)
    }
}

/// The feed filed these dead letters on the log.
#[derive(Message)]
#[rtype(result = "()")]
pub struct DeadLettersFiled(pub Vec<u64>);

impl Handler<DeadLettersFiled> for MemoryActor {
    type Result = ();

    fn handle(&mut self, DeadLettersFiled(seqs): DeadLettersFiled, _: &mut Self::Context) {
        for seq in seqs {
            self.unfiled_dead_letters.remove(&seq);
        }
        self.snapshot_if_due();
    }
}

impl MemoryActor {
    /// Moves the memory's checkpoint up to what the feed says it has
    /// passed: the feed moves `applied_seq` on, without a message, over
    /// records that held nothing for this memory, and only while no batch
    /// of its own is in flight to it.
    fn catch_up_checkpoint(&mut self) {
        let applied = *self.applied_seq.borrow();
        self.memory.advance_to(applied);
    }

    /// The memory's digest, hashed once per checkpoint.
    fn digest(&mut self) -> String {
        let checkpoint = self.memory.checkpoint();
        match &self.digest_cache {
            Some((at, digest)) if *at == checkpoint => digest.clone(),
            _ => {
                let digest = self.memory.digest();
                self.digest_cache = Some((checkpoint, digest.clone()));
                digest
            }
        }
    }
}

impl MemoryActor {
    fn count_retrievals<'a>(&mut self, item_ids: impl Iterator<Item = &'a str>) {
        for item_id in item_ids {
            match self.retrievals.get_mut(item_id) {
                Some(count) => *count = count.saturating_add(1),
                None => {
                    self.retrievals.insert(item_id.to_string(), 1);
                }
            }
        }
    }
}

/// Hands the retrieval counts to the consolidator and starts counting
/// afresh; sorted by item id.
#[derive(Message)]
#[rtype(result = "Vec<(String, u32)>")]
pub struct TakeRetrievals;

impl Handler<TakeRetrievals> for MemoryActor {
    type Result = MessageResult<TakeRetrievals>;

    fn handle(&mut self, _: TakeRetrievals, _: &mut Self::Context) -> Self::Result {
        MessageResult(std::mem::take(&mut self.retrievals).into_iter().collect())
    }
}

/// Gives back retrieval counts the consolidator took but could not record
/// (the append failed): they are added to what was counted since.
#[derive(Message)]
#[rtype(result = "()")]
pub struct ReturnRetrievals(pub Vec<(String, u32)>);

impl Handler<ReturnRetrievals> for MemoryActor {
    type Result = ();

    fn handle(&mut self, ReturnRetrievals(counts): ReturnRetrievals, _: &mut Self::Context) {
        for (item_id, count) in counts {
            let total = self.retrievals.entry(item_id).or_default();
            *total = total.saturating_add(count);
        }
    }
}

/// Write a snapshot now (before shutdown, or on demand). Answers the
/// snapshot's sequence, or `None` while dead letters wait to be filed.
#[derive(Message)]
#[rtype(result = "Result<Option<u64>, ActorsError>")]
pub struct TakeSnapshot;

impl Handler<TakeSnapshot> for MemoryActor {
    type Result = Result<Option<u64>, ActorsError>;

    fn handle(&mut self, _: TakeSnapshot, _: &mut Self::Context) -> Self::Result {
        self.catch_up_checkpoint();
        self.snapshot()
    }
}

/// Answers once the memory actor has started: its memory is restored.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Started;

impl Handler<Started> for MemoryActor {
    type Result = ();

    fn handle(&mut self, _: Started, _: &mut Self::Context) {}
}

/// Restores an agent's memory from its snapshot, or starts it empty when
/// there is none or it cannot be used (it is then rebuilt from the log).
///
/// `log_end` is the log's last sequence when this process started: a
/// snapshot beyond it describes events the log no longer has (they were lost
/// in a crash before being made durable, or the log was replaced) and is
/// refused, or new events would be mistaken for ones already applied; it is
/// recorded in `lost_tails` (see [`LostTails`]).
pub fn restore_or_new(
    store: &SnapshotStore,
    swarm: &str,
    agent: &str,
    config: mneme_projections::MemoryConfig,
    log_end: u64,
    lost_tails: &LostTails,
) -> Result<AgentMemory, ActorsError> {
    use crate::snapshot_store::SnapshotProblem;
    store.restore_swarm_graph(swarm, &config.shared);
    let config = mneme_projections::MemoryConfig { vector_graphs: Some(store.vector_graphs_dir(swarm)), ..config };
    match store.load(swarm, agent)? {
        Ok(stored) => match stored.restore(swarm, agent, config.clone()) {
            Ok(memory) if memory.checkpoint() > log_end => {
                lost_tails.record(swarm, agent, memory.checkpoint(), log_end);
            }
            Ok(memory) => {
                tracing::info!(
                    %swarm, %agent, snapshot_seq = memory.checkpoint(), text_index_reused = memory.reused_text_index(),
                    "memory restored from its snapshot"
                );
                return Ok(memory);
            }
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
    tracing::info!(%swarm, %agent, "memory rebuilt from the log");
    Ok(AgentMemory::new(swarm, agent, config)?)
}

/// Applies one log entry: events are applied, and a record that is not a
/// valid event, or that the projection refuses, is skipped and reported as a
/// dead letter. Shared by live memory and replay so that both treat every
/// record the same way.
///
/// A failure of this process rather than of the record (the index failed)
/// is returned as an error and the checkpoint stays put, so that the record
/// is applied when delivered again instead of being dead-lettered.
///
/// A valid event whose application panics is contained: the panic becomes
/// [`ProjectionError::ApplyPanicked`], and the caller must throw the
/// half-changed memory away, rebuild it, and deliver the entries again with
/// the event's seq in `poisoned`, where it is dead-lettered with its reason.
/// Live memory and replay do the same, so they agree.
pub(crate) fn apply_log_entry(
    memory: &mut AgentMemory,
    entry: LogEntry,
    poisoned: &BTreeMap<u64, String>,
    report: &mut ApplyReport,
) -> Result<(), ProjectionError> {
    let seq = entry.seq;
    if seq <= memory.checkpoint() {
        // Redelivered after a reconnect or restart: already in memory.
        report.redelivered += 1;
        return Ok(());
    }
    let outcome = match entry.record {
        // Another agent's bad record is its memory's to dead-letter.
        Err(_) if entry.agent != memory.agent() => {
            memory.skip(seq).expect("seq was checked to be above the checkpoint");
            report.not_visible += 1;
            return Ok(());
        }
        Ok(event) if poisoned.contains_key(&seq) => Err((poisoned[&seq].clone(), event.to_json().into_bytes())),
        Ok(event) => match apply_containing_panics(memory, seq, &event)? {
            Ok(AppliedEvent::Applied) => Ok(()),
            Ok(AppliedEvent::NotVisible) => {
                report.not_visible += 1;
                return Ok(());
            }
            Ok(AppliedEvent::DuplicateId { .. }) => {
                report.duplicates += 1;
                Ok(())
            }
            Ok(AppliedEvent::ConflictingDuplicate { original_seq }) => {
                report.conflicting_duplicates += 1;
                if event.agent != memory.agent() {
                    // Its author's memory files the letter, once.
                    return Ok(());
                }
                Err((conflicting_duplicate_reason(&event, original_seq), event.to_json().into_bytes()))
            }
            Err(refused @ ProjectionError::WrongOwner { .. }) => {
                Err((refused.to_string(), event.to_json().into_bytes()))
            }
            Err(failure) => return Err(failure),
        },
        Err(invalid) => Err((invalid.reason, invalid.raw)),
    };
    match outcome {
        Ok(()) => report.applied += 1,
        Err((reason, raw)) => {
            tracing::warn!(agent = %memory.agent(), seq, %reason, "record dead-lettered");
            // A refused event (a conflicting duplicate) has moved the
            // checkpoint already; anything else has not.
            if memory.checkpoint() < seq {
                memory.skip(seq).expect("seq was checked to be above the checkpoint");
            }
            report.dead_letters.push(DeadLetter { seq, agent: memory.agent().to_string(), reason, raw });
        }
    }
    Ok(())
}

/// `memory.apply`, with a panic turned into [`ProjectionError::ApplyPanicked`]
/// instead of unwinding through the actor and its arbiter.
fn apply_containing_panics(
    memory: &mut AgentMemory,
    seq: u64,
    event: &mneme_events::Event,
) -> Result<Result<AppliedEvent, ProjectionError>, ProjectionError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| memory.apply(seq, event))).map_err(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|text| text.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        metrics::counter!("mneme_apply_panics_total", "swarm" => memory.swarm().to_string()).increment(1);
        ProjectionError::ApplyPanicked { seq, message }
    })
}

/// The reason the dead letter of a second, different event under an id
/// gives: it starts with the code `conflicting_duplicate` and names the seq
/// of the first.
pub(crate) fn conflicting_duplicate_reason(event: &mneme_events::Event, original_seq: u64) -> String {
    format!(
        "conflicting_duplicate: event id {} was first applied at seq {original_seq} with other content; an id \
         names one event, so this one is not applied (publish it under a new id)",
        event.id
    )
}

/// The reason a poisoned event's dead letter gives.
pub(crate) fn poisoned_reason(message: &str) -> String {
    format!("applying the event panicked: {message}")
}
