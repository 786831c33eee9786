//! `swarm.toml`: one file that configures a swarm. Unknown keys are errors,
//! so a misspelt setting never silently falls back to a default.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::sync::Arc;

use mneme_projections::MemoryConfig;
use mneme_projections::consolidation::{BUILT_IN_MULTI_VALUED_PREDICATES, ConsolidationPolicy};
use mneme_projections::embed::Embedder;
use serde::Deserialize;

use crate::error::ActorsError;

#[derive(Debug, Clone, Deserialize, PartialEq)]
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
    pub retrieval: RetrievalSection,
    #[serde(default)]
    pub compression: CompressionSection,
    #[serde(default)]
    pub consolidation: ConsolidationSection,
    #[serde(default)]
    pub agents: Vec<AgentConfig>,
}

/// Which sentence-embedding model the vector index uses.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum EmbedderKind {
    /// The static model if its files are there, else `hashed` with a warning.
    #[default]
    Auto,
    /// The static model distilled from all-MiniLM-L6-v2 (`mneme distill`).
    Static,
    /// all-MiniLM-L6-v2 itself: better, about a thousand times slower.
    Minilm,
    /// Hashed word and character n-grams: no model, no semantics.
    Hashed,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EmbedderSection {
    #[serde(default)]
    pub kind: EmbedderKind,
    #[serde(default = "default_static_model_dir")]
    pub static_model_dir: PathBuf,
    #[serde(default = "default_minilm_dir")]
    pub minilm_dir: PathBuf,
}

/// Defaults of hybrid retrieval; a search request may override them.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RetrievalSection {
    /// The `k` of reciprocal rank fusion: `score = sum(weight / (k + rank))`.
    #[serde(default = "default_rrf_k")]
    pub rrf_k: f32,
    #[serde(default = "one")]
    pub bm25_weight: f32,
    #[serde(default = "one")]
    pub vector_weight: f32,
    #[serde(default = "one")]
    pub graph_weight: f32,
    /// Weight of the recency prior, fused like a fourth retriever that ranks
    /// candidates newest first.
    #[serde(default = "default_recency_weight")]
    pub recency_weight: f32,
    /// Weight of the usage prior: candidates cited more than ignored (and
    /// retrieved often, as recorded by consolidation) ranked by usefulness.
    #[serde(default = "default_usage_weight")]
    pub usage_weight: f32,
}

/// How memory compresses what it keeps: large tool outputs, and completed
/// phases. The log always keeps everything whole.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompressionSection {
    /// A tool output larger than this (in bytes) is kept whole only in the
    /// log; projections keep a compressed form and a pointer to the event.
    #[serde(default = "default_large_output_bytes")]
    pub large_output_bytes: usize,
    /// An optional model that summarises completed phases. Without one,
    /// phases keep their deterministic extractive levels.
    #[serde(default)]
    pub llm: Option<LlmSection>,
}

/// When consolidation runs on its own, and what it looks for. Every run
/// writes its verdicts to the log as events, so the settings decide what
/// future runs do, never how replay reads past ones.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationSection {
    /// Scheduled runs. On-demand runs (HTTP, `mneme consolidate`) work
    /// either way.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Run every this many ms; 0: no timer.
    #[serde(default = "default_consolidation_interval_ms")]
    pub interval_ms: u64,
    /// Also run after every this many new events in the swarm; 0: not by
    /// count.
    #[serde(default = "default_consolidation_every_events")]
    pub every_events: u64,
    #[serde(default = "default_dedup_cosine")]
    pub dedup_cosine: f32,
    /// Wire names of the item kinds that may be merged; see
    /// [`MERGEABLE_ITEM_KINDS`].
    #[serde(default = "default_dedup_kinds")]
    pub dedup_kinds: Vec<String>,
    #[serde(default = "default_decay_half_life_items")]
    pub decay_half_life_items: u64,
    #[serde(default = "default_decay_below")]
    pub decay_below: f32,
    #[serde(default = "default_forget_below")]
    pub forget_below: f32,
    #[serde(default = "default_important_from")]
    pub important_from: f32,
    #[serde(default = "default_keep_newest_items")]
    pub keep_newest_items: usize,
    /// Predicates that hold one object at a time even if the built-in list
    /// calls them multi-valued.
    #[serde(default)]
    pub single_valued_predicates: Vec<String>,
    /// Predicates added to [`BUILT_IN_MULTI_VALUED_PREDICATES`]; the
    /// built-ins cannot be removed here, only overridden one by one through
    /// `single_valued_predicates`.
    #[serde(default)]
    pub multi_valued_predicates: Vec<String>,
    #[serde(default = "default_max_outcomes_per_run")]
    pub max_outcomes_per_run: usize,
    #[serde(default = "default_max_links_per_item")]
    pub max_links_per_item: usize,
}

