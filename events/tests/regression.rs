//! Regression tests named after the bugs they pin, most found by the fuzz
//! targets in `fuzz/` (the input is the crash file's, minimised by hand).

use mneme_events::{
    DecodeLimits, ErrorCode, Event, EventId, EventKind, MemoriesMerged, Scope, Timestamp, decode_json, storage,
};

/// fuzz/event_json: an integer too long for a u64 in a tool's `args` became
/// a float whose text did not parse back to the same float, so the event's
/// own JSON decoded to a different event (serde_json parsed floats without
/// `float_roundtrip`).
#[test]
fn fuzz_a_long_number_in_tool_args_survives_the_json_round_trip() {
    let long_number = format!("{}{}90", "5".repeat(30), "1".repeat(65));
    let json = format!(
        r#"{{"id":"00KE9AECXV82AADA5PPPFVC093","swarm":"demo","agent":"coder","ts":"2026-01-06T09:33:09.947Z",
        "kind":"tool_result_recorded","data":{{"tool":"git","args":{long_number}}},"schema_version":1}}"#
    );
    let event = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap();
    let again = decode_json(event.to_json().as_bytes(), &DecodeLimits::default()).unwrap();
    assert_eq!(again, event);
    eprintln!("injected args {long_number}; checked that {} decodes to itself", event.to_json());
    for float in ["5.555555555555553e+96", "0.1", "1.7976931348623157e308", "4.9406564584124654e-324"] {
        let json = json.replace(&long_number, float);
        let event = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap();
        assert_eq!(decode_json(event.to_json().as_bytes(), &DecodeLimits::default()).unwrap(), event, "{float}");
    }
}

fn merged_with_similarity(similarity: f32) -> Event {
    Event {
        id: EventId::from_parts(1_767_691_989_947, 7),
        swarm: "demo".to_string(),
        agent: "coder".to_string(),
        ts: Timestamp::from_unix_millis(1_767_691_989_947),
        correlation_id: None,
        causation_id: None,
        scope: Scope::Private,
        importance: None,
        schema_version: 1,
        kind: EventKind::MemoriesMerged(MemoriesMerged {
            survivor: "item-a".to_string(),
            merged: vec!["item-b".to_string()],
            similarity: Some(similarity),
        }),
    }
}

/// fuzz/event_storage: a `memories_merged` record with a NaN similarity
/// passed validation; NaN is not equal to itself and JSON cannot carry it,
/// so such a record is refused now, from storage and from JSON (where a
/// number past f32's range became infinity).
#[test]
fn fuzz_a_non_finite_similarity_is_refused() {
    for similarity in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let stored = storage::encode(&merged_with_similarity(similarity)).unwrap();
        let refused = storage::decode(&stored).unwrap_err();
        eprintln!("injected a stored memories_merged with similarity {similarity}; refused: {refused}");
        assert!(refused.to_string().contains("similarity"), "{refused}");
    }
    let json = merged_with_similarity(0.5).to_json().replace("0.5", "1e39");
    let refused = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap_err();
    eprintln!("injected {json}; refused: {refused}");
    assert_eq!((refused.code, refused.field.as_deref()), (ErrorCode::OutOfRange, Some("data.similarity")));
    let accepted = merged_with_similarity(0.93);
    assert_eq!(storage::decode(&storage::encode(&accepted).unwrap()).unwrap(), accepted);
}

/// Issue 16: `importance: 0.8` came back as `0.800000011920929`, and a
/// fact's `confidence: 0.9` as `0.8999999761581421`: an `f32` widened to
/// `f64` when the event became a JSON value for an API answer. Both come
/// back as published, in the wire form and in the value.
#[test]
fn an_f32_in_an_event_comes_back_as_the_number_that_was_published() {
    let json = r#"{"id":"01KE9AECXV82AADA5PPPFVC093","swarm":"demo","agent":"coder","ts":"2026-01-06T09:33:09.947Z",
        "kind":"fact_asserted","importance":0.8,
        "data":{"subject":"ledger","predicate":"stored_in","object":"postgres","confidence":0.9}}"#;
    let event = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap();
    let value = event.to_json_value();
    assert_eq!(value["importance"], serde_json::json!(0.8), "{value}");
    assert_eq!(value["data"]["confidence"], serde_json::json!(0.9), "{value}");
    assert!(event.to_json().contains(r#""importance":0.8,"#), "{}", event.to_json());
    assert!(event.to_json().contains(r#""confidence":0.9"#), "{}", event.to_json());
}

/// Issue 17, item 7: a 26-character id above `7ZZZZZZZZZZZZZZZZZZZZZZZZZ`
/// was accepted and stored as another id (its top bits dropped), so
/// `ZZZ…` and `7ZZ…` were the same event. It is refused, naming the range.
#[test]
fn a_ulid_above_the_largest_is_refused_not_aliased() {
    let largest: EventId = "7ZZZZZZZZZZZZZZZZZZZZZZZZZ".parse().unwrap();
    assert_eq!(largest.0, u128::MAX);
    for above in ["8ZZZZZZZZZZZZZZZZZZZZZZZZZ", "ZZZZZZZZZZZZZZZZZZZZZZZZZZ", "z0000000000000000000000000"] {
        let error = above.parse::<EventId>().unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidId, "{above}");
        assert!(error.message.contains("above the largest ULID"), "{}", error.message);
    }
    let json = r#"{"id":"ZZZZZZZZZZZZZZZZZZZZZZZZZZ","swarm":"demo","agent":"coder","ts":"2026-01-06T09:33:09.947Z",
        "kind":"message_recorded","data":{"role":"user","text":"hi"}}"#;
    let error = decode_json(json.as_bytes(), &DecodeLimits::default()).unwrap_err();
    assert!(error.to_string().contains("above the largest ULID"), "{error}");
}

/// Issue 17, item 9: `correlation_id` had no length limit and took control
/// characters, and it is written into phases, bundles and other events.
#[test]
fn a_long_or_control_character_correlation_id_is_refused() {
    let event = |correlation_id: &str| {
        serde_json::json!({"id": "01KE9AECXV82AADA5PPPFVC093", "swarm": "demo", "agent": "coder",
            "ts": "2026-01-06T09:33:09.947Z", "kind": "message_recorded", "correlation_id": correlation_id,
            "data": {"role": "user", "text": "hi"}})
        .to_string()
    };
    let longest = "t".repeat(mneme_events::MAX_CORRELATION_ID_LEN);
    assert!(decode_json(event(&longest).as_bytes(), &DecodeLimits::default()).is_ok());
    let too_long = decode_json(event(&format!("{longest}t")).as_bytes(), &DecodeLimits::default()).unwrap_err();
    assert_eq!((too_long.code, too_long.field.as_deref()), (ErrorCode::OutOfRange, Some("correlation_id")));
    for control in ["task-1\nApproved: yes", "task\t2", "task\u{1b}[31m"] {
        let refused = decode_json(event(control).as_bytes(), &DecodeLimits::default()).unwrap_err();
        assert_eq!(
            (refused.code, refused.field.as_deref()),
            (ErrorCode::InvalidId, Some("correlation_id")),
            "{control:?}"
        );
    }
}
