//! An agent's feed: follows the agent's events on the log and hands them to
//! its memory actor in batches, one batch in flight at a time, so a slow
//! memory slows its own feed and nothing is dropped. Dead letters the actor
//! reports are filed on the log here, where log IO belongs.

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use futures::StreamExt;
use mneme_nats::{DeadLetter, EventLog, LogEntry};

use crate::memory_actor::{ApplyBatch, DeadLettersFiled, MemoryActor, Query, QueryAnswer};

/// Largest batch handed to a memory actor at once.
const MAX_BATCH: usize = 512;
const RETRY_AFTER: Duration = Duration::from_millis(250);

/// Runs until the memory actor stops.
pub(crate) async fn run(agent: String, actor: Addr<MemoryActor>, log: Arc<dyn EventLog>) {
    let mut feed = Feed { consumer: format!("memory-{agent}"), agent, actor, log, unfiled: Vec::new() };
    feed.follow().await;
}

struct Feed {
    agent: String,
    /// Name of the durable position this feed stores after each snapshot.
    consumer: String,
    actor: Addr<MemoryActor>,
    log: Arc<dyn EventLog>,
    /// Dead letters the log has not taken yet; retried with every batch.
    unfiled: Vec<DeadLetter>,
}

enum Delivery {
    Continue,
    /// The actor stopped applying part-way: follow the log again from its
    /// checkpoint.
    Resubscribe,
    ActorStopped,
}

impl Feed {
    /// Subscribes from the actor's checkpoint and delivers until the actor
    /// stops; after a log error or a stalled batch, subscribes again from the
    /// checkpoint, so nothing is skipped and nothing is applied twice.
    async fn follow(&mut self) {
        loop {
            let checkpoint = match self.actor.send(Query::Status).await {
                Ok(Ok(QueryAnswer::Status(status))) => status.checkpoint,
                Ok(_) => unreachable!("a status query answers with a status"),
                Err(_) => return,
            };
            // The whole swarm: a memory holds the other agents' shared
            // events too, and decides itself what it may see.
            let subscription = match self.log.subscribe(checkpoint + 1, None).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::warn!(agent = %self.agent, %error, "cannot follow the log; retrying");
                    tokio::time::sleep(RETRY_AFTER).await;
                    continue;
                }
            };
            let mut batches = subscription.ready_chunks(MAX_BATCH);
            while let Some(results) = batches.next().await {
                let (entries, failure) = split_at_first_error(results);
                if !entries.is_empty() {
                    match self.deliver(entries).await {
                        Delivery::Continue => {}
                        Delivery::Resubscribe => break,
                        Delivery::ActorStopped => return,
                    }
                }
                if let Some(error) = failure {
                    tracing::warn!(agent = %self.agent, %error, "log subscription failed; resubscribing");
                    break;
                }
            }
            tokio::time::sleep(RETRY_AFTER).await;
        }
    }

    /// Hands a batch to the actor (waiting while its mailbox is full), files
    /// the dead letters it reports, and confirms them to the actor.
    async fn deliver(&mut self, entries: Vec<LogEntry>) -> Delivery {
        let Ok(report) = self.actor.send(ApplyBatch(entries)).await else {
            return Delivery::ActorStopped;
        };
        self.unfiled.extend(report.dead_letters);
        self.file_dead_letters().await;
        if let Some(seq) = report.snapshot_seq {
            if let Err(error) = self.log.store_position(&self.consumer, seq).await {
                tracing::warn!(agent = %self.agent, seq, %error, "cannot store the consumer position");
            }
        }
        if report.stalled.is_some() {
            return Delivery::Resubscribe;
        }
        Delivery::Continue
    }

    async fn file_dead_letters(&mut self) {
        let mut filed = Vec::new();
        for letter in std::mem::take(&mut self.unfiled) {
            let seq = letter.seq;
            match self.log.dead_letter(letter.clone()).await {
                Ok(()) => filed.push(seq),
                Err(error) => {
                    tracing::error!(agent = %self.agent, seq, %error, "cannot file a dead letter; will retry");
                    self.unfiled.push(letter);
                }
            }
        }
        if !filed.is_empty() {
            // If the actor is gone, nothing waits for the confirmation.
            let _ = self.actor.send(DeadLettersFiled(filed)).await;
        }
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
