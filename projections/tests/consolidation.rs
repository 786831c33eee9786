//! Consolidation, given / when / then: given these events, when
//! consolidation scans the memory, then these verdicts — and once the
//! verdicts are applied as events, memory changes accordingly, the same
//! live and on replay.

use std::sync::Arc;

use mneme_events::{
    ContradictionResolution, ContradictionResolved, DecisionMade, Event, EventId, EventKind, FactAsserted, IdKey,
    MemoryCited, MemoryIgnored, MemoryPinned, MemoryPurged, MessageRecorded, Scope, Timestamp, ToolResultRecorded,
};
use mneme_projections::consolidation::{Age, ConsolidationPlan, ConsolidationPolicy, consolidate, decay_score};
use mneme_projections::graph::GraphQuery;
use mneme_projections::{AgentMemory, ContextRequest, ItemState, MemoryConfig, SearchMode, SearchRequest};

const START_MS: i64 = 1_760_000_000_000;

/// A log under construction: events get seq = position + 1 and a second
/// of event time each.
#[derive(Default)]
struct Given {
    log: Vec<(u64, Event)>,
}

impl Given {
    fn push(&mut self, kind: EventKind) -> String {
        self.push_with(kind, None)
    }

    fn push_with(&mut self, kind: EventKind, importance: Option<f32>) -> String {
        self.push_as("coder", kind, importance)
    }

    fn push_as(&mut self, agent: &str, kind: EventKind, importance: Option<f32>) -> String {
        let seq = self.log.len() as u64 + 1;
        let event = Event::new("demo", agent, kind)
            .with_id(EventId::from_parts((START_MS as u64) + seq * 1000, u128::from(seq)))
            .with_ts(Timestamp::from_unix_millis(START_MS + seq as i64 * 1000))
            .with_task("task-1".to_string())
            .with_scope(Scope::Shared)
            .with_importance(importance);
        let id = event.id.to_string();
        self.log.push((seq, event));
        id
    }

    /// A shared message of `agent` at event time `ts_ms`.
    fn say_at(&mut self, agent: &str, text: &str, ts_ms: i64) -> String {
        let id = self.push_as(
            agent,
            EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() }),
            None,
        );
        let (_, event) = self.log.last_mut().unwrap();
        event.ts = Timestamp::from_unix_millis(ts_ms);
        id
    }

    fn say(&mut self, text: &str) -> String {
        self.push(EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() }))
    }

    fn fact(&mut self, subject: &str, predicate: &str, object: &str) -> String {
        self.push(EventKind::FactAsserted(FactAsserted {
            subject: subject.into(),
            predicate: predicate.into(),
            object: object.into(),
            confidence: 1.0,
            valid_from: None,
            valid_to: None,
        }))
    }

    fn decide(&mut self, title: &str, choice: &str, supersedes: Option<&str>) -> String {
        self.push(EventKind::DecisionMade(DecisionMade {
            title: title.into(),
            choice: choice.into(),
            rationale: String::new(),
            supersedes: supersedes.map(|id| id.parse().unwrap()),
        }))
    }

    fn memory(&self) -> AgentMemory {
        self.memory_of("coder")
    }

    fn memory_of(&self, agent: &str) -> AgentMemory {
        let mut memory = AgentMemory::new("demo", agent, MemoryConfig::default()).unwrap();
        for (seq, event) in &self.log {
            memory.apply(*seq, event).unwrap();
        }
        memory.commit().unwrap();
        memory
    }

    /// When consolidation runs: its plan, whose events are appended to the
    /// log as the consolidation actor would.
    fn consolidate(&mut self, policy: &ConsolidationPolicy) -> ConsolidationPlan {
        let memory = self.memory();
        let plan = consolidate(&mneme_projections::consolidation_view(&memory), policy);
        let ts = Timestamp::from_unix_millis(START_MS + (self.log.len() as i64 + 1) * 1000);
        for event in plan.events(ts, &IdKey::from_bytes([0; 32])) {
            let seq = self.log.len() as u64 + 1;
            self.log.push((seq, event));
        }
        plan
    }
}

fn hybrid_ids(memory: &mut AgentMemory, query: &str) -> Vec<String> {
    let request = SearchRequest::new(query, 20).with_mode(SearchMode::Hybrid);
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

#[test]
fn near_duplicates_merge_and_the_survivor_keeps_every_provenance() {
    let mut given = Given::default();
    let first = given.say("The integration tests pass after fixing the token refresh.");
    let second = given.say("the integration tests pass after fixing the token refresh");
    let fail = given.say("The integration tests fail after fixing the token refresh.");
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.merges.len(), 1, "{plan:#?}");
    assert_eq!(plan.merges[0].survivor, first);
    assert_eq!(plan.merges[0].merged, vec![second.clone()]);
    let mut memory = given.memory();
    assert_eq!(memory.item(&second).unwrap().state, ItemState::Merged);
    assert_eq!(memory.item(&fail).unwrap().state, ItemState::Active, "pass and fail never merge");
    let survivor = memory.item(&first).unwrap();
    let provenance_seqs: Vec<u64> = survivor.provenance.iter().map(|reference| reference.seq).collect();
    assert_eq!(provenance_seqs, vec![1, 2, 4], "its own event, the merged one's, and the merge");
    let hits = hybrid_ids(&mut memory, "integration tests pass");
    assert!(hits.contains(&first) && !hits.contains(&second));
    // Provenance of the merged item is still there.
    assert_eq!(memory.provenance_of(&second).unwrap().len(), 2);
}

