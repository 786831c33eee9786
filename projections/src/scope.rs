//! Which events reach which memories: the scope rule every memory, the
//! swarm's graph and the feed that routes the log apply alike.

use std::collections::BTreeSet;

use mneme_events::{Event, EventKind, Scope};

use crate::render;

/// Whether `event` changes the memory of `viewer`: its own events always;
/// another agent's when they are not private, come from an admitted agent
/// (`admitted`, `None`: every agent) and say something. Events without
/// content (forget, purge, merge, pin, cite, decay, link, consolidation
/// verdicts, phase summaries) manage their author's own memory: applied
/// elsewhere they would let one agent erase or reshape every other
/// agent's memory, private items included. One exception: the deep
/// vectors of an agent's shared items (`embeddings_computed`, not private)
/// reach every memory its shared items reach, and a memory applies a
/// vector only to an item of the event's author (see `memory/deep.rs`).
/// [`AgentMemory::apply`](crate::AgentMemory::apply) decides by this, and
/// so does whoever routes the log to memories.
pub fn enters_memory_of(viewer: &str, admitted: Option<&BTreeSet<String>>, event: &Event) -> bool {
    event.agent == viewer
        || (sees_event_of_another(admitted, event)
            && (render::carries_content(&event.kind) || matches!(event.kind, EventKind::EmbeddingsComputed(_))))
}

pub(crate) fn sees_event_of_another(admitted: Option<&BTreeSet<String>>, event: &Event) -> bool {
    scope_reaches(admitted, &event.agent, event.scope)
}

/// Whether what `author` said in `scope` reaches other agents' memories:
/// not private, and from an admitted agent (`admitted`, `None`: every
/// agent). For readers that hold an event's stub rather than the event
/// (an erased record's place in the timeline).
pub fn scope_reaches(admitted: Option<&BTreeSet<String>>, author: &str, scope: Scope) -> bool {
    scope != Scope::Private && admitted.is_none_or(|admitted| admitted.contains(author))
}
