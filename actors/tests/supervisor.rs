//! The supervisor and memory actors over a real embedded log: what they
//! apply equals a rebuild from the log, snapshots carry their checkpoint,
//! restarts resume from them, and small mailboxes lose nothing.

use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use mneme_actors::swarm_config::AgentConfig;
use mneme_actors::{
    ActorsError, AgentHandle, Ask, GetAgent, SnapshotAll, SnapshotStore, StopWorkers, Supervisor, SwarmConfig, queries,
    rebuild_from_log,
};
use mneme_events::{Event, EventId, EventKind, MessageRecorded, Scope, Timestamp};
use mneme_nats::{EventLog, SledLog, SledOptions};

fn message(counter: u64, agent: &str, text: &str) -> Event {
    Event::new(
        "demo",
        agent,
        EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() }),
    )
    .with_id(EventId::from_parts(1_767_000_000_000 + counter, u128::from(counter)))
    .with_ts(Timestamp::from_unix_millis(1_767_000_000_000 + counter as i64))
    .with_scope(Scope::Shared)
}

fn events(range: std::ops::Range<u64>, agents: &[&str]) -> Vec<Event> {
    range
        .map(|counter| {
            message(counter, agents[counter as usize % agents.len()], &format!("note {counter} about the token cache"))
        })
        .collect()
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: Arc<dyn EventLog>,
    store: SnapshotStore,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> =
        Arc::new(SledLog::open(&dir.path().join("log"), "demo", SledOptions::default()).unwrap());
    let store = SnapshotStore::open(&dir.path().join("snapshots")).unwrap();
    Fixture { _dir: dir, log, store }
}

/// The model-free embedder: these tests are about actors, not semantics.
fn embedder() -> Arc<dyn mneme_index::embed::Embedder> {
    Arc::new(mneme_index::embed::HashedNgramEmbedder::default())
}

fn memory_config(config: &SwarmConfig) -> mneme_projections::MemoryConfig {
    config.memory_config(embedder())
}

fn config(agents: &[&str], admit: bool) -> SwarmConfig {
    let mut config = SwarmConfig::with_name("demo");
    config.swarm.admit_unknown_agents = admit;
    config.agents = agents.iter().map(|name| AgentConfig::named(name)).collect();
    config.memory.checkpoint_interval_ms = 60_000;
    config.memory.checkpoint_every_events = 1_000_000;
    config
}

async fn start(config: &SwarmConfig, fixture: &Fixture) -> Addr<Supervisor> {
    let log_end = fixture.log.last_seq().await.unwrap();
    Supervisor::new(config.clone(), fixture.log.clone(), fixture.store.clone(), log_end, embedder()).start()
}

async fn status(handle: &AgentHandle) -> mneme_actors::AgentStatus {
    handle.addr.send(Ask(queries::Status)).await.unwrap().unwrap()
}

async fn caught_up(supervisor: &Addr<Supervisor>, log: &dyn EventLog, agent: &str) -> AgentHandle {
    let handle = supervisor.send(GetAgent(agent.to_string())).await.unwrap().unwrap();
    let last_seq = log.last_seq().await.unwrap();
    handle.caught_up(log, last_seq, Duration::from_secs(30)).await.unwrap();
    handle
}

async fn assert_matches_rebuild(log: &dyn EventLog, handle: &AgentHandle, config: &SwarmConfig) {
    let live = status(handle).await;
    let (_, rebuilt) = rebuild_from_log(log, &handle.agent, memory_config(config), None).await.unwrap();
    assert_eq!(live.checkpoint, rebuilt.checkpoint, "{}", handle.agent);
    assert_eq!(live.digest, rebuilt.digest, "{}", handle.agent);
}

