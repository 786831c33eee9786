//! The content hash behind every digest: a memory's and its fact graph's.

use mneme_events::Timestamp;
use sha2::{Digest, Sha256};

use crate::item::ProvenanceRef;

/// SHA-256 over length-prefixed fields, so that no two different contents
/// can be concatenated into the same byte stream.
#[derive(Default)]
pub(crate) struct ContentHasher(Sha256);

impl ContentHasher {
    pub(crate) fn bytes(&mut self, bytes: &[u8]) {
        self.0.update((bytes.len() as u64).to_be_bytes());
        self.0.update(bytes);
    }

    pub(crate) fn text(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    pub(crate) fn number(&mut self, number: u64) {
        self.0.update(number.to_be_bytes());
    }

    pub(crate) fn time(&mut self, time: Option<Timestamp>) {
        match time {
            Some(time) => {
                self.0.update([1]);
                self.number(time.unix_nanos() as u64);
            }
            None => self.0.update([0]),
        }
    }

    pub(crate) fn provenance(&mut self, provenance: &[ProvenanceRef]) {
        self.number(provenance.len() as u64);
        for reference in provenance {
            self.number(reference.seq);
            self.bytes(&reference.event_id.0.to_be_bytes());
        }
    }

    pub(crate) fn finish(self) -> String {
        let digest = self.0.finalize();
        let hex: String = digest.iter().map(|byte| format!("{byte:02x}")).collect();
        format!("sha256:{hex}")
    }
}
