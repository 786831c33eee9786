//! What consolidation reads of a memory: a copy of the items and of the
//! graph's facts, decisions and entity links, taken in one query so that the
//! scan itself runs away from the actor that answers queries.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use mneme_events::Timestamp;

use crate::graph::{EntityKind, GraphView, relation};
use crate::item::{ItemState, MemoryItem};
use crate::memory::AgentMemory;
use mneme_index::embed::Embedder;

/// An entity linked to more items than this is a hub (the agent, `bash`,
/// `README.md`): sharing it says nothing about two memories.
pub const MAX_LINK_ENTITY_ITEMS: usize = 50;

/// One asserted fact as the graph holds it now.
#[derive(Debug, Clone, PartialEq)]
pub struct FactView {
    /// The `fact_asserted` item.
    pub seq: u64,
    /// As written, whitespace collapsed, lowercased.
    pub subject: String,
    /// snake_case.
    pub predicate: String,
    pub object: String,
    pub valid_from: Option<Timestamp>,
    /// `None`: still valid.
    pub valid_to: Option<Timestamp>,
}

/// One decision as the graph holds it now.
#[derive(Debug, Clone, PartialEq)]
pub struct DecisionView {
    /// The `decision_made` item.
    pub seq: u64,
    pub title: String,
    pub choice: String,
    /// Superseded, or closed by a resolved contradiction.
    pub closed: bool,
}

/// An agent's memory as consolidation sees it.
#[derive(Clone)]
pub struct ConsolidationView {
    pub swarm: String,
    pub agent: String,
    pub checkpoint: u64,
    /// Every item, in seq order.
    pub items: Vec<MemoryItem>,
    pub facts: Vec<FactView>,
    pub decisions: Vec<DecisionView>,
    /// Item ids on either side of an open contradiction.
    pub in_open_contradictions: BTreeSet<String>,
    /// (older, newer) item id pairs already reported, open or resolved.
    pub reported_pairs: BTreeSet<(String, String)>,
    /// Per item seq, the non-hub entities linked to it (entity indexes).
    pub entities_by_seq: BTreeMap<u64, Vec<u32>>,
    /// Entity names by index, for the reasons of links.
    pub entity_names: Vec<String>,
    /// (smaller, larger) item id pairs already `related_to`.
    pub linked_pairs: BTreeSet<(String, String)>,
    /// Embeds texts for the duplicate check, as the vector index does.
    pub embedder: Arc<dyn Embedder>,
}

impl std::fmt::Debug for ConsolidationView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsolidationView")
            .field("agent", &self.agent)
            .field("checkpoint", &self.checkpoint)
            .field("items", &self.items.len())
            .field("facts", &self.facts.len())
            .field("decisions", &self.decisions.len())
            .finish()
    }
}

impl ConsolidationView {
    pub fn item_at(&self, seq: u64) -> Option<&MemoryItem> {
        self.items.binary_search_by_key(&seq, |item| item.seq).ok().map(|index| &self.items[index])
    }
}

/// An unordered pair in a canonical order.
pub(crate) fn ordered_pair(a: &str, b: &str) -> (String, String) {
    if a <= b { (a.to_string(), b.to_string()) } else { (b.to_string(), a.to_string()) }
}

/// A copy of what consolidation reads. Purged items come without text
/// (they have none); the copy costs one pass over items and graph.
pub fn consolidation_view(memory: &AgentMemory) -> ConsolidationView {
    let memory_graph = memory.graph();
    let view = memory_graph.view();
    let item_kind = |seq: u64| memory.items().get(seq).map(|item| item.kind);
    let mut facts = Vec::new();
    for ((subject, predicate, object), valid_from, valid_to, seqs) in view.facts() {
        for seq in seqs {
            if item_kind(seq) == Some("fact_asserted") {
                facts.push(FactView {
                    seq,
                    subject: subject.clone(),
                    predicate: predicate.clone(),
                    object: object.clone(),
                    valid_from: Some(valid_from),
                    valid_to,
                });
            }
        }
    }
    facts.sort_by_key(|fact| fact.seq);
    facts.dedup_by_key(|fact| fact.seq);
    let decisions = memory
        .items()
        .seqs_of_kind("decision_made")
        .iter()
        .filter_map(|&seq| {
            let item = memory.items().get(seq)?;
            let node = view.node(&format!("decision:{}", item.creating_event().event_id))?;
            Some(DecisionView {
                seq,
                title: node.name.clone(),
                choice: node.attributes.get("choice").cloned().unwrap_or_default(),
                closed: node.valid_to.is_some(),
            })
        })
        .collect();
    let mut in_open_contradictions = BTreeSet::new();
    let mut reported_pairs = BTreeSet::new();
    for open in memory.open_contradictions() {
        in_open_contradictions.insert(open.a.clone());
        in_open_contradictions.insert(open.b.clone());
        reported_pairs.insert(ordered_pair(&open.a, &open.b));
    }
    for resolved in memory.resolved_contradictions() {
        reported_pairs.insert(ordered_pair(&resolved.a, &resolved.b));
    }
    let (entities_by_seq, entity_names) = item_entities(memory, &view);
    drop(memory_graph);
    let graph = &memory.own_graph();
    let key = |id: &str| id.strip_prefix("item:").unwrap_or(id).to_string();
    let linked_pairs =
        graph.pairs_related_by(relation::RELATED_TO).map(|(from, to)| ordered_pair(&key(from), &key(to))).collect();
    ConsolidationView {
        swarm: memory.swarm().to_string(),
        agent: memory.agent().to_string(),
        checkpoint: memory.checkpoint(),
        items: memory.items().iter().cloned().collect(),
        facts,
        decisions,
        in_open_contradictions,
        reported_pairs,
        entities_by_seq,
        entity_names,
        linked_pairs,
        embedder: memory.config().embedder.clone(),
    }
}

/// Per item, the entities (not agents, tools, items or hubs) linked to it.
fn item_entities(memory: &AgentMemory, view: &GraphView<'_>) -> (BTreeMap<u64, Vec<u32>>, Vec<String>) {
    let mut by_seq: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
    let mut names = Vec::new();
    // A hub is known as soon as it has one item too many: the rest of
    // its (often very long) list of links is not looked at, which keeps
    // the copy, the one step that holds up the agent's queries, short.
    let linked = view.entity_links(
        |node| !matches!(node.kind, EntityKind::Agent | EntityKind::Tool | EntityKind::Item),
        |seq| memory.items().get(seq).is_some_and(|item| item.state.is_searchable()),
        MAX_LINK_ENTITY_ITEMS,
    );
    for (id, seqs) in linked {
        if seqs.len() < 2 || seqs.len() > MAX_LINK_ENTITY_ITEMS {
            continue;
        }
        let entity = names.len() as u32;
        names.push(id.to_string());
        for seq in seqs {
            by_seq.entry(seq).or_default().push(entity);
        }
    }
    (by_seq, names)
}

/// Characters of a memory's text (a fact's subject or object, a decision's
/// title or choice, an entity's name) that a verdict's reason quotes: a
/// reason is written into an event, and an event must fit the log
/// whatever a client published.
pub(crate) const REASON_QUOTE_CHARS: usize = 120;

/// `text` cut to `REASON_QUOTE_CHARS` characters, marked with `…` where cut.
pub(crate) fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(REASON_QUOTE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]).into(),
        None => text.into(),
    }
}

/// Whether an item may still change state under consolidation.
pub(crate) fn is_live(item: &MemoryItem) -> bool {
    item.state.is_searchable() && item.state != ItemState::Purged
}
