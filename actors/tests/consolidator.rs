//! The consolidator over a real embedded log and real memory actors: given
//! events, when consolidation runs, then its verdicts are events on the log
//! that memory applies; a dry run writes nothing; the agent's queries answer
//! while a scan is under way; a count of new events, or the interval on the
//! consolidator's clock, starts a run by itself; and a rebuild from the
//! log, which never scans, matches the live memory.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use actix::{Actor, Addr};
use mneme_actors::swarm_config::AgentConfig;
use mneme_actors::{
    AgentHandle, Ask, ConsolidationRequest, ConsolidationSchedule, Consolidator, GetAgent, Scanner, SnapshotStore,
    Supervisor, SwarmConfig, queries, rebuild_from_log,
};
use mneme_events::{Event, EventId, EventKind, FactAsserted, IdKey, MessageRecorded, Scope, TestClock, Timestamp};
use mneme_nats::{EventLog, SledLog, SledOptions};
use mneme_projections::consolidation::{ConsolidationPolicy, LinkVerdict, consolidate_with};
use mneme_projections::{SearchMode, SearchRequest};

const SWARM: &str = "demo";
const AGENT: &str = "coder";

fn event(counter: u64, kind: EventKind) -> Event {
    Event::new(SWARM, AGENT, kind)
        .with_id(EventId::from_parts(1_767_000_000_000 + counter, u128::from(counter)))
        .with_ts(Timestamp::from_unix_millis(1_767_000_000_000 + counter as i64 * 1000))
        .with_scope(Scope::Shared)
}

fn message(counter: u64, text: &str) -> Event {
    event(counter, EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() }))
}

fn fact(counter: u64, subject: &str, predicate: &str, object: &str) -> Event {
    event(
        counter,
        EventKind::FactAsserted(FactAsserted {
            subject: subject.into(),
            predicate: predicate.into(),
            object: object.into(),
            confidence: 1.0,
            valid_from: None,
            valid_to: None,
        }),
    )
}

/// Given: a near duplicate, a near miss that must not merge, a
/// single-valued fact with two objects, and filler.
fn given_events() -> Vec<Event> {
    let mut events = vec![
        message(1, "The nightly build uses the release profile with LTO."),
        message(2, "the nightly build uses the release profile with LTO"),
        message(3, "The integration tests pass on the eu cluster."),
        message(4, "The integration tests fail on the eu cluster."),
        fact(5, "token_store", "backed_by", "redis"),
        fact(6, "token_store", "backed_by", "postgres"),
    ];
    events.extend((7..60).map(|counter| message(counter, &format!("step {counter}: refactored module {counter}"))));
    events
}

struct Fixture {
    _dir: tempfile::TempDir,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    config: SwarmConfig,
}

fn embedder() -> Arc<dyn mneme_index::embed::Embedder> {
    Arc::new(mneme_index::embed::HashedNgramEmbedder::default())
}

async fn fixture(events: &[Event]) -> Fixture {
    fixture_with(events, &[AGENT], SledOptions::default()).await
}

/// A fixture of these agents on a log with these options.
async fn fixture_with(events: &[Event], agents: &[&str], options: SledOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let log: Arc<dyn EventLog> = Arc::new(SledLog::open(&dir.path().join("log"), SWARM, options).unwrap());
    let store = SnapshotStore::open(&dir.path().join("snapshots")).unwrap();
    let mut config = SwarmConfig::with_name(SWARM);
    config.agents = agents.iter().map(|agent| AgentConfig::named(agent)).collect();
    log.append(events).await.unwrap();
    let log_end = log.last_seq().await.unwrap();
    let supervisor = Supervisor::new(config.clone(), log.clone(), store, log_end, embedder()).start();
    Fixture { _dir: dir, log, supervisor, config }
}

impl Fixture {
    fn consolidator(&self, schedule: ConsolidationSchedule, scanner: Option<Scanner>) -> Addr<Consolidator> {
        self.unstarted(schedule, scanner).start()
    }

    /// A consolidator whose timers run on `clock`.
    fn consolidator_on(
        &self,
        clock: &Arc<TestClock>,
        schedule: ConsolidationSchedule,
        scanner: Option<Scanner>,
    ) -> Addr<Consolidator> {
        self.unstarted(schedule, scanner).with_clock(clock.clone()).start()
    }

