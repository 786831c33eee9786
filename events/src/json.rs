//! Decoding the JSON wire form, with errors that name the field at fault.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::envelope::{CURRENT_SCHEMA_VERSION, Event, EventId, Scope, Timestamp};
use crate::error::{ErrorCode, ValidationError};
use crate::kinds::EventKind;
use crate::upcast;

/// Limits applied while decoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The largest encoded event accepted, in bytes.
    pub max_event_bytes: usize,
}

impl Default for DecodeLimits {
    fn default() -> Self {
        DecodeLimits { max_event_bytes: 1024 * 1024 }
    }
}

/// A batch was refused because of the event at `index` (0 when the batch as
/// a whole was: empty, or too many events); nothing of the batch is to be
/// appended.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event {index} of the batch: {error}")]
pub struct BatchError {
    pub index: usize,
    pub error: ValidationError,
}

/// The envelope as it arrives, before any field is trusted.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WireEnvelope {
    id: String,
    swarm: String,
    agent: String,
    ts: String,
    kind: String,
    data: serde_json::Value,
    #[serde(default)]
    correlation_id: Option<String>,
    #[serde(default)]
    causation_id: Option<String>,
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    importance: Option<f64>,
    #[serde(default)]
    schema_version: Option<u32>,
}

/// Decodes and validates one event from its JSON bytes. An object that
/// names a key twice is refused (`duplicate_key`, with its path), rather
/// than keeping the last value as JSON parsers do: a publisher and Mneme
/// must not read two different events out of the same bytes.
pub fn decode_json(bytes: &[u8], limits: &DecodeLimits) -> Result<Event, ValidationError> {
    check_size(bytes.len(), limits)?;
    let duplicate = std::cell::RefCell::new(None);
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde::de::DeserializeSeed::deserialize(
        UniqueKeys { path: String::new(), duplicate: &duplicate },
        &mut deserializer,
    )
    .and_then(|value| deserializer.end().map(|()| value));
    let value = match (value, duplicate.into_inner()) {
        (Err(_), Some(path)) => {
            return Err(ValidationError::new(
                ErrorCode::DuplicateKey,
                Some(path.clone()),
                format!("{path} is given twice; an object names each key once"),
            ));
        }
        (value, _) => value.map_err(malformed)?,
    };
    decode_json_value(value)
}

/// A JSON value parsed in one pass that fails on the first object naming a
/// key twice, recording that key's path in `duplicate`.
struct UniqueKeys<'a> {
    path: String,
    duplicate: &'a std::cell::RefCell<Option<String>>,
}

impl UniqueKeys<'_> {
    fn under(&self, step: &str) -> Self {
        let path = match (self.path.is_empty(), step.starts_with('[')) {
            (true, _) | (false, true) => format!("{}{step}", self.path),
            (false, false) => format!("{}.{step}", self.path),
        };
        UniqueKeys { path, duplicate: self.duplicate }
    }
}

impl<'de> serde::de::DeserializeSeed<'de> for UniqueKeys<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for UniqueKeys<'_> {
    type Value = serde_json::Value;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E>(self, value: bool) -> Result<Self::Value, E> {
        Ok(value.into())
    }

    fn visit_i64<E>(self, value: i64) -> Result<Self::Value, E> {
        Ok(value.into())
    }

    fn visit_u64<E>(self, value: u64) -> Result<Self::Value, E> {
        Ok(value.into())
    }

    fn visit_f64<E>(self, value: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(value).map_or(serde_json::Value::Null, serde_json::Value::Number))
    }

    fn visit_str<E>(self, value: &str) -> Result<Self::Value, E> {
        Ok(value.into())
    }

    fn visit_string<E>(self, value: String) -> Result<Self::Value, E> {
        Ok(value.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut values = Vec::new();
        while let Some(value) = seq.next_element_seed(self.under(&format!("[{}]", values.len())))? {
            values.push(value);
        }
        Ok(serde_json::Value::Array(values))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let child = self.under(&key);
            if object.contains_key(&key) {
                *self.duplicate.borrow_mut() = Some(child.path);
                return Err(serde::de::Error::custom("duplicate key"));
            }
            let value = map.next_value_seed(child)?;
            object.insert(key, value);
        }
        Ok(serde_json::Value::Object(object))
    }
}

/// Decodes a request body holding one event or a JSON array of events.
/// Every event is validated; the first invalid one fails the whole batch.
pub fn decode_json_batch(bytes: &[u8], limits: &DecodeLimits) -> Result<Vec<Event>, BatchError> {
    decode_json_batch_of_at_most(bytes, limits, usize::MAX)
}

