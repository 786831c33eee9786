//! The questions a memory actor answers: one type per question, each with
//! its own answer, sent as [`Ask`]`<Q>`. A caller gets the answer's type
//! back, so nothing matches on a variant it did not ask for.
//!
//! ```text
//!  service / feed / router / consolidator / eraser
//!        │ Ask(Search(request))           ▲ Vec<SearchHit>
//!        ▼                                │
//!  MemoryActor ── catch up the checkpoint, span, time (mneme_query_seconds{verb}) ── Q::answer
//! ```
//!
//! Queries read what was committed: the two that search (`Search`,
//! `Context`) commit what was applied first, on the write side.

use actix::prelude::*;
use mneme_events::{EventId, HandoffBundle};
use mneme_projections::consolidation::ConsolidationView;
use mneme_projections::graph::{GraphQuery, Subgraph};
use mneme_projections::phases::{Phase, TaskSummary};
use mneme_projections::{
    ContextRequest, ContextResponse, CoreMemory, CoreRequest, ErasedByPurge, HandoffRecord, ItemCounts, ItemPage,
    ListedItems, MemoryItem, OpenContradiction, ProvenanceRef, Purgeable, ResolvedContradiction, SearchHit,
    SearchRequest,
};

use super::MemoryActor;
use crate::error::ActorsError;

/// A read-only question to an agent's memory, and how the actor answers it.
pub trait MemoryQuery: Send + 'static {
    type Answer: Send + 'static;
    /// The `verb` label of `mneme_query_seconds`.
    const VERB: &'static str;
    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError>;
}

/// Asks a memory actor `Q`: the message of every query, typed by it.
pub struct Ask<Q>(pub Q);

impl<Q: MemoryQuery> Message for Ask<Q> {
    type Result = Result<Q::Answer, ActorsError>;
}

impl<Q: MemoryQuery> Handler<Ask<Q>> for MemoryActor {
    type Result = Result<Q::Answer, ActorsError>;

    fn handle(&mut self, Ask(query): Ask<Q>, _: &mut Self::Context) -> Self::Result {
        self.catch_up_checkpoint();
        let span = tracing::debug_span!("query", agent = %self.memory.agent(), verb = Q::VERB);
        let _entered = span.enter();
        let started = std::time::Instant::now();
        let answer = query.answer(self)?;
        metrics::histogram!("mneme_query_seconds", "swarm" => self.memory.swarm().to_string(), "verb" => Q::VERB)
            .record(started.elapsed().as_secs_f64());
        Ok(answer)
    }
}

/// A search; the hits' items count as retrieved.
pub struct Search(pub SearchRequest);

impl MemoryQuery for Search {
    type Answer = Vec<SearchHit>;
    const VERB: &'static str = "search";

    fn answer(self, actor: &mut MemoryActor) -> Result<Vec<SearchHit>, ActorsError> {
        actor.memory.commit()?;
        let hits = mneme_projections::search(&actor.memory, &self.0)?;
        actor.count_retrievals(hits.iter().map(|hit| hit.item_id.as_str()));
        Ok(hits)
    }
}

/// Budgeted context; the items it holds count as retrieved.
pub struct Context(pub ContextRequest);

impl MemoryQuery for Context {
    type Answer = ContextResponse;
    const VERB: &'static str = "context";

    fn answer(self, actor: &mut MemoryActor) -> Result<ContextResponse, ActorsError> {
        actor.memory.commit()?;
        let response = mneme_projections::context(&actor.memory, &self.0)?;
        let memory = &actor.memory;
        let items: Vec<String> = response
            .items
            .iter()
            .filter(|item| memory.item(&item.item_id).is_some())
            .map(|item| item.item_id.clone())
            .collect();
        actor.count_retrievals(items.iter().map(String::as_str));
        Ok(response)
    }
}

/// Where the memory stands.
pub struct Status;

impl MemoryQuery for Status {
    type Answer = AgentStatus;
    const VERB: &'static str = "status";

    fn answer(self, actor: &mut MemoryActor) -> Result<AgentStatus, ActorsError> {
        Ok(AgentStatus {
            agent: actor.memory.agent().to_string(),
            checkpoint: actor.memory.checkpoint(),
            snapshot_seq: actor.snapshot_seq,
            digest: actor.digest(),
            items: actor.memory.item_count(),
        })
    }
}

