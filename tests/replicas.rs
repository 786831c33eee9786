//! Replicas and the writer lease: two real `mneme serve` processes on one
//! swarm of one nats-server. Both follow the log and answer queries, and
//! agree (the same digest at the same seq); one holds the swarm's writer
//! lease and runs the consolidator and the handoff router. Killed with
//! SIGKILL, its lease moves to the other within 5 s; paused with SIGSTOP
//! past its lease's time to live and woken again, it is fenced out. Over
//! all of it: no event lost, no handoff delivered twice, no verdict
//! written twice.

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{MnemeServer, typed};
use mneme_api::log::{AcceptedEvents, EventsPage, Health, LogEntry};
use mneme_api::memory::{Digest, SearchAnswer};
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

const ID_KEY: &str = "6d6e656d652d7265706c6963612d746573742d6b65792d303132333435363738";
const AGENTS: [&str; 3] = ["planner", "coder", "reviewer"];
/// Verdicts after every 40 events, so that both holders write some.
const CONFIG: &str = "\n[[agents]]\nname = \"reviewer\"\n\n[consolidation]\nevery_events = 40\ninterval_ms = 0\n";

fn replica(work: &std::path::Path, nats_url: &str, node: &str) -> MnemeServer {
    let dir = work.join(node);
    std::fs::create_dir_all(&dir).unwrap();
    MnemeServer::start_with_environment(
        &dir,
        Some(nats_url),
        CONFIG,
        &[("MNEME_NODE", node), ("MNEME_ID_KEY", ID_KEY), ("MNEME_LOG", "warn,mneme_actors::lease_keeper=info")],
    )
}

/// Event `number` of the swarm: messages, facts whose value changes (so
/// consolidation finds contradictions), repeated notes (duplicates) and a
/// handoff every 15 events.
fn event(number: u64) -> Value {
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
    json!({"id": id, "swarm": "demo", "agent": agent, "ts": ts, "kind": kind, "data": data, "scope": "shared"})
}

/// Publishes events `range` through `server`; answers the acknowledged ids
/// and seqs.
fn publish(server: &MnemeServer, range: std::ops::Range<u64>) -> BTreeMap<String, u64> {
    let batch = Value::Array(range.map(event).collect());
    let (status, answer) = server.post("/v1/events", &batch.to_string());
    assert_eq!(status, 202, "{answer}");
    let answer: AcceptedEvents = typed("POST /v1/events", answer);
    answer.accepted.into_iter().map(|accepted| (accepted.id, accepted.seq)).collect()
}

fn health(server: &MnemeServer) -> Option<Health> {
    let response = ureq::get(&format!("{}/healthz", server.url)).timeout(Duration::from_secs(2)).call().ok()?;
    response.into_json().ok()
}

fn held_here(server: &MnemeServer) -> bool {
    health(server).is_some_and(|health| health.swarms[0].leases.iter().any(|lease| lease.held_here))
}

fn holder_seen_by(server: &MnemeServer) -> Option<String> {
    health(server)?.swarms[0].leases[0].holder.clone()
}

fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

