//! Links: memories that share entities, or share one and a task, get a
//! `related_to` edge, so that a walk from one reaches the other; and each
//! memory of a task is linked to the one before it in that task.

use std::collections::{BTreeMap, BTreeSet};

use crate::item::MemoryItem;

use super::policy::ConsolidationPolicy;
use super::view::{ConsolidationView, is_live, ordered_pair, quoted};

/// Two memories sharing this many entities are related; sharing one
/// suffices within the same task.
const SHARED_ENTITIES_FOR_LINK: usize = 2;

/// A link's reason names at most this many of the entities the two items
/// share, each cut to `REASON_QUOTE_CHARS` characters, and counts the rest:
/// two tool results listing the same 15,000 paths made one reason 268 KB
/// and a `memories_linked` event larger than the log takes.
const REASON_NAMES: usize = 8;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkVerdict {
    pub a: String,
    pub b: String,
    pub reason: String,
}

/// `gone`: items this run merges or forgets, which get no links and are
/// stepped over.
pub fn link_verdicts(
    view: &ConsolidationView,
    policy: &ConsolidationPolicy,
    gone: &BTreeSet<&str>,
) -> Vec<LinkVerdict> {
    let is_linkable = |item: &MemoryItem| is_live(item) && !gone.contains(item.item_id.as_str());
    let mut items_by_entity: BTreeMap<u32, Vec<u64>> = BTreeMap::new();
    for (seq, entities) in &view.entities_by_seq {
        for entity in entities {
            items_by_entity.entry(*entity).or_default().push(*seq);
        }
    }
    let mut verdicts = Vec::new();
    let mut emitted = BTreeSet::new();
    for (&seq, entities) in &view.entities_by_seq {
        let Some(item) = view.item_at(seq).filter(|item| is_linkable(item)) else { continue };
        // Other items by the entities they share with this one.
        let mut shared: BTreeMap<u64, Vec<u32>> = BTreeMap::new();
        for entity in entities {
            for &other in &items_by_entity[entity] {
                if other != seq {
                    shared.entry(other).or_default().push(*entity);
                }
            }
        }
        let mut related: Vec<(usize, u64, Vec<u32>, bool)> = shared
            .into_iter()
            .filter_map(|(other, common)| {
                let other_item = view.item_at(other).filter(|other_item| is_linkable(other_item))?;
                let same_task = item.correlation_id.is_some() && item.correlation_id == other_item.correlation_id;
                let related = common.len() >= SHARED_ENTITIES_FOR_LINK || same_task;
                related.then_some((common.len() + usize::from(same_task), other, common, same_task))
            })
            .collect();
        // Most in common first; then the nearest in the log.
        related.sort_by_key(|(strength, other, _, _)| (std::cmp::Reverse(*strength), other.abs_diff(seq)));
        for (_, other, common, same_task) in related.into_iter().take(policy.max_links_per_item) {
            let other_item = view.item_at(other).expect("filtered above");
            let pair = ordered_pair(&item.item_id, &other_item.item_id);
            if view.linked_pairs.contains(&pair) || !emitted.insert(pair.clone()) {
                continue;
            }
            let names = shared_names(view, &common);
            let reason = if same_task { format!("same task; share {names}") } else { format!("share {names}") };
            verdicts.push(LinkVerdict { a: pair.0, b: pair.1, reason });
        }
    }
    link_task_neighbours(view, &is_linkable, &mut emitted, &mut verdicts);
    verdicts
}

/// The shared entities as a link's reason says them: bounded whatever the
/// items hold (see `REASON_NAMES`).
fn shared_names(view: &ConsolidationView, common: &[u32]) -> String {
    let mut names: Vec<String> = common
        .iter()
        .take(REASON_NAMES)
        .map(|entity| quoted(&view.entity_names[*entity as usize]).into_owned())
        .collect();
    if common.len() > REASON_NAMES {
        names.push(format!("and {} more", common.len() - REASON_NAMES));
    }
    names.join(", ")
}

/// Memories that co-occur in a task: each live item is linked to the live
/// item of its task just before it, so that a walk from any memory of a
/// task reaches the rest of it in order. One link per item, whatever it
/// shares.
fn link_task_neighbours(
    view: &ConsolidationView,
    is_linkable: &dyn Fn(&MemoryItem) -> bool,
    emitted: &mut BTreeSet<(String, String)>,
    verdicts: &mut Vec<LinkVerdict>,
) {
    let mut previous_in_task: BTreeMap<&str, &str> = BTreeMap::new();
    for item in view.items.iter().filter(|item| is_linkable(item)) {
        let Some(task) = item.correlation_id.as_deref() else { continue };
        if let Some(previous) = previous_in_task.insert(task, &item.item_id) {
            let pair = ordered_pair(previous, &item.item_id);
            if !view.linked_pairs.contains(&pair) && emitted.insert(pair.clone()) {
                verdicts.push(LinkVerdict { a: pair.0, b: pair.1, reason: format!("next in task {task}") });
            }
        }
    }
}
