//! Who makes a request, as the transport authenticated it: over HTTP the
//! bearer token (see `crate::http::auth`), over NATS the NATS server's own
//! authorization.

use std::fmt;

/// Who made a request, as its token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No tokens are configured: anyone may do anything.
    Anyone,
    /// A configured token, by name, and the one agent it may act as.
    Token { name: String, agent: Option<String> },
}

impl Caller {
    pub fn may_act_as(&self, agent: &str) -> bool {
        match self {
            Caller::Anyone | Caller::Token { agent: None, .. } => true,
            Caller::Token { agent: Some(bound), .. } => bound == agent,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Anyone => formatter.write_str("an unauthenticated caller"),
            Caller::Token { name, agent: Some(agent) } => write!(formatter, "token {name:?} (agent {agent:?})"),
            Caller::Token { name, agent: None } => write!(formatter, "token {name:?}"),
        }
    }
}
