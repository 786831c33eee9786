//! Pages of a memory's items, newest first, by state: what a person
//! browsing the memory (the web view, `GET …/items`) reads.

use std::collections::BTreeMap;

use mneme_events::Timestamp;

use crate::item::{ItemState, hit_text};
use crate::memory::AgentMemory;
use crate::superseded::supersessions;

pub use mneme_api::query::ItemPage;

/// One item of a page: its text quoted as a search hit quotes it (at most
/// `MAX_HIT_TEXT_BYTES`), and what superseded it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedItem {
    pub item_id: String,
    pub seq: u64,
    pub kind: &'static str,
    pub agent: String,
    pub ts: Timestamp,
    pub state: ItemState,
    pub pinned: bool,
    pub text: String,
    pub superseded_by: Option<String>,
}

/// How many items are in each state (every state named, 0 included), and
/// how many are pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemCounts {
    pub states: BTreeMap<&'static str, usize>,
    pub pinned: usize,
}

/// A page of items.
#[derive(Debug, Clone, Default)]
pub struct ListedItems {
    pub items: Vec<ListedItem>,
    /// Whether older items match too.
    pub more: bool,
}

/// The items `page` asks for, newest first.
pub fn item_page(memory: &AgentMemory, page: &ItemPage) -> ListedItems {
    let before = page.before_seq.unwrap_or(u64::MAX);
    let mut matching = memory
        .items()
        .range(..before)
        .rev()
        .filter(|item| page.state.is_none_or(|state| item.state == state) && (!page.pinned_only || item.pinned));
    let supersessions = supersessions(memory);
    let items: Vec<ListedItem> = matching
        .by_ref()
        .take(page.limit)
        .map(|item| ListedItem {
            item_id: item.item_id.clone(),
            seq: item.seq,
            kind: item.kind,
            agent: item.agent.clone(),
            ts: item.ts,
            state: item.state,
            pinned: item.pinned,
            text: hit_text(&item.text, &item.item_id),
            superseded_by: supersessions.of(memory, item),
        })
        .collect();
    ListedItems { items, more: matching.next().is_some() }
}

/// How many items are in each state, and how many are pinned, in one
/// pass: at 100,000 items a pass is about 2 ms of reading items that do
/// not fit in the cache (`bench search`), and the counts come with
/// every page.
pub fn state_counts(memory: &AgentMemory) -> ItemCounts {
    let mut by_state = [0usize; ItemState::ALL.len()];
    let mut pinned = 0;
    for item in memory.items().iter() {
        by_state[item.state as usize] += 1;
        pinned += usize::from(item.pinned);
    }
    let states = ItemState::ALL.iter().map(|state| (state.as_str(), by_state[*state as usize])).collect();
    ItemCounts { states, pinned }
}
