//! The handoff router: one per swarm. It follows the log, and for every
//! `handoff_sent` from A to B it asks A's memory for a context bundle of the
//! task (only what B may see), appends `handoff_received` with the package
//! to B's log, and on NATS publishes the package to
//! `mneme.<swarm>.<B>.handoff`.
//!
//! Delivery is durable: the package is an event on the log, so B's memory
//! and every replay have it; the router's position on the log is stored,
//! so a handoff sent while it was down is delivered when it is back; and
//! after a restart every handoff not yet acknowledged is published again.
//! Subscribers deduplicate by `handoff_id`. The id of `handoff_received` is
//! derived from the handoff's, so a delivery repeated after a crash is
//! stored once.
//!
//! A delivery or redelivery that failed is tried again [`RETRY_AFTER`]
//! later on the router's [`ActorClock`]: a test that gives it a
//! `TestClock` makes it try again by advancing the clock.

use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use mneme_events::{Event, EventKind, HandoffPackage, HandoffReceived, HandoffSent, IdKey, SystemClock};
use mneme_nats::{Broker, EventLog, LogEntry, LogError, Seq};
use mneme_projections::HandoffRecord;

use crate::clock::ActorClock;
use crate::error::ActorsError;
use crate::follow::follow_from_position;
use crate::lease_keeper::LeaseGate;
use crate::memory_actor::queries::{Ask, Handoffs, SentBundle};
use crate::supervisor::{AgentHandle, AgentsWritten, GetAgent, ListAgents, Supervisor};

/// The router's durable position on the log, stored after every handoff
/// (see `follow.rs`).
const CONSUMER: &str = "handoff-router";
/// The pause before a failed redelivery is tried again (a failed delivery
/// waits the same, in `follow.rs`).
pub const RETRY_AFTER: Duration = crate::follow::RETRY_AFTER;
/// Redelivery at start-up gives up on an agent after this many attempts.
const REDELIVERY_ROUNDS: usize = 10;
/// How long the router waits for the sender's memory to apply the handoff
/// before it assembles the bundle.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(60);

pub struct HandoffRouter {
    swarm: String,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    publisher: Option<HandoffPublisher>,
    admit_unknown_agents: bool,
    /// Keys the ids of `handoff_received` events.
    id_key: IdKey,
    /// With replicas: the router routes only while this process holds the
    /// swarm's writer lease, and appends fenced.
    gate: Option<LeaseGate>,
    /// What the pauses before a retry sleep on.
    clock: Arc<dyn ActorClock>,
}

impl HandoffRouter {
    /// `publisher`: where and how packages are published on NATS; `None`
    /// on the embedded log, where recipients read them over HTTP.
    /// `admit_unknown_agents`: as in `swarm.toml`; a handoff to an agent not
    /// yet seen on the log is then delivered, and starts its memory.
    pub fn new(
        swarm: &str,
        log: Arc<dyn EventLog>,
        supervisor: Addr<Supervisor>,
        publisher: Option<HandoffPublisher>,
        admit_unknown_agents: bool,
        id_key: IdKey,
    ) -> HandoffRouter {
        HandoffRouter {
            swarm: swarm.to_string(),
            log,
            supervisor,
            publisher,
            admit_unknown_agents,
            id_key,
            gate: None,
            clock: Arc::new(SystemClock),
        }
    }

    /// Pauses before a retry on `clock` instead of the system's.
    pub fn with_clock(mut self, clock: Arc<dyn ActorClock>) -> HandoffRouter {
        self.clock = clock;
        self
    }

    /// Routes only while this process holds `gate`'s lease.
    pub fn with_lease(mut self, gate: LeaseGate) -> HandoffRouter {
        self.gate = Some(gate);
        self
    }

    fn routing(&self) -> Routing {
        Routing {
            swarm: self.swarm.clone(),
            log: self.log.clone(),
            supervisor: self.supervisor.clone(),
            publisher: self.publisher.clone(),
            admit_unknown_agents: self.admit_unknown_agents,
            id_key: self.id_key.clone(),
            gate: None,
            clock: self.clock.clone(),
        }
    }
}

