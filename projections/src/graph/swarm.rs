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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mneme_events::{Event, EventId, EventKind, MemoryPurged, Timestamp};

use super::model::EntityKind;
use super::snapshot::{decode, encode};
use super::store::{EdgeIndex, FactGraph, TouchedEdge};
use crate::chunks::{GraphPart, MEMORY_CHUNK, SnapshotDelta, SnapshotPart};
use crate::error::ProjectionError;

/// Bumped whenever the swarm graph's snapshot layout changes (the graph's
/// own format is checked apart); other formats are refused and the swarm's
/// memories are rebuilt from the log.
pub const SWARM_GRAPH_FORMAT: u32 = 1;

/// The swarm graph's snapshot head: everything but the graph's chunks and
/// the touched edges, which it names.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct SwarmGraphHead {
    format: u32,
    through: u64,
    covers: u64,
    graph_head: Vec<u8>,
    authors: Vec<String>,
    published: Vec<bool>,
    pending_purges: Vec<(u64, Vec<u32>)>,
    merged_into: Vec<(u32, u64, Vec<u64>)>,
    /// (seq, [(relation, from kind, from name, to kind, to name, open)]).
    retained: Vec<(u64, Vec<RetainedEdge>)>,
    parts: Vec<(u8, u32)>,
}

/// The shared events of one chunk of seqs: (seq, id, author, time in
/// nanoseconds, the edges it touched and whether each stayed open).
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct EventChunk(Vec<EventRecord>);

/// (seq, id, author, time in nanoseconds, touched edges and whether each
/// stayed open).
type EventRecord = (u64, u128, u32, i64, Vec<(u32, bool)>);

/// A touched edge by name: (relation, from kind, from name, to kind, to
/// name, open).
type RetainedEdge = (String, String, String, String, String, bool);

/// The swarm graph's chunks of touched edges changed since it was saved:
/// bookkeeping, not state.
#[derive(Debug, Default, Clone)]
struct TouchedChanges {
    chunks: BTreeSet<u32>,
    all: bool,
}

impl PartialEq for TouchedChanges {
    fn eq(&self, _: &TouchedChanges) -> bool {
        true
    }
}

/// The swarm's graph and how far it has applied the log.
#[derive(Debug, Default, PartialEq)]
pub struct SwarmGraph {
    pub(super) graph: FactGraph,
    /// The highest seq applied; events at or below it are not applied
    /// again.
    pub(super) through: u64,
    /// Per applied seq, the edges of the noted relations it created,
    /// confirmed or closed, and whether each was still open after it: what
    /// a memory's phases note of the event (see `phases/notes.rs`), read
    /// by every memory as it applies the event, however late.
    pub(super) touched: BTreeMap<u64, Vec<(EdgeIndex, bool)>>,
    /// Every shared event applied, by seq: its id, its author (an index
    /// into `authors`) and its time, for repeats of an id and for purges.
    events: BTreeMap<u64, (EventId, u32, Timestamp)>,
    by_id: HashMap<EventId, u64>,
    /// Agents by index: those whose shared events the graph took (its
    /// authors) and those whose verdicts it read.
    authors: Vec<String>,
    /// Whether each agent of `authors` published a shared event here.
    published: Vec<bool>,
    /// Shared events purged by some of their memories, with the agents
    /// whose memories did: erased once every author's has.
    pending_purges: BTreeMap<u64, BTreeSet<u32>>,
    /// Per agent, the shared events its memory merged into each survivor
    /// (`memories_merged`): a purge of the survivor reaches them too.
    merged_into: BTreeMap<(u32, u64), BTreeSet<u64>>,
    /// What erased events touched, by name, kept while some memory of the
    /// swarm may still apply them (one behind, or restarting from a
    /// snapshot before them): its phases must note them as the others
    /// did before the erasure. Let go once every memory's snapshot is past
    /// them (see [`SwarmGraph::release_retained`]).
    retained: BTreeMap<u64, Vec<TouchedEdge>>,
    /// Every shared event at or below this seq is applied: the highest
    /// checkpoint of a memory that saved the graph (which had then applied
    /// every shared event up to its checkpoint), or `through`. A memory
    /// restored at a later checkpoint cannot use this graph.
    covers: u64,
    touched_changes: TouchedChanges,
    saved: SavedCovers,
}

