//! The contradictions consolidation reported of a memory's items: open
//! until somebody resolves them, then settled, so that consolidation does
//! not report a settled pair again.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{ContradictionDetected, ContradictionResolution};

use crate::item::ProvenanceRef;

/// What is left of a contradiction's reason once a side is purged.
const PURGED_CONTRADICTION_REASON: &str = "(a side was purged)";

/// A contradiction between two items that nobody has resolved yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenContradiction {
    pub contradiction_id: String,
    /// The item ids of the two sides.
    pub a: String,
    pub b: String,
    pub reason: String,
    pub provenance: ProvenanceRef,
}

/// A contradiction somebody settled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedContradiction {
    pub contradiction_id: String,
    pub a: String,
    pub b: String,
    pub resolution: ContradictionResolution,
    /// The `contradiction_resolved` event.
    pub provenance: ProvenanceRef,
}

impl ResolvedContradiction {
    /// The item id of the side that lost, and of the one that won; `None`
    /// when both stay valid.
    pub fn loser_and_winner(&self) -> Option<(&str, &str)> {
        match self.resolution {
            ContradictionResolution::AWins => Some((&self.b, &self.a)),
            ContradictionResolution::BWins | ContradictionResolution::Merged => Some((&self.a, &self.b)),
            ContradictionResolution::BothValid => None,
        }
    }
}

/// A memory's contradictions, open and settled, by id.
#[derive(Debug, Default)]
pub struct Contradictions {
    open: BTreeMap<String, OpenContradiction>,
    resolved: BTreeMap<String, ResolvedContradiction>,
}

impl Contradictions {
    /// As a snapshot kept them.
    pub(super) fn restored(
        open: BTreeMap<String, OpenContradiction>,
        resolved: BTreeMap<String, ResolvedContradiction>,
    ) -> Contradictions {
        Contradictions { open, resolved }
    }

    /// Not yet resolved, by id.
    pub fn open(&self) -> impl Iterator<Item = &OpenContradiction> {
        self.open.values()
    }

    pub fn open_one(&self, contradiction_id: &str) -> Option<&OpenContradiction> {
        self.open.get(contradiction_id)
    }

    /// Settled, by id.
    pub fn resolved(&self) -> impl Iterator<Item = &ResolvedContradiction> {
        self.resolved.values()
    }

    /// `contradiction_detected`.
    pub(super) fn detected(&mut self, detected: &ContradictionDetected, provenance: ProvenanceRef) {
        self.open.insert(
            detected.contradiction_id.clone(),
            OpenContradiction {
                contradiction_id: detected.contradiction_id.clone(),
                a: detected.a.clone(),
                b: detected.b.clone(),
                reason: detected.reason.clone(),
                provenance,
            },
        );
    }

    /// Takes the open contradiction a resolution settles.
    pub(super) fn take_open(&mut self, contradiction_id: &str) -> Option<OpenContradiction> {
        self.open.remove(contradiction_id)
    }

    pub(super) fn settled(&mut self, resolved: ResolvedContradiction) {
        self.resolved.insert(resolved.contradiction_id.clone(), resolved);
    }

    /// The seqs of the resolutions whose losing side is one of `items`.
    pub(super) fn resolutions_that_ended(&self, items: &BTreeSet<String>) -> Vec<u64> {
        self.resolved
            .values()
            .filter(|resolved| resolved.loser_and_winner().is_some_and(|(loser, _)| items.contains(loser)))
            .map(|resolved| resolved.provenance.seq)
            .collect()
    }

    /// The reason of a contradiction quotes both sides: with one purged,
    /// only the fact that there was one remains.
    pub(super) fn redact(&mut self, erased_ids: &BTreeSet<String>) {
        for open in self.open.values_mut() {
            if erased_ids.contains(&open.a) || erased_ids.contains(&open.b) {
                open.reason = PURGED_CONTRADICTION_REASON.to_string();
            }
        }
    }
}
