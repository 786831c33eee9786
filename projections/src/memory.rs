//! `AgentMemory`: everything one agent remembers, as a pure function of the
//! events applied to it in log order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use mneme_events::{
    ContradictionResolution, ContradictionResolved, Event, EventId, EventKind, HandoffBundle, MemoryPurged, Scope,
};

use crate::bm25::{Bm25Index, TextIndex};
use crate::digest::ContentHasher;
use crate::embed::{Embedder, HashedNgramEmbedder};
use crate::error::ProjectionError;
use crate::graph::{FactGraph, GraphQuery, GraphView, Holding, Subgraph, SwarmGraph};
use crate::handoffs::HandoffRecord;
use crate::item::{ItemState, ItemText, MemoryItem, ProvenanceRef};
use crate::phases::{PhaseTracker, PurgedEvent};
use crate::render;
use crate::retrieval::embedded_text;
use crate::shared::{MemoryRegistration, SharedContent};
use crate::snapshot::Changes;
use crate::superseded::{Retractions, RetractionsVersion};
use crate::vector::{QuantizedVector, VectorIndex};
use crate::working::WorkingTier;

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
}

impl Default for MemoryConfig {
    fn default() -> Self {
        MemoryConfig {
            working_tier_tokens: 2000,
            working_item_max_tokens: 400,
            embedder: Arc::new(HashedNgramEmbedder::default()),
            large_output_bytes: 16 * 1024,
            admitted_agents: None,
            handoff_bundle_tokens: 2000,
            shared: SharedContent::new(
                TextIndex::new().expect("an empty in-RAM index can be created"),
                HashedNgramEmbedder::default().dimensions(),
            ),
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

    /// Gives this configuration (and its clones) content of its own, for
    /// memories of another swarm or another shape.
    pub fn with_fresh_shared_content(mut self) -> MemoryConfig {
        self.shared = SharedContent::new(
            TextIndex::new().expect("an empty in-RAM index can be created"),
            self.embedder.dimensions(),
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

/// The memory of one agent of one swarm.
pub struct AgentMemory {
    pub(crate) swarm: String,
    pub(crate) agent: String,
    pub(crate) config: MemoryConfig,
    /// The highest seq applied (or skipped); events at or below it are refused.
    pub(crate) checkpoint: u64,
    /// Items by the seq of the event that created them.
    pub(crate) items: BTreeMap<u64, MemoryItem>,
    /// Every event id applied, with its seq and its content's fingerprint:
    /// ids are the dedup key, and the log only deduplicates within its
    /// window. The fingerprint tells a repeat of the event from a different
    /// event under the same id.
    pub(crate) seen_ids: HashMap<EventId, SeenId>,
    pub(crate) working: WorkingTier,
    /// Whether this memory, restored from a snapshot, took its documents
    /// over from the text index on disk (rather than indexing them again).
    pub(crate) text_reused: bool,
    pub(crate) bm25: Bm25Index,
    pub(crate) vectors: VectorIndex,
    /// The graph of what only this memory holds: its agent's private
    /// events, and what its verdicts changed of the swarm's graph (see
    /// [`AgentMemory::graph`]).
    pub(crate) graph: FactGraph,
    /// Events of the swarm's graph at or below the checkpoint that this
    /// memory does not hold: purged, or refused as a repeated id. Derived
    /// from the items (rebuilt on restore); usually empty.
    pub(crate) unheld_shared: BTreeSet<u64>,
    /// Items still in the BM25 and vector indexes that no search may
    /// return (forgotten, merged); searches over-fetch by this.
    pub(crate) hidden_count: usize,
    pub(crate) phases: PhaseTracker,
    /// Item seqs by kind, ascending: derived from `items`, rebuilt on
    /// restore. Context finds decisions and preferences without a scan.
    pub(crate) seqs_by_kind: HashMap<&'static str, Vec<u64>>,
    /// Contradictions reported by consolidation and not yet resolved, by id.
    pub(crate) open_contradictions: BTreeMap<String, OpenContradiction>,
    /// Contradictions settled, by id: consolidation does not report a
    /// settled pair again.
    pub(crate) resolved_contradictions: BTreeMap<String, ResolvedContradiction>,
    /// Handoffs this agent received, by the id of their `handoff_sent`.
    pub(crate) handoffs: BTreeMap<EventId, HandoffRecord>,
    /// The context bundle of each handoff this agent sent, by the id of its
    /// `handoff_sent`: assembled when the event is applied, so it holds what
    /// the agent knew when it handed off, however late the router asks.
    /// The seq is that of the `handoff_sent` the bundle was assembled at.
    pub(crate) sent_bundles: BTreeMap<EventId, (u64, HandoffBundle)>,
    /// The ids of `seen_ids` by seq, in the order they were applied (seq
    /// order): snapshots keep them in chunks by seq.
    pub(crate) seen_order: Vec<(u64, EventId)>,
    /// Which chunks of the snapshot changed since it was last saved.
    pub(crate) changes: Changes,
    /// The retractions (see `superseded.rs`) as last derived, with the
    /// graph's `closed_version` they were derived at.
    pub(crate) retractions: Mutex<Option<(RetractionsVersion, Retractions)>>,
    /// This memory counted among the swarm's while it lives.
    _registration: MemoryRegistration,
}

/// Whether `event` changes the memory of `viewer`: its own events always;
/// another agent's when they are not private, come from an admitted agent
/// (`admitted`, `None`: every agent) and say something. Events without
/// content (forget, purge, merge, pin, cite, decay, link, consolidation
/// verdicts, phase summaries) manage their author's own memory: applied
/// elsewhere they would let one agent erase or reshape every other
/// agent's memory, private items included. [`AgentMemory::apply`] decides
/// by this, and so does whoever routes the log to memories.
pub fn enters_memory_of(viewer: &str, admitted: Option<&BTreeSet<String>>, event: &Event) -> bool {
    event.agent == viewer || (sees_event_of_another(admitted, event) && render::carries_content(&event.kind))
}

pub(crate) fn sees_event_of_another(admitted: Option<&BTreeSet<String>>, event: &Event) -> bool {
    event.scope != Scope::Private && admitted.is_none_or(|admitted| admitted.contains(&event.agent))
}

/// An event id this memory applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct SeenId {
    pub(crate) seq: u64,
    /// [`content_fingerprint`] of the event applied under the id.
    pub(crate) fingerprint: u64,
}

/// The first 8 bytes of the SHA-256 of what an event says
/// ([`Event::content_json`]: everything but its time and schema version):
/// equal for a repeat of the event, different, but for a 2^-64 chance, for
/// anything else published under its id.
pub(crate) fn content_fingerprint(event: &Event) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(event.content_json().as_bytes());
    u64::from_be_bytes(digest[..8].try_into().expect("a SHA-256 digest has 32 bytes"))
}

/// A contradiction somebody settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedContradiction {
    pub contradiction_id: String,
    pub a: String,
    pub b: String,
    pub resolution: ContradictionResolution,
    /// The `contradiction_resolved` event.
    pub provenance: ProvenanceRef,
}

/// What is left of a contradiction's reason once a side is purged.
const PURGED_CONTRADICTION_REASON: &str = "(a side was purged)";

/// A contradiction between two items that nobody has resolved yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenContradiction {
    pub contradiction_id: String,
    /// The item ids of the two sides.
    pub a: String,
    pub b: String,
    pub reason: String,
    pub provenance: ProvenanceRef,
}

impl AgentMemory {
    pub fn new(swarm: &str, agent: &str, config: MemoryConfig) -> Result<AgentMemory, ProjectionError> {
        let config = config.fitted();
        let bm25 = Bm25Index::new(config.shared.text_index().clone(), Some(config.shared.owner()), agent);
        Ok(AgentMemory::with_text_index(swarm, agent, config, bm25))
    }