/// Issue 35, F2: the coder restated the reviewer's shared "…approved for
/// Friday evening…" with "Sunday" and importance 1.0, and consolidation
/// merged the reviewer's item into the coder's in every memory, the
/// reviewer's own too. A value said in place of another is a
/// contradiction, never a merge; and another agent's copy, whatever
/// importance its publisher set, never replaces what this agent said in
/// its own memory.
#[test]
fn f2_another_value_is_a_contradiction_and_another_agents_copy_never_replaces_ones_own() {
    let said = |text: &str| EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() });
    let mut given = Given::default();
    let friday =
        given.push_as("reviewer", said("The release is approved for Friday evening after the last review."), None);
    let sunday =
        given.push_as("coder", said("The release is approved for Sunday evening after the last review."), Some(1.0));
    let restated =
        given.push_as("coder", said("the release is approved for Friday evening after the last review"), Some(1.0));
    let reviewer = given.memory_of("reviewer");
    let plan = consolidate(&mneme_projections::consolidation_view(&reviewer), &ConsolidationPolicy::default());
    assert!(
        plan.merges.iter().all(|merge| merge.survivor != sunday && !merge.merged.contains(&sunday)),
        "Sunday is not Friday: {plan:#?}"
    );
    assert!(
        plan.contradictions.iter().any(|contradiction| contradiction.rule == "value_changed"
            && [&contradiction.a, &contradiction.b] == [&friday, &sunday]),
        "{plan:#?}"
    );
    assert_eq!(plan.merges.len(), 1, "{plan:#?}");
    assert_eq!(
        (&plan.merges[0].survivor, &plan.merges[0].merged),
        (&friday, &vec![restated.clone()]),
        "the reviewer's own statement answers for the coder's copy in the reviewer's memory"
    );
    // In the coder's memory the coder's own copy stands.
    let coder = given.memory_of("coder");
    let plan = consolidate(&mneme_projections::consolidation_view(&coder), &ConsolidationPolicy::default());
    let merge = plan.merges.iter().find(|merge| merge.merged.contains(&friday) || merge.survivor == friday);
    assert_eq!(merge.map(|merge| &merge.survivor), Some(&restated), "{plan:#?}");
}

/// Distinct sentences of made-up words, none a near duplicate of another.
fn distinct_sentences(count: usize, seed: u64) -> Vec<String> {
    const SYLLABLES: &[&str] = &["ka", "lo", "mi", "ne", "pu", "ra", "si", "to", "vu", "ze", "bo", "di", "fe", "gu"];
    let mut state = seed | 1;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    (0..count)
        .map(|_| {
            let words: Vec<String> = (0..7)
                .map(|_| (0..3).map(|_| SYLLABLES[(next() % SYLLABLES.len() as u64) as usize]).collect::<String>())
                .collect();
            format!("The {} {} {} {} {} {} {}.", words[0], words[1], words[2], words[3], words[4], words[5], words[6])
        })
        .collect()
}

/// Issue 35, F1: 20,000 shared coder messages dated a month after 100 of
/// the reviewer's made the next consolidation forget or demote all 100 in
/// the reviewer's own memory; an agent's own burst of 120,000 messages at
/// one event time made it forget some of its own. Age runs on the memory's
/// own activity and on event time, the younger counting. Scaled down (the
/// policy's clocks with it); the control shows the same memories do age
/// when the reviewer itself moves on.
#[test]
fn f1_another_agents_flood_or_a_burst_at_one_time_makes_no_memory_forget() {
    let policy = ConsolidationPolicy {
        decay_half_life_items: 50,
        decay_half_life_secs: 60,
        keep_newest_items: 20,
        ..ConsolidationPolicy::default()
    };
    const MONTH_MS: i64 = 30 * 24 * 3600 * 1000;
    let early_texts = distinct_sentences(100, 7);
    let later_texts = distinct_sentences(2_000, 11);
    let touched = |given: &Given, early: &[String]| -> usize {
        let plan = consolidate(&mneme_projections::consolidation_view(&given.memory_of("reviewer")), &policy);
        plan.decays.iter().filter(|verdict| early.contains(&verdict.item_id)).count()
    };
    let flood = |by: &str, early_ms: &dyn Fn(i64) -> i64, later_ms: &dyn Fn(i64) -> i64| {
        let mut given = Given::default();
        let early: Vec<String> = early_texts
            .iter()
            .enumerate()
            .map(|(n, text)| given.say_at("reviewer", text, early_ms(n as i64)))
            .collect();
        for (n, text) in later_texts.iter().enumerate() {
            given.say_at(by, text, later_ms(n as i64));
        }
        (given, early)
    };

    let seconds_apart = |n| START_MS + n * 1000;
    let (given, early) = flood("coder", &seconds_apart, &|n| START_MS + MONTH_MS + n * 1000);
    assert_eq!(touched(&given, &early), 0, "another agent's flood ages nothing in the reviewer's memory");

    // The first 100 of the reviewer's own 2,100 messages, all at one time.
    let (given, early) = flood("reviewer", &|_| START_MS, &|_| START_MS);
    assert_eq!(touched(&given, &early), 0, "a burst at one event time ages nothing");

    let (given, early) = flood("reviewer", &seconds_apart, &|n| START_MS + MONTH_MS + n * 1000);
    assert_eq!(touched(&given, &early), 100, "the reviewer's own activity, a month on, does age them");
}

#[test]
fn a_second_run_finds_nothing_new() {
    let mut given = Given::default();
    given.say("Deploy the staging cluster on Friday.");
    given.say("deploy the staging cluster on friday");
    given.fact("auth_service", "uses_database", "postgres");
    given.fact("auth_service", "uses_database", "mysql");
    let policy = ConsolidationPolicy::default();
    let first = given.consolidate(&policy);
    assert!(!first.merges.is_empty() && !first.contradictions.is_empty());
    let second = given.consolidate(&policy);
    assert!(second.merges.is_empty() && second.contradictions.is_empty(), "{second:#?}");
    assert!(second.links.is_empty(), "links step over what the first run merged: {second:#?}");
}

