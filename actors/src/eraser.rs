//! The eraser: one per swarm. It follows the log, and for every
//! `memory_purged` tombstone waits until the purging memory has applied
//! it, asks that memory what it erased, and records it beside the log
//! (`EventLog::record_erasure`) and in the swarm's [`ErasureRegistry`],
//! which every reader of raw log entries consults (see
//! `mneme_events::erasure`). What was derived from an erased event is
//! erased too: for an erased `handoff_sent`, the eraser appends a
//! tombstone to the recipient's memory naming the `handoff_received` that
//! delivered it (its id derived, keyed, from the purge and the handoff, so
//! a retry after a crash appends it once), and erases that as well before
//! it moves on.
//!
//! Its position on the log is durable (`eraser`), and recording a purge
//! again changes nothing, so a crash between the two repeats work and loses
//! none. [`ErasureRegistry::wait_through`] lets a purge request answer only
//! once what it erased is recorded.
//!
//! With replicas, what the eraser writes — the record beside the log, the
//! follow-up tombstones, its position — is written by the process that
//! holds the swarm's writer lease (the tombstones fenced). Every other
//! process still follows the log, asks its own memories what each purge
//! erased (the same answer everywhere: memories are deterministic) and
//! keeps its registry from that, so its readers hide what was erased; a
//! follow-up tombstone reaches it as a purge of its own, later in the log.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard};
use std::time::Duration;

use actix::prelude::*;
use mneme_events::{
    ErasedEvent, ErasureRecord, Erasures, Event, EventId, EventKind, IdKey, MemoryPurged, PurgeRef, SystemClock,
};
use mneme_nats::{EventLog, LogEntry, Seq};
use tokio::sync::watch;

use crate::error::ActorsError;
use crate::follow::{follow_from, follow_from_position};
use crate::lease_keeper::LeaseGate;
use crate::memory_actor::TakeSnapshot;
use crate::memory_actor::queries::{Ask, ErasedBy};
use crate::supervisor::{AgentHandle, AgentsWritten, GetAgent, Supervisor};

/// The eraser's durable position on the log, stored after every purge
/// (see `follow.rs`).
const CONSUMER: &str = "eraser";
/// How long the eraser waits for a memory to apply a tombstone.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(60);

/// What the swarm's purges erased, as recorded beside its log, and how far
/// the eraser has read the log.
pub struct ErasureRegistry {
    erasures: RwLock<Erasures>,
    /// Every tombstone at or below this seq is recorded.
    through: watch::Sender<Seq>,
}

impl ErasureRegistry {
    /// A registry of what `log` has recorded.
    pub async fn load(log: &dyn EventLog) -> Result<Arc<ErasureRegistry>, ActorsError> {
        let records = log.erasures().await?;
        Ok(Arc::new(ErasureRegistry { erasures: RwLock::new(Erasures::of(&records)), through: watch::Sender::new(0) }))
    }

    /// What every reader of the log is shown through.
    pub fn erasures(&self) -> RwLockReadGuard<'_, Erasures> {
        self.erasures.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn record(&self, record: &ErasureRecord) {
        self.erasures.write().unwrap_or_else(PoisonError::into_inner).record(record);
    }

    /// Every tombstone up to `seq` is recorded; never moves back (a
    /// resubscription reads again from the stored position).
    fn advance(&self, seq: Seq) {
        self.through.send_if_modified(|through| {
            let ahead = seq > *through;
            *through = (*through).max(seq);
            ahead
        });
    }

    /// Waits until every tombstone up to `seq` is recorded.
    pub async fn wait_through(&self, seq: Seq, timeout: Duration) -> Result<(), ActorsError> {
        let mut through = self.through.subscribe();
        match tokio::time::timeout(timeout, through.wait_for(|through| *through >= seq)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(ActorsError::ActorStopped { agent: "eraser".to_string() }),
            Err(_) => Err(ActorsError::CatchUpTimeout {
                agent: "eraser".to_string(),
                seq,
                waited_ms: timeout.as_millis() as u64,
            }),
        }
    }
}

pub struct Eraser {
    erasing: Erasing,
    /// With replicas: the swarm's writer lease.
    gate: Option<LeaseGate>,
}

impl Eraser {
    pub fn new(
        swarm: &str,
        log: Arc<dyn EventLog>,
        supervisor: Addr<Supervisor>,
        registry: Arc<ErasureRegistry>,
        admit_unknown_agents: bool,
        id_key: IdKey,
    ) -> Eraser {
        Eraser {
            erasing: Erasing {
                swarm: swarm.to_string(),
                log,
                supervisor,
                registry,
                admit_unknown_agents,
                id_key,
                gate: None,
                recorded_here: Arc::default(),
            },
            gate: None,
        }
    }

