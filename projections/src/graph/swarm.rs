//! The swarm's fact graph: what the `shared` and `system` events say,
//! extracted once for every memory of the swarm.
//!
//! Each memory keeps a graph of its own for the rest (its agent's private
//! events, and what its verdicts change: links, closures) and reads both
//! through a [`GraphView`](super::view::GraphView) that shows only the
//! events it holds. A shared event is extracted against the shared events
//! before it, never against anyone's private ones, so it means the same to
//! every agent, and the swarm's graph is a function of the log.
//!
//! Whichever memory reaches a shared event first applies it here: every
//! memory of the swarm takes in every shared event, in log order, so the
//! one that reaches seq `s` first has seen every shared event before `s`,
//! and the graph has applied them all. Those that come later only read
//! what the event touched (for their phases). A shared event a memory
//! takes for a repeat of an id it applied never reaches its apply, and
//! those that apply it agree on what it is.

use std::collections::BTreeMap;

use mneme_events::Event;

use super::store::{EdgeIndex, FactGraph, TouchedEdge};

/// The swarm's graph and how far it has applied the log.
#[derive(Debug, Default, PartialEq)]
pub struct SwarmGraph {
    pub(crate) graph: FactGraph,
    /// The highest seq applied; events at or below it are not applied
    /// again.
    pub(crate) through: u64,
    /// Per applied seq, the edges of the noted relations it created,
    /// confirmed or closed, and whether each was still open after it: what
    /// a memory's phases note of the event (see `phases/notes.rs`), read
    /// by every memory as it applies the event, however late.
    pub(crate) touched: BTreeMap<u64, Vec<(EdgeIndex, bool)>>,
}

impl SwarmGraph {
    pub fn new() -> SwarmGraph {
        SwarmGraph::default()
    }

    /// The graph, for inspection.
    pub fn graph(&self) -> &FactGraph {
        &self.graph
    }

    /// The highest seq applied.
    pub fn through(&self) -> u64 {
        self.through
    }

    /// Applies the shared event at `seq` unless an event at or after it was
    /// applied already.
    pub(crate) fn apply(&mut self, seq: u64, event: &Event) {
        if seq <= self.through {
            return;
        }
        self.graph.apply(seq, event);
        let touched = self.graph.take_touched_edges();
        if !touched.is_empty() {
            self.touched.insert(seq, touched);
        }
        self.through = seq;
    }

    /// What the event at `seq` touched, as the memory that applied it saw.
    pub(crate) fn touched_at(&self, seq: u64) -> Vec<TouchedEdge> {
        self.touched.get(&seq).into_iter().flatten().map(|&(edge, open)| self.graph.touched_edge(edge, open)).collect()
    }
}
