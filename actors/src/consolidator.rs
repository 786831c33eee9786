//! The consolidator: one per swarm. On a schedule, after every N events, or
//! on demand, it takes each agent's retrieval counts, reads a copy of the
//! agent's memory through a query, scans it
//! ([`mneme_projections::consolidation::consolidate_with`]) on a blocking thread
//! — off the arbiters that apply events and answer queries — and, once
//! every agent is scanned, appends the counts and the verdicts to the log.
//! A run that fails before that appends nothing; no verdict can fail a run
//! by its size (see [`fit_to_log`]). Memory changes only when the memory actor
//! applies those events, like any others; a replay applies the recorded
//! verdicts and never scans.
//!
//! A dry run scans and reports, and writes nothing (not even the retrieval
//! counts, which stay with the memory actors).
//!
//! The schedule's timers (the interval, the event-count poll) sleep on the
//! consolidator's [`ActorClock`], which also gives the time of what it
//! writes: a test that gives it a `TestClock` starts a scheduled run by
//! advancing the clock.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mneme_events::{
    Event, EventKind, IdKey, MemoriesLinked, MemoriesMerged, MemoriesRetrieved, RetrievalCount, SystemClock, Timestamp,
};
use mneme_nats::{EventLog, Lease, Seq};
use mneme_projections::consolidation::{
    ConsolidationPlan, ConsolidationPolicy, ConsolidationView, SharedScan, consolidate_with, share_run_budget,
};

use crate::clock::ActorClock;
use crate::error::ActorsError;
use crate::lease_keeper::LeaseGate;
use crate::memory_actor::queries::{Ask, ConsolidationViewOf};
use crate::memory_actor::{ReturnRetrievals, TakeRetrievals};
use crate::supervisor::{AgentHandle, GetAgent, ListAgents, Supervisor};

/// Events per append: a first run over a large memory writes many verdicts.
const EVENTS_PER_APPEND: usize = 1000;
/// Retrieval counts per `memories_retrieved` event.
const COUNTS_PER_EVENT: usize = 1000;
/// How long a run waits for an agent to apply what it wrote.
const APPLY_TIMEOUT: Duration = Duration::from_secs(120);
/// Requests waiting for the consolidator (on-demand runs queue behind the
/// one under way).
const MAILBOX_CAPACITY: usize = 16;
/// How long after its last look the event-count trigger looks at the log
/// again.
const EVENT_TRIGGER_POLL: Duration = Duration::from_secs(1);

/// The scan a run performs on the copy of a memory: [`consolidate_with`] in
/// production. A seam so that tests can hold a scan open and show that the
/// agent's queries still answer meanwhile.
pub type Scanner =
    Arc<dyn Fn(&ConsolidationView, &ConsolidationPolicy, &SharedScan) -> ConsolidationPlan + Send + Sync>;

/// When the consolidator runs by itself.
#[derive(Debug, Clone, Copy, Default)]
pub struct ConsolidationSchedule {
    pub interval: Option<Duration>,
    pub every_events: Option<u64>,
}

pub struct Consolidator {
    swarm: String,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    policy: ConsolidationPolicy,
    schedule: ConsolidationSchedule,
    /// Keys the ids of verdict events (see `mneme_events::derived`).
    id_key: IdKey,
    scanner: Scanner,
    /// The time verdicts and retrieval counts are written with, and what
    /// the schedule's timers sleep on.
    clock: Arc<dyn ActorClock>,
    /// One run at a time; a scheduled run that finds one going is skipped.
    running: Arc<tokio::sync::Mutex<()>>,
    /// Events after this seq count toward `every_events`: the log's last
    /// seq when the first poll looked, then after each run, so that a run's
    /// own verdicts never trigger the next one.
    events_counted_after: Option<Seq>,
    /// As `events_counted_after`, for the runs that only record retrieval
    /// counts while another process holds the writer lease.
    retrievals_counted_after: Option<Seq>,
    /// With replicas: runs are made, and verdicts appended (fenced), only
    /// while this process holds the swarm's writer lease. `None`: this
    /// process is the swarm's only writer.
    lease: Option<LeaseGate>,
}

