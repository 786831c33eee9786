//! `Supervisor`: starts one memory actor per agent, from `swarm.toml` and,
//! when the swarm admits them, for agents first seen on the log, and the
//! swarm's feed, which reads the log once for all of them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use mneme_events::IdKey;
use mneme_index::TextIndex;
use mneme_index::embed::Embedder;
use mneme_nats::{EventLog, Seq};
use mneme_projections::{AgentMemory, MemoryConfig, SharedContent};
use tokio::sync::{mpsc, watch};

use crate::error::ActorsError;
use crate::feed::Join;
use crate::lost_tail::LostTails;
use crate::memory_actor::{CheckpointPolicy, MemoryActor, Started, SummaryLink, TakeSnapshot, restore_or_new};
use crate::phase_compressor::PhaseCompressor;
use crate::phase_summarizer::PhaseSummarizer;
use crate::snapshot_store::SnapshotStore;
use crate::swarm_config::SwarmConfig;

/// How often the log is asked for agents not seen yet.
const DISCOVERY_INTERVAL: Duration = Duration::from_millis(500);

/// A running agent memory: its actor, and how far it has applied the log.
#[derive(Clone)]
pub struct AgentHandle {
    pub agent: String,
    pub addr: Addr<MemoryActor>,
    pub applied_seq: watch::Receiver<Seq>,
}

impl AgentHandle {
    /// Waits until this agent's memory has applied the log up to `min_seq`
    /// ("read your writes"), or up to the log's end when `min_seq` is past
    /// it. A memory follows the whole swarm's log (it holds the other
    /// agents' shared events), so every seq counts.
    pub async fn caught_up(&self, log: &dyn EventLog, min_seq: Seq, timeout: Duration) -> Result<(), ActorsError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut applied_seq = self.applied_seq.clone();
        let target = min_seq.min(log.last_event_seq().await?);
        loop {
            let applied = *applied_seq.borrow_and_update();
            if applied >= target {
                return Ok(());
            }
            match tokio::time::timeout_at(deadline, applied_seq.changed()).await {
                Ok(Ok(())) => {}
                // The sender is gone with the actor: nothing will ever change.
                Ok(Err(_)) => return Err(ActorsError::ActorStopped { agent: self.agent.clone() }),
                Err(_) => {
                    return Err(ActorsError::CatchUpTimeout {
                        agent: self.agent.clone(),
                        seq: min_seq,
                        waited_ms: timeout.as_millis() as u64,
                    });
                }
            }
        }
    }
}

pub struct Supervisor {
    config: SwarmConfig,
    log: Arc<dyn EventLog>,
    store: SnapshotStore,
    /// Worker threads for memory actors; kept here so they live as long as
    /// the supervisor.
    workers: Vec<Arbiter>,
    next_worker: usize,
    agents: BTreeMap<String, AgentHandle>,
    discovering: bool,
    /// The log's last sequence when this process started; see
    /// [`restore_or_new`].
    log_end_at_start: Seq,
    memory_config: MemoryConfig,
    /// Set when a model summarises phases.
    summaries: Option<SummaryLink>,
    /// Hands new memory actors to the swarm's feed.
    feed: mpsc::UnboundedSender<Join>,
    /// The feed's end, until the supervisor starts it.
    feed_joins: Option<mpsc::UnboundedReceiver<Join>>,
    /// Whether what the last process left in the text index and no memory
    /// took over has been swept (see [`TextIndex::sweep_unclaimed`]).
    swept: bool,
    /// Snapshots found past the log's end as memories started.
    lost_tails: LostTails,
}

impl Supervisor {
    /// `log_end_at_start` is `log.last_seq()` read before any event of this
    /// process was appended.
    pub fn new(
        config: SwarmConfig,
        log: Arc<dyn EventLog>,
        store: SnapshotStore,
        log_end_at_start: Seq,
        embedder: Arc<dyn Embedder>,
    ) -> Supervisor {
        let workers = (0..config.memory.worker_threads).map(|_| Arbiter::new()).collect();
        let memory_config = config.memory_config(embedder);
        let (feed, joins) = mpsc::unbounded_channel();
        Supervisor {
            feed,
            feed_joins: Some(joins),
            memory_config,
            config,
            log,
            store,
            workers,
            next_worker: 0,
            agents: BTreeMap::new(),
            discovering: false,
            log_end_at_start,
            summaries: None,
            swept: false,
            lost_tails: LostTails::default(),
        }
    }

    /// The memories apply the deep vectors of `deep` and embed queries by
    /// it (see `[enrichment]`).
    pub fn with_deep_embedder(mut self, deep: Option<Arc<dyn Embedder>>) -> Supervisor {
        self.memory_config = self.memory_config.with_deep_embedder(deep);
        self
    }

    /// What this swarm's memories found of a lost tail as they started
    /// (shared: it fills as they start).
    pub fn lost_tails(&self) -> LostTails {
        self.lost_tails.clone()
    }

