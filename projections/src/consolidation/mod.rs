//! Consolidation: scans an agent's memory for contradictions, near
//! duplicates, memories to demote or forget, and related memories, and
//! answers with verdicts. Nothing here changes memory: the consolidation
//! actor writes the verdicts to the log as events ([`ConsolidationPlan::events`])
//! and memory applies them like any other event, so a replay applies the
//! same verdicts without deciding again.
//!
//! A scan reads a [`ConsolidationView`], a copy taken in one query, so that
//! it runs away from the actor that answers queries. It is a pure function
//! of the view and the policy.

mod contradictions;
mod decay;
mod dedup;
pub mod lexical;
mod links;
mod policy;
mod shared_scan;
mod view;

use std::collections::BTreeSet;

use mneme_events::{
    ContradictionDetected, Event, EventKind, IdKey, MemoriesLinked, MemoriesMerged, MemoryDecayed, MemoryForgotten,
    MemoryLink, Timestamp,
};

pub use contradictions::{ContradictionVerdict, contradiction_id};
pub use decay::{Age, DecayVerdict, decay_score};
pub use dedup::MergeVerdict;
pub use links::LinkVerdict;
pub use policy::{BUILT_IN_MULTI_VALUED_PREDICATES, ConsolidationPolicy};
pub use shared_scan::SharedScan;

pub use view::{ConsolidationView, DecisionView, FactView, MAX_LINK_ENTITY_ITEMS, consolidation_view};

/// Links per `memories_linked` event.
const LINKS_PER_EVENT: usize = 256;

/// Everything one scan decided about one agent's memory.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConsolidationPlan {
    pub swarm: String,
    pub agent: String,
    /// The memory's checkpoint when it was read.
    pub checkpoint: u64,
    pub contradictions: Vec<ContradictionVerdict>,
    pub merges: Vec<MergeVerdict>,
    /// Demotions and forgettings.
    pub decays: Vec<DecayVerdict>,
    pub links: Vec<LinkVerdict>,
    /// Verdicts left for the next run because of `max_outcomes_per_run`.
    pub deferred: usize,
}

impl ConsolidationPlan {
    pub fn is_empty(&self) -> bool {
        self.contradictions.is_empty() && self.merges.is_empty() && self.decays.is_empty() && self.links.is_empty()
    }

    /// How many verdicts the plan holds.
    pub fn outcomes(&self) -> usize {
        self.contradictions.len() + self.merges.len() + self.decays.len() + self.links.len()
    }

    pub fn forgotten_count(&self) -> usize {
        self.decays.iter().filter(|verdict| verdict.forget).count()
    }

    pub fn decayed_count(&self) -> usize {
        self.decays.iter().filter(|verdict| !verdict.forget).count()
    }

    /// The verdicts as events of the agent, stamped `ts` (the run's time).
    /// Ids are derived, under the deployment's `id_key`, from the verdict
    /// and the checkpoint read, so the same run written twice is
    /// deduplicated and no client can take an id before the verdict.
    pub fn events(&self, ts: Timestamp, id_key: &IdKey) -> Vec<Event> {
        let checkpoint = self.checkpoint;
        let event = |kind_key: String, kind: EventKind| {
            let id = id_key.derive(&self.agent, kind.name(), &kind_key);
            Event::new(&self.swarm, &self.agent, kind).with_id(id).with_ts(ts)
        };
        let mut events = Vec::new();
        for verdict in &self.contradictions {
            events.push(event(
                verdict.contradiction_id.clone(),
                EventKind::ContradictionDetected(ContradictionDetected {
                    contradiction_id: verdict.contradiction_id.clone(),
                    a: verdict.a.clone(),
                    b: verdict.b.clone(),
                    reason: verdict.reason.clone(),
                    rule: Some(verdict.rule.to_string()),
                }),
            ));
        }
        for verdict in &self.merges {
            events.push(event(
                format!("{checkpoint}\n{}\n{}", verdict.survivor, verdict.merged.join("\n")),
                EventKind::MemoriesMerged(MemoriesMerged {
                    survivor: verdict.survivor.clone(),
                    merged: verdict.merged.clone(),
                    similarity: Some(verdict.similarity),
                }),
            ));
        }
        for verdict in &self.decays {
            let key = format!("{checkpoint}\n{}", verdict.item_id);
            events.push(if verdict.forget {
                event(
                    key,
                    EventKind::MemoryForgotten(MemoryForgotten {
                        item_id: verdict.item_id.clone(),
                        reason: Some(format!("consolidation: {}", verdict.reason)),
                    }),
                )
            } else {
                event(
                    key,
                    EventKind::MemoryDecayed(MemoryDecayed { item_id: verdict.item_id.clone(), score: verdict.score }),
                )
            });
        }
        for (batch, links) in self.links.chunks(LINKS_PER_EVENT).enumerate() {
            let links: Vec<MemoryLink> = links
                .iter()
                .map(|link| MemoryLink { a: link.a.clone(), b: link.b.clone(), reason: link.reason.clone() })
                .collect();
            events.push(event(
                format!("{checkpoint}\n{batch}\n{}\n{}", links[0].a, links[0].b),
                EventKind::MemoriesLinked(MemoriesLinked { links }),
            ));
        }
        events
    }
}

