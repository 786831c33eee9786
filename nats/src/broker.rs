//! NATS beside the log: handoff packages published to their recipients
//! (and kept in the swarm's handoffs stream, for recipients that were away)
//! and query requests answered by request/reply. Only a log on NATS has a
//! broker; the embedded log serves the same over HTTP alone.

use async_trait::async_trait;
use futures::StreamExt;
use futures::stream::BoxStream;
use mneme_events::EventId;

use crate::LogError;
use crate::jetstream::JetStreamLog;
use crate::subjects;

/// Queue group of the query responders: several Mneme processes of one
/// swarm share the requests, each answered once.
const QUERY_QUEUE_GROUP: &str = "mneme-queries";

/// A query request received on `mneme.<swarm>.<agent>.query.<verb>`.
#[derive(Debug, Clone)]
pub struct QueryRequest {
    pub agent: String,
    pub verb: String,
    /// The JSON request body, as sent.
    pub body: Vec<u8>,
    /// Where the answer goes; `None` when the sender wants none.
    pub reply_to: Option<String>,
}

/// Messages on NATS that are not events.
#[async_trait]
pub trait Broker: Send + Sync + 'static {
    /// Publishes a handoff package (JSON) to `mneme.<swarm>.<agent>.handoff`,
    /// and returns once it is stored: live subscribers get it, and stream
    /// `MNEME_<swarm>_HANDOFFS` keeps it for durable consumers, deduplicated
    /// by `handoff_id` (its `Nats-Msg-Id`).
    async fn publish_handoff(&self, agent: &str, handoff_id: EventId, package_json: Vec<u8>) -> Result<(), LogError>;

    /// Securely deletes the packages of these handoffs from the handoffs
    /// stream (erasure: the handoff was erased, or its package quoted what
    /// was); answers how many were there.
    async fn erase_handoffs(&self, handoff_ids: &[EventId]) -> Result<usize, LogError>;

    /// Every query request to any agent of the swarm, until the connection
    /// closes.
    async fn query_requests(&self) -> Result<BoxStream<'static, QueryRequest>, LogError>;

    /// Answers a request.
    async fn reply(&self, reply_to: String, body: Vec<u8>) -> Result<(), LogError>;
}

#[async_trait]
impl Broker for JetStreamLog {
    async fn publish_handoff(&self, agent: &str, handoff_id: EventId, package_json: Vec<u8>) -> Result<(), LogError> {
        // Through JetStream, so that "delivered" means "stored": a stream
        // captures core publishes on its subjects, so plain subscribers get
        // the same message.
        self.publish_handoff_package(agent, &handoff_id.to_string(), package_json).await
    }

    async fn erase_handoffs(&self, handoff_ids: &[EventId]) -> Result<usize, LogError> {
        self.erase_handoff_packages(handoff_ids).await
    }

    async fn query_requests(&self) -> Result<BoxStream<'static, QueryRequest>, LogError> {
        let swarm = self.swarm_name().to_string();
        let subscriber = self
            .client()
            .queue_subscribe(subjects::query_subject(&swarm, "*", "*"), QUERY_QUEUE_GROUP.to_string())
            .await
            .map_err(|error| LogError::Nats(format!("could not subscribe to the query subjects: {error}")))?;
        let requests = subscriber.filter_map(move |message| {
            let request = subjects::query_of_subject(&swarm, &message.subject).map(|(agent, verb)| QueryRequest {
                agent: agent.to_string(),
                verb: verb.to_string(),
                body: message.payload.to_vec(),
                reply_to: message.reply.as_ref().map(|reply| reply.to_string()),
            });
            futures::future::ready(request)
        });
        Ok(requests.boxed())
    }

    async fn reply(&self, reply_to: String, body: Vec<u8>) -> Result<(), LogError> {
        self.client()
            .publish(reply_to, body.into())
            .await
            .map_err(|error| LogError::Nats(format!("could not answer a query: {error}")))
    }
}
