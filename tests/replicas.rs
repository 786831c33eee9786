//! Replicas and the writer lease: two real `mneme serve` processes on one
//! swarm of one nats-server. Both follow the log and answer queries, and
//! agree (the same digest at the same seq); one holds the swarm's writer
//! lease and runs the consolidator and the handoff router. Killed with
//! SIGKILL, its lease moves to the other within 5 s; paused with SIGSTOP
//! past its lease's time to live and woken again, it is fenced out. Over
//! all of it: no event lost, no handoff delivered twice, no verdict
//! written twice.

mod common;

use std::process::Command;
use std::time::Duration;

use common::replicas::{
    CONFIG, assert_same_digests, environment, eventually_nothing_lost_or_written_twice, health, holder_seen_by, holds,
    publish,
};
use common::{MnemeServer, typed, wait_until};
use mneme_api::log::Health;
use mneme_api::memory::SearchAnswer;
use mneme_nats::server::NatsServer;

const SWARM: &str = "demo";

fn replica(work: &std::path::Path, nats_url: &str, node: &str) -> MnemeServer {
    let dir = work.join(node);
    std::fs::create_dir_all(&dir).unwrap();
    MnemeServer::start_with_environment(&dir, Some(nats_url), CONFIG, &environment(node))
}

fn held_here(server: &MnemeServer) -> bool {
    holds(server, SWARM)
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
        holder_seen_by(&b, SWARM).as_deref() == Some("replica-a")
    });
    assert!(!held_here(&b), "one holder at a time");

    // Any replica takes writes and answers reads: read-your-writes with
    // min_seq on the other one.
    let mut acknowledged = publish(&b, SWARM, 0..60);
    let last = *acknowledged.values().max().unwrap();
    let search: SearchAnswer =
        a.get_typed(&format!("/v1/swarms/demo/agents/coder/search?q=retry+budget&min_seq={last}&k=5"));
    assert!(!search.hits.is_empty(), "replica-a finds what was written through replica-b");
    assert_same_digests(&[&a, &b], SWARM, last);

    // Consolidation writes verdicts: the holder runs it, the other refuses
    // and names the holder.
    let (status, refusal) = b.post_refused("/v1/swarms/demo/consolidate", "");
    assert_eq!((status, refusal.error.code.as_str()), (503, "not_lease_holder"), "{refusal:?}");
    assert!(refusal.error.message.contains("replica-a"), "{refusal:?}");
    let (status, report) = a.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    // The holder dies: the other takes the lease over within 5 s, and
    // routes and consolidates from where the first left off.
    acknowledged.extend(publish(&b, SWARM, 60..90));
    a.kill_hard();
    let moved = wait_until("replica-b takes the lease over", Duration::from_secs(5), || held_here(&b));
    eprintln!("lease moved {moved:?} after SIGKILL of its holder");
    acknowledged.extend(publish(&b, SWARM, 90..150));
    let (status, report) = b.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    // The first comes back: it follows, answers, and does not take the
    // lease back.
    a.start_again();
    wait_until("replica-a sees replica-b hold it", Duration::from_secs(10), || {
        holder_seen_by(&a, SWARM).as_deref() == Some("replica-b")
    });
    assert!(!held_here(&a));

    // The holder is paused past its lease's time to live (a long GC, a
    // stopped VM) and woken: replica-a takes over meanwhile, and whatever
    // replica-b still tries as the old holder is fenced out.
    let paused = b.pid().to_string();
    assert!(Command::new("kill").args(["-STOP", &paused]).status().unwrap().success());
    let moved = wait_until("replica-a takes the lease from a paused holder", Duration::from_secs(5), || held_here(&a));
    eprintln!("lease moved {moved:?} after SIGSTOP of its holder");
    acknowledged.extend(publish(&a, SWARM, 150..200));
    assert!(Command::new("kill").args(["-CONT", &paused]).status().unwrap().success());
    wait_until("replica-b sees it lost the lease", Duration::from_secs(10), || {
        health(&b).is_some_and(|health| !health.swarms[0].leases[0].held_here)
    });
    acknowledged.extend(publish(&b, SWARM, 200..240));
    let (status, report) = a.post("/v1/swarms/demo/consolidate", "");
    assert_eq!(status, 200, "{report}");

    // Queries answered by the replica without the lease count toward usage
    // too: its retrieval counts reach the log (no one asks the planner's
    // memory on replica-a).
    let before = typed::<Health>("GET /healthz", a.get_as(None, "/healthz").1).last_seq;
    for _ in 0..3 {
        let _: SearchAnswer = b.get_typed("/v1/swarms/demo/agents/planner/search?q=ledger+retry&k=3");
    }
    acknowledged.extend(publish(&a, SWARM, 240..290));
    wait_until("replica-b's retrieval counts reach the log", Duration::from_secs(30), || {
        common::replicas::log_events(&a, SWARM)
            .iter()
            .any(|(seq, event)| *seq > before && event.agent == "planner" && event.kind_name() == "memories_retrieved")
    });

    let last = typed::<Health>("GET /healthz", a.get_as(None, "/healthz").1).last_seq;
    // Deliveries still under way are waited for.
    let (handoffs, verdicts) = eventually_nothing_lost_or_written_twice(&a, SWARM, &acknowledged);
    assert!(handoffs >= 15 && verdicts > 0, "{handoffs} handoffs, {verdicts} verdicts");
    let last = last.max(typed::<Health>("GET /healthz", a.get_as(None, "/healthz").1).last_seq);
    assert_same_digests(&[&a, &b], SWARM, last);
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
