//! Several `mneme serve` replicas of the same swarms on NATS: the events
//! they are given, who holds each swarm's writer lease, and the checks run
//! after failures (nothing lost, nothing Mneme writes written twice, the
//! same digests everywhere).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mneme_api::log::{AcceptedEvents, EventsPage, Health, LogEntry};
use mneme_api::memory::Digest;
use serde_json::{Value, json};

use super::{MnemeServer, typed};

/// The key every replica derives ids with (`MNEME_ID_KEY`).
pub const ID_KEY: &str = "6d6e656d652d7265706c6963612d746573742d6b65792d303132333435363738";
pub const AGENTS: [&str; 3] = ["planner", "coder", "reviewer"];
/// Verdicts after every 40 events, so that every holder writes some.
pub const CONFIG: &str = "\n[[agents]]\nname = \"reviewer\"\n\n[consolidation]\nevery_events = 40\ninterval_ms = 0\n";

/// The environment of replica `node`.
pub fn environment(node: &str) -> Vec<(&str, &str)> {
    vec![("MNEME_NODE", node), ("MNEME_ID_KEY", ID_KEY), ("MNEME_LOG", "warn,mneme_actors::lease_keeper=info")]
}

/// Event `number` of `swarm`: messages, facts whose value changes (so
/// consolidation finds contradictions), repeated notes (duplicates) and a
/// handoff every 15 events.
pub fn event(swarm: &str, number: u64) -> Value {
    let agent = AGENTS[(number % 3) as usize];
    let id = ulid::Ulid::from_parts(1_772_445_600_000 + number * 1000, u128::from(number)).to_string();
    let ts = format!("2026-03-02T{:02}:{:02}:{:02}Z", 10 + number / 3600, (number / 60) % 60, number % 60);
    let component = ["ledger", "billing", "session", "gateway"][(number % 4) as usize];
    let (kind, data) = match number % 5 {
        _ if number % 15 == 7 => (
            "handoff_sent",
            json!({"to": AGENTS[((number + 1) % 3) as usize], "task": format!("task-{number}"), "summary": format!("take the {component} fix over")}),
        ),
        0 => (
            "fact_asserted",
            json!({"subject": format!("{component}-service"), "predicate": "replica_count", "object": format!("{}", number % 7)}),
        ),
        1 => (
            "message_recorded",
            json!({"role": "assistant", "text": format!("the {component} retry budget is three attempts")}),
        ),
        _ => (
            "message_recorded",
            json!({"role": "assistant", "text": format!("step {number}: read the {component} module and its tests")}),
        ),
    };
    json!({"id": id, "swarm": swarm, "agent": agent, "ts": ts, "kind": kind, "data": data, "scope": "shared"})
}

/// The events `range` of `swarm` as one request body.
pub fn batch(swarm: &str, range: std::ops::Range<u64>) -> String {
    Value::Array(range.map(|number| event(swarm, number)).collect()).to_string()
}

/// Publishes events `range` of `swarm` through `server`; answers the
/// acknowledged ids and seqs.
pub fn publish(server: &MnemeServer, swarm: &str, range: std::ops::Range<u64>) -> BTreeMap<String, u64> {
    let (status, answer) = server.post("/v1/events", &batch(swarm, range));
    assert_eq!(status, 202, "{answer}");
    let answer: AcceptedEvents = typed("POST /v1/events", answer);
    answer.accepted.into_iter().map(|accepted| (accepted.id, accepted.seq)).collect()
}

/// `/healthz`, or `None` while the replica does not answer.
pub fn health(server: &MnemeServer) -> Option<Health> {
    let response = ureq::get(&format!("{}/healthz", server.url)).timeout(Duration::from_secs(2)).call().ok()?;
    response.into_json().ok()
}

/// Whether `server` holds `swarm`'s writer lease.
pub fn holds(server: &MnemeServer, swarm: &str) -> bool {
    health(server).is_some_and(|health| {
        health.swarms.iter().any(|entry| entry.swarm == swarm && entry.leases.iter().any(|lease| lease.held_here))
    })
}

/// The holder of `swarm`'s writer lease as `server` last saw it.
pub fn holder_seen_by(server: &MnemeServer, swarm: &str) -> Option<String> {
    let health = health(server)?;
    health.swarms.into_iter().find(|entry| entry.swarm == swarm)?.leases.into_iter().next()?.holder
}

/// Every event of `swarm`'s log, in order.
pub fn log_events(server: &MnemeServer, swarm: &str) -> Vec<(u64, mneme_events::Event)> {
    let mut events = Vec::new();
    let mut from_seq = 1;
    loop {
        let page: EventsPage = server.get_typed(&format!("/v1/swarms/{swarm}/events?from_seq={from_seq}&limit=10000"));
        if page.events.is_empty() {
            return events;
        }
        for entry in &page.events {
            let LogEntry::Event(event) = entry else { panic!("a record that is not an event: {entry:?}") };
            events.push((event.seq, event.decode().expect("the log's events decode")));
            from_seq = event.seq + 1;
        }
    }
}

