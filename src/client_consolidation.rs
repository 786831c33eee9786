//! `mneme consolidate`, `mneme contradictions`, `mneme resolve` and `mneme
//! purge`: the consolidation routes of a running `mneme serve`.

use std::process::ExitCode;

use serde_json::{Value, json};

use crate::client::{call, encode};
use crate::print_line;

fn swarm_url(server: &str, swarm: &str, verb: &str) -> String {
    format!("{}/v1/swarms/{swarm}/{verb}", server.trim_end_matches('/'))
}

pub fn consolidate(
    server: &str,
    swarm: &str,
    agent: Option<&str>,
    dry_run: bool,
    json_output: bool,
) -> anyhow::Result<ExitCode> {
    let mut url = format!("{}?dry_run={dry_run}", swarm_url(server, swarm, "consolidate"));
    if let Some(agent) = agent {
        url.push_str(&format!("&agent={}", encode(agent)));
    }
    // A first run over a large memory can take a while.
    let request = ureq::post(&url).timeout(std::time::Duration::from_secs(600));
    let report = call(request, Some(""))?;
    if json_output {
        print_line(serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let verb = if dry_run { "would write" } else { "wrote" };
    print_line(format!(
        "{}consolidation of swarm {swarm} in {} ms: {verb} {} events",
        if dry_run { "dry run: " } else { "" },
        report["elapsed_ms"],
        if dry_run { total_verdicts(&report) } else { report["events_written"].as_u64().unwrap_or(0) }
    ));
    let shared = &report["shared"];
    print_line(format!(
        "shared items compared once for every agent: {} ({} near-duplicate pairs) in {} ms",
        shared["items"], shared["duplicate_pairs"], shared["scan_ms"]
    ));
    print_line(format!(
        "{:<16} {:>8} {:>14} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8}",
        "agent", "items", "contradictions", "merges", "forgotten", "decayed", "links", "later", "scan ms"
    ));
    for agent in report["agents"].as_array().into_iter().flatten() {
        let counts = &agent["counts"];
        print_line(format!(
            "{:<16} {:>8} {:>14} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8}",
            agent["agent"].as_str().unwrap_or(""),
            agent["items"],
            counts["contradictions"],
            counts["merges"],
            counts["forgotten"],
            counts["decayed"],
            counts["links"],
            counts["deferred"],
            agent["scan_ms"],
        ));
        for contradiction in agent["contradictions"].as_array().into_iter().flatten() {
            print_line(format!(
                "  contradiction {} [{}] {}",
                contradiction["contradiction_id"].as_str().unwrap_or(""),
                contradiction["rule"].as_str().unwrap_or(""),
                contradiction["reason"].as_str().unwrap_or("")
            ));
        }
        for merge in agent["merges"].as_array().into_iter().flatten() {
            print_line(format!("  merge into {}: {}", merge["survivor"].as_str().unwrap_or(""), merge["merged"]));
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn total_verdicts(report: &Value) -> u64 {
    report["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|agent| {
            let counts = &agent["counts"];
            ["contradictions", "merges", "forgotten", "decayed"]
                .iter()
                .map(|key| counts[*key].as_u64().unwrap_or(0))
                .sum::<u64>()
                + counts["links"].as_u64().unwrap_or(0).div_ceil(256)
        })
        .sum()
}

pub fn contradictions(server: &str, swarm: &str, agent: Option<&str>, json_output: bool) -> anyhow::Result<ExitCode> {
    let mut url = swarm_url(server, swarm, "contradictions");
    if let Some(agent) = agent {
        url.push_str(&format!("?agent={}", encode(agent)));
    }
    let listing = call(ureq::get(&url), None)?;
    if json_output {
        print_line(serde_json::to_string_pretty(&listing)?);
        return Ok(ExitCode::SUCCESS);
    }
    for status in ["open", "resolved"] {
        for contradiction in listing[status].as_array().into_iter().flatten() {
            print_line(format!(
                "{status:<8} {} {} a={} b={} {}",
                contradiction["contradiction_id"].as_str().unwrap_or(""),
                contradiction["agent"].as_str().unwrap_or(""),
                contradiction["a"].as_str().unwrap_or(""),
                contradiction["b"].as_str().unwrap_or(""),
                contradiction["reason"].as_str().or(contradiction["resolution"].as_str()).unwrap_or("")
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn resolve(
    server: &str,
    swarm: &str,
    contradiction_id: &str,
    resolution: &str,
    note: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let url = swarm_url(server, swarm, &format!("contradictions/{}/resolve", encode(contradiction_id)));
    let body = json!({"resolution": resolution, "note": note});
    let answer = call(ureq::post(&url), Some(&body.to_string()))?;
    print_line(format!(
        "resolved {contradiction_id} ({resolution}) at seq {}",
        answer["seq"].as_u64().unwrap_or_default()
    ));
    Ok(ExitCode::SUCCESS)
}

pub fn purge(
    server: &str,
    swarm: &str,
    agent: Option<&str>,
    item_ids: &[String],
    before: Option<&str>,
    reason: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let url = swarm_url(server, swarm, "purge");
    let body = json!({"agent": agent, "item_ids": item_ids, "before": before, "reason": reason});
    let answer = call(ureq::post(&url), Some(&body.to_string()))?;
    for purged in answer["purged"].as_array().into_iter().flatten() {
        print_line(format!(
            "purged from {}'s memory (tombstone {} at seq {}); {} purged items in that memory; snapshot rewritten at seq {}",
            purged["agent"].as_str().unwrap_or(""),
            purged["event_id"].as_str().unwrap_or(""),
            purged["seq"],
            purged["purged_items_in_memory"],
            purged["snapshot_seq"],
        ));
    }
    for held in answer["already_purged"].as_array().into_iter().flatten() {
        print_line(format!(
            "already purged from {}'s memory: {}",
            held["agent"].as_str().unwrap_or(""),
            held["item_id"].as_str().unwrap_or("")
        ));
    }
    let note = answer["log"].as_str().or(answer["message"].as_str()).unwrap_or("");
    print_line(note);
    Ok(ExitCode::SUCCESS)
}
