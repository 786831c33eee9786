//! Phases: spans of an agent's work, compressed once they complete so that
//! old work stays in memory at a bounded size instead of being truncated.
//!
//! # What a phase is
//!
//! - An **explicit** phase runs from a `phase_started` event to the
//!   `phase_completed` that names it (by `phase_id`, else the most recent
//!   open phase of the same name, else the most recent open phase). Every
//!   event of the agent applied while it is the innermost open phase belongs
//!   to it, the start and completion included. Its id is the id of its
//!   `phase_started` event.
//! - Where a publisher sends no phase events, a **task** phase holds the
//!   agent's events of one correlation id (task) while no explicit phase is
//!   open, and completes when the agent reports that task (`task_updated`
//!   with the correlation id as task id) done or cancelled. Its id is the id
//!   of its first event. Events of the task after that open a new phase.
//! - `phase_compressed` events belong to no phase: they replace the
//!   compressed levels of the phase they name.
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

use std::collections::{BTreeMap, HashMap};

use mneme_events::{Event, EventKind, PhaseCompressed, TaskStatus, Timestamp};

use crate::digest::ContentHasher;
use crate::graph::{EntityKind, FactGraph, TouchedEdge};
use crate::item::ProvenanceRef;
use crate::tokens;

pub(crate) use compress::fit_to_tokens;
pub use notes::{CommandNote, DecisionNote, ErrorNote, MessageNote, PhaseNotes};
pub use rollup::TaskSummary;
pub(crate) use snapshot::PhaseTrackerRecord;

/// The name of the deterministic compressor in [`PhaseLevels::compressor`].
pub const EXTRACTIVE_COMPRESSOR: &str = "extractive-v1";
/// Token bound of a session summary.
pub const SESSION_SUMMARY_TOKENS: usize = 256;

/// How much of a completed phase to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PhaseLevel {
    Index,
    Compressed,
    Summary,
    Findings,
    Full,
    Original,
}

impl PhaseLevel {
    pub const ALL: [PhaseLevel; 6] = [
        PhaseLevel::Index,
        PhaseLevel::Compressed,
        PhaseLevel::Summary,
        PhaseLevel::Findings,
        PhaseLevel::Full,
        PhaseLevel::Original,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PhaseLevel::Index => "index",
            PhaseLevel::Compressed => "compressed",
            PhaseLevel::Summary => "summary",
            PhaseLevel::Findings => "findings",
            PhaseLevel::Full => "full",
            PhaseLevel::Original => "original",
        }
    }

    pub fn from_name(name: &str) -> Option<PhaseLevel> {
        PhaseLevel::ALL.into_iter().find(|level| level.as_str() == name)
    }

    /// The most tokens a level's text may have; `None` for the structured
    /// record and the original events.
    pub fn token_bound(self) -> Option<usize> {
        match self {
            PhaseLevel::Index => Some(8),
            PhaseLevel::Compressed => Some(32),
            PhaseLevel::Summary => Some(128),
            PhaseLevel::Findings => Some(512),
            PhaseLevel::Full | PhaseLevel::Original => None,
        }
    }
}

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
    /// Every event of the phase, ascending.
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
fn redact_notes(notes: &mut PhaseNotes, purged: &BTreeMap<u64, PurgedEvent>, hit: &[&PurgedEvent], graph: &FactGraph) {
    notes.first_messages.retain(|note| !purged.contains_key(&note.seq));
    notes.last_messages.retain(|note| !purged.contains_key(&note.seq));
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

/// The phases of one agent, their task roll-ups and the session summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PhaseTracker {
    /// In order of their first event.
    pub(crate) phases: Vec<Phase>,
    pub(crate) index_by_id: HashMap<String, usize>,
    /// Open explicit phases, innermost last.
    pub(crate) open_explicit: Vec<usize>,
    /// Open task phases by correlation id.
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
}

impl PhaseTracker {
    /// The phase the last applied event completed, if any.
    pub fn completed_by_last_event(&self) -> Option<&Phase> {
        self.completed_by_last_event.0.map(|index| &self.phases[index])
    }