/// What the last saved snapshot of the swarm graph covers (`None`: none
/// is known to be stored): bookkeeping, not state.
#[derive(Debug, Default, Clone, Copy)]
struct SavedCovers(Option<u64>);

impl PartialEq for SavedCovers {
    fn eq(&self, _: &SavedCovers) -> bool {
        true
    }
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

    /// Every shared event at or below this seq is applied.
    pub fn covers(&self) -> u64 {
        self.covers.max(self.through)
    }

    /// Takes the event at `seq` in, unless the graph is past it: a shared
    /// or system event that says something (from an agent `admitted`, and
    /// with an id not applied before) is extracted; a purge of shared
    /// events erases what they told the graph (see [`SwarmGraph::erase`]).
    /// Every record of the log must be driven through here, in log order,
    /// whoever's it is: the swarm's feed does it live, a memory applying
    /// the log alone does it as it applies.
    pub(crate) fn drive(&mut self, seq: u64, event: &Event, admitted: Option<&BTreeSet<String>>) {
        if seq <= self.covers() {
            return;
        }
        self.through = seq;
        let publisher = self.agent_index(&event.agent);
        self.published[publisher as usize] = true;
        if crate::scope::sees_event_of_another(admitted, event) && crate::render::carries_content(&event.kind) {
            if self.by_id.contains_key(&event.id) {
                return;
            }
            self.graph.apply(seq, event);
            let touched = self.graph.take_touched_edges();
            if !touched.is_empty() {
                self.touched.insert(seq, touched);
            }
            self.events.insert(seq, (event.id, publisher, event.ts));
            self.by_id.insert(event.id, seq);
            self.touched_changes.chunks.insert((seq / MEMORY_CHUNK) as u32);
            return;
        }
        match &event.kind {
            EventKind::MemoryPurged(purged) => {
                let agent = self.agent_index(&event.agent);
                let named = self.purged_by(purged, &event.agent);
                let mut erased = BTreeSet::new();
                for seq in named {
                    let by = self.pending_purges.entry(seq).or_default();
                    by.insert(agent);
                    // Every agent of the swarm: those admitted, or else
                    // every agent the log has shown so far.
                    let purged_by = |agent: &str| {
                        self.authors
                            .iter()
                            .position(|known| known == agent)
                            .is_some_and(|index| by.contains(&(index as u32)))
                    };
                    let everyone = match admitted {
                        Some(admitted) => admitted.iter().all(|agent| purged_by(agent)),
                        None => self
                            .published
                            .iter()
                            .enumerate()
                            .all(|(author, published)| !published || by.contains(&(author as u32))),
                    };
                    if everyone {
                        self.pending_purges.remove(&seq);
                        erased.insert(seq);
                    }
                }
                if !erased.is_empty() {
                    self.merged_into.retain(|(_, survivor), _| !erased.contains(survivor));
                    self.erase(&erased);
                }
            }
            EventKind::MemoriesMerged(merged) => {
                let agent = self.agent_index(&event.agent);
                let Some(survivor) = self.seq_of(&merged.survivor) else { return };
                let mut into: BTreeSet<u64> = BTreeSet::new();
                for seq in merged.merged.iter().filter_map(|id| self.seq_of(id)).filter(|&seq| seq != survivor) {
                    into.insert(seq);
                    if let Some(further) = self.merged_into.get(&(agent, seq)) {
                        into.extend(further.iter().copied());
                    }
                }
                if !into.is_empty() {
                    self.merged_into.entry((agent, survivor)).or_default().extend(into);
                }
            }
            _ => {}
        }
    }

    /// The log held nothing for the graph up to `seq`.
    pub(crate) fn advance_to(&mut self, seq: u64) {
        self.through = self.through.max(seq);
    }

    /// The seq of the shared event an item id (an event id) names.
    fn seq_of(&self, item_id: &str) -> Option<u64> {
        let id = item_id.trim().parse::<EventId>().ok()?;
        self.by_id.get(&id).copied()
    }

