//! Phases: spans of an agent's work, compressed once they complete so that
//! old work stays in memory at a bounded size instead of being truncated.
//!
//! # What a phase is
//!
//! - An **explicit** phase runs from a `phase_started` event to the
//!   `phase_completed` of the same agent that names it (by `phase_id`, else
//!   the most recent open phase of the same name, else the most recent
//!   open phase). Every event of that agent applied while it is the
//!   agent's innermost open phase belongs to it, the start and completion
//!   included. Its id is the id of its `phase_started` event.
//! - A phase opened for a task (its `phase_started` has a correlation id)
//!   also takes in the task's events of every other agent, those with that
//!   correlation id, while it is open: the innermost open phase of the task
//!   takes each. Only events the memory applies arrive here, so those are
//!   the other agents' shared and system events, never their private ones.
//!   A phase opened without a correlation id holds only its agent's events.
//! - Where an agent sends no phase events, a **task** phase holds the
//!   agent's own events of one correlation id (task) while no explicit phase
//!   of the agent is open, and completes when the agent reports that task
//!   (`task_updated` with the correlation id as task id) done or cancelled.
//!   Its id is the id of its first event. Events of the task after that
//!   open a new phase. An agent's own `phase_started` for a task takes over
//!   the task phase it has open for that task (explicit wins): one phase,
//!   with the earlier events and the `phase_started`'s id, and from the
//!   first `phase_started` on no task phase opens.
//! - Another agent's shared `phase_started` opens a **shared** phase in
//!   this memory: that agent's phase as this memory sees it, delimited by
//!   the same rules from the events this memory applies (its agent's events
//!   of the task only if they are not private). Shared phases can be read
//!   ([`PhaseTracker::phase`], [`PhaseTracker::shared_phases`]) but are not
//!   this agent's work: they stay out of its roll-ups, its context and the
//!   bundles of its handoffs, and no model summarises them here.
//! - `phase_compressed` events belong to no phase: they replace the
//!   compressed levels of the agent's own phase they name.
//!
//! # Levels
//!
//! A completed phase is kept at `index` (≤ 8 tokens), `compressed` (≤ 32),
//! `summary` (≤ 128), `findings` (≤ 512), `full` (the structured record,
//! [`PhaseNotes`]) and `original` (its events, read from the log by their
//! sequences). The extractive compressor ([`compress`]) fills the first four
//! deterministically at completion; a later `phase_compressed` event (from a
//! model, recorded once) replaces them, cut to the same bounds.
//!
//! # Roll-ups
//!
//! Completed phases of a task roll up into a task summary (≤ 128 tokens)
//! and tasks into a session summary (≤ 256 tokens), newest first, so the
//! background of a context stays bounded however long the swarm runs.

mod compress;
mod notes;
mod rollup;
mod snapshot;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use mneme_events::{Event, EventKind, PhaseCompleted, PhaseCompressed, Scope, TaskStatus, Timestamp};

use crate::chunks::PhasePart;
use crate::digest::ContentHasher;
use crate::graph::{EntityKind, GraphView, TouchedEdge};
use crate::item::ProvenanceRef;
use mneme_index::tokens;

pub(crate) use compress::fit_to_tokens;
pub use notes::{CommandNote, DecisionNote, ErrorNote, MessageNote, PhaseNotes};
pub use rollup::TaskSummary;
pub(crate) use snapshot::{PhaseRecord, PhaseTrackerRecord};

/// The name of the deterministic compressor in [`PhaseLevels::compressor`].
pub const EXTRACTIVE_COMPRESSOR: &str = "extractive-v1";
/// Token bound of a session summary.
pub const SESSION_SUMMARY_TOKENS: usize = 256;

pub use mneme_api::query::PhaseLevel;

/// How a phase was delimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum PhaseBoundary {
    /// By `phase_started` / `phase_completed`.
    Explicit,
    /// By the events of one task (correlation id).
    Task,
}

impl PhaseBoundary {
    pub fn as_str(self) -> &'static str {
        match self {
            PhaseBoundary::Explicit => "explicit",
            PhaseBoundary::Task => "task",
        }
    }
}