    /// An empty memory with its view of the text index; `config` is
    /// [`MemoryConfig::fitted`].
    pub(crate) fn with_text_index(swarm: &str, agent: &str, config: MemoryConfig, bm25: Bm25Index) -> AgentMemory {
        AgentMemory {
            swarm: swarm.to_string(),
            agent: agent.to_string(),
            checkpoint: 0,
            items: BTreeMap::new(),
            seen_ids: HashMap::new(),
            working: WorkingTier::new(config.working_tier_tokens, config.working_item_max_tokens),
            bm25,
            text_reused: false,
            vectors: VectorIndex::new(config.embedder.dimensions()),
            graph: FactGraph::new(),
            unheld_shared: BTreeSet::new(),
            hidden_count: 0,
            phases: PhaseTracker::default(),
            seqs_by_kind: HashMap::new(),
            open_contradictions: BTreeMap::new(),
            resolved_contradictions: BTreeMap::new(),
            handoffs: BTreeMap::new(),
            sent_bundles: BTreeMap::new(),
            seen_order: Vec::new(),
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
        self.text_reused
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
        self.item_seq(item_id).and_then(|seq| self.items.get(&seq))
    }

    /// The item created by the event at `seq`.
    pub fn item_at(&self, seq: u64) -> Option<&MemoryItem> {
        self.items.get(&seq)
    }

    /// Items in log order.
    pub fn items(&self) -> impl DoubleEndedIterator<Item = &MemoryItem> {
        self.items.values()
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

    /// Phases, their task roll-ups and the session summary.
    pub fn phases(&self) -> &PhaseTracker {
        &self.phases
    }

    /// Contradictions not yet resolved, by id.
    pub fn open_contradictions(&self) -> impl Iterator<Item = &OpenContradiction> {
        self.open_contradictions.values()
    }

    /// An open contradiction by id.
    pub fn open_contradiction(&self, contradiction_id: &str) -> Option<&OpenContradiction> {
        self.open_contradictions.get(contradiction_id)
    }

    /// Contradictions settled, by id.
    pub fn resolved_contradictions(&self) -> impl Iterator<Item = &ResolvedContradiction> {
        self.resolved_contradictions.values()
    }

    /// How many items are in each state.
    pub fn state_counts(&self) -> BTreeMap<&'static str, usize> {
        let mut counts: BTreeMap<&'static str, usize> =
            ItemState::ALL.iter().map(|state| (state.as_str(), 0)).collect();
        for item in self.items.values() {
            *counts.entry(item.state.as_str()).or_default() += 1;
        }
        counts
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
        if let Some(&seen) = self.seen_ids.get(&event.id) {
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
                EventKind::HandoffReceived(received) => self.record_handoff_received(received, provenance),
                EventKind::HandoffAcknowledged(acknowledged) => {
                    self.record_handoff_acknowledged(acknowledged.handoff_id, provenance)
                }
                EventKind::HandoffSent(sent) => self.record_handoff_sent(seq, event, sent),
                _ => {}
            }
        }
        self.seen_ids.insert(event.id, SeenId { seq, fingerprint });
        self.seen_order.push((seq, event.id));
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
            let bm25 = &mut self.bm25;
            self.config.shared.count_terms(seq, &entry, |terms| bm25.hold_shared(terms, entry.change, 1));
            ItemText::shared(entry, own)
        } else {
            // Its own private event (or its own, when the swarm does not
            // admit it): this memory's alone.
            self.bm25.add(seq, kind, &text)?;
            let vector = self.config.embedder.embed(embedded_text(&text));
            self.vectors.insert(seq, &vector);
            ItemText::from(text)
        };
        if own && render::is_turn(&event.kind) {
            self.working.push(seq, &text);
        }
        let item_id = event.id.to_string();
        self.changes.item(seq);
        self.seqs_by_kind.entry(kind).or_default().push(seq);
        self.items.insert(
            seq,
            MemoryItem {
                item_id,
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
            },
        );
        Ok(())
    }

