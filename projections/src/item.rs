//! A memory item: one thing an agent can be told, traced to its events.

use std::sync::{Arc, Mutex};

use mneme_events::{EventId, Scope, Timestamp};

use mneme_index::TermCounts;

/// One shared event's text and its share of BM25's statistics, held once
/// per swarm by [`SharedContent`](crate::SharedContent) and pointed at by
/// the items of every memory that holds the event.
pub struct SharedEntry {
    /// The text as the other agents read it, `(from author) …`; its
    /// document and vector are of this text, for the author too.
    pub(crate) text: String,
    /// Bytes of the `(from author) ` prefix, which the author does not see.
    pub(crate) author_prefix: usize,
    /// Counted when a memory needs them and kept until every memory of the
    /// swarm holds the entry (see `SharedContent::count_terms`): 8 bytes
    /// per distinct term, a tenth of a memory's RAM per item if kept for
    /// good. A memory restored with its statistics does not need them.
    pub(crate) terms: Mutex<Option<Arc<TermCounts>>>,
    /// The text index change that added the entry's document (0: it was
    /// in the index when this process opened it).
    pub(crate) change: u64,
}

pub use mneme_api::query::ItemState;

/// An event that created or changed an item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProvenanceRef {
    pub seq: u64,
    pub event_id: EventId,
}

/// One remembered thing: a message, a tool result, a decision, a fact...
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryItem {
    /// Stable id: the text form of the id of the event that created it.
    pub item_id: String,
    /// Sequence of the creating event.
    pub seq: u64,
    /// Wire name of the creating event's kind.
    pub kind: &'static str,
    /// The agent whose event created it: the memory's own, or another
    /// agent's `shared` or `system` event.
    pub agent: String,
    pub scope: Scope,
    pub ts: Timestamp,
    pub correlation_id: Option<String>,
    pub importance: Option<f32>,
    /// The searchable, readable rendering of the event.
    pub text: ItemText,
    pub state: ItemState,
    /// Pinned items are never decayed or forgotten by consolidation.
    pub pinned: bool,
    /// How often queries returned it, as recorded by `memories_retrieved`.
    pub retrievals: u32,
    pub citations: u32,
    pub ignored: u32,
    /// The creating event first, then every event that changed the item, in
    /// log order.
    pub provenance: Vec<ProvenanceRef>,
}

/// An item's text. A shared event's text is held once by the swarm
/// ([`SharedContent`](crate::shared::SharedContent)) and every memory that
/// holds the item points at it; the other agents read it with its author's
/// name in front, `(from coder) …`, the author without.
#[derive(Clone, Default)]
pub struct ItemText(Repr);

#[derive(Clone)]
enum Repr {
    Own(String),
    Shared { entry: Arc<SharedEntry>, start: usize },
}

impl Default for Repr {
    fn default() -> Self {
        Repr::Own(String::new())
    }
}

impl ItemText {
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Own(text) => text,
            Repr::Shared { entry, start } => &entry.text[*start..],
        }
    }

    /// The text as its author wrote it, whoever reads it: a shared item's
    /// without the `(from author)` the other agents read in front. What
    /// consolidation compares, so that two agents' copies of the same
    /// words are the same words in every memory.
    pub fn body(&self) -> &str {
        match &self.0 {
            Repr::Own(text) => text,
            Repr::Shared { entry, .. } => &entry.text[entry.author_prefix..],
        }
    }

    /// The text the indexes hold for the item: a shared item's as the
    /// other agents read it (`(from author) …`), whoever reads it.
    pub fn indexed(&self) -> &str {
        match &self.0 {
            Repr::Own(text) => text,
            Repr::Shared { entry, .. } => &entry.text,
        }
    }

    /// The swarm's copy of a shared event's text, as its author (`own`) or
    /// another agent reads it.
    pub(crate) fn shared(entry: Arc<SharedEntry>, own: bool) -> ItemText {
        let start = if own { entry.author_prefix } else { 0 };
        ItemText(Repr::Shared { entry, start })
    }

    /// The text, owned: moved out when it is the item's own.
    pub(crate) fn into_string(self) -> String {
        match self.0 {
            Repr::Own(text) => text,
            Repr::Shared { entry, start } => entry.text[start..].to_string(),
        }
    }

    /// The shared copy this text points at, if any.
    /// Whether the text is the swarm's copy of a shared event's.
    pub fn is_shared(&self) -> bool {
        self.shared_entry().is_some()
    }

    pub(crate) fn shared_entry(&self) -> Option<&Arc<SharedEntry>> {
        match &self.0 {
            Repr::Own(_) => None,
            Repr::Shared { entry, .. } => Some(entry),
        }
    }
}

impl std::ops::Deref for ItemText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for ItemText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl std::borrow::Borrow<str> for ItemText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl PartialEq for ItemText {
    fn eq(&self, other: &ItemText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl PartialEq<str> for ItemText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ItemText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl std::fmt::Debug for ItemText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for ItemText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<String> for ItemText {
    fn from(text: String) -> ItemText {
        ItemText(Repr::Own(text))
    }
}

impl From<&str> for ItemText {
    fn from(text: &str) -> ItemText {
        ItemText(Repr::Own(text.to_string()))
    }
}

impl MemoryItem {
    /// Whether `agent` may see the item: its author, or anyone when it is
    /// not private.
    pub fn is_visible_to(&self, agent: &str) -> bool {
        self.scope != Scope::Private || self.agent == agent
    }

    /// The event that created the item. Merges add the provenance of the
    /// items merged into this one, older events among them, so the creating
    /// event is found by its seq rather than by position.
    pub fn creating_event(&self) -> ProvenanceRef {
        self.provenance.iter().find(|reference| reference.seq == self.seq).copied().unwrap_or(self.provenance[0])
    }

    /// How useful the item proved: citations count most, being ignored
    /// counts against, retrievals a little (they show it matched, not that
    /// it helped). Feeds the usage prior of search and the decay score.
    pub fn usage_score(&self) -> f32 {
        self.citations as f32 - 0.5 * self.ignored as f32 + 0.25 * (1.0 + self.retrievals as f32).ln()
    }
}

/// A hit quotes at most this much of its item's text: a search answering
/// ten shared 1 MB messages was 10 MB to copy, serialise and send, and made
/// every search of every agent that sees them slow. The item's whole text
/// is at `GET …/items/{item_id}`.
pub const MAX_HIT_TEXT_BYTES: usize = 16 * 1024;

/// The text of a hit: the item's, or its first `MAX_HIT_TEXT_BYTES` marked
/// with how long the whole is and where it is.
pub(crate) fn hit_text(text: &str, item_id: &str) -> String {
    if text.len() <= MAX_HIT_TEXT_BYTES {
        return text.to_string();
    }
    let mut end = MAX_HIT_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{} …[truncated: {} bytes in all, at …/items/{item_id}]", &text[..end], text.len())
}