    fn unstarted(&self, schedule: ConsolidationSchedule, scanner: Option<Scanner>) -> Consolidator {
        let consolidator = Consolidator::new(
            SWARM,
            self.log.clone(),
            self.supervisor.clone(),
            ConsolidationPolicy::default(),
            schedule,
            IdKey::from_bytes([0; 32]),
        );
        match scanner {
            Some(scanner) => consolidator.with_scanner(scanner),
            None => consolidator,
        }
    }

    async fn caught_up(&self) -> AgentHandle {
        let handle = self.supervisor.send(GetAgent(AGENT.to_string())).await.unwrap().unwrap();
        let last_seq = self.log.last_seq().await.unwrap();
        handle.caught_up(self.log.as_ref(), last_seq, Duration::from_secs(30)).await.unwrap();
        handle
    }

    /// The kinds of the events at and after `from_seq`.
    async fn kinds_from(&self, from_seq: u64) -> Vec<&'static str> {
        let entries = self.log.read(from_seq, None, 100_000).await.unwrap();
        entries.into_iter().map(|entry| entry.record.expect("verdicts are valid events").kind_name()).collect()
    }
}

/// The events the log holds after `seq`.
async fn written_after(fixture: &Fixture, seq: u64) -> Vec<Event> {
    fixture
        .log
        .read(seq + 1, None, 1000)
        .await
        .unwrap()
        .into_iter()
        .map(|entry| entry.record.expect("the run writes valid events"))
        .collect()
}

/// Waits until the timers sleeping on `clock` end at `ends`: the actor
/// armed them, and did what it does before it arms one.
async fn armed(clock: &TestClock, ends: &[Timestamp]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while clock.sleeping() != ends {
        assert!(tokio::time::Instant::now() < deadline, "timers at {:?}, not {ends:?}", clock.sleeping());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Answers once no run is under way: an on-demand run waits for a
/// scheduled one to finish. It is a dry run, which scans (one scan per
/// agent) and writes nothing.
async fn after_the_run_under_way(consolidator: &Addr<Consolidator>) {
    consolidator.send(ConsolidationRequest { dry_run: true, agent: None }).await.unwrap().unwrap();
}

fn counting_scanner() -> (Arc<AtomicUsize>, Scanner) {
    let scans = Arc::new(AtomicUsize::new(0));
    let counted = scans.clone();
    let scanner: Scanner = Arc::new(move |view, policy, shared| {
        counted.fetch_add(1, Ordering::SeqCst);
        consolidate_with(view, policy, shared)
    });
    (scans, scanner)
}

async fn status(handle: &AgentHandle) -> mneme_actors::AgentStatus {
    handle.addr.send(Ask(queries::Status)).await.unwrap().unwrap()
}

async fn search(handle: &AgentHandle, query: &str) -> Vec<String> {
    let request = SearchRequest::new(query, 10).with_mode(SearchMode::Bm25);
    let hits = handle.addr.send(Ask(queries::Search(request))).await.unwrap().unwrap();
    hits.into_iter().map(|hit| hit.item_id).collect()
}

#[actix_rt::test]
async fn a_dry_run_writes_nothing_and_a_real_run_writes_verdicts_that_memory_applies() {
    let events = given_events();
    let fixture = fixture(&events).await;
    let handle = fixture.caught_up().await;
    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), None);
    let end_before = fixture.log.last_seq().await.unwrap();

    let dry = consolidator.send(ConsolidationRequest { dry_run: true, agent: None }).await.unwrap().unwrap();
    assert!(dry.dry_run);
    assert_eq!(dry.events_written(), 0);
    let plan = &dry.agents[0].plan;
    assert_eq!(plan.merges.len(), 1, "{plan:#?}");
    assert_eq!(plan.contradictions.len(), 1, "{plan:#?}");
    assert_eq!(fixture.log.last_seq().await.unwrap(), end_before, "a dry run appends nothing");

    let run = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap().unwrap();
    assert_eq!(run.events_written(), 2);
    assert_eq!(fixture.kinds_from(end_before + 1).await, ["contradiction_detected", "memories_merged"]);
    // The run answered after memory applied its verdicts: the near
    // duplicate is gone from search, the near miss is not.
    let [kept, merged, passing, failing] = [1, 2, 3, 4].map(|counter| events[counter - 1].id.to_string());
    let hits = search(&handle, "nightly build release profile").await;
    assert!(hits.contains(&kept) && !hits.contains(&merged), "{hits:?}");
    let hits = search(&handle, "integration tests eu cluster").await;
    assert!(hits.contains(&passing) && hits.contains(&failing), "{hits:?}");
    assert_eq!(status(&handle).await.checkpoint, fixture.log.last_seq().await.unwrap());

    // Then nothing new: the second run reports nothing.
    let again = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap().unwrap();
    assert!(again.agents[0].plan.is_empty(), "{:#?}", again.agents[0].plan);

    // A rebuild from the log, which never scans, equals the live memory.
    let (_, rebuilt) =
        rebuild_from_log(fixture.log.as_ref(), AGENT, fixture.config.memory_config(embedder()), None).await.unwrap();
    let live = status(&handle).await;
    assert_eq!((rebuilt.checkpoint, rebuilt.digest), (live.checkpoint, live.digest));
}