    /// Events that change existing items rather than create one. An event
    /// naming an item this memory does not hold changes nothing: the item
    /// may belong to another agent; the event itself stays on the log.
    fn apply_change(&mut self, provenance: ProvenanceRef, event: &Event) -> Result<(), ProjectionError> {
        match &event.kind {
            EventKind::MemoryForgotten(forgotten) => {
                self.change_state(&forgotten.item_id, provenance, ItemState::Forgotten)
            }
            EventKind::MemoryArchived(archived) => {
                self.change_state(&archived.item_id, provenance, ItemState::Archived)
            }
            EventKind::MemoryDecayed(decayed) => self.change_state(&decayed.item_id, provenance, ItemState::Decayed),
            EventKind::MemoryCited(cited) => {
                if let Some(item) = self.item_mut(&cited.item_id) {
                    item.citations = item.citations.saturating_add(1);
                    item.provenance.push(provenance);
                    // Used again: a demoted memory is back in play.
                    if item.state == ItemState::Decayed {
                        item.state = ItemState::Active;
                    }
                }
            }
            EventKind::MemoryIgnored(ignored) => {
                if let Some(item) = self.item_mut(&ignored.item_id) {
                    item.ignored = item.ignored.saturating_add(1);
                    item.provenance.push(provenance);
                }
            }
            EventKind::MemoriesRetrieved(retrieved) => {
                for count in &retrieved.counts {
                    if let Some(item) = self.item_mut(&count.item_id) {
                        item.retrievals = item.retrievals.saturating_add(count.count);
                        item.provenance.push(provenance);
                    }
                }
            }
            EventKind::MemoryPinned(pinned) => self.set_pinned(&pinned.item_id, provenance, true),
            EventKind::MemoryUnpinned(unpinned) => self.set_pinned(&unpinned.item_id, provenance, false),
            EventKind::MemoriesMerged(merged) => self.merge(&merged.survivor, &merged.merged, provenance),
            EventKind::ContradictionDetected(detected) => {
                self.open_contradictions.insert(
                    detected.contradiction_id.clone(),
                    OpenContradiction {
                        contradiction_id: detected.contradiction_id.clone(),
                        a: detected.a.clone(),
                        b: detected.b.clone(),
                        reason: detected.reason.clone(),
                        provenance,
                    },
                );
            }
            EventKind::ContradictionResolved(resolved) => self.resolve_contradiction(resolved, provenance, event),
            EventKind::MemoryPurged(purged) => {
                let author = purged.of_agent.as_deref().unwrap_or(&event.agent).to_string();
                self.purge(purged, &author, provenance)?
            }
            // Compressed phases are the phase tracker's and links the
            // graph's; both were applied before this.
            _ => {}
        }
        Ok(())
    }

