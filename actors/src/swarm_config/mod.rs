//! `swarm.toml`: one file that configures a swarm. Unknown keys are errors,
//! so a misspelt setting never silently falls back to a default; secrets may
//! come from the environment instead, so a shared file need not hold any.
//!
//! Agents are in `agents.rs`, consolidation in `consolidation.rs`, API
//! tokens and NATS credentials in `access.rs`.

mod access;
mod agents;
mod compression;
mod consolidation;
mod deployment;
mod enrichment;
mod files;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mneme_index::embed::Embedder;
use mneme_index::{AnnPolicy, TextIndex};
use mneme_projections::{MemoryConfig, RetrievalWeights, SharedContent};
use serde::Deserialize;

pub use access::{ApiToken, HttpTokenEntry, Secret, api_token_environment_variable};
pub use agents::AgentConfig;
pub use compression::{CompressionSection, LlmSection};
pub use consolidation::ConsolidationSection;
pub use deployment::{PlacementSection, SYSTEM_READER, SYSTEM_SWARM};
pub use enrichment::{EnrichmentModel, EnrichmentSection};
pub use files::{EmbedderKind, EmbedderSection, HOME_ENV, mneme_home, model_search_path};

use crate::error::ActorsError;

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwarmConfig {
    pub swarm: SwarmSection,
    #[serde(default)]
    pub log: LogSection,
    #[serde(default)]
    pub http: HttpSection,
    #[serde(default)]
    pub memory: MemorySection,
    #[serde(default)]
    pub embedder: EmbedderSection,
    #[serde(default)]
    /// Defaults of hybrid retrieval; a search request may override them.
    pub retrieval: RetrievalWeights,
    #[serde(default)]
    pub compression: CompressionSection,
    /// The deep tier: items' vectors from a stronger model, off the write
    /// path.
    #[serde(default)]
    pub enrichment: EnrichmentSection,
    #[serde(default)]
    pub consolidation: ConsolidationSection,
    #[serde(default)]
    pub handoffs: HandoffsSection,
    #[serde(default)]
    pub core: CoreSection,
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
    /// Absent: every process given this file holds the swarm. Present (on
    /// NATS): the processes given it share the deployment's swarms, this
    /// one held by `holders` of them.
    #[serde(default)]
    pub placement: Option<PlacementSection>,
    /// `http.tokens` with their secrets from the file or the environment,
    /// resolved and checked at load.
    #[serde(skip)]
    api_tokens: Vec<ApiToken>,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwarmSection {
    /// The swarm's name: letters, digits, `_` and `-`; clients name it (`system` is reserved).
    pub name: String,
    /// Start a memory actor for an agent first seen on the log.
    #[serde(default = "yes")]
    pub admit_unknown_agents: bool,
    /// Agents of this swarm that may publish to the deployment's system
    /// layer (events of swarm `system`, scope `system`), which every agent
    /// of every swarm reads. Empty: none of them may.
    #[serde(default)]
    pub system_publishers: Vec<String>,
}

#[derive(Debug, Clone, Copy, serde::Serialize, Deserialize, schemars::JsonSchema, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LogBackend {
    /// The sled log under `data_dir`.
    #[default]
    Embedded,
    /// NATS JetStream at `nats_url`.
    Nats,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    /// Where the log is: `embedded` (a sled log under `data_dir`, nothing else to run) or `nats` (JetStream at `nats_url`).
    #[serde(default)]
    pub backend: LogBackend,
    /// Where the embedded log, snapshots and indexes live.
    #[serde(default = "default_data_dir")]
    #[schemars(extend("default" = "<Mneme's home>/data"))]
    pub data_dir: PathBuf,
    /// Where the embedded log keeps the deployment's system layer (its log,
    /// snapshots and text index; on NATS only the latter two): by default
    /// `<data_dir>/system` of the first swarm given.
    #[serde(default)]
    pub system_data_dir: Option<PathBuf>,
    /// One server's URL, or the URLs of several servers of one cluster
    /// separated by commas: the client fails over between them.
    #[serde(default = "default_nats_url")]
    pub nats_url: String,
    /// JetStream drops a re-published event id inside this window; memories also skip ids they already applied, whatever the window.
    #[serde(default = "default_duplicate_window_secs")]
    pub duplicate_window_secs: u64,
    /// Largest single event accepted, in bytes.
    #[serde(default = "default_max_event_bytes")]
    pub max_event_bytes: usize,
    /// JetStream stream replicas (3 on a three-node cluster).
    #[serde(default = "default_replicas")]
    pub replicas: usize,
    /// Events older than this are dropped by JetStream; 0 keeps them forever.
    #[serde(default)]
    pub max_age_secs: u64,
    /// How long an append keeps publishing again, with the same ids, what
    /// JetStream did not acknowledge (a restarting server, a stream electing
    /// a leader), before the request fails with 503; at most half the
    /// duplicate window. 0: fail at once and let the publisher retry.
    #[serde(default = "default_publish_retry_ms")]
    pub publish_retry_ms: u64,
    /// How long a read of the log (a replay, an events page, the dead
    /// letters) keeps trying again after failures that a restarting server
    /// or an election causes, before the request fails with 503. 0: fail at
    /// once.
    #[serde(default = "default_read_retry_ms")]
    pub read_retry_ms: u64,
    /// On NATS, how long the swarm's writer lease (the consolidator, the
    /// handoff router, the phase summariser and the eraser run where it is
    /// held) lives without renewal: when its holder dies, another process
    /// takes it over within about this long plus a third of it.
    #[serde(default = "default_lease_ttl_ms")]
    pub lease_ttl_ms: u64,
    /// Log in to NATS as this user, with `nats_password`; or with
    /// `nats_token`; or neither. `MNEME_NATS_USER`, `MNEME_NATS_PASSWORD` and
    /// `MNEME_NATS_TOKEN` override these; see [`SwarmConfig::nats_credentials`].
    #[serde(default)]
    pub nats_user: Option<String>,
    /// The password for `nats_user` (better: `MNEME_NATS_PASSWORD`, so the file holds no secret).
    #[serde(default)]
    pub nats_password: Option<Secret>,
    /// A NATS token instead of a user (better: `MNEME_NATS_TOKEN`).
    #[serde(default)]
    pub nats_token: Option<Secret>,
    /// With API tokens configured, Mneme refuses to start on NATS without
    /// credentials: a NATS server that lets anyone in bypasses every token
    /// and scope (queries, publishing as any agent, forged handoffs). `true`
    /// starts anyway, with a warning at start and every minute.
    #[serde(default)]
    pub allow_unauthenticated_nats: bool,
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    /// Address the HTTP API, MCP and the web view listen on.
    #[serde(default = "default_bind")]
    pub bind: SocketAddr,
    /// Largest request body accepted by `POST /v1/events`.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: usize,
    /// Queries one caller (an API token; the agent queried when the API
    /// has no tokens, and over NATS) may have in flight at once; past it,
    /// 429. Memory actors share worker threads: one caller's queue of
    /// expensive queries delays every agent on the same thread.
    #[serde(default = "default_max_queries_in_flight")]
    pub max_queries_in_flight: usize,
    /// Streams (`follow=true` of the log and of handoffs) one caller may
    /// hold open at once; past it, 429.
    #[serde(default = "default_max_streams_per_caller")]
    pub max_streams_per_caller: usize,
    /// Streams the server holds open at once, every caller together; past
    /// it, 429. Each holds a connection, a task and a log subscription.
    #[serde(default = "default_max_streams")]
    pub max_streams: usize,
    /// Events one caller may publish a second, on average (0: no quota);
    /// past it, 429 with `Retry-After`. Memories apply about a thousand
    /// items a second each: a caller much faster than that builds a
    /// backlog every other agent's queries wait behind.
    #[serde(default = "default_publish_events_per_sec")]
    pub publish_events_per_sec: u32,
    /// Bytes of request bodies one caller may publish a second, on average
    /// (0: no quota).
    #[serde(default = "default_publish_bytes_per_sec")]
    pub publish_bytes_per_sec: u32,
    /// A caller may publish this many seconds' worth of either quota at
    /// once; a single request of more is refused (413, split it).
    #[serde(default = "default_publish_burst_secs")]
    pub publish_burst_secs: u32,
    /// Bearer tokens the API accepts, as written in the file; the secrets
    /// after environment overrides are in [`SwarmConfig::api_tokens`].
    #[serde(default)]
    pub tokens: Vec<HttpTokenEntry>,
    /// The base URL other processes send a client to when this one holds a
    /// placed swarm they do not (`http://host:port`); by default
    /// `http://<bind>`, with the host's name for an unspecified address.
    #[serde(default)]
    pub advertise_url: Option<String>,
}

