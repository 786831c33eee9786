//! The seam between a completed phase and an optional model that summarises
//! it. The memory never calls a model itself: a summary becomes a
//! `phase_compressed` event on the log, and replay applies that event.

use async_trait::async_trait;

/// What a summariser is told about one completed phase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSummaryRequest {
    pub swarm: String,
    pub agent: String,
    /// The id of the phase's `phase_started` event (or of the first event of
    /// a phase delimited by its task).
    pub phase_id: String,
    pub phase_name: String,
    pub goal: Option<String>,
    pub outcome: Option<String>,
    /// The deterministic extractive findings, as a starting point.
    pub extractive_findings: String,
    /// The phase's events as memory renders them, oldest first, cut to the
    /// configured token budget.
    pub transcript: String,
}

/// A summariser's answer. The levels' token bounds (8, 32, 128, 512) are
/// enforced by the caller, which cuts any level that is too long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseSummary {
    pub index: String,
    pub compressed: String,
    pub summary: String,
    pub findings: String,
}

/// A model that summarises phases, for example an OpenAI-compatible chat
/// endpoint.
#[async_trait]
pub trait PhaseSummarizer: Send + Sync + 'static {
    /// Names the compressor in the `phase_compressed` event, e.g.
    /// `llm:gpt-4o-mini`.
    fn compressor_name(&self) -> String;

    /// Summarises one phase. The error is a readable reason; the phase then
    /// keeps its extractive levels.
    async fn summarize(&self, request: &PhaseSummaryRequest) -> Result<PhaseSummary, String>;
}
