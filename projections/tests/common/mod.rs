//! What the projection test binaries share: the example trajectory, and a
//! swarm's log built by hand.

#![allow(dead_code)] // each test binary uses part of this module

use mneme_events::{DecodeLimits, Event, EventId, EventKind, Scope, Timestamp, decode_json};
use mneme_projections::graph::FactGraph;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use mneme_index::embed::{Embedder, MiniLmEmbedder};
use mneme_projections::{AgentMemory, MemoryConfig};

const MINILM_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../models/all-MiniLM-L6-v2");

/// all-MiniLM-L6-v2 from `scripts/fetch-model.sh`, loaded once per test
/// binary; without it a test fails with that instruction, it never skips.
pub fn minilm() -> Arc<dyn Embedder> {
    static MODEL: OnceLock<Arc<MiniLmEmbedder>> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            let read = |name: &str| {
                let path = PathBuf::from(MINILM_DIR).join(name);
                std::fs::read(&path).unwrap_or_else(|error| {
                    panic!("cannot read {} ({error}): run scripts/fetch-model.sh", path.display())
                })
            };
            let model =
                MiniLmEmbedder::from_bytes(&read("model.safetensors"), &read("tokenizer.json"), &read("config.json"))
                    .expect("all-MiniLM-L6-v2 loads");
            Arc::new(model)
        })
        .clone()
}

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

/// A swarm's log built by hand: events of any agent in swarm `demo`, the
/// seq their position, the ids and times counted from `start_ms`.
pub struct Log {
    pub events: Vec<(u64, Event)>,
    start_ms: i64,
}

impl Log {
    pub fn starting_at(start_ms: i64) -> Log {
        Log { events: Vec::new(), start_ms }
    }

    /// Appends an event of `agent` (task = correlation id) and returns it.
    pub fn push(&mut self, agent: &str, scope: Scope, task: Option<&str>, kind: EventKind) -> Event {
        let seq = self.events.len() as u64 + 1;
        let event = Event::new("demo", agent, kind)
            .with_id(EventId::from_parts(self.start_ms as u64 + seq, u128::from(seq)))
            .with_ts(Timestamp::from_unix_millis(self.start_ms + seq as i64 * 1000))
            .with_correlation(task.map(str::to_string))
            .with_scope(scope);
        self.events.push((seq, event.clone()));
        event
    }

    /// The memory of `agent` after the whole log, committed.
    pub fn memory_of(&self, agent: &str) -> AgentMemory {
        let mut memory = AgentMemory::new("demo", agent, MemoryConfig::default()).unwrap();
        for (seq, event) in &self.events {
            memory.apply(*seq, event).unwrap();
        }
        memory.commit().unwrap();
        memory
    }
}
