//! The handoff router over a real embedded log: a `handoff_sent` from the
//! planner to the coder becomes a `handoff_received` in the coder's log with
//! a package that holds the planner's shared work on the task and none of
//! its private notes; a restarted router delivers nothing twice; a handoff
//! to or from an agent the swarm does not admit is not delivered and does
//! not stop the router; a delivery or redelivery whose publish failed is
//! tried again once the retry pause has passed on the router's clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use actix::{Actor, Addr};
use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use mneme_actors::handoff_router::RETRY_AFTER;
use mneme_actors::swarm_config::AgentConfig;
use mneme_actors::{
    Ask, GetAgent, HandoffPublisher, HandoffRouter, SnapshotStore, StopRouting, Supervisor, SwarmConfig, queries,
};
use mneme_events::{
    DecisionMade, Event, EventId, EventKind, FactAsserted, HandoffAcknowledged, HandoffSent, IdKey, MemoryPurged,
    MessageRecorded, Scope, TestClock, Timestamp,
};
use mneme_nats::{Broker, EventLog, LogError, QueryRequest, SledLog, SledOptions};
use mneme_projections::HandoffRecord;

const SWARM: &str = "demo";

fn event(counter: u64, agent: &str, scope: Scope, kind: EventKind) -> Event {
    Event::new(SWARM, agent, kind)
        .with_id(EventId::from_parts(1_768_000_000_000 + counter, u128::from(counter)))
        .with_ts(Timestamp::from_unix_millis(1_768_000_000_000 + counter as i64 * 1000))
        .with_task("task-7".to_string())
        .with_scope(scope)
}

fn handoff(counter: u64, to: &str) -> Event {
    event(
        counter,
        "planner",
        Scope::Shared,
        EventKind::HandoffSent(HandoffSent {
            to: to.to_string(),
            task: "task-7".to_string(),
            summary: "token storage is decided; implement it".to_string(),
            artifacts: vec!["src/auth/store.rs".to_string()],
            decisions: Vec::new(),
            constraints: vec!["no redis".to_string()],
        }),
    )
}

fn planner_work() -> Vec<Event> {
    vec![
        event(
            1,
            "planner",
            Scope::Shared,
            EventKind::DecisionMade(DecisionMade {
                title: "Token storage".into(),
                choice: "keep refresh tokens in postgres".into(),
                rationale: String::new(),
                supersedes: None,
            }),
        ),
        event(
            2,
            "planner",
            Scope::Private,
            EventKind::MessageRecorded(MessageRecorded {
                role: "assistant".into(),
                text: "private: the staging password is walrus-42".into(),
            }),
        ),
    ]
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    admit_unknown_agents: bool,
}

async fn fixture(events: &[Event]) -> Fixture {
    fixture_admitting(events, false).await
}

async fn fixture_admitting(events: &[Event], admit_unknown_agents: bool) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> =
        Arc::new(SledLog::open(&dir.path().join("log"), SWARM, SledOptions::default()).unwrap());
    let store = SnapshotStore::open(&dir.path().join("snapshots")).unwrap();
    let mut config = SwarmConfig::with_name(SWARM);
    config.swarm.admit_unknown_agents = admit_unknown_agents;
    config.agents = ["planner", "coder"].iter().map(|name| AgentConfig::named(name)).collect();
    log.append(events).await.unwrap();
    let log_end = log.last_seq().await.unwrap();
    let embedder = Arc::new(mneme_index::embed::HashedNgramEmbedder::default());
    let supervisor = Supervisor::new(config, log.clone(), store, log_end, embedder).start();
    Fixture { _dir: dir, log, supervisor, admit_unknown_agents }
}

/// A broker that records which handoffs were published, for what the
/// router publishes; it never receives queries. Its first `failures`
/// publishes fail.
#[derive(Default)]
struct RecordingBroker {
    published: std::sync::Mutex<Vec<EventId>>,
    attempts: AtomicUsize,
    failures: AtomicUsize,
}

