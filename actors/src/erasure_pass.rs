//! Carrying purges into the log's storage (issue 35): what the eraser
//! recorded a purge erased leaves the log itself, not only the memories.
//!
//! The pass runs when no memory is running — at the start of `mneme serve`
//! (and of `mneme mcp`), or as `mneme erase` on a stopped data dir — so
//! that every memory is then rebuilt from the erased log and never holds
//! what was erased: a memory that applied an event cannot unsee it (its
//! ids, its consolidation), so the running memories are not patched, they
//! are rebuilt. In order:
//!
//! 1. Records that quote an erased event (a delivered handoff's package, a
//!    contradiction's or a link's reason, a phase's model summary) are
//!    rewritten in place as [`Erasures::show`] shows them, quotes taken out
//!    (`EventLog::replace`): the memory rebuilt from them keeps the rest.
//! 2. The erased records are deleted (`EventLog::erase`).
//! 3. On NATS, the handoff packages of erased handoffs, and packages that
//!    quoted what was erased, are deleted from the handoffs stream.
//! 4. The number of purges carried is stored as position
//!    [`APPLIED_POSITION`]: a purge recorded later makes the next start
//!    carry again.
//!
//! Every step is idempotent, so a pass cut short is simply run again. The
//! caller removes what was built from the unerased log (snapshots, the text
//! index) and, on the embedded log, compacts it so the bytes leave sled's
//! files.

use mneme_events::{Erasures, EventId, EventKind, Shown};
use mneme_nats::{Broker, EventLog, Seq};

use crate::error::ActorsError;

/// The durable position counting the purges already carried into the log.
pub const APPLIED_POSITION: &str = "erasures-carried";

/// Records read per page while looking for records that quote erased ones.
const PAGE: usize = 1_000;
/// Records rewritten per call.
const REWRITE_CHUNK: usize = 256;

/// What one pass did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct CarriedErasures {
    /// Purges recorded, all now carried.
    pub purges: usize,
    /// Records deleted by this pass (not counting those gone before).
    pub erased: usize,
    /// Records rewritten without their quotes of erased events.
    pub rewritten: usize,
    /// Handoff packages deleted from the handoffs stream.
    pub handoff_packages: usize,
}

/// Whether purges were recorded that the log's storage has not had
/// carried into it yet.
pub async fn erasures_pending(log: &dyn EventLog) -> Result<bool, ActorsError> {
    let recorded = log.erasures().await?.len() as Seq;
    let carried = log.load_position(APPLIED_POSITION).await?.unwrap_or(0);
    Ok(recorded > carried)
}

/// Carries every recorded purge into the log's storage (see the module
/// docs). No memory may be running on `log`.
pub async fn carry_erasures(log: &dyn EventLog, broker: Option<&dyn Broker>) -> Result<CarriedErasures, ActorsError> {
    let records = log.erasures().await?;
    let erasures = Erasures::of(&records);
    let mut carried = CarriedErasures { purges: records.len(), ..CarriedErasures::default() };
    let mut erased_seqs: Vec<Seq> = Vec::new();
    let mut handoffs: Vec<EventId> = Vec::new();
    for record in &records {
        for event in &record.events {
            erased_seqs.push(event.seq);
            if event.kind == "handoff_sent" {
                handoffs.push(event.id);
            }
        }
    }
    erased_seqs.sort_unstable();
    erased_seqs.dedup();

    // 1. Rewrite what quotes an erased event, before anything is deleted.
    let mut rewrites: Vec<(Seq, mneme_events::Event)> = Vec::new();
    let mut from = 1;
    loop {
        let page = log.read(from, None, PAGE).await?;
        let Some(last) = page.last() else { break };
        from = last.seq + 1;
        for entry in &page {
            let Ok(event) = &entry.record else { continue };
            if let Shown::Redacted(redacted) = erasures.show(entry.seq, event)
                && *redacted != *event
            {
                if let EventKind::HandoffReceived(received) = &event.kind {
                    handoffs.push(received.handoff_id);
                }
                rewrites.push((entry.seq, *redacted));
            }
        }
        if page.len() < PAGE {
            break;
        }
    }
    for chunk in rewrites.chunks(REWRITE_CHUNK) {
        carried.rewritten += log.replace(chunk).await?;
    }

    // 2. Delete the erased records.
    carried.erased = log.erase(&erased_seqs).await?;

    // 3. The handoffs stream.
    if let Some(broker) = broker {
        handoffs.sort_unstable();
        handoffs.dedup();
        carried.handoff_packages = broker.erase_handoffs(&handoffs).await?;
    }

    // 4. Done.
    log.store_position(APPLIED_POSITION, records.len() as Seq).await?;
    Ok(carried)
}
