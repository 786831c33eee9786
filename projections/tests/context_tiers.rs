//! Phases and tiered context over the example trajectory: rendered context
//! under different signals and budgets (snapshots in `tests/snapshots/`,
//! refreshed with `UPDATE_EXPECT=1`), the token bounds of every level, the
//! exact events of each phase, and the budget under random memories.

mod common;

use std::collections::BTreeMap;

use common::{trajectory, trajectory_memory};
use expect_test::expect_file;
use mneme_events::{Event, EventId, EventKind, PhaseCompressed, TaskStatus};
use mneme_index::tokens;
use mneme_projections::phases::{EXTRACTIVE_COMPRESSOR, PhaseBoundary, PhaseLevel};
use mneme_projections::{Activity, AgentMemory, ContextRequest, ContextSignals, ContextTier, MemoryConfig};
use proptest::prelude::*;

fn signals(activity: &str) -> ContextSignals {
    ContextSignals { activity: Activity::from_name(activity), ..ContextSignals::default() }
}

#[test]
fn coder_context_for_a_query() {
    let mut memory = trajectory_memory("coder");
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &ContextRequest::new("refresh token rotation", 1200)).unwrap();
    assert!(context.tokens <= 1200);
    expect_file!["snapshots/coder_query_1200.txt"].assert_eq(&context.text);
}

#[test]
fn coder_context_while_debugging_a_failure_in_a_file() {
    let mut memory = trajectory_memory("coder");
    let request = ContextRequest::new("reuse detection", 900).with_signals(ContextSignals {
        current_file: Some("src/auth/token.rs".to_string()),
        recent_errors: vec!["reuse_revokes_newer_token_in_family panicked: assertion failed".to_string()],
        thinking_budget: Some(0.2),
        ..signals("debugging")
    });
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &request).unwrap();
    assert!(context.tokens <= 900);
    expect_file!["snapshots/coder_debugging_900.txt"].assert_eq(&context.text);
}

#[test]
fn planner_context_while_planning_with_room_to_think() {
    let mut memory = trajectory_memory("planner");
    let request = ContextRequest::new("what is left for the rollout", 700)
        .with_signals(ContextSignals { thinking_budget: Some(0.9), ..signals("planning") });
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &request).unwrap();
    assert!(context.tokens <= 700);
    expect_file!["snapshots/planner_planning_700.txt"].assert_eq(&context.text);
}

#[test]
fn debugging_widens_the_critical_tier_and_brings_the_failure() {
    let mut memory = trajectory_memory("coder");
    let error = "reuse_revokes_newer_token_in_family panicked".to_string();
    memory.commit().unwrap();
    let coding = mneme_projections::context(
        &memory,
        &ContextRequest::new("refresh", 800)
            .with_signals(ContextSignals { recent_errors: vec![error.clone()], ..signals("coding") }),
    )
    .unwrap();
    let debugging = mneme_projections::context(
        &memory,
        &ContextRequest::new("refresh", 800)
            .with_signals(ContextSignals { recent_errors: vec![error], ..signals("debugging") }),
    )
    .unwrap();
    let critical = |usage: &[mneme_projections::TierUsage]| usage[ContextTier::Critical as usize];
    assert!(critical(&debugging.tiers).share_tokens > critical(&coding.tiers).share_tokens);
    assert!(critical(&debugging.tiers).used_tokens >= critical(&coding.tiers).used_tokens);
    assert!(
        debugging.items.iter().any(|item| item.reason == "recent error" && item.text.contains("FAILED")),
        "{}",
        debugging.text
    );
}

/// A named failure that was fixed later comes with its fix (issue 16,
/// item 4): asked "how was it fixed" with the failing test named, a
/// 3,000-token context holds the failing run and, from the graph's `fixes`
/// edges, every file whose edits fixed it with those edits' seqs and ids.
#[test]
fn a_named_failure_that_was_fixed_brings_the_files_and_edits_that_fixed_it() {
    let mut memory = trajectory_memory("coder");
    let error_id = "error:rust:assertion_failed:reuse_revokes_newer_token_in_family";
    // What the graph knows: the run that failed, and the fixing edits.
    let failing_seq = memory.graph().view().items_of(error_id)[0];
    let fixes: Vec<_> =
        memory.graph().view().edges_of(error_id).into_iter().filter(|edge| edge.relation == "fixes").collect();
    assert!(fixes.len() >= 2, "the trajectory fixes this failure in several files: {fixes:?}");
    let request = ContextRequest::new("how was it fixed", 3000).with_signals(ContextSignals {
        recent_errors: vec!["reuse_revokes_newer_token_in_family panicked".to_string()],
        ..ContextSignals::default()
    });
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &request).unwrap();
    assert!(context.tokens <= 3000);
    let critical: Vec<_> = context.items.iter().filter(|item| item.tier == ContextTier::Critical).collect();
    assert!(
        critical.iter().any(|item| item.reason == "recent error" && item.seq == failing_seq),
        "the failing run {failing_seq} is missing:\n{}",
        context.text
    );
    let fix = critical
        .iter()
        .find(|item| item.reason == "fix")
        .unwrap_or_else(|| panic!("no fix in the critical tier:\n{}", context.text));
    for edge in &fixes {
        let file = edge.from.trim_start_matches("file:");
        assert!(fix.text.contains(file), "{file} missing from {:?}", fix.text);
        let edits = edge.provenance.iter().filter(|reference| {
            memory
                .item_at(reference.seq)
                .is_some_and(|item| item.text.starts_with("$ edit_file") || item.text.starts_with("$ write_file"))
        });
        for edit in edits {
            assert!(fix.provenance.contains(edit), "edit {} missing from the fix's provenance", edit.seq);
            assert!(
                fix.text.contains(&edit.event_id.to_string()),
                "edit item {} missing from {:?}",
                edit.event_id,
                fix.text
            );
        }
    }
    assert!(context.text.contains(&fix.text), "the fix is rendered");
}