/// What Mneme assembles when one agent hands work to another.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HandoffsSection {
    /// Token budget of the context bundle packed into a handoff: what the
    /// receiving agent reads first, so small enough to leave it room to work.
    #[serde(default = "default_bundle_tokens")]
    pub bundle_tokens: usize,
}

/// Core memory: the blocks an agent edits itself.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CoreSection {
    /// Tokens a block may hold; a longer edit is refused with this limit
    /// named.
    #[serde(default = "default_core_block_tokens")]
    pub block_tokens: usize,
    /// Blocks an agent may have; a new block past it is refused. Core
    /// memory shows at most this many, the most recently written.
    #[serde(default = "default_core_max_blocks")]
    pub max_blocks: usize,
}

/// The most blocks `core.max_blocks` may allow.
pub const MAX_CORE_BLOCKS: usize = 1024;

fn default_core_max_blocks() -> usize {
    32
}

/// The most tokens `core.block_tokens` may allow.
pub const MAX_CORE_BLOCK_TOKENS: usize = 8000;

fn default_core_block_tokens() -> usize {
    500
}

impl Default for CoreSection {
    fn default() -> Self {
        CoreSection { block_tokens: default_core_block_tokens(), max_blocks: default_core_max_blocks() }
    }
}

#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    /// Recent turns (messages, tool results) kept verbatim, in BPE tokens.
    #[serde(default = "default_working_tier_tokens")]
    pub working_tier_tokens: usize,
    /// A single turn longer than this is cut in the working tier (never in the log).
    #[serde(default = "default_working_item_max_tokens")]
    pub working_item_max_tokens: usize,
    /// Take a snapshot after this many applied events (or a quarter of the
    /// memory's item count, when that is larger)...
    #[serde(default = "default_checkpoint_every_events")]
    pub checkpoint_every_events: u64,
    /// ...or this long after the first event not yet in a snapshot.
    #[serde(default = "default_checkpoint_interval_ms")]
    pub checkpoint_interval_ms: u64,
    /// Messages one sender may have queued in a memory actor's mailbox
    /// (actix counts per sender). The feed keeps one batch in flight, so
    /// ingest backpressure does not depend on it.
    #[serde(default = "default_mailbox_capacity")]
    pub mailbox_capacity: usize,
    /// Threads that run memory actors (indexing, queries, snapshots).
    #[serde(default = "default_worker_threads")]
    pub worker_threads: usize,
    /// Vectors a set (a memory's own, or the swarm's of shared items)
    /// holds before it grows an HNSW graph beside the exact scan, built off
    /// the write path by the process's builder threads (half the cores) and
    /// saved beside the snapshots; 0: never.
    #[serde(default = "default_vector_graph_from")]
    pub vector_graph_from: usize,
    /// Candidates a search of a vector graph keeps (hnsw_rs's `ef`): wider
    /// finds more of the nearest, slower.
    #[serde(default = "default_vector_graph_breadth")]
    pub vector_graph_breadth: usize,
}

