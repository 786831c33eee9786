//! The consolidator: one per swarm. On a schedule, after every N events, or
//! on demand, it records each agent's retrieval counts as an event, reads a
//! copy of the agent's memory through a query, scans it
//! ([`mneme_projections::consolidation::consolidate`]) on a blocking thread
//! — off the arbiters that apply events and answer queries — and appends
//! its verdicts to the log. Memory changes only when the memory actor
//! applies those events, like any others; a replay applies the recorded
//! verdicts and never scans.
//!
//! A dry run scans and reports, and writes nothing (not even the retrieval
//! counts, which stay with the memory actors).

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::prelude::*;
use mneme_events::{
    CURRENT_SCHEMA_VERSION, Event, EventId, EventKind, MemoriesRetrieved, RetrievalCount, Scope, Timestamp,
};
use mneme_nats::{EventLog, Seq};
use mneme_projections::consolidation::{ConsolidationPlan, ConsolidationPolicy, ConsolidationView, consolidate};

use crate::error::ActorsError;
use crate::memory_actor::{Query, QueryAnswer, ReturnRetrievals, TakeRetrievals};
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
/// How often the event-count trigger looks at the log.
const EVENT_TRIGGER_POLL: Duration = Duration::from_secs(1);

/// The scan a run performs on the copy of a memory: [`consolidate`] in
/// production. A seam so that tests can hold a scan open and show that the
/// agent's queries still answer meanwhile.
pub type Scanner = Arc<dyn Fn(&ConsolidationView, &ConsolidationPolicy) -> ConsolidationPlan + Send + Sync>;

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
    scanner: Scanner,
    /// One run at a time; a scheduled run that finds one going is skipped.
    running: Arc<tokio::sync::Mutex<()>>,
    /// Events after this seq count toward `every_events`: the log's last
    /// seq when the first poll looked, then after each run, so that a run's
    /// own verdicts never trigger the next one.
    events_counted_after: Option<Seq>,
    checking_events: bool,
}

impl Consolidator {
    pub fn new(
        swarm: &str,
        log: Arc<dyn EventLog>,
        supervisor: Addr<Supervisor>,
        policy: ConsolidationPolicy,
        schedule: ConsolidationSchedule,
    ) -> Consolidator {
        Consolidator {
            swarm: swarm.to_string(),
            log,
            supervisor,
            policy,
            schedule,
            scanner: Arc::new(consolidate),
            running: Arc::new(tokio::sync::Mutex::new(())),
            events_counted_after: None,
            checking_events: false,
        }
    }

    /// Scans with `scanner` instead of [`consolidate`].
    pub fn with_scanner(mut self, scanner: Scanner) -> Consolidator {
        self.scanner = scanner;
        self
    }

    fn run_scheduled(&mut self, ctx: &mut Context<Self>, trigger: &'static str) {
        let Ok(guard) = self.running.clone().try_lock_owned() else {
            tracing::debug!(trigger, "consolidation already running; skipped");
            return;
        };
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

    /// The event-count trigger: runs once `every_events` events arrived
    /// after the last run (or after start-up).
    fn check_event_count(&mut self, ctx: &mut Context<Self>, every_events: u64) {
        if self.checking_events {
            return;
        }
        self.checking_events = true;
        let log = self.log.clone();
        ctx.spawn(async move { log.last_seq().await }.into_actor(self).map(move |last_seq, consolidator, ctx| {
            consolidator.checking_events = false;
            let Ok(last_seq) = last_seq else { return };
            let Some(counted_after) = consolidator.events_counted_after else {
                consolidator.events_counted_after = Some(last_seq);
                return;
            };
            if last_seq.saturating_sub(counted_after) >= every_events {
                consolidator.events_counted_after = Some(last_seq);
                consolidator.run_scheduled(ctx, "events");
            }
        }));
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
        async move {
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
            };
            for agent in agents {
                let handle = supervisor.send(GetAgent(agent.clone())).await.map_err(|_| stopped("supervisor"))??;
                let outcome =
                    consolidate_agent(&swarm, &handle, log.as_ref(), &policy, &scanner, request.dry_run).await?;
                report.agents.push(outcome);
            }
            report.elapsed = started.elapsed();
            report.log_seq_at_end = log.last_seq().await?;
            metrics::counter!("mneme_consolidation_runs_total", "dry_run" => request.dry_run.to_string()).increment(1);
            metrics::histogram!("mneme_consolidation_seconds").record(report.elapsed.as_secs_f64());
            Ok(report)
        }
    }
}

fn stopped(agent: &str) -> ActorsError {
    ActorsError::ActorStopped { agent: agent.to_string() }
}