/// The four text levels of a completed phase and who wrote them.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct PhaseLevels {
    /// [`EXTRACTIVE_COMPRESSOR`] or the name a `phase_compressed` event gave.
    pub compressor: String,
    pub index: String,
    pub compressed: String,
    pub summary: String,
    pub findings: String,
}

impl PhaseLevels {
    /// The text of a text level; `None` for `full` and `original`.
    pub fn text(&self, level: PhaseLevel) -> Option<&str> {
        match level {
            PhaseLevel::Index => Some(&self.index),
            PhaseLevel::Compressed => Some(&self.compressed),
            PhaseLevel::Summary => Some(&self.summary),
            PhaseLevel::Findings => Some(&self.findings),
            PhaseLevel::Full | PhaseLevel::Original => None,
        }
    }
}

/// One phase of an agent's work.
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// The id of its `phase_started` event, or of the first event of a task
    /// phase.
    pub phase_id: String,
    /// The agent whose phase it is: who published its `phase_started`, or
    /// whose events a task phase holds.
    pub agent: String,
    pub name: String,
    pub boundary: PhaseBoundary,
    /// The correlation id (task) it belongs to, if any.
    pub task: Option<String>,
    pub goal: Option<String>,
    pub outcome: Option<String>,
    pub started_seq: u64,
    pub started_at: Timestamp,
    pub completed_seq: Option<u64>,
    pub completed_at: Option<Timestamp>,
    /// Every event of the phase, ascending: its agent's, and for a phase
    /// opened for a task, the other agents' events of the task that this
    /// memory applied.
    pub event_seqs: Vec<u64>,
    /// What happened in it: the `full` level.
    pub notes: PhaseNotes,
    /// Set at completion (or by an earlier `phase_compressed`).
    pub levels: Option<PhaseLevels>,
    /// The events that started, completed and compressed it.
    pub provenance: Vec<ProvenanceRef>,
    /// A purge erased some of its events: its levels are extractive from
    /// now on.
    pub redacted: bool,
}

/// What a purge tells the phases about one purged event.
#[derive(Debug, Clone)]
pub(crate) struct PurgedEvent {
    pub kind: &'static str,
    /// Its correlation id: the task a purged task update was about.
    pub task: Option<String>,
}

/// The name of an explicit phase whose opening event was purged.
const PURGED_PHASE_NAME: &str = "(purged)";

/// Drops from a phase's notes what the purged events said; see
/// [`PhaseTracker::redact`].
fn redact_notes(
    notes: &mut PhaseNotes,
    purged: &BTreeMap<u64, PurgedEvent>,
    hit: &[&PurgedEvent],
    graph: &GraphView<'_>,
) {
    notes.first_messages.retain(|note| !purged.contains_key(&note.seq));
    notes.last_messages.retain(|note| !purged.contains_key(&note.seq));
    notes.salient_messages.retain(|(_, note)| !purged.contains_key(&note.seq));
    notes.decisions.retain(|note| !purged.contains_key(&note.seq));
    if hit.iter().any(|purged_event| matches!(purged_event.kind, "fact_asserted" | "fact_retracted")) {
        notes.facts.clear();
    }
    if hit.iter().any(|purged_event| matches!(purged_event.kind, "handoff_sent" | "handoff_received")) {
        notes.handoffs.clear();
    }
    let known = |kind: EntityKind, name: &str| graph.has_entity_named(kind, name);
    notes.files_read.retain(|file| known(EntityKind::File, file));
    notes.files_modified.retain(|file| known(EntityKind::File, file));
    notes.symbols.retain(|symbol| known(EntityKind::Symbol, symbol));
    notes.commands.retain(|command, _| known(EntityKind::Command, command));
    notes.errors.retain(|error| known(EntityKind::Error, &error.error) && known(EntityKind::Command, &error.command));
    for error in &mut notes.errors {
        error.fixed_by.retain(|file| known(EntityKind::File, file));
    }
}

impl Phase {
    pub fn is_completed(&self) -> bool {
        self.completed_seq.is_some()
    }
}

