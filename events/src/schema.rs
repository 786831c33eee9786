//! The event's JSON Schema (2020-12), from the types: the envelope, and per
//! kind the schema of its `data`. `mneme schema events` prints it and
//! `schemas/events.schema.json` holds it; the API's OpenAPI document refers
//! to the same definitions.
//!
//! The schema says what the decoder accepts, as far as JSON Schema can:
//! names (letters, digits, `_`, `-`, at most 64 bytes), ULIDs, RFC 3339
//! times, the kinds and their payloads (unknown fields refused). What it
//! cannot say (non-blank text, `valid_to` after `valid_from`, a duplicate
//! key) the decoder still checks, with an error naming the field.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};

use crate::envelope::{CURRENT_SCHEMA_VERSION, Event, EventId, MAX_CORRELATION_ID_LEN, MAX_NAME_LEN, Scope, Timestamp};
use crate::kinds::{EventKind, JsonText};

/// A ULID: 26 Crockford base32 characters, the first 0 to 7.
const ULID_PATTERN: &str = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$";
/// A swarm or agent name: it becomes a NATS subject token.
const NAME_PATTERN: &str = "^[A-Za-z0-9_-]+$";

impl JsonSchema for EventId {
    fn schema_name() -> Cow<'static, str> {
        "EventId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": ULID_PATTERN,
            "description": "A ULID (26 Crockford base32 characters), e.g. 01KG0000000000000000000000.",
        })
    }
}

impl JsonSchema for Timestamp {
    fn schema_name() -> Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 time, e.g. 2026-01-06T10:30:00Z.",
        })
    }
}

impl JsonSchema for JsonText {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "AnyJson".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "description": "Any JSON value." })
    }
}

/// A swarm or agent name.
pub struct Name;

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "Name".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": NAME_PATTERN,
            "minLength": 1,
            "maxLength": MAX_NAME_LEN,
            "description": "A swarm or agent name: letters, digits, '_' and '-' (it becomes a NATS subject token).",
        })
    }
}

impl JsonSchema for Event {
    fn schema_name() -> Cow<'static, str> {
        "Event".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let kinds = EventKind::data_schemas(generator);
        let names: Vec<&str> = kinds.iter().map(|(name, _, _)| *name).collect();
        let one_of: Vec<serde_json::Value> = kinds
            .into_iter()
            .map(|(name, doc, data)| {
                serde_json::json!({
                    "title": name,
                    "description": doc.trim_end(),
                    "properties": { "kind": { "const": name }, "data": data },
                    "required": ["kind", "data"],
                })
            })
            .collect();
        json_schema!({
            "type": "object",
            "description": "One event, as publishers send it (POST /v1/events, a JetStream subject) and the API shows it. \
                The kind names the payload `data` carries; unknown fields are refused, here and in `data`.",
            "properties": {
                "id": generator.subschema_for::<EventId>(),
                "swarm": generator.subschema_for::<Name>(),
                "agent": generator.subschema_for::<Name>(),
                "ts": generator.subschema_for::<Timestamp>(),
                "kind": { "type": "string", "enum": names },
                // The variants below give `data` its shape by kind; a type
                // here would be a second, shapeless definition of it that
                // code generators turn into a model of its own.
                "data": { "description": "The payload: its shape is the kind's (`oneOf`)." },
                "correlation_id": {
                    "type": ["string", "null"],
                    "minLength": 1,
                    "maxLength": MAX_CORRELATION_ID_LEN,
                    "description": "Groups the events of one piece of work (a task, a request).",
                },
                "causation_id": {
                    "anyOf": [generator.subschema_for::<EventId>(), { "type": "null" }],
                    "description": "The event that caused this one.",
                },
                "scope": {
                    "anyOf": [generator.subschema_for::<Scope>(), { "type": "null" }],
                    "description": "Who sees what the event creates; the agent's default_scope from swarm.toml when left out, \
                        else private.",
                },
                "importance": { "type": ["number", "null"], "minimum": 0, "maximum": 1 },
                "schema_version": {
                    "type": ["integer", "null"],
                    "minimum": 1,
                    "maximum": CURRENT_SCHEMA_VERSION,
                    "description": "The version of `data`'s shape; older ones are upcast on read. Default: the current one.",
                },
            },
            "required": ["id", "swarm", "agent", "ts", "kind", "data"],
            "additionalProperties": false,
            "oneOf": one_of,
        })
    }
}

/// The event schema as a document of its own: `schemas/events.schema.json`.
pub fn event_schema() -> Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_deserialize()
        .into_generator()
        .into_root_schema_for::<Event>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_its_data_schema_and_the_envelope_refuses_unknown_fields() {
        let schema = event_schema();
        let json = schema.as_value();
        assert_eq!(json["oneOf"].as_array().unwrap().len(), EventKind::NAMES.len());
        assert_eq!(json["additionalProperties"], false);
        let definitions = json["$defs"].as_object().unwrap();
        assert_eq!(definitions["MessageRecorded"]["additionalProperties"], false, "payloads deny unknown fields");
        assert!(definitions["MessageRecorded"]["required"].as_array().unwrap().contains(&"text".into()));
    }
}
