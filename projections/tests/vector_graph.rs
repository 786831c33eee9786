//! The vector graph tier as memories use it: past the policy's start, a
//! memory's vectors (its own and the swarm's shared ones) are searched
//! through an HNSW graph built off the write path. Searches made while the
//! graph is being built find only what the memory holds; once built, a
//! live memory, a replay of its log and a restore of its snapshot answer
//! alike (each inserts the vectors in log order, so each builds the same
//! graph); and the graph finds what an exact scan finds, or nearly.

mod common;

use common::Log;
use mneme_events::{EventKind, MemoryPurged, MessageRecorded, Scope};
use mneme_index::{AnnPolicy, TextIndex};
use mneme_projections::{AgentMemory, MemoryConfig, SearchMode, SearchRequest, SharedContent};

/// A graph from 400 vectors, fed batches of 150.
const GRAPH: AnnPolicy = AnnPolicy { graph_from: 400, batch: 150, breadth: 64 };

fn config(policy: AnnPolicy) -> MemoryConfig {
    let defaults = MemoryConfig::default();
    let dimensions = defaults.embedder.dimensions();
    MemoryConfig { shared: SharedContent::with_vector_graph(TextIndex::new().unwrap(), dimensions, policy), ..defaults }
}

const SUBJECTS: [&str; 8] = [
    "the token refresh",
    "the cache",
    "the migration",
    "the deploy",
    "the parser",
    "the queue",
    "the ledger",
    "the scheduler",
];
const VERBS: [&str; 6] =
    ["failed after", "was fixed by", "slowed down during", "was reviewed with", "timed out in", "passed with"];
const OBJECTS: [&str; 7] = [
    "the nightly run",
    "a retry loop",
    "the staging cluster",
    "the second patch",
    "a config change",
    "the load test",
    "an index rebuild",
];

fn text(n: usize) -> String {
    format!("{} {} {} (note {n}, module m{})", SUBJECTS[n % 8], VERBS[n % 6], OBJECTS[n % 7], n % 41)
}

fn said(text: String) -> EventKind {
    EventKind::MessageRecorded(MessageRecorded { role: "assistant".into(), text })
}

const QUERIES: [&str; 6] = [
    "token refresh failed in the nightly run",
    "cache timed out",
    "migration reviewed with a config change",
    "deploy passed with the load test",
    "module m17",
    "the scheduler and an index rebuild",
];

fn search(memory: &AgentMemory, query: &str, mode: SearchMode) -> Vec<u64> {
    let request = SearchRequest::new(query, 10).with_mode(mode);
    mneme_projections::search(memory, &request).unwrap().into_iter().map(|hit| hit.seq).collect()
}

fn apply_from(memory: &mut AgentMemory, log: &Log, from: u64) {
    for (seq, event) in log.events.iter().filter(|(seq, _)| *seq > from) {
        memory.apply(*seq, event).unwrap();
    }
    memory.commit().unwrap();
}

#[test]
fn live_replayed_and_restored_memories_answer_alike_through_the_graph() {
    let mut log = Log::starting_at(1_765_000_000_000);
    for n in 0..1400 {
        let scope = if n % 3 == 0 { Scope::Shared } else { Scope::Private };
        let agent = if n % 10 == 9 { "reviewer" } else { "coder" };
        log.push(agent, if agent == "reviewer" { Scope::Shared } else { scope }, None, said(text(n)));
    }
    let mut live = AgentMemory::new("demo", "coder", config(GRAPH)).unwrap();
    // Applied in steps, searched between them while graphs are built:
    // every hit is an item the memory holds.
    for step in 0..7u64 {
        let until = (step + 1) * 200;
        for (seq, event) in log.events.iter().filter(|(seq, _)| *seq > step * 200 && *seq <= until) {
            live.apply(*seq, event).unwrap();
        }
        live.commit().unwrap();
        for query in QUERIES {
            let hits = search(&live, query, SearchMode::Vector);
            assert_eq!(hits.len(), 10);
            assert!(hits.iter().all(|seq| *seq <= until && live.items().holds(*seq)), "{hits:?}");
        }
    }
    live.settle_vector_graphs();
    // Own and shared vectors are both past the start: nearly all are in
    // graphs (the tails, under a batch each, are not).
    let in_graphs = live.vectors_in_graphs();
    assert!((1400 - 2 * 150..=1400).contains(&in_graphs), "{in_graphs} vectors in graphs");

    let mut replayed = AgentMemory::new("demo", "coder", config(GRAPH)).unwrap();
    apply_from(&mut replayed, &log, 0);
    replayed.settle_vector_graphs();
    let snapshot = live.to_snapshot().unwrap();
    let mut restored = AgentMemory::from_snapshot(&snapshot, "demo", "coder", config(GRAPH)).unwrap();
    restored.settle_vector_graphs();
    let mut exact = AgentMemory::new("demo", "coder", config(AnnPolicy::EXACT)).unwrap();
    apply_from(&mut exact, &log, 0);

    let (mut found, mut wanted) = (0, 0);
    for query in QUERIES {
        for mode in [SearchMode::Vector, SearchMode::Hybrid] {
            let answer = search(&live, query, mode);
            assert_eq!(search(&replayed, query, mode), answer, "{query} ({mode:?}), replayed");
            assert_eq!(search(&restored, query, mode), answer, "{query} ({mode:?}), restored");
        }
        let through_graph = search(&live, query, SearchMode::Vector);
        let scanned = search(&exact, query, SearchMode::Vector);
        found += scanned.iter().filter(|seq| through_graph.contains(seq)).count();
        wanted += scanned.len();
    }
    assert!(found * 10 >= wanted * 9, "the graph found {found} of the scan's {wanted}");
    assert_eq!(live.digest(), replayed.digest());
    assert_eq!(live.digest(), restored.digest());
}

