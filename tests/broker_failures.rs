//! Broker failures under a real `mneme serve`: nats-server killed with
//! SIGKILL and restarted on its store, again and again, and a three-node
//! JetStream cluster whose R3 stream loses its leader and then a follower,
//! while a publisher posts batches over HTTP and a reader queries memory.
//!
//! The publisher behaves as the API asks publishers to: a POST that fails
//! (503 while the log is unavailable) is sent again with the same events,
//! hence the same ids, until accepted. At the end every accepted event is
//! on the log exactly once at the sequence it was accepted at, each agent's
//! memory holds one item per event, and its digest equals a replay from the
//! log, online and offline.
//!
//! Each test prints what it injected and what it checked. Without a
//! nats-server binary these tests fail, they never skip.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::{MnemeServer, stdout_of, typed};
use mneme_api::log::{AcceptedEvents, EventsPage, LogEntry};
use mneme_api::memory::{Digest, ReplayAnswer};
use mneme_nats::server::{NatsCluster, NatsServer};
use serde_json::{Value, json};

/// The agents that publish; every event is private, so each agent's memory
/// holds exactly its own events.
const AGENTS: [&str; 2] = ["planner", "coder"];

const EVENTS_PER_POST: usize = 20;

/// Kills of the single nats-server.
const SERVER_KILLS: usize = 5;

/// How long writes may stay refused after a fault before the test fails.
const WRITES_RESUME_TIMEOUT: Duration = Duration::from_secs(45);

/// Scheduled consolidation appends verdicts of its own; these tests count
/// every record on the log as the publisher's, so it is kept from running.
/// No consolidation, and no publish quota: the publisher posts as fast as
/// the server takes events, and the write pauses measured after each fault
/// are the failover's, not the quota's.
const NO_CONSOLIDATION: &str =
    "\n[consolidation]\nenabled = false\n\n[http]\npublish_events_per_sec = 0\npublish_bytes_per_sec = 0\n";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

/// What the publisher was told, and how often it had to post again.
#[derive(Default)]
struct Published {
    seq_of_event: HashMap<String, u64>,
    agent_of_event: HashMap<String, String>,
    posts_repeated: usize,
    /// Events answered `duplicate: true`: stored by an earlier attempt whose
    /// answer was a failure, and deduplicated when posted again.
    reported_duplicates: usize,
    refusals: BTreeMap<String, usize>,
    accepted_at: Vec<Instant>,
}

impl Published {
    fn events_of(&self, agent: &str) -> usize {
        self.agent_of_event.values().filter(|owner| *owner == agent).count()
    }

    /// How long after `fault` the next post was accepted. Acceptances within
    /// a few milliseconds of it answered posts sent before it.
    fn write_pause_after(&self, fault: Instant) -> Option<Duration> {
        let settled = fault + Duration::from_millis(50);
        self.accepted_at.iter().find(|at| **at > settled).map(|at| at.duration_since(fault))
    }
}

fn batch(batch_number: usize) -> Vec<Value> {
    (0..EVENTS_PER_POST)
        .map(|index| {
            json!({
                "id": ulid::Ulid::new().to_string(),
                "swarm": "demo",
                "agent": AGENTS[index % AGENTS.len()],
                "ts": "2026-03-02T10:00:00Z",
                "kind": "message_recorded",
                "data": {"role": "assistant",
                         "text": format!("deployment note {batch_number}-{index}: the canary of build {batch_number} is healthy")},
                "scope": "private",
            })
        })
        .collect()
}

/// Posts batches until `stop`; a post that is not accepted is sent again,
/// the same body, until it is.
fn publish_until_stopped(url: String, stop: Arc<AtomicBool>, accepted_count: Arc<AtomicUsize>) -> Published {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(60)).build();
    let mut published = Published::default();
    let mut batch_number = 0;
    while !stop.load(Ordering::Relaxed) {
        batch_number += 1;
        let events = batch(batch_number);
        let body = Value::Array(events.clone()).to_string();
        let answer = loop {
            let refusal = match agent
                .post(&format!("{url}/v1/events"))
                .set("content-type", "application/json")
                .send_string(&body)
            {
                Ok(response) if response.status() == 202 => break response.into_json::<AcceptedEvents>().unwrap(),
                Ok(response) => format!("status {}", response.status()),
                Err(ureq::Error::Status(503, _)) => "503 log_unavailable".to_string(),
                Err(ureq::Error::Status(status, response)) => {
                    panic!("POST /v1/events refused with {status}: {}", response.into_string().unwrap_or_default())
                }
                Err(error) => format!("transport: {error}"),
            };
            *published.refusals.entry(refusal).or_default() += 1;
            published.posts_repeated += 1;
            std::thread::sleep(Duration::from_millis(100));
        };
        for (event, accepted) in events.iter().zip(answer.accepted) {
            let id = accepted.id;
            assert_eq!(event["id"].as_str().unwrap(), id, "answers come in request order");
            published.reported_duplicates += usize::from(accepted.duplicate);
            let earlier = published.seq_of_event.insert(id.clone(), accepted.seq);
            assert!(earlier.is_none(), "event {id} accepted twice");
            published.agent_of_event.insert(id, event["agent"].as_str().unwrap().to_string());
        }
        published.accepted_at.push(Instant::now());
        accepted_count.fetch_add(EVENTS_PER_POST, Ordering::Relaxed);
    }
    published
}