    /// The seq of the item whose id is exactly `item_id`. An item's id is
    /// its creating event's, so the applied ids find it: no map of item ids
    /// of its own (two copies of every id were 70 bytes an item).
    fn item_seq(&self, item_id: &str) -> Option<u64> {
        let id: EventId = item_id.parse().ok()?;
        let seq = self.seen_ids.get(&id)?.seq;
        self.items.get(&seq).is_some_and(|item| item.item_id == item_id).then_some(seq)
    }

    fn item_mut(&mut self, item_id: &str) -> Option<&mut MemoryItem> {
        let seq = self.item_seq(item_id)?;
        self.changes.item(seq);
        self.items.get_mut(&seq)
    }

    fn change_state(&mut self, item_id: &str, provenance: ProvenanceRef, new_state: ItemState) {
        let Some(item) = self.item_mut(item_id) else { return };
        item.provenance.push(provenance);
        // Forgetting, merging and purging are final; archiving a forgotten
        // item does not revive it.
        if item.state.is_final() || item.state == new_state {
            return;
        }
        // A pin holds whoever asks: a verdict scanned before the pin was
        // applied, or an agent's own forget, changes nothing until the item
        // is unpinned (a purge is not a state change and erases anyway).
        if item.pinned && new_state.removes_from_context() {
            return;
        }
        item.state = new_state;
        let seq = item.seq;
        self.working.remove(seq);
        // Hidden items stay in the BM25 and vector indexes and are filtered
        // out of results: a tantivy delete keeps counting in term statistics
        // until segments merge, so scores would depend on commit history and
        // replay would rank differently from live.
        if !new_state.is_searchable() {
            self.hidden_count += 1;
        }
    }

    fn set_pinned(&mut self, item_id: &str, provenance: ProvenanceRef, pinned: bool) {
        if let Some(item) = self.item_mut(item_id) {
            item.pinned = pinned;
            item.provenance.push(provenance);
        }
    }

