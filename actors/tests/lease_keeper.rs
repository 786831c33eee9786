//! The lease keeper over a real (embedded) log: one holder at a time, the
//! others see who holds it; a keeper that stops gives the lease up, and
//! another takes it within a third of the time to live; the gate tells
//! the actors both ways.

use std::sync::Arc;
use std::time::Duration;

use mneme_actors::{LeaseKeeper, WRITER_LEASE};
use mneme_nats::{EventLog, LogError, SledLog, SledOptions};

const TTL: Duration = Duration::from_millis(300);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_keeper_holds_the_lease_and_another_takes_it_when_it_stops() {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> = Arc::new(SledLog::open(dir.path(), "demo", SledOptions::default()).unwrap());
    let first = log.take_lease(WRITER_LEASE, "node-a").await.unwrap();
    assert!(first.is_some(), "a free lease is taken at start");
    let (keeper_a, mut gate_a) = LeaseKeeper::start(log.clone(), WRITER_LEASE, "node-a", TTL, first);
    let (keeper_b, mut gate_b) = LeaseKeeper::start(log.clone(), WRITER_LEASE, "node-b", TTL, None);
    let held_by_a = gate_a.until_held().await.expect("node-a holds it");
    assert_eq!(held_by_a.holder, "node-a");

    // node-b keeps trying, sees who holds it, and never holds it meanwhile.
    tokio::time::sleep(TTL * 3).await;
    let seen_by_b = gate_b.state();
    assert_eq!(seen_by_b.held, None);
    assert_eq!(seen_by_b.holder.as_deref(), Some("node-a"));
    assert!(gate_b.require("demo").is_err());
    let refusal = gate_b.require("demo").unwrap_err().to_string();
    assert!(refusal.contains("held by node-a"), "{refusal}");

    // node-a stops: it gives the lease up, its gate says so, node-b takes
    // it and appends as holder; node-a's lease is fenced out.
    keeper_a.stop().await;
    tokio::time::timeout(Duration::from_secs(1), gate_a.until_lost(&held_by_a)).await.expect("node-a's gate sees it");
    let held_by_b = tokio::time::timeout(TTL * 2, gate_b.until_held()).await.expect("taken within 2/3 of a TTL");
    let held_by_b = held_by_b.expect("node-b holds it");
    assert!(held_by_b.epoch > held_by_a.epoch);
    let event = mneme_events::Event::new(
        "demo",
        "coder",
        mneme_events::EventKind::MessageRecorded(mneme_events::MessageRecorded {
            role: "assistant".to_string(),
            text: "written by the new holder".to_string(),
        }),
    );
    log.append_fenced(&held_by_b, std::slice::from_ref(&event)).await.unwrap();
    assert!(matches!(log.append_fenced(&held_by_a, std::slice::from_ref(&event)).await, Err(LogError::Fenced { .. })));
    keeper_b.stop().await;
    assert_eq!(log.lease_holder(WRITER_LEASE).await.unwrap(), None, "the last keeper gave it up");
}