    fn agent_index(&mut self, agent: &str) -> u32 {
        match self.authors.iter().position(|known| known == agent) {
            Some(index) => index as u32,
            None => {
                self.authors.push(agent.to_string());
                self.published.push(false);
                (self.authors.len() - 1) as u32
            }
        }
    }

    /// The shared events a purge by `purging_agent` names: its items, with
    /// `before` the author's (`of_agent`, else the purging agent's) older
    /// events, and what that agent's memory merged into them.
    fn purged_by(&self, purged: &MemoryPurged, purging_agent: &str) -> BTreeSet<u64> {
        let mut seqs: BTreeSet<u64> = purged.item_ids.iter().filter_map(|item_id| self.seq_of(item_id)).collect();
        if let Some(before) = purged.before {
            let author = purged.of_agent.as_deref().unwrap_or(purging_agent);
            if let Some(author) = self.authors.iter().position(|known| known == author) {
                seqs.extend(
                    self.events
                        .iter()
                        .filter(|(_, (_, by, ts))| *by as usize == author && *ts < before)
                        .map(|(seq, _)| *seq),
                );
            }
        }
        if let Some(agent) = self.authors.iter().position(|known| known == purging_agent) {
            let merged: Vec<u64> = seqs
                .iter()
                .filter_map(|survivor| self.merged_into.get(&(agent as u32, *survivor)))
                .flatten()
                .copied()
                .collect();
            seqs.extend(merged);
        }
        seqs
    }

    /// What the event at `seq` touched, as the memory that applied it saw.
    pub(crate) fn touched_at(&self, seq: u64) -> Vec<TouchedEdge> {
        if let Some(retained) = self.retained.get(&seq) {
            return retained.clone();
        }
        self.touched.get(&seq).into_iter().flatten().map(|&(edge, open)| self.graph.touched_edge(edge, open)).collect()
    }

    /// Lets go of what erased events at or below `floor` touched: every
    /// memory of the swarm has applied them and saved a snapshot past them.
    pub(crate) fn release_retained(&mut self, floor: u64) {
        let before = self.retained.len();
        self.retained.retain(|seq, _| *seq > floor);
        if self.retained.len() != before {
            self.touched_changes.all = true;
        }
    }

    /// The snapshot of the graph as it stands, saying it covers `covers`
    /// (the checkpoint of the memory saving it): the head and the chunks
    /// changed since [`SwarmGraph::mark_saved`] (every chunk with
    /// `everything`).
    ///
    /// What erased events touched is written only for those past
    /// `retain_floor` (see [`SwarmGraph::release_retained`]).
    pub fn delta(&self, everything: bool, covers: u64, retain_floor: u64) -> Result<SnapshotDelta, ProjectionError> {
        let covers = self.covers().max(covers);
        let graph_parts = self.graph.parts();
        let mut touched_chunks: Vec<u32> = self.events.keys().map(|seq| (seq / MEMORY_CHUNK) as u32).collect();
        touched_chunks.dedup();
        let mut parts: Vec<SnapshotPart> = graph_parts.iter().copied().map(SnapshotPart::of_graph).collect();
        parts.extend(touched_chunks.iter().copied().map(SnapshotPart::SwarmTouched));
        let changed_graph: Vec<GraphPart> = if everything {
            graph_parts
        } else {
            let changed: BTreeSet<GraphPart> = self.graph.changed_parts().into_iter().collect();
            graph_parts.into_iter().filter(|part| changed.contains(part)).collect()
        };
        let mut written: Vec<(SnapshotPart, Vec<u8>)> = self
            .graph
            .chunks(&changed_graph)?
            .into_iter()
            .map(|(part, bytes)| (SnapshotPart::of_graph(part), bytes))
            .collect();
        for chunk in touched_chunks {
            if everything || self.touched_changes.all || self.touched_changes.chunks.contains(&chunk) {
                let start = u64::from(chunk) * MEMORY_CHUNK;
                let entries = self
                    .events
                    .range(start..start + MEMORY_CHUNK)
                    .map(|(seq, (id, author, ts))| {
                        let touched = self.touched.get(seq).cloned().unwrap_or_default();
                        (*seq, id.0, *author, ts.unix_nanos(), touched)
                    })
                    .collect();
                written.push((SnapshotPart::SwarmTouched(chunk), encode(&EventChunk(entries), "shared events")?));
            }
        }
        let head = SwarmGraphHead {
            format: SWARM_GRAPH_FORMAT,
            through: self.through,
            covers,
            graph_head: self.graph.snapshot_head()?,
            authors: self.authors.clone(),
            published: self.published.clone(),
            pending_purges: self.pending_purges.iter().map(|(seq, by)| (*seq, by.iter().copied().collect())).collect(),
            merged_into: self
                .merged_into
                .iter()
                .map(|((agent, survivor), merged)| (*agent, *survivor, merged.iter().copied().collect()))
                .collect(),
            retained: self
                .retained
                .range(retain_floor.saturating_add(1)..)
                .map(|(seq, edges)| {
                    let edges = edges
                        .iter()
                        .map(|edge| {
                            (
                                edge.relation.clone(),
                                edge.from_kind.as_str().to_string(),
                                edge.from_name.clone(),
                                edge.to_kind.as_str().to_string(),
                                edge.to_name.clone(),
                                edge.open,
                            )
                        })
                        .collect();
                    (*seq, edges)
                })
                .collect(),
            parts: parts.iter().map(SnapshotPart::code).collect(),
        };
        Ok(SnapshotDelta { checkpoint: covers, head: encode(&head, "the swarm graph's head")?, written, parts })
    }

