//! `[consolidation]`: when consolidation runs on its own and what it looks
//! for. The settings decide what future runs do, never how replay reads past
//! ones: every verdict is on the log as an event.

use std::collections::BTreeSet;
use std::time::Duration;

use mneme_projections::consolidation::{BUILT_IN_MULTI_VALUED_PREDICATES, ConsolidationPolicy};
use serde::Deserialize;

use super::SwarmConfig;

/// When consolidation runs on its own, and what it looks for. Every run
/// writes its verdicts to the log as events, so the settings decide what
/// future runs do, never how replay reads past ones.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ConsolidationSection {
    /// Scheduled runs. On-demand runs (HTTP, `mneme consolidate`) work
    /// either way.
    #[serde(default = "super::yes")]
    pub enabled: bool,
    /// Run every this many ms; 0: no timer.
    #[serde(default = "default_consolidation_interval_ms")]
    pub interval_ms: u64,
    /// Also run after every this many new events in the swarm; 0: not by
    /// count.
    #[serde(default = "default_consolidation_every_events")]
    pub every_events: u64,
    /// Two memories are near duplicates from this embedding cosine up (above 0, at most 1), and only if a lexical check agrees.
    #[serde(default = "default_dedup_cosine")]
    pub dedup_cosine: f32,
    /// Wire names of the item kinds that may be merged; see
    /// [`MERGEABLE_ITEM_KINDS`].
    #[serde(default = "default_dedup_kinds")]
    pub dedup_kinds: Vec<String>,
    /// A memory's recency halves every this many of the memory's own later items (its agent's, and shared ones it cited), or every `decay_half_life_secs` of event time, whichever keeps it younger.
    #[serde(default = "default_decay_half_life_items")]
    pub decay_half_life_items: u64,
    /// The event-time half-life of recency, in seconds (see `decay_half_life_items`).
    #[serde(default = "default_decay_half_life_secs")]
    pub decay_half_life_secs: u64,
    /// Below this recency a memory is demoted out of context (still searchable).
    #[serde(default = "default_decay_below")]
    pub decay_below: f32,
    /// Below this recency a memory is forgotten (out of every query, still in provenance).
    #[serde(default = "default_forget_below")]
    pub forget_below: f32,
    /// Memories at least this important are never demoted or forgotten.
    #[serde(default = "default_important_from")]
    pub important_from: f32,
    /// Memories said before fewer than this many of the memory's later items are never demoted or forgotten.
    #[serde(default = "default_keep_newest_items")]
    pub keep_newest_items: usize,
    /// Predicates that hold one object at a time even if the built-in list
    /// calls them multi-valued.
    #[serde(default)]
    pub single_valued_predicates: Vec<String>,
    /// Predicates added to [`BUILT_IN_MULTI_VALUED_PREDICATES`]; the
    /// built-ins cannot be removed here, only overridden one by one through
    /// `single_valued_predicates`.
    #[serde(default)]
    pub multi_valued_predicates: Vec<String>,
    /// Outcome events one run may write, every memory together (each an equal share; what a small plan leaves goes to the others).
    #[serde(default = "default_max_outcomes_per_run")]
    pub max_outcomes_per_run: usize,
    /// Related-memory links one memory may get per run.
    #[serde(default = "default_max_links_per_item")]
    pub max_links_per_item: usize,
}

