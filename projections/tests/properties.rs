//! Property tests over generated event sequences: applying events one by
//! one equals a rebuild, a snapshot plus the tail equals a full replay, and
//! redelivery or re-publication changes nothing.

use std::collections::BTreeSet;

use mneme_events::{ComputedVector, EmbeddingsComputed, Int8Values};
use mneme_events::{
    ContradictionDetected, ContradictionResolution, ContradictionResolved, CoreMemoryUpdated, DecisionMade, Event,
    EventId, EventKind, FactAsserted, HandoffAcknowledged, HandoffBundle, HandoffPackage, HandoffReceived, HandoffSent,
    IdKey, JsonText, MemoriesLinked, MemoriesMerged, MemoriesRetrieved, MemoryArchived, MemoryCited, MemoryDecayed,
    MemoryForgotten, MemoryLink, MemoryPinned, MemoryPurged, MessageRecorded, NoteWritten, PhaseCompleted,
    PhaseStarted, PreferenceSet, RetrievalCount, Scope, TaskStatus, TaskUpdated, Timestamp, ToolResultRecorded,
};
use mneme_index::QuantizedVector;
use mneme_index::embed::{Embedder, HashedNgramEmbedder};
use mneme_projections::consolidation::{ConsolidationPolicy, consolidate};
use mneme_projections::graph::SwarmGraph;
use mneme_projections::{
    AgentMemory, ContextRequest, ItemState, KindFilter, MemoryConfig, ProjectionError, SearchMode, SearchRequest,
    SnapshotPart,
};
use proptest::prelude::*;

const WORDS: &[&str] = &[
    "token",
    "refresh",
    "auth",
    "panic",
    "cargo",
    "test",
    "jwt",
    "expired",
    "database",
    "migration",
    "review",
    "handoff",
    "src/auth/token.rs",
    "TokenExpiredError",
    "deploy",
    "cache",
];

/// What to publish next; references to earlier items are by position.
#[derive(Debug, Clone)]
enum Op {
    Message(Vec<usize>),
    ToolResult(Vec<usize>, i32),
    Decision(Vec<usize>),
    Fact(usize, usize),
    Forget(usize),
    Archive(usize),
    Cite(usize),
    /// Re-publish an earlier event with the same id (after the log's dedup
    /// window): it must not be applied twice.
    Republish(usize),
    // Consolidation's verdicts and the events around them.
    Decay(usize),
    Merge(usize, usize),
    Pin(usize),
    Retrieved(usize, u32),
    Contradiction(usize, usize),
    /// Resolve an earlier contradiction (by position) with a resolution.
    Resolve(usize, u8),
    Link(usize, usize),
    Purge(usize),
    /// A handoff received (of an earlier event, as its `handoff_sent`),
    /// with a package or without (as an agent's runtime may record it).
    HandoffReceived(usize, bool),
    /// Acknowledge a handoff received earlier.
    HandoffAcknowledged(usize),
    /// Hand the task off to the reviewer (or, as the reviewer, to the coder).
    HandoffSent(Vec<usize>),
    /// Open an explicit phase named by a word (the other agent's opens a
    /// shared phase in this memory when it is shared).
    PhaseStarted(usize),
    /// Complete the innermost open phase of that name.
    PhaseCompleted(usize),
    /// A note the agent writes, tagged with its first word.
    Note(Vec<usize>),
    /// Replace a core memory block (of three) with words; one word clears it.
    Core(usize, Vec<usize>),
    /// A task (of three) changes status (of five): the current task.
    Task(usize, usize),
    /// A preference (key, value) set, seen as a constraint.
    Preference(usize, usize),
    /// Deep vectors recorded for two earlier events (the enricher's
    /// `embeddings_computed`): taken by the author's items only, once.
    Embed(usize, usize),
    /// The same, published by the other agent of the swarm.
    ByReviewer(Box<Op>),
}

fn words() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..WORDS.len(), 1..12)
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => own_op(),
        2 => own_op().prop_map(|op| Op::ByReviewer(Box::new(op))),
    ]
}

fn own_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => words().prop_map(Op::Message),
        3 => (words(), prop_oneof![Just(0), Just(1), Just(101)]).prop_map(|(w, code)| Op::ToolResult(w, code)),
        2 => words().prop_map(Op::Decision),
        2 => (0..WORDS.len(), 0..WORDS.len()).prop_map(|(s, o)| Op::Fact(s, o)),
        1 => any::<usize>().prop_map(Op::Forget),
        1 => any::<usize>().prop_map(Op::Archive),
        1 => any::<usize>().prop_map(Op::Cite),
        1 => any::<usize>().prop_map(Op::Republish),
        1 => any::<usize>().prop_map(Op::Decay),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Merge(a, b)),
        1 => any::<usize>().prop_map(Op::Pin),
        1 => (any::<usize>(), 1..5u32).prop_map(|(pick, count)| Op::Retrieved(pick, count)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Contradiction(a, b)),
        1 => (any::<usize>(), 0..4u8).prop_map(|(pick, resolution)| Op::Resolve(pick, resolution)),
        1 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Link(a, b)),
        1 => any::<usize>().prop_map(Op::Purge),
        1 => (any::<usize>(), any::<bool>()).prop_map(|(pick, packaged)| Op::HandoffReceived(pick, packaged)),
        1 => any::<usize>().prop_map(Op::HandoffAcknowledged),
        1 => words().prop_map(Op::HandoffSent),
        1 => (0..3usize).prop_map(Op::PhaseStarted),
        1 => (0..3usize).prop_map(Op::PhaseCompleted),
        1 => words().prop_map(Op::Note),
        1 => (0..3usize, words()).prop_map(|(block, w)| Op::Core(block, w)),
        1 => (0..3usize, 0..5usize).prop_map(|(task, status)| Op::Task(task, status)),
        1 => (0..4usize, 0..WORDS.len()).prop_map(|(key, value)| Op::Preference(key, value)),
        2 => (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Op::Embed(a, b)),
    ]
}

fn sentence(indexes: &[usize]) -> String {
    indexes.iter().map(|&index| WORDS[index]).collect::<Vec<_>>().join(" ")
}

