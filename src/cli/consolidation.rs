//! `mneme consolidate`, `mneme contradictions`, `mneme resolve` and `mneme
//! purge`: the consolidation routes of a running `mneme serve`.

use std::process::ExitCode;

use mneme_api::consolidation::{
    ConsolidationAnswer, ContradictionsAnswer, PurgeAnswer, PurgeBody, ResolveBody, Resolved,
};

use crate::client::{call_as, encode, swarm_url};
use crate::print_line;

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
    let report: ConsolidationAnswer = call_as(request, Some(""))?;
    if json_output {
        print_line(serde_json::to_string_pretty(&report)?);
        return Ok(ExitCode::SUCCESS);
    }
    let written = if dry_run {
        format!("would write {} events of verdicts", report.verdict_events)
    } else {
        // The rest are the retrieval counts gathered since the last run,
        // which a dry run leaves with the memories.
        format!(
            "wrote {} events: {} of verdicts, {} of retrieval counts",
            report.events_written,
            report.verdict_events,
            report.events_written.saturating_sub(report.verdict_events)
        )
    };
    print_line(format!(
        "{}consolidation of swarm {swarm} in {} ms: {written}",
        if dry_run { "dry run: " } else { "" },
        report.elapsed_ms,
    ));
    print_line(format!(
        "shared items compared once for every agent: {} ({} near-duplicate pairs) in {} ms",
        report.shared.items, report.shared.duplicate_pairs, report.shared.scan_ms
    ));
    print_line(format!(
        "{:<16} {:>8} {:>14} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8}",
        "agent", "items", "contradictions", "merges", "forgotten", "decayed", "links", "later", "scan ms"
    ));
    for agent in &report.agents {
        let counts = &agent.plan.counts;
        print_line(format!(
            "{:<16} {:>8} {:>14} {:>7} {:>9} {:>9} {:>7} {:>6} {:>8}",
            agent.agent,
            agent.items,
            counts.contradictions,
            counts.merges,
            counts.forgotten,
            counts.decayed,
            counts.links,
            counts.deferred,
            agent.scan_ms,
        ));
        for contradiction in &agent.plan.contradictions {
            print_line(format!(
                "  contradiction {} [{}] {}",
                contradiction.contradiction_id, contradiction.rule, contradiction.reason
            ));
        }
        for merge in &agent.plan.merges {
            print_line(format!("  merge into {}: {:?}", merge.survivor, merge.merged));
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub fn contradictions(server: &str, swarm: &str, agent: Option<&str>, json_output: bool) -> anyhow::Result<ExitCode> {
    let mut url = swarm_url(server, swarm, "contradictions");
    if let Some(agent) = agent {
        url.push_str(&format!("?agent={}", encode(agent)));
    }
    let listing: ContradictionsAnswer = call_as(ureq::get(&url), None)?;
    if json_output {
        print_line(serde_json::to_string_pretty(&listing)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (status, contradictions) in [("open", &listing.open), ("resolved", &listing.resolved)] {
        for contradiction in contradictions {
            print_line(format!(
                "{status:<8} {} {} a={} b={} {}",
                contradiction.contradiction_id,
                contradiction.agent,
                contradiction.a,
                contradiction.b,
                contradiction.reason.as_deref().or(contradiction.resolution.as_deref()).unwrap_or("")
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
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = swarm_url(server, swarm, &format!("contradictions/{}/resolve", encode(contradiction_id)));
    let body = ResolveBody { resolution: resolution.to_string(), note: note.map(str::to_string) };
    let answer: Resolved = call_as(ureq::post(&url), Some(&serde_json::to_string(&body)?))?;
    if json {
        print_line(serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    let memories: Vec<&str> = std::iter::once(&answer.contradiction)
        .chain(&answer.also_resolved)
        .map(|contradiction| contradiction.agent.as_str())
        .collect();
    print_line(format!(
        "resolved {contradiction_id} ({resolution}) at seq {} in the memory of {}",
        answer.seq,
        memories.join(", ")
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
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = swarm_url(server, swarm, "purge");
    let body = PurgeBody {
        agent: agent.map(str::to_string),
        item_ids: item_ids.to_vec(),
        before: before.map(str::to_string),
        reason: reason.map(str::to_string),
    };
    let answer: PurgeAnswer = call_as(ureq::post(&url), Some(&serde_json::to_string(&body)?))?;
    if json {
        print_line(serde_json::to_string_pretty(&answer)?);
        return Ok(ExitCode::SUCCESS);
    }
    for purged in &answer.purged {
        let snapshot_seq = purged.snapshot_seq.map_or("null".to_string(), |seq| seq.to_string());
        print_line(format!(
            "purged from {}'s memory (tombstone {} at seq {}); {} purged items in that memory; snapshot rewritten at seq {snapshot_seq}",
            purged.agent, purged.event_id, purged.seq, purged.purged_items_in_memory,
        ));
    }
    for held in &answer.already_purged {
        print_line(format!("already purged from {}'s memory: {}", held.agent, held.item_id));
    }
    print_line(answer.log.as_deref().or(answer.message.as_deref()).unwrap_or(""));
    Ok(ExitCode::SUCCESS)
}
