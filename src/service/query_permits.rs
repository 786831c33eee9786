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
    per_caller: PerCaller,
}

impl QueryPermits {
    pub fn new(per_caller: usize) -> QueryPermits {
        QueryPermits { per_caller: PerCaller::new(per_caller) }
    }

    /// A permit for one query of `caller` (held until the query answers),
    /// or 429 if it has `per_caller` in flight already.
    pub fn try_acquire(&self, caller: &str) -> Result<OwnedSemaphorePermit, ApiError> {
        self.per_caller.try_acquire(caller).ok_or_else(|| {
            metrics::counter!("mneme_queries_refused_total", "reason" => "in_flight").increment(1);
            ApiError::too_many_requests(
                "too_many_requests",
                None,
                format!(
                    "{caller} has {} queries in flight, the most one caller may have \
                     (http.max_queries_in_flight); retry when one has answered",
                    self.per_caller.limit
                ),
            )
        })
    }
}

/// How many streams (a log's or handoffs' `follow=true`) one caller, and
/// everyone together, may hold open at once. A stream holds a connection,
/// a task and a log subscription for as long as its reader stays: without
/// a bound, 20,000 streams of one token exhausted the process's file
/// descriptors, and health checks and every other agent's queries timed
/// out. Past either limit a stream is refused at once with 429
/// `too_many_streams` and `Retry-After: 1`; the permit goes back when the
/// stream ends (its reader left: found at the next keep-alive at the
/// latest).
pub struct StreamPermits {
    per_caller: PerCaller,
    total: Arc<Semaphore>,
    total_limit: usize,
}

/// What an open stream holds until it ends.
pub struct StreamPermit {
    _caller: OwnedSemaphorePermit,
    _total: OwnedSemaphorePermit,
}

impl StreamPermits {
    pub fn new(per_caller: usize, total: usize) -> StreamPermits {
        StreamPermits {
            per_caller: PerCaller::new(per_caller),
            total: Arc::new(Semaphore::new(total.max(1))),
            total_limit: total.max(1),
        }
    }

    /// A permit for one stream of `caller`, or 429.
    pub fn try_acquire(&self, caller: &str) -> Result<StreamPermit, ApiError> {
        let refused = |reason: &'static str, message: String| {
            metrics::counter!("mneme_queries_refused_total", "reason" => reason).increment(1);
            ApiError::too_many_requests("too_many_streams", None, message)
        };
        let caller_permit = self.per_caller.try_acquire(caller).ok_or_else(|| {
            refused(
                "streams",
                format!(
                    "{caller} has {} streams open, the most one caller may have (http.max_streams_per_caller); \
                     close one, or retry later",
                    self.per_caller.limit
                ),
            )
        })?;
        let total_permit = Arc::clone(&self.total).try_acquire_owned().map_err(|_| {
            refused(
                "streams_total",
                format!(
                    "this server has {} streams open, the most it holds (http.max_streams); retry later",
                    self.total_limit
                ),
            )
        })?;
        Ok(StreamPermit { _caller: caller_permit, _total: total_permit })
    }
}

/// A semaphore per caller, each with `limit` permits.
struct PerCaller {
    limit: usize,
    callers: Mutex<HashMap<String, Arc<Semaphore>>>,
}

impl PerCaller {
    fn new(limit: usize) -> PerCaller {
        PerCaller { limit: limit.max(1), callers: Mutex::new(HashMap::new()) }
    }

    fn try_acquire(&self, caller: &str) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut callers = self.callers.lock().expect("no panic while the caller map is held");
            if callers.len() >= MAX_CALLERS && !callers.contains_key(caller) {
                let full = self.limit;
                callers.retain(|_, semaphore| semaphore.available_permits() < full);
            }
            callers.entry(caller.to_string()).or_insert_with(|| Arc::new(Semaphore::new(self.limit))).clone()
        };
        semaphore.try_acquire_owned().ok()
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

    #[test]
    fn streams_are_bounded_per_caller_and_in_total() {
        let streams = StreamPermits::new(2, 3);
        let first = streams.try_acquire("token \"coder-key\"").unwrap();
        let _second = streams.try_acquire("token \"coder-key\"").unwrap();
        let refused = streams.try_acquire("token \"coder-key\"").err().unwrap().body();
        assert_eq!((refused.error.status, refused.error.code.as_str()), (429, "too_many_streams"));
        assert!(refused.error.message.contains("http.max_streams_per_caller"), "{refused}");
        let _third = streams.try_acquire("token \"planner-key\"").unwrap();
        let refused = streams.try_acquire("token \"reviewer-key\"").err().unwrap().body();
        assert!(refused.error.message.contains("http.max_streams)"), "{refused}");
        drop(first);
        assert!(streams.try_acquire("token \"reviewer-key\"").is_ok(), "a permit comes back when its stream ends");
    }
}
