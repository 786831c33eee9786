//! Bearer tokens for the HTTP API. With no `[[http.tokens]]` configured the
//! API is open (keep it on loopback); with any, every request but `/healthz`,
//! `/v1/openapi.json` and the web view's assets (`/ui`, which hold no data)
//! needs `Authorization: Bearer <secret>` of one of them.
//!
//! A token opens only the swarm whose configuration file declares it: other
//! swarms' routes answer 403, `POST /v1/events` refuses their events,
//! `/mcp` their agents, `/v1/swarms` and `/metrics` leave them out. A token bound
//! to an agent opens only `/v1/swarms/{swarm}/agents/{that agent}/…` and
//! `POST /v1/events` of events of that agent (checked by the handler, which
//! has the decoded events); swarm-wide routes (the raw log, provenance
//! across memories, consolidation, purge) need an unbound token, and so
//! does `/metrics`, whose series name every agent and count what each did.

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::StatusCode;
use actix_web::http::header::{AUTHORIZATION, HeaderValue, WWW_AUTHENTICATE};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError, web};
use mneme_actors::swarm_config::ApiToken;

use crate::service::{ApiError, Caller, Service};

/// Middleware: finds the caller's token, checks the route is open to it,
/// and records the [`Caller`] for the handlers.
pub async fn require_token(
    request: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let state = request.app_data::<web::Data<Service>>().cloned().expect("the API's state is registered");
    let path = request.path().to_string();
    let open = matches!(path.as_str(), "/healthz" | "/v1/openapi.json") || crate::ui::is_ui_path(&path);
    let caller = if state.tokens.is_empty() || open {
        Caller::Anyone
    } else {
        let presented = request.headers().get(AUTHORIZATION).map(bearer_secret);
        match authorize(&state.tokens, presented, &path) {
            Ok(caller) => caller,
            Err(error) => {
                let mut response = error.error_response();
                if error.status_code() == StatusCode::UNAUTHORIZED {
                    response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                }
                return Err(actix_web::error::InternalError::from_response(error, response).into());
            }
        }
    };
    // Queries of memory hold a permit of their caller until they answer.
    let _permit = match path.strip_prefix("/v1/swarms/") {
        Some(rest) => {
            let key = match &caller {
                Caller::Token { .. } => caller.to_string(),
                Caller::Anyone => match rest.split('/').collect::<Vec<_>>().as_slice() {
                    [swarm, "agents", agent, ..] => format!(
                        "agent {} of swarm {}",
                        mneme_api::params::quote(agent),
                        mneme_api::params::quote(swarm)
                    ),
                    _ => caller.to_string(),
                },
            };
            let permit = state.query_permits.try_acquire(&key)?;
            request.extensions_mut().insert(PermitKey(key));
            Some(permit)
        }
        None => None,
    };
    request.extensions_mut().insert(caller);
    next.call(request).await
}

/// Whose permits a request takes: the token's, or without tokens the
/// agent's it asks about (see [`crate::service::QueryPermits`]).
#[derive(Debug, Clone)]
pub struct PermitKey(pub String);

/// The secret of an `Authorization: Bearer <secret>` header; `None` for
/// any other header value.
fn bearer_secret(header: &HeaderValue) -> Option<String> {
    let value = header.to_str().ok()?;
    let (scheme, secret) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| secret.trim().to_string())
}

/// Which caller a request with this `Authorization` (`None`: no header;
/// `Some(None)`: not a bearer header) is, and whether `path` is open to it.
pub fn authorize(tokens: &[ApiToken], presented: Option<Option<String>>, path: &str) -> Result<Caller, ApiError> {
    let unauthorized = |message: &str| ApiError::unauthorized("unauthorized", None, message);
    let secret = match presented {
        None => return Err(unauthorized("this API needs a token: send Authorization: Bearer <token>")),
        Some(None) => return Err(unauthorized("the Authorization header is not `Bearer <token>`")),
        Some(Some(secret)) => secret,
    };
    // Every token is compared, each in constant time, so that the time
    // taken says nothing about which token or how much of one matched.
    let mut found = None;
    for token in tokens {
        if constant_time_equal(token.secret.as_bytes(), secret.as_bytes()) {
            found = Some(token);
        }
    }
    let token = found.ok_or_else(|| unauthorized("the token is not one this API accepts"))?;
    let caller = Caller::Token { name: token.name.clone(), swarm: token.swarm.clone(), agent: token.agent.clone() };
    let forbidden = |message: String| ApiError::forbidden("forbidden", None, message);
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if let ["v1", "swarms", swarm, ..] = segments.as_slice()
        && *swarm != token.swarm
    {
        return Err(forbidden(format!(
            "{caller} is for swarm {:?}, not {}",
            token.swarm,
            mneme_api::params::quote(swarm)
        )));
    }
    let Some(bound_agent) = &token.agent else { return Ok(caller) };
    let open_to_the_agent = match segments.as_slice() {
        ["v1", "events"] => true,
        // The list of swarms shows a token only its own.
        ["v1", "swarms"] => true,
        // `/mcp` opens the bound agent's tools only (see `crate::mcp::http`).
        ["mcp"] => true,
        ["v1", "swarms", _, "agents", agent, _, ..] => agent == bound_agent,
        _ => false,
    };
    if !open_to_the_agent {
        return Err(forbidden(format!(
            "{caller} may use only /v1/swarms/{}/agents/{bound_agent}/… and POST /v1/events, not {path}",
            token.swarm
        )));
    }
    Ok(caller)
}