/// What the reader got: answers by status, per route.
#[derive(Default, Debug)]
struct Reads {
    answers: BTreeMap<(String, u16), usize>,
}

/// Searches and asks for context, for every agent, until `stop`. These are
/// answered from memory, never from the log, so a broker failure must not
/// fail them.
fn read_until_stopped(url: String, stop: Arc<AtomicBool>) -> Reads {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
    let mut reads = Reads::default();
    while !stop.load(Ordering::Relaxed) {
        for member in AGENTS {
            for (route, path) in [
                ("search", format!("/v1/swarms/demo/agents/{member}/search?q=canary%20build&k=5")),
                ("context", format!("/v1/swarms/demo/agents/{member}/context?q=canary%20build&budget=400")),
            ] {
                let status = match agent.get(&format!("{url}{path}")).call() {
                    Ok(response) => response.status(),
                    Err(ureq::Error::Status(status, _)) => status,
                    Err(error) => panic!("GET {path}: {error}"),
                };
                *reads.answers.entry((route.to_string(), status)).or_default() += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    reads
}

/// The publisher and reader threads of one test.
struct Traffic {
    stop: Arc<AtomicBool>,
    accepted_count: Arc<AtomicUsize>,
    publisher: JoinHandle<Published>,
    reader: JoinHandle<Reads>,
}

impl Traffic {
    fn start(server: &MnemeServer) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let accepted_count = Arc::new(AtomicUsize::new(0));
        let publisher = {
            let (url, stop, accepted_count) = (server.url.clone(), stop.clone(), accepted_count.clone());
            std::thread::spawn(move || publish_until_stopped(url, stop, accepted_count))
        };
        let reader = {
            let (url, stop) = (server.url.clone(), stop.clone());
            std::thread::spawn(move || read_until_stopped(url, stop))
        };
        Traffic { stop, accepted_count, publisher, reader }
    }

    fn accepted(&self) -> usize {
        self.accepted_count.load(Ordering::Relaxed)
    }

    /// Waits until more than `before` events are accepted: writes resumed.
    fn wait_for_writes_after(&self, before: usize) {
        let started = Instant::now();
        while self.accepted() <= before {
            assert!(started.elapsed() < WRITES_RESUME_TIMEOUT, "no post accepted within {WRITES_RESUME_TIMEOUT:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn stop(self) -> (Published, Reads) {
        self.stop.store(true, Ordering::Relaxed);
        (self.publisher.join().expect("publisher"), self.reader.join().expect("reader"))
    }
}

/// Restarts a killed node, waits until every replica of `stream` is current
/// again, and reports how long after the kill that was.
fn restart_until_current(
    runtime: &tokio::runtime::Runtime,
    cluster: &mut NatsCluster,
    node: usize,
    stream: &str,
    killed_at: Instant,
) {
    runtime.block_on(cluster.restart(node)).expect("the killed node restarts");
    runtime.block_on(cluster.wait_until_stream_current(stream)).expect("the restarted node catches up");
    eprintln!(
        "injected: restart of {}; every replica current {:?} after the kill",
        cluster.node_name(node),
        killed_at.elapsed()
    );
}

/// Every read answered 200.
fn assert_reads_all_answered(reads: &Reads) {
    let total: usize = reads.answers.values().sum();
    let failed: Vec<_> = reads.answers.iter().filter(|((_, status), _)| *status != 200).collect();
    eprintln!("checked: {total} reads (search and context) during the faults, answers by status {:?}", reads.answers);
    assert!(failed.is_empty(), "reads failed during broker faults: {failed:?}");
}

/// Lets the publisher post a few more batches past the last fault, stops
/// it and the readers, and checks everything: every read answered, every
/// accepted event once on the log, memories equal to the log, and, with
/// the server stopped, an offline replay that matches.
fn stop_and_check(traffic: Traffic, server: &mut MnemeServer, faults: &[(String, Instant)]) {
    traffic.wait_for_writes_after(traffic.accepted() + 4 * EVENTS_PER_POST);
    let (published, reads) = traffic.stop();
    report_write_pauses(&published, faults);
    assert_reads_all_answered(&reads);
    let last_seq = assert_each_accepted_event_once_on_the_log(server, &published);
    assert_memories_match_the_log(server, &published, last_seq);
    server.stop();
    assert_offline_replay_matches(server);
}

fn report_write_pauses(published: &Published, faults: &[(String, Instant)]) {
    for (fault, at) in faults {
        match published.write_pause_after(*at) {
            Some(pause) => eprintln!("measured: after {fault}, the next post was accepted {pause:?} later"),
            None => eprintln!("measured: after {fault}, no post was accepted"),
        }
    }
    eprintln!(
        "posts repeated by the publisher: {}, refusals {:?}; events answered as duplicates of an earlier attempt: {}",
        published.posts_repeated, published.refusals, published.reported_duplicates
    );
}

/// Reads the whole log over HTTP and checks it against what was accepted:
/// each accepted event exactly once, at its accepted sequence, and nothing
/// else. Returns the last seq.
fn assert_each_accepted_event_once_on_the_log(server: &MnemeServer, published: &Published) -> u64 {
    let mut seqs_of_event: HashMap<String, Vec<u64>> = HashMap::new();
    let mut records = 0;
    let mut from_seq = 1;
    loop {
        let page: EventsPage = server.get_typed(&format!("/v1/swarms/demo/events?from_seq={from_seq}&limit=10000"));
        if page.events.is_empty() {
            break;
        }
        for entry in &page.events {
            let LogEntry::Event(event) = entry else { panic!("not an event: {entry:?}") };
            let id = event.decode().expect("the log's events decode").id;
            seqs_of_event.entry(id.to_string()).or_default().push(event.seq);
        }
        records += page.events.len();
        from_seq = page.next_seq;
    }
    let duplicates: Vec<_> = seqs_of_event.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    let missing: Vec<_> =
        published.seq_of_event.iter().filter(|(id, seq)| seqs_of_event.get(*id) != Some(&vec![**seq])).collect();
    eprintln!(
        "checked: {} events accepted, {records} records on the log, {} events stored twice, {} accepted events \
         missing or at another seq",
        published.seq_of_event.len(),
        duplicates.len(),
        missing.len()
    );
    assert!(duplicates.is_empty(), "events stored twice: {duplicates:?}");
    assert!(missing.is_empty(), "accepted events missing or moved: {missing:?}");
    assert_eq!(records, published.seq_of_event.len(), "the log holds events nobody posted");
    from_seq - 1
}

/// Each agent's memory caught up with the log, holds one item per event it
/// published (none twice), and its digest equals an online replay.
fn assert_memories_match_the_log(server: &MnemeServer, published: &Published, last_seq: u64) {
    for agent in AGENTS {
        let digest = wait_for_memory(server, agent, last_seq);
        let expected_items = published.events_of(agent) as u64;
        assert_eq!(digest.items as u64, expected_items, "{agent}: one item per event, none twice");
        let replay: ReplayAnswer = server.post_typed(&format!("/v1/swarms/demo/agents/{agent}/replay?verify=true"), "");
        assert_eq!(replay.matches, Some(true), "{agent}: live digest differs from a replay: {replay:?}");
        eprintln!(
            "checked: {agent} memory at seq {} holds {expected_items} items, one per event it published; online \
             replay of {} log entries matches digest {}",
            digest.seq, replay.entries_read, digest.digest
        );
    }
}

/// The agent's digest once its memory has applied the log up to `seq`; the
/// API waits 10 s per request, the feed may need longer after faults.
fn wait_for_memory(server: &MnemeServer, agent: &str, seq: u64) -> Digest {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, digest) = server.get_as(None, &format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={seq}"));
        if status == 200 {
            return typed("a digest", digest);
        }
        assert!(Instant::now() < deadline, "{agent} never caught up with seq {seq}: {digest}");
    }
}

/// `mneme replay --verify` on the stopped server's data dir, against the
/// log on NATS, matches the memory it left, for every agent.
fn assert_offline_replay_matches(server: &MnemeServer) {
    for agent in AGENTS {
        let offline = std::process::Command::new(common::MNEME)
            .args(["replay", "--swarm", "demo", "--agent", agent, "--verify", "--data-dir"])
            .arg(&server.data_dir)
            .arg("--config")
            .arg(&server.config_path)
            .env("MNEME_LOG", "warn")
            .output()
            .unwrap();
        let offline = stdout_of(&offline);
        assert!(offline.contains("MATCH") && !offline.contains("MISMATCH"), "{offline}");
    }
    eprintln!("checked: offline `mneme replay --verify` matches for {AGENTS:?}");
}

/// nats-server killed with SIGKILL and restarted on the same port and store,
/// five times, while events are posted and memory is queried: every accepted
/// event is on the log once, memory resumes, and equals a replay.
#[test]
fn nats_server_killed_and_restarted_mid_stream_loses_nothing_and_applies_nothing_twice() {
    let test_started = Instant::now();
    let runtime = runtime();
    let mut nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    // The URL goes into the file too, for the offline replay at the end.
    // Mneme's own retries are off, so that each outage reaches the publisher
    // as 503s and its retries with the same ids are what the dedup window
    // sees (the cluster test below runs with them on).
    let config = format!("nats_url = {:?}\npublish_retry_ms = 0\n{NO_CONSOLIDATION}", nats.url());
    let mut server = MnemeServer::start_with(work.path(), Some(&nats.url()), &config);
    let traffic = Traffic::start(&server);

    let mut faults = Vec::new();
    for kill in 1..=SERVER_KILLS {
        // Kill at varying points of the stream, not on a beat.
        std::thread::sleep(Duration::from_millis(300 + (kill as u64 * 173) % 500));
        let before = traffic.accepted();
        nats.kill();
        let killed_at = Instant::now();
        faults.push((format!("SIGKILL {kill}/{SERVER_KILLS}"), killed_at));
        std::thread::sleep(Duration::from_millis(300));
        runtime.block_on(nats.restart()).expect("nats-server restarts");
        eprintln!(
            "injected: SIGKILL {kill}/{SERVER_KILLS} of nats-server after about {before} events accepted; \
             restarted on the same port and store, answering {:?} after the kill",
            killed_at.elapsed()
        );
        traffic.wait_for_writes_after(before);
    }
    stop_and_check(traffic, &mut server, &faults);
    eprintln!("test took {:?}", test_started.elapsed());
}

/// Mneme on a three-node cluster with R3 streams, given all three URLs: the
/// events stream's leader is killed during posts and queries, a new one is
/// elected and posts resume while it is still down; it comes back and
/// catches up; then a follower is killed. Reads answer throughout, nothing
/// accepted is lost, nothing is applied twice.
#[test]
fn r3_cluster_losing_its_stream_leader_then_a_follower_keeps_serving_and_loses_nothing() {
    let test_started = Instant::now();
    let runtime = runtime();
    let mut cluster = runtime.block_on(NatsCluster::require(3));
    let work = tempfile::tempdir().unwrap();
    let urls = cluster.url_list();
    let config = format!("nats_url = {urls:?}\nreplicas = 3\n{NO_CONSOLIDATION}");
    let mut server = MnemeServer::start_with(work.path(), Some(&urls), &config);
    let stream = mneme_nats::subjects::events_stream("demo");
    runtime.block_on(cluster.wait_until_stream_current(&stream)).expect("the events stream has three current replicas");
    eprintln!("cluster of 3 nodes and mneme serve with an R3 events stream up after {:?}", test_started.elapsed());
    let traffic = Traffic::start(&server);
    // Writes under way before the first fault.
    traffic.wait_for_writes_after(10 * EVENTS_PER_POST);

    let mut faults = Vec::new();
    let leader = runtime.block_on(cluster.stream_leader(&stream)).expect("a leader");
    let before = traffic.accepted();
    cluster.kill(leader);
    let killed_at = Instant::now();
    faults.push((format!("SIGKILL of stream leader {}", cluster.node_name(leader)), killed_at));
    let new_leader = runtime.block_on(cluster.stream_leader(&stream)).expect("a new leader");
    eprintln!(
        "injected: SIGKILL of stream leader {} after about {before} events accepted; {} elected {:?} later",
        cluster.node_name(leader),
        cluster.node_name(new_leader),
        killed_at.elapsed()
    );
    // Writes resume while the old leader is still down.
    traffic.wait_for_writes_after(before);
    restart_until_current(&runtime, &mut cluster, leader, &stream, killed_at);

    let leader = runtime.block_on(cluster.stream_leader(&stream)).expect("a leader");
    let follower = (0..cluster.size()).find(|index| *index != leader).expect("a follower");
    let before = traffic.accepted();
    cluster.kill(follower);
    let killed_at = Instant::now();
    faults.push((format!("SIGKILL of follower {}", cluster.node_name(follower)), killed_at));
    traffic.wait_for_writes_after(before);
    // Writes go on without the follower, which has them to catch up on.
    traffic.wait_for_writes_after(traffic.accepted() + 10 * EVENTS_PER_POST);
    let leader_after = runtime.block_on(cluster.stream_leader(&stream)).expect("a leader");
    eprintln!(
        "injected: SIGKILL of follower {} after about {before} events accepted; leader afterwards {}",
        cluster.node_name(follower),
        cluster.node_name(leader_after)
    );
    restart_until_current(&runtime, &mut cluster, follower, &stream, killed_at);
    stop_and_check(traffic, &mut server, &faults);
    eprintln!("test took {:?}", test_started.elapsed());
}
