//! Every kind of event, each with its typed payload (`data` on the wire).
//!
//! Kinds are named in the past tense: they record what happened, never what
//! should happen. Payloads refuse unknown fields so that a misspelt field is an
//! error at the API instead of a silently missing memory.

use serde::{Deserialize, Serialize};

pub use crate::agent_memory::{CoreMemoryUpdated, NoteWritten};
pub use crate::enrichment::EmbeddingsComputed;
use crate::envelope::{EventId, Timestamp};
use crate::error::{ErrorCode, ValidationError};

macro_rules! event_kinds {
    ($( $(#[doc = $doc:literal])* $variant:ident($payload:ident) = $name:literal, )*) => {
        /// What happened, with its payload.
        #[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
        pub enum EventKind {
            $( $(#[doc = $doc])* $variant($payload), )*
        }

        impl EventKind {
            /// Wire names of every kind, in declaration order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];

            /// The snake_case wire name.
            pub fn name(&self) -> &'static str {
                match self { $( EventKind::$variant(_) => $name, )* }
            }

            /// The payload, serialised as the JSON `data` object.
            pub fn data(&self) -> Data<'_> {
                Data(self)
            }

            /// Decodes `data` for the kind named `kind`; `None` if no kind has
            /// that name.
            pub(crate) fn from_data(
                kind: &str,
                data: serde_json::Value,
            ) -> Option<Result<EventKind, ValidationError>> {
                match kind {
                    $( $name => Some(parse_payload::<$payload>(data).map(EventKind::$variant)), )*
                    _ => None,
                }
            }

            /// Checks what the types cannot: empty text, ranges, intervals.
            pub fn validate(&self) -> Result<(), ValidationError> {
                match self { $( EventKind::$variant(payload) => payload.validate(), )* }
            }

            /// Every kind's wire name, what it records, and the JSON Schema
            /// of its `data` (a `$ref` into `generator`'s definitions).
            pub fn data_schemas(
                generator: &mut schemars::SchemaGenerator,
            ) -> Vec<(&'static str, &'static str, schemars::Schema)> {
                vec![$( ($name, concat!($($doc, "\n"),*), generator.subschema_for::<$payload>()), )*]
            }
        }

        /// An event's payload as it serialises: the payload type itself,
        /// so that every number is written as it was published (an `f32`
        /// by its shortest decimal, `0.9`; through a `serde_json::Value` it
        /// would be widened to `0.8999999761581421`).
        pub struct Data<'a>(&'a EventKind);

        impl Serialize for Data<'_> {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self.0 { $( EventKind::$variant(payload) => payload.serialize(serializer), )* }
            }
        }
    };
}

