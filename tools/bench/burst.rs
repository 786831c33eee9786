//! `mneme-tools bench burst`: a burst of events accepted by `mneme serve` on the
//! embedded log, the server killed with SIGKILL the moment the last one is
//! accepted (its memories still applying), then started again: how long
//! until every agent's search finds the last accepted event.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::bench::{SWARM, ScratchDir, WordStream, machine_description, synthetic_events_from};
use crate::eval::ServerProcess;
use mneme::client::call_as;
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::SearchAnswer;

/// A word no generated text holds, in the last event of the burst.
const LAST_WORD: &str = "burstfinalmarker";

pub fn run(events: usize, agent_count: usize, batch: usize) -> anyhow::Result<ExitCode> {
    let events = events.max(1);
    let agents: Vec<String> = (0..agent_count.max(1)).map(|index| format!("agent-{index}")).collect();
    out!("{}", machine_description());
    out!("command: mneme-tools bench burst --events {events} --agents {} --batch {batch}", agents.len());
    let scratch = ScratchDir::new("burst")?;
    // The burst measures how fast the server takes events, not the
    // per-caller publish quota: off.
    let mut config = format!(
        "[swarm]\nname = \"{SWARM}\"\n\n[consolidation]\nenabled = false\n\n\
         [http]\npublish_events_per_sec = 0\npublish_bytes_per_sec = 0\n"
    );
    for agent in &agents {
        config.push_str(&format!("\n[[agents]]\nname = \"{agent}\"\n"));
    }
    std::fs::write(scratch.0.join("swarm.toml"), config)?;
    let log_filter = "warn,mneme_actors::memory_actor=info";
    let mut server = ServerProcess::start_configured(&scratch.0, log_filter)?;

    let mut words = WordStream::zipf(20_000);
    let mut bodies = synthetic_events_from(events - 1, &agents, &mut words);
    let last_id = mneme_events::EventId::from_parts(1_767_000_000_000 + events as u64, events as u128);
    bodies.push(
        serde_json::json!({"id": last_id.to_string(), "swarm": SWARM, "agent": agents[0], "ts": "2026-01-01T00:00:00Z",
            "kind": "message_recorded", "scope": "shared",
            "data": {"role": "assistant", "text": format!("the last event of the burst: {LAST_WORD}")}})
        .to_string(),
    );
    let started = Instant::now();
    let mut last_seq = 0;
    for chunk in bodies.chunks(batch.max(1)) {
        let body = format!("[{}]", chunk.join(","));
        let answer: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&body))?;
        last_seq = last_seq.max(answer.accepted.iter().map(|event| event.seq).max().unwrap_or(0));
    }
    let accept_seconds = started.elapsed().as_secs_f64();
    server.kill_hard()?;
    anyhow::ensure!(last_seq == events as u64, "the log ends at seq {last_seq}, not {events}");
    out!(
        "burst: {events} events accepted in {accept_seconds:.2} s ({:.0} events/s, batches of {batch}); SIGKILL at once",
        events as f64 / accept_seconds
    );
    let log_before = std::fs::read_to_string(scratch.0.join("server.log")).unwrap_or_default().len();

    let started = Instant::now();
    let server = ServerProcess::start_configured(&scratch.0, log_filter)?;
    let up_seconds = started.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(600);
    for agent in &agents {
        // BM25 alone: hybrid search always has vector neighbours to show.
        let path = format!("/v1/swarms/{SWARM}/agents/{agent}/search?q={LAST_WORD}&k=1&mode=bm25");
        loop {
            let answer: SearchAnswer = call_as(ureq::get(&server.url(&path)), None)?;
            if answer.hits.first().map(|hit| hit.seq) == Some(last_seq) {
                break;
            }
            anyhow::ensure!(Instant::now() < deadline, "{agent} did not find the last event within 600 s");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let searchable_seconds = started.elapsed().as_secs_f64();
    let log = std::fs::read_to_string(scratch.0.join("server.log")).unwrap_or_default();
    let restart_log = &log[log_before.min(log.len())..];
    out!("");
    out!("| agent | restored from | behind the log's end at the kill |");
    out!("|---|---:|---:|");
    for agent in &agents {
        let restored = restart_log
            .lines()
            .find(|line| {
                line.contains("memory restored from its snapshot") && line.contains(&format!("agent={agent} "))
            })
            .and_then(|line| line.split("snapshot_seq=").nth(1))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|seq| seq.parse::<u64>().ok());
        match restored {
            Some(seq) => out!("| {agent} | its snapshot at seq {seq} | {} events |", last_seq - seq),
            None => out!("| {agent} | the log (no snapshot) | {last_seq} events |"),
        }
    }
    out!("");
    out!(
        "restart: up (answering /healthz) after {up_seconds:.2} s; every agent finds the last accepted event after {searchable_seconds:.2} s"
    );
    Ok(ExitCode::SUCCESS)
}
