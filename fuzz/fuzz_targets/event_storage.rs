//! The storage decoder on arbitrary bytes, as a corrupted or foreign record
//! of the embedded log or a snapshot would reach it: it must never panic,
//! and what it accepts is a valid event that round-trips.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mneme_events::storage;

fuzz_target!(|bytes: &[u8]| {
    let Ok(event) = storage::decode(bytes) else { return };
    event.validate().expect("storage decoding validates");
    let stored = storage::encode(&event).expect("a decoded event encodes again");
    assert_eq!(storage::decode(&stored).expect("its own storage form decodes"), event);
});