/// The events behind an item id; `None` if this memory does not hold it.
pub struct Provenance(pub String);

impl MemoryQuery for Provenance {
    type Answer = Option<Vec<ProvenanceRef>>;
    const VERB: &'static str = "provenance";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(actor.memory.provenance_of(&self.0))
    }
}

/// The fact graph around an entity; `None` if the memory knows no such
/// entity.
pub struct Graph(pub GraphQuery);

impl MemoryQuery for Graph {
    type Answer = Option<Subgraph>;
    const VERB: &'static str = "graph";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(actor.memory.neighbourhood(&self.0))
    }
}

/// Every phase, the task roll-ups and the session summary.
pub struct Phases;

impl MemoryQuery for Phases {
    type Answer = PhaseListing;
    const VERB: &'static str = "phases";

    fn answer(self, actor: &mut MemoryActor) -> Result<PhaseListing, ActorsError> {
        let tracker = actor.memory.phases();
        Ok(PhaseListing {
            phases: tracker.phases().to_vec(),
            shared_phases: tracker.shared_phases().to_vec(),
            tasks: tracker.tasks_newest_first().cloned().collect(),
            session_summary: tracker.session_summary().to_string(),
        })
    }
}

/// One phase by id.
pub struct OnePhase(pub String);

impl MemoryQuery for OnePhase {
    type Answer = Option<Box<Phase>>;
    const VERB: &'static str = "phase";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(actor.memory.phases().phase(&self.0).cloned().map(Box::new))
    }
}

/// A copy of what consolidation reads.
pub struct ConsolidationViewOf;

impl MemoryQuery for ConsolidationViewOf {
    type Answer = Box<ConsolidationView>;
    const VERB: &'static str = "consolidation_view";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(Box::new(mneme_projections::consolidation_view(&actor.memory)))
    }
}

/// Open and resolved contradictions.
pub struct Contradictions;

impl MemoryQuery for Contradictions {
    type Answer = ContradictionListing;
    const VERB: &'static str = "contradictions";

    fn answer(self, actor: &mut MemoryActor) -> Result<ContradictionListing, ActorsError> {
        Ok(ContradictionListing {
            open: actor.memory.open_contradictions().cloned().collect(),
            resolved: actor.memory.resolved_contradictions().cloned().collect(),
        })
    }
}

/// How many items are in each state, the item if one is named, and a page
/// of items if one is asked for.
#[derive(Debug, Clone, Default)]
pub struct Items {
    pub item_id: Option<String>,
    pub page: Option<ItemPage>,
}

impl MemoryQuery for Items {
    type Answer = ItemListing;
    const VERB: &'static str = "items";

    fn answer(self, actor: &mut MemoryActor) -> Result<ItemListing, ActorsError> {
        let memory = &actor.memory;
        Ok(ItemListing {
            counts: mneme_projections::state_counts(memory),
            page: self.page.map(|page| mneme_projections::item_page(memory, &page)).unwrap_or_default(),
            superseded_by: self
                .item_id
                .as_deref()
                .and_then(|item_id| mneme_projections::superseded_by(memory, item_id)),
            item: self.item_id.and_then(|item_id| memory.item(&item_id).cloned()),
        })
    }
}

/// The handoffs this agent received, pending first.
pub struct Handoffs;

impl MemoryQuery for Handoffs {
    type Answer = Vec<HandoffRecord>;
    const VERB: &'static str = "handoffs";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(actor.memory.handoffs().into_iter().cloned().collect())
    }
}

/// The context bundle of a handoff this agent sent, by the id of its
/// `handoff_sent`, as assembled when the memory applied it (see
/// `AgentMemory::sent_bundle`), with the seq it was assembled at; `None`:
/// this memory has not applied that handoff of its agent.
pub struct SentBundle(pub EventId);

impl MemoryQuery for SentBundle {
    type Answer = Option<(u64, HandoffBundle)>;
    const VERB: &'static str = "handoff_bundle";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(actor.memory.sent_bundle(self.0).map(|(seq, bundle)| (seq, bundle.clone())))
    }
}

/// Core memory, with the role and block limit the configuration gives.
pub struct Core(pub CoreRequest);

