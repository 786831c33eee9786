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
///
/// Holding the lease is not enough to write as its holder: a holder paused
/// past its time to live (a long GC, a stopped VM) may wake up believing it
/// still holds it. So a new holder sets a *fence* when it takes the role —
/// on JetStream a record on `mneme.<swarm>.fence.lease.<role>` in the events
/// stream, carrying its epoch — and appends as holder
/// ([`crate::EventLog::append_fenced`]) only on the condition that the
/// role's fence is still its own (`Nats-Expected-Last-Subject-Sequence` on
/// the fence subject). An older holder's appends are then refused by the
/// server itself ([`crate::LogError::Fenced`]), whatever it believes.
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
    /// The seq of this holder's fence in the events stream (JetStream); 0 on
    /// the embedded log, which fences in process.
    pub fence: u64,
}

/// Checks a role's name: it becomes a key.
pub(crate) fn validate_role(role: &str) -> Result<(), crate::LogError> {
    crate::error::validate_consumer_name(role)
}
