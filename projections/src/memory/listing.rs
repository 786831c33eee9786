//! Pages of a memory's items, newest first, by state: what a person
//! browsing the memory (the web view, `GET …/items`) reads.

use super::AgentMemory;
use crate::item::{ItemState, MemoryItem};

/// Which items a page holds, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPage {
    /// Only items in this state; every state when `None`.
    pub state: Option<ItemState>,
    /// Only pinned items.
    pub pinned_only: bool,
    /// Only items created before this seq (the previous page's last).
    pub before_seq: Option<u64>,
    pub limit: usize,
}

/// A page of items, each with what superseded it.
#[derive(Debug, Clone, Default)]
pub struct ListedItems {
    pub items: Vec<(MemoryItem, Option<String>)>,
    /// Whether older items match too.
    pub more: bool,
}

impl AgentMemory {
    /// The items `page` asks for, newest first.
    pub fn item_page(&self, page: &ItemPage) -> ListedItems {
        let before = page.before_seq.unwrap_or(u64::MAX);
        let mut matching =
            self.items.range(..before).rev().map(|(_, item)| item).filter(|item| {
                page.state.is_none_or(|state| item.state == state) && (!page.pinned_only || item.pinned)
            });
        let supersessions = self.supersessions();
        let items: Vec<_> =
            matching.by_ref().take(page.limit).map(|item| (item.clone(), supersessions.of(self, item))).collect();
        ListedItems { items, more: matching.next().is_some() }
    }

    /// How many items are pinned.
    pub fn pinned_count(&self) -> usize {
        self.items.values().filter(|item| item.pinned).count()
    }
}
