//! The phase tracker in a memory snapshot, the other agents' shared phases
//! included. Lookup maps are rebuilt on restore; everything else is stored
//! as it is.

use std::collections::BTreeMap;

use mneme_events::{EventId, Timestamp};

use super::{Phase, PhaseBoundary, PhaseLevels, PhaseNotes, PhaseTracker, TaskSummary};
use crate::item::ProvenanceRef;

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub(crate) struct PhaseTrackerRecord {
    phases: Vec<PhaseRecord>,
    open_explicit: Vec<u64>,
    open_by_task: Vec<(String, u64)>,
    task_titles: Vec<(String, String)>,
    tasks: Vec<TaskSummary>,
    task_order: Vec<String>,
    session_summary: String,
    uses_explicit_phases: bool,
    shared: Vec<PhaseRecord>,
    open_shared: Vec<u64>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct PhaseRecord {
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
            phases: self.phases.iter().map(PhaseRecord::of).collect(),
            open_explicit: self.open_explicit.iter().map(|&index| index as u64).collect(),
            open_by_task: self.open_by_task.iter().map(|(task, &index)| (task.clone(), index as u64)).collect(),
            task_titles: self.task_titles.iter().map(|(task, title)| (task.clone(), title.clone())).collect(),
            tasks: self.tasks.values().cloned().collect(),
            task_order: self.task_order.clone(),
            session_summary: self.session_summary.clone(),
            uses_explicit_phases: self.uses_explicit_phases,
            shared: self.shared.iter().map(PhaseRecord::of).collect(),
            open_shared: self.open_shared.iter().map(|&index| index as u64).collect(),
        }
    }

    pub(crate) fn from_record(record: PhaseTrackerRecord) -> Result<PhaseTracker, String> {
        let phase_count = record.phases.len() as u64;
        if let Some(bad) = record
            .open_explicit
            .iter()
            .chain(record.open_by_task.iter().map(|(_, index)| index))
            .find(|&&index| index >= phase_count)
        {
            return Err(format!("open phase index {bad} is past the {phase_count} phases"));
        }
        let shared_count = record.shared.len() as u64;
        if let Some(bad) = record.open_shared.iter().find(|&&index| index >= shared_count) {
            return Err(format!("open shared phase index {bad} is past the {shared_count} shared phases"));
        }
        let mut tracker = PhaseTracker {
            phases: record.phases.into_iter().map(PhaseRecord::into_phase).collect(),
            shared: record.shared.into_iter().map(PhaseRecord::into_phase).collect(),
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
