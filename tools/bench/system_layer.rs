//! `mneme-tools bench system-layer`: what reading through the deployment's
//! system layer costs a swarm's queries. One `mneme serve` on the embedded
//! log, one agent's memory of `--items` items; a search and a context of
//! it timed with the system layer empty (the baseline: no message to the
//! layer's memory is sent then), and again once the layer holds
//! `--events` system events, whose hits and context part join the agent's.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::json;

use crate::bench::mcp::{WARM_UP, latency_row, latency_table_head, time};
use crate::bench::{SWARM, ScratchDir, WordStream, machine_description, synthetic_events_from};
use crate::eval::ServerProcess;
use mneme::client::call_as;
use mneme_api::context::ContextAnswer;
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::SearchAnswer;

const AGENT: &str = "agent-0";

pub fn run(items: usize, system_events: usize, queries: usize) -> anyhow::Result<ExitCode> {
    out!("{}", machine_description());
    out!("command: mneme-tools bench system-layer --items {items} --events {system_events} --queries {queries}");
    let scratch = ScratchDir::new("system-layer")?;
    let config = format!(
        "[swarm]\nname = \"{SWARM}\"\nsystem_publishers = [\"orchestrator\"]\n\n[consolidation]\nenabled = false\n\n\
         [http]\npublish_events_per_sec = 0\n\n[[agents]]\nname = \"{AGENT}\"\n"
    );
    std::fs::write(scratch.0.join("swarm.toml"), config)?;
    let server = ServerProcess::start_configured(&scratch.0, "warn")?;
    let mut words = WordStream::zipf(20_000);
    let mut last_seq = 0;
    for chunk in synthetic_events_from(items, &[AGENT.to_string()], &mut words).chunks(500) {
        let body = format!("[{}]", chunk.join(","));
        let answer: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&body))?;
        last_seq = last_seq.max(answer.accepted.iter().map(|event| event.seq).max().unwrap_or(0));
    }
    let base = format!("/v1/swarms/{SWARM}/agents/{AGENT}");
    let _: SearchAnswer = call_as(ureq::get(&server.url(&format!("{base}/search?q=x&min_seq={last_seq}"))), None)?;
    let texts: Vec<String> = (0..queries + WARM_UP).map(|_| words.sentence(3)).collect();
    let measure = |system_seq: u64| -> anyhow::Result<(Vec<Duration>, Vec<Duration>, usize)> {
        let mut system_hits = 0;
        let search = time(&texts, |query| {
            let path = format!("{base}/search?q={}&k=10&min_system_seq={system_seq}", query.replace(' ', "+"));
            let answer: SearchAnswer = call_as(ureq::get(&server.url(&path)), None)?;
            system_hits += answer.hits.iter().filter(|hit| hit.scope == "system").count();
            Ok(())
        })?;
        let context = time(&texts, |query| {
            let body = json!({"query": query, "budget": 2000, "min_system_seq": system_seq}).to_string();
            let _: ContextAnswer = call_as(ureq::post(&server.url(&format!("{base}/context"))), Some(&body))?;
            Ok(())
        })?;
        Ok((search, context, system_hits))
    };
    let (search_alone, context_alone, none) = measure(0)?;
    anyhow::ensure!(none == 0, "hits from an empty system layer");
    let mut system_seq = 0;
    let orchestrator = ["orchestrator".to_string()];
    for chunk in synthetic_events_from(system_events, &orchestrator, &mut words).chunks(500) {
        let events: Vec<String> = chunk
            .iter()
            .map(|event| event.replace(&format!("\"swarm\":\"{SWARM}\""), "\"swarm\":\"system\""))
            .map(|event| event.replace("\"scope\":\"shared\"", "\"scope\":\"system\""))
            .collect();
        let body = format!("[{}]", events.join(","));
        let answer: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&body))?;
        system_seq = system_seq.max(answer.accepted.iter().map(|event| event.seq).max().unwrap_or(0));
    }
    let (search_with, context_with, system_hits) = measure(system_seq)?;
    out!(
        "memory of {AGENT}: {items} items; system layer: {system_events} events; {queries} calls per row after {WARM_UP} warm-up calls, one at a time"
    );
    out!("hits from the system layer among the top 10: {:.1} per search", system_hits as f64 / texts.len() as f64);
    out!("");
    latency_table_head();
    let row = latency_row;
    row("search (hybrid, k=10), system layer empty", &search_alone, &search_alone, "itself");
    row("search, system layer joined", &search_with, &search_alone, "search, layer empty");
    row("context (budget 2000), system layer empty", &context_alone, &context_alone, "itself");
    row("context, system layer joined", &context_with, &context_alone, "context, layer empty");
    Ok(ExitCode::SUCCESS)
}
