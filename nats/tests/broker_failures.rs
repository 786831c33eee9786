//! Broker failures on real nats-server processes: a server killed with
//! SIGKILL and restarted on the same store while appends and a subscription
//! run, and a three-node JetStream cluster with R3 streams losing its
//! stream leader and then a follower. The promise checked is the log's:
//! every acknowledged event is on the log exactly once, at the sequence its
//! ack reported, and a subscription delivers every sequence once, in order.
//!
//! Each test prints what it injected and what it checked. Without a
//! nats-server binary these tests fail, they never skip.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use futures::StreamExt;
use mneme_events::{DecodeLimits, Event, EventId, decode_json};
use mneme_nats::server::{NatsCluster, NatsServer};
use mneme_nats::{EventLog, JetStreamLog, JetStreamOptions, LogError, Seq, subjects};

const SWARM: &str = "demo";

/// Events per append: small enough that many appends straddle each kill.
const EVENTS_PER_APPEND: usize = 20;

/// Kills of the single server in the restart test.
const SERVER_KILLS: usize = 5;

/// How long a test waits for the subscription to deliver the whole log once
/// appends stopped.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(30);

fn event(agent: &str, text: &str) -> Event {
    let json = serde_json::json!({
        "id": ulid::Ulid::new().to_string(),
        "swarm": SWARM,
        "agent": agent,
        "ts": "2026-01-06T10:30:00Z",
        "kind": "message_recorded",
        "data": { "role": "assistant", "text": text },
    });
    decode_json(json.to_string().as_bytes(), &DecodeLimits::default()).expect("a valid event")
}

/// What the appender was told: the sequence of every acknowledged event, and
/// how often a whole append failed and was repeated with the same events.
#[derive(Default)]
struct Acknowledged {
    seq_of_event: HashMap<EventId, Seq>,
    appends_repeated: usize,
    reported_duplicates: usize,
    /// When each append was acknowledged, to measure how long writes paused.
    acknowledged_at: Vec<Instant>,
}

impl Acknowledged {
    /// How long after `fault` the next append was acknowledged. Acks within
    /// a few milliseconds of the fault answered appends made before it.
    fn write_pause_after(&self, fault: Instant) -> Option<Duration> {
        let settled = fault + Duration::from_millis(50);
        self.acknowledged_at.iter().find(|at| **at > settled).map(|at| at.duration_since(fault))
    }
}

