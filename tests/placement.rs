//! Placement: four swarms shared among `mneme serve` processes on one
//! nats-server, each swarm held by one process (`[placement] holders =
//! 1`). Every process answers for every swarm — itself, or by sending the
//! client to the holder (307) — and reads wait for `min_seq` wherever they
//! land. A holder killed with SIGKILL: its swarms move to the others and
//! answer again with nothing lost. A process joining: it takes over the
//! swarms it now ranks first for, and answers for them only once caught
//! up, while the old holder answers until then. Over NATS, a swarm's
//! queries reach the process that holds it.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use common::replicas::{CONFIG, batch, eventually_nothing_lost_or_written_twice, health};
use common::{MnemeServer, typed, wait_until};
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::SearchAnswer;
use mneme_nats::placement::placement;
use mneme_nats::server::NatsServer;
use serde_json::Value;

const SWARMS: [&str; 4] = ["design", "dev", "assistant", "research"];

fn placed_config() -> String {
    format!("{CONFIG}\n[placement]\nholders = 1\n")
}

/// A process given all four swarms' files, named `node`.
fn process(work: &std::path::Path, nats_url: &str, node: &str) -> MnemeServer {
    let dir = work.join(node);
    std::fs::create_dir_all(&dir).unwrap();
    let config = placed_config();
    let swarms: Vec<(&str, &str)> = SWARMS.iter().map(|swarm| (*swarm, config.as_str())).collect();
    let mut environment = common::replicas::environment(node);
    environment.push(("MNEME_LOG", "warn,mneme::server::placement=info"));
    MnemeServer::start_swarms(&dir, Some(nats_url), &swarms, &environment)
}

/// By swarm, the processes that answer for it, as `server` last read the
/// placement bucket.
fn ready_holders(server: &MnemeServer) -> BTreeMap<String, Vec<String>> {
    let Some(health) = health(server) else { return BTreeMap::new() };
    health
        .placement
        .into_iter()
        .map(|swarm| {
            let ready = swarm.held_by.into_iter().filter(|holder| holder.ready).map(|holder| holder.node).collect();
            (swarm.swarm, ready)
        })
        .collect()
}

/// Whether `server` sees each swarm answered by exactly the process the
/// placement rule ranks first among `nodes`.
fn settled(server: &MnemeServer, nodes: &[&str]) -> bool {
    let holders = ready_holders(server);
    SWARMS.iter().all(|swarm| {
        let expected = placement(swarm, nodes.iter().copied(), 1);
        holders.get(*swarm) == Some(&expected)
    })
}

/// POSTs, following a 307 to the process that holds the swarm.
fn post_following(server: &MnemeServer, path: &str, body: &str) -> (u16, Value, bool) {
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    let mut url = format!("{}{path}", server.url);
    let mut redirected = false;
    for _ in 0..3 {
        match agent.post(&url).set("content-type", "application/json").send_string(body) {
            // Without redirects followed, ureq answers a 307 as a success.
            Ok(response) if response.status() == 307 => {
                url = response.header("location").expect("a 307 names where").to_string();
                redirected = true;
            }
            Ok(response) => return (response.status(), response.into_json().unwrap(), redirected),
            Err(ureq::Error::Status(status, response)) => {
                return (status, response.into_json().unwrap(), redirected);
            }
            Err(error) => panic!("POST {url}: {error}"),
        }
    }
    panic!("POST {path}: redirected more than twice");
}

/// Events acknowledged, by swarm: id to seq.
type Acknowledged = BTreeMap<&'static str, BTreeMap<String, u64>>;

/// Publishes events `range` of `swarm` through `server` (redirected to
/// the holder), adds them to `acknowledged`; answers the last seq and
/// whether the publish was redirected.
fn publish(
    acknowledged: &mut Acknowledged,
    server: &MnemeServer,
    swarm: &'static str,
    range: std::ops::Range<u64>,
) -> (u64, bool) {
    let (status, answer, redirected) = post_following(server, "/v1/events", &batch(swarm, range));
    assert_eq!(status, 202, "{answer}");
    let answer: AcceptedEvents = typed("POST /v1/events", answer);
    let seqs = acknowledged.entry(swarm).or_default();
    seqs.extend(answer.accepted.iter().map(|accepted| (accepted.id.clone(), accepted.seq)));
    (answer.accepted.iter().map(|accepted| accepted.seq).max().unwrap(), redirected)
}

