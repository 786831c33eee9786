//! Placement: the swarms of a deployment shared among several `mneme
//! serve` processes, for when together they outgrow one machine
//! (`[placement]` in a swarm's file; the bucket and the rule that decides
//! are `mneme_nats::placement`).
//!
//! ```text
//!             every ttl/3                              PlacementBoard (KV)
//!   ┌──────────── tick ─────────────┐        node.<me>       announce ─────▶
//!   │ read the bucket: live nodes,  │        held.<swarm>.<me> hold ───────▶
//!   │ holds ──▶ Service.placement   │◀──────────────────────────── view ────
//!   │ for each placed swarm:        │
//!   │  ranked here, not held ──────────▶ start: open, restore, catch up
//!   │                               │       │ (the loop keeps ticking)
//!   │                               │◀──────┘ caught up: answer (HTTP, NATS),
//!   │                               │          hold ready
//!   │  held, not ranked here, and   │
//!   │  every process ranked for it  │
//!   │  ready ─────────────────────────▶ stop answering, release, stop it
//!   └───────────────────────────────┘
//! ```
//!
//! A process answers for a swarm only once its memories have applied the
//! swarm's log as far as it reached when the process began to hold it; it
//! gives a swarm up only once the processes it moved to answer for it, so
//! a move leaves no gap. A process that dies stops renewing its records:
//! they expire after the time to live, and the next-ranked process takes
//! its swarms. Swarms without `[placement]` are held by every process
//! given their file, as before, and are not in the bucket.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mneme_actors::SwarmConfig;
use mneme_nats::placement::{HoldRecord, NodeRecord, PlacementBoard, PlacementView};
use tokio::sync::watch;

use super::StartedSwarm;
use crate::nats;
use crate::service::Service;

/// A failed start is tried again after this long.
const RETRY_START_AFTER: Duration = Duration::from_secs(5);

/// What the placement loop needs besides the service: the bucket, this
/// process's record, and the placed swarms it is configured for.
pub struct PlacedSwarms {
    pub board: PlacementBoard,
    pub node: String,
    pub record: NodeRecord,
    /// Placed swarms configured here, with their embedders.
    pub swarms: BTreeMap<String, (SwarmConfig, Arc<dyn mneme_index::embed::Embedder>)>,
    /// How long a record lives without being written again.
    pub ttl: Duration,
    /// Whether this process answers NATS queries (`mneme serve`).
    pub serve_nats: bool,
}

impl PlacedSwarms {
    /// Connects to the placement bucket named by the first placed swarm's
    /// `[log]` (NATS address, credentials, replicas, `lease_ttl_ms` as the
    /// records' time to live).
    pub async fn connect(
        placed: Vec<(SwarmConfig, Arc<dyn mneme_index::embed::Embedder>)>,
        node: &str,
        url: String,
        serve_nats: bool,
    ) -> anyhow::Result<PlacedSwarms> {
        let (first, _) = placed.first().context("no placed swarm")?;
        let ttl = first.lease_ttl();
        let credentials = first.nats_credentials();
        let board = PlacementBoard::connect(&first.log.nats_url, credentials.as_ref(), ttl, first.log.replicas)
            .await
            .with_context(|| format!("opening the placement bucket on NATS at {}", first.log.nats_url))?;
        let swarms: BTreeMap<_, _> =
            placed.into_iter().map(|(config, embedder)| (config.swarm.name.clone(), (config, embedder))).collect();
        let record = NodeRecord { url, swarms: swarms.keys().cloned().collect() };
        Ok(PlacedSwarms { board, node: node.to_string(), record, swarms, ttl, serve_nats })
    }
}

/// A placed swarm this process answers for.
struct Holding {
    started: StartedSwarm,
    queries: Option<tokio::task::JoinHandle<()>>,
}

type Starting = futures::future::LocalBoxFuture<'static, (String, anyhow::Result<StartedSwarm>)>;

/// Runs placement until `stopping` turns true; answers the swarms still
/// held then (and those that finished starting), for the caller to stop.
pub(super) async fn run(
    placed: PlacedSwarms,
    service: Arc<Service>,
    views: watch::Sender<PlacementView>,
    mut stopping: watch::Receiver<bool>,
) -> Vec<StartedSwarm> {
    let ttl = placed.ttl;
    let mut placer = Placer::new(placed, service, views);
    // Processes started together see each other before deciding: without
    // this wait each would find itself alone and start every swarm.
    if let Err(error) = placer.board.announce(&placer.node, &placer.record).await {
        tracing::warn!(%error, "cannot announce this process in the placement bucket");
    }
    tokio::select! {
        () = tokio::time::sleep(ttl / 2) => {}
        _ = stopping.changed() => {}
    }
    let mut tick = tokio::time::interval(ttl / 3);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while !*stopping.borrow() {
        tokio::select! {
            _ = tick.tick() => placer.tick().await,
            Some((name, started)) = placer.starting.next(), if !placer.starting.is_empty() => {
                placer.started(name, started).await;
            }
            _ = stopping.changed() => {}
        }
    }
    placer.leave().await
}

