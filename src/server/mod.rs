//! `mneme serve`: for each swarm it holds, the log, the supervisor and its
//! memory actors, the consolidator, the handoff router and the eraser; and
//! the HTTP API over all of them, in one process.

pub mod backend;
pub mod deployment;
pub mod erasure;
pub mod llm;
pub mod placement;

use std::sync::Arc;

use actix::Actor;
use actix_web::middleware::from_fn;
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use mneme_actors::{
    ConsolidationSchedule, Consolidator, Eraser, ErasureRegistry, HandoffPublisher, HandoffRouter, LeaseKeeper,
    SnapshotAll, SnapshotStore, StopErasing, StopRouting, StopWorkers, Supervisor, SwarmConfig, WRITER_LEASE,
};

use crate::http::{self, auth};
use crate::mcp;
use crate::model;
use crate::nats;
use crate::service::{HeldSwarms, PublishQuotas, QueryPermits, Service, StreamPermits, SwarmRuntime};
use mneme_events::SystemClock;
use mneme_index::TextIndex;

/// HTTP worker threads. Queries are answered by memory actors on their own
/// workers, so the HTTP side needs few threads.
const HTTP_WORKERS: usize = 2;

/// How the memory service is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Front {
    /// The HTTP API and `/mcp` (and the NATS queries on NATS): `mneme serve`.
    Http,
    /// One agent's MCP tools over this process's stdin and stdout, until
    /// stdin ends: `mneme mcp --agent NAME` without `--server`.
    McpStdio(String),
}

/// Runs the memory service until `shutdown` resolves, then finishes the
/// requests in flight, stops routing handoffs, writes every memory's
/// snapshot and stops the actix system it runs on. `mneme serve` passes
/// SIGINT or SIGTERM ([`shutdown_signal`]); a test passes a channel.
/// `configs` are the swarms the process holds (see [`deployment`]).
pub async fn serve(configs: Vec<SwarmConfig>, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    run(configs, Front::Http, shutdown).await
}

/// [`serve`], reached through `front`.
pub async fn run(configs: Vec<SwarmConfig>, front: Front, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    deployment::check(&configs)?;
    let first = configs.first().expect("a deployment holds at least one swarm").clone();
    let metrics = metrics_recorder()?;
    // The HTTP port first: a port in use is refused before anything is
    // opened or started (actors started and then dropped with the error
    // panicked on the way out).
    let listener = match front {
        Front::Http => Some(
            std::net::TcpListener::bind(first.http.bind)
                .with_context(|| format!("binding the HTTP API to {}", first.http.bind))?,
        ),
        _ => None,
    };
    let node = node_name(&first, &front);
    let tokens: Vec<_> = configs.iter().flat_map(|config| config.api_tokens().iter().cloned()).collect();
    let system_publishers = configs
        .iter()
        .map(|config| (config.swarm.name.clone(), config.swarm.system_publishers.clone()))
        .filter(|(_, publishers)| !publishers.is_empty())
        .collect();
    let (mut swarms, placed) = start_swarms(configs, &first, &node, front == Front::Http).await?;
    let bind = first.http.bind;
    if tokens.is_empty() && !bind.ip().is_loopback() {
        tracing::warn!(%bind, "the HTTP API is open to anyone who can reach {bind}: configure [[http.tokens]]");
    }
    let (shutting_down, shutting_down_receiver) = tokio::sync::watch::channel(false);
    let (views, view) = tokio::sync::watch::channel(mneme_nats::placement::PlacementView::default());
    let service = web::Data::new(Service {
        swarms: HeldSwarms::new(swarms.iter().map(|swarm| swarm.runtime.clone())),
        placement: placed.as_ref().map(|placed| placement_of(placed, view)),
        http: first.http.clone(),
        tokens,
        metrics,
        replay_permits: tokio::sync::Semaphore::new(1),
        clock: Arc::new(SystemClock),
        query_permits: QueryPermits::new(first.http.max_queries_in_flight),
        stream_permits: StreamPermits::new(first.http.max_streams_per_caller, first.http.max_streams),
        publish_quotas: PublishQuotas::new(
            first.http.publish_events_per_sec,
            first.http.publish_bytes_per_sec,
            first.http.publish_burst_secs,
        ),
        shutting_down: shutting_down_receiver,
        node,
        system_publishers,
    });
    // Signals are handled here rather than by actix-web, whose handler stops
    // the whole actix system: memory actors must snapshot before that.
    // NATS queries are `mneme serve`'s to answer; a process serving one
    // agent's tools on stdio does not join their queue group.
    if front == Front::Http {
        for swarm in &swarms {
            if let Some(broker) = swarm.broker.clone() {
                let name = swarm.runtime.name().to_string();
                actix_web::rt::spawn(nats::serve_queries(service.clone().into_inner(), name, broker));
            }
        }
    }
    let placement_task = placed.map(|placed| {
        actix_web::rt::spawn(placement::run(placed, service.clone().into_inner(), views, shutting_down.subscribe()))
    });
    let names = swarm_names(&swarms, &service);
    match front {
        Front::Http => {
            let listener = listener.expect("bound above for the HTTP front");
            serve_http(service, listener, &first, &names, shutdown, &shutting_down).await?;
        }
        Front::McpStdio(agent) => {
            let swarm = match swarms.iter().find(|swarm| swarm.runtime.name() != mneme_actors::SYSTEM_SWARM) {
                Some(swarm) => swarm.runtime.name().to_string(),
                None => service
                    .placement
                    .as_ref()
                    .and_then(|placement| placement.swarms.keys().next().cloned())
                    .unwrap_or_default(),
            };
            serve_mcp_stdio(service.clone(), swarm, agent, &names, shutdown, &shutting_down).await?;
        }
    }
    if let Some(task) = placement_task {
        swarms.extend(task.await.context("joining the placement loop")?);
    }
    for swarm in swarms {
        swarm.stop().await?;
    }
    actix::System::current().stop();
    Ok(())
}

