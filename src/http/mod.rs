//! The HTTP JSON API. Request and response bodies are defined here, at the
//! boundary; the crates below never see HTTP.

pub mod auth;
mod consolidation;
pub mod context;
pub mod handoffs;
pub mod query_permits;

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, web};
use metrics_exporter_prometheus::PrometheusHandle;
use mneme_actors::{
    ActorsError, AgentHandle, AgentsWritten, Consolidator, GetAgent, ListAgents, Query, QueryAnswer, Supervisor,
    SwarmConfig, verify_against_log,
};
use mneme_api::ErrorBody;
use mneme_api::log::{
    Accepted, AcceptedEvents, AgentProvenance, Agents, DeadLetter, DeadLetters, EventsPage, SwarmProvenance,
};
use mneme_api::memory::{
    Digest, GraphAnswer, GraphEdge, GraphNode, Hit, ItemAnswer, ItemStates, ReplayAnswer, RetrieverRank, SearchAnswer,
};
use mneme_api::params::{
    EventsParams, GraphParams, MAX_COMMAND_BODY_BYTES, MAX_EVENTS_PER_REQUEST, MinSeqParams, NoParams, ParameterError,
    ProvenanceParams, ReplayParams, SearchParams, check_item_id, quote,
};
use mneme_api::{self as wire};
use mneme_events::Scope;
use mneme_events::{ErrorCode, ValidationError, decode_json_batch_of_at_most};
use mneme_nats::{EventLog, LogEntry, LogError};
use mneme_projections::graph::{Edge, GraphQuery, Node};
use mneme_projections::{
    MemoryConfig, ProvenanceRef, RetrievalWeights, SearchFilters, SearchHit, SearchMode, SearchRequest,
};
use serde_json::{Value, json};

use self::{consolidation as api_consolidation, context as api_context, handoffs as api_handoffs};
use crate::http::auth::Caller;

/// How long a query with `min_seq` waits for the agent to catch up.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);

/// Shared by every HTTP worker.
pub struct AppState {
    pub config: SwarmConfig,
    pub log: Arc<dyn EventLog>,
    pub supervisor: Addr<Supervisor>,
    pub metrics: PrometheusHandle,
    /// A replay rebuilds a whole memory: one at a time per process.
    pub replay_permits: tokio::sync::Semaphore,
    /// Memory settings and embedder, for replays.
    pub memory_config: MemoryConfig,
    pub consolidator: Addr<Consolidator>,
    /// Keys the ids Mneme derives for its own events (acknowledgements).
    pub id_key: mneme_events::IdKey,
    /// Queries each caller has in flight, over HTTP and NATS.
    pub query_permits: crate::http::query_permits::QueryPermits,
    /// Turns true when the server begins to shut down: long-lived responses
    /// (handoff streams) end then, rather than hold the shutdown up.
    pub shutting_down: tokio::sync::watch::Receiver<bool>,
}