/// The placement loop's state: the swarms this process holds, those it is
/// starting, those whose start failed lately, and those it gave up and is
/// stopping.
struct Placer {
    board: PlacementBoard,
    node: String,
    record: NodeRecord,
    swarms: BTreeMap<String, (SwarmConfig, Arc<dyn mneme_index::embed::Embedder>)>,
    serve_nats: bool,
    service: Arc<Service>,
    views: watch::Sender<PlacementView>,
    holding: BTreeMap<String, Holding>,
    starting: FuturesUnordered<Starting>,
    starting_names: BTreeSet<String>,
    retry_after: BTreeMap<String, tokio::time::Instant>,
    moving_out: Vec<tokio::task::JoinHandle<()>>,
}

impl Placer {
    fn new(placed: PlacedSwarms, service: Arc<Service>, views: watch::Sender<PlacementView>) -> Placer {
        let PlacedSwarms { board, node, record, swarms, ttl: _, serve_nats } = placed;
        Placer {
            board,
            node,
            record,
            swarms,
            serve_nats,
            service,
            views,
            holding: BTreeMap::new(),
            starting: FuturesUnordered::new(),
            starting_names: BTreeSet::new(),
            retry_after: BTreeMap::new(),
            moving_out: Vec::new(),
        }
    }

    /// One tick: renews this process's record, reads the bucket, starts
    /// the swarms ranked here, gives up those moved away once their new
    /// holders are ready, and renews the holds of the swarms held.
    async fn tick(&mut self) {
        if let Err(error) = self.board.announce(&self.node, &self.record).await {
            tracing::warn!(%error, "cannot announce this process in the placement bucket");
            return;
        }
        let view = match self.board.view().await {
            Ok(view) => view,
            Err(error) => {
                tracing::warn!(%error, "cannot read the placement bucket");
                return;
            }
        };
        // Published before any swarm is given up below: a request
        // for a swarm this process no longer holds is sent on by
        // this view, which must already show the processes it moved
        // to as ready (with the last tick's, the request met a 503
        // between the two).
        self.views.send_replace(view.clone());
        let names: Vec<String> = self.swarms.keys().cloned().collect();
        for name in &names {
            let holders = self.swarms[name].0.placement.as_ref().map_or(1, |placement| placement.holders);
            let target = view.target(name, holders);
            let ranked_here = target.contains(&self.node);
            if ranked_here && !self.holding.contains_key(name) && !self.starting_names.contains(name) {
                self.start(name).await;
            } else if !ranked_here && self.holding.contains_key(name) {
                let ready: BTreeSet<&str> = view.ready_holders(name).into_iter().map(|(node, _)| node).collect();
                if !target.is_empty() && target.iter().all(|holder| ready.contains(holder.as_str())) {
                    self.give_up(name, &target).await;
                }
            }
        }
        for name in self.holding.keys() {
            let hold = HoldRecord { url: self.record.url.clone(), ready: true };
            if let Err(error) = self.board.hold(name, &self.node, &hold).await {
                tracing::warn!(swarm = %name, %error, "cannot renew the hold");
            }
        }
    }

    /// Starts a swarm ranked here (unless its last start failed lately),
    /// holding it as not ready until it caught up.
    async fn start(&mut self, name: &str) {
        if self.retry_after.get(name).is_some_and(|at| tokio::time::Instant::now() < *at) {
            return;
        }
        tracing::info!(swarm = %name, "placed here: catching up before answering for it");
        let hold = HoldRecord { url: self.record.url.clone(), ready: false };
        if let Err(error) = self.board.hold(name, &self.node, &hold).await {
            tracing::warn!(swarm = %name, %error, "cannot record the hold");
        }
        self.starting_names.insert(name.to_string());
        let (config, embedder) = &self.swarms[name];
        self.starting.push(Box::pin(start_and_catch_up(config.clone(), embedder.clone(), self.node.clone())));
    }

    /// Gives up a swarm moved to the processes of `target`, which answer
    /// for it now: stops answering, releases the hold, and stops it.
    async fn give_up(&mut self, name: &str, target: &[String]) {
        let held = self.holding.remove(name).expect("held, checked by the caller");
        tracing::info!(swarm = %name, to = %target.join(","), "moved to other processes, which answer for it now: giving it up");
        self.service.swarms.remove(name);
        if let Some(queries) = &held.queries {
            queries.abort();
        }
        if let Err(error) = self.board.release(name, &self.node).await {
            tracing::warn!(swarm = %name, %error, "cannot remove the hold");
        }
        metrics::gauge!("mneme_placement_held", "swarm" => name.to_string()).set(0.0);
        metrics::counter!("mneme_placement_moves_total", "swarm" => name.to_string(), "way" => "out").increment(1);
        // Stopping writes snapshots: not on this loop,
        // whose records must keep being renewed.
        let name = name.to_string();
        self.moving_out.push(actix_web::rt::spawn(async move {
            if let Err(error) = held.started.stop().await {
                tracing::warn!(swarm = %name, error = %format!("{error:#}"), "stopping a swarm moved away");
            }
        }));
    }

