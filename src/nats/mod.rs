//! Queries over NATS request/reply: a request on
//! `mneme.<swarm>.<agent>.query.<verb>` with a JSON body gets the same JSON
//! answer as the HTTP route of that verb, and an error in the same shape as
//! an HTTP error (`{"error": {"status", "code", "field", "message"}}`).
//!
//! | verb         | body                                     | HTTP twin                           |
//! |--------------|------------------------------------------|-------------------------------------|
//! | `search`     | `{"q", "k", "mode", ...}`                | `GET …/search?…`                    |
//! | `context`    | `{"query", "budget", "signals", ...}`    | `POST …/context`                    |
//! | `graph`      | `{"entity", "hops", "relations", ...}`   | `GET …/graph?…`                     |
//! | `provenance` | `{"item_id"}`                            | `GET …/provenance/{item_id}`        |
//! | `phase`      | `{"phase_id", "level"}`; `{}` lists them | `GET …/phases/{id}`, `GET …/phases` |
//! | `items`      | `{"item_id"}`; `{}` counts by state      | `GET …/items/{id}`, `GET …/items`   |
//! | `handoffs`   | `{}` or `{"min_seq"}`                    | `GET …/handoffs`                    |
//! | `ack`        | `{"handoff_id", "note"}`                 | `POST …/handoffs/{id}/ack`          |
//! | `core`       | `{}`; `{"block", "content"}` replaces one | `GET …/core`, `POST …/core`         |
//! | `note`       | `{"text", "tags", "importance", ...}`    | `POST …/notes`                      |
//! | `timeline`   | `{"since_seq"}` or `{"since"}`, `limit`  | `GET …/timeline?…`                  |
//!
//! NATS carries no API token: who may publish on an agent's query subjects
//! (and so write its notes and core blocks) is the NATS server's
//! authorization (per-user subject permissions), and
//! who may read the answers is who may subscribe to the inboxes
//! (`_INBOX.>`, or per-user inbox prefixes). Answers go only to `_INBOX.`
//! subjects, never to a subject of the requester's choosing.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use mneme_nats::{Broker, QueryRequest};
use serde::de::DeserializeOwned;
use serde_json::Value;

use mneme_api::params::{
    AcknowledgeQuery, ContextBody, CoreQuery, GraphParams, ItemQuery, ItemsParams, MinSeqParams, PhaseParams,
    PhaseQuery, ProvenanceParams, SearchParams, TimelineParams, quote,
};

use mneme_api::agent_memory::{CoreUpdateBody, NoteBody};

use crate::service::{ApiError, Caller, Service, json_body};

/// The verbs a query subject may end in.
pub const QUERY_VERBS: [&str; 11] =
    ["search", "context", "graph", "provenance", "phase", "items", "handoffs", "ack", "core", "note", "timeline"];
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// Replies go only to subjects under this prefix, NATS clients' default
/// inboxes, or under `_INBOX_<agent>.` for a query of `<agent>`: the
/// per-agent inbox prefix that a nats-server confining each agent to its
/// own inboxes (deploy/nats/) makes clients use.
const REPLY_PREFIX: &str = "_INBOX.";

/// Whether Mneme may answer a query of `agent` on `reply_to`.
fn is_inbox_of(reply_to: &str, agent: &str) -> bool {
    reply_to.starts_with(REPLY_PREFIX)
        || reply_to
            .strip_prefix("_INBOX_")
            .and_then(|rest| rest.strip_prefix(agent))
            .is_some_and(|rest| rest.starts_with('.'))
}

