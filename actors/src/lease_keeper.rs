//! The lease keeper: one task per swarm that takes the swarm's writer
//! lease when it is free, renews it, and tells the actors that write as the
//! swarm's one writer — the consolidator, the handoff router, the phase
//! compressor and the eraser — whether this process holds it.
//!
//! ```text
//!                 take / renew (every ttl/3) / release at stop
//!   LeaseKeeper ───────────────────────────────────────────────► EventLog
//!   (a task)        JetStream: key "writer" of MNEME_<swarm>_leases
//!        │          and a fence in the events stream; embedded: in process
//!        │ watch: LeaseState (held here? who holds it?)
//!        ▼
//!   LeaseGate ──► Consolidator, HandoffRouter, Eraser, PhaseCompressor
//!                 (act only while held; append with `append_fenced`)
//!             ──► /healthz (who holds it), mneme_lease_held{swarm,lease}
//! ```
//!
//! Several processes serving one swarm (replicas) each run a keeper; one
//! holds the lease. When it dies, its key expires a time to live after its
//! last renewal and another keeper takes the role within a third of a time
//! to live more, sets its fence, and its actors go on from their durable
//! positions. A holder that was only paused (and believes it still holds
//! the lease) is refused by the log when it appends ([`LogError::Fenced`]):
//! the fence, not the keeper's belief, is what keeps writes single. The
//! belief is kept short all the same: **a keeper never reports the lease
//! held past a time to live after its last answered renewal**, even while
//! a renewal hangs on a broker node that went away, so that the holder's
//! actors stop, and `/healthz` says so, when another process may have
//! taken over.

use std::sync::Arc;
use std::time::Duration;

use mneme_nats::{EventLog, Lease, LogError};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The one lease per swarm: its holder runs what must run once.
pub const WRITER_LEASE: &str = "writer";

/// What this process knows of a lease.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaseState {
    /// The lease, while this process holds it.
    pub held: Option<Lease>,
    /// Who holds it as last seen (this process or another); `None` when
    /// nobody did at the last look.
    pub holder: Option<String>,
}

/// Whether this process holds a swarm's lease, for the actors that act
/// only as its holder. Cheap to clone.
#[derive(Clone)]
pub struct LeaseGate {
    role: String,
    state: watch::Receiver<LeaseState>,
}

impl LeaseGate {
    /// The lease's role.
    pub fn role(&self) -> &str {
        &self.role
    }

    /// The lease, if this process holds it now.
    pub fn held(&self) -> Option<Lease> {
        self.state.borrow().held.clone()
    }

    /// The lease, or the error that says this process does not hold it
    /// and who does.
    pub fn require(&self, swarm: &str) -> Result<Lease, crate::ActorsError> {
        let state = self.state();
        state.held.ok_or_else(|| crate::ActorsError::NotLeaseHolder {
            swarm: swarm.to_string(),
            lease: self.role.clone(),
            holder: match state.holder {
                Some(holder) => format!("held by {holder}"),
                None => "held by nobody at the last look".to_string(),
            },
        })
    }

    /// What this process knows of the lease now.
    pub fn state(&self) -> LeaseState {
        self.state.borrow().clone()
    }

    /// Waits until this process holds the lease; `None` once the keeper
    /// stopped without it.
    pub async fn until_held(&mut self) -> Option<Lease> {
        loop {
            if let Some(lease) = self.state.borrow_and_update().held.clone() {
                return Some(lease);
            }
            if self.state.changed().await.is_err() {
                return None;
            }
        }
    }

    /// Waits until this process no longer holds `lease` (it was lost, or
    /// the keeper stopped and gave it up).
    pub async fn until_lost(&mut self, lease: &Lease) {
        loop {
            let still = self.state.borrow_and_update().held.as_ref().is_some_and(|held| held.epoch == lease.epoch);
            if !still || self.state.changed().await.is_err() {
                return;
            }
        }
    }
}

/// The keeper's task, and how to stop it.
pub struct LeaseKeeper {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl LeaseKeeper {
    /// Starts keeping `role`'s lease on `log` for `holder`, renewed every
    /// third of `ttl`. `first` is a lease taken already (at start, before
    /// the erasure pass), kept from there.
    pub fn start(
        log: Arc<dyn EventLog>,
        role: &str,
        holder: &str,
        ttl: Duration,
        first: Option<Lease>,
    ) -> (LeaseKeeper, LeaseGate) {
        let state = LeaseState { holder: first.as_ref().map(|lease| lease.holder.clone()), held: first };
        held_gauge(log.swarm(), role, state.held.is_some());
        if state.held.is_some() {
            taken_counter(log.swarm(), role);
        }
        let (sender, receiver) = watch::channel(state);
        let (stop, stopped) = watch::channel(false);
        let keeping = Keeping {
            log,
            role: role.to_string(),
            holder: holder.to_string(),
            ttl,
            state: sender,
            renewed_at: Instant::now(),
        };
        let task = tokio::spawn(keeping.run(stopped));
        (LeaseKeeper { stop, task }, LeaseGate { role: role.to_string(), state: receiver })
    }

