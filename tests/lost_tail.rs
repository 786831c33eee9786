//! A log that lost its tail past the snapshots' checkpoint (issue 36): the
//! events a broker acknowledged and then lost in a power cut, simulated on
//! the embedded log by putting back an older copy of it while the server is
//! stopped. The next start must not serve the snapshots, which hold events
//! the log no longer has: each memory is rebuilt from the log, and the loss
//! is said loudly — an error in the server's log, `lost_tail` in
//! `/healthz`, `mneme_log_tail_lost_events` — while events appended after
//! it, which reuse the lost seqs, are applied, not taken for ones already
//! applied.

mod common;

use std::path::Path;

use common::{MnemeServer, stdout_of, typed};
use mneme_api::log::{AcceptedEvents, Health};
use mneme_api::memory::SearchAnswer;
use serde_json::{Value, json};

fn message(number: u32, agent: &str, text: &str) -> Value {
    json!({
        "id": format!("01KH0000000000000000000{number:03}"),
        "swarm": "demo",
        "agent": agent,
        "ts": "2026-03-02T10:00:00Z",
        "scope": "shared",
        "kind": "message_recorded",
        "data": {"role": "assistant", "text": text},
    })
}

/// Publishes `count` messages numbered from `first`, each naming `word`,
/// and waits until both memories applied them: the last seq.
fn publish(server: &MnemeServer, first: u32, count: u32, word: &str) -> u64 {
    let events: Vec<Value> = (first..first + count)
        .map(|number| message(number, if number % 2 == 0 { "coder" } else { "planner" }, &format!("{word} {number}")))
        .collect();
    let accepted: AcceptedEvents = server.post_typed("/v1/events", &Value::Array(events).to_string());
    let last = accepted.accepted.last().unwrap().seq;
    for agent in ["coder", "planner"] {
        server.get(&format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={last}"));
    }
    last
}

fn hits(server: &MnemeServer, agent: &str, word: &str) -> usize {
    let path = format!("/v1/swarms/demo/agents/{agent}/search?q={word}&mode=bm25&k=100");
    server.get_typed::<SearchAnswer>(&path).hits.len()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn a_log_that_lost_its_tail_past_the_snapshots_is_said_loudly_and_memory_is_rebuilt_from_it() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_logged(work.path(), "", "warn");
    let kept = publish(&server, 1, 30, "kept");
    server.stop();
    // The log as the broker will have it after the loss: the first 30.
    let log_dir = server.data_dir.join("log");
    let older = work.path().join("log-at-30");
    copy_dir(&log_dir, &older);
    server.start_again();
    let lost = publish(&server, 31, 30, "lost");
    assert_eq!(hits(&server, "planner", "lost"), 30);
    server.stop();
    std::fs::remove_dir_all(&log_dir).unwrap();
    std::fs::rename(&older, &log_dir).unwrap();

    server.start_again();
    let health: Health = typed("/healthz", server.get_as(None, "/healthz").1);
    let tail = health.swarms[0].lost_tail.clone().unwrap_or_else(|| panic!("no lost_tail in {health:?}"));
    assert_eq!((tail.snapshot_seq, tail.log_end, tail.events_lost), (lost, kept, lost - kept), "{tail:?}");
    assert_eq!(tail.agents, ["coder", "planner"], "{tail:?}");
    let metrics = ureq::get(&format!("{}/metrics", server.url)).call().unwrap().into_string().unwrap();
    let gauge = format!("mneme_log_tail_lost_events{{swarm=\"demo\"}} {}", lost - kept);
    assert!(metrics.lines().any(|line| line == gauge), "no {gauge} in\n{metrics}");
    let logged = std::fs::read_to_string(server.stderr_log.as_ref().unwrap()).unwrap();
    assert!(logged.contains("ERROR") && logged.contains("THE LOG LOST ITS TAIL"), "{logged}");

    // Memory holds what the log holds: nothing of the lost events, and the
    // events appended now, at the lost seqs, are applied.
    let refilled = publish(&server, 61, 10, "refilled");
    assert_eq!(refilled, kept + 10, "new events reuse the lost seqs");
    for agent in ["coder", "planner"] {
        assert_eq!(hits(&server, agent, "lost"), 0, "{agent} still holds lost events");
        assert_eq!(hits(&server, agent, "refilled"), 10, "{agent} skipped events at the lost seqs");
        assert_eq!(hits(&server, agent, "kept"), 30);
        let verified = stdout_of(&server.cli(&["replay", "--swarm", "demo", "--agent", agent, "--verify"]));
        assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{verified}");
    }
    // A restart on the log as it now is finds nothing lost.
    server.restart();
    let health: Health = typed("/healthz", server.get_as(None, "/healthz").1);
    assert_eq!(health.swarms[0].lost_tail, None, "{health:?}");
}