#[actix_rt::test]
async fn verdicts_carry_the_newest_time_they_judged_and_retrieval_counts_the_consolidators_clock() {
    let fixture = fixture(&given_events()).await;
    let handle = fixture.caught_up().await;
    // A search, so that the run also writes a retrieval count.
    assert!(!search(&handle, "nightly build release profile").await.is_empty());
    let at: mneme_events::Timestamp = "2031-05-04T03:02:01Z".parse().unwrap();
    let clock = Arc::new(mneme_events::TestClock::at(at));
    let consolidator = Consolidator::new(
        SWARM,
        fixture.log.clone(),
        fixture.supervisor.clone(),
        ConsolidationPolicy::default(),
        ConsolidationSchedule::default(),
        IdKey::from_bytes([0; 32]),
    )
    .with_clock(clock.clone())
    .start();
    let end_before = fixture.log.last_seq().await.unwrap();
    let run = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap().unwrap();
    assert!(run.events_written() >= 2, "{run:#?}");
    let written = written_after(&fixture, end_before).await;
    let kinds: Vec<&str> = written.iter().map(Event::kind_name).collect();
    assert!(kinds.contains(&"memories_retrieved") && kinds.contains(&"memories_merged"), "{kinds:?}");
    // A verdict's cause is the memory it judged: it takes that memory's
    // newest event time, so a replayed or imported log keeps one timeline.
    // The retrieval counts record reads made by then: the clock's time.
    let newest = given_events().iter().map(|event| event.ts).max().unwrap();
    assert!(newest < at, "the clock runs after the events");
    for event in &written {
        let expected = if event.kind_name() == "memories_retrieved" { at } else { newest };
        assert_eq!(event.ts, expected, "{} written at {}", event.kind_name(), event.ts);
    }
}

#[actix_rt::test]
async fn queries_answer_while_a_scan_is_under_way() {
    let fixture = fixture(&given_events()).await;
    let handle = fixture.caught_up().await;
    // A scanner that says when it started and then waits to be released.
    let (started_sender, started) = mpsc::channel::<()>();
    let (release, released) = mpsc::channel::<()>();
    let started_sender = Mutex::new(started_sender);
    let released = Mutex::new(released);
    let scanner: Scanner = Arc::new(move |view, policy, shared| {
        started_sender.lock().unwrap().send(()).unwrap();
        released.lock().unwrap().recv().unwrap();
        consolidate_with(view, policy, shared)
    });
    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), Some(scanner));
    let run = consolidator.send(ConsolidationRequest { dry_run: false, agent: None });
    let run = tokio::spawn(run);
    tokio::task::spawn_blocking(move || started.recv_timeout(Duration::from_secs(30)))
        .await
        .unwrap()
        .expect("the scan started");

    // The scan is held open: the memory actor answers anyway.
    let hits = search(&handle, "nightly build release profile").await;
    assert_eq!(hits.len(), 2, "both copies, not yet merged: {hits:?}");
    assert!(!run.is_finished());

    release.send(()).unwrap();
    let report = run.await.unwrap().unwrap().unwrap();
    assert_eq!(report.agents[0].plan.merges.len(), 1);
    assert_eq!(search(&handle, "nightly build release profile").await.len(), 1);
}

