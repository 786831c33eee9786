//! Budgeted context: what an agent should know right now, in five tiers,
//! counted in real tokens and never over budget.
//!
//! - **core**: core memory (see `core.rs`): who the agent is, its current
//!   task, its constraints, the handoffs waiting for it, its own blocks;
//! - **critical**: open contradictions, recent errors and what fixed them,
//!   active decisions touching the current file or task;
//! - **relevant**: recent turns, hybrid retrieval for the query, and what
//!   the signals predict (memories linked to the current file and its graph
//!   neighbours; past errors like the current ones);
//! - **background**: the session and task summaries, preferences and
//!   conventions, completed phases at the level the thinking budget allows,
//!   workflow hints;
//! - **index**: pointers to what can be expanded (phases, busy entities),
//!   each with an id to ask about.
//!
//! The budget gives core memory 10 % and splits the rest 25 / 37.5 / 25 /
//! 12.5 % (widened by the activity);
//! a tier that cannot use its share gives it to the others. Each tier's
//! candidates are built first, then placed most important first; the whole
//! rendered text is counted again and trimmed until it fits.

mod budget;
mod candidate;
mod candidates;
mod core_tier;

use std::collections::HashSet;

use crate::error::ProjectionError;
use crate::item::ProvenanceRef;
use crate::memory::AgentMemory;
use crate::phases::PhaseLevel;
use mneme_index::tokens;

pub use budget::{CORE_SHARE, TierShares, allocate};
pub use core_tier::{CoreConstraint, CoreMemory, CoreRequest, ShownBlock, core_memory};

/// How many tiers a context has.
pub const TIERS: usize = 5;
use candidate::Candidate;
use candidates::candidates;

/// A hit is cut to fit what remains only if at least this much remains;
/// a dozen tokens of a stack trace helps nobody.
const MIN_TRUNCATED_TOKENS: usize = 24;
/// The largest budget honoured; larger ones are treated as this.
pub const MAX_BUDGET_TOKENS: usize = 1 << 32;

/// What the agent is doing, as far as it says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Activity {
    #[default]
    Unspecified,
    Coding,
    Debugging,
    Reviewing,
    Planning,
    /// Any other word: default shares.
    Other(String),
}

impl Activity {
    pub fn from_name(name: &str) -> Activity {
        match name.trim().to_ascii_lowercase().as_str() {
            "" => Activity::Unspecified,
            "coding" => Activity::Coding,
            "debugging" => Activity::Debugging,
            "reviewing" => Activity::Reviewing,
            "planning" => Activity::Planning,
            other => Activity::Other(other.to_string()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Activity::Unspecified => "",
            Activity::Coding => "coding",
            Activity::Debugging => "debugging",
            Activity::Reviewing => "reviewing",
            Activity::Planning => "planning",
            Activity::Other(name) => name,
        }
    }
}

/// How much room to give detail, from `thinking_budget` (0..1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThinkingPolicy {
    /// Below 1/3: fewer recent turns, phases at `compressed`.
    Conservative,
    /// The default: phases at `summary`.
    Balanced,
    /// From 2/3: more recent turns, phases at `findings`.
    Expansive,
}

impl ThinkingPolicy {
    pub fn from_thinking_budget(thinking_budget: Option<f32>) -> ThinkingPolicy {
        match thinking_budget {
            Some(value) if value < 1.0 / 3.0 => ThinkingPolicy::Conservative,
            Some(value) if value >= 2.0 / 3.0 => ThinkingPolicy::Expansive,
            _ => ThinkingPolicy::Balanced,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingPolicy::Conservative => "conservative",
            ThinkingPolicy::Balanced => "balanced",
            ThinkingPolicy::Expansive => "expansive",
        }
    }