#[test]
fn a_single_valued_predicate_with_two_objects_is_a_contradiction_and_resolution_closes_validity() {
    let mut given = Given::default();
    let postgres = given.fact("auth_service", "uses_database", "postgres");
    let mysql = given.fact("auth_service", "uses_database", "mysql");
    // Multi-valued: two dependencies are no contradiction.
    given.fact("auth_service", "depends_on", "redis");
    given.fact("auth_service", "depends_on", "kafka");
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.contradictions.len(), 1, "{plan:#?}");
    let contradiction = &plan.contradictions[0];
    assert_eq!((contradiction.a.as_str(), contradiction.b.as_str()), (postgres.as_str(), mysql.as_str()));
    assert_eq!(contradiction.rule, "single_valued_fact");
    let mut memory = given.memory();
    assert_eq!(memory.open_contradictions().count(), 1);
    // Open contradictions are in the critical tier of context.
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &ContextRequest::new("database", 800)).unwrap();
    assert!(
        context.text.contains(&contradiction.contradiction_id) || context.text.contains("mysql"),
        "{}",
        context.text
    );
    // Resolution: b wins, so postgres stops being valid.
    given.push(EventKind::ContradictionResolved(ContradictionResolved {
        contradiction_id: contradiction.contradiction_id.clone(),
        resolution: ContradictionResolution::BWins,
        note: Some("we moved to mysql".into()),
    }));
    let memory = given.memory();
    assert_eq!(memory.open_contradictions().count(), 0);
    assert_eq!(memory.resolved_contradictions().count(), 1);
    let subgraph = memory.neighbourhood(&GraphQuery::new("auth_service", 1)).unwrap();
    let database_edges: Vec<_> = subgraph.edges.iter().filter(|edge| edge.relation == "uses_database").collect();
    assert_eq!(database_edges.len(), 2);
    for edge in database_edges {
        let closed = edge.valid_to.is_some();
        assert_eq!(closed, edge.to.contains("postgres"), "only the losing side is closed: {edge:?}");
    }
    // Resolved pairs are not reported again.
    let again = given.consolidate(&ConsolidationPolicy::default());
    assert!(again.contradictions.is_empty());
}

#[test]
fn swarm_toml_can_make_a_predicate_multi_valued() {
    let mut given = Given::default();
    given.fact("auth_service", "owner", "alice");
    given.fact("auth_service", "owner", "bob");
    let mut policy = ConsolidationPolicy::default();
    policy.multi_valued_predicates.insert("owner".to_string());
    assert!(given.consolidate(&policy).contradictions.is_empty());
    let mut given = Given::default();
    given.fact("auth_service", "depends_on", "redis");
    given.fact("auth_service", "depends_on", "kafka");
    let mut policy = ConsolidationPolicy::default();
    policy.single_valued_predicates.insert("depends_on".to_string());
    assert_eq!(given.consolidate(&policy).contradictions.len(), 1);
}

#[test]
fn a_fact_and_its_negation_contradict() {
    let mut given = Given::default();
    let uses = given.fact("token_service", "uses", "redis");
    let not_uses = given.fact("token_service", "does_not_use", "redis");
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.contradictions.len(), 1, "{plan:#?}");
    assert_eq!(plan.contradictions[0].rule, "negated_fact");
    assert_eq!((plan.contradictions[0].a.clone(), plan.contradictions[0].b.clone()), (uses, not_uses));
}

#[test]
fn a_reversed_decision_without_supersedes_contradicts_but_a_superseding_one_does_not() {
    let mut given = Given::default();
    let first = given.decide("Session storage", "keep sessions in redis", None);
    let reversal = given.decide("Session storage", "keep sessions in postgres", None);
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.contradictions.len(), 1, "{plan:#?}");
    assert_eq!(plan.contradictions[0].rule, "decision_reversed");
    assert_eq!((plan.contradictions[0].a.clone(), plan.contradictions[0].b.clone()), (first, reversal));

    let mut given = Given::default();
    let first = given.decide("Session storage", "keep sessions in redis", None);
    given.decide("Session storage", "keep sessions in postgres", Some(&first));
    assert!(given.consolidate(&ConsolidationPolicy::default()).contradictions.is_empty());
}

#[test]
fn old_unused_items_decay_then_are_forgotten_but_pinned_important_and_active_decisions_survive() {
    let mut given = Given::default();
    let policy = ConsolidationPolicy {
        decay_half_life_items: 10,
        decay_half_life_secs: 1,
        keep_newest_items: 5,
        decay_below: 0.25,
        forget_below: 0.02,
        ..ConsolidationPolicy::default()
    };
    let pinned = given.say("The staging password rotates every Monday.");
    let important = given.push_with(
        EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "Never push to main.".into() }),
        Some(0.9),
    );
    let decision = given.decide("Branching", "trunk based with short branches", None);
    let cited = given.say("The flaky test is auth::refresh_rotates.");
    let plain = given.say("Looked at the CI dashboard.");
    given.push(EventKind::MemoryPinned(MemoryPinned { item_id: pinned.clone(), reason: None }));
    for _ in 0..3 {
        given.push(EventKind::MemoryCited(MemoryCited { item_id: cited.clone() }));
    }
    for index in 0..80 {
        given.push(EventKind::ToolResultRecorded(ToolResultRecorded {
            tool: "bash".into(),
            args: Default::default(),
            output: format!("step {index} done"),
            exit_code: Some(0),
            duration_ms: None,
        }));
    }
    let plan = given.consolidate(&policy);
    let forgotten: Vec<&str> =
        plan.decays.iter().filter(|verdict| verdict.forget).map(|verdict| verdict.item_id.as_str()).collect();
    assert!(forgotten.contains(&plain.as_str()), "{plan:#?}");
    for kept in [&pinned, &important, &decision, &cited] {
        assert!(!plan.decays.iter().any(|verdict| &verdict.item_id == kept), "{kept} must be kept");
    }
    let mut memory = given.memory();
    assert_eq!(memory.item(&plain).unwrap().state, ItemState::Forgotten);
    assert!(!hybrid_ids(&mut memory, "CI dashboard").contains(&plain));
    assert!(memory.provenance_of(&plain).is_some(), "forgotten items keep provenance");
    // The newest items are neither decayed nor forgotten.
    let newest: Vec<u64> = memory.items().iter().rev().take(policy.keep_newest_items).map(|item| item.seq).collect();
    assert!(plan.decays.iter().all(|verdict| !newest.contains(&verdict.seq)));
    // Demoted items stay searchable but leave context.
    let decayed = plan.decays.iter().find(|verdict| !verdict.forget).expect("some items are only demoted");
    assert_eq!(memory.item(&decayed.item_id).unwrap().state, ItemState::Decayed);
}