fn event(counter: u64, kind: EventKind) -> Event {
    Event::new("demo", "coder", kind)
        .with_id(EventId::from_parts(1_760_000_000_000 + counter, u128::from(counter)))
        .with_ts(Timestamp::from_unix_millis(1_760_000_000_000 + counter as i64 * 1000))
        .with_task(format!("task-{}", counter % 3))
        .with_scope(if counter.is_multiple_of(2) { Scope::Shared } else { Scope::Private })
}

/// Turns operations into the log: (seq, event) pairs as a consumer sees them.
fn log_of(ops: &[Op]) -> Vec<(u64, Event)> {
    let mut log: Vec<(u64, Event)> = Vec::new();
    let mut contradictions: Vec<String> = Vec::new();
    let mut handoffs_received: Vec<EventId> = Vec::new();
    for (position, op) in ops.iter().enumerate() {
        let counter = position as u64;
        let (op, author) = match op {
            Op::ByReviewer(inner) => (&**inner, "reviewer"),
            own => (own, "coder"),
        };
        let earlier_id =
            |pick: usize| -> Option<String> { (!log.is_empty()).then(|| log[pick % log.len()].1.id.to_string()) };
        let kind = match op {
            Op::Message(w) => {
                EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: sentence(w) })
            }
            Op::ToolResult(w, code) => EventKind::ToolResultRecorded(ToolResultRecorded {
                tool: "bash".into(),
                args: JsonText::from_value(&serde_json::json!({"cmd": "cargo test"})),
                output: sentence(w),
                exit_code: Some(*code),
                duration_ms: Some(10),
            }),
            Op::Decision(w) => EventKind::DecisionMade(DecisionMade {
                title: sentence(&w[..1]),
                choice: sentence(w),
                rationale: String::new(),
                supersedes: None,
            }),
            Op::PhaseStarted(name) => EventKind::PhaseStarted(PhaseStarted {
                phase: WORDS[*name].into(),
                goal: Some(WORDS[*name + 1].into()),
            }),
            Op::Note(w) => EventKind::NoteWritten(NoteWritten { text: sentence(w), tags: vec![WORDS[w[0]].into()] }),
            Op::Core(block, w) => EventKind::CoreMemoryUpdated(CoreMemoryUpdated {
                block: ["plan", "persona", "user"][*block].into(),
                content: if w.len() == 1 { String::new() } else { sentence(w) },
            }),
            Op::Task(task, status) => EventKind::TaskUpdated(TaskUpdated {
                task_id: format!("task-{task}"),
                status: [
                    TaskStatus::Open,
                    TaskStatus::InProgress,
                    TaskStatus::Blocked,
                    TaskStatus::Done,
                    TaskStatus::Cancelled,
                ][*status],
                title: (*status == 0).then(|| format!("title of task {task}")),
                note: None,
            }),
            Op::Preference(key, value) => EventKind::PreferenceSet(PreferenceSet {
                key: ["style", "tests", "commits", "logging"][*key].into(),
                value: WORDS[*value].into(),
            }),
            Op::PhaseCompleted(name) => EventKind::PhaseCompleted(PhaseCompleted {
                phase: WORDS[*name].into(),
                phase_id: None,
                outcome: Some("done".into()),
            }),
            Op::Fact(s, o) => EventKind::FactAsserted(FactAsserted {
                subject: WORDS[*s].into(),
                predicate: "uses".into(),
                object: WORDS[*o].into(),
                confidence: 0.9,
                valid_from: None,
                valid_to: None,
            }),
            Op::Forget(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryForgotten(MemoryForgotten { item_id, reason: None }),
                None => continue,
            },
            Op::Archive(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryArchived(MemoryArchived { item_id, reason: None }),
                None => continue,
            },
            Op::Cite(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryCited(MemoryCited { item_id }),
                None => continue,
            },
            Op::Decay(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryDecayed(MemoryDecayed { item_id, score: 0.1 }),
                None => continue,
            },
            Op::Merge(a, b) => match (earlier_id(*a), earlier_id(*b)) {
                (Some(survivor), Some(merged)) => {
                    EventKind::MemoriesMerged(MemoriesMerged { survivor, merged: vec![merged], similarity: Some(0.95) })
                }
                _ => continue,
            },
            Op::Pin(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryPinned(MemoryPinned { item_id, reason: None }),
                None => continue,
            },
            Op::Retrieved(pick, count) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoriesRetrieved(MemoriesRetrieved {
                    counts: vec![RetrievalCount { item_id, count: *count }],
                }),
                None => continue,
            },
            Op::Contradiction(a, b) => match (earlier_id(*a), earlier_id(*b)) {
                (Some(a), Some(b)) => {
                    let contradiction_id = format!("contradiction-{counter}");
                    contradictions.push(contradiction_id.clone());
                    EventKind::ContradictionDetected(ContradictionDetected {
                        contradiction_id,
                        a,
                        b,
                        reason: "generated".into(),
                        rule: None,
                    })
                }
                _ => continue,
            },
            Op::Resolve(pick, resolution) => {
                if contradictions.is_empty() {
                    continue;
                }
                let resolution = [
                    ContradictionResolution::AWins,
                    ContradictionResolution::BWins,
                    ContradictionResolution::BothValid,
                    ContradictionResolution::Merged,
                ][usize::from(*resolution)];
                EventKind::ContradictionResolved(ContradictionResolved {
                    contradiction_id: contradictions[pick % contradictions.len()].clone(),
                    resolution,
                    note: None,
                })
            }
            Op::Link(a, b) => match (earlier_id(*a), earlier_id(*b)) {
                (Some(a), Some(b)) if a != b => EventKind::MemoriesLinked(MemoriesLinked {
                    links: vec![MemoryLink { a, b, reason: "generated".into() }],
                }),
                _ => continue,
            },
            Op::Purge(pick) => match earlier_id(*pick) {
                Some(item_id) => EventKind::MemoryPurged(MemoryPurged {
                    item_ids: vec![item_id],
                    before: None,
                    of_agent: None,
                    reason: None,
                }),
                None => continue,
            },
            Op::HandoffReceived(pick, packaged) => {
                if log.is_empty() {
                    continue;
                }
                let sent = &log[pick % log.len()].1;
                let package = packaged.then(|| HandoffPackage {
                    task: "task-1".into(),
                    summary: "take it from here".into(),
                    artifacts: Vec::new(),
                    decisions: Vec::new(),
                    constraints: vec!["keep the api".into()],
                    sent_seq: (pick % log.len()) as u64 + 1,
                    sent_at: sent.ts,
                    bundle: HandoffBundle { budget_tokens: 100, used_tokens: 0, items: Vec::new(), files: Vec::new() },
                });
                handoffs_received.push(sent.id);
                EventKind::HandoffReceived(HandoffReceived { from: "planner".into(), handoff_id: sent.id, package })
            }
            Op::HandoffAcknowledged(pick) => {
                if handoffs_received.is_empty() {
                    continue;
                }
                let handoff_id = handoffs_received[pick % handoffs_received.len()];
                EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id, note: None })
            }
            Op::HandoffSent(w) => EventKind::HandoffSent(HandoffSent {
                to: if author == "coder" { "reviewer" } else { "coder" }.into(),
                task: "task-1".into(),
                summary: sentence(w),
                artifacts: Vec::new(),
                decisions: Vec::new(),
                constraints: Vec::new(),
            }),
            Op::Embed(a, b) => {
                if log.is_empty() {
                    continue;
                }
                let mut picked = vec![log[a % log.len()].1.id, log[b % log.len()].1.id];
                picked.dedup();
                let deep = deep_model();
                let (model, model_hash) = EmbeddingsComputed::model_parts(deep.model_id());
                EventKind::EmbeddingsComputed(EmbeddingsComputed {
                    model: model.into(),
                    model_hash: model_hash.into(),
                    dimensions: deep.dimensions() as u32,
                    vectors: picked
                        .into_iter()
                        .map(|event_id| {
                            let vector =
                                QuantizedVector::of(&deep.embed(&format!("{event_id} {}", WORDS[*a % WORDS.len()])));
                            ComputedVector { event_id, scale: vector.scale, values: Int8Values(vector.values) }
                        })
                        .collect(),
                })
            }
            Op::ByReviewer(_) => continue,
            Op::Republish(pick) => {
                if log.is_empty() {
                    continue;
                }
                let again = log[pick % log.len()].1.clone();
                let seq = log.len() as u64 + 1;
                log.push((seq, again));
                continue;
            }
        };
        let seq = log.len() as u64 + 1;
        let mut event = event(counter, kind);
        event.agent = author.to_string();
        log.push((seq, event));
    }
    log
}