/// An OpenAI-compatible chat completion endpoint that summarises phases.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LlmSection {
    /// The API's base URL, e.g. `http://127.0.0.1:8080/v1`; requests go to
    /// `{url}/chat/completions`.
    pub url: String,
    pub model: String,
    /// The environment variable that holds the API key. The key itself never
    /// appears in this file, so a shared `swarm.toml` cannot leak it.
    #[serde(default = "default_api_key_env")]
    pub api_key_env: String,
    #[serde(default = "default_llm_timeout_ms")]
    pub timeout_ms: u64,
    /// The phase transcript sent to the model is cut to this many tokens.
    #[serde(default = "default_max_transcript_tokens")]
    pub max_transcript_tokens: usize,
    /// 0 by default: summaries should be as repeatable as the model allows.
    #[serde(default)]
    pub temperature: f32,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SwarmSection {
    pub name: String,
    /// Start a memory actor for an agent first seen on the log.
    #[serde(default = "yes")]
    pub admit_unknown_agents: bool,
}

#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum LogBackend {
    /// The sled log under `data_dir`.
    #[default]
    Embedded,
    /// NATS JetStream at `nats_url`.
    Nats,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogSection {
    #[serde(default)]
    pub backend: LogBackend,
    #[serde(default = "default_data_dir")]
    pub data_dir: PathBuf,
    #[serde(default = "default_nats_url")]
    pub nats_url: String,
    #[serde(default = "default_duplicate_window_secs")]
    pub duplicate_window_secs: u64,
    #[serde(default = "default_max_event_bytes")]
    pub max_event_bytes: usize,
    #[serde(default = "default_replicas")]
    pub replicas: usize,
    /// Events older than this are dropped by JetStream; 0 keeps them forever.
    #[serde(default)]
    pub max_age_secs: u64,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HttpSection {
    #[serde(default = "default_bind")]
    pub bind: SocketAddr,
    /// Largest request body accepted by `POST /v1/events`.
    #[serde(default = "default_max_request_bytes")]
    pub max_request_bytes: usize,
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemorySection {
    #[serde(default = "default_working_tier_tokens")]
    pub working_tier_tokens: usize,
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
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    pub name: String,
    #[serde(default)]
    pub role: String,
}

fn yes() -> bool {
    true
}
fn one() -> f32 {
    1.0
}
fn default_rrf_k() -> f32 {
    60.0
}
fn default_usage_weight() -> f32 {
    0.25
}

fn default_recency_weight() -> f32 {
    0.25
}
fn default_static_model_dir() -> PathBuf {
    PathBuf::from("models/static-minilm-l6-256")
}
fn default_minilm_dir() -> PathBuf {
    PathBuf::from("models/all-MiniLM-L6-v2")
}
fn default_data_dir() -> PathBuf {
    PathBuf::from(".data")
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
fn default_bind() -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 7700))
}
fn default_max_request_bytes() -> usize {
    16 * 1024 * 1024
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
fn default_worker_threads() -> usize {
    2
}
fn default_large_output_bytes() -> usize {
    16 * 1024
}
fn default_api_key_env() -> String {
    "MNEME_LLM_API_KEY".to_string()
}
fn default_llm_timeout_ms() -> u64 {
    30_000
}
fn default_max_transcript_tokens() -> usize {
    6000
}
fn default_consolidation_interval_ms() -> u64 {
    600_000
}
fn default_consolidation_every_events() -> u64 {
    10_000
}
// The policy's own defaults, so that a file without `[consolidation]` and a
// caller that builds `ConsolidationPolicy::default()` run the same
// consolidation.
fn default_dedup_cosine() -> f32 {
    ConsolidationPolicy::default().dedup_cosine
}
fn default_dedup_kinds() -> Vec<String> {
    ConsolidationPolicy::default().dedup_kinds
}
fn default_decay_half_life_items() -> u64 {
    ConsolidationPolicy::default().decay_half_life_items
}
fn default_decay_below() -> f32 {
    ConsolidationPolicy::default().decay_below
}
fn default_forget_below() -> f32 {
    ConsolidationPolicy::default().forget_below
}
fn default_important_from() -> f32 {
    ConsolidationPolicy::default().important_from
}
fn default_keep_newest_items() -> usize {
    ConsolidationPolicy::default().keep_newest_items
}
fn default_max_outcomes_per_run() -> usize {
    ConsolidationPolicy::default().max_outcomes_per_run
}
fn default_max_links_per_item() -> usize {
    ConsolidationPolicy::default().max_links_per_item
}

/// Below this, "large" would catch ordinary tool outputs, and their pointers
/// would cost about as much as the outputs they replace.
const MIN_LARGE_OUTPUT_BYTES: usize = 1024;

/// Kinds whose items consolidation may merge: those whose events become
/// memory items (`mneme_projections` `render`) and whose items are knowledge
/// that can be said twice. Left out: `decision_made`, and the phase and
/// handoff markers; [`ConsolidationSection::check`] says why.
const MERGEABLE_ITEM_KINDS: &[&str] = &[
    "message_recorded",
    "tool_result_recorded",
    "fact_asserted",
    "fact_retracted",
    "handoff_sent",
    "preference_set",
    "task_updated",
];

impl Default for LogSection {
    fn default() -> Self {
        LogSection {
            backend: LogBackend::default(),
            data_dir: default_data_dir(),
            nats_url: default_nats_url(),
            duplicate_window_secs: default_duplicate_window_secs(),
            max_event_bytes: default_max_event_bytes(),
            replicas: default_replicas(),
            max_age_secs: 0,
        }
    }
}

impl Default for EmbedderSection {
    fn default() -> Self {
        EmbedderSection {
            kind: EmbedderKind::default(),
            static_model_dir: default_static_model_dir(),
            minilm_dir: default_minilm_dir(),
        }
    }
}

impl Default for RetrievalSection {
    fn default() -> Self {
        RetrievalSection {
            rrf_k: default_rrf_k(),
            bm25_weight: 1.0,
            vector_weight: 1.0,
            graph_weight: 1.0,
            recency_weight: default_recency_weight(),
            usage_weight: default_usage_weight(),
        }
    }
}

impl Default for HttpSection {
    fn default() -> Self {
        HttpSection { bind: default_bind(), max_request_bytes: default_max_request_bytes() }
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
        }
    }
}

