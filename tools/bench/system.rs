//! `mneme-tools bench latency | replay | memory`: the system as a whole.
//!
//! - `latency`: how long after an event is published (decoded, appended and
//!   announced to the supervisor, as `POST /v1/events` does) a search finds
//!   it, on a memory that already holds N items; the baseline is the raw
//!   log's own append → read-back latency, measured in the same run.
//! - `replay`: events/s of rebuilding one agent's memory from the log, against
//!   the raw log's read rate in the same run; then a snapshot, and a restart
//!   from it (restore plus the tail of newer events).
//! - `memory`: resident memory of one agent's memory of N items, and of one
//!   process holding 1,000 agents; each in a child process of its own, so
//!   that neither measurement inherits the other's heap.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use actix::{Actor, Addr};
use anyhow::Context;
use futures::StreamExt;
use mneme_actors::{
    AgentHandle, AgentsWritten, Ask, GetAgent, SnapshotAll, SnapshotStore, Supervisor, SwarmConfig, apply_from_log,
    queries,
};
use mneme_events::{
    ComputedVector, DecodeLimits, EmbeddingsComputed, Event, EventId, Int8Values, Timestamp, decode_json,
    decode_json_batch,
};
use mneme_index::TextIndex;
use mneme_index::embed::Embedder;
use mneme_nats::server::NatsServer;
use mneme_nats::{EventLog, JetStreamLog, JetStreamOptions, SledLog, SledOptions};
use mneme_projections::{AgentMemory, MemoryConfig, SearchRequest, SharedContent};

use crate::bench::search::percentile;
use crate::bench::{BenchBackend, SWARM, ScratchDir, WordStream, machine_description, synthetic_events_from};

const AGENT: &str = "agent-0";
/// As `bench search`: text with realistic word frequencies.
const ZIPF_VOCABULARY: usize = 20_000;
/// Entries read from the log per page; as `replay.rs` reads.
const READ_PAGE: usize = 2048;
/// Environment variable that makes `bench memory` run one of its parts in
/// this process (set by the parent for its children).
const MEMORY_PART_ENV: &str = "MNEME_BENCH_MEMORY_PART";
const CATCH_UP: Duration = Duration::from_secs(3600);

