//! `mneme-tools bench mcp`: what a tool call over MCP costs beside the HTTP
//! route that answers the same thing, in one run against one `mneme serve`
//! on the embedded log: the same search, the same note written (answered
//! once applied), and, as the raw baseline of a write, `POST /v1/events`
//! of one event followed by a read that waits for it (`min_seq`).

use std::process::ExitCode;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::bench::search::percentile;
use crate::bench::system::ms;
use crate::bench::{SWARM, ScratchDir, WordStream, machine_description, synthetic_events_from};
use crate::eval::ServerProcess;
use mneme::client::call_as;
use mneme_api::agent_memory::Written;
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::{ItemAnswer, SearchAnswer};

const AGENT: &str = "agent-0";
pub(crate) const WARM_UP: usize = 20;

pub fn run(items: usize, queries: usize) -> anyhow::Result<ExitCode> {
    out!("{}", machine_description());
    out!("command: mneme-tools bench mcp --items {items} --queries {queries}");
    let scratch = ScratchDir::new("mcp")?;
    let config = format!(
        "[swarm]\nname = \"{SWARM}\"\n\n[consolidation]\nenabled = false\n\n[http]\npublish_events_per_sec = 0\n\n[[agents]]\nname = \"{AGENT}\"\n"
    );
    std::fs::write(scratch.0.join("swarm.toml"), config)?;
    let server = ServerProcess::start_configured(&scratch.0, "warn")?;
    let mut words = WordStream::zipf(20_000);
    let agents = [AGENT.to_string()];
    let mut last_seq = 0;
    for chunk in synthetic_events_from(items, &agents, &mut words).chunks(500) {
        let body = format!("[{}]", chunk.join(","));
        let answer: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&body))?;
        last_seq = last_seq.max(answer.accepted.iter().map(|event| event.seq).max().unwrap_or(0));
    }
    let base = format!("/v1/swarms/{SWARM}/agents/{AGENT}");
    let _: SearchAnswer = call_as(ureq::get(&server.url(&format!("{base}/search?q=x&min_seq={last_seq}"))), None)?;
    let mcp_url = server.url(&format!("/mcp?agent={AGENT}"));
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}});
    mcp_call(&mcp_url, &initialize)?;
    out!("memory of {AGENT}: {items} items; {queries} calls per row after {WARM_UP} warm-up calls, one at a time");

    let queries_text: Vec<String> = (0..queries + WARM_UP).map(|_| words.sentence(3)).collect();
    let http_search = time(&queries_text, |query| {
        let path = format!("{base}/search?q={}&k=10", query.replace(' ', "+"));
        let _: SearchAnswer = call_as(ureq::get(&server.url(&path)), None)?;
        Ok(())
    })?;
    let mcp_search = time(&queries_text, |query| {
        let call = tool_call("memory_search", json!({"query": query, "limit": 10}));
        mcp_call(&mcp_url, &call).map(drop)
    })?;
    let notes: Vec<String> =
        (0..queries + WARM_UP).map(|index| format!("note {index}: {}", words.sentence(20))).collect();
    let mut counter = 0u64;
    let raw_write = time(&notes, |text| {
        counter += 1;
        let id = mneme_events::EventId::from_parts(1_800_000_000_000 + counter, u128::from(counter));
        let ts = mneme_events::Timestamp::now().to_string();
        let event = json!({"id": id.to_string(), "swarm": SWARM, "agent": AGENT, "ts": ts, "kind": "note_written", "data": {"text": text}});
        let accepted: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&event.to_string()))?;
        let seq = accepted.accepted[0].seq;
        let _: ItemAnswer = call_as(ureq::get(&server.url(&format!("{base}/items/{id}?min_seq={seq}"))), None)?;
        Ok(())
    })?;
    let http_write = time(&notes, |text| {
        let body = json!({"text": text}).to_string();
        let _: Written = call_as(ureq::post(&server.url(&format!("{base}/notes"))), Some(&body))?;
        Ok(())
    })?;
    let mcp_write =
        time(&notes, |text| mcp_call(&mcp_url, &tool_call("memory_write", json!({"text": text}))).map(drop))?;

    out!("");
    latency_table_head();
    let row = latency_row;
    row("search over HTTP (`GET …/search`, hybrid, k=10)", &http_search, &http_search, "itself");
    row("search over MCP (`memory_search`)", &mcp_search, &http_search, "HTTP search");
    row("raw write: `POST /v1/events` + `GET …/items/{id}?min_seq`", &raw_write, &raw_write, "itself");
    row("note over HTTP (`POST …/notes`, answered once applied)", &http_write, &raw_write, "raw write");
    row("note over MCP (`memory_write`)", &mcp_write, &raw_write, "raw write");
    Ok(ExitCode::SUCCESS)
}

fn tool_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}

/// One JSON-RPC request to `/mcp`; an error answer or an error result fails.
fn mcp_call(url: &str, message: &Value) -> anyhow::Result<Value> {
    let answer: Value = ureq::post(url)
        .set("accept", "application/json, text/event-stream")
        .set("mcp-protocol-version", "2025-11-25")
        .send_json(message)?
        .into_json()?;
    anyhow::ensure!(answer.get("error").is_none(), "MCP error: {answer}");
    anyhow::ensure!(answer["result"]["isError"] != json!(true), "tool error: {answer}");
    Ok(answer)
}

/// The head of a table of [`latency_row`]s.
pub(crate) fn latency_table_head() {
    out!("| call | p50 (ms) | p99 (ms) | p50 / baseline | baseline |");
    out!("|---|---:|---:|---:|---|");
}

/// One row: `sample`'s p50 and p99, and its p50 as a ratio to
/// `baseline`'s, named `baseline_name`.
pub(crate) fn latency_row(name: &str, sample: &[Duration], baseline: &[Duration], baseline_name: &str) {
    let (p50, p99) = (percentile(sample, 0.5), percentile(sample, 0.99));
    let ratio = ms(p50) / ms(percentile(baseline, 0.5));
    out!("| {name} | {:.3} | {:.3} | {ratio:.2} | {baseline_name} |", ms(p50), ms(p99));
}

/// Each input once, timed, sorted, after the warm-up.
pub(crate) fn time<T>(inputs: &[T], mut call: impl FnMut(&T) -> anyhow::Result<()>) -> anyhow::Result<Vec<Duration>> {
    let mut timings = Vec::with_capacity(inputs.len());
    for input in inputs {
        let started = Instant::now();
        call(input)?;
        timings.push(started.elapsed());
    }
    let mut timings = timings.split_off(WARM_UP.min(timings.len()));
    timings.sort();
    Ok(timings)
}
