//! One handler per route: the path, the query string or the body as the
//! wire types of `mneme-api`, one call of the [`Service`], the answer as
//! JSON. `web::Query<NoParams>` refuses any query string on routes that
//! take none.

use std::time::Duration;

use actix_web::{HttpResponse, web};
use mneme_api::consolidation::{PurgeBody, ResolveBody};
use mneme_api::handoffs::{AcknowledgeBody, HandoffDelivery};
use mneme_api::log::LogEntry;
use mneme_api::params::{
    ConsolidateParams, ContextBody, ContextParams, ContradictionParams, EventsParams, GraphParams, HandoffsParams,
    ItemsParams, MinSeqParams, NoParams, PhaseParams, ReplayParams, SearchParams, TimelineParams,
};
use mneme_api::query::ProvenanceInput;
use serde::Serialize;
use tokio::sync::mpsc;

use super::auth::PermitKey;
use super::{read_body, read_command_body};
use crate::service::{ApiError, Caller, Service, StreamPermit, json_body};

type Answer = Result<HttpResponse, ApiError>;
type State = web::Data<Service>;
type SwarmPath = web::Path<String>;
type AgentPath = web::Path<(String, String)>;
/// `/v1/swarms/{swarm}/agents/{agent}/…/{id}`.
type AgentIdPath = web::Path<(String, String, String)>;

/// A comment line goes down an idle stream this often, so that proxies and
/// clients can tell a quiet stream from a dead one, and so that a reader
/// gone is found within this time (its stream's permit comes back).
const KEEP_ALIVE_EVERY: Duration = Duration::from_secs(5);

fn ok(answer: impl Serialize) -> Answer {
    Ok(HttpResponse::Ok().json(answer))
}

pub(super) async fn healthz(service: State) -> Answer {
    ok(service.health().await?)
}

/// `GET /v1/openapi.json`, generated once from the route table and the
/// wire types.
pub(super) async fn openapi() -> HttpResponse {
    static DOCUMENT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    let document = DOCUMENT.get_or_init(|| mneme_api::openapi::openapi(env!("CARGO_PKG_VERSION")).to_string());
    HttpResponse::Ok().content_type("application/json").body(document.as_str())
}

/// `GET /metrics`: a swarm's token sees the series of its own swarm and
/// those of the process (which name no swarm), never another swarm's.
pub(super) async fn metrics(service: State, caller: Option<web::ReqData<Caller>>) -> HttpResponse {
    let rendered = service.metrics.render();
    let body = match caller.as_deref() {
        Some(Caller::Token { swarm, .. }) => series_of_swarm(&rendered, swarm),
        _ => rendered,
    };
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(body)
}

/// The lines of a Prometheus text exposition that are comments, or series
/// with no `swarm` label or with `swarm="<swarm>"`.
fn series_of_swarm(rendered: &str, swarm: &str) -> String {
    let own = format!("swarm=\"{swarm}\"");
    let has = |labels: &str, label: &str| labels.starts_with(label) || labels.contains(&format!(",{label}"));
    let mut kept = String::with_capacity(rendered.len());
    for line in rendered.lines() {
        let labels = line.split_once('{').map(|(_, rest)| rest);
        let shown = line.starts_with('#') || labels.is_none_or(|labels| !has(labels, "swarm=\"") || has(labels, &own));
        if shown {
            kept.push_str(line);
            kept.push('\n');
        }
    }
    kept
}

/// `GET /v1/swarms`.
pub(super) async fn swarms(service: State, caller: Option<web::ReqData<Caller>>, _: web::Query<NoParams>) -> Answer {
    let caller = caller.map_or(Caller::Anyone, web::ReqData::into_inner);
    ok(service.swarm_list(&caller))
}

