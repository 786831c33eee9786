//! The ids Mneme gives its own events: a verdict, a `handoff_received`, a
//! `handoff_acknowledged`, a `phase_compressed`. Each is derived from what
//! the event is about (the same verdict about the same items, the same
//! handoff), so an event written twice — two runs racing, a retry after a
//! crash — is the same id, and the log and memory keep it once.
//!
//! **Invariant:** a client cannot compute a derived id. The derivation is
//! keyed (HMAC-SHA-256) with a per-deployment secret, [`IdKey`]; with an
//! unkeyed hash anyone could publish, under the id that a recipient's
//! acknowledgement of a handoff would get, an event of their own first, and
//! the acknowledgement would be refused for good as a conflicting duplicate.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::EventId;

/// Length of the key in bytes.
pub const ID_KEY_BYTES: usize = 32;

/// The secret behind derived ids. Its `Debug` prints `<redacted>` and it has
/// no `Display`; [`IdKey::to_hex`] is the one way to read it, for storing it.
#[derive(Clone, PartialEq, Eq)]
pub struct IdKey([u8; ID_KEY_BYTES]);

impl IdKey {
    pub fn from_bytes(bytes: [u8; ID_KEY_BYTES]) -> IdKey {
        IdKey(bytes)
    }

    /// A new key from the operating system's random source.
    pub fn generate() -> Result<IdKey, getrandom::Error> {
        let mut bytes = [0u8; ID_KEY_BYTES];
        getrandom::fill(&mut bytes)?;
        Ok(IdKey(bytes))
    }

    /// A key written as 64 hexadecimal digits (surrounding whitespace, a
    /// file's final newline, is ignored). The error never repeats the text.
    pub fn from_hex(text: &str) -> Result<IdKey, String> {
        let text = text.trim();
        if text.len() != 2 * ID_KEY_BYTES || !text.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return Err(format!(
                "an id key is {} hexadecimal digits; this one is {} characters{}",
                2 * ID_KEY_BYTES,
                text.chars().count(),
                if text.bytes().all(|byte| byte.is_ascii_hexdigit()) { "" } else { ", not all hexadecimal" }
            ));
        }
        let mut bytes = [0u8; ID_KEY_BYTES];
        for (index, byte) in bytes.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * index..2 * index + 2], 16).expect("checked hexadecimal digits");
        }
        Ok(IdKey(bytes))
    }

    pub fn to_hex(&self) -> String {
        self.0.iter().map(|byte| format!("{byte:02x}")).collect()
    }

    /// The id of the event of `kind` that `agent`'s memory or Mneme writes
    /// about `key` (a handoff id, a verdict's items). The same inputs always
    /// give the same id under one key; without the key it cannot be told.
    pub fn derive(&self, agent: &str, kind: &str, key: &str) -> EventId {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        // Zero bytes separate the parts, which are names and ids without
        // one, so no two inputs run together into the same bytes.
        for part in [agent.as_bytes(), &[0], kind.as_bytes(), &[0], key.as_bytes()] {
            mac.update(part);
        }
        let digest = mac.finalize().into_bytes();
        let mut bytes = [0u8; 16];
        bytes.copy_from_slice(&digest[..16]);
        EventId(u128::from_be_bytes(bytes))
    }
}

impl fmt::Debug for IdKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("IdKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_inputs_give_the_same_id_under_one_key_and_another_under_another() {
        let key = IdKey::from_bytes([7; ID_KEY_BYTES]);
        let id = key.derive("reviewer", "handoff_acknowledged", "01KE98KZ003SQZDANB75N9T00F");
        assert_eq!(id, key.derive("reviewer", "handoff_acknowledged", "01KE98KZ003SQZDANB75N9T00F"));
        assert_ne!(
            id,
            IdKey::from_bytes([8; ID_KEY_BYTES]).derive(
                "reviewer",
                "handoff_acknowledged",
                "01KE98KZ003SQZDANB75N9T00F"
            )
        );
        assert_ne!(id, key.derive("coder", "handoff_acknowledged", "01KE98KZ003SQZDANB75N9T00F"));
        // The separators keep parts from running together.
        assert_ne!(key.derive("ab", "c", "d"), key.derive("a", "bc", "d"));
    }

    #[test]
    fn a_key_round_trips_through_hex_and_bad_text_is_refused_without_being_repeated() {
        let key = IdKey::generate().expect("the OS random source");
        assert_eq!(IdKey::from_hex(&format!("{}\n", key.to_hex())).expect("its own hex"), key);
        assert_ne!(IdKey::generate().expect("random"), key);
        let error = IdKey::from_hex("secret-but-not-hex").expect_err("not hex");
        assert!(!error.contains("secret"), "{error}");
        assert!(error.contains("64 hexadecimal digits"), "{error}");
        assert!(IdKey::from_hex(&"a".repeat(63)).is_err());
        assert_eq!(format!("{key:?}"), "IdKey(<redacted>)");
    }
}