/// Answers the query requests of swarm `swarm` (on its broker, whose
/// subjects carry the swarm) until the process ends; after the
/// subscription fails, subscribes again.
pub async fn serve_queries(service: Arc<Service>, swarm: String, broker: Arc<dyn Broker>) {
    let swarm: Arc<str> = swarm.into();
    loop {
        match broker.query_requests().await {
            Ok(mut requests) => {
                tracing::info!(%swarm, "answering queries on NATS request/reply");
                while let Some(request) = requests.next().await {
                    // Each request on its own task: a slow context
                    // assembly must not hold up another agent's search.
                    actix_rt::spawn(answer_and_reply(service.clone(), swarm.clone(), broker.clone(), request));
                }
                tracing::warn!("the NATS query subscription ended; subscribing again");
            }
            Err(error) => tracing::warn!(%error, "cannot subscribe to the query subjects; retrying"),
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

async fn answer_and_reply(service: Arc<Service>, swarm: Arc<str>, broker: Arc<dyn Broker>, request: QueryRequest) {
    let Some(reply_to) = request.reply_to.clone() else {
        tracing::debug!(agent = %request.agent, verb = %request.verb, "query without a reply subject ignored");
        return;
    };
    // Mneme answers with its own credentials: a reply subject a requester
    // chose freely would let it publish onto the log, the handoff subjects
    // or the JetStream API through Mneme. Request/reply clients reply to
    // inboxes.
    if !is_inbox_of(&reply_to, &request.agent) {
        tracing::warn!(agent = %request.agent, verb = %request.verb, %reply_to, "query with a reply subject outside {REPLY_PREFIX}* and _INBOX_<agent>.* refused");
        metrics::counter!("mneme_nats_queries_refused_total", "swarm" => swarm.to_string()).increment(1);
        return;
    }
    metrics::counter!("mneme_nats_queries_total", "swarm" => swarm.to_string(), "verb" => verb_label(&request.verb))
        .increment(1);
    let caller = format!(
        "agent {} of swarm {} over NATS",
        mneme_api::params::quote(&request.agent),
        mneme_api::params::quote(&swarm)
    );
    let permit = service.query_permits.try_acquire(&caller);
    let answered = match permit {
        Ok(_permit) => answer(&service, &swarm, &request).await,
        Err(refused) => Err(refused),
    };
    let body = match answered {
        Ok(answer) => answer.to_string(),
        Err(error) => serde_json::to_string(&error.body()).expect("an error body is always JSON"),
    };
    if let Err(error) = broker.reply(reply_to, body.into_bytes()).await {
        tracing::warn!(agent = %request.agent, verb = %request.verb, %error, "cannot answer a NATS query");
    }
}

/// A fixed label, so that junk verbs cannot grow the metric's label set.
fn verb_label(verb: &str) -> &'static str {
    QUERY_VERBS.iter().find(|known| **known == verb).copied().unwrap_or("unknown")
}

/// The answer to one request of swarm `swarm`, exactly as the HTTP route
/// would give it.
pub async fn answer(service: &Service, swarm: &str, request: &QueryRequest) -> Result<Value, ApiError> {
    let agent = request.agent.as_str();
    mneme_events::validate_name(agent).map_err(|error| ApiError::bad_parameter("agent", error.message))?;
    match request.verb.as_str() {
        "search" => json(service.search(swarm, agent, &body_of::<SearchParams>(&request.body)?.input()?).await),
        "context" => json(service.context(swarm, agent, body_of::<ContextBody>(&request.body)?).await),
        "graph" => json(service.graph(swarm, agent, &body_of::<GraphParams>(&request.body)?.input()?).await),
        "provenance" => {
            json(service.agent_provenance(swarm, agent, &body_of::<ProvenanceParams>(&request.body)?.input()).await)
        }
        "phase" => {
            let body: PhaseQuery = body_of(&request.body)?;
            match &body.phase_id {
                Some(phase_id) => {
                    let params = PhaseParams { level: body.level, min_seq: body.min_seq };
                    json(service.phase(swarm, agent, phase_id, &params.input()?).await)
                }
                // The listing has no level: a level without a phase is a
                // request for one phase that forgot to name it.
                None if body.level.is_some() => Err(ApiError::bad_parameter(
                    "phase_id",
                    "level is for one phase: name it with phase_id, or send no level for the listing",
                )),
                None => json(service.phases(swarm, agent, body.min_seq).await),
            }
        }
        "items" => {
            let body: ItemQuery = body_of(&request.body)?;
            match &body.item_id {
                Some(_) if body.state.is_some() || body.before_seq.is_some() || body.limit.is_some() => {
                    Err(ApiError::bad_parameter(
                        "item_id",
                        "state, before_seq and limit page through the items: send them without item_id",
                    ))
                }
                Some(item_id) => json(service.item(swarm, agent, item_id, body.min_seq).await),
                None => json(service.item_states(swarm, agent, &ItemsParams::from(&body).input()?).await),
            }
        }
        "handoffs" => {
            let body: MinSeqParams = body_of(&request.body)?;
            json(service.handoffs(swarm, agent, body.min_seq).await)
        }
        "ack" => {
            let body: AcknowledgeQuery = body_of(&request.body)?;
            json(service.acknowledge(swarm, agent, &body.handoff_id, body.note).await)
        }
        "core" => {
            let body: CoreQuery = body_of(&request.body)?;
            match (body.block, body.content) {
                (Some(block), Some(content)) => {
                    let update = CoreUpdateBody { block, content };
                    json(service.update_core(&Caller::Anyone, swarm, agent, update).await)
                }
                (None, None) => json(service.core(swarm, agent, body.min_seq).await),
                (Some(_), None) => {
                    Err(ApiError::bad_parameter("content", "a block is replaced whole: send its content"))
                }
                (None, Some(_)) => Err(ApiError::bad_parameter("block", "name the block the content is for")),
            }
        }
        "note" => json(service.write_note(&Caller::Anyone, swarm, agent, body_of::<NoteBody>(&request.body)?).await),
        "timeline" => json(service.timeline(swarm, agent, &body_of::<TimelineParams>(&request.body)?.input()?).await),
        verb => Err(ApiError::not_found(
            "unknown_verb",
            Some("verb"),
            format!("no query {}; expected one of {}", quote(verb), QUERY_VERBS.join(", ")),
        )),
    }
}

/// A typed answer as the JSON the reply carries.
fn json<T: serde::Serialize>(answer: Result<T, ApiError>) -> Result<Value, ApiError> {
    answer.map(|answer| serde_json::to_value(answer).expect("every answer is JSON"))
}

/// The request body as `T`; an empty body is `{}`.
fn body_of<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let body = if body.iter().all(u8::is_ascii_whitespace) { b"{}".as_slice() } else { body };
    json_body(body)
}

#[cfg(test)]
mod tests {
    use super::is_inbox_of;

    #[test]
    fn answers_go_to_default_inboxes_or_the_queried_agents_own() {
        assert!(is_inbox_of("_INBOX.abc.1", "reviewer"));
        assert!(is_inbox_of("_INBOX_reviewer.abc.1", "reviewer"));
        assert!(!is_inbox_of("_INBOX_reviewer.abc.1", "coder"));
        assert!(!is_inbox_of("_INBOX_reviewerx.abc", "reviewer"));
        assert!(!is_inbox_of("mneme.demo.coder.events.message_recorded", "coder"));
        assert!(!is_inbox_of("_INBOX_reviewer", "reviewer"));
    }
}
