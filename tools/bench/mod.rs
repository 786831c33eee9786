//! `mneme-tools bench`: throughput measured as a ratio to the raw log in the same
//! run, because the machines this runs on are shared and noisy.

pub mod burst;
pub mod consolidate;
pub mod embed;
pub mod mcp;
pub mod nats_sync;
pub mod replicas;
pub mod search;
pub mod system;
pub mod system_layer;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr};
use anyhow::Context;
use clap::{Args, ValueEnum};
use futures::StreamExt;
use mneme_actors::{AgentsWritten, Ask, GetAgent, SnapshotStore, Supervisor, SwarmConfig, queries};
use mneme_events::{DecodeLimits, Event, EventId, decode_json, decode_json_batch};
use mneme_nats::server::NatsServer;
use mneme_nats::{EventLog, JetStreamLog, JetStreamOptions, SledLog, SledOptions};
use mneme_projections::SearchRequest;

#[derive(Args)]
pub struct BenchArgs {
    /// What to measure.
    #[arg(value_enum, default_value = "ingest")]
    suite: Suite,
    /// Events per measurement (ingest: 20,000; replay: 1,000,000 events replayed).
    #[arg(long)]
    events: Option<usize>,
    /// Agents the events are spread over (ingest: 3; memory: 1,000 agents in one process;
    /// consolidate: 1, or N memories of the same shared events scanned alone and in one run).
    #[arg(long)]
    agents: Option<usize>,
    /// Events per append (one HTTP request's worth).
    #[arg(long, default_value_t = 500)]
    batch: usize,
    #[arg(long, value_enum, default_value = "both")]
    backend: BenchBackend,
    /// Scope of the ingest events: `shared` (every agent's memory applies
    /// every event, so the apply work grows with the number of agents) or
    /// `private` (each memory applies its own agent's events only).
    #[arg(long, value_enum, default_value = "shared")]
    scope: BenchScope,
    /// Items in one agent's memory (search, consolidate: 100,000; latency,
    /// memory: 10,000).
    #[arg(long)]
    items: Option<usize>,
    /// Queries (search, consolidate: 1,000) or publish→queryable samples
    /// (latency: 200) per measurement.
    #[arg(long)]
    queries: Option<usize>,
    /// Events each agent is given in `bench memory`'s many-agent process.
    #[arg(long, default_value_t = 20)]
    events_per_agent: usize,
    /// Events appended after the snapshot in `bench replay`: the tail a
    /// restart replays on top of the snapshot.
    #[arg(long, default_value_t = 1000)]
    tail: usize,
    /// Text of the events in `bench search`: `zipf`, a 20,000-word vocabulary
    /// with realistic word frequencies; `narrow`, 40 words only (every query
    /// matches nearly every item).
    #[arg(long, value_enum, default_value = "zipf")]
    vocabulary: Vocabulary,
    /// In `bench search`: hybrid search only, no other row (to profile it
    /// with `perf record -p` once the memory is built).
    #[arg(long)]
    only_hybrid: bool,
    /// In `bench replay`: the log also carries the deep model's vectors of
    /// its items, one `embeddings_computed` event after every 100 events, as
    /// the enricher records them; the memory runs the deep model's
    /// configuration and applies them, never embedding.
    #[arg(long)]
    deep: bool,
    /// Snapshot each memory after this many events (as `memory.checkpoint_every_events`).
    #[arg(long, default_value_t = SwarmConfig::with_name(SWARM).memory.checkpoint_every_events)]
    checkpoint_every_events: u64,
}

