//! The graph's storage: nodes and edges in arrays addressed by index, the
//! maps that find them by id, name and triple, the adjacency lists queries
//! walk, and the entity → event index retrieval reads.
//!
//! Everything is kept in insertion order or in ordered maps, so the state
//! is a pure function of the events applied, in order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mneme_events::{Event, EventId, Timestamp};
use smallvec::SmallVec;

use super::fixes::FailureTracker;
use super::model::{Edge, EntityKind, Node, entity_id, relation};
use crate::chunks::{GRAPH_CHUNK, GraphPart};
use crate::item::ProvenanceRef;

pub(crate) use super::model::{EdgeIndex, NodeIndex, RelationIndex};

/// The events linked to a node, by seq. Most nodes (an item's) have one
/// or two, kept inline.
pub(crate) type NodeLinks = SmallVec<[Link; 2]>;

/// The event being applied, as extraction sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventContext<'a> {
    pub seq: u64,
    pub event_id: EventId,
    pub ts: Timestamp,
    pub agent: &'a str,
    /// Wire name of the event's kind.
    pub kind: &'static str,
}

impl<'a> EventContext<'a> {
    pub(crate) fn new(seq: u64, event: &'a Event) -> EventContext<'a> {
        EventContext { seq, event_id: event.id, ts: event.ts, agent: &event.agent, kind: event.kind_name() }
    }

    pub(crate) fn provenance(&self) -> ProvenanceRef {
        ProvenanceRef { seq: self.seq, event_id: self.event_id }
    }
}

/// An edge as stored: endpoints and relation by index; the public [`Edge`]
/// is built from it on the way out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EdgeRecord {
    pub from: NodeIndex,
    pub to: NodeIndex,
    pub relation: RelationIndex,
    /// 0 for the first validity interval of this (from, relation, to), 1 for
    /// the second...
    pub interval: u32,
    pub valid_from: Timestamp,
    /// The seq of the event that created the edge: also its provenance,
    /// unless `rare` holds a list.
    pub recorded_seq: u64,
    /// What most edges (an item's mentions: 80 % of them in a zipf
    /// memory) do not have: an end, a confidence, more than one event. 40
    /// bytes an edge instead of 88.
    rare: Option<Box<RareEdgeTerms>>,
}

/// The terms of an edge that most edges do not have.
#[derive(Debug, Clone, Default, PartialEq)]
struct RareEdgeTerms {
    valid_to: Option<Timestamp>,
    /// The seq of the event that first ended the edge (its creating event,
    /// when it was asserted with an end): what the edge was as of an
    /// earlier seq (see [`EdgeRecord::is_closed_at`]).
    closed_seq: Option<u64>,
    confidence: Option<f32>,
    /// The seqs of the events behind the edge, ascending, when they are
    /// not just `recorded_seq` (their ids are in [`FactGraph::events`]).
    provenance: Option<Vec<u64>>,
}

impl EdgeRecord {
    pub(crate) fn new(
        (from, relation, to): (NodeIndex, RelationIndex, NodeIndex),
        interval: u32,
        valid_from: Timestamp,
        recorded_seq: u64,
    ) -> EdgeRecord {
        EdgeRecord { from, to, relation, interval, valid_from, recorded_seq, rare: None }
    }

    /// The seqs of the events behind the edge, ascending.
    pub(crate) fn seqs(&self) -> &[u64] {
        match self.rare.as_deref().and_then(|rare| rare.provenance.as_deref()) {
            Some(seqs) => seqs,
            None => std::slice::from_ref(&self.recorded_seq),
        }
    }

    pub(crate) fn valid_to(&self) -> Option<Timestamp> {
        self.rare.as_ref().and_then(|rare| rare.valid_to)
    }

    pub(crate) fn confidence(&self) -> Option<f32> {
        self.rare.as_ref().and_then(|rare| rare.confidence)
    }

    fn rare_mut(&mut self) -> &mut RareEdgeTerms {
        self.rare.get_or_insert_with(Box::default)
    }

    /// The seq of the event that first ended the edge.
    pub(crate) fn closed_seq(&self) -> Option<u64> {
        self.rare.as_ref().and_then(|rare| rare.closed_seq)
    }

    /// Whether the edge had ended as of the event at `seq` (that event
    /// included).
    pub(crate) fn is_closed_at(&self, seq: u64) -> bool {
        self.closed_seq().is_some_and(|closed| closed <= seq)
    }

    /// Sets the end, and the seq that first set one (kept when an end is
    /// moved earlier later on).
    pub(crate) fn set_valid_to(&mut self, valid_to: Option<Timestamp>, seq: u64) {
        if valid_to.is_some() || self.rare.is_some() {
            let rare = self.rare_mut();
            rare.valid_to = valid_to;
            rare.closed_seq = match valid_to {
                Some(_) => Some(rare.closed_seq.unwrap_or(seq)),
                None => None,
            };
        }
    }