/// Where a phase is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PhaseSlot {
    /// In [`PhaseTracker::phases`]: this agent's.
    Own(usize),
    /// In [`PhaseTracker::shared`]: another agent's, as this memory sees it.
    Shared(usize),
}

/// The phases of one agent, their task roll-ups and the session summary,
/// and the other agents' shared phases as this agent's memory sees them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseTracker {
    /// This agent's phases, in order of their first event.
    pub(crate) phases: Vec<Phase>,
    /// Other agents' phases opened by a shared `phase_started`, in order of
    /// their start, built from the events this memory applies.
    pub(crate) shared: Vec<Phase>,
    pub(crate) index_by_id: HashMap<String, PhaseSlot>,
    /// This agent's open explicit phases, innermost last.
    pub(crate) open_explicit: Vec<usize>,
    /// Open shared phases (indexes into `shared`), each agent's innermost
    /// after its others.
    pub(crate) open_shared: Vec<usize>,
    /// This agent's open task phases by correlation id.
    pub(crate) open_by_task: BTreeMap<String, usize>,
    /// Task titles from `task_updated`, by task id.
    pub(crate) task_titles: BTreeMap<String, String>,
    /// Roll-ups of tasks with at least one completed phase.
    pub(crate) tasks: BTreeMap<String, TaskSummary>,
    /// Tasks by their latest phase completion, oldest first.
    pub(crate) task_order: Vec<String>,
    pub(crate) session_summary: String,
    /// Set by the agent's first `phase_started`: from then on its phases
    /// are delimited explicitly and no task phase opens.
    pub(crate) uses_explicit_phases: bool,
    /// The phase the last observed event completed: scratch, not state.
    pub(crate) completed_by_last_event: LastCompleted,
    /// Which snapshot chunks of phases changed since the last was saved.
    pub(crate) changes: PhaseChanges,
}

/// Phases per snapshot chunk.
pub(crate) const PHASE_CHUNK: usize = 64;

/// The chunks of phases changed since the snapshot was last saved:
/// bookkeeping, not state, so two trackers of the same phases are equal
/// whatever they changed.
#[derive(Debug, Clone, Default)]
pub(crate) struct PhaseChanges(pub(crate) BTreeSet<PhasePart>);

impl PartialEq for PhaseChanges {
    fn eq(&self, _: &PhaseChanges) -> bool {
        true
    }
}

/// One event as the tracker observes it.
#[derive(Clone, Copy)]
struct Observed<'a> {
    seq: u64,
    event: &'a Event,
    /// What the event changed in the fact graph.
    touched: &'a [TouchedEdge],
    /// Its rendering as a memory item, if it has one.
    item_text: Option<&'a str>,
}

impl Observed<'_> {
    fn provenance(&self) -> ProvenanceRef {
        ProvenanceRef { seq: self.seq, event_id: self.event.id }
    }

    /// The task it is an event of, if other agents' phases for that task
    /// may take it in: a correlation id, and not private.
    fn shared_task(&self) -> Option<&str> {
        self.event.correlation_id.as_deref().filter(|_| self.event.scope != Scope::Private)
    }
}

impl PhaseTracker {
    /// The agent's own phase the last applied event completed, if any.
    /// Shared phases are not reported: they are their agent's to summarise.
    pub fn completed_by_last_event(&self) -> Option<&Phase> {
        self.completed_by_last_event.0.map(|index| &self.phases[index])
    }

    /// This agent's phases, in order of their first event: what its
    /// roll-ups, context and handoff bundles are made of.
    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    /// Other agents' shared phases as this memory sees them, in order of
    /// their start.
    pub fn shared_phases(&self) -> &[Phase] {
        &self.shared
    }

    /// A phase of this agent's, or another agent's shared phase, by id.
    pub fn phase(&self, phase_id: &str) -> Option<&Phase> {
        match self.index_by_id.get(phase_id)? {
            PhaseSlot::Own(index) => self.phases.get(*index),
            PhaseSlot::Shared(index) => self.shared.get(*index),
        }
    }