impl Consolidator {
    pub fn new(
        swarm: &str,
        log: Arc<dyn EventLog>,
        supervisor: Addr<Supervisor>,
        policy: ConsolidationPolicy,
        schedule: ConsolidationSchedule,
        id_key: IdKey,
    ) -> Consolidator {
        Consolidator {
            id_key,
            swarm: swarm.to_string(),
            log,
            supervisor,
            policy,
            schedule,
            scanner: Arc::new(consolidate_with),
            clock: Arc::new(SystemClock),
            running: Arc::new(tokio::sync::Mutex::new(())),
            events_counted_after: None,
            retrievals_counted_after: None,
            lease: None,
        }
    }

    /// Runs, and writes, only while this process holds `lease`.
    pub fn with_lease(mut self, lease: LeaseGate) -> Consolidator {
        self.lease = Some(lease);
        self
    }

    /// Writes verdicts at `clock`'s time, and runs the schedule's timers on
    /// it, instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn ActorClock>) -> Consolidator {
        self.clock = clock;
        self
    }

    /// Scans with `scanner` instead of [`consolidate_with`].
    pub fn with_scanner(mut self, scanner: Scanner) -> Consolidator {
        self.scanner = scanner;
        self
    }

    fn run_scheduled(&mut self, ctx: &mut Context<Self>, trigger: &'static str) {
        let Ok(guard) = self.running.clone().try_lock_owned() else {
            tracing::debug!(trigger, "consolidation already running; skipped");
            return;
        };
        if self.lease.as_ref().is_some_and(|lease| lease.held().is_none()) {
            // Another replica consolidates; what this one's queries counted
            // is recorded all the same, or usage would count only the
            // holder's queries.
            let recording =
                record_retrievals(self.supervisor.clone(), self.log.clone(), self.swarm.clone(), self.clock.now());
            ctx.spawn(
                async move {
                    let _guard = guard;
                    if let Err(error) = recording.await {
                        tracing::warn!(trigger, %error, "could not record the retrieval counts");
                    }
                }
                .into_actor(self),
            );
            return;
        }
        let run = self.run(ConsolidationRequest { dry_run: false, agent: None });
        ctx.spawn(
            async move {
                let _guard = guard;
                run.await
            }
            .into_actor(self)
            .map(move |result, consolidator, _| match result {
                Ok(report) => {
                    consolidator.finished(&report);
                    tracing::info!(
                        trigger,
                        agents = report.agents.len(),
                        events = report.events_written(),
                        "consolidation run finished"
                    );
                }
                Err(error) => tracing::warn!(trigger, %error, "consolidation run failed"),
            }),
        );
    }

    /// What a run that wrote to the log leaves behind: its own events do
    /// not count toward the next run.
    fn finished(&mut self, report: &ConsolidationReport) {
        if !report.dry_run {
            self.events_counted_after = self.events_counted_after.max(Some(report.log_seq_at_end));
        }
    }

    /// The interval trigger: a run `interval` from now, and the next
    /// `interval` after that one started. The timer is armed again once the
    /// run is started (or skipped), so a test that sees it armed knows.
    fn run_after(&mut self, ctx: &mut Context<Self>, interval: Duration) {
        ctx.spawn(self.clock.sleep(interval).into_actor(self).map(move |(), consolidator, ctx| {
            consolidator.run_scheduled(ctx, "interval");
            consolidator.run_after(ctx, interval);
        }));
    }

    /// The event-count trigger: runs once `every_events` events arrived
    /// after the last run (or after start-up). Looks again
    /// [`EVENT_TRIGGER_POLL`] after this look is done (one look at a time),
    /// so a test that sees the poll armed again knows the look was made.
    fn check_event_count(&mut self, ctx: &mut Context<Self>, every_events: u64) {
        let log = self.log.clone();
        ctx.spawn(async move { log.last_seq().await }.into_actor(self).map(move |last_seq, consolidator, ctx| {
            if let Ok(last_seq) = last_seq
                && consolidator.enough_events(last_seq, every_events)
            {
                consolidator.run_scheduled(ctx, "events");
            }
            let poll = consolidator.clock.sleep(EVENT_TRIGGER_POLL);
            ctx.spawn(
                poll.into_actor(consolidator)
                    .map(move |(), consolidator, ctx| consolidator.check_event_count(ctx, every_events)),
            );
        }));
    }

    /// Whether `every_events` events arrived between the last count and
    /// `last_seq`; if so, counting starts again from `last_seq`.
    fn enough_events(&mut self, last_seq: Seq, every_events: u64) -> bool {
        // Without the lease, runs only record retrieval counts, and are
        // counted apart: the events that arrive meanwhile still count
        // toward the first run once this process takes the lease. Both
        // count from the first look.
        if self.events_counted_after.is_none() {
            self.events_counted_after = Some(last_seq);
            self.retrievals_counted_after = Some(last_seq);
            return false;
        }
        let holder = self.lease.as_ref().is_none_or(|gate| gate.held().is_some());
        let counted = match holder {
            true => &mut self.events_counted_after,
            false => &mut self.retrievals_counted_after,
        };
        let Some(counted_after) = *counted else {
            *counted = Some(last_seq);
            return false;
        };
        if last_seq.saturating_sub(counted_after) < every_events {
            return false;
        }
        *counted = Some(last_seq);
        true
    }

    /// The run itself, as a future that needs nothing of the actor.
    fn run(
        &self,
        request: ConsolidationRequest,
    ) -> impl Future<Output = Result<ConsolidationReport, ActorsError>> + 'static + use<> {
        let log = self.log.clone();
        let supervisor = self.supervisor.clone();
        let policy = self.policy.clone();
        let swarm = self.swarm.clone();
        let scanner = self.scanner.clone();
        let id_key = self.id_key.clone();
        let clock = self.clock.clone();
        // A run that writes needs the lease, from its start: the fence of
        // the lease held now guards every append of the run.
        let lease = match (&self.lease, request.dry_run) {
            (Some(gate), false) => Some(gate.require(&self.swarm)),
            _ => None,
        };
        async move {
            let lease = lease.transpose()?;
            let started = Instant::now();
            let log_seq_at_start = log.last_seq().await?;
            let agents = match &request.agent {
                Some(agent) => vec![agent.clone()],
                None => supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?,
            };
            let mut report = ConsolidationReport {
                swarm: swarm.clone(),
                dry_run: request.dry_run,
                agents: Vec::new(),
                elapsed: Duration::ZERO,
                log_seq_at_start,
                log_seq_at_end: log_seq_at_start,
                shared: SharedScanSummary::default(),
            };
            // Every agent is read and scanned before anything is written, so
            // a run that fails there (an agent gone, a scan that panicked)
            // appends nothing, for no agent; what it took is given back.
            let mut read: Vec<ReadAgent> = Vec::new();
            for agent in agents {
                let outcome = match supervisor.send(GetAgent(agent.clone())).await {
                    // A memory is judged as of the log's end at the run's
                    // start: one still catching up (a replica that just took
                    // the lease over) would otherwise be judged on less than
                    // the verdicts already written.
                    Ok(Ok(handle)) => match handle.caught_up(log.as_ref(), log_seq_at_start, APPLY_TIMEOUT).await {
                        Ok(()) => read_agent(&handle, request.dry_run).await,
                        Err(error) => Err(error),
                    },
                    Ok(Err(error)) => Err(error),
                    Err(_) => Err(stopped("supervisor")),
                };
                match outcome {
                    Ok(agent) => read.push(agent),
                    Err(error) => {
                        read.into_iter().for_each(ReadAgent::return_retrievals);
                        return Err(error);
                    }
                }
            }
            let context = ScanContext {
                swarm: &swarm,
                log: log.as_ref(),
                id_key: &id_key,
                dry_run: request.dry_run,
                now: clock.now(),
            };
            let (shared, scanned) = scan_all(read, &policy, &scanner, context).await?;
            report.shared = shared;
            let mut scanned = scanned.into_iter();
            while let Some(agent) = scanned.next() {
                match write_agent(agent, log.as_ref(), lease.as_ref()).await {
                    Ok(outcome) => report.agents.push(outcome),
                    Err(error) => {
                        // Only the log (or an agent's apply) can fail here;
                        // the agents not reached keep their counts.
                        scanned.for_each(ScannedAgent::return_retrievals);
                        return Err(error);
                    }
                }
            }
            report.elapsed = started.elapsed();
            report.log_seq_at_end = log.last_seq().await?;
            let labels = [("swarm", swarm.clone()), ("dry_run", request.dry_run.to_string())];
            metrics::counter!("mneme_consolidation_runs_total", &labels).increment(1);
            metrics::histogram!("mneme_consolidation_seconds", "swarm" => swarm.clone())
                .record(report.elapsed.as_secs_f64());
            Ok(report)
        }
    }
}

