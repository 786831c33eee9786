//! `AgentMemory`: everything one agent remembers, as a pure function of the
//! events applied to it in log order.
//!
//! Events that change items already held (states, pins, merges, resolved
//! contradictions, purges) are applied in `changes.rs`; the memory's digest
//! is computed in `digest.rs`.

mod changes;
mod contradictions;
mod deep;
mod digest;
mod handoffs;
mod indexes;
pub(crate) mod items;
mod snapshot;

use std::collections::{BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use mneme_events::{Event, EventId, EventKind, HandoffBundle};

use crate::chunks::Changes;
use crate::core::CoreState;
use crate::error::ProjectionError;
use crate::graph::{FactGraph, GraphQuery, GraphView, Holding, Subgraph, SwarmGraph};
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::phases::PhaseTracker;
use crate::render;
use crate::scope::{enters_memory_of, sees_event_of_another};
use crate::shared::{MemoryRegistration, SharedContent};
use crate::working::WorkingTier;
use mneme_index::embed::embedded_text;
use mneme_index::embed::{Embedder, HashedNgramEmbedder};
use mneme_index::vector::QuantizedVector;
use mneme_index::{Bm25Index, TextIndex};

pub use changes::{ErasedByPurge, Purgeable};
pub use contradictions::{Contradictions, OpenContradiction, ResolvedContradiction};
pub(crate) use handoffs::SentBundle;
pub use handoffs::{HandoffRecord, Handoffs, handoff_bundle, handoff_tasks};
pub use indexes::{Indexes, PhaseDocument, PhaseDocuments};
pub(crate) use indexes::{restore_graph, save_graphs};
pub use items::Items;
use items::SeenId;

/// How an agent's memory is shaped. Part of the snapshot: a snapshot taken
/// under another configuration or embedding model is refused and rebuilt
/// from the log.
#[derive(Clone)]
pub struct MemoryConfig {
    /// Token budget of the working tier (recent turns).
    pub working_tier_tokens: usize,
    /// Longest a single turn may be in the working tier, in tokens.
    pub working_item_max_tokens: usize,
    /// Embeds items for the vector index; its model id enters the digest.
    pub embedder: Arc<dyn Embedder>,
    /// The deep model whose recorded vectors (`embeddings_computed`) the
    /// memory applies and queries are embedded by; `None`: no deep tier,
    /// and such events change nothing. The memory never runs it on an
    /// item: the enricher does, off the write path (see `deep.rs`).
    pub deep_embedder: Option<Arc<dyn Embedder>>,
    /// Tool outputs longer than this many bytes stay whole only in the log;
    /// the item keeps their head, their error lines, their tail and a
    /// pointer to the event.
    pub large_output_bytes: usize,
    /// Besides its own agent, whose `shared` and `system` events this memory
    /// takes in; `None`: every agent's. Another agent's `private` events
    /// never enter it. See [`AgentMemory::apply`].
    pub admitted_agents: Option<BTreeSet<String>>,
    /// The budget of the context bundle this memory assembles, as of the
    /// moment it applies them, for the handoffs its agent sends.
    pub handoff_bundle_tokens: usize,
    /// What the memories of a swarm hold once for all: the full-text index
    /// they write to (each searches only its own documents, see
    /// [`TextIndex`]), and the text, document and vector of each shared
    /// event (see [`SharedContent`]). Clones of a configuration share it;
    /// not part of the memory's shape.
    pub shared: Arc<SharedContent>,
    /// Where the vector graphs of this swarm's memories are saved beside
    /// their snapshots (`None`: nowhere, they are built again after a
    /// restore); not part of the memory's shape.
    pub vector_graphs: Option<PathBuf>,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            working_tier_tokens: 2000,
            working_item_max_tokens: 400,
            embedder: Arc::new(HashedNgramEmbedder::default()),
            deep_embedder: None,
            large_output_bytes: 16 * 1024,
            admitted_agents: None,
            handoff_bundle_tokens: 2000,
            shared: SharedContent::new(
                TextIndex::new().expect("an empty in-RAM index can be created"),
                HashedNgramEmbedder::default().dimensions(),
            ),
            vector_graphs: None,
        }
    }
}