    /// Keep the swarm's text index in `index` (on disk, see
    /// [`TextIndex::open`]) instead of in RAM: memories restored from their
    /// snapshots take their documents over instead of indexing them again.
    pub fn with_text_index(mut self, index: Arc<TextIndex>) -> Supervisor {
        let dimensions = self.memory_config.embedder.dimensions();
        let graph = self.memory_config.shared.vector_graph();
        self.memory_config.shared = SharedContent::with_vector_graph(index, dimensions, graph);
        self
    }

    /// Once every memory started so far has restored (its actor answers),
    /// sweeps what the last process left in the text index that none took
    /// over: agents gone from the swarm, shared documents nobody holds.
    fn sweep_after_restores(&mut self, ctx: &mut Context<Self>) {
        if self.swept {
            return;
        }
        self.swept = true;
        let addrs: Vec<Addr<MemoryActor>> = self.agents.values().map(|handle| handle.addr.clone()).collect();
        let index = self.memory_config.shared.text_index().clone();
        ctx.spawn(
            async move {
                for addr in addrs {
                    let _ = addr.send(Started).await;
                }
                if let Err(error) = index.sweep_unclaimed() {
                    tracing::warn!(%error, "cannot sweep the text index");
                }
            }
            .into_actor(self),
        );
    }

    /// Summarise phases that complete while this process runs with a model;
    /// its summaries enter the log as `phase_compressed` events. With
    /// `lease`, only while this process holds it (appended fenced). Must be
    /// called inside a running actix system.
    pub fn with_phase_summaries(
        mut self,
        summarizer: Arc<dyn PhaseSummarizer>,
        max_transcript_tokens: usize,
        id_key: IdKey,
        lease: Option<crate::lease_keeper::LeaseGate>,
    ) -> Supervisor {
        let compressor = PhaseCompressor::new(summarizer, self.log.clone(), id_key).with_lease(lease).start();
        self.summaries = Some(SummaryLink { compressor, live_after_seq: self.log_end_at_start, max_transcript_tokens });
        self
    }

    /// The running memory of `agent`, started if it is not running: a memory
    /// actor that stopped (a handler panicked) is replaced by one restored
    /// from its snapshot and the log. `None` once the workers are stopped
    /// (shutting down): nothing starts any more.
    fn start_agent(&mut self, agent: &str) -> Option<AgentHandle> {
        if let Some(handle) = self.agents.get(agent) {
            if handle.addr.connected() {
                return Some(handle.clone());
            }
            tracing::error!(agent, "memory actor stopped; restarting it");
            self.agents.remove(agent);
            metrics::gauge!("mneme_agents", "swarm" => self.config.swarm.name.clone()).decrement(1.0);
        }
        if self.workers.is_empty() {
            // A request or a discovery that arrived while the server stops.
            return None;
        }
        let (applied_sender, applied_seq) = watch::channel(0);
        let applied_sender = Arc::new(applied_sender);
        let applied_for_feed = applied_sender.clone();
        let worker = self.workers[self.next_worker % self.workers.len()].handle();
        self.next_worker += 1;
        let store = self.store.clone();
        let swarm = self.config.swarm.name.clone();
        let agent_name = agent.to_string();
        let memory_config = mneme_projections::MemoryConfig {
            vector_graphs: Some(store.vector_graphs_dir(&swarm)),
            ..self.memory_config.clone()
        };
        let log_end = self.log_end_at_start;
        let summaries = self.summaries.clone();
        let lost_tails = self.lost_tails.clone();
        let policy = CheckpointPolicy {
            every_events: self.config.memory.checkpoint_every_events,
            interval: self.config.checkpoint_interval(),
            mailbox_capacity: self.config.memory.mailbox_capacity,
        };
        // Restoring re-indexes the snapshot's items: done on the worker.
        let addr = MemoryActor::start_in_arbiter(&worker, move |_| {
            let memory = restore_or_new(&store, &swarm, &agent_name, memory_config.clone(), log_end, &lost_tails)
                .unwrap_or_else(|error| {
                    tracing::error!(%swarm, agent = %agent_name, %error, "snapshot unreadable; rebuilding from the log");
                    AgentMemory::new(&swarm, &agent_name, memory_config).expect("an empty in-RAM index can be created")
                });
            MemoryActor::new(memory, store, policy, applied_sender).with_summaries(summaries)
        });
        tracing::info!(agent, "memory actor started");
        metrics::gauge!("mneme_agents", "swarm" => self.config.swarm.name.clone()).increment(1.0);
        // The feed lives as long as the supervisor, which holds its sender.
        let _ = self.feed.send(Join { agent: agent.to_string(), addr: addr.clone(), applied: applied_for_feed });
        let handle = AgentHandle { agent: agent.to_string(), addr, applied_seq };
        self.agents.insert(agent.to_string(), handle.clone());
        Some(handle)
    }

