//! The log's verbs: `mneme publish`, `mneme tail` and `mneme audit`,
//! over HTTP through [`crate::client`].

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use mneme_api::log::{AcceptedEvents, EventsPage, LogEntry, SwarmProvenance};
use serde_json::Value;

use crate::client::{after, call_as, encode};

/// Events of a file as (where, raw JSON) pairs: a JSON document holding one
/// event or an array of them, or else JSON Lines.
fn events_of_file(text: &str) -> Vec<(String, String)> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(events)) => events
            .iter()
            .enumerate()
            .map(|(index, event)| (format!("array element {index}"), event.to_string()))
            .collect(),
        Ok(event) => vec![("the document".to_string(), event.to_string())],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(index, line)| (format!("line {}", index + 1), line.to_string()))
            .collect(),
    }
}
/// Publishes the events of `file` (`-`: stdin), `batch` to a request.
pub fn publish(server: &str, file: &str, batch: usize, json: bool) -> anyhow::Result<ExitCode> {
    let text = if file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading events from stdin")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
    };
    let url = format!("{}/v1/events", server.trim_end_matches('/'));
    let (mut accepted, mut duplicates, mut last_seq) = (0usize, 0usize, 0u64);
    let events = events_of_file(&text);
    let bar = crate::progress::bar(events.len() as u64, "publishing");
    let mut all_accepted = Vec::with_capacity(events.len());
    for chunk in events.chunks(batch.max(1)) {
        let body = format!("[{}]", chunk.iter().map(|(_, json)| json.as_str()).collect::<Vec<_>>().join(","));
        let response: AcceptedEvents = call_as(ureq::post(&url), Some(&body)).map_err(|error| {
            // The server names the event by its index in the batch.
            let message = error.to_string();
            let index = message.split("field [").nth(1).and_then(|rest| rest.split(']').next()?.parse::<usize>().ok());
            let place =
                index.and_then(|index| chunk.get(index)).map_or("a batch".to_string(), |(place, _)| place.clone());
            error.context(format!(
                "{file}: {place} was refused; {accepted} events before its batch were appended, none of its batch"
            ))
        })?;
        for item in response.accepted {
            accepted += 1;
            duplicates += usize::from(item.duplicate);
            last_seq = last_seq.max(item.seq);
            all_accepted.push(item);
        }
        bar.inc(chunk.len() as u64);
    }
    bar.finish_and_clear();
    if json {
        out!("{}", serde_json::to_string(&AcceptedEvents { accepted: all_accepted })?);
        return Ok(ExitCode::SUCCESS);
    }
    out!("published {accepted} events ({duplicates} already on the log); last seq {last_seq}");
    Ok(ExitCode::SUCCESS)
}
/// Prints the log as JSON lines from `from_seq`; with `follow`, waits for more.
pub fn tail(server: &str, swarm: &str, agent: Option<&str>, from_seq: u64, follow: bool) -> anyhow::Result<ExitCode> {
    let mut next_seq = from_seq;
    loop {
        let mut url =
            format!("{}/v1/swarms/{swarm}/events?from_seq={next_seq}&limit=1000", server.trim_end_matches('/'));
        if let Some(agent) = agent {
            url.push_str(&format!("&agent={}", encode(agent)));
        }
        let page: EventsPage = call_as(ureq::get(&url), None)?;
        for entry in &page.events {
            out!("{}", serde_json::to_string(entry)?);
        }
        next_seq = page.next_seq;
        if page.events.is_empty() {
            if !follow {
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}
/// How `mneme audit` prints.
#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuditFormat {
    /// One aligned line per event: seq, ts, when the log stored it, agent, kind, id, summary.
    Table,
    /// One JSON object per line: seq, ts, appended_at, agent, kind, id, and the envelope's ids.
    Jsonl,
}

/// `mneme audit <item_id>`: the events behind an item as a timeline;
/// `mneme audit --agent A --since T`: who recorded what and when.
pub fn audit(
    server: &str,
    swarm: &str,
    item_id: Option<&str>,
    agent: Option<&str>,
    since: Option<&str>,
    format: AuditFormat,
    min_seq: Option<u64>,
) -> anyhow::Result<ExitCode> {
    let since = since
        .map(|text| {
            text.parse::<mneme_events::Timestamp>().map_err(|error| anyhow::anyhow!("--since: {}", error.message))
        })
        .transpose()?;
    let entries: Vec<LogEntry> = match (item_id, agent) {
        (Some(item_id), _) => {
            let url = format!("{}/v1/swarms/{swarm}/provenance/{}", server.trim_end_matches('/'), encode(item_id));
            call_as::<SwarmProvenance>(after(ureq::get(&url), min_seq), None)?.events
        }
        (None, Some(agent)) => events_of_agent(server, swarm, agent)?,
        (None, None) => bail!("name an item id, or an agent with --agent"),
    };
    for entry in &entries {
        let line = AuditLine::of(entry)?;
        if since.is_some_and(|since| line.ts.is_some_and(|ts| ts < since)) {
            continue;
        }
        match format {
            AuditFormat::Table => out!(
                "{:>7}  {}  written {}  {:<10}  {:<22}  {}  {}",
                line.seq,
                line.ts.map(|ts| ts.to_string()).unwrap_or_default(),
                line.appended_at.map_or_else(|| "-".to_string(), |at| at.to_string()),
                line.agent,
                line.kind.as_deref().unwrap_or("(invalid record)"),
                line.id.as_deref().unwrap_or(""),
                line.summary
            ),
            AuditFormat::Jsonl => out!("{}", serde_json::to_string(&line)?),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One line of `mneme audit`: an entry of the log, said in a line.
#[derive(serde::Serialize)]
struct AuditLine {
    seq: u64,
    /// The time the event speaks of, as its publisher set it.
    ts: Option<mneme_events::Timestamp>,
    /// When the log stored it; not known for an erased event (its stub
    /// keeps `ts`) nor for records older than these times.
    #[serde(skip_serializing_if = "Option::is_none")]
    appended_at: Option<mneme_events::Timestamp>,
    agent: String,
    kind: Option<String>,
    id: Option<String>,
    scope: Option<&'static str>,
    correlation_id: Option<String>,
    causation_id: Option<String>,
    summary: String,
}

impl AuditLine {
    fn of(entry: &LogEntry) -> anyhow::Result<AuditLine> {
        Ok(match entry {
            LogEntry::Event(entry) => {
                let event = entry.decode().map_err(|error| {
                    anyhow::anyhow!("the server sent an event that does not decode: {}", error.message)
                })?;
                AuditLine {
                    seq: entry.seq,
                    ts: Some(event.ts),
                    appended_at: entry.appended_at,
                    agent: event.agent.clone(),
                    kind: Some(event.kind_name().to_string()),
                    id: Some(event.id.to_string()),
                    scope: Some(event.scope.as_str()),
                    correlation_id: event.correlation_id.clone(),
                    causation_id: event.causation_id.map(|id| id.to_string()),
                    summary: one_line(summary(&event)),
                }
            }
            LogEntry::Erased(erased) => AuditLine {
                seq: erased.seq,
                ts: Some(erased.ts),
                appended_at: None,
                agent: erased.agent.clone(),
                kind: Some(erased.kind.clone()),
                id: Some(erased.id.clone()),
                scope: Some(erased.scope.as_str()),
                correlation_id: None,
                causation_id: None,
                summary: format!(
                    "(erased by purge {})",
                    erased.erased_by.iter().map(|purge| format!("at seq {}", purge.seq)).collect::<Vec<_>>().join(", ")
                ),
            },
            LogEntry::Invalid(invalid) => AuditLine {
                seq: invalid.seq,
                ts: None,
                appended_at: invalid.appended_at,
                agent: invalid.agent.clone(),
                kind: None,
                id: None,
                scope: None,
                correlation_id: None,
                causation_id: None,
                summary: one_line(invalid.invalid.clone()),
            },
        })
    }
}

/// Every event of one agent, oldest first, paging through the log.
fn events_of_agent(server: &str, swarm: &str, agent: &str) -> anyhow::Result<Vec<LogEntry>> {
    let mut events = Vec::new();
    let mut next_seq = 1;
    loop {
        let url = format!(
            "{}/v1/swarms/{swarm}/events?from_seq={next_seq}&limit=10000&agent={}",
            server.trim_end_matches('/'),
            encode(agent)
        );
        let page: EventsPage = call_as(ureq::get(&url), None)?;
        if page.events.is_empty() {
            return Ok(events);
        }
        next_seq = page.next_seq;
        events.extend(page.events);
    }
}

/// What an event recorded, as text.
fn summary(event: &mneme_events::Event) -> String {
    use mneme_events::EventKind;
    match &event.kind {
        EventKind::MessageRecorded(message) => format!("[{}] {}", message.role, message.text),
        EventKind::ToolResultRecorded(result) => format!(
            "{} {} → exit {}",
            result.tool,
            result.args.to_value(),
            result.exit_code.map_or("null".to_string(), |code| code.to_string())
        ),
        EventKind::DecisionMade(decision) => format!("{}: {}", decision.title, decision.choice),
        EventKind::FactAsserted(fact) => format!("{} {} {}", fact.subject, fact.predicate, fact.object),
        EventKind::FactRetracted(fact) => format!("{} {} {}", fact.subject, fact.predicate, fact.object),
        EventKind::HandoffSent(handoff) => format!("to {}: {}", handoff.to, handoff.task),
        EventKind::PhaseStarted(phase) => phase.phase.clone(),
        EventKind::PhaseCompleted(phase) => phase.phase.clone(),
        EventKind::TaskUpdated(task) => {
            format!("{} {}", task.task_id, serde_json::to_value(task.status).unwrap_or_default().as_str().unwrap_or(""))
        }
        EventKind::PreferenceSet(preference) => format!("{} = {}", preference.key, preference.value),
        _ => event.to_json_value().get("data").map(ToString::to_string).unwrap_or_default(),
    }
}

/// The first line of a text, cut to 100 characters.
fn one_line(text: String) -> String {
    let line = text.lines().next().unwrap_or("").to_string();
    if line.chars().count() > 100 { format!("{}…", line.chars().take(99).collect::<String>()) } else { line }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_as_one_document_or_as_json_lines() {
        let pretty = "{\n  \"id\": 1\n}\n";
        assert_eq!(events_of_file(pretty), vec![("the document".to_string(), "{\"id\":1}".to_string())]);
        let array = "[{\"id\": 1},\n {\"id\": 2}]";
        assert_eq!(events_of_file(array).len(), 2);
        let lines = "{\"id\": 1}\n\n{\"id\": 2}\n";
        let events = events_of_file(lines);
        assert_eq!(events.iter().map(|(place, _)| place.as_str()).collect::<Vec<_>>(), ["line 1", "line 3"]);
    }
}
