//! HTTP for handoffs an agent received: the list (pending first), a
//! server-sent-event stream of them (`?follow=true`), and acknowledging one.
//! The same packages go out on NATS at `mneme.<swarm>.<agent>.handoff`
//! (see the handoff router), kept in stream `MNEME_<swarm>_HANDOFFS`; this is
//! how an agent gets them on the embedded log, or without a NATS client. The
//! list and the acknowledgement are also the NATS verbs `handoffs` and `ack`
//! (`nats_queries.rs`), answered by the same functions.

use mneme_api::params::{NoParams, quote};
use std::collections::BTreeMap;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use futures::StreamExt;
use mneme_actors::{AgentHandle, AgentsWritten, Query, QueryAnswer, handoff_delivery, handoff_delivery_bytes};
use mneme_api::handoffs::{AcknowledgeBody, Acknowledged, HandoffsAnswer};
use mneme_events::{Event, EventId, EventKind, HandoffAcknowledged};
use mneme_nats::LogEntry;
use mneme_projections::HandoffRecord;
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::http::{ApiError, AppState, agent_handle, ask, json_body, read_command_body};

/// A comment line goes down an idle stream this often, so that proxies and
/// clients can tell a quiet stream from a dead one.
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(15);
/// Frames queued for a slow reader before the stream waits for it.
const STREAM_BUFFER_FRAMES: usize = 16;
/// How long an acknowledgement waits for the memory to apply the log, so
/// that a handoff delivered a moment ago can be acknowledged.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HandoffsParams {
    #[serde(default)]
    follow: bool,
    min_seq: Option<u64>,
}

/// `GET …/agents/{agent}/handoffs`: the handoffs the agent received, pending
/// first. With `follow=true`, a `text/event-stream`: the pending ones, then
/// each new one as it is delivered, until the client goes away.
pub async fn list_handoffs(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<HandoffsParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    if !params.follow {
        return Ok(HttpResponse::Ok().json(handoffs_answer(&state, &swarm, &agent, params.min_seq).await?));
    }
    let handle = agent_handle(&state, &swarm, &agent, params.min_seq).await?;
    // The checkpoint first, then the list: a handoff applied in between is
    // in the list and also after the checkpoint, and is sent once.
    let QueryAnswer::Status(status) = ask(&handle, Query::Status).await? else {
        unreachable!("a status query answers with a status")
    };
    let QueryAnswer::Handoffs(records) = ask(&handle, Query::Handoffs).await? else {
        unreachable!("a handoffs query answers with handoffs")
    };
    let pending: Vec<HandoffRecord> = records.into_iter().filter(HandoffRecord::is_pending).collect();
    let (frames, receiver) = mpsc::channel::<web::Bytes>(STREAM_BUFFER_FRAMES);
    actix_web::rt::spawn(stream_handoffs(state.into_inner(), handle, swarm, status.checkpoint, pending, frames));
    let stream = futures::stream::unfold(receiver, |mut receiver| async move {
        let frame = receiver.recv().await?;
        Some((Ok::<_, actix_web::Error>(frame), receiver))
    });
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .streaming(stream))
}

/// The handoffs `agent` received, pending first, as `GET …/handoffs` and
/// the NATS `handoffs` verb answer them: `{"agent", "handoffs": [...]}`.
pub async fn handoffs_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    min_seq: Option<u64>,
) -> Result<HandoffsAnswer, ApiError> {
    let handle = agent_handle(state, swarm, agent, min_seq).await?;
    let QueryAnswer::Handoffs(records) = ask(&handle, Query::Handoffs).await? else {
        unreachable!("a handoffs query answers with handoffs")
    };
    let handoffs = records.iter().map(|record| handoff_delivery(swarm, agent, record)).collect();
    Ok(HandoffsAnswer { agent: agent.to_string(), handoffs })
}

/// Sends `pending`, then follows the agent's part of the log after
/// `checkpoint` for new deliveries, until the reader hangs up, the server
/// shuts down, or the log fails (the client reconnects and gets the pending
/// ones again). What is sent is the memory's record of each handoff, as the
/// list shows it: a receipt the agent's runtime recorded itself, without a
/// package, is sent again once Mneme's delivery fills the package in.
async fn stream_handoffs(
    state: std::sync::Arc<AppState>,
    handle: AgentHandle,
    swarm: String,
    checkpoint: u64,
    pending: Vec<HandoffRecord>,
    frames: mpsc::Sender<web::Bytes>,
) {
    let agent = handle.agent.clone();
    let mut shutting_down = state.shutting_down.clone();
    // Each handoff sent, and whether it had its package.
    let mut sent: BTreeMap<EventId, bool> = BTreeMap::new();
    for record in &pending {
        sent.insert(record.handoff_id, record.package.is_some());
        if frames.send(handoff_frame(&swarm, &agent, record)).await.is_err() {
            return;
        }
    }
    let mut entries = match state.log.subscribe(checkpoint + 1, Some(&agent)).await {
        Ok(entries) => entries,
        Err(error) => {
            tracing::warn!(%agent, %error, "cannot follow the log for handoffs");
            return;
        }
    };
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE_EVERY);
    keep_alive.tick().await;
    loop {
        let frame = tokio::select! {
            entry = entries.next() => match entry {
                Some(Ok(entry)) => {
                    let Some(handoff_id) = received_handoff_id(&entry) else { continue };
                    match memory_record(&state, &handle, entry.seq, handoff_id).await {
                        Ok(Some(record)) if sent.get(&handoff_id) != Some(&true)
                            && (record.package.is_some() || !sent.contains_key(&handoff_id)) =>
                        {
                            sent.insert(handoff_id, record.package.is_some());
                            handoff_frame(&swarm, &agent, &record)
                        }
                        Ok(_) => continue,
                        Err(error) => {
                            tracing::warn!(%agent, %error, "handoff stream ended: the memory did not answer");
                            return;
                        }
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(%agent, %error, "handoff stream ended by a log error");
                    return;
                }
                None => return,
            },
            _ = keep_alive.tick() => web::Bytes::from_static(b": keep-alive\n\n"),
            () = frames.closed() => return,
            _ = shutting_down.wait_for(|shutting_down| *shutting_down) => return,
        };
        if frames.send(frame).await.is_err() {
            return;
        }
    }
}

