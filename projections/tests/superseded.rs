//! A superseded decision or a retracted fact does not read as current
//! (issue 16, item 3): the item says what superseded it (`superseded_by`),
//! in search hits, in context and in phase findings, the same live,
//! restored from a snapshot and replayed.

use mneme_events::{
    ContradictionDetected, ContradictionResolution, ContradictionResolved, DecisionMade, Event, EventId, EventKind,
    FactAsserted, FactRetracted, PhaseCompleted, PhaseStarted, Scope, Timestamp,
};
use mneme_projections::phases::PhaseLevel;
use mneme_projections::{AgentMemory, ContextRequest, MemoryConfig, SearchRequest};

const START_MS: i64 = 1_765_000_000_000;

#[derive(Default)]
struct Log {
    events: Vec<(u64, Event)>,
}

impl Log {
    fn push(&mut self, kind: EventKind) -> String {
        let seq = self.events.len() as u64 + 1;
        let event = Event::new("demo", "planner", kind)
            .with_id(EventId::from_parts(START_MS as u64 + seq, u128::from(seq)))
            .with_ts(Timestamp::from_unix_millis(START_MS + seq as i64 * 1000))
            .with_task("task-9")
            .with_scope(Scope::Shared);
        let id = event.id.to_string();
        self.events.push((seq, event));
        id
    }

    fn memory(&self) -> AgentMemory {
        let mut memory = AgentMemory::new("demo", "planner", MemoryConfig::default()).unwrap();
        for (seq, event) in &self.events {
            memory.apply(*seq, event).unwrap();
        }
        memory.commit().unwrap();
        memory
    }
}

fn decision(title: &str, choice: &str, supersedes: Option<&str>) -> EventKind {
    EventKind::DecisionMade(DecisionMade {
        title: title.into(),
        choice: choice.into(),
        rationale: String::new(),
        supersedes: supersedes.map(|id| id.parse().unwrap()),
    })
}

fn fact(subject: &str, predicate: &str, object: &str) -> EventKind {
    EventKind::FactAsserted(FactAsserted {
        subject: subject.into(),
        predicate: predicate.into(),
        object: object.into(),
        confidence: 0.9,
        valid_from: None,
        valid_to: None,
    })
}

/// Ids of what the planner's log holds.
struct Ids {
    redis: String,
    postgres: String,
    old_ttl: String,
    retraction: String,
    new_ttl: String,
    loser: String,
    winner: String,
}

/// A phase in which a decision is superseded; a fact retracted and a new
/// one asserted; a contradiction settled for its newer side.
fn planner_log() -> (Log, Ids) {
    let mut log = Log::default();
    log.push(EventKind::PhaseStarted(PhaseStarted { phase: "storage".into(), goal: Some("pick a store".into()) }));
    let redis = log.push(decision("Refresh token storage", "keep refresh tokens in redis", None));
    let postgres = log.push(decision("Refresh token storage", "keep refresh tokens in postgres", Some(&redis)));
    let old_ttl = log.push(fact("refresh_token", "ttl", "7 days"));
    let retraction = log.push(EventKind::FactRetracted(FactRetracted {
        subject: "refresh_token".into(),
        predicate: "ttl".into(),
        object: "7 days".into(),
        valid_to: None,
        reason: Some("the ttl is 30 days".into()),
    }));
    let new_ttl = log.push(fact("refresh_token", "ttl", "30 days"));
    let loser = log.push(fact("session_cookie", "same_site", "lax"));
    let winner = log.push(fact("session_cookie", "same_site", "strict"));
    log.push(EventKind::ContradictionDetected(ContradictionDetected {
        contradiction_id: "c-1".into(),
        a: loser.clone(),
        b: winner.clone(),
        reason: "same_site is lax or strict".into(),
        rule: None,
    }));
    log.push(EventKind::ContradictionResolved(ContradictionResolved {
        contradiction_id: "c-1".into(),
        resolution: ContradictionResolution::BWins,
        note: None,
    }));
    log.push(EventKind::PhaseCompleted(PhaseCompleted {
        phase: "storage".into(),
        phase_id: None,
        outcome: Some("postgres".into()),
    }));
    (log, Ids { redis, postgres, old_ttl, retraction, new_ttl, loser, winner })
}

/// Every item's `superseded_by`, in log order.
fn supersessions(memory: &AgentMemory) -> Vec<(String, Option<String>)> {
    memory
        .items()
        .iter()
        .map(|item| (item.item_id.clone(), mneme_projections::superseded_by(memory, &item.item_id)))
        .collect()
}

