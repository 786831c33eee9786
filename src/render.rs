//! Answers as text: what `mneme`'s verbs print for a person and what an
//! MCP tool's `content` gives a model to read (its typed answer goes in
//! `structuredContent`). Short, one line per thing, and honest about what
//! no longer holds: a superseded hit or an ended fact says so.

use mneme_api::agent_memory::{CoreMemoryAnswer, TimelineAnswer, Written};
use mneme_api::handoffs::HandoffDelivery;
use mneme_api::log::ProvenanceRef;
use mneme_api::memory::{GraphAnswer, ItemAnswer, SearchAnswer};

/// A hit's or item's text, cut for a listing.
const LISTED_CHARACTERS: usize = 300;

pub fn seqs_of(provenance: &[ProvenanceRef]) -> String {
    provenance.iter().map(|reference| reference.seq.to_string()).collect::<Vec<_>>().join(",")
}

/// The first `limit` characters of `text` on one line, with `…` if cut.
pub fn cut(text: &str, limit: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() > limit { format!("{}…", line.chars().take(limit - 1).collect::<String>()) } else { line }
}

/// ` [superseded by ID]` for what a later event superseded (a newer
/// decision, a retraction, the winner of a contradiction), else nothing.
pub fn superseded_mark(superseded_by: Option<&str>) -> String {
    superseded_by.map(|by| format!("  [superseded by {by}]")).unwrap_or_default()
}

/// Search hits, best first: rank, score, id, kind, seqs, then the text's
/// first line; with `explain`, each retriever's rank and score.
pub fn search_hits(answer: &SearchAnswer, explain: bool) -> String {
    let mut lines = Vec::with_capacity(answer.hits.len() * 2);
    for (rank, hit) in answer.hits.iter().enumerate() {
        lines.push(format!(
            "{:>2}. {:>7.4}  {}  {}  seq {}{}",
            rank + 1,
            hit.score,
            hit.item_id,
            hit.kind,
            seqs_of(&hit.provenance),
            superseded_mark(hit.superseded_by.as_deref())
        ));
        lines.push(format!("    {}", hit.text.lines().next().unwrap_or("")));
        if explain {
            let ranks: Vec<String> = hit
                .explain
                .iter()
                .flatten()
                .map(|(retriever, rank)| format!("{retriever} #{} ({:.3})", rank.rank, rank.score))
                .collect();
            lines.push(format!("    {}", ranks.join(", ")));
        }
    }
    lines.join("\n")
}

/// Search hits for a model: one entry per hit, its text cut to a few
/// hundred characters, with the ids a later call needs.
pub fn search_for_model(answer: &SearchAnswer) -> String {
    if answer.hits.is_empty() {
        return format!("No memory of {} matches.", answer.agent);
    }
    let mut lines = vec![format!("{} hits ({} search), best first:", answer.hits.len(), answer.mode)];
    for (rank, hit) in answer.hits.iter().enumerate() {
        lines.push(format!(
            "{}. [{}] {}  (item {}, {} by {}, seq {}){}",
            rank + 1,
            hit.kind,
            cut(&hit.text, LISTED_CHARACTERS),
            hit.item_id,
            hit.ts,
            hit.agent,
            seqs_of(&hit.provenance),
            superseded_mark(hit.superseded_by.as_deref())
        ));
    }
    lines.join("\n")
}

/// An item whole, with what became of it.
pub fn item(item: &ItemAnswer) -> String {
    let pinned = if item.pinned { ", pinned" } else { "" };
    format!(
        "item {} ({}, {}{pinned}), {} by {} in scope {}, seq {}{}\n{}",
        item.item_id,
        item.kind,
        item.state,
        item.ts,
        item.agent,
        item.scope,
        seqs_of(&item.provenance),
        superseded_mark(item.superseded_by.as_deref()),
        item.text
    )
}

/// A write: the event, its seq, and the item it made or changed.
pub fn written(what: &str, written: &Written) -> String {
    let item = written.item_id.as_deref().map(|item| format!(", item {item}")).unwrap_or_default();
    let duplicate = if written.duplicate { " (it was already on the log)" } else { "" };
    format!("{what}: event {} at seq {}{item}{duplicate}.", written.event_id, written.seq)
}

/// The fact graph around an entity: one line per fact, with its validity.
pub fn graph(answer: &GraphAnswer) -> String {
    let time = |ts: Option<mneme_events::Timestamp>, none: &str| ts.map_or(none.to_string(), |ts| ts.to_string());
    let mut lines = vec![answer.center.clone()];
    for edge in &answer.edges {
        let ended = if edge.valid_to.is_some() { "  [no longer valid]" } else { "" };
        lines.push(format!(
            "  {} -[{}]-> {}   valid {} .. {}   seq {}{ended}",
            edge.from,
            edge.relation,
            edge.to,
            time(edge.valid_from, "?"),
            time(edge.valid_to, "now"),
            seqs_of(&edge.provenance)
        ));
    }
    lines.join("\n")
}

/// Core memory: role, task, pending handoffs, constraints, blocks.
pub fn core(core: &CoreMemoryAnswer) -> String {
    let role = core.role.as_deref().map(|role| format!(", {role}")).unwrap_or_default();
    let mut lines = vec![format!("core memory of {}{role}, as of seq {}", core.agent, core.as_of_seq)];
    if let Some(task) = &core.task {
        lines.push(format!("task: {} ({}, id {})", task.title, task.status, task.task_id));
    }
    for handoff in &core.pending_handoffs {
        let task = handoff.package.as_ref().map_or("(no package)", |package| package.task.as_str());
        lines.push(format!("pending handoff {} from {}: {task}", handoff.handoff_id, handoff.from));
    }
    for constraint in &core.constraints {
        lines.push(format!("constraint ({}): {}", constraint.source, constraint.text));
    }
    for block in &core.blocks {
        let cut = if block.truncated { ", cut to the limit" } else { "" };
        lines.push(format!("[{}] ({} tokens{cut}) {}", block.name, block.tokens, block.content));
    }
    lines.join("\n")
}

/// One handoff: id, status, sender, task and summary, bundle size.
pub fn handoff_line(handoff: &HandoffDelivery) -> String {
    let package = handoff.package.as_ref();
    format!(
        "{}  {:<12}  from {:<12}  {}: {}  ({} bundle items, {} files)",
        handoff.handoff_id,
        handoff.status,
        handoff.from,
        package.map_or("?", |package| package.task.as_str()),
        package.map_or("", |package| package.summary.as_str()),
        package.map_or(0, |package| package.bundle.items.len()),
        package.map_or(0, |package| package.bundle.files.len()),
    )
}

/// A timeline page: one line per event, then where the next page starts.
pub fn timeline(timeline: &TimelineAnswer) -> String {
    let mut lines: Vec<String> = timeline
        .entries
        .iter()
        .map(|entry| format!("{:>6} {} {:<10} {}", entry.seq, entry.ts, entry.agent, entry.text.replace('\n', " ")))
        .collect();
    if timeline.more {
        lines.push(format!("… more from since_seq {}", timeline.next_seq - 1));
    }
    lines.join("\n")
}
