//! The fact graph in time: supersession and retraction close validity
//! instead of deleting, `as_of` queries see the graph as it held then,
//! provenance names the events behind every node and edge, and snapshots,
//! digests and rebuilds agree.

use mneme_events::{
    DecisionMade, Event, EventId, EventKind, FactAsserted, FactRetracted, JsonText, Scope, TaskStatus, TaskUpdated,
    Timestamp, ToolResultRecorded,
};
use mneme_projections::ProjectionError;
use mneme_projections::graph::{Edge, FactGraph, GRAPH_SNAPSHOT_FORMAT, GraphQuery, MAX_HOPS};
use serde_json::json;

mod common;

use common::{trajectory, trajectory_graph};

/// 2026-01-06T09:00:00Z.
const START_MS: i64 = 1_767_690_000_000;

fn at(second: u64) -> Timestamp {
    Timestamp::from_unix_millis(START_MS + second as i64 * 1000)
}

fn id(seq: u64) -> EventId {
    EventId::from_parts(START_MS as u64 + seq * 1000, u128::from(seq))
}

/// The event at `seq`, published at second `seq`.
fn event(seq: u64, agent: &str, kind: EventKind) -> Event {
    Event::new("demo", agent, kind).with_id(id(seq)).with_ts(at(seq)).with_scope(Scope::Shared)
}

fn decision(title: &str, choice: &str, supersedes: Option<EventId>) -> EventKind {
    EventKind::DecisionMade(DecisionMade {
        title: title.to_string(),
        choice: choice.to_string(),
        rationale: String::new(),
        supersedes,
    })
}

fn fact(subject: &str, predicate: &str, object: &str, confidence: f32) -> FactAsserted {
    FactAsserted {
        subject: subject.to_string(),
        predicate: predicate.to_string(),
        object: object.to_string(),
        confidence,
        valid_from: None,
        valid_to: None,
    }
}

fn retraction(subject: &str, predicate: &str, object: &str, valid_to: Option<Timestamp>) -> EventKind {
    EventKind::FactRetracted(FactRetracted {
        subject: subject.to_string(),
        predicate: predicate.to_string(),
        object: object.to_string(),
        valid_to,
        reason: None,
    })
}

fn tool(name: &str, args: serde_json::Value, output: &str, exit_code: i32) -> EventKind {
    EventKind::ToolResultRecorded(ToolResultRecorded {
        tool: name.to_string(),
        args: JsonText::from_value(&args),
        output: output.to_string(),
        exit_code: Some(exit_code),
        duration_ms: None,
    })
}

fn apply_all(graph: &mut FactGraph, events: &[(u64, &str, EventKind)]) {
    for (seq, agent, kind) in events {
        graph.apply(*seq, &event(*seq, agent, kind.clone()));
    }
}

fn edge(graph: &FactGraph, id: &str) -> Edge {
    graph.edges().into_iter().find(|edge| edge.id == id).unwrap_or_else(|| panic!("no edge {id}"))
}

fn seqs(provenance: &[mneme_projections::ProvenanceRef]) -> Vec<u64> {
    provenance.iter().map(|reference| reference.seq).collect()
}

fn ids<T>(items: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    items.iter().map(|item| id(item).to_string()).collect()
}

fn query(entity: &str, hops: usize, relations: &[&str], as_of: Option<Timestamp>) -> GraphQuery {
    GraphQuery {
        entity: entity.to_string(),
        hops,
        relations: relations.iter().map(|relation| relation.to_string()).collect(),
        as_of,
    }
}

// ------------------------------------------------------------ decisions

fn superseded_decisions() -> FactGraph {
    let mut graph = FactGraph::new();
    apply_all(
        &mut graph,
        &[
            (10, "planner", decision("Refresh token storage", "Redis", None)),
            (20, "planner", decision("Refresh token storage", "Postgres table refresh_tokens", Some(id(10)))),
        ],
    );
    graph
}

