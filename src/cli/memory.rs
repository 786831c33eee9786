//! The verbs of an agent's memory: `mneme search`, `graph`, `context`,
//! `phase`, `replay`, `handoffs`, `core`, `note` and `timeline`, over HTTP
//! through [`crate::client`].

use std::process::ExitCode;

use anyhow::{Context, bail};
use mneme_api::agent_memory::{CoreMemoryAnswer, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer, Written};
use mneme_api::context::{ContextAnswer, PhaseAnswer, PhaseHeading, PhasesAnswer};
use mneme_api::handoffs::{AcknowledgeBody, Acknowledged, HandoffDelivery, HandoffsAnswer};
use mneme_api::memory::{GraphAnswer, ReplayAnswer, SearchAnswer};
use mneme_api::params::{ContextBody, SignalsBody};

use crate::client::{after, agent_url, call_as, encode, query_string};

/// How a read verb reads: after which seq, and printed as JSON or text.
#[derive(Debug, Clone, Copy)]
pub struct ReadAs {
    pub min_seq: Option<u64>,
    pub json: bool,
}
/// Prints the hits of a search (`parameters` are its query string).
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
/// Prints the fact graph around an entity.
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
/// Prints the context assembled for `query` within `budget` tokens.
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
/// Lists the agent's phases, or prints one at a level of compression.
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
/// Rebuilds the agent's memory from the log on the server and compares
/// digests; with `verify`, a mismatch is a failure.
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
/// Prints core memory, or with `block` replaces that block first.
pub fn core(
    server: &str,
    swarm: &str,
    agent: &str,
    update: Option<(String, String)>,
    min_seq: Option<u64>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = agent_url(server, swarm, agent, "core");
    let core = match update {
        Some((block, content)) => {
            let body = serde_json::to_string(&CoreUpdateBody { block, content })?;
            let updated: CoreUpdated = call_as(ureq::post(&url), Some(&body))?;
            if !json {
                out!("block written at seq {}", updated.written.seq);
            }
            updated.core
        }
        None => call_as::<CoreMemoryAnswer>(after(ureq::get(&url), min_seq), None)?,
    };
    if json {
        out!("{}", serde_json::to_string(&core)?);
        return Ok(ExitCode::SUCCESS);
    }
    out!("{}", crate::render::core(&core));
    Ok(ExitCode::SUCCESS)
}

/// Writes a note; prints its item id once it is applied.
pub fn note(server: &str, swarm: &str, agent: &str, note: NoteBody, json: bool) -> anyhow::Result<ExitCode> {
    let body = serde_json::to_string(&note)?;
    let written: Written = call_as(ureq::post(&agent_url(server, swarm, agent, "notes")), Some(&body))?;
    if json {
        out!("{}", serde_json::to_string(&written)?);
    } else {
        out!("note {} written at seq {}", written.event_id, written.seq);
    }
    Ok(ExitCode::SUCCESS)
}

/// Prints what the swarm did after `since_seq`, as the agent sees it.
pub fn timeline(
    server: &str,
    swarm: &str,
    agent: &str,
    since_seq: Option<u64>,
    since: Option<&str>,
    limit: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut url = format!("{}?limit={limit}", agent_url(server, swarm, agent, "timeline"));
    if let Some(since_seq) = since_seq {
        url.push_str(&format!("&since_seq={since_seq}"));
    }
    if let Some(since) = since {
        url.push_str(&format!("&since={}", encode(since)));
    }
    let timeline: TimelineAnswer = call_as(ureq::get(&url), None)?;
    if json {
        out!("{}", serde_json::to_string(&timeline)?);
        return Ok(ExitCode::SUCCESS);
    }
    if !timeline.entries.is_empty() || timeline.more {
        out!("{}", crate::render::timeline(&timeline));
    }
    Ok(ExitCode::SUCCESS)
}
