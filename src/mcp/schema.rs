//! The tools' JSON Schemas as hosts read them, and their arguments checked
//! so that a wrong one is a tool error naming its field.
//!
//! schemars writes what Rust knows: `format: "uint64"` on integers (not a
//! JSON Schema format: TypeScript clients warn about each), and an optional
//! field as a union with `null`, which hosts that draw forms from a schema
//! cannot show. An input schema here has neither: an optional argument is
//! one a caller leaves out. An output schema keeps its `null`s (answers do
//! hold nulls) and loses the made-up formats.

use std::sync::Arc;

use rmcp::handler::server::common::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The formats JSON Schema 2020-12 defines; any other is left out.
const STANDARD_FORMATS: [&str; 19] = [
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// A tool's input schema: `T`'s, portable.
pub fn input<T: JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    let schema = schema_for_input::<T>().unwrap_or_else(|error| panic!("the input schema of a tool: {error}"));
    let mut value = Value::Object((*schema).clone());
    portable(&mut value, true);
    Arc::new(into_object(value))
}

/// A tool's output schema: `T`'s, with standard formats only.
pub fn output<T: JsonSchema + std::any::Any>() -> Arc<JsonObject> {
    let mut value = Value::Object((*schema_for_output::<T>()).clone());
    portable(&mut value, false);
    Arc::new(into_object(value))
}

fn into_object(value: Value) -> JsonObject {
    match value {
        Value::Object(object) => object,
        _ => unreachable!("a schema stays an object"),
    }
}

/// Drops formats JSON Schema does not define and, with `drop_null`, every
/// "or null" of a schema.
fn portable(value: &mut Value, drop_null: bool) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(format)) = object.get("format")
                && !STANDARD_FORMATS.contains(&format.as_str())
            {
                object.remove("format");
            }
            if drop_null {
                without_null(object);
            }
            for child in object.values_mut() {
                portable(child, drop_null);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|item| portable(item, drop_null)),
        _ => {}
    }
}

/// `type: [T, "null"]` as `type: T`, `enum: [.., null]` without the null,
/// and `anyOf`/`oneOf` of one schema and `{type: null}` as that schema.
fn without_null(object: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = object.get_mut("type") {
        types.retain(|kind| kind != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            object.insert("type".to_string(), only);
        }
    }
    if let Some(Value::Array(values)) = object.get_mut("enum") {
        values.retain(|value| !value.is_null());
    }
    for union in ["anyOf", "oneOf"] {
        let Some(Value::Array(branches)) = object.get_mut(union) else { continue };
        branches.retain(|branch| branch.get("type") != Some(&Value::String("null".to_string())));
        if branches.len() == 1 {
            let Some(Value::Object(only)) = object.remove(union).and_then(|branches| match branches {
                Value::Array(mut branches) => branches.pop(),
                _ => None,
            }) else {
                continue;
            };
            for (key, value) in only {
                object.entry(key).or_insert(value);
            }
        }
    }
}

/// A tool's arguments, or what was wrong with them: deserialising never
/// fails, so that the tool can answer a tool error naming the field (MCP
/// asks input errors to be tool execution errors, which a model can read
/// and correct) instead of a protocol error, which ends an agent's run in
/// some hosts.
#[derive(Debug)]
pub enum Checked<T> {
    Valid(T),
    Invalid(String),
}

impl<'de, T: DeserializeOwned> serde::Deserialize<'de> for Checked<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(args) => Checked::Valid(args),
            Err(error) => {
                let path = error.path().to_string();
                let message = error.into_inner().to_string();
                // serde names a missing or unknown field in its message; a
                // wrong value is named by its path.
                Checked::Invalid(if path == "." { message } else { format!("{path}: {message}") })
            }
        })
    }
}

impl<T: JsonSchema> JsonSchema for Checked<T> {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[derive(Debug, serde::Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Example {
        /// Required.
        text: String,
        /// How many, 1 to 10.
        #[schemars(range(min = 1, max = 10))]
        limit: Option<usize>,
        when: Option<String>,
    }

    #[test]
    fn input_schemas_have_no_null_unions_and_no_made_up_formats() {
        let schema = Value::Object((*input::<Example>()).clone());
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        assert!(!text.contains("uint"), "{text}");
        assert_eq!(schema["properties"]["limit"]["type"], json!("integer"));
        assert_eq!(schema["properties"]["limit"]["minimum"], json!(1));
        assert_eq!(schema["properties"]["when"]["type"], json!("string"));
        assert_eq!(schema["required"], json!(["text"]));
    }

    #[test]
    fn output_schemas_keep_their_nulls() {
        let schema = Value::Object((*output::<mneme_api::memory::Hit>()).clone());
        assert_eq!(schema["properties"]["superseded_by"]["type"], json!(["string", "null"]));
        assert!(!schema.to_string().contains("\"uint"), "{schema}");
    }

    #[test]
    fn a_wrong_argument_is_named() {
        let checked: Checked<Example> = serde_json::from_value(json!({"text": "x", "limit": 3})).unwrap();
        let Checked::Valid(example) = checked else { panic!("refused good arguments") };
        assert_eq!((example.text.as_str(), example.limit, example.when), ("x", Some(3), None));
        let checked: Checked<Example> = serde_json::from_value(json!({"text": "x", "limit": "ten"})).unwrap();
        let Checked::Invalid(message) = checked else { panic!("accepted a string as a number") };
        assert!(message.starts_with("limit: invalid type: string \"ten\""), "{message}");
        let checked: Checked<Example> = serde_json::from_value(json!({"limit": 3})).unwrap();
        let Checked::Invalid(message) = checked else { panic!("accepted a call without text") };
        assert!(message.contains("missing field `text`"), "{message}");
        let checked: Checked<Example> = serde_json::from_value(json!({"text": "x", "lmit": 3})).unwrap();
        let Checked::Invalid(message) = checked else { panic!("accepted an unknown field") };
        assert!(message.contains("unknown field `lmit`"), "{message}");
    }
}