#[test]
fn a_superseded_decision_is_kept_and_closed() {
    let graph = superseded_decisions();
    let old = graph.node(&format!("decision:{}", id(10))).expect("old decision kept");
    let new = graph.node(&format!("decision:{}", id(20))).expect("new decision");
    assert_eq!((old.valid_from, old.valid_to), (Some(at(10)), Some(at(20))));
    assert_eq!((new.valid_from, new.valid_to), (Some(at(20)), None));
    assert_eq!(old.attributes["choice"], "Redis");
    assert_eq!(seqs(&old.provenance), vec![10, 20], "the superseding event changed it");
    assert_eq!(seqs(&new.provenance), vec![20]);
    let supersedes = edge(&graph, &format!("decision:{} -supersedes-> decision:{}", id(20), id(10)));
    assert_eq!((supersedes.valid_from, supersedes.recorded_seq), (Some(at(20)), 20));
}

#[test]
fn as_of_before_the_change_sees_the_old_decision_and_after_sees_the_new() {
    let graph = superseded_decisions();
    let decided = |as_of: Option<Timestamp>| {
        let subgraph = graph.neighbourhood(&query("agent:planner", 1, &["decided"], as_of)).expect("known agent");
        ids(&subgraph.edges, |edge| &edge.to)
    };
    let old = format!("decision:{}", id(10));
    let new = format!("decision:{}", id(20));
    assert_eq!(decided(Some(at(15))), vec![old.clone()]);
    assert_eq!(decided(Some(at(20))), vec![new.clone()]);
    assert_eq!(decided(Some(at(5))), Vec::<String>::new());
    assert_eq!(decided(None), vec![old.clone(), new.clone()], "all of history without as_of");
    let history = graph.neighbourhood(&query(&new, 1, &[], None)).expect("known decision");
    assert!(history.edges.iter().any(|edge| edge.relation == "supersedes" && edge.to == old));
    // A name resolves to an entity: the newest of the decisions so titled.
    assert_eq!(graph.neighbourhood(&query("Refresh token storage", 0, &[], None)).expect("by title").center, new);
}

// ----------------------------------------------------------------- facts

#[test]
fn a_retraction_closes_the_fact_and_a_new_assertion_opens_another_interval() {
    let mut graph = FactGraph::new();
    let mut asserted = fact("TokenExpiredError", "raised by", "TokenIssuer::verify_signature", 0.6);
    asserted.valid_from = Some(at(1));
    apply_all(
        &mut graph,
        &[
            (10, "coder", EventKind::FactAsserted(asserted)),
            (20, "reviewer", retraction("TokenExpiredError", "raised_by", "TokenIssuer::verify_signature", None)),
            (
                30,
                "coder",
                EventKind::FactAsserted(fact("TokenExpiredError", "raised_by", "TokenIssuer::verify_signature", 0.9)),
            ),
        ],
    );
    let first = edge(&graph, "error:TokenExpiredError -raised_by-> symbol:TokenIssuer::verify_signature");
    assert_eq!((first.valid_from, first.valid_to), (Some(at(1)), Some(at(20))));
    assert_eq!((first.confidence, first.recorded_seq), (Some(0.6), 10));
    assert_eq!(seqs(&first.provenance), vec![10, 20]);
    let second = edge(&graph, "error:TokenExpiredError -raised_by-> symbol:TokenIssuer::verify_signature#2");
    assert_eq!((second.valid_from, second.valid_to, second.confidence), (Some(at(30)), None, Some(0.9)));

    let raised_by = |as_of| {
        let subgraph = graph.neighbourhood(&query("TokenExpiredError", 1, &["raised_by"], Some(as_of))).expect("known");
        ids(&subgraph.edges, |edge| &edge.id)
    };
    assert_eq!(raised_by(at(15)), vec!["error:TokenExpiredError -raised_by-> symbol:TokenIssuer::verify_signature"]);
    assert!(raised_by(at(25)).is_empty());
    assert_eq!(raised_by(at(35)), vec!["error:TokenExpiredError -raised_by-> symbol:TokenIssuer::verify_signature#2"]);
}