fn constant_time_equal(left: &[u8], right: &[u8]) -> bool {
    if left.len() != right.len() {
        return false;
    }
    left.iter().zip(right).fold(0u8, |difference, (a, b)| difference | (a ^ b)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens() -> Vec<ApiToken> {
        let token = |name: &str, secret: &str, agent: Option<&str>| ApiToken {
            name: name.to_string(),
            secret: secret.to_string(),
            swarm: "demo".to_string(),
            agent: agent.map(str::to_string),
        };
        vec![token("operator", "operator-secret-0123", None), token("coder-key", "coder-secret-012345", Some("coder"))]
    }

    fn status_of(presented: Option<Option<&str>>, path: &str) -> u16 {
        let presented = presented.map(|secret| secret.map(str::to_string));
        match authorize(&tokens(), presented, path) {
            Ok(_) => 200,
            Err(error) => error.status_code().as_u16(),
        }
    }

    #[test]
    fn no_or_a_wrong_or_a_malformed_token_is_unauthorized() {
        assert_eq!(status_of(None, "/v1/swarms/demo/agents/coder/search"), 401);
        assert_eq!(status_of(Some(Some("operator-secret-0124")), "/v1/swarms/demo/agents/coder/search"), 401);
        assert_eq!(status_of(Some(Some("operator-secret-012")), "/v1/swarms/demo/agents/coder/search"), 401);
        assert_eq!(status_of(Some(None), "/v1/swarms/demo/agents/coder/search"), 401);
    }

    #[test]
    fn an_unbound_token_opens_every_route_of_its_swarm_and_no_other_swarm() {
        let operator = Some(Some("operator-secret-0123"));
        assert_eq!(status_of(operator, "/v1/swarms/demo/agents/reviewer/context"), 200);
        assert_eq!(status_of(operator, "/v1/swarms/demo/events"), 200);
        assert_eq!(status_of(operator, "/v1/events"), 200);
        assert_eq!(status_of(operator, "/v1/swarms/other/agents/coder/search"), 403);
    }

    #[test]
    fn an_agent_token_opens_only_its_agents_routes_and_publishing() {
        let coder = Some(Some("coder-secret-012345"));
        assert_eq!(status_of(coder, "/v1/swarms/demo/agents/coder/search"), 200);
        assert_eq!(status_of(coder, "/v1/swarms/demo/agents/coder/handoffs/01J/ack"), 200);
        assert_eq!(status_of(coder, "/v1/events"), 200);
        assert_eq!(status_of(coder, "/v1/swarms/demo/agents/reviewer/search"), 403);
        assert_eq!(status_of(coder, "/v1/swarms/demo/agents/coder"), 403);
        assert_eq!(status_of(coder, "/v1/swarms/demo/events"), 403);
        assert_eq!(status_of(coder, "/v1/swarms/demo/provenance/item-1"), 403);
        assert_eq!(status_of(coder, "/v1/swarms/demo/purge"), 403);
        assert_eq!(status_of(coder, "/v1/swarms/other/agents/coder/search"), 403);
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_others_are_refused() {
        assert_eq!(bearer_secret(&HeaderValue::from_static("bearer abc")), Some("abc".to_string()));
        assert_eq!(bearer_secret(&HeaderValue::from_static("Basic abc")), None);
    }

    #[test]
    fn callers_act_as_their_agent_only() {
        let bound =
            Caller::Token { name: "k".to_string(), swarm: "demo".to_string(), agent: Some("coder".to_string()) };
        assert!(bound.may_act_as("coder") && !bound.may_act_as("reviewer"));
        assert!(bound.may_reach("demo") && !bound.may_reach("other"));
        assert!(Caller::Anyone.may_act_as("reviewer") && Caller::Anyone.may_reach("other"));
    }
}
