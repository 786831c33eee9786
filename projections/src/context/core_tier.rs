//! The core tier's candidates: core memory (see `crate::core`), in the order
//! it is placed — current task, pending handoffs, constraints, then the
//! agent's own blocks. Identity and role are in the context's header.

use crate::core::CoreRequest;
use crate::memory::AgentMemory;

use super::ContextTier;
use super::candidates::Candidate;

impl AgentMemory {
    pub(super) fn core_candidates(&self, request: &CoreRequest) -> Vec<Candidate> {
        let core = self.core_memory(request);
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
}