/// The deep model of the tests: hashed n-grams of other dimensions than the
/// static vectors' (no model files needed; what is checked is where the
/// recorded vectors go, not what they mean).
fn deep_model() -> std::sync::Arc<dyn Embedder> {
    std::sync::Arc::new(HashedNgramEmbedder::new(48))
}

fn config() -> MemoryConfig {
    MemoryConfig {
        working_tier_tokens: 120,
        working_item_max_tokens: 40,
        deep_embedder: Some(deep_model()),
        ..MemoryConfig::default()
    }
}

fn rebuild(log: &[(u64, Event)]) -> AgentMemory {
    rebuild_as("coder", log)
}

fn rebuild_as(agent: &str, log: &[(u64, Event)]) -> AgentMemory {
    let mut memory = AgentMemory::new("demo", agent, config()).unwrap();
    for (seq, event) in log {
        memory.apply(*seq, event).unwrap();
    }
    memory.commit().unwrap();
    memory
}

fn hit_ids(memory: &mut AgentMemory, query: &str) -> BTreeSet<String> {
    let request = SearchRequest::new(query, 10_000).with_mode(SearchMode::Bm25);
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

fn top_ids(memory: &mut AgentMemory, query: &str, k: usize, kinds: &[&'static str], mode: SearchMode) -> Vec<String> {
    let mut request = SearchRequest::new(query, k).with_mode(mode);
    request.filters.kinds = if kinds.is_empty() { KindFilter::Any } else { KindFilter::Items(kinds.to_vec()) };
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn one_by_one_with_interleaved_commits_equals_rebuild(
        ops in prop::collection::vec(op(), 1..60),
        commit_every in 1usize..7,
    ) {
        let log = log_of(&ops);
        let mut live = AgentMemory::new("demo", "coder", config()).unwrap();
        for (position, (seq, event)) in log.iter().enumerate() {
            live.apply(*seq, event).unwrap();
            if position % commit_every == 0 {
                live.commit().unwrap();
                // Queries between applies must not change state.
                let _ = mneme_projections::search(&live, &SearchRequest::new("token", 3)).unwrap();
            }
        }
        let mut rebuilt = rebuild(&log);
        prop_assert_eq!(live.digest(), rebuilt.digest());
        prop_assert_eq!(live.checkpoint(), rebuilt.checkpoint());
        for word in ["token", "cargo test", "TokenExpiredError", "src/auth/token.rs"] {
            prop_assert_eq!(hit_ids(&mut live, word), hit_ids(&mut rebuilt, word));
            // The cut at k must not depend on segment layout, ties included,
            // in every mode.
            let kinds = ["decision_made", "fact_asserted"];
            for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
                prop_assert_eq!(top_ids(&mut live, word, 3, &[], mode), top_ids(&mut rebuilt, word, 3, &[], mode));
                prop_assert_eq!(top_ids(&mut live, word, 2, &kinds, mode), top_ids(&mut rebuilt, word, 2, &kinds, mode));
            }
        }
    }

    /// The memories of a swarm hold each shared event's text, document and
    /// vector once. Two memories in one configuration, applying the log at
    /// their own pace, one restored from a snapshot part-way (after the
    /// other was dropped and rebuilt), answer exactly as each would alone,
    /// and once both are gone nothing shared is left.
    #[test]
    fn memories_sharing_the_swarms_content_answer_as_if_alone(
        ops in prop::collection::vec(op(), 1..60),
        split in 0usize..60,
    ) {
        let log = log_of(&ops);
        let split = split.min(log.len());
        let swarm = config();
        let mut reviewer = AgentMemory::new("demo", "reviewer", swarm.clone()).unwrap();
        let mut coder = AgentMemory::new("demo", "coder", swarm.clone()).unwrap();
        for (seq, event) in &log[..split] {
            coder.apply(*seq, event).unwrap();
            reviewer.apply(*seq, event).unwrap();
        }
        let snapshot = coder.to_snapshot().unwrap();
        drop(coder);
        drop(reviewer);
        let mut reviewer = AgentMemory::new("demo", "reviewer", swarm.clone()).unwrap();
        for (seq, event) in &log {
            reviewer.apply(*seq, event).unwrap();
        }
        let mut coder = AgentMemory::from_snapshot(&snapshot, "demo", "coder", swarm.clone()).unwrap();
        for (seq, event) in &log[split..] {
            coder.apply(*seq, event).unwrap();
        }
        for (memory, agent) in [(&mut coder, "coder"), (&mut reviewer, "reviewer")] {
            memory.commit().unwrap();
            let mut alone = rebuild_as(agent, &log);
            prop_assert_eq!(memory.digest(), alone.digest());
            for word in ["token", "cargo test", "TokenExpiredError", "src/auth/token.rs"] {
                prop_assert_eq!(hit_ids(memory, word), hit_ids(&mut alone, word));
                for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Hybrid] {
                    prop_assert_eq!(top_ids(memory, word, 3, &[], mode), top_ids(&mut alone, word, 3, &[], mode));
                }
            }
            let request = ContextRequest::new("token refresh", 300);
            alone.commit().unwrap();
            prop_assert_eq!(mneme_projections::context(memory, &request).unwrap(), mneme_projections::context(&alone, &request).unwrap());
        }
        drop(coder);
        drop(reviewer);
        prop_assert!(swarm.shared.is_empty());
    }

    /// Snapshots written as deltas (the head and the chunks changed since
    /// the last one) into a store restore what the log gives, wherever they
    /// were taken, also when the memory writing them was itself restored
    /// from that store part-way.
    #[test]
    fn incremental_snapshots_restore_what_the_log_gives(
        ops in prop::collection::vec(op(), 1..60),
        saves in prop::collection::vec(any::<prop::sample::Index>(), 1..6),
        restart in any::<prop::sample::Index>(),
    ) {
        let log = log_of(&ops);
        let save_points: BTreeSet<usize> = saves.iter().map(|save| save.index(log.len() + 1)).collect();
        let restart = restart.index(log.len() + 1);
        let mut store: std::collections::BTreeMap<SnapshotPart, Vec<u8>> = std::collections::BTreeMap::new();
        // The swarm's graph, saved the same way before the memory.
        let mut graph_store: std::collections::BTreeMap<SnapshotPart, Vec<u8>> = std::collections::BTreeMap::new();
        let mut graph_head = Vec::new();
        let mut head = Vec::new();
        let mut save = |memory: &mut AgentMemory, head: &mut Vec<u8>| {
            memory
                .config()
                .shared
                .save_graph("coder", memory.checkpoint(), |delta| {
                    for (part, bytes) in &delta.written {
                        graph_store.insert(*part, bytes.clone());
                    }
                    graph_store.retain(|part, _| delta.parts.contains(part));
                    graph_head = delta.head.clone();
                    Ok::<usize, ProjectionError>(0)
                })
                .unwrap();
            let delta = memory.snapshot_delta().unwrap();
            for (part, bytes) in delta.written {
                store.insert(part, bytes);
            }
            store.retain(|part, _| delta.parts.contains(part));
            *head = delta.head;
            memory.mark_snapshot_saved();
            let restored_config = config();
            restored_config.shared.restore_graph_once(|| {
                (!graph_head.is_empty()).then(|| {
                    SwarmGraph::from_snapshot_parts(&graph_head, &mut |part| {
                        graph_store.get(&part).cloned().ok_or_else(|| ProjectionError::CorruptSnapshot(part.name()))
                    })
                    .unwrap()
                })
            });
            let restored = AgentMemory::from_snapshot_parts(
                head,
                &mut |part| store.get(&part).cloned().ok_or_else(|| ProjectionError::CorruptSnapshot(part.name())),
                "demo",
                "coder",
                restored_config,
            )
            .unwrap();
            assert_eq!(restored.digest(), memory.digest(), "restored from the store");
            restored
        };
        let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
        for (position, (seq, event)) in log.iter().enumerate() {
            if save_points.contains(&position) {
                let restored = save(&mut memory, &mut head);
                if position == restart {
                    memory = restored;
                }
            }
            memory.apply(*seq, event).unwrap();
        }
        let restored = save(&mut memory, &mut head);
        prop_assert_eq!(restored.digest(), rebuild(&log).digest());
    }

    /// A restart with the text index on disk: two memories snapshot
    /// part-way, apply more (their documents past the snapshot are in the
    /// index, committed or not), the process stops; a new one opens the
    /// index, restores both from their snapshots, takes their documents
    /// over and applies the tail. Each answers what the log gives.
    #[test]
    fn a_restart_on_the_text_index_on_disk_answers_what_the_log_gives(
        ops in prop::collection::vec(op(), 1..60),
        split in any::<prop::sample::Index>(),
        beyond in 0usize..10,
        commit_beyond in any::<bool>(),
    ) {
        let log = log_of(&ops);
        let split = split.index(log.len() + 1);
        let beyond = (split + beyond).min(log.len());
        let directory = tempfile::tempdir().unwrap();
        let on_disk = || {
            let (index, discarded) = mneme_index::TextIndex::open(directory.path()).unwrap();
            assert_eq!(discarded, None);
            let config = config();
            let dimensions = config.embedder.dimensions();
            MemoryConfig { shared: mneme_projections::SharedContent::new(index, dimensions), ..config }
        };
        let agents = ["coder", "reviewer"];
        let mut snapshots = Vec::new();
        {
            let swarm = on_disk();
            let mut memories: Vec<AgentMemory> =
                agents.iter().map(|agent| AgentMemory::new("demo", agent, swarm.clone()).unwrap()).collect();
            for memory in &mut memories {
                for (seq, event) in &log[..split] {
                    memory.apply(*seq, event).unwrap();
                }
                snapshots.push(memory.to_snapshot().unwrap());
                for (seq, event) in &log[split..beyond] {
                    memory.apply(*seq, event).unwrap();
                }
                if commit_beyond {
                    memory.commit().unwrap();
                }
            }
        }
        let swarm = on_disk();
        let mut memories: Vec<AgentMemory> = agents
            .iter()
            .zip(&snapshots)
            .map(|(agent, snapshot)| AgentMemory::from_snapshot(snapshot, "demo", agent, swarm.clone()).unwrap())
            .collect();
        swarm.shared.text_index().sweep_unclaimed().unwrap();
        // Unless a purge after the snapshot replaced its documents, each
        // memory takes them over.
        let purged_beyond = log[split..beyond].iter().any(|(_, event)| matches!(event.kind, EventKind::MemoryPurged(_)));
        for (memory, agent) in memories.iter_mut().zip(agents) {
            prop_assert!(memory.reused_text_index() || purged_beyond, "{agent} indexed its items again");
            for (seq, event) in &log[split..] {
                memory.apply(*seq, event).unwrap();
            }
            memory.commit().unwrap();
            let mut alone = rebuild_as(agent, &log);
            prop_assert_eq!(memory.digest(), alone.digest());
            for word in ["token", "cargo test", "TokenExpiredError", "src/auth/token.rs"] {
                prop_assert_eq!(hit_ids(memory, word), hit_ids(&mut alone, word), "{} {}", agent, word);
                for mode in [SearchMode::Bm25, SearchMode::Hybrid] {
                    prop_assert_eq!(top_ids(memory, word, 3, &[], mode), top_ids(&mut alone, word, 3, &[], mode));
                }
            }
            let request = ContextRequest::new("token refresh", 300);
            alone.commit().unwrap();
            prop_assert_eq!(mneme_projections::context(memory, &request).unwrap(), mneme_projections::context(&alone, &request).unwrap());
        }
    }

    /// A memory holds its agent's events and the other agents' shared ones,
    /// never another agent's private event: not as an item, not in any
    /// provenance, not in the graph, not in its phases.
    #[test]
    fn no_memory_holds_another_agents_private_events(ops in prop::collection::vec(op(), 1..60)) {
        let log = log_of(&ops);
        for agent in ["coder", "reviewer"] {
            let memory = rebuild_as(agent, &log);
            let visible: BTreeSet<u64> = log
                .iter()
                .filter(|(_, event)| event.agent == agent || event.scope != Scope::Private)
                .map(|(seq, _)| *seq)
                .collect();
            for item in memory.items() {
                prop_assert!(item.is_visible_to(agent), "{agent} holds {item:?}");
                prop_assert!(item.provenance.iter().all(|reference| visible.contains(&reference.seq)));
            }
            for node in memory.graph().view().nodes() {
                prop_assert!(node.provenance.iter().all(|reference| visible.contains(&reference.seq)), "{node:?}");
            }
            for edge in memory.graph().view().edges() {
                prop_assert!(edge.provenance.iter().all(|reference| visible.contains(&reference.seq)), "{edge:?}");
            }
            // An explicit phase opened for a task takes in the other
            // agents' shared events of that task; never a private one.
            for phase in memory.phases().phases().iter().chain(memory.phases().shared_phases()) {
                prop_assert!(phase.event_seqs.iter().all(|seq| visible.contains(seq)), "{phase:?}");
            }
        }
    }

    /// Consolidation decides on the live memory; its verdicts, appended to
    /// the log, leave the live memory and a rebuild from the log (which
    /// never scans) equal, and the scan is a function of the memory alone.
    #[test]
    fn consolidating_live_equals_replaying_the_verdicts(ops in prop::collection::vec(op(), 1..60)) {
        let mut log = log_of(&ops);
        let mut live = rebuild(&log);
        let policy = ConsolidationPolicy { decay_half_life_items: 4, decay_half_life_secs: 1, keep_newest_items: 2, ..ConsolidationPolicy::default() };
        let plan = consolidate(&mneme_projections::consolidation_view(&live), &policy);
        prop_assert_eq!(&plan, &consolidate(&mneme_projections::consolidation_view(&rebuild(&log)), &policy));
        for event in plan.events(Timestamp::from_unix_millis(1_800_000_000_000), &IdKey::from_bytes([0; 32])) {
            let seq = log.len() as u64 + 1;
            live.apply(seq, &event).unwrap();
            log.push((seq, event));
        }
        live.commit().unwrap();
        prop_assert_eq!(live.digest(), rebuild(&log).digest());
    }

    #[test]
    fn snapshot_plus_tail_equals_full_replay(
        ops in prop::collection::vec(op(), 1..60),
        cut in any::<prop::sample::Index>(),
        // Tiny sections cut the items, vectors and graph into many.
        section_bytes in prop_oneof![Just(mneme_projections::SNAPSHOT_SECTION_BYTES), 1usize..2048],
    ) {
        let log = log_of(&ops);
        let cut = cut.index(log.len() + 1);
        let head = rebuild(&log[..cut]);
        let snapshot = head.to_snapshot_in_sections(section_bytes).unwrap();
        let mut restored = AgentMemory::from_snapshot(&snapshot, "demo", "coder", config()).unwrap();
        prop_assert_eq!(restored.digest(), head.digest());
        for (seq, event) in &log[cut..] {
            restored.apply(*seq, event).unwrap();
        }
        let mut full = rebuild(&log);
        prop_assert_eq!(restored.digest(), full.digest());
        prop_assert_eq!(restored.core_state(), full.core_state());
        let core = mneme_projections::CoreRequest { role: Some("implementer".into()), block_tokens: Some(8), max_blocks: None };
        prop_assert_eq!(mneme_projections::core_memory(&restored, &core), mneme_projections::core_memory(&full, &core));
        for word in ["token", "panic", "review", "TokenExpiredError src/auth/token.rs"] {
            prop_assert_eq!(hit_ids(&mut restored, word), hit_ids(&mut full, word));
            for mode in [SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
                prop_assert_eq!(top_ids(&mut restored, word, 5, &[], mode), top_ids(&mut full, word, 5, &[], mode));
            }
        }
        let request = ContextRequest::new("token refresh", 300);
        restored.commit().unwrap();
        full.commit().unwrap();
        prop_assert_eq!(mneme_projections::context(&restored, &request).unwrap().text, mneme_projections::context(&full, &request).unwrap().text);
    }

    /// Issue 16: a handoff's bundle is what its sender knew at the
    /// handoff's seq. The memory that applied the whole log, one restored
    /// from a snapshot taken anywhere and given the rest, and one that
    /// applied the log only up to the handoff all hold the same bundle, and
    /// it is the bundle of the memory as it stood then.
    #[test]
    fn a_sent_handoffs_bundle_is_what_the_sender_knew_at_its_seq(
        ops in prop::collection::vec(op(), 1..60),
        cut in any::<prop::sample::Index>(),
    ) {
        let log = log_of(&ops);
        let full = rebuild(&log);
        let cut = cut.index(log.len() + 1);
        let mut restored =
            AgentMemory::from_snapshot(&rebuild(&log[..cut]).to_snapshot().unwrap(), "demo", "coder", config()).unwrap();
        for (seq, event) in &log[cut..] {
            restored.apply(*seq, event).unwrap();
        }
        let mut seen = BTreeSet::new();
        for (position, (seq, event)) in log.iter().enumerate() {
            let EventKind::HandoffSent(sent) = &event.kind else { continue };
            if event.agent != "coder" || !seen.insert(event.id) {
                continue;
            }
            let as_of = rebuild(&log[..=position]);
            let tasks = mneme_projections::handoff_tasks(event, sent);
            let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
            let then = mneme_projections::handoff_bundle(&as_of, &tasks, &[], &sent.to, config().handoff_bundle_tokens);
            let newest = then.items.iter().flat_map(|item| &item.provenance).map(|reference| reference.seq).max();
            prop_assert!(newest.is_none_or(|newest| newest <= *seq));
            prop_assert_eq!(as_of.sent_bundle(event.id), Some((*seq, &then)));
            // A purge later on reaches the bundle too: what it erased leaves.
            let purged = |seq: u64| full.item_at(seq).is_some_and(|item| item.state == ItemState::Purged);
            // After a purge that reached the coder's memory, the files are
            // those the task items it left name (the handoff itself may be
            // the one purged), in name order, within what the items left
            // of the budget; a mention by an erased event goes with it,
            // even if another event names the file.
            let mut expected = then.clone();
            expected.items.retain(|item| !item.provenance.iter().any(|reference| purged(reference.seq)));
            let purged_items =
                |memory: &AgentMemory| memory.items().iter().filter(|item| item.state == ItemState::Purged).count();
            let purge_reached = (position + 1..log.len()).any(|at| {
                matches!(log[at].1.kind, EventKind::MemoryPurged(_))
                    && purged_items(&rebuild(&log[..=at])) > purged_items(&rebuild(&log[..at]))
            });
            if purge_reached {
                let task_items: BTreeSet<u64> = as_of
                    .items()
                    .iter()
                    .filter(|item| item.correlation_id.as_deref().is_some_and(|task| tasks.contains(&task)))
                    .filter(|item| item.is_visible_to(sent.to.trim()) && item.state.is_searchable() && !purged(item.seq))
                    .map(|item| item.seq)
                    .collect();
                let view = full.graph();
                let view = view.view();
                let named: BTreeSet<String> = view
                    .nodes()
                    .into_iter()
                    .filter(|node| node.id.starts_with("file:"))
                    .filter(|node| view.items_of(&node.id).iter().any(|seq| task_items.contains(seq)))
                    .map(|node| node.name)
                    .collect();
                let mut used: usize =
                    expected.items.iter().map(|item| mneme_index::tokens::count(&item.text)).sum();
                expected.files.clear();
                for file in named.into_iter().take(50) {
                    let tokens = mneme_index::tokens::count(&file);
                    if used + tokens > expected.budget_tokens as usize {
                        break;
                    }
                    used += tokens;
                    expected.files.push(file);
                }
                expected.used_tokens = used as u32;
            }
            prop_assert_eq!(full.sent_bundle(event.id), Some((*seq, &expected)));
            prop_assert_eq!(restored.sent_bundle(event.id), Some((*seq, &expected)));
        }
    }

    #[test]
    fn redelivery_is_refused_and_changes_nothing(
        ops in prop::collection::vec(op(), 1..40),
        redeliver in prop::collection::vec(any::<prop::sample::Index>(), 1..10),
    ) {
        let log = log_of(&ops);
        prop_assume!(!log.is_empty());
        let mut memory = rebuild(&log);
        let before = memory.digest();
        for pick in redeliver {
            let (seq, event) = &log[pick.index(log.len())];
            let refused = matches!(memory.apply(*seq, event), Err(ProjectionError::AlreadyApplied { .. }));
            prop_assert!(refused);
        }
        memory.commit().unwrap();
        prop_assert_eq!(memory.digest(), before);
    }

    #[test]
    fn context_is_never_over_budget(
        ops in prop::collection::vec(op(), 0..60),
        budget in 0usize..600,
    ) {
        let mut memory = rebuild(&log_of(&ops));
        memory.commit().unwrap();
        let context = mneme_projections::context(&memory, &ContextRequest::new("token auth cargo", budget)).unwrap();
        prop_assert!(context.tokens <= budget, "{} > {}", context.tokens, budget);
        prop_assert_eq!(context.tokens, mneme_index::tokens::count(&context.text));
    }
}