    /// The level completed phases are shown at first; a phase that does not
    /// fit falls to the lower levels.
    pub fn phase_level(self) -> PhaseLevel {
        match self {
            ThinkingPolicy::Conservative => PhaseLevel::Compressed,
            ThinkingPolicy::Balanced => PhaseLevel::Summary,
            ThinkingPolicy::Expansive => PhaseLevel::Findings,
        }
    }

    /// How many retrieval hits the relevant tier considers.
    fn hits(self) -> usize {
        match self {
            ThinkingPolicy::Conservative => 10,
            ThinkingPolicy::Balanced => 20,
            ThinkingPolicy::Expansive => 30,
        }
    }
}

/// What the agent tells about its situation; every field is optional.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContextSignals {
    /// The file the agent has open.
    pub current_file: Option<String>,
    /// Errors the agent just saw (messages or stack trace lines).
    pub recent_errors: Vec<String>,
    pub activity: Activity,
    /// The current phase, by id or name; its task is the current task.
    pub phase: Option<String>,
    /// 0..1: how much room to give detail.
    pub thinking_budget: Option<f32>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct ContextRequest {
    pub query: String,
    pub budget_tokens: usize,
    pub signals: ContextSignals,
    /// The agent's role and block limits, for the core tier.
    pub core: core_tier::CoreRequest,
}

impl ContextRequest {
    pub fn new(query: impl Into<String>, budget_tokens: usize) -> ContextRequest {
        ContextRequest {
            query: query.into(),
            budget_tokens,
            signals: ContextSignals::default(),
            core: core_tier::CoreRequest::default(),
        }
    }

    pub fn with_signals(mut self, signals: ContextSignals) -> ContextRequest {
        self.signals = signals;
        self
    }

    pub fn with_core(mut self, core: core_tier::CoreRequest) -> ContextRequest {
        self.core = core;
        self
    }
}

/// The tiers, most important first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ContextTier {
    Core = 0,
    Critical = 1,
    Relevant = 2,
    Background = 3,
    Index = 4,
}

impl ContextTier {
    pub const ALL: [ContextTier; TIERS] =
        [ContextTier::Core, ContextTier::Critical, ContextTier::Relevant, ContextTier::Background, ContextTier::Index];

    pub fn as_str(self) -> &'static str {
        match self {
            ContextTier::Core => "core",
            ContextTier::Critical => "critical",
            ContextTier::Relevant => "relevant",
            ContextTier::Background => "background",
            ContextTier::Index => "index",
        }
    }

    fn heading(self) -> &'static str {
        match self {
            ContextTier::Core => "## Core memory\n",
            ContextTier::Critical => "## Critical\n",
            ContextTier::Relevant => "## Relevant\n",
            ContextTier::Background => "## Background\n",
            ContextTier::Index => "## Index (ask to expand)\n",
        }
    }
}

/// One line of a context.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextItem {
    pub tier: ContextTier,
    /// Why it is there: `open contradiction`, `recent error`, `fix`,
    /// `active decision`, `recent turn`, `query match`, `current file`,
    /// `similar error`, `session summary`, `task summary`, `phase`,
    /// `preference`, `convention`, `workflow`, `pointer`.
    pub reason: &'static str,
    /// An item id, a phase id, a contradiction id or an entity id: what to
    /// ask about to expand it.
    pub item_id: String,
    /// The seq of the event behind it (the first, for summaries).
    pub seq: u64,
    /// An event kind, or `phase`, `task`, `session`, `contradiction`,
    /// `fix`, `workflow`, `entity`.
    pub kind: &'static str,
    pub text: String,
    /// Tokens of this item's line in the rendered text.
    pub tokens: usize,
    pub provenance: Vec<ProvenanceRef>,
    /// For an item a later event superseded (a decision replaced, a fact
    /// retracted, a contradiction lost), the id of that event; its text
    /// starts with `(superseded by <id>)`.
    pub superseded_by: Option<String>,
}