pub fn routes(config: &mut web::ServiceConfig) {
    let bad_query = web::QueryConfig::default().error_handler(|error, _| query_error(&error).into());
    config
        .app_data(bad_query)
        .default_service(web::to(not_found))
        .route("/healthz", web::get().to(healthz))
        .route("/metrics", web::get().to(metrics))
        .route("/v1/events", web::post().to(post_events))
        .route("/v1/swarms/{swarm}/events", web::get().to(get_events))
        .route("/v1/swarms/{swarm}/deadletters", web::get().to(get_dead_letters))
        .route("/v1/swarms/{swarm}/agents", web::get().to(get_agents))
        .route("/v1/swarms/{swarm}/provenance/{item_id}", web::get().to(provenance))
        .route("/v1/swarms/{swarm}/agents/{agent}/search", web::get().to(search))
        .route("/v1/swarms/{swarm}/agents/{agent}/context", web::get().to(api_context::get_context))
        .route("/v1/swarms/{swarm}/agents/{agent}/context", web::post().to(api_context::post_context))
        .route("/v1/swarms/{swarm}/agents/{agent}/phases", web::get().to(api_context::list_phases))
        .route("/v1/swarms/{swarm}/agents/{agent}/phases/{phase_id}", web::get().to(api_context::get_phase))
        .route("/v1/swarms/{swarm}/agents/{agent}/graph", web::get().to(graph))
        .route("/v1/swarms/{swarm}/agents/{agent}/provenance/{item_id}", web::get().to(agent_provenance))
        .route("/v1/swarms/{swarm}/agents/{agent}/items", web::get().to(item_states))
        .route("/v1/swarms/{swarm}/agents/{agent}/items/{item_id}", web::get().to(item))
        .route("/v1/swarms/{swarm}/agents/{agent}/handoffs", web::get().to(api_handoffs::list_handoffs))
        .route(
            "/v1/swarms/{swarm}/agents/{agent}/handoffs/{handoff_id}/ack",
            web::post().to(api_handoffs::acknowledge_handoff),
        )
        .route("/v1/swarms/{swarm}/agents/{agent}/digest", web::get().to(digest))
        .route("/v1/swarms/{swarm}/agents/{agent}/replay", web::post().to(replay))
        .route("/v1/swarms/{swarm}/consolidate", web::post().to(api_consolidation::consolidate))
        .route("/v1/swarms/{swarm}/contradictions", web::get().to(api_consolidation::list_contradictions))
        .route(
            "/v1/swarms/{swarm}/contradictions/{contradiction_id}/resolve",
            web::post().to(api_consolidation::resolve_contradiction),
        )
        .route("/v1/swarms/{swarm}/purge", web::post().to(api_consolidation::purge));
}

/// An error as every endpoint reports it, over HTTP and NATS alike:
/// `{"error": {"status": ..., "code": ..., "field": ..., "message": ...}}`,
/// `status` being the HTTP status.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: String,
    field: Option<String>,
    message: String,
}

impl ApiError {
    pub(crate) fn new(status: StatusCode, code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError { status, code: code.to_string(), field: field.map(str::to_string), message: message.into() }
    }

    pub fn bad_parameter(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_parameter", Some(field), message)
    }

    pub(crate) fn from_validation(error: ValidationError) -> ApiError {
        let status = match error.code {
            ErrorCode::PayloadTooLarge | ErrorCode::BatchTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            _ => StatusCode::BAD_REQUEST,
        };
        ApiError { status, code: error.code.as_str().to_string(), field: error.field, message: error.message }
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.status.as_u16(), self.code.clone(), self.field.clone(), self.message.clone())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if self.status == StatusCode::TOO_MANY_REQUESTS {
            response.insert_header((actix_web::http::header::RETRY_AFTER, "1"));
        }
        response.json(self.body())
    }
}

impl From<ActorsError> for ApiError {
    fn from(error: ActorsError) -> ApiError {
        let message = error.to_string();
        match error {
            ActorsError::UnknownAgent { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_agent", Some("agent"), message)
            }
            ActorsError::CatchUpTimeout { .. } => {
                ApiError::new(StatusCode::GATEWAY_TIMEOUT, "catch_up_timeout", Some("min_seq"), message)
            }
            // The log out of reach is worth a retry; a log that refused what
            // Mneme itself wrote (a verdict, a delivery) is a fault here.
            ActorsError::Log(
                LogError::Storage(_)
                | LogError::Locked { .. }
                | LogError::Nats(_)
                | LogError::PublishNotAcknowledged { .. }
                | LogError::Server(_)
                | LogError::Closed,
            ) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "log_unavailable", None, message),
            _ => ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", None, message),
        }
    }
}

