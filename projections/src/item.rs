//! A memory item: one thing an agent can be told, traced to its events.

use mneme_events::{EventId, Scope, Timestamp};

/// Whether an item is still in play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemState {
    Active,
    /// Out of the working tier and context, still searchable.
    Archived,
    /// Out of every query; still in provenance and audit.
    Forgotten,
}

impl ItemState {
    pub fn as_str(self) -> &'static str {
        match self {
            ItemState::Active => "active",
            ItemState::Archived => "archived",
            ItemState::Forgotten => "forgotten",
        }
    }
}

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
    pub scope: Scope,
    pub ts: Timestamp,
    pub correlation_id: Option<String>,
    pub importance: Option<f32>,
    /// The searchable, readable rendering of the event.
    pub text: String,
    pub state: ItemState,
    pub citations: u32,
    pub ignored: u32,
    /// The creating event first, then every event that changed the item, in
    /// log order.
    pub provenance: Vec<ProvenanceRef>,
}
