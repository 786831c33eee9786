//! Handoffs an agent received: the list (pending first), a feed of new
//! ones as they are delivered, and acknowledging one. The same packages go
//! out on NATS at `mneme.<swarm>.<agent>.handoff` (see the handoff router),
//! kept in stream `MNEME_<swarm>_HANDOFFS`; this is how an agent gets them
//! on the embedded log, or without a NATS client.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mneme_actors::queries::{Handoffs, Status};
use mneme_actors::{AgentHandle, AgentsWritten};
use mneme_api::handoffs::{Acknowledged, HandoffDelivery, HandoffsAnswer};
use mneme_api::params::quote;
use mneme_events::{Event, EventId, EventKind, HandoffAcknowledged};
use mneme_nats::LogEntry;
use mneme_projections::HandoffRecord;
use tokio::sync::mpsc;

use super::{ApiError, Service, SwarmRuntime, ask};

/// How long an acknowledgement waits for the memory to apply the log, so
/// that a handoff delivered a moment ago can be acknowledged.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);
/// Deliveries queued for a slow reader before the feed waits for it.
const FEED_BUFFER: usize = 16;

impl Service {
    /// The handoffs `agent` received, pending first.
    pub async fn handoffs(&self, swarm: &str, agent: &str, min_seq: Option<u64>) -> Result<HandoffsAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        let handle = runtime.agent_handle(agent, min_seq).await?;
        let records = ask(&handle, Handoffs).await?;
        let handoffs = records.iter().map(|record| runtime.shown_delivery(agent, record)).collect();
        Ok(HandoffsAnswer { agent: agent.to_string(), handoffs })
    }

    /// The pending handoffs of `agent`, then each new one as it is
    /// delivered, until the receiver is dropped, the server shuts down, or
    /// the log fails (the reader asks again and gets the pending ones
    /// again). Must be called on an actix system: the feed runs on it.
    pub async fn follow_handoffs(
        self: Arc<Self>,
        swarm: &str,
        agent: &str,
        min_seq: Option<u64>,
    ) -> Result<mpsc::Receiver<HandoffDelivery>, ApiError> {
        let runtime = self.swarm(swarm)?.clone();
        let handle = runtime.agent_handle(agent, min_seq).await?;
        // The checkpoint first, then the list: a handoff applied in between
        // is in the list and also after the checkpoint, and is sent once.
        let status = ask(&handle, Status).await?;
        let records = ask(&handle, Handoffs).await?;
        let pending: Vec<HandoffRecord> = records.into_iter().filter(HandoffRecord::is_pending).collect();
        let (deliveries, receiver) = mpsc::channel(FEED_BUFFER);
        let shutting_down = self.shutting_down.clone();
        actix_rt::spawn(runtime.feed_handoffs(handle, shutting_down, status.checkpoint, pending, deliveries));
        Ok(receiver)
    }
}

impl SwarmRuntime {
    /// Sends `pending`, then follows the agent's part of the log after
    /// `checkpoint` for new deliveries. What is sent is the memory's record
    /// of each handoff, as the list shows it: a receipt the agent's runtime
    /// recorded itself, without a package, is sent again once Mneme's
    /// delivery fills the package in.
    async fn feed_handoffs(
        self: Arc<Self>,
        handle: AgentHandle,
        mut shutting_down: tokio::sync::watch::Receiver<bool>,
        checkpoint: u64,
        pending: Vec<HandoffRecord>,
        deliveries: mpsc::Sender<HandoffDelivery>,
    ) {
        let agent = handle.agent.clone();
        // Each handoff sent, and whether it had its package.
        let mut sent: BTreeMap<EventId, bool> = BTreeMap::new();
        for record in &pending {
            sent.insert(record.handoff_id, record.package.is_some());
            if deliveries.send(self.shown_delivery(&agent, record)).await.is_err() {
                return;
            }
        }
        let mut entries = match self.log.subscribe(checkpoint + 1, Some(&agent)).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%agent, %error, "cannot follow the log for handoffs");
                return;
            }
        };
        loop {
            let delivery = tokio::select! {
                entry = entries.next() => match entry {
                    Some(Ok(entry)) => {
                        let Some(handoff_id) = received_handoff_id(&entry) else { continue };
                        match self.memory_record(&handle, entry.seq, handoff_id).await {
                            Ok(Some(record)) if sent.get(&handoff_id) != Some(&true)
                                && (record.package.is_some() || !sent.contains_key(&handoff_id)) =>
                            {
                                sent.insert(handoff_id, record.package.is_some());
                                self.shown_delivery(&agent, &record)
                            }
                            Ok(_) => continue,
                            Err(error) => {
                                tracing::warn!(%agent, %error, "handoff feed ended: the memory did not answer");
                                return;
                            }
                        }
                    }
                    Some(Err(error)) => {
                        tracing::warn!(%agent, %error, "handoff feed ended by a log error");
                        return;
                    }
                    None => return,
                },
                () = deliveries.closed() => return,
                _ = shutting_down.wait_for(|shutting_down| *shutting_down) => return,
            };
            if deliveries.send(delivery).await.is_err() {
                return;
            }
        }
    }

    /// A handoff as its recipient is shown it: its package without what
    /// quotes an erased event, and none once the handoff itself is erased.
    pub(super) fn shown_delivery(&self, agent: &str, record: &HandoffRecord) -> HandoffDelivery {
        let mut delivery = handoff_delivery(self.name(), agent, record);
        if let Some(package) = &delivery.package {
            delivery.package = self.erasures.erasures().redact_package(record.handoff_id, package);
        }
        delivery
    }

    /// The memory's record of a handoff, once it has applied `seq`.
    async fn memory_record(
        &self,
        handle: &AgentHandle,
        seq: u64,
        handoff_id: EventId,
    ) -> Result<Option<HandoffRecord>, ApiError> {
        handle.caught_up(self.log.as_ref(), seq, CATCH_UP_TIMEOUT).await?;
        let records = ask(handle, Handoffs).await?;
        Ok(records.into_iter().find(|record| record.handoff_id == handoff_id))
    }
}

