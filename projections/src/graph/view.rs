//! What one memory sees of the fact graph: its own graph (its agent's
//! private events, and what its verdicts changed) joined with the swarm's
//! graph of shared events (see [`super::swarm`]), shown only through the
//! events the memory holds.
//!
//! The two graphs meet at entity ids: `file:src/a.rs` in both is one
//! entity, whose links, edges and validity are those of both. An edge of
//! the swarm's graph is seen when one of its events is held (applied, and
//! neither purged nor refused as a repeated id), a node when one of its
//! links is; a closure only once its event is held. The swarm's graph may
//! have applied events this memory has not reached yet: they stay out of
//! sight until it does.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use mneme_events::Timestamp;

use super::history::FixOfFailure;
use super::model::{Edge, EntityKind, GraphQuery, Node, Subgraph};
use super::query::{
    MAX_HOPS, MAX_ITEMS_PER_ENTITY, MAX_SUBGRAPH_NODES, ScoreMap, WalkFilter, best_scores, item_score, rank_scores,
};
use super::store::{EdgeIndex, FactGraph, FactKey, LinkStrength, NodeIndex};
use crate::digest::ContentHasher;

/// Which events of the swarm's graph a memory holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Holding<'a> {
    /// The memory's checkpoint: later events are not its yet.
    pub(crate) through: u64,
    /// Events at or below `through` it does not hold: those it purged, and
    /// repeats of ids it had applied (few).
    pub(crate) unheld: &'a BTreeSet<u64>,
}

impl Holding<'_> {
    pub(crate) fn holds(&self, seq: u64) -> bool {
        seq <= self.through && (self.unheld.is_empty() || !self.unheld.contains(&seq))
    }
}

/// Which graph a node or edge index belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Layer {
    Own,
    Shared,
}

/// One entity as the memory sees it: its node in either graph, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Joint {
    pub(crate) own: Option<NodeIndex>,
    pub(crate) shared: Option<NodeIndex>,
}

/// The two graphs, as one memory sees them.
#[derive(Clone, Copy)]
pub struct GraphView<'a> {
    pub(crate) own: &'a FactGraph,
    pub(crate) shared: &'a FactGraph,
    pub(crate) holding: Holding<'a>,
    /// The memory holds every event of the swarm's graph (it has applied
    /// as far, and purged or refused none of them): nothing there needs
    /// checking, the usual case of a memory that keeps up.
    holds_all: bool,
}