/// One agent: record retrievals, read, scan, write, wait until applied.
async fn consolidate_agent(
    swarm: &str,
    handle: &AgentHandle,
    log: &dyn EventLog,
    policy: &ConsolidationPolicy,
    scanner: &Scanner,
    dry_run: bool,
) -> Result<AgentConsolidation, ActorsError> {
    let agent = handle.agent.clone();
    let mut retrievals_recorded = 0;
    let mut last_written: Option<Seq> = None;
    if !dry_run {
        let counts = handle.addr.send(TakeRetrievals).await.map_err(|_| stopped(&agent))?;
        retrievals_recorded = counts.len();
        let events = retrieval_events(swarm, &agent, &counts);
        if !events.is_empty() {
            let appended = match log.append(&events).await {
                Ok(appended) => appended,
                Err(error) => {
                    // Not recorded: the counts go back, for the next run.
                    handle.addr.do_send(ReturnRetrievals(counts));
                    return Err(error.into());
                }
            };
            last_written = appended.iter().map(|appended| appended.seq).max();
            if let Some(seq) = last_written {
                handle.caught_up(log, seq, APPLY_TIMEOUT).await?;
            }
        }
    }
    let view = match handle.addr.send(Query::ConsolidationView).await.map_err(|_| stopped(&agent))?? {
        QueryAnswer::ConsolidationView(view) => view,
        _ => unreachable!("a ConsolidationView query answers with a view"),
    };
    let items = view.items.len();
    let scan_started = Instant::now();
    let scan_policy = policy.clone();
    let scanner = scanner.clone();
    let plan = tokio::task::spawn_blocking(move || scanner(&view, &scan_policy))
        .await
        .map_err(|error| ActorsError::Consolidation { agent: agent.clone(), message: error.to_string() })?;
    let scan_seconds = scan_started.elapsed().as_secs_f64();
    metrics::histogram!("mneme_consolidation_scan_seconds").record(scan_seconds);
    let mut events_written = 0;
    if !dry_run && !plan.is_empty() {
        let events = plan.events(now());
        for chunk in events.chunks(EVENTS_PER_APPEND) {
            let appended = log.append(chunk).await?;
            events_written += appended.len();
            last_written = appended.iter().map(|appended| appended.seq).max().max(last_written);
        }
        if let Some(seq) = last_written {
            handle.caught_up(log, seq, APPLY_TIMEOUT).await?;
        }
        count_outcomes(&plan);
    }
    Ok(AgentConsolidation { agent, items, plan, retrievals_recorded, events_written, scan_seconds })
}

fn count_outcomes(plan: &ConsolidationPlan) {
    for (outcome, count) in [
        ("contradiction_detected", plan.contradictions.len()),
        ("memories_merged", plan.merges.len()),
        ("memory_forgotten", plan.forgotten_count()),
        ("memory_decayed", plan.decayed_count()),
        ("related_to", plan.links.len()),
    ] {
        metrics::counter!("mneme_consolidation_outcomes_total", "outcome" => outcome).increment(count as u64);
    }
}

/// The retrieval counts as `memories_retrieved` events of the agent. Ids
/// are fresh: counts are new traffic each time.
fn retrieval_events(swarm: &str, agent: &str, counts: &[(String, u32)]) -> Vec<Event> {
    counts
        .chunks(COUNTS_PER_EVENT)
        .map(|chunk| Event {
            id: EventId::new(),
            swarm: swarm.to_string(),
            agent: agent.to_string(),
            ts: now(),
            correlation_id: None,
            causation_id: None,
            scope: Scope::Private,
            importance: None,
            schema_version: CURRENT_SCHEMA_VERSION,
            kind: EventKind::MemoriesRetrieved(MemoriesRetrieved {
                counts: chunk
                    .iter()
                    .map(|(item_id, count)| RetrievalCount { item_id: item_id.clone(), count: *count })
                    .collect(),
            }),
        })
        .collect()
}

/// Event time of verdicts: when the run decided.
fn now() -> Timestamp {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    Timestamp::from_unix_nanos(i64::try_from(nanos).unwrap_or(i64::MAX))
}

impl Actor for Consolidator {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.set_mailbox_capacity(MAILBOX_CAPACITY);
        if let Some(interval) = self.schedule.interval {
            ctx.run_interval(interval, |consolidator, ctx| consolidator.run_scheduled(ctx, "interval"));
        }
        if let Some(every_events) = self.schedule.every_events {
            self.check_event_count(ctx, every_events);
            ctx.run_interval(EVENT_TRIGGER_POLL, move |consolidator, ctx| {
                consolidator.check_event_count(ctx, every_events)
            });
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
}

impl ConsolidationReport {
    pub fn events_written(&self) -> usize {
        self.agents.iter().map(|agent| agent.events_written).sum()
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
    pub scan_seconds: f64,
}