impl MemoryConfig {
    /// This configuration, with content of its own if its shared content
    /// is of other dimensions than its embedder's (a configuration whose
    /// embedder was changed after its content was made): vectors of two
    /// models cannot be compared.
    pub(crate) fn fitted(self) -> MemoryConfig {
        if self.shared.dimensions() == self.embedder.dimensions() { self } else { self.with_fresh_shared_content() }
    }

    /// This configuration with `deep` as its deep model.
    pub fn with_deep_embedder(mut self, deep: Option<Arc<dyn Embedder>>) -> MemoryConfig {
        self.deep_embedder = deep;
        self
    }

    /// The deep model's id, if there is one.
    pub fn deep_model_id(&self) -> Option<&str> {
        self.deep_embedder.as_deref().map(|deep| deep.model_id())
    }

    /// Gives this configuration (and its clones) content of its own, for
    /// memories of another swarm or another shape.
    pub fn with_fresh_shared_content(mut self) -> MemoryConfig {
        self.shared = SharedContent::with_vector_graph(
            TextIndex::new().expect("an empty in-RAM index can be created"),
            self.embedder.dimensions(),
            self.shared.vector_graph(),
        );
        self
    }
}

impl std::fmt::Debug for MemoryConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryConfig")
            .field("working_tier_tokens", &self.working_tier_tokens)
            .field("working_item_max_tokens", &self.working_item_max_tokens)
            .field("embedder", &self.embedder.model_id())
            .field("deep_embedder", &self.deep_model_id())
            .field("large_output_bytes", &self.large_output_bytes)
            .field("admitted_agents", &self.admitted_agents)
            .field("handoff_bundle_tokens", &self.handoff_bundle_tokens)
            .finish()
    }
}

impl PartialEq for MemoryConfig {
    fn eq(&self, other: &MemoryConfig) -> bool {
        self.working_tier_tokens == other.working_tier_tokens
            && self.working_item_max_tokens == other.working_item_max_tokens
            && self.embedder.model_id() == other.embedder.model_id()
            && self.deep_model_id() == other.deep_model_id()
            && self.large_output_bytes == other.large_output_bytes
            && self.admitted_agents == other.admitted_agents
            && self.handoff_bundle_tokens == other.handoff_bundle_tokens
    }
}

/// The fact graph as one memory sees it (see [`AgentMemory::graph`]).
pub struct MemoryGraph<'a> {
    own: &'a FactGraph,
    shared: parking_lot::RwLockReadGuard<'a, SwarmGraph>,
    through: u64,
    unheld: &'a BTreeSet<u64>,
}

impl<'a> MemoryGraph<'a> {
    /// The graph of a memory's parts: `own` and the swarm's of `shared`,
    /// seen up to `through` but for `unheld`.
    pub(crate) fn of(
        own: &'a FactGraph,
        shared: &'a SharedContent,
        through: u64,
        unheld: &'a BTreeSet<u64>,
    ) -> MemoryGraph<'a> {
        MemoryGraph { own, shared: shared.graph(), through, unheld }
    }

    /// The joined graph, to query.
    pub fn view(&self) -> GraphView<'_> {
        GraphView::new(
            self.own,
            self.shared.graph(),
            self.shared.through(),
            Holding { through: self.through, unheld: self.unheld },
        )
    }

    /// As of the event at `seq`, being applied: the swarm's events up to it.
    pub(crate) fn through(mut self, seq: u64) -> Self {
        self.through = self.through.max(seq);
        self
    }
}

/// An entity given by id (`file:src/lib.rs`) or by name (`src/lib.rs`).
pub(crate) fn resolve_entity(view: &GraphView<'_>, entity: &str) -> Vec<String> {
    if view.node(entity).is_some() {
        return vec![entity.to_string()];
    }
    view.entities_in_text(entity)
}