#[test]
fn a_dry_run_plan_writes_nothing_until_its_events_are_applied() {
    let mut given = Given::default();
    given.say("We ship on Thursday.");
    given.say("we ship on thursday");
    let memory = given.memory();
    let digest = memory.digest();
    let plan = consolidate(&mneme_projections::consolidation_view(&memory), &ConsolidationPolicy::default());
    assert_eq!(plan.merges.len(), 1);
    // Scanning is a read: the memory is unchanged.
    assert_eq!(memory.digest(), digest);
}

#[test]
fn replay_of_the_log_with_verdicts_equals_the_live_memory_without_scanning() {
    let mut given = Given::default();
    given.say("The cache must be invalidated on deploy.");
    given.say("the cache must be invalidated on deploy!");
    given.fact("gateway", "timeout_ms", "3000");
    given.fact("gateway", "timeout_ms", "5000");
    given.decide("Queue", "use kafka", None);
    given.decide("Queue", "use rabbitmq", None);
    let policy = ConsolidationPolicy {
        decay_half_life_items: 2,
        decay_half_life_secs: 1,
        keep_newest_items: 1,
        ..ConsolidationPolicy::default()
    };
    // Live: apply the events one by one, consolidating in between.
    let mut live = AgentMemory::new("demo", "coder", MemoryConfig::default()).unwrap();
    for (seq, event) in &given.log {
        live.apply(*seq, event).unwrap();
    }
    let plan = given.consolidate(&policy);
    assert!(!plan.is_empty());
    let applied = live.checkpoint();
    for (seq, event) in given.log.iter().filter(|(seq, _)| *seq > applied) {
        live.apply(*seq, event).unwrap();
    }
    live.commit().unwrap();
    // Replay with consolidation switched off: just the log.
    let replayed = given.memory();
    assert_eq!(live.digest(), replayed.digest());
    // And a snapshot of it restores to the same digest.
    let restored =
        AgentMemory::from_snapshot(&live.to_snapshot().unwrap(), "demo", "coder", MemoryConfig::default()).unwrap();
    assert_eq!(restored.digest(), live.digest());
}

#[test]
fn a_purge_erases_text_from_memory_indexes_and_snapshots() {
    let mut given = Given::default();
    let secret = given.say("The customer's card number is 4111 1111 1111 1111 for order 99.");
    let kept = given.say("The order service retries three times.");
    given.push(EventKind::MemoryPurged(MemoryPurged {
        item_ids: vec![secret.clone()],
        before: None,
        of_agent: None,
        reason: Some("erasure request".into()),
    }));
    let mut memory = given.memory();
    let item = memory.item(&secret).unwrap();
    assert_eq!(item.state, ItemState::Purged);
    assert!(item.text.is_empty());
    assert!(!hybrid_ids(&mut memory, "card number 4111").contains(&secret));
    let exact = SearchRequest::new("card number 4111", 10).with_mode(SearchMode::Bm25);
    memory.commit().unwrap();
    assert!(mneme_projections::search(&memory, &exact).unwrap().is_empty(), "no posting of the purged text is left");
    let bm25 = SearchRequest::new("order", 10).with_mode(SearchMode::Bm25);
    let hits: Vec<String> =
        mneme_projections::search(&memory, &bm25).unwrap().into_iter().map(|hit| hit.item_id).collect();
    assert_eq!(hits, vec![kept]);
    let snapshot = memory.to_snapshot().unwrap();
    let needle = b"4111 1111";
    assert!(!snapshot.windows(needle.len()).any(|window| window == needle), "the snapshot holds no purged text");
    // The tombstone is the purge event, in the item's provenance.
    assert_eq!(memory.provenance_of(&secret).unwrap().len(), 2);
}

/// Regression: a purge used to leave the erased words in the fact graph's
/// entity names, the phase notes (commands, files), a contradiction's
/// reason, a near duplicate merged into the purged item, and a model
/// summary that arrived after it.
#[test]
fn a_purge_leaves_no_trace_in_graph_phases_contradictions_duplicates_or_late_summaries() {
    let mut given = Given::default();
    let phase_opening = given.say("Rotating the vault keys today.");
    let secret = given.say("The vault key is zqsecret7781, stored in secrets/zqkey7781.pem.");
    let copy = given.say("the vault key is zqsecret7781, stored in secrets/zqkey7781.pem");
    let read = given.push(EventKind::ToolResultRecorded(ToolResultRecorded {
        tool: "bash".into(),
        args: mneme_events::JsonText::from_value(&serde_json::json!({"command": "cat secrets/zqkey7781.pem"})),
        output: "-----BEGIN KEY-----".into(),
        exit_code: Some(0),
        duration_ms: None,
    }));
    let fact = given.fact("vault_key", "value_is", "zqsecret7781");
    given.fact("vault_key", "value_is", "rotated");
    given.say("Keys rotated; the old one is revoked.");
    given.push(EventKind::TaskUpdated(mneme_events::TaskUpdated {
        task_id: "task-1".into(),
        status: mneme_events::TaskStatus::Done,
        title: None,
        note: None,
    }));
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!((plan.merges.len(), plan.contradictions.len()), (1, 1), "{plan:#?}");
    let before = given.memory();
    assert!(
        before.graph().view().nodes().iter().any(|node| node.name.contains("zqkey7781")),
        "the graph knew the file"
    );
    assert!(before.phases().phases()[0].notes.commands.keys().any(|command| command.contains("zqkey7781")));
    given.push(EventKind::MemoryPurged(MemoryPurged {
        item_ids: vec![secret.clone(), read.clone(), fact.clone()],
        before: None,
        of_agent: None,
        reason: Some("erasure request".into()),
    }));
    // A model summary of the phase, written before the purge, lands after.
    given.push(EventKind::PhaseCompressed(mneme_events::PhaseCompressed {
        phase_id: phase_opening.parse().unwrap(),
        compressor: "model".into(),
        index: "vault keys".into(),
        compressed: "The key was zqsecret7781.".into(),
        summary: "The key was zqsecret7781.".into(),
        findings: "zqsecret7781".into(),
    }));
    let mut memory = given.memory();
    for item_id in [&secret, &copy, &read, &fact] {
        assert_eq!(memory.item(item_id).unwrap().state, ItemState::Purged, "{item_id}");
    }
    let snapshot = memory.to_snapshot().unwrap().to_ascii_lowercase();
    for needle in ["zqsecret7781", "zqkey7781"] {
        assert!(!snapshot.windows(needle.len()).any(|window| window == needle.as_bytes()), "{needle} in the snapshot");
    }
    assert!(memory.graph().view().nodes().iter().all(|node| !node.name.contains("7781")));
    let names: Vec<String> = memory.graph().view().nodes().iter().map(|node| node.id.clone()).collect();
    assert!(names.iter().any(|id| id.contains("vault_key")), "what other events say stays: {names:?}");
    let phase = &memory.phases().phases()[0];
    assert!(phase.redacted);
    assert_eq!(phase.levels.as_ref().unwrap().compressor, mneme_projections::phases::EXTRACTIVE_COMPRESSOR);
    let contradiction = memory.open_contradictions().next().unwrap();
    assert!(!contradiction.reason.contains("7781"), "{}", contradiction.reason);
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &ContextRequest::new("vault key", 2000)).unwrap();
    assert!(!context.text.contains("7781"), "{}", context.text);
    // Replay, which applies the same purge at the same point, agrees.
    let digest = memory.digest();
    let restored = AgentMemory::from_snapshot(&memory.to_snapshot().unwrap(), "demo", "coder", MemoryConfig::default());
    assert_eq!(restored.unwrap().digest(), digest);
}