impl From<LogError> for ApiError {
    fn from(error: LogError) -> ApiError {
        let message = error.to_string();
        match error {
            LogError::EventTooLarge { .. } => {
                ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large", None, message)
            }
            LogError::InvalidName { role, .. } => {
                ApiError::new(StatusCode::BAD_REQUEST, "invalid_name", Some(role), message)
            }
            LogError::ForeignSwarm { .. } => {
                ApiError::new(StatusCode::NOT_FOUND, "unknown_swarm", Some("swarm"), message)
            }
            LogError::ConflictingDuplicate { index, .. } => {
                ApiError::new(StatusCode::CONFLICT, "conflicting_duplicate", Some(&format!("[{index}].id")), message)
            }
            _ => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "log_unavailable", None, message),
        }
    }
}

pub(crate) fn stopped(agent: &str) -> ApiError {
    ApiError::from(ActorsError::ActorStopped { agent: agent.to_string() })
}

async fn not_found(request: actix_web::HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        None,
        format!("no endpoint {} {}", request.method(), request.path()),
    ))
}

async fn healthz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let last_seq = state.log.last_seq().await?;
    Ok(HttpResponse::Ok().json(wire::log::Health {
        status: "ok".to_string(),
        swarm: state.config.swarm.name.clone(),
        last_seq,
    }))
}

async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(state.metrics.render())
}

/// `POST /v1/events`: one event or an array. Every event is validated
/// before any is appended: an invalid one refuses the whole request.
async fn post_events(
    state: web::Data<AppState>,
    caller: Option<web::ReqData<Caller>>,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body =
        read_body(payload, state.config.http.max_request_bytes, "the limit set by http.max_request_bytes").await?;
    let body = with_default_scopes(&state.config, body)?;
    let limits = state.config.decode_limits();
    let events = decode_json_batch_of_at_most(&body, &limits, MAX_EVENTS_PER_REQUEST).map_err(|batch| {
        let mut error = batch.error;
        // The decoder knows the limit's value, not which setting holds it.
        if error.code == ErrorCode::PayloadTooLarge {
            error.message.push_str(", set by log.max_event_bytes");
        }
        ApiError::from_validation(error)
    })?;
    let swarm = &state.config.swarm.name;
    if let Some((index, event)) = events.iter().enumerate().find(|(_, event)| &event.swarm != swarm) {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_swarm",
            Some(&format!("[{index}].swarm")),
            format!("this server holds swarm {swarm:?}, not {:?}", event.swarm),
        ));
    }
    if let Some(caller) = caller {
        let refused = events.iter().enumerate().find(|(_, event)| !caller.may_act_as(&event.agent));
        if let Some((index, event)) = refused {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                Some(&format!("[{index}].agent")),
                format!("{} may not publish events of agent {:?}", *caller, event.agent),
            ));
        }
    }
    let appended = state.log.append(&events).await?;
    let mut agents: Vec<String> = events.iter().map(|event| event.agent.clone()).collect();
    agents.sort();
    agents.dedup();
    state.supervisor.do_send(AgentsWritten(agents));
    metrics::counter!("mneme_events_appended_total").increment(appended.iter().filter(|a| !a.duplicate).count() as u64);
    let accepted =
        appended.iter().map(|a| Accepted { id: a.id.to_string(), seq: a.seq, duplicate: a.duplicate }).collect();
    Ok(HttpResponse::Accepted().json(AcceptedEvents { accepted }))
}

