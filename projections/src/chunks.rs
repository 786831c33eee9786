//! The vocabulary of snapshots, below everything that is snapshotted: which
//! chunk of a memory's, its graph's or its phases' state a part is, and
//! what a snapshot writes. The memory (`memory/`), the swarm's graph
//! (`graph/swarm.rs`), shared content and the snapshot code (`snapshot/`)
//! all speak it; none of them is below another for it.

use std::collections::BTreeSet;

use crate::error::ProjectionError;

/// Bumped whenever the snapshot layout or the meaning of its fields changes;
/// older snapshots are then refused and memory is rebuilt from the log.
pub const SNAPSHOT_FORMAT: u32 = 21;

/// The size a snapshot section is cut at: well inside rkyv's 2 GiB reach,
/// and small enough that encoding one does not double a large memory's
/// footprint at once.
pub const SNAPSHOT_SECTION_BYTES: usize = 64 << 20;

/// Items, vectors and applied ids per chunk, by seq.
pub const MEMORY_CHUNK: u64 = 4096;

/// One chunk of a memory's snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SnapshotPart {
    /// Items with seqs in `[n × MEMORY_CHUNK, (n + 1) × MEMORY_CHUNK)`.
    Items(u32),
    /// The vectors of those items.
    Vectors(u32),
    /// The ids of the events applied in that range of seqs.
    Seen(u32),
    /// Fact graph nodes `[n × 4096, (n + 1) × 4096)` by storage index.
    GraphNodes(u32),
    /// Fact graph edges, the same way.
    GraphEdges(u32),
    /// Times and ids of the graph's events, by seq.
    GraphEvents(u32),
    /// The edges whose provenance holds each seq, by seq.
    GraphEdgeProvenance(u32),
    /// The agent's own phases `[n × 64, (n + 1) × 64)` by index.
    Phases(u32),
    /// The other agents' shared phases, the same way.
    SharedPhases(u32),
    /// Of the swarm's graph (see [`crate::graph::SwarmGraph`]): what each
    /// shared event touched, by seq, [`MEMORY_CHUNK`] seqs to a chunk.
    SwarmTouched(u32),
}

impl SnapshotPart {
    /// A stable name: `items/00000003`.
    pub fn name(&self) -> String {
        let (section, index) = self.code();
        let section = match section {
            0 => "items",
            1 => "vectors",
            2 => "seen",
            3 => "graph-nodes",
            4 => "graph-edges",
            5 => "graph-events",
            6 => "phases",
            7 => "shared-phases",
            9 => "swarm-touched",
            _ => "graph-edge-provenance",
        };
        format!("{section}/{index:08x}")
    }

    pub(crate) fn code(&self) -> (u8, u32) {
        match *self {
            SnapshotPart::Items(index) => (0, index),
            SnapshotPart::Vectors(index) => (1, index),
            SnapshotPart::Seen(index) => (2, index),
            SnapshotPart::GraphNodes(index) => (3, index),
            SnapshotPart::GraphEdges(index) => (4, index),
            SnapshotPart::GraphEvents(index) => (5, index),
            SnapshotPart::Phases(index) => (6, index),
            SnapshotPart::SharedPhases(index) => (7, index),
            SnapshotPart::GraphEdgeProvenance(index) => (8, index),
            SnapshotPart::SwarmTouched(index) => (9, index),
        }
    }

    pub(crate) fn from_code((section, index): (u8, u32)) -> Result<SnapshotPart, ProjectionError> {
        Ok(match section {
            0 => SnapshotPart::Items(index),
            1 => SnapshotPart::Vectors(index),
            2 => SnapshotPart::Seen(index),
            3 => SnapshotPart::GraphNodes(index),
            4 => SnapshotPart::GraphEdges(index),
            5 => SnapshotPart::GraphEvents(index),
            6 => SnapshotPart::Phases(index),
            7 => SnapshotPart::SharedPhases(index),
            8 => SnapshotPart::GraphEdgeProvenance(index),
            9 => SnapshotPart::SwarmTouched(index),
            other => return Err(ProjectionError::CorruptSnapshot(format!("unknown snapshot section {other}"))),
        })
    }

