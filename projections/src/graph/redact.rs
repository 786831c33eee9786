//! Erasure in the graph: what purged events told it is taken out, and what
//! other events still say stays.

use std::collections::{BTreeMap, BTreeSet};

use super::fixes::{ErrorWatch, FailureTracker, WatchedCommand};
use super::model::EntityKind;
use super::store::{EdgeIndex, EdgeProvenanceLog, FactGraph, NodeIndex, TouchedScratch};
use crate::item::ProvenanceRef;

impl FactGraph {
    /// A purge of the events at `purged` seqs. Their seqs leave every
    /// provenance list; an edge no other event supports goes, and so does a
    /// node that no other event created, changed or links to (so an entity
    /// named only by purged events, a secret among them, is gone by name
    /// too). A node that stays but was changed by a purged event loses its
    /// attributes, because which event set which attribute is not recorded;
    /// erring towards erasure. Indexes are then rebuilt as on a restore, so
    /// a purged graph, its snapshot and its replay agree. Answers where
    /// each kept edge went (`None`: the purge touched nothing).
    pub(crate) fn redact(&mut self, purged: &BTreeSet<u64>) -> Option<BTreeMap<EdgeIndex, EdgeIndex>> {
        let is_purged = |reference: &ProvenanceRef| purged.contains(&reference.seq);
        let touched_by_purge = |provenance: &[ProvenanceRef]| provenance.iter().any(is_purged);
        if !self.nodes.iter().any(|node| touched_by_purge(&node.provenance))
            && !self.edges.iter().any(|edge| edge.seqs().iter().any(|seq| purged.contains(seq)))
        {
            return None;
        }
        // Nodes and edges are renumbered: every chunk changes, and the
        // edge indexes of the provenance log are stale.
        self.changes.all = true;
        self.closed_version.0 += 1;
        self.edge_provenance = EdgeProvenanceLog { tracked_from: None, entries: Vec::new() };
        let mut keep_edge = Vec::with_capacity(self.edges.len());
        for edge in &mut self.edges {
            keep_edge.push(edge.retain_seqs(|seq| !purged.contains(&seq)));
        }
        let mut keep_node = Vec::with_capacity(self.nodes.len());
        for node in &mut self.nodes {
            if touched_by_purge(&node.provenance) {
                node.provenance.retain(|reference| !is_purged(reference));
                node.attributes.clear();
            }
            keep_node.push(!node.provenance.is_empty());
        }
        for (edge, _) in self.edges.iter().zip(&keep_edge).filter(|(_, keep)| **keep) {
            keep_node[edge.from as usize] = true;
            keep_node[edge.to as usize] = true;
        }
        let node_map = renumber(&keep_node);
        let edge_map = renumber(&keep_edge);
        let mut used_relations = vec![false; self.relations.len()];
        for (edge, _) in self.edges.iter().zip(&keep_edge).filter(|(_, keep)| **keep) {
            used_relations[edge.relation as usize] = true;
        }
        let relation_map = renumber(&used_relations);

        self.nodes = std::mem::take(&mut self.nodes)
            .into_iter()
            .zip(&keep_node)
            .filter(|(_, keep)| **keep)
            .map(|(node, _)| node)
            .collect();
        self.edges = std::mem::take(&mut self.edges)
            .into_iter()
            .zip(&keep_edge)
            .filter(|(_, keep)| **keep)
            .map(|(mut edge, _)| {
                edge.from = node_map[&edge.from];
                edge.to = node_map[&edge.to];
                edge.relation = relation_map[&edge.relation];
                edge
            })
            .collect();
        self.relations = std::mem::take(&mut self.relations)
            .into_iter()
            .zip(&used_relations)
            .filter(|(_, used)| **used)
            .map(|(relation, _)| relation)
            .collect();
        self.events.retain(|seq, _| !purged.contains(seq));
        self.facts = std::mem::take(&mut self.facts)
            .into_iter()
            .filter_map(|(key, edge)| Some((key, *edge_map.get(&edge)?)))
            .collect();
        self.failures = redact_failures(&self.failures, &node_map, &edge_map, purged);
        self.touched = TouchedScratch::default();
        self.rebuild_indexes();
        Some(edge_map)
    }
}

impl FactGraph {
    /// Whether an entity of `kind` named `name` (any case) is in the graph:
    /// after a purge, whether anything still says the name.
    pub(crate) fn has_entity_named(&self, kind: EntityKind, name: &str) -> bool {
        self.names
            .get(&name.to_lowercase())
            .is_some_and(|nodes| nodes.iter().any(|&node| self.nodes[node as usize].kind == kind))
    }
}

/// Old index → new index of the kept entries, in their old order.
fn renumber<Index: TryFrom<usize> + Ord + Copy>(keep: &[bool]) -> BTreeMap<Index, Index>
where
    <Index as TryFrom<usize>>::Error: std::fmt::Debug,
{
    keep.iter()
        .enumerate()
        .filter(|(_, keep)| **keep)
        .enumerate()
        .map(|(new, (old, _))| {
            (Index::try_from(old).expect("an index fits"), Index::try_from(new).expect("an index fits"))
        })
        .collect()
}

/// The failing commands still watched after a purge: those whose command,
/// error and `fails_with` edge survive, with the purged edits dropped.
fn redact_failures(
    tracker: &FailureTracker,
    node_map: &BTreeMap<NodeIndex, NodeIndex>,
    edge_map: &BTreeMap<EdgeIndex, EdgeIndex>,
    purged: &BTreeSet<u64>,
) -> FailureTracker {
    let mut redacted = FailureTracker::default();
    for (command, watched) in &tracker.watched {
        let Some(&command) = node_map.get(command) else { continue };
        let mut errors = BTreeMap::new();
        for (error, watch) in &watched.errors {
            let (Some(&error), Some(&fails_with)) = (node_map.get(error), edge_map.get(&watch.fails_with)) else {
                continue;
            };
            let mut edits = BTreeMap::new();
            for (file, file_edits) in &watch.edits {
                let Some(&file) = node_map.get(file) else { continue };
                let kept: Vec<ProvenanceRef> =
                    file_edits.iter().copied().filter(|edit| !purged.contains(&edit.seq)).collect();
                if !kept.is_empty() {
                    edits.insert(file, kept);
                }
            }
            errors.insert(error, ErrorWatch { fails_with, edits });
        }
        if !errors.is_empty() {
            redacted.watched.insert(command, WatchedCommand { last_failure_seq: watched.last_failure_seq, errors });
        }
    }
    redacted
}
