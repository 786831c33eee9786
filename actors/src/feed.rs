//! An agent's feed: follows the agent's events on the log and hands them to
//! its memory actor in batches, waiting when the actor's mailbox is full.
//! Dead letters the actor reports are filed on the log here, where log IO
//! belongs.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use futures::StreamExt;
use mneme_nats::{EventLog, LogEntry};

use crate::memory_actor::{ApplyBatch, MemoryActor, Query, QueryAnswer};

/// Largest batch handed to a memory actor at once.
const MAX_BATCH: usize = 512;
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// Runs until the memory actor stops.
pub(crate) async fn run(agent: String, actor: Addr<MemoryActor>, log: Arc<dyn EventLog>) {
    let consumer = format!("memory-{agent}");
    loop {
        let checkpoint = match actor.send(Query::Status).await {
            Ok(Ok(QueryAnswer::Status(status))) => status.checkpoint,
            Ok(_) => unreachable!("a status query answers with a status"),
            Err(_) => return,
        };
        let subscription = match log.subscribe(checkpoint + 1, Some(&agent)).await {
            Ok(subscription) => subscription,
            Err(error) => {
                tracing::warn!(%agent, %error, "cannot follow the log; retrying");
                tokio::time::sleep(RETRY_AFTER).await;
                continue;
            }
        };
        let mut batches = subscription.ready_chunks(MAX_BATCH);
        while let Some(results) = batches.next().await {
            let (entries, failure) = split_at_first_error(results);
            if !entries.is_empty() && !deliver(&agent, &consumer, &actor, log.as_ref(), entries).await {
                return;
            }
            if let Some(error) = failure {
                tracing::warn!(%agent, %error, "log subscription failed; resubscribing");
                break;
            }
        }
        tokio::time::sleep(RETRY_AFTER).await;
    }
}

fn split_at_first_error<E>(results: Vec<Result<LogEntry, E>>) -> (Vec<LogEntry>, Option<E>) {
    let mut entries = Vec::with_capacity(results.len());
    for result in results {
        match result {
            Ok(entry) => entries.push(entry),
            Err(error) => return (entries, Some(error)),
        }
    }
    (entries, None)
}

/// Hands a batch to the actor; `false` when the actor is gone.
async fn deliver(
    agent: &str,
    consumer: &str,
    actor: &Addr<MemoryActor>,
    log: &dyn EventLog,
    entries: Vec<LogEntry>,
) -> bool {
    let report = match actor.send(ApplyBatch(entries)).await {
        Ok(Ok(report)) => report,
        Ok(Err(error)) => {
            tracing::error!(%agent, %error, "applying a batch failed");
            return true;
        }
        Err(_) => return false,
    };
    for letter in report.dead_letters {
        let seq = letter.seq;
        if let Err(error) = log.dead_letter(letter).await {
            tracing::error!(%agent, seq, %error, "cannot file a dead letter");
        }
    }
    if let Some(seq) = report.snapshot_seq {
        if let Err(error) = log.store_position(consumer, seq).await {
            tracing::warn!(%agent, seq, %error, "cannot store the consumer position");
        }
    }
    true
}