impl<'a> GraphView<'a> {
    /// `shared_through`: how far the swarm's graph has taken the log.
    pub(crate) fn new(
        own: &'a FactGraph,
        shared: &'a FactGraph,
        shared_through: u64,
        holding: Holding<'a>,
    ) -> GraphView<'a> {
        let holds_all = holding.unheld.is_empty() && holding.through >= shared_through;
        GraphView { own, shared, holding, holds_all }
    }

    fn graph(&self, layer: Layer) -> &'a FactGraph {
        match layer {
            Layer::Own => self.own,
            Layer::Shared => self.shared,
        }
    }

    // ------------------------------------------------------------ visibility

    /// Whether the memory sees the edge (every edge of its own graph; an
    /// edge of the swarm's when it holds one of its events).
    pub(crate) fn sees_edge(&self, layer: Layer, edge: EdgeIndex) -> bool {
        match layer {
            Layer::Own => true,
            Layer::Shared if self.holds_all => true,
            Layer::Shared => {
                let record = &self.shared.edges[edge as usize];
                record.recorded_seq <= self.holding.through
                    && record
                        .seqs()
                        .iter()
                        .take_while(|&&seq| seq <= self.holding.through)
                        .any(|&seq| self.holding.holds(seq))
            }
        }
    }

    /// Whether the memory sees a node of the swarm's graph: one of its
    /// links is an event it holds.
    fn sees_shared_node(&self, node: NodeIndex) -> bool {
        if self.holds_all {
            return true;
        }
        self.shared.links[node as usize]
            .iter()
            .take_while(|link| link.seq() <= self.holding.through)
            .any(|link| self.holding.holds(link.seq()))
    }

    /// The shared node of this id, if the memory sees it.
    fn shared_node(&self, id: &str) -> Option<NodeIndex> {
        self.shared.node_index.get(id).copied().filter(|&node| self.sees_shared_node(node))
    }

    /// The entity of this id, if the memory sees it in either graph.
    pub(crate) fn joint(&self, id: &str) -> Option<Joint> {
        let joint = Joint { own: self.own.node_index.get(id).copied(), shared: self.shared_node(id) };
        (joint.own.is_some() || joint.shared.is_some()).then_some(joint)
    }

    /// The entity of a node reached in `layer`.
    fn joint_of(&self, layer: Layer, node: NodeIndex) -> Joint {
        match layer {
            Layer::Own => Joint { own: Some(node), shared: self.shared_node(&self.own.nodes[node as usize].id) },
            Layer::Shared => Joint {
                own: self.own.node_index.get(self.shared.nodes[node as usize].id.as_str()).copied(),
                shared: Some(node),
            },
        }
    }

    /// The entity's node in its first graph: its id, kind and name.
    fn first_node(&self, joint: Joint) -> &'a Node {
        match (joint.own, joint.shared) {
            (_, Some(shared)) => &self.shared.nodes[shared as usize],
            (Some(own), None) => &self.own.nodes[own as usize],
            (None, None) => unreachable!("an entity is in one graph at least"),
        }
    }

    // ------------------------------------------------------------ nodes

    /// The entity with this id as the memory sees it: names, attributes and
    /// validity of both graphs (the earlier end wins), provenance of both in
    /// log order, the swarm's only where held.
    pub fn node(&self, id: &str) -> Option<Node> {
        self.joint(id).map(|joint| self.merged_node(joint))
    }

    pub(crate) fn merged_node(&self, joint: Joint) -> Node {
        let own = joint.own.map(|node| &self.own.nodes[node as usize]);
        let shared = joint.shared.map(|node| &self.shared.nodes[node as usize]);
        match (own, shared) {
            (Some(own), None) => own.clone(),
            (None, Some(shared)) => self.held_node(shared),
            (Some(own), Some(shared)) => {
                let mut merged = self.held_node(shared);
                merged.attributes.extend(own.attributes.iter().map(|(key, value)| (key.clone(), value.clone())));
                merged.valid_from = earliest(merged.valid_from, own.valid_from);
                if own.valid_to.is_some() {
                    merged.valid_to = earliest(merged.valid_to, own.valid_to);
                    merged.closed_seq = earliest(merged.closed_seq, own.closed_seq);
                }
                merged.provenance.extend(own.provenance.iter().copied());
                merged.provenance.sort();
                merged.provenance.dedup();
                merged
            }
            (None, None) => unreachable!("an entity is in one graph at least"),
        }
    }

    /// A node of the swarm's graph as the memory sees it: provenance it
    /// holds, and an end only once it holds the event that closed it.
    fn held_node(&self, node: &Node) -> Node {
        let mut node = node.clone();
        node.provenance.retain(|reference| self.holding.holds(reference.seq));
        if node.closed_seq.is_some_and(|closed| !self.holding.holds(closed)) {
            node.valid_to = None;
            node.closed_seq = None;
        }
        node
    }

    /// Whether the entity had been closed as of the event at `seq`.
    pub(crate) fn is_closed_at(&self, id: &str, seq: u64) -> bool {
        let own = self.own.node(id).is_some_and(|node| node.is_closed_at(seq));
        own || self.shared_node(id).is_some_and(|node| self.shared.nodes[node as usize].is_closed_at(seq))
    }

    /// Whether an entity of `kind` named `name` is seen.
    pub(crate) fn has_entity_named(&self, kind: EntityKind, name: &str) -> bool {
        if self.own.has_entity_named(kind, name) {
            return true;
        }
        self.shared.names.get(&name.to_lowercase()).is_some_and(|nodes| {
            nodes.iter().any(|&node| self.shared.nodes[node as usize].kind == kind && self.sees_shared_node(node))
        })
    }

    /// The seqs of the events linked to the entity, ascending.
    pub fn items_of(&self, id: &str) -> Vec<u64> {
        let Some(joint) = self.joint(id) else { return Vec::new() };
        let mut seqs: Vec<u64> = joint
            .own
            .map(|node| self.own.links[node as usize].iter().map(|link| link.seq()).collect())
            .unwrap_or_default();
        if let Some(node) = joint.shared {
            seqs.extend(
                self.shared.links[node as usize].iter().map(|link| link.seq()).filter(|&seq| self.holding.holds(seq)),
            );
        }
        seqs.sort_unstable();
        seqs.dedup();
        seqs
    }

    /// How many held events link to a node of `layer`.
    fn link_count(&self, layer: Layer, node: NodeIndex) -> usize {
        let links = &self.graph(layer).links[node as usize];
        match layer {
            Layer::Own => links.len(),
            Layer::Shared if self.holds_all => links.len(),
            Layer::Shared => {
                let reached = links.partition_point(|link| link.seq() <= self.holding.through);
                if self.holding.unheld.is_empty() {
                    reached
                } else {
                    links[..reached].iter().filter(|link| self.holding.holds(link.seq())).count()
                }
            }
        }
    }

    /// Every entity seen whose kind `wanted` admits, with its number of
    /// linked events (both graphs'), its id and its name.
    pub(crate) fn entities_by_links(&self, wanted: impl Fn(EntityKind) -> bool) -> Vec<(usize, &'a str, &'a str)> {
        let mut found: Vec<(usize, &'a str, &'a str)> = Vec::new();
        let mut own_position: HashMap<&'a str, usize> = HashMap::new();
        for (index, node) in self.own.nodes.iter().enumerate() {
            if wanted(node.kind) {
                own_position.insert(node.id.as_str(), found.len());
                found.push((self.own.links[index].len(), node.id.as_str(), node.name.as_str()));
            }
        }
        for (index, node) in self.shared.nodes.iter().enumerate() {
            if !wanted(node.kind) {
                continue;
            }
            let links = self.link_count(Layer::Shared, index as NodeIndex);
            if links == 0 {
                continue;
            }
            match own_position.get(node.id.as_str()) {
                Some(&position) => {
                    found[position].0 += links;
                    found[position].2 = node.name.as_str();
                }
                None => found.push((links, node.id.as_str(), node.name.as_str())),
            }
        }
        found
    }

    // ------------------------------------------------------------ edges

    /// The public form of an edge of `layer`, with the provenance the memory
    /// holds and an end only once it holds the closing event.
    fn edge_of(&self, layer: Layer, edge: EdgeIndex, id: String) -> Edge {
        let graph = self.graph(layer);
        let mut view = graph.edge_view(edge, id);
        if layer == Layer::Shared {
            view.provenance.retain(|reference| self.holding.holds(reference.seq));
            if graph.edges[edge as usize].closed_seq().is_some_and(|closed| !self.holding.holds(closed)) {
                view.valid_to = None;
            }
        }
        view
    }

    /// Edges of both graphs by id; one id in both is one edge (the earlier
    /// end, the provenance of both).
    fn merged_edges(&self, edges: impl IntoIterator<Item = (Layer, EdgeIndex)>) -> Vec<Edge> {
        let mut by_id: BTreeMap<String, Edge> = BTreeMap::new();
        for (layer, edge) in edges {
            let id = self.graph(layer).edge_id(edge);
            let view = self.edge_of(layer, edge, id.clone());
            match by_id.get_mut(&id) {
                Some(known) => merge_edge(known, view),
                None => {
                    by_id.insert(id, view);
                }
            }
        }
        by_id.into_values().collect()
    }

    /// Every entity seen, sorted by id.
    pub fn nodes(&self) -> Vec<Node> {
        let mut ids: BTreeSet<&str> = self.own.nodes.iter().map(|node| node.id.as_str()).collect();
        ids.extend(
            (0..self.shared.nodes.len() as NodeIndex)
                .filter(|&node| self.sees_shared_node(node))
                .map(|node| self.shared.nodes[node as usize].id.as_str()),
        );
        ids.into_iter().filter_map(|id| self.node(id)).collect()
    }

    /// Every edge seen (every validity interval), sorted by id.
    pub fn edges(&self) -> Vec<Edge> {
        let own = (0..self.own.edges.len() as EdgeIndex).map(|edge| (Layer::Own, edge));
        let shared = (0..self.shared.edges.len() as EdgeIndex)
            .filter(|&edge| self.sees_edge(Layer::Shared, edge))
            .map(|edge| (Layer::Shared, edge));
        self.merged_edges(own.chain(shared))
    }

    /// The edges from or to the entity, sorted by id.
    pub fn edges_of(&self, id: &str) -> Vec<Edge> {
        let Some(joint) = self.joint(id) else { return Vec::new() };
        let mut edges = Vec::new();
        for (layer, node) in [(Layer::Own, joint.own), (Layer::Shared, joint.shared)] {
            let Some(node) = node else { continue };
            let adjacency = &self.graph(layer).adjacency[node as usize];
            edges.extend(
                adjacency
                    .facts
                    .iter()
                    .chain(&adjacency.mentions)
                    .copied()
                    .filter(|&edge| self.sees_edge(layer, edge))
                    .map(|edge| (layer, edge)),
            );
        }
        self.merged_edges(edges)
    }

    /// Entities seen.
    pub fn node_count(&self) -> usize {
        self.nodes().len()
    }

    /// Edges seen.
    pub fn edge_count(&self) -> usize {
        self.edges().len()
    }

    /// The edge with this id, if the memory sees it.
    pub fn edge(&self, id: &str) -> Option<Edge> {
        let mut found = Vec::new();
        for layer in [Layer::Own, Layer::Shared] {
            let graph = self.graph(layer);
            for edge in 0..graph.edges.len() as EdgeIndex {
                if self.sees_edge(layer, edge) && graph.edge_id(edge) == id {
                    found.push((layer, edge));
                }
            }
        }
        self.merged_edges(found).into_iter().next()
    }

    // ------------------------------------------------------------ text

    /// Entities named in free text (see [`FactGraph::entities_in_text`]),
    /// in either graph. Sorted, deduplicated.
    pub fn entities_in_text(&self, text: &str) -> Vec<String> {
        let mut ids = self.own.entities_in_text(text);
        if !self.shared.nodes.is_empty() {
            ids.extend(
                self.shared
                    .entity_nodes_in_text(text)
                    .into_iter()
                    .filter(|&node| self.sees_shared_node(node))
                    .map(|node| self.shared.nodes[node as usize].id.clone()),
            );
        }
        ids.sort();
        ids.dedup();
        ids
    }

    /// The entity `text` names (an id, a name, a path, a concept).
    pub(crate) fn resolve_query_entity(&self, text: &str) -> Option<String> {
        if self.joint(text).is_some() {
            return Some(text.to_string());
        }
        let own = self.own.resolve_query_entity(text).map(|node| &self.own.nodes[node as usize]);
        let shared = self
            .shared
            .resolve_query_entity(text)
            .filter(|&node| self.sees_shared_node(node))
            .map(|node| &self.shared.nodes[node as usize]);
        match (own, shared) {
            (Some(own), Some(shared)) => {
                let rank = |node: &Node| node.kind.preference_rank();
                Some(if rank(shared) < rank(own) { shared.id.clone() } else { own.id.clone() })
            }
            (own, shared) => own.or(shared).map(|node| node.id.clone()),
        }
    }

    // ------------------------------------------------------------ walks

    /// The neighbourhood of an entity (see [`FactGraph::neighbourhood`]).
    pub fn neighbourhood(&self, query: &GraphQuery) -> Option<Subgraph> {
        let center_id = self.resolve_query_entity(&query.entity)?;
        let center = self.joint(&center_id)?;
        let filter = |graph: &FactGraph| WalkFilter {
            relations: (!query.relations.is_empty()).then(|| {
                query.relations.iter().filter_map(|name| graph.relation_index.get(name.as_str()).copied()).collect()
            }),
            as_of: query.as_of,
        };
        let filters = [filter(self.own), filter(self.shared)];
        let walk = self.walk(&[center], query.hops.min(MAX_HOPS), &filters);
        let mut nodes: Vec<Node> = walk.nodes.iter().map(|&(joint, _)| self.merged_node(joint)).collect();
        nodes.sort_by(|a, b| a.id.cmp(&b.id));
        let edges = self.merged_edges(walk.edges);
        Some(Subgraph { center: self.first_node(center).id.clone(), nodes, edges })
    }

    /// Items linked to these entities and their neighbours (see
    /// [`FactGraph::items_near`]), in both graphs.
    pub fn items_near(&self, entity_ids: &[String], hops: usize, as_of: Option<Timestamp>) -> Vec<(u64, f32)> {
        rank_scores(self.scores_near(entity_ids, hops, as_of))
    }

    /// The `limit` best of [`GraphView::items_near`] that `keep` keeps, in
    /// the same order.
    pub fn best_items_near(
        &self,
        entity_ids: &[String],
        hops: usize,
        keep: &dyn Fn(u64) -> bool,
        limit: usize,
    ) -> Vec<(u64, f32)> {
        best_scores(self.scores_near(entity_ids, hops, None), keep, limit)
    }

    fn scores_near(&self, entity_ids: &[String], hops: usize, as_of: Option<Timestamp>) -> ScoreMap {
        let mut starts: Vec<Joint> = Vec::new();
        for id in entity_ids {
            if let Some(joint) = self.joint(id)
                && !starts.contains(&joint)
            {
                starts.push(joint);
            }
        }
        let mut scores = ScoreMap::default();
        if starts.is_empty() {
            return scores;
        }
        let filter = WalkFilter { relations: None, as_of };
        let walk = self.walk(&starts, hops.min(MAX_HOPS), &[filter.clone(), filter]);
        for &(joint, distance) in &walk.nodes {
            if distance > 0 && self.first_node(joint).kind.is_hub() {
                continue;
            }
            let links = self.links_newest_first(joint, as_of);
            for (seq, strength) in links.take(MAX_ITEMS_PER_ENTITY >> (2 * distance)) {
                item_score(&mut scores, seq, strength, distance);
            }
        }
        scores
    }

    /// The entity's links in both graphs (the swarm's where held), newest
    /// first, one per seq (the stronger), up to `as_of` in event time.
    fn links_newest_first(
        &self,
        joint: Joint,
        as_of: Option<Timestamp>,
    ) -> impl Iterator<Item = (u64, LinkStrength)> + '_ {
        let in_time = move |graph: &FactGraph, seq: u64| {
            as_of.is_none_or(|at| graph.events.get(&seq).is_some_and(|event| event.ts <= at))
        };
        let own = joint
            .own
            .into_iter()
            .flat_map(move |node| self.own.links[node as usize].iter().rev())
            .map(|link| (link.seq(), link.strength()))
            .filter(move |&(seq, _)| in_time(self.own, seq));
        let shared = joint
            .shared
            .into_iter()
            .flat_map(move |node| self.shared.links[node as usize].iter().rev())
            .map(|link| (link.seq(), link.strength()))
            .filter(move |&(seq, _)| self.holding.holds(seq) && in_time(self.shared, seq));
        MergeNewest { a: own.peekable(), b: shared.peekable() }
    }

    /// Breadth-first walk over both graphs from `starts`, within the bounds
    /// of [`FactGraph::walk`].
    fn walk(&self, starts: &[Joint], hops: usize, filters: &[WalkFilter; 2]) -> JointWalk<'a> {
        let mut reached: HashSet<&'a str> = HashSet::new();
        let mut nodes = Vec::new();
        for &start in starts {
            if reached.insert(self.first_node(start).id.as_str()) {
                nodes.push((start, 0));
            }
        }
        let mut edges_seen: HashSet<(Layer, EdgeIndex)> = HashSet::new();
        let mut edges = Vec::new();
        let mut frontier: Vec<Joint> = nodes.iter().map(|&(joint, _)| joint).collect();
        for depth in 0..hops {
            let mut next = Vec::new();
            for &joint in &frontier {
                if depth > 0 && self.first_node(joint).kind.is_hub() {
                    continue;
                }
                let sides = [(Layer::Own, joint.own, &filters[0]), (Layer::Shared, joint.shared, &filters[1])];
                for (layer, node, filter) in sides {
                    let Some(node) = node else { continue };
                    let graph = self.graph(layer);
                    let visible = |edge: EdgeIndex| self.sees_edge(layer, edge);
                    for edge in graph.edges_to_follow(node, filter, &visible) {
                        let record = &graph.edges[edge as usize];
                        let other = if record.from == node { record.to } else { record.from };
                        let other_joint = self.joint_of(layer, other);
                        if filter.as_of.is_some_and(|at| !self.merged_node(other_joint).is_valid_at(at)) {
                            continue;
                        }
                        let other_id = self.first_node(other_joint).id.as_str();
                        if !reached.contains(other_id) {
                            if reached.len() >= MAX_SUBGRAPH_NODES {
                                continue;
                            }
                            reached.insert(other_id);
                            nodes.push((other_joint, depth + 1));
                            next.push(other_joint);
                        }
                        if edges_seen.insert((layer, edge)) {
                            edges.push((layer, edge));
                        }
                    }
                }
            }
            frontier = next;
        }
        JointWalk { nodes, edges, _graphs: std::marker::PhantomData }
    }

    // ------------------------------------------------------------ history

    /// The decision that superseded the decision made by `decision_id`.
    pub fn superseding_decision(&self, decision_id: &str) -> Option<String> {
        let own = self.own.superseding_edge(decision_id, &|_| true);
        let shared = self.shared.superseding_edge(decision_id, &|edge| self.sees_edge(Layer::Shared, edge));
        [own, shared].into_iter().flatten().min().map(|(_, id)| id)
    }

    /// The provenance of every closed fact interval the memory sees (see
    /// [`FactGraph::closed_fact_provenance`]): the swarm's with the events
    /// it holds, closed by an event it holds.
    pub(crate) fn closed_fact_provenance(&self) -> Vec<Vec<u64>> {
        let mut closed: Vec<Vec<u64>> = self
            .own
            .closed_fact_edges()
            .into_iter()
            .map(|edge| self.own.edges[edge as usize].seqs().to_vec())
            .collect();
        for edge in self.shared.closed_fact_edges() {
            let record = &self.shared.edges[edge as usize];
            if record.closed_seq().is_some_and(|seq| self.holding.holds(seq)) {
                let seqs: Vec<u64> = record.seqs().iter().copied().filter(|&seq| self.holding.holds(seq)).collect();
                if !seqs.is_empty() {
                    closed.push(seqs);
                }
            }
        }
        closed
    }

    /// What fixed the errors the run at `failing_seq` failed with (see
    /// [`FactGraph::fixes_of_failure`]): a failure and its fix are found in
    /// the graph that holds the failing run.
    pub fn fixes_of_failure(&self, agent: &str, failing_seq: u64) -> Vec<FixOfFailure> {
        let own = self.own.fixes_of_failure(agent, failing_seq);
        if !own.is_empty() || !self.holding.holds(failing_seq) {
            return own;
        }
        let mut fixes = self.shared.fixes_of_failure(agent, failing_seq);
        for fix in &mut fixes {
            for (_, edits) in &mut fix.files {
                edits.retain(|edit| self.holding.holds(edit.seq));
            }
            fix.files.retain(|(_, edits)| !edits.is_empty());
            if fix.passed.is_some_and(|passed| !self.holding.holds(passed.seq)) {
                fix.passed = None;
            }
        }
        fixes.retain(|fix| !fix.files.is_empty());
        fixes
    }

    /// The seqs of the events behind facts still valid as of the event at
    /// `seq`, in both graphs.
    pub(crate) fn valid_fact_seqs_at(&self, seq: u64) -> BTreeSet<u64> {
        let mut valid = BTreeSet::new();
        // A shared fact this memory's verdict ended is ended in its own graph.
        let own_closed: HashSet<String> = self
            .own
            .fact_edges()
            .into_iter()
            .filter(|&edge| self.own.edges[edge as usize].is_closed_at(seq))
            .map(|edge| self.own.edge_id(edge))
            .collect();
        for (layer, graph) in [(Layer::Own, self.own), (Layer::Shared, self.shared)] {
            for edge in graph.fact_edges() {
                let record = &graph.edges[edge as usize];
                if record.recorded_seq > seq || record.is_closed_at(seq) {
                    continue;
                }
                if layer == Layer::Shared && !own_closed.is_empty() && own_closed.contains(&graph.edge_id(edge)) {
                    continue;
                }
                valid.extend(
                    record
                        .seqs()
                        .iter()
                        .copied()
                        .filter(|&held| held <= seq && (layer == Layer::Own || self.holding.holds(held))),
                );
            }
        }
        valid
    }

    /// Files linked to any of `seqs`, in both graphs.
    pub(crate) fn files_linked_to(&self, seqs: &BTreeSet<u64>) -> BTreeSet<String> {
        let mut files = BTreeSet::new();
        for graph in [self.own, self.shared] {
            for (index, node) in graph.nodes.iter().enumerate() {
                if node.kind == EntityKind::File && graph.links[index].iter().any(|link| seqs.contains(&link.seq())) {
                    files.insert(node.name.clone());
                }
            }
        }
        files
    }

    /// Every asserted fact the memory sees: (subject, predicate, object) as
    /// written, the edge's start and end, and its events.
    pub(crate) fn facts(&self) -> Vec<(&'a FactKey, Timestamp, Option<Timestamp>, Vec<u64>)> {
        let mut facts: BTreeMap<&'a FactKey, FactTerms> = BTreeMap::new();
        for (key, &edge) in &self.own.facts {
            let record = &self.own.edges[edge as usize];
            facts.insert(key, (record.valid_from, record.valid_to(), record.seqs().to_vec()));
        }
        for (key, &edge) in &self.shared.facts {
            if !self.sees_edge(Layer::Shared, edge) {
                continue;
            }
            let record = &self.shared.edges[edge as usize];
            let valid_to = record.valid_to().filter(|_| record.closed_seq().is_some_and(|seq| self.holding.holds(seq)));
            let seqs: Vec<u64> = record.seqs().iter().copied().filter(|&seq| self.holding.holds(seq)).collect();
            match facts.get_mut(key) {
                // The same fact in both: this memory's verdict ended it.
                Some(known) => {
                    known.1 = earliest(known.1, valid_to);
                    known.2.extend(seqs);
                    known.2.sort_unstable();
                    known.2.dedup();
                }
                None => {
                    facts.insert(key, (record.valid_from, valid_to, seqs));
                }
            }
        }
        facts.into_iter().map(|(key, (from, to, seqs))| (key, from, to, seqs)).collect()
    }

    /// Per entity seen (by id), its linked events in both graphs, ascending,
    /// for the entities `wanted` admits; stops counting an entity's events
    /// past `limit` (`limit + 1` are then returned).
    pub(crate) fn entity_links(
        &self,
        wanted: impl Fn(&Node) -> bool,
        keep: impl Fn(u64) -> bool,
        limit: usize,
    ) -> BTreeMap<&'a str, Vec<u64>> {
        let mut by_id: BTreeMap<&'a str, Vec<u64>> = BTreeMap::new();
        for (layer, graph) in [(Layer::Own, self.own), (Layer::Shared, self.shared)] {
            for (index, node) in graph.nodes.iter().enumerate() {
                if !wanted(node) {
                    continue;
                }
                let seqs = by_id.entry(node.id.as_str()).or_default();
                for link in &graph.links[index] {
                    if seqs.len() > limit {
                        break;
                    }
                    let seq = link.seq();
                    if (layer == Layer::Own || self.holding.holds(seq)) && keep(seq) && !seqs.contains(&seq) {
                        seqs.push(seq);
                    }
                }
            }
        }
        for seqs in by_id.values_mut() {
            seqs.sort_unstable();
        }
        by_id.retain(|_, seqs| !seqs.is_empty());
        by_id
    }
}