/// What each replica says of `swarm` when a check over replicas fails: who
/// holds the writer lease as it sees it, how far each agent's memory has
/// applied the log, and its handoff and lease counters. Printed so that a
/// failure in CI, whose replicas are gone afterwards, tells what stalled.
pub fn describe_replicas(replicas: &[&MnemeServer], swarm: &str) -> String {
    let mut report = String::new();
    for replica in replicas {
        let Some(health) = health(replica) else {
            report.push_str(&format!("{}: not answering\n", replica.url));
            continue;
        };
        let entry = health.swarms.iter().find(|entry| entry.swarm == swarm);
        let leases: Vec<String> = entry
            .map(|entry| {
                entry
                    .leases
                    .iter()
                    .map(|lease| format!("{} held by {:?} (here: {})", lease.lease, lease.holder, lease.held_here))
                    .collect()
            })
            .unwrap_or_default();
        let applied: Vec<String> = AGENTS
            .iter()
            .map(|agent| {
                let path = format!("/v1/swarms/{swarm}/agents/{agent}/digest");
                let seq = ureq::get(&format!("{}{path}", replica.url))
                    .timeout(Duration::from_secs(2))
                    .call()
                    .ok()
                    .and_then(|response| response.into_json::<Digest>().ok())
                    .map_or_else(|| "?".to_string(), |digest| digest.seq.to_string());
                format!("{agent} at {seq}")
            })
            .collect();
        let metrics = ureq::get(&format!("{}/metrics", replica.url))
            .timeout(Duration::from_secs(2))
            .call()
            .ok()
            .and_then(|response| response.into_string().ok())
            .unwrap_or_default();
        let counters: Vec<&str> = metrics
            .lines()
            .filter(|line| !line.starts_with('#') && line.contains(&format!("swarm=\"{swarm}\"")))
            .filter(|line| line.starts_with("mneme_handoffs_") || line.starts_with("mneme_lease_"))
            .collect();
        report.push_str(&format!(
            "{} ({}): log at {}; {}; {}; {}\n",
            health.node,
            replica.url,
            entry.map_or(0, |entry| entry.last_seq),
            leases.join(", "),
            applied.join(", "),
            counters.join(", ")
        ));
    }
    report
}

/// Each agent's digest on every replica, once all have applied `seq`:
/// asked again until they stand at one seq (a verdict may land between
/// two answers).
pub fn assert_same_digests(replicas: &[&MnemeServer], swarm: &str, seq: u64) {
    for agent in AGENTS {
        let path = format!("/v1/swarms/{swarm}/agents/{agent}/digest?min_seq={seq}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let digests: Vec<Digest> = replicas.iter().map(|replica| replica.get_typed(&path)).collect();
            if digests.iter().all(|digest| digest.seq == digests[0].seq) {
                for digest in &digests[1..] {
                    assert_eq!(
                        digest.digest, digests[0].digest,
                        "{swarm}/{agent}: replicas disagree at {}",
                        digest.seq
                    );
                    assert_eq!(digest.items, digests[0].items);
                }
                break;
            }
            let seqs: Vec<u64> = digests.iter().map(|digest| digest.seq).collect();
            assert!(Instant::now() < deadline, "{swarm}/{agent}: the replicas never stood at one seq: {seqs:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// What a run with failures must leave: every acknowledged event once at
/// its seq; every handoff delivered once; nothing Mneme wrote (a delivery,
/// a verdict) on the log twice, by id or by content. Answers the handoffs
/// and the verdicts counted.
pub fn assert_nothing_lost_or_written_twice(
    server: &MnemeServer,
    swarm: &str,
    acknowledged: &BTreeMap<String, u64>,
) -> (usize, usize) {
    let events = log_events(server, swarm);
    let mut seqs_of: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (seq, event) in &events {
        seqs_of.entry(event.id.to_string()).or_default().push(*seq);
    }
    for (id, seq) in acknowledged {
        assert_eq!(seqs_of.get(id), Some(&vec![*seq]), "{swarm}: acknowledged event {id} at {seq}");
    }
    let doubled: Vec<_> = seqs_of.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    assert!(doubled.is_empty(), "{swarm}: ids on the log twice: {doubled:?}");
    let mut written_by_mneme: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut received: BTreeMap<String, usize> = BTreeMap::new();
    let mut sent = 0;
    for (seq, event) in &events {
        if acknowledged.contains_key(&event.id.to_string()) {
            sent += usize::from(event.kind_name() == "handoff_sent");
            continue;
        }
        if let mneme_events::EventKind::HandoffReceived(delivery) = &event.kind {
            *received.entry(delivery.handoff_id.to_string()).or_default() += 1;
        }
        // Retrieval counts may repeat; anything else Mneme writes twice
        // with the same content is a double write.
        if event.kind_name() != "memories_retrieved" {
            let data = serde_json::to_string(&event.kind.data()).unwrap();
            let content = format!("{} {} {data}", event.agent, event.kind_name());
            written_by_mneme.entry(content).or_default().push(*seq);
        }
    }
    let twice: Vec<_> = written_by_mneme.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    assert!(twice.is_empty(), "{swarm}: Mneme wrote these twice: {twice:?}");
    assert_eq!(received.len(), sent, "{swarm}: every handoff delivered: {received:?}");
    assert!(received.values().all(|count| *count == 1), "{swarm}: a handoff delivered twice: {received:?}");
    let verdicts = written_by_mneme.keys().filter(|content| !content.contains(" handoff_received ")).count();
    (sent, verdicts)
}

/// [`assert_nothing_lost_or_written_twice`], asked again for up to 60 s
/// while deliveries are still under way.
pub fn eventually_nothing_lost_or_written_twice(
    server: &MnemeServer,
    swarm: &str,
    acknowledged: &BTreeMap<String, u64>,
) -> (usize, usize) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_nothing_lost_or_written_twice(server, swarm, acknowledged)
        }));
        match outcome {
            Ok(counts) => return counts,
            Err(panic) if Instant::now() > deadline => std::panic::resume_unwind(panic),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    }
}