event_kinds! {
    /// A message said by or to an agent.
    MessageRecorded(MessageRecorded) = "message_recorded",
    /// A tool ran and returned.
    ToolResultRecorded(ToolResultRecorded) = "tool_result_recorded",
    /// A decision was made, possibly superseding an earlier one.
    DecisionMade(DecisionMade) = "decision_made",
    /// A fact (subject, predicate, object) was asserted.
    FactAsserted(FactAsserted) = "fact_asserted",
    /// A fact was withdrawn.
    FactRetracted(FactRetracted) = "fact_retracted",
    /// Work was handed to another agent.
    HandoffSent(HandoffSent) = "handoff_sent",
    /// An agent received a handoff.
    HandoffReceived(HandoffReceived) = "handoff_received",
    /// An agent acknowledged a handoff it received.
    HandoffAcknowledged(HandoffAcknowledged) = "handoff_acknowledged",
    /// A phase of work began.
    PhaseStarted(PhaseStarted) = "phase_started",
    /// A phase of work ended.
    PhaseCompleted(PhaseCompleted) = "phase_completed",
    /// A task changed status.
    TaskUpdated(TaskUpdated) = "task_updated",
    /// A preference or convention was set.
    PreferenceSet(PreferenceSet) = "preference_set",
    /// An agent archived one of its memories.
    MemoryArchived(MemoryArchived) = "memory_archived",
    /// A memory was forgotten (soft-deleted), by its agent or by consolidation.
    MemoryForgotten(MemoryForgotten) = "memory_forgotten",
    /// An agent used a memory it was given.
    MemoryCited(MemoryCited) = "memory_cited",
    /// An agent was given a memory and did not use it.
    MemoryIgnored(MemoryIgnored) = "memory_ignored",
    /// Consolidation merged near-duplicate memories into one.
    MemoriesMerged(MemoriesMerged) = "memories_merged",
    /// Consolidation demoted a memory out of context.
    MemoryDecayed(MemoryDecayed) = "memory_decayed",
    /// Consolidation found two memories that cannot both be true.
    ContradictionDetected(ContradictionDetected) = "contradiction_detected",
    /// A contradiction was resolved.
    ContradictionResolved(ContradictionResolved) = "contradiction_resolved",
    /// A completed phase was compressed; replay applies this instead of
    /// compressing again.
    PhaseCompressed(PhaseCompressed) = "phase_compressed",
    /// Queries returned these memories this many times since the last count.
    MemoriesRetrieved(MemoriesRetrieved) = "memories_retrieved",
    /// A memory was pinned: never decayed or forgotten by consolidation.
    MemoryPinned(MemoryPinned) = "memory_pinned",
    /// A pin was taken off a memory.
    MemoryUnpinned(MemoryUnpinned) = "memory_unpinned",
    /// Consolidation linked memories that share entities or a task.
    MemoriesLinked(MemoriesLinked) = "memories_linked",
    /// Memories were erased from projections on request (a tombstone).
    MemoryPurged(MemoryPurged) = "memory_purged",
    /// An agent wrote a note into its own memory.
    NoteWritten(NoteWritten) = "note_written",
    /// An agent replaced a named block of its core memory.
    CoreMemoryUpdated(CoreMemoryUpdated) = "core_memory_updated",
    /// Items' vectors were computed by a deeper model, off the write path;
    /// written by Mneme's enricher.
    EmbeddingsComputed(EmbeddingsComputed) = "embeddings_computed",
}

fn parse_payload<T: serde::de::DeserializeOwned>(data: serde_json::Value) -> Result<T, ValidationError> {
    serde_path_to_error::deserialize(data).map_err(|error| {
        let path = error.path().to_string();
        crate::json::validation_error_from_serde(&path, &error.into_inner().to_string())
    })
}

fn require_text(field: &str, value: &str) -> Result<(), ValidationError> {
    if value.trim().is_empty() {
        return Err(ValidationError::at(ErrorCode::EmptyField, field, format!("{field} must not be empty")));
    }
    Ok(())
}

fn require_unit_interval(field: &str, value: f32) -> Result<(), ValidationError> {
    if !(0.0..=1.0).contains(&value) {
        return Err(ValidationError::at(
            ErrorCode::OutOfRange,
            field,
            format!("{field} must be between 0 and 1, got {value}"),
        ));
    }
    Ok(())
}

fn require_interval(from: Option<Timestamp>, to: Option<Timestamp>) -> Result<(), ValidationError> {
    if let (Some(from), Some(to)) = (from, to)
        && to < from
    {
        return Err(ValidationError::at(
            ErrorCode::OutOfRange,
            "valid_to",
            format!("valid_to ({to}) is before valid_from ({from})"),
        ));
    }
    Ok(())
}

/// Any JSON value, kept as its canonical text (keys sorted) so that it can
/// be archived by rkyv and hashed deterministically.
#[derive(Debug, Clone, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct JsonText(pub String);

impl JsonText {
    pub fn from_value(value: &serde_json::Value) -> JsonText {
        JsonText(value.to_string())
    }

    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.0).expect("JsonText always holds valid JSON")
    }
}

impl Default for JsonText {
    fn default() -> Self {
        JsonText("{}".to_string())
    }
}

impl Serialize for JsonText {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        serde_json::Value::deserialize(deserializer).map(|value| JsonText::from_value(&value))
    }
}

payload! {
    /// `role` is free text (`user`, `assistant`, `system`, an agent's role...).
    pub struct MessageRecorded {
        pub role: String,
        pub text: String,
    }
}

impl MessageRecorded {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("role", &self.role)?;
        require_text("text", &self.text)
    }
}

payload! {
    pub struct ToolResultRecorded {
        pub tool: String,
        #[serde(default)]
        pub args: JsonText,
        #[serde(default)]
        pub output: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub exit_code: Option<i32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub duration_ms: Option<u64>,
    }
}

impl ToolResultRecorded {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("tool", &self.tool)
    }

    /// A tool result failed if it has a non-zero exit code.
    pub fn failed(&self) -> bool {
        self.exit_code.is_some_and(|code| code != 0)
    }
}