impl GraphView<'_> {
    /// A stable hash of what the memory sees of the swarm's graph, as of its
    /// checkpoint: each node and edge it sees, by id, with the events it
    /// holds and whether it is closed. Names, attributes and confidences
    /// are left out: the swarm's graph may have changed them since, and the
    /// memory's digest must be the same however far it has gone (the
    /// swarm's graph is checked whole by its own digest).
    pub fn shared_digest(&self) -> String {
        let mut hasher = ContentHasher::default();
        hasher.text("mneme-swarm-graph-view");
        let mut nodes: Vec<(&str, NodeIndex)> = (0..self.shared.nodes.len() as NodeIndex)
            .filter(|&node| self.sees_shared_node(node))
            .map(|node| (self.shared.nodes[node as usize].id.as_str(), node))
            .collect();
        nodes.sort_unstable();
        hasher.number(nodes.len() as u64);
        for (id, node) in nodes {
            let record = &self.shared.nodes[node as usize];
            hasher.text(id);
            hasher.number(u64::from(record.closed_seq.is_some_and(|seq| self.holding.holds(seq))));
            let held: Vec<u64> = self.shared.links[node as usize]
                .iter()
                .map(|link| link.seq())
                .filter(|&seq| self.holding.holds(seq))
                .collect();
            hasher.number(held.len() as u64);
            for seq in held {
                hasher.number(seq);
            }
        }
        let mut edges: Vec<(String, EdgeIndex)> = (0..self.shared.edges.len() as EdgeIndex)
            .filter(|&edge| self.sees_edge(Layer::Shared, edge))
            .map(|edge| (self.shared.edge_id(edge), edge))
            .collect();
        edges.sort_unstable();
        hasher.number(edges.len() as u64);
        for (id, edge) in edges {
            let record = &self.shared.edges[edge as usize];
            hasher.text(&id);
            hasher.time(Some(record.valid_from));
            hasher.number(record.recorded_seq);
            hasher.number(u64::from(record.closed_seq().is_some_and(|seq| self.holding.holds(seq))));
            let held: Vec<u64> = record.seqs().iter().copied().filter(|&seq| self.holding.holds(seq)).collect();
            hasher.number(held.len() as u64);
            for seq in held {
                hasher.number(seq);
            }
        }
        hasher.finish()
    }
}

