//! Where Mneme reads the time it writes into its own events (verdicts,
//! retrieval counts, acknowledgements, resolutions, tombstones). Memory
//! never reads a clock: what it does with time comes from the events on the
//! log, so a replay reads the time that was written. A test that needs to
//! know the time a verdict will carry gives the writer a [`TestClock`].

use std::fmt;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use crate::envelope::Timestamp;

/// A source of the current time.
pub trait Clock: Send + Sync + fmt::Debug {
    fn now(&self) -> Timestamp;
}

/// The system clock: what a server uses.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock that tells the time a test set, and moves only when told.
#[derive(Debug)]
pub struct TestClock {
    unix_nanos: AtomicI64,
}

impl TestClock {
    pub fn at(time: Timestamp) -> TestClock {
        TestClock { unix_nanos: AtomicI64::new(time.unix_nanos()) }
    }

    pub fn set(&self, time: Timestamp) {
        self.unix_nanos.store(time.unix_nanos(), Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        let nanos = i64::try_from(by.as_nanos()).unwrap_or(i64::MAX);
        self.unix_nanos.fetch_add(nanos, Ordering::SeqCst);
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_nanos(self.unix_nanos.load(Ordering::SeqCst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_test_clock_tells_the_time_it_was_set_to_and_moves_only_when_told() {
        let start: Timestamp = "2026-01-06T10:30:00Z".parse().unwrap();
        let clock = TestClock::at(start);
        assert_eq!(clock.now(), start);
        assert_eq!(clock.now(), start);
        clock.advance(Duration::from_secs(90));
        assert_eq!(clock.now().to_string(), "2026-01-06T10:31:30Z");
        clock.set(start);
        assert_eq!(clock.now(), start);
    }
}
