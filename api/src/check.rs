//! The limits of the API's requests and the checks their parameters pass,
//! with the one error that names the parameter at fault: below both the
//! query-string and body shapes (`params`) and the typed inputs they
//! become (`search`, `query`), which all check with these.

use mneme_events::Timestamp;

/// Most hits a search returns.
pub const MAX_K: usize = 1000;
/// Longest query text (and entity, item id, context signal), in bytes.
pub const MAX_QUERY_BYTES: usize = 4096;
/// Largest context budget, in tokens.
pub const MAX_BUDGET_TOKENS: usize = 1_000_000;
/// Most log entries in one page of `GET …/events`.
pub const MAX_EVENTS_PAGE: usize = 10_000;
/// Farthest walk in the fact graph, in edges.
pub const MAX_HOPS: usize = 4;
/// Most recent errors one context request may name.
pub const MAX_RECENT_ERRORS: usize = 16;
/// Most events in one `POST /v1/events`. A batch is validated whole before
/// any of it is appended, and appended as one unit: its cost, and how long it
/// holds the log, must stay bounded whatever the body size limit allows
/// (16 MiB of small events would be over 100,000 of them).
pub const MAX_EVENTS_PER_REQUEST: usize = 10_000;
/// Largest body of a query or command (`POST …/context`, resolve, purge,
/// acknowledge): actix-web's own default, now refused with a JSON error.
pub const MAX_COMMAND_BODY_BYTES: usize = 256 * 1024;

pub(crate) const DEFAULT_K: usize = 10;
pub(crate) const DEFAULT_HOPS: usize = 2;
pub(crate) const DEFAULT_EVENTS_PAGE: usize = 1000;
pub(crate) const DEFAULT_ITEMS_PAGE: usize = 50;
/// Most items in one page of `GET …/items`.
pub const MAX_ITEMS_PAGE: usize = 500;

/// Why a request's parameters were refused. Every variant names the
/// parameter at fault (`field`); the over-limit ones name the limit too.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ParameterError {
    /// A count outside `1..=max`.
    #[error("{field} must be between 1 and {max}, got {value}")]
    OutOfRange { field: &'static str, value: usize, max: usize },
    /// A text longer than `max` bytes.
    #[error("{what} is {bytes} bytes, the limit is {max}")]
    TooLong { field: &'static str, what: &'static str, bytes: usize, max: usize },
    /// A list longer than `max` entries.
    #[error("at most {max} {what}, got {count}")]
    TooMany { field: &'static str, what: &'static str, count: usize, max: usize },
    /// A value that is not one the parameter takes.
    #[error("{message}")]
    Invalid { field: &'static str, message: String },
    /// A parameter or body field the request does not take: a misspelling,
    /// or another verb's field (`k` is the search's). Refused rather than
    /// ignored, so that a request never silently means something else.
    /// `field` is its path in the body (`signals.kk`).
    #[error("unknown field {}; expected one of: {expected}", quote(field))]
    UnknownField { field: String, expected: String },
}

/// Characters of a client's text that a refusal repeats.
pub const QUOTED_CHARS: usize = 40;

/// How a refusal repeats what a client sent (an id, a name, a level): as an
/// escaped string of at most `QUOTED_CHARS` characters, marked where cut.
/// Error bodies go back to the client and, on NATS, to whatever reply
/// subject the request named: they must not carry a request's text whole,
/// which could be shaped as instructions for the agent that reads them.
pub fn quote(text: &str) -> String {
    match text.char_indices().nth(QUOTED_CHARS) {
        Some((cut, _)) => format!("{:?}… ({} bytes)", &text[..cut], text.len()),
        None => format!("{text:?}"),
    }
}

impl ParameterError {
    /// The parameter at fault, as the request named it.
    pub fn field(&self) -> &str {
        match self {
            ParameterError::OutOfRange { field, .. }
            | ParameterError::TooLong { field, .. }
            | ParameterError::TooMany { field, .. }
            | ParameterError::Invalid { field, .. } => field,
            ParameterError::UnknownField { field, .. } => field,
        }
    }

    /// The error code the API answers with: `unknown_field` for a field the
    /// request does not take (as for an event payload's), else
    /// `invalid_parameter`.
    pub fn code(&self) -> &'static str {
        match self {
            ParameterError::UnknownField { .. } => "unknown_field",
            _ => "invalid_parameter",
        }
    }

    /// The refusal of an unknown field in what serde could not parse: its
    /// message (`unknown field `kk`, expected one of `q`, `k`…`, from
    /// `deny_unknown_fields`) and where the parser was: `""` or `.` at the
    /// top, the object that held it (`signals`) or the field itself
    /// (`signals.kk`, as `serde_path_to_error` reports it). `None` for every
    /// other parse error.
    pub fn unknown_field(path: &str, message: &str) -> Option<ParameterError> {
        let rest = message.strip_prefix("unknown field `")?;
        let (name, rest) = rest.split_once('`')?;
        // The field is the client's text, answered as the error's `field`:
        // bounded like every quoted value.
        let name = match name.char_indices().nth(QUOTED_CHARS) {
            Some((cut, _)) => &name[..cut],
            None => name,
        };
        let field = if path.is_empty() || path == "." {
            name.to_string()
        } else if path == name || path.ends_with(&format!(".{name}")) {
            path.to_string()
        } else {
            format!("{path}.{name}")
        };
        // serde_json appends the position: the client knows where its body is.
        let rest = rest.split(" at line ").next().unwrap_or("");
        let expected =
            rest.trim_start_matches(", ").trim_start_matches("expected one of ").trim_start_matches("expected ");
        let expected = if expected.is_empty() { "nothing".to_string() } else { expected.replace('`', "") };
        Some(ParameterError::UnknownField { field, expected })
    }

    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> ParameterError {
        ParameterError::Invalid { field, message: message.into() }
    }
}