#[actix_rt::test]
async fn memories_apply_their_agents_events_and_match_a_rebuild() {
    let fixture = fixture();
    let config = config(&["planner", "coder"], false);
    fixture.log.append(&events(0..300, &["planner", "coder"])).await.unwrap();
    let supervisor = start(&config, &fixture).await;
    for agent in ["planner", "coder"] {
        let handle = caught_up(&supervisor, fixture.log.as_ref(), agent).await;
        // Its own 150 and the other's 150, which are shared.
        assert_eq!(status(&handle).await.items, 300);
        assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
    }
    // Events appended while running are applied too.
    fixture.log.append(&events(300..320, &["coder"])).await.unwrap();
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    assert_eq!(status(&handle).await.items, 320);
    assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
}

#[actix_rt::test]
async fn a_snapshot_is_written_every_n_events_together_with_its_checkpoint() {
    let fixture = fixture();
    let mut config = config(&["coder"], false);
    config.memory.checkpoint_every_events = 10;
    let supervisor = start(&config, &fixture).await;
    // Appended one at a time so the actor sees small batches.
    for counter in 0..25 {
        fixture.log.append(&events(counter..counter + 1, &["coder"])).await.unwrap();
        caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    }
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    let live = status(&handle).await;
    assert!(live.snapshot_seq >= 20, "snapshot at {}", live.snapshot_seq);
    let body = fixture.store.load("demo", "coder").unwrap().unwrap();
    let restore_config = memory_config(&config);
    fixture.store.restore_swarm_graph("demo", &restore_config.shared);
    let restored = body.restore("demo", "coder", restore_config).unwrap();
    assert_eq!(restored.checkpoint(), live.snapshot_seq);
    let (_, rebuilt) =
        rebuild_from_log(fixture.log.as_ref(), "coder", memory_config(&config), Some(live.snapshot_seq)).await.unwrap();
    assert_eq!(restored.digest(), rebuilt.digest);
}

#[test]
fn a_restart_resumes_from_the_snapshot_and_applies_only_the_tail() {
    let fixture = fixture();
    let config = config(&["coder"], false);
    let first_checkpoint = actix::System::new().block_on(async {
        fixture.log.append(&events(0..100, &["coder"])).await.unwrap();
        let supervisor = start(&config, &fixture).await;
        let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
        supervisor.send(SnapshotAll).await.unwrap();
        let checkpoint = status(&handle).await.checkpoint;
        actix::System::current().stop();
        checkpoint
    });
    assert_eq!(first_checkpoint, 100);
    actix::System::new().block_on(async {
        let supervisor = start(&config, &fixture).await;
        let handle = supervisor.send(GetAgent("coder".to_string())).await.unwrap().unwrap();
        // Restored from the snapshot, not rebuilt: a rebuilt memory has
        // taken no snapshot yet (the policy here is 60 s or a million events).
        assert_eq!(status(&handle).await.snapshot_seq, first_checkpoint);
        fixture.log.append(&events(100..110, &["coder"])).await.unwrap();
        let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
        assert_eq!(status(&handle).await.checkpoint, 110);
        assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
        actix::System::current().stop();
    });
}

#[actix_rt::test]
async fn an_unknown_agent_is_refused_unless_the_swarm_admits_it() {
    let fixture = fixture();
    fixture.log.append(&events(0..4, &["stranger"])).await.unwrap();
    let closed = start(&config(&["coder"], false), &fixture).await;
    let refused = closed.send(GetAgent("stranger".to_string())).await.unwrap();
    assert!(matches!(refused, Err(ActorsError::UnknownAgent { .. })));

    let open = start(&config(&["coder"], true), &fixture).await;
    let handle = caught_up(&open, fixture.log.as_ref(), "stranger").await;
    assert_eq!(status(&handle).await.items, 4);
    // An agent that is nowhere on the log is not conjured up by a query.
    let nobody = open.send(GetAgent("nobody".to_string())).await.unwrap();
    assert!(matches!(nobody, Err(ActorsError::UnknownAgent { .. })));
}