    pub fn phases(&self) -> &[Phase] {
        &self.phases
    }

    pub fn phase(&self, phase_id: &str) -> Option<&Phase> {
        self.index_by_id.get(phase_id).map(|&index| &self.phases[index])
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

    /// The phase an event belongs to, opened or completed by it as the
    /// case may be. `touched` is what the event changed in the fact graph;
    /// `item_text` its rendering as a memory item, if it has one.
    pub(crate) fn observe(&mut self, seq: u64, event: &Event, touched: &[TouchedEdge], item_text: Option<&str>) {
        let provenance = ProvenanceRef { seq, event_id: event.id };
        self.completed_by_last_event = LastCompleted(None);
        if let EventKind::TaskUpdated(task) = &event.kind
            && let Some(title) = &task.title
        {
            self.task_titles.insert(task.task_id.clone(), title.clone());
        }
        match &event.kind {
            EventKind::PhaseCompressed(compressed) => {
                self.apply_compressed(compressed, provenance);
                return;
            }
            EventKind::PhaseStarted(started) => {
                let index = self.open_phase(seq, event, PhaseBoundary::Explicit, started.phase.clone());
                let phase = &mut self.phases[index];
                phase.goal = started.goal.clone();
                phase.provenance.push(provenance);
                phase.notes.observe(seq, event, touched, item_text);
                self.open_explicit.push(index);
                self.uses_explicit_phases = true;
                return;
            }
            EventKind::PhaseCompleted(completed) => {
                let target = self.open_explicit.iter().rposition(|&index| {
                    let phase = &self.phases[index];
                    match completed.phase_id {
                        Some(id) => phase.phase_id == id.to_string(),
                        None => phase.name == completed.phase,
                    }
                });
                let target = target.or_else(|| {
                    (completed.phase_id.is_none() && !self.open_explicit.is_empty())
                        .then(|| self.open_explicit.len() - 1)
                });
                if let Some(position) = target {
                    let index = self.open_explicit.remove(position);
                    let phase = &mut self.phases[index];
                    phase.event_seqs.push(seq);
                    phase.notes.observe(seq, event, touched, item_text);
                    phase.outcome = completed.outcome.clone();
                    phase.provenance.push(provenance);
                    self.complete(index, seq, event.ts);
                    return;
                }
            }
            _ => {}
        }
        if let Some(&index) = self.open_explicit.last() {
            let phase = &mut self.phases[index];
            phase.event_seqs.push(seq);
            phase.notes.observe(seq, event, touched, item_text);
            return;
        }
        let Some(task) = event.correlation_id.clone() else { return };
        let index = match self.open_by_task.get(&task) {
            Some(&index) => index,
            // Opening or assigning a task is not work on it; and an agent
            // that delimits its phases explicitly gets no task phases.
            None if self.uses_explicit_phases || is_task_opening(&event.kind) => return,
            None => {
                let name = self.task_titles.get(&task).cloned().unwrap_or_else(|| task.clone());
                let index = self.open_phase(seq, event, PhaseBoundary::Task, name);
                self.phases[index].provenance.push(provenance);
                self.open_by_task.insert(task.clone(), index);
                index
            }
        };
        let phase = &mut self.phases[index];
        if phase.event_seqs.last() != Some(&seq) {
            phase.event_seqs.push(seq);
        }
        phase.notes.observe(seq, event, touched, item_text);
        if let EventKind::TaskUpdated(update) = &event.kind
            && update.task_id == task
            && matches!(update.status, TaskStatus::Done | TaskStatus::Cancelled)
        {
            self.open_by_task.remove(&task);
            let phase = &mut self.phases[index];
            phase.outcome = update.note.clone().or_else(|| update.title.clone()).or_else(|| {
                Some(if update.status == TaskStatus::Done { "done".to_string() } else { "cancelled".to_string() })
            });
            phase.provenance.push(provenance);
            self.complete(index, seq, event.ts);
        }
    }

    fn open_phase(&mut self, seq: u64, event: &Event, boundary: PhaseBoundary, name: String) -> usize {
        let index = self.phases.len();
        let phase_id = event.id.to_string();
        self.index_by_id.insert(phase_id.clone(), index);
        self.phases.push(Phase {
            phase_id,
            name,
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
        });
        index
    }

    fn complete(&mut self, index: usize, seq: u64, at: Timestamp) {
        self.completed_by_last_event = LastCompleted(Some(index));
        let phase = &mut self.phases[index];
        phase.completed_seq = Some(seq);
        phase.completed_at = Some(at);
        // A model's summary recorded before completion (a publisher may
        // compress a phase it knows is over) is kept.
        if phase.levels.is_none() {
            phase.levels = Some(compress::extractive_levels(phase));
        }
        self.roll_up(index);
    }

    fn apply_compressed(&mut self, compressed: &PhaseCompressed, provenance: ProvenanceRef) {
        let Some(&index) = self.index_by_id.get(&compressed.phase_id.to_string()) else { return };
        let phase = &mut self.phases[index];
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

    /// A purge: drops from every phase what the purged events said. Notes
    /// that carry a seq (messages, decisions) lose the purged ones; names
    /// noted without one (files, symbols, commands, errors) stay only if the
    /// purged graph still knows them, that is if another event says them;
    /// fact and handoff notes go whole when one of their events is purged.
    /// A phase's name and goal go with a purged opening event, its outcome
    /// with a purged closing one, a task's title with a purged task update.
    /// Completed phases get extractive levels again, because a model's may
    /// quote the purged text, and a model summary that arrives later for a
    /// redacted phase is not applied.
    pub(crate) fn redact(&mut self, purged: &BTreeMap<u64, PurgedEvent>, graph: &FactGraph) {
        for purged_event in purged.values().filter(|purged_event| purged_event.kind == "task_updated") {
            if let Some(task) = &purged_event.task {
                self.task_titles.remove(task);
            }
        }
        let mut touched = Vec::new();
        for (index, phase) in self.phases.iter_mut().enumerate() {
            let hit: Vec<&PurgedEvent> = phase.event_seqs.iter().filter_map(|seq| purged.get(seq)).collect();
            if hit.is_empty() {
                continue;
            }
            phase.redacted = true;
            if hit.iter().any(|purged_event| purged_event.kind == "task_updated") {
                if let Some(task) = &phase.task {
                    self.task_titles.remove(task);
                }
            }
            redact_notes(&mut phase.notes, purged, &hit, graph);
            if purged.contains_key(&phase.started_seq) {
                phase.name = phase.task.clone().unwrap_or_else(|| PURGED_PHASE_NAME.to_string());
                phase.goal = None;
            }
            if phase.completed_seq.is_some_and(|seq| purged.contains_key(&seq)) {
                phase.outcome = None;
            }
            if phase.is_completed() {
                phase.levels = Some(compress::extractive_levels(phase));
                touched.push(index);
            }
        }
        for index in touched {
            self.summarise(index);
        }
    }

    /// Rebuilds the lookup maps after a restore.
    pub(crate) fn rebuild_index(&mut self) {
        self.index_by_id =
            self.phases.iter().enumerate().map(|(index, phase)| (phase.phase_id.clone(), index)).collect();
    }

    /// Tokens of a text, for callers that show levels.
    pub fn tokens_of(text: &str) -> usize {
        tokens::count(text)
    }
}

impl PhaseTracker {
    pub(crate) fn hash_into(&self, hasher: &mut ContentHasher) {
        hasher.number(self.phases.len() as u64);
        for phase in &self.phases {
            hasher.text(&phase.phase_id);
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
            // Every field of the notes is ordered (sorted sets, log-order
            // lists), so their debug form is a function of the events.
            hasher.text(&format!("{:?}", phase.notes));
            match &phase.levels {
                Some(levels) => {
                    for text in
                        [&levels.compressor, &levels.index, &levels.compressed, &levels.summary, &levels.findings]
                    {
                        hasher.text(text);
                    }
                }
                None => hasher.text(""),
            }
            hasher.provenance(&phase.provenance);
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
    }
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