/// The event-count poll runs on the consolidator's clock: each look is
/// made when the clock has moved a poll on, and the test sees the poll
/// armed again once the look is done.
#[actix_rt::test]
async fn a_run_starts_by_itself_after_every_n_events_and_its_own_verdicts_do_not_start_another() {
    const POLL: Duration = Duration::from_secs(1);
    let fixture = fixture(&given_events()).await;
    let handle = fixture.caught_up().await;
    let (scans, counting_scanner) = counting_scanner();
    let start: Timestamp = "2031-05-04T03:00:00Z".parse().unwrap();
    let clock = Arc::new(TestClock::at(start));
    let poll = |polls: u32| Timestamp::from_unix_nanos(start.unix_nanos() + (POLL * polls).as_nanos() as i64);
    // Every 2 events: the run below writes 2 verdicts, which must not count.
    let schedule = ConsolidationSchedule { interval: None, every_events: Some(2) };
    let consolidator = fixture.consolidator_on(&clock, schedule, Some(counting_scanner));
    // The trigger counts from start-up: the events already there do not,
    // at the first look or the next.
    armed(&clock, &[poll(1)]).await;
    clock.advance(POLL);
    armed(&clock, &[poll(2)]).await;
    after_the_run_under_way(&consolidator).await;
    assert_eq!(scans.load(Ordering::SeqCst), 1, "no run before new events; the dry run scanned");

    let end_before = fixture.log.last_seq().await.unwrap();
    let more: Vec<Event> = (100..103).map(|counter| message(counter, &format!("later note {counter}"))).collect();
    fixture.log.append(&more).await.unwrap();
    let verdicts_after = end_before + more.len() as u64;
    clock.advance(POLL);
    armed(&clock, &[poll(3)]).await;
    after_the_run_under_way(&consolidator).await;
    assert_eq!(fixture.kinds_from(verdicts_after + 1).await, ["contradiction_detected", "memories_merged"]);
    assert_eq!(scans.load(Ordering::SeqCst), 3, "one run after 3 new events, and two dry runs");

    // The poll looks again a few times.
    for polls in 4..7 {
        clock.advance(POLL);
        armed(&clock, &[poll(polls)]).await;
    }
    after_the_run_under_way(&consolidator).await;
    assert_eq!(fixture.kinds_from(verdicts_after + 1).await, ["contradiction_detected", "memories_merged"]);
    assert_eq!(scans.load(Ordering::SeqCst), 4, "one run, not a run set off by its own verdicts");
    let last_seq = fixture.log.last_seq().await.unwrap();
    handle.caught_up(fixture.log.as_ref(), last_seq, Duration::from_secs(30)).await.unwrap();
}

/// Issue 38: the interval runs on the consolidator's clock. Nothing runs
/// until the clock has moved a whole interval on; then a run writes its
/// verdicts at the clock's time, and the next interval is armed.
#[actix_rt::test]
async fn a_scheduled_run_starts_once_its_interval_has_passed_on_the_clock_and_not_before() {
    const INTERVAL: Duration = Duration::from_secs(3600);
    let fixture = fixture(&given_events()).await;
    let handle = fixture.caught_up().await;
    // A search, so that the run also writes a retrieval count.
    assert!(!search(&handle, "nightly build release profile").await.is_empty());
    let start: Timestamp = "2031-05-04T03:00:00Z".parse().unwrap();
    let clock = Arc::new(TestClock::at(start));
    let schedule = ConsolidationSchedule { interval: Some(INTERVAL), every_events: None };
    let end_before = fixture.log.last_seq().await.unwrap();
    let consolidator = fixture.consolidator_on(&clock, schedule, None);
    let first: Timestamp = "2031-05-04T04:00:00Z".parse().unwrap();
    armed(&clock, &[first]).await;

    clock.advance(INTERVAL - Duration::from_secs(1));
    after_the_run_under_way(&consolidator).await;
    assert_eq!(fixture.log.last_seq().await.unwrap(), end_before, "no run a second before the interval");
    assert_eq!(clock.sleeping(), [first], "the timer still waits");

    clock.advance(Duration::from_secs(1));
    armed(&clock, &["2031-05-04T05:00:00Z".parse().unwrap()]).await;
    after_the_run_under_way(&consolidator).await;
    let written = written_after(&fixture, end_before).await;
    let kinds: Vec<&str> = written.iter().map(Event::kind_name).collect();
    assert_eq!(kinds, ["memories_retrieved", "contradiction_detected", "memories_merged"]);
    assert_eq!(written[0].ts, first, "the retrieval counts carry the clock's time");
}

