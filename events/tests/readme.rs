//! The book's "Events" chapter (docs/src/events.md) is the publisher's reference: every kind,
//! every payload field with its type, whether it is required and, for
//! enums, its values; and which tool names and `args` keys the fact graph
//! reads. These tests hold it to the decoder (and to the graph's tool
//! lists), so a kind, field or variant added without documenting it fails
//! here.
//!
//! Field names come from the decoder itself: a payload refuses unknown
//! fields, and serde's refusal lists every field the payload has.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{ErrorCode, EventKind, ValidationError, decode_json_value};
use serde_json::{Map, Value, json};

const README: &str = include_str!("../../docs/src/events.md");
const GRAPH_TOOLS: &str = include_str!("../../projections/src/graph/tools.rs");

const PROBE: &str = "__probe__";
const SAMPLE_ID: &str = "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6";

/// One documented field: its path (`package.bundle.items[].section`), type,
/// whether it is required, and the allowed-values cell.
#[derive(Debug, Clone)]
struct Field {
    path: String,
    kind_of_value: String,
    required: bool,
    allowed: String,
}

/// The text of the README's `## Events` section.
fn events_section() -> &'static str {
    let start = README.find("\n## Events\n").expect("docs/src/events.md has a \"## Events\" section");
    let rest = &README[start + 1..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |end| end + 3);
    &rest[..end]
}

/// The rows of the first table in `section` whose header starts with
/// `header`, as trimmed cells.
fn table_rows(section: &str, header: &str) -> Vec<Vec<String>> {
    let mut lines = section.lines().skip_while(|line| !line.starts_with(header));
    assert!(lines.next().is_some(), "no table with header {header:?} in the Events section");
    lines
        .skip(1) // the |---| line
        .take_while(|line| line.starts_with('|'))
        .map(|line| line.trim().trim_matches('|').split('|').map(|cell| cell.trim().to_string()).collect())
        .collect()
}

/// The text inside the first pair of backticks, or the cell as it is.
fn unquoted(cell: &str) -> String {
    cell.split('`').nth(1).unwrap_or(cell).to_string()
}

/// Every name in backticks in `text`.
fn quoted_names(text: &str) -> BTreeSet<String> {
    text.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

fn field_of(path: &str, kind_of_value: &str, required: &str, allowed: &str) -> Field {
    assert!(required == "yes" || required.starts_with("no"), "required must be yes or no…, got {required:?}");
    Field {
        path: unquoted(path),
        kind_of_value: kind_of_value.to_string(),
        required: required == "yes",
        allowed: allowed.to_string(),
    }
}

/// The payload table: kind → its fields, in README order. A row with an
/// empty kind cell continues the kind above it.
fn documented_payloads() -> BTreeMap<String, Vec<Field>> {
    let mut payloads: BTreeMap<String, Vec<Field>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for row in table_rows(events_section(), "| kind | field |") {
        assert_eq!(row.len(), 5, "a payload row has five cells: {row:?}");
        if !row[0].is_empty() {
            current = Some(unquoted(&row[0]));
        }
        let kind = current.clone().expect("the first payload row names its kind");
        payloads.entry(kind).or_default().push(field_of(&row[1], &row[2], &row[3], &row[4]));
    }
    payloads
}

fn documented_envelope() -> Vec<Field> {
    table_rows(events_section(), "| field | type |")
        .iter()
        .map(|row| {
            assert_eq!(row.len(), 4, "an envelope row has four cells: {row:?}");
            field_of(&row[0], &row[1], &row[2], &row[3])
        })
        .collect()
}

fn envelope(kind: &str, data: Value) -> Value {
    json!({"id": SAMPLE_ID, "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:30:00Z", "kind": kind, "data": data})
}

fn decode_error(event: Value) -> Option<ValidationError> {
    decode_json_value(event).err()
}

/// The names serde lists after "expected" in an unknown-field or
/// unknown-variant refusal.
fn expected_names(error: &ValidationError) -> BTreeSet<String> {
    let (_, expected) = error.message.split_once("expected").unwrap_or_else(|| panic!("no list in {error}"));
    quoted_names(expected)
}

/// `a.b[].c` → [("a", false), ("b", true), ("c", false)]: each segment and
/// whether it holds an array of objects.
fn segments(path: &str) -> Vec<(&str, bool)> {
    path.split('.').map(|segment| segment.strip_suffix("[]").map_or((segment, false), |name| (name, true))).collect()
}

/// A `data` value with `leaf` placed at the object that `parent` (a path
/// prefix, empty for the payload itself) names.
fn nested(parent: &str, leaf: Value) -> Value {
    if parent.is_empty() {
        return leaf;
    }
    segments(parent).iter().rev().fold(leaf, |inner, (name, is_array)| {
        let inner = if *is_array { Value::Array(vec![inner]) } else { inner };
        json!({ *name: inner })
    })
}

/// The fields the decoder knows at `parent` of `kind`'s payload.
fn decoder_fields(kind: &str, parent: &str) -> BTreeSet<String> {
    let error = decode_error(envelope(kind, nested(parent, json!({PROBE: 1}))))
        .unwrap_or_else(|| panic!("{kind}: an unknown field at {parent:?} was accepted"));
    assert_eq!(error.code, ErrorCode::UnknownField, "{kind} at {parent:?}: {error}");
    expected_names(&error)
}

/// The documented children of `parent` (direct ones only).
fn children<'a>(fields: &'a [Field], parent: &str) -> Vec<&'a Field> {
    let parent = parent.strip_suffix("[]").unwrap_or(parent);
    fields
        .iter()
        .filter(|field| match parent {
            "" => !field.path.contains('.'),
            _ => field
                .path
                .strip_prefix(parent)
                .and_then(|rest| rest.strip_prefix('.').or_else(|| rest.strip_prefix("[].")))
                .is_some_and(|leaf| !leaf.contains('.')),
        })
        .collect()
}

