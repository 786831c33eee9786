//! The HTTP API's route table: every route's method, path, parameters,
//! body and answer, by type. The server registers its handlers from this
//! table (one handler per [`Operation`], matched exhaustively, so a route
//! without a handler does not compile), and the OpenAPI document
//! ([`crate::openapi`]) is generated from it: the two cannot drift apart.

use schemars::{JsonSchema, Schema, SchemaGenerator};

use crate::agent_memory::{CoreMemoryAnswer, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer, Written};
use crate::consolidation::{ConsolidationAnswer, ContradictionsAnswer, PurgeAnswer, PurgeBody, ResolveBody, Resolved};
use crate::context::{ContextAnswer, PhaseAnswer, PhasesAnswer};
use crate::handoffs::{AcknowledgeBody, Acknowledged, HandoffsAnswer};
use crate::log::{AcceptedEvents, AgentProvenance, Agents, DeadLetters, EventsPage, Health, SwarmProvenance, Swarms};
use crate::memory::{Digest, GraphAnswer, ItemAnswer, ItemStates, ReplayAnswer, SearchAnswer};
use crate::params::{
    ConsolidateParams, ContextBody, ContextParams, ContradictionParams, EventsParams, GraphParams, HandoffsParams,
    ItemsParams, MinSeqParams, NoParams, PhaseParams, ReplayParams, SearchParams, TimelineParams,
};

/// What a route does; the server has one handler for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Health,
    OpenApi,
    Metrics,
    AppendEvents,
    Swarms,
    Events,
    DeadLetters,
    Agents,
    SwarmProvenance,
    Search,
    GetContext,
    PostContext,
    Phases,
    Phase,
    Graph,
    AgentProvenance,
    ItemStates,
    Item,
    Handoffs,
    Acknowledge,
    Core,
    UpdateCore,
    WriteNote,
    Timeline,
    Digest,
    Replay,
    Consolidate,
    Contradictions,
    Resolve,
    Purge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Post => "post",
        }
    }
}

/// The schema of a type, as a `$ref` into the generator's definitions.
pub type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

/// What a successful request answers.
#[derive(Clone, Copy)]
pub enum Answer {
    /// A JSON body of this schema, with this status.
    Json(u16, SchemaOf),
    /// `text/plain` (Prometheus exposition format).
    Text,
    /// JSON, or with `follow=true` a `text/event-stream` of these.
    JsonOrEvents(SchemaOf, SchemaOf),
}

/// One route of the API.
#[derive(Clone, Copy)]
pub struct Route {
    pub method: Method,
    /// With `{name}` path parameters, as actix-web and OpenAPI write them.
    pub path: &'static str,
    pub operation: Operation,
    /// One line for people: the OpenAPI summary.
    pub summary: &'static str,
    /// The query string, as a struct whose fields are the parameters.
    pub query: SchemaOf,
    /// The JSON request body, if the route takes one.
    pub body: Option<SchemaOf>,
    pub answer: Answer,
}

fn of<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// A JSON object (the OpenAPI document describes itself no further).
fn any_object(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "object" })
}

/// `POST /v1/events` takes one event or an array of them.
fn events_body(generator: &mut SchemaGenerator) -> Schema {
    let event = generator.subschema_for::<mneme_events::Event>();
    schemars::json_schema!({ "oneOf": [event, { "type": "array", "items": event, "minItems": 1 }] })
}

const fn route(method: Method, path: &'static str, operation: Operation, summary: &'static str) -> Route {
    Route { method, path, operation, summary, query: of::<NoParams>, body: None, answer: Answer::Text }
}

impl Route {
    const fn query(mut self, query: SchemaOf) -> Route {
        self.query = query;
        self
    }

    const fn body(mut self, body: SchemaOf) -> Route {
        self.body = Some(body);
        self
    }

    const fn answer(mut self, answer: SchemaOf) -> Route {
        self.answer = Answer::Json(200, answer);
        self
    }

    const fn answer_with(mut self, answer: Answer) -> Route {
        self.answer = answer;
        self
    }
}

use Method::{Get, Post};
use Operation as Op;