impl RecordingBroker {
    fn failing_first(failures: usize) -> RecordingBroker {
        RecordingBroker { failures: AtomicUsize::new(failures), ..RecordingBroker::default() }
    }

    fn attempts(&self) -> usize {
        self.attempts.load(Ordering::SeqCst)
    }

    fn published(&self) -> Vec<EventId> {
        self.published.lock().unwrap().clone()
    }
}

#[async_trait]
impl Broker for RecordingBroker {
    async fn publish_handoff(&self, _agent: &str, handoff_id: EventId, _package: Vec<u8>) -> Result<(), LogError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let failing = self.failures.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(1));
        if failing.is_ok() {
            return Err(LogError::Nats("no responders".to_string()));
        }
        self.published.lock().unwrap().push(handoff_id);
        Ok(())
    }

    async fn erase_handoffs(&self, handoff_ids: &[EventId]) -> Result<usize, LogError> {
        let mut published = self.published.lock().unwrap();
        let before = published.len();
        published.retain(|published| !handoff_ids.contains(published));
        Ok(before - published.len())
    }

    async fn query_requests(&self) -> Result<BoxStream<'static, QueryRequest>, LogError> {
        Ok(futures::stream::pending().boxed())
    }

    async fn reply(&self, _reply_to: String, _body: Vec<u8>) -> Result<(), LogError> {
        Ok(())
    }
}

impl Fixture {
    fn router(&self) -> Addr<HandoffRouter> {
        HandoffRouter::new(
            SWARM,
            self.log.clone(),
            self.supervisor.clone(),
            None,
            self.admit_unknown_agents,
            IdKey::from_bytes([0; 32]),
        )
        .start()
    }

    fn router_publishing_to(&self, broker: Arc<RecordingBroker>) -> Addr<HandoffRouter> {
        self.publishing_router(broker).start()
    }

    /// A router publishing to `broker` whose retries wait on `clock`.
    fn router_on(&self, clock: &Arc<TestClock>, broker: Arc<RecordingBroker>) -> Addr<HandoffRouter> {
        self.publishing_router(broker).with_clock(clock.clone()).start()
    }

    fn publishing_router(&self, broker: Arc<RecordingBroker>) -> HandoffRouter {
        // What the message says is the service's to write; the recording
        // broker keeps the handoff ids.
        let publisher = HandoffPublisher { broker, encode: |_, _, record| record.handoff_id.to_string().into_bytes() };
        HandoffRouter::new(
            SWARM,
            self.log.clone(),
            self.supervisor.clone(),
            Some(publisher),
            self.admit_unknown_agents,
            IdKey::from_bytes([0; 32]),
        )
    }

    /// The coder's handoffs once there are `count`, waiting for the router.
    async fn coder_handoffs(&self, count: usize) -> Vec<HandoffRecord> {
        self.handoffs_of("coder", count).await
    }

