//! Upcasting: payloads written under an older `schema_version` are rewritten
//! to the current one before they are typed, so the rest of Mneme only ever
//! sees current payloads.
//!
//! Version 1 is the first published schema, so the chain is empty today.
//! When a payload changes shape, bump [`CURRENT_SCHEMA_VERSION`] and add a
//! step `(kind, from_version, fn)` to [`UPCASTERS`] that turns a
//! `from_version` payload into a `from_version + 1` one.

use crate::envelope::CURRENT_SCHEMA_VERSION;
use crate::error::{ErrorCode, ValidationError};

type UpcastStep = fn(serde_json::Value) -> Result<serde_json::Value, ValidationError>;

/// `(kind, from_version, step)`: one rewrite from `from_version` to the next.
const UPCASTERS: &[(&str, u32, UpcastStep)] = &[];

/// Brings `data` of `kind`, written at `version`, to the current version.
pub(crate) fn upcast(kind: &str, version: u32, data: serde_json::Value) -> Result<serde_json::Value, ValidationError> {
    upcast_with(UPCASTERS, kind, version, data)
}

fn upcast_with(
    steps: &[(&str, u32, UpcastStep)],
    kind: &str,
    version: u32,
    mut data: serde_json::Value,
) -> Result<serde_json::Value, ValidationError> {
    if version == 0 || version > CURRENT_SCHEMA_VERSION {
        return Err(ValidationError::at(
            ErrorCode::UnsupportedSchemaVersion,
            "schema_version",
            format!("schema_version {version} is not supported; this build reads 1..={CURRENT_SCHEMA_VERSION}"),
        ));
    }
    for from_version in version..CURRENT_SCHEMA_VERSION {
        if let Some((_, _, step)) = steps.iter().find(|(name, from, _)| *name == kind && *from == from_version) {
            data = step(data)?;
        }
    }
    Ok(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn future_versions_are_refused() {
        let error = upcast("message_recorded", CURRENT_SCHEMA_VERSION + 1, serde_json::json!({})).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnsupportedSchemaVersion);
        assert_eq!(error.field.as_deref(), Some("schema_version"));
    }

    #[test]
    fn version_zero_is_refused() {
        let error = upcast("message_recorded", 0, serde_json::json!({})).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnsupportedSchemaVersion);
    }

    #[test]
    fn current_version_passes_through_unchanged() {
        let data = serde_json::json!({"role": "user", "text": "hi"});
        assert_eq!(upcast("message_recorded", CURRENT_SCHEMA_VERSION, data.clone()).unwrap(), data);
    }
}