    /// Erases what the events at `seqs` told the graph (see
    /// [`FactGraph::redact`]): every memory that held them purged them.
    pub(crate) fn erase(&mut self, seqs: &BTreeSet<u64>) {
        for seq in seqs {
            if let Some(edges) = self.touched.get(seq) {
                let named = edges.iter().map(|&(edge, open)| self.graph.touched_edge(edge, open)).collect();
                self.retained.insert(*seq, named);
            }
        }
        let touched_before = self.touched.len();
        self.touched.retain(|seq, _| !seqs.contains(seq));
        if self.touched.len() != touched_before {
            self.touched_changes.all = true;
        }
        let Some(edge_map) = self.graph.redact(seqs) else { return };
        for edges in self.touched.values_mut() {
            edges.retain_mut(|(edge, _)| match edge_map.get(edge) {
                Some(&kept) => {
                    *edge = kept;
                    true
                }
                None => false,
            });
        }
        self.touched.retain(|_, edges| !edges.is_empty());
        self.touched_changes.all = true;
    }

    /// Whether the stored snapshot (if any) covers `covers` and nothing
    /// changed since it was saved.
    pub(crate) fn saved_through(&self, covers: u64) -> bool {
        self.saved.0.is_some_and(|saved| saved >= covers)
            && self.graph.changed_parts().is_empty()
            && self.touched_changes.chunks.is_empty()
            && !self.touched_changes.all
    }

    /// The delta taken is stored, and covers `covers`.
    pub fn mark_saved(&mut self, covers: u64) {
        self.covers = self.covers().max(covers);
        self.saved = SavedCovers(Some(self.covers));
        self.graph.mark_saved();
        self.touched_changes = TouchedChanges::default();
    }

    /// A delta taken was not stored: the next one writes everything.
    pub fn mark_unsaved(&mut self) {
        self.saved = SavedCovers(None);
        self.graph.changes.all = true;
        self.touched_changes.all = true;
    }