/// The handoff a `handoff_received` entry is about.
fn received_handoff_id(entry: &LogEntry) -> Option<EventId> {
    let event = entry.record.as_ref().ok()?;
    let EventKind::HandoffReceived(received) = &event.kind else { return None };
    Some(received.handoff_id)
}

/// The memory's record of a handoff, once it has applied `seq`.
async fn memory_record(
    state: &AppState,
    handle: &AgentHandle,
    seq: u64,
    handoff_id: EventId,
) -> Result<Option<HandoffRecord>, ApiError> {
    handle.caught_up(state.log.as_ref(), seq, CATCH_UP_TIMEOUT).await?;
    let QueryAnswer::Handoffs(records) = ask(handle, Query::Handoffs).await? else {
        unreachable!("a handoffs query answers with handoffs")
    };
    Ok(records.into_iter().find(|record| record.handoff_id == handoff_id))
}

/// One server-sent event: `event: handoff`, the handoff id as the event id,
/// and the delivery JSON on one `data:` line.
fn handoff_frame(swarm: &str, agent: &str, record: &HandoffRecord) -> web::Bytes {
    let data = String::from_utf8(handoff_delivery_bytes(swarm, agent, record)).expect("JSON is UTF-8");
    web::Bytes::from(format!("event: handoff\nid: {}\ndata: {data}\n\n", record.handoff_id))
}

/// `POST …/agents/{agent}/handoffs/{handoff_id}/ack`, optionally with
/// `{"note": "..."}`: see [`acknowledge_answer`].
pub async fn acknowledge_handoff(
    state: web::Data<AppState>,
    path: web::Path<(String, String, String)>,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_command_body(payload).await?;
    let (swarm, agent, handoff_id) = path.into_inner();
    let body: AcknowledgeBody =
        if body.iter().all(u8::is_ascii_whitespace) { AcknowledgeBody::default() } else { json_body(&body)? };
    Ok(HttpResponse::Ok().json(acknowledge_answer(&state, &swarm, &agent, &handoff_id, body.note).await?))
}

/// Acknowledges a handoff `agent` received, as `POST …/handoffs/{id}/ack`
/// and the NATS `ack` verb do: appends `handoff_acknowledged` with `note`.
/// 404 for a handoff the agent did not receive, 409 for one already
/// acknowledged. The event's id derives from the handoff's, so two racing
/// acknowledgements store one.
pub async fn acknowledge_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    handoff_id: &str,
    note: Option<String>,
) -> Result<Acknowledged, ApiError> {
    let handoff_id: EventId = handoff_id.parse().map_err(|_| {
        ApiError::bad_parameter("handoff_id", format!("{} is not an event id (a ULID)", quote(handoff_id)))
    })?;
    let handle = agent_handle(state, swarm, agent, None).await?;
    let log_end = state.log.last_seq().await?;
    handle.caught_up(state.log.as_ref(), log_end, CATCH_UP_TIMEOUT).await?;
    let QueryAnswer::Handoffs(records) = ask(&handle, Query::Handoffs).await? else {
        unreachable!("a handoffs query answers with handoffs")
    };
    let Some(record) = records.iter().find(|record| record.handoff_id == handoff_id) else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_handoff",
            Some("handoff_id"),
            format!("{agent:?} has received no handoff {handoff_id}"),
        ));
    };
    if let Some(acknowledged) = record.acknowledged {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "already_acknowledged",
            Some("handoff_id"),
            format!("handoff {handoff_id} was acknowledged at seq {}", acknowledged.seq),
        ));
    }
    let event = Event::new(swarm, agent, EventKind::HandoffAcknowledged(HandoffAcknowledged { handoff_id, note }))
        .with_id(state.id_key.derive(agent, "handoff_acknowledged", &handoff_id.to_string()))
        .caused_by(record.received.event_id);
    event.validate().map_err(ApiError::from_validation)?;
    let appended = state.log.append(std::slice::from_ref(&event)).await?;
    state.supervisor.do_send(AgentsWritten(vec![agent.to_string()]));
    Ok(Acknowledged {
        handoff_id: handoff_id.to_string(),
        agent: agent.to_string(),
        event_id: event.id.to_string(),
        seq: appended[0].seq,
        duplicate: appended[0].duplicate,
    })
}
