//! What purges erased, and what a reader of the log is shown of it.
//!
//! A purge (`memory_purged`, a tombstone on the log) erases items from a
//! memory. Mneme's eraser then records, beside the log, what each purge
//! erased: an [`ErasureRecord`] per tombstone, naming every erased event by
//! its seq, id, agent, kind, time and scope, never its payload. Every path
//! that reads raw log entries — pages of the log and their stream,
//! provenance, the timeline, a phase's original events, dead letters, the
//! CLI's `tail` — shows them through [`Erasures::show`], the one place that
//! decides what a reader sees of an erased event: its stub, never its
//! payload. Events that quote an erased one (a handoff's package, a
//! contradiction's reason, a link's reason, a phase's model summary) are
//! shown with the quote taken out, and an `embeddings_computed` without
//! the erased items' vectors.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::envelope::{Event, EventId, Scope, Timestamp};
use crate::kinds::{EventKind, HandoffPackage};

/// What stands in a derived event for text that quoted an erased event.
pub const ERASED_TEXT: &str = "[erased]";

/// One event a purge erased: what stays of it. Never its payload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErasedEvent {
    pub seq: u64,
    pub id: EventId,
    pub agent: String,
    pub kind: String,
    pub ts: Timestamp,
    pub scope: Scope,
}

impl ErasedEvent {
    /// The stub of `event`, at `seq`.
    pub fn of(seq: u64, event: &Event) -> ErasedEvent {
        ErasedEvent {
            seq,
            id: event.id,
            agent: event.agent.clone(),
            kind: event.kind_name().to_string(),
            ts: event.ts,
            scope: event.scope,
        }
    }
}

/// A `memory_purged` tombstone: the purge that erased events.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeRef {
    /// The agent whose memory the purge erased from.
    pub agent: String,
    pub seq: u64,
    pub event_id: EventId,
}

/// What one purge erased from its memory, as Mneme's eraser recorded it
/// beside the log once the memory had applied the tombstone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErasureRecord {
    pub purge: PurgeRef,
    /// The erased events, by seq.
    pub events: Vec<ErasedEvent>,
    /// Phases that held an erased event (their `phase_id`s): a model
    /// summary of them may quote it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<EventId>,
}

/// What a reader is shown of one log entry's event.
#[derive(Debug, Clone, PartialEq)]
pub enum Shown<'a> {
    /// Nothing of it was erased.
    Intact(&'a Event),
    /// It quotes an erased event: the quote is taken out.
    Redacted(Box<Event>),
    /// The event was erased: its stub, and the purges that erased it.
    Erased { event: &'a ErasedEvent, by: &'a [PurgeRef] },
}

/// Every erasure recorded for a swarm: what the readers of its log consult.
/// Recording the same purge twice changes nothing.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Erasures {
    /// Erased events by seq, with the purges that erased each (sorted).
    events: BTreeMap<u64, (ErasedEvent, Vec<PurgeRef>)>,
    ids: HashSet<EventId>,
    phases: HashSet<EventId>,
    /// Seqs of the purges recorded.
    purges: HashSet<u64>,
}

impl Erasures {
    pub fn new() -> Erasures {
        Erasures::default()
    }

    /// Folds `records` in.
    pub fn of(records: &[ErasureRecord]) -> Erasures {
        let mut erasures = Erasures::new();
        for record in records {
            erasures.record(record);
        }
        erasures
    }

    /// Takes in what one purge erased.
    pub fn record(&mut self, record: &ErasureRecord) {
        self.purges.insert(record.purge.seq);
        for erased in &record.events {
            let (_, by) = self.events.entry(erased.seq).or_insert_with(|| (erased.clone(), Vec::new()));
            if let Err(at) = by.binary_search(&record.purge) {
                by.insert(at, record.purge.clone());
            }
            self.ids.insert(erased.id);
        }
        self.phases.extend(record.phases.iter().copied());
    }

    /// Whether the purge at `purge_seq` is recorded.
    pub fn has_purge(&self, purge_seq: u64) -> bool {
        self.purges.contains(&purge_seq)
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty() && self.phases.is_empty()
    }

    /// The stub of the event erased at `seq`, with the purges that erased
    /// it.
    pub fn erased(&self, seq: u64) -> Option<(&ErasedEvent, &[PurgeRef])> {
        self.events.get(&seq).map(|(event, by)| (event, by.as_slice()))
    }