/// Scans one memory alone: [`consolidate_with`] the shared items of this
/// memory only.
pub fn consolidate(view: &ConsolidationView, policy: &ConsolidationPolicy) -> ConsolidationPlan {
    consolidate_with(view, policy, &SharedScan::new(&[view], policy))
}

/// Scans one memory of a run, reading what the run worked out once for
/// the swarm's shared items from `shared` ([`SharedScan::new`] over every
/// memory of the run). Contradictions come first and protect their sides
/// from the other passes of the same run; merged items are neither decayed
/// nor linked; at most `max_outcomes_per_run` verdicts are kept, in that
/// order of priority (contradictions, merges, forgetting, demotion, links).
pub fn consolidate_with(
    view: &ConsolidationView,
    policy: &ConsolidationPolicy,
    shared: &SharedScan,
) -> ConsolidationPlan {
    let contradictions = contradictions::contradiction_verdicts(view, policy);
    let mut protected_view;
    let view = if contradictions.is_empty() {
        view
    } else {
        protected_view = view.clone();
        for verdict in &contradictions {
            protected_view.in_open_contradictions.insert(verdict.a.clone());
            protected_view.in_open_contradictions.insert(verdict.b.clone());
        }
        &protected_view
    };
    let (merges, value_conflicts) = dedup::merge_verdicts(view, policy, shared);
    let mut contradictions = contradictions;
    contradictions.extend(contradictions::value_conflict_verdicts(view, &value_conflicts));
    let merged: BTreeSet<&str> = merges.iter().flat_map(|verdict| verdict.merged.iter().map(String::as_str)).collect();
    // A fact stops holding at its valid_to; "now" is the latest event time
    // in the memory (no clock: a replay judges the same), so a fact valid
    // until a later date still holds.
    let latest_event_time = view.items.iter().map(|item| item.ts).max();
    let still_holds = |fact: &&FactView| fact.valid_to.is_none_or(|to| Some(to) > latest_event_time);
    let superseded: BTreeSet<u64> = view
        .decisions
        .iter()
        .filter(|decision| decision.closed)
        .map(|decision| decision.seq)
        .chain(view.facts.iter().filter(|fact| !still_holds(fact)).map(|fact| fact.seq))
        .collect();
    let valid_facts: BTreeSet<u64> = view.facts.iter().filter(still_holds).map(|fact| fact.seq).collect();
    let active_decisions: BTreeSet<u64> =
        view.decisions.iter().filter(|decision| !decision.closed).map(|decision| decision.seq).collect();
    let mut decays = decay::decay_verdicts(view, policy, &superseded, &valid_facts, &active_decisions);
    // Neither the merged nor their survivors: a survivor answers for what
    // was merged into it, and its age is judged again by the next run, which
    // sees when it was last said.
    let survivors: BTreeSet<&str> = merges.iter().map(|verdict| verdict.survivor.as_str()).collect();
    // Nor the sides of a contradiction found by this scan (the ones found
    // first are protected in the view already).
    let disputed: BTreeSet<&str> =
        contradictions.iter().flat_map(|verdict| [verdict.a.as_str(), verdict.b.as_str()]).collect();
    decays.retain(|verdict| {
        let id = verdict.item_id.as_str();
        !merged.contains(id) && !survivors.contains(id) && !disputed.contains(id)
    });
    // Forgetting before demotion when the budget runs out.
    decays.sort_by_key(|verdict| (!verdict.forget, verdict.seq));
    let gone: BTreeSet<&str> = merged
        .iter()
        .copied()
        .chain(decays.iter().filter(|verdict| verdict.forget).map(|verdict| verdict.item_id.as_str()))
        .collect();
    let links = links::link_verdicts(view, policy, &gone);
    let mut plan = ConsolidationPlan {
        swarm: view.swarm.clone(),
        agent: view.agent.clone(),
        checkpoint: view.checkpoint,
        contradictions,
        merges,
        decays,
        links,
        deferred: 0,
    };
    plan.keep_at_most(policy.max_outcomes_per_run);
    plan
}