impl MemorySection {
    /// When vector sets grow a graph, and how widely it is searched.
    pub fn vector_graph(&self) -> AnnPolicy {
        let defaults = AnnPolicy::default();
        match self.vector_graph_from {
            0 => AnnPolicy::EXACT,
            // The tail scanned exactly stays under an eighth of where the
            // graph starts.
            from => AnnPolicy {
                graph_from: from,
                batch: (from / 8).clamp(64, defaults.batch),
                breadth: self.vector_graph_breadth,
            },
        }
    }
}

fn yes() -> bool {
    true
}
fn default_data_dir() -> PathBuf {
    files::mneme_home().join("data")
}
fn default_nats_url() -> String {
    "nats://127.0.0.1:4222".to_string()
}
fn default_duplicate_window_secs() -> u64 {
    120
}
fn default_max_event_bytes() -> usize {
    1024 * 1024
}
fn default_replicas() -> usize {
    1
}
fn default_publish_retry_ms() -> u64 {
    20_000
}
fn default_read_retry_ms() -> u64 {
    10_000
}
/// A lease is renewed three times per time to live: much shorter, and a
/// busy broker's answers come too late; much longer, and failover waits.
const MIN_LEASE_TTL_MS: u64 = 500;
const MAX_LEASE_TTL_MS: u64 = 600_000;
fn default_lease_ttl_ms() -> u64 {
    3_000
}
fn default_bind() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7700))
}
fn default_max_request_bytes() -> usize {
    16 * 1024 * 1024
}
fn default_max_queries_in_flight() -> usize {
    4
}
fn default_max_streams_per_caller() -> usize {
    8
}
fn default_max_streams() -> usize {
    256
}
fn default_publish_events_per_sec() -> u32 {
    1_000
}
fn default_publish_bytes_per_sec() -> u32 {
    4 * 1024 * 1024
}
fn default_publish_burst_secs() -> u32 {
    5
}
fn default_working_tier_tokens() -> usize {
    MemoryConfig::default().working_tier_tokens
}
fn default_working_item_max_tokens() -> usize {
    MemoryConfig::default().working_item_max_tokens
}
fn default_checkpoint_every_events() -> u64 {
    1000
}
fn default_checkpoint_interval_ms() -> u64 {
    2000
}
fn default_mailbox_capacity() -> usize {
    16
}
fn default_vector_graph_from() -> usize {
    AnnPolicy::default().graph_from
}
fn default_vector_graph_breadth() -> usize {
    AnnPolicy::default().breadth
}
fn default_worker_threads() -> usize {
    2
}
fn default_bundle_tokens() -> usize {
    2000
}
/// Beyond this a handoff bundle would crowd out the receiver's own context
/// in any model Mneme targets.
const MAX_BUNDLE_TOKENS: usize = 100_000;