fn leaf_name(path: &str) -> String {
    segments(path).last().map(|(name, _)| name.to_string()).unwrap_or_default()
}

fn holds_objects(field: &Field) -> bool {
    field.kind_of_value == "object" || field.kind_of_value == "array of objects"
}

/// The path of the object a field holds: `items[]` for an array of them.
fn object_path(field: &Field) -> String {
    match field.kind_of_value.as_str() {
        "array of objects" => format!("{}[]", field.path),
        _ => field.path.clone(),
    }
}

/// Which fields a sample object holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fill {
    RequiredOnly,
    Every,
}

/// A value of the documented type (objects filled as `fill` says);
/// `index` keeps sample strings of one object apart.
fn sample(kind: &str, fields: &[Field], field: &Field, index: usize, fill: Fill) -> Value {
    match field.kind_of_value.as_str() {
        "string" => json!(format!("sample {index}")),
        "name" => json!(format!("agent-{index}")),
        "ULID" => json!(SAMPLE_ID),
        "base64" => json!("AAEC"),
        "RFC 3339 time" => json!("2026-01-06T10:30:00Z"),
        "integer" => json!(index + 1),
        "number" => json!(0.5),
        "array of strings" => json!([format!("sample {index}")]),
        "any JSON" => json!({}),
        "enum" => json!(allowed_values(field).into_iter().next().expect("an enum documents its values")),
        "object" => sample_object(kind, fields, &field.path, fill),
        "array of objects" => json!([sample_object(kind, fields, &field.path, fill)]),
        other => panic!("{kind}.{}: unknown documented type {other:?}", field.path),
    }
}

/// An object with the documented fields under `parent`: the required ones,
/// or every one.
fn sample_object(kind: &str, fields: &[Field], parent: &str, fill: Fill) -> Value {
    let mut object = Map::new();
    for (index, field) in children(fields, parent).into_iter().enumerate() {
        if field.required || fill == Fill::Every {
            object.insert(leaf_name(&field.path), sample(kind, fields, field, index, fill));
        }
    }
    Value::Object(object)
}

/// The values an enum row lists before its first `;`.
fn allowed_values(field: &Field) -> BTreeSet<String> {
    quoted_names(field.allowed.split(';').next().unwrap_or(""))
}

/// The path serde_path_to_error gives a missing field: arrays as `[0]`.
fn error_path(path: &str) -> String {
    format!("data.{}", path.replace("[]", "[0]"))
}