impl Actor for HandoffRouter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let routing = self.routing();
        let Some(mut gate) = self.gate.clone() else {
            ctx.spawn(async move { routing.route_all().await }.into_actor(self));
            return;
        };
        // Each time this process takes the lease, routing goes on from the
        // stored position (where the last holder left it) and every pending
        // handoff is published again; it stops when the lease is lost.
        ctx.spawn(
            async move {
                while let Some(lease) = gate.until_held().await {
                    let holding = Routing { gate: Some(gate.clone()), ..routing.clone() };
                    tokio::select! {
                        () = holding.route_all() => {}
                        () = gate.until_lost(&lease) => {
                            tracing::info!(swarm = %holding.swarm, "the writer lease moved: this process stops routing handoffs");
                        }
                    }
                }
            }
            .into_actor(self),
        );
    }
}

/// Stops the router (its task with it), as at shutdown.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopRouting;

impl Handler<StopRouting> for HandoffRouter {
    type Result = ();

    fn handle(&mut self, _: StopRouting, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// Where a delivered handoff is published on NATS, and how its message is
/// written. What a recipient reads is a wire type, built by the service
/// (`src/service/handoffs.rs`), which hands the router its encoder: the
/// actors build no answer.
#[derive(Clone)]
pub struct HandoffPublisher {
    pub broker: Arc<dyn Broker>,
    /// The message for `recipient` of `swarm` that delivers `record`.
    pub encode: fn(swarm: &str, recipient: &str, record: &HandoffRecord) -> Vec<u8>,
}

impl HandoffPublisher {
    async fn publish(&self, swarm: &str, recipient: &str, record: &HandoffRecord) -> Result<(), ActorsError> {
        let body = (self.encode)(swarm, recipient, record);
        Ok(self.broker.publish_handoff(recipient, record.handoff_id, body).await?)
    }
}

/// What the router's task needs, apart from the actor.
#[derive(Clone)]
struct Routing {
    swarm: String,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    publisher: Option<HandoffPublisher>,
    admit_unknown_agents: bool,
    id_key: IdKey,
    /// The writer lease the deliveries are appended under, while this
    /// process holds it; `None` for the only process on the log. Read at
    /// each append: a renewal may have set the fence again.
    gate: Option<LeaseGate>,
    clock: Arc<dyn ActorClock>,
}

impl Routing {
    /// Follows the log and, side by side (new handoffs need not wait while
    /// every memory catches up for the redelivery of old ones), publishes
    /// again what is pending.
    async fn route_all(&self) {
        futures::join!(self.follow(), self.redeliver_pending());
    }

    /// Publishes again every handoff received and not yet acknowledged: the
    /// subscriber may have missed it while this process was down. A memory
    /// still catching up, or a publish that fails, is tried again, up to
    /// `REDELIVERY_ROUNDS` times.
    async fn redeliver_pending(&self) {
        let Some(publisher) = &self.publisher else { return };
        let mut remaining = match self.supervisor.send(ListAgents).await {
            Ok(agents) => agents,
            Err(_) => return,
        };
        for round in 1..=REDELIVERY_ROUNDS {
            let mut failed = Vec::new();
            for agent in remaining {
                if let Err(error) = self.redeliver_pending_of(publisher, &agent).await {
                    tracing::warn!(%agent, %error, round, "cannot redeliver pending handoffs yet");
                    failed.push(agent);
                }
            }
            if failed.is_empty() {
                return;
            }
            remaining = failed;
            self.clock.sleep(RETRY_AFTER).await;
        }
        tracing::error!(agents = ?remaining, "pending handoffs of these agents were not redelivered");
    }

    async fn redeliver_pending_of(&self, publisher: &HandoffPublisher, agent: &str) -> Result<(), ActorsError> {
        let handle = self.handle_of(agent).await?;
        let log_end = self.log.last_event_seq().await?;
        handle.caught_up(self.log.as_ref(), log_end, CATCH_UP_TIMEOUT).await?;
        let records = match handle.addr.send(Ask(Handoffs)).await {
            Ok(Ok(records)) => records,
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ActorsError::ActorStopped { agent: agent.to_string() }),
        };
        for record in records.iter().filter(|record| record.is_pending()) {
            publisher.publish(&self.swarm, agent, record).await?;
            tracing::info!(%agent, handoff_id = %record.handoff_id, "pending handoff redelivered");
        }
        Ok(())
    }

    /// Follows the log from the stored position until the process ends;
    /// after a failure, from the stored position again.
    async fn follow(&self) {
        follow_from_position(self.log.as_ref(), self.clock.as_ref(), CONSUMER, "handoff router", |entry| async move {
            let seq = entry.seq;
            match self.route(entry).await {
                Err(error) if is_permanent(&error) => {
                    // Retrying would fail the same way and hold up every
                    // later handoff: give this one up, loudly.
                    tracing::error!(seq, %error, "handoff cannot be delivered; skipped");
                    metrics::counter!("mneme_handoffs_undeliverable_total", "swarm" => self.swarm.clone()).increment(1);
                    Ok(true)
                }
                routed => routed,
            }
        })
        .await
    }

    /// Delivers the entry if it is a handoff; answers whether it was one.
    async fn route(&self, entry: LogEntry) -> Result<bool, ActorsError> {
        let Ok(event) = entry.record else { return Ok(false) };
        let EventKind::HandoffSent(handoff) = &event.kind else { return Ok(false) };
        self.deliver(entry.seq, &event, handoff).await?;
        Ok(true)
    }

    async fn deliver(&self, sent_seq: Seq, sent: &Event, handoff: &HandoffSent) -> Result<(), ActorsError> {
        let recipient_name = handoff.to.trim();
        match self.supervisor.send(GetAgent(recipient_name.to_string())).await {
            Ok(Ok(_)) => {}
            // Not on the log yet, as an agent just spawned to take the
            // task: its `handoff_received` makes it known.
            Ok(Err(ActorsError::UnknownAgent { .. })) if self.admit_unknown_agents => {}
            Ok(Err(ActorsError::UnknownAgent { .. })) => {
                tracing::warn!(to = recipient_name, from = %sent.agent, "handoff to an agent this swarm does not admit; not delivered");
                metrics::counter!("mneme_handoffs_undeliverable_total", "swarm" => self.swarm.clone()).increment(1);
                return Ok(());
            }
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ActorsError::ActorStopped { agent: "supervisor".to_string() }),
        }
        // The bundle was assembled when the sender's memory applied the
        // handoff, from what it knew then: wait for that, then fetch it.
        let sender = self.handle_of(&sent.agent).await?;
        sender.caught_up(self.log.as_ref(), sent_seq, CATCH_UP_TIMEOUT).await?;
        let bundle = match sender.addr.send(Ask(SentBundle(sent.id))).await {
            Ok(Ok(Some((bundle_seq, bundle)))) if bundle_seq == sent_seq => bundle,
            Ok(Ok(Some((bundle_seq, _)))) => {
                // The same id again (re-published after the log's dedup
                // window, or a conflicting duplicate, dead-lettered): the
                // handoff is the one at `bundle_seq`, delivered from there.
                tracing::info!(seq = sent_seq, first_seq = bundle_seq, handoff_id = %sent.id, "repeated handoff id; not delivered again");
                return Ok(());
            }
            Ok(Ok(None)) => {
                return Err(ActorsError::Handoff {
                    handoff_id: sent.id.to_string(),
                    message: format!("the sender's memory did not apply the handoff at seq {sent_seq} (dead-lettered)"),
                });
            }
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ActorsError::ActorStopped { agent: sent.agent.clone() }),
        };
        let package = HandoffPackage {
            task: handoff.task.clone(),
            summary: handoff.summary.clone(),
            artifacts: handoff.artifacts.clone(),
            decisions: handoff.decisions.clone(),
            constraints: handoff.constraints.clone(),
            sent_seq,
            sent_at: sent.ts,
            bundle,
        };
        let received = received_event(&self.id_key, &self.swarm, recipient_name, sent, package.clone());
        received.validate().map_err(|error| ActorsError::Handoff {
            handoff_id: sent.id.to_string(),
            message: format!("the package is not a valid event: {error}"),
        })?;
        let appended = match &self.gate {
            Some(gate) => self.log.append_fenced(&gate.require(&self.swarm)?, std::slice::from_ref(&received)).await,
            None => self.log.append(std::slice::from_ref(&received)).await,
        };
        let (received_seq, package) = match appended {
            Ok(appended) => (appended[0].seq, package),
            Err(LogError::ConflictingDuplicate { original_seq, .. }) => {
                // Delivered before a crash, with a package that differs now
                // (a purge since took items out of the bundle): the one on
                // the log stands. Anything else under the id is refused.
                match self.earlier_delivery(original_seq, recipient_name, sent.id).await? {
                    Some(delivered) => (original_seq, delivered),
                    None => {
                        return Err(LogError::ConflictingDuplicate { id: received.id, index: 0, original_seq }.into());
                    }
                }
            }
            Err(error) => return Err(error.into()),
        };
        self.supervisor.do_send(AgentsWritten(vec![recipient_name.to_string()]));
        tracing::info!(from = %sent.agent, to = recipient_name, handoff_id = %sent.id, received_seq, "handoff delivered");
        metrics::counter!("mneme_handoffs_delivered_total", "swarm" => self.swarm.clone()).increment(1);
        if let Some(publisher) = &self.publisher {
            let record = HandoffRecord {
                handoff_id: sent.id,
                from: sent.agent.clone(),
                received: mneme_projections::ProvenanceRef { seq: received_seq, event_id: received.id },
                package: Some(package),
                acknowledged: None,
            };
            publisher.publish(&self.swarm, recipient_name, &record).await?;
        }
        Ok(())
    }

    /// The package of the `handoff_received` at `seq`, if that record is the
    /// delivery of this handoff to this recipient.
    async fn earlier_delivery(
        &self,
        seq: Seq,
        recipient: &str,
        handoff_id: mneme_events::EventId,
    ) -> Result<Option<HandoffPackage>, ActorsError> {
        let entries = self.log.read(seq, None, 1).await?;
        let Some(Ok(event)) = entries.into_iter().find(|entry| entry.seq == seq).map(|entry| entry.record) else {
            return Ok(None);
        };
        Ok(match event.kind {
            EventKind::HandoffReceived(received) if event.agent == recipient && received.handoff_id == handoff_id => {
                received.package
            }
            _ => None,
        })
    }

    async fn handle_of(&self, agent: &str) -> Result<AgentHandle, ActorsError> {
        self.supervisor
            .send(GetAgent(agent.to_string()))
            .await
            .map_err(|_| ActorsError::ActorStopped { agent: "supervisor".to_string() })?
    }
}