/// How one tier's budget was set and used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierUsage {
    pub tier: ContextTier,
    /// Its share of the budget before rebalancing.
    pub share_tokens: usize,
    /// After unused shares flowed between tiers.
    pub allocated_tokens: usize,
    /// Tokens of its lines.
    pub used_tokens: usize,
    /// Tokens its candidates would have taken, all of them.
    pub wanted_tokens: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ContextResponse {
    pub items: Vec<ContextItem>,
    /// The rendered prompt text.
    pub text: String,
    /// Tokens of `text`, counted whole; never more than `budget_tokens`.
    pub tokens: usize,
    pub budget_tokens: usize,
    pub tiers: Vec<TierUsage>,
    pub policy: ThinkingPolicy,
    /// The memory's checkpoint when the context was assembled.
    pub as_of_seq: u64,
}

/// Assembles context for a request within its budget.
pub fn context(memory: &AgentMemory, request: &ContextRequest) -> Result<ContextResponse, ProjectionError> {
    // No context is longer than this; it keeps the budget arithmetic
    // far from overflow whatever a caller asks.
    let budget = request.budget_tokens.min(MAX_BUDGET_TOKENS);
    let policy = ThinkingPolicy::from_thinking_budget(request.signals.thinking_budget);
    let header = match request.core.role.as_deref().filter(|role| !role.trim().is_empty()) {
        Some(role) => {
            format!(
                "# Memory of {} (swarm {}; role: {role}), as of seq {}\n",
                memory.agent(),
                memory.swarm(),
                memory.checkpoint()
            )
        }
        None => {
            format!("# Memory of {} (swarm {}), as of seq {}\n", memory.agent(), memory.swarm(), memory.checkpoint())
        }
    };
    let header_tokens = tokens::count(&header);
    // Headings are reserved up front so that the final count does not
    // have to drop a chosen item to make room for them.
    let reserved = header_tokens + ContextTier::ALL.iter().map(|tier| tokens::count(tier.heading())).sum::<usize>();
    let available = budget.saturating_sub(reserved);
    let shares = TierShares::for_activity(&request.signals.activity);
    let mut chosen: Vec<ContextItem> = Vec::new();
    let mut tiers: Vec<TierUsage> = Vec::new();
    if available > 0 {
        let pools = candidates(memory, request, policy)?;
        tiers = place(&pools, available, &shares, policy, &mut chosen);
    }
    // Lines are counted one by one while placing; the whole text is what
    // a model sees, so it is counted again and trimmed until it fits.
    loop {
        let text = render(&header, &chosen);
        let total = if chosen.is_empty() { 0 } else { tokens::count(&text) };
        if total <= budget {
            let text = if total == 0 { String::new() } else { text };
            for usage in &mut tiers {
                usage.used_tokens = chosen.iter().filter(|item| item.tier == usage.tier).map(|item| item.tokens).sum();
            }
            return Ok(ContextResponse {
                items: chosen,
                text,
                tokens: total,
                budget_tokens: request.budget_tokens,
                tiers,
                policy,
                as_of_seq: memory.checkpoint(),
            });
        }
        // The least important line goes first.
        let Some(last) = chosen.iter().enumerate().max_by_key(|(position, item)| (item.tier, *position)) else {
            unreachable!("an empty context renders to nothing, which fits")
        };
        chosen.remove(last.0);
    }
}

