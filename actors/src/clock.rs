//! The clock an actor of Mneme's own runs on: the time it writes into
//! events ([`Clock::now`], wall time) and the timers it waits on
//! ([`ActorClock::sleep`]): the consolidator's schedule and event-count
//! poll, the handoff router's retries. On the [`SystemClock`] a timer is a
//! tokio sleep (monotonic: a change of the system's time moves no timer);
//! on a [`TestClock`] it ends when the test advances the clock past it, and
//! never by itself, so a test fires a timer without waiting for it and sees
//! it not fire before its time. Bounds on waiting for another actor (the
//! catch-up timeouts) stay on the runtime's time: they are no schedule.
//!
//! Not tokio's paused time: it jumps to the next timer whenever the test's
//! runtime is idle, which it is each time an actor waits for a memory actor
//! on a worker arbiter (another runtime), so the catch-up timeouts would
//! fire as readily as the schedules.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use mneme_events::{Clock, SystemClock, TestClock};

/// What [`ActorClock::sleep`] answers: completes once the time has passed.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// A [`Clock`] whose timers an actor can wait on.
pub trait ActorClock: Clock {
    /// Completes once `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) -> Sleep;
}

impl ActorClock for SystemClock {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(tokio::time::sleep(duration))
    }
}

impl ActorClock for TestClock {
    fn sleep(&self, duration: Duration) -> Sleep {
        Box::pin(TestClock::sleep(self, duration))
    }
}
