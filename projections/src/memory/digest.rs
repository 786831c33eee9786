//! The memory's digest: a stable hash of its logical content, equal for a
//! live memory and one rebuilt by replay.

use mneme_events::{ContradictionResolution, EventId};

use super::{AgentMemory, SeenId};
use crate::digest::ContentHasher;

impl AgentMemory {
    /// A stable hash of the memory's logical content: items, their state and
    /// provenance, the working tier and the ids seen. Index files, segment
    /// layout and map iteration order do not enter it, so a rebuild by replay
    /// gives the same digest as the live memory.
    pub fn digest(&self) -> String {
        let mut hasher = ContentHasher::default();
        hasher.text(&self.swarm);
        hasher.text(&self.agent);
        // Vectors are a function of item text and model: the model's id
        // stands for them. The graph hashes its own content.
        hasher.text(self.config.embedder.model_id());
        // Deep vectors come from the log, not from the text: each one
        // enters, by its item.
        self.hash_deep(&mut hasher);
        hasher.text(&self.graph.digest());
        hasher.text(&self.graph().view().shared_digest());
        hasher.number(self.config.large_output_bytes as u64);
        self.phases.hash_into(&mut hasher);
        hasher.number(self.contradictions.resolved().count() as u64);
        for resolved in self.contradictions.resolved() {
            hasher.text(&resolved.contradiction_id);
            hasher.text(&resolved.a);
            hasher.text(&resolved.b);
            hasher.text(resolution_name(resolved.resolution));
            hasher.provenance(std::slice::from_ref(&resolved.provenance));
        }
        hasher.number(self.contradictions.open().count() as u64);
        for contradiction in self.contradictions.open() {
            hasher.text(&contradiction.contradiction_id);
            hasher.text(&contradiction.a);
            hasher.text(&contradiction.b);
            hasher.text(&contradiction.reason);
            hasher.provenance(std::slice::from_ref(&contradiction.provenance));
        }
        hasher.number(self.handoffs.received_by_id().count() as u64);
        for record in self.handoffs.received_by_id() {
            hasher.bytes(&record.handoff_id.0.to_be_bytes());
            hasher.text(&record.from);
            hasher.provenance(std::slice::from_ref(&record.received));
            hasher.provenance(record.acknowledged.as_slice());
            // The package is an events type: its JSON is canonical (fields
            // in declaration order).
            let package = record
                .package
                .as_ref()
                .map(|package| serde_json::to_string(package).expect("a handoff package always serialises to JSON"));
            hasher.text(package.as_deref().unwrap_or(""));
        }
        hasher.number(self.items.len() as u64);
        for item in self.items.iter() {
            hasher.text(&item.item_id);
            hasher.number(item.seq);
            hasher.text(item.kind);
            hasher.text(&item.agent);
            hasher.text(item.scope.as_str());
            hasher.number(item.ts.unix_nanos() as u64);
            hasher.text(item.correlation_id.as_deref().unwrap_or(""));
            hasher.number(item.importance.map_or(u64::MAX, |value| u64::from(value.to_bits())));
            hasher.text(&item.text);
            hasher.text(item.state.as_str());
            hasher.number(u64::from(item.pinned));
            hasher.number(u64::from(item.retrievals));
            hasher.number(u64::from(item.citations));
            hasher.number(u64::from(item.ignored));
            hasher.provenance(&item.provenance);
        }
        hasher.number(self.working.entries().len() as u64);
        for entry in self.working.entries() {
            hasher.number(entry.seq);
            hasher.text(&entry.text);
        }
        let mut seen: Vec<(EventId, SeenId)> = self.items.seen_ids().collect();
        seen.sort_unstable();
        hasher.number(seen.len() as u64);
        for (id, seen) in seen {
            hasher.bytes(&id.0.to_be_bytes());
            hasher.number(seen.seq);
            hasher.number(seen.fingerprint);
        }
        self.core.digest_into(&mut hasher);
        hasher.number(self.config.handoff_bundle_tokens as u64);
        hasher.number(self.handoffs.sent().count() as u64);
        for (handoff_id, sent) in self.handoffs.sent() {
            hasher.bytes(&handoff_id.0.to_be_bytes());
            hasher.number(sent.seq);
            hasher.text(&serde_json::to_string(&sent.bundle).expect("a handoff bundle always serialises to JSON"));
            hasher.number(sent.task_items.len() as u64);
            for seq in &sent.task_items {
                hasher.number(*seq);
            }
        }
        hasher.finish()
    }
}

/// The wire name of a resolution.
pub(crate) fn resolution_name(resolution: ContradictionResolution) -> &'static str {
    match resolution {
        ContradictionResolution::AWins => "a_wins",
        ContradictionResolution::BWins => "b_wins",
        ContradictionResolution::BothValid => "both_valid",
        ContradictionResolution::Merged => "merged",
    }
}