#[test]
fn a_kind_filter_returns_k_hits_of_that_kind_even_when_rare() {
    let mut log = Vec::new();
    for counter in 0..200u64 {
        let kind = if counter % 50 == 0 {
            EventKind::DecisionMade(DecisionMade {
                title: "token".into(),
                choice: "rotate the token".into(),
                rationale: String::new(),
                supersedes: None,
            })
        } else {
            EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "token token token".into() })
        };
        log.push((counter + 1, event(counter, kind)));
    }
    let mut memory = rebuild(&log);
    let mut request = SearchRequest::new("token", 4).with_mode(SearchMode::Bm25);
    request.filters.kinds = KindFilter::Items(vec!["decision_made"]);
    memory.commit().unwrap();
    let hits = mneme_projections::search(&memory, &request).unwrap();
    assert_eq!(hits.len(), 4);
    assert!(hits.iter().all(|hit| hit.kind == "decision_made"));
}

#[test]
fn a_republished_id_is_applied_once() {
    let message = event(1, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "hello".into() }));
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    memory.apply(1, &message).unwrap();
    let digest = memory.digest();
    let outcome = memory.apply(7, &message).unwrap();
    assert_eq!(outcome, mneme_projections::AppliedEvent::DuplicateId { original_seq: 1 });
    assert_eq!(memory.checkpoint(), 7);
    assert_eq!(memory.digest(), digest);
    assert_eq!(memory.item_count(), 1);
}

