//! Pure, deterministic memory state built from events.
//!
//! **Invariant:** nothing here performs IO, reads a clock or draws a random
//! number: every projection is a function of the events applied to it, in
//! log order, so replaying the log rebuilds it.

mod chunks;
pub mod consolidation;
mod context;
mod core;
mod digest;
mod error;
pub mod graph;
mod item;
mod listing;
mod memory;
pub mod phases;
mod render;
mod retrieval;
mod scope;
mod shared;
mod superseded;
mod words;
mod working;

pub use chunks::{MEMORY_CHUNK, SNAPSHOT_FORMAT, SNAPSHOT_SECTION_BYTES, SnapshotDelta, SnapshotPart};
pub use consolidation::consolidation_view;
pub use context::{
    Activity, CORE_SHARE, ContextItem, ContextRequest, ContextResponse, ContextSignals, ContextTier, TIERS,
    ThinkingPolicy, TierShares, TierUsage, allocate, context,
};
pub use context::{CoreConstraint, CoreMemory, CoreRequest, ShownBlock, core_memory};
pub use core::{CoreBlock, CorePreference, CoreState, CurrentTask, TaskSource};
pub use error::ProjectionError;
pub use item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
pub use listing::{ItemCounts, ItemPage, ListedItem, ListedItems, item_page, state_counts};
pub use memory::{
    AgentMemory, AppliedEvent, Contradictions, ErasedByPurge, HandoffRecord, Handoffs, Indexes, Items, MemoryConfig,
    OpenContradiction, PhaseDocument, PhaseDocuments, Purgeable, ResolvedContradiction, handoff_bundle, handoff_tasks,
};
pub use render::describe;
pub use retrieval::{
    AnswerKind, Fusion, KindFilter, QueryAnalysis, RetrievalWeights, RetrieverRank, SearchFilters, SearchHit,
    SearchMode, SearchRequest, TimeAnchor, TimeRange, analyze, search,
};
pub use scope::{enters_memory_of, scope_reaches};
pub use shared::SharedContent;
pub use superseded::superseded_by;
