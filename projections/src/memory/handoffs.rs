//! The handoffs of a memory's own agent: those it received (with their
//! packages and acknowledgements) and the bundles of those it sent, as
//! assembled when each `handoff_sent` was applied.
//!
//! A bundle holds only what the recipient may see: items of the sender
//! that are not private, and other agents' shared items (the only foreign
//! items a memory holds). Phase levels and notes, which may quote private
//! events, enter it only from phases whose every event the recipient may see.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{
    BundleItem, BundleProvenance, Event, EventId, HandoffBundle, HandoffPackage, HandoffReceived, HandoffSent,
};
use mneme_index::tokens;

use super::AgentMemory;
use crate::graph::GraphView;
use crate::item::{ItemState, MemoryItem, ProvenanceRef};

/// A bundle item's text is cut to this many tokens, so that one long tool
/// output cannot take the whole budget.
const BUNDLE_ITEM_TOKENS: usize = 200;
/// Files listed in a bundle at most.
const BUNDLE_FILES: usize = 50;

/// A handoff this memory's agent received.
#[derive(Debug, Clone, PartialEq)]
pub struct HandoffRecord {
    /// The id of the `handoff_sent` event.
    pub handoff_id: EventId,
    pub from: String,
    /// The `handoff_received` event.
    pub received: ProvenanceRef,
    pub package: Option<HandoffPackage>,
    /// The agent's `handoff_acknowledged` event, once there is one.
    pub acknowledged: Option<ProvenanceRef>,
}

impl HandoffRecord {
    pub fn is_pending(&self) -> bool {
        self.acknowledged.is_none()
    }
}

/// The bundle of a handoff this memory's agent sent, with what it was
/// assembled from.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SentBundle {
    /// The seq of the `handoff_sent`.
    pub(crate) seq: u64,
    pub(crate) bundle: HandoffBundle,
    /// The seqs of the items of the handoff's tasks the recipient could
    /// use then: a purge later recomputes the bundle's files from those
    /// it leaves (see [`Handoffs::redact_sent`]).
    pub(crate) task_items: Vec<u64>,
}

/// The handoffs of one memory's agent.
#[derive(Debug, Default)]
pub struct Handoffs {
    /// Received, by the id of their `handoff_sent`.
    received: BTreeMap<EventId, HandoffRecord>,
    /// The bundle of each handoff sent, by the id of its `handoff_sent`:
    /// it holds what the agent knew when it handed off, however late the
    /// router asks.
    sent: BTreeMap<EventId, SentBundle>,
}

impl Handoffs {
    /// As a snapshot kept them.
    pub(super) fn restored(
        received: BTreeMap<EventId, HandoffRecord>,
        sent: BTreeMap<EventId, SentBundle>,
    ) -> Handoffs {
        Handoffs { received, sent }
    }

    /// The handoffs received, pending ones first, each group in the order
    /// they were received.
    pub fn received(&self) -> Vec<&HandoffRecord> {
        let mut records: Vec<&HandoffRecord> = self.received.values().collect();
        records.sort_by_key(|record| (!record.is_pending(), record.received.seq));
        records
    }

    /// Received, by the id of the `handoff_sent`, in id order.
    pub(crate) fn received_by_id(&self) -> impl Iterator<Item = &HandoffRecord> {
        self.received.values()
    }

    pub fn record(&self, handoff_id: EventId) -> Option<&HandoffRecord> {
        self.received.get(&handoff_id)
    }

    /// The bundle of a handoff sent, with the seq of its `handoff_sent`.
    pub fn sent_bundle(&self, handoff_id: EventId) -> Option<(u64, &HandoffBundle)> {
        self.sent.get(&handoff_id).map(|sent| (sent.seq, &sent.bundle))
    }

    /// The bundles sent, by the id of their `handoff_sent`.
    pub(crate) fn sent(&self) -> impl Iterator<Item = (&EventId, &SentBundle)> {
        self.sent.iter()
    }

