//! The core tier's candidates: core memory (see `crate::core`), in the order
//! it is placed — current task, pending handoffs, constraints, then the
//! agent's own blocks. Identity and role are in the context's header.

use mneme_events::{EventId, Timestamp};

use crate::core::{CurrentTask, TaskSource};
use crate::item::ProvenanceRef;
use crate::memory::{AgentMemory, HandoffRecord};

use super::ContextTier;
use super::candidate::Candidate;

/// What the caller knows that the log does not: the agent's role from the
/// swarm's configuration, and each block's token limit.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CoreRequest {
    pub role: Option<String>,
    /// Tokens a block is shown with at most; `None`: whole.
    pub block_tokens: Option<usize>,
    /// Blocks shown at most, the most recently written; `None`: all. The
    /// API refuses a block past `core.max_blocks`; blocks published
    /// straight to the log may be more, and are not all shown.
    pub max_blocks: Option<usize>,
}

/// A constraint the agent works under, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreConstraint {
    pub text: String,
    /// `handoff` or `preference`.
    pub source: &'static str,
    pub provenance: ProvenanceRef,
}

/// A block as shown: cut to its limit if the log holds more.
#[derive(Debug, Clone, PartialEq)]
pub struct ShownBlock {
    pub name: String,
    pub content: String,
    pub tokens: usize,
    /// Whether the content was cut to the limit.
    pub truncated: bool,
    pub provenance: ProvenanceRef,
    pub updated_at: Timestamp,
}

/// An agent's core memory, as of its memory's checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct CoreMemory {
    pub agent: String,
    pub role: Option<String>,
    pub task: Option<CurrentTask>,
    pub constraints: Vec<CoreConstraint>,
    /// Handoffs received and not yet acknowledged, oldest first.
    pub pending_handoffs: Vec<HandoffRecord>,
    pub blocks: Vec<ShownBlock>,
    /// The name of every block the agent has, shown or not.
    pub block_names: Vec<String>,
    pub as_of_seq: u64,
}

pub(super) fn core_candidates(memory: &AgentMemory, request: &CoreRequest) -> Vec<Candidate> {
    let core = core_memory(memory, request);
    let tier = ContextTier::Core;
    let mut candidates = Vec::new();
    if let Some(task) = &core.task {
        let from = task.from.as_deref().map(|from| format!(", handed off by {from}")).unwrap_or_default();
        let text = format!("Current task: {} ({}{from}; id {})", task.title, task.status, task.task_id);
        let short = format!("Current task: {}", task.title);
        let provenance =
            vec![crate::item::ProvenanceRef { seq: task.seq, event_id: mneme_events::EventId(task.event_id) }];
        candidates.push(Candidate::new(
            tier,
            "current task",
            "core:task".to_string(),
            "task".to_string(),
            task.seq,
            "core",
            vec![text, short],
            provenance,
        ));
    }
    for record in &core.pending_handoffs {
        let received = record.received;
        let (task, summary) = match &record.package {
            Some(package) => (package.task.as_str(), package.summary.as_str()),
            None => ("(no package)", ""),
        };
        let text = if summary.trim().is_empty() {
            format!("Pending, from {}: {task} (acknowledge when taken)", record.from)
        } else {
            format!("Pending, from {}: {task} — {summary} (acknowledge when taken)", record.from)
        };
        let short = format!("Pending, from {}: {task}", record.from);
        candidates.push(Candidate::new(
            tier,
            "pending handoff",
            format!("seq:{}", received.seq),
            record.handoff_id.to_string(),
            received.seq,
            "handoff",
            vec![text, short],
            vec![received],
        ));
    }
    for (position, constraint) in core.constraints.iter().enumerate() {
        // A preference is the event's item too: shown once, here.
        let key = match constraint.source {
            "preference" => format!("seq:{}", constraint.provenance.seq),
            _ => format!("core:constraint:{position}"),
        };
        candidates.push(Candidate::new(
            tier,
            "constraint",
            key,
            "constraint".to_string(),
            constraint.provenance.seq,
            "core",
            vec![format!("Constraint ({}): {}", constraint.source, constraint.text)],
            vec![constraint.provenance],
        ));
    }
    for block in &core.blocks {
        candidates.push(Candidate::new(
            tier,
            "core block",
            format!("core:block:{}", block.name),
            format!("block {}", block.name),
            block.provenance.seq,
            "core",
            vec![block.content.clone()],
            vec![block.provenance],
        ));
    }
    candidates
}

/// Core memory: the state with the caller's identity and limits.
pub fn core_memory(memory: &AgentMemory, request: &CoreRequest) -> CoreMemory {
    let pending_handoffs: Vec<HandoffRecord> =
        memory.handoffs().into_iter().filter(|record| record.is_pending()).cloned().collect();
    let mut constraints = Vec::new();
    // The constraints of every handoff the agent still works on: those
    // pending and the one that set its task.
    let current_handoff = memory
        .core_state()
        .task()
        .as_ref()
        .filter(|task| task.source == TaskSource::HandoffReceived)
        .map(|task| task.task_id.clone());
    for record in memory.handoffs() {
        let working_on = current_handoff.as_deref() == Some(record.handoff_id.to_string().as_str());
        if !(record.is_pending() || working_on) {
            continue;
        }
        if let Some(package) = &record.package {
            for constraint in &package.constraints {
                constraints.push(CoreConstraint {
                    text: constraint.clone(),
                    source: "handoff",
                    provenance: record.received,
                });
            }
        }
    }
    for (key, preference) in memory.core_state().preferences() {
        constraints.push(CoreConstraint {
            text: format!("{key} = {}", preference.value),
            source: "preference",
            provenance: ProvenanceRef { seq: preference.seq, event_id: EventId(preference.event_id) },
        });
    }
    // The newest blocks, when there are more than the request shows.
    let mut newest: Vec<u64> = memory.core_state().blocks().values().map(|block| block.seq).collect();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    let oldest_shown = request.max_blocks.and_then(|max| newest.get(max.checked_sub(1)?)).copied().unwrap_or(0);
    let blocks = memory
        .core_state()
        .blocks()
        .iter()
        .filter(|(_, block)| request.max_blocks.is_none() || block.seq >= oldest_shown)
        .map(|(name, block)| {
            let (content, tokens, truncated) = match request.block_tokens {
                Some(limit) => {
                    let whole = mneme_index::tokens::count(&block.content);
                    if whole > limit {
                        let (cut, tokens) = mneme_index::tokens::truncate(&block.content, limit);
                        (cut, tokens, true)
                    } else {
                        (block.content.clone(), whole, false)
                    }
                }
                None => (block.content.clone(), mneme_index::tokens::count(&block.content), false),
            };
            ShownBlock {
                name: name.clone(),
                content,
                tokens,
                truncated,
                provenance: ProvenanceRef { seq: block.seq, event_id: EventId(block.event_id) },
                updated_at: Timestamp(block.ts),
            }
        })
        .collect();
    CoreMemory {
        agent: memory.agent().to_string(),
        role: request.role.clone().filter(|role| !role.trim().is_empty()),
        task: memory.core_state().task().cloned(),
        constraints,
        pending_handoffs,
        blocks,
        block_names: memory.core_state().blocks().keys().cloned().collect(),
        as_of_seq: memory.checkpoint(),
    }
}