/// The request body with `scope` set, on every event that leaves it out,
/// to its agent's `default_scope` from `swarm.toml`. The envelope's own
/// default is `private`, so when every agent's default is `private` the body
/// is passed on as it came, without a second parse. A body that is not JSON
/// is passed on too: the decoder names what is wrong with it.
fn with_default_scopes(config: &SwarmConfig, body: web::Bytes) -> Result<web::Bytes, ApiError> {
    if config.agents.iter().all(|agent| agent.default_scope == Scope::Private) {
        return Ok(body);
    }
    let Ok(mut document) = serde_json::from_slice::<Value>(&body) else { return Ok(body) };
    let events: Vec<&mut Value> = match &mut document {
        Value::Array(events) => events.iter_mut().collect(),
        event => vec![event],
    };
    let mut changed = false;
    for event in events {
        let Some(fields) = event.as_object_mut() else { continue };
        if fields.contains_key("scope") {
            continue;
        }
        let Some(agent) = fields.get("agent").and_then(Value::as_str).and_then(|name| config.agent(name)) else {
            continue;
        };
        if agent.default_scope != Scope::Private {
            fields.insert("scope".to_string(), json!(agent.default_scope.as_str()));
            changed = true;
        }
    }
    if !changed {
        return Ok(body);
    }
    let body = serde_json::to_vec(&document)
        .map_err(|error| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", None, error.to_string()))?;
    Ok(web::Bytes::from(body))
}

/// Reads the body of a query or command, refusing it past
/// [`MAX_COMMAND_BODY_BYTES`] with a JSON error (actix-web's own extractor
/// would answer in plain text).
pub(crate) async fn read_command_body(payload: web::Payload) -> Result<web::Bytes, ApiError> {
    read_body(payload, MAX_COMMAND_BODY_BYTES, "the limit for a query or command body").await
}

/// Reads a request body, refusing it as soon as it passes `limit` bytes;
/// `limit_name` says in the error where the limit comes from.
async fn read_body(mut payload: web::Payload, limit: usize, limit_name: &str) -> Result<web::Bytes, ApiError> {
    use futures::StreamExt;
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk
            .map_err(|error| ApiError::new(StatusCode::BAD_REQUEST, "bad_request_body", None, error.to_string()))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                None,
                format!("request body is over {limit} bytes, {limit_name}"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}

pub(crate) fn check_swarm(state: &AppState, swarm: &str) -> Result<(), ApiError> {
    if swarm != state.config.swarm.name {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_swarm",
            Some("swarm"),
            format!("this server holds swarm {:?}, not {}", state.config.swarm.name, quote(swarm)),
        ));
    }
    Ok(())
}

pub(crate) async fn agent_handle(
    state: &AppState,
    swarm: &str,
    agent: &str,
    min_seq: Option<u64>,
) -> Result<AgentHandle, ApiError> {
    check_swarm(state, swarm)?;
    let handle = state.supervisor.send(GetAgent(agent.to_string())).await.map_err(|_| stopped(agent))??;
    if let Some(min_seq) = min_seq {
        handle.caught_up(state.log.as_ref(), min_seq, CATCH_UP_TIMEOUT).await?;
    }
    Ok(handle)
}

pub(crate) async fn ask(handle: &AgentHandle, query: Query) -> Result<QueryAnswer, ApiError> {
    Ok(handle.addr.send(query).await.map_err(|_| stopped(&handle.agent))??)
}

impl From<ParameterError> for ApiError {
    fn from(error: ParameterError) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, error.code(), Some(error.field()), error.to_string())
    }
}

/// A query string that does not parse: an unknown parameter is named
/// (`unknown_field`), anything else is an `invalid_parameter`.
fn query_error(error: &actix_web::error::QueryPayloadError) -> ApiError {
    let actix_web::error::QueryPayloadError::Deserialize(inner) = error else {
        return ApiError::bad_parameter("query", error.to_string());
    };
    match ParameterError::unknown_field("", &inner.to_string()) {
        Some(unknown) => unknown.into(),
        None => ApiError::bad_parameter("query", error.to_string()),
    }
}

/// A JSON request body (`POST …/context`, resolve, purge, a NATS query) as
/// `T`: a field `T` does not take is refused as `unknown_field`, with its
/// path (`signals.kk`); any other fault is `invalid_body`.
pub(crate) fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match ParameterError::unknown_field(&path, &inner.to_string()) {
            Some(unknown) => unknown.into(),
            None => ApiError::new(StatusCode::BAD_REQUEST, "invalid_body", None, inner.to_string()),
        }
    })
}

