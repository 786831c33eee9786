//! The example trajectory, shared by the graph test binaries.

#![allow(dead_code)] // each test binary uses part of this module

use mneme_events::{DecodeLimits, Event, decode_json};
use mneme_projections::graph::FactGraph;

const TRAJECTORY: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/trajectory.jsonl");

/// Every event of `examples/trajectory.jsonl`, in file order.
pub fn trajectory() -> Vec<Event> {
    let text = std::fs::read_to_string(TRAJECTORY).unwrap_or_else(|error| panic!("cannot read {TRAJECTORY}: {error}"));
    text.lines()
        .enumerate()
        .map(|(index, line)| {
            decode_json(line.as_bytes(), &DecodeLimits::default())
                .unwrap_or_else(|error| panic!("line {} does not decode: {error}", index + 1))
        })
        .collect()
}

/// The fact graph of the whole trajectory, seq = line number.
pub fn trajectory_graph() -> FactGraph {
    let mut graph = FactGraph::new();
    for (index, event) in trajectory().iter().enumerate() {
        graph.apply(index as u64 + 1, event);
    }
    graph
}

/// One agent's memory of the trajectory (seq = line number), with the
/// hashed embedder so that no model files are needed.
pub fn trajectory_memory(agent: &str) -> mneme_projections::AgentMemory {
    let mut memory = mneme_projections::AgentMemory::new("demo", agent, mneme_projections::MemoryConfig::default())
        .expect("a memory");
    for (index, event) in trajectory().iter().enumerate() {
        if event.agent == agent {
            memory.apply(index as u64 + 1, event).expect("applies");
        }
    }
    memory.commit().expect("commits");
    memory
}