impl Default for LogSection {
    fn default() -> Self {
        LogSection {
            backend: LogBackend::default(),
            data_dir: default_data_dir(),
            system_data_dir: None,
            nats_url: default_nats_url(),
            duplicate_window_secs: default_duplicate_window_secs(),
            max_event_bytes: default_max_event_bytes(),
            replicas: default_replicas(),
            max_age_secs: 0,
            publish_retry_ms: default_publish_retry_ms(),
            read_retry_ms: default_read_retry_ms(),
            lease_ttl_ms: default_lease_ttl_ms(),
            nats_user: None,
            nats_password: None,
            nats_token: None,
            allow_unauthenticated_nats: false,
        }
    }
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection {
            bind: default_bind(),
            max_request_bytes: default_max_request_bytes(),
            max_queries_in_flight: default_max_queries_in_flight(),
            max_streams_per_caller: default_max_streams_per_caller(),
            max_streams: default_max_streams(),
            publish_events_per_sec: default_publish_events_per_sec(),
            publish_bytes_per_sec: default_publish_bytes_per_sec(),
            publish_burst_secs: default_publish_burst_secs(),
            tokens: Vec::new(),
            advertise_url: None,
        }
    }
}

impl Default for HandoffsSection {
    fn default() -> Self {
        HandoffsSection { bundle_tokens: default_bundle_tokens() }
    }
}

impl Default for MemorySection {
    fn default() -> Self {
        MemorySection {
            working_tier_tokens: default_working_tier_tokens(),
            working_item_max_tokens: default_working_item_max_tokens(),
            checkpoint_every_events: default_checkpoint_every_events(),
            checkpoint_interval_ms: default_checkpoint_interval_ms(),
            mailbox_capacity: default_mailbox_capacity(),
            worker_threads: default_worker_threads(),
            vector_graph_from: default_vector_graph_from(),
            vector_graph_breadth: default_vector_graph_breadth(),
        }
    }
}

impl SwarmConfig {
    /// A swarm with every setting at its default.
    pub fn with_name(name: &str) -> SwarmConfig {
        SwarmConfig {
            swarm: SwarmSection { name: name.to_string(), admit_unknown_agents: true, system_publishers: Vec::new() },
            log: LogSection::default(),
            http: HttpSection::default(),
            memory: MemorySection::default(),
            embedder: EmbedderSection::default(),
            retrieval: RetrievalWeights::default(),
            compression: CompressionSection::default(),
            enrichment: EnrichmentSection::default(),
            consolidation: ConsolidationSection::default(),
            handoffs: HandoffsSection::default(),
            core: CoreSection::default(),
            agents: Vec::new(),
            placement: None,
            api_tokens: Vec::new(),
        }
    }

    /// Reads, parses and checks `path`, with secrets overridden from the
    /// process environment.
    pub fn load(path: &Path) -> Result<SwarmConfig, ActorsError> {
        let text = std::fs::read_to_string(path).map_err(|error| ActorsError::Config {
            path: path.display().to_string(),
            message: format!("cannot read the file: {error}"),
        })?;
        let process_environment = |variable: &str| std::env::var(variable).ok();
        SwarmConfig::parse_with_environment(&text, &path.display().to_string(), &process_environment)
    }

