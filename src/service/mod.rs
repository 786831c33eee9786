//! Every query and command of the API, transport-neutral: what the HTTP
//! routes ([`crate::http`]), the NATS responders ([`crate::nats`]) and,
//! next, MCP answer is computed here, once, from typed requests of
//! `mneme_api::params` into typed answers of `mneme-api`, or an
//! [`ApiError`]. Nothing here knows HTTP: a transport parses its request
//! into those types, calls a method of [`Service`], and writes the answer
//! or the error body in its own way.
//!
//! - [`log`]: health, appending events, pages of the log, dead letters,
//!   agents, provenance.
//! - [`memory`]: search, the fact graph, items, digest, replay.
//! - [`context`]: budgeted context and phases.
//! - [`consolidation`]: consolidation runs, contradictions, purges.
//! - [`handoffs`]: handoffs received, followed and acknowledged.
//! - [`agent_memory`]: core memory, notes, the timeline; writes that
//!   answer once applied.

pub mod agent_memory;
pub mod caller;
pub mod consolidation;
pub mod context;
pub mod error;
pub mod handoffs;
pub mod log;
pub mod memory;
pub mod publish_quota;
pub mod query_permits;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use metrics_exporter_prometheus::PrometheusHandle;
use mneme_actors::swarm_config::{ApiToken, HttpSection};
use mneme_actors::{
    AgentHandle, Ask, Consolidator, ErasureRegistry, GetAgent, LostTails, MemoryQuery, SYSTEM_SWARM, Supervisor,
    SwarmConfig,
};
use mneme_api::params::quote;
use mneme_nats::EventLog;
use mneme_projections::MemoryConfig;

pub use caller::Caller;
pub use error::{ApiError, json_body};
pub use publish_quota::PublishQuotas;
pub use query_permits::{QueryPermits, StreamPermit, StreamPermits};

use error::stopped;

/// How long a query with `min_seq` waits for the agent to catch up.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);

/// One swarm this process holds: its configuration, its log, the actors
/// that keep its memories and consolidate them, and what its purges
/// erased.
pub struct SwarmRuntime {
    pub config: SwarmConfig,
    pub log: Arc<dyn EventLog>,
    pub supervisor: Addr<Supervisor>,
    /// Memory settings and embedder, for replays.
    pub memory_config: MemoryConfig,
    pub consolidator: Addr<Consolidator>,
    /// Keys the ids Mneme derives for its own events (acknowledgements).
    pub id_key: mneme_events::IdKey,
    /// What purges erased: every path that shows raw log entries shows
    /// them through it (`log::wire_entry`).
    pub erasures: Arc<ErasureRegistry>,
    /// Whether this start found the log's tail lost (`/healthz`).
    pub lost_tails: LostTails,
    /// The swarm's writer lease, as this process holds it or not.
    pub lease: mneme_actors::LeaseGate,
    /// The deep tier's enricher's report; `None` when `[enrichment]` runs
    /// no model.
    pub enrichment: Option<mneme_actors::EnricherHandle>,
}

impl SwarmRuntime {
    /// The swarm's name.
    pub fn name(&self) -> &str {
        &self.config.swarm.name
    }

    /// The agent's memory actor, once it has applied the log up to
    /// `min_seq` (read-your-writes).
    pub async fn agent_handle(&self, agent: &str, min_seq: Option<u64>) -> Result<AgentHandle, ApiError> {
        let handle = self.supervisor.send(GetAgent(agent.to_string())).await.map_err(|_| stopped(agent))??;
        if let Some(min_seq) = min_seq {
            handle.caught_up(self.log.as_ref(), min_seq, CATCH_UP_TIMEOUT).await?;
        }
        Ok(handle)
    }
}

/// The swarms a process holds now. Fixed at start, unless the deployment
/// places its swarms among several processes (`[placement]`): then a swarm
/// joins when this process has caught up with it, and leaves when it moves
/// to another process.
#[derive(Default)]
pub struct HeldSwarms {
    held: std::sync::RwLock<BTreeMap<String, Arc<SwarmRuntime>>>,
}