/// Appends batches until `stop`, as a publisher that must not lose events
/// would: an append that fails (the log's own retries ran out) is repeated
/// with the same events until acknowledged. `acknowledged_count` lets the
/// test see writes resume.
async fn append_until_stopped(
    log: Arc<JetStreamLog>,
    stop: Arc<AtomicBool>,
    acknowledged_count: Arc<AtomicUsize>,
) -> Acknowledged {
    let mut acknowledged = Acknowledged::default();
    let agents = ["planner", "coder", "reviewer"];
    let mut batch_number = 0;
    while !stop.load(Ordering::Relaxed) {
        batch_number += 1;
        let batch: Vec<Event> = (0..EVENTS_PER_APPEND)
            .map(|index| event(agents[index % agents.len()], &format!("batch {batch_number} event {index}")))
            .collect();
        let appended = loop {
            match log.append(&batch).await {
                Ok(appended) => break appended,
                Err(error) => {
                    eprintln!("append of batch {batch_number} failed, repeating it with the same ids: {error}");
                    acknowledged.appends_repeated += 1;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        };
        for answer in appended {
            acknowledged.reported_duplicates += usize::from(answer.duplicate);
            let earlier = acknowledged.seq_of_event.insert(answer.id, answer.seq);
            assert!(earlier.is_none(), "event {} acknowledged twice", answer.id);
        }
        acknowledged.acknowledged_at.push(Instant::now());
        acknowledged_count.fetch_add(EVENTS_PER_APPEND, Ordering::Relaxed);
    }
    acknowledged
}

/// Follows the log from the start and returns the sequences delivered, and
/// how many errors the subscription reported on the way, once it has
/// delivered `until`.
async fn follow_until(log: Arc<JetStreamLog>, until: Arc<AtomicUsize>) -> (Vec<Seq>, usize) {
    let mut subscription = log.subscribe(1, None).await.expect("subscribe");
    let mut delivered = Vec::new();
    let mut errors = 0;
    loop {
        let wanted = until.load(Ordering::Relaxed) as Seq;
        if wanted > 0 && delivered.last().is_some_and(|last| *last >= wanted) {
            return (delivered, errors);
        }
        match tokio::time::timeout(Duration::from_millis(200), subscription.next()).await {
            Ok(Some(Ok(entry))) => delivered.push(entry.seq),
            Ok(Some(Err(_))) => errors += 1,
            Ok(None) => panic!("the subscription ended"),
            Err(_quiet) => {}
        }
    }
}

/// Checks the whole log against what was acknowledged: each acknowledged
/// event exactly once, at its acknowledged sequence. Returns the number of
/// records read.
async fn assert_each_acknowledged_event_once(log: &JetStreamLog, acknowledged: &Acknowledged) -> usize {
    let entries = log.read(1, None, usize::MAX).await.expect("read the log");
    let mut seqs_of_event: HashMap<EventId, Vec<Seq>> = HashMap::new();
    for entry in &entries {
        let event = entry.record.as_ref().unwrap_or_else(|invalid| panic!("record {}: {}", entry.seq, invalid.reason));
        seqs_of_event.entry(event.id).or_default().push(entry.seq);
    }
    let duplicates: Vec<_> = seqs_of_event.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    let missing: Vec<_> =
        acknowledged.seq_of_event.iter().filter(|(id, seq)| seqs_of_event.get(id) != Some(&vec![**seq])).collect();
    eprintln!(
        "checked: {} events acknowledged, {} records on the log, {} events stored twice, {} acknowledged events \
         missing or at another seq",
        acknowledged.seq_of_event.len(),
        entries.len(),
        duplicates.len(),
        missing.len()
    );
    assert!(duplicates.is_empty(), "events stored twice: {duplicates:?}");
    assert!(missing.is_empty(), "acknowledged events missing or moved: {missing:?}");
    assert_eq!(entries.len(), acknowledged.seq_of_event.len(), "the log holds events nobody acknowledged");
    entries.len()
}

/// The subscription delivered every sequence from 1 to `last` once, in order.
fn assert_delivered_once_in_order(delivered: &[Seq], last: Seq, errors: usize) {
    let expected: Vec<Seq> = (1..=last).collect();
    eprintln!(
        "checked: subscription delivered {} records ({} errors reported on the way), in order and without gaps: {}",
        delivered.len(),
        errors,
        delivered == expected
    );
    assert_eq!(delivered, expected.as_slice(), "the subscription skipped or repeated records");
}

/// Waits until more than `before` events are acknowledged: writes resumed.
async fn wait_for_acknowledgements_after(count: &AtomicUsize, before: usize, limit: Duration) {
    let started = Instant::now();
    while count.load(Ordering::Relaxed) <= before {
        assert!(started.elapsed() < limit, "no append acknowledged within {limit:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Prints, per fault, how long appends paused after it.
fn report_write_pauses(acknowledged: &Acknowledged, faults: &[(String, Instant)]) {
    for (fault, at) in faults {
        match acknowledged.write_pause_after(*at) {
            Some(pause) => eprintln!("measured: after {fault}, the next append was acknowledged {pause:?} later"),
            None => eprintln!("measured: after {fault}, no append was acknowledged"),
        }
    }
}
/// The log retries what a server crash left unacknowledged: an append made
/// while the server is down succeeds once it is back, without the caller
/// repeating it, and stores each event once.
#[tokio::test]
async fn an_append_during_a_server_restart_is_retried_until_acknowledged() {
    let mut server = NatsServer::require().await;
    let log = JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await.expect("open");
    log.append(&[event("coder", "before the crash")]).await.expect("append");

    server.kill();
    let restarted = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.restart().await.expect("restart");
        server
    });
    let during = [event("coder", "during the crash"), event("planner", "also during the crash")];
    let started = Instant::now();
    let appended = log.append(&during).await.expect("the append is retried until the server is back");
    let _server = restarted.await.expect("restart task");
    eprintln!(
        "injected: SIGKILL of nats-server, restart 700 ms later; append acknowledged after {:?}",
        started.elapsed()
    );
    assert_eq!(appended.iter().map(|answer| answer.seq).collect::<Vec<_>>(), [2, 3]);
    let entries = log.read(1, None, 10).await.expect("read");
    let ids: Vec<EventId> = entries.iter().map(|entry| entry.record.as_ref().expect("valid").id).collect();
    assert_eq!(ids[1..], [during[0].id, during[1].id], "each event once, in order");
    eprintln!("checked: 3 events acknowledged, 3 records on the log, 0 duplicates");
}

/// A log configured without retries fails an append at once while the
/// server is down, and names what was not acknowledged.
#[tokio::test]
async fn without_a_retry_window_an_append_fails_while_the_server_is_down() {
    let mut server = NatsServer::require().await;
    let options = JetStreamOptions { publish_retry_window: Duration::ZERO, ..JetStreamOptions::default() };
    let log = JetStreamLog::connect(&server.url(), SWARM, options).await.expect("open");
    server.kill();
    match log.append(&[event("coder", "lost in the crash")]).await {
        Err(LogError::PublishNotAcknowledged { unacknowledged, attempts, .. }) => {
            assert_eq!((unacknowledged, attempts), (1, 1));
        }
        other => panic!("expected PublishNotAcknowledged, got {other:?}"),
    }
}

/// A read made while the server is down is retried, with a new reading
/// consumer, until the server is back, and returns the log as it is; so is
/// a request for the log's end.
#[tokio::test]
async fn a_read_during_a_server_restart_is_retried_until_answered() {
    let mut server = NatsServer::require().await;
    let log = JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await.expect("open");
    let written: Vec<Event> = (0..50).map(|index| event("coder", &format!("note {index}"))).collect();
    log.append(&written).await.expect("append");

    server.kill();
    let restarted = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.restart().await.expect("restart");
        server
    });
    let started = Instant::now();
    let (entries, last_seq) = tokio::join!(log.read(1, None, 1000), log.last_seq());
    let entries = entries.expect("the read is retried until the server is back");
    assert_eq!(last_seq.expect("asking for the log's end is retried too"), 50);
    let _server = restarted.await.expect("restart task");
    eprintln!(
        "injected: SIGKILL of nats-server, restart 700 ms later; read and last seq answered after {:?}",
        started.elapsed()
    );
    let ids: Vec<EventId> = entries.iter().map(|entry| entry.record.as_ref().expect("valid").id).collect();
    assert_eq!(ids, written.iter().map(|event| event.id).collect::<Vec<_>>(), "every event once, in order");
}

/// A log configured without read retries fails a read at once while the
/// server is down, and says how often it tried.
#[tokio::test]
async fn without_a_read_retry_window_a_read_fails_while_the_server_is_down() {
    let mut server = NatsServer::require().await;
    let options = JetStreamOptions { read_retry_window: Duration::ZERO, ..JetStreamOptions::default() };
    let log = JetStreamLog::connect(&server.url(), SWARM, options).await.expect("open");
    log.append(&[event("coder", "written before the crash")]).await.expect("append");
    server.kill();
    match log.read(1, None, 10).await {
        Err(LogError::Nats(message)) => assert!(message.contains("after 1 attempts"), "{message}"),
        other => panic!("expected a NATS error, got {other:?}"),
    }
}

/// Restarts a killed node, waits until every replica of `stream` is current
/// again, and reports how long after the kill that was.
async fn restart_until_current(cluster: &mut NatsCluster, node: usize, stream: &str, killed_at: Instant) {
    cluster.restart(node).await.expect("restart the killed node");
    cluster.wait_until_stream_current(stream).await.expect("the restarted node catches up");
    eprintln!(
        "injected: restart of {}; every replica current {:?} after the kill",
        cluster.node_name(node),
        killed_at.elapsed()
    );
}

/// A publisher appending until stopped and a subscription following the log
/// from seq 1, both running while faults are injected.
struct Traffic {
    stop: Arc<AtomicBool>,
    acknowledged_count: Arc<AtomicUsize>,
    appender: tokio::task::JoinHandle<Acknowledged>,
    follow_until_seq: Arc<AtomicUsize>,
    follower: tokio::task::JoinHandle<(Vec<Seq>, usize)>,
}

impl Traffic {
    fn start(log: &Arc<JetStreamLog>) -> Traffic {
        let stop = Arc::new(AtomicBool::new(false));
        let acknowledged_count = Arc::new(AtomicUsize::new(0));
        let appender = tokio::spawn(append_until_stopped(log.clone(), stop.clone(), acknowledged_count.clone()));
        let follow_until_seq = Arc::new(AtomicUsize::new(0));
        let follower = tokio::spawn(follow_until(log.clone(), follow_until_seq.clone()));
        Traffic { stop, acknowledged_count, appender, follow_until_seq, follower }
    }

    /// Lets the appender run a little longer after the last fault, stops
    /// it, waits for the subscription to reach the log's end, and checks
    /// that every acknowledged event is stored and delivered exactly once.
    async fn stop_and_check(self, log: &JetStreamLog, faults: &[(String, Instant)]) {
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.stop.store(true, Ordering::Relaxed);
        let acknowledged = self.appender.await.expect("appender");
        let last = log.last_seq().await.expect("last seq");
        self.follow_until_seq.store(last as usize, Ordering::Relaxed);
        let (delivered, errors) =
            tokio::time::timeout(CATCH_UP_TIMEOUT, self.follower).await.expect("caught up").expect("follower");
        report_write_pauses(&acknowledged, faults);
        eprintln!(
            "appends repeated by the publisher: {}; acks reporting a duplicate (a retry of a stored event): {}",
            acknowledged.appends_repeated, acknowledged.reported_duplicates
        );
        assert_each_acknowledged_event_once(log, &acknowledged).await;
        assert_delivered_once_in_order(&delivered, last, errors);
    }
}

/// nats-server killed with SIGKILL and restarted on the same store, again
/// and again, while a publisher appends and a subscription follows: nothing
/// acknowledged is lost, nothing is stored or delivered twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_the_server_repeatedly_loses_no_acknowledged_event_and_stores_none_twice() {
    let test_started = Instant::now();
    let mut server = NatsServer::require().await;
    let log = Arc::new(JetStreamLog::connect(&server.url(), SWARM, JetStreamOptions::default()).await.expect("open"));
    let traffic = Traffic::start(&log);
    let acknowledged_count = traffic.acknowledged_count.clone();

    let mut faults = Vec::new();
    for kill in 1..=SERVER_KILLS {
        // Kill at varying points of the stream, not on a beat.
        tokio::time::sleep(Duration::from_millis(150 + (kill as u64 * 173) % 400)).await;
        let before = acknowledged_count.load(Ordering::Relaxed);
        server.kill();
        let killed_at = Instant::now();
        faults.push((format!("SIGKILL {kill}/{SERVER_KILLS}"), killed_at));
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.restart().await.expect("restart");
        eprintln!(
            "injected: SIGKILL {kill}/{SERVER_KILLS} of nats-server after about {before} events acknowledged; \
             restarted on the same port and store, answering {:?} after the kill",
            killed_at.elapsed()
        );
        wait_for_acknowledgements_after(&acknowledged_count, before, Duration::from_secs(30)).await;
    }
    traffic.stop_and_check(&log, &faults).await;
    eprintln!("test took {:?}", test_started.elapsed());
}