/// `POST /v1/events`: one event or an array, all or none.
pub(super) async fn post_events(
    service: State,
    caller: Option<web::ReqData<Caller>>,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Answer {
    let limit = service.http.max_request_bytes;
    let body = read_body(payload, limit, "the limit set by http.max_request_bytes").await?;
    let caller = caller.map_or(Caller::Anyone, web::ReqData::into_inner);
    Ok(HttpResponse::Accepted().json(service.append_events(&caller, &body).await?))
}

/// `GET …/events`: a page of the log; with `follow=true`, a
/// `text/event-stream` of every entry from `from_seq` on, then each new one
/// as it is appended, until the client goes away or the server stops.
pub(super) async fn get_events(
    service: State,
    key: Option<web::ReqData<PermitKey>>,
    swarm: SwarmPath,
    params: web::Query<EventsParams>,
) -> Answer {
    if !params.follow {
        return ok(service.events(&swarm, &params).await?);
    }
    let permit = stream_permit(&service, key)?;
    let entries = service.into_inner().follow_events(&swarm, &params).await?;
    Ok(event_stream(server_sent_events(entries, permit, "entry", |entry: &LogEntry| entry.seq().to_string())))
}

/// The permit a stream holds open for as long as it runs.
fn stream_permit(service: &State, key: Option<web::ReqData<PermitKey>>) -> Result<StreamPermit, ApiError> {
    let key = key.map_or_else(|| "an unauthenticated caller".to_string(), |key| key.into_inner().0);
    service.stream_permits.try_acquire(&key)
}

pub(super) async fn get_dead_letters(service: State, swarm: SwarmPath, _: web::Query<NoParams>) -> Answer {
    ok(service.dead_letters(&swarm).await?)
}

pub(super) async fn get_agents(service: State, swarm: SwarmPath, _: web::Query<NoParams>) -> Answer {
    ok(service.agents(&swarm).await?)
}

pub(super) async fn swarm_provenance(service: State, path: AgentPath, _: web::Query<NoParams>) -> Answer {
    let (swarm, item_id) = path.into_inner();
    ok(service.swarm_provenance(&swarm, &item_id).await?)
}

pub(super) async fn agent_provenance(service: State, path: AgentIdPath, params: web::Query<MinSeqParams>) -> Answer {
    let (swarm, agent, item_id) = path.into_inner();
    let input = ProvenanceInput { item_id, min_seq: params.min_seq };
    ok(service.agent_provenance(&swarm, &agent, &input).await?)
}

pub(super) async fn search(service: State, path: AgentPath, params: web::Query<SearchParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.search(&swarm, &agent, &params.input()?).await?)
}

pub(super) async fn graph(service: State, path: AgentPath, params: web::Query<GraphParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.graph(&swarm, &agent, &params.input()?).await?)
}

pub(super) async fn get_context(service: State, path: AgentPath, params: web::Query<ContextParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.context(&swarm, &agent, params.into_inner().into_body()).await?)
}

pub(super) async fn post_context(
    service: State,
    path: AgentPath,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Answer {
    let body: ContextBody = json_body(&read_command_body(payload).await?)?;
    let (swarm, agent) = path.into_inner();
    ok(service.context(&swarm, &agent, body).await?)
}

pub(super) async fn phases(service: State, path: AgentPath, params: web::Query<MinSeqParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.phases(&swarm, &agent, params.min_seq).await?)
}

pub(super) async fn phase(service: State, path: AgentIdPath, params: web::Query<PhaseParams>) -> Answer {
    let (swarm, agent, phase_id) = path.into_inner();
    ok(service.phase(&swarm, &agent, &phase_id, &params.input()?).await?)
}

pub(super) async fn item_states(service: State, path: AgentPath, params: web::Query<ItemsParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.item_states(&swarm, &agent, &params.input()?).await?)
}

pub(super) async fn item(service: State, path: AgentIdPath, params: web::Query<MinSeqParams>) -> Answer {
    let (swarm, agent, item_id) = path.into_inner();
    ok(service.item(&swarm, &agent, &item_id, params.min_seq).await?)
}

pub(super) async fn digest(service: State, path: AgentPath, params: web::Query<MinSeqParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.digest(&swarm, &agent, params.min_seq).await?)
}

pub(super) async fn replay(service: State, path: AgentPath, params: web::Query<ReplayParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.replay(&swarm, &agent, &params).await?)
}

/// `GET …/handoffs`: the list, pending first; with `follow=true`, a
/// `text/event-stream` of the pending ones, then each new one as it is
/// delivered, until the client goes away.
pub(super) async fn handoffs(
    service: State,
    key: Option<web::ReqData<PermitKey>>,
    path: AgentPath,
    params: web::Query<HandoffsParams>,
) -> Answer {
    let (swarm, agent) = path.into_inner();
    if !params.follow {
        return ok(service.handoffs(&swarm, &agent, params.min_seq).await?);
    }
    let permit = stream_permit(&service, key)?;
    let deliveries = service.into_inner().follow_handoffs(&swarm, &agent, params.min_seq).await?;
    Ok(event_stream(server_sent_events(deliveries, permit, "handoff", |delivery: &HandoffDelivery| {
        delivery.handoff_id.clone()
    })))
}

