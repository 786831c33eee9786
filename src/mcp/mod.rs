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
//! A tool's text `content` is what a model should read (the context text
//! itself, a compact list of hits); its typed answer is `structuredContent`,
//! described by the tool's `outputSchema`. Every failed call — a wrong
//! argument, an unknown item, a refused scope — is an `isError` result
//! whose text names the field at fault, with the HTTP error body in
//! `_meta`; JSON-RPC errors are left to protocol faults.

pub mod args;
pub mod http;
pub mod schema;
pub mod stdio;

use std::sync::Arc;

use mneme_api::agent_memory::{CoreMemoryAnswer, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer, Written};
use mneme_api::context::ContextAnswer;
use mneme_api::handoffs::{Acknowledged, HandoffsAnswer};
use mneme_api::log::AgentProvenance;
use mneme_api::memory::{GraphAnswer, SearchAnswer};
use mneme_api::params::{ContextBody, SignalsBody, timestamp_parameter};
use mneme_api::query::{GraphInput, PhaseInput, ProvenanceInput, TimelineInput};
use mneme_api::search::{KindFilter, SearchFilters, SearchInput};
use mneme_events::{Event, EventKind, HandoffSent, MemoryCited, MemoryForgotten, MemoryPinned, MemoryUnpinned};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, tool, tool_handler, tool_router};

use crate::render;
use crate::service::{ApiError, Caller, Service};
use args::*;
use mneme_api::params::quote;
use schema::Checked;

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
    async fn change_item(&self, who: &Identity, item_id: &str, kind: EventKind) -> Result<Written, ApiError> {
        let swarm = who.swarm.as_str();
        self.service.item(swarm, &who.agent, item_id, None).await?;
        let event = Event::new(swarm, &who.agent, kind).with_ts(self.service.clock.now());
        let mut written = self.service.write(&who.caller, event).await?;
        written.item_id = Some(item_id.to_string());
        Ok(written)
    }

    fn core_uri(who: &Identity) -> String {
        format!("mneme://{}/{}/core", who.swarm, who.agent)
    }
}

/// What a tool answers: a result (an `isError` one for a call that was
/// refused), or a protocol error for a session that cannot be served.
type Answer = Result<CallToolResult, McpError>;