#[test]
fn an_unused_tier_gives_its_share_to_the_others() {
    // Messages only: nothing critical, no completed phase, so the relevant
    // tier (recent turns) gets the budget the others cannot use.
    let mut memory = AgentMemory::new("demo", "coder", MemoryConfig::default()).unwrap();
    let messages = trajectory()
        .into_iter()
        .filter(|event| event.agent == "coder" && matches!(event.kind, EventKind::MessageRecorded(_)));
    for (seq, event) in messages.enumerate() {
        memory.apply(seq as u64 + 1, &event).unwrap();
    }
    memory.commit().unwrap();
    let context = mneme_projections::context(&memory, &ContextRequest::new("", 500)).unwrap();
    let usage = |tier: ContextTier| context.tiers[tier as usize];
    assert_eq!(usage(ContextTier::Critical).allocated_tokens, 0);
    assert_eq!(usage(ContextTier::Background).allocated_tokens, 0);
    let relevant = usage(ContextTier::Relevant);
    assert!(relevant.allocated_tokens > relevant.share_tokens, "{:?}", context.tiers);
    assert!(relevant.used_tokens > relevant.share_tokens, "{:?}", context.tiers);
    assert!(context.tokens <= 500);
}

#[test]
fn every_level_of_every_phase_is_within_its_bound() {
    for agent in ["planner", "coder", "reviewer"] {
        let memory = trajectory_memory(agent);
        let completed: Vec<_> = memory.phases().phases().iter().filter(|phase| phase.is_completed()).collect();
        assert!(!completed.is_empty(), "{agent} completes phases");
        for phase in completed {
            let levels = phase.levels.as_ref().unwrap();
            assert_eq!(levels.compressor, EXTRACTIVE_COMPRESSOR);
            for level in [PhaseLevel::Index, PhaseLevel::Compressed, PhaseLevel::Summary, PhaseLevel::Findings] {
                let text = levels.text(level).unwrap();
                assert!(!text.is_empty(), "{agent} {} {}", phase.name, level.as_str());
                let bound = level.token_bound().unwrap();
                assert!(tokens::count(text) <= bound, "{agent} {} {}: {text}", phase.name, level.as_str());
            }
        }
        for task in memory.phases().tasks_newest_first() {
            assert!(tokens::count(&task.summary) <= 128 && tokens::count(&task.index) <= 8, "{task:?}");
        }
        assert!(tokens::count(memory.phases().session_summary()) <= 256);
    }
}

#[test]
fn a_models_summary_replaces_the_levels_cut_to_their_bounds() {
    let events = trajectory();
    let mut memory = trajectory_memory("planner");
    let newest_task_before = memory.phases().tasks_newest_first().next().unwrap().task.clone();
    let phase_id: EventId = "01KE98KZ003SQZDANB75N9T00F".parse().unwrap();
    let long = "word ".repeat(2000);
    let mut compressed = events.iter().find(|event| event.agent == "planner").unwrap().clone();
    compressed.id = EventId(phase_id.0 ^ 1);
    compressed.kind = EventKind::PhaseCompressed(PhaseCompressed {
        phase_id,
        compressor: "llm:test".to_string(),
        index: long.clone(),
        compressed: long.clone(),
        summary: long.clone(),
        findings: long,
    });
    memory.apply(events.len() as u64 + 1, &compressed).unwrap();
    let phase = memory.phases().phase(&phase_id.to_string()).unwrap();
    let levels = phase.levels.as_ref().unwrap();
    assert_eq!(levels.compressor, "llm:test");
    for level in [PhaseLevel::Index, PhaseLevel::Compressed, PhaseLevel::Summary, PhaseLevel::Findings] {
        assert!(tokens::count(levels.text(level).unwrap()) <= level.token_bound().unwrap());
    }
    assert_eq!(phase.provenance.last().unwrap().seq, events.len() as u64 + 1);
    // A late summary of an old phase does not make its task the newest.
    assert_eq!(memory.phases().tasks_newest_first().next().unwrap().task, newest_task_before);
    assert_ne!(newest_task_before, "task-214-investigate");
}

