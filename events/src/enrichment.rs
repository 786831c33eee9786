//! What Mneme's enricher records on the log: items' vectors from a model
//! deeper than the write path's, computed off it. Memories apply the
//! recorded vectors like any other event, so replay never embeds again and
//! every replica shares one computation. Kept apart from `kinds.rs` by job:
//! these are derived data, not records of the swarm's work.

use std::borrow::Cow;
use std::collections::HashSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

use crate::envelope::EventId;
use crate::error::{ErrorCode, ValidationError};

/// Most vectors one `embeddings_computed` event may carry.
pub const MAX_COMPUTED_VECTORS: usize = 256;
/// Most dimensions a recorded vector may have.
pub const MAX_VECTOR_DIMENSIONS: u32 = 4096;
/// Longest a model's name or hash may be, in bytes.
pub const MAX_MODEL_NAME_LEN: usize = 200;

payload! {
    /// Vectors of items, computed by `model` off the write path. An item
    /// takes the first vector of the memory's deep model recorded for it;
    /// a later one, or one of another model, changes nothing.
    pub struct EmbeddingsComputed {
        /// The model's name, e.g. `all-minilm-l6-v2`.
        pub model: String,
        /// What pins its exact weights, e.g. `sha256:1a2b3c4d5e6f7a8b`.
        pub model_hash: String,
        /// The length of every vector.
        pub dimensions: u32,
        pub vectors: Vec<ComputedVector>,
    }
}

payload! {
    /// One item's vector as 8-bit integers: `value ≈ values[i] × scale`.
    pub struct ComputedVector {
        /// The event that created the item.
        pub event_id: EventId,
        pub scale: f32,
        pub values: Int8Values,
    }
}

/// Signed bytes, on the wire as standard base64 (with padding).
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct Int8Values(pub Vec<i8>);

impl Serialize for Int8Values {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let bytes: Vec<u8> = self.0.iter().map(|value| *value as u8).collect();
        serializer.serialize_str(&STANDARD.encode(bytes))
    }
}

impl<'de> Deserialize<'de> for Int8Values {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = Cow::<str>::deserialize(deserializer)?;
        let bytes = STANDARD
            .decode(text.as_bytes())
            .map_err(|error| serde::de::Error::custom(format!("values are not standard base64: {error}")))?;
        Ok(Int8Values(bytes.into_iter().map(|byte| byte as i8).collect()))
    }
}

impl JsonSchema for Int8Values {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Int8Values".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "contentEncoding": "base64",
            "description": "`dimensions` signed bytes (two's complement), standard base64 with padding.",
        })
    }
}

/// What stands for the hash of a model whose id names none.
pub const UNVERSIONED_MODEL: &str = "unversioned";

impl EmbeddingsComputed {
    /// The model as a memory's configuration names it: `model@model_hash`.
    pub fn model_id(&self) -> String {
        format!("{}@{}", self.model, self.model_hash)
    }

    /// A model id (`name@hash`, as embedders name themselves) as this
    /// event's `model` and `model_hash`; an id without a hash is
    /// [`UNVERSIONED_MODEL`].
    pub fn model_parts(model_id: &str) -> (&str, &str) {
        model_id.split_once('@').unwrap_or((model_id, UNVERSIONED_MODEL))
    }

    /// Whether the vectors are of the model `model_id` names.
    pub fn is_of(&self, model_id: &str) -> bool {
        let (model, hash) = EmbeddingsComputed::model_parts(model_id);
        self.model == model && self.model_hash == hash
    }