payload! {
    /// A decision; its identity is the id of the event that made it, which a
    /// later decision names in `supersedes`.
    pub struct DecisionMade {
        pub title: String,
        pub choice: String,
        #[serde(default)]
        pub rationale: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub supersedes: Option<EventId>,
    }
}

impl DecisionMade {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("title", &self.title)?;
        require_text("choice", &self.choice)
    }
}

fn full_confidence() -> f32 {
    1.0
}

payload! {
    /// `valid_from`/`valid_to` are when the fact holds in the world; when it
    /// was learnt is the event's `ts` and `seq`.
    pub struct FactAsserted {
        pub subject: String,
        pub predicate: String,
        pub object: String,
        #[serde(default = "full_confidence")]
        pub confidence: f32,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub valid_from: Option<Timestamp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub valid_to: Option<Timestamp>,
    }
}

impl FactAsserted {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("subject", &self.subject)?;
        require_text("predicate", &self.predicate)?;
        require_text("object", &self.object)?;
        require_unit_interval("confidence", self.confidence)?;
        require_interval(self.valid_from, self.valid_to)
    }
}

payload! {
    /// Withdraws the fact (subject, predicate, object) from `valid_to`
    /// (default: the event's time).
    pub struct FactRetracted {
        pub subject: String,
        pub predicate: String,
        pub object: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub valid_to: Option<Timestamp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

impl FactRetracted {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("subject", &self.subject)?;
        require_text("predicate", &self.predicate)?;
        require_text("object", &self.object)
    }
}

payload! {
    pub struct HandoffSent {
        /// The agent that takes the work over.
        pub to: String,
        /// What it is to do.
        pub task: String,
        #[serde(default)]
        pub summary: String,
        /// Files, branches, URLs it needs.
        #[serde(default)]
        pub artifacts: Vec<String>,
        /// Decisions it must know.
        #[serde(default)]
        pub decisions: Vec<String>,
        /// What it must respect.
        #[serde(default)]
        pub constraints: Vec<String>,
    }
}

impl HandoffSent {
    fn validate(&self) -> Result<(), ValidationError> {
        crate::envelope::validate_name(&self.to).map_err(|e| e.under("to"))?;
        require_text("task", &self.task)
    }
}

payload! {
    /// `handoff_id` is the id of the `handoff_sent` event. Mneme writes this
    /// event into the recipient's log with the package it delivered; a
    /// package assembled once is replayed, never assembled again.
    pub struct HandoffReceived {
        pub from: String,
        pub handoff_id: EventId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub package: Option<HandoffPackage>,
    }
}

impl HandoffReceived {
    fn validate(&self) -> Result<(), ValidationError> {
        crate::envelope::validate_name(&self.from).map_err(|e| e.under("from"))?;
        if let Some(package) = &self.package {
            package.validate().map_err(|e| e.under("package"))?;
        }
        Ok(())
    }
}

payload! {
    /// What the recipient of a handoff gets: the sender's fields, and a
    /// context bundle from the sender's memory for the task, within a token
    /// budget, holding only what the recipient may see.
    pub struct HandoffPackage {
        pub task: String,
        #[serde(default)]
        pub summary: String,
        #[serde(default)]
        pub artifacts: Vec<String>,
        #[serde(default)]
        pub decisions: Vec<String>,
        #[serde(default)]
        pub constraints: Vec<String>,
        /// The `handoff_sent` event's seq and time.
        pub sent_seq: u64,
        pub sent_at: Timestamp,
        pub bundle: HandoffBundle,
    }
}

impl HandoffPackage {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("task", &self.task)?;
        for (index, item) in self.bundle.items.iter().enumerate() {
            if !BUNDLE_SECTIONS.contains(&item.section.as_str()) {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    &format!("bundle.items[{index}].section"),
                    format!("unknown section {:?}; expected one of {}", item.section, BUNDLE_SECTIONS.join(", ")),
                ));
            }
        }
        Ok(())
    }
}

/// The sections of a handoff bundle, in the order they are filled.
pub const BUNDLE_SECTIONS: &[&str] = &["contradiction", "decision", "finding"];

