//! Contradictions: two memories that cannot both be true.
//!
//! - `single_valued_fact`: the same subject and single-valued predicate
//!   holding different objects over overlapping validity;
//! - `negated_fact`: a fact and its explicit negation (`uses` /
//!   `does_not_use`, or an object and `not` that object) over overlapping
//!   validity, whatever the predicate;
//! - `decision_reversed`: two active decisions on the same question (their
//!   titles say the same thing) with different choices, the later one not
//!   superseding the earlier; a choice that only adds to the other
//!   ("postgres", then "postgres with pgvector") refines it, and is none.

use std::collections::BTreeMap;

use mneme_events::Timestamp;

use super::lexical::{
    content_terms, lexically_equivalent, objects_explicitly_negate, objects_negate, predicate_polarity, refines,
};
use super::policy::ConsolidationPolicy;
use super::view::{ConsolidationView, FactView, is_live, ordered_pair, quoted};

/// Each fact is compared with at most this many earlier facts of its group,
/// so a value rewritten a thousand times costs linear work.
const MAX_COMPARISONS_PER_FACT: usize = 8;
/// Each active decision is compared with at most this many earlier active
/// ones: a reversal comes within a working session, not thousands of
/// decisions later.
const MAX_EARLIER_DECISIONS: usize = 500;

/// A contradiction found by a scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContradictionVerdict {
    pub contradiction_id: String,
    /// The older side's item id.
    pub a: String,
    /// The newer side's item id.
    pub b: String,
    pub rule: &'static str,
    pub reason: String,
}

fn overlaps(a: &FactView, b: &FactView) -> bool {
    let starts_before_end = |from: Option<Timestamp>, to: Option<Timestamp>| match (from, to) {
        (Some(from), Some(to)) => from < to,
        _ => true,
    };
    starts_before_end(a.valid_from, b.valid_to) && starts_before_end(b.valid_from, a.valid_to)
}

/// The id of the contradiction between two items by a rule: the same pair
/// always gets the same id. It names the contradiction, not an event (the
/// `contradiction_detected` event's id is derived with the deployment's
/// key), so it needs no secret.
pub fn contradiction_id(rule: &str, a: &str, b: &str) -> String {
    use sha2::{Digest, Sha256};
    let (first, second) = ordered_pair(a, b);
    let digest = Sha256::new()
        .chain_update([0])
        .chain_update(rule)
        .chain_update([0])
        .chain_update(format!("{first}\n{second}"))
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    format!("contradiction-{:032x}", u128::from_be_bytes(bytes))
}