/// Issue 16: an id is its publisher's promise that the content is the
/// same. The same event again (even stamped with a new time) is a
/// duplicate; other content under the id is refused as a conflicting
/// duplicate, naming the first seq, and changes nothing.
#[test]
fn a_republished_id_with_other_content_is_a_conflicting_duplicate() {
    let message = event(1, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "hello".into() }));
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    memory.apply(1, &message).unwrap();
    let digest = memory.digest();
    let retried = Event { ts: Timestamp::from_unix_millis(1_800_000_000_000), ..message.clone() };
    assert_eq!(memory.apply(2, &retried).unwrap(), mneme_projections::AppliedEvent::DuplicateId { original_seq: 1 });
    let other = Event {
        kind: EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "goodbye".into() }),
        ..message.clone()
    };
    assert_eq!(
        memory.apply(3, &other).unwrap(),
        mneme_projections::AppliedEvent::ConflictingDuplicate { original_seq: 1 }
    );
    let shared = Event { scope: Scope::Shared, ..message.clone() };
    assert_eq!(
        memory.apply(4, &shared).unwrap(),
        mneme_projections::AppliedEvent::ConflictingDuplicate { original_seq: 1 }
    );
    assert_eq!(memory.checkpoint(), 4);
    assert_eq!(memory.digest(), digest);
    assert_eq!(memory.item_count(), 1);
    let text = &memory.item(&message.id.to_string()).unwrap().text;
    assert!(text.contains("hello") && !text.contains("goodbye"), "{text}");
}