/// Splits the budget between the tiers and fills each one, most important
/// candidates first; then offers what is left to candidates that did not
/// fit, tier by tier.
fn place(
    pools: &[Vec<Candidate>; TIERS],
    available: usize,
    shares: &TierShares,
    policy: ThinkingPolicy,
    chosen: &mut Vec<ContextItem>,
) -> Vec<TierUsage> {
    let wanted: [usize; TIERS] = std::array::from_fn(|tier| pools[tier].iter().map(Candidate::wanted_tokens).sum());
    let allocation = allocate(available, shares, wanted.map(|tokens| tokens.min(available)));
    let mut placed: HashSet<(usize, usize)> = HashSet::new();
    let mut shown_keys: HashSet<String> = HashSet::new();
    let mut used_total = 0usize;
    for tier in ContextTier::ALL {
        let pool = &pools[tier as usize];
        let mut room = allocation[tier as usize];
        if tier == ContextTier::Relevant {
            // Recent turns first, up to their fraction of the tier, so that
            // retrieval hits always get the rest.
            let mut turn_room = (room as f64 * policy.working_fraction()) as usize;
            for (position, candidate) in pool.iter().enumerate().filter(|(_, c)| c.reason == "recent turn") {
                if let Some(item) = candidate.fit(turn_room, &shown_keys) {
                    turn_room -= item.tokens;
                    room -= item.tokens;
                    used_total += item.tokens;
                    shown_keys.insert(candidate.key.clone());
                    placed.insert((tier as usize, position));
                    chosen.push(item);
                }
            }
        }
        for (position, candidate) in pool.iter().enumerate() {
            if placed.contains(&(tier as usize, position))
                || (tier == ContextTier::Relevant && candidate.reason == "recent turn")
            {
                continue;
            }
            if let Some(item) = candidate.fit(room, &shown_keys) {
                room -= item.tokens;
                used_total += item.tokens;
                shown_keys.insert(candidate.key.clone());
                placed.insert((tier as usize, position));
                chosen.push(item);
            }
        }
    }
    // Second pass: budget left by lines that did not divide evenly goes to
    // whatever still fits, most important tier first (older turns too).
    for tier in ContextTier::ALL {
        for (position, candidate) in pools[tier as usize].iter().enumerate() {
            if placed.contains(&(tier as usize, position)) {
                continue;
            }
            let room = available - used_total;
            if let Some(item) = candidate.fit(room, &shown_keys) {
                used_total += item.tokens;
                shown_keys.insert(candidate.key.clone());
                placed.insert((tier as usize, position));
                chosen.push(item);
            }
        }
    }
    ContextTier::ALL
        .iter()
        .map(|&tier| TierUsage {
            tier,
            share_tokens: (available as f64 * shares.of(tier)).floor() as usize,
            allocated_tokens: allocation[tier as usize],
            used_tokens: 0,
            wanted_tokens: wanted[tier as usize],
        })
        .collect()
}

fn line_for(item: &ContextItem) -> String {
    line(item.seq, item.kind, &item.item_id, &item.text)
}

/// `- [seq 12 decision_made] …` for event items; `- [phase 01H…] …` for
/// everything that is asked about by another id.
fn line(seq: u64, kind: &str, id: &str, text: &str) -> String {
    let text = text.replace('\n', "\n  ");
    match kind {
        "phase" | "task" | "contradiction" | "entity" | "handoff" => format!("- [{kind} {id}] {text}\n"),
        "core" => format!("- [{id}] {text}\n"),
        "session" | "fix" | "workflow" => format!("- [{kind}] {text}\n"),
        _ => format!("- [seq {seq} {kind}] {text}\n"),
    }
}

/// Tiers in order; within the relevant tier, hits by rank and then recent
/// turns in the order they happened.
fn render(header: &str, chosen: &[ContextItem]) -> String {
    let mut text = header.to_string();
    for tier in ContextTier::ALL {
        let mut lines: Vec<&ContextItem> = chosen.iter().filter(|item| item.tier == tier).collect();
        if lines.is_empty() {
            continue;
        }
        if tier == ContextTier::Relevant {
            let (mut turns, others): (Vec<&ContextItem>, Vec<&ContextItem>) =
                lines.into_iter().partition(|item| item.reason == "recent turn");
            turns.sort_by_key(|item| item.seq);
            lines = others;
            lines.extend(turns);
        }
        text.push_str(tier.heading());
        for item in lines {
            text.push_str(&line_for(item));
        }
    }
    text
}