    /// Restores the graph from a snapshot's head and its chunks, read by
    /// `read` in the order the head names them.
    /// How far a saved swarm graph covers the log, read from its head
    /// alone: a start compares it with the log's end (a lost tail).
    pub fn covers_in_head(head: &[u8]) -> Result<u64, ProjectionError> {
        let head: SwarmGraphHead = decode(head, "the swarm graph's head")?;
        if head.format != SWARM_GRAPH_FORMAT {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "swarm graph snapshot format {} is not {SWARM_GRAPH_FORMAT}",
                head.format
            )));
        }
        Ok(head.covers)
    }

    pub fn from_snapshot_parts(
        head: &[u8],
        read: &mut dyn FnMut(SnapshotPart) -> Result<Vec<u8>, ProjectionError>,
    ) -> Result<SwarmGraph, ProjectionError> {
        let head: SwarmGraphHead = decode(head, "the swarm graph's head")?;
        if head.format != SWARM_GRAPH_FORMAT {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "swarm graph snapshot format {} is not {SWARM_GRAPH_FORMAT}",
                head.format
            )));
        }
        let mut graph_chunks = Vec::new();
        let mut touched = BTreeMap::new();
        let mut events = BTreeMap::new();
        for code in head.parts {
            let part = SnapshotPart::from_code(code)?;
            let bytes = read(part)?;
            match (part.graph(), part) {
                (Some(graph_part), _) => graph_chunks.push((graph_part, bytes)),
                (None, SnapshotPart::SwarmTouched(chunk)) => {
                    let EventChunk(entries) = decode(&bytes, "shared events")?;
                    for (seq, id, author, ts, edges) in entries {
                        if seq / MEMORY_CHUNK != u64::from(chunk) || author as usize >= head.authors.len() {
                            return Err(ProjectionError::CorruptSnapshot(format!(
                                "shared event of seq {seq} in chunk {chunk}, by author {author}"
                            )));
                        }
                        if !edges.is_empty() {
                            touched.insert(seq, edges);
                        }
                        events.insert(seq, (EventId(id), author, Timestamp(ts)));
                    }
                }
                (None, other) => {
                    return Err(ProjectionError::CorruptSnapshot(format!(
                        "a swarm graph snapshot holds chunk {}",
                        other.name()
                    )));
                }
            }
        }
        let graph = FactGraph::from_parts(&head.graph_head, graph_chunks)?;
        let edges = graph.edges.len();
        if touched.values().flatten().any(|&(edge, _): &(u32, bool)| edge as usize >= edges) {
            return Err(ProjectionError::CorruptSnapshot("a touched edge is outside the swarm graph".to_string()));
        }
        if events.keys().next_back().is_some_and(|&last| last > head.through) || head.covers < head.through {
            return Err(ProjectionError::CorruptSnapshot("the swarm graph's checkpoints disagree".to_string()));
        }
        let by_id = events.iter().map(|(seq, (id, _, _))| (*id, *seq)).collect();
        let mut retained = BTreeMap::new();
        for (seq, edges) in head.retained {
            let mut named = Vec::with_capacity(edges.len());
            for (relation, from_kind, from_name, to_kind, to_name, open) in edges {
                let (Some(from_kind), Some(to_kind)) =
                    (EntityKind::from_name(&from_kind), EntityKind::from_name(&to_kind))
                else {
                    return Err(ProjectionError::CorruptSnapshot(format!(
                        "a retained edge of seq {seq} has an unknown kind"
                    )));
                };
                named.push(TouchedEdge { relation, from_kind, from_name, to_kind, to_name, open });
            }
            retained.insert(seq, named);
        }
        let agents = head.authors.len();
        let known = |agent: u32| (agent as usize) < agents;
        if head.published.len() != agents
            || head.pending_purges.iter().any(|(_, by)| !by.iter().copied().all(known))
            || head.merged_into.iter().any(|(agent, _, _)| !known(*agent))
        {
            return Err(ProjectionError::CorruptSnapshot("the swarm graph names an unknown agent".to_string()));
        }
        let mut restored = SwarmGraph {
            graph,
            through: head.through,
            touched,
            events,
            by_id,
            authors: head.authors,
            published: head.published,
            pending_purges: head.pending_purges.into_iter().map(|(seq, by)| (seq, by.into_iter().collect())).collect(),
            retained,
            merged_into: head
                .merged_into
                .into_iter()
                .map(|(agent, survivor, merged)| ((agent, survivor), merged.into_iter().collect()))
                .collect(),
            covers: head.covers,
            touched_changes: TouchedChanges::default(),
            saved: SavedCovers(Some(head.covers)),
        };
        restored.graph.mark_saved();
        Ok(restored)
    }
}
