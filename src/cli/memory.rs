//! The verbs of an agent's own memory: `mneme core`, `mneme note` and
//! `mneme timeline`, over HTTP with the wire types.

use std::process::ExitCode;

use mneme_api::agent_memory::{CoreMemoryAnswer, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer, Written};

use crate::client::{after, agent_url, call_as, encode};

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