fn stopped(agent: &str) -> ActorsError {
    ActorsError::ActorStopped { agent: agent.to_string() }
}

/// One agent read, before its scan: the retrieval counts taken from its
/// memory and the copy of the memory they were counted into.
struct ReadAgent {
    handle: AgentHandle,
    /// Taken from the memory actor: returned to it if the run fails before
    /// they are on the log.
    counts: Vec<(String, u32)>,
    view: ConsolidationView,
}

impl ReadAgent {
    fn give_back(handle: &AgentHandle, counts: Vec<(String, u32)>) {
        if !counts.is_empty() {
            handle.addr.do_send(ReturnRetrievals(counts));
        }
    }

    fn return_retrievals(self) {
        ReadAgent::give_back(&self.handle, self.counts);
    }
}

/// One agent's run before anything is written: the retrieval counts taken
/// from its memory, the plan, and the events that record both.
struct ScannedAgent {
    handle: AgentHandle,
    items: usize,
    plan: ConsolidationPlan,
    /// Taken from the memory actor: returned to it if the run fails before
    /// they are on the log.
    counts: Vec<(String, u32)>,
    events: Vec<Event>,
    /// Events holding the plan's verdicts (written unless a dry run).
    verdict_events: usize,
    verdicts_dropped: usize,
    scan_seconds: f64,
}