#[derive(Clone, Copy, ValueEnum)]
enum Suite {
    /// End-to-end ingest (decoded, appended, applied, searchable) against raw log append + read.
    Ingest,
    /// Search, context, graph and embedding speed in one agent's memory of `--items` items.
    Search,
    /// Compression of the example trajectory's completed phases: original tokens / each level's tokens.
    Phases,
    /// Consolidation of one agent's memory of `--items` items, and search latency while it scans;
    /// with `--agents N`, N memories of the same shared items: each scanned alone against one run.
    Consolidate,
    /// Publish → queryable latency (append as the API does until a search finds the event) against
    /// the raw log's append → read-back latency, on a memory of `--items` items.
    Latency,
    /// Replay of `--events` events into a fresh memory against the raw log read rate, then snapshot
    /// and restart from the snapshot plus a `--tail` of newer events.
    Replay,
    /// Resident memory of one agent's memory of `--items` items, and of one process with `--agents`
    /// agents given `--events-per-agent` events each.
    Memory,
    /// `--events` events (100,000) from `--agents` agents (3) accepted by `mneme serve`, which is
    /// killed with SIGKILL at once and started again: time until every agent finds the last one.
    Burst,
    /// A search and a note over MCP (`/mcp`) against the same over the HTTP routes, and a write
    /// against the raw baseline (append, then a read that waits for it), in a memory of `--items`.
    Mcp,
    /// Appends to nats-server with `sync_interval: always` against the default: `--events` (20,000)
    /// in batches of `--batch`, and `--queries` (500) appended one at a time.
    NatsSync,
    /// Several `mneme serve` on one swarm of one nats-server: CPU per 1,000 events followed,
    /// search throughput over 1, 2 and 3 replicas (`--queries`, 2,000), and 10 failovers of the
    /// writer lease (kill to takeover, and to the new holder's first verdict); `--events` (20,000).
    Replicas,
    /// A search and a context of one agent's memory of `--items` (10,000) with the system layer
    /// empty, then holding `--events` (1,000) system events that every swarm reads through.
    SystemLayer,
    /// The deep models (all-MiniLM-L6-v2, 8-bit on ONNX Runtime and float on candle) against candle's
    /// `BertModel` and the static model: one query at a time by length (`--queries`, 200; p50/p99),
    /// also beside a busy enricher, and word pieces per second in 4 batches of 32 items per length.
    Embed,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Vocabulary {
    Zipf,
    Narrow,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum BenchScope {
    Shared,
    Private,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum BenchBackend {
    Embedded,
    Nats,
    Both,
}

pub(crate) const SWARM: &str = "bench";

struct Measured {
    backend: &'static str,
    raw_events_per_second: f64,
    end_to_end_events_per_second: f64,
}

pub async fn run(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let suite = args.suite.to_possible_value().map_or_else(String::new, |value| value.get_name().to_string());
    let progress = mneme::progress::spinner(&format!("bench {suite}: measuring (results print as they come)"));
    let measured = run_suite(args).await;
    progress.finish_and_clear();
    measured
}

async fn run_suite(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let items = |default: usize| args.items.unwrap_or(default);
    let queries = |default: usize| args.queries.unwrap_or(default);
    match args.suite {
        Suite::Search => {
            return crate::bench::search::run(items(100_000), queries(1000), args.vocabulary, args.only_hybrid);
        }
        Suite::Phases => return crate::bench::search::phases(),
        Suite::Consolidate => {
            return crate::bench::consolidate::run(items(100_000), queries(1000), args.agents.unwrap_or(1));
        }
        Suite::Latency => return crate::bench::system::latency(items(10_000), queries(200), args.backend).await,
        Suite::Replay => {
            return crate::bench::system::replay(args.events.unwrap_or(1_000_000), args.tail, args.batch, args.deep)
                .await;
        }
        Suite::Memory => {
            let agents = args.agents.unwrap_or(1000);
            return crate::bench::system::memory(items(10_000), agents, args.events_per_agent, args.batch).await;
        }
        Suite::Burst => {
            let (events, agents, batch) = (args.events.unwrap_or(100_000), args.agents.unwrap_or(3), args.batch);
            return tokio::task::spawn_blocking(move || crate::bench::burst::run(events, agents, batch)).await?;
        }
        Suite::Mcp => {
            let (items, queries) = (items(10_000), queries(500));
            return tokio::task::spawn_blocking(move || crate::bench::mcp::run(items, queries)).await?;
        }
        Suite::NatsSync => {
            return crate::bench::nats_sync::run(args.events.unwrap_or(20_000), queries(500), args.batch).await;
        }
        Suite::Replicas => {
            let (events, queries) = (args.events.unwrap_or(20_000), queries(2000));
            return tokio::task::spawn_blocking(move || crate::bench::replicas::run(events, queries)).await?;
        }
        Suite::SystemLayer => {
            let (items, events, queries) = (items(10_000), args.events.unwrap_or(1000), queries(300));
            return tokio::task::spawn_blocking(move || crate::bench::system_layer::run(items, events, queries))
                .await?;
        }
        Suite::Embed => return crate::bench::embed::run(queries(200)),
        Suite::Ingest => {}
    }
    let event_count = args.events.unwrap_or(20_000);
    let agents: Vec<String> = (0..args.agents.unwrap_or(3).max(1)).map(|index| format!("agent-{index}")).collect();
    let mut json_events = synthetic_events(event_count, &agents);
    if args.scope == BenchScope::Private {
        for json in &mut json_events {
            *json = json.replace("\"scope\":\"shared\"", "\"scope\":\"private\"");
        }
    }
    let bytes: usize = json_events.iter().map(String::len).sum();
    out!("{}", machine_description());
    let scope = if args.scope == BenchScope::Shared { "shared" } else { "private" };
    out!(
        "command: mneme-tools bench ingest --events {} --agents {} --scope {scope} --batch {} --checkpoint-every-events {}",
        event_count,
        agents.len(),
        args.batch,
        args.checkpoint_every_events
    );
    let applies_per_event = if args.scope == BenchScope::Shared { agents.len() } else { 1 };
    out!(
        "applies: each event is applied by {applies_per_event} memory(ies), {} applies in all",
        event_count * applies_per_event
    );
    out!(
        "events: {} synthetic events, {} bytes of JSON on average",
        json_events.len(),
        bytes / json_events.len().max(1)
    );
    let mut results = Vec::new();
    if args.backend != BenchBackend::Nats {
        results.push(bench_embedded(&json_events, &agents, &args).await?);
    }
    if args.backend != BenchBackend::Embedded {
        results.push(bench_nats(&json_events, &agents, &args).await?);
    }
    out!("");
    out!("| backend | raw log append+read (events/s) | end to end (events/s) | end to end / raw |");
    out!("|---|---:|---:|---:|");
    for result in &results {
        out!(
            "| {} | {:.0} | {:.0} | {:.2} |",
            result.backend,
            result.raw_events_per_second,
            result.end_to_end_events_per_second,
            result.end_to_end_events_per_second / result.raw_events_per_second
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(crate) fn machine_description() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .map(|line| line.split(':').nth(1).unwrap_or("").trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".to_string());
    let memory_kb: u64 = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|info| info.lines().next().and_then(|line| line.split_whitespace().nth(1)?.parse().ok()))
        .unwrap_or(0);
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("machine: {cores} cores ({cpu}), {:.1} GiB RAM", memory_kb as f64 / 1024.0 / 1024.0)
}

/// A scratch directory removed when dropped.
pub(crate) struct ScratchDir(pub(crate) PathBuf);

impl ScratchDir {
    pub(crate) fn new(label: &str) -> anyhow::Result<ScratchDir> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let path = std::env::temp_dir().join(format!("mneme-bench-{label}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(ScratchDir(path))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn bench_embedded(json_events: &[String], agents: &[String], args: &BenchArgs) -> anyhow::Result<Measured> {
    let scratch = ScratchDir::new("embedded")?;
    let raw_log = SledLog::open(&scratch.0.join("raw"), SWARM, SledOptions::default())?;
    let raw = raw_log_rate(&raw_log, json_events, args.batch).await?;
    drop(raw_log);
    out!("embedded: raw log {raw:.0} events/s");
    let log: Arc<dyn EventLog> = Arc::new(SledLog::open(&scratch.0.join("log"), SWARM, SledOptions::default())?);
    let end_to_end = end_to_end_rate(log, &scratch.0, json_events, agents, args).await?;
    out!("embedded: end to end {end_to_end:.0} events/s");
    Ok(Measured { backend: "embedded (sled)", raw_events_per_second: raw, end_to_end_events_per_second: end_to_end })
}

async fn bench_nats(json_events: &[String], agents: &[String], args: &BenchArgs) -> anyhow::Result<Measured> {
    let server = NatsServer::start().await.context("starting nats-server (run scripts/install-nats.sh)")?;
    let raw = raw_nats_rate(&server.url(), json_events).await?;
    out!("nats: raw JetStream publish+consume {raw:.0} events/s");
    let scratch = ScratchDir::new("nats")?;
    let log: Arc<dyn EventLog> =
        Arc::new(JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await?);
    let end_to_end = end_to_end_rate(log, &scratch.0, json_events, agents, args).await?;
    out!("nats: end to end {end_to_end:.0} events/s");
    Ok(Measured { backend: "NATS JetStream", raw_events_per_second: raw, end_to_end_events_per_second: end_to_end })
}

/// The baseline: typed events appended in batches, then read back.
async fn raw_log_rate(log: &SledLog, json_events: &[String], batch: usize) -> anyhow::Result<f64> {
    let limits = DecodeLimits::default();
    let events: Vec<Event> =
        json_events.iter().map(|json| decode_json(json.as_bytes(), &limits)).collect::<Result<_, _>>()?;
    let started = Instant::now();
    for chunk in events.chunks(batch.max(1)) {
        log.append(chunk).await?;
    }
    let mut next = 1;
    let mut read = 0;
    loop {
        let page = log.read(next, None, 4096).await?;
        let Some(last) = page.last() else { break };
        next = last.seq + 1;
        read += page.len();
    }
    anyhow::ensure!(read == events.len(), "read {read} of {} events back", events.len());
    Ok(events.len() as f64 / started.elapsed().as_secs_f64())
}

/// The baseline over NATS: the same JSON published with async-nats (acks
/// awaited concurrently) and consumed with a pull consumer.
async fn raw_nats_rate(url: &str, json_events: &[String]) -> anyhow::Result<f64> {
    use async_nats::jetstream::{self, consumer};
    let client = async_nats::connect(url).await?;
    let jetstream = jetstream::new(client);
    let stream = jetstream
        .get_or_create_stream(jetstream::stream::Config {
            name: "RAW_BENCH".to_string(),
            subjects: vec!["rawbench.>".to_string()],
            ..Default::default()
        })
        .await?;
    let started = Instant::now();
    for window in json_events.chunks(1000) {
        let mut acks = Vec::with_capacity(window.len());
        for json in window {
            acks.push(jetstream.publish("rawbench.events", json.clone().into()).await?);
        }
        // An ack's timeout starts when it is awaited: await them together.
        for ack in futures::future::join_all(acks.into_iter().map(std::future::IntoFuture::into_future)).await {
            ack?;
        }
    }
    let consumer = stream
        .create_consumer(consumer::pull::Config { ack_policy: consumer::AckPolicy::None, ..Default::default() })
        .await?;
    let mut messages = consumer.messages().await?.take(json_events.len());
    let mut consumed = 0;
    while let Some(message) = messages.next().await {
        message.map_err(|error| anyhow::anyhow!("consuming: {error}"))?;
        consumed += 1;
    }
    anyhow::ensure!(consumed == json_events.len(), "consumed {consumed} of {} messages", json_events.len());
    Ok(json_events.len() as f64 / started.elapsed().as_secs_f64())
}

/// Mneme's path: JSON decoded and validated as the API does, appended,
/// applied by every agent's memory actor, and committed so it is searchable.
async fn end_to_end_rate(
    log: Arc<dyn EventLog>,
    dir: &std::path::Path,
    json_events: &[String],
    agents: &[String],
    args: &BenchArgs,
) -> anyhow::Result<f64> {
    let mut config = SwarmConfig::with_name(SWARM);
    config.log.data_dir = dir.to_path_buf();
    config.memory.checkpoint_every_events = args.checkpoint_every_events;
    let store = SnapshotStore::open(&dir.join("snapshots"))?;
    let embedder = mneme::model::load_configured_embedder(&config)?;
    // The text index on disk, as `mneme serve` keeps it.
    let (text_index, _) = mneme_index::TextIndex::open(&dir.join("text-index"))?;
    let supervisor: Addr<Supervisor> = Supervisor::new(config, log.clone(), store, log.last_seq().await?, embedder)
        .with_text_index(text_index)
        .start();
    let limits = DecodeLimits::default();
    let started = Instant::now();
    for chunk in json_events.chunks(args.batch.max(1)) {
        let body = format!("[{}]", chunk.join(","));
        let events = decode_json_batch(body.as_bytes(), &limits).map_err(|error| anyhow::anyhow!("{error}"))?;
        log.append(&events).await?;
        supervisor.send(AgentsWritten(agents.to_vec())).await?;
    }
    let last_seq = log.last_seq().await?;
    for agent in agents {
        let handle = supervisor.send(GetAgent(agent.clone())).await??;
        handle.caught_up(log.as_ref(), last_seq, Duration::from_secs(600)).await?;
        // A search commits the index: the events are now searchable.
        let request = SearchRequest::new("token", 1);
        handle.addr.send(Ask(queries::Search(request))).await??;
    }
    let rate = json_events.len() as f64 / started.elapsed().as_secs_f64();
    supervisor.send(mneme_actors::SnapshotAll).await?;
    Ok(rate)
}

const WORDS: &[&str] = &[
    "token",
    "refresh",
    "auth",
    "session",
    "expired",
    "cargo",
    "test",
    "panic",
    "unwrap",
    "src/auth/token.rs",
    "database",
    "migration",
    "schema",
    "review",
    "handoff",
    "deploy",
    "cache",
    "latency",
    "retry",
    "timeout",
    "TokenExpiredError",
    "refresh_access_token",
    "middleware",
    "config",
    "parser",
    "fixture",
    "assert",
    "fails",
    "passes",
    "because",
    "the",
    "with",
    "after",
    "before",
    "should",
    "function",
    "module",
    "error",
    "stack",
    "trace",
];

/// Deterministic synthetic events: messages, tool results, decisions and
/// facts with realistic lengths, spread round-robin over the agents.
pub(crate) fn synthetic_events(count: usize, agents: &[String]) -> Vec<String> {
    synthetic_events_from(count, agents, &mut WordStream::default())
}

/// Synthetic events whose text comes from `words`.
pub(crate) fn synthetic_events_from(count: usize, agents: &[String], words: &mut WordStream) -> Vec<String> {
    (0..count)
        .map(|index| {
            let id = EventId::from_parts(1_767_000_000_000 + index as u64, index as u128);
            let agent = &agents[index % agents.len()];
            let ts = mneme_events::Timestamp::from_unix_millis(1_767_000_000_000 + index as i64 * 100);
            let (kind, data) = match index % 10 {
                0..=4 => ("message_recorded", serde_json::json!({"role": "assistant", "text": words.sentence(30)})),
                5..=7 => {
                    let output: Vec<String> = (0..12).map(|_| words.sentence(8)).collect();
                    let exit_code = if index % 20 == 5 { 101 } else { 0 };
                    let data = serde_json::json!({"tool": "bash", "args": {"cmd": "cargo test"}, "output": output.join("\n"), "exit_code": exit_code, "duration_ms": 1200});
                    ("tool_result_recorded", data)
                }
                8 => ("decision_made", serde_json::json!({"title": words.sentence(4), "choice": words.sentence(8), "rationale": words.sentence(20)})),
                _ => ("fact_asserted", serde_json::json!({"subject": words.next_word(), "predicate": "depends_on", "object": words.next_word(), "confidence": 0.9})),
            };
            serde_json::json!({"id": id.to_string(), "swarm": SWARM, "agent": agent, "ts": ts.to_string(), "kind": kind, "data": data, "scope": "shared"})
                .to_string()
        })
        .collect()
}

/// A deterministic stream of words (xorshift): no dependency, and good
/// enough for word choice. The narrow stream draws uniformly from the 40
/// domain words; the Zipfian one from a large vocabulary with word
/// frequencies like real text's, the domain words among the common ones.
pub(crate) struct WordStream {
    state: u64,
    zipf: Option<ZipfVocabulary>,
}

impl Default for WordStream {
    fn default() -> Self {
        WordStream { state: 0x5eed, zipf: None }
    }
}

impl WordStream {
    /// Words drawn from `size` words with frequency ∝ 1 / rank.
    pub(crate) fn zipf(size: usize) -> WordStream {
        WordStream { state: 0x5eed, zipf: Some(ZipfVocabulary::new(size)) }
    }

    fn next_random(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    pub(crate) fn next_word(&mut self) -> &str {
        let random = self.next_random();
        match &self.zipf {
            Some(vocabulary) => vocabulary.pick((random >> 11) as f64 / (1u64 << 53) as f64),
            None => WORDS[(random % WORDS.len() as u64) as usize],
        }
    }

    pub(crate) fn sentence(&mut self, words: usize) -> String {
        let mut sentence = String::new();
        for index in 0..words {
            if index > 0 {
                sentence.push(' ');
            }
            sentence.push_str(self.next_word());
        }
        sentence
    }
}

struct ZipfVocabulary {
    words: Vec<String>,
    /// Cumulative probability of ranks `0..=i`.
    cumulative: Vec<f64>,
}

impl ZipfVocabulary {
    fn new(size: usize) -> ZipfVocabulary {
        let size = size.max(WORDS.len() * 25 + 20);
        let mut words: Vec<String> = (0..size).map(pseudo_word).collect();
        // Domain words at ranks 20, 45, 70, …: common, but not stop words.
        for (index, word) in WORDS.iter().enumerate() {
            words[20 + index * 25] = (*word).to_string();
        }
        let mut total = 0.0;
        let mut cumulative = Vec::with_capacity(size);
        for rank in 0..size {
            total += 1.0 / (rank + 1) as f64;
            cumulative.push(total);
        }
        for value in &mut cumulative {
            *value /= total;
        }
        ZipfVocabulary { words, cumulative }
    }

    fn pick(&self, uniform: f64) -> &str {
        let rank = self.cumulative.partition_point(|&value| value < uniform).min(self.words.len() - 1);
        &self.words[rank]
    }
}

/// A pronounceable, unique word for a vocabulary rank.
fn pseudo_word(rank: usize) -> String {
    const SYLLABLES: [&str; 16] =
        ["ka", "lo", "mi", "ra", "ten", "vo", "shi", "du", "pel", "zor", "an", "qui", "bre", "fo", "gu", "ne"];
    let mut word = String::new();
    let mut rest = rank + 16;
    while rest > 0 {
        word.push_str(SYLLABLES[rest % 16]);
        rest /= 16;
    }
    word
}