/// Whether a failed delivery would fail again however often it is tried:
/// a sender the swarm does not admit, a package that is not a valid event
/// or is larger than the log accepts, a `handoff_received` id that the log
/// already holds another record under. Anything else (the log or a memory
/// unavailable, a catch-up timeout) may pass, and is retried.
fn is_permanent(error: &ActorsError) -> bool {
    matches!(
        error,
        ActorsError::UnknownAgent { .. }
            | ActorsError::Handoff { .. }
            | ActorsError::Log(mneme_nats::LogError::EventTooLarge { .. })
            | ActorsError::Log(mneme_nats::LogError::ConflictingDuplicate { .. })
    )
}

/// `handoff_received` for the recipient, caused by the `handoff_sent`. Its
/// id derives (keyed) from the handoff's, so a second delivery is a
/// duplicate and no client can take the id first.
fn received_event(id_key: &IdKey, swarm: &str, recipient: &str, sent: &Event, package: HandoffPackage) -> Event {
    let id = id_key.derive(recipient, "handoff_received", &sent.id.to_string());
    let received = HandoffReceived { from: sent.agent.clone(), handoff_id: sent.id, package: Some(package) };
    // At the handoff's own time: its cause, which a replayed or imported
    // log keeps (the log records when it was appended).
    Event::new(swarm, recipient, EventKind::HandoffReceived(received))
        .with_id(id)
        .with_ts(sent.ts)
        .with_correlation(sent.correlation_id.clone())
        .caused_by(sent.id)
        .with_importance(sent.importance)
}
