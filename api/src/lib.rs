//! Mneme's wire contract: what crosses HTTP and NATS, in both directions.
//!
//! The server answers with these types and the CLI, the tools and the
//! tests read them back with the same types, so that a field renamed on
//! one side fails to compile on the other instead of reading `null`.
//!
//! - [`params`]: every request's parameters and body, with the limits and
//!   checks they pass before any memory is asked.
//! - [`error`]: the one error body of every endpoint and transport.
//! - [`log`]: answers about the swarm's log (accepted events, pages of
//!   events, dead letters, agents, provenance).
//! - [`memory`]: answers about one agent's memory (search, graph, items,
//!   digest, replay).
//! - [`context`]: budgeted context and phases.
//! - [`consolidation`]: consolidation runs, contradictions, purges.
//! - [`handoffs`]: handoffs as their recipients read and acknowledge them.
//! - [`query`]: the typed inputs of the other queries (graph, items,
//!   provenance, phases, timeline) and the names they take (item states,
//!   phase levels).
//! - [`search`]: the one search request, from the caller's input to what
//!   the memory searches with (modes, filters, retrieval weights).
//! - [`routes`]: the HTTP route table, by type; [`openapi`]: the OpenAPI
//!   document and the JSON Schema of every body, generated from it.
//!
//! No IO, no HTTP framework, no projection crate: the fuzz target
//! `fuzz/fuzz_targets/query_params.rs` links this crate alone.

pub mod agent_memory;
mod check;
pub mod consolidation;
pub mod context;
pub mod error;
pub mod handoffs;
pub mod log;
pub mod memory;
pub mod openapi;
pub mod params;
pub mod query;
pub mod routes;
pub mod search;

pub use error::{ErrorBody, ErrorDetail};