    /// A restored end and the seq that first set it.
    pub(crate) fn restore_valid_to(&mut self, valid_to: Option<Timestamp>, closed_seq: Option<u64>) {
        if valid_to.is_some() || self.rare.is_some() {
            let rare = self.rare_mut();
            rare.valid_to = valid_to;
            rare.closed_seq = closed_seq;
        }
    }

    pub(crate) fn set_confidence(&mut self, confidence: Option<f32>) {
        if confidence.is_some() || self.rare.is_some() {
            self.rare_mut().confidence = confidence;
        }
    }

    /// Sets the provenance seqs (ascending; a restore's, a purge's).
    pub(crate) fn set_seqs(&mut self, seqs: Vec<u64>) {
        if seqs.as_slice() == [self.recorded_seq] && self.rare.as_ref().is_none_or(|rare| rare.provenance.is_none()) {
            return;
        }
        self.rare_mut().provenance = Some(seqs);
    }

    /// Adds `seq` to the provenance, kept ascending; false if it was there.
    pub(crate) fn insert_seq(&mut self, seq: u64) -> bool {
        if self.seqs().binary_search(&seq).is_ok() {
            return false;
        }
        let mut seqs = match self.rare.as_mut().and_then(|rare| rare.provenance.take()) {
            Some(seqs) => seqs,
            None => vec![self.recorded_seq],
        };
        match seqs.last() {
            Some(&last) if last > seq => {
                let position = seqs.binary_search(&seq).unwrap_or_else(|position| position);
                seqs.insert(position, seq);
            }
            _ => seqs.push(seq),
        }
        self.rare_mut().provenance = Some(seqs);
        true
    }

    /// Keeps the provenance seqs `keep` says; false if none is left.
    pub(crate) fn retain_seqs(&mut self, keep: impl Fn(u64) -> bool) -> bool {
        if self.seqs().iter().all(|&seq| keep(seq)) {
            return true;
        }
        let kept: Vec<u64> = self.seqs().iter().copied().filter(|&seq| keep(seq)).collect();
        let any = !kept.is_empty();
        self.rare_mut().provenance = Some(kept);
        any
    }
}

/// Validity and confidence of an asserted fact; extracted relations use
/// the defaults (valid from the event's time, open, no confidence).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct EdgeTerms {
    pub valid_from: Option<Timestamp>,
    pub valid_to: Option<Timestamp>,
    pub confidence: Option<f32>,
}

/// The edges at a node, both directions, in creation order. Mentions
/// (`references` from an item node) are kept apart so that a file named in
/// a thousand messages still shows its structural edges first.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Adjacency {
    pub facts: Vec<EdgeIndex>,
    pub mentions: Vec<EdgeIndex>,
}

/// How an event is linked to an entity, for ranking retrieval: it created,
/// changed or related the entity, or only mentioned it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum LinkStrength {
    Mention,
    Direct,
}

/// When an event happened and what its id is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventStamp {
    pub ts: Timestamp,
    pub id: EventId,
}

/// One event linked to an entity: its seq, with the strength in the top
/// bit (log seqs stay far below 2^63). Eight bytes, not sixteen: a node
/// holds one per event that links it, about one per edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Link(u64);

impl Link {
    const DIRECT: u64 = 1 << 63;

    pub(crate) fn new(seq: u64, strength: LinkStrength) -> Link {
        debug_assert!(seq < Link::DIRECT, "a log seq of 2^63 or more");
        let seq = seq & !Link::DIRECT;
        Link(if strength == LinkStrength::Direct { seq | Link::DIRECT } else { seq })
    }

    pub(crate) fn seq(self) -> u64 {
        self.0 & !Link::DIRECT
    }

    pub(crate) fn strength(self) -> LinkStrength {
        if self.0 & Link::DIRECT != 0 { LinkStrength::Direct } else { LinkStrength::Mention }
    }

    /// Keeps the stronger of the two strengths.
    fn strengthen(&mut self, strength: LinkStrength) {
        if strength == LinkStrength::Direct {
            self.0 |= Link::DIRECT;
        }
    }
}

/// The relations a phase's notes read of what an event changed in the
/// graph (`phases/notes.rs`): what [`FactGraph::take_touched`] reports.
const NOTED_RELATIONS: [&str; 6] =
    [relation::READS, relation::MODIFIES, relation::RUNS, relation::DEFINES, relation::FAILS_WITH, relation::FIXES];

/// An edge one event created, confirmed or closed (see
/// [`FactGraph::take_touched`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TouchedEdge {
    pub relation: String,
    pub from_kind: EntityKind,
    pub from_name: String,
    pub to_kind: EntityKind,
    pub to_name: String,
    /// Whether the edge still holds after the event.
    pub open: bool,
}

/// (subject, relation, object) of an asserted fact as written (whitespace
/// collapsed, lowercased), so that a retraction finds the assertion even if
/// the names would resolve to other entities by then.
pub(crate) type FactKey = (String, String, String);