    fn discover(&mut self, ctx: &mut Context<Self>) {
        if self.discovering {
            return;
        }
        self.discovering = true;
        let log = self.log.clone();
        ctx.spawn(async move { log.agents().await }.into_actor(self).map(|agents, supervisor, ctx| {
            supervisor.discovering = false;
            match agents {
                Ok(agents) => {
                    for agent in agents {
                        supervisor.start_agent(&agent);
                    }
                }
                Err(error) => tracing::warn!(%error, "cannot list the log's agents"),
            }
            // After the first discovery the agents on the log have started.
            supervisor.sweep_after_restores(ctx);
        }));
    }
}

impl Actor for Supervisor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(joins) = self.feed_joins.take() {
            actix::spawn(crate::feed::run(
                self.log.clone(),
                self.memory_config.admitted_agents.clone(),
                self.memory_config.shared.clone(),
                joins,
            ));
        }
        let configured: Vec<String> = self.config.agents.iter().map(|agent| agent.name.clone()).collect();
        for agent in configured {
            self.start_agent(&agent);
        }
        if self.config.swarm.admit_unknown_agents {
            self.discover(ctx);
            ctx.run_interval(DISCOVERY_INTERVAL, |supervisor, ctx| supervisor.discover(ctx));
        } else {
            self.sweep_after_restores(ctx);
        }
    }
}

/// The handle of an agent's memory; starts it if the swarm admits agents
/// first seen on the log and this one is there.
#[derive(Message)]
#[rtype(result = "Result<AgentHandle, ActorsError>")]
pub struct GetAgent(pub String);

impl Handler<GetAgent> for Supervisor {
    type Result = ResponseActFuture<Self, Result<AgentHandle, ActorsError>>;

    fn handle(&mut self, GetAgent(agent): GetAgent, _: &mut Self::Context) -> Self::Result {
        if self.agents.contains_key(&agent) {
            let stopped = ActorsError::ActorStopped { agent: agent.clone() };
            return Box::pin(fut::ready(self.start_agent(&agent).ok_or(stopped)));
        }
        let unknown = ActorsError::UnknownAgent { swarm: self.config.swarm.name.clone(), agent: agent.clone() };
        if !self.config.swarm.admit_unknown_agents {
            return Box::pin(fut::ready(Err(unknown)));
        }
        let log = self.log.clone();
        Box::pin(async move { log.agents().await }.into_actor(self).map(move |agents, supervisor, _| {
            if !agents?.contains(&agent) {
                return Err(unknown);
            }
            let stopped = ActorsError::ActorStopped { agent: agent.clone() };
            supervisor.start_agent(&agent).ok_or(stopped)
        }))
    }
}

/// Tells the supervisor that these agents were just written to: admitted
/// ones start at once instead of at the next discovery tick.
#[derive(Message)]
#[rtype(result = "()")]
pub struct AgentsWritten(pub Vec<String>);

impl Handler<AgentsWritten> for Supervisor {
    type Result = ();

    fn handle(&mut self, AgentsWritten(agents): AgentsWritten, _: &mut Self::Context) {
        if self.config.swarm.admit_unknown_agents {
            for agent in agents {
                self.start_agent(&agent);
            }
        }
    }
}

/// The agents with a running memory, sorted.
#[derive(Message)]
#[rtype(result = "Vec<String>")]
pub struct ListAgents;

impl Handler<ListAgents> for Supervisor {
    type Result = Vec<String>;

    fn handle(&mut self, _: ListAgents, _: &mut Self::Context) -> Self::Result {
        self.agents.keys().cloned().collect()
    }
}

/// Stops the worker threads the memory actors run on, after
/// [`SnapshotAll`], and hands them back so that the caller can wait for
/// them to end ([`Arbiter::join`], a blocking call): once they have, no
/// memory actor holds the log or the snapshot store any more, and a server
/// in the same process may open them again.
#[derive(Message)]
#[rtype(result = "Vec<Arbiter>")]
pub struct StopWorkers;

impl Handler<StopWorkers> for Supervisor {
    type Result = MessageResult<StopWorkers>;

    fn handle(&mut self, _: StopWorkers, _: &mut Self::Context) -> Self::Result {
        self.agents.clear();
        let workers = std::mem::take(&mut self.workers);
        for worker in &workers {
            worker.stop();
        }
        MessageResult(workers)
    }
}

/// Snapshots every agent's memory now; used before shutdown.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SnapshotAll;

impl Handler<SnapshotAll> for Supervisor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, _: SnapshotAll, _: &mut Self::Context) -> Self::Result {
        let handles: Vec<AgentHandle> = self.agents.values().cloned().collect();
        Box::pin(async move {
            for handle in handles {
                match handle.addr.send(TakeSnapshot).await {
                    Ok(Ok(Some(seq))) => tracing::info!(agent = %handle.agent, seq, "snapshot written"),
                    Ok(Ok(None)) => tracing::warn!(agent = %handle.agent, "snapshot deferred: dead letters not filed"),
                    Ok(Err(error)) => tracing::error!(agent = %handle.agent, %error, "snapshot failed"),
                    Err(_) => tracing::warn!(agent = %handle.agent, "memory actor already stopped"),
                }
            }
        })
    }
}