#[test]
fn a_purge_by_time_erases_everything_before_it() {
    let mut given = Given::default();
    let old = given.say("old note about the migration");
    let newer = given.say("newer note about the migration");
    let cutoff = given.log[1].1.ts;
    given.push(EventKind::MemoryPurged(MemoryPurged {
        item_ids: vec![],
        before: Some(cutoff),
        of_agent: None,
        reason: None,
    }));
    let memory = given.memory();
    assert_eq!(memory.item(&old).unwrap().state, ItemState::Purged);
    assert_eq!(memory.item(&newer).unwrap().state, ItemState::Active);
}

#[test]
fn memories_sharing_entities_are_linked_once() {
    let mut given = Given::default();
    let a = given.say("Changed `refresh_access_token` in src/auth/token.rs to rotate keys.");
    let b = given.say("Reviewed src/auth/token.rs: `refresh_access_token` now rotates.");
    let lunch = given.say("Lunch menu says pasta today.");
    let policy = ConsolidationPolicy::default();
    let plan = given.consolidate(&policy);
    let pair = if a < b { (a.clone(), b.clone()) } else { (b.clone(), a.clone()) };
    assert!(plan.links.iter().any(|link| (link.a.clone(), link.b.clone()) == pair), "{:#?}", plan.links);
    // Nothing shared, but the same task: linked to the memory before it.
    let in_task = plan.links.iter().find(|link| link.a == lunch || link.b == lunch).expect("a task link");
    assert!(in_task.reason.starts_with("next in task"), "{in_task:?}");
    let memory = given.memory();
    let edges = memory.graph().view().edges_of(&format!("item:{a}"));
    assert!(edges.iter().any(|edge| edge.relation == "related_to"), "{edges:#?}");
    assert!(given.consolidate(&policy).links.is_empty(), "links are made once");
}

/// Issue 17, item 3: two items that share 1,000 paths get one link whose
/// reason names a few of them and counts the rest, so no verdict event can
/// outgrow the log's event limit however much the items share.
#[test]
fn a_link_between_items_sharing_thousands_of_entities_has_a_bounded_reason() {
    let mut given = Given::default();
    // Half of each list in common: 1,000 shared paths, too different to
    // be near duplicates.
    let listing = |range: std::ops::Range<u32>| {
        range.map(|n| format!("src/generated/module_{n:04}/mod.rs")).collect::<Vec<_>>().join("\n")
    };
    let a = given.say(&format!("Files touched by the codegen run:\n{}", listing(0..2000)));
    let b = given.say(&format!("Files to review after the codegen run:\n{}", listing(1000..3000)));
    let plan = given.consolidate(&ConsolidationPolicy::default());
    let link = plan
        .links
        .iter()
        .find(|link| [&link.a, &link.b].contains(&&a) && [&link.a, &link.b].contains(&&b))
        .unwrap_or_else(|| panic!("the two listings are linked: {:#?}", plan.links));
    assert!(link.reason.len() < 2048, "{} bytes: {}", link.reason.len(), link.reason);
    assert!(link.reason.contains(" more"), "the reason counts what it does not name: {}", link.reason);
}

