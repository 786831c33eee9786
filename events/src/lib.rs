//! The event: Mneme's only type that crosses a process boundary.
//!
//! Publishers speak JSON ([`decode_json`], [`Event::to_json`]); the embedded
//! log and snapshots store rkyv ([`storage`]). Every way into an [`Event`]
//! from outside goes through validation, so an `Event` value is always valid.

/// A payload type: serialisable as JSON (unknown fields refused, so a
/// misspelt field is an error rather than a silently missing memory), with
/// a JSON Schema, and archivable by rkyv.
macro_rules! payload {
    ($(#[$doc:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
            rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
        )]
        #[serde(deny_unknown_fields)]
        pub struct $name { $($body)* }
    };
}

mod agent_memory;
mod clock;
pub mod derived;
mod enrichment;
mod envelope;
pub mod erasure;
mod error;
mod json;
mod kinds;
pub mod schema;
pub mod storage;
mod upcast;

pub use agent_memory::{MAX_TAG_LEN, MAX_TAGS};
pub use clock::{Clock, SystemClock, TestClock, TestSleep};
pub use derived::IdKey;
pub use enrichment::{
    ComputedVector, EmbeddingsComputed, Int8Values, MAX_COMPUTED_VECTORS, MAX_MODEL_NAME_LEN, MAX_VECTOR_DIMENSIONS,
    UNVERSIONED_MODEL,
};
pub use envelope::{
    CURRENT_SCHEMA_VERSION, Event, EventId, MAX_CORRELATION_ID_LEN, MAX_NAME_LEN, Scope, Timestamp, published_number,
    validate_name,
};
pub use erasure::{ERASED_TEXT, ErasedEvent, ErasureRecord, Erasures, PurgeRef, Shown};
pub use error::{Error, ErrorCode, ValidationError};
pub use json::{
    BatchError, DecodeLimits, decode_json, decode_json_batch, decode_json_batch_of_at_most, decode_json_value,
};
pub use kinds::{
    BUNDLE_SECTIONS, BundleItem, BundleProvenance, ContradictionDetected, ContradictionResolution,
    ContradictionResolved, CoreMemoryUpdated, DecisionMade, EventKind, FactAsserted, FactRetracted,
    HandoffAcknowledged, HandoffBundle, HandoffPackage, HandoffReceived, HandoffSent, JsonText, MemoriesLinked,
    MemoriesMerged, MemoriesRetrieved, MemoryArchived, MemoryCited, MemoryDecayed, MemoryForgotten, MemoryIgnored,
    MemoryLink, MemoryPinned, MemoryPurged, MemoryUnpinned, MessageRecorded, NoteWritten, PHASE_SEARCH_KIND,
    PhaseCompleted, PhaseCompressed, PhaseStarted, PreferenceSet, RetrievalCount, TaskStatus, TaskUpdated,
    ToolResultRecorded,
};
