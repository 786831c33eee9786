use std::fmt;

/// The one error type of `mneme-events`.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Invalid(#[from] ValidationError),
    #[error("stored event could not be decoded: {0}")]
    CorruptStorage(String),
    #[error("event could not be encoded for storage: {0}")]
    StorageEncoding(String),
}

/// Why an event was refused: a stable machine-readable code, the field at
/// fault (a dotted path such as `data.exit_code`) and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ValidationError {
    pub code: ErrorCode,
    pub field: Option<String>,
    pub message: String,
}

impl ValidationError {
    pub fn new(code: ErrorCode, field: impl Into<Option<String>>, message: impl Into<String>) -> Self {
        ValidationError { code, field: field.into(), message: message.into() }
    }

    pub fn at(code: ErrorCode, field: &str, message: impl Into<String>) -> Self {
        ValidationError::new(code, Some(field.to_string()), message)
    }

    /// The same error for a field nested under `prefix` (`data`, `[3]`).
    pub fn under(mut self, prefix: &str) -> Self {
        self.field = Some(match self.field {
            Some(field) if field.starts_with('[') => format!("{prefix}{field}"),
            Some(field) => format!("{prefix}.{field}"),
            None => prefix.to_string(),
        });
        self
    }
}

impl fmt::Display for ValidationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.field {
            Some(field) => write!(f, "{}: {} ({})", self.code, self.message, field),
            None => write!(f, "{}: {}", self.code, self.message),
        }
    }
}

/// Stable codes of validation failures; clients may match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    MalformedJson,
    NotAnObject,
    UnknownKind,
    MissingField,
    InvalidType,
    UnknownField,
    InvalidName,
    InvalidId,
    InvalidTimestamp,
    InvalidScope,
    OutOfRange,
    EmptyField,
    PayloadTooLarge,
    UnsupportedSchemaVersion,
    EmptyBatch,
    BatchTooLarge,
    DuplicateKey,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::MalformedJson => "malformed_json",
            ErrorCode::NotAnObject => "not_an_object",
            ErrorCode::UnknownKind => "unknown_kind",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::InvalidType => "invalid_type",
            ErrorCode::UnknownField => "unknown_field",
            ErrorCode::InvalidName => "invalid_name",
            ErrorCode::InvalidId => "invalid_id",
            ErrorCode::InvalidTimestamp => "invalid_timestamp",
            ErrorCode::InvalidScope => "invalid_scope",
            ErrorCode::OutOfRange => "out_of_range",
            ErrorCode::EmptyField => "empty_field",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedSchemaVersion => "unsupported_schema_version",
            ErrorCode::EmptyBatch => "empty_batch",
            ErrorCode::BatchTooLarge => "batch_too_large",
            ErrorCode::DuplicateKey => "duplicate_key",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