/// Issue 17, item 3: a run that fails appends nothing. One agent's scan
/// fails after another's was read and its retrieval counts taken: nothing
/// is on the log (the counts used to be appended agent by agent, before
/// the next agent was scanned), and the next run records the counts that
/// the failed one gave back.
#[actix_rt::test]
async fn a_run_that_fails_for_one_agent_appends_nothing_for_any_agent() {
    let mut events = given_events();
    let mut reviewer_note = message(500, "The reviewer looked at the nightly build.");
    reviewer_note.agent = "reviewer".to_string();
    reviewer_note.scope = Scope::Private;
    events.push(reviewer_note);
    let fixture = fixture_with(&events, &[AGENT, "reviewer"], SledOptions::default()).await;
    let handle = fixture.caught_up().await;
    // Retrievals to record: the coder searched.
    assert!(!search(&handle, "nightly build release profile").await.is_empty());
    let failing: Scanner = Arc::new(|view, policy, shared| {
        assert_ne!(view.agent, "reviewer", "the reviewer's scan fails");
        consolidate_with(view, policy, shared)
    });
    let end_before = fixture.log.last_seq().await.unwrap();
    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), Some(failing));
    let failed = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap();
    assert!(failed.is_err(), "the reviewer's scan failed: {failed:?}");
    match failed.unwrap_err() {
        mneme_actors::ActorsError::Consolidation { agent, message } => {
            assert_eq!(agent, "reviewer", "the error names the scan that failed");
            assert!(message.contains("the reviewer's scan fails"), "{message}");
        }
        other => panic!("a consolidation error, not {other:?}"),
    }
    assert_eq!(fixture.log.last_seq().await.unwrap(), end_before, "a failed run appends nothing");

    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), None);
    let run = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap().unwrap();
    let coder = run.agents.iter().find(|agent| agent.agent == AGENT).unwrap();
    assert!(coder.retrievals_recorded > 0, "the counts came back for the next run: {coder:?}");
    let kinds = fixture.kinds_from(end_before + 1).await;
    assert_eq!(kinds[0], "memories_retrieved", "{kinds:?}");
    assert!(kinds.contains(&"memories_merged"), "{kinds:?}");
}