payload! {
    /// The sender's memory for the task, cut to a token budget.
    pub struct HandoffBundle {
        pub budget_tokens: u32,
        /// Tokens of the items' texts and the file names, as counted by
        /// Mneme's tokenizer.
        pub used_tokens: u32,
        pub items: Vec<BundleItem>,
        /// Files the task's visible events touched, sorted.
        #[serde(default)]
        pub files: Vec<String>,
    }
}

payload! {
    /// One memory in a handoff bundle, with the events behind it.
    pub struct BundleItem {
        /// `contradiction`, `decision` or `finding`.
        pub section: String,
        /// The item id, or the contradiction id.
        pub item_id: String,
        pub kind: String,
        /// Whose event it came from.
        pub agent: String,
        pub text: String,
        pub provenance: Vec<BundleProvenance>,
    }
}

payload! {
    /// An event behind a bundle item: its seq on the log and its id.
    pub struct BundleProvenance {
        pub seq: u64,
        pub event_id: EventId,
    }
}

payload! {
    pub struct HandoffAcknowledged {
        pub handoff_id: EventId,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }
}

impl HandoffAcknowledged {
    fn validate(&self) -> Result<(), ValidationError> {
        Ok(())
    }
}

payload! {
    /// A phase's identity is the id of its `phase_started` event.
    pub struct PhaseStarted {
        pub phase: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub goal: Option<String>,
    }
}

impl PhaseStarted {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("phase", &self.phase)
    }
}

payload! {
    pub struct PhaseCompleted {
        pub phase: String,
        /// The `phase_started` event this completes, when the publisher knows it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub phase_id: Option<EventId>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub outcome: Option<String>,
    }
}

impl PhaseCompleted {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("phase", &self.phase)
    }
}

/// Where a task stands.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    Open,
    InProgress,
    Blocked,
    Done,
    Cancelled,
}

impl TaskStatus {
    /// The wire name: `open`, `in_progress`, `blocked`, `done`, `cancelled`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Open => "open",
            TaskStatus::InProgress => "in_progress",
            TaskStatus::Blocked => "blocked",
            TaskStatus::Done => "done",
            TaskStatus::Cancelled => "cancelled",
        }
    }
}

payload! {
    pub struct TaskUpdated {
        pub task_id: String,
        pub status: TaskStatus,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub title: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }
}

impl TaskUpdated {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("task_id", &self.task_id)
    }
}

payload! {
    pub struct PreferenceSet {
        pub key: String,
        pub value: String,
    }
}

impl PreferenceSet {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("key", &self.key)
    }
}

payload! {
    pub struct MemoryArchived {
        pub item_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

impl MemoryArchived {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    pub struct MemoryForgotten {
        pub item_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

impl MemoryForgotten {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    pub struct MemoryCited {
        pub item_id: String,
    }
}

impl MemoryCited {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    pub struct MemoryIgnored {
        pub item_id: String,
    }
}

impl MemoryIgnored {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    pub struct MemoriesMerged {
        pub survivor: String,
        pub merged: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub similarity: Option<f32>,
    }
}

impl MemoriesMerged {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("survivor", &self.survivor)?;
        if self.merged.is_empty() {
            return Err(ValidationError::at(ErrorCode::EmptyField, "merged", "merged must name at least one item"));
        }
        // JSON has no NaN or infinity (serde_json writes them as null), so a
        // non-finite similarity would not survive the wire form; and NaN is
        // not equal to itself, so replay could not tell the event unchanged.
        if let Some(similarity) = self.similarity
            && !similarity.is_finite()
        {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "similarity",
                format!("similarity must be a finite number, got {similarity}"),
            ));
        }
        Ok(())
    }
}

payload! {
    pub struct MemoryDecayed {
        pub item_id: String,
        pub score: f32,
    }
}

impl MemoryDecayed {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)?;
        if !self.score.is_finite() {
            return Err(ValidationError::at(ErrorCode::OutOfRange, "score", "score must be a finite number"));
        }
        Ok(())
    }
}

payload! {
    /// `a` and `b` are the item ids of the two sides; `a` is the older.
    pub struct ContradictionDetected {
        pub contradiction_id: String,
        pub a: String,
        pub b: String,
        pub reason: String,
        /// Which check found it: `single_valued_fact`, `decision_reversed`,
        /// `negated_fact`, `value_changed`, or a publisher's own name.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub rule: Option<String>,
    }
}

impl ContradictionDetected {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("contradiction_id", &self.contradiction_id)?;
        require_text("a", &self.a)?;
        require_text("b", &self.b)
    }
}