#[test]
fn forgotten_items_leave_search_but_keep_provenance() {
    let message = event(
        1,
        EventKind::MessageRecorded(MessageRecorded {
            role: "user".into(),
            text: "the database migration failed".into(),
        }),
    );
    let forget =
        event(2, EventKind::MemoryForgotten(MemoryForgotten { item_id: message.id.to_string(), reason: None }));
    let mut memory = rebuild(&[(1, message.clone()), (2, forget.clone())]);
    assert!(hit_ids(&mut memory, "migration").is_empty());
    let item = memory.item(&message.id.to_string()).unwrap();
    let provenance: Vec<u64> = item.provenance.iter().map(|reference| reference.seq).collect();
    assert_eq!(provenance, vec![1, 2]);
}

#[test]
fn events_of_another_swarm_are_refused() {
    let mut stranger = event(1, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "hi".into() }));
    stranger.swarm = "other".to_string();
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    assert!(matches!(memory.apply(1, &stranger), Err(ProjectionError::WrongOwner { .. })));
    assert_eq!(memory.checkpoint(), 0);
}

#[test]
fn another_agents_shared_event_is_remembered_as_theirs_and_a_private_one_is_not_seen() {
    let message = |counter: u64, scope: Scope, text: &str| {
        let mut event =
            event(counter, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() }));
        event.agent = "reviewer".to_string();
        event.scope = scope;
        event
    };
    let shared = message(1, Scope::Shared, "the release branch is cut on friday");
    let private = message(2, Scope::Private, "my scratch note: zebra password hunter2");
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    assert_eq!(memory.apply(1, &shared).unwrap(), mneme_projections::AppliedEvent::Applied);
    assert_eq!(memory.apply(2, &private).unwrap(), mneme_projections::AppliedEvent::NotVisible);
    memory.commit().unwrap();
    assert_eq!(memory.checkpoint(), 2);
    let item = memory.item(&shared.id.to_string()).unwrap();
    assert_eq!(item.agent, "reviewer");
    assert!(item.text.starts_with("(from reviewer)"), "{}", item.text);
    assert!(memory.item(&private.id.to_string()).is_none());
    assert!(hit_ids(&mut memory, "zebra hunter2").is_empty());
    assert_eq!(hit_ids(&mut memory, "release branch").len(), 1);
    // Not a turn of the coder's, nor part of its phases.
    assert!(memory.phases().phases().is_empty());
    // A memory that admits only named agents does not take in the others.
    let config = MemoryConfig { admitted_agents: Some(["planner".to_string()].into()), ..config() };
    let mut strict = AgentMemory::new("demo", "coder", config).unwrap();
    assert_eq!(strict.apply(1, &shared).unwrap(), mneme_projections::AppliedEvent::NotVisible);
}

