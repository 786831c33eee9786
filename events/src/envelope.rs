//! The envelope every event carries, and its small value types.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::error::{ErrorCode, ValidationError};
use crate::kinds::EventKind;

/// The schema version this build writes. Older versions are upcast on decode;
/// newer ones are refused, because guessing at a future schema loses meaning.
pub const CURRENT_SCHEMA_VERSION: u32 = 1;

/// Swarm and agent names become NATS subject tokens, stream names and key
/// prefixes, so they are kept to a conservative alphabet.
pub const MAX_NAME_LEN: usize = 64;

/// A correlation id names a task or session; it is matched, listed and
/// written into other events, so it is kept short and printable.
pub const MAX_CORRELATION_ID_LEN: usize = 256;

/// One thing that happened in a swarm, as published, before the log gives it
/// a sequence number.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Event {
    /// Chosen by the publisher; the dedup key of the log.
    pub id: EventId,
    pub swarm: String,
    pub agent: String,
    /// Event time, as the publisher saw it. Log order is `seq`, not `ts`.
    pub ts: Timestamp,
    /// The task or session this event belongs to.
    pub correlation_id: Option<String>,
    /// The event that led to this one.
    pub causation_id: Option<EventId>,
    pub scope: Scope,
    /// How much this matters, 0..=1; `None` means "no opinion".
    pub importance: Option<f32>,
    /// The version the publisher wrote; the payload is already upcast to
    /// [`CURRENT_SCHEMA_VERSION`].
    pub schema_version: u32,
    pub kind: EventKind,
}

impl Event {
    /// An event of `agent` in `swarm` with the envelope's defaults, as a
    /// publisher that leaves them out gets them: a fresh id, the time now,
    /// `private`, no task, no cause, no importance, the current schema
    /// version. The `with_*` methods set the rest:
    ///
    /// ```
    /// # use mneme_events::{Event, EventKind, MessageRecorded, Scope};
    /// let said = EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: "hi".into() });
    /// let event = Event::new("demo", "coder", said).with_scope(Scope::Shared).with_task("task-1");
    /// assert_eq!((event.scope, event.correlation_id.as_deref()), (Scope::Shared, Some("task-1")));
    /// ```
    pub fn new(swarm: impl Into<String>, agent: impl Into<String>, kind: EventKind) -> Event {
        Event {
            id: EventId::new(),
            swarm: swarm.into(),
            agent: agent.into(),
            ts: Timestamp::now(),
            correlation_id: None,
            causation_id: None,
            scope: Scope::Private,
            importance: None,
            schema_version: CURRENT_SCHEMA_VERSION,
            kind,
        }
    }

    pub fn with_id(mut self, id: EventId) -> Event {
        self.id = id;
        self
    }

    /// The event time.
    pub fn with_ts(mut self, ts: Timestamp) -> Event {
        self.ts = ts;
        self
    }

    pub fn with_scope(mut self, scope: Scope) -> Event {
        self.scope = scope;
        self
    }

    /// The task or session it belongs to (`correlation_id`).
    pub fn with_task(mut self, correlation_id: impl Into<String>) -> Event {
        self.correlation_id = Some(correlation_id.into());
        self
    }

    /// The task or session it belongs to, if any.
    pub fn with_correlation(mut self, correlation_id: Option<String>) -> Event {
        self.correlation_id = correlation_id;
        self
    }

    /// The event that led to it (`causation_id`).
    pub fn caused_by(mut self, cause: EventId) -> Event {
        self.causation_id = Some(cause);
        self
    }

    pub fn with_importance(mut self, importance: Option<f32>) -> Event {
        self.importance = importance;
        self
    }