#[test]
fn superseded_decisions_retracted_facts_and_lost_contradictions_name_what_replaced_them() {
    let (log, ids) = planner_log();
    let memory = log.memory();
    assert_eq!(mneme_projections::superseded_by(&memory, &ids.redis), Some(ids.postgres.clone()));
    assert_eq!(mneme_projections::superseded_by(&memory, &ids.old_ttl), Some(ids.retraction.clone()));
    assert_eq!(mneme_projections::superseded_by(&memory, &ids.loser), Some(ids.winner.clone()));
    for standing in [&ids.postgres, &ids.new_ttl, &ids.winner, &ids.retraction] {
        assert_eq!(mneme_projections::superseded_by(&memory, standing), None, "{standing} stands");
    }
    // Restored from a snapshot and replayed, the same answers.
    let restored =
        AgentMemory::from_snapshot(&memory.to_snapshot().unwrap(), "demo", "planner", MemoryConfig::default()).unwrap();
    assert_eq!(supersessions(&restored), supersessions(&memory));
    let replayed = log.memory();
    assert_eq!(supersessions(&replayed), supersessions(&memory));
    assert_eq!(replayed.digest(), memory.digest());
}

#[test]
fn search_hits_and_context_items_carry_superseded_by() {
    let (log, ids) = planner_log();
    let mut memory = log.memory();
    memory.commit().unwrap();
    let hits = mneme_projections::search(&memory, &SearchRequest::new("refresh tokens in redis", 10)).unwrap();
    let redis = hits.iter().find(|hit| hit.item_id == ids.redis).expect("the redis decision is found");
    assert_eq!(redis.superseded_by.as_deref(), Some(ids.postgres.as_str()));
    let postgres = hits.iter().find(|hit| hit.item_id == ids.postgres).expect("the postgres decision is found");
    assert_eq!(postgres.superseded_by, None);

    let context = mneme_projections::context(&memory, &ContextRequest::new("refresh token ttl redis", 2000)).unwrap();
    let old_ttl = context.items.iter().find(|item| item.item_id == ids.old_ttl).expect("the old ttl is in context");
    assert_eq!(old_ttl.superseded_by.as_deref(), Some(ids.retraction.as_str()));
    assert!(old_ttl.text.starts_with(&format!("(superseded by {})", ids.retraction)), "{}", old_ttl.text);
    for item in context.items.iter().filter(|item| item.item_id == ids.new_ttl || item.item_id == ids.postgres) {
        assert_eq!(item.superseded_by, None, "{}", item.text);
    }
}

#[test]
fn phase_findings_mark_a_decision_superseded_within_the_phase() {
    let (log, ids) = planner_log();
    let memory = log.memory();
    let phase = memory.phases().phases().iter().find(|phase| phase.name == "storage").expect("the phase");
    let levels = phase.levels.as_ref().expect("completed");
    for level in [PhaseLevel::Findings, PhaseLevel::Summary] {
        let text = levels.text(level).unwrap();
        let marked: Vec<&str> = text.lines().filter(|line| line.contains("(superseded by")).collect();
        assert_eq!(marked.len(), 1, "{level:?}:\n{text}");
        assert!(marked[0].contains("redis") && marked[0].contains(&ids.postgres), "{level:?}:\n{text}");
    }
}

/// The retractions are kept between asks, and asked again after each event
/// they are what a memory built from the log so far says: a retraction,
/// a purge of it, a new interval and its retraction each show at once.
#[test]
fn supersessions_asked_after_every_event_are_those_of_the_log_so_far() {
    let mut log = Log::default();
    let first = log.push(fact("refresh_token", "ttl", "7 days"));
    let retract = |log: &mut Log| {
        log.push(EventKind::FactRetracted(FactRetracted {
            subject: "refresh_token".into(),
            predicate: "ttl".into(),
            object: "7 days".into(),
            valid_to: None,
            reason: None,
        }))
    };
    let retraction = retract(&mut log);
    let second = log.push(fact("refresh_token", "ttl", "7 days"));
    let second_retraction = retract(&mut log);
    log.push(EventKind::MemoryPurged(mneme_events::MemoryPurged {
        item_ids: vec![retraction.clone()],
        before: None,
        of_agent: None,
        reason: Some("erasure request".into()),
    }));
    let mut live = AgentMemory::new("demo", "planner", MemoryConfig::default()).unwrap();
    for (index, (seq, event)) in log.events.iter().enumerate() {
        live.apply(*seq, event).unwrap();
        let so_far = Log { events: log.events[..=index].to_vec() };
        assert_eq!(supersessions(&live), supersessions(&so_far.memory()), "after seq {seq}");
    }
    assert_eq!(mneme_projections::superseded_by(&live, &second), Some(second_retraction));
    assert_ne!(mneme_projections::superseded_by(&live, &first), Some(retraction));
}