/// Shares a run's `limit` verdicts among the plans of every memory it
/// scanned, so that a run writes at most `limit` whatever the number of
/// memories (issue 35, F6: one flood made each memory's plan full, and a
/// run wrote 20,000 verdicts per memory). Each plan gets an equal share,
/// and what a smaller plan does not need goes to the larger ones; the rest
/// is deferred to the next run.
pub fn share_run_budget(plans: &mut [&mut ConsolidationPlan], limit: usize) {
    let mut sizes: Vec<(usize, usize)> =
        plans.iter().enumerate().map(|(index, plan)| (plan.outcomes(), index)).collect();
    sizes.sort_unstable();
    let mut room = limit;
    let mut allowance = vec![0; plans.len()];
    for (left, (size, index)) in (1..=sizes.len()).rev().zip(sizes) {
        let kept = size.min(room / left);
        allowance[index] = kept;
        room -= kept;
    }
    for (plan, allowance) in plans.iter_mut().zip(allowance) {
        plan.keep_at_most(allowance);
    }
}

impl ConsolidationPlan {
    /// Keeps the first `limit` verdicts (contradictions, then merges,
    /// decays and links) and counts the rest as deferred.
    pub fn keep_at_most(&mut self, limit: usize) {
        let mut room = limit;
        let mut take = |length: usize| {
            let kept = length.min(room);
            room -= kept;
            kept
        };
        let contradictions = take(self.contradictions.len());
        let merges = take(self.merges.len());
        let decays = take(self.decays.len());
        let links = take(self.links.len());
        self.deferred += (self.contradictions.len() - contradictions)
            + (self.merges.len() - merges)
            + (self.decays.len() - decays)
            + (self.links.len() - links);
        self.contradictions.truncate(contradictions);
        self.merges.truncate(merges);
        self.decays.truncate(decays);
        self.links.truncate(links);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan_of(decays: usize) -> ConsolidationPlan {
        let verdict = |seq: usize| DecayVerdict {
            item_id: format!("item-{seq}"),
            seq: seq as u64,
            score: 0.0,
            forget: true,
            reason: String::new(),
        };
        ConsolidationPlan { decays: (0..decays).map(verdict).collect(), ..ConsolidationPlan::default() }
    }

    /// Issue 35, F6: after a flood each memory's plan was full, and a run
    /// wrote `max_outcomes_per_run` verdicts per memory. A run's verdicts
    /// are shared among its memories, at most the limit in all.
    #[test]
    fn f6_a_run_keeps_at_most_its_limit_across_every_memory() {
        let mut plans = [plan_of(100), plan_of(3), plan_of(100), plan_of(0)];
        share_run_budget(&mut plans.iter_mut().collect::<Vec<_>>(), 40);
        let kept: Vec<usize> = plans.iter().map(ConsolidationPlan::outcomes).collect();
        let deferred: Vec<usize> = plans.iter().map(|plan| plan.deferred).collect();
        // The small plan keeps all three; the rest is shared equally.
        assert_eq!(kept, [18, 3, 19, 0]);
        assert_eq!(deferred, [82, 0, 81, 0]);
        let mut plans = [plan_of(5), plan_of(7)];
        share_run_budget(&mut plans.iter_mut().collect::<Vec<_>>(), 40);
        assert_eq!(plans.iter().map(ConsolidationPlan::outcomes).collect::<Vec<_>>(), [5, 7], "under the limit");
    }
}