    /// Parses and checks a configuration as written, without environment
    /// overrides; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<SwarmConfig, ActorsError> {
        SwarmConfig::parse_with_environment(text, origin, &|_| None)
    }

    /// Parses a configuration, lets `environment` override its secrets
    /// (`MNEME_HTTP_TOKEN_<NAME>`, `MNEME_NATS_*`), then checks the result: a
    /// secret given only in the environment is checked like one in the file.
    pub fn parse_with_environment(
        text: &str,
        origin: &str,
        environment: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SwarmConfig, ActorsError> {
        let config_error = |message: String| ActorsError::Config { path: origin.to_string(), message };
        let mut config: SwarmConfig =
            toml::from_str(text).map_err(|error| config_error(describe_toml_error(text, &error)))?;
        config.apply_environment(environment);
        config.check().map_err(config_error)?;
        config.api_tokens = config.resolve_api_tokens().map_err(config_error)?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        mneme_events::validate_name(&self.swarm.name)
            .map_err(|error| name_error("swarm.name", &self.swarm.name, error))?;
        if self.swarm.name == SYSTEM_SWARM {
            return Err(format!(
                "swarm.name = {SYSTEM_SWARM:?} is reserved for the deployment's system layer; name the swarm otherwise"
            ));
        }
        for publisher in &self.swarm.system_publishers {
            mneme_events::validate_name(publisher)
                .map_err(|error| name_error("swarm.system_publishers", publisher, error))?;
        }
        agents::check_agents(&self.agents)?;
        let positive = [
            ("memory.working_tier_tokens", self.memory.working_tier_tokens as u64),
            ("memory.working_item_max_tokens", self.memory.working_item_max_tokens as u64),
            ("memory.checkpoint_every_events", self.memory.checkpoint_every_events),
            ("memory.checkpoint_interval_ms", self.memory.checkpoint_interval_ms),
            ("memory.mailbox_capacity", self.memory.mailbox_capacity as u64),
            ("memory.worker_threads", self.memory.worker_threads as u64),
            ("memory.vector_graph_breadth", self.memory.vector_graph_breadth as u64),
            ("log.max_event_bytes", self.log.max_event_bytes as u64),
            ("log.replicas", self.log.replicas as u64),
            ("http.max_request_bytes", self.http.max_request_bytes as u64),
            ("http.max_queries_in_flight", self.http.max_queries_in_flight as u64),
            ("http.publish_burst_secs", u64::from(self.http.publish_burst_secs)),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(format!("{key} = 0; expected a positive number"));
            }
        }
        let weights = [
            ("retrieval.rrf_k", self.retrieval.rrf_k),
            ("retrieval.bm25_weight", self.retrieval.bm25),
            ("retrieval.vector_weight", self.retrieval.vector),
            ("retrieval.graph_weight", self.retrieval.graph),
            ("retrieval.recency_weight", self.retrieval.recency),
            ("retrieval.usage_weight", self.retrieval.usage),
            ("retrieval.context_share", self.retrieval.context_share),
            ("retrieval.time_weight", self.retrieval.time_weight),
            ("retrieval.kind_weight", self.retrieval.kind_weight),
            ("retrieval.speaker_weight", self.retrieval.speaker_weight),
            ("retrieval.identifier_weight", self.retrieval.identifier_weight),
            ("retrieval.brevity_floor", self.retrieval.brevity_floor),
            ("retrieval.expansion_weight", self.retrieval.expansion_weight),
            ("retrieval.session_weight", self.retrieval.session_weight),
        ];
        for (key, value) in weights {
            if !value.is_finite() || value < 0.0 {
                return Err(format!("{key} = {value}; expected a number of zero or more"));
            }
        }
        if self.memory.working_item_max_tokens > self.memory.working_tier_tokens {
            return Err(format!(
                "memory.working_item_max_tokens = {} is larger than memory.working_tier_tokens = {}; \
                 expected at most the tier's budget",
                self.memory.working_item_max_tokens, self.memory.working_tier_tokens
            ));
        }
        self.compression.check()?;
        self.enrichment.check()?;
        self.consolidation.check()?;
        if !(1..=MAX_BUNDLE_TOKENS).contains(&self.handoffs.bundle_tokens) {
            return Err(format!(
                "handoffs.bundle_tokens = {}; expected a number of tokens from 1 to {MAX_BUNDLE_TOKENS}",
                self.handoffs.bundle_tokens
            ));
        }
        if !(1..=MAX_CORE_BLOCK_TOKENS).contains(&self.core.block_tokens) {
            return Err(format!(
                "core.block_tokens = {}; expected a number of tokens from 1 to {MAX_CORE_BLOCK_TOKENS}",
                self.core.block_tokens
            ));
        }
        if self.http.max_streams_per_caller == 0 || self.http.max_streams == 0 {
            return Err(format!(
                "http.max_streams_per_caller = {} and http.max_streams = {}; each must be at least 1",
                self.http.max_streams_per_caller, self.http.max_streams
            ));
        }
        if !(1..=MAX_CORE_BLOCKS).contains(&self.core.max_blocks) {
            return Err(format!(
                "core.max_blocks = {}; expected a number of blocks from 1 to {MAX_CORE_BLOCKS}",
                self.core.max_blocks
            ));
        }
        if !(MIN_LEASE_TTL_MS..=MAX_LEASE_TTL_MS).contains(&self.log.lease_ttl_ms) {
            return Err(format!(
                "log.lease_ttl_ms = {}; expected milliseconds from {MIN_LEASE_TTL_MS} to {MAX_LEASE_TTL_MS}",
                self.log.lease_ttl_ms
            ));
        }
        self.check_deployment()?;
        self.check_nats_credentials()?;
        check_nats_url(&self.log.nats_url)?;
        Ok(())
    }

    /// How long the swarm's writer lease lives without renewal (on NATS).
    pub fn lease_ttl(&self) -> Duration {
        Duration::from_millis(self.log.lease_ttl_ms)
    }

    /// Token budget of the context bundle Mneme packs into a handoff.
    pub fn handoff_bundle_tokens(&self) -> usize {
        self.handoffs.bundle_tokens
    }

    /// The memory settings, with the embedder the caller loaded.
    pub fn memory_config(&self, embedder: Arc<dyn Embedder>) -> MemoryConfig {
        let dimensions = embedder.dimensions();
        MemoryConfig {
            working_tier_tokens: self.memory.working_tier_tokens,
            working_item_max_tokens: self.memory.working_item_max_tokens,
            embedder,
            // Loaded by the caller too, when `[enrichment]` runs a model
            // (see `MemoryConfig::with_deep_embedder`).
            deep_embedder: None,
            large_output_bytes: self.compression.large_output_bytes,
            // The system layer's one memory reads every author's events:
            // who may publish there is checked before the log.
            admitted_agents: (!self.swarm.admit_unknown_agents && self.swarm.name != SYSTEM_SWARM)
                .then(|| self.agents.iter().map(|agent| agent.name.clone()).collect()),
            handoff_bundle_tokens: self.handoffs.bundle_tokens,
            // Fresh per call: the memories built from one config (one
            // supervisor's) share it.
            shared: SharedContent::with_vector_graph(
                TextIndex::new().expect("an empty in-RAM index can be created"),
                dimensions,
                self.memory.vector_graph(),
            ),
            // Set where the snapshot store is known (the supervisor).
            vector_graphs: None,
        }
    }

    pub fn checkpoint_interval(&self) -> Duration {
        Duration::from_millis(self.memory.checkpoint_interval_ms)
    }

    pub fn decode_limits(&self) -> mneme_events::DecodeLimits {
        mneme_events::DecodeLimits { max_event_bytes: self.log.max_event_bytes }
    }
}

