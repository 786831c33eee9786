//! Issue 18: the swarm's shared events are extracted once, into one graph
//! for every memory of the swarm, and each memory reads it joined with its
//! own graph, through the events it holds. What one agent forgets, purges or
//! settles of a shared item changes its own view only; the other still
//! finds it.

use mneme_events::{
    ContradictionDetected, ContradictionResolution, ContradictionResolved, Event, EventKind, FactAsserted, JsonText,
    MemoryForgotten, MemoryPurged, MessageRecorded, Scope, ToolResultRecorded,
};
use mneme_projections::graph::GraphQuery;
use mneme_projections::{AgentMemory, MemoryConfig, SearchMode, SearchRequest};

mod common;

use common::Log;

const START_MS: i64 = 1_767_000_000_000;

fn read(path: &str, output: &str) -> EventKind {
    EventKind::ToolResultRecorded(ToolResultRecorded {
        tool: "read_file".into(),
        args: JsonText::from_value(&serde_json::json!({"path": path})),
        output: output.into(),
        exit_code: Some(0),
        duration_ms: None,
    })
}

fn message(text: &str) -> EventKind {
    EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text: text.into() })
}

fn fact(subject: &str, object: &str) -> EventKind {
    EventKind::FactAsserted(FactAsserted {
        subject: subject.into(),
        predicate: "stored_in".into(),
        object: object.into(),
        confidence: 0.9,
        valid_from: None,
        valid_to: None,
    })
}

/// The coder's and the reviewer's memories in one swarm (one configuration,
/// so one swarm graph), each given the whole log. The swarm's agents are
/// listed, as `swarm.toml` lists them: a shared event leaves the swarm
/// graph once every one of them has purged it.
fn swarm(log: &Log) -> (AgentMemory, AgentMemory) {
    let admitted = ["coder", "reviewer"].into_iter().map(String::from).collect();
    let config = MemoryConfig { admitted_agents: Some(admitted), ..MemoryConfig::default() };
    let mut coder = AgentMemory::new("demo", "coder", config.clone()).unwrap();
    let mut reviewer = AgentMemory::new("demo", "reviewer", config).unwrap();
    for (seq, event) in &log.events {
        coder.apply(*seq, event).unwrap();
        reviewer.apply(*seq, event).unwrap();
    }
    coder.commit().unwrap();
    reviewer.commit().unwrap();
    (coder, reviewer)
}

fn items_of(memory: &AgentMemory, entity: &str) -> Vec<u64> {
    memory.graph().view().items_of(entity)
}