/// The fact graph: entities and relations extracted from events, valid in
/// event time, recorded in log time, each traced to its events.
///
/// Build it by [`FactGraph::apply`]ing events in log order; query it with
/// [`FactGraph::neighbourhood`], [`FactGraph::items_near`] and
/// [`FactGraph::entities_in_text`]. See the [module documentation](super)
/// for the extraction rules.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FactGraph {
    pub(super) nodes: Vec<Node>,
    /// Hashed, not ordered: extraction looks every word of a text up here
    /// and in the name indexes below (`nodes()` sorts when order matters).
    pub(super) node_index: HashMap<String, NodeIndex>,
    pub(super) edges: Vec<EdgeRecord>,
    /// (from, relation, to) → the edge of its latest validity interval;
    /// not an item's mentions (most edges, found in the item's adjacency:
    /// see [`FactGraph::latest_edge`]).
    pub(super) edge_index: BTreeMap<(NodeIndex, RelationIndex, NodeIndex), EdgeIndex>,
    pub(super) relations: Vec<String>,
    pub(super) relation_index: BTreeMap<String, RelationIndex>,
    pub(super) adjacency: Vec<Adjacency>,
    /// Lowercased name → nodes of that name (item nodes excluded).
    pub(super) names: HashMap<String, BTreeSet<NodeIndex>>,
    /// Lowercased first word of multi-word names → the most words such a
    /// name has: bounds the phrases looked up when scanning text.
    pub(super) phrase_heads: HashMap<String, usize>,
    /// File name without directories → file nodes, so that `token.rs`
    /// resolves to `src/auth/token.rs` when that is the only one.
    pub(super) file_names: HashMap<String, BTreeSet<NodeIndex>>,
    /// Per node, the events linked to it, by ascending seq.
    pub(super) links: Vec<NodeLinks>,
    /// Every event that entered the graph's provenance, by seq: its time
    /// (for `as_of` filtering of items) and its id (so that snapshots store
    /// provenance as seqs alone).
    pub(super) events: BTreeMap<u64, EventStamp>,
    /// Asserted facts → the edge of their latest interval.
    pub(super) facts: BTreeMap<FactKey, EdgeIndex>,
    pub(super) failures: FailureTracker,
    /// Edges created, confirmed or closed by the event being applied;
    /// emptied at the start of every apply and taken by the memory, which
    /// notes what a phase touched without scanning the graph.
    pub(super) touched: TouchedScratch,
    /// The chunks changed since the last snapshot was saved.
    pub(super) changes: Changes,
    /// The newest edges' provenance, for the checkpoint's chunks of it.
    pub(super) edge_provenance: EdgeProvenanceLog,
    /// Changes to closed edges, for what is derived from them.
    pub(super) closed_version: ClosedVersion,
}

/// Counts the changes to closed edges: a closure, an event added to a
/// closed edge, a purge. What is derived from the closed facts alone (the
/// memory's retractions) is kept while this stays the same. Bookkeeping,
/// not state: a restored graph starts again from 0 (with a new memory and
/// nothing derived yet).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClosedVersion(pub(crate) u64);

impl PartialEq for ClosedVersion {
    fn eq(&self, _: &ClosedVersion) -> bool {
        true
    }
}

/// Which chunks of the graph's snapshot changed since it was last saved:
/// bookkeeping, not state, so two graphs of the same content are equal
/// whatever they changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Changes {
    pub(crate) parts: BTreeSet<GraphPart>,
    /// Everything, after a purge renumbered nodes and edges.
    pub(crate) all: bool,
}

impl PartialEq for Changes {
    fn eq(&self, _: &Changes) -> bool {
        true
    }
}

/// The edges' provenance as snapshots keep it: apart from the edge records,
/// by the seq of the event referred to ([`GraphPart::EdgeProvenance`]), so
/// that an event confirming an old edge (a file read again, a fact asserted
/// again) writes a few bytes to the chunk of its own seq instead of
/// rewriting the old edge's chunk of 4,096 edges (43 MiB of a 64 MiB
/// checkpoint after 1,000 events at 200,000 items went to edge chunks).
///
/// Bookkeeping, not state: `tracked_from` is `Some(seq)` when `entries`
/// holds every (referred seq, edge) with a seq from there on, so the chunks
/// a checkpoint rewrites (those of the newest seqs) are read from here;
/// older chunks, and every chunk after a restore or a purge, are found by
/// scanning the edges.
#[derive(Debug, Clone)]
pub(crate) struct EdgeProvenanceLog {
    pub(crate) tracked_from: Option<u64>,
    pub(crate) entries: Vec<(u64, EdgeIndex)>,
}

impl Default for EdgeProvenanceLog {
    /// A new graph has no provenance yet: every entry is tracked.
    fn default() -> EdgeProvenanceLog {
        EdgeProvenanceLog { tracked_from: Some(0), entries: Vec::new() }
    }
}