    /// Writes only while this process holds `gate`'s lease; follows the log
    /// for its registry meanwhile.
    pub fn with_lease(mut self, gate: LeaseGate) -> Eraser {
        self.gate = Some(gate);
        self
    }
}

impl Actor for Eraser {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        let erasing = self.erasing.clone();
        let Some(mut gate) = self.gate.clone() else {
            ctx.spawn(async move { erasing.follow().await }.into_actor(self));
            return;
        };
        ctx.spawn(
            async move {
                loop {
                    match gate.held() {
                        Some(lease) => {
                            let holding = Erasing { gate: Some(gate.clone()), ..erasing.clone() };
                            tokio::select! {
                                () = holding.follow() => {}
                                () = gate.until_lost(&lease) => {}
                            }
                        }
                        None => {
                            tokio::select! {
                                () = erasing.follow_unwritten() => {}
                                held = gate.until_held() => if held.is_none() { return },
                            }
                        }
                    }
                }
            }
            .into_actor(self),
        );
    }
}

/// Stops the eraser (its task with it), as at shutdown.
#[derive(Message)]
#[rtype(result = "()")]
pub struct StopErasing;

impl Handler<StopErasing> for Eraser {
    type Result = ();

    fn handle(&mut self, _: StopErasing, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// What the eraser's task needs, apart from the actor.
#[derive(Clone)]
struct Erasing {
    swarm: String,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    registry: Arc<ErasureRegistry>,
    /// As in `swarm.toml`: a purge by an agent not started yet waits for
    /// its memory.
    admit_unknown_agents: bool,
    id_key: IdKey,
    /// The writer lease, while this process holds it and writes as the
    /// swarm's writer; `None` for the only process on the log, and while
    /// following without the lease. Read at each append: a renewal may
    /// have set the fence again.
    gate: Option<LeaseGate>,
    /// Purges this process put in its registry without writing their
    /// record (it did not hold the lease): taken again in full once it
    /// does, in case their holder died before writing it.
    recorded_here: Arc<std::sync::Mutex<std::collections::BTreeSet<Seq>>>,
}

impl Erasing {
    /// Follows the log from the stored position until the process ends;
    /// after a failure, from the stored position again.
    async fn follow(&self) {
        follow_from_position(self.log.as_ref(), &SystemClock, CONSUMER, "eraser", |entry| async move {
            let seq = entry.seq;
            let was_purge = self.take(entry).await?;
            self.registry.advance(seq);
            Ok(was_purge)
        })
        .await
    }

    /// Without the lease: follows the log from the writer's stored position
    /// (what lies before it is in the records the registry was loaded
    /// from), keeping the registry and writing nothing.
    async fn follow_unwritten(&self) {
        follow_from(self.log.as_ref(), &SystemClock, CONSUMER, "eraser (not the writer)", |entry| async move {
            let seq = entry.seq;
            self.take_unwritten(entry).await?;
            self.registry.advance(seq);
            Ok(false)
        })
        .await
    }

    /// [`Erasing::take`] without writing: what the purge erased goes in the
    /// registry only.
    async fn take_unwritten(&self, entry: LogEntry) -> Result<(), ActorsError> {
        let Ok(event) = entry.record else { return Ok(()) };
        let EventKind::MemoryPurged(_) = &event.kind else { return Ok(()) };
        if self.registry.erasures().has_purge(entry.seq) {
            return Ok(());
        }
        let Some((record, _)) = self.erased_by(entry.seq, &event).await? else { return Ok(()) };
        self.registry.record(&record);
        self.recorded_here.lock().unwrap_or_else(PoisonError::into_inner).insert(entry.seq);
        Ok(())
    }

    /// Records the entry's erasure if it is a purge; answers whether it was
    /// one.
    async fn take(&self, entry: LogEntry) -> Result<bool, ActorsError> {
        let Ok(event) = entry.record else { return Ok(false) };
        let EventKind::MemoryPurged(_) = &event.kind else { return Ok(false) };
        self.erase(entry.seq, &event).await?;
        Ok(true)
    }

    /// Records what the tombstone at `seq` erased, and erases what was
    /// derived from it.
    async fn erase(&self, seq: Seq, tombstone: &Event) -> Result<(), ActorsError> {
        let recorded_here = self.recorded_here.lock().unwrap_or_else(PoisonError::into_inner).contains(&seq);
        if self.registry.erasures().has_purge(seq) && !recorded_here {
            return Ok(());
        }
        let Some((record, events)) = self.erased_by(seq, tombstone).await? else { return Ok(()) };
        // What was derived from an erased handoff goes first: once the
        // purge is recorded, a crash must not leave the delivery behind.
        for (_, event) in &events {
            if let EventKind::HandoffSent(sent) = &event.kind {
                self.erase_delivery(tombstone, event, sent.to.trim()).await?;
            }
        }
        self.log.record_erasure(&record).await?;
        self.registry.record(&record);
        self.recorded_here.lock().unwrap_or_else(PoisonError::into_inner).remove(&seq);
        tracing::info!(agent = %tombstone.agent, seq, erased = record.events.len(), "purge recorded");
        metrics::counter!("mneme_events_erased_total", "swarm" => self.log.swarm().to_string())
            .increment(record.events.len() as u64);
        Ok(())
    }

    /// What the tombstone at `seq` erased, as its memory answers once it
    /// applied it, and the erased events; `None` when the swarm keeps no
    /// memory of its agent.
    async fn erased_by(
        &self,
        seq: Seq,
        tombstone: &Event,
    ) -> Result<Option<(ErasureRecord, Vec<(Seq, Event)>)>, ActorsError> {
        let handle = match self.supervisor.send(GetAgent(tombstone.agent.clone())).await {
            Ok(Ok(handle)) => handle,
            Ok(Err(error @ ActorsError::UnknownAgent { .. })) if self.admit_unknown_agents => {
                // On the log, so its memory is about to start: tried again.
                self.supervisor.do_send(AgentsWritten(vec![tombstone.agent.clone()]));
                return Err(error);
            }
            Ok(Err(ActorsError::UnknownAgent { .. })) => {
                // No memory of that agent is kept: the tombstone erased
                // nothing.
                tracing::warn!(agent = %tombstone.agent, seq, "purge of an agent this swarm keeps no memory of");
                return Ok(None);
            }
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ActorsError::ActorStopped { agent: "supervisor".to_string() }),
        };
        handle.caught_up(self.log.as_ref(), seq, CATCH_UP_TIMEOUT).await?;
        let erased = match handle.addr.send(Ask(ErasedBy(seq))).await {
            Ok(Ok(erased)) => erased,
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err(ActorsError::ActorStopped { agent: handle.agent.clone() }),
        };
        let entries = self.log.read_seqs(&erased.seqs).await?;
        let events: Vec<(Seq, Event)> =
            entries.into_iter().filter_map(|entry| entry.record.ok().map(|event| (entry.seq, event))).collect();
        let record = ErasureRecord {
            purge: PurgeRef { agent: tombstone.agent.clone(), seq, event_id: tombstone.id },
            events: events.iter().map(|(seq, event)| ErasedEvent::of(*seq, event)).collect(),
            phases: erased.phases.iter().filter_map(|phase_id| phase_id.parse::<EventId>().ok()).collect(),
        };
        Ok(Some((record, events)))
    }

    /// Erases the `handoff_received` that delivered an erased handoff from
    /// its recipient's memory, with a tombstone of its own.
    async fn erase_delivery(&self, tombstone: &Event, sent: &Event, recipient: &str) -> Result<(), ActorsError> {
        let received_id = self.id_key.derive(recipient, "handoff_received", &sent.id.to_string());
        let handle = match self.handle_of(recipient).await {
            Ok(handle) => handle,
            // Never delivered: nothing derived to erase.
            Err(ActorsError::UnknownAgent { .. }) => return Ok(()),
            Err(error) => return Err(error),
        };
        let id = self.id_key.derive(recipient, "memory_purged", &format!("{}:{}", tombstone.id, sent.id));
        let purged = MemoryPurged {
            item_ids: vec![received_id.to_string()],
            before: None,
            of_agent: None,
            reason: Some(format!("the handoff {} it delivered was erased by purge {}", sent.id, tombstone.id)),
        };
        let follow_up = Event::new(&self.swarm, recipient, EventKind::MemoryPurged(purged))
            .with_id(id)
            .with_ts(tombstone.ts)
            .caused_by(tombstone.id);
        let appended = match &self.gate {
            Some(gate) => self.log.append_fenced(&gate.require(&self.swarm)?, std::slice::from_ref(&follow_up)).await?,
            None => self.log.append(std::slice::from_ref(&follow_up)).await?,
        };
        let seq = appended[0].seq;
        Box::pin(self.erase(seq, &follow_up)).await?;
        // The snapshot on disk still holds the package until the next one.
        let _ = handle.addr.send(TakeSnapshot).await;
        Ok(())
    }

    async fn handle_of(&self, agent: &str) -> Result<AgentHandle, ActorsError> {
        self.supervisor
            .send(GetAgent(agent.to_string()))
            .await
            .map_err(|_| ActorsError::ActorStopped { agent: "supervisor".to_string() })?
    }
}