/// Like [`decode_json_batch`], and refuses an array of more than
/// `max_events` events before decoding any of them, so that refusing a huge
/// batch costs one scan of its bytes and not the validation of every event.
pub fn decode_json_batch_of_at_most(
    bytes: &[u8],
    limits: &DecodeLimits,
    max_events: usize,
) -> Result<Vec<Event>, BatchError> {
    let first_byte = bytes.iter().find(|byte| !byte.is_ascii_whitespace());
    if first_byte != Some(&b'[') {
        return decode_json(bytes, limits).map(|event| vec![event]).map_err(|error| BatchError { index: 0, error });
    }
    let elements: Vec<&RawValue> =
        serde_json::from_slice(bytes).map_err(|error| BatchError { index: 0, error: malformed(error) })?;
    if elements.is_empty() {
        let error = ValidationError::new(ErrorCode::EmptyBatch, None, "the batch holds no events");
        return Err(BatchError { index: 0, error });
    }
    if elements.len() > max_events {
        let error = ValidationError::new(
            ErrorCode::BatchTooLarge,
            None,
            format!("the batch holds {} events, the limit is {max_events} events per request", elements.len()),
        );
        return Err(BatchError { index: 0, error });
    }
    elements
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            decode_json(raw.get().as_bytes(), limits)
                .map_err(|error| BatchError { index, error: error.under(&format!("[{index}]")) })
        })
        .collect()
}

/// Decodes and validates one event from a parsed JSON value.
pub fn decode_json_value(value: serde_json::Value) -> Result<Event, ValidationError> {
    if !value.is_object() {
        return Err(ValidationError::new(
            ErrorCode::NotAnObject,
            None,
            format!("an event is a JSON object, got {}", json_type_name(&value)),
        ));
    }
    let wire: WireEnvelope = serde_path_to_error::deserialize(value).map_err(|error| {
        let path = error.path().to_string();
        validation_error_from_serde(&path, &error.into_inner().to_string())
    })?;
    let event = typed_event(wire)?;
    event.validate()?;
    Ok(event)
}

fn typed_event(wire: WireEnvelope) -> Result<Event, ValidationError> {
    let id: EventId = wire.id.parse().map_err(|e: ValidationError| e.under("id"))?;
    let ts: Timestamp = wire.ts.parse().map_err(|e: ValidationError| e.under("ts"))?;
    let causation_id = match wire.causation_id {
        Some(text) => Some(text.parse().map_err(|e: ValidationError| e.under("causation_id"))?),
        None => None,
    };
    let scope = match wire.scope {
        Some(text) => text.parse().map_err(|e: ValidationError| e.under("scope"))?,
        None => Scope::default(),
    };
    let schema_version = wire.schema_version.unwrap_or(CURRENT_SCHEMA_VERSION);
    if !EventKind::NAMES.contains(&wire.kind.as_str()) {
        return Err(ValidationError::at(
            ErrorCode::UnknownKind,
            "kind",
            format!("unknown kind {:?}; known kinds are {}", wire.kind, EventKind::NAMES.join(", ")),
        ));
    }
    let data = upcast::upcast(&wire.kind, schema_version, wire.data)?;
    let kind =
        EventKind::from_data(&wire.kind, data).expect("kind names were checked above").map_err(|e| e.under("data"))?;
    let importance = match wire.importance {
        Some(value) if !(0.0..=1.0).contains(&value) => {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "importance",
                format!("importance must be between 0 and 1, got {value}"),
            ));
        }
        Some(value) => Some(value as f32),
        None => None,
    };
    Ok(Event {
        id,
        swarm: wire.swarm,
        agent: wire.agent,
        ts,
        correlation_id: wire.correlation_id,
        causation_id,
        scope,
        importance,
        schema_version,
        kind,
    })
}

fn check_size(len: usize, limits: &DecodeLimits) -> Result<(), ValidationError> {
    if len > limits.max_event_bytes {
        return Err(ValidationError::new(
            ErrorCode::PayloadTooLarge,
            None,
            format!("event is {len} bytes, the limit is {} bytes", limits.max_event_bytes),
        ));
    }
    Ok(())
}

fn malformed(error: serde_json::Error) -> ValidationError {
    ValidationError::new(
        ErrorCode::MalformedJson,
        None,
        format!("not valid JSON at line {} column {}: {error}", error.line(), error.column()),
    )
}

fn json_type_name(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// Turns a serde message at `path` into a precise validation error. serde
/// reports missing and unknown fields at the enclosing object, so the field's
/// own name is taken from the message.
pub(crate) fn validation_error_from_serde(path: &str, message: &str) -> ValidationError {
    let path = if path == "." { "" } else { path };
    let join = |name: &str| if path.is_empty() { name.to_string() } else { format!("{path}.{name}") };
    let quoted_name = || message.split('`').nth(1).unwrap_or("").to_string();
    if message.starts_with("missing field") {
        let name = quoted_name();
        return ValidationError::at(
            ErrorCode::MissingField,
            &join(&name),
            format!("required field {name:?} is missing"),
        );
    }
    if message.starts_with("unknown field") {
        let name = quoted_name();
        let field = if path.ends_with(&name) && !name.is_empty() { path.to_string() } else { join(&name) };
        return ValidationError::at(ErrorCode::UnknownField, &field, message.to_string());
    }
    let field = if path.is_empty() { None } else { Some(path.to_string()) };
    ValidationError::new(ErrorCode::InvalidType, field, message.to_string())
}