    pub(crate) fn validate(&self) -> Result<(), ValidationError> {
        for (field, value) in [("model", &self.model), ("model_hash", &self.model_hash)] {
            if value.trim().is_empty() {
                return Err(ValidationError::at(ErrorCode::EmptyField, field, format!("{field} must not be empty")));
            }
            if value.len() > MAX_MODEL_NAME_LEN {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    field,
                    format!("{field} is {} bytes, the limit is {MAX_MODEL_NAME_LEN}", value.len()),
                ));
            }
        }
        if !(1..=MAX_VECTOR_DIMENSIONS).contains(&self.dimensions) {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "dimensions",
                format!("dimensions must be between 1 and {MAX_VECTOR_DIMENSIONS}, got {}", self.dimensions),
            ));
        }
        // None is allowed: erasure takes an erased item's vector out of the
        // event on the log, and may take them all.
        if self.vectors.len() > MAX_COMPUTED_VECTORS {
            return Err(ValidationError::at(
                ErrorCode::OutOfRange,
                "vectors",
                format!("an event carries at most {MAX_COMPUTED_VECTORS} vectors, this one {}", self.vectors.len()),
            ));
        }
        let mut seen = HashSet::with_capacity(self.vectors.len());
        for (index, vector) in self.vectors.iter().enumerate() {
            if !seen.insert(vector.event_id) {
                return Err(ValidationError::at(
                    ErrorCode::DuplicateKey,
                    &format!("vectors[{index}].event_id"),
                    format!("event {} has a vector here already", vector.event_id),
                ));
            }
            if !vector.scale.is_finite() || vector.scale < 0.0 {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    &format!("vectors[{index}].scale"),
                    format!("a scale is finite and not negative, got {}", vector.scale),
                ));
            }
            if vector.values.0.len() != self.dimensions as usize {
                return Err(ValidationError::at(
                    ErrorCode::OutOfRange,
                    &format!("vectors[{index}].values"),
                    format!("the vector has {} values, dimensions says {}", vector.values.0.len(), self.dimensions),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn computed(values: Vec<i8>) -> EmbeddingsComputed {
        EmbeddingsComputed {
            model: "all-minilm-l6-v2".into(),
            model_hash: "sha256:53aa51172d142c89".into(),
            dimensions: values.len() as u32,
            vectors: vec![ComputedVector {
                event_id: "01KE9AECXV82AADA5PPPFVC093".parse().unwrap(),
                scale: 0.01,
                values: Int8Values(values),
            }],
        }
    }

    #[test]
    fn values_travel_as_base64_and_come_back_the_same() {
        let event = computed(vec![-128, -1, 0, 1, 127]);
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["vectors"][0]["values"], "gP8AAX8=");
        let back: EmbeddingsComputed = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
        assert_eq!(event.model_id(), "all-minilm-l6-v2@sha256:53aa51172d142c89");
        event.validate().unwrap();
    }

    #[test]
    fn a_bad_vector_is_refused_naming_its_field() {
        let not_base64 = serde_json::json!({
            "model": "m", "model_hash": "h", "dimensions": 2,
            "vectors": [{"event_id": "01KE9AECXV82AADA5PPPFVC093", "scale": 1.0, "values": "not base64!"}],
        });
        let error = serde_json::from_value::<EmbeddingsComputed>(not_base64).unwrap_err();
        assert!(error.to_string().contains("base64"), "{error}");

        let mut short = computed(vec![1, 2, 3]);
        short.dimensions = 4;
        let error = short.validate().unwrap_err();
        assert_eq!(error.field.as_deref(), Some("vectors[0].values"), "{error:?}");

        let mut negative = computed(vec![1]);
        negative.vectors[0].scale = -1.0;
        assert_eq!(negative.validate().unwrap_err().field.as_deref(), Some("vectors[0].scale"));

        let mut twice = computed(vec![1]);
        twice.vectors.push(twice.vectors[0].clone());
        assert_eq!(twice.validate().unwrap_err().field.as_deref(), Some("vectors[1].event_id"));

        let mut none = computed(vec![1]);
        none.vectors.clear();
        none.validate().expect("what erasure leaves of an event");
        let mut many = computed(vec![1]);
        many.vectors = (0..=MAX_COMPUTED_VECTORS)
            .map(|index| ComputedVector { event_id: EventId(index as u128), ..many.vectors[0].clone() })
            .collect();
        assert_eq!(many.validate().unwrap_err().field.as_deref(), Some("vectors"));

        let mut unnamed = computed(vec![1]);
        unnamed.model_hash = " ".into();
        assert_eq!(unnamed.validate().unwrap_err().field.as_deref(), Some("model_hash"));
    }
}
