//! What consolidation looks for and how hard: thresholds and the
//! single-valued predicates. Comes from `swarm.toml` `[consolidation]`.

use std::collections::BTreeSet;

/// Predicates that relate a subject to many objects at once: a second object
/// is more knowledge, not a contradiction.
pub const BUILT_IN_MULTI_VALUED_PREDICATES: &[&str] = &[
    "depends_on",
    "imports",
    "calls",
    "references",
    "uses",
    "contains",
    "includes",
    "has",
    "defines",
    "reads",
    "modifies",
    "mentions",
    "related_to",
    "tagged",
    "member_of",
    "part_of",
    "implements",
    "extends",
    "tests",
    "owns",
    "blocks",
    "requires",
    "needs",
    "provides",
    "exports",
    "supports",
    "handles",
    "produces",
    "consumes",
    "writes",
    "emits",
    "publishes",
    "subscribes_to",
    "affects",
    "touches",
    "links_to",
    "knows",
    "triggers",
    "invokes",
    "follows",
    "precedes",
    "covers",
];

/// The knobs of a consolidation run.
#[derive(Debug, Clone, PartialEq)]
pub struct ConsolidationPolicy {
    /// Two memories are near duplicates from this embedding cosine up, and
    /// only if the lexical check agrees.
    pub dedup_cosine: f32,
    /// Item kinds that may be merged (wire names).
    pub dedup_kinds: Vec<String>,
    /// An item's recency halves every this many newer items of the
    /// memory's own activity (see `consolidation::decay`)...
    pub decay_half_life_items: u64,
    /// ... and every this many seconds of event time the activity moved
    /// on; of the two, the clock that makes the item younger counts.
    pub decay_half_life_secs: u64,
    /// Items whose decay score falls below this are demoted
    /// (`memory_decayed`): out of context, still searchable.
    pub decay_below: f32,
    /// Items whose decay score falls below this are forgotten
    /// (`memory_forgotten`): out of every query, still in provenance.
    pub forget_below: f32,
    /// Items with at least this importance are never decayed or forgotten.
    pub important_from: f32,
    /// The newest items are never decayed: they are the working set.
    pub keep_newest_items: usize,
    /// Predicates with one object at a time; overrides the multi-valued list.
    pub single_valued_predicates: BTreeSet<String>,
    /// Predicates with many objects at a time (the built-in list plus
    /// `swarm.toml`'s); every other predicate is single-valued.
    pub multi_valued_predicates: BTreeSet<String>,
    /// Outcome events one run may write, for every memory together (see
    /// [`super::share_run_budget`]), so that a first run over a large swarm
    /// lands in bounded batches; the next run continues.
    pub max_outcomes_per_run: usize,
    /// Links (`related_to`) one item may get per run.
    pub max_links_per_item: usize,
}

impl Default for ConsolidationPolicy {
    fn default() -> Self {
        ConsolidationPolicy {
            dedup_cosine: 0.92,
            dedup_kinds: vec!["message_recorded".to_string(), "fact_asserted".to_string()],
            decay_half_life_items: 5000,
            decay_half_life_secs: 3600,
            decay_below: 0.25,
            forget_below: 0.02,
            important_from: 0.8,
            keep_newest_items: 200,
            single_valued_predicates: BTreeSet::new(),
            multi_valued_predicates: BUILT_IN_MULTI_VALUED_PREDICATES.iter().map(|name| name.to_string()).collect(),
            max_outcomes_per_run: 20_000,
            max_links_per_item: 3,
        }
    }
}

impl ConsolidationPolicy {
    /// Whether `predicate` (snake_case) holds one object at a time.
    pub fn is_single_valued(&self, predicate: &str) -> bool {
        self.single_valued_predicates.contains(predicate) || !self.multi_valued_predicates.contains(predicate)
    }
}