/// The events of each phase, computed independently of the tracker: for
/// explicit phases, everything of the agent from `phase_started` to its
/// `phase_completed`; for task phases, the agent's events of the task from
/// the first that is work on it to the `task_updated` that closes it.
#[test]
fn each_phase_holds_exactly_its_events() {
    let events = trajectory();
    let by_seq = |agent: &str| -> Vec<(u64, &Event)> {
        events.iter().enumerate().map(|(i, e)| (i as u64 + 1, e)).filter(|(_, e)| e.agent == agent).collect()
    };
    // planner: explicit phases, never nested.
    let memory = trajectory_memory("planner");
    let mut expected: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut open: Option<String> = None;
    for (seq, event) in by_seq("planner") {
        if let EventKind::PhaseStarted(_) = event.kind {
            open = Some(event.id.to_string());
        }
        if let Some(id) = &open {
            expected.entry(id.clone()).or_default().push(seq);
        }
        if let EventKind::PhaseCompleted(_) = event.kind {
            open = None;
        }
    }
    let explicit: BTreeMap<String, Vec<u64>> = memory
        .phases()
        .phases()
        .iter()
        .filter(|phase| phase.boundary == PhaseBoundary::Explicit)
        .map(|phase| (phase.phase_id.clone(), phase.event_seqs.clone()))
        .collect();
    assert_eq!(explicit, expected);
    assert_eq!(explicit.len(), 7);

    // coder: task phases by correlation id.
    let memory = trajectory_memory("coder");
    for phase in memory.phases().phases().iter().filter(|phase| phase.is_completed()) {
        let task = phase.task.as_deref().unwrap();
        let (first, last) = (phase.started_seq, phase.completed_seq.unwrap());
        let expected: Vec<u64> = by_seq("coder")
            .into_iter()
            .filter(|(seq, event)| *seq >= first && *seq <= last && event.correlation_id.as_deref() == Some(task))
            .map(|(seq, _)| seq)
            .collect();
        assert_eq!(phase.event_seqs, expected, "{task}");
        let closing = &events[last as usize - 1];
        assert!(matches!(&closing.kind, EventKind::TaskUpdated(update)
            if update.task_id == task && matches!(update.status, TaskStatus::Done | TaskStatus::Cancelled)));
    }
}

/// Original tokens (the phase's items as rendered) over `findings` tokens.
#[test]
fn completed_phases_compress_by_an_order_of_magnitude_overall() {
    let mut original = 0u64;
    let mut findings = 0u64;
    for agent in ["planner", "coder", "reviewer"] {
        for phase in trajectory_memory(agent).phases().phases().iter().filter(|phase| phase.is_completed()) {
            original += phase.notes.item_tokens;
            findings += tokens::count(&phase.levels.as_ref().unwrap().findings) as u64;
        }
    }
    assert!(original >= 10 * findings, "{original} original tokens, {findings} in findings");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Any prefix of the trajectory, any agent, any budget, any signals:
    /// never over budget, the count is of the whole text, and every line
    /// has its tier, tokens and provenance.
    #[test]
    fn context_is_never_over_budget(
        agent_index in 0usize..3,
        prefix in 1usize..573,
        budget in 0usize..2500,
        activity_index in 0usize..5,
        thinking in proptest::option::of(0.0f32..=1.0),
        with_file in any::<bool>(),
        with_error in any::<bool>(),
        query_index in 0usize..4,
    ) {
        let agent = ["planner", "coder", "reviewer"][agent_index];
        let mut memory = AgentMemory::new("demo", agent, MemoryConfig::default()).unwrap();
        for (index, event) in trajectory().iter().enumerate().take(prefix) {
            if event.agent == agent {
                memory.apply(index as u64 + 1, event).unwrap();
            }
        }
        let request = ContextRequest::new(["", "refresh token", "TokenExpiredError", "rollout staging"][query_index], budget)
            .with_signals(ContextSignals {
                current_file: with_file.then(|| "src/auth/token.rs".to_string()),
                recent_errors: if with_error { vec!["KeyError: 'refresh_token'".to_string()] } else { Vec::new() },
                activity: Activity::from_name(["", "coding", "debugging", "reviewing", "planning"][activity_index]),
                phase: None,
                thinking_budget: thinking,
            });
        memory.commit().unwrap();
        let context = mneme_projections::context(&memory, &request).unwrap();
        prop_assert!(context.tokens <= budget, "{} > {budget}", context.tokens);
        prop_assert_eq!(context.tokens, tokens::count(&context.text));
        for item in &context.items {
            prop_assert!(!item.provenance.is_empty(), "{:?} has no provenance", item);
            prop_assert!(item.tokens > 0);
        }
        let allocated: usize = context.tiers.iter().map(|usage| usage.allocated_tokens).sum();
        prop_assert!(allocated <= budget);
    }
}