impl ScannedAgent {
    fn return_retrievals(self) {
        if !self.counts.is_empty() {
            self.handle.addr.do_send(ReturnRetrievals(self.counts));
        }
    }
}

/// One agent read, nothing scanned or written: take the retrieval counts
/// (counted into the copy as if applied, which is what recording them
/// first did) and read a copy of its memory.
async fn read_agent(handle: &AgentHandle, dry_run: bool) -> Result<ReadAgent, ActorsError> {
    let agent = handle.agent.clone();
    let counts =
        if dry_run { Vec::new() } else { handle.addr.send(TakeRetrievals).await.map_err(|_| stopped(&agent))? };
    let give_back = |counts| ReadAgent::give_back(handle, counts);
    let mut view = match handle.addr.send(Ask(ConsolidationViewOf)).await {
        Ok(Ok(view)) => view,
        Ok(Err(error)) => {
            give_back(counts);
            return Err(error);
        }
        Err(_) => {
            give_back(counts);
            return Err(stopped(&agent));
        }
    };
    count_retrievals_into(&mut view, &counts);
    Ok(ReadAgent { handle: handle.clone(), counts, view: *view })
}

/// Scans every agent read, on one blocking thread: first the swarm's shared
/// items, once for all of them ([`SharedScan`]), then each memory through
/// it; then turns each plan into events that each fit the log. A scan that
/// panics fails the run, and every count goes back.
async fn scan_all(
    read: Vec<ReadAgent>,
    policy: &ConsolidationPolicy,
    scanner: &Scanner,
    context: ScanContext<'_>,
) -> Result<(SharedScanSummary, Vec<ScannedAgent>), ActorsError> {
    let policy = policy.clone();
    let scanner = scanner.clone();
    let swarm = context.swarm.to_string();
    let (taken, views): (Vec<_>, Vec<_>) =
        read.into_iter().map(|agent| ((agent.handle, agent.counts), agent.view)).unzip();
    // A verdict's time is its cause's: the newest event time of the memory
    // it judged (the run's wall-clock time only for an empty memory), so
    // that a replayed or imported log keeps a coherent timeline.
    let judged: Vec<Option<Timestamp>> = views.iter().map(|view| view.items.iter().map(|item| item.ts).max()).collect();
    // A panic is caught where it happens, so that the error names the scan
    // that failed: the shared items', or one agent's.
    let caught = |agent: &str, scan: &mut dyn FnMut()| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(scan)).map_err(|panic| {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|text| text.to_string()))
                .unwrap_or_else(|| "the scan panicked".to_string());
            ActorsError::Consolidation { agent: agent.to_string(), message }
        })
    };
    let scanning = tokio::task::spawn_blocking(move || -> Result<_, ActorsError> {
        let started = Instant::now();
        let mut shared = SharedScan::default();
        caught("(the swarm's shared items)", &mut || {
            shared = SharedScan::new(&views.iter().collect::<Vec<_>>(), &policy)
        })?;
        let shared_seconds = started.elapsed().as_secs_f64();
        metrics::histogram!("mneme_consolidation_shared_scan_seconds", "swarm" => swarm.clone()).record(shared_seconds);
        tracing::debug!(?shared, seconds = shared_seconds, "shared items compared once for the run");
        let summary =
            SharedScanSummary { items: shared.items(), duplicate_pairs: shared.duplicate_pairs(), shared_seconds };
        let mut plans = Vec::with_capacity(views.len());
        for view in &views {
            let started = Instant::now();
            let mut plan = None;
            caught(&view.agent, &mut || plan = Some(scanner(view, &policy, &shared)))?;
            let scan_seconds = started.elapsed().as_secs_f64();
            metrics::histogram!("mneme_consolidation_scan_seconds", "swarm" => swarm.clone()).record(scan_seconds);
            plans.push((view.items.len(), plan.expect("a scan that returned made a plan"), scan_seconds));
        }
        // A run writes at most `max_outcomes_per_run` verdicts in all,
        // whatever the number of memories.
        share_run_budget(
            &mut plans.iter_mut().map(|(_, plan, _)| plan).collect::<Vec<_>>(),
            policy.max_outcomes_per_run,
        );
        Ok((summary, plans))
    });
    let scanned = match scanning.await {
        Ok(scanned) => scanned,
        Err(error) => Err(ActorsError::Consolidation { agent: String::new(), message: error.to_string() }),
    };
    let (summary, plans) = match scanned {
        Ok(scanned) => scanned,
        Err(error) => {
            for (handle, counts) in taken {
                ReadAgent::give_back(&handle, counts);
            }
            return Err(error);
        }
    };
    let ScanContext { swarm, log, id_key, dry_run, now } = context;
    let scanned = taken
        .into_iter()
        .zip(plans)
        .zip(judged)
        .map(|(((handle, counts), (items, plan, scan_seconds)), judged)| {
            // The verdicts' events are made on a dry run too, so that it
            // counts what a real run would write.
            let (verdicts, verdicts_dropped) = fit_to_log(plan.events(judged.unwrap_or(now), id_key), log, id_key);
            let verdict_events = verdicts.len();
            let mut events = retrieval_events(swarm, &handle.agent, &counts, now);
            if !dry_run {
                events.extend(verdicts);
            }
            let (events, counts_dropped) = fit_to_log(events, log, id_key);
            let verdicts_dropped = verdicts_dropped + counts_dropped;
            ScannedAgent { handle, items, plan, counts, events, verdict_events, verdicts_dropped, scan_seconds }
        })
        .collect();
    Ok((summary, scanned))
}

