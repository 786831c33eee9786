//! `/mcp` on `mneme serve`: MCP's streamable HTTP transport, stateless and
//! answering in JSON, behind the same bearer tokens as the API
//! ([`crate::http::auth`] has already checked the token). The session's
//! agent is the token's, or for a token bound to no agent (or no tokens at
//! all) the `agent` query parameter; a token bound to one agent that asks
//! for another is refused before any MCP is spoken. The session's swarm is
//! the token's, or the `swarm` query parameter, or the only swarm the
//! server holds; a token never opens another swarm's agents.
//!
//! actix-web speaks `http` 0.2 and rmcp `http` 1: the request and answer
//! are copied across by method, URI, headers and bytes.

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use http_body_util::{BodyExt, Full};
use mneme_api::params::quote;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};

use super::{Identity, MemoryTools};
use crate::service::{ApiError, Caller, Service};

/// The largest MCP request body, as rmcp's own limit.
pub const MAX_MCP_BODY_BYTES: usize = 4 << 20;

pub type McpService = StreamableHttpService<MemoryTools, LocalSessionManager>;

/// The MCP service `/mcp` hands its requests to.
pub fn mcp_service(service: Arc<Service>) -> McpService {
    let mut config = StreamableHttpServerConfig::default().with_legacy_session_mode(false).with_json_response(true);
    if !service.tokens.is_empty() {
        // Tokens guard the endpoint; the Host allow-list (DNS rebinding)
        // guards an open one on loopback, and stays on for it.
        config = config.disable_allowed_hosts();
    }
    StreamableHttpService::new(
        move || Ok(MemoryTools::new(service.clone(), None)),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}

/// Registers `/mcp` (every method: POST for calls; GET and DELETE are
/// answered by rmcp, as a stateless server does).
pub fn routes(config: &mut web::ServiceConfig) {
    config.service(
        web::resource("/mcp").app_data(web::PayloadConfig::new(MAX_MCP_BODY_BYTES)).route(web::route().to(endpoint)),
    );
}

/// Who the session acts as, from the token, `?swarm=` and `?agent=`: the
/// swarm is the token's, or the one named, or the only one the server
/// holds.
fn identity(service: &Service, caller: Caller, query: &str) -> Result<Identity, ApiError> {
    let asked = web::Query::<std::collections::HashMap<String, String>>::from_query(query)
        .map_err(|error| ApiError::bad_parameter("agent", format!("the query string does not parse: {error}")))?
        .into_inner();
    if let Some(unknown) = asked.keys().find(|key| !matches!(key.as_str(), "agent" | "swarm")) {
        return Err(ApiError::bad_parameter(
            unknown,
            format!("unknown parameter {}; /mcp takes only swarm and agent", quote(unknown)),
        ));
    }
    let swarm = match asked.get("swarm") {
        Some(named) if !caller.may_reach(named) => {
            return Err(ApiError::forbidden(
                "forbidden",
                Some("swarm"),
                format!("{caller} opens only its own swarm, not {}", quote(named)),
            ));
        }
        Some(named) => service.swarm(named)?.name().to_string(),
        None => service.default_swarm(&caller)?.name().to_string(),
    };
    let asked = asked.get("agent").cloned();
    let agent = match (&caller, asked) {
        (Caller::Token { agent: Some(bound), .. }, Some(asked)) if &asked != bound => {
            return Err(ApiError::forbidden(
                "forbidden",
                Some("agent"),
                format!("{caller} opens only the tools of agent {bound:?}, not {}", quote(&asked)),
            ));
        }
        (Caller::Token { agent: Some(bound), .. }, _) => bound.clone(),
        (_, Some(asked)) => asked,
        (_, None) => {
            return Err(ApiError::bad_parameter(
                "agent",
                "name the agent whose tools to open: /mcp?agent=NAME (a token bound to an agent names it itself)",
            ));
        }
    };
    mneme_events::validate_name(&agent).map_err(|error| ApiError::from_validation(error.under("agent")))?;
    Ok(Identity { swarm, agent, caller })
}

async fn endpoint(
    request: HttpRequest,
    body: web::Bytes,
    service: web::Data<Service>,
    mcp: web::Data<McpService>,
    caller: Option<web::ReqData<Caller>>,
) -> Result<HttpResponse, ApiError> {
    let caller = caller.map_or(Caller::Anyone, web::ReqData::into_inner);
    let identity = identity(&service, caller, request.query_string())?;
    let permit_key = match &identity.caller {
        Caller::Token { .. } => identity.caller.to_string(),
        Caller::Anyone => format!("agent {} of swarm {}", quote(&identity.agent), quote(&identity.swarm)),
    };
    let _permit = service.query_permits.try_acquire(&permit_key)?;
    let mut builder = ::http::Request::builder().method(request.method().as_str()).uri(request.uri().to_string());
    for (name, value) in request.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let mut forwarded = builder
        .body(Full::new(body))
        .map_err(|error| ApiError::bad_parameter("request", format!("cannot read the request: {error}")))?;
    forwarded.extensions_mut().insert(identity);
    let (parts, body) = mcp.handle(forwarded).await.into_parts();
    let status = actix_web::http::StatusCode::from_u16(parts.status.as_u16())
        .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR);
    let mut answer = HttpResponse::build(status);
    for (name, value) in &parts.headers {
        answer.append_header((name.as_str(), value.as_bytes()));
    }
    let streamed = parts
        .headers
        .get(::http::header::CONTENT_TYPE)
        .is_some_and(|value| value.as_bytes().starts_with(b"text/event-stream"));
    if streamed {
        return Ok(answer.streaming(body.into_data_stream()));
    }
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(never) => match never {},
    };
    Ok(answer.body(bytes))
}