/// A three-node cluster with R3 streams: the stream leader is killed during
/// appends, a new one is elected and appends resume; the old leader comes
/// back and catches up; then a follower is killed and appends carry on.
/// Nothing acknowledged is lost, nothing is stored or delivered twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_r3_stream_keeps_every_acknowledged_event_when_its_leader_and_then_a_follower_die() {
    let test_started = Instant::now();
    let mut cluster = NatsCluster::require(3).await;
    eprintln!("cluster of {} nodes formed in {:?}", cluster.size(), test_started.elapsed());
    let options = JetStreamOptions { replicas: 3, ..JetStreamOptions::default() };
    let log = Arc::new(JetStreamLog::connect(&cluster.url_list(), SWARM, options).await.expect("open"));
    let stream = subjects::events_stream(SWARM);
    cluster.wait_until_stream_current(&stream).await.expect("R3 stream formed");
    let traffic = Traffic::start(&log);
    let acknowledged_count = traffic.acknowledged_count.clone();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut faults = Vec::new();
    let leader = cluster.stream_leader(&stream).await.expect("a leader");
    let before = acknowledged_count.load(Ordering::Relaxed);
    cluster.kill(leader);
    let killed_at = Instant::now();
    faults.push((format!("SIGKILL of stream leader {}", cluster.node_name(leader)), killed_at));
    let new_leader = cluster.stream_leader(&stream).await.expect("a new leader");
    eprintln!(
        "injected: SIGKILL of stream leader {} after about {before} events acknowledged; {} elected {:?} later",
        cluster.node_name(leader),
        cluster.node_name(new_leader),
        killed_at.elapsed()
    );
    // Writes resume while the old leader is still down.
    wait_for_acknowledgements_after(&acknowledged_count, before, Duration::from_secs(45)).await;
    restart_until_current(&mut cluster, leader, &stream, killed_at).await;

    let leader = cluster.stream_leader(&stream).await.expect("a leader");
    let follower_node = (0..cluster.size()).find(|index| *index != leader).expect("a follower");
    let before = acknowledged_count.load(Ordering::Relaxed);
    cluster.kill(follower_node);
    let killed_at = Instant::now();
    faults.push((format!("SIGKILL of follower {}", cluster.node_name(follower_node)), killed_at));
    wait_for_acknowledgements_after(&acknowledged_count, before, Duration::from_secs(45)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let leader_after = cluster.stream_leader(&stream).await.expect("a leader");
    eprintln!(
        "injected: SIGKILL of follower {} after about {before} events acknowledged; leader afterwards {}",
        cluster.node_name(follower_node),
        cluster.node_name(leader_after)
    );
    restart_until_current(&mut cluster, follower_node, &stream, killed_at).await;
    traffic.stop_and_check(&log, &faults).await;
    eprintln!("test took {:?}", test_started.elapsed());
}