    /// `memories_merged`: the merged items leave every query and the
    /// survivor answers for them, with the union of their provenance. A
    /// survivor this memory does not hold, or one no longer searchable,
    /// merges nothing: the merged items would vanish without an heir.
    fn merge(&mut self, survivor_id: &str, merged_ids: &[String], provenance: ProvenanceRef) {
        let Some(survivor_seq) = self.item_seq(survivor_id) else { return };
        if !self.items[&survivor_seq].state.is_searchable() {
            return;
        }
        let mut inherited: Vec<ProvenanceRef> = Vec::new();
        for merged_id in merged_ids {
            let Some(seq) = self.item_seq(merged_id) else { continue };
            let merged = &self.items[&seq];
            if seq == survivor_seq || merged.state.is_final() || merged.pinned {
                continue;
            }
            inherited.extend(self.items[&seq].provenance.iter().copied());
            self.change_state(merged_id, provenance, ItemState::Merged);
        }
        self.changes.item(survivor_seq);
        let survivor = self.items.get_mut(&survivor_seq).expect("the survivor's seq was just looked up");
        // The creating event stays first; what it inherits joins the events
        // that changed it, in log order.
        let created = survivor.creating_event();
        survivor.provenance.extend(inherited);
        survivor.provenance.push(provenance);
        survivor.provenance.retain(|reference| *reference != created);
        survivor.provenance.sort_unstable();
        survivor.provenance.dedup();
        survivor.provenance.insert(0, created);
    }

    /// `contradiction_resolved`: the contradiction is settled, and the
    /// losing side's fact or decision stops being valid at the resolution's
    /// time. `merged` keeps the newer side (`b`) and merges the older into
    /// it; `both_valid` closes nothing.
    fn resolve_contradiction(&mut self, resolved: &ContradictionResolved, provenance: ProvenanceRef, event: &Event) {
        let Some(open) = self.open_contradictions.remove(&resolved.contradiction_id) else { return };
        let losers: Vec<&str> = match resolved.resolution {
            ContradictionResolution::AWins => vec![open.b.as_str()],
            ContradictionResolution::BWins | ContradictionResolution::Merged => vec![open.a.as_str()],
            ContradictionResolution::BothValid => Vec::new(),
        };
        for loser in losers {
            let Some(item) = self.item(loser) else { continue };
            let created = item.creating_event();
            if self.config.shared.graph().graph().events.contains_key(&created.seq) && item.scope != Scope::Private {
                let shared = self.config.shared.graph();
                let holding = Holding { through: self.checkpoint, unheld: &self.unheld_shared };
                self.graph.close_shared_asserted(shared.graph(), created, event.ts, provenance.seq, event, &|seq| {
                    holding.holds(seq)
                });
            } else {
                self.graph.close_asserted_by(created, event.ts, provenance.seq, event);
            }
            if let Some(item) = self.item_mut(loser) {
                item.provenance.push(provenance);
            }
        }
        if resolved.resolution == ContradictionResolution::Merged {
            self.merge(&open.b, std::slice::from_ref(&open.a), provenance);
        }
        self.resolved_contradictions.insert(
            open.contradiction_id.clone(),
            ResolvedContradiction {
                contradiction_id: open.contradiction_id,
                a: open.a,
                b: open.b,
                resolution: resolved.resolution,
                provenance,
            },
        );
    }

