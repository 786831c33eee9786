//! Forgetting: a decay score per item from its age (in newer items of its
//! agent, not wall-clock time, so the score of a replayed or imported log
//! is the same), its usage, its importance and whether it was superseded.

use std::collections::BTreeSet;

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

/// The decay score: recency halves every `decay_half_life_items` newer
/// items; importance scales it (no opinion counts as 0.5); a superseded or
/// closed item counts half; usage adds or takes a little.
pub fn decay_score(item: &MemoryItem, newer_items: usize, superseded: bool, policy: &ConsolidationPolicy) -> f32 {
    let half_life = policy.decay_half_life_items.max(1) as f32;
    let recency = 0.5f32.powf(newer_items as f32 / half_life);
    let importance = 0.5 + item.importance.unwrap_or(0.5);
    let superseded_factor = if superseded { 0.5 } else { 1.0 };
    let usage = (0.1 * item.usage_score()).clamp(-0.2, 0.5);
    (recency * importance * superseded_factor + usage).max(0.0)
}

/// Where in the memory an item was last said: its own position, or that of
/// the newest near duplicate merged into it. A memory said again is as
/// recent as its last saying, so that a merge never hands a recent
/// statement to an old survivor that is then forgotten for its age.
fn last_said_position(view: &ConsolidationView, position: usize, item: &MemoryItem) -> usize {
    let restated = item
        .provenance
        .iter()
        .map(|reference| reference.seq)
        .filter(|&seq| seq > item.seq && view.item_at(seq).is_some_and(|other| other.state == ItemState::Merged))
        .max();
    restated.and_then(|seq| view.items.binary_search_by_key(&seq, |other| other.seq).ok()).unwrap_or(position)
}

/// Demotes live items whose score fell below `decay_below` and forgets
/// those below `forget_below` (never a protected one, never one of the
/// newest `keep_newest_items`, and only kinds that can be forgotten, which
/// are also never a fact still valid or an item cited more than ignored).
pub fn decay_verdicts(
    view: &ConsolidationView,
    policy: &ConsolidationPolicy,
    superseded: &BTreeSet<u64>,
    valid_facts: &BTreeSet<u64>,
    active_decisions: &BTreeSet<u64>,
) -> Vec<DecayVerdict> {
    let total = view.items.len();
    let mut verdicts = Vec::new();
    for (position, item) in view.items.iter().enumerate() {
        let newer_items = total - last_said_position(view, position, item) - 1;
        if newer_items < policy.keep_newest_items || !is_live(item) {
            continue;
        }
        if protection(item, policy, view, active_decisions).is_some() {
            continue;
        }
        let is_superseded = superseded.contains(&item.seq);
        let score = decay_score(item, newer_items, is_superseded, policy);
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
