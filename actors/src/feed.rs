//! The swarm's feed: one reader of the swarm's log for every memory actor.
//! It reads and decodes each record once and routes it: an agent's own
//! records to its memory, another agent's only to the memories it enters
//! (see [`enters_memory_of`]), and to each memory the position up to which
//! the log held nothing more for it. One batch is in flight to each memory
//! at a time. The feed waits up to [`ROUND_WAIT`] for the memories it sent a
//! chunk to; one still busy after that (a memory applying a flood of its
//! own events) falls behind, and the feed goes on with the others, so a
//! slow memory does not hold the rest up and nothing queues in front of it.
//!
//! A memory behind the head (a new agent, one restored from an older
//! snapshot, one that stalled or fell behind) is caught up between the
//! head's chunks: from the records the feed read last (the most recent
//! [`RECENT_ENTRIES`]), or by range reads of the log when it is further
//! behind. The feed does not wait for a memory catching up. Dead letters
//! the actors report are filed on the log here, where log IO belongs.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use actix::{Addr, MailboxError};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use mneme_nats::{DeadLetter, EventLog, LogEntry, Seq};
use mneme_projections::{SharedContent, enters_memory_of};
use tokio::sync::{mpsc, watch};

use crate::memory_actor::queries::{Ask, Status};
use crate::memory_actor::{ApplyBatch, ApplyReport, DeadLettersFiled, MemoryActor};

/// Most records read and routed at once.
const MAX_CHUNK: usize = 512;
/// Most records read at once for memories catching up.
const CATCH_UP_CHUNK: usize = 4096;
const RETRY_AFTER: Duration = Duration::from_millis(250);
/// A memory that nothing was routed to is sent its new position anyway
/// once it is this far behind, so that its checkpoint (and the tail a
/// restart reads again) stays short.
const ADVANCE_EVERY: Seq = 4096;
/// How long the feed waits for the memories it sent a chunk of the head to
/// before it goes on without the ones still applying.
const ROUND_WAIT: Duration = Duration::from_millis(50);
/// The records the head read last, kept to catch up the memories that fell
/// a little behind without reading the log again.
const RECENT_ENTRIES: usize = 8192;

/// A batch in flight: the agent, the position the batch brings it to, and
/// the actor's report.
type InFlight = BoxFuture<'static, (String, Seq, Result<ApplyReport, MailboxError>)>;

/// A memory actor to feed.
pub(crate) struct Join {
    pub agent: String,
    pub addr: Addr<MemoryActor>,
    /// How far the memory has applied the log; the feed moves it on for
    /// positions that held nothing for the memory, without a message.
    pub applied: Arc<watch::Sender<Seq>>,
}

/// Runs for as long as the supervisor keeps `joins` open.
pub(crate) async fn run(
    log: Arc<dyn EventLog>,
    admitted: Option<BTreeSet<String>>,
    shared: Arc<SharedContent>,
    joins: mpsc::UnboundedReceiver<Join>,
) {
    let mut feed = SwarmFeed {
        log,
        shared,
        admitted,
        members: BTreeMap::new(),
        joins,
        head: None,
        in_flight: FuturesUnordered::new(),
        recent: VecDeque::new(),
    };
    feed.follow().await;
}

struct Member {
    addr: Addr<MemoryActor>,
    applied: Arc<watch::Sender<Seq>>,
    /// Name of the durable position stored after each snapshot.
    consumer: String,
    /// Every record up to here has been applied by the memory or was not
    /// for it.
    delivered: Seq,
    /// The last position sent to the actor itself (its checkpoint).
    checkpoint_sent: Seq,
    /// Dead letters the log has not taken yet; retried with every batch.
    unfiled: Vec<DeadLetter>,
    /// A batch is in flight to it: nothing more is sent, and its position
    /// is not moved, until it answers.
    busy: bool,
}