/// A NATS URL with credentials in it (`nats://user:secret@host`) would put
/// the secret in logs and in `Debug` output; they belong in `log.nats_*`.
/// The URL is not repeated: it holds the secret.
pub fn check_nats_url(urls: &str) -> Result<(), String> {
    let authority_of = |url: &str| {
        let authority = url.split_once("://").map_or(url, |(_, rest)| rest);
        authority.split('/').next().unwrap_or("").to_string()
    };
    if urls.split(',').any(|url| authority_of(url.trim()).contains('@')) {
        return Err("log.nats_url holds credentials (user:password@ or token@); expected a URL without them, \
                    with the credentials in log.nats_user and log.nats_password or log.nats_token, or in \
                    MNEME_NATS_USER, MNEME_NATS_PASSWORD or MNEME_NATS_TOKEN"
            .to_string());
    }
    Ok(())
}

fn name_error(key: &str, value: &str, error: mneme_events::ValidationError) -> String {
    format!("{key} = {value:?} is not a valid name: {}", error.message)
}

/// Says where a TOML or type error is, by line and key, with toml's message.
/// toml's own rendering quotes the offending line, and that line may hold a
/// secret (a token pasted without quotes, say); this one never quotes it,
/// and for a key that holds a secret it drops toml's message too, which can
/// repeat a mistyped value.
fn describe_toml_error(text: &str, error: &toml::de::Error) -> String {
    let message = error.message().trim_end();
    // toml gives an error about the whole document (a missing `[swarm]`) an
    // empty span at its start: there is no line to name.
    let span = error.span().filter(|span| span.end > 0);
    let Some(before) = span.and_then(|span| text.get(..span.start)) else {
        return message.to_string();
    };
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let line_number = before.matches('\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    let line = text[line_start..].lines().next().unwrap_or("");
    let table = table_of_header(line).or_else(|| before[..line_start].lines().rev().find_map(table_of_header));
    let key = line.split_once('=').map(|(key, _)| key.trim()).filter(|key| is_plain_key(key));
    let location = match (table, key) {
        (Some(table), Some(key)) => format!("{table}.{key} at line {line_number}, column {column}"),
        (None, Some(key)) => format!("{key} at line {line_number}, column {column}"),
        (Some(table), None) => format!("[{table}] at line {line_number}, column {column}"),
        (None, None) => format!("line {line_number}, column {column}"),
    };
    // Any secret key on the line (dotted, quoted, or inside an inline
    // table) is reason enough: toml's message may repeat the value.
    let names_a_secret = line
        .split(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
        .any(|word| access::SECRET_KEYS.contains(&word));
    if names_a_secret {
        return format!("{location}: the value is not shown because this key holds a secret; expected a quoted string");
    }
    format!("{location}: {message}")
}

/// `log` for a line `[log]`, `agents` for `[[agents]]`; `None` for any other
/// line.
fn table_of_header(line: &str) -> Option<&str> {
    let line = line.trim();
    let header = line.strip_prefix('[')?;
    let end = header.rfind(']')?;
    Some(header[..end].trim_matches(['[', ']']).trim()).filter(|table| is_plain_key(table))
}

fn is_plain_key(key: &str) -> bool {
    !key.is_empty() && key.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.'))
}

/// The message of the error `text` fails with, for tests of every part of
/// the file.
#[cfg(test)]
fn error_of(text: &str) -> String {
    SwarmConfig::parse(text, "swarm.toml").unwrap_err().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `[memory] vector_graph_from` and `vector_graph_breadth` set when
    /// vector sets grow a graph; 0 never grows one; a breadth of 0 is
    /// refused.
    #[test]
    fn the_vector_graph_settings_reach_the_shared_content() {
        let config = SwarmConfig::parse(
            "[swarm]\nname = \"demo\"\n[memory]\nvector_graph_from = 5000\nvector_graph_breadth = 64\n",
            "t",
        )
        .unwrap();
        let policy = AnnPolicy { graph_from: 5000, batch: 625, breadth: 64 };
        assert_eq!(config.memory.vector_graph(), policy);
        let embedder: Arc<dyn Embedder> = Arc::new(mneme_index::embed::HashedNgramEmbedder::default());
        assert_eq!(config.memory_config(embedder).shared.vector_graph(), policy);
        let never = SwarmConfig::parse("[swarm]\nname = \"demo\"\n[memory]\nvector_graph_from = 0\n", "t").unwrap();
        assert_eq!(never.memory.vector_graph(), AnnPolicy::EXACT);
        assert_eq!(SwarmConfig::with_name("demo").memory.vector_graph(), AnnPolicy::default());
        let narrow = error_of("[swarm]\nname = \"demo\"\n[memory]\nvector_graph_breadth = 0\n");
        assert!(narrow.contains("memory.vector_graph_breadth"), "{narrow}");
    }

    /// `[retrieval]` is the projections' `RetrievalWeights`: the keys the
    /// docs/src/configuration.md documents, defaults for what is left out, and a key it does
    /// not know refused.
    #[test]
    fn the_retrieval_section_is_the_retrieval_weights() {
        let config = SwarmConfig::parse("[swarm]\nname = \"demo\"\n[retrieval]\nbm25_weight = 2.5\n", "t").unwrap();
        let defaults = RetrievalWeights::default();
        assert_eq!(config.retrieval, RetrievalWeights { bm25: 2.5, ..defaults });
        assert_eq!(SwarmConfig::with_name("demo").retrieval, defaults);
        let unknown = error_of("[swarm]\nname = \"demo\"\n[retrieval]\nbm25 = 2.5\n");
        assert!(unknown.contains("bm25"), "{unknown}");
        let negative = error_of("[swarm]\nname = \"demo\"\n[retrieval]\nrecency_weight = -1\n");
        assert!(negative.contains("retrieval.recency_weight"), "{negative}");
    }

    #[test]
    fn the_shipped_swarm_toml_is_valid() {
        let text = include_str!("../../../swarm.toml");
        let config = SwarmConfig::parse(text, "swarm.toml").unwrap();
        assert_eq!(config.swarm.name, "demo");
        assert!(!config.agents.is_empty());
    }

    /// The shipped file keeps `[compression.llm]` commented out so that the
    /// default needs no model; the example must still be right when a user
    /// uncomments it.
    #[test]
    fn the_commented_llm_example_in_swarm_toml_is_valid() {
        let text = include_str!("../../../swarm.toml");
        let mut uncommented = String::new();
        let mut in_example = false;
        for line in text.lines() {
            in_example = (in_example && !line.trim().is_empty()) || line == "# [compression.llm]";
            uncommented.push_str(if in_example { line.strip_prefix("# ").unwrap_or(line) } else { line });
            uncommented.push('\n');
        }
        let llm = SwarmConfig::parse(&uncommented, "swarm.toml").unwrap().compression.llm.unwrap();
        assert_eq!(llm.url, "http://127.0.0.1:8080/v1");
        assert_eq!(llm.api_key_env, "MNEME_LLM_API_KEY");
    }

    #[test]
    fn a_minimal_file_takes_defaults() {
        let config = SwarmConfig::parse("[swarm]\nname = \"s\"\n", "swarm.toml").unwrap();
        assert_eq!(config, SwarmConfig::with_name("s"));
    }

    #[test]
    fn a_misspelt_key_is_named() {
        let message = error_of("[swarm]\nname = \"s\"\n[memory]\nworking_tier_token = 5\n");
        assert!(message.contains("working_tier_token"), "{message}");
    }

    #[test]
    fn an_unsafe_swarm_name_is_refused_with_key_and_value() {
        let message = error_of("[swarm]\nname = \"my.swarm\"\n");
        assert!(message.contains("swarm.name") && message.contains("my.swarm"), "{message}");
    }

    #[test]
    fn zero_budgets_are_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[memory]\nworking_tier_tokens = 0\n");
        assert!(message.contains("memory.working_tier_tokens = 0"), "{message}");
    }

    #[test]
    fn an_unknown_backend_is_refused_naming_key_value_and_expected() {
        let message = error_of("[swarm]\nname = \"s\"\n[log]\nbackend = \"kafka\"\n");
        assert!(
            message.contains("log.backend at line 4") && message.contains("kafka") && message.contains("`nats`"),
            "{message}"
        );
    }

    #[test]
    fn a_missing_key_names_its_table_and_a_missing_table_the_key() {
        let message = error_of("[swarm]\nname = \"s\"\n[compression.llm]\nurl = \"http://h/v1\"\n");
        assert!(message.contains("[compression.llm] at line 3") && message.contains("`model`"), "{message}");
        let message = error_of("[log]\nbackend = \"nats\"\n");
        assert!(message.ends_with("swarm.toml: missing field `swarm`"), "{message}");
    }

    #[test]
    fn a_secret_on_a_dotted_quoted_or_inline_key_is_never_repeated() {
        for line in [
            "log.nats_password = 9876543210123",
            "\"nats_token\" = 9876543210123",
            "http.tokens = [{ name = \"a\", token = 9876543210123 }]",
        ] {
            let message = error_of(&format!("[swarm]\nname = \"s\"\n{line}\n"));
            assert!(!message.contains("9876543210123") && message.contains("secret"), "{line}: {message}");
        }
    }

    #[test]
    fn credentials_in_the_nats_url_are_refused_without_repeating_them() {
        let message =
            error_of("[swarm]\nname = \"s\"\n[log]\nnats_url = \"nats://mneme:hunter2-secret@127.0.0.1:4222\"\n");
        assert!(message.contains("log.nats_url holds credentials") && !message.contains("hunter2"), "{message}");
        assert!(check_nats_url("nats://127.0.0.1:4222").is_ok());
        assert!(check_nats_url("tls://host.example:4222/path@x").is_ok());
        // A cluster's list is checked URL by URL.
        assert!(check_nats_url("nats://127.0.0.1:4222,nats://127.0.0.1:4223").is_ok());
        assert!(check_nats_url("nats://127.0.0.1:4222,nats://mneme:hunter2@127.0.0.1:4223").is_err());
    }

    #[test]
    fn handoff_bundles_default_to_2000_tokens_and_stay_in_range() {
        assert_eq!(SwarmConfig::with_name("s").handoff_bundle_tokens(), 2000);
        let config = SwarmConfig::parse("[swarm]\nname = \"s\"\n[handoffs]\nbundle_tokens = 500\n", "swarm.toml");
        assert_eq!(config.unwrap().handoff_bundle_tokens(), 500);
        for (value, shown) in [("0", "0"), ("100_001", "100001")] {
            let message = error_of(&format!("[swarm]\nname = \"s\"\n[handoffs]\nbundle_tokens = {value}\n"));
            assert!(
                message.contains(&format!("handoffs.bundle_tokens = {shown};")) && message.contains("1 to 100000"),
                "{message}"
            );
        }
    }
}