impl Default for CompressionSection {
    fn default() -> Self {
        CompressionSection { large_output_bytes: default_large_output_bytes(), llm: None }
    }
}

impl Default for ConsolidationSection {
    fn default() -> Self {
        ConsolidationSection {
            enabled: true,
            interval_ms: default_consolidation_interval_ms(),
            every_events: default_consolidation_every_events(),
            dedup_cosine: default_dedup_cosine(),
            dedup_kinds: default_dedup_kinds(),
            decay_half_life_items: default_decay_half_life_items(),
            decay_below: default_decay_below(),
            forget_below: default_forget_below(),
            important_from: default_important_from(),
            keep_newest_items: default_keep_newest_items(),
            single_valued_predicates: Vec::new(),
            multi_valued_predicates: Vec::new(),
            max_outcomes_per_run: default_max_outcomes_per_run(),
            max_links_per_item: default_max_links_per_item(),
        }
    }
}

impl ConsolidationSection {
    fn check(&self) -> Result<(), String> {
        // Written so that NaN fails too: every comparison with NaN is false.
        if !(self.dedup_cosine > 0.0 && self.dedup_cosine <= 1.0) {
            return Err(format!(
                "consolidation.dedup_cosine = {}; expected a number above 0 and at most 1",
                self.dedup_cosine
            ));
        }
        let fractions = [
            ("consolidation.decay_below", self.decay_below),
            ("consolidation.forget_below", self.forget_below),
            ("consolidation.important_from", self.important_from),
        ];
        for (key, value) in fractions {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("{key} = {value}; expected a number from 0 to 1"));
            }
        }
        if self.forget_below > self.decay_below {
            return Err(format!(
                "consolidation.forget_below = {} is above consolidation.decay_below = {}; expected at most \
                 decay_below: an item is demoted before it is forgotten",
                self.forget_below, self.decay_below
            ));
        }
        let positive = [
            ("consolidation.decay_half_life_items", self.decay_half_life_items),
            ("consolidation.max_outcomes_per_run", self.max_outcomes_per_run as u64),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(format!("{key} = 0; expected a positive number"));
            }
        }
        for kind in &self.dedup_kinds {
            if MERGEABLE_ITEM_KINDS.contains(&kind.as_str()) {
                continue;
            }
            let reason = match kind.as_str() {
                "decision_made" => {
                    "decisions are never merged: a decision supersedes an earlier one explicitly, and merging \
                     two would lose which one stands"
                }
                "phase_started" | "phase_completed" | "handoff_received" | "handoff_acknowledged" => {
                    "phase and handoff markers record that something happened: two alike are two occurrences, \
                     not one memory said twice"
                }
                known if mneme_events::EventKind::NAMES.contains(&known) => {
                    "events of this kind do not become memory items"
                }
                _ => "no event kind has this name",
            };
            return Err(format!(
                "consolidation.dedup_kinds contains {kind:?}; {reason}; expected some of {}",
                MERGEABLE_ITEM_KINDS.join(", ")
            ));
        }
        let predicate_lists = [
            ("consolidation.single_valued_predicates", &self.single_valued_predicates),
            ("consolidation.multi_valued_predicates", &self.multi_valued_predicates),
        ];
        for (key, predicates) in predicate_lists {
            for predicate in predicates {
                let snake_case = !predicate.is_empty()
                    && predicate.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_');
                if !snake_case {
                    return Err(format!("{key} contains {predicate:?}; expected a snake_case predicate ([a-z0-9_]+)"));
                }
            }
        }
        if let Some(predicate) =
            self.single_valued_predicates.iter().find(|predicate| self.multi_valued_predicates.contains(predicate))
        {
            return Err(format!(
                "consolidation.single_valued_predicates and consolidation.multi_valued_predicates both list \
                 {predicate:?}; expected each predicate in at most one of them"
            ));
        }
        Ok(())
    }
}