fn default_consolidation_interval_ms() -> u64 {
    600_000
}
fn default_consolidation_every_events() -> u64 {
    10_000
}
// The policy's own defaults, so that a file without `[consolidation]` and a
// caller that builds `ConsolidationPolicy::default()` run the same
// consolidation.
fn default_dedup_cosine() -> f32 {
    ConsolidationPolicy::default().dedup_cosine
}
fn default_dedup_kinds() -> Vec<String> {
    ConsolidationPolicy::default().dedup_kinds
}
fn default_decay_half_life_items() -> u64 {
    ConsolidationPolicy::default().decay_half_life_items
}
fn default_decay_half_life_secs() -> u64 {
    ConsolidationPolicy::default().decay_half_life_secs
}
fn default_decay_below() -> f32 {
    ConsolidationPolicy::default().decay_below
}
fn default_forget_below() -> f32 {
    ConsolidationPolicy::default().forget_below
}
fn default_important_from() -> f32 {
    ConsolidationPolicy::default().important_from
}
fn default_keep_newest_items() -> usize {
    ConsolidationPolicy::default().keep_newest_items
}
fn default_max_outcomes_per_run() -> usize {
    ConsolidationPolicy::default().max_outcomes_per_run
}
fn default_max_links_per_item() -> usize {
    ConsolidationPolicy::default().max_links_per_item
}

/// Kinds whose items consolidation may merge: those whose events become
/// memory items (`mneme_projections` `render`) and whose items are knowledge
/// that can be said twice. Left out: `decision_made`, and the phase and
/// handoff markers; [`ConsolidationSection::check`] says why.
const MERGEABLE_ITEM_KINDS: &[&str] = &[
    "message_recorded",
    "tool_result_recorded",
    "fact_asserted",
    "fact_retracted",
    "handoff_sent",
    "preference_set",
    "task_updated",
];

impl Default for ConsolidationSection {
    fn default() -> Self {
        ConsolidationSection {
            enabled: true,
            interval_ms: default_consolidation_interval_ms(),
            every_events: default_consolidation_every_events(),
            dedup_cosine: default_dedup_cosine(),
            dedup_kinds: default_dedup_kinds(),
            decay_half_life_items: default_decay_half_life_items(),
            decay_half_life_secs: default_decay_half_life_secs(),
            decay_below: default_decay_below(),
            forget_below: default_forget_below(),
            important_from: default_important_from(),
            keep_newest_items: default_keep_newest_items(),
            single_valued_predicates: Vec::new(),
            multi_valued_predicates: Vec::new(),
            max_outcomes_per_run: default_max_outcomes_per_run(),
            max_links_per_item: default_max_links_per_item(),
        }
    }
}

impl ConsolidationSection {
    pub(super) fn check(&self) -> Result<(), String> {
        // Written so that NaN fails too: every comparison with NaN is false.
        if !(self.dedup_cosine > 0.0 && self.dedup_cosine <= 1.0) {
            return Err(format!(
                "consolidation.dedup_cosine = {}; expected a number above 0 and at most 1",
                self.dedup_cosine
            ));
        }
        let fractions = [
            ("consolidation.decay_below", self.decay_below),
            ("consolidation.forget_below", self.forget_below),
            ("consolidation.important_from", self.important_from),
        ];
        for (key, value) in fractions {
            if !(0.0..=1.0).contains(&value) {
                return Err(format!("{key} = {value}; expected a number from 0 to 1"));
            }
        }
        if self.forget_below > self.decay_below {
            return Err(format!(
                "consolidation.forget_below = {} is above consolidation.decay_below = {}; expected at most \
                 decay_below: an item is demoted before it is forgotten",
                self.forget_below, self.decay_below
            ));
        }
        let positive = [
            ("consolidation.decay_half_life_items", self.decay_half_life_items),
            ("consolidation.decay_half_life_secs", self.decay_half_life_secs),
            ("consolidation.max_outcomes_per_run", self.max_outcomes_per_run as u64),
        ];
        for (key, value) in positive {
            if value == 0 {
                return Err(format!("{key} = 0; expected a positive number"));
            }
        }
        for kind in &self.dedup_kinds {
            if MERGEABLE_ITEM_KINDS.contains(&kind.as_str()) {
                continue;
            }
            let reason = match kind.as_str() {
                "decision_made" => {
                    "decisions are never merged: a decision supersedes an earlier one explicitly, and merging \
                     two would lose which one stands"
                }
                "phase_started" | "phase_completed" | "handoff_received" | "handoff_acknowledged" => {
                    "phase and handoff markers record that something happened: two alike are two occurrences, \
                     not one memory said twice"
                }
                known if mneme_events::EventKind::NAMES.contains(&known) => {
                    "events of this kind do not become memory items"
                }
                _ => "no event kind has this name",
            };
            return Err(format!(
                "consolidation.dedup_kinds contains {kind:?}; {reason}; expected some of {}",
                MERGEABLE_ITEM_KINDS.join(", ")
            ));
        }
        let predicate_lists = [
            ("consolidation.single_valued_predicates", &self.single_valued_predicates),
            ("consolidation.multi_valued_predicates", &self.multi_valued_predicates),
        ];
        for (key, predicates) in predicate_lists {
            for predicate in predicates {
                let snake_case = !predicate.is_empty()
                    && predicate.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_');
                if !snake_case {
                    return Err(format!("{key} contains {predicate:?}; expected a snake_case predicate ([a-z0-9_]+)"));
                }
            }
        }
        if let Some(predicate) =
            self.single_valued_predicates.iter().find(|predicate| self.multi_valued_predicates.contains(predicate))
        {
            return Err(format!(
                "consolidation.single_valued_predicates and consolidation.multi_valued_predicates both list \
                 {predicate:?}; expected each predicate in at most one of them"
            ));
        }
        Ok(())
    }
}