struct SwarmFeed {
    log: Arc<dyn EventLog>,
    /// The swarm's graph of shared events is driven here, once, in log
    /// order, before anything is routed (see `SwarmGraph::drive`).
    shared: Arc<SharedContent>,
    admitted: Option<BTreeSet<String>>,
    members: BTreeMap<String, Member>,
    joins: mpsc::UnboundedReceiver<Join>,
    /// The last seq the head subscription routed; `None` before it starts.
    head: Option<Seq>,
    in_flight: FuturesUnordered<InFlight>,
    /// The last records of the head, in log order, without gaps but the
    /// log's own.
    recent: VecDeque<LogEntry>,
}

/// Which members a chunk goes to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Audience {
    /// Those at the head.
    Head,
    /// Those behind it, catching up.
    CatchingUp,
}

impl SwarmFeed {
    async fn follow(&mut self) {
        loop {
            if self.members.is_empty() {
                let Some(join) = self.joins.recv().await else { return };
                self.join(join).await;
                continue;
            }
            self.take_joins().await;
            let from = self.members.values().map(|member| member.delivered).min().unwrap_or(0) + 1;
            self.head = Some(from - 1);
            let subscription = match self.log.subscribe(from, None).await {
                Ok(subscription) => subscription,
                Err(error) => {
                    tracing::warn!(%error, "cannot follow the log; retrying");
                    tokio::time::sleep(RETRY_AFTER).await;
                    continue;
                }
            };
            let mut chunks = subscription.ready_chunks(MAX_CHUNK);
            loop {
                if self.members.is_empty() {
                    break;
                }
                if self.catching_up() {
                    self.catch_up_step().await;
                    // Between catch-up reads, take what the head has ready
                    // without waiting for more.
                    let ready = futures::FutureExt::now_or_never(chunks.next());
                    let open = match ready {
                        Some(Some(results)) => self.route_head(results).await,
                        Some(None) => false,
                        None => true,
                    };
                    if !open {
                        break;
                    }
                    self.take_joins().await;
                    continue;
                }
                tokio::select! {
                    results = chunks.next() => match results {
                        Some(results) => if !self.route_head(results).await { break },
                        None => break,
                    },
                    join = self.joins.recv() => match join {
                        Some(join) => self.join(join).await,
                        None => return,
                    },
                    Some((agent, through, report)) = self.in_flight.next(), if !self.in_flight.is_empty() => {
                        self.finish(agent, through, report).await;
                    }
                }
            }
            tokio::time::sleep(RETRY_AFTER).await;
        }
    }

