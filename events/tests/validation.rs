//! One test per way an event can be refused, plus round trips of both
//! encodings.

use mneme_events::{
    DecodeLimits, ErrorCode, Event, EventKind, decode_json, decode_json_batch, decode_json_batch_of_at_most, storage,
};
use serde_json::{Value, json};

fn valid_tool_result() -> Value {
    json!({
        "id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6",
        "swarm": "demo",
        "agent": "coder",
        "ts": "2026-01-06T10:30:00Z",
        "kind": "tool_result_recorded",
        "data": {"tool": "bash", "args": {"cmd": "cargo test"}, "output": "test result: FAILED", "exit_code": 101, "duration_ms": 5300}
    })
}

fn decode(value: &Value) -> Result<Event, mneme_events::ValidationError> {
    decode_json(value.to_string().as_bytes(), &DecodeLimits::default())
}

fn refused(value: &Value) -> (ErrorCode, Option<String>, String) {
    let error = decode(value).expect_err("event should be refused");
    (error.code, error.field, error.message)
}

#[test]
fn the_issue_example_decodes() {
    let event = decode(&valid_tool_result()).unwrap();
    assert_eq!(event.kind_name(), "tool_result_recorded");
    assert_eq!(event.scope, mneme_events::Scope::Private);
    let EventKind::ToolResultRecorded(result) = &event.kind else { panic!("wrong kind") };
    assert_eq!(result.exit_code, Some(101));
    assert!(result.failed());
}

#[test]
fn malformed_json_is_refused_with_position() {
    let error = decode_json(b"{\"id\": ", &DecodeLimits::default()).unwrap_err();
    assert_eq!(error.code, ErrorCode::MalformedJson);
    assert!(error.message.contains("line 1"), "{}", error.message);
}

#[test]
fn a_non_object_is_refused() {
    let (code, _, message) = refused(&json!(["not", "an", "event"]));
    assert_eq!(code, ErrorCode::NotAnObject);
    assert!(message.contains("an array"));
}

#[test]
fn unknown_kind_is_refused_and_known_kinds_listed() {
    let mut event = valid_tool_result();
    event["kind"] = json!("tool_result_recordedd");
    let (code, field, message) = refused(&event);
    assert_eq!(code, ErrorCode::UnknownKind);
    assert_eq!(field.as_deref(), Some("kind"));
    assert!(message.contains("tool_result_recorded,"), "{message}");
}

#[test]
fn missing_envelope_field_is_named() {
    let mut event = valid_tool_result();
    event.as_object_mut().unwrap().remove("agent");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::MissingField);
    assert_eq!(field.as_deref(), Some("agent"));
}

#[test]
fn missing_payload_field_is_named_with_its_path() {
    let mut event = valid_tool_result();
    event["data"].as_object_mut().unwrap().remove("tool");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::MissingField);
    assert_eq!(field.as_deref(), Some("data.tool"));
}

#[test]
fn wrongly_typed_payload_field_is_named_with_its_path() {
    let mut event = valid_tool_result();
    event["data"]["exit_code"] = json!("one hundred and one");
    let (code, field, message) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidType);
    assert_eq!(field.as_deref(), Some("data.exit_code"));
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn wrongly_typed_envelope_field_is_named() {
    let mut event = valid_tool_result();
    event["importance"] = json!("high");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidType);
    assert_eq!(field.as_deref(), Some("importance"));
}

#[test]
fn misspelt_payload_field_is_refused_not_dropped() {
    let mut event = valid_tool_result();
    event["data"]["exitcode"] = json!(1);
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::UnknownField);
    assert_eq!(field.as_deref(), Some("data.exitcode"));
}

#[test]
fn empty_swarm_is_refused() {
    let mut event = valid_tool_result();
    event["swarm"] = json!("");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidName);
    assert_eq!(field.as_deref(), Some("swarm"));
}

#[test]
fn subject_unsafe_agent_names_are_refused() {
    for bad in ["co.der", "co*der", "co>der", "co der", "co\tder"] {
        let mut event = valid_tool_result();
        event["agent"] = json!(bad);
        let (code, field, message) = refused(&event);
        assert_eq!(code, ErrorCode::InvalidName, "{bad:?}");
        assert_eq!(field.as_deref(), Some("agent"));
        assert!(message.contains("subject"), "{message}");
    }
}

#[test]
fn an_id_that_is_not_a_ulid_is_refused() {
    let mut event = valid_tool_result();
    event["id"] = json!("evt-42");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidId);
    assert_eq!(field.as_deref(), Some("id"));
}

#[test]
fn an_unparseable_timestamp_is_refused() {
    let mut event = valid_tool_result();
    event["ts"] = json!("yesterday at noon");
    let (code, field, message) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidTimestamp);
    assert_eq!(field.as_deref(), Some("ts"));
    assert!(message.contains("RFC 3339"));
}

#[test]
fn importance_out_of_range_is_refused() {
    let mut event = valid_tool_result();
    event["importance"] = json!(1.5);
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::OutOfRange);
    assert_eq!(field.as_deref(), Some("importance"));
}

#[test]
fn confidence_out_of_range_is_refused() {
    let mut event = valid_tool_result();
    event["kind"] = json!("fact_asserted");
    event["data"] = json!({"subject": "auth", "predicate": "uses", "object": "jwt", "confidence": -0.1});
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::OutOfRange);
    assert_eq!(field.as_deref(), Some("data.confidence"));
}