    /// The events erased with seqs in `seqs`, in seq order: where they
    /// were, the log holds nothing once the erasure is carried into it.
    pub fn erased_in(
        &self,
        seqs: impl std::ops::RangeBounds<u64>,
    ) -> impl Iterator<Item = (&ErasedEvent, &[PurgeRef])> + '_ {
        self.events.range(seqs).map(|(_, (event, by))| (event, by.as_slice()))
    }

    /// Whether an item id (an event id's text) names an erased event.
    fn is_erased_item(&self, item_id: &str) -> bool {
        item_id.trim().parse::<EventId>().is_ok_and(|id| self.ids.contains(&id))
    }

    /// What a reader is shown of `event`, read at `seq`.
    pub fn show<'a>(&'a self, seq: u64, event: &'a Event) -> Shown<'a> {
        if let Some((erased, by)) = self.events.get(&seq).filter(|(erased, _)| erased.id == event.id) {
            return Shown::Erased { event: erased, by };
        }
        if self.is_empty() {
            return Shown::Intact(event);
        }
        match self.redacted_kind(&event.kind) {
            Some(kind) => Shown::Redacted(Box::new(Event { kind, ..event.clone() })),
            None => Shown::Intact(event),
        }
    }

    /// A handoff package without what quotes erased events: `None` when the
    /// handoff itself was erased.
    pub fn redact_package(&self, handoff_id: EventId, package: &HandoffPackage) -> Option<HandoffPackage> {
        if self.ids.contains(&handoff_id) {
            return None;
        }
        let mut package = package.clone();
        package.bundle.items.retain(|item| {
            !self.is_erased_item(&item.item_id)
                && !item
                    .provenance
                    .iter()
                    .any(|reference| self.ids.contains(&reference.event_id) || self.events.contains_key(&reference.seq))
        });
        Some(package)
    }

    /// The kind's payload with quotes of erased events taken out, when it
    /// has any.
    fn redacted_kind(&self, kind: &EventKind) -> Option<EventKind> {
        match kind {
            EventKind::HandoffReceived(received) => {
                let package = received.package.as_ref()?;
                let redacted = self.redact_package(received.handoff_id, package);
                (redacted.as_ref() != Some(package)).then(|| {
                    let mut received = received.clone();
                    received.package = redacted;
                    EventKind::HandoffReceived(received)
                })
            }
            EventKind::ContradictionDetected(detected)
                if self.is_erased_item(&detected.a) || self.is_erased_item(&detected.b) =>
            {
                let mut detected = detected.clone();
                detected.reason = ERASED_TEXT.to_string();
                Some(EventKind::ContradictionDetected(detected))
            }
            EventKind::MemoriesLinked(linked)
                if linked.links.iter().any(|link| self.is_erased_item(&link.a) || self.is_erased_item(&link.b)) =>
            {
                let mut linked = linked.clone();
                for link in &mut linked.links {
                    if self.is_erased_item(&link.a) || self.is_erased_item(&link.b) {
                        link.reason = ERASED_TEXT.to_string();
                    }
                }
                Some(EventKind::MemoriesLinked(linked))
            }
            EventKind::EmbeddingsComputed(computed)
                if computed.vectors.iter().any(|vector| self.ids.contains(&vector.event_id)) =>
            {
                // A vector says something of its item's text: an erased
                // item's goes with it (its memories dropped it already).
                let mut computed = computed.clone();
                computed.vectors.retain(|vector| !self.ids.contains(&vector.event_id));
                Some(EventKind::EmbeddingsComputed(computed))
            }
            EventKind::PhaseCompressed(compressed) if self.phases.contains(&compressed.phase_id) => {
                let mut compressed = compressed.clone();
                for text in [
                    &mut compressed.index,
                    &mut compressed.compressed,
                    &mut compressed.summary,
                    &mut compressed.findings,
                ] {
                    *text = ERASED_TEXT.to_string();
                }
                Some(EventKind::PhaseCompressed(compressed))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::{
        BundleItem, BundleProvenance, ContradictionDetected, HandoffBundle, HandoffReceived, MessageRecorded,
    };

    fn message(text: &str) -> Event {
        Event::new(
            "demo",
            "coder",
            EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: text.into() }),
        )
    }

    fn record(purge_seq: u64, erased: &[(u64, &Event)]) -> ErasureRecord {
        ErasureRecord {
            purge: PurgeRef { agent: "coder".into(), seq: purge_seq, event_id: EventId::new() },
            events: erased.iter().map(|(seq, event)| ErasedEvent::of(*seq, event)).collect(),
            phases: Vec::new(),
        }
    }

    #[test]
    fn an_erased_event_is_shown_as_its_stub_and_nothing_else() {
        let secret = message("the secret is hunter2");
        let kept = message("nothing to hide");
        let erasures = Erasures::of(&[record(9, &[(3, &secret)])]);
        let Shown::Erased { event, by } = erasures.show(3, &secret) else { panic!("erased") };
        assert_eq!((event.seq, event.id, event.kind.as_str()), (3, secret.id, "message_recorded"));
        assert_eq!(by.iter().map(|purge| purge.seq).collect::<Vec<_>>(), vec![9]);
        assert!(!serde_json::to_string(event).unwrap().contains("hunter2"));
        assert_eq!(erasures.show(4, &kept), Shown::Intact(&kept));
        // Another event at the erased seq (a log rebuilt elsewhere) is not
        // taken for the erased one.
        assert_eq!(erasures.show(3, &kept), Shown::Intact(&kept));
    }

    #[test]
    fn recording_a_purge_twice_changes_nothing_and_two_purges_of_one_event_are_both_named() {
        let secret = message("hunter2");
        let first = record(9, &[(3, &secret)]);
        let mut erasures = Erasures::of(&[first.clone(), first.clone()]);
        let once = erasures.clone();
        erasures.record(&first);
        assert_eq!(erasures, once);
        erasures.record(&record(12, &[(3, &secret)]));
        assert_eq!(erasures.erased(3).unwrap().1.len(), 2);
        assert!(erasures.has_purge(9) && erasures.has_purge(12) && !erasures.has_purge(3));
    }

    #[test]
    fn events_that_quote_an_erased_one_are_shown_without_the_quote() {
        let secret = message("hunter2");
        let erasures = Erasures::of(&[record(9, &[(3, &secret)])]);
        let detected = Event::new(
            "demo",
            "coder",
            EventKind::ContradictionDetected(ContradictionDetected {
                contradiction_id: "c1".into(),
                a: secret.id.to_string(),
                b: EventId::new().to_string(),
                reason: "hunter2 vs hunter3".into(),
                rule: None,
            }),
        );
        let Shown::Redacted(shown) = erasures.show(20, &detected) else { panic!("redacted") };
        assert!(!shown.to_json().contains("hunter2"));
        let item = |id: String, seq: u64, text: &str| BundleItem {
            section: "finding".into(),
            item_id: id.clone(),
            kind: "message_recorded".into(),
            agent: "coder".into(),
            text: text.into(),
            provenance: vec![BundleProvenance { seq, event_id: id.parse().unwrap() }],
        };
        let kept = EventId::new();
        let package = HandoffPackage {
            task: "t".into(),
            summary: String::new(),
            artifacts: Vec::new(),
            decisions: Vec::new(),
            constraints: Vec::new(),
            sent_seq: 5,
            sent_at: Timestamp(0),
            bundle: HandoffBundle {
                budget_tokens: 100,
                used_tokens: 2,
                items: vec![item(secret.id.to_string(), 3, "hunter2"), item(kept.to_string(), 4, "fine")],
                files: Vec::new(),
            },
        };
        let received = Event::new(
            "demo",
            "reviewer",
            EventKind::HandoffReceived(HandoffReceived {
                from: "coder".into(),
                handoff_id: EventId::new(),
                package: Some(package.clone()),
            }),
        );
        let Shown::Redacted(shown) = erasures.show(21, &received) else { panic!("redacted") };
        let json = shown.to_json();
        assert!(!json.contains("hunter2") && json.contains("fine"));
        // Deep vectors: the erased item's is taken out, the others stay.
        let computed = Event::new(
            "demo",
            "coder",
            EventKind::EmbeddingsComputed(crate::EmbeddingsComputed {
                model: "m".into(),
                model_hash: "h".into(),
                dimensions: 1,
                vectors: [secret.id, kept]
                    .map(|event_id| crate::ComputedVector { event_id, scale: 1.0, values: crate::Int8Values(vec![7]) })
                    .to_vec(),
            }),
        );
        let Shown::Redacted(shown) = erasures.show(22, &computed) else { panic!("redacted") };
        let EventKind::EmbeddingsComputed(shown) = &shown.kind else { panic!("the same kind") };
        assert_eq!(shown.vectors.iter().map(|vector| vector.event_id).collect::<Vec<_>>(), [kept]);
        // A package of an erased handoff is shown without it.
        let handoff = message("hand this over");
        let erasures = Erasures::of(&[record(9, &[(5, &handoff)])]);
        assert_eq!(erasures.redact_package(handoff.id, &package), None);
    }
}