fn event_stream(frames: impl futures::Stream<Item = Result<web::Bytes, actix_web::Error>> + 'static) -> HttpResponse {
    HttpResponse::Ok().content_type("text/event-stream").insert_header(("cache-control", "no-cache")).streaming(frames)
}

/// Each item of a feed as one server-sent event (`event:` the feed's name,
/// `id:` the item's, its JSON on one `data:` line), with a keep-alive
/// comment when the feed is quiet; ends with the feed.
fn server_sent_events<T: Serialize + 'static>(
    items: mpsc::Receiver<T>,
    permit: StreamPermit,
    event: &'static str,
    id_of: fn(&T) -> String,
) -> impl futures::Stream<Item = Result<web::Bytes, actix_web::Error>> {
    let mut keep_alive = tokio::time::interval(KEEP_ALIVE_EVERY);
    keep_alive.reset();
    // The permit goes with the stream: back when the stream ends or its
    // reader is found gone.
    futures::stream::unfold((items, keep_alive, permit), move |(mut items, mut keep_alive, permit)| async move {
        let frame = tokio::select! {
            item = items.recv() => {
                let item = item?;
                let data = serde_json::to_string(&item).expect("a feed's items are JSON");
                web::Bytes::from(format!("event: {event}\nid: {}\ndata: {data}\n\n", id_of(&item)))
            }
            _ = keep_alive.tick() => web::Bytes::from_static(b": keep-alive\n\n"),
        };
        Some((Ok(frame), (items, keep_alive, permit)))
    })
}

/// `POST …/handoffs/{handoff_id}/ack`, optionally with `{"note": "..."}`.
pub(super) async fn acknowledge(
    service: State,
    path: AgentIdPath,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Answer {
    let body = read_command_body(payload).await?;
    let body: AcknowledgeBody =
        if body.iter().all(u8::is_ascii_whitespace) { AcknowledgeBody::default() } else { json_body(&body)? };
    let (swarm, agent, handoff_id) = path.into_inner();
    ok(service.acknowledge(&swarm, &agent, &handoff_id, body.note).await?)
}

pub(super) async fn core(service: State, path: AgentPath, params: web::Query<MinSeqParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.core(&swarm, &agent, params.min_seq).await?)
}

pub(super) async fn update_core(
    service: State,
    caller: Option<web::ReqData<Caller>>,
    path: AgentPath,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Answer {
    let body = read_command_body(payload).await?;
    let (swarm, agent) = path.into_inner();
    service.swarm(&swarm)?;
    let caller = caller.map_or(Caller::Anyone, web::ReqData::into_inner);
    ok(service.update_core(&caller, &swarm, &agent, json_body(&body)?).await?)
}

pub(super) async fn write_note(
    service: State,
    caller: Option<web::ReqData<Caller>>,
    path: AgentPath,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Answer {
    let body = read_command_body(payload).await?;
    let (swarm, agent) = path.into_inner();
    service.swarm(&swarm)?;
    let caller = caller.map_or(Caller::Anyone, web::ReqData::into_inner);
    ok(service.write_note(&caller, &swarm, &agent, json_body(&body)?).await?)
}

pub(super) async fn timeline(service: State, path: AgentPath, params: web::Query<TimelineParams>) -> Answer {
    let (swarm, agent) = path.into_inner();
    ok(service.timeline(&swarm, &agent, &params.input()?).await?)
}

pub(super) async fn consolidate(service: State, swarm: SwarmPath, params: web::Query<ConsolidateParams>) -> Answer {
    ok(service.consolidate(&swarm, &params).await?)
}

pub(super) async fn contradictions(
    service: State,
    swarm: SwarmPath,
    params: web::Query<ContradictionParams>,
) -> Answer {
    ok(service.contradictions(&swarm, &params).await?)
}

pub(super) async fn resolve(service: State, path: AgentPath, _: web::Query<NoParams>, payload: web::Payload) -> Answer {
    let body = read_command_body(payload).await?;
    let (swarm, contradiction_id) = path.into_inner();
    // A wrong swarm is named before a bad body, as the API always did.
    service.swarm(&swarm)?;
    let body: ResolveBody = json_body(&body)?;
    ok(service.resolve(&swarm, &contradiction_id, body).await?)
}

pub(super) async fn purge(service: State, swarm: SwarmPath, _: web::Query<NoParams>, payload: web::Payload) -> Answer {
    let body = read_command_body(payload).await?;
    // A wrong swarm is named before a bad body, as the API always did.
    service.swarm(&swarm)?;
    let body: PurgeBody = json_body(&body)?;
    ok(service.purge(&swarm, body).await?)
}