/// The search a request asks for, with every parameter checked; weights it
/// leaves out are the swarm's.
fn search_request(params: &SearchParams, defaults: &RetrievalWeights) -> Result<SearchRequest, ApiError> {
    let checked = params.check()?;
    let mode = checked.mode.parse::<SearchMode>().map_err(|message| ApiError::bad_parameter("mode", message))?;
    let filters = SearchFilters {
        kinds: checked.kinds,
        since: checked.since,
        until: checked.until,
        scopes: checked.scopes,
        entity: checked.entity,
        correlation_id: checked.correlation_id,
    };
    let overrides = checked.weights;
    let weights = RetrievalWeights {
        rrf_k: overrides.rrf_k.unwrap_or(defaults.rrf_k),
        bm25: overrides.bm25.unwrap_or(defaults.bm25),
        vector: overrides.vector.unwrap_or(defaults.vector),
        graph: overrides.graph.unwrap_or(defaults.graph),
        recency: overrides.recency.unwrap_or(defaults.recency),
        usage: overrides.usage.unwrap_or(defaults.usage),
    };
    Ok(SearchRequest { query: checked.query, k: checked.k, mode, filters, weights, explain: checked.explain })
}

/// Provenance as the wire has it.
pub fn provenance_refs(provenance: &[ProvenanceRef]) -> Vec<wire::log::ProvenanceRef> {
    provenance.iter().map(|p| wire::log::ProvenanceRef { seq: p.seq, event_id: p.event_id.to_string() }).collect()
}

fn wire_hit(hit: &SearchHit, explain: bool) -> Hit {
    let explain = explain.then(|| {
        hit.explain
            .iter()
            .map(|rank| (rank.retriever.to_string(), RetrieverRank { rank: rank.rank, score: rank.score }))
            .collect()
    });
    Hit {
        item_id: hit.item_id.clone(),
        seq: hit.seq,
        kind: hit.kind.to_string(),
        score: hit.score,
        text: hit.text.clone(),
        agent: hit.agent.clone(),
        scope: hit.scope.as_str().to_string(),
        ts: hit.ts,
        provenance: provenance_refs(&hit.provenance),
        superseded_by: hit.superseded_by.clone(),
        explain,
    }
}

async fn search(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<SearchParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    Ok(HttpResponse::Ok().json(search_answer(&state, &swarm, &agent, &params).await?))
}

/// A search as HTTP and NATS answer it.
pub async fn search_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    params: &SearchParams,
) -> Result<SearchAnswer, ApiError> {
    let request = search_request(params, &state.config.retrieval)?;
    let handle = agent_handle(state, swarm, agent, params.min_seq).await?;
    let explain = request.explain;
    let mode = request.mode;
    let QueryAnswer::Search(hits) = ask(&handle, Query::Search(request)).await? else {
        unreachable!("a search query answers with hits")
    };
    Ok(SearchAnswer {
        swarm: swarm.to_string(),
        agent: agent.to_string(),
        mode: mode.as_str().to_string(),
        hits: hits.iter().map(|hit| wire_hit(hit, explain)).collect(),
    })
}

fn wire_edge(edge: &Edge) -> GraphEdge {
    GraphEdge {
        id: edge.id.clone(),
        from: edge.from.clone(),
        to: edge.to.clone(),
        relation: edge.relation.clone(),
        valid_from: edge.valid_from,
        valid_to: edge.valid_to,
        recorded_seq: edge.recorded_seq,
        confidence: edge.confidence.map(mneme_events::published_number),
        provenance: provenance_refs(&edge.provenance),
    }
}

fn wire_node(node: &Node) -> GraphNode {
    GraphNode {
        id: node.id.clone(),
        kind: node.kind.as_str().to_string(),
        name: node.name.clone(),
        provenance: provenance_refs(&node.provenance),
    }
}

/// `GET …/graph?entity=…&hops=2&relations=…&as_of=…`: the fact graph around
/// an entity, both directions, with validity and provenance.
async fn graph(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<GraphParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    Ok(HttpResponse::Ok().json(graph_answer(&state, &swarm, &agent, &params).await?))
}

