/// The one error type of `mneme-projections`.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// An event at or below the checkpoint: it was applied already, so it is
    /// refused rather than applied twice.
    #[error("event at seq {seq} is at or below the checkpoint {checkpoint}; it was already applied")]
    AlreadyApplied { seq: u64, checkpoint: u64 },
    /// The event belongs to another swarm or agent than this memory.
    #[error("event of {swarm}/{agent} cannot be applied to the memory of {expected_swarm}/{expected_agent}")]
    WrongOwner { swarm: String, agent: String, expected_swarm: String, expected_agent: String },
    /// The text index's storage or the embedding model failed
    /// (`mneme-index`).
    #[error(transparent)]
    Index(#[from] mneme_index::IndexError),
    /// A query of a memory with items applied since its last commit: they
    /// would be missing from its answer. Whoever applies commits before
    /// asking (the memory actor does before a search or a context).
    #[error("the memory has items applied through seq {checkpoint} that are not committed; commit before querying")]
    Uncommitted { checkpoint: u64 },
    #[error("snapshot is unusable: {0}")]
    CorruptSnapshot(String),
    /// Applying a valid event panicked. Raised by the callers that contain
    /// the panic (`mneme-actors`), never by `apply` itself: the memory may
    /// be half-changed and must be rebuilt without the event.
    #[error("applying the event at seq {seq} panicked: {message}")]
    ApplyPanicked { seq: u64, message: String },
}