impl SwarmConfig {
    /// What a consolidation run looks for: the configured thresholds, with
    /// the configured multi-valued predicates added to the built-in ones.
    pub fn consolidation_policy(&self) -> ConsolidationPolicy {
        let section = &self.consolidation;
        let mut multi_valued_predicates: BTreeSet<String> =
            BUILT_IN_MULTI_VALUED_PREDICATES.iter().map(|predicate| predicate.to_string()).collect();
        multi_valued_predicates.extend(section.multi_valued_predicates.iter().cloned());
        ConsolidationPolicy {
            dedup_cosine: section.dedup_cosine,
            dedup_kinds: section.dedup_kinds.clone(),
            decay_half_life_items: section.decay_half_life_items,
            decay_half_life_secs: section.decay_half_life_secs,
            decay_below: section.decay_below,
            forget_below: section.forget_below,
            important_from: section.important_from,
            keep_newest_items: section.keep_newest_items,
            single_valued_predicates: section.single_valued_predicates.iter().cloned().collect(),
            multi_valued_predicates,
            max_outcomes_per_run: section.max_outcomes_per_run,
            max_links_per_item: section.max_links_per_item,
        }
    }

    /// How often consolidation runs on a timer; `None` when scheduled runs
    /// are off or `interval_ms` is 0.
    pub fn consolidation_interval(&self) -> Option<Duration> {
        let section = &self.consolidation;
        (section.enabled && section.interval_ms > 0).then(|| Duration::from_millis(section.interval_ms))
    }

    /// After how many new events in the swarm consolidation runs; `None`
    /// when scheduled runs are off or `every_events` is 0.
    pub fn consolidation_every_events(&self) -> Option<u64> {
        let section = &self.consolidation;
        (section.enabled && section.every_events > 0).then_some(section.every_events)
    }
}

#[cfg(test)]
mod tests {
    use super::super::error_of;
    use super::*;

    const CONSOLIDATION: &str = "[swarm]\nname = \"s\"\n[consolidation]\n";

    fn consolidation_error(keys: &str) -> String {
        error_of(&format!("{CONSOLIDATION}{keys}\n"))
    }