/// The designed set of issue 5: duplicates that must merge, near misses
/// that must not, contradictions and look-alikes that are none, and items
/// that must be kept while old filler is forgotten. Prints the figures.
#[test]
fn designed_set_meets_the_precision_recall_and_forgetting_targets() {
    const SUBJECTS: &[&str] = &[
        "the billing worker",
        "the auth gateway",
        "the search indexer",
        "the payment queue",
        "the session cache",
        "the audit logger",
        "the report builder",
        "the email sender",
        "the upload service",
        "the metrics agent",
        "the rate limiter",
        "the schema registry",
    ];
    const CLAIMS: &[(&str, &str)] = &[
        ("integration tests pass on the main branch", "integration tests fail on the main branch"),
        ("retries are enabled for transient errors", "retries are disabled for transient errors"),
        ("the health check answers within budget", "the health check does not answer within budget"),
        ("writes go through the primary database", "reads go through the primary database"),
        ("the deploy starts before the migration", "the deploy starts after the migration"),
    ];
    let mut given = Given::default();
    let mut true_duplicates = std::collections::BTreeSet::new();
    let mut must_not_merge = Vec::new();
    let mut must_keep = Vec::new();
    for (index, subject) in SUBJECTS.iter().enumerate() {
        for (claim_index, (claim, near_miss)) in CLAIMS.iter().enumerate() {
            let original = given.say(&format!("{subject} says {claim}."));
            let duplicate = given.say(&format!("{}: {}!", subject.to_uppercase(), claim));
            true_duplicates.insert((original.clone(), duplicate.clone()));
            if (index + claim_index) % 2 == 0 {
                let miss = given.say(&format!("{subject} says {near_miss}."));
                must_not_merge.push((original.clone(), miss));
            }
            if (index + claim_index) % 5 == 0 {
                given.push(EventKind::MemoryPinned(MemoryPinned { item_id: original.clone(), reason: None }));
                must_keep.push(original);
            }
        }
    }
    // Contradictions, and look-alikes that are none.
    let mut expected_contradictions = std::collections::BTreeSet::new();
    for (index, subject) in SUBJECTS.iter().enumerate() {
        let component = subject.trim_start_matches("the ").replace(' ', "_");
        let a = given.fact(&component, "runs_in_region", "eu-west");
        let b = given.fact(&component, "runs_in_region", "us-east");
        expected_contradictions.insert((a, b));
        given.fact(&component, "depends_on", "postgres");
        given.fact(&component, "depends_on", "redis");
        // The same fact said twice: no contradiction, and a duplicate.
        let owner = given.fact(&component, "owned_by", "platform team");
        let owner_again = given.fact(&component, "owned_by", "Platform  Team");
        true_duplicates.insert((owner, owner_again));
        let title = format!("Deployment strategy for {component}");
        if index % 2 == 0 {
            let first = given.decide(&title, "blue green deployment", None);
            let reversal = given.decide(&title, "rolling deployment", None);
            expected_contradictions.insert((first.clone(), reversal.clone()));
            must_keep.push(first);
            must_keep.push(reversal);
        } else {
            let first = given.decide(&title, "blue green deployment", None);
            let next = given.decide(&title, "rolling deployment", Some(&first));
            must_keep.push(next);
        }
        if index % 3 == 0 {
            let uses = given.fact(&component, "uses", "kafka");
            let negated = given.fact(&component, "does_not_use", "kafka");
            expected_contradictions.insert((uses, negated));
        }
        let important = given.push_with(
            EventKind::MessageRecorded(MessageRecorded {
                role: "user".into(),
                text: format!("Never restart {component} during business hours."),
            }),
            Some(0.95),
        );
        must_keep.push(important);
    }
    // Old filler that may go.
    for index in 0..600 {
        given.push(EventKind::ToolResultRecorded(ToolResultRecorded {
            tool: "bash".into(),
            args: Default::default(),
            output: format!("poll {index}: queue depth nominal"),
            exit_code: Some(0),
            duration_ms: None,
        }));
    }
    let policy = ConsolidationPolicy {
        decay_half_life_items: 100,
        decay_half_life_secs: 1,
        keep_newest_items: 50,
        ..ConsolidationPolicy::default()
    };
    let plan = given.consolidate(&policy);

    let merged_pairs: std::collections::BTreeSet<(String, String)> = plan
        .merges
        .iter()
        .flat_map(|merge| merge.merged.iter().map(|merged| (merge.survivor.clone(), merged.clone())))
        .collect();
    let correct_merges = merged_pairs.iter().filter(|pair| true_duplicates.contains(*pair)).count();
    let dedup_precision = correct_merges as f64 / merged_pairs.len().max(1) as f64;
    let dedup_recall = correct_merges as f64 / true_duplicates.len() as f64;
    let wrongly_merged = must_not_merge
        .iter()
        .filter(|(a, b)| merged_pairs.iter().any(|(x, y)| (x == a && y == b) || (x == b && y == a)))
        .count();
    let found: std::collections::BTreeSet<(String, String)> =
        plan.contradictions.iter().map(|verdict| (verdict.a.clone(), verdict.b.clone())).collect();
    let correct_contradictions = found.intersection(&expected_contradictions).count();
    let contradiction_precision = correct_contradictions as f64 / found.len().max(1) as f64;
    let contradiction_recall = correct_contradictions as f64 / expected_contradictions.len() as f64;
    let forgotten: std::collections::BTreeSet<&str> =
        plan.decays.iter().filter(|verdict| verdict.forget).map(|verdict| verdict.item_id.as_str()).collect();
    let falsely_forgotten = must_keep.iter().filter(|item| forgotten.contains(item.as_str())).count();
    let false_forgetting = falsely_forgotten as f64 / must_keep.len() as f64;
    println!(
        "designed set: {} items; dedup precision {dedup_precision:.3} recall {dedup_recall:.3} \
         ({correct_merges}/{} true pairs merged, {} merged pairs, {wrongly_merged} of {} near misses merged); \
         contradictions precision {contradiction_precision:.3} recall {contradiction_recall:.3} \
         ({correct_contradictions} of {} found, {} reported); false forgetting {false_forgetting:.4} \
         ({falsely_forgotten} of {} kept items; {} items forgotten, {} demoted)",
        given.memory().item_count(),
        true_duplicates.len(),
        merged_pairs.len(),
        must_not_merge.len(),
        expected_contradictions.len(),
        found.len(),
        must_keep.len(),
        forgotten.len(),
        plan.decayed_count(),
    );
    assert!(dedup_precision >= 0.95, "dedup precision {dedup_precision}");
    assert_eq!(wrongly_merged, 0);
    assert!(dedup_recall >= 0.9, "dedup recall {dedup_recall}");
    assert!(contradiction_precision >= 0.9, "contradiction precision {contradiction_precision}");
    assert!(contradiction_recall >= 0.9, "contradiction recall {contradiction_recall}");
    assert!(false_forgetting < 0.01, "false forgetting {false_forgetting}");
    // Old filler goes; a survivor of this run's merges does not, whatever
    // its age: it now answers for a newer copy (72 survivors, 48 of them
    // old enough to forget, were forgotten with their copies before).
    assert!(forgotten.len() > 50, "old filler is forgotten");
    let survivors: std::collections::BTreeSet<&str> = plan.merges.iter().map(|merge| merge.survivor.as_str()).collect();
    assert!(plan.decays.iter().all(|verdict| !survivors.contains(verdict.item_id.as_str())));
}

