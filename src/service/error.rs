//! The one error of every query and command, whatever the transport:
//! `{"error": {"status", "code", "field", "message"}}` ([`ErrorBody`]),
//! `status` being the HTTP status (also over NATS and MCP, which have no
//! status line of their own).

use mneme_actors::ActorsError;
use mneme_api::ErrorBody;
use mneme_api::params::ParameterError;
use mneme_events::{ErrorCode, ValidationError};
use mneme_nats::LogError;

/// An error as every endpoint reports it. Constructors are named by the
/// HTTP status they carry.
#[derive(Debug)]
pub struct ApiError {
    status: u16,
    code: String,
    field: Option<String>,
    message: String,
    /// For a 429: the seconds after which a retry may succeed.
    retry_after: Option<u64>,
    /// For a 307: the base URL of the process to ask instead.
    location: Option<String>,
}

impl ApiError {
    fn new(status: u16, code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code: code.to_string(),
            field: field.map(str::to_string),
            message: message.into(),
            retry_after: None,
            location: None,
        }
    }

    /// 307 `swarm_elsewhere`: another process holds the swarm; HTTP sends
    /// the client to the same path there (`base_url` + path).
    pub fn elsewhere(base_url: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            location: Some(base_url.trim_end_matches('/').to_string()),
            ..ApiError::new(307, "swarm_elsewhere", Some("swarm"), message)
        }
    }

    /// For a 307: the base URL of the process that answers instead.
    pub fn location(&self) -> Option<&str> {
        self.location.as_deref()
    }

    /// 400 `invalid_parameter`: a parameter or body field has a bad value.
    pub fn bad_parameter(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::bad_request("invalid_parameter", Some(field), message)
    }

    /// 400: the request is malformed.
    pub fn bad_request(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(400, code, field, message)
    }

    /// 401: no token, or not one the API accepts.
    pub fn unauthorized(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(401, code, field, message)
    }

    /// 403: the caller may not do this.
    pub fn forbidden(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(403, code, field, message)
    }

    /// 404: the endpoint, swarm, agent, item… does not exist.
    pub fn not_found(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(404, code, field, message)
    }

    /// 409: the request conflicts with the memory's state (already done).
    pub fn conflict(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(409, code, field, message)
    }

    /// 413: the request or an event is over a size limit.
    pub fn too_large(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(413, code, field, message)
    }

    /// 429: retry later (HTTP adds `Retry-After`: see
    /// [`ApiError::retry_after_secs`]).
    pub fn too_many_requests(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(429, code, field, message)
    }

    /// 500: a fault of Mneme's.
    pub fn internal(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(500, code, field, message)
    }

    /// 503: the log is out of reach; worth a retry.
    pub fn unavailable(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(503, code, field, message)
    }

    /// 504: waiting for the memory to catch up took too long.
    pub fn timed_out(code: &str, field: Option<&str>, message: impl Into<String>) -> ApiError {
        ApiError::new(504, code, field, message)
    }

    pub fn from_validation(error: ValidationError) -> ApiError {
        let status = match error.code {
            ErrorCode::PayloadTooLarge | ErrorCode::BatchTooLarge => 413,
            _ => 400,
        };
        ApiError {
            status,
            code: error.code.as_str().to_string(),
            field: error.field,
            message: error.message,
            retry_after: None,
            location: None,
        }
    }

    /// The same error, to be retried after `secs` seconds.
    pub fn retry_after(self, secs: u64) -> ApiError {
        ApiError { retry_after: Some(secs), ..self }
    }

    /// When a retry may succeed, in seconds: as set, or 1.
    pub fn retry_after_secs(&self) -> u64 {
        self.retry_after.unwrap_or(1)
    }

    /// The HTTP status.
    /// The error's code (`already_resolved`, `unknown_item`…).
    pub fn code(&self) -> &str {
        &self.code
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    pub fn body(&self) -> ErrorBody {
        ErrorBody::new(self.status, self.code.clone(), self.field.clone(), self.message.clone())
    }

    /// The same error for a transport that names the field `to` where the
    /// API names it `from` (MCP's `limit` is the API's `k`): in `field`,
    /// and where the message begins with it.
    pub fn field_renamed(mut self, from: &str, to: &str) -> ApiError {
        if self.field.as_deref() == Some(from) {
            self.field = Some(to.to_string());
            if let Some(rest) = self.message.strip_prefix(from)
                && rest.starts_with(' ')
            {
                self.message = format!("{to}{rest}");
            }
        }
        self
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl From<ActorsError> for ApiError {
    fn from(error: ActorsError) -> ApiError {
        let message = error.to_string();
        match error {
            ActorsError::UnknownAgent { .. } => ApiError::not_found("unknown_agent", Some("agent"), message),
            ActorsError::CatchUpTimeout { .. } => ApiError::timed_out("catch_up_timeout", Some("min_seq"), message),
            // Another replica holds the swarm's writer lease; it may move
            // here (or the client asks that replica).
            ActorsError::NotLeaseHolder { .. } | ActorsError::Log(LogError::Fenced { .. }) => {
                ApiError::unavailable("not_lease_holder", None, message)
            }
            // The log out of reach is worth a retry; a log that refused what
            // Mneme itself wrote (a verdict, a delivery) is a fault here.
            ActorsError::Log(
                LogError::Storage(_)
                | LogError::Locked { .. }
                | LogError::Nats(_)
                | LogError::PublishNotAcknowledged { .. }
                | LogError::Server(_)
                | LogError::Closed,
            ) => ApiError::unavailable("log_unavailable", None, message),
            _ => ApiError::internal("internal", None, message),
        }
    }
}

impl From<LogError> for ApiError {
    fn from(error: LogError) -> ApiError {
        let message = error.to_string();
        match error {
            LogError::EventTooLarge { .. } => ApiError::too_large("payload_too_large", None, message),
            LogError::InvalidName { role, .. } => ApiError::bad_request("invalid_name", Some(role), message),
            LogError::ForeignSwarm { .. } => ApiError::not_found("unknown_swarm", Some("swarm"), message),
            LogError::ConflictingDuplicate { index, .. } => {
                ApiError::conflict("conflicting_duplicate", Some(&format!("[{index}].id")), message)
            }
            _ => ApiError::unavailable("log_unavailable", None, message),
        }
    }
}

impl From<ParameterError> for ApiError {
    fn from(error: ParameterError) -> ApiError {
        ApiError::bad_request(error.code(), Some(error.field()), error.to_string())
    }
}

/// The error of an actor that stopped answering.
pub(crate) fn stopped(agent: &str) -> ApiError {
    ApiError::from(ActorsError::ActorStopped { agent: agent.to_string() })
}

/// A JSON request body (`POST …/context`, resolve, purge, a NATS query) as
/// `T`: a field `T` does not take is refused as `unknown_field`, with its
/// path (`signals.kk`); any other fault is `invalid_body`.
pub fn json_body<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(&mut deserializer).map_err(|error| {
        let path = error.path().to_string();
        let inner = error.into_inner();
        match ParameterError::unknown_field(&path, &inner.to_string()) {
            Some(unknown) => unknown.into(),
            None => ApiError::bad_request("invalid_body", None, inner.to_string()),
        }
    })
}