fn graph_hits(memory: &mut AgentMemory, query: &str) -> Vec<String> {
    let request = SearchRequest::new(query, 10).with_mode(SearchMode::Graph);
    memory.commit().unwrap();
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

fn push_by(log: &mut Log, agent: &str, scope: Scope, kind: EventKind) -> Event {
    log.push(agent, scope, None, kind)
}

#[test]
fn shared_events_are_extracted_once_and_private_ones_stay_in_their_memory() {
    let mut log = Log::starting_at(START_MS);
    push_by(&mut log, "coder", Scope::Shared, read("src/ledger.rs", "fn post_entry() {}"));
    push_by(&mut log, "coder", Scope::Private, read("src/secret_plan.rs", "fn hidden() {}"));
    push_by(&mut log, "reviewer", Scope::Shared, message("src/ledger.rs looks right to me"));
    let (coder, reviewer) = swarm(&log);

    // One swarm graph, holding the shared file once, and nothing private.
    let shared = coder.config().shared.graph();
    assert!(shared.graph().node("file:src/ledger.rs").is_some());
    assert!(shared.graph().node("file:src/secret_plan.rs").is_none(), "a private event reached the swarm graph");
    assert_eq!(shared.through(), 3, "the swarm graph took every record");
    drop(shared);
    // The coder's own graph holds only its private event.
    assert!(coder.own_graph().node("file:src/secret_plan.rs").is_some());
    assert!(coder.own_graph().node("file:src/ledger.rs").is_none(), "a shared event was extracted twice");

    // Each memory sees the shared file with both agents' events; the
    // private file only in the coder's.
    assert_eq!(items_of(&coder, "file:src/ledger.rs"), vec![1, 3]);
    assert_eq!(items_of(&reviewer, "file:src/ledger.rs"), vec![1, 3]);
    assert!(coder.graph().view().node("file:src/secret_plan.rs").is_some());
    assert!(reviewer.graph().view().node("file:src/secret_plan.rs").is_none(), "the reviewer sees a private file");
    assert!(reviewer.neighbourhood(&GraphQuery::new("src/secret_plan.rs", 2)).is_none());
    // A walk crosses from the coder's own graph to the swarm's at an
    // entity both hold: the coder's agent node links its private read and
    // its shared one.
    let around = coder.neighbourhood(&GraphQuery::new("agent:coder", 1)).unwrap();
    let files: Vec<&str> =
        around.nodes.iter().map(|node| node.id.as_str()).filter(|id| id.starts_with("file:")).collect();
    assert_eq!(files, vec!["file:src/ledger.rs", "file:src/secret_plan.rs"]);
}

#[test]
fn an_agent_that_forgets_or_purges_a_shared_item_changes_its_own_view_only() {
    let mut log = Log::starting_at(START_MS);
    let read_event = push_by(&mut log, "coder", Scope::Shared, read("src/ledger.rs", "fn post_entry() {}"));
    let note = push_by(&mut log, "coder", Scope::Shared, message("post_entry in src/payments.rs calls the ledger"));
    // The coder forgets its note and purges its read; the reviewer does
    // neither.
    push_by(
        &mut log,
        "coder",
        Scope::Private,
        EventKind::MemoryForgotten(MemoryForgotten { item_id: note.id.to_string(), reason: None }),
    );
    push_by(
        &mut log,
        "coder",
        Scope::Private,
        EventKind::MemoryPurged(MemoryPurged {
            item_ids: vec![read_event.id.to_string()],
            before: None,
            of_agent: None,
            reason: Some("test".into()),
        }),
    );
    let (mut coder, mut reviewer) = swarm(&log);

    // The reviewer still finds both, by graph and by text.
    assert_eq!(items_of(&reviewer, "file:src/ledger.rs"), vec![1]);
    assert!(graph_hits(&mut reviewer, "src/payments.rs").contains(&note.id.to_string()));
    reviewer.commit().unwrap();
    let text_hits: Vec<String> =
        mneme_projections::search(&reviewer, &SearchRequest::new("post_entry ledger", 10).with_mode(SearchMode::Bm25))
            .unwrap()
            .into_iter()
            .map(|hit| hit.item_id)
            .collect();
    assert!(text_hits.contains(&note.id.to_string()) && text_hits.contains(&read_event.id.to_string()));

    // The coder: the purged read is out of its graph (the file with it,
    // nothing else names it); the forgotten note is not searchable.
    assert!(items_of(&coder, "file:src/ledger.rs").is_empty());
    assert!(coder.graph().view().node("file:src/ledger.rs").is_none());
    assert!(!graph_hits(&mut coder, "src/payments.rs").contains(&note.id.to_string()));
    // The swarm graph keeps the read while the reviewer has not purged it.
    assert!(coder.config().shared.graph().graph().node("file:src/ledger.rs").is_some());
}

#[test]
fn a_shared_event_leaves_the_swarm_graph_once_every_agent_purged_it() {
    let mut log = Log::starting_at(START_MS);
    let secret = push_by(&mut log, "coder", Scope::Shared, read("vault/zq_key_4411.pem", "-----BEGIN KEY-----"));
    push_by(&mut log, "reviewer", Scope::Shared, message("reviewed the rotation"));
    let purge = |log: &mut Log, agent: &str| {
        push_by(
            log,
            agent,
            Scope::Private,
            EventKind::MemoryPurged(MemoryPurged {
                item_ids: vec![secret.id.to_string()],
                before: None,
                of_agent: None,
                reason: Some("erasure request".into()),
            }),
        );
    };
    purge(&mut log, "coder");
    let (coder, _reviewer) = swarm(&log);
    assert!(coder.config().shared.graph().graph().node("file:vault/zq_key_4411.pem").is_some());
    purge(&mut log, "reviewer");
    let (coder, reviewer) = swarm(&log);
    let shared = coder.config().shared.graph();
    assert!(shared.graph().node("file:vault/zq_key_4411.pem").is_none(), "every agent purged it");
    drop(shared);
    assert!(reviewer.graph().view().node("file:vault/zq_key_4411.pem").is_none());
}

#[test]
fn a_resolved_contradiction_ends_a_shared_fact_in_its_agents_view_only() {
    let mut log = Log::starting_at(START_MS);
    let postgres = push_by(&mut log, "coder", Scope::Shared, fact("ledger", "postgres"));
    let sqlite = push_by(&mut log, "reviewer", Scope::Shared, fact("ledger", "sqlite"));
    push_by(
        &mut log,
        "coder",
        Scope::Private,
        EventKind::ContradictionDetected(ContradictionDetected {
            contradiction_id: "c1".into(),
            a: postgres.id.to_string(),
            b: sqlite.id.to_string(),
            reason: "ledger stored_in: postgres vs sqlite".into(),
            rule: None,
        }),
    );
    push_by(
        &mut log,
        "coder",
        Scope::Private,
        EventKind::ContradictionResolved(ContradictionResolved {
            contradiction_id: "c1".into(),
            resolution: ContradictionResolution::BWins,
            note: None,
        }),
    );
    let (coder, reviewer) = swarm(&log);
    let edge = |memory: &AgentMemory| {
        memory
            .graph()
            .view()
            .edges_of("concept:ledger")
            .into_iter()
            .find(|edge| edge.relation == "stored_in" && edge.to == "concept:postgres")
            .unwrap()
    };
    assert!(edge(&coder).valid_to.is_some(), "the coder's resolution ended the fact in its view");
    assert!(edge(&reviewer).valid_to.is_none(), "the reviewer settled nothing");
    assert_eq!(mneme_projections::superseded_by(&coder, &postgres.id.to_string()), Some(sqlite.id.to_string()));
    assert_eq!(mneme_projections::superseded_by(&reviewer, &postgres.id.to_string()), None);
}
