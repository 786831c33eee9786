//! Valid events with hostile content: arbitrary Unicode, control
//! characters, long runs, path and stack-trace fragments, references to
//! items that do not exist. Whatever passes the decoder must apply without
//! a panic or an error (a panic would take the agent's memory down with it,
//! and an error would stall its feed), be searchable and queryable, and
//! survive a snapshot: the events that reach memory from the log are
//! exactly those `decode_json` accepts.

use mneme_events::{DecodeLimits, Event, decode_json};
use mneme_projections::graph::GraphQuery;
use mneme_projections::{AgentMemory, ContextRequest, MemoryConfig, SearchMode, SearchRequest};
use proptest::prelude::*;
use serde_json::{Value, json};

/// Pieces that steer graph extraction, rendering and tokenizing into their
/// corners, mixed with arbitrary text.
const FRAGMENTS: &[&str] = &[
    "src/auth/token.rs",
    "src/lib.rs:10:5",
    "./a/../b/",
    "/",
    "//",
    "file://",
    "https://example.com/x",
    "a::b::c",
    "::",
    "`",
    "``",
    "()",
    "diff --git a/x b/x\n",
    "--- a/",
    "+++ b/",
    "thread 'main' panicked at src/x.rs:1:1:\n",
    "Traceback (most recent call last):\n  File \"a.py\", line 3, in f\n",
    "TokenExpiredError: expired\n",
    "    at Object.<anonymous> (/app/x.js:1:2)\n",
    "error[E0308]: mismatched types\n",
    "\n",
    "\r\n",
    "\t",
    " ",
    "é",
    "\u{301}",
    "\u{202e}",
    "\u{feff}",
    "\u{0}",
    "🦀",
    "日本語",
    "_",
    "__init__",
    "x.",
    ".rs",
    "@scope/pkg",
    "...",
    "0",
    "-1",
    "1e309",
];

fn hostile_text() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        prop::collection::vec(
            prop_oneof![
                3 => prop::sample::select(FRAGMENTS).prop_map(str::to_string),
                1 => any::<String>(),
                1 => (prop::sample::select(FRAGMENTS), 1usize..400).prop_map(|(fragment, times)| fragment.repeat(times)),
            ],
            0..24
        )
        .prop_map(|pieces| pieces.concat()),
    ]
}

/// An event's kind and data, as a publisher would write it.
fn kind_and_data(item_ids: Vec<String>) -> impl Strategy<Value = (String, Value)> {
    let item_id = prop::sample::select(item_ids);
    prop_oneof![
        hostile_text().prop_map(|text| ("message_recorded".into(), json!({"role": "assistant", "text": text}))),
        (hostile_text(), hostile_text(), hostile_text(), any::<Option<i32>>()).prop_map(
            |(tool, command, output, code)| (
                "tool_result_recorded".into(),
                json!({"tool": tool, "args": {"cmd": command}, "output": output, "exit_code": code})
            )
        ),
        (hostile_text(), hostile_text(), hostile_text()).prop_map(|(title, choice, rationale)| (
            "decision_made".into(),
            json!({"title": title, "choice": choice, "rationale": rationale})
        )),
        (hostile_text(), hostile_text(), hostile_text(), any::<bool>()).prop_map(
            |(subject, predicate, object, dated)| {
                let mut data = json!({"subject": subject, "predicate": predicate, "object": object});
                if dated {
                    data["valid_from"] = json!("1970-01-01T00:00:00Z");
                }
                ("fact_asserted".into(), data)
            }
        ),
        (hostile_text(), hostile_text(), hostile_text()).prop_map(|(subject, predicate, object)| (
            "fact_retracted".into(),
            json!({"subject": subject, "predicate": predicate, "object": object})
        )),
        (hostile_text(), hostile_text())
            .prop_map(|(key, value)| ("preference_set".into(), json!({"key": key, "value": value}))),
        (hostile_text(), hostile_text()).prop_map(|(task, title)| (
            "task_updated".into(),
            json!({"task_id": task, "status": "open", "title": title})
        )),
        (hostile_text(), hostile_text())
            .prop_map(|(phase, goal)| ("phase_started".into(), json!({"phase": phase, "goal": goal}))),
        (hostile_text(), hostile_text(), hostile_text()).prop_map(|(to, task, summary)| (
            "handoff_sent".into(),
            json!({"to": to, "task": task, "summary": summary})
        )),
        (item_id.clone(), hostile_text())
            .prop_map(|(item_id, reason)| ("memory_forgotten".into(), json!({"item_id": item_id, "reason": reason}))),
        item_id.clone().prop_map(|item_id| ("memory_cited".into(), json!({"item_id": item_id}))),
        (item_id.clone(), item_id.clone()).prop_map(|(survivor, merged)| (
            "memories_merged".into(),
            json!({"survivor": survivor, "merged": [merged], "similarity": 0.9})
        )),
        (item_id.clone(), hostile_text())
            .prop_map(|(item_id, reason)| ("memory_pinned".into(), json!({"item_id": item_id, "reason": reason}))),
    ]
}