#[test]
fn a_retraction_can_date_the_end_and_only_retractions_close_facts() {
    let mut graph = FactGraph::new();
    apply_all(
        &mut graph,
        &[
            (10, "coder", EventKind::FactAsserted(fact("auth-service", "access token TTL seconds", "900", 1.0))),
            // A different object contradicts, but does not close, the first.
            (20, "coder", EventKind::FactAsserted(fact("auth-service", "access_token_ttl_seconds", "600", 1.0))),
            (30, "coder", retraction("auth-service", "access_token_ttl_seconds", "900", Some(at(18)))),
            // Retracting a fact the graph never saw changes nothing.
            (40, "coder", retraction("auth-service", "access_token_ttl_seconds", "1200", None)),
        ],
    );
    let old = edge(&graph, "concept:auth-service -access_token_ttl_seconds-> concept:900");
    let new = edge(&graph, "concept:auth-service -access_token_ttl_seconds-> concept:600");
    assert_eq!((old.valid_from, old.valid_to), (Some(at(10)), Some(at(18))));
    assert_eq!((new.valid_from, new.valid_to), (Some(at(20)), None));
    assert!(graph.node("concept:1200").is_none());
    assert_eq!(seqs(&edge(&graph, "agent:coder -asserted-> concept:auth-service").provenance), vec![10, 20]);
}

// ------------------------------------------------------------ provenance

#[test]
fn nodes_and_edges_carry_the_seqs_that_made_and_changed_them() {
    let mut graph = FactGraph::new();
    let update = |status, note: Option<&str>| {
        EventKind::TaskUpdated(TaskUpdated {
            task_id: "task-214-review".to_string(),
            status,
            title: Some("Review the refresh-token change".to_string()),
            note: note.map(str::to_string),
        })
    };
    apply_all(
        &mut graph,
        &[
            (1, "planner", update(TaskStatus::Open, None)),
            (
                2,
                "coder",
                tool("read_file", json!({"path": "src/auth/token.rs"}), "pub fn refresh_access_token() {}", 0),
            ),
            (3, "reviewer", update(TaskStatus::Blocked, Some("refresh token is logged"))),
            (
                4,
                "coder",
                tool("read_file", json!({"path": "src/auth/token.rs"}), "pub fn refresh_access_token() {}", 0),
            ),
            (5, "reviewer", update(TaskStatus::Done, Some("approved"))),
        ],
    );
    let task = graph.node("task:task-214-review").expect("task");
    assert_eq!(task.attributes["status"], "done");
    assert_eq!(task.attributes["note"], "approved");
    assert_eq!(seqs(&task.provenance), vec![1, 3, 5]);
    assert_eq!(task.provenance[1].event_id, id(3));
    let file = graph.node("file:src/auth/token.rs").expect("file");
    assert_eq!(seqs(&file.provenance), vec![2], "reading a file does not change it");
    let reads = edge(&graph, "agent:coder -reads-> file:src/auth/token.rs");
    assert_eq!((seqs(&reads.provenance), reads.recorded_seq), (vec![2, 4], 2));
    assert_eq!(reads.provenance[1].event_id, id(4));
    let defines = edge(&graph, "file:src/auth/token.rs -defines-> symbol:refresh_access_token");
    assert_eq!(seqs(&defines.provenance), vec![2, 4]);
    assert_eq!(graph.items_of("file:src/auth/token.rs"), vec![2, 4]);
    assert_eq!(graph.items_of("task:task-214-review"), vec![1, 3, 5]);
    assert!(graph.items_of("file:unknown.rs").is_empty());
}