impl CompressionSection {
    fn check(&self) -> Result<(), String> {
        if self.large_output_bytes < MIN_LARGE_OUTPUT_BYTES {
            return Err(format!(
                "compression.large_output_bytes = {}; expected at least {MIN_LARGE_OUTPUT_BYTES}",
                self.large_output_bytes
            ));
        }
        let Some(llm) = &self.llm else { return Ok(()) };
        if llm.url.starts_with("https://") {
            // The HTTP client is built without TLS to keep the build lean;
            // refusing here beats failing on the first completed phase.
            return Err(format!(
                "compression.llm.url = {:?}; this build speaks plain http:// only: point it at a local \
                 OpenAI-compatible gateway such as \"http://127.0.0.1:8080/v1\"",
                llm.url
            ));
        }
        if !llm.url.starts_with("http://") {
            return Err(format!(
                "compression.llm.url = {:?}; expected an http:// URL such as \"http://127.0.0.1:8080/v1\"",
                llm.url
            ));
        }
        if llm.model.trim().is_empty() {
            return Err(format!("compression.llm.model = {:?}; expected a model name", llm.model));
        }
        if llm.api_key_env.trim().is_empty() {
            return Err(format!(
                "compression.llm.api_key_env = {:?}; expected the name of an environment variable",
                llm.api_key_env
            ));
        }
        if llm.timeout_ms == 0 {
            return Err("compression.llm.timeout_ms = 0; expected a positive number".to_string());
        }
        if llm.max_transcript_tokens == 0 {
            return Err("compression.llm.max_transcript_tokens = 0; expected a positive number".to_string());
        }
        if !llm.temperature.is_finite() || llm.temperature < 0.0 {
            return Err(format!(
                "compression.llm.temperature = {}; expected a number of zero or more",
                llm.temperature
            ));
        }
        Ok(())
    }
}

impl SwarmConfig {
    /// A swarm with every setting at its default.
    pub fn with_name(name: &str) -> SwarmConfig {
        SwarmConfig {
            swarm: SwarmSection { name: name.to_string(), admit_unknown_agents: true },
            log: LogSection::default(),
            http: HttpSection::default(),
            memory: MemorySection::default(),
            embedder: EmbedderSection::default(),
            retrieval: RetrievalSection::default(),
            compression: CompressionSection::default(),
            consolidation: ConsolidationSection::default(),
            agents: Vec::new(),
        }
    }

    pub fn load(path: &Path) -> Result<SwarmConfig, ActorsError> {
        let text = std::fs::read_to_string(path).map_err(|error| ActorsError::Config {
            path: path.display().to_string(),
            message: format!("cannot read the file: {error}"),
        })?;
        SwarmConfig::parse(&text, &path.display().to_string())
    }