impl MemoryQuery for Core {
    type Answer = Box<CoreMemory>;
    const VERB: &'static str = "core";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(Box::new(mneme_projections::core_memory(&actor.memory, &self.0)))
    }
}

/// What the purge at this seq erased, once applied (for the eraser).
pub struct ErasedBy(pub u64);

impl MemoryQuery for ErasedBy {
    type Answer = ErasedByPurge;
    const VERB: &'static str = "erased_by";

    fn answer(self, actor: &mut MemoryActor) -> Result<ErasedByPurge, ActorsError> {
        Ok(actor.memory.erased_by(self.0))
    }
}

/// Whether each item id names something a purge of this memory erases,
/// and whether one did already; per item id asked, in order.
pub struct PurgeableItems(pub Vec<String>);

impl MemoryQuery for PurgeableItems {
    type Answer = Vec<Option<Purgeable>>;
    const VERB: &'static str = "purgeable";

    fn answer(self, actor: &mut MemoryActor) -> Result<Self::Answer, ActorsError> {
        Ok(self.0.iter().map(|item_id| actor.memory.purgeable(item_id)).collect())
    }
}

/// The contradictions of one memory.
#[derive(Debug, Clone)]
pub struct ContradictionListing {
    pub open: Vec<OpenContradiction>,
    pub resolved: Vec<ResolvedContradiction>,
}

/// Item counts by state, and one item or a page of items when asked for.
#[derive(Debug, Clone)]
pub struct ItemListing {
    /// Items per state, and pinned.
    pub counts: ItemCounts,
    /// The page asked for; empty when none was.
    pub page: ListedItems,
    pub item: Option<MemoryItem>,
    /// What superseded `item` (`AgentMemory::superseded_by`).
    pub superseded_by: Option<String>,
}

/// The phases of one memory, as [`Phases`] answers.
#[derive(Debug, Clone)]
pub struct PhaseListing {
    /// The agent's own phases.
    pub phases: Vec<Phase>,
    /// Other agents' shared phases, as this memory sees them.
    pub shared_phases: Vec<Phase>,
    /// Task roll-ups, the most recently completed first.
    pub tasks: Vec<TaskSummary>,
    pub session_summary: String,
}

/// Where an agent's memory stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentStatus {
    pub agent: String,
    pub checkpoint: u64,
    pub snapshot_seq: u64,
    pub digest: String,
    pub items: usize,
}

/// What waits in this memory for a deep vector (for the enricher).
pub struct AwaitingDeep {
    /// Items after this seq only.
    pub after: u64,
    pub limit: usize,
}

/// An item waiting for a deep vector: what the enricher embeds, and where
/// its vector is recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct DeepCandidate {
    pub seq: u64,
    pub event_id: EventId,
    /// Whose event created it: the author of the vector's event.
    pub author: String,
    /// Private to its author: its vector goes in a private event.
    pub private: bool,
    pub ts: mneme_events::Timestamp,
    /// The text its static vector embeds, cut as that one is.
    pub text: String,
}

/// The memory's share of the enrichment backlog, and the first items of
/// it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeepWork {
    /// The memory's own private items waiting.
    pub private_waiting: u64,
    /// The shared items (the swarm's) it holds that wait.
    pub shared_waiting: u64,
    pub items: Vec<DeepCandidate>,
}

impl MemoryQuery for AwaitingDeep {
    type Answer = DeepWork;
    const VERB: &'static str = "awaiting_deep";

    fn answer(self, actor: &mut MemoryActor) -> Result<DeepWork, ActorsError> {
        let memory = &actor.memory;
        let mut work = DeepWork::default();
        let (private, shared) = memory.deep_backlog_by_scope();
        work.private_waiting = private;
        work.shared_waiting = shared;
        work.items = memory
            .awaiting_deep(self.after, self.limit)
            .into_iter()
            .filter_map(|item| {
                Some(DeepCandidate {
                    seq: item.seq,
                    event_id: item.item_id.parse().ok()?,
                    author: item.agent.clone(),
                    private: !item.text.is_shared(),
                    ts: item.ts,
                    text: mneme_index::embed::embedded_text(item.text.indexed()).to_string(),
                })
            })
            .collect();
        Ok(work)
    }
}