/// A graph neighbourhood as HTTP and NATS answer it.
pub async fn graph_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    params: &GraphParams,
) -> Result<GraphAnswer, ApiError> {
    let checked = params.check()?;
    let query =
        GraphQuery { entity: checked.entity, hops: checked.hops, relations: checked.relations, as_of: checked.as_of };
    let handle = agent_handle(state, swarm, agent, params.min_seq).await?;
    let QueryAnswer::Graph(subgraph) = ask(&handle, Query::Graph(query)).await? else {
        unreachable!("a graph query answers with a subgraph")
    };
    let Some(subgraph) = subgraph else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_entity",
            Some("entity"),
            format!("the memory of {agent:?} knows no entity {}", quote(&params.entity)),
        ));
    };
    Ok(GraphAnswer {
        center: subgraph.center.clone(),
        nodes: subgraph.nodes.iter().map(wire_node).collect(),
        edges: subgraph.edges.iter().map(wire_edge).collect(),
    })
}

async fn digest(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<MinSeqParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    let handle = agent_handle(&state, &swarm, &agent, params.min_seq).await?;
    let QueryAnswer::Status(status) = ask(&handle, Query::Status).await? else {
        unreachable!("a status query answers with a status")
    };
    Ok(HttpResponse::Ok().json(Digest {
        agent: status.agent,
        seq: status.checkpoint,
        digest: status.digest,
        items: status.items,
        snapshot_seq: status.snapshot_seq,
    }))
}

/// `POST …/replay?verify=true`: rebuilds the agent's memory from the log into
/// a fresh projection, up to the live memory's checkpoint, and compares.
async fn replay(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<ReplayParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    let _permit = state.replay_permits.try_acquire().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "replay_in_progress",
            None,
            "a replay is already running; retry when it ends",
        )
    })?;
    let handle = agent_handle(&state, &swarm, &agent, params.min_seq).await?;
    let QueryAnswer::Status(status) = ask(&handle, Query::Status).await? else {
        unreachable!("a status query answers with a status")
    };
    let config = state.memory_config.clone();
    let report = verify_against_log(state.log.as_ref(), &agent, config, status.checkpoint, &status.digest).await?;
    let matches = report.matches();
    if params.verify && matches == Some(false) {
        tracing::error!(%agent, live = %status.digest, replayed = %report.digest, "replay digest differs from live memory");
    }
    Ok(HttpResponse::Ok().json(ReplayAnswer {
        agent,
        seq: report.checkpoint,
        digest: report.digest,
        entries_read: report.entries_read,
        dead_lettered: report.dead_lettered,
        live_seq: report.live_checkpoint,
        live_digest: report.live_digest,
        matches,
    }))
}

/// A log entry as the API shows it: the event with its `seq`, or why the
/// record is not a valid event.
pub fn wire_entry(entry: &LogEntry) -> wire::log::LogEntry {
    match &entry.record {
        Ok(event) => {
            let Value::Object(event) = event.to_json_value() else { unreachable!("an event is a JSON object") };
            wire::log::LogEntry::Event(wire::log::EventEntry { seq: entry.seq, event })
        }
        Err(invalid) => wire::log::LogEntry::Invalid(wire::log::InvalidEntry {
            seq: entry.seq,
            agent: entry.agent.clone(),
            invalid: invalid.reason.clone(),
            raw: String::from_utf8_lossy(&invalid.raw).into_owned(),
        }),
    }
}

/// [`wire_entry`] as JSON.
pub fn entry_json(entry: &LogEntry) -> Value {
    serde_json::to_value(wire_entry(entry)).expect("a log entry is JSON")
}