/// A fact's start, end and events, as [`GraphView::facts`] gathers them.
type FactTerms = (Timestamp, Option<Timestamp>, Vec<u64>);

/// The nodes and edges a walk over both graphs reached.
struct JointWalk<'a> {
    nodes: Vec<(Joint, usize)>,
    edges: Vec<(Layer, EdgeIndex)>,
    _graphs: std::marker::PhantomData<&'a FactGraph>,
}

/// Two iterators of (seq, strength), each newest first, merged newest
/// first; a seq in both once, with the stronger strength.
struct MergeNewest<A: Iterator<Item = (u64, LinkStrength)>, B: Iterator<Item = (u64, LinkStrength)>> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
}

impl<A: Iterator<Item = (u64, LinkStrength)>, B: Iterator<Item = (u64, LinkStrength)>> Iterator for MergeNewest<A, B> {
    type Item = (u64, LinkStrength);

    fn next(&mut self) -> Option<(u64, LinkStrength)> {
        match (self.a.peek().copied(), self.b.peek().copied()) {
            (Some(a), Some(b)) if a.0 == b.0 => {
                self.a.next();
                self.b.next();
                Some((
                    a.0,
                    if a.1 == LinkStrength::Direct || b.1 == LinkStrength::Direct { LinkStrength::Direct } else { a.1 },
                ))
            }
            (Some(a), Some(b)) if a.0 > b.0 => self.a.next(),
            (Some(_), Some(_)) | (None, Some(_)) => self.b.next(),
            (Some(_), None) => self.a.next(),
            (None, None) => None,
        }
    }
}

fn earliest<T: Ord>(a: Option<T>, b: Option<T>) -> Option<T> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One edge id in both graphs: the earlier end, the provenance of both.
fn merge_edge(known: &mut Edge, other: Edge) {
    known.valid_from = earliest(known.valid_from, other.valid_from);
    known.valid_to = earliest(known.valid_to, other.valid_to);
    known.recorded_seq = known.recorded_seq.min(other.recorded_seq);
    known.confidence = known.confidence.or(other.confidence);
    known.provenance.extend(other.provenance);
    known.provenance.sort();
    known.provenance.dedup();
}
