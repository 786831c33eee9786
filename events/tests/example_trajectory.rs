//! The example trajectory in `examples/trajectory.jsonl` (written by
//! `examples/generate_trajectory.py`) decodes, and its references are sound.

use std::collections::{BTreeSet, HashSet};

use mneme_events::{DecodeLimits, Event, EventId, EventKind, decode_json};

const TRAJECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/trajectory.jsonl");

fn text() -> String {
    std::fs::read_to_string(TRAJECTORY).unwrap_or_else(|error| panic!("cannot read {TRAJECTORY}: {error}"))
}

fn events() -> Vec<Event> {
    text()
        .lines()
        .enumerate()
        .map(|(index, line)| {
            decode_json(line.as_bytes(), &DecodeLimits::default())
                .unwrap_or_else(|error| panic!("line {} does not decode: {error}", index + 1))
        })
        .collect()
}

#[test]
fn every_line_decodes_and_there_are_enough() {
    let events = events();
    assert!(events.len() >= 500, "only {} events", events.len());
    assert_eq!(events.len(), text().lines().count());
}

#[test]
fn ids_are_unique_and_time_never_goes_back() {
    let events = events();
    let mut ids = HashSet::new();
    for pair in events.windows(2) {
        assert!(
            pair[0].ts <= pair[1].ts,
            "{} at {} comes after {} at {}",
            pair[1].id,
            pair[1].ts,
            pair[0].id,
            pair[0].ts
        );
    }
    for event in &events {
        assert!(ids.insert(event.id), "duplicate id {}", event.id);
    }
}

#[test]
fn agents_and_kinds_are_all_there() {
    let events = events();
    let agents: BTreeSet<&str> = events.iter().map(|event| event.agent.as_str()).collect();
    assert!(agents.len() >= 3, "agents: {agents:?}");
    let kinds: BTreeSet<&str> = events.iter().map(Event::kind_name).collect();
    for kind in [
        "message_recorded",
        "tool_result_recorded",
        "decision_made",
        "fact_asserted",
        "fact_retracted",
        "handoff_sent",
        "phase_started",
        "phase_completed",
        "task_updated",
        "preference_set",
    ] {
        assert!(kinds.contains(kind), "no {kind} event; kinds: {kinds:?}");
    }
}

#[test]
fn tool_results_both_fail_and_pass() {
    let events = events();
    let exit_codes: Vec<Option<i32>> = events
        .iter()
        .filter_map(|event| match &event.kind {
            EventKind::ToolResultRecorded(r) => Some(r.exit_code),
            _ => None,
        })
        .collect();
    assert!(exit_codes.iter().any(|code| code.is_some_and(|code| code != 0)), "no failing tool result");
    assert!(exit_codes.contains(&Some(0)), "no passing tool result");
}

/// Every id an event names (causation, superseded decision, cited memory,
/// handoff, phase) belongs to an event earlier in the file.
#[test]
fn references_point_to_earlier_events() {
    let events = events();
    let mut seen: HashSet<EventId> = HashSet::new();
    let mut checked = 0;
    for event in &events {
        let mut references: Vec<(&str, EventId)> = Vec::new();
        if let Some(cause) = event.causation_id {
            references.push(("causation_id", cause));
        }
        match &event.kind {
            EventKind::DecisionMade(decision) => {
                references.extend(decision.supersedes.map(|id| ("supersedes", id)));
            }
            EventKind::MemoryCited(cited) => {
                let id = cited.item_id.parse().unwrap_or_else(|_| panic!("{}: item_id is not an event id", event.id));
                references.push(("item_id", id));
            }
            EventKind::HandoffReceived(received) => references.push(("handoff_id", received.handoff_id)),
            EventKind::HandoffAcknowledged(ack) => references.push(("handoff_id", ack.handoff_id)),
            EventKind::PhaseCompleted(completed) => {
                references.extend(completed.phase_id.map(|id| ("phase_id", id)));
            }
            _ => {}
        }
        for (field, id) in references {
            assert!(seen.contains(&id), "{} ({}): {field} {id} is not an earlier event", event.id, event.kind_name());
            checked += 1;
        }
        seen.insert(event.id);
    }
    assert!(checked > 0);
    let supersedes =
        events.iter().filter(|event| matches!(&event.kind, EventKind::DecisionMade(d) if d.supersedes.is_some()));
    assert!(supersedes.count() >= 1, "no decision supersedes another");
}