/// A shared item is the swarm's once, but what an agent does with it is
/// its own: the coder forgetting or purging the reviewer's message leaves
/// the reviewer (and a third agent) finding it; only when every memory
/// holding it has purged it is its text gone from the swarm.
#[test]
fn one_agents_verdicts_on_a_shared_item_are_its_own() {
    let message = |counter: u64, text: &str| {
        let mut event =
            event(counter, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() }));
        event.agent = "reviewer".to_string();
        event.scope = Scope::Shared;
        event
    };
    let verdict = |counter: u64, agent: &str, kind: EventKind| {
        let mut event = event(counter, kind);
        event.agent = agent.to_string();
        event.scope = Scope::Private;
        event
    };
    let purge = |item_id: &str| {
        EventKind::MemoryPurged(MemoryPurged {
            item_ids: vec![item_id.to_string()],
            before: None,
            of_agent: None,
            reason: None,
        })
    };
    let shared = message(1, "the staging database password rotates weekly");
    let item_id = shared.id.to_string();
    let swarm = config();
    let mut memories: Vec<AgentMemory> = ["coder", "reviewer", "planner"]
        .iter()
        .map(|agent| AgentMemory::new("demo", agent, swarm.clone()).unwrap())
        .collect();
    let forget =
        verdict(2, "coder", EventKind::MemoryForgotten(MemoryForgotten { item_id: item_id.clone(), reason: None }));
    for (seq, event) in [(1, &shared), (2, &forget)] {
        for memory in &mut memories {
            memory.apply(seq, event).unwrap();
        }
    }
    let finds = |memory: &mut AgentMemory| hit_ids(memory, "staging password").contains(&item_id);
    assert!(!finds(&mut memories[0]), "the coder forgot it");
    assert!(finds(&mut memories[1]) && finds(&mut memories[2]), "the others did not");
    assert_eq!(memories[1].item(&item_id).unwrap().state, ItemState::Active);
    // Purged by the coder and the reviewer: the planner still holds it.
    for (seq, agent) in [(3, "coder"), (4, "reviewer")] {
        let tombstone = verdict(seq, agent, purge(&item_id));
        for memory in &mut memories {
            memory.apply(seq, &tombstone).unwrap();
        }
    }
    assert!(memories[0].item(&item_id).unwrap().text.is_empty());
    assert!(!finds(&mut memories[1]));
    assert!(finds(&mut memories[2]), "the planner did not purge it");
    assert_eq!(swarm.shared.len(), 1);
    let tombstone = verdict(5, "planner", purge(&item_id));
    for memory in &mut memories {
        memory.apply(5, &tombstone).unwrap();
    }
    assert!(!finds(&mut memories[2]));
    assert!(swarm.shared.is_empty(), "no memory holds it: its text, document and vector are gone");
}

