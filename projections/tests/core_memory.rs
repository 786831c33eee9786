//! Core memory and notes as the log makes them: the current task from
//! `task_updated` and handoffs received, constraints from handoffs and
//! preferences, blocks an agent replaces and clears, and what another agent
//! never sees: its blocks and its private notes.

mod common;

use common::Log;
use mneme_events::{
    CoreMemoryUpdated, EventId, EventKind, HandoffAcknowledged, HandoffBundle, HandoffPackage, HandoffReceived,
    NoteWritten, PreferenceSet, Scope, TaskStatus, TaskUpdated, Timestamp,
};
use mneme_projections::{ContextRequest, ContextTier, CoreRequest, SearchMode, SearchRequest, TaskSource};

fn block(name: &str, content: &str) -> EventKind {
    EventKind::CoreMemoryUpdated(CoreMemoryUpdated { block: name.into(), content: content.into() })
}

fn task(id: &str, status: TaskStatus, title: Option<&str>) -> EventKind {
    EventKind::TaskUpdated(TaskUpdated { task_id: id.into(), status, title: title.map(str::to_string), note: None })
}

fn note(text: &str) -> EventKind {
    EventKind::NoteWritten(NoteWritten { text: text.into(), tags: vec!["gotcha".into()] })
}

fn received(from: &str, handoff_id: EventId, task: &str, constraints: &[&str]) -> EventKind {
    EventKind::HandoffReceived(HandoffReceived {
        from: from.into(),
        handoff_id,
        package: Some(HandoffPackage {
            task: task.into(),
            summary: "the summary".into(),
            artifacts: Vec::new(),
            decisions: Vec::new(),
            constraints: constraints.iter().map(|c| c.to_string()).collect(),
            sent_seq: 1,
            sent_at: Timestamp::from_unix_millis(0),
            bundle: HandoffBundle { budget_tokens: 100, used_tokens: 0, items: Vec::new(), files: Vec::new() },
        }),
    })
}

fn hits(memory: &mut mneme_projections::AgentMemory, query: &str) -> Vec<String> {
    let request = SearchRequest { mode: SearchMode::Bm25, ..SearchRequest::new(query, 10) };
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

#[test]
fn the_current_task_follows_task_updates_and_handoffs_and_a_finished_task_leaves() {
    let mut log = Log::starting_at(1_765_000_000_000);
    log.push("coder", Scope::Private, None, task("task-1", TaskStatus::Open, Some("fix the cache")));
    log.push("coder", Scope::Private, None, task("task-1", TaskStatus::InProgress, None));
    let core = mneme_projections::core_memory(&log.memory_of("coder"), &CoreRequest::default());
    let current = core.task.expect("a current task");
    assert_eq!(
        (current.task_id.as_str(), current.title.as_str(), current.status.as_str()),
        ("task-1", "fix the cache", "in_progress")
    );

    let handoff_id = EventId::from_parts(1, 1);
    log.push("coder", Scope::Private, None, received("planner", handoff_id, "review the cache", &["no new deps"]));
    let core = mneme_projections::core_memory(&log.memory_of("coder"), &CoreRequest::default());
    let current = core.task.expect("the handoff's task");
    assert_eq!((current.source, current.title.as_str()), (TaskSource::HandoffReceived, "review the cache"));
    assert_eq!(core.pending_handoffs.len(), 1);
    assert_eq!(core.constraints.iter().map(|c| c.text.as_str()).collect::<Vec<_>>(), ["no new deps"]);

    // Acknowledged, the handoff is no longer pending; its constraints stay
    // while its task is the current one.
    log.push(
        "coder",
        Scope::Private,
        None,
        EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id, note: None }),
    );
    let core = mneme_projections::core_memory(&log.memory_of("coder"), &CoreRequest::default());
    assert!(core.pending_handoffs.is_empty());
    assert_eq!(core.constraints.len(), 1);

    log.push("coder", Scope::Private, None, task("task-2", TaskStatus::Open, Some("ship it")));
    log.push("coder", Scope::Private, None, task("task-2", TaskStatus::Done, None));
    let core = mneme_projections::core_memory(&log.memory_of("coder"), &CoreRequest::default());
    assert_eq!(core.task, None, "a done task is current no more");
    assert!(core.constraints.is_empty(), "the acknowledged handoff's task is over");
}

#[test]
fn blocks_are_replaced_whole_cleared_by_empty_content_and_cut_to_the_limit_when_shown() {
    let mut log = Log::starting_at(1_765_000_000_000);
    log.push("coder", Scope::Private, None, block("plan", "one two three"));
    log.push("coder", Scope::Private, None, block("persona", "terse"));
    log.push("coder", Scope::Private, None, block("plan", &"word ".repeat(50)));
    log.push("coder", Scope::Private, None, block("persona", " "));
    let memory = log.memory_of("coder");
    let core = mneme_projections::core_memory(
        &memory,
        &CoreRequest { role: Some("implementer".into()), block_tokens: Some(10), max_blocks: None },
    );
    assert_eq!(core.role.as_deref(), Some("implementer"));
    assert_eq!(core.blocks.len(), 1, "{:?}", core.blocks);
    let plan = &core.blocks[0];
    assert_eq!((plan.name.as_str(), plan.truncated, plan.provenance.seq), ("plan", true, 3));
    assert!(plan.tokens <= 10, "{plan:?}");
    // The state keeps the block whole; only what is shown is cut.
    assert_eq!(memory.core_state().blocks()["plan"].content, "word ".repeat(50));
}

#[test]
fn core_memory_heads_the_context_and_another_agent_sees_neither_the_blocks_nor_private_notes() {
    let mut log = Log::starting_at(1_765_000_000_000);
    log.push("coder", Scope::Private, None, block("plan", "migrate the ledger first"));
    log.push(
        "coder",
        Scope::Shared,
        None,
        EventKind::PreferenceSet(PreferenceSet { key: "style".into(), value: "small commits".into() }),
    );
    let private = log.push("coder", Scope::Private, None, note("the flaky test is wombat_cache"));
    let shared = log.push("coder", Scope::Shared, None, note("the staging key rotates nightly, see ocelot_rotation"));

    let mut coder = log.memory_of("coder");
    coder.commit().unwrap();
    let context = mneme_projections::context(
        &coder,
        &ContextRequest::new("ledger", 400).with_core(CoreRequest {
            role: Some("implementer".into()),
            block_tokens: None,
            max_blocks: None,
        }),
    )
    .unwrap();
    assert!(context.text.starts_with("# Memory of coder (swarm demo; role: implementer)"), "{}", context.text);
    let core: Vec<_> = context.items.iter().filter(|item| item.tier == ContextTier::Core).collect();
    assert!(core.iter().any(|item| item.text == "migrate the ledger first"), "{}", context.text);
    assert!(
        core.iter().any(|item| item.reason == "constraint" && item.text.contains("small commits")),
        "{}",
        context.text
    );
    assert_eq!(hits(&mut coder, "wombat_cache"), [private.id.to_string()]);

    let mut reviewer = log.memory_of("reviewer");
    let seen = mneme_projections::core_memory(&reviewer, &CoreRequest::default());
    assert!(seen.blocks.is_empty(), "another agent's blocks: {:?}", seen.blocks);
    assert!(hits(&mut reviewer, "wombat_cache").is_empty(), "a private note is its author's");
    assert_eq!(hits(&mut reviewer, "ocelot_rotation"), [shared.id.to_string()], "a shared note is the swarm's");
    // A shared preference is every agent's constraint.
    assert_eq!(seen.constraints.len(), 1);
}
