//! How fast one caller may publish: events and bytes per second, each a
//! token bucket (GCRA, `governor`) that holds `http.publish_burst_secs`
//! seconds' worth. Without it one token published 76,800 events in ten
//! seconds: other agents' searches went from milliseconds to a second
//! while the memories applied the backlog, and the next consolidation had
//! 120,000 verdicts to write. Past either quota a publish is refused whole,
//! before it reaches the log, with 429 `too_many_events` and a
//! `Retry-After` of the seconds until it would fit.
//!
//! The caller is the API token (as for queries); without tokens, each
//! agent the events are of. What counts: batches of `POST /v1/events` and
//! the single events `Service::write` appends for a caller (notes, core
//! memory, the MCP tools' pins, forgets and handoffs). Purges and Mneme's
//! own events (verdicts, deliveries, acknowledgements) do not.

use std::num::NonZeroU32;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};

use super::{ApiError, Caller};

/// Callers remembered at once: past this, those whose buckets are full
/// again are forgotten (agent names come from the events).
const MAX_CALLERS: usize = 10_000;

/// The quotas of `http.publish_*`; `None` where a quota is off (0).
pub struct PublishQuotas {
    events: Option<Bucket>,
    bytes: Option<Bucket>,
}

struct Bucket {
    limiter: DefaultKeyedRateLimiter<String>,
    per_sec: u32,
    burst: u32,
    setting: &'static str,
    unit: &'static str,
}

impl PublishQuotas {
    /// `events_per_sec` and `bytes_per_sec` (0: no quota), each bucket
    /// holding `burst_secs` seconds' worth.
    pub fn new(events_per_sec: u32, bytes_per_sec: u32, burst_secs: u32) -> PublishQuotas {
        let bucket = |per_sec: u32, setting, unit| {
            let per_sec = NonZeroU32::new(per_sec)?;
            let burst = per_sec.saturating_mul(NonZeroU32::new(burst_secs.max(1)).expect("max(1)"));
            Some(Bucket {
                limiter: RateLimiter::keyed(Quota::per_second(per_sec).allow_burst(burst)),
                per_sec: per_sec.get(),
                burst: burst.get(),
                setting,
                unit,
            })
        };
        PublishQuotas {
            events: bucket(events_per_sec, "http.publish_events_per_sec", "events"),
            bytes: bucket(bytes_per_sec, "http.publish_bytes_per_sec", "bytes"),
        }
    }

    /// Takes `events` events of `bytes` bytes from the quotas of `caller`
    /// publishing as `agents` of `swarm`, or refuses them: 429 when they
    /// would fit later, 413 `batch_over_quota` when they are more than a
    /// whole burst (split the batch). A caller without a token is each of
    /// the agents.
    pub fn take(
        &self,
        caller: &Caller,
        swarm: &str,
        agents: &[&str],
        events: usize,
        bytes: usize,
    ) -> Result<(), ApiError> {
        let keys: Vec<String> = match caller {
            Caller::Token { name, swarm, .. } => vec![format!("token:{swarm}/{name}")],
            Caller::Anyone => {
                let mut agents: Vec<String> = agents.iter().map(|agent| format!("agent:{swarm}/{agent}")).collect();
                agents.sort();
                agents.dedup();
                agents
            }
        };
        for key in &keys {
            for (bucket, amount) in [(&self.events, events), (&self.bytes, bytes)] {
                if let Some(bucket) = bucket {
                    bucket.take(caller, key, amount)?;
                }
            }
        }
        Ok(())
    }
}

impl Bucket {
    fn take(&self, caller: &Caller, key: &str, amount: usize) -> Result<(), ApiError> {
        if self.limiter.len() > MAX_CALLERS {
            self.limiter.retain_recent();
        }
        let Some(amount) = NonZeroU32::new(u32::try_from(amount).unwrap_or(u32::MAX)) else { return Ok(()) };
        let wait = match self.limiter.check_key_n(&key.to_string(), amount) {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(not_until)) => not_until.wait_time_from(DefaultClock::default().now()),
            Err(_) => {
                metrics::counter!("mneme_publishes_refused_total", "quota" => self.unit).increment(1);
                return Err(ApiError::too_large(
                    "batch_over_quota",
                    None,
                    format!(
                        "{amount} {} in one request is more than {caller} may publish at once ({} a second, \
                         {}, for http.publish_burst_secs: {}); split the batch",
                        self.unit, self.per_sec, self.setting, self.burst
                    ),
                ));
            }
        };
        let retry_after = wait.as_secs_f64().ceil().max(1.0) as u64;
        metrics::counter!("mneme_publishes_refused_total", "quota" => self.unit).increment(1);
        Err(ApiError::too_many_requests(
            "too_many_events",
            None,
            format!(
                "{caller} publishes faster than {} {} a second ({}; bursts up to {}); retry in {retry_after} s",
                self.per_sec, self.unit, self.setting, self.burst
            ),
        )
        .retry_after(retry_after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(name: &str) -> Caller {
        Caller::Token { name: name.to_string(), swarm: "demo".to_string(), agent: Some(name.to_string()) }
    }

    #[test]
    fn a_caller_past_its_quota_is_refused_naming_it_and_another_is_not() {
        let quotas = PublishQuotas::new(100, 1_000_000, 2);
        quotas.take(&token("coder"), "demo", &["coder"], 150, 10).unwrap();
        let refused = quotas.take(&token("coder"), "demo", &["coder"], 100, 10).unwrap_err();
        assert_eq!((refused.status(), refused.code()), (429, "too_many_events"));
        assert!(refused.to_string().contains("http.publish_events_per_sec"), "{refused}");
        assert!(refused.retry_after_secs() >= 1, "{refused}");
        quotas.take(&token("reviewer"), "demo", &["reviewer"], 200, 10).unwrap();
    }

    #[test]
    fn bytes_count_as_events_do_and_zero_turns_a_quota_off() {
        let quotas = PublishQuotas::new(0, 1000, 1);
        quotas.take(&Caller::Anyone, "demo", &["coder"], 1_000_000, 1000).unwrap();
        let refused = quotas.take(&Caller::Anyone, "demo", &["coder", "coder"], 1, 600).unwrap_err();
        assert!(refused.to_string().contains("http.publish_bytes_per_sec"), "{refused}");
        // Without tokens each agent has its own quota.
        quotas.take(&Caller::Anyone, "demo", &["planner"], 1, 600).unwrap();
    }

    #[test]
    fn a_batch_larger_than_a_whole_burst_is_refused_as_too_large() {
        let quotas = PublishQuotas::new(10, 0, 3);
        let refused = quotas.take(&token("importer"), "demo", &["coder"], 31, 1).unwrap_err();
        assert_eq!((refused.status(), refused.code()), (413, "batch_over_quota"), "{refused}");
        quotas.take(&token("importer"), "demo", &["coder"], 30, 1).unwrap();
    }
}