    /// Task roll-ups, the most recently completed first.
    pub fn tasks_newest_first(&self) -> impl Iterator<Item = &TaskSummary> {
        self.task_order.iter().rev().filter_map(|task| self.tasks.get(task))
    }

    pub fn task(&self, task: &str) -> Option<&TaskSummary> {
        self.tasks.get(task)
    }

    /// At most [`SESSION_SUMMARY_TOKENS`] tokens; empty before any phase
    /// completed.
    pub fn session_summary(&self) -> &str {
        &self.session_summary
    }

    /// Puts an event the memory applied into the phases it belongs to,
    /// opening or completing one as the case may be: at most one phase of
    /// each agent (see the module's documentation). `own`: the memory's
    /// agent published it. `touched` is what the event changed in the fact
    /// graph; `item_text` its rendering as a memory item, if it has one.
    pub(crate) fn observe(
        &mut self,
        seq: u64,
        event: &Event,
        own: bool,
        touched: &[TouchedEdge],
        item_text: Option<&str>,
    ) {
        self.completed_by_last_event = LastCompleted(None);
        let observed = Observed { seq, event, touched, item_text };
        if let EventKind::PhaseCompressed(compressed) = &event.kind {
            // Another agent's summary is of its own view, private events
            // included; the memory does not apply it, and it is refused
            // here as well.
            if own {
                self.apply_compressed(compressed, observed.provenance());
            }
            return;
        }
        let delimited_shared = if own {
            self.observe_own(observed);
            None
        } else {
            self.join_own_phase_of_task(observed);
            self.delimit_shared(observed)
        };
        self.join_shared_phases(observed, delimited_shared.is_some());
    }

    /// The memory's own event: into its innermost open explicit phase, or
    /// into the task phase of its correlation id.
    fn observe_own(&mut self, observed: Observed<'_>) {
        let Observed { seq, event, touched, item_text } = observed;
        let provenance = observed.provenance();
        if let EventKind::TaskUpdated(task) = &event.kind
            && let Some(title) = &task.title
        {
            self.task_titles.insert(task.task_id.clone(), title.clone());
        }
        match &event.kind {
            EventKind::PhaseStarted(started) => {
                let index = match event.correlation_id.as_ref().and_then(|task| self.open_by_task.remove(task)) {
                    Some(index) => self.take_over(index, observed),
                    None => self.open_phase(seq, event, PhaseBoundary::Explicit),
                };
                let phase = self.own_mut(index);
                phase.name = started.phase.clone();
                phase.goal = started.goal.clone();
                phase.provenance.push(provenance);
                phase.notes.observe(seq, event, (&phase.agent, phase.goal.as_deref()), touched, item_text);
                self.open_explicit.push(index);
                self.uses_explicit_phases = true;
                return;
            }
            EventKind::PhaseCompleted(completed) => {
                if let Some(position) = completion_target(&self.phases, &self.open_explicit, completed) {
                    let index = self.open_explicit.remove(position);
                    complete_with(self.own_mut(index), observed, completed);
                    self.complete(index, seq, event.ts);
                    return;
                }
            }
            _ => {}
        }
        if let Some(&index) = self.open_explicit.last() {
            join(self.own_mut(index), observed);
            return;
        }
        let Some(task) = event.correlation_id.clone() else { return };
        let index = match self.open_by_task.get(&task) {
            Some(&index) => index,
            // Opening or assigning a task is not work on it; and an agent
            // that delimits its phases explicitly gets no task phases.
            None if self.uses_explicit_phases || is_task_opening(&event.kind) => return,
            None => {
                let index = self.open_phase(seq, event, PhaseBoundary::Task);
                let name = self.task_titles.get(&task).cloned().unwrap_or_else(|| task.clone());
                let phase = self.own_mut(index);
                phase.name = name;
                phase.provenance.push(provenance);
                self.open_by_task.insert(task.clone(), index);
                index
            }
        };
        join(self.own_mut(index), observed);
        if let EventKind::TaskUpdated(update) = &event.kind
            && update.task_id == task
            && matches!(update.status, TaskStatus::Done | TaskStatus::Cancelled)
        {
            self.open_by_task.remove(&task);
            let phase = self.own_mut(index);
            phase.outcome = update.note.clone().or_else(|| update.title.clone()).or_else(|| {
                Some(if update.status == TaskStatus::Done { "done".to_string() } else { "cancelled".to_string() })
            });
            phase.provenance.push(provenance);
            self.complete(index, seq, event.ts);
        }
    }