/// Every event on the log, in order.
fn log_events(server: &MnemeServer) -> Vec<(u64, mneme_events::Event)> {
    let mut events = Vec::new();
    let mut from_seq = 1;
    loop {
        let page: EventsPage = server.get_typed(&format!("/v1/swarms/demo/events?from_seq={from_seq}&limit=10000"));
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

/// Each agent's digest on both replicas, once both have applied `seq`.
fn assert_same_digests(a: &MnemeServer, b: &MnemeServer, seq: u64) {
    for agent in AGENTS {
        let path = format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={seq}");
        // A memory that applied more than `seq` (a verdict) is asked again.
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (da, db): (Digest, Digest) = (a.get_typed(&path), b.get_typed(&path));
            if da.seq == db.seq {
                assert_eq!(da.digest, db.digest, "{agent}: the replicas disagree at seq {}", da.seq);
                assert_eq!(da.items, db.items);
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{agent}: the replicas never stood at one seq ({} and {})",
                da.seq,
                db.seq
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// What the test checks at the end: every acknowledged event once at its
/// seq; every handoff delivered once; no event Mneme wrote (a delivery, a
/// verdict) on the log twice, by id or by content.
fn assert_nothing_lost_or_written_twice(server: &MnemeServer, acknowledged: &BTreeMap<String, u64>) -> (usize, usize) {
    let events = log_events(server);
    let mut seqs_of: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (seq, event) in &events {
        seqs_of.entry(event.id.to_string()).or_default().push(*seq);
    }
    for (id, seq) in acknowledged {
        assert_eq!(seqs_of.get(id), Some(&vec![*seq]), "acknowledged event {id} at {seq}");
    }
    let doubled: Vec<_> = seqs_of.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    assert!(doubled.is_empty(), "ids on the log twice: {doubled:?}");
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
            let content =
                format!("{} {} {}", event.agent, event.kind_name(), serde_json::to_string(&event.kind.data()).unwrap());
            written_by_mneme.entry(content).or_default().push(*seq);
        }
    }
    let twice: Vec<_> = written_by_mneme.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    assert!(twice.is_empty(), "Mneme wrote these twice: {twice:?}");
    assert_eq!(received.len(), sent, "every handoff delivered: {received:?}");
    assert!(received.values().all(|count| *count == 1), "a handoff delivered twice: {received:?}");
    let verdicts = written_by_mneme.keys().filter(|content| !content.contains(" handoff_received ")).count();
    (sent, verdicts)
}

#[test]
fn replicas_agree_and_the_writer_lease_moves_within_five_seconds_without_double_writes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut a = replica(work.path(), &nats.url(), "replica-a");
    wait_until("replica-a takes the lease", Duration::from_secs(10), || held_here(&a));
    let b = replica(work.path(), &nats.url(), "replica-b");
    wait_until("replica-b sees replica-a hold it", Duration::from_secs(10), || {
        holder_seen_by(&b).as_deref() == Some("replica-a")
    });
    assert!(!held_here(&b), "one holder at a time");

    // Any replica takes writes and answers reads: read-your-writes with
    // min_seq on the other one.
    let mut acknowledged = publish(&b, 0..60);
    let last = *acknowledged.values().max().unwrap();
    let search: SearchAnswer =
        a.get_typed(&format!("/v1/swarms/demo/agents/coder/search?q=retry+budget&min_seq={last}&k=5"));
    assert!(!search.hits.is_empty(), "replica-a finds what was written through replica-b");
    assert_same_digests(&a, &b, last);

    // Consolidation writes verdicts: the holder runs it, the other refuses
    // and names the holder.
    let (status, refusal) = b.post_refused("/v1/swarms/demo/consolidate", "");
    assert_eq!((status, refusal.error.code.as_str()), (503, "not_lease_holder"), "{refusal:?}");
    assert!(refusal.error.message.contains("replica-a"), "{refusal:?}");
    let (status, report) = a.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    // The holder dies: the other takes the lease over within 5 s, and
    // routes and consolidates from where the first left off.
    acknowledged.extend(publish(&b, 60..90));
    a.kill_hard();
    let moved = wait_until("replica-b takes the lease over", Duration::from_secs(5), || held_here(&b));
    eprintln!("lease moved {moved:?} after SIGKILL of its holder");
    acknowledged.extend(publish(&b, 90..150));
    let (status, report) = b.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    // The first comes back: it follows, answers, and does not take the
    // lease back.
    a.start_again();
    wait_until("replica-a sees replica-b hold it", Duration::from_secs(10), || {
        holder_seen_by(&a).as_deref() == Some("replica-b")
    });
    assert!(!held_here(&a));

    // The holder is paused past its lease's time to live (a long GC, a
    // stopped VM) and woken: replica-a takes over meanwhile, and whatever
    // replica-b still tries as the old holder is fenced out.
    let paused = b.pid().to_string();
    assert!(Command::new("kill").args(["-STOP", &paused]).status().unwrap().success());
    let moved = wait_until("replica-a takes the lease from a paused holder", Duration::from_secs(5), || held_here(&a));
    eprintln!("lease moved {moved:?} after SIGSTOP of its holder");
    acknowledged.extend(publish(&a, 150..200));
    assert!(Command::new("kill").args(["-CONT", &paused]).status().unwrap().success());
    wait_until("replica-b sees it lost the lease", Duration::from_secs(10), || {
        health(&b).is_some_and(|health| !health.swarms[0].leases[0].held_here)
    });
    acknowledged.extend(publish(&b, 200..240));
    let (status, report) = a.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    let last = typed::<Health>("GET /healthz", a.get_as(None, "/healthz").1).last_seq;
    // Deliveries still under way are waited for.
    let deadline = Instant::now() + Duration::from_secs(60);
    let (handoffs, verdicts) = loop {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            assert_nothing_lost_or_written_twice(&a, &acknowledged)
        }));
        match outcome {
            Ok(counts) => break counts,
            Err(panic) if Instant::now() > deadline => std::panic::resume_unwind(panic),
            Err(_) => std::thread::sleep(Duration::from_millis(500)),
        }
    };
    assert!(handoffs >= 15 && verdicts > 0, "{handoffs} handoffs, {verdicts} verdicts");
    let last = last.max(typed::<Health>("GET /healthz", a.get_as(None, "/healthz").1).last_seq);
    assert_same_digests(&a, &b, last);
    eprintln!(
        "{} events acknowledged, {handoffs} handoffs each delivered once, {verdicts} verdicts each written once",
        acknowledged.len()
    );
}

/// A process whose id key differs from the one the swarm's other
/// processes derive ids with refuses to start, naming the fix.
#[test]
fn a_replica_with_another_id_key_refuses_to_start() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let _a = replica(work.path(), &nats.url(), "replica-a");
    let dir = work.path().join("replica-c");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("swarm.toml"), common::swarm_config("demo", Some(&nats.url()), CONFIG)).unwrap();
    let output = Command::new(common::MNEME)
        .args(["serve", "--config"])
        .arg(dir.join("swarm.toml"))
        .arg("--data-dir")
        .arg(dir.join("data"))
        .args(["--http", &format!("127.0.0.1:{}", common::free_port()), "--nats", &nats.url()])
        .env("MNEME_LOG", "warn")
        .env_remove("MNEME_ID_KEY")
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("derives event ids with another key") && stderr.contains("MNEME_ID_KEY"), "{stderr}");
}
