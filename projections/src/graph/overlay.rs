//! A memory's verdicts on what the swarm's graph holds: a resolved
//! contradiction that ends a shared fact or decision ends it in this
//! memory only. The memory's own graph takes a copy of the fact's edge (or
//! of the decision's node) under the same id and ends the copy; a
//! [`GraphView`](super::view::GraphView) joins the two by id and shows the
//! earlier end.

use mneme_events::{Event, Timestamp};

use super::store::{EdgeIndex, EdgeRecord, EventContext, FactGraph, FactKey, NodeIndex};
use crate::chunks::{GRAPH_CHUNK, GraphPart};
use crate::item::ProvenanceRef;

impl FactGraph {
    /// Ends, in this (a memory's own) graph, what the shared event at
    /// `created` asserted in the swarm's graph `shared`: its fact's edge or
    /// its decision. `holds` says which of the swarm's events the memory
    /// holds: the copy's provenance is those, and the closing event.
    pub(crate) fn close_shared_asserted(
        &mut self,
        shared: &FactGraph,
        created: ProvenanceRef,
        to: Timestamp,
        closing_seq: u64,
        closing: &Event,
        holds: &dyn Fn(u64) -> bool,
    ) {
        let context = EventContext::new(closing_seq, closing);
        let fact = shared
            .facts
            .iter()
            .find(|(_, edge)| shared.edges[**edge as usize].seqs().contains(&created.seq))
            .map(|(key, edge)| (key.clone(), *edge));
        if let Some((key, edge)) = fact
            && let Some(copy) = self.copy_shared_edge(shared, edge, key, holds, &context)
        {
            self.close_edge(copy, to, &context);
        }
        let decision_id = format!("decision:{}", created.event_id);
        if let Some(&decision) = shared.node_index.get(&decision_id) {
            let node = self.copy_shared_node(shared, decision, &context);
            self.close_validity(node, to, &context);
        }
        self.touched.0.clear();
    }

    /// This graph's node of the same id as the swarm's `node`.
    fn copy_shared_node(&mut self, shared: &FactGraph, node: NodeIndex, context: &EventContext) -> NodeIndex {
        let original = &shared.nodes[node as usize];
        let key = original.id.split_once(':').map_or(original.id.as_str(), |(_, key)| key);
        self.entity(original.kind, key, &original.name, context)
    }

    /// This graph's copy of the swarm's fact edge `edge` (same endpoints,
    /// relation, interval and start), with the events of it the memory
    /// holds; made once.
    fn copy_shared_edge(
        &mut self,
        shared: &FactGraph,
        edge: EdgeIndex,
        key: FactKey,
        holds: &dyn Fn(u64) -> bool,
        context: &EventContext,
    ) -> Option<EdgeIndex> {
        let original = &shared.edges[edge as usize];
        let seqs: Vec<u64> = original.seqs().iter().copied().filter(|&seq| holds(seq)).collect();
        if seqs.is_empty() {
            return None;
        }
        let from = self.copy_shared_node(shared, original.from, context);
        let to = self.copy_shared_node(shared, original.to, context);
        let relation = self.relation(shared.relation_name(original));
        let existing = self.adjacency[from as usize].facts.iter().copied().find(|&candidate| {
            let record = &self.edges[candidate as usize];
            record.from == from
                && record.to == to
                && record.relation == relation
                && record.interval == original.interval
        });
        if existing.is_some() {
            return existing;
        }
        let index = self.edges.len() as EdgeIndex;
        let mut record =
            EdgeRecord::new((from, relation, to), original.interval, original.valid_from, original.recorded_seq);
        record.set_confidence(original.confidence());
        for &seq in &seqs {
            if let Some(stamp) = shared.events.get(&seq) {
                self.events.insert(seq, *stamp);
                self.changes.parts.insert(GraphPart::Events((seq / GRAPH_CHUNK) as u32));
            }
        }
        record.set_seqs(seqs.clone());
        self.edges.push(record);
        self.edge_index.insert((from, relation, to), index);
        self.changes.parts.insert(GraphPart::Edges((u64::from(index) / GRAPH_CHUNK) as u32));
        for endpoint in [from, to] {
            self.adjacency[endpoint as usize].facts.push(index);
        }
        self.facts.insert(key, index);
        for seq in seqs {
            self.note_edge_seq(index, seq);
        }
        Some(index)
    }
}
