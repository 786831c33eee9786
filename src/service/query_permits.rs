//! How many queries one caller may have in flight at once. Memory actors
//! share a few worker threads, and a query is answered on the thread of its
//! agent's actor; a caller that keeps many expensive queries queued there
//! (six concurrent contexts from one token made another agent's search on
//! the same worker take 12 s) holds up every agent that shares the thread.
//! Past the limit a query is refused at once with 429 `too_many_requests`,
//! naming the limit, and `Retry-After: 1`.
//!
//! The caller is the API token over HTTP (each agent's own token, in a
//! deployment that gives them out), the agent queried when the API has no
//! tokens, and the agent queried over NATS.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::ApiError;

/// Callers remembered at once: past this, those with nothing in flight are
/// forgotten (agent names come from request paths).
const MAX_CALLERS: usize = 10_000;

pub struct QueryPermits {
    per_caller: usize,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl QueryPermits {
    pub fn new(per_caller: usize) -> QueryPermits {
        QueryPermits { per_caller: per_caller.max(1), callers: Mutex::new(HashMap::new()) }
    }

    /// A permit for one query of `caller` (held until the query answers),
    /// or 429 if it has `per_caller` in flight already.
    pub fn try_acquire(&self, caller: &str) -> Result<OwnedSemaphorePermit, ApiError> {
        let semaphore = {
            let mut callers = self.callers.lock().expect("no panic while the caller map is held");
            if callers.len() >= MAX_CALLERS && !callers.contains_key(caller) {
                let full = self.per_caller;
                callers.retain(|_, semaphore| semaphore.available_permits() < full);
            }
            callers.entry(caller.to_string()).or_insert_with(|| Arc::new(Semaphore::new(self.per_caller))).clone()
        };
        semaphore.try_acquire_owned().map_err(|_| {
            metrics::counter!("mneme_queries_refused_total", "reason" => "in_flight").increment(1);
            ApiError::too_many_requests(
                "too_many_requests",
                None,
                format!(
                    "{caller} has {} queries in flight, the most one caller may have \
                     (http.max_queries_in_flight); retry when one has answered",
                    self.per_caller
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_past_its_limit_is_refused_and_others_are_not() {
        let permits = QueryPermits::new(2);
        let first = permits.try_acquire("token \"reviewer-key\"").unwrap();
        let _second = permits.try_acquire("token \"reviewer-key\"").unwrap();
        let refused = permits.try_acquire("token \"reviewer-key\"").unwrap_err().body();
        assert_eq!(refused.error.status, 429);
        assert!(refused.error.message.contains("2 queries in flight"), "{refused}");
        assert!(permits.try_acquire("token \"planner-key\"").is_ok(), "another caller has its own permits");
        drop(first);
        assert!(permits.try_acquire("token \"reviewer-key\"").is_ok(), "a permit comes back when its query answers");
    }
}