/// Starts the swarms held from the start, the deployment's system layer
/// first, and connects to the placement bucket for the placed ones
/// (`[placement]`), which the placement loop starts where the deployment
/// places them. A failure stops the swarms started before it.
async fn start_swarms(
    configs: Vec<SwarmConfig>,
    first: &SwarmConfig,
    node: &str,
    serve_nats: bool,
) -> anyhow::Result<(Vec<StartedSwarm>, Option<placement::PlacedSwarms>)> {
    let mut embedders = model::EmbedderCache::default();
    let (placed_configs, configs): (Vec<_>, Vec<_>) =
        configs.into_iter().partition(|config| config.placement.is_some());
    let mut placed = Vec::with_capacity(placed_configs.len());
    for config in placed_configs {
        let embedder = embedders.load(&config)?;
        placed.push((config, embedder));
    }
    let mut swarms: Vec<StartedSwarm> = Vec::with_capacity(configs.len() + 1);
    // The deployment's system layer first: every memory reads through it.
    // It derives ids with the first swarm's key, so that replicas given
    // one key (`MNEME_ID_KEY`, or a copy of `id.key`) agree on both.
    let system = first.system_layer();
    std::fs::create_dir_all(&first.log.data_dir)
        .with_context(|| format!("creating the data dir {}", first.log.data_dir.display()))?;
    let started = match (embedders.load(&system), backend::id_key(first)) {
        (Ok(embedder), Ok(id_key)) => start_swarm_with_key(system, embedder, node, Some(id_key)).await,
        (Err(error), _) | (_, Err(error)) => Err(error),
    };
    swarms.push(started.context("starting the system layer")?);
    for config in configs {
        let started = match embedders.load(&config) {
            Ok(embedder) => start_swarm(config, embedder, node).await,
            Err(error) => Err(error),
        };
        match started {
            Ok(swarm) => swarms.push(swarm),
            Err(error) => {
                // The swarms started so far stop cleanly (snapshots, threads)
                // rather than be dropped running.
                stop_all(swarms).await;
                return Err(error);
            }
        }
    }
    if placed.is_empty() {
        return Ok((swarms, None));
    }
    let url = placement::advertised_url(first);
    match placement::PlacedSwarms::connect(placed, node, url, serve_nats).await {
        Ok(placed) => Ok((swarms, Some(placed))),
        Err(error) => {
            stop_all(swarms).await;
            Err(error)
        }
    }
}