    /// `handoff_received` of this memory's own agent.
    pub(super) fn observe_received(&mut self, received: &HandoffReceived, provenance: ProvenanceRef) {
        let record = self.received.entry(received.handoff_id).or_insert_with(|| HandoffRecord {
            handoff_id: received.handoff_id,
            from: received.from.clone(),
            received: provenance,
            package: None,
            acknowledged: None,
        });
        // An agent's runtime may record the receipt itself, before Mneme
        // delivers the package: the first receipt counts, the first package
        // fills it.
        if record.package.is_none() {
            record.package = received.package.clone();
        }
    }

    /// `handoff_acknowledged` of this memory's own agent: the first one
    /// counts.
    pub(super) fn observe_acknowledged(&mut self, handoff_id: EventId, provenance: ProvenanceRef) {
        if let Some(record) = self.received.get_mut(&handoff_id) {
            record.acknowledged.get_or_insert(provenance);
        }
    }

    /// `handoff_sent` of this memory's own agent, with its bundle.
    pub(super) fn observe_sent(&mut self, handoff_id: EventId, sent: SentBundle) {
        self.sent.insert(handoff_id, sent);
    }

    /// A purge reaches the bundles of handoffs not yet sent on: an item
    /// that an erased event created or changed leaves them, and the files
    /// are those the task items it leaves name (an erased event's mention
    /// of a file goes with it, even if another event names the file).
    ///
    /// The files are recomputed rather than filtered: when the bundle was
    /// assembled, the swarm's graph may already have erased a shared event
    /// this purge erases (the swarm's feed drives it ahead of the memories),
    /// so the files then are not always the same; those left after the
    /// purge are.
    pub(super) fn redact_sent(&mut self, erased_seqs: &BTreeSet<u64>, view: &GraphView<'_>) {
        for SentBundle { bundle, task_items, .. } in self.sent.values_mut() {
            bundle.items.retain(|item| !item.provenance.iter().any(|reference| erased_seqs.contains(&reference.seq)));
            task_items.retain(|seq| !erased_seqs.contains(seq));
            let surviving: BTreeSet<u64> = task_items.iter().copied().collect();
            let used: usize = bundle.items.iter().map(|item| tokens::count(&item.text)).sum();
            let (files, used) = files_within(view.files_linked_to(&surviving), used, bundle.budget_tokens as usize);
            bundle.files = files;
            bundle.used_tokens = u32::try_from(used).unwrap_or(u32::MAX);
        }
    }

    /// A purge reaches the packages this agent received: a package whose
    /// `handoff_received` it erased goes whole (the handoff stays listed,
    /// without it), and from the others every bundle item that an erased
    /// event created or changed.
    pub(super) fn redact_received(&mut self, erased_seqs: &BTreeSet<u64>, erased_ids: &BTreeSet<String>) {
        for record in self.received.values_mut() {
            if erased_seqs.contains(&record.received.seq) {
                record.package = None;
                continue;
            }
            let Some(package) = &mut record.package else { continue };
            package.bundle.items.retain(|item| {
                !erased_ids.contains(item.item_id.trim())
                    && !item.provenance.iter().any(|reference| erased_seqs.contains(&reference.seq))
            });
            let used: usize = package.bundle.items.iter().map(|item| tokens::count(&item.text)).sum::<usize>()
                + package.bundle.files.iter().map(|file| tokens::count(file)).sum::<usize>();
            package.bundle.used_tokens = u32::try_from(used).unwrap_or(u32::MAX);
        }
    }
}

/// The bundle of a `handoff_sent` of a memory's own agent, assembled as
/// it is applied, from the memory as it stands at the event's seq (items,
/// validity and verdicts as they were then), so that what the recipient
/// gets does not depend on how far the memory had got when the router
/// asked. Nothing later than the handoff can enter it.
pub(super) fn bundle_when_sent(memory: &AgentMemory, seq: u64, event: &Event, sent: &HandoffSent) -> SentBundle {
    let tasks = handoff_tasks(event, sent);
    let tasks: Vec<&str> = tasks.iter().map(String::as_str).collect();
    let named_decisions: Vec<EventId> =
        sent.decisions.iter().filter_map(|decision| decision.trim().parse().ok()).collect();
    let (bundle, task_items) =
        bundle_at(memory, seq, &tasks, &named_decisions, sent.to.trim(), memory.config().handoff_bundle_tokens);
    SentBundle { seq, bundle, task_items: task_items.into_iter().collect() }
}

