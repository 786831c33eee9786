//! Which items a later event superseded: a decision replaced by a later
//! decision (`supersedes`), a fact retracted (`fact_retracted`), the losing
//! side of a settled contradiction. Item state says what consolidation did
//! to an item; this says whether what it states still holds.
//!
//! Derived from the fact graph and the settled contradictions, both part
//! of the snapshot and the digest, so a restored or replayed memory answers
//! the same. The retractions, a pass over every closed fact, are kept
//! between asks until a closed edge changes (the graph's `closed_version`):
//! a context at 100,000 items spent a ninth of its time deriving them again.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;

use crate::item::MemoryItem;
use crate::memory::{AgentMemory, Retractions};

/// Item id → the id of what superseded it, for facts and contradiction
/// sides; decisions are looked up in the graph as asked.
pub(crate) struct Supersessions {
    /// Built on the first fact asked about: it takes a pass over every
    /// fact, which a search or context with no fact among its items skips.
    retracted: OnceCell<Retractions>,
    lost: HashMap<String, String>,
}

impl Supersessions {
    /// The id of the event that superseded `item`: the superseding
    /// decision's, the retraction's, or the winning side's of a
    /// contradiction it lost. `None` while what it states holds.
    pub(crate) fn of(&self, memory: &AgentMemory, item: &MemoryItem) -> Option<String> {
        let by_graph = match item.kind {
            "decision_made" => memory.graph().view().superseding_decision(&item.item_id),
            "fact_asserted" => self.retracted.get_or_init(|| retractions(memory)).get(&item.item_id).cloned(),
            _ => None,
        };
        by_graph.or_else(|| self.lost.get(&item.item_id).cloned())
    }
}

/// What superseded the item `item_id` (see [`Supersessions::of`]);
/// `None` for an item that stands or is unknown.
pub fn superseded_by(memory: &AgentMemory, item_id: &str) -> Option<String> {
    let item = memory.item(item_id)?;
    supersessions(memory).of(memory, item)
}

/// Everything needed to answer [`Supersessions::of`] for many items:
/// the settled contradictions now, the closed facts when first needed.
pub(crate) fn supersessions(memory: &AgentMemory) -> Supersessions {
    // A side that lost twice was superseded by the first resolution.
    let mut resolutions: Vec<_> = memory.resolved_contradictions().collect();
    resolutions.sort_by_key(|resolved| resolved.provenance.seq);
    let mut lost = HashMap::new();
    for resolved in resolutions {
        let Some((loser, winner)) = resolved.loser_and_winner() else { continue };
        lost.entry(loser.to_string()).or_insert_with(|| winner.to_string());
    }
    Supersessions { retracted: OnceCell::new(), lost }
}

/// Each retracted assertion's item id → the retraction's: one pass over
/// the closed facts, kept until a closed edge changes in either graph,
/// or the memory sees more of the swarm's.
fn retractions(memory: &AgentMemory) -> Retractions {
    let version = {
        let shared = memory.config().shared.graph();
        (
            memory.own_graph().closed_version(),
            shared.graph().closed_version(),
            memory.checkpoint().min(shared.through()),
            memory.unheld_shared_count(),
        )
    };
    let mut kept = memory.retractions_cache().lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((at, retracted)) = kept.as_ref()
        && *at == version
    {
        return retracted.clone();
    }
    let retracted = Arc::new(derive_retractions(memory));
    *kept = Some((version, retracted.clone()));
    retracted
}

fn derive_retractions(memory: &AgentMemory) -> HashMap<String, String> {
    let mut retracted = HashMap::new();
    let graph = memory.graph();
    for provenance in graph.view().closed_fact_provenance() {
        // The assertions of one validity interval, each closed by the
        // first retraction after it.
        let mut pending: Vec<&str> = Vec::new();
        for seq in &provenance {
            let Some(item) = memory.items().get(*seq) else { continue };
            match item.kind {
                "fact_asserted" => pending.push(&item.item_id),
                "fact_retracted" => {
                    for asserted in pending.drain(..) {
                        retracted.insert(asserted.to_string(), item.item_id.clone());
                    }
                }
                _ => {}
            }
        }
    }
    retracted
}