/// Refuses a count parameter outside `1..=max`, naming the limit.
pub fn check_between(field: &'static str, value: usize, max: usize) -> Result<(), ParameterError> {
    if value == 0 || value > max {
        return Err(ParameterError::OutOfRange { field, value, max });
    }
    Ok(())
}

/// Refuses a text parameter over [`MAX_QUERY_BYTES`]; `what` names it in
/// the message ("query", "entity").
pub fn check_text_length(field: &'static str, what: &'static str, text: &str) -> Result<(), ParameterError> {
    if text.len() > MAX_QUERY_BYTES {
        return Err(ParameterError::TooLong { field, what, bytes: text.len(), max: MAX_QUERY_BYTES });
    }
    Ok(())
}

/// Refuses a query text over [`MAX_QUERY_BYTES`].
pub fn check_query_text(query: &str) -> Result<(), ParameterError> {
    check_text_length("q", "query", query)
}

/// The non-empty, trimmed parts of a comma-separated parameter.
pub fn comma_separated(text: Option<&str>) -> Vec<String> {
    text.unwrap_or("").split(',').map(str::trim).filter(|part| !part.is_empty()).map(str::to_string).collect()
}

/// An RFC 3339 time parameter, parsed; `field` names it in the refusal.
pub fn timestamp_parameter(field: &'static str, text: Option<&str>) -> Result<Option<Timestamp>, ParameterError> {
    text.map(|text| text.parse::<Timestamp>().map_err(|error| ParameterError::invalid(field, error.message)))
        .transpose()
}

/// Refuses an item id over [`MAX_QUERY_BYTES`].
pub fn check_item_id(item_id: &str) -> Result<(), ParameterError> {
    check_text_length("item_id", "item_id", item_id)
}

/// The most entries one timeline page holds.
pub const MAX_TIMELINE_ENTRIES: usize = 500;
/// Entries a timeline page holds unless asked otherwise.
pub const DEFAULT_TIMELINE_ENTRIES: usize = 50;
