//! Forgetting: a decay score per item from its age, its usage, its
//! importance and whether it was superseded.
//!
//! An item's age runs on two clocks, both read from the log (so that a
//! replayed or imported log scores the same): the memory's own activity
//! since the item was last said (its agent's items at a later event time,
//! and other agents' items only once this memory cited them), and the event
//! time that activity moved on since. An item is as recent as the younger
//! of the two ages makes it: another agent's flood of shared items is not
//! this memory's activity, and a burst at one event time ages nothing
//! (issue 35, F1).

use std::collections::BTreeSet;

use mneme_events::Timestamp;

use crate::item::{ItemState, MemoryItem};

use super::policy::ConsolidationPolicy;
use super::view::{ConsolidationView, is_live};

/// Kinds that consolidation may forget outright once they decay far
/// enough; others (handoffs, preferences, tasks, phases) are only demoted.
const FORGETTABLE_KINDS: &[&str] = &["message_recorded", "tool_result_recorded", "decision_made", "fact_asserted"];

/// What the decay pass decided for one item.
#[derive(Debug, Clone, PartialEq)]
pub struct DecayVerdict {
    pub item_id: String,
    pub seq: u64,
    pub score: f32,
    /// Forget (soft-delete) rather than demote.
    pub forget: bool,
    pub reason: String,
}

/// Items consolidation must never decay or forget, with why.
pub(crate) fn protection(
    item: &MemoryItem,
    policy: &ConsolidationPolicy,
    view: &ConsolidationView,
    active_decisions: &BTreeSet<u64>,
) -> Option<&'static str> {
    if item.pinned {
        return Some("pinned");
    }
    if item.importance.is_some_and(|importance| importance >= policy.important_from) {
        return Some("important");
    }
    if view.in_open_contradictions.contains(&item.item_id) {
        return Some("in an open contradiction");
    }
    if active_decisions.contains(&item.seq) {
        return Some("an active decision");
    }
    if item.kind == "preference_set" {
        return Some("a preference");
    }
    None
}

/// An item's age: see the module's documentation.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Age {
    /// Items of the memory's own activity at a later event time.
    pub newer_items: usize,
    /// How far the memory's activity moved on in event time, in seconds.
    pub elapsed_secs: f64,
}

/// The decay score: recency halves every `decay_half_life_items` newer
/// items of the memory's own activity and every `decay_half_life_secs` of
/// event time, whichever clock makes the item younger; importance scales
/// it (no opinion counts as 0.5); a superseded or closed item counts half;
/// usage adds or takes a little.
pub fn decay_score(item: &MemoryItem, age: Age, superseded: bool, policy: &ConsolidationPolicy) -> f32 {
    let by_items = age.newer_items as f64 / policy.decay_half_life_items.max(1) as f64;
    let by_time = age.elapsed_secs.max(0.0) / policy.decay_half_life_secs.max(1) as f64;
    let recency = 0.5f32.powf(by_items.min(by_time) as f32);
    let importance = 0.5 + item.importance.unwrap_or(0.5);
    let superseded_factor = if superseded { 0.5 } else { 1.0 };
    let usage = (0.1 * item.usage_score()).clamp(-0.2, 0.5);
    (recency * importance * superseded_factor + usage).max(0.0)
}

/// The memory's own activity (see the module's documentation): its items'
/// event times, sorted, in milliseconds.
struct Activity {
    times: Vec<i64>,
}

impl Activity {
    fn of(view: &ConsolidationView) -> Activity {
        let mut times: Vec<i64> = view
            .items
            .iter()
            .filter(|item| item.agent == view.agent || item.citations > 0)
            .map(|item| item.ts.0)
            .collect();
        times.sort_unstable();
        Activity { times }
    }

    /// The age of what was last said at `said`.
    fn age_since(&self, said: Timestamp) -> Age {
        let newer_items = self.times.len() - self.times.partition_point(|&time| time <= said.0);
        let newest = self.times.last().copied().unwrap_or(said.0);
        Age { newer_items, elapsed_secs: newest.saturating_sub(said.0).max(0) as f64 / 1000.0 }
    }
}

/// When an item was last said: its own event time, or that of the newest
/// near duplicate merged into it. A memory said again is as recent as its
/// last saying, so that a merge never hands a recent statement to an old
/// survivor that is then forgotten for its age.
fn last_said(view: &ConsolidationView, item: &MemoryItem) -> Timestamp {
    item.provenance
        .iter()
        .map(|reference| reference.seq)
        .filter(|&seq| seq > item.seq)
        .filter_map(|seq| view.item_at(seq).filter(|other| other.state == ItemState::Merged))
        .map(|other| other.ts)
        .fold(item.ts, |newest, ts| newest.max(ts))
}

/// Demotes live items whose score fell below `decay_below` and forgets
/// those below `forget_below` (never a protected one, never one said before
/// fewer than `keep_newest_items` of the memory's own activity, and only kinds that can be forgotten, which
/// are also never a fact still valid or an item cited more than ignored).
pub fn decay_verdicts(
    view: &ConsolidationView,
    policy: &ConsolidationPolicy,
    superseded: &BTreeSet<u64>,
    valid_facts: &BTreeSet<u64>,
    active_decisions: &BTreeSet<u64>,
) -> Vec<DecayVerdict> {
    let activity = Activity::of(view);
    let mut verdicts = Vec::new();
    for item in view.items.iter() {
        if !is_live(item) {
            continue;
        }
        let age = activity.age_since(last_said(view, item));
        if age.newer_items < policy.keep_newest_items {
            continue;
        }
        if protection(item, policy, view, active_decisions).is_some() {
            continue;
        }
        let is_superseded = superseded.contains(&item.seq);
        let score = decay_score(item, age, is_superseded, policy);
        let may_forget = FORGETTABLE_KINDS.contains(&item.kind)
            && !valid_facts.contains(&item.seq)
            && item.citations <= item.ignored;
        if score < policy.forget_below && may_forget {
            verdicts.push(DecayVerdict {
                item_id: item.item_id.clone(),
                seq: item.seq,
                score,
                forget: true,
                reason: format!("decay score {score:.3} below {}", policy.forget_below),
            });
        } else if score < policy.decay_below && item.state == ItemState::Active {
            verdicts.push(DecayVerdict {
                item_id: item.item_id.clone(),
                seq: item.seq,
                score,
                forget: false,
                reason: format!("decay score {score:.3} below {}", policy.decay_below),
            });
        }
    }
    verdicts
}