/// A contradiction found between two items: the older's seq, the newer's,
/// the rule and the reason.
type Finding = (u64, u64, &'static str, String);

pub fn contradiction_verdicts(view: &ConsolidationView, policy: &ConsolidationPolicy) -> Vec<ContradictionVerdict> {
    let live = |seq: u64| view.item_at(seq).filter(|item| is_live(item));
    let findings = fact_contradictions(view, policy).into_iter().chain(decision_contradictions(view));
    let mut verdicts = Vec::new();
    for (older, newer, rule, reason) in findings {
        let (Some(a), Some(b)) = (live(older), live(newer)) else { continue };
        if view.reported_pairs.contains(&ordered_pair(&a.item_id, &b.item_id)) {
            continue;
        }
        verdicts.push(ContradictionVerdict {
            contradiction_id: contradiction_id(rule, &a.item_id, &b.item_id),
            a: a.item_id.clone(),
            b: b.item_id.clone(),
            rule,
            reason,
        });
    }
    // One verdict per pair, whichever rule found it first.
    let mut seen = std::collections::BTreeSet::new();
    verdicts.retain(|verdict| seen.insert(ordered_pair(&verdict.a, &verdict.b)));
    verdicts
}

/// Facts of one subject and base predicate (negation stripped) that hold
/// at the same time and cannot: one negates the other, or a single-valued
/// predicate holds two objects.
fn fact_contradictions(view: &ConsolidationView, policy: &ConsolidationPolicy) -> Vec<Finding> {
    let live = |seq: u64| view.item_at(seq).filter(|item| is_live(item));
    // `is_located_in` and `located_in` are one predicate (they share a
    // base); it is single-valued only if neither spelling is multi-valued.
    let single_valued = |fact: &FactView| {
        policy.is_single_valued(&fact.predicate) && policy.is_single_valued(&predicate_polarity(&fact.predicate).0)
    };
    // Opposite objects ("enabled" / "disabled") contradict under a
    // single-valued predicate; under a multi-valued one ("contains frontend"
    // / "contains backend") only an explicit negation does.
    let objects_contradict = |older: &FactView, newer: &FactView| {
        if single_valued(older) && single_valued(newer) {
            objects_negate(&older.object, &newer.object)
        } else {
            objects_explicitly_negate(&older.object, &newer.object)
        }
    };
    let mut groups: BTreeMap<(String, String), Vec<(&FactView, bool)>> = BTreeMap::new();
    for fact in view.facts.iter().filter(|fact| live(fact.seq).is_some()) {
        let (base, negated) = predicate_polarity(&fact.predicate);
        groups.entry((fact.subject.clone(), base)).or_default().push((fact, negated));
    }
    let mut findings = Vec::new();
    for ((subject, base), facts) in &groups {
        for (position, &(newer, newer_negated)) in facts.iter().enumerate() {
            let earlier = facts[..position].iter().rev().take(MAX_COMPARISONS_PER_FACT);
            for &(older, older_negated) in earlier {
                if older.seq == newer.seq || !overlaps(older, newer) {
                    continue;
                }
                let same_object = older.object == newer.object;
                if same_object && older_negated != newer_negated {
                    let reason = format!(
                        "{subject} {} {} and {subject} {} {} hold at the same time",
                        quoted(&older.predicate),
                        quoted(&older.object),
                        quoted(&newer.predicate),
                        quoted(&newer.object),
                        subject = quoted(subject),
                    );
                    findings.push((older.seq, newer.seq, "negated_fact", reason));
                } else if older_negated == newer_negated && objects_contradict(older, newer) {
                    let reason = format!(
                        "{} {}: {:?} negates {:?} at the same time",
                        quoted(subject),
                        quoted(base),
                        quoted(&newer.object),
                        quoted(&older.object)
                    );
                    findings.push((older.seq, newer.seq, "negated_fact", reason));
                } else if !same_object
                    && !older_negated
                    && !newer_negated
                    && single_valued(older)
                    && single_valued(newer)
                {
                    let reason = format!(
                        "{} {} is single-valued but holds both {:?} and {:?} at the same time",
                        quoted(subject),
                        quoted(&newer.predicate),
                        quoted(&older.object),
                        quoted(&newer.object)
                    );
                    findings.push((older.seq, newer.seq, "single_valued_fact", reason));
                }
            }
        }
    }
    findings
}

/// Active decisions on the same question with different choices, neither
/// superseding nor refining the other.
fn decision_contradictions(view: &ConsolidationView) -> Vec<Finding> {
    let live = |seq: u64| view.item_at(seq).filter(|item| is_live(item));
    let mut findings = Vec::new();
    let active: Vec<_> = view
        .decisions
        .iter()
        .filter(|decision| !decision.closed && live(decision.seq).is_some())
        .map(|decision| (decision, content_terms(&decision.title), content_terms(&decision.choice)))
        .collect();
    for (position, (newer, newer_title, newer_choice)) in active.iter().enumerate() {
        let window = position.saturating_sub(MAX_EARLIER_DECISIONS)..position;
        for (older, older_title, older_choice) in &active[window] {
            let same_question = lexically_equivalent(older_title, newer_title);
            if !same_question || lexically_equivalent(older_choice, newer_choice) || refines(older_choice, newer_choice)
            {
                continue;
            }
            let reason = format!(
                "decision {:?} chose {:?}, a later one chose {:?} without superseding it",
                quoted(&older.title),
                quoted(&older.choice),
                quoted(&newer.choice)
            );
            findings.push((older.seq, newer.seq, "decision_reversed", reason));
        }
    }
    findings
}

/// Contradictions between near duplicates that say the same but for a
/// value (`conflicts`: older and newer seq, found by the duplicate scan):
/// "approved for Friday" and "approved for Sunday" cannot both hold, and
/// neither may be merged into the other. A pair reported before is not
/// reported again.
pub(super) fn value_conflict_verdicts(view: &ConsolidationView, conflicts: &[(u64, u64)]) -> Vec<ContradictionVerdict> {
    let live = |seq: u64| view.item_at(seq).filter(|item| is_live(item));
    conflicts
        .iter()
        .filter_map(|&(older, newer)| {
            let (a, b) = (live(older)?, live(newer)?);
            if view.reported_pairs.contains(&ordered_pair(&a.item_id, &b.item_id))
                || view.in_open_contradictions.contains(&a.item_id) && view.in_open_contradictions.contains(&b.item_id)
            {
                return None;
            }
            let rule = "value_changed";
            Some(ContradictionVerdict {
                contradiction_id: contradiction_id(rule, &a.item_id, &b.item_id),
                a: a.item_id.clone(),
                b: b.item_id.clone(),
                rule,
                reason: format!(
                    "{:?} and {:?} say the same with another value",
                    quoted(a.text.body()),
                    quoted(b.text.body())
                ),
            })
        })
        .collect()
}