impl PartialEq for EdgeProvenanceLog {
    fn eq(&self, _: &EdgeProvenanceLog) -> bool {
        true
    }
}

/// Scratch space, not state: two graphs with the same content are equal
/// whatever their last apply touched.
#[derive(Debug, Clone, Default)]
pub(crate) struct TouchedScratch(pub Vec<EdgeIndex>);

impl PartialEq for TouchedScratch {
    fn eq(&self, _: &TouchedScratch) -> bool {
        true
    }
}

impl FactGraph {
    pub fn new() -> FactGraph {
        FactGraph::default()
    }

    /// The node with this id.
    pub fn node(&self, id: &str) -> Option<&Node> {
        self.node_index.get(id).map(|&index| &self.nodes[index as usize])
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the event at this seq entered the graph's provenance.
    pub(crate) fn has_event(&self, seq: u64) -> bool {
        self.events.contains_key(&seq)
    }

    /// The seqs of the events in the graph's provenance, up to `through`.
    pub(crate) fn event_seqs_through(&self, through: u64) -> impl Iterator<Item = u64> + '_ {
        self.events.range(..=through).map(|(seq, _)| *seq)
    }

    /// The count of changes to closed edges (see [`ClosedVersion`]).
    pub(crate) fn closed_version(&self) -> u64 {
        self.closed_version.0
    }