/// Removes the value at `path` from `data`; the path's arrays hold one
/// object each.
fn without(mut data: Value, path: &str) -> Value {
    let parts = segments(path);
    let mut cursor = &mut data;
    for (name, is_array) in &parts[..parts.len() - 1] {
        cursor = cursor.get_mut(*name).expect("the parent is in the sample");
        if *is_array {
            cursor = cursor.get_mut(0).expect("a sample array holds one object");
        }
    }
    cursor.as_object_mut().expect("an object").remove(parts.last().expect("a path has a segment").0);
    data
}

#[test]
fn every_kind_is_documented_and_nothing_else() {
    let documented: BTreeSet<String> = documented_payloads().into_keys().collect();
    let known: BTreeSet<String> = EventKind::NAMES.iter().map(|name| name.to_string()).collect();
    assert_eq!(
        documented,
        known,
        "README Events table: kinds documented but unknown: {:?}; kinds not documented: {:?}",
        documented.difference(&known).collect::<Vec<_>>(),
        known.difference(&documented).collect::<Vec<_>>()
    );
}

#[test]
fn every_payload_object_lists_exactly_its_fields() {
    for (kind, fields) in documented_payloads() {
        let mut parents = vec![String::new()];
        parents.extend(fields.iter().filter(|field| holds_objects(field)).map(object_path));
        for parent in parents {
            let documented: BTreeSet<String> =
                children(&fields, &parent).iter().map(|field| leaf_name(&field.path)).collect();
            let decoded = decoder_fields(&kind, &parent);
            assert_eq!(
                documented,
                decoded,
                "README Events table, {kind} {}: documented but unknown: {:?}; not documented: {:?}",
                if parent.is_empty() { "payload".to_string() } else { parent.clone() },
                documented.difference(&decoded).collect::<Vec<_>>(),
                decoded.difference(&documented).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn required_fields_and_types_are_as_documented() {
    for (kind, fields) in documented_payloads() {
        // The required fields alone, each of its documented type: nothing
        // is missing and no type is wrong (range and cross-field checks
        // may still refuse a sample, which says nothing about the table).
        let minimal = sample_object(&kind, &fields, "", Fill::RequiredOnly);
        let every = sample_object(&kind, &fields, "", Fill::Every);
        for (which, data) in [("its required fields", &minimal), ("all its fields", &every)] {
            if let Some(error) = decode_error(envelope(&kind, data.clone())) {
                assert!(
                    ![ErrorCode::MissingField, ErrorCode::InvalidType, ErrorCode::UnknownField].contains(&error.code),
                    "README Events table, {kind}: {which} with their documented types are refused: {error}\n{data}"
                );
            }
        }
        // ...and each of them is required.
        for field in fields.iter().filter(|field| field.required) {
            // A required field of an optional object: put that object in.
            let mut data = minimal.clone();
            let top = segments(&field.path)[0].0;
            if data.get(top).is_none() {
                let top_field = fields.iter().find(|other| other.path == top).expect("the parent is documented");
                data[top] = sample(&kind, &fields, top_field, 0, Fill::RequiredOnly);
            }
            let error = decode_error(envelope(&kind, without(data, &field.path))).unwrap_or_else(|| {
                panic!("README Events table: {kind}.{} is documented as required, but may be left out", field.path)
            });
            assert_eq!(
                (error.code, error.field.as_deref()),
                (ErrorCode::MissingField, Some(error_path(&field.path).as_str())),
                "README Events table: {kind}.{} is documented as required: {error}",
                field.path
            );
        }
    }
}

#[test]
fn enum_fields_list_exactly_their_values() {
    for (kind, fields) in documented_payloads() {
        for field in fields.iter().filter(|field| field.kind_of_value == "enum") {
            let (parent, leaf) = field.path.rsplit_once('.').unwrap_or(("", &field.path));
            let error = decode_error(envelope(&kind, nested(parent, json!({leaf: PROBE}))))
                .unwrap_or_else(|| panic!("{kind}.{}: {PROBE:?} was accepted", field.path));
            assert_eq!(
                allowed_values(field),
                expected_names(&error),
                "README Events table: the values of {kind}.{}",
                field.path
            );
        }
    }
}

#[test]
fn the_envelope_lists_exactly_its_fields() {
    let documented: BTreeSet<String> = documented_envelope().into_iter().map(|field| field.path).collect();
    let mut event = envelope("message_recorded", json!({"role": "user", "text": "hi"}));
    event[PROBE] = json!(1);
    let error = decode_error(event).expect("an unknown envelope field is refused");
    assert_eq!(error.code, ErrorCode::UnknownField, "{error}");
    let decoded = expected_names(&error);
    assert_eq!(documented, decoded, "README Events envelope table");
    for field in documented_envelope().iter().filter(|field| field.required) {
        let mut event = envelope("message_recorded", json!({"role": "user", "text": "hi"}));
        event.as_object_mut().unwrap().remove(&field.path);
        let error = decode_error(event).unwrap_or_else(|| panic!("envelope {} may be left out", field.path));
        assert_eq!(error.code, ErrorCode::MissingField, "envelope {}: {error}", field.path);
    }
}

/// The string constants of `name` in the graph's tools.rs.
fn graph_list(name: &str) -> BTreeSet<String> {
    let start = GRAPH_TOOLS.find(&format!("const {name}: &[&str] =")).unwrap_or_else(|| panic!("tools.rs has {name}"));
    let list = &GRAPH_TOOLS[start..];
    let list = &list[..list.find("];").expect("the list ends")];
    list.split('"').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_tools_table_names_every_tool_and_key_the_graph_reads() {
    let section = events_section();
    let rows = table_rows(section, "| tools |");
    let row_of = |family: &str| -> BTreeSet<String> {
        let row = rows.iter().find(|row| row[0].starts_with(family)).unwrap_or_else(|| panic!("no {family} row"));
        quoted_names(&row[0])
    };
    for (family, list) in [
        ("read:", "READ_TOOLS"),
        ("edit or write:", "MODIFY_TOOLS"),
        ("editors:", "EDITOR_TOOLS"),
        ("shell:", "RUN_TOOLS"),
        ("search:", "SEARCH_TOOLS"),
    ] {
        assert_eq!(row_of(family), graph_list(list), "README Tools table, the {family} row against {list}");
    }
    let tools_text = &section[section.find("### Tools").expect("a Tools part")..];
    for list in [
        "PATH_KEYS",
        "PATH_LIST_KEYS",
        "COMMAND_KEYS",
        "CWD_KEYS",
        "NEW_TEXT_KEYS",
        "OLD_TEXT_KEYS",
        "CONTENT_KEYS",
        "PATCH_KEYS",
        "PATTERN_KEYS",
        "SCOPE_KEYS",
        "READING_PROGRAMS",
        "SEARCHING_PROGRAMS",
    ] {
        let missing: Vec<String> =
            graph_list(list).into_iter().filter(|key| !tools_text.contains(&format!("`{key}`"))).collect();
        assert!(missing.is_empty(), "README Tools: {list} has {missing:?}, which the README does not name");
    }
}

/// The payload table says what the event schema (`schemas/events.schema.json`,
/// generated from the types) says: each kind's top-level fields, and which
/// are required.
#[test]
fn the_payload_table_agrees_with_the_event_schema() {
    let schema = mneme_events::schema::event_schema().to_value();
    let definitions = schema["$defs"].as_object().expect("the schema has $defs");
    let documented = documented_payloads();
    for variant in schema["oneOf"].as_array().expect("one schema per kind") {
        let kind = variant["title"].as_str().unwrap();
        let reference = variant["properties"]["data"]["$ref"].as_str().unwrap_or_else(|| panic!("{kind}: {variant}"));
        let payload = &definitions[reference.trim_start_matches("#/$defs/")];
        let in_schema: BTreeSet<String> =
            payload["properties"].as_object().map(|fields| fields.keys().cloned().collect()).unwrap_or_default();
        let required_in_schema: BTreeSet<String> = payload["required"]
            .as_array()
            .map(|names| names.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let fields = documented.get(kind).map(Vec::as_slice).unwrap_or_default();
        let top_level: Vec<&Field> = fields.iter().filter(|field| !field.path.contains('.')).collect();
        let in_readme: BTreeSet<String> = top_level.iter().map(|field| leaf_name(&field.path)).collect();
        let required_in_readme: BTreeSet<String> =
            top_level.iter().filter(|field| field.required).map(|field| leaf_name(&field.path)).collect();
        assert_eq!(in_readme, in_schema, "{kind}: the README's fields against the schema's");
        assert_eq!(required_in_readme, required_in_schema, "{kind}: required fields, README against schema");
    }
}