#[test]
fn items_near_ranks_closer_and_more_direct_first_and_honours_as_of() {
    let mut graph = FactGraph::new();
    apply_all(
        &mut graph,
        &[
            (
                1,
                "coder",
                tool("read_file", json!({"path": "src/auth/token.rs"}), "pub fn refresh_access_token() {}", 0),
            ),
            (
                2,
                "coder",
                EventKind::MessageRecorded(mneme_events::MessageRecorded {
                    role: "coder".to_string(),
                    text: "refresh_access_token returns the old token".to_string(),
                }),
            ),
            (
                3,
                "coder",
                tool(
                    "grep",
                    json!({"pattern": "refresh_access_token"}),
                    "src/routes/session.rs:47:    issuer.refresh_access_token(&store)",
                    0,
                ),
            ),
            (
                4,
                "coder",
                EventKind::MessageRecorded(mneme_events::MessageRecorded {
                    role: "coder".to_string(),
                    text: "src/routes/session.rs needs a test".to_string(),
                }),
            ),
        ],
    );
    let near = graph.items_near(&["file:src/auth/token.rs".to_string()], 2, None);
    let order: Vec<u64> = near.iter().map(|(seq, _)| *seq).collect();
    // 1 made the file (distance 0); 2 mentions and 3 relates the symbol the
    // file defines (distance 1: related before mentioned); 4 mentions
    // session.rs, which references that symbol (distance 2).
    assert_eq!(order, vec![1, 3, 2, 4]);
    assert!(near.windows(2).all(|pair| pair[0].1 >= pair[1].1), "{near:?}");
    assert_eq!(graph.items_near(&["file:src/auth/token.rs".to_string()], 0, None), vec![(1, 1.0)]);
    let earlier: Vec<u64> =
        graph.items_near(&["file:src/auth/token.rs".to_string()], 2, Some(at(2))).iter().map(|(seq, _)| *seq).collect();
    assert_eq!(earlier, vec![1, 2]);
    assert!(graph.items_near(&["file:nowhere.rs".to_string()], 2, None).is_empty());
}

#[test]
fn neighbourhoods_resolve_names_and_clamp_hops() {
    let graph = trajectory_graph();
    assert!(graph.neighbourhood(&GraphQuery::new("file:nowhere.rs", 2)).is_none());
    for (name, expected) in [
        ("src/auth/token.rs", "file:src/auth/token.rs"),
        ("./src/auth/token.rs", "file:src/auth/token.rs"),
        ("token.rs", "file:src/auth/token.rs"),
        ("coder", "agent:coder"),
        ("refresh_access_token", "symbol:refresh_access_token"),
        ("Auth-Service", "concept:auth-service"),
    ] {
        assert_eq!(graph.neighbourhood(&GraphQuery::new(name, 0)).expect(name).center, expected, "{name}");
    }
    let deep = graph.neighbourhood(&GraphQuery::new("file:src/auth/token.rs", 50)).expect("known");
    let clamped = graph.neighbourhood(&GraphQuery::new("file:src/auth/token.rs", MAX_HOPS)).expect("known");
    assert_eq!(deep, clamped);
    let one_hop = graph.neighbourhood(&GraphQuery::new("file:src/auth/token.rs", 1)).expect("known");
    assert!(one_hop.edges.iter().all(|edge| edge.from == one_hop.center || edge.to == one_hop.center));
    assert!(one_hop.nodes.windows(2).all(|pair| pair[0].id < pair[1].id));
    assert!(one_hop.edges.windows(2).all(|pair| pair[0].id < pair[1].id));
}

// ------------------------------------------------- snapshots and rebuilds