async fn get_events(
    state: web::Data<AppState>,
    path: web::Path<String>,
    params: web::Query<EventsParams>,
) -> Result<HttpResponse, ApiError> {
    check_swarm(&state, &path)?;
    let page = params.check()?;
    let entries = state.log.read(page.from_seq, page.agent.as_deref(), page.limit).await?;
    let next_seq = entries.last().map_or(page.from_seq, |entry| entry.seq + 1);
    Ok(HttpResponse::Ok().json(EventsPage { events: entries.iter().map(wire_entry).collect(), next_seq }))
}

async fn get_dead_letters(
    state: web::Data<AppState>,
    path: web::Path<String>,
    _: web::Query<NoParams>,
) -> Result<HttpResponse, ApiError> {
    check_swarm(&state, &path)?;
    let dead_letters = state
        .log
        .dead_letters()
        .await?
        .iter()
        .map(|letter| DeadLetter {
            seq: letter.seq,
            agent: letter.agent.clone(),
            reason: letter.reason.clone(),
            raw: String::from_utf8_lossy(&letter.raw).into_owned(),
        })
        .collect();
    Ok(HttpResponse::Ok().json(DeadLetters { dead_letters }))
}

async fn get_agents(
    state: web::Data<AppState>,
    path: web::Path<String>,
    _: web::Query<NoParams>,
) -> Result<HttpResponse, ApiError> {
    check_swarm(&state, &path)?;
    let agents = state.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
    Ok(HttpResponse::Ok().json(Agents { agents }))
}

/// `GET /v1/swarms/{swarm}/provenance/{item_id}`: the full events behind an
/// item, in log order, from every memory that holds it. For operators: a
/// token bound to an agent asks `…/agents/{agent}/provenance/{item_id}`.
async fn provenance(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    _: web::Query<NoParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, item_id) = path.into_inner();
    check_swarm(&state, &swarm)?;
    let agents = state.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
    let mut holders = Vec::new();
    let mut seqs = std::collections::BTreeSet::new();
    for agent in agents {
        let handle = agent_handle(&state, &swarm, &agent, None).await?;
        if let QueryAnswer::Provenance(Some(found)) = ask(&handle, Query::Provenance(item_id.clone())).await? {
            holders.push(agent);
            seqs.extend(found.iter().map(|reference| reference.seq));
        }
    }
    if holders.is_empty() {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_item",
            Some("item_id"),
            format!("no memory of swarm {swarm:?} holds an item {}", quote(&item_id)),
        ));
    }
    let seqs: Vec<u64> = seqs.into_iter().collect();
    let entries = state.log.read_seqs(&seqs).await?;
    let events = entries.iter().map(wire_entry).collect();
    Ok(HttpResponse::Ok().json(SwarmProvenance { item_id, holders, events }))
}

/// `GET /v1/swarms/{swarm}/agents/{agent}/provenance/{item_id}`: the events
/// behind an item of the agent's memory, in log order.
async fn agent_provenance(
    state: web::Data<AppState>,
    path: web::Path<(String, String, String)>,
    params: web::Query<MinSeqParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent, item_id) = path.into_inner();
    let params = ProvenanceParams { item_id, min_seq: params.min_seq };
    Ok(HttpResponse::Ok().json(agent_provenance_answer(&state, &swarm, &agent, &params).await?))
}