    /// `memory_purged`: erases the named items, every item with an event
    /// time before `before`, and the near duplicates merged into any of
    /// them (they said the same thing), from memory: item text, working
    /// tier, what the fact graph extracted from their events (see
    /// `FactGraph::redact`), phase notes and levels (see
    /// `PhaseTracker::redact`), the reasons of contradictions they are a
    /// side of, and the BM25 and vector indexes (rebuilt without them, so
    /// that no posting or embedding of the text survives, and so that a
    /// replay, which rebuilds them the same way, ranks the same). Snapshots
    /// written from now on hold none of it; the log still holds the events
    /// (README, "Erasure").
    /// `author`: whose items `before` erases; another agent's items in this
    /// memory are theirs to erase, not this agent's.
    fn purge(&mut self, purged: &MemoryPurged, author: &str, provenance: ProvenanceRef) -> Result<(), ProjectionError> {
        let mut targets: Vec<u64> =
            purged.item_ids.iter().filter_map(|item_id| self.item_seq(item_id.trim())).collect();
        if let Some(before) = purged.before {
            targets.extend(
                self.items.values().filter(|item| item.ts < before && item.agent == author).map(|item| item.seq),
            );
        }
        let merged_into_targets: Vec<u64> = targets
            .iter()
            .flat_map(|seq| self.items[seq].provenance.iter().map(|reference| reference.seq))
            .filter(|seq| self.items.get(seq).is_some_and(|item| item.state == ItemState::Merged))
            .collect();
        targets.extend(merged_into_targets);
        targets.sort_unstable();
        targets.dedup();
        let mut erased: BTreeMap<u64, PurgedEvent> = BTreeMap::new();
        let mut erased_ids: BTreeSet<String> = BTreeSet::new();
        let mut released = Vec::new();
        for seq in targets {
            self.changes.item(seq);
            let item = self.items.get_mut(&seq).expect("targets are seqs of items");
            item.provenance.push(provenance);
            if item.state == ItemState::Purged {
                continue;
            }
            if item.state.is_searchable() {
                self.hidden_count += 1;
            }
            item.state = ItemState::Purged;
            let text = std::mem::take(&mut item.text);
            item.pinned = false;
            if text.shared_entry().is_some() {
                // This memory no longer holds the swarm's copy: erased once
                // no memory does.
                drop(text);
                released.push(seq);
            }
            self.working.remove(seq);
            erased.insert(seq, PurgedEvent { kind: item.kind, task: item.correlation_id.clone() });
            erased_ids.insert(item.item_id.clone());
        }
        for seq in released {
            self.config.shared.release(seq)?;
        }
        if !erased.is_empty() {
            self.graph.redact(&erased.keys().copied().collect());
            let shared_graph = self.config.shared.graph();
            let shared_seqs: Vec<u64> =
                erased.keys().copied().filter(|seq| shared_graph.graph().events.contains_key(seq)).collect();
            drop(shared_graph);
            self.unheld_shared.extend(shared_seqs);
            let graph = MemoryGraph::of(&self.graph, &self.config.shared, self.checkpoint, &self.unheld_shared);
            self.phases.redact(&erased, &graph.view());
            drop(graph);
            self.redact_contradictions(&erased_ids);
            self.redact_sent_bundles(&erased.keys().copied().collect());
            self.rebuild_indexes_without_purged()?;
        }
        Ok(())
    }

    /// The reason of a contradiction quotes both sides: with one purged,
    /// only the fact that there was one remains.
    fn redact_contradictions(&mut self, erased_ids: &BTreeSet<String>) {
        for open in self.open_contradictions.values_mut() {
            if erased_ids.contains(&open.a) || erased_ids.contains(&open.b) {
                open.reason = PURGED_CONTRADICTION_REASON.to_string();
            }
        }
    }

    /// Rebuilds the BM25 and vector indexes from every item not purged, in
    /// seq order: what a restore from snapshot builds, so live, restored and
    /// replayed memories rank alike.
    fn rebuild_indexes_without_purged(&mut self) -> Result<(), ProjectionError> {
        let mut bm25 = self.bm25.empty_like();
        let mut hidden = 0;
        for item in self.items.values().filter(|item| item.state != ItemState::Purged) {
            match item.text.shared_entry() {
                Some(entry) => {
                    self.config.shared.count_terms(item.seq, entry, |terms| bm25.hold_shared(terms, entry.change, 1))
                }
                None => bm25.add(item.seq, item.kind, &item.text)?,
            }
            if !item.state.is_searchable() {
                hidden += 1;
            }
        }
        bm25.commit()?;
        let items = &self.items;
        self.vectors.retain(|seq| items.get(&seq).is_some_and(|item| item.state != ItemState::Purged));
        // Dropping the old view deletes its documents.
        self.bm25 = bm25;
        self.hidden_count = hidden;
        self.config.shared.text_index().erase_deleted()
    }

    /// Makes every applied item searchable. Cheap when nothing changed.
    pub fn commit(&mut self) -> Result<(), ProjectionError> {
        self.bm25.commit()
    }

    /// The swarm's vectors of the shared items this memory holds, and
    /// others: searches filter by what the memory holds.
    pub(crate) fn shared_vectors(&self) -> std::sync::RwLockReadGuard<'_, crate::shared::SharedVectors> {
        self.config.shared.vectors()
    }
}

impl Drop for AgentMemory {
    /// A memory that is gone (replaced by a restore, stopped, or a replay
    /// done with) no longer holds its shared items.
    fn drop(&mut self) {
        for item in self.items.values().filter(|item| item.text.shared_entry().is_some()) {
            // Fails only when the index writer is broken, which the next
            // write reports to whoever makes it.
            let _ = self.config.shared.release(item.seq);
        }
    }
}