/// What turning plans into events needs.
struct ScanContext<'a> {
    swarm: &'a str,
    log: &'a dyn EventLog,
    id_key: &'a IdKey,
    dry_run: bool,
    /// The run's wall-clock time: the retrieval counts' (the reads happened
    /// by then), and the verdicts' when the memory judged holds nothing.
    now: Timestamp,
}

/// Adds the counts a run takes from the memory actor to the items of its
/// copy, as applying their `memories_retrieved` event will: the scan judges
/// usage as it will stand once the run is written.
fn count_retrievals_into(view: &mut ConsolidationView, counts: &[(String, u32)]) {
    if counts.is_empty() {
        return;
    }
    let position: std::collections::HashMap<&str, usize> =
        view.items.iter().enumerate().map(|(position, item)| (item.item_id.as_str(), position)).collect();
    let additions: Vec<(usize, u32)> =
        counts.iter().filter_map(|(item_id, count)| Some((*position.get(item_id.as_str())?, *count))).collect();
    for (position, count) in additions {
        let item = &mut view.items[position];
        item.retrievals = item.retrievals.saturating_add(count);
    }
}

/// Every event of a run as the log will take it. Mneme writes these
/// events itself, so none may fail a run by its size: an event over the
/// log's limit that holds several verdicts (links, merged items) is split
/// in two, each half under an id derived from the whole's, until each part
/// fits; a single verdict still too large (the reasons are bounded at
/// their source, so only under a very small `max_event_bytes`) is left out
/// with a warning and counted. Answers the events and how many verdicts
/// were left out.
fn fit_to_log(events: Vec<Event>, log: &dyn EventLog, id_key: &IdKey) -> (Vec<Event>, usize) {
    let mut fitted = Vec::with_capacity(events.len());
    let mut dropped = 0;
    let mut pending: Vec<Event> = events.into_iter().rev().collect();
    while let Some(event) = pending.pop() {
        let Err(error) = log.check_size(&event) else {
            fitted.push(event);
            continue;
        };
        match split_in_two(&event, id_key) {
            Some((first, second)) => {
                pending.push(second);
                pending.push(first);
            }
            None => {
                tracing::warn!(agent = %event.agent, kind = event.kind_name(), %error, "a consolidation verdict does not fit the log; left out");
                metrics::counter!(
                    "mneme_consolidation_verdicts_dropped_total",
                    "swarm" => event.swarm.clone(),
                    "kind" => event.kind_name()
                )
                .increment(1);
                dropped += 1;
            }
        }
    }
    (fitted, dropped)
}