    /// A swarm finished starting: it is answered for and held as ready, or
    /// its start is tried again after [`RETRY_START_AFTER`].
    async fn started(&mut self, name: String, started: anyhow::Result<StartedSwarm>) {
        self.starting_names.remove(&name);
        match started {
            Ok(started) => {
                let hold = HoldRecord { url: self.record.url.clone(), ready: true };
                let queries = match (&started.broker, self.serve_nats) {
                    (Some(broker), true) => Some(actix_web::rt::spawn(nats::serve_queries(
                        self.service.clone(),
                        name.clone(),
                        broker.clone(),
                    ))),
                    _ => None,
                };
                self.service.swarms.insert(started.runtime.clone());
                if let Err(error) = self.board.hold(&name, &self.node, &hold).await {
                    tracing::warn!(swarm = %name, %error, "cannot record the hold");
                }
                tracing::info!(swarm = %name, "caught up: answering for it");
                metrics::gauge!("mneme_placement_held", "swarm" => name.clone()).set(1.0);
                metrics::counter!("mneme_placement_moves_total", "swarm" => name.clone(), "way" => "in").increment(1);
                self.holding.insert(name, Holding { started, queries });
            }
            Err(error) => {
                tracing::error!(swarm = %name, error = %format!("{error:#}"), "cannot start a swarm placed here; trying again in {}s", RETRY_START_AFTER.as_secs());
                self.retry_after.insert(name.clone(), tokio::time::Instant::now() + RETRY_START_AFTER);
                if let Err(error) = self.board.release(&name, &self.node).await {
                    tracing::warn!(swarm = %name, %error, "cannot remove the hold");
                }
            }
        }
    }

    /// Leaving: the records go now, so that the others take the swarms
    /// over without waiting for them to expire. Answers the swarms still
    /// held and those that finished starting, once those given up stopped.
    async fn leave(self) -> Vec<StartedSwarm> {
        let Placer { board, node, holding, mut starting, starting_names, service, moving_out, .. } = self;
        let mut held: Vec<String> = holding.keys().cloned().collect();
        held.extend(starting_names.iter().cloned());
        if let Err(error) = board.leave(&node, &held).await {
            tracing::warn!(%error, "cannot remove this process from the placement bucket");
        }
        let mut still_held = Vec::new();
        for (name, held) in holding {
            service.swarms.remove(&name);
            if let Some(queries) = held.queries {
                queries.abort();
            }
            still_held.push(held.started);
        }
        while let Some((_, started)) = starting.next().await {
            if let Ok(started) = started {
                still_held.push(started);
            }
        }
        for stopping in moving_out {
            let _ = stopping.await;
        }
        still_held
    }
}

/// Starts a swarm placed here, and waits until every memory of it has
/// applied its log up to where the log ended when it started.
async fn start_and_catch_up(
    config: SwarmConfig,
    embedder: Arc<dyn mneme_index::embed::Embedder>,
    node: String,
) -> (String, anyhow::Result<StartedSwarm>) {
    let name = config.swarm.name.clone();
    let started = async {
        let started = super::start_swarm(config, embedder, &node).await?;
        if let Err(error) = catch_up(&started).await {
            if let Err(stopping) = started.stop().await {
                tracing::warn!(error = %format!("{stopping:#}"), "stopping a swarm that did not catch up");
            }
            return Err(error);
        }
        Ok(started)
    }
    .await;
    (name, started)
}

async fn catch_up(started: &StartedSwarm) -> anyhow::Result<()> {
    let runtime = &started.runtime;
    let log_end = runtime.log.last_event_seq().await.context("reading the log's end")?;
    let agents = runtime.log.agents().await.context("listing the log's agents")?;
    for agent in agents {
        loop {
            match runtime.agent_handle(&agent, Some(log_end)).await {
                Ok(_) => break,
                // A large memory takes longer than a query waits: wait on.
                Err(error) if error.code() == "catch_up_timeout" => continue,
                // An agent the swarm does not admit has no memory.
                Err(error) if error.code() == "unknown_agent" => break,
                Err(error) => anyhow::bail!("catching up with agent {agent:?}: {error}"),
            }
        }
    }
    Ok(())
}

/// The base URL other processes send clients to: `[http] advertise_url`,
/// `MNEME_ADVERTISE_URL`, or `http://<bind>` with the host's name for an
/// unspecified address.
pub fn advertised_url(config: &SwarmConfig) -> String {
    if let Ok(url) = std::env::var(ADVERTISE_VARIABLE)
        && !url.trim().is_empty()
    {
        return url.trim().trim_end_matches('/').to_string();
    }
    if let Some(url) = &config.http.advertise_url {
        return url.trim_end_matches('/').to_string();
    }
    let bind = config.http.bind;
    if bind.ip().is_unspecified() {
        format!("http://{}:{}", super::host_name(), bind.port())
    } else {
        format!("http://{bind}")
    }
}

/// The environment variable that overrides `[http] advertise_url`.
pub const ADVERTISE_VARIABLE: &str = "MNEME_ADVERTISE_URL";