    /// The snake_case wire name of this event's kind, e.g. `tool_result_recorded`.
    pub fn kind_name(&self) -> &'static str {
        self.kind.name()
    }

    /// Checks everything a typed event can still get wrong: names, ranges,
    /// empty fields. Decoding runs it; so does reading from storage.
    pub fn validate(&self) -> Result<(), ValidationError> {
        validate_name(&self.swarm).map_err(|e| e.under("swarm"))?;
        validate_name(&self.agent).map_err(|e| e.under("agent"))?;
        if let Some(importance) = self.importance
            && !(0.0..=1.0).contains(&importance)
        {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "importance",
                format!("importance must be between 0 and 1, got {importance}"),
            ));
        }
        for (field, value) in [("correlation_id", &self.correlation_id)] {
            if let Some(value) = value {
                if value.trim().is_empty() {
                    return Err(ValidationError::at(
                        ErrorCode::EmptyField,
                        field,
                        format!("{field} must not be empty when present"),
                    ));
                }
                if value.len() > MAX_CORRELATION_ID_LEN {
                    return Err(ValidationError::at(
                        ErrorCode::OutOfRange,
                        field,
                        format!("{field} is {} bytes, the limit is {MAX_CORRELATION_ID_LEN}", value.len()),
                    ));
                }
                if value.chars().any(char::is_control) {
                    return Err(ValidationError::at(
                        ErrorCode::InvalidId,
                        field,
                        format!("{field} must not contain control characters (newlines, tabs, escapes)"),
                    ));
                }
            }
        }
        self.kind.validate().map_err(|e| e.under("data"))
    }

    /// The canonical wire form: JSON with keys in a fixed order.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an event always serialises to JSON")
    }

    /// The canonical JSON of what the event says: everything but `ts` and
    /// `schema_version`, which say when and in which version it was
    /// written. Two events under one id are the same event when this is
    /// equal (see [`Event::same_content`]).
    pub fn content_json(&self) -> String {
        let mut content = self.clone();
        content.ts = Timestamp::from_unix_nanos(0);
        content.schema_version = CURRENT_SCHEMA_VERSION;
        content.to_json()
    }

    /// Whether `other` is this event again: equal in everything but `ts`
    /// and `schema_version`. An id is its publisher's promise of this; a
    /// retry that stamps a new time keeps it.
    pub fn same_content(&self, other: &Event) -> bool {
        Event { ts: self.ts, schema_version: self.schema_version, ..other.clone() } == *self
    }

    /// The JSON form as a value, for embedding in API responses. Parsed
    /// from the wire form, so that every `f32` in it (importance, a fact's
    /// confidence) is the number that was published (`0.9`), not its
    /// widening to `f64` (`0.8999999761581421`) that a direct conversion
    /// to a `Value` gives.
    pub fn to_json_value(&self) -> serde_json::Value {
        serde_json::from_str(&self.to_json()).expect("an event's wire form is JSON")
    }

    /// [`Event::to_json_value`] as the JSON object it always is.
    pub fn to_json_object(&self) -> serde_json::Map<String, serde_json::Value> {
        serde_json::from_str(&self.to_json()).expect("an event's wire form is a JSON object")
    }
}

/// Serialises to the wire form `{id, swarm, agent, ts, kind, data, ...}`.
/// There is deliberately no `Deserialize`: the only way in is
/// [`crate::decode_json`], which validates.
impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id", &self.id)?;
        map.serialize_entry("swarm", &self.swarm)?;
        map.serialize_entry("agent", &self.agent)?;
        map.serialize_entry("ts", &self.ts)?;
        map.serialize_entry("kind", self.kind.name())?;
        map.serialize_entry("data", &self.kind.data())?;
        if let Some(correlation_id) = &self.correlation_id {
            map.serialize_entry("correlation_id", correlation_id)?;
        }
        if let Some(causation_id) = &self.causation_id {
            map.serialize_entry("causation_id", causation_id)?;
        }
        map.serialize_entry("scope", &self.scope)?;
        if let Some(importance) = self.importance {
            map.serialize_entry("importance", &published_number(importance))?;
        }
        map.serialize_entry("schema_version", &CURRENT_SCHEMA_VERSION)?;
        map.end()
    }
}

/// An `f32` as the number that was published, for JSON: its shortest
/// decimal form (`0.8`), which reads back as the same `f32`, as an `f64`.
/// Serialised as an `f32`, a `serde_json::Value` widens it and answers
/// `0.800000011920929`.
pub fn published_number(value: f32) -> f64 {
    value.to_string().parse().unwrap_or(f64::from(value))
}

/// A ULID, kept as its 128-bit value so that comparison and dedup ignore the
/// letter case of the text form.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct EventId(pub u128);

impl EventId {
    pub fn new() -> EventId {
        EventId(ulid::Ulid::new().0)
    }

    /// Builds an id from a time and a counter: for generators and tests that
    /// must produce the same ids on every run.
    pub fn from_parts(unix_ms: u64, random: u128) -> EventId {
        EventId(ulid::Ulid::from_parts(unix_ms, random).0)
    }
}

impl Default for EventId {
    fn default() -> Self {
        EventId::new()
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&ulid::Ulid(self.0), f)
    }
}