    async fn handoffs_of(&self, agent: &str, count: usize) -> Vec<HandoffRecord> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        let memory = loop {
            // An agent first seen in its handoff is started once the
            // supervisor has heard of it.
            match self.supervisor.send(GetAgent(agent.to_string())).await.unwrap() {
                Ok(handle) => break handle,
                Err(error) => assert!(tokio::time::Instant::now() < deadline, "{error}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        loop {
            let last_seq = self.log.last_seq().await.unwrap();
            memory.caught_up(self.log.as_ref(), last_seq, Duration::from_secs(30)).await.unwrap();
            let records = memory.addr.send(Ask(queries::Handoffs)).await.unwrap().unwrap();
            if records.len() >= count {
                return records;
            }
            assert!(tokio::time::Instant::now() < deadline, "{} handoffs, waiting for {count}", records.len());
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn kinds(&self) -> Vec<&'static str> {
        let entries = self.log.read(1, None, 10_000).await.unwrap();
        entries.into_iter().map(|entry| entry.record.unwrap().kind_name()).collect()
    }

    async fn received(&self) -> usize {
        self.kinds().await.into_iter().filter(|kind| *kind == "handoff_received").count()
    }
}

/// Waits until the timers sleeping on `clock` end at `ends`: the router
/// armed them, after what failed.
async fn armed(clock: &TestClock, ends: &[Timestamp]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while clock.sleeping() != ends {
        assert!(tokio::time::Instant::now() < deadline, "timers at {:?}, not {ends:?}", clock.sleeping());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits until `broker` published `published`.
async fn published(broker: &RecordingBroker, published: &[EventId]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while broker.published() != published {
        assert!(tokio::time::Instant::now() < deadline, "published {:?}, not {published:?}", broker.published());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[actix_rt::test]
async fn a_handoff_is_delivered_once_with_the_senders_shared_work_and_none_of_its_private_notes() {
    let mut events = planner_work();
    events.push(handoff(3, "coder"));
    let fixture = fixture(&events).await;
    let router = fixture.router();
    let records = fixture.coder_handoffs(1).await;
    let record = &records[0];
    assert_eq!(record.handoff_id, events[2].id);
    assert_eq!(record.from, "planner");
    assert!(record.is_pending());
    let package = record.package.as_ref().unwrap();
    assert_eq!(package.task, "task-7");
    assert_eq!(package.constraints, ["no redis"]);
    let bundle_text: String = package.bundle.items.iter().map(|item| item.text.clone()).collect();
    assert!(bundle_text.contains("keep refresh tokens in postgres"), "{bundle_text}");
    assert!(!bundle_text.contains("walrus"), "{bundle_text}");
    assert_eq!(package.bundle.items[0].provenance[0].event_id, events[0].id);

    // A router started again re-reads from its stored position and
    // delivers nothing twice: once it delivered a later handoff, it has
    // taken every entry before it (it takes the log in order).
    router.send(StopRouting).await.unwrap();
    let _again = fixture.router();
    fixture.log.append(&[handoff(4, "coder")]).await.unwrap();
    let records = fixture.coder_handoffs(2).await;
    assert_eq!(records.len(), 2, "{records:?}");
    assert_eq!(fixture.received().await, 2, "one delivery per handoff");
}

fn planner_fact(counter: u64, subject: &str, object: &str) -> Event {
    event(
        counter,
        "planner",
        Scope::Shared,
        EventKind::FactAsserted(FactAsserted {
            subject: subject.into(),
            predicate: "is_stored_in".into(),
            object: object.into(),
            confidence: 1.0,
            valid_from: None,
            valid_to: None,
        }),
    )
}

/// Issue 16: a fact, the handoff, 40 messages and a later fact published
/// in one burst, all on the log before the sender's memory and the router
/// start. The bundle is what the planner knew at the handoff's seq: the
/// earlier fact, never the later one, however far the memory had got when
/// the router asked for it.
#[actix_rt::test]
async fn a_handoffs_bundle_is_what_the_sender_knew_when_it_handed_off_whatever_the_routers_lag() {
    let mut events = vec![planner_fact(1, "refresh_tokens", "postgres"), handoff(2, "coder")];
    for counter in 3..43 {
        events.push(event(
            counter,
            "planner",
            Scope::Shared,
            EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: format!("note {counter}") }),
        ));
    }
    events.push(planner_fact(43, "signing_keys", "vault_rotated_weekly"));
    let fixture = fixture(&events).await;
    let _router = fixture.router();
    let records = fixture.coder_handoffs(1).await;
    let package = records[0].package.as_ref().unwrap();
    assert_eq!(package.sent_seq, 2);
    let bundle_text: String = package.bundle.items.iter().map(|item| format!("{}\n", item.text)).collect();
    assert!(bundle_text.contains("postgres"), "the fact before the handoff is in its bundle:\n{bundle_text}");
    assert!(
        !bundle_text.contains("vault_rotated_weekly") && !bundle_text.contains("note "),
        "nothing published after the handoff is in its bundle:\n{bundle_text}"
    );
    let newest = package.bundle.items.iter().flat_map(|item| &item.provenance).map(|reference| reference.seq).max();
    assert!(newest <= Some(2), "bundle items come from seqs up to the handoff's: {newest:?}");
}

#[actix_rt::test]
async fn a_handoff_to_an_agent_the_swarm_does_not_admit_is_skipped_and_the_next_is_delivered() {
    let mut events = planner_work();
    events.push(handoff(3, "stranger"));
    events.push(handoff(4, "coder"));
    let fixture = fixture(&events).await;
    let _router = fixture.router();
    let records = fixture.coder_handoffs(1).await;
    assert_eq!(records[0].handoff_id, events[3].id);
    let received = fixture.kinds().await.into_iter().filter(|kind| *kind == "handoff_received").count();
    assert_eq!(received, 1, "nothing for the stranger");
}

#[actix_rt::test]
async fn a_handoff_from_a_sender_the_swarm_does_not_admit_is_skipped_and_the_next_is_delivered() {
    let mut events = planner_work();
    let mut from_stranger = handoff(3, "coder");
    from_stranger.agent = "stranger".to_string();
    events.push(from_stranger);
    events.push(handoff(4, "coder"));
    let fixture = fixture(&events).await;
    let _router = fixture.router();
    let records = fixture.coder_handoffs(1).await;
    assert_eq!(records[0].handoff_id, events[3].id, "the router did not stop at the stranger's handoff");
    // The router takes the log in order: it was done with the stranger's
    // handoff before it delivered the next.
    assert_eq!(fixture.received().await, 1, "nothing delivered from the stranger");
    assert_eq!(fixture.coder_handoffs(1).await.len(), 1);
}

#[actix_rt::test]
async fn a_handoff_to_an_agent_not_yet_on_the_log_is_delivered_when_the_swarm_admits_newcomers() {
    let mut events = planner_work();
    events.push(handoff(3, "newcomer"));
    let fixture = fixture_admitting(&events, true).await;
    let _router = fixture.router();
    let records = fixture.handoffs_of("newcomer", 1).await;
    assert_eq!(records[0].handoff_id, events[2].id);
    assert!(records[0].package.is_some());
}

/// Found in review: a router that crashed after delivering a handoff but
/// before storing its position delivers it again. If a purge has since
/// taken an item out of the sender's bundle, the new package differs from
/// the stored `handoff_received` and the log refuses it as a conflicting
/// duplicate; the router must take the delivery on the log as done (and
/// publish it), not drop the handoff as undeliverable.
#[actix_rt::test]
async fn a_handoff_delivered_again_after_a_purge_changed_its_bundle_counts_as_delivered() {
    let events = vec![planner_fact(501, "refresh_tokens", "postgres"), handoff(502, "coder")];
    let handoff_id = events[1].id;
    let fixture = fixture(&events).await;
    let broker = Arc::new(RecordingBroker::default());
    let router = fixture.router_publishing_to(broker.clone());
    let records = fixture.coder_handoffs(1).await;
    assert!(records[0].package.as_ref().unwrap().bundle.items.iter().any(|item| item.text.contains("postgres")));
    assert_eq!(*broker.published.lock().unwrap(), [handoff_id]);
    router.send(StopRouting).await.unwrap();

    // The coder acknowledges it (so the restart's redelivery of pending
    // handoffs leaves it alone); the planner purges the fact in its bundle;
    // the router's position goes back before the handoff, as after a crash.
    let ack = event(
        503,
        "coder",
        Scope::Private,
        EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id, note: None }),
    );
    let purge = event(
        504,
        "planner",
        Scope::Private,
        EventKind::MemoryPurged(MemoryPurged {
            item_ids: vec![events[0].id.to_string()],
            before: None,
            of_agent: None,
            reason: Some("erasure request".into()),
        }),
    );
    fixture.log.append(&[ack, purge]).await.unwrap();
    fixture.handoffs_of("planner", 0).await;
    fixture.log.store_position("handoff-router", 0).await.unwrap();

    let _again = fixture.router_publishing_to(broker.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while broker.published.lock().unwrap().len() < 2 {
        assert!(tokio::time::Instant::now() < deadline, "the handoff was not delivered again: {:?}", broker.published);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(*broker.published.lock().unwrap(), [handoff_id, handoff_id]);
    let received = fixture.kinds().await.into_iter().filter(|kind| *kind == "handoff_received").count();
    assert_eq!(received, 1, "the delivery on the log stands, stored once");
}

/// Issue 38: a delivery whose publish failed is taken again, from the
/// stored position, once the retry pause has passed on the router's clock
/// and not before; the `handoff_received` it appended the first time is
/// stored once. The newcomer is no agent of the swarm when the router
/// starts, so its start-up redelivery publishes nothing of it.
#[actix_rt::test]
async fn a_delivery_whose_publish_failed_is_tried_again_once_the_retry_pause_passed_on_the_clock() {
    let mut events = planner_work();
    events.push(handoff(3, "newcomer"));
    let handoff_id = events[2].id;
    let fixture = fixture_admitting(&events, true).await;
    let start: Timestamp = "2031-05-04T03:00:00Z".parse().unwrap();
    let clock = Arc::new(TestClock::at(start));
    let broker = Arc::new(RecordingBroker::failing_first(1));
    let _router = fixture.router_on(&clock, broker.clone());
    retried_once_the_pause_passed(&clock, start, &broker, handoff_id).await;
    let records = fixture.handoffs_of("newcomer", 1).await;
    assert_eq!(records[0].handoff_id, handoff_id);
    assert_eq!(fixture.received().await, 1, "the delivery appended again is stored once");
}

/// The router's first publish of `handoff_id` failed; it is tried again
/// once [`RETRY_AFTER`] has passed on `clock` (started at `start`), and not
/// a millisecond before.
async fn retried_once_the_pause_passed(
    clock: &TestClock,
    start: Timestamp,
    broker: &RecordingBroker,
    handoff_id: EventId,
) {
    let retry = Timestamp::from_unix_nanos(start.unix_nanos() + RETRY_AFTER.as_nanos() as i64);
    armed(clock, &[retry]).await;
    assert_eq!((broker.attempts(), broker.published()), (1, vec![]), "the first publish failed");

    clock.advance(RETRY_AFTER - Duration::from_millis(1));
    assert_eq!(clock.sleeping(), [retry], "the pause is not over");
    assert_eq!(broker.attempts(), 1, "not tried again before the pause is over");

    clock.advance(Duration::from_millis(1));
    published(broker, &[handoff_id]).await;
    assert_eq!(broker.attempts(), 2);
}

/// Issue 38: at start-up the router publishes again each pending handoff;
/// one whose publish failed is published again once the retry pause has
/// passed on the router's clock, and not before.
#[actix_rt::test]
async fn a_redelivery_whose_publish_failed_is_tried_again_once_the_retry_pause_passed_on_the_clock() {
    let mut events = planner_work();
    events.push(handoff(3, "coder"));
    let handoff_id = events[2].id;
    let fixture = fixture(&events).await;
    // Delivered, not acknowledged: pending. The router's position goes
    // past it, so that only the redelivery publishes it.
    let router = fixture.router();
    fixture.coder_handoffs(1).await;
    router.send(StopRouting).await.unwrap();
    let log_end = fixture.log.last_seq().await.unwrap();
    fixture.log.store_position("handoff-router", log_end).await.unwrap();

    let start: Timestamp = "2031-05-04T03:00:00Z".parse().unwrap();
    let clock = Arc::new(TestClock::at(start));
    let broker = Arc::new(RecordingBroker::failing_first(1));
    let _again = fixture.router_on(&clock, broker.clone());
    retried_once_the_pause_passed(&clock, start, &broker, handoff_id).await;
    armed(&clock, &[]).await;
    assert_eq!(fixture.received().await, 1, "redelivery appends nothing");
}