    /// The agent's `phase_started` for a task it has a task phase open
    /// for: the task phase becomes the explicit one (explicit wins), with
    /// the `phase_started`'s id, keeping the events it already holds.
    fn take_over(&mut self, index: usize, observed: Observed<'_>) -> usize {
        let phase_id = observed.event.id.to_string();
        let phase = self.own_mut(index);
        let previous_id = std::mem::replace(&mut phase.phase_id, phase_id.clone());
        phase.boundary = PhaseBoundary::Explicit;
        phase.event_seqs.push(observed.seq);
        self.index_by_id.remove(&previous_id);
        self.index_by_id.insert(phase_id, PhaseSlot::Own(index));
        index
    }

    /// Another agent's event of a task: into the innermost of this agent's
    /// open explicit phases opened for that task.
    fn join_own_phase_of_task(&mut self, observed: Observed<'_>) {
        let Some(task) = observed.shared_task() else { return };
        let target =
            self.open_explicit.iter().rev().copied().find(|&index| self.phases[index].task.as_deref() == Some(task));
        if let Some(index) = target {
            join(self.own_mut(index), observed);
        }
    }

    /// Another agent's `phase_started` opens its shared phase here, and its
    /// `phase_completed` completes it; `Some` with the phase's index when
    /// the event did either.
    fn delimit_shared(&mut self, observed: Observed<'_>) -> Option<usize> {
        let Observed { seq, event, touched, item_text } = observed;
        if event.scope == Scope::Private {
            return None;
        }
        match &event.kind {
            EventKind::PhaseStarted(started) => {
                let index = self.shared.len();
                let mut phase = new_phase(seq, event, PhaseBoundary::Explicit);
                phase.name = started.phase.clone();
                phase.goal = started.goal.clone();
                phase.provenance.push(observed.provenance());
                phase.notes.observe(seq, event, (&phase.agent, phase.goal.as_deref()), touched, item_text);
                self.index_by_id.insert(phase.phase_id.clone(), PhaseSlot::Shared(index));
                self.shared.push(phase);
                self.changes.0.insert(PhasePart::Shared((index / PHASE_CHUNK) as u32));
                self.open_shared.push(index);
                Some(index)
            }
            EventKind::PhaseCompleted(completed) => {
                let of_agent: Vec<usize> =
                    self.open_shared.iter().copied().filter(|&index| self.shared[index].agent == event.agent).collect();
                let position = completion_target(&self.shared, &of_agent, completed)?;
                let index = of_agent[position];
                self.open_shared.retain(|&open| open != index);
                let phase = self.shared_mut(index);
                complete_with(phase, observed, completed);
                finish(phase, seq, event.ts);
                Some(index)
            }
            _ => None,
        }
    }

    /// An event into the other agents' open shared phases: for each agent,
    /// its innermost open phase if the event is that agent's (unless the
    /// event just opened or completed one of them), else its innermost open
    /// phase for the event's task.
    fn join_shared_phases(&mut self, observed: Observed<'_>, delimited_own_shared: bool) {
        if self.open_shared.is_empty() {
            return;
        }
        let mut agents: Vec<&str> = Vec::new();
        for &index in &self.open_shared {
            let agent = self.shared[index].agent.as_str();
            if !agents.contains(&agent) {
                agents.push(agent);
            }
        }
        let author = observed.event.agent.as_str();
        let task = observed.shared_task();
        let targets: Vec<usize> = agents
            .into_iter()
            .filter_map(|agent| {
                let innermost = |task: Option<&str>| {
                    self.open_shared.iter().rev().copied().find(|&index| {
                        let phase = &self.shared[index];
                        phase.agent == agent && task.is_none_or(|task| phase.task.as_deref() == Some(task))
                    })
                };
                if agent == author {
                    if delimited_own_shared { None } else { innermost(None) }
                } else {
                    task.and_then(|task| innermost(Some(task)))
                }
            })
            .collect();
        for index in targets {
            join(self.shared_mut(index), observed);
        }
    }