/// An event holding several verdicts as two events of half of them each,
/// with ids derived from the whole's; `None` for a single verdict.
fn split_in_two(event: &Event, id_key: &IdKey) -> Option<(Event, Event)> {
    let (first, second) = match &event.kind {
        EventKind::MemoriesLinked(linked) if linked.links.len() > 1 => {
            let (first, second) = linked.links.split_at(linked.links.len() / 2);
            (
                EventKind::MemoriesLinked(MemoriesLinked { links: first.to_vec() }),
                EventKind::MemoriesLinked(MemoriesLinked { links: second.to_vec() }),
            )
        }
        EventKind::MemoriesRetrieved(retrieved) if retrieved.counts.len() > 1 => {
            let (first, second) = retrieved.counts.split_at(retrieved.counts.len() / 2);
            (
                EventKind::MemoriesRetrieved(MemoriesRetrieved { counts: first.to_vec() }),
                EventKind::MemoriesRetrieved(MemoriesRetrieved { counts: second.to_vec() }),
            )
        }
        EventKind::MemoriesMerged(merged) if merged.merged.len() > 1 => {
            let (first, second) = merged.merged.split_at(merged.merged.len() / 2);
            let part = |merged_part: &[String]| {
                EventKind::MemoriesMerged(MemoriesMerged { merged: merged_part.to_vec(), ..merged.clone() })
            };
            (part(first), part(second))
        }
        _ => return None,
    };
    let part = |index: u8, kind: EventKind| Event {
        id: id_key.derive(&event.agent, event.kind_name(), &format!("{}\npart {index}", event.id)),
        kind,
        ..event.clone()
    };
    Some((part(0, first), part(1, second)))
}

