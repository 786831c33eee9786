//! The typed inputs of the memory's queries other than search (which has
//! [`crate::search`]): what an HTTP query string, a NATS body and an MCP
//! tool's arguments all become before the service takes them. A transport
//! parses into these (`GraphParams::input`, …); the service checks them
//! once (`check`), whoever built them.

use mneme_events::Timestamp;

use crate::check::{
    DEFAULT_HOPS, DEFAULT_ITEMS_PAGE, DEFAULT_TIMELINE_ENTRIES, MAX_HOPS, MAX_ITEMS_PAGE, MAX_TIMELINE_ENTRIES,
    ParameterError, check_between, check_item_id, check_text_length,
};

/// Whether an item is still in play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemState {
    Active,
    /// Archived by its agent: out of the working tier and context, still
    /// searchable.
    Archived,
    /// Demoted by consolidation: out of the working tier and context, still
    /// searchable. A citation makes it active again.
    Decayed,
    /// Out of every query; still in provenance and audit.
    Forgotten,
    /// Merged into a near duplicate, which answers for it: out of every
    /// query, still in provenance.
    Merged,
    /// Erased on request: its text is gone from memory and snapshots; only
    /// its id, kind, time and provenance remain.
    Purged,
}

impl ItemState {
    pub const ALL: [ItemState; 6] = [
        ItemState::Active,
        ItemState::Archived,
        ItemState::Decayed,
        ItemState::Forgotten,
        ItemState::Merged,
        ItemState::Purged,
    ];

    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemState::Active => "active",
            ItemState::Archived => "archived",
            ItemState::Decayed => "decayed",
            ItemState::Forgotten => "forgotten",
            ItemState::Merged => "merged",
            ItemState::Purged => "purged",
        }
    }

    pub fn from_name(name: &str) -> Option<ItemState> {
        ItemState::ALL.into_iter().find(|state| state.as_str() == name)
    }

    /// Whether searches may return the item.
    pub fn is_searchable(self) -> bool {
        matches!(self, ItemState::Active | ItemState::Archived | ItemState::Decayed)
    }

    /// Whether the state takes an item out of context: what consolidation
    /// decides (demoted, forgotten, merged), which a pin forbids.
    pub fn removes_from_context(self) -> bool {
        matches!(self, ItemState::Decayed | ItemState::Forgotten | ItemState::Merged)
    }

    /// Whether nothing but a purge changes the state any more.
    pub fn is_final(self) -> bool {
        matches!(self, ItemState::Forgotten | ItemState::Merged | ItemState::Purged)
    }
}

/// How much of a completed phase to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PhaseLevel {
    Index,
    Compressed,
    Summary,
    Findings,
    Full,
    Original,
}

impl PhaseLevel {
    pub const ALL: [PhaseLevel; 6] = [
        PhaseLevel::Index,
        PhaseLevel::Compressed,
        PhaseLevel::Summary,
        PhaseLevel::Findings,
        PhaseLevel::Full,
        PhaseLevel::Original,
    ];

    /// Its wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseLevel::Index => "index",
            PhaseLevel::Compressed => "compressed",
            PhaseLevel::Summary => "summary",
            PhaseLevel::Findings => "findings",
            PhaseLevel::Full => "full",
            PhaseLevel::Original => "original",
        }
    }

    pub fn from_name(name: &str) -> Option<PhaseLevel> {
        PhaseLevel::ALL.into_iter().find(|level| level.as_str() == name)
    }

    /// The most tokens a level's text may have; `None` for the structured
    /// record and the original events.
    pub fn token_bound(self) -> Option<usize> {
        match self {
            PhaseLevel::Index => Some(8),
            PhaseLevel::Compressed => Some(32),
            PhaseLevel::Summary => Some(128),
            PhaseLevel::Findings => Some(512),
            PhaseLevel::Full | PhaseLevel::Original => None,
        }
    }
}

/// The fact graph around an entity.
#[derive(Debug, Clone, PartialEq)]
pub struct GraphInput {
    pub entity: String,
    /// Edges to walk, 1 to [`MAX_HOPS`].
    pub hops: usize,
    /// Relations to follow; all when empty.
    pub relations: Vec<String>,
    /// Only facts and edges valid at this event time.
    pub as_of: Option<Timestamp>,
    pub min_seq: Option<u64>,
}

impl GraphInput {
    /// Every relation, [`DEFAULT_HOPS`] hops, now.
    pub fn new(entity: impl Into<String>) -> GraphInput {
        GraphInput { entity: entity.into(), hops: DEFAULT_HOPS, relations: Vec::new(), as_of: None, min_seq: None }
    }

    pub fn check(&self) -> Result<(), ParameterError> {
        check_text_length("entity", "entity", &self.entity)?;
        check_between("hops", self.hops, MAX_HOPS)
    }
}

/// Which of a memory's items a page holds, and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemPage {
    /// Only items in this state; every state when `None`.
    pub state: Option<ItemState>,
    /// Only pinned items (in any state).
    pub pinned_only: bool,
    /// Only items created before this seq (the previous page's last).
    pub before_seq: Option<u64>,
    /// Items in the page, 1 to [`MAX_ITEMS_PAGE`].
    pub limit: usize,
}

impl Default for ItemPage {
    fn default() -> ItemPage {
        ItemPage { state: None, pinned_only: false, before_seq: None, limit: DEFAULT_ITEMS_PAGE }
    }
}

/// The counts of a memory's items per state, with a page of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemsInput {
    pub page: ItemPage,
    pub min_seq: Option<u64>,
}

impl ItemsInput {
    pub fn check(&self) -> Result<(), ParameterError> {
        check_between("limit", self.page.limit, MAX_ITEMS_PAGE)
    }
}

/// The events behind one item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenanceInput {
    pub item_id: String,
    pub min_seq: Option<u64>,
}

impl ProvenanceInput {
    pub fn check(&self) -> Result<(), ParameterError> {
        check_item_id(&self.item_id)
    }
}

/// One phase at one level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhaseInput {
    pub level: PhaseLevel,
    pub min_seq: Option<u64>,
}

impl Default for PhaseInput {
    /// The summary, the level a phase is read at unless asked otherwise.
    fn default() -> PhaseInput {
        PhaseInput { level: PhaseLevel::Summary, min_seq: None }
    }
}

/// What the swarm did, as one agent sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimelineInput {
    /// Events after this seq.
    pub since_seq: Option<u64>,
    /// Or events from this time.
    pub since: Option<Timestamp>,
    /// At most this many entries, 1 to [`MAX_TIMELINE_ENTRIES`].
    pub limit: usize,
}

impl Default for TimelineInput {
    fn default() -> TimelineInput {
        TimelineInput { since_seq: None, since: None, limit: DEFAULT_TIMELINE_ENTRIES }
    }
}

impl TimelineInput {
    pub fn check(&self) -> Result<(), ParameterError> {
        check_between("limit", self.limit, MAX_TIMELINE_ENTRIES)
    }
}