    /// The ids of the node pairs joined by an edge of this relation, in
    /// edge order.
    pub(crate) fn pairs_related_by(&self, relation: &str) -> impl Iterator<Item = (&str, &str)> + '_ {
        let relation = self.relation_index.get(relation).copied();
        self.edges
            .iter()
            .filter(move |record| Some(record.relation) == relation)
            .map(|record| (self.nodes[record.from as usize].id.as_str(), self.nodes[record.to as usize].id.as_str()))
    }

    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    /// Every node, sorted by id.
    pub fn nodes(&self) -> Vec<&Node> {
        let mut nodes: Vec<&Node> = self.nodes.iter().collect();
        nodes.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        nodes
    }

    /// Every edge (every validity interval), sorted by id.
    pub fn edges(&self) -> Vec<Edge> {
        self.sorted_edges((0..self.edges.len() as EdgeIndex).collect())
    }

    /// The edges at these indexes, sorted by id.
    pub(crate) fn sorted_edges(&self, indexes: Vec<EdgeIndex>) -> Vec<Edge> {
        let mut order: Vec<(String, EdgeIndex)> = indexes.into_iter().map(|edge| (self.edge_id(edge), edge)).collect();
        order.sort();
        order.into_iter().map(|(id, edge)| self.edge_view(edge, id)).collect()
    }

    /// The edges at a node (both directions, every interval), sorted by id;
    /// empty if the node is unknown.
    pub fn edges_of(&self, id: &str) -> Vec<Edge> {
        let Some(&index) = self.node_index.get(id) else { return Vec::new() };
        let adjacency = &self.adjacency[index as usize];
        self.sorted_edges(adjacency.facts.iter().chain(&adjacency.mentions).copied().collect())
    }

    /// The events (seqs, ascending) that created, changed, related or
    /// mentioned the entity; empty if it is unknown.
    pub fn items_of(&self, id: &str) -> Vec<u64> {
        self.node_index
            .get(id)
            .map(|&index| self.links[index as usize].iter().map(|link| link.seq()).collect())
            .unwrap_or_default()
    }

    // ------------------------------------------------------------ nodes

    pub(crate) fn node_at(&self, index: NodeIndex) -> &Node {
        &self.nodes[index as usize]
    }

    pub(crate) fn find(&self, kind: EntityKind, key: &str) -> Option<NodeIndex> {
        self.node_index.get(&entity_id(kind, key)).copied()
    }

    /// The node `kind:key`, created with `name` if it does not exist.
    pub(crate) fn entity(&mut self, kind: EntityKind, key: &str, name: &str, context: &EventContext) -> NodeIndex {
        let id = entity_id(kind, key);
        if let Some(&index) = self.node_index.get(&id) {
            return index;
        }
        let index = self.nodes.len() as NodeIndex;
        let provenance = self.note(context);
        self.nodes.push(Node {
            id: id.clone(),
            kind,
            name: name.to_string(),
            attributes: BTreeMap::new(),
            valid_from: None,
            valid_to: None,
            closed_seq: None,
            provenance: vec![provenance],
        });
        self.node_index.insert(id, index);
        self.changes.parts.insert(GraphPart::Nodes((u64::from(index) / GRAPH_CHUNK) as u32));
        self.adjacency.push(Adjacency::default());
        self.links.push(NodeLinks::new());
        self.add_link(index, context.seq, LinkStrength::Direct);
        self.index_name(index);
        index
    }

    /// The agent node of the event's publisher.
    pub(crate) fn publisher(&mut self, context: &EventContext) -> NodeIndex {
        self.entity(EntityKind::Agent, context.agent, context.agent, context)
    }

    /// Records that the event changed the node.
    pub(crate) fn touch(&mut self, node: NodeIndex, context: &EventContext) {
        let provenance = self.note(context);
        self.changes.parts.insert(GraphPart::Nodes((u64::from(node) / GRAPH_CHUNK) as u32));
        let provenance_list = &mut self.nodes[node as usize].provenance;
        if provenance_list.last().is_none_or(|last| last.seq != provenance.seq) {
            provenance_list.push(provenance);
        }
        self.add_link(node, context.seq, LinkStrength::Direct);
    }

    /// Sets an attribute; a change is recorded in the node's provenance.
    pub(crate) fn set_attribute(&mut self, node: NodeIndex, key: &str, value: &str, context: &EventContext) {
        let attributes = &mut self.nodes[node as usize].attributes;
        if attributes.get(key).is_some_and(|current| current == value) {
            return;
        }
        attributes.insert(key.to_string(), value.to_string());
        self.touch(node, context);
    }

    /// Renames a node (a placeholder decision learning its title).
    pub(crate) fn rename(&mut self, node: NodeIndex, name: &str, context: &EventContext) {
        if self.nodes[node as usize].name == name {
            return;
        }
        self.unindex_name(node);
        self.nodes[node as usize].name = name.to_string();
        self.index_name(node);
        self.touch(node, context);
    }

    /// Opens the node's validity at `from` (if it had no start).
    pub(crate) fn start_validity(&mut self, node: NodeIndex, from: Timestamp, context: &EventContext) {
        if self.nodes[node as usize].valid_from.is_none() {
            self.nodes[node as usize].valid_from = Some(from);
            self.touch(node, context);
        }
    }

    /// Closes the node's validity at `to` (never reopening it, never moving
    /// an earlier end later).
    pub(crate) fn close_validity(&mut self, node: NodeIndex, to: Timestamp, context: &EventContext) {
        let current = &mut self.nodes[node as usize];
        let to = current.valid_from.map_or(to, |from| to.max(from));
        if current.valid_to.is_none_or(|end| to < end) {
            current.valid_to = Some(to);
            current.closed_seq.get_or_insert(context.seq);
        }
        self.touch(node, context);
    }

    fn index_name(&mut self, node: NodeIndex) {
        let current = &self.nodes[node as usize];
        if current.kind == EntityKind::Item {
            return;
        }
        let lowered = current.name.to_lowercase();
        let word_count = lowered.split_whitespace().count();
        if word_count > 1 {
            let head = lowered.split_whitespace().next().unwrap_or_default().to_string();
            let longest = self.phrase_heads.entry(head).or_insert(0);
            *longest = (*longest).max(word_count);
        }
        if current.kind == EntityKind::File {
            let file_name = current.name.rsplit('/').next().unwrap_or(&current.name).to_string();
            self.file_names.entry(file_name).or_default().insert(node);
        }
        self.names.entry(lowered).or_default().insert(node);
    }

    fn unindex_name(&mut self, node: NodeIndex) {
        let lowered = self.nodes[node as usize].name.to_lowercase();
        if let Some(nodes) = self.names.get_mut(&lowered) {
            nodes.remove(&node);
            if nodes.is_empty() {
                self.names.remove(&lowered);
            }
        }
    }

    // ------------------------------------------------------------ edges

    pub(crate) fn relation(&mut self, name: &str) -> RelationIndex {
        if let Some(&index) = self.relation_index.get(name) {
            return index;
        }
        let index = self.relations.len() as RelationIndex;
        self.relations.push(name.to_string());
        self.relation_index.insert(name.to_string(), index);
        index
    }

    /// An extracted relation: confirms the open edge `from —relation→ to`,
    /// or opens a new one valid from the event's time.
    pub(crate) fn link(&mut self, from: NodeIndex, relation: &str, to: NodeIndex, context: &EventContext) -> EdgeIndex {
        self.link_with(from, relation, to, context, &[], EdgeTerms::default())
    }

    /// Like [`FactGraph::link`], with explicit validity and confidence and
    /// with earlier events that support the edge (the edits behind a fix).
    ///
    /// The latest interval of the triple is confirmed (provenance added,
    /// confidence updated) when it is still open or has exactly the
    /// requested bounds; otherwise a new interval starts.
    pub(crate) fn link_with(
        &mut self,
        from: NodeIndex,
        relation: &str,
        to: NodeIndex,
        context: &EventContext,
        supporting: &[ProvenanceRef],
        terms: EdgeTerms,
    ) -> EdgeIndex {
        let relation_index = self.relation(relation);
        let key = (from, relation_index, to);
        let valid_from = terms.valid_from.unwrap_or(context.ts);
        let is_mention = self.is_mention(from, relation_index);
        let latest = self.latest_edge(key, is_mention);
        if let Some(latest) = latest {
            let record = &self.edges[latest as usize];
            let same_bounds = record.valid_from == valid_from && record.valid_to() == terms.valid_to;
            if record.valid_to().is_none() || same_bounds {
                if terms.confidence.is_some() {
                    self.edges[latest as usize].set_confidence(terms.confidence);
                    self.changes.parts.insert(GraphPart::Edges((u64::from(latest) / GRAPH_CHUNK) as u32));
                }
                self.extend_edge(latest, context, supporting, false);
                return latest;
            }
        }
        let interval = latest.map_or(0, |latest| self.edges[latest as usize].interval + 1);
        let index = self.edges.len() as EdgeIndex;
        let mut record = EdgeRecord::new(key, interval, valid_from, context.seq);
        record.set_valid_to(terms.valid_to.map(|to| to.max(valid_from)), context.seq);
        record.set_confidence(terms.confidence);
        self.edges.push(record);
        if !is_mention {
            self.edge_index.insert(key, index);
        }
        self.changes.parts.insert(GraphPart::Edges((u64::from(index) / GRAPH_CHUNK) as u32));
        for endpoint in [from, to] {
            let adjacency = &mut self.adjacency[endpoint as usize];
            let list = if is_mention { &mut adjacency.mentions } else { &mut adjacency.facts };
            if list.last() != Some(&index) {
                list.push(index);
            }
        }
        self.extend_edge(index, context, supporting, true);
        index
    }

    /// Whether an edge `from —relation→ …` is an item's mention: it sits
    /// in the adjacency's `mentions` and not in `edge_index`.
    fn is_mention(&self, from: NodeIndex, relation: RelationIndex) -> bool {
        self.relations[relation as usize] == relation::REFERENCES && self.nodes[from as usize].kind == EntityKind::Item
    }

    /// The edge of the latest validity interval of `(from, relation, to)`.
    /// An item's mentions are looked for among the item's own (one event
    /// makes them, a few each) instead of in `edge_index`, which they would
    /// fill: an index entry per mention was a fifth of the graph's RAM.
    fn latest_edge(&self, key: (NodeIndex, RelationIndex, NodeIndex), is_mention: bool) -> Option<EdgeIndex> {
        if !is_mention {
            return self.edge_index.get(&key).copied();
        }
        let (from, relation, to) = key;
        self.adjacency[from as usize].mentions.iter().rev().copied().find(|&edge| {
            let record = &self.edges[edge as usize];
            record.from == from && record.to == to && record.relation == relation
        })
    }

    /// Adds the supporting events and the current one to an edge's
    /// provenance and to its endpoints' links.
    /// `created`: the edge was just made by this event, whose seq is
    /// already its provenance.
    fn extend_edge(&mut self, edge: EdgeIndex, context: &EventContext, supporting: &[ProvenanceRef], created: bool) {
        let current = self.note(context);
        if !self.touched.0.contains(&edge) {
            self.touched.0.push(edge);
        }
        let record = &mut self.edges[edge as usize];
        let mut added = Vec::with_capacity(supporting.len() + 1);
        for reference in supporting {
            if record.insert_seq(reference.seq) {
                added.push(reference.seq);
            }
        }
        if created || record.insert_seq(current.seq) {
            added.push(current.seq);
        }
        if record.valid_to().is_some() && !added.is_empty() {
            self.closed_version.0 += 1;
        }
        for seq in added {
            self.note_edge_seq(edge, seq);
        }
    }

    /// Records that `seq` joined the edge's provenance: in the snapshot's
    /// provenance chunks and in its endpoints' links.
    pub(crate) fn note_edge_seq(&mut self, edge: EdgeIndex, seq: u64) {
        self.changes.parts.insert(GraphPart::EdgeProvenance((seq / GRAPH_CHUNK) as u32));
        if self.edge_provenance.tracked_from.is_some_and(|from| seq >= from) {
            self.edge_provenance.entries.push((seq, edge));
        }
        let record = &self.edges[edge as usize];
        let (from, to) = (record.from, record.to);
        let target_strength = if self.relations[record.relation as usize] == relation::REFERENCES {
            LinkStrength::Mention
        } else {
            LinkStrength::Direct
        };
        self.add_link(from, seq, LinkStrength::Direct);
        self.add_link(to, seq, target_strength);
    }

    /// Ends an edge's validity at `to` (clamped to its start) and records the
    /// event that ended it. An edge already ending earlier keeps its end.
    pub(crate) fn close_edge(&mut self, edge: EdgeIndex, to: Timestamp, context: &EventContext) {
        let record = &mut self.edges[edge as usize];
        let to = to.max(record.valid_from);
        if record.valid_to().is_none_or(|end| to < end) {
            record.set_valid_to(Some(to), context.seq);
            self.changes.parts.insert(GraphPart::Edges((u64::from(edge) / GRAPH_CHUNK) as u32));
            self.closed_version.0 += 1;
        }
        self.extend_edge(edge, context, &[], false);
    }

    /// The edges of [`NOTED_RELATIONS`] the last applied event created,
    /// confirmed or closed, by their endpoints' kinds and names, and empties
    /// the list. The others (an item's mentions, most edges) are not
    /// copied out: nothing reads them.
    pub(crate) fn take_touched(&mut self) -> Vec<TouchedEdge> {
        self.take_touched_edges().into_iter().map(|(edge, open)| self.touched_edge(edge, open)).collect()
    }

    /// [`FactGraph::take_touched`] as edge indexes, each with whether it
    /// was open after the event.
    pub(crate) fn take_touched_edges(&mut self) -> Vec<(EdgeIndex, bool)> {
        let mut touched = std::mem::take(&mut self.touched.0);
        let noted = touched
            .drain(..)
            .filter(|&edge| {
                let record = &self.edges[edge as usize];
                NOTED_RELATIONS.contains(&self.relations[record.relation as usize].as_str())
            })
            .map(|edge| (edge, self.edges[edge as usize].valid_to().is_none()))
            .collect();
        self.touched.0 = touched;
        noted
    }

    /// A touched edge by its endpoints' kinds and names.
    pub(crate) fn touched_edge(&self, edge: EdgeIndex, open: bool) -> TouchedEdge {
        let record = &self.edges[edge as usize];
        let (from, to) = (&self.nodes[record.from as usize], &self.nodes[record.to as usize]);
        TouchedEdge {
            relation: self.relations[record.relation as usize].clone(),
            from_kind: from.kind,
            from_name: from.name.clone(),
            to_kind: to.kind,
            to_name: to.name.clone(),
            open,
        }
    }

    pub(crate) fn relation_name(&self, edge: &EdgeRecord) -> &str {
        &self.relations[edge.relation as usize]
    }

    /// The id of an edge: `<from> -<relation>-> <to>`, then `#n` for its
    /// n-th validity interval from the second on.
    pub(crate) fn edge_id(&self, edge: EdgeIndex) -> String {
        let record = &self.edges[edge as usize];
        let from = &self.nodes[record.from as usize].id;
        let to = &self.nodes[record.to as usize].id;
        let relation = self.relation_name(record);
        let mut id = String::with_capacity(from.len() + relation.len() + to.len() + 8);
        id.push_str(from);
        id.push_str(" -");
        id.push_str(relation);
        id.push_str("-> ");
        id.push_str(to);
        if record.interval > 0 {
            id.push('#');
            id.push_str(&(record.interval + 1).to_string());
        }
        id
    }

    /// The public form of an edge whose id (see [`FactGraph::edge_id`]) is
    /// already computed.
    pub(crate) fn edge_view(&self, edge: EdgeIndex, id: String) -> Edge {
        let record = &self.edges[edge as usize];
        let from = &self.nodes[record.from as usize].id;
        let to = &self.nodes[record.to as usize].id;
        Edge {
            id,
            from: from.clone(),
            to: to.clone(),
            relation: self.relation_name(record).to_string(),
            valid_from: Some(record.valid_from),
            valid_to: record.valid_to(),
            recorded_seq: record.recorded_seq,
            confidence: record.confidence(),
            provenance: self.references(record.seqs()),
        }
    }

    /// An edge's provenance seqs as references. Every seq an edge holds is
    /// in [`FactGraph::events`]: noted when it was added, and a purge takes
    /// both out together.
    pub(crate) fn references(&self, seqs: &[u64]) -> Vec<ProvenanceRef> {
        seqs.iter().map(|&seq| self.reference(seq)).collect()
    }

    pub(crate) fn reference(&self, seq: u64) -> ProvenanceRef {
        let event = self.events.get(&seq).expect("every provenance seq of an edge has its event noted");
        ProvenanceRef { seq, event_id: event.id }
    }

    // ------------------------------------------------------------ links

    /// Remembers the event's time and returns its provenance reference.
    fn note(&mut self, context: &EventContext) -> ProvenanceRef {
        self.events.insert(context.seq, EventStamp { ts: context.ts, id: context.event_id });
        let chunk = (context.seq / GRAPH_CHUNK) as u32;
        self.changes.parts.insert(GraphPart::Events(chunk));
        // Every chunk of events has a chunk of edge provenance, if empty
        // (an event that only changed a node).
        self.changes.parts.insert(GraphPart::EdgeProvenance(chunk));
        context.provenance()
    }

    fn add_link(&mut self, node: NodeIndex, seq: u64, strength: LinkStrength) {
        let links = &mut self.links[node as usize];
        match links.last_mut() {
            Some(last) if last.seq() == seq => last.strengthen(strength),
            Some(last) if last.seq() > seq => match links.binary_search_by_key(&seq, |link| link.seq()) {
                Ok(found) => links[found].strengthen(strength),
                Err(position) => links.insert(position, Link::new(seq, strength)),
            },
            _ => links.push(Link::new(seq, strength)),
        }
    }

    /// Whether event `seq` created, changed or related `node` (more than
    /// mentioned it).
    pub(crate) fn is_directly_linked(&self, node: NodeIndex, seq: u64) -> bool {
        self.links[node as usize]
            .last()
            .is_some_and(|link| link.seq() == seq && link.strength() == LinkStrength::Direct)
    }

    /// Rebuilds every derived index from nodes and edges (after a restore).
    pub(crate) fn rebuild_indexes(&mut self) {
        self.node_index =
            self.nodes.iter().enumerate().map(|(index, node)| (node.id.clone(), index as NodeIndex)).collect();
        self.relation_index =
            self.relations.iter().enumerate().map(|(index, name)| (name.clone(), index as RelationIndex)).collect();
        self.adjacency = vec![Adjacency::default(); self.nodes.len()];
        self.links = vec![NodeLinks::new(); self.nodes.len()];
        self.names.clear();
        self.phrase_heads.clear();
        self.file_names.clear();
        self.edge_index.clear();
        // Links are gathered unordered and sorted once per node: inserting
        // each in seq order moved a hub entity's whole list per edge (a
        // third of a restore at 200,000 items, per perf).
        let mut links = std::mem::take(&mut self.links);
        for index in 0..self.nodes.len() as NodeIndex {
            self.index_name(index);
            let provenance = &self.nodes[index as usize].provenance;
            links[index as usize]
                .extend(provenance.iter().map(|reference| Link::new(reference.seq, LinkStrength::Direct)));
        }
        for index in 0..self.edges.len() as EdgeIndex {
            let record = &self.edges[index as usize];
            let (from, to) = (record.from, record.to);
            let is_reference = self.relations[record.relation as usize] == relation::REFERENCES;
            let is_mention = is_reference && self.nodes[from as usize].kind == EntityKind::Item;
            if !is_mention {
                self.edge_index.insert((from, record.relation, to), index);
            }
            let target_strength = if is_reference { LinkStrength::Mention } else { LinkStrength::Direct };
            for endpoint in [from, to] {
                let adjacency = &mut self.adjacency[endpoint as usize];
                let list = if is_mention { &mut adjacency.mentions } else { &mut adjacency.facts };
                if list.last() != Some(&index) {
                    list.push(index);
                }
            }
            for &seq in record.seqs() {
                links[from as usize].push(Link::new(seq, LinkStrength::Direct));
                links[to as usize].push(Link::new(seq, target_strength));
            }
        }
        for list in &mut links {
            // By seq, the strongest link of a seq first, and only it kept:
            // what `add_link` keeps.
            list.sort_unstable_by(|a, b| a.seq().cmp(&b.seq()).then(b.strength().cmp(&a.strength())));
            list.dedup_by_key(|link| link.seq());
            list.shrink_to_fit();
        }
        self.links = links;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_keeps_its_seq_and_its_strongest_strength_in_eight_bytes() {
        assert_eq!(std::mem::size_of::<Link>(), 8);
        let seq = (1 << 62) + 7;
        let mut link = Link::new(seq, LinkStrength::Mention);
        assert_eq!((link.seq(), link.strength()), (seq, LinkStrength::Mention));
        link.strengthen(LinkStrength::Direct);
        assert_eq!((link.seq(), link.strength()), (seq, LinkStrength::Direct));
        link.strengthen(LinkStrength::Mention);
        assert_eq!(link.strength(), LinkStrength::Direct);
        assert_eq!(std::mem::size_of::<NodeLinks>(), std::mem::size_of::<Vec<Link>>());
        assert_eq!(std::mem::size_of::<EdgeRecord>(), 40);
    }

    #[test]
    fn an_items_mentions_are_found_again_without_the_edge_index() {
        let mut graph = FactGraph::default();
        let id = EventId(7);
        let context =
            EventContext { seq: 3, event_id: id, ts: Timestamp(10), agent: "coder", kind: "message_recorded" };
        let item = graph.item_node(&context);
        let file = graph.entity(EntityKind::File, "src/a.rs", "src/a.rs", &context);
        let task = graph.entity(EntityKind::Task, "t1", "t1", &context);
        let mention = graph.link(item, relation::REFERENCES, file, &context);
        let fact = graph.link(task, relation::REFERENCES, file, &context);
        assert_eq!(graph.edge_index.len(), 1, "only the task's edge is indexed");
        // Linking the same triple again confirms the edge it made.
        assert_eq!(graph.link(item, relation::REFERENCES, file, &context), mention);
        assert_eq!(graph.link(task, relation::REFERENCES, file, &context), fact);
        assert_eq!(graph.edges.len(), 2);
        // And so after a restore rebuilt the indexes.
        graph.rebuild_indexes();
        assert_eq!(graph.edge_index.len(), 1);
        assert_eq!(graph.link(item, relation::REFERENCES, file, &context), mention);
        assert_eq!(graph.edges[mention as usize].seqs(), &[3]);
    }
}
