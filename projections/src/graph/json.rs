//! Reading the JSON text of tool arguments ([`mneme_events::JsonText`]),
//! with serde_json, plus the two lookups extraction needs.

pub(crate) use serde_json::Value as JsonValue;

/// Parses `text`; `None` if it is not valid JSON, and extraction then
/// treats the arguments as empty.
pub(crate) fn parse(text: &str) -> Option<JsonValue> {
    serde_json::from_str(text).ok()
}

/// Lookups over an argument object.
pub(crate) trait Arguments {
    /// The first of `keys` that is a non-blank string member.
    fn first_string(&self, keys: &[&str]) -> Option<&str>;

    /// Every string among the members `keys`: a string member gives itself,
    /// an array member gives its string elements.
    fn strings(&self, keys: &[&str]) -> Vec<&str>;
}

impl Arguments for JsonValue {
    fn first_string(&self, keys: &[&str]) -> Option<&str> {
        keys.iter().filter_map(|key| self.get(key)?.as_str()).find(|text| !text.trim().is_empty())
    }

    fn strings(&self, keys: &[&str]) -> Vec<&str> {
        let mut found = Vec::new();
        for key in keys {
            match self.get(key) {
                Some(JsonValue::String(text)) => found.push(text.as_str()),
                Some(JsonValue::Array(values)) => found.extend(values.iter().filter_map(JsonValue::as_str)),
                _ => {}
            }
        }
        found
    }
}
