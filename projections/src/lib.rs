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
mod handoffs;
mod item;
mod memory;
pub mod phases;
mod render;
mod retrieval;
mod scope;
mod shared;
mod snapshot;
mod superseded;
mod words;
mod working;

pub use chunks::{MEMORY_CHUNK, SNAPSHOT_FORMAT, SNAPSHOT_SECTION_BYTES, SnapshotDelta, SnapshotPart};
pub use context::{
    Activity, CORE_SHARE, ContextItem, ContextRequest, ContextResponse, ContextSignals, ContextTier, TIERS,
    ThinkingPolicy, TierShares, TierUsage, allocate,
};
pub use core::{
    CoreBlock, CoreConstraint, CoreMemory, CorePreference, CoreRequest, CoreState, CurrentTask, ShownBlock, TaskSource,
};
pub use error::ProjectionError;
pub use handoffs::{HandoffRecord, handoff_tasks};
pub use item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
pub use memory::{
    AgentMemory, AppliedEvent, ErasedByPurge, ItemCounts, ItemPage, ListedItem, ListedItems, MemoryConfig,
    OpenContradiction, Purgeable, ResolvedContradiction,
};
pub use render::describe;
pub use retrieval::{
    AnswerKind, Fusion, QueryAnalysis, RetrievalWeights, RetrieverRank, SearchFilters, SearchHit, SearchMode,
    SearchRequest, TimeAnchor, TimeRange, analyze,
};
pub use scope::{enters_memory_of, scope_reaches};
pub use shared::SharedContent;
