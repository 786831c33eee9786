//! The MCP server: an agent's memory as Model Context Protocol tools and a
//! resource, over the same [`Service`] as the HTTP and NATS APIs.
//!
//! Two transports (see [`http`] and [`stdio`]): streamable HTTP at `/mcp` on
//! `mneme serve`, behind the bearer tokens (a token bound to an agent opens
//! only that agent's tools), and `mneme mcp --agent NAME` over stdio, which
//! an MCP host launches: a bridge to a server's `/mcp` (`--server`), or the
//! whole memory service in-process on the embedded log (`--data-dir`).
//!
//! Every tool acts as one agent, fixed by the session: it never names
//! another. A tool that changes memory appends an event and answers once
//! the agent's memory has applied it, so the next call reads the change.
//! A refused call is a JSON-RPC error naming the field at fault, as the
//! HTTP error body does, with that body as the error's `data`.

pub mod args;
pub mod http;
pub mod stdio;

use std::sync::Arc;

use mneme_api::agent_memory::{CoreMemoryAnswer, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer, Written};
use mneme_api::context::ContextAnswer;
use mneme_api::handoffs::{Acknowledged, HandoffsAnswer};
use mneme_api::log::AgentProvenance;
use mneme_api::memory::{GraphAnswer, SearchAnswer};
use mneme_api::params::{
    ContextBody, GraphParams, PhaseParams, ProvenanceParams, SearchParams, SignalsBody, TimelineParams,
};
use mneme_events::{Event, EventKind, HandoffSent, MemoryCited, MemoryForgotten, MemoryPinned, MemoryUnpinned};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, Json, RoleServer, ServerHandler, tool, tool_handler, tool_router};

use crate::service::{ApiError, Caller, Service};
use args::*;
use mneme_api::params::quote;

/// Who a session acts as: the swarm and agent, and the caller its token
/// made it.
#[derive(Debug, Clone)]
pub struct Identity {
    pub swarm: String,
    pub agent: String,
    pub caller: Caller,
}

/// The tools of one agent's memory.
#[derive(Clone)]
pub struct MemoryTools {
    service: Arc<Service>,
    /// Over stdio, the one agent of the process; over HTTP, `None`: each
    /// request carries the identity its token gave it.
    fixed: Option<Identity>,
}

impl MemoryTools {
    pub fn new(service: Arc<Service>, fixed: Option<Identity>) -> MemoryTools {
        MemoryTools { service, fixed }
    }

    fn identity(&self, context: &RequestContext<RoleServer>) -> Result<Identity, McpError> {
        if let Some(identity) = &self.fixed {
            return Ok(identity.clone());
        }
        context
            .extensions
            .get::<::http::request::Parts>()
            .and_then(|parts| parts.extensions.get::<Identity>())
            .cloned()
            .ok_or_else(|| {
                McpError::invalid_request("this session has no agent: connect with a token or ?agent=", None)
            })
    }

    /// Writes an event that changes an item the agent's memory holds: the
    /// item is looked up first, so an unknown id is refused by name.
    async fn change_item(&self, who: &Identity, item_id: &str, kind: EventKind) -> Result<Written, McpError> {
        let swarm = who.swarm.as_str();
        self.service.item(swarm, &who.agent, item_id, None).await.map_err(refused)?;
        let event = Event::new(swarm, &who.agent, kind).with_ts(self.service.clock.now());
        let mut written = self.service.write(&who.caller, event).await.map_err(refused)?;
        written.item_id = Some(item_id.to_string());
        Ok(written)
    }

    fn core_uri(who: &Identity) -> String {
        format!("mneme://{}/{}/core", who.swarm, who.agent)
    }
}

/// A refused call as the MCP error: the HTTP error body's field and message
/// in the text, the whole body as `data`.
pub fn refused(error: ApiError) -> McpError {
    let body = error.body();
    let message = match &body.error.field {
        Some(field) => format!("{field}: {}", body.error.message),
        None => body.error.message.clone(),
    };
    let data = Some(serde_json::to_value(&body).expect("an error body is JSON"));
    match error.status() {
        400 | 404 | 409 | 413 | 422 => McpError::invalid_params(message, data),
        401 | 403 => McpError::invalid_request(message, data),
        _ => McpError::internal_error(message, data),
    }
}

