//! Which edits fixed which failures.
//!
//! A command that fails opens a watch on each of its errors. Every file
//! edited while the watch is open is remembered with its edit events; a new
//! failure with the same error restarts that error's watch (the edits
//! before it did not fix it). When the same command later passes, each file
//! edited since the error's latest failure `fixes` it, and the watch closes.
//! A pass with no edits (a flaky failure) closes the watch without fixes.

use std::collections::BTreeMap;

use super::model::{EdgeIndex, NodeIndex};
use crate::item::ProvenanceRef;

/// Commands watched at once. A command that fails and is never rerun would
/// otherwise be watched forever; past this many, the one whose latest
/// failure is oldest is forgotten.
pub(crate) const MAX_WATCHED_COMMANDS: usize = 64;

/// Files remembered per watched error. An edit spree touching more files
/// than this says little about which one fixed the failure; the first ones
/// edited are kept.
pub(crate) const MAX_FILES_PER_ERROR: usize = 64;

/// Edit events remembered per file and error; the latest are kept.
pub(crate) const MAX_EDITS_PER_FILE: usize = 16;

/// The failing commands being watched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FailureTracker {
    pub watched: BTreeMap<NodeIndex, WatchedCommand>,
}

/// A command whose latest run failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct WatchedCommand {
    /// Seq of its latest failed run, to evict the stalest.
    pub last_failure_seq: u64,
    /// Its errors, by error node.
    pub errors: BTreeMap<NodeIndex, ErrorWatch>,
}

/// One error of a failing command.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ErrorWatch {
    /// The `fails_with` edge to close when the command passes.
    pub fails_with: EdgeIndex,
    /// Files edited since the latest failure with this error, with the
    /// edit events, by file node.
    pub edits: BTreeMap<NodeIndex, Vec<ProvenanceRef>>,
}

/// What a passing run settles about one error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolution {
    pub error: NodeIndex,
    pub fails_with: EdgeIndex,
    /// Each file that fixes the error, with the edits that did.
    pub fixed_by: Vec<(NodeIndex, Vec<ProvenanceRef>)>,
}

impl FailureTracker {
    /// A run of `command` failed with `errors` (error node, `fails_with`
    /// edge) at `seq`.
    pub(crate) fn record_failure(&mut self, command: NodeIndex, errors: &[(NodeIndex, EdgeIndex)], seq: u64) {
        let watched = self.watched.entry(command).or_default();
        watched.last_failure_seq = seq;
        for &(error, fails_with) in errors {
            watched.errors.insert(error, ErrorWatch { fails_with, edits: BTreeMap::new() });
        }
        self.evict_stalest();
    }

    fn evict_stalest(&mut self) {
        while self.watched.len() > MAX_WATCHED_COMMANDS {
            let stalest = self.watched.iter().min_by_key(|(command, watched)| (watched.last_failure_seq, **command));
            let Some((&command, _)) = stalest else { return };
            self.watched.remove(&command);
        }
    }

    /// `file` was edited by the event `edit`.
    pub(crate) fn record_edit(&mut self, file: NodeIndex, edit: ProvenanceRef) {
        for watched in self.watched.values_mut() {
            for watch in watched.errors.values_mut() {
                if watch.edits.len() >= MAX_FILES_PER_ERROR && !watch.edits.contains_key(&file) {
                    continue;
                }
                let edits = watch.edits.entry(file).or_default();
                if edits.last() != Some(&edit) {
                    edits.push(edit);
                    if edits.len() > MAX_EDITS_PER_FILE {
                        edits.remove(0);
                    }
                }
            }
        }
    }

    /// A run of `command` passed: closes its watch and says what it settled.
    pub(crate) fn resolve(&mut self, command: NodeIndex) -> Vec<Resolution> {
        let Some(watched) = self.watched.remove(&command) else { return Vec::new() };
        watched
            .errors
            .into_iter()
            .map(|(error, watch)| Resolution {
                error,
                fails_with: watch.fails_with,
                fixed_by: watch.edits.into_iter().collect(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use mneme_events::EventId;

    use super::*;

    fn edit(seq: u64) -> ProvenanceRef {
        ProvenanceRef { seq, event_id: EventId(u128::from(seq)) }
    }

    #[test]
    fn edits_after_the_latest_failure_fix_it() {
        let mut tracker = FailureTracker::default();
        let (command, error_a, error_b, file_x, file_y) = (1, 10, 11, 20, 21);
        tracker.record_failure(command, &[(error_a, 100)], 1);
        tracker.record_edit(file_x, edit(2));
        tracker.record_failure(command, &[(error_b, 101)], 3);
        tracker.record_edit(file_y, edit(4));
        let resolutions = tracker.resolve(command);
        assert_eq!(
            resolutions,
            vec![
                Resolution {
                    error: error_a,
                    fails_with: 100,
                    fixed_by: vec![(file_x, vec![edit(2)]), (file_y, vec![edit(4)])]
                },
                Resolution { error: error_b, fails_with: 101, fixed_by: vec![(file_y, vec![edit(4)])] },
            ]
        );
        assert!(tracker.resolve(command).is_empty());
    }

    #[test]
    fn a_repeated_failure_restarts_the_watch() {
        let mut tracker = FailureTracker::default();
        tracker.record_failure(1, &[(10, 100)], 1);
        tracker.record_edit(20, edit(2));
        tracker.record_failure(1, &[(10, 102)], 3);
        let resolutions = tracker.resolve(1);
        assert_eq!(resolutions, vec![Resolution { error: 10, fails_with: 102, fixed_by: vec![] }]);
    }

    #[test]
    fn the_stalest_command_is_forgotten() {
        let mut tracker = FailureTracker::default();
        for command in 0..=MAX_WATCHED_COMMANDS as u32 {
            tracker.record_failure(command, &[(1000, 0)], u64::from(command) + 1);
        }
        assert_eq!(tracker.watched.len(), MAX_WATCHED_COMMANDS);
        assert!(!tracker.watched.contains_key(&0));
    }
}