#[test]
fn citations_raise_an_item_in_hybrid_search_and_being_ignored_does_not() {
    let mut given = Given::default();
    let uploader = given.say("The retry budget of the uploader is five attempts.");
    let downloader = given.say("The retry budget of the downloader is five attempts.");
    let top = |given: &Given| hybrid_ids(&mut given.memory(), "retry budget five attempts")[0].clone();
    // Near-equal matches; the one behind is the one usage must lift.
    let first = top(&given);
    let behind = if first == uploader { downloader.clone() } else { uploader.clone() };
    given.push(EventKind::MemoryIgnored(MemoryIgnored { item_id: behind.clone() }));
    assert_eq!(top(&given), first, "being ignored never helps");
    for _ in 0..2 {
        given.push(EventKind::MemoryCited(MemoryCited { item_id: behind.clone() }));
    }
    assert_eq!(top(&given), behind, "cited more than ignored: the usage prior lifts it");
    // Without the prior, the order is the one before again.
    let mut memory = given.memory();
    let mut request = SearchRequest::new("retry budget five attempts", 20).with_mode(SearchMode::Hybrid);
    request.weights.usage = 0.0;
    memory.commit().unwrap();
    assert_eq!(mneme_projections::search(&memory, &request).unwrap()[0].item_id, first);
}

#[test]
fn retrievals_and_citations_raise_the_decay_score() {
    let long_ago = |newer_items| Age { newer_items, elapsed_secs: 1e9 };
    let policy = ConsolidationPolicy::default();
    let mut given = Given::default();
    let item_id = given.say("The deploy key lives in the vault.");
    let memory = given.memory();
    let plain = memory.item(&item_id).unwrap().clone();
    let score = |item: &mneme_projections::MemoryItem| decay_score(item, long_ago(10_000), false, &policy);
    let retrieved = mneme_projections::MemoryItem { retrievals: 20, ..plain.clone() };
    let cited = mneme_projections::MemoryItem { citations: 2, ..plain.clone() };
    let ignored = mneme_projections::MemoryItem { ignored: 2, ..plain.clone() };
    assert!(score(&retrieved) > score(&plain));
    assert!(score(&cited) > score(&retrieved));
    assert!(score(&ignored) < score(&plain) || score(&plain) == 0.0);
    // Superseded counts half; importance counts.
    assert!(decay_score(&plain, long_ago(1000), true, &policy) < decay_score(&plain, long_ago(1000), false, &policy));
    let important = mneme_projections::MemoryItem { importance: Some(0.9), ..plain.clone() };
    assert!(
        decay_score(&important, long_ago(1000), false, &policy) > decay_score(&plain, long_ago(1000), false, &policy)
    );
}

#[test]
fn a_choice_that_only_adds_to_an_earlier_one_refines_it_and_is_no_reversal() {
    let mut given = Given::default();
    given.decide("Vector store", "postgres", None);
    given.decide("Vector store", "postgres with the pgvector extension", None);
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert!(plan.contradictions.is_empty(), "{plan:#?}");
}

#[test]
fn opposite_objects_contradict_only_under_a_single_valued_predicate() {
    // Multi-valued: a web app contains both ends; only "not" contradicts.
    let mut given = Given::default();
    given.fact("webapp", "contains", "frontend");
    given.fact("webapp", "contains", "backend");
    assert!(given.consolidate(&ConsolidationPolicy::default()).contradictions.is_empty());
    let mut given = Given::default();
    given.fact("webapp", "contains", "telemetry");
    given.fact("webapp", "contains", "not telemetry");
    assert_eq!(given.consolidate(&ConsolidationPolicy::default()).contradictions.len(), 1);
    // Single-valued: enabled against disabled.
    let mut given = Given::default();
    given.fact("feature_flag", "state", "enabled");
    given.fact("feature_flag", "state", "disabled");
    assert_eq!(given.consolidate(&ConsolidationPolicy::default()).contradictions.len(), 1);
}

#[test]
fn two_spellings_of_one_single_valued_predicate_contradict() {
    let mut given = Given::default();
    let eu = given.fact("primary_db", "is_located_in", "eu-west-1");
    let us = given.fact("primary_db", "located_in", "us-east-1");
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.contradictions.len(), 1, "{plan:#?}");
    assert_eq!((plan.contradictions[0].a.clone(), plan.contradictions[0].b.clone()), (eu, us));
}

/// Regression: merging an older item into a newer survivor put the older
/// item's creating event first in the survivor's provenance, where the
/// decision lookup read it: the surviving decision then looked closed.
#[test]
fn a_merged_resolution_keeps_the_survivor_an_active_decision() {
    let mut given = Given::default();
    let first = given.decide("Cache", "use memcached", None);
    let second = given.decide("Cache", "use redis", None);
    let plan = given.consolidate(&ConsolidationPolicy::default());
    given.push(EventKind::ContradictionResolved(ContradictionResolved {
        contradiction_id: plan.contradictions[0].contradiction_id.clone(),
        resolution: ContradictionResolution::Merged,
        note: None,
    }));
    let memory = given.memory();
    assert_eq!(memory.item(&first).unwrap().state, ItemState::Merged);
    let survivor = memory.item(&second).unwrap();
    assert_eq!(survivor.provenance[0].seq, survivor.seq, "the creating event stays first");
    assert!(survivor.provenance.iter().any(|reference| reference.seq == memory.item(&first).unwrap().seq));
    let view = mneme_projections::consolidation_view(&memory);
    let decision = view.decisions.iter().find(|decision| decision.seq == survivor.seq).unwrap();
    assert!(!decision.closed, "the surviving decision is still active");
}

/// A pin applied between the scan and its verdicts wins: the verdicts
/// change nothing until the item is unpinned.
#[test]
fn a_pin_that_lands_after_the_scan_still_protects_the_item() {
    let mut given = Given::default();
    let policy = ConsolidationPolicy {
        decay_half_life_items: 10,
        decay_half_life_secs: 1,
        keep_newest_items: 5,
        ..ConsolidationPolicy::default()
    };
    let note = given.say("The staging host is staging-7.internal.");
    let copy = given.say("the staging host is staging-7.internal");
    for index in 0..80 {
        given.say(&format!("routine check {index} passed"));
    }
    let memory = given.memory();
    let plan = consolidate(&mneme_projections::consolidation_view(&memory), &policy);
    assert!(plan.decays.iter().any(|verdict| verdict.forget && verdict.item_id != note && verdict.item_id != copy));
    assert!(plan.merges.iter().any(|merge| merge.merged.contains(&copy)), "{plan:#?}");
    // The agent pins every item the verdicts name, after the scan.
    let named: Vec<String> = plan
        .decays
        .iter()
        .map(|verdict| verdict.item_id.clone())
        .chain(plan.merges.iter().flat_map(|merge| merge.merged.clone()))
        .collect();
    for item_id in &named {
        given.push(EventKind::MemoryPinned(MemoryPinned { item_id: item_id.clone(), reason: None }));
    }
    let ts = Timestamp::from_unix_millis(START_MS + 1_000_000);
    for event in plan.events(ts, &IdKey::from_bytes([0; 32])) {
        let seq = given.log.len() as u64 + 1;
        given.log.push((seq, event));
    }
    let memory = given.memory();
    for item_id in &named {
        assert_eq!(memory.item(item_id).unwrap().state, ItemState::Active, "{item_id} is pinned");
    }
}

