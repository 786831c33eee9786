//! Finding entities the graph already knows from names written in text:
//! a query's entity, a fact's subject, an agent or task named in a message.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use mneme_events::EventId;

use super::mentions::{looks_like_ulid, words};
use super::model::{EntityKind, entity_id};
use super::names::bounded_key;
use super::store::{EventContext, FactGraph, NodeIndex};

/// Longest phrase, in words, matched against multi-word names.
const MAX_PHRASE_WORDS: usize = 8;

/// Shortest name matched implicitly in text.
const MIN_NAME_CHARS: usize = 3;

/// Common words that are never taken as a mention of a one-word concept
/// (a fact whose object is "false" must not make every "false" a mention).
const CONCEPT_STOPWORDS: &[&str] = &[
    "about", "after", "again", "also", "been", "before", "being", "both", "does", "done", "each", "even", "false",
    "from", "have", "here", "into", "just", "like", "make", "more", "most", "much", "must", "need", "next", "none",
    "null", "only", "open", "other", "over", "same", "should", "some", "such", "than", "that", "their", "them", "then",
    "there", "these", "they", "this", "those", "true", "very", "want", "were", "what", "when", "where", "which",
    "while", "will", "with", "would", "your",
];

/// Which known names count as mentioned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NameScope {
    /// Text written by an agent: names of agents, tasks, preferences,
    /// concepts, commands and decisions (files, symbols and errors are
    /// found by their own recognisers, which are stricter than a name
    /// match: `login` the grep pattern is not every "login" in a sentence).
    Prose,
    /// A search query: every kind but items.
    Query,
}

impl NameScope {
    fn admits(self, kind: EntityKind) -> bool {
        match self {
            NameScope::Prose => matches!(
                kind,
                EntityKind::Agent
                    | EntityKind::Task
                    | EntityKind::Preference
                    | EntityKind::Concept
                    | EntityKind::Command
                    | EntityKind::Decision
            ),
            NameScope::Query => kind != EntityKind::Item,
        }
    }
}

impl FactGraph {
    /// The file node of a normalised path: a bare file name resolves to the
    /// one known file of that name, if there is exactly one; otherwise the
    /// path is its own entity.
    pub(crate) fn file_node(&mut self, path: &str, context: &EventContext) -> NodeIndex {
        match self.find_file(path) {
            Some(node) => node,
            None => self.entity(EntityKind::File, &bounded_key(path), path, context),
        }
    }

    /// The known file node of a normalised path (see [`FactGraph::file_node`]).
    pub(crate) fn find_file(&self, path: &str) -> Option<NodeIndex> {
        if let Some(node) = self.find(EntityKind::File, &bounded_key(path)) {
            return Some(node);
        }
        if path.contains('/') {
            return None;
        }
        match self.file_names.get(path) {
            Some(nodes) if nodes.len() == 1 => nodes.first().copied(),
            _ => None,
        }
    }

    /// The entity `text` names: an id, else the best of the nodes with that
    /// name (more specific kinds first, then the most recently created).
    pub(crate) fn resolve_name(&self, text: &str) -> Option<NodeIndex> {
        if let Some(&node) = self.node_index.get(text).or_else(|| self.node_index.get(text.trim())) {
            return Some(node);
        }
        let text = text.trim();
        self.nodes_named(text, NameScope::Query).into_iter().min_by_key(|&node| self.preference(node))
    }

    fn preference(&self, node: NodeIndex) -> (usize, Reverse<NodeIndex>) {
        (self.node_at(node).kind.preference_rank(), Reverse(node))
    }

    /// Nodes whose name is `text` (letter case ignored, except for code
    /// names), admitted by `scope`.
    fn nodes_named(&self, text: &str, scope: NameScope) -> Vec<NodeIndex> {
        let Some(nodes) = self.names.get(&text.to_lowercase()) else { return Vec::new() };
        nodes
            .iter()
            .copied()
            .filter(|&node| {
                let found = self.node_at(node);
                scope.admits(found.kind) && (!found.kind.name_is_case_sensitive() || found.name == text)
            })
            .collect()
    }

    /// Known entities named in `text`: ids, event ids of decisions and
    /// items, and names, single words or phrases of up to
    /// [`MAX_PHRASE_WORDS`] words. In order of first appearance.
    pub(crate) fn known_names_in(&self, text: &str, scope: NameScope) -> Vec<NodeIndex> {
        let words = words(text);
        let mut found = Vec::new();
        let mut seen = BTreeSet::new();
        for (start, word) in words.iter().enumerate() {
            for node in self.nodes_for_word(word, scope) {
                if seen.insert(node) {
                    found.push(node);
                }
            }
            let Some(&longest) = self.phrase_heads.get(&word.to_lowercase()) else { continue };
            for length in 2..=longest.min(MAX_PHRASE_WORDS) {
                let Some(phrase_words) = words.get(start..start + length) else { break };
                let phrase = phrase_words.join(" ");
                for node in self.nodes_named(&phrase, scope) {
                    if seen.insert(node) {
                        found.push(node);
                    }
                }
            }
        }
        found
    }

    fn nodes_for_word(&self, word: &str, scope: NameScope) -> Vec<NodeIndex> {
        // An id written out (`file:src/a.rs`) is an explicit reference.
        if let Some(&node) = self.node_index.get(word) {
            let explicit = scope == NameScope::Query || self.node_at(node).kind != EntityKind::Item;
            return if explicit { vec![node] } else { Vec::new() };
        }
        if looks_like_ulid(word) {
            return self.event_entities(word);
        }
        if word.chars().count() < MIN_NAME_CHARS {
            return Vec::new();
        }
        self.nodes_named(word, scope)
            .into_iter()
            .filter(|&node| self.node_at(node).kind != EntityKind::Concept || is_meaningful_concept_word(word))
            .collect()
    }

    /// The decision or item that an event id names.
    fn event_entities(&self, word: &str) -> Vec<NodeIndex> {
        let Ok(id) = word.parse::<EventId>() else { return Vec::new() };
        let id = id.to_string();
        [EntityKind::Decision, EntityKind::Item]
            .into_iter()
            .filter_map(|kind| self.node_index.get(&entity_id(kind, &id)).copied())
            .collect()
    }
}

/// A one-word concept name is matched only if it is long enough and not a
/// common word.
fn is_meaningful_concept_word(word: &str) -> bool {
    let lowered = word.to_lowercase();
    lowered.chars().count() >= 4
        && lowered.chars().any(char::is_alphabetic)
        && CONCEPT_STOPWORDS.binary_search(&lowered.as_str()).is_err()
}