impl AgentMemory {
    /// A stable hash of the memory's logical content: items, their state and
    /// provenance, the working tier and the ids seen. Index files, segment
    /// layout and map iteration order do not enter it, so a rebuild by replay
    /// gives the same digest as the live memory.
    pub fn digest(&self) -> String {
        let mut hasher = ContentHasher::default();
        hasher.text(&self.swarm);
        hasher.text(&self.agent);
        // Vectors are a function of item text and model: the model's id
        // stands for them. The graph hashes its own content.
        hasher.text(self.config.embedder.model_id());
        hasher.text(&self.graph.digest());
        hasher.text(&self.graph().view().shared_digest());
        hasher.number(self.config.large_output_bytes as u64);
        self.phases.hash_into(&mut hasher);
        hasher.number(self.resolved_contradictions.len() as u64);
        for resolved in self.resolved_contradictions.values() {
            hasher.text(&resolved.contradiction_id);
            hasher.text(&resolved.a);
            hasher.text(&resolved.b);
            hasher.text(resolution_name(resolved.resolution));
            hasher.provenance(std::slice::from_ref(&resolved.provenance));
        }
        hasher.number(self.open_contradictions.len() as u64);
        for contradiction in self.open_contradictions.values() {
            hasher.text(&contradiction.contradiction_id);
            hasher.text(&contradiction.a);
            hasher.text(&contradiction.b);
            hasher.text(&contradiction.reason);
            hasher.provenance(std::slice::from_ref(&contradiction.provenance));
        }
        hasher.number(self.handoffs.len() as u64);
        for record in self.handoffs.values() {
            hasher.bytes(&record.handoff_id.0.to_be_bytes());
            hasher.text(&record.from);
            hasher.provenance(std::slice::from_ref(&record.received));
            hasher.provenance(record.acknowledged.as_slice());
            // The package is an events type: its JSON is canonical (fields
            // in declaration order).
            let package = record
                .package
                .as_ref()
                .map(|package| serde_json::to_string(package).expect("a handoff package always serialises to JSON"));
            hasher.text(package.as_deref().unwrap_or(""));
        }
        hasher.number(self.items.len() as u64);
        for item in self.items.values() {
            hasher.text(&item.item_id);
            hasher.number(item.seq);
            hasher.text(item.kind);
            hasher.text(&item.agent);
            hasher.text(item.scope.as_str());
            hasher.number(item.ts.unix_nanos() as u64);
            hasher.text(item.correlation_id.as_deref().unwrap_or(""));
            hasher.number(item.importance.map_or(u64::MAX, |value| u64::from(value.to_bits())));
            hasher.text(&item.text);
            hasher.text(item.state.as_str());
            hasher.number(u64::from(item.pinned));
            hasher.number(u64::from(item.retrievals));
            hasher.number(u64::from(item.citations));
            hasher.number(u64::from(item.ignored));
            hasher.provenance(&item.provenance);
        }
        hasher.number(self.working.entries().len() as u64);
        for entry in self.working.entries() {
            hasher.number(entry.seq);
            hasher.text(&entry.text);
        }
        let mut seen: Vec<(EventId, SeenId)> = self.seen_ids.iter().map(|(id, seen)| (*id, *seen)).collect();
        seen.sort_unstable();
        hasher.number(seen.len() as u64);
        for (id, seen) in seen {
            hasher.bytes(&id.0.to_be_bytes());
            hasher.number(seen.seq);
            hasher.number(seen.fingerprint);
        }
        hasher.number(self.config.handoff_bundle_tokens as u64);
        hasher.number(self.sent_bundles.len() as u64);
        for (handoff_id, (sent_seq, bundle)) in &self.sent_bundles {
            hasher.bytes(&handoff_id.0.to_be_bytes());
            hasher.number(*sent_seq);
            hasher.text(&serde_json::to_string(bundle).expect("a handoff bundle always serialises to JSON"));
        }
        hasher.finish()
    }
}

/// The wire name of a resolution.
pub(crate) fn resolution_name(resolution: ContradictionResolution) -> &'static str {
    match resolution {
        ContradictionResolution::AWins => "a_wins",
        ContradictionResolution::BWins => "b_wins",
        ContradictionResolution::BothValid => "both_valid",
        ContradictionResolution::Merged => "merged",
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
        assert_eq!(crate::SNAPSHOT_FORMAT, 15);
        assert_eq!(content_fingerprint(&event), 13_491_389_704_495_008_909);
    }
}
