//! The phase tracker in a memory snapshot, the other agents' shared phases
//! included. Lookup maps are rebuilt on restore; everything else is stored
//! as it is. The phases themselves are kept in chunks of [`PHASE_CHUNK`]
//! by index, apart from the head: a memory of thousands of phases, each
//! with its notes and levels, rewrote them all at every checkpoint (17 MiB
//! of a 64 MiB checkpoint at 200,000 items); now only the chunks of the
//! phases that changed are written.

use std::collections::BTreeMap;

use mneme_events::{EventId, Timestamp};

use super::{PHASE_CHUNK, Phase, PhaseBoundary, PhaseChanges, PhaseLevels, PhaseNotes, PhaseTracker, TaskSummary};
use crate::chunks::PhasePart;
use crate::item::ProvenanceRef;

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct PhaseTrackerRecord {
    /// How many of the agent's own phases, and of the shared ones, the
    /// chunks hold.
    phase_count: u64,
    shared_count: u64,
    open_explicit: Vec<u64>,
    open_by_task: Vec<(String, u64)>,
    task_titles: Vec<(String, String)>,
    tasks: Vec<TaskSummary>,
    task_order: Vec<String>,
    session_summary: String,
    uses_explicit_phases: bool,
    open_shared: Vec<u64>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct PhaseRecord {
    phase_id: String,
    agent: String,
    name: String,
    boundary: PhaseBoundary,
    task: Option<String>,
    goal: Option<String>,
    outcome: Option<String>,
    started_seq: u64,
    started_at: Timestamp,
    completed_seq: Option<u64>,
    completed_at: Option<Timestamp>,
    event_seqs: Vec<u64>,
    notes: PhaseNotes,
    levels: Option<PhaseLevels>,
    provenance: Vec<(u64, u128)>,
    redacted: bool,
}

impl PhaseTracker {
    pub(crate) fn to_record(&self) -> PhaseTrackerRecord {
        PhaseTrackerRecord {
            phase_count: self.phases.len() as u64,
            shared_count: self.shared.len() as u64,
            open_explicit: self.open_explicit.iter().map(|&index| index as u64).collect(),
            open_by_task: self.open_by_task.iter().map(|(task, &index)| (task.clone(), index as u64)).collect(),
            task_titles: self.task_titles.iter().map(|(task, title)| (task.clone(), title.clone())).collect(),
            tasks: self.tasks.values().cloned().collect(),
            task_order: self.task_order.clone(),
            session_summary: self.session_summary.clone(),
            uses_explicit_phases: self.uses_explicit_phases,
            open_shared: self.open_shared.iter().map(|&index| index as u64).collect(),
        }
    }

    /// The chunks the phases are kept in now.
    pub(crate) fn parts(&self) -> Vec<PhasePart> {
        let chunks = |count: usize| (0..count.div_ceil(PHASE_CHUNK)).map(|chunk| chunk as u32);
        let mut parts: Vec<PhasePart> = chunks(self.phases.len()).map(PhasePart::Own).collect();
        parts.extend(chunks(self.shared.len()).map(PhasePart::Shared));
        parts
    }

    /// The chunks whose phases changed since [`PhaseTracker::mark_saved`].
    pub(crate) fn changed_parts(&self) -> impl Iterator<Item = PhasePart> + '_ {
        self.changes.0.iter().copied()
    }

    /// What changed is saved now.
    pub(crate) fn mark_saved(&mut self) {
        self.changes = PhaseChanges::default();
    }

    /// The phases of one chunk, as records.
    pub(crate) fn chunk(&self, part: PhasePart) -> Vec<PhaseRecord> {
        let (phases, chunk) = match part {
            PhasePart::Own(chunk) => (&self.phases, chunk),
            PhasePart::Shared(chunk) => (&self.shared, chunk),
        };
        let start = (chunk as usize * PHASE_CHUNK).min(phases.len());
        let end = (start + PHASE_CHUNK).min(phases.len());
        phases[start..end].iter().map(PhaseRecord::of).collect()
    }

    /// The tracker from its head and the records of its chunks, own and
    /// shared, each in index order.
    pub(crate) fn from_record(
        record: PhaseTrackerRecord,
        own: Vec<PhaseRecord>,
        shared: Vec<PhaseRecord>,
    ) -> Result<PhaseTracker, String> {
        if (own.len() as u64, shared.len() as u64) != (record.phase_count, record.shared_count) {
            return Err(format!(
                "the phase chunks hold {} own and {} shared phases where the head announced {} and {}",
                own.len(),
                shared.len(),
                record.phase_count,
                record.shared_count
            ));
        }
        let phase_count = record.phase_count;
        if let Some(bad) = record
            .open_explicit
            .iter()
            .chain(record.open_by_task.iter().map(|(_, index)| index))
            .find(|&&index| index >= phase_count)
        {
            return Err(format!("open phase index {bad} is past the {phase_count} phases"));
        }
        let shared_count = record.shared_count;
        if let Some(bad) = record.open_shared.iter().find(|&&index| index >= shared_count) {
            return Err(format!("open shared phase index {bad} is past the {shared_count} shared phases"));
        }
        let mut tracker = PhaseTracker {
            phases: own.into_iter().map(PhaseRecord::into_phase).collect(),
            shared: shared.into_iter().map(PhaseRecord::into_phase).collect(),
            index_by_id: Default::default(),
            open_explicit: record.open_explicit.into_iter().map(|index| index as usize).collect(),
            open_shared: record.open_shared.into_iter().map(|index| index as usize).collect(),
            open_by_task: record.open_by_task.into_iter().map(|(task, index)| (task, index as usize)).collect(),
            task_titles: record.task_titles.into_iter().collect(),
            tasks: record.tasks.into_iter().map(|task| (task.task.clone(), task)).collect::<BTreeMap<_, _>>(),
            task_order: record.task_order,
            session_summary: record.session_summary,
            uses_explicit_phases: record.uses_explicit_phases,
            completed_by_last_event: Default::default(),
            changes: PhaseChanges::default(),
        };
        tracker.rebuild_index();
        Ok(tracker)
    }
}

impl PhaseRecord {
    fn of(phase: &Phase) -> PhaseRecord {
        PhaseRecord {
            phase_id: phase.phase_id.clone(),
            agent: phase.agent.clone(),
            name: phase.name.clone(),
            boundary: phase.boundary,
            task: phase.task.clone(),
            goal: phase.goal.clone(),
            outcome: phase.outcome.clone(),
            started_seq: phase.started_seq,
            started_at: phase.started_at,
            completed_seq: phase.completed_seq,
            completed_at: phase.completed_at,
            event_seqs: phase.event_seqs.clone(),
            notes: phase.notes.clone(),
            levels: phase.levels.clone(),
            provenance: phase.provenance.iter().map(|reference| (reference.seq, reference.event_id.0)).collect(),
            redacted: phase.redacted,
        }
    }

    fn into_phase(self) -> Phase {
        Phase {
            phase_id: self.phase_id,
            agent: self.agent,
            name: self.name,
            boundary: self.boundary,
            task: self.task,
            goal: self.goal,
            outcome: self.outcome,
            started_seq: self.started_seq,
            started_at: self.started_at,
            completed_seq: self.completed_seq,
            completed_at: self.completed_at,
            event_seqs: self.event_seqs,
            notes: self.notes,
            levels: self.levels,
            provenance: self
                .provenance
                .into_iter()
                .map(|(seq, id)| ProvenanceRef { seq, event_id: EventId(id) })
                .collect(),
            redacted: self.redacted,
        }
    }
}