    /// Routes a chunk of the head subscription; false when the subscription
    /// failed and must be opened again.
    async fn route_head(&mut self, results: Vec<Result<LogEntry, mneme_nats::LogError>>) -> bool {
        let mut entries = Vec::with_capacity(results.len());
        let mut failure = None;
        for result in results {
            match result {
                Ok(entry) => entries.push(entry),
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        if let (Some(first), Some(last)) = (entries.first(), entries.last()) {
            let through = last.seq;
            self.drive_graph_to(first.seq - 1).await;
            self.drive_graph(&entries);
            self.deliver(&entries, through, Audience::Head).await;
            self.head = Some(through);
            let newest = self.recent.back().map_or(0, |entry| entry.seq);
            self.recent.extend(entries.into_iter().filter(|entry| entry.seq > newest));
            while self.recent.len() > RECENT_ENTRIES {
                self.recent.pop_front();
            }
        }
        if let Some(error) = failure {
            tracing::warn!(%error, "log subscription failed; resubscribing");
            return false;
        }
        true
    }

    /// Drives the swarm's graph with `entries` (in log order, after what it
    /// has taken).
    fn drive_graph(&self, entries: &[LogEntry]) {
        let admitted = self.admitted.as_ref();
        for entry in entries {
            match &entry.record {
                Ok(event) => {
                    if !self.shared.drive_graph_with(entry.seq, event, admitted) {
                        tracing::error!(seq = entry.seq, id = %event.id, "extracting a shared event into the swarm graph panicked");
                    }
                }
                // Not an event: nothing for the graph, which moves past it.
                Err(_) => self.shared.graph_covers(entry.seq),
            }
        }
    }

    /// Drives the swarm's graph up to `seq` from the log, if it is behind
    /// (restored from an older snapshot than the memories', or not at all):
    /// it must take every record, in order, before any memory reads what
    /// comes after.
    async fn drive_graph_to(&self, seq: Seq) {
        loop {
            let covers = self.shared.graph().covers();
            if covers >= seq {
                return;
            }
            match self.log.read(covers + 1, None, CATCH_UP_CHUNK).await {
                Ok(entries) => {
                    let entries: Vec<LogEntry> = entries.into_iter().filter(|entry| entry.seq <= seq).collect();
                    if entries.is_empty() {
                        // Nothing more up to `seq` on the log.
                        self.shared.graph_covers(seq);
                        return;
                    }
                    self.drive_graph(&entries);
                    if entries.len() < CATCH_UP_CHUNK {
                        self.shared.graph_covers(seq);
                        return;
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, from = covers + 1, "cannot read the log to bring the swarm graph up; retrying");
                    tokio::time::sleep(RETRY_AFTER).await;
                }
            }
        }
    }

    /// Whether a member that can take a batch is behind the head.
    fn catching_up(&self) -> bool {
        let head = self.head.unwrap_or(0);
        self.members.values().any(|member| !member.busy && member.delivered < head)
    }

    /// One range read for the members behind the head, up to the head.
    async fn catch_up_step(&mut self) {
        let head = self.head.unwrap_or(0);
        let from = self
            .members
            .values()
            .filter(|member| !member.busy)
            .map(|member| member.delivered)
            .filter(|seq| *seq < head)
            .min()
            .unwrap_or(head)
            + 1;
        if self.recent.front().is_some_and(|oldest| oldest.seq <= from) {
            let entries: Vec<LogEntry> = self
                .recent
                .iter()
                .filter(|entry| entry.seq >= from && entry.seq <= head)
                .take(CATCH_UP_CHUNK)
                .cloned()
                .collect();
            let through = if entries.len() < CATCH_UP_CHUNK { head } else { entries.last().map_or(head, |e| e.seq) };
            self.drive_graph_to(through).await;
            self.deliver(&entries, through, Audience::CatchingUp).await;
            return;
        }
        match self.log.read(from, None, CATCH_UP_CHUNK).await {
            Ok(mut entries) => {
                entries.retain(|entry| entry.seq <= head);
                // Nothing more up to the head: the rest of it was not on
                // the log (deleted or never written).
                let through =
                    if entries.len() < CATCH_UP_CHUNK { head } else { entries.last().map_or(head, |e| e.seq) };
                self.drive_graph_to(through).await;
                self.deliver(&entries, through, Audience::CatchingUp).await;
            }
            Err(error) => {
                tracing::warn!(%error, from, "cannot read the log to catch a memory up; retrying");
                tokio::time::sleep(RETRY_AFTER).await;
            }
        }
    }

    async fn take_joins(&mut self) {
        while let Ok(join) = self.joins.try_recv() {
            self.join(join).await;
        }
    }

    async fn join(&mut self, join: Join) {
        let checkpoint = match join.addr.send(Ask(Status)).await {
            Ok(Ok(status)) => status.checkpoint,
            // The memory failed to answer or stopped: it does not join.
            Ok(Err(_)) | Err(_) => return,
        };
        let member = Member {
            addr: join.addr,
            applied: join.applied,
            consumer: format!("memory-{}", join.agent),
            delivered: checkpoint,
            checkpoint_sent: checkpoint,
            unfiled: Vec::new(),
            busy: false,
        };
        self.members.insert(join.agent, member);
    }

    /// Hands each member of `audience` that is not busy its part of
    /// `entries` (all at or below `through`); for the head, waits up to
    /// [`ROUND_WAIT`] for them to apply it.
    async fn deliver(&mut self, entries: &[LogEntry], through: Seq, audience: Audience) {
        let head = self.head.unwrap_or(0);
        let admitted = self.admitted.as_ref();
        let mut round = BTreeSet::new();
        for (agent, member) in &mut self.members {
            let in_audience = match audience {
                Audience::Head => member.delivered >= head,
                Audience::CatchingUp => member.delivered < head,
            };
            if member.busy || !in_audience || member.delivered >= through {
                continue;
            }
            let part: Vec<LogEntry> = entries
                .iter()
                .filter(|entry| entry.seq > member.delivered && routes_to(entry, agent, admitted))
                .cloned()
                .collect();
            if part.is_empty() && through - member.checkpoint_sent < ADVANCE_EVERY {
                // Nothing for it: it is as far as the feed, without a
                // message (no batch is in flight to it, see `busy`).
                member.delivered = through;
                member.applied.send_if_modified(|applied| {
                    let moved = *applied < through;
                    *applied = (*applied).max(through);
                    moved
                });
                continue;
            }
            member.busy = true;
            round.insert(agent.clone());
            let send = member.addr.send(ApplyBatch { entries: part, through });
            let agent = agent.clone();
            self.in_flight.push(Box::pin(async move { (agent, through, send.await) }));
        }
        // Memories catching up are behind already: the feed goes back to
        // the head and takes their answers as they come.
        let wait = if audience == Audience::Head { ROUND_WAIT } else { Duration::ZERO };
        let deadline = tokio::time::Instant::now() + wait;
        while !round.is_empty() {
            match tokio::time::timeout_at(deadline, self.in_flight.next()).await {
                Ok(Some((agent, through, report))) => {
                    round.remove(&agent);
                    self.finish(agent, through, report).await;
                }
                // The ones still applying fall behind and are caught up
                // once they answer.
                Ok(None) | Err(_) => break,
            }
        }
    }

    async fn finish(&mut self, agent: String, through: Seq, report: Result<ApplyReport, MailboxError>) {
        match report {
            Ok(report) => self.after_batch(&agent, report, through).await,
            Err(_) => {
                tracing::info!(%agent, "memory actor stopped; the feed lets it go");
                self.members.remove(&agent);
            }
        }
    }

    async fn after_batch(&mut self, agent: &str, report: ApplyReport, through: Seq) {
        let log = self.log.clone();
        let Some(member) = self.members.get_mut(agent) else { return };
        member.busy = false;
        member.unfiled.extend(report.dead_letters);
        file_dead_letters(log.as_ref(), agent, member).await;
        if let Some(seq) = report.snapshot_seq
            && let Err(error) = log.store_position(&member.consumer, seq).await
        {
            tracing::warn!(%agent, seq, %error, "cannot store the consumer position");
        }
        if report.stalled.is_some() {
            // It applied up to its checkpoint (restored after a panic, or
            // stopped at a fault): it catches up from there.
            member.delivered = report.checkpoint;
            member.checkpoint_sent = report.checkpoint;
        } else {
            member.delivered = through;
            member.checkpoint_sent = through;
        }
    }
}

/// Whether the record goes to `agent`'s memory: its own records always
/// (a bad one is its memory's to dead-letter), another agent's valid events
/// when they enter its memory.
fn routes_to(entry: &LogEntry, agent: &str, admitted: Option<&BTreeSet<String>>) -> bool {
    if entry.agent == agent {
        return true;
    }
    match &entry.record {
        Ok(event) => enters_memory_of(agent, admitted, event),
        Err(_) => false,
    }
}

async fn file_dead_letters(log: &dyn EventLog, agent: &str, member: &mut Member) {
    let mut filed = Vec::new();
    for letter in std::mem::take(&mut member.unfiled) {
        let seq = letter.seq;
        match log.dead_letter(letter.clone()).await {
            Ok(()) => filed.push(seq),
            Err(error) => {
                tracing::error!(%agent, seq, %error, "cannot file a dead letter; will retry");
                member.unfiled.push(letter);
            }
        }
    }
    if !filed.is_empty() {
        // If the actor is gone, nothing waits for the confirmation.
        let _ = member.addr.send(DeadLettersFiled(filed)).await;
    }
}
