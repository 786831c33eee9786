//! `serve` as a library: a server in the test's own process, stopped by
//! resolving the shutdown future it was given (no signal), and a second one
//! in the same process (the metrics recorder is process-global) that starts
//! from the snapshots the first wrote on its way out.

mod common;

use std::time::{Duration, Instant};

use mneme_actors::SwarmConfig;
use mneme_api::log::{AcceptedEvents, EventsPage, Health, LogEntry};
use mneme_api::memory::Digest;
use tokio::sync::oneshot;

/// A running in-process server: its URL, how to stop it, and its thread.
struct InProcess {
    url: String,
    stop: oneshot::Sender<()>,
    thread: std::thread::JoinHandle<anyhow::Result<()>>,
}

fn start(config: SwarmConfig) -> InProcess {
    let url = format!("http://{}", config.http.bind);
    let (stop, stopped) = oneshot::channel::<()>();
    let thread = std::thread::spawn(move || {
        actix::System::new().block_on(mneme::server::serve(vec![config], async move {
            let _ = stopped.await;
        }))
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while ureq::get(&format!("{url}/healthz")).call().is_err() {
        if thread.is_finished() {
            panic!("serve returned before answering: {:?}", thread.join());
        }
        assert!(Instant::now() < deadline, "the in-process server did not answer within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    InProcess { url, stop, thread }
}

impl InProcess {
    fn get<T: serde::de::DeserializeOwned>(&self, path: &str) -> T {
        ureq::get(&format!("{}{path}", self.url)).call().unwrap().into_json().unwrap()
    }

    /// Resolves the shutdown future and waits for `serve` to return.
    fn stop(self) -> anyhow::Result<()> {
        self.stop.send(()).expect("the server is still waiting for its shutdown");
        self.thread.join().expect("the server thread does not panic")
    }
}

#[test]
fn a_server_stops_when_its_shutdown_future_resolves_and_the_next_one_in_the_process_starts_from_its_snapshots() {
    let work = tempfile::tempdir().unwrap();
    let config_path = work.path().join("swarm.toml");
    std::fs::write(
        &config_path,
        "[swarm]\nname = \"demo\"\nadmit_unknown_agents = true\n\n[embedder]\nkind = \"hashed\"\n\n\
         [consolidation]\nenabled = false\n\n[[agents]]\nname = \"coder\"\n",
    )
    .unwrap();
    let mut config = SwarmConfig::load(&config_path).unwrap();
    config.log.data_dir = work.path().join("data");
    config.http.bind = format!("127.0.0.1:{}", common::free_port()).parse().unwrap();

    let first = start(config.clone());
    let trajectory = std::fs::read_to_string(common::example_path()).unwrap();
    let events: Vec<serde_json::Value> = trajectory.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let accepted: AcceptedEvents = ureq::post(&format!("{}/v1/events", first.url))
        .send_json(serde_json::Value::Array(events.clone()))
        .unwrap()
        .into_json()
        .unwrap();
    let published = accepted.accepted.iter().map(|event| event.seq).max().unwrap();
    // Mneme appends events of its own after a publish: wait until the router
    // delivered every handoff (its delivery can start after a quiet moment,
    // while the memories catch up). With consolidation off, those
    // deliveries are all it appends.
    let handoffs: Vec<&str> = events
        .iter()
        .filter(|event| event["kind"] == "handoff_sent")
        .map(|event| event["id"].as_str().unwrap())
        .collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let page: EventsPage = first.get(&format!("/v1/swarms/demo/events?from_seq={}&limit=1000", published + 1));
        let delivered: Vec<String> = page
            .events
            .iter()
            .filter(|entry| entry.kind() == Some("handoff_received"))
            .filter_map(|entry| match entry {
                LogEntry::Event(event) => event.event["causation_id"].as_str().map(str::to_string),
                _ => None,
            })
            .collect();
        if handoffs.iter().all(|id| delivered.iter().any(|delivered| delivered == id)) {
            break;
        }
        assert!(Instant::now() < deadline, "handoffs not delivered: {handoffs:?}, {delivered:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let last = first.get::<Health>("/healthz").last_seq;
    assert_eq!(last, published + handoffs.len() as u64, "one delivery for each handoff, and nothing else");
    let before: Digest = first.get(&format!("/v1/swarms/demo/agents/coder/digest?min_seq={last}"));
    assert!(before.seq >= published, "{before:?}");
    first.stop().expect("serve returns Ok once its shutdown future resolves");

    let second = start(config);
    let health: Health = second.get("/healthz");
    assert_eq!(health.last_seq, last, "the log persisted");
    let after: Digest = second.get("/v1/swarms/demo/agents/coder/digest");
    assert_eq!((after.seq, &after.digest), (before.seq, &before.digest), "the same memory after the restart");
    assert_eq!(after.snapshot_seq, before.seq, "restored from the snapshot the first server wrote when it stopped");
    second.stop().unwrap();
}