    fn open_phase(&mut self, seq: u64, event: &Event, boundary: PhaseBoundary) -> usize {
        let index = self.phases.len();
        let phase = new_phase(seq, event, boundary);
        self.index_by_id.insert(phase.phase_id.clone(), PhaseSlot::Own(index));
        self.phases.push(phase);
        self.changes.0.insert(PhasePart::Own((index / PHASE_CHUNK) as u32));
        index
    }

    fn complete(&mut self, index: usize, seq: u64, at: Timestamp) {
        self.completed_by_last_event = LastCompleted(Some(index));
        finish(self.own_mut(index), seq, at);
        self.roll_up(index);
    }

    fn apply_compressed(&mut self, compressed: &PhaseCompressed, provenance: ProvenanceRef) {
        let Some(&PhaseSlot::Own(index)) = self.index_by_id.get(&compressed.phase_id.to_string()) else { return };
        let phase = self.own_mut(index);
        // Written from the phase before its purge, a model's levels may
        // quote what was erased.
        if phase.redacted {
            phase.provenance.push(provenance);
            return;
        }
        phase.levels = Some(PhaseLevels {
            compressor: compressed.compressor.clone(),
            index: fit_to_tokens(&compressed.index, PhaseLevel::Index),
            compressed: fit_to_tokens(&compressed.compressed, PhaseLevel::Compressed),
            summary: fit_to_tokens(&compressed.summary, PhaseLevel::Summary),
            findings: fit_to_tokens(&compressed.findings, PhaseLevel::Findings),
        });
        phase.provenance.push(provenance);
        if phase.is_completed() {
            self.summarise(index);
        }
    }

    /// A phase completed: its task becomes the most recent one, and the
    /// summaries are re-derived.
    fn roll_up(&mut self, index: usize) {
        let task = self.phases[index].task.clone().unwrap_or_else(|| rollup::NO_TASK.to_string());
        if let Some(position) = self.task_order.iter().position(|known| *known == task) {
            self.task_order.remove(position);
        }
        self.task_order.push(task);
        self.summarise(index);
    }

    /// Re-derives the summary of the phase's task and the session summary,
    /// leaving the order of tasks alone (a late model summary of an old
    /// phase does not make its task recent).
    fn summarise(&mut self, index: usize) {
        let task = self.phases[index].task.clone().unwrap_or_else(|| rollup::NO_TASK.to_string());
        let summary = rollup::task_summary(&task, self.task_titles.get(&task), &self.phases);
        self.tasks.insert(task, summary);
        self.session_summary = rollup::session_summary(self);
    }

    /// A purge: drops from every phase, shared ones included, what the
    /// purged events said. Notes that carry a seq (messages, decisions)
    /// lose the purged ones; names noted without one (files, symbols,
    /// commands, errors) stay only if the purged graph still knows them,
    /// that is if another event says them; fact and handoff notes go whole
    /// when one of their events is purged. A phase's name and goal go with a
    /// purged opening event, its outcome with a purged closing one, a
    /// task's title with a purged task update. Completed phases get
    /// extractive levels again, because a model's may quote the purged
    /// text, and a model summary that arrives later for a redacted phase is
    /// not applied.
    pub(crate) fn redact(&mut self, purged: &BTreeMap<u64, PurgedEvent>, graph: &GraphView<'_>) {
        for purged_event in purged.values().filter(|purged_event| purged_event.kind == "task_updated") {
            if let Some(task) = &purged_event.task {
                self.task_titles.remove(task);
            }
        }
        let mut touched = Vec::new();
        for (index, phase) in self.phases.iter_mut().enumerate() {
            let Some(task_update_purged) = redact_phase(phase, purged, graph) else { continue };
            self.changes.0.insert(PhasePart::Own((index / PHASE_CHUNK) as u32));
            if task_update_purged && let Some(task) = &phase.task {
                self.task_titles.remove(task);
            }
            if phase.is_completed() {
                touched.push(index);
            }
        }
        for (index, phase) in self.shared.iter_mut().enumerate() {
            if redact_phase(phase, purged, graph).is_some() {
                self.changes.0.insert(PhasePart::Shared((index / PHASE_CHUNK) as u32));
            }
        }
        for index in touched {
            self.summarise(index);
        }
    }

