//! Reading the graph: neighbourhoods, entities named in a search query,
//! and items near a set of entities for graph-based retrieval.
//!
//! Every walk is bounded so that a query costs the same on a graph of a
//! hundred events and of a hundred thousand: at most [`MAX_HOPS`] hops,
//! at most [`MAX_FACT_EDGES_PER_NODE`] + [`MAX_MENTION_EDGES_PER_NODE`]
//! edges followed per node (the most recently created ones, since recent
//! work is what an agent asks about), at most [`MAX_SUBGRAPH_NODES`] nodes,
//! and agents and tools, which touch almost everything, shown but not
//! walked through unless the query starts there.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use mneme_events::Timestamp;

use super::lookup::NameScope;
use super::mentions::{PathContext, TextSource, mentions};
use super::model::{EntityKind, GraphQuery, Node, Subgraph};
use super::names::{bounded_key, concept_key};
use super::store::{EdgeIndex, FactGraph, LinkStrength, NodeIndex, RelationIndex};

/// Deepest walk; deeper requests are clamped. Three hops from any entity
/// already reach most of a working session's graph.
pub const MAX_HOPS: usize = 3;

/// Structural edges followed from one node.
pub const MAX_FACT_EDGES_PER_NODE: usize = 24;

/// Mention edges (`item —references→ entity`) followed from one node, on
/// top of the structural ones.
pub const MAX_MENTION_EDGES_PER_NODE: usize = 8;

/// Most nodes in one subgraph or retrieval walk; the walk is breadth
/// first, so the nearest are kept.
pub const MAX_SUBGRAPH_NODES: usize = 256;

/// Most events taken per entity by [`FactGraph::items_near`], the latest,
/// for the entities asked about; a quarter as many per hop away (64 one hop
/// away, 16 two hops away…), since a neighbour's older events are the least
/// likely to matter and the most numerous.
pub const MAX_ITEMS_PER_ENTITY: usize = 256;

/// Weight of an item that only mentions an entity, relative to one that
/// created, changed or related it.
const MENTION_WEIGHT: f32 = 0.75;

/// Weight lost per hop away from the query's entities.
const HOP_DECAY: f32 = 0.5;

/// Bonus per further entity of the walk an item is linked to (at most
/// four): an item about several of the things asked about ranks above one
/// about a single thing at the same distance, but never above a closer one.
const EXTRA_LINK_BONUS: f32 = 0.02;

/// A set of node or edge indexes. The walk only asks "seen before?", never
/// iterates it, so a hash set is safe for determinism; its hasher is fixed
/// (no random seed, per this crate's rules) and cheap for small integers.
type IndexSet = HashSet<u32, BuildHasherDefault<IndexHasher>>;

/// Multiplicative hashing of an integer (Knuth's constant): a bijection on
/// `u32` and `u64`, so distinct indexes and seqs never collide before
/// bucketing.
#[derive(Default)]
pub(crate) struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }

    fn write_u64(&mut self, value: u64) {
        self.0 = value.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// The nodes and edges a walk reached.
struct Walk {
    /// Nodes with their distance from the start, in the order reached.
    nodes: Vec<(NodeIndex, usize)>,
    edges: Vec<EdgeIndex>,
}

/// What a walk may follow.
#[derive(Clone)]
pub(crate) struct WalkFilter {
    /// Relations allowed; `None` means all.
    pub(crate) relations: Option<Vec<RelationIndex>>,
    pub(crate) as_of: Option<Timestamp>,
}

/// seq → (best weight, number of entities linking it); iterated only to
/// be sorted by a total order, so the hash order never shows.
pub(crate) type ScoreMap = HashMap<u64, (f32, u32), BuildHasherDefault<IndexHasher>>;

/// Counts one link of an entity `distance` hops from the query's into
/// the score of its event.
pub(crate) fn item_score(scores: &mut ScoreMap, seq: u64, strength: LinkStrength, distance: usize) {
    let decay = HOP_DECAY.powi(distance as i32);
    let strength = match strength {
        LinkStrength::Direct => 1.0,
        LinkStrength::Mention => MENTION_WEIGHT,
    };
    let entry = scores.entry(seq).or_insert((0.0, 0));
    entry.0 = entry.0.max(decay * strength);
    entry.1 += 1;
}

/// Events by score, best first, ties by seq descending.
pub(crate) fn rank_scores(scores: ScoreMap) -> Vec<(u64, f32)> {
    best_scores(scores, &|_| true, usize::MAX)
}

/// The `limit` best events `keep` keeps, by score, best first, ties by seq
/// descending: the same order as [`rank_scores`], without sorting what
/// falls below the limit.
pub(crate) fn best_scores(scores: ScoreMap, keep: &dyn Fn(u64) -> bool, limit: usize) -> Vec<(u64, f32)> {
    let mut ranked: Vec<(u64, f32)> = scores
        .into_iter()
        .filter(|(seq, _)| keep(*seq))
        .map(|(seq, (best, links))| {
            let extra = links.saturating_sub(1).min(4) as f32;
            (seq, best * (1.0 + EXTRA_LINK_BONUS * extra))
        })
        .collect();
    // Seqs are unique: the order is total, an unstable sort is as good.
    let order = |a: &(u64, f32), b: &(u64, f32)| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0));
    if limit < ranked.len() {
        ranked.select_nth_unstable_by(limit, order);
        ranked.truncate(limit);
    }
    ranked.sort_unstable_by(order);
    ranked
}

