//! Leases: what must run in one process at a time per swarm (the
//! consolidator, the handoff router, the phase summariser) runs where a
//! process holds the lease on its role.
//!
//! On JetStream a lease is a key of the swarm's bucket `MNEME_<swarm>_leases`
//! (history 1, `max_age` the lease's time to live, so a holder that stops
//! renewing loses it a TTL after its last renewal). Taking it is a `create`,
//! which fails while the key lives; renewing is an `update` naming the
//! revision of the last write, which fails once another process took the
//! key over. The revision at the take is the lease's epoch: it grows with
//! every takeover. On the embedded log, which one process holds, a role's
//! lease is the first taker's until it releases it.

/// A lease this process holds on one role of a swarm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub role: String,
    /// Who holds it: a name for this process, unique in the deployment.
    pub holder: String,
    /// Grows with every takeover of the role: the store's revision at the
    /// take.
    pub epoch: u64,
    /// The store's revision of the last take or renewal: a renewal names it.
    pub revision: u64,
}

/// Checks a role's name: it becomes a key.
pub(crate) fn validate_role(role: &str) -> Result<(), crate::LogError> {
    crate::error::validate_consumer_name(role)
}
