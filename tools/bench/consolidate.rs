//! `mneme-tools bench consolidate`: how long consolidation takes over one agent's
//! memory of N items — the copy the memory actor hands over (the only part
//! that holds up its queries), the scan, and applying the verdicts — and
//! what a scan running on another thread does to search latency. The
//! baseline is the same memory's apply rate and its search latency with
//! nothing else running, measured in the same run.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use mneme_actors::SwarmConfig;
use mneme_events::{DecodeLimits, Event, EventKind, FactAsserted, Timestamp, decode_json};
use mneme_projections::consolidation::{
    ConsolidationPlan, ConsolidationPolicy, SharedScan, consolidate, consolidate_with,
};
use mneme_projections::{AgentMemory, SearchMode, SearchRequest};

use crate::bench::WordStream;
use crate::bench::search::percentile;

const AGENT: &str = "agent-0";
const QUERIES: &[&str] = &["token refresh", "database migration fails", "cargo test panic", "retry after timeout"];

pub fn run(items: usize, queries: usize, agents: usize) -> anyhow::Result<ExitCode> {
    let config = SwarmConfig::with_name("bench");
    let embedder = mneme::model::load_configured_embedder(&config)?;
    out!("{}", crate::bench::machine_description());
    out!("command: mneme-tools bench consolidate --items {items} --queries {queries} --agents {agents}");
    out!("embedder: {}", embedder.model_id());
    let (events, duplicates, conflicting) = planted_events(items)?;
    let mut memory = AgentMemory::new("bench", AGENT, config.memory_config(embedder.clone()))?;
    let started = Instant::now();
    for (index, event) in events.iter().enumerate() {
        memory.apply(index as u64 + 1, event)?;
    }
    memory.commit()?;
    let apply_seconds = started.elapsed().as_secs_f64();
    out!(
        "memory: {} items applied in {apply_seconds:.1} s ({:.0} items/s); {duplicates} planted repeats, {conflicting} region facts",
        memory.item_count(),
        items as f64 / apply_seconds
    );

    let policy = ConsolidationPolicy::default();
    let started = Instant::now();
    let view = mneme_projections::consolidation_view(&memory);
    let view_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let plan = consolidate(&view, &policy);
    let scan_seconds = started.elapsed().as_secs_f64();
    let verdicts =
        plan.events(Timestamp::from_unix_millis(1_800_000_000_000), &mneme_events::IdKey::from_bytes([0; 32]));
    out!(
        "plan: {} contradictions, {} merges ({} items), {} forgotten, {} demoted, {} links, {} deferred -> {} events",
        plan.contradictions.len(),
        plan.merges.len(),
        plan.merges.iter().map(|merge| merge.merged.len()).sum::<usize>(),
        plan.forgotten_count(),
        plan.decayed_count(),
        plan.links.len(),
        plan.deferred,
        verdicts.len()
    );

    // Search latency alone, then with a scan running on another thread, as
    // the consolidator runs it (a blocking thread, not a worker arbiter).
    let alone = search_latencies(&mut memory, queries)?;
    let scanning = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let scanner = {
        let view = view.clone();
        let scanning = scanning.clone();
        std::thread::spawn(move || {
            let mut scans = 0;
            while scanning.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::black_box(consolidate(&view, &ConsolidationPolicy::default()));
                scans += 1;
            }
            scans
        })
    };
    let during = search_latencies(&mut memory, queries)?;
    scanning.store(false, std::sync::atomic::Ordering::Relaxed);
    let scans = scanner.join().expect("the scan thread does not panic");

    let checkpoint = memory.checkpoint();
    let started = Instant::now();
    for (offset, event) in verdicts.iter().enumerate() {
        memory.apply(checkpoint + 1 + offset as u64, event)?;
    }
    memory.commit()?;
    let verdict_apply_seconds = started.elapsed().as_secs_f64();
    let total = view_seconds + scan_seconds + verdict_apply_seconds;
    out!("");
    out!("| step | seconds | items/s | ratio to apply (items/s) |");
    out!("|---|---|---|---|");
    let apply_rate = items as f64 / apply_seconds;
    for (step, seconds) in [
        ("copy for the scan (memory actor busy)", view_seconds),
        ("scan (off the query arbiters)", scan_seconds),
        ("apply the verdict events", verdict_apply_seconds),
        ("consolidation in all", total),
    ] {
        let rate = items as f64 / seconds;
        out!("| {step} | {seconds:.2} | {rate:.0} | {:.1}x |", rate / apply_rate);
    }
    out!("");
    out!("| hybrid search, k=10 | p50 ms | p99 ms |");
    out!("|---|---|---|");
    for (label, latencies) in [("alone", &alone), (&*format!("while scanning ({scans} scans ran)"), &during)] {
        out!(
            "| {label} | {:.2} | {:.2} |",
            percentile(latencies, 0.5).as_secs_f64() * 1000.0,
            percentile(latencies, 0.99).as_secs_f64() * 1000.0
        );
    }
    out!(
        "p99 while scanning / alone: {:.2}",
        percentile(&during, 0.99).as_secs_f64() / percentile(&alone, 0.99).as_secs_f64()
    );
    if agents > 1 {
        drop(memory);
        swarm_run(&config, embedder, &events, agents)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// The bench's events, decoded: every 20th message repeats one said
/// shortly before (shouted), and every 100th fact gives a component a
/// second region: work for dedup and for contradiction detection. Answers
/// the events and how many of each were planted.
fn planted_events(items: usize) -> anyhow::Result<(Vec<Event>, usize, usize)> {
    let agents = vec![AGENT.to_string()];
    let jsons = crate::bench::synthetic_events_from(items, &agents, &mut WordStream::zipf(20_000));
    let limits = DecodeLimits::default();
    let mut recent_messages: Vec<String> = Vec::new();
    let (mut duplicates, mut conflicting) = (0usize, 0usize);
    let mut events = Vec::with_capacity(items);
    for (index, json) in jsons.iter().enumerate() {
        let mut event = decode_json(json.as_bytes(), &limits).context("decoding a synthetic event")?;
        if let EventKind::MessageRecorded(message) = &mut event.kind {
            if index % 20 == 10 && !recent_messages.is_empty() {
                message.text = recent_messages[index % recent_messages.len()].to_uppercase();
                duplicates += 1;
            } else {
                recent_messages.push(message.text.clone());
                if recent_messages.len() > 50 {
                    recent_messages.remove(0);
                }
            }
        }
        if let EventKind::FactAsserted(fact) = &mut event.kind
            && index % 100 == 9
        {
            let component = format!("component-{}", index / 200);
            let region = if index % 200 == 9 { "eu-west" } else { "us-east" };
            *fact = FactAsserted {
                subject: component,
                predicate: "runs_in_region".into(),
                object: region.into(),
                confidence: 1.0,
                valid_from: None,
                valid_to: None,
            };
            conflicting += 1;
        }
        events.push(event);
    }
    Ok((events, duplicates, conflicting))
}

/// `agents` memories of one swarm holding the same shared events (one
/// `SharedContent`, as the supervisor gives them): every agent's memory
/// scanned alone, as each agent's scan did its shared items itself, against
/// one run that compares the shared items once ([`SharedScan`]) and scans
/// each memory through it. Same views, same thread, same run.
fn swarm_run(
    config: &SwarmConfig,
    embedder: Arc<dyn mneme_index::embed::Embedder>,
    events: &[Event],
    agents: usize,
) -> anyhow::Result<()> {
    let memory_config = config.memory_config(embedder);
    let mut views = Vec::with_capacity(agents);
    let started = Instant::now();
    for agent in 0..agents {
        let mut memory = AgentMemory::new("bench", &format!("agent-{agent}"), memory_config.clone())?;
        for (index, event) in events.iter().enumerate() {
            memory.apply(index as u64 + 1, event)?;
        }
        memory.commit()?;
        views.push(mneme_projections::consolidation_view(&memory));
    }
    out!("");
    out!(
        "swarm: {agents} agents' memories of the same {} shared events built in {:.1} s",
        events.len(),
        started.elapsed().as_secs_f64()
    );
    let policy = ConsolidationPolicy::default();
    let started = Instant::now();
    let alone: Vec<ConsolidationPlan> = views.iter().map(|view| consolidate(view, &policy)).collect();
    let alone_seconds = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let shared = SharedScan::new(&views.iter().collect::<Vec<_>>(), &policy);
    let shared_seconds = started.elapsed().as_secs_f64();
    let together: Vec<ConsolidationPlan> = views.iter().map(|view| consolidate_with(view, &policy, &shared)).collect();
    let together_seconds = started.elapsed().as_secs_f64();
    out!("");
    out!("| {agents} agents, same shared items | seconds | ratio to each agent alone |");
    out!("|---|---|---|");
    out!("| each agent's memory scanned alone (its shared items compared by each) | {alone_seconds:.2} | 1.00x |");
    out!(
        "| one run: shared items compared once ({:.2} s, {} items, {} pairs), then each memory | {together_seconds:.2} | {:.2}x |",
        shared_seconds,
        shared.items(),
        shared.duplicate_pairs(),
        together_seconds / alone_seconds
    );
    let same = alone == together;
    out!("plans of the one run equal to each memory's alone: {same}");
    Ok(())
}

fn search_latencies(memory: &mut AgentMemory, queries: usize) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(queries);
    for index in 0..queries {
        let request = SearchRequest::new(QUERIES[index % QUERIES.len()], 10).with_mode(SearchMode::Hybrid);
        let started = Instant::now();
        std::hint::black_box(mneme_projections::search(memory, &request)?);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}