/// One scanned agent's events on the log, then applied by its memory.
async fn write_agent(
    scanned: ScannedAgent,
    log: &dyn EventLog,
    lease: Option<&Lease>,
) -> Result<AgentConsolidation, ActorsError> {
    let ScannedAgent { handle, items, plan, counts, events, verdict_events, verdicts_dropped, scan_seconds } = scanned;
    let mut last_written: Option<Seq> = None;
    let mut events_written = 0;
    for chunk in events.chunks(EVENTS_PER_APPEND) {
        let appended = match lease {
            Some(lease) => log.append_fenced(lease, chunk).await,
            None => log.append(chunk).await,
        };
        match appended {
            Ok(appended) => {
                events_written += appended.len();
                last_written = appended.iter().map(|appended| appended.seq).max().max(last_written);
            }
            Err(error) => {
                // The counts go first: until they are on the log, they go
                // back to the memory for the next run.
                if events_written == 0 && !counts.is_empty() {
                    handle.addr.do_send(ReturnRetrievals(counts));
                }
                return Err(error.into());
            }
        }
    }
    if let Some(seq) = last_written {
        handle.caught_up(log, seq, APPLY_TIMEOUT).await?;
    }
    if events_written > 0 {
        count_outcomes(log.swarm(), &plan);
    }
    Ok(AgentConsolidation {
        agent: handle.agent.clone(),
        items,
        plan,
        retrievals_recorded: counts.len(),
        events_written,
        verdict_events,
        verdicts_dropped,
        scan_seconds,
    })
}

fn count_outcomes(swarm: &str, plan: &ConsolidationPlan) {
    for (outcome, count) in [
        ("contradiction_detected", plan.contradictions.len()),
        ("memories_merged", plan.merges.len()),
        ("memory_forgotten", plan.forgotten_count()),
        ("memory_decayed", plan.decayed_count()),
        ("related_to", plan.links.len()),
    ] {
        metrics::counter!("mneme_consolidation_outcomes_total", "swarm" => swarm.to_string(), "outcome" => outcome)
            .increment(count as u64);
    }
}

/// The retrieval counts as `memories_retrieved` events of the agent. Ids
/// are fresh: counts are new traffic each time.
/// On a replica that does not hold the writer lease: takes each memory's
/// retrieval counts and appends them (`memories_retrieved`, ids of their
/// own: each replica's counts are its own queries), giving back what could
/// not be appended.
async fn record_retrievals(
    supervisor: Addr<Supervisor>,
    log: Arc<dyn EventLog>,
    swarm: String,
    now: Timestamp,
) -> Result<(), ActorsError> {
    let agents = supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
    for agent in agents {
        let handle = supervisor.send(GetAgent(agent.clone())).await.map_err(|_| stopped("supervisor"))??;
        let counts = handle.addr.send(TakeRetrievals).await.map_err(|_| stopped(&agent))?;
        if counts.is_empty() {
            continue;
        }
        let events = retrieval_events(&swarm, &agent, &counts, now);
        if let Err(error) = log.append(&events).await {
            ReadAgent::give_back(&handle, counts);
            return Err(error.into());
        }
    }
    Ok(())
}

