//! Command-line verbs that talk to a running `mneme serve` over HTTP,
//! through [`crate::client`].

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use mneme_api::context::{ContextAnswer, PhaseAnswer, PhaseHeading, PhasesAnswer};
use mneme_api::handoffs::{AcknowledgeBody, Acknowledged, HandoffDelivery, HandoffsAnswer};
use mneme_api::log::{AcceptedEvents, EventsPage, LogEntry, SwarmProvenance};
use mneme_api::memory::{GraphAnswer, ReplayAnswer, SearchAnswer};
use mneme_api::params::{ContextBody, SignalsBody};
use serde_json::Value;

use crate::client::{after, agent_url, call_as, encode, query_string};

/// How a read verb reads: after which seq, and printed as JSON or text.
#[derive(Debug, Clone, Copy)]
pub struct ReadAs {
    pub min_seq: Option<u64>,
    pub json: bool,
}

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

pub fn search(
    server: &str,
    swarm: &str,
    agent: &str,
    parameters: &[(&str, String)],
    explain: bool,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = format!("{}?{}", agent_url(server, swarm, agent, "search"), query_string(parameters));
    let response: SearchAnswer = call_as(ureq::get(&url), None)?;
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !response.hits.is_empty() {
        out!("{}", crate::render::search_hits(&response, explain));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn graph(
    server: &str,
    swarm: &str,
    agent: &str,
    parameters: &[(&str, String)],
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = format!("{}?{}", agent_url(server, swarm, agent, "graph"), query_string(parameters));
    let response: GraphAnswer = call_as(ureq::get(&url), None)?;
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", crate::render::graph(&response));
    Ok(ExitCode::SUCCESS)
}

/// What an agent tells about its situation, for `mneme context`.
#[derive(clap::Args, Debug, Default)]
pub struct SignalArgs {
    /// The file the agent has open.
    #[arg(long = "file")]
    pub current_file: Option<String>,
    /// An error the agent just saw; repeat for several.
    #[arg(long = "error")]
    pub recent_errors: Vec<String>,
    /// coding, debugging, reviewing, planning...
    #[arg(long)]
    pub activity: Option<String>,
    /// The current phase, by id or name.
    #[arg(long)]
    pub phase: Option<String>,
    /// 0..1: conservative below 1/3, expansive from 2/3.
    #[arg(long = "thinking")]
    pub thinking_budget: Option<f32>,
}

pub fn context(
    server: &str,
    swarm: &str,
    agent: &str,
    query: &str,
    budget: usize,
    signals: &SignalArgs,
    read: ReadAs,
) -> anyhow::Result<ExitCode> {
    let ReadAs { min_seq, json } = read;
    let url = agent_url(server, swarm, agent, "context");
    let body = ContextBody {
        query: query.to_string(),
        budget: Some(budget),
        signals: SignalsBody {
            current_file: signals.current_file.clone(),
            recent_errors: signals.recent_errors.clone(),
            activity: signals.activity.clone(),
            phase: signals.phase.clone(),
            thinking_budget: signals.thinking_budget,
        },
        min_seq,
        min_system_seq: None,
    };
    let response: ContextAnswer = call_as(ureq::post(&url), Some(&serde_json::to_string(&body)?))?;
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
    } else {
        print!("{}", response.text);
        eprintln!("({} of {} tokens, {} policy)", response.tokens, response.budget, response.policy);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn phase(
    server: &str,
    swarm: &str,
    agent: &str,
    phase_id: Option<&str>,
    level: &str,
    min_seq: Option<u64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let Some(phase_id) = phase_id else {
        let response: PhasesAnswer =
            call_as(after(ureq::get(&agent_url(server, swarm, agent, "phases")), min_seq), None)?;
        if json {
            out!("{}", serde_json::to_string_pretty(&response)?);
            return Ok(ExitCode::SUCCESS);
        }
        let line = |phase: &PhaseHeading| {
            format!(
                "{}  {:<9}  {:<8}  seq {}–{}  {}",
                phase.phase_id,
                phase.status,
                phase.boundary,
                phase.started_seq,
                phase.completed_seq.map_or("…".to_string(), |seq| seq.to_string()),
                phase.index.as_deref().unwrap_or(&phase.name),
            )
        };
        for phase in &response.phases {
            out!("{}", line(phase));
        }
        if !response.shared_phases.is_empty() {
            out!("\nother agents' shared phases:");
            for phase in &response.shared_phases {
                out!("{}  (of {})", line(phase), phase.agent);
            }
        }
        if !response.session_summary.is_empty() {
            out!("\n{}", response.session_summary);
        }
        return Ok(ExitCode::SUCCESS);
    };
    let url = format!("{}/{}?level={}", agent_url(server, swarm, agent, "phases"), encode(phase_id), encode(level));
    let response: PhaseAnswer = call_as(after(ureq::get(&url), min_seq), None)?;
    match &response.text {
        Some(text) if !json => {
            out!("{}", text.text);
            let bound = text.bound.map_or("null".to_string(), |bound| bound.to_string());
            eprintln!("({} tokens, at most {bound})", text.tokens);
        }
        _ => out!("{}", serde_json::to_string_pretty(&response)?),
    }
    Ok(ExitCode::SUCCESS)
}

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

pub fn replay(
    server: &str,
    swarm: &str,
    agent: &str,
    verify: bool,
    min_seq: Option<u64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = format!("{}?verify={verify}", agent_url(server, swarm, agent, "replay"));
    let spinner = crate::progress::spinner(&format!("rebuilding {agent}'s memory from the log on the server"));
    let response: ReplayAnswer = call_as(after(ureq::post(&url), min_seq), Some("{}"))?;
    spinner.finish_and_clear();
    let matches = response.matches == Some(true);
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
        return Ok(if verify && !matches { ExitCode::FAILURE } else { ExitCode::SUCCESS });
    }
    out!("agent {agent}: replayed {} entries to seq {}", response.entries_read, response.seq);
    out!("  replayed digest {}", response.digest);
    let live_seq = response.live_seq.map_or_else(|| "null".to_string(), |seq| seq.to_string());
    out!("  live digest     {} (seq {live_seq})", response.live_digest.as_deref().unwrap_or(""));
    out!("  {}", if matches { "MATCH" } else { "MISMATCH" });
    Ok(if verify && !matches { ExitCode::FAILURE } else { ExitCode::SUCCESS })
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

/// `mneme handoffs`: the handoffs an agent received, pending first; with
/// `follow`, the pending ones and then each new one as it is delivered, one
/// JSON line each; with `acknowledge`, acknowledges that one.
pub fn handoffs(
    server: &str,
    swarm: &str,
    agent: &str,
    follow: bool,
    acknowledge: Option<&str>,
    note: Option<&str>,
    read: ReadAs,
) -> anyhow::Result<ExitCode> {
    let ReadAs { min_seq, json } = read;
    if let Some(handoff_id) = acknowledge {
        let url = format!("{}/{}/ack", agent_url(server, swarm, agent, "handoffs"), encode(handoff_id));
        let body = serde_json::to_string(&AcknowledgeBody { note: note.map(str::to_string) })?;
        let response: Acknowledged = call_as(ureq::post(&url), Some(&body))?;
        out!("acknowledged {handoff_id} at seq {}", response.seq);
        return Ok(ExitCode::SUCCESS);
    }
    if !follow {
        let request = after(ureq::get(&agent_url(server, swarm, agent, "handoffs")), min_seq);
        let response: HandoffsAnswer = call_as(request, None)?;
        if json {
            out!("{}", serde_json::to_string(&response)?);
        } else if response.handoffs.is_empty() {
            eprintln!("{agent} has received no handoff");
        }
        if !json {
            for handoff in &response.handoffs {
                out!("{}", crate::render::handoff_line(handoff));
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    let mut url = format!("{}?follow=true", agent_url(server, swarm, agent, "handoffs"));
    if let Some(seq) = min_seq {
        url.push_str(&format!("&min_seq={seq}"));
    }
    for data in crate::client::event_stream(&url)? {
        let data = data.with_context(|| format!("reading the handoff stream of {url}"))?;
        if json {
            out!("{data}");
        } else {
            let handoff: HandoffDelivery =
                serde_json::from_str(&data).with_context(|| format!("a handoff from {url}"))?;
            out!("{}", crate::render::handoff_line(&handoff));
        }
    }
    bail!("the handoff stream of {url} ended; is `mneme serve` still running?")
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