impl Service {
    /// Acknowledges a handoff `agent` received: appends
    /// `handoff_acknowledged` with `note`. 404 for a handoff the agent did
    /// not receive, 409 for one already acknowledged. The event's id
    /// derives from the handoff's, so two racing acknowledgements store one.
    pub async fn acknowledge(
        &self,
        swarm: &str,
        agent: &str,
        handoff_id: &str,
        note: Option<String>,
    ) -> Result<Acknowledged, ApiError> {
        let handoff_id: EventId = handoff_id.parse().map_err(|_| {
            ApiError::bad_parameter("handoff_id", format!("{} is not an event id (a ULID)", quote(handoff_id)))
        })?;
        let runtime = self.swarm(swarm)?;
        let handle = runtime.agent_handle(agent, None).await?;
        let log_end = runtime.log.last_event_seq().await?;
        handle.caught_up(runtime.log.as_ref(), log_end, CATCH_UP_TIMEOUT).await?;
        let records = ask(&handle, Handoffs).await?;
        let Some(record) = records.iter().find(|record| record.handoff_id == handoff_id) else {
            return Err(ApiError::not_found(
                "unknown_handoff",
                Some("handoff_id"),
                format!("{agent:?} has received no handoff {handoff_id}"),
            ));
        };
        if let Some(acknowledged) = record.acknowledged {
            return Err(ApiError::conflict(
                "already_acknowledged",
                Some("handoff_id"),
                format!("handoff {handoff_id} was acknowledged at seq {}", acknowledged.seq),
            ));
        }
        let event = Event::new(swarm, agent, EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id, note }))
            .with_id(runtime.id_key.derive(agent, "handoff_acknowledged", &handoff_id.to_string()))
            .with_ts(self.clock.now())
            .caused_by(record.received.event_id);
        event.validate().map_err(ApiError::from_validation)?;
        let appended = runtime.log.append(std::slice::from_ref(&event)).await?;
        runtime.supervisor.do_send(AgentsWritten(vec![agent.to_string()]));
        // Answered once applied: the handoff is no longer pending for a
        // read that follows (core memory, the pending list).
        handle.caught_up(runtime.log.as_ref(), appended[0].seq, CATCH_UP_TIMEOUT).await?;
        Ok(Acknowledged {
            handoff_id: handoff_id.to_string(),
            agent: agent.to_string(),
            event_id: event.id.to_string(),
            seq: appended[0].seq,
            duplicate: appended[0].duplicate,
        })
    }
}

/// The handoff a `handoff_received` entry is about.
fn received_handoff_id(entry: &LogEntry) -> Option<EventId> {
    let event = entry.record.as_ref().ok()?;
    let EventKind::HandoffReceived(received) = &event.kind else { return None };
    Some(received.handoff_id)
}

/// A handoff as its recipient reads it, on NATS and over HTTP: who sent it
/// to whom, whether it is acknowledged, and the package. The handoff
/// router publishes it on NATS through [`handoff_delivery_bytes`], which
/// the server hands it (`mneme_actors::HandoffPublisher`).
pub fn handoff_delivery(swarm: &str, recipient: &str, record: &HandoffRecord) -> HandoffDelivery {
    HandoffDelivery {
        handoff_id: record.handoff_id.to_string(),
        swarm: swarm.to_string(),
        from: record.from.clone(),
        to: recipient.to_string(),
        status: if record.is_pending() { "pending" } else { "acknowledged" }.to_string(),
        received_seq: record.received.seq,
        received_event_id: record.received.event_id.to_string(),
        acknowledged_seq: record.acknowledged.map(|reference| reference.seq),
        package: record.package.clone(),
    }
}

/// [`handoff_delivery`] as the bytes of a NATS message or an SSE frame.
pub fn handoff_delivery_bytes(swarm: &str, recipient: &str, record: &HandoffRecord) -> Vec<u8> {
    serde_json::to_vec(&handoff_delivery(swarm, recipient, record)).expect("a delivery is JSON")
}
