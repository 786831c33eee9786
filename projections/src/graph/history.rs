//! What later events settled about earlier ones, read from the graph as it
//! stands: the decision that superseded a decision, the events that closed
//! an asserted fact, and the edits that fixed a failing run. Nothing here is
//! stored: a restored or replayed graph answers the same.

use super::model::{EntityKind, relation};
use super::store::{EdgeIndex, EdgeRecord, FactGraph, NodeIndex};
use crate::item::ProvenanceRef;

/// The fix of one error a run failed with: the files whose edits, made
/// after the failure, the graph links to the error by `fixes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixOfFailure {
    /// The error's id (`error:rust:assertion_failed:…`).
    pub error: String,
    /// Each file that fixes it (path), with the edits made after the
    /// failure, in log order.
    pub files: Vec<(String, Vec<ProvenanceRef>)>,
    /// The run of the same command that passed and closed the failure.
    pub passed: Option<ProvenanceRef>,
}

impl FactGraph {
    /// The id of the `decision_made` event that superseded the decision made
    /// by event `decision_id` (the first, if several did); `None` while it
    /// stands.
    pub fn superseding_decision(&self, decision_id: &str) -> Option<String> {
        self.superseding_edge(decision_id, &|_| true).map(|(_, id)| id)
    }

    /// The first `supersedes` edge into the decision that `visible`
    /// admits: its seq and the superseding decision's event id.
    pub(crate) fn superseding_edge(
        &self,
        decision_id: &str,
        visible: &dyn Fn(EdgeIndex) -> bool,
    ) -> Option<(u64, String)> {
        let node = self.find(EntityKind::Decision, decision_id)?;
        self.adjacency[node as usize]
            .facts
            .iter()
            .filter(|&&edge| visible(edge))
            .map(|&edge| &self.edges[edge as usize])
            .filter(|edge| edge.to == node && self.relation_name(edge) == relation::SUPERSEDES)
            .min_by_key(|edge| edge.recorded_seq)
            .map(|edge| (edge.recorded_seq, self.node_at(edge.from).id.trim_start_matches("decision:").to_string()))
    }

    /// The edge of every asserted fact whose validity has ended, one per
    /// validity interval. Open facts, by far the most, cost one comparison
    /// each.
    pub(crate) fn closed_fact_edges(&self) -> Vec<EdgeIndex> {
        let mut closed = Vec::new();
        for &latest in self.facts.values() {
            let record = &self.edges[latest as usize];
            if record.interval == 0 {
                if record.valid_to().is_some() {
                    closed.push(latest);
                }
                continue;
            }
            // Earlier intervals of the triple are in the subject's adjacency.
            for &edge in &self.adjacency[record.from as usize].facts {
                let other = &self.edges[edge as usize];
                let same_triple = other.to == record.to && other.relation == record.relation;
                if same_triple && other.valid_to().is_some() {
                    closed.push(edge);
                }
            }
        }
        closed
    }

    /// Every interval of every asserted fact.
    pub(crate) fn fact_edges(&self) -> Vec<EdgeIndex> {
        let mut edges = Vec::new();
        for &latest in self.facts.values() {
            let record = &self.edges[latest as usize];
            if record.interval == 0 {
                edges.push(latest);
                continue;
            }
            for &edge in &self.adjacency[record.from as usize].facts {
                let other = &self.edges[edge as usize];
                if other.from == record.from && other.to == record.to && other.relation == record.relation {
                    edges.push(edge);
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        edges
    }

    /// What fixed the errors the run at `failing_seq` failed with: the run
    /// is found through `agent —runs→ command`, its errors through the
    /// command's `fails_with` edges that hold the run, and their fixes
    /// through `file —fixes→ error`, keeping the edits made after the run.
    /// Empty when the failure was never fixed (or the run is unknown).
    pub fn fixes_of_failure(&self, agent: &str, failing_seq: u64) -> Vec<FixOfFailure> {
        let Some(agent_node) = self.find(EntityKind::Agent, agent) else { return Vec::new() };
        let mut fixes = Vec::new();
        for command in self.related_at(agent_node, relation::RUNS, failing_seq) {
            for (error, fails_with) in self.related_edges_at(command, relation::FAILS_WITH, failing_seq) {
                let passed = self.edges[fails_with as usize].seqs().iter().copied().find(|&seq| seq > failing_seq);
                let files = self.fixing_files(error, failing_seq, passed);
                if !files.is_empty() {
                    let passed = passed.map(|seq| self.reference(seq));
                    fixes.push(FixOfFailure { error: self.node_at(error).id.clone(), files, passed });
                }
            }
        }
        fixes
    }

    /// Targets of `from —relation→ …` edges whose provenance holds `seq`.
    fn related_at(&self, from: NodeIndex, relation: &str, seq: u64) -> Vec<NodeIndex> {
        self.related_edges_at(from, relation, seq).into_iter().map(|(to, _)| to).collect()
    }

    /// An agent's node is a hub (an edge per command, file, decision…):
    /// each edge is rejected by integer comparisons before its provenance
    /// is searched.
    fn related_edges_at(&self, from: NodeIndex, relation: &str, seq: u64) -> Vec<(NodeIndex, EdgeIndex)> {
        let Some(&relation) = self.relation_index.get(relation) else { return Vec::new() };
        self.adjacency[from as usize]
            .facts
            .iter()
            .filter(|&&edge| {
                let record = &self.edges[edge as usize];
                record.from == from && record.relation == relation && holds_seq(record, seq)
            })
            .map(|&edge| (self.edges[edge as usize].to, edge))
            .collect()
    }

    /// The files that fix `error`, each with its edits after `after` (and
    /// before the passing run, when known).
    fn fixing_files(&self, error: NodeIndex, after: u64, until: Option<u64>) -> Vec<(String, Vec<ProvenanceRef>)> {
        let mut files: Vec<(String, Vec<ProvenanceRef>)> = Vec::new();
        for &edge in &self.adjacency[error as usize].facts {
            let record = &self.edges[edge as usize];
            if record.to != error || self.relation_name(record) != relation::FIXES {
                continue;
            }
            let edits: Vec<ProvenanceRef> = record
                .seqs()
                .iter()
                .filter(|&&seq| seq > after && until.is_none_or(|until| seq < until))
                .map(|&seq| self.reference(seq))
                .collect();
            if edits.is_empty() {
                continue;
            }
            let file = self.node_at(record.from);
            match files.iter_mut().find(|(name, _)| *name == file.name) {
                Some((_, known)) => known.extend(edits),
                None => files.push((file.name.clone(), edits)),
            }
        }
        for (_, edits) in &mut files {
            edits.sort();
            edits.dedup();
        }
        files.sort_by(|a, b| a.1.first().cmp(&b.1.first()).then_with(|| a.0.cmp(&b.0)));
        files
    }
}

/// Whether the edge's provenance (in seq order) holds `seq`.
fn holds_seq(record: &EdgeRecord, seq: u64) -> bool {
    record.seqs().binary_search(&seq).is_ok()
}