/// Issue 17, item 3: no verdict fails a run by its size. On a log that
/// takes events of at most 4 KiB (and its room for the stored form), a plan of 300 links (one event of them
/// is far larger) is written split into events that each fit, every link
/// applied; a contradiction whose reason alone is larger than the log
/// takes is left out, counted, and the run still succeeds.
#[actix_rt::test]
async fn verdicts_too_large_for_the_log_are_split_or_left_out_and_never_fail_the_run() {
    const LIMIT: usize = 4096;
    let options =
        SledOptions { limits: mneme_events::DecodeLimits { max_event_bytes: LIMIT }, ..SledOptions::default() };
    let events = given_events();
    let fixture = fixture_with(&events, &[AGENT], options).await;
    let handle = fixture.caught_up().await;
    let oversized: Scanner = Arc::new(|view, policy, shared| {
        let mut plan = consolidate_with(view, policy, shared);
        let filler: Vec<String> = view.items.iter().skip(6).map(|item| item.item_id.clone()).collect();
        plan.links = filler
            .iter()
            .flat_map(|a| filler.iter().filter(move |b| a < *b).map(move |b| (a.clone(), b.clone())))
            .take(300)
            .map(|(a, b)| LinkVerdict { a, b, reason: "shares ".to_string() + &"x".repeat(40) })
            .collect();
        let contradiction = plan.contradictions.first_mut().expect("the given single-valued fact");
        contradiction.reason = "y".repeat(3 * LIMIT);
        plan
    });
    let end_before = fixture.log.last_seq().await.unwrap();
    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), Some(oversized));
    let run = consolidator.send(ConsolidationRequest { dry_run: false, agent: None }).await.unwrap().unwrap();
    assert_eq!(run.agents[0].verdicts_dropped, 1, "the contradiction alone is too large");
    let written = fixture.log.read(end_before + 1, None, 10_000).await.unwrap();
    let mut links = 0;
    for entry in &written {
        let event = entry.record.as_ref().expect("a valid event");
        let bytes = event.to_json().len();
        assert!(bytes <= LIMIT + mneme_nats::STORED_FORM_HEADROOM, "{} is {bytes} bytes", event.kind_name());
        assert_ne!(event.kind_name(), "contradiction_detected");
        if let EventKind::MemoriesLinked(linked) = &event.kind {
            links += linked.links.len();
        }
    }
    assert_eq!(links, 300, "every link is written, split across events");
    assert!(written.len() > 3, "the links did not fit one event: {}", written.len());
    let ids: std::collections::BTreeSet<_> = written.iter().map(|entry| entry.record.as_ref().unwrap().id).collect();
    assert_eq!(ids.len(), written.len(), "each part has an id of its own");
    let last_seq = fixture.log.last_seq().await.unwrap();
    handle.caught_up(fixture.log.as_ref(), last_seq, Duration::from_secs(30)).await.unwrap();
}

/// Issue 18: a run compares the swarm's shared items once, for every
/// memory, and as their authors wrote them. Two agents share the same
/// short note and contradicting facts; a third holds the note privately
/// too. Every memory gets the merge and the contradiction of the shared
/// pair (before, each agent compared the other agents' copies with
/// `(from author)` in front, and a note this short was not a duplicate of
/// its author's own copy), with its own copy as the survivor.
#[actix_rt::test]
async fn duplicates_and_contradictions_between_two_agents_shared_memories_are_found_in_every_memory() {
    let by = |agent: &str, scope: Scope, mut event: Event| {
        event.agent = agent.to_string();
        event.scope = scope;
        event
    };
    let mut events = vec![
        by(AGENT, Scope::Shared, message(1, "staging deployed")),
        by("reviewer", Scope::Shared, message(2, "staging deployed")),
        by(AGENT, Scope::Shared, fact(3, "session_cache", "backed_by", "redis")),
        by("reviewer", Scope::Shared, fact(4, "session_cache", "backed_by", "memcached")),
        by("tester", Scope::Private, message(5, "staging deployed")),
    ];
    events.extend((6..40).map(|counter| message(counter, &format!("step {counter}: refactored module {counter}"))));
    let agents = [AGENT, "reviewer", "tester"];
    let fixture = fixture_with(&events, &agents, SledOptions::default()).await;
    fixture.caught_up().await;
    let id = |counter: usize| events[counter - 1].id.to_string();
    let consolidator = fixture.consolidator(ConsolidationSchedule::default(), None);
    let report = consolidator.send(ConsolidationRequest { dry_run: true, agent: None }).await.unwrap().unwrap();
    assert_eq!(report.agents.len(), 3);
    for agent in &report.agents {
        let merges = &agent.plan.merges;
        assert_eq!(merges.len(), 1, "{}: {merges:?}", agent.agent);
        // Each memory keeps its own agent's copy (issue 35, F2); the
        // others' copies merge into it.
        let (survivor, merged) = match agent.agent.as_str() {
            "reviewer" => (id(2), vec![id(1)]),
            "tester" => (id(5), vec![id(1), id(2)]),
            _ => (id(1), vec![id(2)]),
        };
        assert_eq!(merges[0].survivor, survivor, "{}: its own copy survives", agent.agent);
        assert_eq!(merges[0].merged, merged, "{}", agent.agent);
        let contradictions = &agent.plan.contradictions;
        assert_eq!(contradictions.len(), 1, "{}: {contradictions:?}", agent.agent);
        assert_eq!((&contradictions[0].a, &contradictions[0].b), (&id(3), &id(4)), "{}", agent.agent);
    }
}