/// The context bundle of a handoff to `recipient` about the task named
/// `tasks` (the handoff's task and its correlation id): open
/// contradictions first, then decisions (those the handoff names, then
/// the task's active ones, newest first), then findings (the task's
/// facts still valid, and the findings of its completed phases), within
/// `budget_tokens`, and the files the task touched.
pub fn handoff_bundle(
    memory: &AgentMemory,
    tasks: &[&str],
    named_decisions: &[EventId],
    recipient: &str,
    budget_tokens: usize,
) -> HandoffBundle {
    bundle_at(memory, memory.checkpoint(), tasks, named_decisions, recipient, budget_tokens).0
}

/// [`handoff_bundle`] as of the event at `seq` (the
/// `handoff_sent` being applied): the swarm's graph may have gone
/// further, and a bundle holds what the agent knew then. With the
/// bundle, the seqs of the task's items it was assembled from.
fn bundle_at(
    memory: &AgentMemory,
    as_of_seq: u64,
    tasks: &[&str],
    named_decisions: &[EventId],
    recipient: &str,
    budget_tokens: usize,
) -> (HandoffBundle, BTreeSet<u64>) {
    let graph = memory.graph().through(as_of_seq);
    let view = graph.view();
    let mut bundle = BundleBuilder::new(budget_tokens);
    let in_task = |item: &MemoryItem| item.correlation_id.as_deref().is_some_and(|task| tasks.contains(&task));
    let usable = |item: &MemoryItem| item.is_visible_to(recipient) && item.state.is_searchable();
    let task_items: BTreeSet<u64> =
        memory.items().iter().filter(|item| in_task(item) && usable(item)).map(|item| item.seq).collect();

    for open in memory.open_contradictions() {
        let (Some(a), Some(b)) = (memory.item(&open.a), memory.item(&open.b)) else { continue };
        if !usable(a) || !usable(b) || !(task_items.contains(&a.seq) || task_items.contains(&b.seq)) {
            continue;
        }
        let text = format!("{} ⟂ {} — {}", a.text, b.text, open.reason);
        let provenance = [a.creating_event(), b.creating_event()];
        bundle.push("contradiction", &open.contradiction_id, "contradiction", &a.agent, &text, &provenance);
    }

    let mut decisions: Vec<&MemoryItem> = named_decisions
        .iter()
        .filter_map(|id| memory.item(&id.to_string()))
        .filter(|item| item.kind == "decision_made" && usable(item))
        .collect();
    let active_in_task = memory.items().seqs_of_kind("decision_made").iter().rev().filter_map(|seq| {
        let item = &memory.items()[*seq];
        (task_items.contains(seq) && is_active_decision(&view, item, as_of_seq)).then_some(item)
    });
    for item in active_in_task {
        if !decisions.iter().any(|chosen| chosen.seq == item.seq) {
            decisions.push(item);
        }
    }
    for item in decisions {
        bundle.push_item("decision", item, &visible_provenance(memory, item, recipient));
    }

    let valid_fact_seqs = view.valid_fact_seqs_at(as_of_seq);
    for seq in memory.items().seqs_of_kind("fact_asserted").iter().rev() {
        if task_items.contains(seq) && valid_fact_seqs.contains(seq) {
            let item = &memory.items()[*seq];
            bundle.push_item("finding", item, &visible_provenance(memory, item, recipient));
        }
    }
    for phase in memory.phases().phases() {
        let of_task = phase.task.as_deref().is_some_and(|task| tasks.contains(&task));
        let fully_visible = phase
            .event_seqs
            .iter()
            .all(|seq| memory.items().get(*seq).is_none_or(|item| item.is_visible_to(recipient)));
        let Some(levels) = phase.levels.as_ref().filter(|_| of_task && fully_visible && !phase.redacted) else {
            continue;
        };
        if levels.findings.trim().is_empty() {
            continue;
        }
        let provenance: Vec<ProvenanceRef> = phase
            .event_seqs
            .iter()
            .filter_map(|seq| memory.items().get(*seq))
            .map(MemoryItem::creating_event)
            .collect();
        bundle.push("finding", &phase.phase_id, "phase", memory.agent(), &levels.findings, &provenance);
    }

    bundle.files = view.files_linked_to(&task_items).into_iter().collect();
    (bundle.finish(), task_items)
}