#[test]
fn a_fact_valid_until_a_later_date_still_holds_and_is_not_forgotten() {
    let mut given = Given::default();
    let policy = ConsolidationPolicy {
        decay_half_life_items: 10,
        decay_half_life_secs: 1,
        keep_newest_items: 5,
        ..ConsolidationPolicy::default()
    };
    let until_next_year = given.push(EventKind::FactAsserted(FactAsserted {
        subject: "on_call".into(),
        predicate: "is".into(),
        object: "alice".into(),
        confidence: 1.0,
        valid_from: None,
        valid_to: Some(Timestamp::from_unix_millis(START_MS + 365 * 24 * 3600 * 1000)),
    }));
    let expired = given.push(EventKind::FactAsserted(FactAsserted {
        subject: "release_freeze".into(),
        predicate: "is".into(),
        object: "on".into(),
        confidence: 1.0,
        valid_from: None,
        valid_to: Some(Timestamp::from_unix_millis(START_MS + 10_000)),
    }));
    for index in 0..80 {
        given.say(&format!("routine check {index} passed"));
    }
    let plan = given.consolidate(&policy);
    let forgotten: Vec<&str> =
        plan.decays.iter().filter(|verdict| verdict.forget).map(|verdict| verdict.item_id.as_str()).collect();
    assert!(!forgotten.contains(&until_next_year.as_str()), "{plan:#?}");
    assert!(forgotten.contains(&expired.as_str()), "{plan:#?}");
}

#[test]
fn many_copies_of_one_line_merge_into_one_survivor_in_one_run() {
    let mut given = Given::default();
    let first = given.say("Heartbeat: all workers healthy.");
    for _ in 0..199 {
        given.say("heartbeat: all workers healthy");
    }
    let plan = given.consolidate(&ConsolidationPolicy::default());
    assert_eq!(plan.merges.len(), 1, "{:?}", plan.merges.iter().map(|merge| merge.merged.len()).collect::<Vec<_>>());
    assert_eq!(plan.merges[0].survivor, first);
    assert_eq!(plan.merges[0].merged.len(), 199);
}

/// Counts the texts it embeds.
struct CountingEmbedder {
    inner: mneme_index::embed::HashedNgramEmbedder,
    embedded: std::sync::atomic::AtomicUsize,
}

impl mneme_index::embed::Embedder for CountingEmbedder {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }

    fn dimensions(&self) -> usize {
        self.inner.dimensions()
    }

    fn embed(&self, text: &str) -> Vec<f32> {
        self.embedded.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.embed(text)
    }
}

/// Issue 18: a run compares the swarm's shared items once for all its
/// memories. Three agents' memories of the same shared log, two pairs of
/// shared near duplicates among them and one private copy in one memory:
/// the run embeds each shared duplicate once (not once per memory), and
/// each memory's plan is what scanning it alone decides.
#[test]
fn a_run_compares_shared_items_once_and_decides_for_each_memory_what_it_alone_would() {
    use mneme_projections::consolidation::{SharedScan, consolidate_with};
    let mut given = Given::default();
    given.say("The nightly build uses the release profile with LTO.");
    given.say("the nightly build uses the release profile with LTO");
    given.say("Staging was deployed from the main branch at noon.");
    given.say("staging was deployed from the main branch at noon");
    for step in 0..30 {
        given.say(&format!("step {step}: refactored module {step}"));
    }
    let counting =
        Arc::new(CountingEmbedder { inner: Default::default(), embedded: std::sync::atomic::AtomicUsize::new(0) });
    let config = MemoryConfig { embedder: counting.clone(), ..MemoryConfig::default() };
    let mut memories = Vec::new();
    for agent in ["coder", "reviewer", "tester"] {
        let mut memory = AgentMemory::new("demo", agent, config.clone()).unwrap();
        for (seq, event) in &given.log {
            memory.apply(*seq, event).unwrap();
        }
        if agent == "tester" {
            let mut private = given.log[0].1.clone();
            private.id = EventId::from_parts(START_MS as u64 + 999_000, 999);
            private.agent = "tester".to_string();
            private.scope = Scope::Private;
            memory.apply(given.log.len() as u64 + 1, &private).unwrap();
        }
        memory.commit().unwrap();
        memories.push(memory);
    }
    let views: Vec<_> = memories.iter().map(mneme_projections::consolidation_view).collect();
    let policy = ConsolidationPolicy::default();
    let alone: Vec<ConsolidationPlan> = views.iter().map(|view| consolidate(view, &policy)).collect();

    let before = counting.embedded.load(std::sync::atomic::Ordering::SeqCst);
    let shared = SharedScan::new(&views.iter().collect::<Vec<_>>(), &policy);
    let plans: Vec<ConsolidationPlan> = views.iter().map(|view| consolidate_with(view, &policy, &shared)).collect();
    let embedded = counting.embedded.load(std::sync::atomic::Ordering::SeqCst) - before;
    assert_eq!(shared.duplicate_pairs(), 2, "{shared:?}");
    // Four shared texts, embedded once for the three memories; the tester's
    // private copy once, in its own scan.
    assert_eq!(embedded, 5);
    assert_eq!(plans, alone);
    assert_eq!(plans[0].merges.len(), 2);
    assert_eq!(plans[2].merges.iter().map(|merge| merge.merged.len()).sum::<usize>(), 3, "{:?}", plans[2].merges);
}