#[actix_rt::test]
async fn a_one_batch_mailbox_applies_backpressure_and_loses_nothing() {
    let fixture = fixture();
    let mut config = config(&["coder"], false);
    config.memory.mailbox_capacity = 1;
    let supervisor = start(&config, &fixture).await;
    for start in (0..3000).step_by(500) {
        fixture.log.append(&events(start..start + 500, &["coder"])).await.unwrap();
    }
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    let live = status(&handle).await;
    assert_eq!(live.checkpoint, 3000);
    assert_eq!(live.items, 3000);
    assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
}

#[actix_rt::test]
async fn a_bad_record_is_dead_lettered_once_and_consumption_continues() {
    let fixture = fixture();
    let config = config(&["coder"], false);
    fixture.log.append(&events(0..3, &["coder"])).await.unwrap();
    fixture.log.append_raw("coder", b"\x00\x01 definitely not an event").await.unwrap();
    fixture.log.append(&events(3..6, &["coder"])).await.unwrap();
    let supervisor = start(&config, &fixture).await;
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    assert_eq!(status(&handle).await.items, 6);
    assert_eq!(status(&handle).await.checkpoint, 7);
    // The feed files the letter right after the actor reports it.
    let mut letters = Vec::new();
    for _ in 0..100 {
        letters = fixture.log.dead_letters().await.unwrap();
        if !letters.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(letters.len(), 1);
    assert_eq!(letters[0].seq, 4);
    assert!(!letters[0].reason.is_empty());
    assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
}

/// Regression: a snapshot written before the log made its events durable
/// (then lost in a crash) must not make new events look already applied.
#[actix_rt::test]
async fn a_snapshot_ahead_of_the_log_is_refused_and_memory_rebuilt() {
    let fixture = fixture();
    let config = config(&["coder"], false);
    let mut ahead = mneme_projections::AgentMemory::new("demo", "coder", memory_config(&config)).unwrap();
    for (index, event) in events(0..10, &["coder"]).iter().enumerate() {
        ahead.apply(index as u64 + 1, event).unwrap();
    }
    fixture.store.save("demo", "coder", &ahead.snapshot_delta().unwrap()).unwrap();
    // The log only kept three of those events; then other events arrived.
    fixture.log.append(&events(0..3, &["coder"])).await.unwrap();
    let supervisor = start(&config, &fixture).await;
    fixture.log.append(&events(50..55, &["coder"])).await.unwrap();
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    let live = status(&handle).await;
    assert_eq!(live.checkpoint, 8);
    assert_eq!(live.items, 8);
    assert_matches_rebuild(fixture.log.as_ref(), &handle, &config).await;
}

/// Regression: a snapshot past a skipped record whose dead letter is not yet
/// filed would lose the letter for good if the process died.
#[actix_rt::test]
async fn no_snapshot_is_written_while_a_dead_letter_is_unfiled() {
    use mneme_actors::{ApplyBatch, CheckpointPolicy, DeadLettersFiled, MemoryActor};
    use mneme_nats::{InvalidRecord, LogEntry};
    let fixture = fixture();
    let memory = mneme_projections::AgentMemory::new("demo", "coder", memory_config(&config(&[], false))).unwrap();
    let policy = CheckpointPolicy { every_events: 1, interval: Duration::from_secs(60), mailbox_capacity: 4 };
    let (applied_sender, _applied) = tokio::sync::watch::channel(0);
    let actor = MemoryActor::new(memory, fixture.store.clone(), policy, applied_sender).start();
    let bad = LogEntry {
        seq: 1,
        agent: "coder".to_string(),
        record: Err(InvalidRecord { reason: "not an event".to_string(), raw: b"junk".to_vec() }),
        appended_at: None,
    };
    let good =
        LogEntry { seq: 2, agent: "coder".to_string(), record: Ok(message(1, "coder", "hello")), appended_at: None };
    let report = actor.send(ApplyBatch { entries: vec![bad, good], through: 2 }).await.unwrap();
    assert_eq!(report.dead_letters.len(), 1);
    assert_eq!(report.checkpoint, 2);
    assert_eq!(report.snapshot_seq, None);
    assert!(fixture.store.load("demo", "coder").unwrap().is_err());
    actor.send(DeadLettersFiled(vec![1])).await.unwrap();
    let body = fixture.store.load("demo", "coder").unwrap().unwrap();
    let restore_config = memory_config(&config(&[], false));
    fixture.store.restore_swarm_graph("demo", &restore_config.shared);
    let restored = body.restore("demo", "coder", restore_config).unwrap();
    assert_eq!(restored.checkpoint(), 2);
}

/// The word that makes [`PanicsOnPoison`] panic.
const POISON: &str = "POISON-PILL";

/// An embedder that panics on one word: it stands for a projection bug that
/// some valid event triggers, halfway through being applied (embedding
/// comes after the fact graph has taken the event).
struct PanicsOnPoison(mneme_index::embed::HashedNgramEmbedder);

impl mneme_index::embed::Embedder for PanicsOnPoison {
    fn model_id(&self) -> &str {
        self.0.model_id()
    }

    fn dimensions(&self) -> usize {
        self.0.dimensions()
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        assert!(!text.contains(POISON), "the embedder choked on {POISON}");
        self.0.embed(text)
    }
}

#[actix_rt::test]
async fn an_event_whose_application_panics_is_dead_lettered_and_the_memory_moves_on() {
    let fixture = fixture();
    let mut config = config(&["coder"], false);
    config.memory.checkpoint_every_events = 5;
    let poisonous: Arc<dyn mneme_index::embed::Embedder> =
        Arc::new(PanicsOnPoison(mneme_index::embed::HashedNgramEmbedder::default()));
    fixture.log.append(&events(0..10, &["coder"])).await.unwrap();
    fixture.log.append(&[message(10, "coder", &format!("the {POISON} in the token cache"))]).await.unwrap();
    fixture.log.append(&events(11..20, &["coder"])).await.unwrap();
    let poison_seq = 11;
    let log_end = fixture.log.last_seq().await.unwrap();
    let supervisor =
        Supervisor::new(config.clone(), fixture.log.clone(), fixture.store.clone(), log_end, poisonous.clone()).start();
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;

    // Applying went on past the poison, which left nothing behind.
    let live = status(&handle).await;
    assert_eq!(live.checkpoint, log_end);
    assert_eq!(live.items, 19, "every event but the poison is an item");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let letters = loop {
        let letters = fixture.log.dead_letters().await.unwrap();
        if !letters.is_empty() || std::time::Instant::now() > deadline {
            break letters;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].seq, poison_seq);
    assert!(letters[0].reason.contains("panicked") && letters[0].reason.contains(POISON), "{}", letters[0].reason);

    // A replay meets the same panic, skips the same event and agrees.
    let (_, replayed) =
        rebuild_from_log(fixture.log.as_ref(), "coder", config.memory_config(poisonous.clone()), None).await.unwrap();
    assert_eq!(replayed.digest, live.digest);
    assert_eq!(replayed.dead_lettered, 1);

    // Later events still apply.
    fixture.log.append(&events(20..25, &["coder"])).await.unwrap();
    let handle = caught_up(&supervisor, fixture.log.as_ref(), "coder").await;
    assert_eq!(status(&handle).await.items, 24);
}

/// A request for an agent that arrives while the server stops (its
/// workers stopped) is answered with an error; it used to panic on a
/// division by zero workers.
#[actix_rt::test]
async fn an_agent_asked_for_after_the_workers_stopped_is_refused_not_a_panic() {
    let fixture = fixture();
    fixture.log.append(&events(0..2, &["stranger"])).await.unwrap();
    let supervisor = start(&config(&["coder"], true), &fixture).await;
    let workers = supervisor.send(StopWorkers).await.unwrap();
    for worker in workers {
        worker.join().unwrap();
    }
    let refused = supervisor.send(GetAgent("stranger".to_string())).await.unwrap();
    assert!(matches!(refused, Err(ActorsError::ActorStopped { .. })), "{:?}", refused.err());
}