/// What applying one event did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppliedEvent {
    /// The event changed the memory (or was recorded as seen).
    Applied,
    /// An event with this id was applied before at `original_seq` (it was
    /// re-published after the log's dedup window); nothing changed but the
    /// checkpoint.
    DuplicateId { original_seq: u64 },
    /// An event with this id but other content was applied at
    /// `original_seq`: an id is its publisher's promise that the content is
    /// the same, so this one is refused (and dead-lettered), and nothing
    /// changed but the checkpoint.
    ConflictingDuplicate { original_seq: u64 },
    /// Another agent's event this memory may not see (private, or from an
    /// agent not admitted): nothing changed but the checkpoint.
    NotVisible,
}

/// The memory of one agent of one swarm: its components, and the routing
/// of each event to them. Read through the accessors below; queries are
/// functions over `&AgentMemory` outside this module.
pub struct AgentMemory {
    swarm: String,
    agent: String,
    config: MemoryConfig,
    /// The highest seq applied (or skipped); events at or below it are refused.
    checkpoint: u64,
    items: Items,
    working: WorkingTier,
    indexes: Indexes,
    /// The graph of what only this memory holds: its agent's private
    /// events, and what its verdicts changed of the swarm's graph (see
    /// [`AgentMemory::graph`]).
    graph: FactGraph,
    /// Events of the swarm's graph at or below the checkpoint that this
    /// memory does not hold: purged, or refused as a repeated id. Derived
    /// from the items (rebuilt on restore); usually empty.
    unheld_shared: BTreeSet<u64>,
    phases: PhaseTracker,
    contradictions: Contradictions,
    handoffs: Handoffs,
    /// Core memory as the log made it (see `core.rs`).
    core: CoreState,
    /// Which chunks of the snapshot changed since it was last saved.
    changes: Changes,
    /// The retractions (see `superseded.rs`) as last derived, with what
    /// they were derived from.
    retractions: Mutex<Option<(RetractionsVersion, Retractions)>>,
    /// This memory counted among the swarm's while it lives.
    _registration: MemoryRegistration,
}

/// Each retracted assertion's item id → the retraction's (see
/// `superseded.rs`).
pub(crate) type Retractions = Arc<HashMap<String, String>>;

/// What the retractions were derived from: the closed-edge versions of the
/// memory's graph and of the swarm's, how far the memory sees the swarm's,
/// and how many of its events it does not hold.
pub(crate) type RetractionsVersion = (u64, u64, u64, usize);

/// The first 8 bytes of the SHA-256 of what an event says
/// ([`Event::content_json`]: everything but its time and schema version):
/// equal for a repeat of the event, different, but for a 2^-64 chance, for
/// anything else published under its id.
pub(crate) fn content_fingerprint(event: &Event) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(event.content_json().as_bytes());
    u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 digest has 32 bytes"))
}

impl AgentMemory {
    pub fn new(swarm: &str, agent: &str, config: MemoryConfig) -> Result<AgentMemory, ProjectionError> {
        let config = config.fitted();
        let bm25 = Bm25Index::new(config.shared.text_index().clone(), Some(config.shared.owner()), agent);
        Ok(AgentMemory::with_text_index(swarm, agent, config, bm25))
    }

    /// An empty memory with its view of the text index; `config` is
    /// [`MemoryConfig::fitted`].
    fn with_text_index(swarm: &str, agent: &str, config: MemoryConfig, bm25: Bm25Index) -> AgentMemory {
        AgentMemory {
            swarm: swarm.to_string(),
            agent: agent.to_string(),
            checkpoint: 0,
            items: Items::default(),
            working: WorkingTier::new(config.working_tier_tokens, config.working_item_max_tokens),
            indexes: Indexes::new(
                bm25,
                config.embedder.dimensions(),
                config.deep_embedder.as_ref().map_or(0, |deep| deep.dimensions()),
                config.shared.vector_graph(),
            ),
            graph: FactGraph::new(),
            unheld_shared: BTreeSet::new(),
            phases: PhaseTracker::default(),
            contradictions: Contradictions::default(),
            handoffs: Handoffs::default(),
            core: CoreState::default(),
            changes: Changes::everything(),
            retractions: Mutex::new(None),
            _registration: config.shared.register(agent),
            config,
        }
    }