/// How a contradiction was settled.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum ContradictionResolution {
    AWins,
    BWins,
    BothValid,
    Merged,
}

payload! {
    pub struct ContradictionResolved {
        pub contradiction_id: String,
        pub resolution: ContradictionResolution,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub note: Option<String>,
    }
}

impl ContradictionResolved {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("contradiction_id", &self.contradiction_id)
    }
}

payload! {
    /// The levels of a compressed phase, as produced once by a compressor
    /// (deterministic or an LLM) and applied as-is on replay.
    pub struct PhaseCompressed {
        pub phase_id: EventId,
        pub compressor: String,
        pub index: String,
        pub compressed: String,
        pub summary: String,
        pub findings: String,
    }
}

impl PhaseCompressed {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("compressor", &self.compressor)?;
        require_text("index", &self.index)
    }
}

payload! {
    /// How often one memory was returned by queries.
    pub struct RetrievalCount {
        pub item_id: String,
        pub count: u32,
    }
}

payload! {
    /// Retrieval counts are query traffic, which the log does not see; the
    /// consolidation actor records them as this event before they may change
    /// ranking or decay, so that replay counts the same.
    pub struct MemoriesRetrieved {
        pub counts: Vec<RetrievalCount>,
    }
}

impl MemoriesRetrieved {
    fn validate(&self) -> Result<(), ValidationError> {
        if self.counts.is_empty() {
            return Err(ValidationError::at(ErrorCode::EmptyField, "counts", "counts must name at least one item"));
        }
        for (index, count) in self.counts.iter().enumerate() {
            require_text(&format!("counts[{index}].item_id"), &count.item_id)?;
        }
        Ok(())
    }
}

payload! {
    pub struct MemoryPinned {
        pub item_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

impl MemoryPinned {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    pub struct MemoryUnpinned {
        pub item_id: String,
    }
}

impl MemoryUnpinned {
    fn validate(&self) -> Result<(), ValidationError> {
        require_text("item_id", &self.item_id)
    }
}

payload! {
    /// Two memories that belong together; `reason` says why (the entities
    /// they share, or the task they share).
    pub struct MemoryLink {
        pub a: String,
        pub b: String,
        pub reason: String,
    }
}

payload! {
    pub struct MemoriesLinked {
        pub links: Vec<MemoryLink>,
    }
}

impl MemoriesLinked {
    fn validate(&self) -> Result<(), ValidationError> {
        if self.links.is_empty() {
            return Err(ValidationError::at(ErrorCode::EmptyField, "links", "links must name at least one pair"));
        }
        for (index, link) in self.links.iter().enumerate() {
            require_text(&format!("links[{index}].a"), &link.a)?;
            require_text(&format!("links[{index}].b"), &link.b)?;
            if link.a == link.b {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    &format!("links[{index}].b"),
                    "a memory cannot be linked to itself",
                ));
            }
        }
        Ok(())
    }
}

payload! {
    /// Erases the content of the named items, and of every item written by
    /// `of_agent` (by default the tombstone's own agent) whose event time is
    /// before `before`, from the tombstone agent's projections and
    /// snapshots. An agent's shared items are in every memory that may see
    /// them, so erasing them takes one tombstone per memory. The events
    /// themselves stay in the log until its retention drops them or they
    /// are purged there (see docs/src/erasure.md).
    pub struct MemoryPurged {
        #[serde(default)]
        pub item_ids: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub before: Option<Timestamp>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub of_agent: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub reason: Option<String>,
    }
}

impl MemoryPurged {
    fn validate(&self) -> Result<(), ValidationError> {
        if self.item_ids.is_empty() && self.before.is_none() {
            return Err(ValidationError::at(
                ErrorCode::EmptyField,
                "item_ids",
                "a purge names item_ids, a before time, or both",
            ));
        }
        for (index, item_id) in self.item_ids.iter().enumerate() {
            require_text(&format!("item_ids[{index}]"), item_id)?;
        }
        if let Some(of_agent) = &self.of_agent {
            crate::envelope::validate_name(of_agent).map_err(|e| e.under("of_agent"))?;
        }
        Ok(())
    }
}

/// What a search asks for in `kind` to search completed phases instead of
/// items, and the kind of those hits: not an event kind.
pub const PHASE_SEARCH_KIND: &str = "phase";
