//! The HTTP JSON API: a route table, handlers a few lines each that parse
//! the request into the wire types of `mneme-api` and call the
//! [`Service`](crate::service::Service), bearer tokens ([`auth`]), and the error body as an HTTP
//! response. What an answer holds is the service's business, not this
//! module's.

pub mod auth;
mod handlers;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError, web};
use mneme_api::params::{MAX_COMMAND_BODY_BYTES, ParameterError};
use mneme_api::routes::{Method, Operation, ROUTES};

use crate::service::ApiError;
use handlers::*;

/// The API's routes: every route of [`ROUTES`], each with its handler.
pub fn routes(config: &mut web::ServiceConfig) {
    let bad_query = web::QueryConfig::default().error_handler(|error, _| query_error(&error).into());
    config.app_data(bad_query).default_service(web::to(not_found));
    for route in ROUTES {
        let method = match route.method {
            Method::Get => web::get(),
            Method::Post => web::post(),
        };
        config.route(route.path, handler(method, route.operation));
    }
}

/// The handler of each operation: a route without one does not compile.
fn handler(method: actix_web::Route, operation: Operation) -> actix_web::Route {
    match operation {
        Operation::Health => method.to(healthz),
        Operation::OpenApi => method.to(openapi),
        Operation::Metrics => method.to(metrics),
        Operation::AppendEvents => method.to(post_events),
        Operation::Swarms => method.to(swarms),
        Operation::Events => method.to(get_events),
        Operation::DeadLetters => method.to(get_dead_letters),
        Operation::Agents => method.to(get_agents),
        Operation::SwarmProvenance => method.to(swarm_provenance),
        Operation::Search => method.to(search),
        Operation::GetContext => method.to(get_context),
        Operation::PostContext => method.to(post_context),
        Operation::Phases => method.to(phases),
        Operation::Phase => method.to(phase),
        Operation::Graph => method.to(graph),
        Operation::AgentProvenance => method.to(agent_provenance),
        Operation::ItemStates => method.to(item_states),
        Operation::Item => method.to(item),
        Operation::Handoffs => method.to(handoffs),
        Operation::Acknowledge => method.to(acknowledge),
        Operation::Core => method.to(core),
        Operation::UpdateCore => method.to(update_core),
        Operation::WriteNote => method.to(write_note),
        Operation::Timeline => method.to(timeline),
        Operation::Digest => method.to(digest),
        Operation::Replay => method.to(replay),
        Operation::Consolidate => method.to(consolidate),
        Operation::Contradictions => method.to(contradictions),
        Operation::Resolve => method.to(resolve),
        Operation::Purge => method.to(purge),
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status_code());
        if self.status() == 429 {
            response.insert_header((actix_web::http::header::RETRY_AFTER, self.retry_after_secs().to_string()));
        }
        response.json(self.body())
    }
}

/// A request for a swarm another process holds (`[placement]`): 307 to
/// the same path and query there, which repeats the method and the body.
pub async fn redirect_elsewhere(
    request: actix_web::dev::ServiceRequest,
    next: actix_web::middleware::Next<impl actix_web::body::MessageBody + 'static>,
) -> Result<actix_web::dev::ServiceResponse<actix_web::body::BoxBody>, actix_web::Error> {
    let path_and_query = request.uri().path_and_query().map(|path| path.as_str().to_string()).unwrap_or_default();
    let response = next.call(request).await?;
    let location = response
        .response()
        .error()
        .and_then(|error| error.as_error::<ApiError>())
        .and_then(|error| error.location().map(|base| format!("{base}{path_and_query}")));
    match location {
        Some(location) => {
            let redirect = HttpResponse::TemporaryRedirect()
                .insert_header((actix_web::http::header::LOCATION, location))
                .json(response.response().error().and_then(|error| error.as_error::<ApiError>()).map(ApiError::body));
            Ok(response.into_response(redirect))
        }
        None => Ok(response.map_into_boxed_body()),
    }
}

async fn not_found(request: actix_web::HttpRequest) -> Result<HttpResponse, ApiError> {
    Err(ApiError::not_found("not_found", None, format!("no endpoint {} {}", request.method(), request.path())))
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

/// Reads the body of a query or command, refusing it past
/// [`MAX_COMMAND_BODY_BYTES`] with a JSON error (actix-web's own extractor
/// would answer in plain text).
async fn read_command_body(payload: web::Payload) -> Result<web::Bytes, ApiError> {
    read_body(payload, MAX_COMMAND_BODY_BYTES, "the limit for a query or command body").await
}

/// Reads a request body, refusing it as soon as it passes `limit` bytes;
/// `limit_name` says in the error where the limit comes from.
async fn read_body(mut payload: web::Payload, limit: usize, limit_name: &str) -> Result<web::Bytes, ApiError> {
    use futures::StreamExt;
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|error| ApiError::bad_request("bad_request_body", None, error.to_string()))?;
        if body.len() + chunk.len() > limit {
            return Err(ApiError::too_large(
                "request_too_large",
                None,
                format!("request body is over {limit} bytes, {limit_name}"),
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