    pub fn swarm(&self) -> &str {
        &self.swarm
    }

    /// Whether this memory was restored with its documents taken over from
    /// the text index on disk.
    pub fn reused_text_index(&self) -> bool {
        self.indexes.text_reused()
    }

    pub fn agent(&self) -> &str {
        &self.agent
    }

    pub fn config(&self) -> &MemoryConfig {
        &self.config
    }

    /// The highest sequence applied or skipped.
    pub fn checkpoint(&self) -> u64 {
        self.checkpoint
    }

    pub fn item_count(&self) -> usize {
        self.items.len()
    }

    pub fn item(&self, item_id: &str) -> Option<&MemoryItem> {
        self.items.by_id(item_id)
    }

    /// The item created by the event at `seq`.
    pub fn item_at(&self, seq: u64) -> Option<&MemoryItem> {
        self.items.get(seq)
    }

    /// The items, in log order, with what answers for them.
    pub fn items(&self) -> &Items {
        &self.items
    }

    /// The working tier: the agent's recent turns.
    pub(crate) fn working(&self) -> &WorkingTier {
        &self.working
    }

    /// The BM25 and vector indexes of this memory's own items, and its
    /// phases' documents.
    pub fn indexes(&self) -> &Indexes {
        &self.indexes
    }

    /// The events behind an item, a graph node or a graph edge, in log
    /// order: the one that created it and every one that changed it.
    /// Forgotten items keep their provenance.
    pub fn provenance_of(&self, item_id: &str) -> Option<Vec<ProvenanceRef>> {
        if let Some(item) = self.item(item_id) {
            return Some(item.provenance.clone());
        }
        let graph = self.graph();
        let view = graph.view();
        if let Some(node) = view.node(item_id) {
            return Some(node.provenance);
        }
        view.edge(item_id).map(|edge| edge.provenance)
    }

    /// The fact graph around an entity given by id or name; `None` when the
    /// memory knows no such entity.
    pub fn neighbourhood(&self, query: &GraphQuery) -> Option<Subgraph> {
        let graph = self.graph();
        let view = graph.view();
        let entity = resolve_entity(&view, &query.entity).into_iter().next()?;
        view.neighbourhood(&GraphQuery { entity, ..query.clone() })
    }

