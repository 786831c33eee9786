//! The event decoder on arbitrary bytes, as `POST /v1/events` and NATS
//! publishers hand it over: it must never panic, and what it accepts must
//! survive both encodings unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use mneme_events::{
    CURRENT_SCHEMA_VERSION, DecodeLimits, ErrorCode, Event, decode_json, decode_json_batch,
    decode_json_batch_of_at_most, storage,
};

/// The round trip decodes without a size limit: re-encoding may grow an
/// event (an upcast payload gains its defaults).
const UNLIMITED: DecodeLimits = DecodeLimits { max_event_bytes: usize::MAX };
/// A small batch limit, so that the fuzzer reaches the refusal.
const SMALL_BATCH: usize = 3;

fuzz_target!(|bytes: &[u8]| {
    let limits = DecodeLimits::default();
    if let Ok(event) = decode_json(bytes, &limits) {
        check_round_trips(&event);
    }
    let batch = decode_json_batch(bytes, &limits);
    match &batch {
        Ok(events) => {
            assert!(!events.is_empty(), "an accepted batch holds events");
            events.iter().for_each(check_round_trips);
        }
        Err(refused) => assert!(!refused.error.message.is_empty(), "a refusal says why"),
    }
    match decode_json_batch_of_at_most(bytes, &limits, SMALL_BATCH) {
        Ok(events) => {
            assert!(events.len() <= SMALL_BATCH);
            assert_eq!(Some(&events), batch.as_ref().ok(), "the limit changes nothing under it");
        }
        Err(refused) if refused.error.code == ErrorCode::BatchTooLarge => {
            assert!(refused.error.message.contains(&SMALL_BATCH.to_string()), "the refusal names the limit");
        }
        Err(refused) => assert_eq!(Some(&refused), batch.as_ref().err(), "the limit changes no other refusal"),
    }
});

/// An accepted event re-encodes to JSON that decodes to the same event (at
/// the current schema version, which is what it is written at), and
/// round-trips through the storage form.
fn check_round_trips(event: &Event) {
    let json = event.to_json();
    let decoded = decode_json(json.as_bytes(), &UNLIMITED)
        .unwrap_or_else(|error| panic!("an accepted event's own JSON is refused: {error}\n{json}"));
    assert_eq!(decoded, Event { schema_version: CURRENT_SCHEMA_VERSION, ..event.clone() }, "JSON round trip");
    let stored = storage::encode(event).expect("an accepted event encodes for storage");
    let restored = storage::decode(&stored).expect("an event's own storage form decodes");
    assert_eq!(&restored, event, "storage round trip");
}