const EVENTS_PER_CASE: usize = 12;

fn id_of(number: usize) -> String {
    mneme_events::EventId::from_parts(1_760_000_000_000 + number as u64, number as u128).to_string()
}

fn events() -> impl Strategy<Value = Vec<(String, Value, bool)>> {
    // Item references point at earlier events of the case, or at ids that
    // are on no log.
    let mut item_ids: Vec<String> = (0..EVENTS_PER_CASE).map(id_of).collect();
    item_ids.push("01ARZ3NDEKTSV4RRFFQ69G5FAV".to_string());
    prop::collection::vec((kind_and_data(item_ids), any::<bool>()), 1..EVENTS_PER_CASE)
        .prop_map(|events| events.into_iter().map(|((kind, data), shared)| (kind, data, shared)).collect())
}

fn config() -> MemoryConfig {
    MemoryConfig { working_tier_tokens: 300, working_item_max_tokens: 60, ..MemoryConfig::default() }
}

/// The events the decoder accepts, numbered as on the log.
fn decoded(events: &[(String, Value, bool)]) -> Vec<(u64, Event)> {
    let mut log = Vec::new();
    for (number, (kind, data, shared)) in events.iter().enumerate() {
        let json = json!({
            "id": id_of(number), "swarm": "demo", "agent": if number % 3 == 2 { "reviewer" } else { "coder" },
            "ts": format!("2026-03-02T10:00:{:02}Z", number), "kind": kind, "data": data,
            "scope": if *shared { "shared" } else { "private" },
        });
        if let Ok(event) = decode_json(json.to_string().as_bytes(), &DecodeLimits::default()) {
            log.push((log.len() as u64 + 1, event));
        }
    }
    log
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn hostile_valid_events_apply_and_answer_queries_without_failing(events in events()) {
        let log = decoded(&events);
        let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
        for (seq, event) in &log {
            let applied = memory.apply(*seq, event);
            prop_assert!(applied.is_ok(), "seq {} ({}) refused: {:?}", seq, event.kind_name(), applied);
        }
        memory.commit().unwrap();
        for (_, event) in &log {
            let query: String = event.to_json().chars().skip(80).take(60).collect();
            for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
                memory.commit().unwrap();
                prop_assert!(mneme_projections::search(&memory, &SearchRequest::new(&query, 10).with_mode(mode)).is_ok());
            }
            prop_assert!(mneme_projections::context(&memory, &ContextRequest::new(&query, 400)).is_ok());
            let _neighbourhood = memory.neighbourhood(&GraphQuery::new(&query, 2));
        }
        let snapshot = memory.to_snapshot().unwrap();
        let restored = AgentMemory::from_snapshot(&snapshot, "demo", "coder", config()).unwrap();
        prop_assert_eq!(restored.digest(), memory.digest());
    }
}