impl HeldSwarms {
    pub fn new(swarms: impl IntoIterator<Item = Arc<SwarmRuntime>>) -> HeldSwarms {
        let held = swarms.into_iter().map(|swarm| (swarm.name().to_string(), swarm)).collect();
        HeldSwarms { held: std::sync::RwLock::new(held) }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Arc<SwarmRuntime>>> {
        self.held.read().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, name: &str) -> Option<Arc<SwarmRuntime>> {
        self.read().get(name).cloned()
    }

    pub fn contains_key(&self, name: &str) -> bool {
        self.read().contains_key(name)
    }

    /// The held swarms, by name.
    pub fn all(&self) -> Vec<Arc<SwarmRuntime>> {
        self.read().values().cloned().collect()
    }

    pub fn names(&self) -> Vec<String> {
        self.read().keys().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.read().len()
    }

    pub fn is_empty(&self) -> bool {
        self.read().is_empty()
    }

    /// The only swarm held (the system layer aside), if exactly one is.
    pub fn only(&self) -> Option<Arc<SwarmRuntime>> {
        let held = self.read();
        let mut swarms = held.values().filter(|swarm| swarm.name() != SYSTEM_SWARM);
        match (swarms.next(), swarms.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        }
    }

    /// The deployment's system layer, which every memory reads through.
    pub fn system(&self) -> Option<Arc<SwarmRuntime>> {
        self.get(SYSTEM_SWARM)
    }

    /// Starts answering for a swarm.
    pub fn insert(&self, swarm: Arc<SwarmRuntime>) {
        let mut held = self.held.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.insert(swarm.name().to_string(), swarm);
    }

    /// Stops answering for a swarm; requests already holding it finish.
    pub fn remove(&self, name: &str) -> Option<Arc<SwarmRuntime>> {
        let mut held = self.held.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.remove(name)
    }
}

/// Where the swarms placed among several processes are held, as this
/// process last read it (`[placement]`; see `crate::server::placement`).
pub struct Placement {
    /// Placed swarms by name, with the processes each asks for.
    pub swarms: BTreeMap<String, usize>,
    /// The placement bucket as last read.
    pub view: tokio::sync::watch::Receiver<mneme_nats::placement::PlacementView>,
}

/// The running memory service: the swarms it holds, and what the queries
/// share. One per process, shared by every transport.
pub struct Service {
    /// The swarms this process holds, by name.
    pub swarms: HeldSwarms,
    /// With `[placement]`: the swarms held elsewhere that this process may
    /// send a client to.
    pub placement: Option<Placement>,
    /// The process's HTTP settings: the first configuration's `[http]`.
    pub http: HttpSection,
    /// The API tokens of every swarm, each opening only its own swarm.
    pub tokens: Vec<ApiToken>,
    pub metrics: PrometheusHandle,
    /// A replay rebuilds a whole memory: one at a time per process.
    pub replay_permits: tokio::sync::Semaphore,
    /// The time of the events the service writes (acknowledgements,
    /// resolutions, tombstones).
    pub clock: Arc<dyn mneme_events::Clock>,
    /// Queries each caller has in flight, over HTTP and NATS.
    pub query_permits: QueryPermits,
    /// Streams each caller, and everyone, holds open.
    pub stream_permits: StreamPermits,
    /// How fast each caller may publish.
    pub publish_quotas: PublishQuotas,
    /// Turns true when the server begins to shut down: long-lived responses
    /// (handoff streams) end then, rather than hold the shutdown up.
    pub shutting_down: tokio::sync::watch::Receiver<bool>,
    /// This process's name among those serving the same swarms: the holder
    /// its leases name.
    pub node: String,
    /// By swarm, its agents that may publish to the system layer
    /// (`[swarm] system_publishers`), for every swarm configured here.
    pub system_publishers: BTreeMap<String, Vec<String>>,
}

impl Service {
    /// The swarm `name` this server holds. A swarm placed on other
    /// processes is 307 `swarm_elsewhere` naming one that answers for it
    /// (HTTP redirects there), or 503 `swarm_not_ready` while none does;
    /// any other is 404 `unknown_swarm`.
    pub fn swarm(&self, name: &str) -> Result<Arc<SwarmRuntime>, ApiError> {
        if let Some(swarm) = self.swarms.get(name) {
            return Ok(swarm);
        }
        if let Some(placement) = &self.placement
            && placement.swarms.contains_key(name)
        {
            let view = placement.view.borrow();
            let holders = view.ready_holders(name);
            return Err(match holders.iter().find(|(node, _)| *node != self.node) {
                Some((node, url)) => ApiError::elsewhere(
                    url,
                    format!("swarm {} is held by process {} at {url}", quote(name), quote(node)),
                ),
                None => ApiError::unavailable(
                    "swarm_not_ready",
                    Some("swarm"),
                    format!(
                        "swarm {} is moving between processes: no process answers for it yet; retry shortly",
                        quote(name)
                    ),
                ),
            });
        }
        Err(ApiError::not_found(
            "unknown_swarm",
            Some("swarm"),
            format!("this server holds swarm {}, not {}", self.held_names(), quote(name)),
        ))
    }

    /// `"a"`, or `"a", "b"`: the swarms this server holds, for a message.
    pub(crate) fn held_names(&self) -> String {
        let names = self.swarms.names();
        names.iter().filter(|name| *name != SYSTEM_SWARM).map(|name| format!("{name:?}")).collect::<Vec<_>>().join(", ")
    }

    /// Whether `caller` may publish `agent`'s events to the system layer:
    /// `agent` is a system publisher of the swarm the caller's token opens,
    /// or, on an API without tokens, of any swarm configured here.
    pub(crate) fn may_publish_system(&self, caller: &Caller, agent: &str) -> bool {
        let listed =
            |swarm: &str| self.system_publishers.get(swarm).is_some_and(|agents| agents.iter().any(|a| a == agent));
        match caller {
            Caller::Anyone => self.system_publishers.keys().any(|swarm| listed(swarm)),
            Caller::Token { swarm, .. } => listed(swarm) && caller.may_act_as(agent),
        }
    }

    /// The swarm a caller means when it names none: the only one this
    /// server holds, or the one its token opens; otherwise 400
    /// `swarm_required`.
    pub fn default_swarm(&self, caller: &Caller) -> Result<Arc<SwarmRuntime>, ApiError> {
        if let Caller::Token { swarm, .. } = caller {
            return self.swarm(swarm);
        }
        match self.swarms.only() {
            Some(only) if self.placement.is_none() => Ok(only),
            _ => Err(ApiError::bad_request(
                "swarm_required",
                Some("swarm"),
                format!("this server holds swarms {}: name one", self.held_names()),
            )),
        }
    }

    /// The agent's memory actor in `swarm`, once it has applied the log up
    /// to `min_seq` (read-your-writes).
    pub async fn agent_handle(&self, swarm: &str, agent: &str, min_seq: Option<u64>) -> Result<AgentHandle, ApiError> {
        self.swarm(swarm)?.agent_handle(agent, min_seq).await
    }
}

/// One query of an agent's memory actor, answered with its own type.
pub(crate) async fn ask<Q: MemoryQuery>(handle: &AgentHandle, query: Q) -> Result<Q::Answer, ApiError> {
    Ok(handle.addr.send(Ask(query)).await.map_err(|_| stopped(&handle.agent))??)
}