#[test]
fn an_unknown_scope_is_refused() {
    let mut event = valid_tool_result();
    event["scope"] = json!("public");
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::InvalidScope);
    assert_eq!(field.as_deref(), Some("scope"));
}

#[test]
fn empty_required_text_is_refused() {
    let mut event = valid_tool_result();
    event["kind"] = json!("message_recorded");
    event["data"] = json!({"role": "user", "text": "   "});
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::EmptyField);
    assert_eq!(field.as_deref(), Some("data.text"));
}

#[test]
fn an_event_over_the_size_limit_is_refused() {
    let mut event = valid_tool_result();
    event["data"]["output"] = json!("x".repeat(2048));
    let limits = DecodeLimits { max_event_bytes: 1024 };
    let error = decode_json(event.to_string().as_bytes(), &limits).unwrap_err();
    assert_eq!(error.code, ErrorCode::PayloadTooLarge);
    assert!(error.message.contains("1024"));
}

#[test]
fn a_future_schema_version_is_refused() {
    let mut event = valid_tool_result();
    event["schema_version"] = json!(99);
    let (code, field, _) = refused(&event);
    assert_eq!(code, ErrorCode::UnsupportedSchemaVersion);
    assert_eq!(field.as_deref(), Some("schema_version"));
}

#[test]
fn an_invalid_event_in_a_batch_is_reported_by_index() {
    let mut bad = valid_tool_result();
    bad["ts"] = json!("not a time");
    let body = json!([valid_tool_result(), bad]).to_string();
    let error = decode_json_batch(body.as_bytes(), &DecodeLimits::default()).unwrap_err();
    assert_eq!(error.index, 1);
    assert_eq!(error.error.field.as_deref(), Some("[1].ts"));
}

#[test]
fn an_empty_batch_is_refused() {
    let error = decode_json_batch(b" [ ] ", &DecodeLimits::default()).unwrap_err();
    assert_eq!(error.error.code, ErrorCode::EmptyBatch);
}

#[test]
fn a_batch_over_its_event_limit_is_refused_whole() {
    let body = json!([valid_tool_result(), valid_tool_result(), valid_tool_result()]).to_string();
    let error = decode_json_batch_of_at_most(body.as_bytes(), &DecodeLimits::default(), 2).unwrap_err();
    assert_eq!((error.index, error.error.code), (0, ErrorCode::BatchTooLarge));
    assert_eq!(error.error.message, "the batch holds 3 events, the limit is 2 events per request");
    let events = decode_json_batch_of_at_most(body.as_bytes(), &DecodeLimits::default(), 3).unwrap();
    assert_eq!(events.len(), 3);
    // A single event is a batch of one, under any limit of at least one.
    let single = valid_tool_result().to_string();
    assert_eq!(decode_json_batch_of_at_most(single.as_bytes(), &DecodeLimits::default(), 1).unwrap().len(), 1);
}

#[test]
fn a_single_event_body_is_a_batch_of_one() {
    let body = valid_tool_result().to_string();
    let events = decode_json_batch(body.as_bytes(), &DecodeLimits::default()).unwrap();
    assert_eq!(events.len(), 1);
}

#[test]
fn json_round_trip_is_stable() {
    let event = decode(&valid_tool_result()).unwrap();
    let again = decode_json(event.to_json().as_bytes(), &DecodeLimits::default()).unwrap();
    assert_eq!(event, again);
    assert_eq!(event.to_json(), again.to_json());
}

#[test]
fn storage_round_trip_is_exact() {
    let event = decode(&valid_tool_result()).unwrap();
    let bytes = storage::encode(&event).unwrap();
    assert_eq!(storage::decode(&bytes).unwrap(), event);
}

#[test]
fn corrupted_storage_bytes_are_an_error_not_a_panic() {
    let event = decode(&valid_tool_result()).unwrap();
    let mut bytes = storage::encode(&event).unwrap();
    let middle = bytes.len() / 2;
    bytes.truncate(middle);
    assert!(storage::decode(&bytes).is_err());
    assert!(storage::decode(&[]).is_err());
    assert!(storage::decode(b"\x07garbage").is_err());
}

/// Issue 17, item 9: duplicate keys were accepted, the last one winning.
#[test]
fn a_key_given_twice_is_refused_with_its_path() {
    let event = valid_tool_result().to_string();
    let twice_agent = event.replacen("\"agent\":", "\"agent\":\"planner\",\"agent\":", 1);
    let error = decode_json(twice_agent.as_bytes(), &DecodeLimits::default()).unwrap_err();
    assert_eq!((error.code, error.field.as_deref()), (ErrorCode::DuplicateKey, Some("agent")), "{}", error.message);
    let twice_in_data = event.replacen("\"tool\":", "\"tool\":\"grep\",\"tool\":", 1);
    let error = decode_json(twice_in_data.as_bytes(), &DecodeLimits::default()).unwrap_err();
    assert_eq!((error.code, error.field.as_deref()), (ErrorCode::DuplicateKey, Some("data.tool")), "{}", error.message);
    // Numbers, nesting and the rest of the event decode as before.
    assert_eq!(decode_json(event.as_bytes(), &DecodeLimits::default()).unwrap(), decode(&valid_tool_result()).unwrap());
}
