//! Mneme's actors: one memory actor per agent, fed from the log, and the
//! supervisor that starts them from `swarm.toml`.
//!
//! **Invariant:** state changes only by applying log entries in order; a
//! query never mutates memory. Snapshot IO happens on the memory actors'
//! worker arbiters, log IO on the arbiter that runs the feeds.

pub mod clock;
pub mod consolidator;
pub mod enricher;
pub mod eraser;
pub mod erasure_pass;
mod error;
mod feed;
mod follow;
pub mod handoff_router;
pub mod lease_keeper;
pub mod lost_tail;
pub mod memory_actor;
pub mod phase_compressor;
pub mod phase_summarizer;
pub mod replay;
pub mod snapshot_store;
pub mod supervisor;
pub mod swarm_config;

pub use clock::ActorClock;
pub use consolidator::{
    AgentConsolidation, ConsolidationReport, ConsolidationRequest, ConsolidationSchedule, Consolidator, Scanner,
    SharedScanSummary,
};
pub use enricher::{Enricher, EnricherHandle, EnrichmentPace, EnrichmentStatus};
pub use eraser::{Eraser, ErasureRegistry, StopErasing};
pub use erasure_pass::{CarriedErasures, carry_erasures, erasures_pending};
pub use error::ActorsError;
pub use handoff_router::{HandoffPublisher, HandoffRouter, StopRouting};
pub use lease_keeper::{LeaseGate, LeaseKeeper, LeaseState, WRITER_LEASE};
pub use lost_tail::{LostTail, LostTails, snapshots_past_the_log};
pub use memory_actor::queries::{AgentStatus, Ask, ContradictionListing, ItemListing, MemoryQuery, PhaseListing};
pub use memory_actor::{
    ApplyBatch, ApplyReport, CheckpointPolicy, DeadLettersFiled, MemoryActor, ReturnRetrievals, TakeRetrievals,
    TakeSnapshot, queries,
};
pub use phase_summarizer::{PhaseSummarizer, PhaseSummary, PhaseSummaryRequest};
pub use replay::{ApplyTotals, ReplayReport, apply_from_log, continue_from_log, rebuild_from_log, verify_against_log};
pub use snapshot_store::SnapshotStore;
pub use supervisor::{AgentHandle, AgentsWritten, GetAgent, ListAgents, SnapshotAll, StopWorkers, Supervisor};
pub use swarm_config::{AgentConfig, LogBackend, SYSTEM_READER, SYSTEM_SWARM, SwarmConfig};