/// Every route of the API, in the order docs/src/http.md describes them.
pub const ROUTES: &[Route] = &[
    route(Get, "/healthz", Op::Health, "Whether the log answers, and its last seq").answer(of::<Health>),
    route(Get, "/v1/openapi.json", Op::OpenApi, "This document: the API's OpenAPI 3.1 description").answer(any_object),
    route(Get, "/metrics", Op::Metrics, "Prometheus metrics (needs an unbound token when tokens are configured)"),
    route(
        Post,
        "/v1/events",
        Op::AppendEvents,
        "Publish one event or an array; all are validated before any is appended",
    )
    .body(events_body)
    .answer_with(Answer::Json(202, of::<AcceptedEvents>)),
    route(Get, "/v1/swarms", Op::Swarms, "The swarms this server holds that the token opens").answer(of::<Swarms>),
    route(Get, "/v1/swarms/{swarm}/events", Op::Events, "A page of the log")
        .query(of::<EventsParams>)
        .answer(of::<EventsPage>),
    route(
        Get,
        "/v1/swarms/{swarm}/deadletters",
        Op::DeadLetters,
        "Records on the log that are not valid events, with why",
    )
    .answer(of::<DeadLetters>),
    route(Get, "/v1/swarms/{swarm}/agents", Op::Agents, "The agents with a memory").answer(of::<Agents>),
    route(
        Get,
        "/v1/swarms/{swarm}/provenance/{item_id}",
        Op::SwarmProvenance,
        "The events behind an item, from every memory that holds it",
    )
    .answer(of::<SwarmProvenance>),
    route(Get, "/v1/swarms/{swarm}/agents/{agent}/search", Op::Search, "Search an agent's memory")
        .query(of::<SearchParams>)
        .answer(of::<SearchAnswer>),
    route(Get, "/v1/swarms/{swarm}/agents/{agent}/context", Op::GetContext, "An agent's budgeted context for a query")
        .query(of::<ContextParams>)
        .answer(of::<ContextAnswer>),
    route(
        Post,
        "/v1/swarms/{swarm}/agents/{agent}/context",
        Op::PostContext,
        "An agent's budgeted context, with the signals as a JSON body",
    )
    .body(of::<ContextBody>)
    .answer(of::<ContextAnswer>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/phases",
        Op::Phases,
        "An agent's phases, task roll-ups and session summary",
    )
    .query(of::<MinSeqParams>)
    .answer(of::<PhasesAnswer>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/phases/{phase_id}",
        Op::Phase,
        "One phase at one level of compression",
    )
    .query(of::<PhaseParams>)
    .answer(of::<PhaseAnswer>),
    route(Get, "/v1/swarms/{swarm}/agents/{agent}/graph", Op::Graph, "The fact graph around an entity")
        .query(of::<GraphParams>)
        .answer(of::<GraphAnswer>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/provenance/{item_id}",
        Op::AgentProvenance,
        "The events behind an item of the agent's memory",
    )
    .query(of::<MinSeqParams>)
    .answer(of::<AgentProvenance>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/items",
        Op::ItemStates,
        "How many items are in each state, and a page of them, newest first",
    )
    .query(of::<ItemsParams>)
    .answer(of::<ItemStates>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/items/{item_id}",
        Op::Item,
        "One item: its state, pin, usage and provenance",
    )
    .query(of::<MinSeqParams>)
    .answer(of::<ItemAnswer>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/handoffs",
        Op::Handoffs,
        "Handoffs the agent received, pending first; follow=true streams new ones as server-sent events",
    )
    .query(of::<HandoffsParams>)
    .answer_with(Answer::JsonOrEvents(of::<HandoffsAnswer>, of::<crate::handoffs::HandoffDelivery>)),
    route(
        Post,
        "/v1/swarms/{swarm}/agents/{agent}/handoffs/{handoff_id}/ack",
        Op::Acknowledge,
        "Acknowledge a handoff the agent received",
    )
    .body(of::<AcknowledgeBody>)
    .answer(of::<Acknowledged>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/core",
        Op::Core,
        "The agent's core memory: role, current task, constraints, pending handoffs, its blocks",
    )
    .query(of::<MinSeqParams>)
    .answer(of::<CoreMemoryAnswer>),
    route(
        Post,
        "/v1/swarms/{swarm}/agents/{agent}/core",
        Op::UpdateCore,
        "Replace one block of the agent's core memory; answers once applied",
    )
    .body(of::<CoreUpdateBody>)
    .answer(of::<CoreUpdated>),
    route(
        Post,
        "/v1/swarms/{swarm}/agents/{agent}/notes",
        Op::WriteNote,
        "Write a note into the agent's memory; answers once applied",
    )
    .body(of::<NoteBody>)
    .answer(of::<Written>),
    route(
        Get,
        "/v1/swarms/{swarm}/agents/{agent}/timeline",
        Op::Timeline,
        "What the swarm did after a seq or from a time, as the agent sees it",
    )
    .query(of::<TimelineParams>)
    .answer(of::<TimelineAnswer>),
    route(Get, "/v1/swarms/{swarm}/agents/{agent}/digest", Op::Digest, "The memory's checkpoint and digest")
        .query(of::<MinSeqParams>)
        .answer(of::<Digest>),
    route(
        Post,
        "/v1/swarms/{swarm}/agents/{agent}/replay",
        Op::Replay,
        "Rebuild the memory from the log and compare digests",
    )
    .query(of::<ReplayParams>)
    .answer(of::<ReplayAnswer>),
    route(Post, "/v1/swarms/{swarm}/consolidate", Op::Consolidate, "Run consolidation now, or a dry run")
        .query(of::<ConsolidateParams>)
        .answer(of::<ConsolidationAnswer>),
    route(Get, "/v1/swarms/{swarm}/contradictions", Op::Contradictions, "Open and resolved contradictions")
        .query(of::<ContradictionParams>)
        .answer(of::<ContradictionsAnswer>),
    route(Post, "/v1/swarms/{swarm}/contradictions/{contradiction_id}/resolve", Op::Resolve, "Resolve a contradiction")
        .body(of::<ResolveBody>)
        .answer(of::<Resolved>),
    route(Post, "/v1/swarms/{swarm}/purge", Op::Purge, "Erase memories from projections and snapshots")
        .body(of::<PurgeBody>)
        .answer(of::<PurgeAnswer>),
];

/// The `{name}` parameters of a path, in order.
pub fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}