impl FromStr for EventId {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        // 26 base32 characters hold 130 bits; a ULID has 128, so its first
        // character is at most `7`. The decoder drops the top bits of a
        // larger one, which would make `ZZZ…` an alias of `7ZZ…`.
        if text.len() == 26 && text.as_bytes()[0] > b'7' && text.as_bytes()[0].is_ascii_alphanumeric() {
            return Err(ValidationError::new(
                ErrorCode::InvalidId,
                None,
                format!(
                    "{text:?} is above the largest ULID, 7ZZZZZZZZZZZZZZZZZZZZZZZZZ: its first character must be 0 to 7"
                ),
            ));
        }
        ulid::Ulid::from_string(text).map(|ulid| EventId(ulid.0)).map_err(|error| {
            ValidationError::new(
                ErrorCode::InvalidId,
                None,
                format!("{text:?} is not a ULID ({error}); ids are 26 Crockford base32 characters"),
            )
        })
    }
}

impl Serialize for EventId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EventId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|error: ValidationError| serde::de::Error::custom(error.message))
    }
}

/// An instant as nanoseconds since the Unix epoch, UTC. Parsed from and
/// rendered as RFC 3339; the publisher's UTC offset is not kept, the instant is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize,
)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// The system clock's time: for events Mneme writes itself (verdicts,
    /// deliveries, summaries). What memory does with it comes from the log,
    /// so a replay reads the time that was written.
    pub fn now() -> Timestamp {
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_nanos());
        Timestamp::from_unix_nanos(i64::try_from(nanos).unwrap_or(i64::MAX))
    }

    pub fn from_unix_nanos(nanos: i64) -> Timestamp {
        Timestamp(nanos)
    }

    pub fn unix_nanos(self) -> i64 {
        self.0
    }

    pub fn from_unix_millis(millis: i64) -> Timestamp {
        Timestamp(millis.saturating_mul(1_000_000))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let instant = OffsetDateTime::from_unix_timestamp_nanos(i128::from(self.0))
            .expect("an i64 of nanoseconds is always a representable instant");
        let text = instant.format(&Rfc3339).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl FromStr for Timestamp {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let invalid = |why: String| {
            ValidationError::new(
                ErrorCode::InvalidTimestamp,
                None,
                format!("{text:?} is not an RFC 3339 timestamp such as 2026-01-06T10:30:00Z ({why})"),
            )
        };
        let instant = OffsetDateTime::parse(text, &Rfc3339).map_err(|e| invalid(e.to_string()))?;
        let nanos = i64::try_from(instant.unix_timestamp_nanos())
            .map_err(|_| invalid("outside the years 1678..2262".to_string()))?;
        Ok(Timestamp(nanos))
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(|error: ValidationError| serde::de::Error::custom(error.message))
    }
}

/// Who may see what an event creates. Enforced at query time.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Default,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
    rkyv::Archive,
    rkyv::Serialize,
    rkyv::Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Only the agent that recorded it.
    #[default]
    Private,
    /// Every agent of the swarm.
    Shared,
    /// Everyone.
    System,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Private => "private",
            Scope::Shared => "shared",
            Scope::System => "system",
        }
    }
}

impl FromStr for Scope {
    type Err = ValidationError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "private" => Ok(Scope::Private),
            "shared" => Ok(Scope::Shared),
            "system" => Ok(Scope::System),
            other => Err(ValidationError::new(
                ErrorCode::InvalidScope,
                None,
                format!("scope must be one of private, shared, system; got {other:?}"),
            )),
        }
    }
}

/// Checks a swarm or agent name: 1..=64 of `A-Z a-z 0-9 _ -`. These become
/// NATS subject tokens, where `.`, `*`, `>` and whitespace have meaning.
pub fn validate_name(name: &str) -> Result<(), ValidationError> {
    if name.is_empty() {
        return Err(ValidationError::new(ErrorCode::InvalidName, None, "name must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(ValidationError::new(
            ErrorCode::InvalidName,
            None,
            format!("name is {} bytes long, the limit is {MAX_NAME_LEN}", name.len()),
        ));
    }
    if let Some(bad) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-')) {
        return Err(ValidationError::new(
            ErrorCode::InvalidName,
            None,
            format!(
                "name {name:?} contains {bad:?}; names become NATS subject tokens and may only \
                 use letters, digits, '_' and '-'"
            ),
        ));
    }
    Ok(())
}
