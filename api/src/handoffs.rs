//! Handoffs as an agent receives them: the list, the stream, the packages
//! published on NATS, and acknowledging one.

pub use mneme_events::{HandoffBundle, HandoffPackage};
use serde::{Deserialize, Serialize};

/// One handoff an agent received, as `GET …/handoffs` lists it, the
/// server-sent-event stream sends it and the router publishes it on
/// `mneme.<swarm>.<agent>.handoff`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HandoffDelivery {
    /// The id of the `handoff_sent` event.
    pub handoff_id: String,
    pub swarm: String,
    pub from: String,
    pub to: String,
    /// `pending` or `acknowledged`.
    pub status: String,
    /// The recipient's `handoff_received` event.
    pub received_seq: u64,
    pub received_event_id: String,
    pub acknowledged_seq: Option<u64>,
    /// What the sender's memory assembled; `None` for a receipt the agent's
    /// runtime recorded itself before Mneme delivered the package.
    pub package: Option<HandoffPackage>,
}

/// `GET …/agents/{agent}/handoffs`: pending first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HandoffsAnswer {
    pub agent: String,
    pub handoffs: Vec<HandoffDelivery>,
}

/// `POST …/handoffs/{handoff_id}/ack` body (it may be empty).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AcknowledgeBody {
    pub note: Option<String>,
}

/// What acknowledging answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Acknowledged {
    pub handoff_id: String,
    pub agent: String,
    /// The `handoff_acknowledged` event.
    pub event_id: String,
    pub seq: u64,
    /// The same acknowledgement was already on the log.
    pub duplicate: bool,
}