    pub(crate) fn of_graph(part: GraphPart) -> SnapshotPart {
        match part {
            GraphPart::Nodes(index) => SnapshotPart::GraphNodes(index),
            GraphPart::Edges(index) => SnapshotPart::GraphEdges(index),
            GraphPart::Events(index) => SnapshotPart::GraphEvents(index),
            GraphPart::EdgeProvenance(index) => SnapshotPart::GraphEdgeProvenance(index),
        }
    }

    pub(crate) fn of_phases(part: PhasePart) -> SnapshotPart {
        match part {
            PhasePart::Own(index) => SnapshotPart::Phases(index),
            PhasePart::Shared(index) => SnapshotPart::SharedPhases(index),
        }
    }

    pub(crate) fn graph(&self) -> Option<GraphPart> {
        match *self {
            SnapshotPart::GraphNodes(index) => Some(GraphPart::Nodes(index)),
            SnapshotPart::GraphEdges(index) => Some(GraphPart::Edges(index)),
            SnapshotPart::GraphEvents(index) => Some(GraphPart::Events(index)),
            SnapshotPart::GraphEdgeProvenance(index) => Some(GraphPart::EdgeProvenance(index)),
            _ => None,
        }
    }

    /// The seqs a memory chunk covers.
    pub(crate) fn seqs(index: u32) -> std::ops::Range<u64> {
        u64::from(index) * MEMORY_CHUNK..(u64::from(index) + 1) * MEMORY_CHUNK
    }

    pub(crate) fn of_seq(seq: u64) -> u32 {
        (seq / MEMORY_CHUNK) as u32
    }
}

/// What a snapshot writes: the head, and the chunks that changed since the
/// last one was saved (all of them for a memory never saved).
pub struct SnapshotDelta {
    pub checkpoint: u64,
    pub head: Vec<u8>,
    /// Changed chunks and their bytes.
    pub written: Vec<(SnapshotPart, Vec<u8>)>,
    /// Every chunk of the snapshot, changed or not (as the head names
    /// them): the store drops any other it holds.
    pub parts: Vec<SnapshotPart>,
}

/// Which chunks changed since the last snapshot was saved: bookkeeping,
/// not state.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changes {
    pub(crate) parts: BTreeSet<SnapshotPart>,
    /// Everything: a memory never saved.
    pub(crate) all: bool,
}

impl Changes {
    pub(crate) fn everything() -> Changes {
        Changes { parts: BTreeSet::new(), all: true }
    }

    /// The item (and its vector) at `seq` changed.
    pub(crate) fn item(&mut self, seq: u64) {
        let index = SnapshotPart::of_seq(seq);
        self.parts.insert(SnapshotPart::Items(index));
        self.parts.insert(SnapshotPart::Vectors(index));
    }

    /// The event at `seq` was applied (its id is remembered).
    pub(crate) fn seen(&mut self, seq: u64) {
        self.parts.insert(SnapshotPart::Seen(SnapshotPart::of_seq(seq)));
    }
}

/// Which part of the graph a chunk holds, and which slice: nodes and edges
/// by storage index, event times by seq, [`GRAPH_CHUNK`] to a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum GraphPart {
    Nodes(u32),
    /// Edge records without their provenance, which is kept by seq in
    /// `EdgeProvenance` (see `graph/store.rs`, `EdgeProvenanceLog`).
    Edges(u32),
    Events(u32),
    /// Restored after the edges: keep it last.
    EdgeProvenance(u32),
}

/// Nodes, edges or seqs per chunk.
pub(crate) const GRAPH_CHUNK: u64 = 4096;

/// A snapshot chunk of phases: the agent's own or the shared ones, by
/// index, [`PHASE_CHUNK`](crate::phases::PHASE_CHUNK) to a chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum PhasePart {
    Own(u32),
    Shared(u32),
}