#[tool_router]
impl MemoryTools {
    #[tool(description = "Search this agent's memory (its own events and what the swarm shared): \
        full text, meaning and the fact graph, fused. Returns hits with item ids, text, kind, time and provenance.")]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<SearchAnswer>, McpError> {
        let who = self.identity(&context)?;
        let params = SearchParams {
            q: args.query,
            k: args.limit,
            mode: args.mode,
            kind: (!args.kinds.is_empty()).then(|| args.kinds.join(",")),
            since: None,
            until: None,
            scope: None,
            entity: None,
            correlation_id: args.task,
            explain: false,
            rrf_k: None,
            bm25_weight: None,
            vector_weight: None,
            graph_weight: None,
            recency_weight: None,
            usage_weight: None,
            fusion: None,
            min_seq: None,
            min_system_seq: None,
        };
        Ok(Json(self.service.search(&who.swarm, &who.agent, &params).await.map_err(refused)?))
    }

    #[tool(description = "Budgeted context for what the agent is about to do: core memory (task, \
        constraints, pending handoffs, its blocks), then critical, relevant and background memories, \
        never over the token budget. Returns the rendered text and each line with its provenance.")]
    async fn memory_context(
        &self,
        Parameters(args): Parameters<ContextArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<ContextAnswer>, McpError> {
        let who = self.identity(&context)?;
        let body = ContextBody {
            query: args.query,
            budget: args.budget_tokens,
            signals: SignalsBody {
                current_file: args.current_file,
                recent_errors: args.recent_errors,
                activity: args.activity,
                phase: None,
                thinking_budget: args.thinking_budget,
            },
            min_seq: None,
            min_system_seq: None,
        };
        Ok(Json(self.service.context(&who.swarm, &who.agent, body).await.map_err(refused)?))
    }

    #[tool(description = "Recall one memory whole: an item by id (its text, state — active, archived, \
        decayed, forgotten, merged, purged —, pin, usage and provenance), or a phase by id at a level \
        (index, compressed, summary, findings, full).")]
    async fn memory_recall(
        &self,
        Parameters(args): Parameters<RecallArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Recalled>, McpError> {
        let who = self.identity(&context)?;
        let swarm = &who.swarm;
        match (args.item_id, args.phase_id) {
            (Some(item_id), None) => {
                let item = self.service.item(swarm, &who.agent, &item_id, None).await.map_err(refused)?;
                Ok(Json(Recalled { item: Some(item), phase: None }))
            }
            (None, Some(phase_id)) => {
                let params = PhaseParams { level: args.level, min_seq: None };
                let phase = self.service.phase(swarm, &who.agent, &phase_id, &params).await.map_err(refused)?;
                Ok(Json(Recalled { item: None, phase: Some(phase) }))
            }
            _ => Err(refused(ApiError::bad_parameter("item_id", "give an item_id or a phase_id, one of them"))),
        }
    }

    #[tool(description = "Write a note into this agent's memory: searchable, linked in the fact graph \
        by what it mentions, forgettable. Private unless scope is `shared`. Answers once stored.")]
    async fn memory_write(
        &self,
        Parameters(note): Parameters<NoteBody>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, McpError> {
        let who = self.identity(&context)?;
        Ok(Json(self.service.write_note(&who.caller, &who.swarm, &who.agent, note).await.map_err(refused)?))
    }

    #[tool(description = "Forget an item: out of search and context from now on, still in provenance \
        and on the log. A pinned item is refused: unpin it first (memory_pin with unpin).")]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<ItemArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, McpError> {
        let who = self.identity(&context)?;
        let item = self.service.item(&who.swarm, &who.agent, &args.item_id, None).await.map_err(refused)?;
        if item.pinned {
            return Err(refused(ApiError::conflict(
                "pinned",
                Some("item_id"),
                format!("item {} is pinned, and a pin holds against forgetting: unpin it first", quote(&args.item_id)),
            )));
        }
        let kind = EventKind::MemoryForgotten(MemoryForgotten { item_id: args.item_id.clone(), reason: args.reason });
        Ok(Json(self.change_item(&who, &args.item_id, kind).await?))
    }

    #[tool(description = "Pin an item: neither consolidation nor a forget removes it; with unpin, take \
        the pin off.")]
    async fn memory_pin(
        &self,
        Parameters(args): Parameters<PinArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, McpError> {
        let who = self.identity(&context)?;
        let item_id = args.item_id.clone();
        let kind = if args.unpin {
            EventKind::MemoryUnpinned(MemoryUnpinned { item_id: args.item_id })
        } else {
            EventKind::MemoryPinned(MemoryPinned { item_id: args.item_id, reason: args.reason })
        };
        Ok(Json(self.change_item(&who, &item_id, kind).await?))
    }

    #[tool(description = "Say that an item given in context or search helped: cited items rank higher \
        and are kept by consolidation.")]
    async fn memory_cite(
        &self,
        Parameters(args): Parameters<CiteArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, McpError> {
        let who = self.identity(&context)?;
        let kind = EventKind::MemoryCited(MemoryCited { item_id: args.item_id.clone() });
        Ok(Json(self.change_item(&who, &args.item_id, kind).await?))
    }

    #[tool(description = "The fact graph around an entity (a file, function, error, person, tool...): \
        nodes, facts and edges valid now or at `as_of`, each with the events it came from.")]
    async fn graph_neighbourhood(
        &self,
        Parameters(args): Parameters<GraphArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<GraphAnswer>, McpError> {
        let who = self.identity(&context)?;
        let params =
            GraphParams { entity: args.entity, hops: args.hops, relations: None, as_of: args.as_of, min_seq: None };
        Ok(Json(self.service.graph(&who.swarm, &who.agent, &params).await.map_err(refused)?))
    }

    #[tool(description = "The events behind an item, in log order: where a memory came from.")]
    async fn memory_provenance(
        &self,
        Parameters(args): Parameters<ProvenanceArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<AgentProvenance>, McpError> {
        let who = self.identity(&context)?;
        let params = ProvenanceParams { item_id: args.item_id, min_seq: None };
        Ok(Json(self.service.agent_provenance(&who.swarm, &who.agent, &params).await.map_err(refused)?))
    }

    #[tool(description = "Read this agent's core memory: role, current task, constraints, pending \
        handoffs and the blocks it keeps (always at the top of its context).")]
    async fn core_memory_read(
        &self,
        Parameters(_): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<CoreMemoryAnswer>, McpError> {
        let who = self.identity(&context)?;
        Ok(Json(self.service.core(&who.swarm, &who.agent, None).await.map_err(refused)?))
    }

    #[tool(description = "Replace one block of this agent's core memory (e.g. `plan`, `persona`, \
        `user`) with new content, within the block's token limit; empty content clears it.")]
    async fn core_memory_update(
        &self,
        Parameters(update): Parameters<CoreUpdateBody>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<CoreUpdated>, McpError> {
        let who = self.identity(&context)?;
        Ok(Json(self.service.update_core(&who.caller, &who.swarm, &who.agent, update).await.map_err(refused)?))
    }

    #[tool(description = "Hand work over to another agent: Mneme delivers the task with a context bundle \
        from this agent's memory; it shows in the recipient's core memory until acknowledged.")]
    async fn handoff_send(
        &self,
        Parameters(handoff): Parameters<HandoffSent>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Written>, McpError> {
        let who = self.identity(&context)?;
        let runtime = self.service.swarm(&who.swarm).map_err(refused)?;
        let scope = runtime.config.agent(&who.agent).map(|agent| agent.default_scope).unwrap_or_default();
        let kind = EventKind::HandoffSent(handoff);
        let event = Event::new(&who.swarm, &who.agent, kind).with_ts(self.service.clock.now()).with_scope(scope);
        Ok(Json(self.service.write(&who.caller, event).await.map_err(refused)?))
    }

    #[tool(description = "Handoffs this agent received and has not acknowledged, oldest first, each \
        with its package (task, summary, constraints, the sender's context bundle).")]
    async fn handoffs_pending(
        &self,
        Parameters(_): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<HandoffsAnswer>, McpError> {
        let who = self.identity(&context)?;
        let mut answer = self.service.handoffs(&who.swarm, &who.agent, None).await.map_err(refused)?;
        answer.handoffs.retain(|handoff| handoff.status == "pending");
        Ok(Json(answer))
    }

    #[tool(description = "Acknowledge a handoff this agent received: it takes the work, and the handoff \
        leaves its pending list.")]
    async fn handoff_ack(
        &self,
        Parameters(args): Parameters<AckArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<Acknowledged>, McpError> {
        let who = self.identity(&context)?;
        if !who.caller.may_act_as(&who.agent) {
            return Err(refused(ApiError::forbidden(
                "forbidden",
                Some("agent"),
                format!("{} may not act as {:?}", who.caller, who.agent),
            )));
        }
        let acknowledged =
            self.service.acknowledge(&who.swarm, &who.agent, &args.handoff_id, args.note).await.map_err(refused)?;
        Ok(Json(acknowledged))
    }

    #[tool(description = "What the swarm did after a seq or from a time, as this agent may see it \
        (its own events, the others' shared ones), one line per event, in log order.")]
    async fn memory_timeline(
        &self,
        Parameters(params): Parameters<TimelineParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Json<TimelineAnswer>, McpError> {
        let who = self.identity(&context)?;
        Ok(Json(self.service.timeline(&who.swarm, &who.agent, &params).await.map_err(refused)?))
    }
}

#[tool_handler]
impl ServerHandler for MemoryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().enable_resources().build())
            .with_server_info(Implementation::new("mneme", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Mneme is this agent's memory in a swarm of agents. Start with memory_context for what \
                 you are about to do; search with memory_search; keep what matters with memory_write and \
                 core_memory_update; acknowledge handoffs you take with handoff_ack.",
            )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let who = self.identity(&context)?;
        Ok(ListResourcesResult::with_all_items(vec![
            Resource::new(Self::core_uri(&who), "core memory")
                .with_description("This agent's core memory: role, task, constraints, pending handoffs, blocks")
                .with_mime_type("application/json"),
        ]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let who = self.identity(&context)?;
        if request.uri != Self::core_uri(&who) {
            return Err(McpError::resource_not_found(
                format!("uri: no resource {}; this session has {}", request.uri, Self::core_uri(&who)),
                None,
            ));
        }
        let core = self.service.core(&who.swarm, &who.agent, None).await.map_err(refused)?;
        let text = serde_json::to_string_pretty(&core).expect("core memory is JSON");
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("application/json")])
            .into())
    }
}