    /// The fact graph as this memory sees it: its own joined with the
    /// swarm's, read under the swarm graph's lock while the value lives.
    pub fn graph(&self) -> MemoryGraph<'_> {
        MemoryGraph::of(&self.graph, &self.config.shared, self.checkpoint, &self.unheld_shared)
    }

    /// This memory's own graph (private events and verdicts).
    pub fn own_graph(&self) -> &FactGraph {
        &self.graph
    }

    /// How many events of the swarm's graph this memory does not hold.
    pub(crate) fn unheld_shared_count(&self) -> usize {
        self.unheld_shared.len()
    }

    /// Phases, their task roll-ups and the session summary.
    pub fn phases(&self) -> &PhaseTracker {
        &self.phases
    }

    /// The contradictions reported, open and settled.
    pub fn contradictions(&self) -> &Contradictions {
        &self.contradictions
    }

    /// Contradictions not yet resolved, by id.
    pub fn open_contradictions(&self) -> impl Iterator<Item = &OpenContradiction> {
        self.contradictions.open()
    }

    /// An open contradiction by id.
    pub fn open_contradiction(&self, contradiction_id: &str) -> Option<&OpenContradiction> {
        self.contradictions.open_one(contradiction_id)
    }

    /// Contradictions settled, by id.
    pub fn resolved_contradictions(&self) -> impl Iterator<Item = &ResolvedContradiction> {
        self.contradictions.resolved()
    }

    /// The handoffs this agent received, pending ones first, each group in
    /// the order they were received.
    pub fn handoffs(&self) -> Vec<&HandoffRecord> {
        self.handoffs.received()
    }

    pub fn handoff(&self, handoff_id: EventId) -> Option<&HandoffRecord> {
        self.handoffs.record(handoff_id)
    }

    /// The context bundle of a handoff this memory's agent sent, as it was
    /// assembled when the `handoff_sent` was applied, with that event's
    /// seq; `None` for a handoff this memory has not applied (or one of
    /// another agent).
    pub fn sent_bundle(&self, handoff_id: EventId) -> Option<(u64, &HandoffBundle)> {
        self.handoffs.sent_bundle(handoff_id)
    }

    /// The core state as the log made it.
    pub fn core_state(&self) -> &CoreState {
        &self.core
    }

    /// The retractions as last derived (see `superseded.rs`).
    pub(crate) fn retractions_cache(&self) -> &Mutex<Option<(RetractionsVersion, Retractions)>> {
        &self.retractions
    }

    /// Applies the event at `seq`. Refuses a seq at or below the checkpoint,
    /// so redelivery cannot apply anything twice.
    ///
    /// A memory is what its agent may see of the swarm's log: all of its own
    /// events, and the `shared` and `system` events of the other (admitted)
    /// agents. Those become items, facts and changes here as they do in
    /// their author's memory, but not turns of this agent's working tier;
    /// they enter its phases only as events of a task it opened a phase
    /// for, and form the other agents' shared phases (see
    /// [`PhaseTracker`](crate::phases::PhaseTracker)). Scope is thereby
    /// enforced for every query that reads this memory: nothing private to
    /// another agent is in it.
    pub fn apply(&mut self, seq: u64, event: &Event) -> Result<AppliedEvent, ProjectionError> {
        self.check_sequence(seq)?;
        if event.swarm != self.swarm {
            return Err(ProjectionError::WrongOwner {
                swarm: event.swarm.clone(),
                agent: event.agent.clone(),
                expected_swarm: self.swarm.clone(),
                expected_agent: self.agent.clone(),
            });
        }
        let own = event.agent == self.agent;
        // Every record drives the swarm's graph, this memory's or not (a
        // purge by another agent erases there too); the feed has done it
        // already when there is one.
        let shared_touched = self.config.shared.drive_graph(seq, event, self.config.admitted_agents.as_ref());
        if !enters_memory_of(&self.agent, self.config.admitted_agents.as_ref(), event) {
            self.checkpoint = seq;
            return Ok(AppliedEvent::NotVisible);
        }
        let rendered = render::render(event, self.config.large_output_bytes);
        let fingerprint = content_fingerprint(event);
        if let Some(seen) = self.items.seen(&event.id) {
            if self.goes_to_swarm_graph(event) {
                // Another memory may apply it there: not this one's.
                self.unheld_shared.insert(seq);
            }
            self.checkpoint = seq;
            return Ok(if seen.fingerprint == fingerprint {
                AppliedEvent::DuplicateId { original_seq: seen.seq }
            } else {
                AppliedEvent::ConflictingDuplicate { original_seq: seen.seq }
            });
        }
        if let EventKind::EmbeddingsComputed(computed) = &event.kind {
            // Derived data about items, not work: no phase, graph or core
            // memory sees it, and it is no item's provenance.
            self.apply_embeddings(event, computed);
            self.items.see(event.id, SeenId { seq, fingerprint });
            self.changes.seen(seq);
            self.checkpoint = seq;
            return Ok(AppliedEvent::Applied);
        }
        let provenance = ProvenanceRef { seq, event_id: event.id };
        let touched = if self.goes_to_swarm_graph(event) {
            shared_touched
        } else {
            self.graph.apply(seq, event);
            self.graph.take_touched()
        };
        self.phases.observe(seq, event, own, &touched, rendered.as_deref());
        match rendered {
            Some(text) => self.remember(seq, event, text)?,
            None => self.apply_change(provenance, event)?,
        }
        if own {
            match &event.kind {
                EventKind::HandoffReceived(received) => self.handoffs.observe_received(received, provenance),
                EventKind::HandoffAcknowledged(acknowledged) => {
                    self.handoffs.observe_acknowledged(acknowledged.handoff_id, provenance)
                }
                EventKind::HandoffSent(sent) => {
                    let bundle = handoffs::bundle_when_sent(self, seq, event, sent);
                    self.handoffs.observe_sent(event.id, bundle);
                }
                _ => {}
            }
        }
        self.core.observe(seq, event, own);
        self.items.see(event.id, SeenId { seq, fingerprint });
        self.changes.seen(seq);
        self.checkpoint = seq;
        Ok(AppliedEvent::Applied)
    }

    /// Whether the event is extracted into the swarm's graph (a shared or
    /// system event that says something) rather than this memory's own.
    pub(crate) fn goes_to_swarm_graph(&self, event: &Event) -> bool {
        self.sees_event_of_another(event) && render::carries_content(&event.kind)
    }

    /// Whether an event of another agent enters this memory: not private,
    /// and from an admitted agent.
    pub fn sees_event_of_another(&self, event: &Event) -> bool {
        sees_event_of_another(self.config.admitted_agents.as_ref(), event)
    }

    /// Moves the checkpoint past a record that was dead-lettered instead of
    /// applied, so that replay and live agree on where they stand.
    pub fn skip(&mut self, seq: u64) -> Result<(), ProjectionError> {
        self.check_sequence(seq)?;
        self.checkpoint = seq;
        Ok(())
    }

    /// Moves the checkpoint to `seq` if it is behind: the log up to there
    /// held nothing more for this memory (what [`enters_memory_of`] keeps
    /// out changes nothing but the checkpoint).
    pub fn advance_to(&mut self, seq: u64) {
        self.checkpoint = self.checkpoint.max(seq);
    }

    fn check_sequence(&self, seq: u64) -> Result<(), ProjectionError> {
        if seq <= self.checkpoint {
            return Err(ProjectionError::AlreadyApplied { seq, checkpoint: self.checkpoint });
        }
        Ok(())
    }

    fn remember(&mut self, seq: u64, event: &Event, text: String) -> Result<(), ProjectionError> {
        let kind = event.kind_name();
        let own = event.agent == self.agent;
        let text = if self.sees_event_of_another(event) {
            // An event every agent sees: its text, document and vector are
            // the swarm's, held once. Another agent's item says whose it
            // is, in search and in context; the author reads it without.
            let prefix = format!("(from {}) ", event.agent);
            let embedder = self.config.embedder.clone();
            let entry = self.config.shared.acquire(
                seq,
                kind,
                || (format!("{prefix}{text}"), prefix.len()),
                |shared_text| QuantizedVector::of(&embedder.embed(embedded_text(shared_text))),
            )?;
            let bm25 = self.indexes.bm25_mut();
            self.config.shared.count_terms(seq, &entry, |terms| bm25.hold_shared(terms, entry.change, 1));
            ItemText::shared(entry, own)
        } else {
            // Its own private event (or its own, when the swarm does not
            // admit it): this memory's alone.
            let vector = self.config.embedder.embed(embedded_text(&text));
            self.indexes.add_own(seq, kind, &text, &vector)?;
            ItemText::from(text)
        };
        if own && render::is_turn(&event.kind) {
            self.working.push(seq, &text);
        }
        self.changes.item(seq);
        self.items.insert(MemoryItem {
            item_id: event.id.to_string(),
            seq,
            kind,
            agent: event.agent.clone(),
            scope: event.scope,
            ts: event.ts,
            correlation_id: event.correlation_id.clone(),
            importance: event.importance,
            text,
            state: ItemState::Active,
            pinned: false,
            retrievals: 0,
            citations: 0,
            ignored: 0,
            provenance: vec![ProvenanceRef { seq, event_id: event.id }],
        });
        Ok(())
    }

    /// Makes every applied item searchable: queries read what was
    /// committed, and refuse a memory with uncommitted items (see
    /// [`AgentMemory::is_committed`]). Cheap when nothing changed.
    pub fn commit(&mut self) -> Result<(), ProjectionError> {
        Ok(self.indexes.commit()?)
    }

    /// Whether every applied item is searchable.
    pub fn is_committed(&self) -> bool {
        self.indexes.is_committed()
    }

    /// Waits until the vector graphs' builders (this memory's, and the
    /// swarm's of shared items) have linked every sealed batch. Searches
    /// never wait: what a builder has not linked yet is scanned. For
    /// benchmarks and tests that measure the graphs.
    pub fn settle_vector_graphs(&mut self) {
        self.indexes.settle_vector_graphs();
        self.config.shared.settle_vector_graphs();
    }

    /// Saves the vector graphs that grew by a tenth since their last save
    /// (this memory's own, and the swarm's of shared items) into
    /// [`MemoryConfig::vector_graphs`]; returns how many vectors were
    /// written. A memory restored from a snapshot takes them back, so a
    /// restart does not link every vector again.
    pub fn save_vector_graphs(&self) -> Result<usize, ProjectionError> {
        let Some(directory) = self.config.vector_graphs.as_deref() else { return Ok(0) };
        Ok(self.indexes.save_vector_graphs(directory, &self.agent)?
            + self.config.shared.save_vector_graphs(directory)?)
    }

    /// How many vectors the graphs this memory searches hold (its own
    /// vectors', and the swarm's of shared items, static and deep).
    pub fn vectors_in_graphs(&self) -> usize {
        self.indexes.vectors_in_graphs() + self.config.shared.vectors_in_graphs()
    }

    /// The swarm's vectors of the shared items this memory holds, and
    /// others: searches filter by what the memory holds.
    pub(crate) fn shared_vectors(&self) -> std::sync::RwLockReadGuard<'_, mneme_index::VectorSet> {
        self.config.shared.vectors()
    }

    /// The swarm's deep vectors of shared items (`None`: none yet): a
    /// memory reads those of the items it took one for.
    pub(crate) fn shared_deep_vectors(&self) -> std::sync::RwLockReadGuard<'_, Option<mneme_index::VectorSet>> {
        self.config.shared.deep_vectors()
    }
}