fn retrieval_events(swarm: &str, agent: &str, counts: &[(String, u32)], now: Timestamp) -> Vec<Event> {
    counts
        .chunks(COUNTS_PER_EVENT)
        .map(|chunk| {
            let counts = chunk
                .iter()
                .map(|(item_id, count)| RetrievalCount { item_id: item_id.clone(), count: *count })
                .collect();
            Event::new(swarm, agent, EventKind::MemoriesRetrieved(MemoriesRetrieved { counts })).with_ts(now)
        })
        .collect()
}

impl Actor for Consolidator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        if let Some(interval) = self.schedule.interval {
            self.run_after(ctx, interval);
        }
        if let Some(every_events) = self.schedule.every_events {
            self.check_event_count(ctx, every_events);
        }
    }
}

/// Run now. `agent` limits the run to one agent.
#[derive(Message, Debug, Clone)]
#[rtype(result = "Result<ConsolidationReport, ActorsError>")]
pub struct ConsolidationRequest {
    pub dry_run: bool,
    pub agent: Option<String>,
}

impl Handler<ConsolidationRequest> for Consolidator {
    type Result = ResponseActFuture<Self, Result<ConsolidationReport, ActorsError>>;

    fn handle(&mut self, request: ConsolidationRequest, _: &mut Self::Context) -> Self::Result {
        let running = self.running.clone();
        let run = self.run(request);
        Box::pin(
            async move {
                // An on-demand run waits for a scheduled one to finish rather
                // than scanning a memory that is about to change.
                let _guard = running.lock().await;
                run.await
            }
            .into_actor(self)
            .map(|result, consolidator, _| {
                if let Ok(report) = &result {
                    consolidator.finished(report);
                }
                result
            }),
        )
    }
}

/// What a run did (or, dry, would do).
#[derive(Debug, Clone)]
pub struct ConsolidationReport {
    pub swarm: String,
    pub dry_run: bool,
    pub agents: Vec<AgentConsolidation>,
    pub elapsed: Duration,
    pub log_seq_at_start: Seq,
    /// The log's last seq when the run ended, its own events included.
    pub log_seq_at_end: Seq,
    /// The swarm's shared items, compared once for every agent of the run.
    pub shared: SharedScanSummary,
}

/// What a run compared once for all its agents ([`SharedScan`]).
#[derive(Debug, Clone, Default)]
pub struct SharedScanSummary {
    /// Shared items of a dedup kind live in at least one memory.
    pub items: usize,
    /// Near-duplicate pairs confirmed among them.
    pub duplicate_pairs: usize,
    pub shared_seconds: f64,
}

impl ConsolidationReport {
    pub fn events_written(&self) -> usize {
        self.agents.iter().map(|agent| agent.events_written).sum()
    }

    /// Events holding verdicts, written or (on a dry run) to be written.
    pub fn verdict_events(&self) -> usize {
        self.agents.iter().map(|agent| agent.verdict_events).sum()
    }
}

/// One agent's part of a run.
#[derive(Debug, Clone)]
pub struct AgentConsolidation {
    pub agent: String,
    /// Items in the memory when it was read.
    pub items: usize,
    pub plan: ConsolidationPlan,
    /// Items whose retrieval counts were recorded.
    pub retrievals_recorded: usize,
    pub events_written: usize,
    /// Events holding the verdicts: written by a real run (with the
    /// retrieval counts' events, which make up the rest of
    /// `events_written`), counted the same way by a dry run.
    pub verdict_events: usize,
    /// Verdicts left out because even alone their event was larger than the
    /// log takes (see [`fit_to_log`]).
    pub verdicts_dropped: usize,
    pub scan_seconds: f64,
}
