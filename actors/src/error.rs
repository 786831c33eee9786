use mneme_nats::LogError;
use mneme_projections::ProjectionError;

/// The one error type of `mneme-actors`.
#[derive(Debug, thiserror::Error)]
pub enum ActorsError {
    #[error(transparent)]
    Log(#[from] LogError),
    #[error(transparent)]
    Projection(#[from] ProjectionError),
    #[error("snapshot store failed: {0}")]
    SnapshotStore(#[from] std::io::Error),
    #[error("the snapshot cannot be written as a delta: {0}")]
    SnapshotIncomplete(String),
    #[error("invalid configuration in {path}: {message}")]
    Config { path: String, message: String },
    #[error("unknown agent {agent:?} in swarm {swarm:?}")]
    UnknownAgent { swarm: String, agent: String },
    #[error("the memory actor of {agent:?} is not running")]
    ActorStopped { agent: String },
    #[error("consolidation of {agent:?} failed: {message}")]
    Consolidation { agent: String, message: String },
    #[error("handoff {handoff_id} cannot be delivered: {message}")]
    Handoff { handoff_id: String, message: String },
    #[error("enrichment of swarm {swarm:?} failed: {message}")]
    Enrichment { swarm: String, message: String },
    #[error("timed out after {waited_ms} ms waiting for {agent:?} to apply seq {seq}")]
    CatchUpTimeout { agent: String, seq: u64, waited_ms: u64 },
    #[error(
        "this process does not hold the {lease} lease of swarm {swarm:?} ({holder}): what writes as the \
         swarm's one writer runs in the process that holds it"
    )]
    NotLeaseHolder { swarm: String, lease: String, holder: String },
}