    /// Stops keeping the lease and gives it up, so that another process
    /// takes the role at once. Stop the actors that act as its holder
    /// first.
    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

struct Keeping {
    log: Arc<dyn EventLog>,
    role: String,
    holder: String,
    ttl: Duration,
    state: watch::Sender<LeaseState>,
    /// When the lease was last taken or renewed.
    renewed_at: Instant,
}

impl Keeping {
    async fn run(mut self, mut stopped: watch::Receiver<bool>) {
        let every = self.ttl / 3;
        loop {
            tokio::select! {
                _ = stopped.changed() => break,
                () = tokio::time::sleep(every) => {}
            }
            let held = self.state.borrow().held.clone();
            match held {
                Some(lease) => self.renew(lease).await,
                None => self.take().await,
            }
        }
        let held = self.state.borrow().held.clone();
        if let Some(lease) = held {
            self.set_held(None, None);
            if let Err(error) = self.log.release_lease(&lease).await {
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, %error, "could not give the lease up; it expires by itself");
            }
        }
    }

    async fn renew(&mut self, mut lease: Lease) {
        // The key expires a time to live after the last renewal the broker
        // stored, which was before `renewed_at`: past that, another process
        // may hold the lease. A renewal still unanswered then (a broker
        // node gone with the request) must not keep this process acting as
        // the holder, its appends all fenced, until the client times out.
        let left = self.ttl.saturating_sub(self.renewed_at.elapsed());
        let renewed = match tokio::time::timeout(left, self.log.renew_lease(&mut lease)).await {
            Ok(renewed) => renewed,
            Err(_) => {
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, ttl = ?self.ttl, "the lease's renewal was not answered within its time to live; given up");
                self.set_held(None, None);
                return;
            }
        };
        match renewed {
            Ok(()) => {
                self.renewed_at = Instant::now();
                // A new revision: the actors need not be woken for it.
                self.state.send_if_modified(|state| {
                    state.held = Some(lease);
                    false
                });
            }
            Err(error @ (LogError::LeaseLost { .. } | LogError::Fenced { .. })) => {
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, %error, "this process lost the lease; its holder's work stops here");
                self.set_held(None, None);
            }
            Err(error) if self.renewed_at.elapsed() + self.ttl / 3 >= self.ttl => {
                // Another process may take it before the next attempt: stop
                // acting as its holder now rather than race it (the fence
                // would refuse the appends anyway).
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, %error, "the lease could not be renewed within its time to live; given up");
                self.set_held(None, None);
            }
            Err(error) => {
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, %error, "could not renew the lease; trying again");
            }
        }
    }

    async fn take(&mut self) {
        match self.log.take_lease(&self.role, &self.holder).await {
            Ok(Some(lease)) => {
                self.renewed_at = Instant::now();
                tracing::info!(swarm = self.log.swarm(), lease = %self.role, holder = %self.holder, epoch = lease.epoch, "this process took the lease");
                taken_counter(self.log.swarm(), &self.role);
                let holder = Some(lease.holder.clone());
                self.set_held(Some(lease), holder);
            }
            Ok(None) => {
                let holder = self.log.lease_holder(&self.role).await.ok().flatten();
                self.state.send_if_modified(|state| {
                    let changed = state.holder != holder;
                    state.holder = holder;
                    changed
                });
            }
            Err(error) => {
                tracing::warn!(swarm = self.log.swarm(), lease = %self.role, %error, "could not take the lease; trying again");
            }
        }
    }

    fn set_held(&self, held: Option<Lease>, holder: Option<String>) {
        held_gauge(self.log.swarm(), &self.role, held.is_some());
        self.state.send_replace(LeaseState { held, holder });
    }
}

/// `mneme_lease_held{swarm, lease}`: 1 where the lease is held, 0 elsewhere.
fn held_gauge(swarm: &str, role: &str, held: bool) {
    metrics::gauge!("mneme_lease_held", "swarm" => swarm.to_string(), "lease" => role.to_string()).set(if held {
        1.0
    } else {
        0.0
    });
}

/// `mneme_lease_takes_total{swarm, lease}`: each take, at start or in a
/// takeover.
fn taken_counter(swarm: &str, role: &str) {
    metrics::counter!("mneme_lease_takes_total", "swarm" => swarm.to_string(), "lease" => role.to_string())
        .increment(1);
}