/// A purge reaches vectors already linked into the graph: graphs cannot
/// take a node out, so searches leave them out.
#[test]
fn purged_items_are_never_found_through_the_graph() {
    let mut log = Log::starting_at(1_765_000_000_000);
    let events: Vec<_> = (0..900).map(|n| log.push("coder", Scope::Private, None, said(text(n)))).collect();
    let mut memory = AgentMemory::new("demo", "coder", config(GRAPH)).unwrap();
    apply_from(&mut memory, &log, 0);
    memory.settle_vector_graphs();
    assert!(memory.vectors_in_graphs() >= 900 - 150);
    let purged: Vec<String> = events.iter().step_by(2).map(|event| event.id.to_string()).collect();
    let purge = MemoryPurged { item_ids: purged, before: None, of_agent: None, reason: None };
    log.push("coder", Scope::Private, None, EventKind::MemoryPurged(purge));
    apply_from(&mut memory, &log, 900);
    for query in QUERIES {
        for mode in [SearchMode::Vector, SearchMode::Hybrid] {
            let hits = search(&memory, query, mode);
            assert!(!hits.is_empty());
            assert!(hits.iter().all(|seq| seq % 2 == 0), "a purged item was found: {hits:?}");
        }
    }
}

/// Graphs saved beside a snapshot come back with it: the restored memory
/// holds them at once (nothing linked again) and answers as the live one;
/// a damaged graph file is refused and the graph built again.
#[test]
fn saved_graphs_come_back_with_the_snapshot_and_damaged_ones_are_built_again() {
    let directory = tempfile::tempdir().unwrap();
    let with_graphs = || MemoryConfig { vector_graphs: Some(directory.path().to_path_buf()), ..config(GRAPH) };
    let mut log = Log::starting_at(1_765_000_000_000);
    for n in 0..1400 {
        log.push("coder", if n % 3 == 0 { Scope::Shared } else { Scope::Private }, None, said(text(n)));
    }
    let mut live = AgentMemory::new("demo", "coder", with_graphs()).unwrap();
    apply_from(&mut live, &log, 0);
    live.settle_vector_graphs();
    let in_graphs = live.vectors_in_graphs();
    assert_eq!(live.save_vector_graphs().unwrap(), in_graphs);
    assert_eq!(live.save_vector_graphs().unwrap(), 0, "nothing grew: nothing saved again");
    for name in ["coder", "~shared"] {
        assert!(directory.path().join(format!("{name}.hnsw.graph")).is_file(), "{name} saved");
    }
    let snapshot = live.to_snapshot().unwrap();

    let restored = AgentMemory::from_snapshot(&snapshot, "demo", "coder", with_graphs()).unwrap();
    assert_eq!(restored.vectors_in_graphs(), in_graphs, "the graphs came back whole, nothing linked again");
    for query in QUERIES {
        for mode in [SearchMode::Vector, SearchMode::Hybrid] {
            assert_eq!(search(&restored, query, mode), search(&live, query, mode), "{query} ({mode:?})");
        }
    }
    drop(restored);

    // A damaged graph: refused; the restore goes on and builds it again.
    std::fs::write(directory.path().join("coder.hnsw.graph"), b"not a graph").unwrap();
    let mut rebuilt = AgentMemory::from_snapshot(&snapshot, "demo", "coder", with_graphs()).unwrap();
    assert!(rebuilt.vectors_in_graphs() < in_graphs, "the damaged graph was not taken");
    rebuilt.settle_vector_graphs();
    assert_eq!(rebuilt.vectors_in_graphs(), in_graphs);
    assert_eq!(rebuilt.digest(), live.digest());
    for query in QUERIES {
        assert!(search(&rebuilt, query, SearchMode::Vector).iter().all(|seq| live.items().holds(*seq)));
    }
}
