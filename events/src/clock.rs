//! Where Mneme reads the time it writes into its own events (verdicts,
//! retrieval counts, acknowledgements, resolutions, tombstones). Memory
//! never reads a clock: what it does with time comes from the events on the
//! log, so a replay reads the time that was written. A test that needs to
//! know the time a verdict will carry gives the writer a [`TestClock`]; one
//! that fires an actor's timer without waiting for it advances the clock
//! the timer sleeps on ([`TestClock::sleep`], which `mneme-actors` runs its
//! timers on when a test gives an actor a `TestClock`).

use std::collections::BTreeMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
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

/// A clock that tells the time a test set, and moves only when told; its
/// sleeps end when it is moved past their end, and never otherwise.
#[derive(Debug)]
pub struct TestClock {
    /// Shared with the sleeps, which outlive a borrow of the clock.
    time: Arc<Mutex<TestTime>>,
}

/// The time, and the sleeps that wait on it, under one lock: a sleep that
/// finds its end not reached registers its waker before the time can move.
#[derive(Debug, Default)]
struct TestTime {
    unix_nanos: i64,
    next_sleep: u64,
    /// Each sleep not ended: its end, and the waker of the task that polled
    /// it last (none before its first poll).
    sleeping: BTreeMap<u64, (i64, Option<Waker>)>,
}

impl TestClock {
    pub fn at(time: Timestamp) -> TestClock {
        TestClock { time: Arc::new(Mutex::new(TestTime { unix_nanos: time.unix_nanos(), ..TestTime::default() })) }
    }

    /// Sets the time; the sleeps it reaches end.
    pub fn set(&self, time: Timestamp) {
        let woken = {
            let mut test_time = lock(&self.time);
            test_time.unix_nanos = time.unix_nanos();
            test_time.due()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// Moves the time on by `by`; the sleeps it reaches end.
    pub fn advance(&self, by: Duration) {
        let woken = {
            let mut test_time = lock(&self.time);
            test_time.unix_nanos = test_time.unix_nanos.saturating_add(nanos(by));
            test_time.due()
        };
        woken.into_iter().for_each(Waker::wake);
    }

    /// Completes once the clock is moved `duration` past the time it tells
    /// now, by [`TestClock::advance`] or [`TestClock::set`]; never by
    /// itself.
    pub fn sleep(&self, duration: Duration) -> TestSleep {
        let mut test_time = lock(&self.time);
        let id = test_time.next_sleep;
        test_time.next_sleep += 1;
        let end = test_time.unix_nanos.saturating_add(nanos(duration));
        test_time.sleeping.insert(id, (end, None));
        TestSleep { time: self.time.clone(), id, end }
    }

    /// When each sleep on this clock that has not ended ends, soonest
    /// first: a test sees that an actor armed its timer, and for when.
    pub fn sleeping(&self) -> Vec<Timestamp> {
        let mut ends: Vec<Timestamp> =
            lock(&self.time).sleeping.values().map(|(end, _)| Timestamp::from_unix_nanos(*end)).collect();
        ends.sort_unstable();
        ends
    }
}

impl TestTime {
    /// Takes the sleeps whose end the time reached; answers their wakers.
    fn due(&mut self) -> Vec<Waker> {
        let now = self.unix_nanos;
        let due: Vec<u64> = self.sleeping.iter().filter(|(_, (end, _))| *end <= now).map(|(id, _)| *id).collect();
        due.into_iter().filter_map(|id| self.sleeping.remove(&id).and_then(|(_, waker)| waker)).collect()
    }
}

impl Clock for TestClock {
    fn now(&self) -> Timestamp {
        Timestamp::from_unix_nanos(lock(&self.time).unix_nanos)
    }
}

/// A sleep on a [`TestClock`]; it is counted as sleeping from when it is
/// made until it ends or is dropped.
#[derive(Debug)]
pub struct TestSleep {
    time: Arc<Mutex<TestTime>>,
    id: u64,
    end: i64,
}

impl Future for TestSleep {
    type Output = ();

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<()> {
        let mut test_time = lock(&self.time);
        if test_time.unix_nanos >= self.end {
            test_time.sleeping.remove(&self.id);
            return Poll::Ready(());
        }
        test_time.sleeping.insert(self.id, (self.end, Some(context.waker().clone())));
        Poll::Pending
    }
}

impl Drop for TestSleep {
    fn drop(&mut self) {
        lock(&self.time).sleeping.remove(&self.id);
    }
}

/// The test time's lock; a test that panicked holding it left the time
/// whole (every change under it is a single assignment or map operation).
fn lock(time: &Mutex<TestTime>) -> MutexGuard<'_, TestTime> {
    time.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn nanos(duration: Duration) -> i64 {
    i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX)
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

    /// A waker that counts its wakes.
    struct CountingWaker(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    #[test]
    fn a_sleep_on_a_test_clock_ends_when_the_clock_reaches_its_end_and_not_before() {
        let start: Timestamp = "2026-01-06T10:30:00Z".parse().unwrap();
        let clock = TestClock::at(start);
        let mut sleep = std::pin::pin!(clock.sleep(Duration::from_secs(60)));
        let end: Timestamp = "2026-01-06T10:31:00Z".parse().unwrap();
        assert_eq!(clock.sleeping(), [end], "counted as sleeping once made");
        let waker = Arc::new(CountingWaker(Default::default()));
        let wakes = || waker.0.load(std::sync::atomic::Ordering::SeqCst);
        let waker_handle = Waker::from(waker.clone());
        let mut context = Context::from_waker(&waker_handle);
        assert!(sleep.as_mut().poll(&mut context).is_pending());

        clock.advance(Duration::from_millis(59_999));
        assert_eq!(wakes(), 0, "a millisecond short of its end");
        assert!(sleep.as_mut().poll(&mut context).is_pending());
        assert_eq!(clock.sleeping(), [end]);

        clock.advance(Duration::from_millis(1));
        assert_eq!(wakes(), 1, "woken when the clock reached its end");
        assert_eq!(clock.sleeping(), [], "ended");
        assert!(sleep.as_mut().poll(&mut context).is_ready());

        // A sleep dropped before its end is no longer counted.
        let dropped = clock.sleep(Duration::from_secs(1));
        assert_eq!(clock.sleeping().len(), 1);
        drop(dropped);
        assert_eq!(clock.sleeping(), []);
        // A sleep of nothing has ended when first polled.
        assert!(std::pin::pin!(clock.sleep(Duration::ZERO)).poll(&mut context).is_ready());
    }
}
