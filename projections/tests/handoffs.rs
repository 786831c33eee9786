//! Handoffs in memory: the bundle a sender's memory gives a handoff holds
//! only what the recipient may see, within its budget; the recipient's
//! memory records what it received and what it acknowledged, the same live,
//! restored and replayed.

use mneme_events::{
    DecisionMade, Event, EventId, EventKind, FactAsserted, HandoffAcknowledged, HandoffBundle, HandoffPackage,
    HandoffReceived, JsonText, MessageRecorded, Scope, Timestamp, ToolResultRecorded,
};
mod common;

use common::Log;
use mneme_projections::{AgentMemory, MemoryConfig};

const START_MS: i64 = 1_765_000_000_000;

fn decision(title: &str, choice: &str) -> EventKind {
    EventKind::DecisionMade(DecisionMade {
        title: title.into(),
        choice: choice.into(),
        rationale: String::new(),
        supersedes: None,
    })
}

fn tool(command: &str, output: &str) -> EventKind {
    EventKind::ToolResultRecorded(ToolResultRecorded {
        tool: "bash".into(),
        args: JsonText::from_value(&serde_json::json!({"command": command})),
        output: output.into(),
        exit_code: Some(0),
        duration_ms: None,
    })
}

/// The planner's work on task-7: shared decisions, facts and edits, and
/// private notes and reads that must not reach the coder.
fn planner_work() -> (Log, Vec<Event>) {
    let mut log = Log::starting_at(START_MS);
    let shared = Scope::Shared;
    let private = Scope::Private;
    let kept = vec![
        log.push("planner", shared, Some("task-7"), decision("Token storage", "keep refresh tokens in postgres")),
        log.push(
            "planner",
            shared,
            Some("task-7"),
            EventKind::FactAsserted(FactAsserted {
                subject: "token_store".into(),
                predicate: "backed_by".into(),
                object: "postgres".into(),
                confidence: 1.0,
                valid_from: None,
                valid_to: None,
            }),
        ),
        log.push("planner", shared, Some("task-7"), tool("sed -i s/redis/postgres/ src/auth/store.rs", "ok")),
    ];
    log.push(
        "planner",
        private,
        Some("task-7"),
        EventKind::MessageRecorded(MessageRecorded {
            role: "assistant".into(),
            text: "private scratch: the staging password is walrus-42".into(),
        }),
    );
    log.push("planner", private, Some("task-7"), decision("Escalation", "page the on-call secretly"));
    log.push("planner", private, Some("task-7"), tool("cat secrets/walrus.env", "PASSWORD=walrus-42"));
    // Another task's decision stays out of this handoff.
    log.push("planner", shared, Some("task-8"), decision("Logging", "structured json logs"));
    (log, kept)
}

fn texts(bundle: &HandoffBundle) -> String {
    let mut all: Vec<String> = bundle.items.iter().map(|item| format!("{} {}", item.section, item.text)).collect();
    all.extend(bundle.files.iter().cloned());
    all.join("\n")
}

#[test]
fn a_bundle_holds_what_the_recipient_may_see_of_the_task_with_provenance() {
    let (log, kept) = planner_work();
    let planner = log.memory_of("planner");
    let bundle = mneme_projections::handoff_bundle(&planner, &["task-7"], &[], "coder", 2000);
    let all = texts(&bundle);
    assert!(all.contains("keep refresh tokens in postgres"), "{all}");
    assert!(all.contains("token_store backed_by postgres"), "{all}");
    assert!(bundle.files.contains(&"src/auth/store.rs".to_string()), "{:?}", bundle.files);
    for private in ["walrus", "secretly", "secrets/"] {
        assert!(!all.contains(private), "{private} leaked: {all}");
    }
    assert!(!all.contains("structured json logs"), "another task's decision: {all}");
    // Each item says where it came from.
    let decision = bundle.items.iter().find(|item| item.section == "decision").unwrap();
    assert_eq!(decision.item_id, kept[0].id.to_string());
    assert_eq!(decision.agent, "planner");
    assert_eq!(decision.provenance[0].event_id, kept[0].id);
    assert!(bundle.used_tokens <= bundle.budget_tokens);
    // The planner itself may see its private decision.
    let for_itself = texts(&mneme_projections::handoff_bundle(&planner, &["task-7"], &[], "planner", 2000));
    assert!(for_itself.contains("page the on-call secretly"), "{for_itself}");
}

#[test]
fn a_bundle_stays_within_its_budget() {
    let (mut log, _) = planner_work();
    for index in 0..40 {
        log.push(
            "planner",
            Scope::Shared,
            Some("task-7"),
            decision(&format!("Choice {index}"), &"a long rationale ".repeat(20)),
        );
    }
    let planner = log.memory_of("planner");
    let bundle = mneme_projections::handoff_bundle(&planner, &["task-7"], &[], "coder", 300);
    assert!(bundle.used_tokens <= 300, "{}", bundle.used_tokens);
    assert!(!bundle.items.is_empty());
    let unbounded = mneme_projections::handoff_bundle(&planner, &["task-7"], &[], "coder", 100_000);
    assert!(unbounded.items.len() > bundle.items.len());
}

#[test]
fn the_recipient_records_handoffs_pending_until_acknowledged_and_restores_them() {
    let (mut log, _) = planner_work();
    let planner = log.memory_of("planner");
    let package = |task: &str| HandoffPackage {
        task: task.into(),
        summary: "storage moved to postgres".into(),
        artifacts: vec!["src/auth/store.rs".into()],
        decisions: Vec::new(),
        constraints: vec!["no redis".into()],
        sent_seq: 1,
        sent_at: Timestamp::from_unix_millis(START_MS),
        bundle: mneme_projections::handoff_bundle(&planner, &[task], &[], "coder", 2000),
    };
    let first = EventId::from_parts(START_MS as u64 + 900, 900);
    let second = EventId::from_parts(START_MS as u64 + 901, 901);
    for (handoff_id, task) in [(first, "task-7"), (second, "task-8")] {
        log.push(
            "coder",
            Scope::Private,
            Some(task),
            EventKind::HandoffReceived(HandoffReceived {
                from: "planner".into(),
                handoff_id,
                package: Some(package(task)),
            }),
        );
    }
    log.push(
        "coder",
        Scope::Private,
        Some("task-7"),
        EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id: first, note: None }),
    );
    let coder = log.memory_of("coder");
    let handoffs = coder.handoffs();
    assert_eq!(handoffs.len(), 2);
    assert_eq!(handoffs[0].handoff_id, second, "pending first");
    assert!(handoffs[0].is_pending() && !handoffs[1].is_pending());
    assert_eq!(handoffs[1].package.as_ref().unwrap().task, "task-7");
    // Only the recipient records it: the planner's memory has none.
    assert!(log.memory_of("planner").handoffs().is_empty());
    let restored =
        AgentMemory::from_snapshot(&coder.to_snapshot().unwrap(), "demo", "coder", MemoryConfig::default()).unwrap();
    assert_eq!(restored.digest(), coder.digest());
    assert_eq!(restored.handoffs().len(), 2);
}
