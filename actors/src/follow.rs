//! Following the log from a durable position: what the handoff router and
//! the eraser both do. Each entry is taken in log order; the position is
//! stored after an entry that asks for it and at least every
//! [`STORE_POSITION_EVERY_ENTRIES`] entries, so a restart neither re-reads
//! the whole log nor skips an entry not yet taken. An entry that fails is
//! taken again, from the stored position, after a pause on the follower's
//! clock.

use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use mneme_nats::{EventLog, LogEntry};

use crate::clock::ActorClock;
use crate::error::ActorsError;

/// The position is stored at least this often.
const STORE_POSITION_EVERY_ENTRIES: u64 = 1000;
/// The pause before reading again after a failure.
pub(crate) const RETRY_AFTER: Duration = Duration::from_millis(500);

/// Follows `log` as the durable consumer `consumer` until the process ends,
/// handing each entry to `take`, which answers whether the position is to
/// be stored at once (after an entry that did something). `what` names the
/// follower in logs. The pause after a failure sleeps on `clock`.
pub(crate) async fn follow_from_position<F, Fut>(
    log: &dyn EventLog,
    clock: &dyn ActorClock,
    consumer: &str,
    what: &str,
    take: F,
) where
    F: FnMut(LogEntry) -> Fut,
    Fut: Future<Output = Result<bool, ActorsError>>,
{
    follow(log, clock, consumer, what, true, take).await
}

/// [`follow_from_position`] for a process that follows where `consumer`
/// is, without being it: the position is read, never stored (a replica
/// that does not hold the swarm's writer lease).
pub(crate) async fn follow_from<F, Fut>(log: &dyn EventLog, clock: &dyn ActorClock, consumer: &str, what: &str, take: F)
where
    F: FnMut(LogEntry) -> Fut,
    Fut: Future<Output = Result<bool, ActorsError>>,
{
    follow(log, clock, consumer, what, false, take).await
}

async fn follow<F, Fut>(
    log: &dyn EventLog,
    clock: &dyn ActorClock,
    consumer: &str,
    what: &str,
    store: bool,
    mut take: F,
) where
    F: FnMut(LogEntry) -> Fut,
    Fut: Future<Output = Result<bool, ActorsError>>,
{
    let mut resumed_at: Option<u64> = None;
    loop {
        let stored = if store || resumed_at.is_none() {
            within_the_log(log, consumer, what).await
        } else {
            // Not storing: from where this follower got to itself.
            Ok(resumed_at)
        };
        let from = match stored {
            Ok(position) => position.map_or(1, |seq| seq + 1),
            Err(error) => {
                tracing::warn!(%error, "{what}: cannot read its position; retrying");
                clock.sleep(RETRY_AFTER).await;
                continue;
            }
        };
        let mut entries = match log.subscribe(from, None).await {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(%error, "{what}: cannot follow the log; retrying");
                clock.sleep(RETRY_AFTER).await;
                continue;
            }
        };
        let mut unstored = 0u64;
        while let Some(entry) = entries.next().await {
            let entry = match entry {
                Ok(entry) => entry,
                Err(error) => {
                    tracing::warn!(%error, "{what}: subscription failed; resubscribing");
                    break;
                }
            };
            let seq = entry.seq;
            let store_now = match take(entry).await {
                Ok(store_now) => store_now,
                Err(error) => {
                    // Not taken: the position stays before it, and it is
                    // tried again.
                    tracing::warn!(seq, %error, "{what}: not done yet; retrying");
                    break;
                }
            };
            unstored += 1;
            resumed_at = Some(seq);
            if !store {
                continue;
            }
            if store_now || unstored >= STORE_POSITION_EVERY_ENTRIES {
                if let Err(error) = log.store_position(consumer, seq).await {
                    tracing::warn!(%error, "{what}: cannot store its position");
                }
                unstored = 0;
            }
        }
        clock.sleep(RETRY_AFTER).await;
    }
}

/// The stored position of `consumer`, brought back to the log's end if it
/// is past it: the log lost its tail (see `crate::lost_tail`), and the
/// events appended from there on reuse the lost seqs; taken from the
/// stored position, they would be skipped as done.
async fn within_the_log(log: &dyn EventLog, consumer: &str, what: &str) -> Result<Option<u64>, mneme_nats::LogError> {
    let Some(position) = log.load_position(consumer).await? else { return Ok(None) };
    let log_end = log.last_seq().await?;
    if position <= log_end {
        return Ok(Some(position));
    }
    tracing::error!(
        swarm = log.swarm(),
        consumer,
        position,
        log_end,
        "THE LOG LOST ITS TAIL: {what}'s stored position is past the log's end; going on from the log's end"
    );
    metrics::counter!("mneme_log_tail_lost_positions_total", "swarm" => log.swarm().to_string()).increment(1);
    log.store_position(consumer, log_end).await?;
    Ok(Some(log_end))
}