/// What the service knows of the placed swarms: the processes each asks
/// for, and the placement bucket as the loop last read it.
fn placement_of(
    placed: &placement::PlacedSwarms,
    view: tokio::sync::watch::Receiver<mneme_nats::placement::PlacementView>,
) -> crate::service::Placement {
    let swarms = placed
        .swarms
        .iter()
        .map(|(name, (config, _))| (name.clone(), config.placement.as_ref().map_or(1, |placement| placement.holders)))
        .collect();
    crate::service::Placement { swarms, view }
}

/// The swarms the process serves, for its log lines: those it holds, then
/// the placed ones.
fn swarm_names(swarms: &[StartedSwarm], service: &Service) -> String {
    let mut names: Vec<String> = swarms.iter().map(|swarm| swarm.runtime.name().to_string()).collect();
    if let Some(placement) = &service.placement {
        names.extend(placement.swarms.keys().map(|name| format!("{name} (placed)")));
    }
    names.join(",")
}

/// The HTTP API, `/mcp` and the web view on `listener` until `shutdown`
/// resolves; then the requests in flight are finished.
async fn serve_http(
    service: web::Data<Service>,
    listener: std::net::TcpListener,
    first: &SwarmConfig,
    names: &str,
    shutdown: impl Future<Output = ()>,
    shutting_down: &tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<()> {
    let node = service.node.clone();
    let mcp = web::Data::new(mcp::http::mcp_service(service.clone().into_inner()));
    let server = HttpServer::new(move || {
        App::new()
            .app_data(service.clone())
            .app_data(mcp.clone())
            .wrap(from_fn(auth::require_token))
            .wrap(from_fn(http::redirect_elsewhere))
            .configure(mcp::http::routes)
            .configure(crate::ui::routes)
            .configure(http::routes)
    })
    .workers(HTTP_WORKERS)
    .disable_signals()
    .listen(listener)
    .with_context(|| format!("listening on {}", first.http.bind))?;
    for address in server.addrs() {
        tracing::info!(swarms = %names, backend = ?first.log.backend, %node, "listening on http://{address}");
    }
    let server = server.run();
    let server_handle = server.handle();
    let server_task = actix_web::rt::spawn(server);
    shutdown.await;
    tracing::info!("shutting down: finishing requests, then writing snapshots");
    let _ = shutting_down.send(true);
    server_handle.stop(true).await;
    server_task.await.context("joining the HTTP server")?.context("running the HTTP server")?;
    Ok(())
}

/// `agent`'s MCP tools on `swarm` over stdio, until the host closes stdin
/// or `shutdown` resolves.
async fn serve_mcp_stdio(
    service: web::Data<Service>,
    swarm: String,
    agent: String,
    names: &str,
    shutdown: impl Future<Output = ()>,
    shutting_down: &tokio::sync::watch::Sender<bool>,
) -> anyhow::Result<()> {
    use rmcp::ServiceExt;
    let identity = mcp::Identity { swarm, agent: agent.clone(), caller: crate::service::Caller::Anyone };
    let tools = mcp::MemoryTools::new(service.into_inner(), Some(identity));
    tracing::info!(swarm = %names, %agent, "serving MCP tools on stdio");
    let running = tools.serve(rmcp::transport::stdio()).await.context("starting MCP on stdio")?;
    tokio::select! {
        ended = running.waiting() => {
            ended.context("serving MCP on stdio")?;
        }
        () = shutdown => {}
    }
    tracing::info!("MCP session over: writing snapshots");
    let _ = shutting_down.send(true);
    Ok(())
}

/// Stops swarms started before a failure, cleanly (snapshots, threads)
/// rather than dropped running.
async fn stop_all(swarms: Vec<StartedSwarm>) {
    for swarm in swarms {
        if let Err(stopping) = swarm.stop().await {
            tracing::warn!(error = %format!("{stopping:#}"), "stopping a swarm after a failed start");
        }
    }
}

/// One swarm running in this process: what the service reads
/// ([`SwarmRuntime`]), and the actors that stop with it.
struct StartedSwarm {
    runtime: Arc<SwarmRuntime>,
    broker: Option<Arc<dyn mneme_nats::Broker>>,
    router: actix::Addr<HandoffRouter>,
    eraser: actix::Addr<Eraser>,
    keeper: LeaseKeeper,
}

impl StartedSwarm {
    /// Stops routing handoffs and erasing, writes every memory's snapshot,
    /// and waits for the memory actors' threads: their hold on the log and
    /// the snapshot store ends before this returns.
    async fn stop(self) -> anyhow::Result<()> {
        let name = self.runtime.name().to_string();
        self.router.send(StopRouting).await.with_context(|| format!("stopping the handoff router of {name}"))?;
        self.eraser.send(StopErasing).await.with_context(|| format!("stopping the eraser of {name}"))?;
        // What writes as the swarm's writer has stopped (the consolidator's
        // appends are fenced): the lease is given up for another replica.
        self.keeper.stop().await;
        let supervisor = &self.runtime.supervisor;
        supervisor
            .send(SnapshotAll)
            .await
            .with_context(|| format!("asking the memory actors of {name} for snapshots"))?;
        let workers = supervisor
            .send(StopWorkers)
            .await
            .with_context(|| format!("stopping the memory actors' threads of {name}"))?;
        tokio::task::spawn_blocking(move || workers.into_iter().for_each(|worker| drop(worker.join())))
            .await
            .context("waiting for the memory actors' threads")?;
        Ok(())
    }
}

/// Opens the log of one swarm, carries its pending erasures, and starts its
/// memories, consolidator, handoff router and eraser.
async fn start_swarm(
    config: SwarmConfig,
    embedder: Arc<dyn mneme_index::embed::Embedder>,
    node: &str,
) -> anyhow::Result<StartedSwarm> {
    start_swarm_with_key(config, embedder, node, None).await
}

/// [`start_swarm`], deriving ids with `id_key` rather than the swarm's own.
async fn start_swarm_with_key(
    config: SwarmConfig,
    embedder: Arc<dyn mneme_index::embed::Embedder>,
    node: &str,
    id_key: Option<mneme_events::IdKey>,
) -> anyhow::Result<StartedSwarm> {
    let swarm = config.swarm.name.clone();
    std::fs::create_dir_all(&config.log.data_dir)
        .with_context(|| format!("creating the data dir {}", config.log.data_dir.display()))?;
    warn_of_nats_access(&config)?;
    let id_key = match id_key {
        Some(key) => key,
        None => backend::id_key(&config)?,
    };
    let (opened, first_lease) = open_log_carrying_purges(&config, node).await?;
    let log = opened.log;
    if config.log.backend == mneme_actors::LogBackend::Nats {
        backend::check_id_key_is_shared(log.as_ref(), &id_key).await?;
    }
    let (keeper, lease) = LeaseKeeper::start(log.clone(), WRITER_LEASE, node, config.lease_ttl(), first_lease);
    let log_end_at_start = log.last_seq().await.context("reading the log's last sequence")?;
    let (store, lost_tail) = open_snapshot_store(&config, log_end_at_start)?;
    let deep = model::load_deep_model(&config)?;
    let memory_config = config.memory_config(embedder.clone()).with_deep_embedder(deep.clone());
    let text_index_dir = backend::text_index_dir(&config);
    let (text_index, discarded) = TextIndex::open(&text_index_dir)
        .with_context(|| format!("opening the text index in {}", text_index_dir.display()))?;
    if let Some(why) = discarded {
        tracing::warn!(%swarm, directory = %text_index_dir.display(), %why, "text index unusable; memories index their items again");
    }
    let mut supervisor = Supervisor::new(config.clone(), log.clone(), store, log_end_at_start, embedder)
        .with_text_index(text_index)
        .with_deep_embedder(deep.clone());
    if let Some(llm) = &config.compression.llm {
        let summarizer = crate::server::llm::OpenAiCompatibleSummarizer::from_config(llm)?;
        tracing::info!(%swarm, endpoint = summarizer.endpoint(), model = %llm.model, "phases are summarised by a model");
        supervisor = supervisor.with_phase_summaries(
            Arc::new(summarizer),
            llm.max_transcript_tokens,
            id_key.clone(),
            Some(lease.clone()),
        );
    }
    let lost_tails = supervisor.lost_tails();
    if let Some(found) = &lost_tail {
        lost_tails.record_before_start(&swarm, found);
    }
    let supervisor = supervisor.start();
    let writers = SwarmWriters::start(&config, &log, &supervisor, opened.broker.clone(), &id_key, &lease, deep).await?;
    let runtime = Arc::new(SwarmRuntime {
        config,
        log,
        supervisor,
        memory_config,
        consolidator: writers.consolidator,
        id_key,
        erasures: writers.erasures,
        lost_tails,
        lease,
        enrichment: writers.enrichment,
    });
    Ok(StartedSwarm { runtime, broker: opened.broker, router: writers.router, eraser: writers.eraser, keeper })
}

/// Warns that the swarm's NATS access is wider than it should be, now and
/// then every minute, when it is.
fn warn_of_nats_access(config: &SwarmConfig) -> anyhow::Result<()> {
    let Some(warning) = config.check_nats_access().map_err(anyhow::Error::msg)? else { return Ok(()) };
    let swarm = config.swarm.name.clone();
    tracing::warn!(%swarm, "{warning}");
    actix_web::rt::spawn(async move {
        let mut every_minute = tokio::time::interval(std::time::Duration::from_secs(60));
        every_minute.tick().await;
        loop {
            every_minute.tick().await;
            tracing::warn!(%swarm, "{warning}");
        }
    });
    Ok(())
}

/// Opens the swarm's log and, before any memory starts, carries the purges
/// recorded since the last start out of it (memories are then rebuilt
/// from it); answers the writer lease too, if this process took it.
async fn open_log_carrying_purges(
    config: &SwarmConfig,
    node: &str,
) -> anyhow::Result<(backend::OpenedLog, Option<mneme_nats::Lease>)> {
    let opened = backend::open_log_and_broker(config).await?;
    // The pass rewrites the log, so it is the writer's: on NATS it runs only
    // if this process takes the writer lease; the embedded log has one
    // process, and is opened again by the pass (its leases with it), so the
    // lease is taken after.
    match config.log.backend {
        mneme_actors::LogBackend::Embedded => {
            let (opened, _carried) = erasure::carry_pending(config, opened).await?;
            let lease = opened.log.take_lease(WRITER_LEASE, node).await.context("taking the writer lease")?;
            Ok((opened, lease))
        }
        mneme_actors::LogBackend::Nats => {
            let lease = opened.log.take_lease(WRITER_LEASE, node).await.context("taking the writer lease")?;
            if lease.is_some() {
                Ok((erasure::carry_pending(config, opened).await?.0, lease))
            } else {
                tracing::info!(swarm = %config.swarm.name, "another process holds the writer lease: purges are carried into the log where it is held");
                Ok((opened, None))
            }
        }
    }
}

/// Opens the swarm's snapshot store. Snapshots past the log's end
/// (`log_end`) hold events the log lost: none of them is used, the store
/// and the text index start empty, and every memory is rebuilt from the
/// log; the lost tail found is answered.
fn open_snapshot_store(
    config: &SwarmConfig,
    log_end: u64,
) -> anyhow::Result<(SnapshotStore, Option<mneme_actors::LostTail>)> {
    let snapshot_dir = backend::snapshot_dir(config);
    let open_store = || {
        SnapshotStore::open(&snapshot_dir)
            .with_context(|| format!("opening the snapshot store in {}", snapshot_dir.display()))
    };
    let store = open_store()?;
    let lost_tail = mneme_actors::snapshots_past_the_log(&store, &config.swarm.name, log_end)?;
    if lost_tail.is_none() {
        return Ok((store, None));
    }
    drop(store);
    erasure::remove_dir(&snapshot_dir)?;
    erasure::remove_dir(&backend::text_index_dir(config))?;
    Ok((open_store()?, lost_tail))
}

/// The actors of a swarm that append to its log as its writer, each
/// fenced by the writer lease: the consolidator, the handoff router and
/// the eraser (with the registry of what purges erased).
struct SwarmWriters {
    consolidator: actix::Addr<Consolidator>,
    router: actix::Addr<HandoffRouter>,
    eraser: actix::Addr<Eraser>,
    erasures: Arc<ErasureRegistry>,
    /// The enricher, when the swarm has a deep model.
    enrichment: Option<mneme_actors::EnricherHandle>,
}

impl SwarmWriters {
    async fn start(
        config: &SwarmConfig,
        log: &Arc<dyn mneme_nats::EventLog>,
        supervisor: &actix::Addr<Supervisor>,
        broker: Option<Arc<dyn mneme_nats::Broker>>,
        id_key: &mneme_events::IdKey,
        lease: &mneme_actors::LeaseGate,
        deep: Option<Arc<dyn mneme_index::embed::Embedder>>,
    ) -> anyhow::Result<SwarmWriters> {
        let swarm = &config.swarm.name;
        let schedule = ConsolidationSchedule {
            interval: config.consolidation_interval(),
            every_events: config.consolidation_every_events(),
        };
        let consolidator = Consolidator::new(
            swarm,
            log.clone(),
            supervisor.clone(),
            config.consolidation_policy(),
            schedule,
            id_key.clone(),
        )
        .with_lease(lease.clone())
        .start();
        let publisher =
            broker.map(|broker| HandoffPublisher { broker, encode: crate::service::handoffs::handoff_delivery_bytes });
        let router = HandoffRouter::new(
            swarm,
            log.clone(),
            supervisor.clone(),
            publisher,
            config.swarm.admit_unknown_agents,
            id_key.clone(),
        )
        .with_lease(lease.clone())
        .start();
        let erasures = ErasureRegistry::load(log.as_ref()).await.context("reading what purges erased")?;
        let eraser = Eraser::new(
            swarm,
            log.clone(),
            supervisor.clone(),
            erasures.clone(),
            config.swarm.admit_unknown_agents,
            id_key.clone(),
        )
        .with_lease(lease.clone())
        .start();
        let enrichment = deep.map(|model| {
            let status = mneme_actors::EnrichmentStatus::new(model.model_id());
            let pace = mneme_actors::EnrichmentPace {
                batch: config.enrichment.batch,
                idle: std::time::Duration::from_millis(config.enrichment.idle_ms),
                max_event_bytes: config.log.max_event_bytes,
            };
            let addr = mneme_actors::Enricher::new(
                swarm,
                log.clone(),
                supervisor.clone(),
                model,
                id_key.clone(),
                pace,
                status.clone(),
            )
            .with_lease(Some(lease.clone()))
            .start();
            mneme_actors::EnricherHandle { addr, status }
        });
        Ok(SwarmWriters { consolidator, router, eraser, erasures, enrichment })
    }
}

/// This process's name among the processes serving the same swarms, as
/// lease holders are named: `MNEME_NODE` if set, else the host's name and
/// the HTTP port (unique on a host, and the same after a restart, so a
/// process that restarts takes its own lease back at once).
fn node_name(first: &SwarmConfig, front: &Front) -> String {
    if let Ok(node) = std::env::var(NODE_VARIABLE)
        && !node.trim().is_empty()
    {
        return node.trim().to_string();
    }
    let host = host_name();
    match front {
        Front::Http => format!("{host}-{}", first.http.bind.port()),
        Front::McpStdio(_) => format!("{host}-mcp-{}", std::process::id()),
    }
}

/// This host's name, or `localhost`.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|host| host.trim().to_string())
        .filter(|host| !host.is_empty())
        .unwrap_or_else(|| "localhost".to_string())
}

/// The environment variable naming this process among those serving the
/// same swarms (see [`node_name`]).
pub const NODE_VARIABLE: &str = "MNEME_NODE";

/// The process's Prometheus recorder: `metrics` has one global recorder,
/// installed by the first server of the process and shared by any later
/// one (a test that restarts a server in the same process).
fn metrics_recorder() -> anyhow::Result<PrometheusHandle> {
    static HANDLE: std::sync::OnceLock<PrometheusHandle> = std::sync::OnceLock::new();
    if let Some(handle) = HANDLE.get() {
        return Ok(handle.clone());
    }
    let handle = PrometheusBuilder::new().install_recorder().context("installing the metrics recorder")?;
    Ok(HANDLE.get_or_init(|| handle).clone())
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("listening for SIGINT")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}