    /// Parses and checks a configuration; `origin` names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<SwarmConfig, ActorsError> {
        let config: SwarmConfig = toml::from_str(text)
            .map_err(|error| ActorsError::Config { path: origin.to_string(), message: error.to_string() })?;
        config.check().map_err(|message| ActorsError::Config { path: origin.to_string(), message })?;
        Ok(config)
    }

    fn check(&self) -> Result<(), String> {
        let name_error = |key: &str, value: &str, error: mneme_events::ValidationError| {
            format!("{key} = {value:?} is not a valid name: {}", error.message)
        };
        mneme_events::validate_name(&self.swarm.name).map_err(|e| name_error("swarm.name", &self.swarm.name, e))?;
        let mut seen = std::collections::BTreeSet::new();
        for agent in &self.agents {
            mneme_events::validate_name(&agent.name).map_err(|e| name_error("agents.name", &agent.name, e))?;
            if !seen.insert(agent.name.as_str()) {
                return Err(format!("agents.name = {:?} is listed twice; agent names must be unique", agent.name));
            }
        }
        let positive = [
            ("memory.working_tier_tokens", self.memory.working_tier_tokens as u64),
            ("memory.working_item_max_tokens", self.memory.working_item_max_tokens as u64),
            ("memory.checkpoint_every_events", self.memory.checkpoint_every_events),
            ("memory.checkpoint_interval_ms", self.memory.checkpoint_interval_ms),
            ("memory.mailbox_capacity", self.memory.mailbox_capacity as u64),
            ("memory.worker_threads", self.memory.worker_threads as u64),
            ("log.max_event_bytes", self.log.max_event_bytes as u64),
            ("log.replicas", self.log.replicas as u64),
            ("http.max_request_bytes", self.http.max_request_bytes as u64),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(format!("{key} = 0; expected a positive number"));
            }
        }
        let weights = [
            ("retrieval.rrf_k", self.retrieval.rrf_k),
            ("retrieval.bm25_weight", self.retrieval.bm25_weight),
            ("retrieval.vector_weight", self.retrieval.vector_weight),
            ("retrieval.graph_weight", self.retrieval.graph_weight),
            ("retrieval.recency_weight", self.retrieval.recency_weight),
            ("retrieval.usage_weight", self.retrieval.usage_weight),
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
        self.consolidation.check()?;
        Ok(())
    }

    /// The memory settings, with the embedder the caller loaded.
    pub fn memory_config(&self, embedder: Arc<dyn Embedder>) -> MemoryConfig {
        MemoryConfig {
            working_tier_tokens: self.memory.working_tier_tokens,
            working_item_max_tokens: self.memory.working_item_max_tokens,
            embedder,
            large_output_bytes: self.compression.large_output_bytes,
            admitted_agents: (!self.swarm.admit_unknown_agents)
                .then(|| self.agents.iter().map(|agent| agent.name.clone()).collect()),
        }
    }

    /// The configured retrieval defaults as request weights.
    pub fn retrieval_weights(&self) -> mneme_projections::RetrievalWeights {
        mneme_projections::RetrievalWeights {
            rrf_k: self.retrieval.rrf_k,
            bm25: self.retrieval.bm25_weight,
            vector: self.retrieval.vector_weight,
            graph: self.retrieval.graph_weight,
            recency: self.retrieval.recency_weight,
            usage: self.retrieval.usage_weight,
        }
    }

    /// What a consolidation run looks for: the configured thresholds, with
    /// the configured multi-valued predicates added to the built-in ones.
    pub fn consolidation_policy(&self) -> ConsolidationPolicy {
        let section = &self.consolidation;
        let mut multi_valued_predicates: BTreeSet<String> =
            BUILT_IN_MULTI_VALUED_PREDICATES.iter().map(|predicate| predicate.to_string()).collect();
        multi_valued_predicates.extend(section.multi_valued_predicates.iter().cloned());
        ConsolidationPolicy {
            dedup_cosine: section.dedup_cosine,
            dedup_kinds: section.dedup_kinds.clone(),
            decay_half_life_items: section.decay_half_life_items,
            decay_below: section.decay_below,
            forget_below: section.forget_below,
            important_from: section.important_from,
            keep_newest_items: section.keep_newest_items,
            single_valued_predicates: section.single_valued_predicates.iter().cloned().collect(),
            multi_valued_predicates,
            max_outcomes_per_run: section.max_outcomes_per_run,
            max_links_per_item: section.max_links_per_item,
        }
    }

    /// How often consolidation runs on a timer; `None` when scheduled runs
    /// are off or `interval_ms` is 0.
    pub fn consolidation_interval(&self) -> Option<Duration> {
        let section = &self.consolidation;
        (section.enabled && section.interval_ms > 0).then(|| Duration::from_millis(section.interval_ms))
    }

    /// After how many new events in the swarm consolidation runs; `None`
    /// when scheduled runs are off or `every_events` is 0.
    pub fn consolidation_every_events(&self) -> Option<u64> {
        let section = &self.consolidation;
        (section.enabled && section.every_events > 0).then_some(section.every_events)
    }

    pub fn checkpoint_interval(&self) -> Duration {
        Duration::from_millis(self.memory.checkpoint_interval_ms)
    }

    pub fn decode_limits(&self) -> mneme_events::DecodeLimits {
        mneme_events::DecodeLimits { max_event_bytes: self.log.max_event_bytes }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(text: &str) -> String {
        SwarmConfig::parse(text, "swarm.toml").unwrap_err().to_string()
    }

    #[test]
    fn the_shipped_swarm_toml_is_valid() {
        let text = include_str!("../../swarm.toml");
        let config = SwarmConfig::parse(text, "swarm.toml").unwrap();
        assert_eq!(config.swarm.name, "demo");
        assert!(!config.agents.is_empty());
    }

    /// The shipped file keeps `[compression.llm]` commented out so that the
    /// default needs no model; the example must still be right when a user
    /// uncomments it.
    #[test]
    fn the_commented_llm_example_in_swarm_toml_is_valid() {
        let text = include_str!("../../swarm.toml");
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
    fn duplicate_agents_are_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[[agents]]\nname = \"a\"\n[[agents]]\nname = \"a\"\n");
        assert!(message.contains("listed twice"), "{message}");
    }

    #[test]
    fn zero_budgets_are_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[memory]\nworking_tier_tokens = 0\n");
        assert!(message.contains("memory.working_tier_tokens = 0"), "{message}");
    }

    #[test]
    fn an_unknown_backend_is_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[log]\nbackend = \"kafka\"\n");
        assert!(message.contains("kafka"), "{message}");
    }

    const LLM: &str = "[swarm]\nname = \"s\"\n[compression.llm]\nurl = \"http://127.0.0.1:8080/v1\"\nmodel = \"m\"\n";

    #[test]
    fn compression_defaults_to_no_model() {
        let config = SwarmConfig::parse("[swarm]\nname = \"s\"\n[compression]\n", "swarm.toml").unwrap();
        assert_eq!(config.compression.large_output_bytes, 16384);
        assert_eq!(config.compression.llm, None);
    }

    #[test]
    fn an_llm_section_takes_defaults() {
        let llm = SwarmConfig::parse(LLM, "swarm.toml").unwrap().compression.llm.unwrap();
        let expected = LlmSection {
            url: "http://127.0.0.1:8080/v1".to_string(),
            model: "m".to_string(),
            api_key_env: "MNEME_LLM_API_KEY".to_string(),
            timeout_ms: 30000,
            max_transcript_tokens: 6000,
            temperature: 0.0,
        };
        assert_eq!(llm, expected);
    }

    #[test]
    fn an_llm_section_without_a_model_is_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[compression.llm]\nurl = \"http://h/v1\"\n");
        assert!(message.contains("model"), "{message}");
    }

    #[test]
    fn an_api_key_in_the_file_is_refused() {
        let message = error_of(&format!("{LLM}api_key = \"sk-secret\"\n"));
        assert!(message.contains("api_key"), "{message}");
    }

    #[test]
    fn a_small_large_output_threshold_is_refused() {
        let message = error_of("[swarm]\nname = \"s\"\n[compression]\nlarge_output_bytes = 100\n");
        assert!(message.contains("compression.large_output_bytes = 100") && message.contains("1024"), "{message}");
    }

    #[test]
    fn an_https_llm_url_is_refused_naming_the_reason() {
        let message = error_of(
            "[swarm]\nname = \"demo\"\n[compression.llm]\nurl = \"https://api.example.com/v1\"\nmodel = \"m\"\n",
        );
        assert!(message.contains("compression.llm.url") && message.contains("plain http://"), "{message}");
    }

    #[test]
    fn a_non_http_llm_url_is_refused() {
        let message = error_of(&LLM.replace("http://127.0.0.1:8080/v1", "127.0.0.1:8080"));
        assert!(
            message.contains("compression.llm.url = \"127.0.0.1:8080\"") && message.contains("http://"),
            "{message}"
        );
    }

    #[test]
    fn an_empty_llm_model_is_refused() {
        let message = error_of(&LLM.replace("model = \"m\"", "model = \" \""));
        assert!(message.contains("compression.llm.model = \" \"") && message.contains("model name"), "{message}");
    }

    #[test]
    fn an_empty_api_key_env_is_refused() {
        let message = error_of(&format!("{LLM}api_key_env = \"\"\n"));
        assert!(message.contains("compression.llm.api_key_env = \"\""), "{message}");
    }

    #[test]
    fn a_zero_llm_timeout_is_refused() {
        let message = error_of(&format!("{LLM}timeout_ms = 0\n"));
        assert!(message.contains("compression.llm.timeout_ms = 0") && message.contains("positive"), "{message}");
    }

    #[test]
    fn a_zero_transcript_budget_is_refused() {
        let message = error_of(&format!("{LLM}max_transcript_tokens = 0\n"));
        assert!(message.contains("compression.llm.max_transcript_tokens = 0"), "{message}");
    }

    #[test]
    fn a_negative_temperature_is_refused() {
        let message = error_of(&format!("{LLM}temperature = -0.5\n"));
        assert!(message.contains("compression.llm.temperature = -0.5"), "{message}");
    }

    const CONSOLIDATION: &str = "[swarm]\nname = \"s\"\n[consolidation]\n";

    fn consolidation_error(keys: &str) -> String {
        error_of(&format!("{CONSOLIDATION}{keys}\n"))
    }

    #[test]
    fn the_shipped_consolidation_section_states_the_defaults() {
        let config = SwarmConfig::parse(include_str!("../../swarm.toml"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation, ConsolidationSection::default());
    }

    #[test]
    fn consolidation_defaults_are_the_policy_defaults() {
        for text in ["[swarm]\nname = \"s\"\n", CONSOLIDATION] {
            let config = SwarmConfig::parse(text, "swarm.toml").unwrap();
            assert_eq!(config.consolidation_policy(), ConsolidationPolicy::default());
            assert_eq!(config.consolidation_interval(), Some(Duration::from_secs(600)));
            assert_eq!(config.consolidation_every_events(), Some(10_000));
        }
    }

    #[test]
    fn a_full_consolidation_section_becomes_the_policy() {
        let config = SwarmConfig::parse(
            &format!(
                "{CONSOLIDATION}enabled = true\ninterval_ms = 5000\nevery_events = 300\ndedup_cosine = 0.97\n\
                 dedup_kinds = [\"tool_result_recorded\", \"preference_set\"]\ndecay_half_life_items = 50\n\
                 decay_below = 0.4\nforget_below = 0.1\nimportant_from = 0.9\nkeep_newest_items = 10\n\
                 single_valued_predicates = [\"owns\"]\nmulti_valued_predicates = [\"reviewed_by\"]\n\
                 max_outcomes_per_run = 500\nmax_links_per_item = 0\n"
            ),
            "swarm.toml",
        )
        .unwrap();
        let mut multi_valued_predicates: BTreeSet<String> =
            BUILT_IN_MULTI_VALUED_PREDICATES.iter().map(|predicate| predicate.to_string()).collect();
        multi_valued_predicates.insert("reviewed_by".to_string());
        let expected = ConsolidationPolicy {
            dedup_cosine: 0.97,
            dedup_kinds: vec!["tool_result_recorded".to_string(), "preference_set".to_string()],
            decay_half_life_items: 50,
            decay_below: 0.4,
            forget_below: 0.1,
            important_from: 0.9,
            keep_newest_items: 10,
            single_valued_predicates: BTreeSet::from(["owns".to_string()]),
            multi_valued_predicates,
            max_outcomes_per_run: 500,
            max_links_per_item: 0,
        };
        let policy = config.consolidation_policy();
        assert_eq!(policy, expected);
        // The configured single-valued list overrides a built-in
        // multi-valued predicate.
        assert!(policy.is_single_valued("owns"));
        assert!(!policy.is_single_valued("reviewed_by"));
        assert_eq!(config.consolidation_interval(), Some(Duration::from_millis(5000)));
        assert_eq!(config.consolidation_every_events(), Some(300));
    }

    #[test]
    fn disabled_consolidation_has_no_schedule_but_keeps_its_policy() {
        let config = SwarmConfig::parse(&format!("{CONSOLIDATION}enabled = false\n"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation_interval(), None);
        assert_eq!(config.consolidation_every_events(), None);
        assert_eq!(config.consolidation_policy(), ConsolidationPolicy::default());
    }

    #[test]
    fn a_zero_interval_or_count_turns_that_trigger_off() {
        let config =
            SwarmConfig::parse(&format!("{CONSOLIDATION}interval_ms = 0\nevery_events = 0\n"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation_interval(), None);
        assert_eq!(config.consolidation_every_events(), None);
    }

    #[test]
    fn a_misspelt_consolidation_key_is_named() {
        let message = consolidation_error("dedup_cosin = 0.9");
        assert!(message.contains("dedup_cosin"), "{message}");
    }

    #[test]
    fn a_dedup_cosine_outside_zero_to_one_is_refused() {
        for (value, shown) in [("1.5", "1.5"), ("0.0", "0"), ("-0.2", "-0.2"), ("nan", "NaN")] {
            let message = consolidation_error(&format!("dedup_cosine = {value}"));
            assert!(
                message.contains(&format!("consolidation.dedup_cosine = {shown};"))
                    && message.contains("above 0 and at most 1"),
                "{message}"
            );
        }
        assert!(SwarmConfig::parse(&format!("{CONSOLIDATION}dedup_cosine = 1.0\n"), "swarm.toml").is_ok());
    }

    #[test]
    fn thresholds_outside_zero_to_one_are_refused() {
        for key in ["decay_below", "forget_below", "important_from"] {
            // The range is checked before forget_below <= decay_below, so a
            // high forget_below alone is named for its range.
            let message = consolidation_error(&format!("{key} = 1.5"));
            assert!(
                message.contains(&format!("consolidation.{key} = 1.5;")) && message.contains("0 to 1"),
                "{message}"
            );
            let message = consolidation_error(&format!("{key} = -0.1"));
            assert!(message.contains(&format!("consolidation.{key} = -0.1;")), "{message}");
        }
    }

    #[test]
    fn forget_below_above_decay_below_is_refused_naming_both() {
        let message = consolidation_error("decay_below = 0.2\nforget_below = 0.3");
        assert!(
            message.contains("consolidation.forget_below = 0.3") && message.contains("consolidation.decay_below = 0.2"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_half_life_is_refused() {
        let message = consolidation_error("decay_half_life_items = 0");
        assert!(
            message.contains("consolidation.decay_half_life_items = 0") && message.contains("positive"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_outcome_budget_is_refused() {
        let message = consolidation_error("max_outcomes_per_run = 0");
        assert!(
            message.contains("consolidation.max_outcomes_per_run = 0") && message.contains("positive"),
            "{message}"
        );
    }

    #[test]
    fn decisions_are_never_deduplicated() {
        let message = consolidation_error("dedup_kinds = [\"message_recorded\", \"decision_made\"]");
        assert!(
            message.contains("consolidation.dedup_kinds")
                && message.contains("\"decision_made\"")
                && message.contains("supersedes"),
            "{message}"
        );
    }

    #[test]
    fn markers_kinds_without_items_and_unknown_kinds_are_refused_from_dedup_kinds() {
        let cases = [
            ("phase_started", "markers"),
            ("handoff_received", "markers"),
            ("memory_forgotten", "do not become memory items"),
            ("messages_recorded", "no event kind"),
        ];
        for (kind, reason) in cases {
            let message = consolidation_error(&format!("dedup_kinds = [\"{kind}\"]"));
            assert!(
                message.contains(&format!("consolidation.dedup_kinds contains \"{kind}\"")) && message.contains(reason),
                "{message}"
            );
        }
    }

    #[test]
    fn every_mergeable_item_kind_is_an_event_kind() {
        for kind in MERGEABLE_ITEM_KINDS {
            assert!(mneme_events::EventKind::NAMES.contains(kind), "{kind}");
            assert!(
                SwarmConfig::parse(&format!("{CONSOLIDATION}dedup_kinds = [\"{kind}\"]\n"), "swarm.toml").is_ok(),
                "{kind}"
            );
        }
    }

    #[test]
    fn predicates_that_are_not_snake_case_are_refused() {
        for key in ["single_valued_predicates", "multi_valued_predicates"] {
            for predicate in ["Owned-By", ""] {
                let message = consolidation_error(&format!("{key} = [\"{predicate}\"]"));
                assert!(
                    message.contains(&format!("consolidation.{key} contains {predicate:?}"))
                        && message.contains("snake_case"),
                    "{message}"
                );
            }
        }
    }

    #[test]
    fn a_predicate_both_single_and_multi_valued_is_refused() {
        let message = consolidation_error(
            "single_valued_predicates = [\"assigned_to\"]\nmulti_valued_predicates = [\"assigned_to\"]",
        );
        assert!(
            message.contains("consolidation.single_valued_predicates")
                && message.contains("consolidation.multi_valued_predicates")
                && message.contains("\"assigned_to\""),
            "{message}"
        );
    }
}
