//! The phase compressor: asks a model to summarise each phase that
//! completes while the service is live, and appends the answer to the log as
//! a `phase_compressed` event. Memory applies that event like any other, so
//! a replay (with no model configured) rebuilds the same levels.
//!
//! Runs on the arbiter that does log and network IO; at most
//! [`CONCURRENT_SUMMARIES`] model calls are in flight, and a notice that
//! finds them all busy waits in the mailbox.

use std::sync::Arc;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use mneme_events::{Event, EventId, EventKind, IdKey, PhaseCompressed};
use mneme_nats::EventLog;

use crate::lease_keeper::LeaseGate;
use crate::phase_summarizer::{PhaseSummarizer, PhaseSummaryRequest};

/// Model calls in flight at once.
pub const CONCURRENT_SUMMARIES: usize = 2;
/// The event id of the `phase_compressed` event of `agent`'s phase: the
/// same phase always gets the same id, so a summary published twice (after
/// a restart) is deduplicated by the log and by memory, and the first one
/// wins; keyed, so no client can take the id first.
pub fn compressed_event_id(id_key: &IdKey, agent: &str, phase_id: EventId) -> EventId {
    id_key.derive(agent, "phase_compressed", &phase_id.to_string())
}

/// A phase completed while live; summarise it.
#[derive(Message, Debug, Clone)]
#[rtype(result = "()")]
pub struct PhaseCompletedNotice {
    pub request: PhaseSummaryRequest,
    pub phase_id: EventId,
    /// The event that completed the phase: the cause of the summary.
    pub completed_by: EventId,
    /// Its time, which the summary's event takes.
    pub completed_at: Option<mneme_events::Timestamp>,
    pub correlation_id: Option<String>,
}

pub struct PhaseCompressor {
    summarizer: Arc<dyn PhaseSummarizer>,
    log: Arc<dyn EventLog>,
    id_key: IdKey,
    permits: Arc<tokio::sync::Semaphore>,
    /// With replicas: phases are summarised only where the swarm's writer
    /// lease is held (every replica's memories see each phase complete).
    gate: Option<LeaseGate>,
}

impl PhaseCompressor {
    pub fn new(summarizer: Arc<dyn PhaseSummarizer>, log: Arc<dyn EventLog>, id_key: IdKey) -> PhaseCompressor {
        PhaseCompressor {
            summarizer,
            log,
            id_key,
            permits: Arc::new(tokio::sync::Semaphore::new(CONCURRENT_SUMMARIES)),
            gate: None,
        }
    }

    /// Summarises only while this process holds `gate`'s lease.
    pub fn with_lease(mut self, gate: Option<LeaseGate>) -> PhaseCompressor {
        self.gate = gate;
        self
    }
}

impl Actor for PhaseCompressor {
    type Context = Context<Self>;
}

impl Handler<PhaseCompletedNotice> for PhaseCompressor {
    type Result = ResponseFuture<()>;

    fn handle(&mut self, notice: PhaseCompletedNotice, _: &mut Self::Context) -> Self::Result {
        let summarizer = self.summarizer.clone();
        let log = self.log.clone();
        let id_key = self.id_key.clone();
        let permits = self.permits.clone();
        let lease = match &self.gate {
            Some(gate) => match gate.held() {
                Some(lease) => Some(lease),
                None => {
                    tracing::debug!(phase = %notice.request.phase_id, "another process holds the writer lease; it summarises the phase");
                    return Box::pin(async {});
                }
            },
            None => None,
        };
        Box::pin(async move {
            let Ok(_permit) = permits.acquire().await else { return };
            let agent = notice.request.agent.clone();
            let swarm = notice.request.swarm.clone();
            let phase = notice.request.phase_id.clone();
            let summary = match summarizer.summarize(&notice.request).await {
                Ok(summary) => summary,
                Err(reason) => {
                    // The phase keeps its extractive levels; nothing is lost.
                    tracing::warn!(%agent, %phase, %reason, "phase summary failed; keeping the extractive levels");
                    metrics::counter!("mneme_phase_summaries_total", "swarm" => swarm.clone(), "result" => "failed")
                        .increment(1);
                    return;
                }
            };
            let compressed = PhaseCompressed {
                phase_id: notice.phase_id,
                compressor: summarizer.compressor_name(),
                index: summary.index,
                compressed: summary.compressed,
                summary: summary.summary,
                findings: summary.findings,
            };
            // Private, as `Event::new` makes it: the summary quotes every
            // event of the phase, private ones included, so it is the
            // agent's own whatever the scope of the event that completed it.
            let event = Event::new(&notice.request.swarm, &agent, EventKind::PhaseCompressed(compressed))
                .with_id(compressed_event_id(&id_key, &agent, notice.phase_id))
                .with_correlation(notice.correlation_id)
                .caused_by(notice.completed_by);
            // At its cause's time, not the model's: a replayed or imported
            // log keeps a coherent timeline.
            let event = match notice.completed_at {
                Some(at) => event.with_ts(at),
                None => event,
            };
            if let Err(error) = event.validate() {
                tracing::warn!(%agent, %phase, %error, "the model's summary is not a valid event; keeping the extractive levels");
                metrics::counter!("mneme_phase_summaries_total", "swarm" => swarm.clone(), "result" => "invalid")
                    .increment(1);
                return;
            }
            let appended = match &lease {
                Some(lease) => log.append_fenced(lease, std::slice::from_ref(&event)).await,
                None => log.append(std::slice::from_ref(&event)).await,
            };
            match appended {
                Ok(_) => {
                    tracing::info!(%agent, %phase, "phase summary recorded");
                    metrics::counter!("mneme_phase_summaries_total", "swarm" => swarm.clone(), "result" => "recorded")
                        .increment(1);
                }
                Err(error) => {
                    tracing::warn!(%agent, %phase, %error, "could not append the phase summary");
                    metrics::counter!("mneme_phase_summaries_total", "swarm" => swarm.clone(), "result" => "append_failed").increment(1);
                }
            }
        })
    }
}