    /// The agent's own phase at `index`, to change: its chunk is saved at
    /// the next snapshot. Every change to a phase goes through here or
    /// [`PhaseTracker::shared_mut`].
    fn own_mut(&mut self, index: usize) -> &mut Phase {
        self.changes.0.insert(PhasePart::Own((index / PHASE_CHUNK) as u32));
        &mut self.phases[index]
    }

    /// The shared phase at `index`, to change (see [`PhaseTracker::own_mut`]).
    fn shared_mut(&mut self, index: usize) -> &mut Phase {
        self.changes.0.insert(PhasePart::Shared((index / PHASE_CHUNK) as u32));
        &mut self.shared[index]
    }

    /// Rebuilds the lookup maps after a restore.
    pub(crate) fn rebuild_index(&mut self) {
        let own = self.phases.iter().enumerate().map(|(index, phase)| (phase.phase_id.clone(), PhaseSlot::Own(index)));
        let shared =
            self.shared.iter().enumerate().map(|(index, phase)| (phase.phase_id.clone(), PhaseSlot::Shared(index)));
        self.index_by_id = own.chain(shared).collect();
    }

    /// Tokens of a text, for callers that show levels.
    pub fn tokens_of(text: &str) -> usize {
        tokens::count(text)
    }
}

/// A phase whose first event is `event`, at `seq`; its name is set by the
/// caller.
fn new_phase(seq: u64, event: &Event, boundary: PhaseBoundary) -> Phase {
    Phase {
        phase_id: event.id.to_string(),
        agent: event.agent.clone(),
        name: String::new(),
        boundary,
        task: event.correlation_id.clone(),
        goal: None,
        outcome: None,
        started_seq: seq,
        started_at: event.ts,
        completed_seq: None,
        completed_at: None,
        event_seqs: vec![seq],
        notes: PhaseNotes::default(),
        levels: None,
        provenance: Vec::new(),
        redacted: false,
    }
}

/// An event into a phase.
fn join(phase: &mut Phase, observed: Observed<'_>) {
    if phase.event_seqs.last() != Some(&observed.seq) {
        phase.event_seqs.push(observed.seq);
    }
    phase.notes.observe(
        observed.seq,
        observed.event,
        (&phase.agent, phase.goal.as_deref()),
        observed.touched,
        observed.item_text,
    );
}

/// The `phase_completed` event into the phase it completes.
fn complete_with(phase: &mut Phase, observed: Observed<'_>, completed: &PhaseCompleted) {
    join(phase, observed);
    phase.outcome = completed.outcome.clone();
    phase.provenance.push(observed.provenance());
}

/// Marks a phase completed and gives it extractive levels, unless a
/// model's summary was recorded before completion (a publisher may
/// compress a phase it knows is over).
fn finish(phase: &mut Phase, seq: u64, at: Timestamp) {
    phase.completed_seq = Some(seq);
    phase.completed_at = Some(at);
    if phase.levels.is_none() {
        phase.levels = Some(compress::extractive_levels(phase));
    }
}

/// The position in `open` (phases of one agent, innermost last) of the
/// phase a `phase_completed` completes: the one it names by id; else the
/// innermost of its name; else, if it names no id, the innermost.
fn completion_target(phases: &[Phase], open: &[usize], completed: &PhaseCompleted) -> Option<usize> {
    let named = open.iter().rposition(|&index| {
        let phase = &phases[index];
        match completed.phase_id {
            Some(id) => phase.phase_id == id.to_string(),
            None => phase.name == completed.phase,
        }
    });
    named.or_else(|| if completed.phase_id.is_none() { open.len().checked_sub(1) } else { None })
}