impl Drop for AgentMemory {
    /// A memory that is gone (replaced by a restore, stopped, or a replay
    /// done with) no longer holds its shared items.
    fn drop(&mut self) {
        for item in self.items.iter().filter(|item| item.text.shared_entry().is_some()) {
            // Fails only when the index writer is broken, which the next
            // write reports to whoever makes it.
            let _ = self.config.shared.release(item.seq);
        }
    }
}

#[cfg(test)]
mod tests {
    use mneme_events::{DecodeLimits, decode_json};

    use super::content_fingerprint;

    /// Snapshots keep each applied id's fingerprint, so the fingerprint of
    /// an event must not change while a snapshot format lives: if the
    /// event's JSON form changes (a field, a number's form), restored
    /// memories would take repeats of old events for conflicting
    /// duplicates. This pins it: when it fails, bump `SNAPSHOT_FORMAT`
    /// and then the value here.
    #[test]
    fn the_content_fingerprint_is_pinned_for_the_snapshot_format() {
        let json = r#"{"id":"01KE9AECXV82AADA5PPPFVC093","swarm":"demo","agent":"coder","ts":"2026-01-06T09:33:09.947Z",
            "kind":"fact_asserted","importance":0.8,"correlation_id":"task-1",
            "data":{"subject":"ledger","predicate":"stored_in","object":"postgres","confidence":0.9}}"#;
        let event = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap();
        assert_eq!(crate::SNAPSHOT_FORMAT, 21);
        assert_eq!(content_fingerprint(&event), 13_491_389_704_495_008_909);
    }
}