#[test]
fn a_snapshot_under_another_configuration_is_refused() {
    let memory = rebuild(&[]);
    let snapshot = memory.to_snapshot().unwrap();
    let other = MemoryConfig { working_tier_tokens: 999, ..config() };
    assert!(matches!(
        AgentMemory::from_snapshot(
            &snapshot,
            "demo",
            "coder",
            MemoryConfig {
                embedder: std::sync::Arc::new(mneme_index::embed::HashedNgramEmbedder::new(64)),
                ..config()
            }
        ),
        Err(ProjectionError::CorruptSnapshot(_))
    ));
    assert!(matches!(
        AgentMemory::from_snapshot(&snapshot, "demo", "coder", other),
        Err(ProjectionError::CorruptSnapshot(_))
    ));
    assert!(AgentMemory::from_snapshot(b"not a snapshot", "demo", "coder", config()).is_err());
}

/// A body cut short — at a section boundary or inside one — is refused,
/// never restored with part of its memory missing.
#[test]
fn a_snapshot_cut_short_is_refused() {
    let ops: Vec<Op> =
        (0..12).flat_map(|index| [Op::Message(vec![index, index + 1]), Op::Fact(index, index + 2)]).collect();
    let memory = rebuild(&log_of(&ops));
    let snapshot = memory.to_snapshot_in_sections(256).unwrap();
    assert!(AgentMemory::from_snapshot(&snapshot, "demo", "coder", config()).is_ok());
    let mut refused = 0;
    for length in 0..snapshot.len() {
        match AgentMemory::from_snapshot(&snapshot[..length], "demo", "coder", config()) {
            Err(ProjectionError::CorruptSnapshot(_)) => refused += 1,
            other => panic!("a snapshot cut at {length} of {} bytes: {:?}", snapshot.len(), other.map(|m| m.digest())),
        }
    }
    assert_eq!(refused, snapshot.len());
}

/// Memory-management events (purge, forget, pin, verdicts…) manage their
/// author's memory: another agent's, even shared, change nothing here. A
/// purge of an agent's items by time, sent to this memory, erases that
/// agent's items and none of this agent's own.
#[test]
fn another_agents_purge_changes_nothing_here_and_a_purge_by_time_erases_only_its_agents_items() {
    let message = |counter: u64, agent: &str, text: &str| {
        let mut event =
            event(counter, EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() }));
        event.agent = agent.to_string();
        event.scope = Scope::Shared;
        event
    };
    let mine = message(1, "coder", "the coder keeps the ledger notes");
    let theirs = message(2, "reviewer", "the reviewer flagged the ledger index");
    let purge_everything = |counter: u64, agent: &str, of_agent: Option<&str>| {
        let mut event = event(
            counter,
            EventKind::MemoryPurged(MemoryPurged {
                item_ids: Vec::new(),
                before: Some(mneme_events::Timestamp::from_unix_millis(i64::MAX / 2_000_000)),
                of_agent: of_agent.map(str::to_string),
                reason: None,
            }),
        );
        event.agent = agent.to_string();
        event.scope = Scope::Shared;
        event
    };
    let mut memory = AgentMemory::new("demo", "coder", config()).unwrap();
    memory.apply(1, &mine).unwrap();
    memory.apply(2, &theirs).unwrap();
    let forged = purge_everything(3, "reviewer", None);
    assert_eq!(memory.apply(3, &forged).unwrap(), mneme_projections::AppliedEvent::NotVisible);
    assert_eq!(memory.item(&mine.id.to_string()).unwrap().state, ItemState::Active);
    assert_eq!(memory.item(&theirs.id.to_string()).unwrap().state, ItemState::Active);
    let forget = {
        let mut event =
            event(4, EventKind::MemoryForgotten(MemoryForgotten { item_id: mine.id.to_string(), reason: None }));
        event.agent = "reviewer".to_string();
        event.scope = Scope::Shared;
        event
    };
    assert_eq!(memory.apply(4, &forget).unwrap(), mneme_projections::AppliedEvent::NotVisible);
    assert_eq!(memory.item(&mine.id.to_string()).unwrap().state, ItemState::Active);

    memory.apply(5, &purge_everything(5, "coder", Some("reviewer"))).unwrap();
    assert_eq!(memory.item(&theirs.id.to_string()).unwrap().state, ItemState::Purged);
    assert_eq!(memory.item(&mine.id.to_string()).unwrap().state, ItemState::Active);
}