/// The events behind an item that the recipient may know of: those that
/// created it or a copy merged into it. Other events that changed it
/// (usage, consolidation) may be private to the sender.
fn visible_provenance(memory: &AgentMemory, item: &MemoryItem, recipient: &str) -> Vec<ProvenanceRef> {
    item.provenance
        .iter()
        .copied()
        .filter(|reference| {
            memory
                .items()
                .get(reference.seq)
                .is_some_and(|creator| creator.creating_event() == *reference && creator.is_visible_to(recipient))
        })
        .collect()
}

/// Whether the decision `item` made still stood as of the event at `seq`.
fn is_active_decision(view: &GraphView<'_>, item: &MemoryItem, seq: u64) -> bool {
    let id = format!("decision:{}", item.creating_event().event_id);
    view.node(&id).is_some() && !view.is_closed_at(&id, seq)
}

/// The tasks a handoff is about: its `task` and the event's correlation id.
pub fn handoff_tasks(event: &Event, sent: &HandoffSent) -> Vec<String> {
    let mut tasks = vec![sent.task.trim().to_string()];
    tasks.extend(event.correlation_id.iter().cloned());
    tasks.dedup();
    tasks
}

/// Fills a bundle in order until its budget is spent.
struct BundleBuilder {
    budget_tokens: usize,
    used_tokens: usize,
    items: Vec<BundleItem>,
    seen: BTreeMap<String, ()>,
    files: Vec<String>,
}

impl BundleBuilder {
    fn new(budget_tokens: usize) -> BundleBuilder {
        BundleBuilder { budget_tokens, used_tokens: 0, items: Vec::new(), seen: BTreeMap::new(), files: Vec::new() }
    }

    fn push_item(&mut self, section: &str, item: &MemoryItem, provenance: &[ProvenanceRef]) {
        if item.state == ItemState::Purged {
            return;
        }
        self.push(section, &item.item_id, item.kind, &item.agent, &item.text, provenance);
    }

    fn push(
        &mut self,
        section: &str,
        item_id: &str,
        kind: &str,
        agent: &str,
        text: &str,
        provenance: &[ProvenanceRef],
    ) {
        if self.seen.insert(item_id.to_string(), ()).is_some() {
            return;
        }
        let (text, tokens) = tokens::truncate(text, BUNDLE_ITEM_TOKENS);
        if self.used_tokens + tokens > self.budget_tokens {
            return;
        }
        self.used_tokens += tokens;
        self.items.push(BundleItem {
            section: section.to_string(),
            item_id: item_id.to_string(),
            kind: kind.to_string(),
            agent: agent.to_string(),
            text,
            provenance: provenance
                .iter()
                .map(|reference| BundleProvenance { seq: reference.seq, event_id: reference.event_id })
                .collect(),
        });
    }

    /// Lists the files that fit in what is left of the budget.
    fn finish(mut self) -> HandoffBundle {
        let candidates = std::mem::take(&mut self.files);
        let (files, used_tokens) = files_within(candidates, self.used_tokens, self.budget_tokens);
        HandoffBundle {
            budget_tokens: u32::try_from(self.budget_tokens).unwrap_or(u32::MAX),
            used_tokens: u32::try_from(used_tokens).unwrap_or(u32::MAX),
            items: self.items,
            files,
        }
    }
}

/// The first of `candidates` (at most [`BUNDLE_FILES`]) that fit in what
/// is left of `budget_tokens` after `used_tokens`, and the tokens used then.
pub(crate) fn files_within(
    candidates: impl IntoIterator<Item = String>,
    mut used_tokens: usize,
    budget_tokens: usize,
) -> (Vec<String>, usize) {
    let mut files = Vec::new();
    for file in candidates.into_iter().take(BUNDLE_FILES) {
        let tokens = tokens::count(&file);
        if used_tokens + tokens > budget_tokens {
            break;
        }
        used_tokens += tokens;
        files.push(file);
    }
    (files, used_tokens)
}