/// The events behind an item of one agent's memory, as HTTP and NATS answer
/// it. A memory holds only what its agent may see, so its provenance points
/// only at such events; the events read are checked again all the same, so
/// that a bug in a projection cannot turn into a leak here.
pub async fn agent_provenance_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    params: &ProvenanceParams,
) -> Result<AgentProvenance, ApiError> {
    params.check()?;
    let handle = agent_handle(state, swarm, agent, params.min_seq).await?;
    let unknown = || {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_item",
            Some("item_id"),
            format!("the memory of {agent:?} holds no item {}", quote(&params.item_id)),
        )
    };
    let QueryAnswer::Provenance(found) = ask(&handle, Query::Provenance(params.item_id.clone())).await? else {
        unreachable!("a provenance query answers with provenance")
    };
    let references = found.ok_or_else(unknown)?;
    let mut seqs: Vec<u64> = references.iter().map(|reference| reference.seq).collect();
    seqs.sort_unstable();
    seqs.dedup();
    let entries = state.log.read_seqs(&seqs).await?;
    let visible: Vec<_> = entries.iter().filter(|entry| entry_visible_to(entry, agent)).map(wire_entry).collect();
    let hidden = entries.len() - visible.len();
    if hidden > 0 {
        tracing::error!(%agent, item_id = %params.item_id, hidden, "provenance pointed at events the agent may not see; withheld");
    }
    Ok(AgentProvenance { item_id: params.item_id.clone(), agent: agent.to_string(), events: visible })
}

/// Whether `agent` may read a log entry: its own, or another agent's event
/// that is not private. A record that is not a valid event has no scope: only
/// its own agent sees it.
pub fn entry_visible_to(entry: &LogEntry, agent: &str) -> bool {
    match &entry.record {
        Ok(event) => event.agent == agent || event.scope != Scope::Private,
        Err(_) => entry.agent == agent,
    }
}

/// `GET …/agents/{agent}/items`: how many of the memory's items are in each
/// state (active, archived, decayed, forgotten, merged, purged).
async fn item_states(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<MinSeqParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    let handle = agent_handle(&state, &swarm, &agent, params.min_seq).await?;
    let QueryAnswer::Items(listing) = ask(&handle, Query::Items(None)).await? else {
        unreachable!("an items query answers with items")
    };
    let states = listing.states.into_iter().map(|(state, count)| (state.to_string(), count)).collect();
    Ok(HttpResponse::Ok().json(ItemStates { agent, states }))
}

/// `GET …/agents/{agent}/items/{item_id}`: one memory and what became of it:
/// its state (forgotten, merged, decayed…), pin, usage and provenance.
async fn item(
    state: web::Data<AppState>,
    path: web::Path<(String, String, String)>,
    params: web::Query<MinSeqParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent, item_id) = path.into_inner();
    check_item_id(&item_id)?;
    let handle = agent_handle(&state, &swarm, &agent, params.min_seq).await?;
    let QueryAnswer::Items(listing) = ask(&handle, Query::Items(Some(item_id.clone()))).await? else {
        unreachable!("an items query answers with items")
    };
    let Some(item) = listing.item else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_item",
            Some("item_id"),
            format!("the memory of {agent:?} holds no item {}", quote(&item_id)),
        ));
    };
    Ok(HttpResponse::Ok().json(ItemAnswer {
        item_id: item.item_id.clone(),
        seq: item.seq,
        kind: item.kind.to_string(),
        agent: item.agent.clone(),
        scope: item.scope.as_str().to_string(),
        ts: item.ts,
        state: item.state.as_str().to_string(),
        pinned: item.pinned,
        importance: item.importance.map(mneme_events::published_number),
        retrievals: item.retrievals,
        citations: item.citations,
        ignored: item.ignored,
        text: item.text.as_str().to_string(),
        provenance: provenance_refs(&item.provenance),
        superseded_by: listing.superseded_by,
    }))
}

#[cfg(test)]
mod tests {
    use mneme_api::params::SEARCH_MODES;
    use mneme_projections::SearchMode;

    /// The parameter check knows the modes by name; this keeps its list in
    /// step with the projections' enum.
    #[test]
    fn every_search_mode_name_parses_and_round_trips() {
        for name in SEARCH_MODES {
            assert_eq!(name.parse::<SearchMode>().map(SearchMode::as_str), Ok(name));
        }
        for mode in [SearchMode::Bm25, SearchMode::Vector, SearchMode::Graph, SearchMode::Hybrid] {
            assert!(SEARCH_MODES.contains(&mode.as_str()), "{} is missing from SEARCH_MODES", mode.as_str());
        }
    }
}
