//! Hierarchical roll-ups: the completed phases of a task into a task
//! summary, and tasks into a session summary, each bounded in tokens, newest
//! first, so the summary of a swarm that ran for a week is as short as that
//! of one that ran for an hour.

use super::compress::fit_lines_to;
use super::{Phase, PhaseLevel, PhaseTracker, SESSION_SUMMARY_TOKENS};

/// Tasks the session summary shows at their latest phase's `compressed`
/// level; older tasks get their index line.
const DETAILED_TASKS: usize = 3;

/// The task of phases that have no correlation id.
pub(crate) const NO_TASK: &str = "(no task)";

/// A task's completed phases, rolled up.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct TaskSummary {
    pub task: String,
    pub title: Option<String>,
    /// Completed phases of the task, in order of completion.
    pub phase_ids: Vec<String>,
    /// At most `summary`-level tokens (128).
    pub summary: String,
    /// At most `index`-level tokens (8).
    pub index: String,
}

pub(crate) fn task_summary(task: &str, title: Option<&String>, phases: &[Phase]) -> TaskSummary {
    let mut completed: Vec<&Phase> = phases
        .iter()
        .filter(|phase| phase.is_completed() && phase.task.as_deref().unwrap_or(NO_TASK) == task)
        .collect();
    completed.sort_by_key(|phase| phase.completed_seq);
    let heading = match title {
        Some(title) if title != task => format!("Task {task} ({title}), {} phases:", completed.len()),
        _ => format!("Task {task}, {} phases:", completed.len()),
    };
    // Newest phases at their compressed level; older ones fall to their
    // index line, then out, while the bound holds.
    let mut lines = vec![heading.clone()];
    let levels: Vec<(&str, &str)> = completed
        .iter()
        .rev()
        .filter_map(|phase| phase.levels.as_ref().map(|levels| (levels.compressed.as_str(), levels.index.as_str())))
        .collect();
    let bound = PhaseLevel::Summary.token_bound().expect("summary has a bound");
    let mut shown = 0;
    for (compressed, index) in &levels {
        let mut with_compressed = lines.clone();
        with_compressed.push(format!("- {compressed}"));
        if mneme_index::tokens::count(&with_compressed.join("\n")) <= bound {
            lines = with_compressed;
            shown += 1;
            continue;
        }
        let mut with_index = lines.clone();
        with_index.push(format!("- {index}"));
        if mneme_index::tokens::count(&with_index.join("\n")) <= bound {
            lines = with_index;
            shown += 1;
            continue;
        }
        break;
    }
    if shown < levels.len() {
        lines.push(format!("(+{} earlier phases)", levels.len() - shown));
    }
    // A task's index line is what its latest phase came to: its id is
    // shown beside it wherever it is listed.
    let index_line = match (completed.last().and_then(|phase| phase.levels.as_ref()), title) {
        (Some(levels), _) => levels.index.clone(),
        (None, Some(title)) => title.clone(),
        (None, None) => task.to_string(),
    };
    TaskSummary {
        task: task.to_string(),
        title: title.cloned(),
        phase_ids: completed.iter().map(|phase| phase.phase_id.clone()).collect(),
        summary: fit_lines_to(&lines, bound),
        index: super::fit_to_tokens(&index_line, PhaseLevel::Index),
    }
}

pub(crate) fn session_summary(tracker: &PhaseTracker) -> String {
    let phases = tracker.phases.iter().filter(|phase| phase.is_completed()).count();
    let tasks = tracker.tasks.len();
    let mut lines = vec![format!("Session so far: {tasks} tasks, {phases} completed phases. Latest first:")];
    let mut shown = 0;
    // The newest tasks by their latest phase's compressed line, older ones
    // by their index line, while the bound holds (room is kept for the
    // count of the rest).
    for (position, task) in tracker.tasks_newest_first().enumerate() {
        let latest = task.phase_ids.last().and_then(|id| tracker.phase(id)).and_then(|phase| phase.levels.as_ref());
        let line = match latest {
            Some(levels) if position < DETAILED_TASKS && levels.compressed.starts_with(&task.task) => {
                format!("- {}", levels.compressed)
            }
            Some(levels) if position < DETAILED_TASKS => format!("- {}: {}", task.task, levels.compressed),
            _ => format!("- {}: {}", task.task, task.index),
        };
        let mut candidate = lines.clone();
        candidate.push(line);
        if mneme_index::tokens::count(&candidate.join("\n")) + 8 > SESSION_SUMMARY_TOKENS {
            break;
        }
        lines = candidate;
        shown += 1;
    }
    if shown < tasks {
        lines.push(format!("(+{} earlier tasks)", tasks - shown));
    }
    fit_lines_to(&lines, SESSION_SUMMARY_TOKENS)
}