/// A tool's answer: `text`, what a model should read, as its `content`;
/// the typed answer as `structuredContent`, for clients that parse it.
fn answered<T: serde::Serialize>(typed: &T, text: String) -> Result<CallToolResult, ApiError> {
    let value = serde_json::to_value(typed).expect("an answer is JSON");
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

/// A tool call's outcome: a refusal becomes a tool error the model reads.
fn outcome(result: Result<CallToolResult, ApiError>) -> Answer {
    Ok(result.unwrap_or_else(refused))
}

/// A refused call as a tool execution error (MCP wants input errors there,
/// where a model can read and correct them, not as protocol errors, which
/// some hosts turn into the end of an agent's run): its text names the
/// field and what was wrong; `_meta` holds the HTTP error body.
pub fn refused(error: ApiError) -> CallToolResult {
    let body = error.body();
    let text = match &body.error.field {
        Some(field) => format!("{field}: {} (error {})", body.error.message, body.error.code),
        None => format!("{} (error {})", body.error.message, body.error.code),
    };
    let mut meta = rmcp::model::JsonObject::new();
    meta.insert(ERROR_META.to_string(), serde_json::to_value(&body).expect("an error body is JSON"));
    CallToolResult::error(vec![ContentBlock::text(text)]).with_meta(Some(rmcp::model::MetaObject(meta)))
}

/// The `_meta` key of a refused call's error body.
pub const ERROR_META: &str = "mneme/error";

/// Arguments that did not deserialise, as a tool error naming the field.
fn invalid(message: String) -> CallToolResult {
    let field = message.split(':').next().filter(|field| !field.contains(' ')).map(str::to_string);
    let error = ApiError::bad_request("invalid_arguments", field.as_deref(), message);
    refused(error)
}

/// The arguments, or the tool error that names what is wrong with them.
macro_rules! valid {
    ($checked:expr) => {
        match $checked {
            Checked::Valid(args) => args,
            Checked::Invalid(message) => return Ok(invalid(message)),
        }
    };
}

#[tool_router]
impl MemoryTools {
    #[tool(
        description = "Search this agent's memory (its own events and what the swarm shared): full text, \
        meaning and the fact graph, fused. Returns the hits, best first, with item ids, text, kind, time and \
        provenance; a hit a later event superseded is marked.",
        input_schema = schema::input::<SearchArgs>(),
        output_schema = schema::output::<SearchAnswer>(),
        annotations(title = "Search memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_search(
        &self,
        Parameters(args): Parameters<Checked<SearchArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        outcome(
            async {
                // Named as this tool's arguments are, not as the API's.
                let renamed = |error: ApiError| {
                    [("k", "limit"), ("q", "query"), ("kind", "kinds"), ("correlation_id", "task")]
                        .iter()
                        .fold(error, |error, (from, to)| error.field_renamed(from, to))
                };
                let kinds = KindFilter::from_names(&args.kinds).map_err(|error| renamed(error.into()))?;
                let input = SearchInput {
                    k: args.limit,
                    mode: args.mode,
                    filters: SearchFilters { kinds, correlation_id: args.task, ..SearchFilters::default() },
                    ..SearchInput::new(args.query)
                };
                let answer = self.service.search(&who.swarm, &who.agent, &input).await.map_err(renamed)?;
                answered(&answer, render::search_for_model(&answer))
            }
            .await,
        )
    }

    #[tool(
        description = "Budgeted context for what the agent is about to do: core memory (task, constraints, \
        pending handoffs, its blocks), then critical, relevant and background memories, never over the token \
        budget. The text is the context itself; the structured answer adds each line's provenance.",
        input_schema = schema::input::<ContextArgs>(),
        output_schema = schema::output::<ContextAnswer>(),
        annotations(title = "Context for a task", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_context(
        &self,
        Parameters(args): Parameters<Checked<ContextArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let body = ContextBody {
            query: args.query,
            budget: args.budget_tokens,
            signals: SignalsBody {
                current_file: args.current_file,
                recent_errors: args.recent_errors,
                activity: args.activity.map(|activity| activity.as_str().to_string()),
                phase: None,
                thinking_budget: args.thinking_budget,
            },
            min_seq: None,
            min_system_seq: None,
        };
        outcome(
            async {
                let answer = self
                    .service
                    .context(&who.swarm, &who.agent, body)
                    .await
                    .map_err(|error| error.field_renamed("budget", "budget_tokens"))?;
                answered(&answer, answer.text.clone())
            }
            .await,
        )
    }

    #[tool(
        description = "Recall one memory whole: an item by id (its text, state — active, archived, decayed, \
        forgotten, merged, purged —, pin, usage and provenance), or a phase by id at a level.",
        input_schema = schema::input::<RecallArgs>(),
        output_schema = schema::output::<Recalled>(),
        annotations(title = "Recall a memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_recall(
        &self,
        Parameters(args): Parameters<Checked<RecallArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let swarm = &who.swarm;
        outcome(
            async {
                match (args.item_id, args.phase_id) {
                    (Some(item_id), None) => {
                        let item = self.service.item(swarm, &who.agent, &item_id, None).await?;
                        let text = render::item(&item);
                        answered(&Recalled { item: Some(item), phase: None }, text)
                    }
                    (None, Some(phase_id)) => {
                        let mut input = PhaseInput::default();
                        if let Some(level) = args.level {
                            input.level = level.into();
                        }
                        let phase = self.service.phase(swarm, &who.agent, &phase_id, &input).await?;
                        let text = match &phase.text {
                            Some(text) => text.text.clone(),
                            None => serde_json::to_string(&phase).expect("a phase is JSON"),
                        };
                        answered(&Recalled { item: None, phase: Some(phase) }, text)
                    }
                    _ => Err(ApiError::bad_parameter("item_id", "give an item_id or a phase_id, one of them")),
                }
            }
            .await,
        )
    }

    #[tool(
        description = "Write a note into this agent's memory: searchable, linked in the fact graph by what \
        it mentions, forgettable. Private unless scope is `shared`. Answers once stored.",
        input_schema = schema::input::<WriteArgs>(),
        output_schema = schema::output::<Written>(),
        annotations(title = "Write a note", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn memory_write(
        &self,
        Parameters(args): Parameters<Checked<WriteArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let note = NoteBody {
            text: args.text,
            tags: args.tags,
            importance: args.importance,
            scope: args.scope.map(|scope| match scope {
                NoteScope::Private => "private".to_string(),
                NoteScope::Shared => "shared".to_string(),
            }),
            task: args.task,
        };
        outcome(
            async {
                let written = self.service.write_note(&who.caller, &who.swarm, &who.agent, note).await?;
                answered(&written, render::written("noted", &written))
            }
            .await,
        )
    }

    #[tool(
        description = "Forget an item: out of search and context from now on, still in provenance and on \
        the log. A pinned item is refused: unpin it first (memory_pin with unpin).",
        input_schema = schema::input::<ItemArgs>(),
        output_schema = schema::output::<Written>(),
        annotations(title = "Forget a memory", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_forget(
        &self,
        Parameters(args): Parameters<Checked<ItemArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        outcome(
            async {
                let item = self.service.item(&who.swarm, &who.agent, &args.item_id, None).await?;
                if item.pinned {
                    return Err(ApiError::conflict(
                        "pinned",
                        Some("item_id"),
                        format!(
                            "item {} is pinned, and a pin holds against forgetting: unpin it first",
                            quote(&args.item_id)
                        ),
                    ));
                }
                let kind =
                    EventKind::MemoryForgotten(MemoryForgotten { item_id: args.item_id.clone(), reason: args.reason });
                let written = self.change_item(&who, &args.item_id, kind).await?;
                answered(&written, render::written("forgotten", &written))
            }
            .await,
        )
    }

    #[tool(
        description = "Pin an item: neither consolidation nor a forget removes it; with unpin, take the pin off.",
        input_schema = schema::input::<PinArgs>(),
        output_schema = schema::output::<Written>(),
        annotations(title = "Pin a memory", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn memory_pin(
        &self,
        Parameters(args): Parameters<Checked<PinArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let item_id = args.item_id.clone();
        let (kind, what) = if args.unpin {
            (EventKind::MemoryUnpinned(MemoryUnpinned { item_id: args.item_id }), "unpinned")
        } else {
            (EventKind::MemoryPinned(MemoryPinned { item_id: args.item_id, reason: args.reason }), "pinned")
        };
        outcome(
            async {
                let written = self.change_item(&who, &item_id, kind).await?;
                answered(&written, render::written(what, &written))
            }
            .await,
        )
    }

    #[tool(
        description = "Say that an item given in context or search helped: cited items rank higher and are \
        kept by consolidation.",
        input_schema = schema::input::<CiteArgs>(),
        output_schema = schema::output::<Written>(),
        annotations(title = "Cite a memory", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn memory_cite(
        &self,
        Parameters(args): Parameters<Checked<CiteArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let kind = EventKind::MemoryCited(MemoryCited { item_id: args.item_id.clone() });
        outcome(
            async {
                let written = self.change_item(&who, &args.item_id, kind).await?;
                answered(&written, render::written("cited", &written))
            }
            .await,
        )
    }

    #[tool(
        description = "The fact graph around an entity (a file, function, error, person, tool...): nodes, \
        facts and edges valid now or at `as_of`, each with the events it came from; ended facts are marked.",
        input_schema = schema::input::<GraphArgs>(),
        output_schema = schema::output::<GraphAnswer>(),
        annotations(title = "Fact graph around an entity", read_only_hint = true, open_world_hint = false)
    )]
    async fn graph_neighbourhood(
        &self,
        Parameters(args): Parameters<Checked<GraphArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        outcome(
            async {
                let mut input = GraphInput::new(args.entity);
                input.hops = args.hops.unwrap_or(input.hops);
                input.as_of = timestamp_parameter("as_of", args.as_of.as_deref())?;
                let answer = self.service.graph(&who.swarm, &who.agent, &input).await?;
                answered(&answer, render::graph(&answer))
            }
            .await,
        )
    }

    #[tool(
        description = "The events behind an item, in log order: where a memory came from.",
        input_schema = schema::input::<ProvenanceArgs>(),
        output_schema = schema::output::<AgentProvenance>(),
        annotations(title = "Where a memory came from", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_provenance(
        &self,
        Parameters(args): Parameters<Checked<ProvenanceArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        let input = ProvenanceInput { item_id: args.item_id, min_seq: None };
        outcome(
            async {
                let answer = self.service.agent_provenance(&who.swarm, &who.agent, &input).await?;
                // One event per line, as the log holds it.
                let lines: Vec<String> = answer
                    .events
                    .iter()
                    .map(|entry| serde_json::to_string(entry).expect("a log entry is JSON"))
                    .collect();
                answered(&answer, lines.join("\n"))
            }
            .await,
        )
    }

    #[tool(
        description = "Read this agent's core memory: role, current task, constraints, pending handoffs and \
        the blocks it keeps (always at the top of its context).",
        input_schema = schema::input::<NoArgs>(),
        output_schema = schema::output::<CoreMemoryAnswer>(),
        annotations(title = "Read core memory", read_only_hint = true, open_world_hint = false)
    )]
    async fn core_memory_read(
        &self,
        Parameters(args): Parameters<Checked<NoArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let NoArgs {} = valid!(args);
        outcome(
            async {
                let core = self.service.core(&who.swarm, &who.agent, None).await?;
                answered(&core, render::core(&core))
            }
            .await,
        )
    }

    #[tool(
        description = "Replace one block of this agent's core memory (e.g. `plan`, `persona`, `user`) with \
        new content, within the block's token limit; empty content clears it.",
        input_schema = schema::input::<CoreUpdateBody>(),
        output_schema = schema::output::<CoreUpdated>(),
        annotations(title = "Update core memory", read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn core_memory_update(
        &self,
        Parameters(update): Parameters<Checked<CoreUpdateBody>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let update = valid!(update);
        outcome(
            async {
                let updated = self.service.update_core(&who.caller, &who.swarm, &who.agent, update).await?;
                let text =
                    format!("{}\n{}", render::written("block written", &updated.written), render::core(&updated.core));
                answered(&updated, text)
            }
            .await,
        )
    }

    #[tool(
        description = "Hand work over to another agent: Mneme delivers the task with a context bundle from \
        this agent's memory; it shows in the recipient's core memory until acknowledged.",
        input_schema = schema::input::<HandoffSent>(),
        output_schema = schema::output::<Written>(),
        annotations(title = "Hand work over", read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn handoff_send(
        &self,
        Parameters(handoff): Parameters<Checked<HandoffSent>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let handoff = valid!(handoff);
        outcome(
            async {
                let runtime = self.service.swarm(&who.swarm)?;
                let scope = runtime.config.agent(&who.agent).map(|agent| agent.default_scope).unwrap_or_default();
                let to = handoff.to.clone();
                let kind = EventKind::HandoffSent(handoff);
                let event =
                    Event::new(&who.swarm, &who.agent, kind).with_ts(self.service.clock.now()).with_scope(scope);
                let written = self.service.write(&who.caller, event).await?;
                answered(&written, render::written(&format!("handed over to {to}"), &written))
            }
            .await,
        )
    }

    #[tool(
        description = "Handoffs this agent received and has not acknowledged, oldest first, each with its \
        package (task, summary, constraints, the sender's context bundle).",
        input_schema = schema::input::<NoArgs>(),
        output_schema = schema::output::<HandoffsAnswer>(),
        annotations(title = "Pending handoffs", read_only_hint = true, open_world_hint = false)
    )]
    async fn handoffs_pending(
        &self,
        Parameters(args): Parameters<Checked<NoArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let NoArgs {} = valid!(args);
        outcome(
            async {
                let mut answer = self.service.handoffs(&who.swarm, &who.agent, None).await?;
                answer.handoffs.retain(|handoff| handoff.status == "pending");
                let text = if answer.handoffs.is_empty() {
                    "No handoff is pending.".to_string()
                } else {
                    answer.handoffs.iter().map(render::handoff_line).collect::<Vec<_>>().join("\n")
                };
                answered(&answer, text)
            }
            .await,
        )
    }

    #[tool(
        description = "Acknowledge a handoff this agent received: it takes the work, and the handoff leaves \
        its pending list.",
        input_schema = schema::input::<AckArgs>(),
        output_schema = schema::output::<Acknowledged>(),
        annotations(title = "Take a handoff", read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn handoff_ack(
        &self,
        Parameters(args): Parameters<Checked<AckArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        outcome(
            async {
                if !who.caller.may_act_as(&who.agent) {
                    return Err(ApiError::forbidden(
                        "forbidden",
                        Some("agent"),
                        format!("{} may not act as {:?}", who.caller, who.agent),
                    ));
                }
                let acknowledged =
                    self.service.acknowledge(&who.swarm, &who.agent, &args.handoff_id, args.note).await?;
                let text = format!("acknowledged {} at seq {}.", acknowledged.handoff_id, acknowledged.seq);
                answered(&acknowledged, text)
            }
            .await,
        )
    }

    #[tool(
        description = "What the swarm did after a seq or from a time, as this agent may see it (its own \
        events, the others' shared ones), one line per event, in log order.",
        input_schema = schema::input::<TimelineArgs>(),
        output_schema = schema::output::<TimelineAnswer>(),
        annotations(title = "What the swarm did", read_only_hint = true, open_world_hint = false)
    )]
    async fn memory_timeline(
        &self,
        Parameters(args): Parameters<Checked<TimelineArgs>>,
        context: RequestContext<RoleServer>,
    ) -> Answer {
        let who = self.identity(&context)?;
        let args = valid!(args);
        outcome(
            async {
                let input = TimelineInput {
                    since_seq: args.since_seq,
                    since: timestamp_parameter("since", args.since.as_deref())?,
                    limit: args.limit.unwrap_or(TimelineInput::default().limit),
                };
                let answer = self.service.timeline(&who.swarm, &who.agent, &input).await?;
                answered(&answer, render::timeline(&answer))
            }
            .await,
        )
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
        let core = self.service.core(&who.swarm, &who.agent, None).await.map_err(|error| {
            let body = error.body();
            McpError::internal_error(body.error.message.clone(), Some(serde_json::to_value(&body).expect("JSON")))
        })?;
        let text = serde_json::to_string_pretty(&core).expect("core memory is JSON");
        Ok(ReadResourceResult::new(vec![ResourceContents::text(text, request.uri).with_mime_type("application/json")])
            .into())
    }
}