    #[test]
    fn the_shipped_consolidation_section_states_the_defaults() {
        let config = SwarmConfig::parse(include_str!("../../../swarm.toml"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation, ConsolidationSection::default());
    }

    #[test]
    fn consolidation_defaults_are_the_policy_defaults() {
        for text in ["[swarm]\nname = \"s\"\n", CONSOLIDATION] {
            let config = SwarmConfig::parse(text, "swarm.toml").unwrap();
            assert_eq!(config.consolidation_policy(), ConsolidationPolicy::default());
            assert_eq!(config.consolidation_interval(), Some(Duration::from_secs(600)));
            assert_eq!(config.consolidation_every_events(), Some(10_000));
        }
    }

    #[test]
    fn a_full_consolidation_section_becomes_the_policy() {
        let config = SwarmConfig::parse(
            &format!(
                "{CONSOLIDATION}enabled = true\ninterval_ms = 5000\nevery_events = 300\ndedup_cosine = 0.97\n\
                 dedup_kinds = [\"tool_result_recorded\", \"preference_set\"]\ndecay_half_life_items = 50\n\
                 decay_half_life_secs = 600\ndecay_below = 0.4\nforget_below = 0.1\nimportant_from = 0.9\nkeep_newest_items = 10\n\
                 single_valued_predicates = [\"owns\"]\nmulti_valued_predicates = [\"reviewed_by\"]\n\
                 max_outcomes_per_run = 500\nmax_links_per_item = 0\n"
            ),
            "swarm.toml",
        )
        .unwrap();
        let mut multi_valued_predicates: BTreeSet<String> =
            BUILT_IN_MULTI_VALUED_PREDICATES.iter().map(|predicate| predicate.to_string()).collect();
        multi_valued_predicates.insert("reviewed_by".to_string());
        let expected = ConsolidationPolicy {
            dedup_cosine: 0.97,
            dedup_kinds: vec!["tool_result_recorded".to_string(), "preference_set".to_string()],
            decay_half_life_items: 50,
            decay_half_life_secs: 600,
            decay_below: 0.4,
            forget_below: 0.1,
            important_from: 0.9,
            keep_newest_items: 10,
            single_valued_predicates: BTreeSet::from(["owns".to_string()]),
            multi_valued_predicates,
            max_outcomes_per_run: 500,
            max_links_per_item: 0,
        };
        let policy = config.consolidation_policy();
        assert_eq!(policy, expected);
        // The configured single-valued list overrides a built-in
        // multi-valued predicate.
        assert!(policy.is_single_valued("owns"));
        assert!(!policy.is_single_valued("reviewed_by"));
        assert_eq!(config.consolidation_interval(), Some(Duration::from_millis(5000)));
        assert_eq!(config.consolidation_every_events(), Some(300));
    }

    #[test]
    fn disabled_consolidation_has_no_schedule_but_keeps_its_policy() {
        let config = SwarmConfig::parse(&format!("{CONSOLIDATION}enabled = false\n"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation_interval(), None);
        assert_eq!(config.consolidation_every_events(), None);
        assert_eq!(config.consolidation_policy(), ConsolidationPolicy::default());
    }

    #[test]
    fn a_zero_interval_or_count_turns_that_trigger_off() {
        let config =
            SwarmConfig::parse(&format!("{CONSOLIDATION}interval_ms = 0\nevery_events = 0\n"), "swarm.toml").unwrap();
        assert_eq!(config.consolidation_interval(), None);
        assert_eq!(config.consolidation_every_events(), None);
    }

    #[test]
    fn a_misspelt_consolidation_key_is_named() {
        let message = consolidation_error("dedup_cosin = 0.9");
        assert!(message.contains("dedup_cosin"), "{message}");
    }

    #[test]
    fn a_dedup_cosine_outside_zero_to_one_is_refused() {
        for (value, shown) in [("1.5", "1.5"), ("0.0", "0"), ("-0.2", "-0.2"), ("nan", "NaN")] {
            let message = consolidation_error(&format!("dedup_cosine = {value}"));
            assert!(
                message.contains(&format!("consolidation.dedup_cosine = {shown};"))
                    && message.contains("above 0 and at most 1"),
                "{message}"
            );
        }
        assert!(SwarmConfig::parse(&format!("{CONSOLIDATION}dedup_cosine = 1.0\n"), "swarm.toml").is_ok());
    }

    #[test]
    fn thresholds_outside_zero_to_one_are_refused() {
        for key in ["decay_below", "forget_below", "important_from"] {
            // The range is checked before forget_below <= decay_below, so a
            // high forget_below alone is named for its range.
            let message = consolidation_error(&format!("{key} = 1.5"));
            assert!(
                message.contains(&format!("consolidation.{key} = 1.5;")) && message.contains("0 to 1"),
                "{message}"
            );
            let message = consolidation_error(&format!("{key} = -0.1"));
            assert!(message.contains(&format!("consolidation.{key} = -0.1;")), "{message}");
        }
    }

    #[test]
    fn forget_below_above_decay_below_is_refused_naming_both() {
        let message = consolidation_error("decay_below = 0.2\nforget_below = 0.3");
        assert!(
            message.contains("consolidation.forget_below = 0.3") && message.contains("consolidation.decay_below = 0.2"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_half_life_is_refused() {
        let message = consolidation_error("decay_half_life_items = 0");
        assert!(
            message.contains("consolidation.decay_half_life_items = 0") && message.contains("positive"),
            "{message}"
        );
    }

    #[test]
    fn a_zero_outcome_budget_is_refused() {
        let message = consolidation_error("max_outcomes_per_run = 0");
        assert!(
            message.contains("consolidation.max_outcomes_per_run = 0") && message.contains("positive"),
            "{message}"
        );
    }

    #[test]
    fn decisions_are_never_deduplicated() {
        let message = consolidation_error("dedup_kinds = [\"message_recorded\", \"decision_made\"]");
        assert!(
            message.contains("consolidation.dedup_kinds")
                && message.contains("\"decision_made\"")
                && message.contains("supersedes"),
            "{message}"
        );
    }

    #[test]
    fn markers_kinds_without_items_and_unknown_kinds_are_refused_from_dedup_kinds() {
        let cases = [
            ("phase_started", "markers"),
            ("handoff_received", "markers"),
            ("memory_forgotten", "do not become memory items"),
            ("messages_recorded", "no event kind"),
        ];
        for (kind, reason) in cases {
            let message = consolidation_error(&format!("dedup_kinds = [\"{kind}\"]"));
            assert!(
                message.contains(&format!("consolidation.dedup_kinds contains \"{kind}\"")) && message.contains(reason),
                "{message}"
            );
        }
    }

    #[test]
    fn every_mergeable_item_kind_is_an_event_kind() {
        for kind in MERGEABLE_ITEM_KINDS {
            assert!(mneme_events::EventKind::NAMES.contains(kind), "{kind}");
            assert!(
                SwarmConfig::parse(&format!("{CONSOLIDATION}dedup_kinds = [\"{kind}\"]\n"), "swarm.toml").is_ok(),
                "{kind}"
            );
        }
    }

    #[test]
    fn predicates_that_are_not_snake_case_are_refused() {
        for key in ["single_valued_predicates", "multi_valued_predicates"] {
            for predicate in ["Owned-By", ""] {
                let message = consolidation_error(&format!("{key} = [\"{predicate}\"]"));
                assert!(
                    message.contains(&format!("consolidation.{key} contains {predicate:?}"))
                        && message.contains("snake_case"),
                    "{message}"
                );
            }
        }
    }

    #[test]
    fn a_predicate_both_single_and_multi_valued_is_refused() {
        let message = consolidation_error(
            "single_valued_predicates = [\"assigned_to\"]\nmulti_valued_predicates = [\"assigned_to\"]",
        );
        assert!(
            message.contains("consolidation.single_valued_predicates")
                && message.contains("consolidation.multi_valued_predicates")
                && message.contains("\"assigned_to\""),
            "{message}"
        );
    }
}