#[test]
fn applying_one_by_one_equals_a_rebuild_and_a_snapshot_plus_the_tail() {
    let events = trajectory();
    let live = trajectory_graph();
    let rebuilt = trajectory_graph();
    assert_eq!(live.digest(), rebuilt.digest());
    assert_eq!(live.edges(), rebuilt.edges());

    for cut in [1, 157, 286, events.len() - 1] {
        let mut head = FactGraph::new();
        for (index, event) in events[..cut].iter().enumerate() {
            head.apply(index as u64 + 1, event);
        }
        let mut restored = FactGraph::from_snapshot(&head.to_snapshot().expect("encodes")).expect("decodes");
        assert_eq!(restored.digest(), head.digest(), "restored at {cut}");
        assert!(restored == head, "restored at {cut}: derived indexes differ");
        for (index, event) in events.iter().enumerate().skip(cut) {
            restored.apply(index as u64 + 1, event);
        }
        assert_eq!(restored.digest(), live.digest(), "snapshot at {cut} plus the tail");
        assert!(restored == live, "snapshot at {cut} plus the tail: state differs");
        assert_eq!(restored.nodes(), live.nodes());
        assert_eq!(
            restored.items_near(&["file:src/auth/token.rs".to_string()], 2, None),
            live.items_near(&["file:src/auth/token.rs".to_string()], 2, None)
        );
    }
}

#[test]
fn the_trajectory_is_bi_temporal() {
    let graph = trajectory_graph();
    let storage = graph.neighbourhood(&query("agent:planner", 1, &["decided"], None)).expect("planner");
    let storage: Vec<&Edge> =
        storage.edges.iter().filter(|edge| edge.to.contains("01KE993FEYVR4346G49V6J4037")).collect();
    assert_eq!(storage.len(), 1, "the Redis decision is kept");
    let redis = graph.node("decision:01KE993FEYVR4346G49V6J4037").expect("Redis decision");
    let postgres = graph.node("decision:01KE99G5EWXQ4J8Z88DSDYM055").expect("Postgres decision");
    assert_eq!(redis.valid_to, postgres.valid_from);
    let retracted = edge(&graph, "error:TokenExpiredError -raised_by-> symbol:TokenIssuer::verify_signature");
    assert_eq!(seqs(&retracted.provenance), vec![77, 363]);
    assert!(retracted.valid_to.is_some());
    let ttl = graph.neighbourhood(&query("auth-service", 1, &["access_token_ttl_seconds"], None)).expect("known");
    assert_eq!(
        ids(&ttl.edges, |edge| &edge.to),
        vec!["concept:600", "concept:900"],
        "contradiction left to consolidation"
    );
}

#[test]
fn snapshots_of_another_format_or_garbage_are_refused() {
    let graph = superseded_decisions();
    let bytes = graph.to_snapshot().expect("encodes");
    let restored = FactGraph::from_snapshot(&bytes).expect("decodes");
    assert_eq!(restored, graph);
    assert_eq!(
        FactGraph::new().digest(),
        FactGraph::from_snapshot(&FactGraph::new().to_snapshot().unwrap()).unwrap().digest()
    );

    let mut other_format = bytes.clone();
    other_format[8..12].copy_from_slice(&(GRAPH_SNAPSHOT_FORMAT + 1).to_le_bytes());
    let mut truncated = bytes.clone();
    truncated.truncate(bytes.len() / 2);
    for (what, bad) in [
        ("format", other_format),
        ("truncated", truncated),
        ("empty", Vec::new()),
        ("memory snapshot", b"not a graph".to_vec()),
    ] {
        match FactGraph::from_snapshot(&bad) {
            Err(ProjectionError::CorruptSnapshot(_)) => {}
            other => panic!("{what}: expected CorruptSnapshot, got {:?}", other.map(|graph| graph.digest())),
        }
    }
}

#[test]
fn the_digest_changes_with_content_not_with_storage_order() {
    let graph = superseded_decisions();
    let mut changed = superseded_decisions();
    changed.apply(30, &event(30, "planner", decision("Access token lifetime", "600 s", None)));
    assert_ne!(graph.digest(), changed.digest());
    assert!(graph.digest().starts_with("sha256:"));
    assert_eq!(graph.digest().len(), "sha256:".len() + 64);
}