/// One resident-memory figure of this process, in KiB, from
/// `/proc/self/status` (`VmRSS`, `VmHWM`, `Threads`).
fn proc_status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find(|line| line.starts_with(field) && line[field.len()..].starts_with(':'))
                .and_then(|line| line.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

pub(crate) fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn zipf_items(items: usize, agents: &[String]) -> Vec<String> {
    synthetic_events_from(items, agents, &mut WordStream::zipf(ZIPF_VOCABULARY))
}

// ---------------------------------------------------------------------------
// latency

/// Latencies of one backend, each sorted.
struct LatencyRow {
    backend: &'static str,
    /// Raw log: append one event and read it back.
    raw: Vec<Duration>,
    /// Mneme: decode + append + `AgentsWritten`.
    appended: Vec<Duration>,
    /// … until the memory's applied seq reaches the event's.
    applied: Vec<Duration>,
    /// … until a search for the event's unique token returns it.
    queryable: Vec<Duration>,
    /// The same search once more, right after: what it costs without the
    /// index commit the first search after an apply makes.
    search_again: Vec<Duration>,
    /// Searches that did not find the event on the first try.
    search_retries: usize,
}

pub async fn latency(items: usize, queries: usize, backend: BenchBackend) -> anyhow::Result<ExitCode> {
    out!("{}", machine_description());
    let backend_name = match backend {
        BenchBackend::Embedded => "embedded",
        BenchBackend::Nats => "nats",
        BenchBackend::Both => "both",
    };
    out!("command: mneme-tools bench latency --items {items} --queries {queries} --backend {backend_name}");
    let prefill = zipf_items(items, &[AGENT.to_string()]);
    let probes = probe_events(queries + queries / 10, items);
    out!(
        "memory: one agent, {items} items before the first sample (zipf text); {queries} samples after {} warm-up \
         samples, one at a time; each sample is a message with a unique word, searched for (hybrid, k = 10)",
        queries / 10
    );
    let mut rows = Vec::new();
    // Kept until the end: the memories of a backend measured earlier stay
    // idle, not failing, while the next one is measured.
    let (mut scratch_dirs, mut servers) = (Vec::new(), Vec::new());
    if backend != BenchBackend::Nats {
        let scratch = ScratchDir::new("latency-embedded")?;
        let raw_log = SledLog::open(&scratch.0.join("raw"), SWARM, SledOptions::default())?;
        let raw = raw_sled_latency(&raw_log, &prefill, &probes).await?;
        drop(raw_log);
        let log: Arc<dyn EventLog> = Arc::new(SledLog::open(&scratch.0.join("log"), SWARM, SledOptions::default())?);
        rows.push(mneme_latency("embedded (sled)", log, &scratch.0, &prefill, &probes, raw).await?);
        scratch_dirs.push(scratch);
    }
    if backend != BenchBackend::Embedded {
        let server = NatsServer::start().await.context("starting nats-server (run scripts/install-nats.sh)")?;
        let raw = raw_nats_latency(&server.url(), &prefill, &probes).await?;
        let scratch = ScratchDir::new("latency-nats")?;
        let log: Arc<dyn EventLog> =
            Arc::new(JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await?);
        rows.push(mneme_latency("NATS JetStream", log, &scratch.0, &prefill, &probes, raw).await?);
        scratch_dirs.push(scratch);
        servers.push(server);
    }
    out!("");
    out!(
        "| backend | raw append→read p50 (ms) | raw p99 (ms) | publish→queryable p50 (ms) | p99 (ms) | p50 / raw p50 | p99 / raw p99 |"
    );
    out!("|---|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        let (raw50, raw99) = (percentile(&row.raw, 0.5), percentile(&row.raw, 0.99));
        let (q50, q99) = (percentile(&row.queryable, 0.5), percentile(&row.queryable, 0.99));
        out!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.1} | {:.1} |",
            row.backend,
            ms(raw50),
            ms(raw99),
            ms(q50),
            ms(q99),
            q50.as_secs_f64() / raw50.as_secs_f64(),
            q99.as_secs_f64() / raw99.as_secs_f64()
        );
    }
    out!("");
    out!("Where the time goes (cumulative from the start of the publish):");
    out!("");
    out!(
        "| backend | appended p50 (ms) | p99 | applied p50 (ms) | p99 | searchable p50 (ms) | p99 | searches retried \
         | same search again p50 (ms) | p99 |"
    );
    out!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for row in &rows {
        out!(
            "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} | {} | {:.3} | {:.3} |",
            row.backend,
            ms(percentile(&row.appended, 0.5)),
            ms(percentile(&row.appended, 0.99)),
            ms(percentile(&row.applied, 0.5)),
            ms(percentile(&row.applied, 0.99)),
            ms(percentile(&row.queryable, 0.5)),
            ms(percentile(&row.queryable, 0.99)),
            row.search_retries,
            ms(percentile(&row.search_again, 0.5)),
            ms(percentile(&row.search_again, 0.99))
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The probe word of sample `index`: one token, found in no other event.
fn probe_word(index: usize) -> String {
    format!("latencyprobe{index:06}")
}

/// Messages of about the prefill's length, each with its own probe word;
/// ids and times follow the prefill's.
fn probe_events(count: usize, after: usize) -> Vec<String> {
    let mut words = WordStream::zipf(ZIPF_VOCABULARY);
    (0..count)
        .map(|index| {
            let position = after + index;
            let id = EventId::from_parts(1_767_000_000_000 + position as u64, position as u128);
            let ts = Timestamp::from_unix_millis(1_767_000_000_000 + position as i64 * 100);
            let text = format!("{} {} {}", words.sentence(15), probe_word(index), words.sentence(15));
            serde_json::json!({"id": id.to_string(), "swarm": SWARM, "agent": AGENT, "ts": ts.to_string(),
                "kind": "message_recorded", "data": {"role": "assistant", "text": text}, "scope": "shared"})
            .to_string()
        })
        .collect()
}

fn decode_all(json_events: &[String]) -> anyhow::Result<Vec<Event>> {
    let limits = DecodeLimits::default();
    json_events.iter().map(|json| decode_json(json.as_bytes(), &limits).context("decoding a synthetic event")).collect()
}

/// Sorted latencies of the samples after the warm-up (the first tenth).
fn after_warm_up(mut latencies: Vec<Duration>, warm_up: usize) -> Vec<Duration> {
    let mut measured = latencies.split_off(warm_up.min(latencies.len()));
    measured.sort();
    measured
}

/// The baseline on sled: one typed event appended (flushed, as the log
/// does by default) and read back by seq.
async fn raw_sled_latency(log: &SledLog, prefill: &[String], probes: &[String]) -> anyhow::Result<Vec<Duration>> {
    for chunk in decode_all(prefill)?.chunks(500) {
        log.append(chunk).await?;
    }
    let probes = decode_all(probes)?;
    let mut latencies = Vec::with_capacity(probes.len());
    for event in &probes {
        let started = Instant::now();
        let appended = log.append(std::slice::from_ref(event)).await?;
        let seq = appended[0].seq;
        let read = log.read(seq, None, 1).await?;
        anyhow::ensure!(read.first().is_some_and(|entry| entry.seq == seq), "seq {seq} not read back");
        latencies.push(started.elapsed());
    }
    Ok(after_warm_up(latencies, probes.len() / 11))
}

/// The baseline on NATS: the JSON published with async-nats to a plain
/// JetStream stream, its ack awaited, and received by a pull consumer that
/// is already waiting.
async fn raw_nats_latency(url: &str, prefill: &[String], probes: &[String]) -> anyhow::Result<Vec<Duration>> {
    use async_nats::jetstream::{self, consumer};
    let client = async_nats::connect(url).await?;
    let jetstream = jetstream::new(client);
    let stream = jetstream
        .get_or_create_stream(jetstream::stream::Config {
            name: "RAW_LATENCY".to_string(),
            subjects: vec!["rawlatency.>".to_string()],
            ..Default::default()
        })
        .await?;
    for window in prefill.chunks(1000) {
        let mut acks = Vec::with_capacity(window.len());
        for json in window {
            acks.push(jetstream.publish("rawlatency.events", json.clone().into()).await?);
        }
        for ack in futures::future::join_all(acks.into_iter().map(std::future::IntoFuture::into_future)).await {
            ack?;
        }
    }
    let consumer = stream
        .create_consumer(consumer::pull::Config {
            ack_policy: consumer::AckPolicy::None,
            deliver_policy: consumer::DeliverPolicy::New,
            ..Default::default()
        })
        .await?;
    let mut messages = consumer.messages().await?;
    let mut latencies = Vec::with_capacity(probes.len());
    for json in probes {
        let started = Instant::now();
        jetstream.publish("rawlatency.events", json.clone().into()).await?.await?;
        let message = messages.next().await.context("the consumer ended")?;
        let message = message.map_err(|error| anyhow::anyhow!("consuming: {error}"))?;
        anyhow::ensure!(message.payload.as_ref() == json.as_bytes(), "received another message than published");
        latencies.push(started.elapsed());
    }
    Ok(after_warm_up(latencies, probes.len() / 11))
}

/// Starts a supervisor over `log` with the default memory settings and, as
/// `mneme serve` has it, the text index on disk in `dir`.
fn start_supervisor(
    log: Arc<dyn EventLog>,
    dir: &std::path::Path,
    log_end: u64,
    embedder: Option<Arc<dyn Embedder>>,
) -> anyhow::Result<Addr<Supervisor>> {
    let mut config = SwarmConfig::with_name(SWARM);
    config.log.data_dir = dir.to_path_buf();
    let store = SnapshotStore::open(&dir.join("snapshots"))?;
    let embedder = match embedder {
        Some(embedder) => embedder,
        None => mneme::model::load_configured_embedder(&config)?,
    };
    let (text_index, _) = TextIndex::open(&dir.join("text-index"))?;
    Ok(Supervisor::new(config, log, store, log_end, embedder).with_text_index(text_index).start())
}

async fn search_hits(handle: &AgentHandle, request: SearchRequest) -> anyhow::Result<Vec<u64>> {
    let hits = handle.addr.send(Ask(queries::Search(request))).await??;
    Ok(hits.iter().map(|hit| hit.seq).collect())
}

/// Mneme's path: the prefill ingested and applied, then each probe decoded,
/// appended and announced as the API does, waited for until the memory
/// applied it, and searched for until found.
async fn mneme_latency(
    backend: &'static str,
    log: Arc<dyn EventLog>,
    dir: &std::path::Path,
    prefill: &[String],
    probes: &[String],
    raw: Vec<Duration>,
) -> anyhow::Result<LatencyRow> {
    let supervisor = start_supervisor(log.clone(), dir, log.last_seq().await?, None)?;
    let limits = DecodeLimits::default();
    let started = Instant::now();
    for chunk in prefill.chunks(500) {
        let events = decode_json_batch(format!("[{}]", chunk.join(",")).as_bytes(), &limits)
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        log.append(&events).await?;
        supervisor.do_send(AgentsWritten(vec![AGENT.to_string()]));
    }
    let handle = supervisor.send(GetAgent(AGENT.to_string())).await??;
    handle.caught_up(log.as_ref(), log.last_seq().await?, CATCH_UP).await?;
    search_hits(&handle, SearchRequest::new("token", 1)).await?;
    // Start from a snapshotted memory, as a long-running one is.
    supervisor.send(SnapshotAll).await?;
    out!(
        "{backend}: {} items ingested and applied in {:.1} s; raw append→read p50 {:.3} ms",
        prefill.len(),
        started.elapsed().as_secs_f64(),
        ms(percentile(&raw, 0.5))
    );
    let (mut appended, mut applied, mut queryable, mut search_again) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut search_retries = 0;
    for (index, json) in probes.iter().enumerate() {
        let body = format!("[{json}]");
        let started = Instant::now();
        let events = decode_json_batch(body.as_bytes(), &limits).map_err(|error| anyhow::anyhow!("{error}"))?;
        let seq = log.append(&events).await?[0].seq;
        supervisor.do_send(AgentsWritten(vec![AGENT.to_string()]));
        appended.push(started.elapsed());
        handle.caught_up(log.as_ref(), seq, Duration::from_secs(60)).await?;
        applied.push(started.elapsed());
        loop {
            let hits = search_hits(&handle, SearchRequest::new(probe_word(index), 10)).await?;
            if hits.contains(&seq) {
                break;
            }
            search_retries += 1;
            anyhow::ensure!(started.elapsed() < Duration::from_secs(60), "probe {index} (seq {seq}) never found");
        }
        queryable.push(started.elapsed());
        let again = Instant::now();
        search_hits(&handle, SearchRequest::new(probe_word(index), 10)).await?;
        search_again.push(again.elapsed());
    }
    // Nothing left unsaved: an idle memory then writes no more snapshots
    // while the next backend is measured.
    supervisor.send(SnapshotAll).await?;
    let warm_up = probes.len() / 11;
    let row = LatencyRow {
        backend,
        raw,
        appended: after_warm_up(appended, warm_up),
        applied: after_warm_up(applied, warm_up),
        queryable: after_warm_up(queryable, warm_up),
        search_again: after_warm_up(search_again, warm_up),
        search_retries,
    };
    out!(
        "{backend}: publish→queryable p50 {:.3} ms, p99 {:.3} ms",
        ms(percentile(&row.queryable, 0.5)),
        ms(percentile(&row.queryable, 0.99))
    );
    Ok(row)
}

// ---------------------------------------------------------------------------
// replay

/// Realistic events of one agent working through tasks, by position on the
/// log (`index` from 0): blocks of 100 events, each a task with one phase —
/// task opened, phase started, 95 events of work (60 % tool results, 25 %
/// messages, 5 % decisions, 10 % facts; about the mix of
/// `examples/trajectory.jsonl`), phase completed, task done, a closing
/// message. Every event carries the task as its correlation id.
const DEEP_KIND: &str = "\"kind\":\"embeddings_computed\"";

/// `events` with an `embeddings_computed` event after every 100 of them,
/// holding a vector of `model_id` for each of those that make an item of
/// content (tool outputs, messages, decisions, facts), as the enricher
/// records them. The values are fixed pseudo-random bytes: replay applies
/// vectors, it never computes them.
fn with_deep_vectors(start: usize, events: Vec<String>, model_id: &str, dimensions: usize) -> Vec<String> {
    let (model, model_hash) = EmbeddingsComputed::model_parts(model_id);
    let mut out = Vec::with_capacity(events.len() + events.len() / 100 + 1);
    for (block_index, block) in events.chunks(100).enumerate() {
        let mut vectors = Vec::new();
        let mut last: Option<serde_json::Value> = None;
        for json in block {
            out.push(json.clone());
            let event: serde_json::Value = serde_json::from_str(json).expect("a synthetic event is JSON");
            let kind = event["kind"].as_str().unwrap_or_default();
            if matches!(kind, "tool_result_recorded" | "message_recorded" | "decision_made" | "fact_asserted") {
                let id: EventId = event["id"].as_str().and_then(|id| id.parse().ok()).expect("a synthetic id");
                let mut state = id.to_string().bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
                    (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
                });
                let values = (0..dimensions)
                    .map(|_| {
                        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                        (state >> 56) as u8 as i8
                    })
                    .collect();
                vectors.push(ComputedVector { event_id: id, scale: 1.0 / 1024.0, values: Int8Values(values) });
            }
            last = Some(event);
        }
        let Some(last) = last else { continue };
        let computed = EmbeddingsComputed {
            model: model.to_string(),
            model_hash: model_hash.to_string(),
            dimensions: dimensions as u32,
            vectors,
        };
        // Apart from the synthetic events' ids (`realistic_events`): the
        // time of the block's last event, a random part of its own.
        let index = start + block_index * 100 + block.len() - 1;
        let id = EventId::from_parts(1_767_000_000_000 + index as u64, (1u128 << 79) | index as u128);
        out.push(
            serde_json::json!({"id": id.to_string(), "swarm": SWARM, "agent": AGENT, "ts": last["ts"],
                "kind": "embeddings_computed", "data": computed, "scope": "shared"})
            .to_string(),
        );
    }
    out
}

pub(crate) fn realistic_events(start: usize, count: usize, words: &mut WordStream) -> Vec<String> {
    const PHASES: [&str; 4] = ["investigate", "implement", "test", "review"];
    let id_of = |index: usize| EventId::from_parts(1_767_000_000_000 + index as u64, index as u128);
    (start..start + count)
        .map(|index| {
            let task = format!("task-{}", index / 100);
            let phase = PHASES[(index / 100) % PHASES.len()];
            let position = index % 100;
            let (kind, data) = match position {
                0 => ("task_updated", serde_json::json!({"task_id": task, "status": "open", "title": words.sentence(6)})),
                1 => ("phase_started", serde_json::json!({"phase": phase, "goal": words.sentence(10)})),
                97 => (
                    "phase_completed",
                    serde_json::json!({"phase": phase, "phase_id": id_of(index - 96).to_string(), "outcome": words.sentence(8)}),
                ),
                98 => ("task_updated", serde_json::json!({"task_id": task, "status": "done"})),
                99 => ("message_recorded", serde_json::json!({"role": "assistant", "text": words.sentence(30)})),
                _ => match position % 20 {
                    0..=11 => {
                        let output: Vec<String> = (0..12).map(|_| words.sentence(8)).collect();
                        let exit_code = if position % 7 == 0 { 101 } else { 0 };
                        let command = format!("cargo test {}", words.next_word());
                        let data = serde_json::json!({"tool": "bash", "args": {"cmd": command}, "output": output.join("\n"), "exit_code": exit_code, "duration_ms": 1200});
                        ("tool_result_recorded", data)
                    }
                    12..=16 => {
                        ("message_recorded", serde_json::json!({"role": "assistant", "text": words.sentence(30)}))
                    }
                    17 => (
                        "decision_made",
                        serde_json::json!({"title": words.sentence(4), "choice": words.sentence(8), "rationale": words.sentence(20)}),
                    ),
                    _ => {
                        let subject = words.next_word().to_string();
                        let object = words.next_word().to_string();
                        ("fact_asserted", serde_json::json!({"subject": subject, "predicate": "depends_on", "object": object, "confidence": 0.9}))
                    }
                },
            };
            let ts = Timestamp::from_unix_millis(1_767_000_000_000 + index as i64 * 100);
            serde_json::json!({"id": id_of(index).to_string(), "swarm": SWARM, "agent": AGENT, "ts": ts.to_string(),
                "kind": kind, "data": data, "correlation_id": task, "scope": "shared"})
            .to_string()
        })
        .collect()
}

/// `deep`: the log carries the deep model's vectors (see [`with_deep_vectors`]).
pub async fn replay(events: usize, tail: usize, batch: usize, deep: bool) -> anyhow::Result<ExitCode> {
    let events = events.max(1);
    let config = SwarmConfig::with_name(SWARM);
    let embedder = mneme::model::load_configured_embedder(&config)?;
    let deep_model = if deep {
        let model = mneme::model::load_deep_model(&config)?;
        Some(model.context("--deep needs the deep model: run scripts/fetch-deep-model.sh")?)
    } else {
        None
    };
    out!("{}", machine_description());
    let deep_flag = if deep { " --deep" } else { "" };
    out!("command: mneme-tools bench replay --events {events} --tail {tail}{deep_flag}");
    out!("embedder: {}", embedder.model_id());
    if let Some(model) = &deep_model {
        out!(
            "deep model: {} (its vectors on the log, one embeddings_computed event after every 100 events; never run)",
            model.model_id()
        );
    }
    let scratch = ScratchDir::new("replay")?;
    // The text index on disk, as `mneme serve` keeps it.
    let text_dir = scratch.0.join("text-index");
    let memory_config_of = || config.memory_config(embedder.clone()).with_deep_embedder(deep_model.clone());
    let on_disk = |text_index: Arc<TextIndex>| {
        let config = memory_config_of();
        MemoryConfig { shared: SharedContent::new(text_index, embedder.dimensions()), ..config }
    };
    let memory_config = on_disk(TextIndex::open(&text_dir)?.0);
    // Writing the log is set-up, not measured: no flush per batch.
    let log =
        SledLog::open(&scratch.0.join("log"), SWARM, SledOptions { flush_on_append: false, ..SledOptions::default() })?;
    let total = events + tail;
    let mut words = WordStream::zipf(ZIPF_VOCABULARY);
    let limits = DecodeLimits::default();
    let (mut bytes, mut start, mut source) = (0usize, 0usize, 0usize);
    let started = Instant::now();
    while start < total {
        let count = 10_000.min(total - start);
        let mut json_events = realistic_events(source, count, &mut words);
        source += count;
        if let Some(model) = &deep_model {
            json_events = with_deep_vectors(source - count, json_events, model.model_id(), model.dimensions());
            json_events.truncate(count);
            // A block cut short here starts again after the vectors.
            source = source - count + json_events.iter().filter(|json| !json.contains(DEEP_KIND)).count();
        }
        bytes += json_events.iter().map(String::len).sum::<usize>();
        let decoded: Vec<Event> = json_events
            .iter()
            .map(|json| decode_json(json.as_bytes(), &limits).context("decoding a synthetic event"))
            .collect::<anyhow::Result<_>>()?;
        for chunk in decoded.chunks(batch.max(1)) {
            log.append(chunk).await?;
        }
        start += count;
    }
    out!(
        "log: {total} events ({} bytes of JSON on average) written in {:.1} s; {events} replayed, then a tail of {tail}",
        bytes / total,
        started.elapsed().as_secs_f64()
    );

    let started = Instant::now();
    let (mut next, mut read) = (1, 0);
    loop {
        let page = log.read(next, None, READ_PAGE).await?;
        let Some(last) = page.last() else { break };
        next = last.seq + 1;
        read += page.len();
    }
    anyhow::ensure!(read == total, "read {read} of {total} events back");
    let raw_seconds = started.elapsed().as_secs_f64();
    let raw_rate = total as f64 / raw_seconds;
    out!("raw log read: {total} events in {raw_seconds:.2} s, {raw_rate:.0} events/s (pages of {READ_PAGE})");

    // Replay in tenths, through the same function `mneme replay` uses, to
    // show how the rate changes as memory grows.
    let mut memory = AgentMemory::new(SWARM, AGENT, memory_config.clone())?;
    let step = (events / 10).max(1);
    let (mut target, mut dead_lettered) = (0usize, 0usize);
    let started = Instant::now();
    let mut step_started = Instant::now();
    while target < events {
        let from = target;
        target = (target + step).min(events);
        let (replayed, totals) = apply_from_log(&log, memory, Some(target as u64)).await?;
        memory = replayed;
        dead_lettered += totals.dead_lettered;
        out!(
            "replay: seq {target}: {:.1} s, {:.0} events/s so far, {:.0} events/s over the last {}; {} items; RSS {:.0} MiB",
            started.elapsed().as_secs_f64(),
            target as f64 / started.elapsed().as_secs_f64(),
            (target - from) as f64 / step_started.elapsed().as_secs_f64(),
            target - from,
            memory.item_count(),
            mib(proc_status("VmRSS"))
        );
        step_started = Instant::now();
    }
    let replay_seconds = started.elapsed().as_secs_f64();
    let replay_rate = events as f64 / replay_seconds;
    anyhow::ensure!(dead_lettered == 0, "{dead_lettered} events dead-lettered in replay");
    anyhow::ensure!(memory.checkpoint() == events as u64, "replay stopped at {}", memory.checkpoint());
    let items = memory.item_count();
    let started = Instant::now();
    let digest = memory.digest();
    let digest_seconds = started.elapsed().as_secs_f64();
    out!("replay: {events} events in {replay_seconds:.1} s, {replay_rate:.0} events/s; {items} items");
    if deep {
        let enriched = memory.deep_count();
        anyhow::ensure!(enriched > 0, "no recorded deep vector was applied");
        out!("deep vectors: {enriched} of the {items} items took theirs from the log");
    }
    out!("digest: {digest_seconds:.2} s (not in the replay time)");

    let store = SnapshotStore::open(&scratch.0.join("snapshots"))?;
    let started = Instant::now();
    memory.commit()?;
    let snapshot_bytes = store.save_swarm_graph(SWARM, AGENT, &memory.config().shared, memory.checkpoint())?
        + store.save(SWARM, AGENT, &memory.snapshot_delta()?)?;
    memory.mark_snapshot_saved();
    let snapshot_seconds = started.elapsed().as_secs_f64();
    drop(memory);
    out!("snapshot: {:.1} MiB written in {snapshot_seconds:.2} s", snapshot_bytes as f64 / 1024.0 / 1024.0);

    out!("");
    out!("| step | events | seconds | events/s | / raw read |");
    out!("|---|---:|---:|---:|---:|");
    out!("| raw log read (baseline) | {total} | {raw_seconds:.2} | {raw_rate:.0} | 1.00 |");
    out!(
        "| replay into a fresh memory | {events} | {replay_seconds:.1} | {replay_rate:.0} | {:.4} |",
        replay_rate / raw_rate
    );
    out!(
        "| snapshot ({:.0} MiB: commit, encode, save) | {items} items | {snapshot_seconds:.2} | | |",
        snapshot_bytes as f64 / 1024.0 / 1024.0
    );

    // The process stops: its memories and text index go.
    drop(memory_config);

    // For reference, a restore that indexes every item again: what a
    // restart does with the text index in RAM (before this issue) or gone.
    let started = Instant::now();
    let stored = match store.load(SWARM, AGENT)? {
        Ok(stored) => stored,
        Err(problem) => anyhow::bail!("the snapshot just written cannot be loaded: {problem:?}"),
    };
    let reindex_config = memory_config_of();
    store.restore_swarm_graph(SWARM, &reindex_config.shared);
    let reindexed = stored.restore(SWARM, AGENT, reindex_config)?;
    let reindex_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(!reindexed.reused_text_index(), "a restore into a RAM index reused documents");
    drop(reindexed);

    // A restart: the text index opened, the snapshot loaded and restored
    // as `restore_or_new` does (called directly, so that a refusal is
    // reported rather than silently turned into a rebuild from the log),
    // the index swept as the supervisor does, then the tail applied.
    let started = Instant::now();
    let (text_index, discarded) = TextIndex::open(&text_dir)?;
    anyhow::ensure!(discarded.is_none(), "the text index was not reopened: {discarded:?}");
    let memory_config = on_disk(text_index);
    let stored = match store.load(SWARM, AGENT)? {
        Ok(stored) => stored,
        Err(problem) => anyhow::bail!("the snapshot just written cannot be loaded: {problem:?}"),
    };
    store.restore_swarm_graph(SWARM, &memory_config.shared);
    let restored = match stored.restore(SWARM, AGENT, memory_config.clone()) {
        Ok(restored) => restored,
        Err(error) => {
            let seconds = started.elapsed().as_secs_f64();
            out!("| restore from the snapshot | {events} | failed after {seconds:.2} s: {error} | | |");
            out!("");
            out!(
                "restart: the snapshot cannot be restored ({error}); a restart rebuilds from the log, \
                 {:.1} s at the replay rate above",
                total as f64 / replay_rate
            );
            return Ok(ExitCode::FAILURE);
        }
    };
    memory_config.shared.text_index().sweep_unclaimed()?;
    let restore_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(restored.checkpoint() == events as u64, "restored at seq {}", restored.checkpoint());
    anyhow::ensure!(restored.reused_text_index(), "the restore indexed its items again");
    anyhow::ensure!(restored.digest() == digest, "the restored memory's digest differs from the replayed one's");
    let started = Instant::now();
    let (mut restored, totals) = apply_from_log(&log, restored, None).await?;
    let tail_seconds = started.elapsed().as_secs_f64();
    anyhow::ensure!(restored.checkpoint() == total as u64, "tail stopped at {}", restored.checkpoint());
    anyhow::ensure!(totals.dead_lettered == 0, "{} tail events dead-lettered", totals.dead_lettered);
    let restart_seconds = restore_seconds + tail_seconds;
    // The next checkpoint writes what the tail changed, not the memory.
    let started = Instant::now();
    restored.commit()?;
    let delta_bytes = store.save_swarm_graph(SWARM, AGENT, &restored.config().shared, restored.checkpoint())?
        + store.save(SWARM, AGENT, &restored.snapshot_delta()?)?;
    restored.mark_snapshot_saved();
    let delta_seconds = started.elapsed().as_secs_f64();
    // Replaying everything instead, at the rate just measured.
    let full_replay_seconds = total as f64 / replay_rate;
    out!(
        "| restore, indexing every item again (text index in RAM) | {events} | {reindex_seconds:.2} | {:.0} | |",
        events as f64 / reindex_seconds
    );
    out!(
        "| restore from the snapshot and the text index on disk | {events} | {restore_seconds:.2} | {:.0} | |",
        events as f64 / restore_seconds
    );
    out!("| tail after the snapshot | {tail} | {tail_seconds:.2} | {:.0} | |", tail as f64 / tail_seconds);
    out!(
        "| restart: restore + tail | {total} | {restart_seconds:.2} | | replay would take {full_replay_seconds:.1} s: {:.1}× |",
        full_replay_seconds / restart_seconds
    );
    out!(
        "| checkpoint after the tail ({:.1} MiB written) | {tail} | {delta_seconds:.2} | | |",
        delta_bytes as f64 / 1024.0 / 1024.0
    );
    out!("");
    out!(
        "restart: restore {restore_seconds:.2} s (digest matches the replayed memory's) + tail of {tail} in {tail_seconds:.2} s"
    );
    Ok(ExitCode::SUCCESS)
}

// ---------------------------------------------------------------------------
// memory

pub async fn memory(items: usize, agents: usize, events_per_agent: usize, batch: usize) -> anyhow::Result<ExitCode> {
    match std::env::var(MEMORY_PART_ENV).as_deref() {
        Ok("one") => return memory_one_agent(items).await,
        Ok("swarm") => return memory_many_agents(agents, events_per_agent, batch).await,
        _ => {}
    }
    out!("{}", machine_description());
    out!("command: mneme-tools bench memory --items {items} --agents {agents} --events-per-agent {events_per_agent}");
    out!("each part runs in a child process of its own; RSS is VmRSS of /proc/self/status");
    let exe = std::env::current_exe().context("finding this binary")?;
    let mut rows = Vec::new();
    for part in ["one", "swarm"] {
        let output = std::process::Command::new(&exe)
            .args(["bench", "memory", "--items", &items.to_string(), "--agents", &agents.to_string()])
            .args(["--events-per-agent", &events_per_agent.to_string(), "--batch", &batch.to_string()])
            .env(MEMORY_PART_ENV, part)
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("running a part of the benchmark")?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        for line in stdout.lines() {
            match line.strip_prefix("row: ") {
                Some(row) => rows.push(row.to_string()),
                None => out!("{line}"),
            }
        }
        anyhow::ensure!(output.status.success(), "part {part} failed: {}", output.status);
    }
    out!("");
    out!(
        "| process | agents | items or events | RSS before (MiB) | RSS after (MiB) | added (MiB) | per agent (MiB) | threads |"
    );
    out!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for row in rows {
        out!("{row}");
    }
    Ok(ExitCode::SUCCESS)
}

/// One agent's memory of `items` items, built in this process.
async fn memory_one_agent(items: usize) -> anyhow::Result<ExitCode> {
    let config = SwarmConfig::with_name(SWARM);
    let embedder = mneme::model::load_configured_embedder(&config)?;
    let events = zipf_items(items, &[AGENT.to_string()]);
    let limits = DecodeLimits::default();
    let before = proc_status("VmRSS");
    let mut memory = AgentMemory::new(SWARM, AGENT, config.memory_config(embedder.clone()))?;
    let started = Instant::now();
    for (index, json) in events.iter().enumerate() {
        let event = decode_json(json.as_bytes(), &limits).context("decoding a synthetic event")?;
        memory.apply(index as u64 + 1, &event)?;
    }
    memory.commit()?;
    let seconds = started.elapsed().as_secs_f64();
    let after = proc_status("VmRSS");
    let threads = proc_status("Threads");
    let snapshot = memory.to_snapshot()?.len();
    let json_bytes: usize = events.iter().map(String::len).sum();
    out!(
        "one agent: {} items applied in {seconds:.1} s; RSS {:.0} → {:.0} MiB (+{:.1} MiB, {:.0} bytes per item); \
         its snapshot {:.1} MiB; the events' JSON {:.1} MiB",
        memory.item_count(),
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        after.saturating_sub(before) as f64 * 1024.0 / memory.item_count().max(1) as f64,
        snapshot as f64 / 1024.0 / 1024.0,
        json_bytes as f64 / 1024.0 / 1024.0
    );
    out!(
        "row: | one agent's memory, in process | 1 | {} items | {:.0} | {:.0} | {:.1} | {:.1} | {threads} |",
        memory.item_count(),
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        mib(after.saturating_sub(before))
    );
    // What a small memory costs whatever it holds: 50 memories of 20 items
    // each, no actors.
    const SMALL: usize = 50;
    let small_events = zipf_items(20, &[AGENT.to_string()]);
    let before = proc_status("VmRSS");
    let threads_before = proc_status("Threads");
    let mut small = Vec::with_capacity(SMALL);
    // As under a supervisor: the memories of a swarm share one text index.
    let small_config = config.memory_config(embedder.clone());
    for _ in 0..SMALL {
        let mut memory = AgentMemory::new(SWARM, AGENT, small_config.clone())?;
        for (index, json) in small_events.iter().enumerate() {
            memory.apply(index as u64 + 1, &decode_json(json.as_bytes(), &limits)?)?;
        }
        memory.commit()?;
        small.push(memory);
    }
    let after = proc_status("VmRSS");
    let threads = proc_status("Threads");
    out!(
        "small memories: {SMALL} memories of {} items each, in process, no actors: +{:.1} MiB, {:.2} MiB and {:.1} threads per memory",
        small_events.len(),
        mib(after.saturating_sub(before)),
        mib(after.saturating_sub(before)) / SMALL as f64,
        threads.saturating_sub(threads_before) as f64 / SMALL as f64
    );
    out!(
        "row: | {SMALL} memories of {} items, in process, no actors | {SMALL} | {} items | {:.0} | {:.0} | {:.1} | {:.2} | {threads} |",
        small_events.len(),
        SMALL * small_events.len(),
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        mib(after.saturating_sub(before)) / SMALL as f64
    );
    Ok(ExitCode::SUCCESS)
}

/// A supervisor with `agents` agents on the embedded log, each given
/// `events_per_agent` private events.
async fn memory_many_agents(agents: usize, events_per_agent: usize, batch: usize) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = (0..agents.max(1)).map(|index| format!("agent-{index}")).collect();
    let events: Vec<String> = zipf_items(names.len() * events_per_agent, &names)
        .into_iter()
        .map(|json| json.replace("\"scope\":\"shared\"", "\"scope\":\"private\""))
        .collect();
    let scratch = ScratchDir::new("memory")?;
    // Without a flush per append. With it, a thousand feeds storing their
    // positions at once call sled's `flush_async` concurrently, and sled
    // 0.34.7 deadlocks (spacejam/sled#1308: every sled IO thread waits in a
    // flush for a buffer write queued behind it). Memory is what is measured
    // here; the log's durability setting does not change it.
    let options = SledOptions { flush_on_append: false, ..SledOptions::default() };
    let log: Arc<dyn EventLog> = Arc::new(SledLog::open(&scratch.0.join("log"), SWARM, options)?);
    let limits = DecodeLimits::default();
    // The log is written first: what is measured is the memories.
    for chunk in events.chunks(batch.max(1)) {
        let decoded = decode_json_batch(format!("[{}]", chunk.join(",")).as_bytes(), &limits)
            .map_err(|error| anyhow::anyhow!("{error}"))?;
        log.append(&decoded).await?;
    }
    let last_seq = log.last_seq().await?;
    // The embedder is loaded before the first measurement, as in part one.
    let embedder = mneme::model::load_configured_embedder(&SwarmConfig::with_name(SWARM))?;
    let before = proc_status("VmRSS");
    let threads_before = proc_status("Threads");
    let started = Instant::now();
    let supervisor = start_supervisor(log.clone(), &scratch.0, last_seq, Some(embedder))?;
    supervisor.send(AgentsWritten(names.clone())).await?;
    for name in &names {
        let handle = supervisor.send(GetAgent(name.clone())).await??;
        handle.caught_up(log.as_ref(), last_seq, CATCH_UP).await?;
    }
    let caught_up_seconds = started.elapsed().as_secs_f64();
    // A search commits each memory's index.
    let mut items = 0;
    for name in &names {
        let handle = supervisor.send(GetAgent(name.clone())).await??;
        search_hits(&handle, SearchRequest::new("token", 1)).await?;
        items += handle.addr.send(Ask(queries::Status)).await??.items;
    }
    let after = proc_status("VmRSS");
    let threads = proc_status("Threads");
    let added = after.saturating_sub(before);
    out!(
        "{} agents: {} private events ({events_per_agent} each, {items} items in all) applied in {caught_up_seconds:.1} s \
         (one reader of the log routes each memory its own); RSS {:.0} → {:.0} MiB (+{:.0} MiB, {:.2} MiB per agent); \
         threads {threads_before} → {threads}; peak RSS {:.0} MiB",
        names.len(),
        events.len(),
        mib(before),
        mib(after),
        mib(added),
        mib(added) / names.len() as f64,
        mib(proc_status("VmHWM"))
    );
    out!(
        "row: | {} agents under one supervisor (sled log, no flush per append) | {} | {} events | {:.0} | {:.0} | {:.0} | {:.2} | {threads} |",
        names.len(),
        names.len(),
        events.len(),
        mib(before),
        mib(after),
        mib(added),
        mib(added) / names.len() as f64
    );
    Ok(ExitCode::SUCCESS)
}