/// Drops what the purged events said from one phase; `None` when none of
/// its events was purged, else whether one of them was a task update.
fn redact_phase(phase: &mut Phase, purged: &BTreeMap<u64, PurgedEvent>, graph: &GraphView<'_>) -> Option<bool> {
    let hit: Vec<&PurgedEvent> = phase.event_seqs.iter().filter_map(|seq| purged.get(seq)).collect();
    // The events that started, completed and compressed it: a task's phase
    // that a `phase_started` named later has its name and goal from that.
    let purged_kind = |kind: &str| {
        phase.provenance.iter().any(|reference| purged.get(&reference.seq).is_some_and(|event| event.kind == kind))
    };
    let (start_purged, completion_purged) = (purged_kind("phase_started"), purged_kind("phase_completed"));
    if hit.is_empty() && !start_purged && !completion_purged {
        return None;
    }
    phase.redacted = true;
    redact_notes(&mut phase.notes, purged, &hit, graph);
    if purged.contains_key(&phase.started_seq) || start_purged {
        phase.name = phase.task.clone().unwrap_or_else(|| PURGED_PHASE_NAME.to_string());
        phase.goal = None;
    }
    if phase.completed_seq.is_some_and(|seq| purged.contains_key(&seq)) || completion_purged {
        phase.outcome = None;
    }
    if phase.is_completed() {
        phase.levels = Some(compress::extractive_levels(phase));
    }
    Some(hit.iter().any(|purged_event| purged_event.kind == "task_updated"))
}

impl PhaseTracker {
    pub(crate) fn hash_into(&self, hasher: &mut ContentHasher) {
        hasher.number(self.phases.len() as u64);
        for phase in &self.phases {
            hash_phase(phase, hasher);
        }
        for open in &self.open_explicit {
            hasher.number(*open as u64);
        }
        for (task, open) in &self.open_by_task {
            hasher.text(task);
            hasher.number(*open as u64);
        }
        for (task, title) in &self.task_titles {
            hasher.text(task);
            hasher.text(title);
        }
        for task in &self.task_order {
            hasher.text(&format!("{:?}", self.tasks.get(task)));
        }
        hasher.text(&self.session_summary);
        hasher.number(u64::from(self.uses_explicit_phases));
        hasher.number(self.shared.len() as u64);
        for phase in &self.shared {
            hash_phase(phase, hasher);
        }
        hasher.number(self.open_shared.len() as u64);
        for open in &self.open_shared {
            hasher.number(*open as u64);
        }
    }
}

fn hash_phase(phase: &Phase, hasher: &mut ContentHasher) {
    hasher.text(&phase.phase_id);
    hasher.text(&phase.agent);
    hasher.text(&phase.name);
    hasher.text(phase.boundary.as_str());
    hasher.text(phase.task.as_deref().unwrap_or(""));
    hasher.text(phase.goal.as_deref().unwrap_or(""));
    hasher.text(phase.outcome.as_deref().unwrap_or(""));
    hasher.number(u64::from(phase.redacted));
    hasher.number(phase.started_seq);
    hasher.time(Some(phase.started_at));
    hasher.number(phase.completed_seq.unwrap_or(0));
    hasher.time(phase.completed_at);
    hasher.number(phase.event_seqs.len() as u64);
    for seq in &phase.event_seqs {
        hasher.number(*seq);
    }
    // Every field of the notes is ordered (sorted sets, log-order lists),
    // so their debug form is a function of the events.
    hasher.text(&format!("{:?}", phase.notes));
    match &phase.levels {
        Some(levels) => {
            for text in [&levels.compressor, &levels.index, &levels.compressed, &levels.summary, &levels.findings] {
                hasher.text(text);
            }
        }
        None => hasher.text(""),
    }
    hasher.provenance(&phase.provenance);
}

fn is_task_opening(kind: &EventKind) -> bool {
    matches!(kind, EventKind::TaskUpdated(update) if update.status == TaskStatus::Open)
}

/// Scratch, not state: two trackers with the same phases are equal whatever
/// their last event completed.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct LastCompleted(pub Option<usize>);

impl PartialEq for LastCompleted {
    fn eq(&self, _: &LastCompleted) -> bool {
        true
    }
}
