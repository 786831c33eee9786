//! The error body of every endpoint, over HTTP and NATS alike:
//! `{"error": {"status": …, "code": …, "field": …, "message": …}}`.

use serde::{Deserialize, Serialize};

/// What every refusal and failure answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// One error: its HTTP status (also over NATS, where there is no status
/// line), a stable machine-readable code, the request field at fault if
/// one is, and a message for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErrorDetail {
    /// The HTTP status, e.g. 400.
    pub status: u16,
    /// e.g. `invalid_parameter`, `unknown_field`, `unknown_agent`,
    /// `too_many_requests`.
    pub code: String,
    /// The parameter or body field at fault (`k`, `signals.kk`), or null.
    pub field: Option<String>,
    pub message: String,
}

impl ErrorBody {
    pub fn new(status: u16, code: impl Into<String>, field: Option<String>, message: impl Into<String>) -> ErrorBody {
        ErrorBody { error: ErrorDetail { status, code: code.into(), field, message: message.into() } }
    }

    /// The body an answer carries, if it is an error body.
    pub fn from_json(body: &serde_json::Value) -> Option<ErrorBody> {
        serde_json::from_value(body.clone()).ok()
    }
}

impl std::fmt::Display for ErrorBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ErrorDetail { status, code, field, message } = &self.error;
        match field {
            Some(field) => write!(f, "{status} {code} ({field}): {message}"),
            None => write!(f, "{status} {code}: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_body_is_the_documented_shape_and_reads_back() {
        let body = ErrorBody::new(400, "invalid_parameter", Some("k".into()), "k must be between 1 and 1000, got 0");
        let json = serde_json::to_value(&body).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"error": {"status": 400, "code": "invalid_parameter", "field": "k",
                "message": "k must be between 1 and 1000, got 0"}})
        );
        assert_eq!(ErrorBody::from_json(&json), Some(body.clone()));
        assert_eq!(body.to_string(), "400 invalid_parameter (k): k must be between 1 and 1000, got 0");
        assert_eq!(ErrorBody::from_json(&serde_json::json!({"hits": []})), None);
    }
}