/// A search of `swarm` that must find event `number` (a message on the
/// retry budget), asked of `server` with `min_seq`: `None` while no
/// process answers for the swarm (503), so that a caller retries.
fn search(server: &MnemeServer, swarm: &str, min_seq: u64) -> Option<SearchAnswer> {
    let path = format!("/v1/swarms/{swarm}/agents/coder/search?q=retry+budget&min_seq={min_seq}&k=50");
    let (status, body) = server.get_as(None, &path);
    match status {
        200 => Some(typed(&path, body)),
        503 => {
            assert_eq!(body["error"]["code"], "swarm_not_ready", "{body}");
            None
        }
        _ => panic!("GET {path} on {}: {status} {body}", server.url),
    }
}

fn search_until_answered(server: &MnemeServer, swarm: &str, min_seq: u64) -> SearchAnswer {
    let mut answer = None;
    wait_until(&format!("{swarm} answered on {}", server.url), Duration::from_secs(60), || {
        answer = search(server, swarm, min_seq);
        answer.is_some()
    });
    answer.unwrap()
}

#[test]
fn swarms_are_placed_answered_everywhere_and_moved_when_a_holder_dies_or_a_process_joins() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut a = process(work.path(), &nats.url(), "node-a");
    let b = process(work.path(), &nats.url(), "node-b");
    let c = process(work.path(), &nats.url(), "node-c");
    let nodes = ["node-a", "node-b", "node-c"];
    wait_until("the four swarms placed on three processes", Duration::from_secs(60), || {
        [&a, &b, &c].iter().all(|server| settled(server, &nodes))
    });
    let placed_on_a: Vec<&str> =
        SWARMS.iter().copied().filter(|swarm| placement(swarm, nodes, 1) == ["node-a"]).collect();
    assert!(!placed_on_a.is_empty(), "the test kills node-a: it must hold a swarm");

    // Written through any process, read from every process with min_seq.
    let mut acknowledged = Acknowledged::new();
    let mut last: BTreeMap<&str, u64> = BTreeMap::new();
    let mut published: BTreeMap<&str, u64> = BTreeMap::new();
    for (index, swarm) in SWARMS.iter().enumerate() {
        let through = [&a, &b, &c][index % 3];
        last.insert(swarm, publish(&mut acknowledged, through, swarm, 0..45).0);
        published.insert(swarm, 45);
    }
    let not_holding = [&a, &b, &c]
        .into_iter()
        .find(|server| health(server).is_some_and(|health| !health.swarms.iter().any(|held| held.swarm == "design")))
        .expect("one process holds design");
    let (seq, redirected) = publish(&mut acknowledged, not_holding, "design", 45..46);
    assert!(redirected, "a process that does not hold the swarm sends the publisher to the one that does");
    last.insert("design", seq);
    published.insert("design", 46);
    for swarm in SWARMS {
        for server in [&a, &b, &c] {
            let answer = search_until_answered(server, swarm, last[swarm]);
            assert!(!answer.hits.is_empty(), "{swarm} on {}: nothing found", server.url);
        }
    }
    // Over NATS, each swarm's queries reach the process that holds it:
    // only holders join a swarm's queue.
    let client = runtime.block_on(async_nats::connect(nats.url())).unwrap();
    // A holder that just caught up may not have subscribed yet: "no
    // responders" is asked again, for up to 10 s.
    let nats_search = |swarm: &str, min_seq: u64| -> SearchAnswer {
        let body = serde_json::json!({"q": "retry budget", "mode": "bm25", "min_seq": min_seq, "k": 50}).to_string();
        let subject = format!("mneme.{swarm}.coder.query.search");
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let reply = runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), client.request(subject.clone(), body.clone().into()))
                    .await
            });
            match reply {
                Ok(Ok(reply)) => return serde_json::from_slice(&reply.payload).unwrap(),
                Ok(Err(error)) if std::time::Instant::now() < deadline => {
                    eprintln!("{subject}: {error}; asking again");
                    std::thread::sleep(Duration::from_millis(100));
                }
                failed => panic!("{subject}: {failed:?}"),
            }
        }
    };
    for swarm in SWARMS {
        assert!(!nats_search(swarm, last[swarm]).hits.is_empty(), "{swarm} over NATS");
    }

    // Kill the holder: its swarms move to the next-ranked processes, which
    // catch up from the log and answer with everything acknowledged.
    a.kill_hard();
    let survivors = ["node-b", "node-c"];
    let moved = wait_until("node-a's swarms answered again", Duration::from_secs(60), || {
        [&b, &c].iter().all(|server| settled(server, &survivors))
    });
    eprintln!("node-a killed: its {} swarm(s) answered again after {moved:?}", placed_on_a.len());
    for swarm in placed_on_a.clone() {
        let (seq, _) = publish(&mut acknowledged, &b, swarm, published[swarm]..published[swarm] + 15);
        published.insert(swarm, published[swarm] + 15);
        last.insert(swarm, seq);
        for server in [&b, &c] {
            assert!(!search_until_answered(server, swarm, seq).hits.is_empty());
        }
        assert!(!nats_search(swarm, seq).hits.is_empty(), "{swarm} over NATS after the move");
    }

    // A process joins: it takes over the swarms it ranks first for, and
    // answers for them only once caught up. Queries asked throughout are
    // answered (by the old holder until then), never from behind min_seq.
    let joined = ["node-b", "node-c", "node-d"];
    let taken: Vec<&str> =
        SWARMS.iter().copied().filter(|swarm| placement(swarm, survivors, 1) != placement(swarm, joined, 1)).collect();
    assert!(!taken.is_empty(), "node-d must take a swarm over for the test to mean anything");
    let watched = taken[0];
    let watched_seq = Arc::new(AtomicU64::new(last[watched]));
    let stop = Arc::new(AtomicBool::new(false));
    let (answered, unanswered) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let querier = {
        let (url, watched_seq, stop) = (c.url.clone(), watched_seq.clone(), stop.clone());
        let (answered, unanswered) = (answered.clone(), unanswered.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let seq = watched_seq.load(Ordering::Relaxed);
                let path = format!("{url}/v1/swarms/{watched}/agents/coder/digest?min_seq={seq}");
                match ureq::get(&path).call() {
                    Ok(response) => {
                        let digest: mneme_api::memory::Digest = response.into_json().unwrap();
                        assert!(digest.seq >= seq, "answered at {} for min_seq {seq}", digest.seq);
                        answered.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(error) => {
                        eprintln!("digest of {watched} for min_seq {seq} not answered: {error}");
                        unanswered.fetch_add(1, Ordering::Relaxed);
                    }
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    let d = process(work.path(), &nats.url(), "node-d");
    let mut next = published[watched];
    let joined_after = wait_until("node-d answers for the swarms it took over", Duration::from_secs(60), || {
        let (seq, _) = publish(&mut acknowledged, &b, watched, next..next + 1);
        next += 1;
        watched_seq.store(seq, Ordering::Relaxed);
        [&b, &c, &d].iter().all(|server| settled(server, &joined))
    });
    published.insert(watched, next);
    stop.store(true, Ordering::Relaxed);
    querier.join().expect("every answer stood at or past min_seq");
    eprintln!(
        "node-d took over {taken:?} in {joined_after:?}; {} digest queries answered during the move, {} not",
        answered.load(Ordering::Relaxed),
        unanswered.load(Ordering::Relaxed)
    );
    assert_eq!(unanswered.load(Ordering::Relaxed), 0, "a move leaves no gap");
    for swarm in SWARMS {
        let (seq, _) = publish(&mut acknowledged, &d, swarm, published[swarm]..published[swarm] + 3);
        published.insert(swarm, published[swarm] + 3);
        for server in [&b, &c, &d] {
            assert!(!search_until_answered(server, swarm, seq).hits.is_empty());
        }
        let holder = [&b, &c, &d]
            .into_iter()
            .find(|server| health(server).is_some_and(|health| health.swarms.iter().any(|held| held.swarm == swarm)))
            .expect("a process holds it");
        // Every acknowledged event once, every handoff delivered once,
        // nothing Mneme wrote twice, through a kill and a move.
        assert_eq!(acknowledged[swarm].len() as u64, published[swarm]);
        eventually_nothing_lost_or_written_twice(holder, swarm, &acknowledged[swarm]);
    }
}
