//! Who makes a request, as the transport authenticated it: over HTTP the
//! bearer token (see `crate::http::auth`), over NATS the NATS server's own
//! authorization.

use std::fmt;

/// Who made a request, as its token says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Caller {
    /// No tokens are configured: anyone may do anything.
    Anyone,
    /// A configured token, by name, the swarm whose file configures it
    /// (the only one it opens), and the one agent it may act as.
    Token { name: String, swarm: String, agent: Option<String> },
}

impl Caller {
    pub fn may_act_as(&self, agent: &str) -> bool {
        match self {
            Caller::Anyone | Caller::Token { agent: None, .. } => true,
            Caller::Token { agent: Some(bound), .. } => bound == agent,
        }
    }

    /// Whether the caller may reach swarm `swarm` at all.
    pub fn may_reach(&self, swarm: &str) -> bool {
        match self {
            Caller::Anyone => true,
            Caller::Token { swarm: own, .. } => own == swarm,
        }
    }
}

impl fmt::Display for Caller {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Caller::Anyone => formatter.write_str("an unauthenticated caller"),
            Caller::Token { name, swarm, agent: Some(agent) } => {
                write!(formatter, "token {name:?} (swarm {swarm:?}, agent {agent:?})")
            }
            Caller::Token { name, swarm, agent: None } => write!(formatter, "token {name:?} (swarm {swarm:?})"),
        }
    }
}