impl FactGraph {
    /// Multi-hop neighbourhood in both directions; `None` if the entity is
    /// unknown. With `as_of`, only nodes and edges valid at that event time;
    /// without, all of history, closed intervals included.
    pub fn neighbourhood(&self, query: &GraphQuery) -> Option<Subgraph> {
        let center = self.resolve_query_entity(&query.entity)?;
        let relations = (!query.relations.is_empty()).then(|| {
            query.relations.iter().filter_map(|name| self.relation_index.get(name.as_str()).copied()).collect()
        });
        let filter = WalkFilter { relations, as_of: query.as_of };
        let walk = self.walk(&[center], query.hops.min(MAX_HOPS), &filter);
        // Sort indexes, then clone once in order: moving whole nodes and
        // edges around in a sort costs more than the walk.
        let mut node_order: Vec<NodeIndex> = walk.nodes.iter().map(|&(node, _)| node).collect();
        node_order.sort_by(|&a, &b| self.node_at(a).id.cmp(&self.node_at(b).id));
        let nodes: Vec<Node> = node_order.into_iter().map(|node| self.node_at(node).clone()).collect();
        let edges = self.sorted_edges(walk.edges);
        Some(Subgraph { center: self.node_at(center).id.clone(), nodes, edges })
    }

    /// Entities named in free text (a search query): ids of known entities
    /// whose name or id occurs in it, plus extracted paths, identifiers and
    /// errors that are known. Sorted, deduplicated.
    pub fn entities_in_text(&self, text: &str) -> Vec<String> {
        let mut ids: Vec<String> =
            self.entity_nodes_in_text(text).into_iter().map(|node| self.node_at(node).id.clone()).collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// The nodes of [`FactGraph::entities_in_text`].
    pub(crate) fn entity_nodes_in_text(&self, text: &str) -> BTreeSet<NodeIndex> {
        let found = mentions(text, &PathContext::default(), TextSource::Prose);
        let mut nodes: BTreeSet<NodeIndex> = BTreeSet::new();
        nodes.extend(found.files.iter().filter_map(|path| self.find_file(path)));
        nodes.extend(found.errors.iter().filter_map(|error| self.find(EntityKind::Error, &bounded_key(error))));
        for symbol in &found.symbols {
            let key = bounded_key(symbol);
            nodes.extend(self.find(EntityKind::Symbol, &key).or_else(|| self.find(EntityKind::Error, &key)));
        }
        nodes.extend(self.known_names_in(text, NameScope::Query));
        nodes
    }

    /// Items (event seqs) linked to these entities and to their neighbours
    /// within `hops`, best first, with a deterministic score: closer and
    /// more direct first (an event that created, changed or related an
    /// entity before one that only mentions it), then linked to more of
    /// the entities reached; ties by seq descending. `hops` is clamped to
    /// [`MAX_HOPS`]. With `as_of`, only edges valid then are walked and only
    /// events up to then are returned.
    pub fn items_near(&self, entity_ids: &[String], hops: usize, as_of: Option<Timestamp>) -> Vec<(u64, f32)> {
        let mut starts: Vec<NodeIndex> = Vec::new();
        for id in entity_ids {
            if let Some(&node) = self.node_index.get(id.as_str())
                && !starts.contains(&node)
            {
                starts.push(node);
            }
        }
        if starts.is_empty() {
            return Vec::new();
        }
        let walk = self.walk(&starts, hops.min(MAX_HOPS), &WalkFilter { relations: None, as_of });
        let mut scores = ScoreMap::default();
        for &(node, distance) in &walk.nodes {
            if distance > 0 && self.node_at(node).kind.is_hub() {
                continue;
            }
            let visible = self.links[node as usize]
                .iter()
                .rev()
                .filter(|link| as_of.is_none_or(|at| self.events.get(&link.seq()).is_some_and(|event| event.ts <= at)));
            for link in visible.take(MAX_ITEMS_PER_ENTITY >> (2 * distance)) {
                item_score(&mut scores, link.seq(), link.strength(), distance);
            }
        }
        rank_scores(scores)
    }

    /// The entity a query names: an id or a name (see
    /// [`FactGraph::resolve_name`]), a path, or a concept.
    pub(crate) fn resolve_query_entity(&self, text: &str) -> Option<NodeIndex> {
        self.resolve_name(text)
            .or_else(|| PathContext::default().normalise(text).and_then(|path| self.find_file(&path)))
            .or_else(|| self.find(EntityKind::Concept, &concept_key(text)))
    }

    /// Breadth-first walk from `starts` (distance 0) up to `hops`, within
    /// the bounds documented on this module.
    fn walk(&self, starts: &[NodeIndex], hops: usize, filter: &WalkFilter) -> Walk {
        let mut reached: IndexSet = IndexSet::default();
        let mut nodes = Vec::new();
        for &start in starts {
            if reached.insert(start) {
                nodes.push((start, 0));
            }
        }
        let mut edges_seen: IndexSet = IndexSet::default();
        let mut edges = Vec::new();
        let mut frontier: Vec<NodeIndex> = nodes.iter().map(|&(node, _)| node).collect();
        for depth in 0..hops {
            let mut next = Vec::new();
            for &node in &frontier {
                if depth > 0 && self.node_at(node).kind.is_hub() {
                    continue;
                }
                for edge in self.edges_to_follow(node, filter, &|_| true) {
                    let record = &self.edges[edge as usize];
                    let other = if record.from == node { record.to } else { record.from };
                    if filter.as_of.is_some_and(|at| !self.node_at(other).is_valid_at(at)) {
                        continue;
                    }
                    if !reached.contains(&other) {
                        if reached.len() >= MAX_SUBGRAPH_NODES {
                            continue;
                        }
                        reached.insert(other);
                        nodes.push((other, depth + 1));
                        next.push(other);
                    }
                    if edges_seen.insert(edge) {
                        edges.push(edge);
                    }
                }
            }
            frontier = next;
        }
        Walk { nodes, edges }
    }

    /// The edges a walk follows from `node`: the most recently created
    /// structural edges, then mentions, each up to its cap, admitted by
    /// the filter.
    pub(crate) fn edges_to_follow(
        &self,
        node: NodeIndex,
        filter: &WalkFilter,
        visible: &dyn Fn(EdgeIndex) -> bool,
    ) -> Vec<EdgeIndex> {
        let admitted = |edge: &&EdgeIndex| {
            let record = &self.edges[**edge as usize];
            visible(**edge)
                && filter.relations.as_ref().is_none_or(|relations| relations.contains(&record.relation))
                && filter.as_of.is_none_or(|at| super::model::is_within(Some(record.valid_from), record.valid_to(), at))
        };
        let adjacency = &self.adjacency[node as usize];
        adjacency
            .facts
            .iter()
            .rev()
            .filter(admitted)
            .take(MAX_FACT_EDGES_PER_NODE)
            .chain(adjacency.mentions.iter().rev().filter(admitted).take(MAX_MENTION_EDGES_PER_NODE))
            .copied()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{ScoreMap, best_scores, rank_scores};

    /// The best `limit` kept are the head of the whole ranking filtered,
    /// in the same order, ties (equal scores) by seq descending.
    #[test]
    fn best_scores_are_the_head_of_the_filtered_ranking() {
        let scores: ScoreMap = (1..=200u64).map(|seq| (seq, ((seq % 7) as f32 * 0.1, (seq % 3) as u32))).collect();
        let odd = |seq: u64| seq % 2 == 1;
        let whole: Vec<(u64, f32)> = rank_scores(scores.clone()).into_iter().filter(|(seq, _)| odd(*seq)).collect();
        for limit in [0, 1, 5, 37, 100, 500] {
            let best = best_scores(scores.clone(), &odd, limit);
            assert_eq!(best, whole[..limit.min(whole.len())], "limit {limit}");
        }
    }
}
