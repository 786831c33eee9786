//! Consolidation: run it (or a dry run), list and resolve contradictions,
//! purge memories. Every change goes to the log as an event first; the
//! answer comes once the agent's memory has applied it.

use mneme_actors::queries::{Contradictions, Items, PurgeableItems};
use mneme_actors::{AgentHandle, ConsolidationReport, ConsolidationRequest, ListAgents, TakeSnapshot};
use mneme_api::consolidation::{
    AgentConsolidation, AlreadyPurged, ConsolidationAnswer, Contradiction, ContradictionVerdict, ContradictionsAnswer,
    Decayed, Forgotten, Link, MergeVerdict, Plan, PurgeAnswer, PurgeBody, Purged, ResolveBody, Resolved, SharedScan,
    VerdictCounts,
};
use mneme_api::params::{ConsolidateParams, ContradictionParams, quote};
use mneme_events::{ContradictionResolution, ContradictionResolved, Event, EventKind, MemoryPurged, Timestamp};
use mneme_projections::consolidation::ConsolidationPlan;
use mneme_projections::{OpenContradiction, Purgeable, ResolvedContradiction};

use super::error::stopped;
use super::log::provenance_refs;
use super::{ApiError, Service, SwarmRuntime, ask};

impl Service {
    /// Runs consolidation now (or a dry run that writes nothing), over every
    /// memory or one; its verdicts go to the log as events.
    pub async fn consolidate(&self, swarm: &str, params: &ConsolidateParams) -> Result<ConsolidationAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        if let Some(agent) = &params.agent {
            self.agent_handle(swarm, agent, None).await?;
        }
        let request = ConsolidationRequest { dry_run: params.dry_run, agent: params.agent.clone() };
        let report = runtime.consolidator.send(request).await.map_err(|_| stopped("consolidator"))??;
        Ok(wire_report(&report))
    }

    /// The agents to look in: the one named, or every running one.
    async fn agents_of(&self, swarm: &str, agent: Option<&str>) -> Result<Vec<String>, ApiError> {
        match agent {
            Some(agent) => {
                self.agent_handle(swarm, agent, None).await?;
                Ok(vec![agent.to_string()])
            }
            None => {
                let runtime = self.swarm(swarm)?;
                Ok(runtime.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?)
            }
        }
    }

    /// Contradictions, open ones first, of every memory or one.
    pub async fn contradictions(
        &self,
        swarm: &str,
        params: &ContradictionParams,
    ) -> Result<ContradictionsAnswer, ApiError> {
        self.swarm(swarm)?;
        let mut open = Vec::new();
        let mut resolved = Vec::new();
        for agent in self.agents_of(swarm, params.agent.as_deref()).await? {
            let handle = self.agent_handle(swarm, &agent, None).await?;
            let listing = ask(&handle, Contradictions).await?;
            open.extend(listing.open.iter().map(|item| wire_open(&agent, item)));
            resolved.extend(listing.resolved.iter().map(|item| wire_resolved(&agent, item)));
        }
        Ok(ContradictionsAnswer { open, resolved })
    }

    /// Resolves a contradiction (`a_wins`, `b_wins`, `both_valid` or
    /// `merged`, with a note) in every memory that holds it open: the same
    /// contradiction between shared items is found in each memory that sees
    /// them, and a person settling it settles it for the swarm. Appends one
    /// `contradiction_resolved` per such memory, to its agent's log, in one
    /// batch, and answers once each memory applied its own (validity
    /// closed): the first memory's in full, the others' in `also_resolved`.
    pub async fn resolve(&self, swarm: &str, contradiction_id: &str, body: ResolveBody) -> Result<Resolved, ApiError> {
        let runtime = self.swarm(swarm)?;
        let resolution = parse_resolution(&body.resolution)?;
        let (open_in, already) = self.where_open(swarm, contradiction_id).await?;
        check_resolvable(swarm, contradiction_id, resolution, !open_in.is_empty(), already)?;
        let note = body.note.filter(|note| !note.trim().is_empty());
        let events: Vec<Event> = open_in
            .iter()
            .map(|handle| {
                let kind = EventKind::ContradictionResolved(ContradictionResolved {
                    contradiction_id: contradiction_id.to_string(),
                    resolution,
                    note: note.clone(),
                });
                Event::new(swarm, &handle.agent, kind).with_ts(self.clock.now())
            })
            .collect();
        for event in &events {
            event.validate().map_err(ApiError::from_validation)?;
        }
        let appended = runtime.log.append(&events).await?;
        // Each memory applies its own resolution; wait for all at once.
        let applied =
            futures::future::join_all(open_in.iter().zip(&events).zip(&appended).map(|((handle, event), appended)| {
                self.resolution_applied(&runtime, handle, contradiction_id, event.id.to_string(), appended.seq)
            }))
            .await;
        first_with_the_others(applied)
    }

    /// The memories that hold the contradiction open, and the first that
    /// holds it resolved already (with its agent), if any.
    async fn where_open(
        &self,
        swarm: &str,
        contradiction_id: &str,
    ) -> Result<(Vec<AgentHandle>, Option<(String, ResolvedContradiction)>), ApiError> {
        let mut open_in = Vec::new();
        let mut already = None;
        for agent in self.agents_of(swarm, None).await? {
            let handle = self.agent_handle(swarm, &agent, None).await?;
            let listing = ask(&handle, Contradictions).await?;
            if listing.open.iter().any(|open| open.contradiction_id == contradiction_id) {
                open_in.push(handle);
            } else if already.is_none() {
                already = listing
                    .resolved
                    .into_iter()
                    .find(|resolved| resolved.contradiction_id == contradiction_id)
                    .map(|resolved| (agent.clone(), resolved));
            }
        }
        Ok((open_in, already))
    }

    /// The memory's record of the resolution it applied at `seq`.
    async fn resolution_applied(
        &self,
        runtime: &SwarmRuntime,
        handle: &AgentHandle,
        contradiction_id: &str,
        event_id: String,
        seq: u64,
    ) -> Result<Resolved, ApiError> {
        handle.caught_up(runtime.log.as_ref(), seq, APPLY_TIMEOUT).await?;
        let listing = ask(handle, Contradictions).await?;
        let resolved = listing.resolved.into_iter().find(|resolved| resolved.contradiction_id == contradiction_id);
        match resolved {
            Some(resolved) if resolved.provenance.seq == seq => Ok(Resolved {
                event_id,
                seq,
                contradiction: wire_resolved(&handle.agent, &resolved),
                also_resolved: Vec::new(),
            }),
            // Another resolution of the same contradiction was applied first:
            // ours is on the log but changed nothing.
            Some(resolved) => Err(ApiError::conflict(
                "already_resolved",
                Some("contradiction_id"),
                format!(
                    "contradiction {contradiction_id:?} was resolved ({}) at seq {} before this resolution (seq {seq}) \
                     was applied; this one changed nothing",
                    resolution_name(resolved.resolution),
                    resolved.provenance.seq
                ),
            )),
            None => Err(ApiError::internal(
                "not_applied",
                Some("contradiction_id"),
                format!(
                    "the resolution at seq {seq} was applied but contradiction {contradiction_id:?} is not resolved"
                ),
            )),
        }
    }

    /// Erases memories' content from projections and snapshots, and records
    /// a `memory_purged` tombstone on the log. The events themselves stay in
    /// the log (see docs/src/erasure.md).
    pub async fn purge(&self, swarm: &str, body: PurgeBody) -> Result<PurgeAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        let before = purged_before(&body)?;
        let (targets, already_purged) = self.purge_targets(swarm, &body, before).await?;
        if targets.is_empty() {
            return nothing_to_purge(swarm, &body, already_purged);
        }
        // Every tombstone is checked before any is appended: a bad request
        // appends nothing.
        let mut tombstones = Vec::new();
        for (agent, item_ids) in targets {
            let event = Event::new(
                swarm,
                &agent,
                EventKind::MemoryPurged(MemoryPurged {
                    item_ids: item_ids.clone(),
                    before,
                    of_agent: before.and(body.agent.clone()),
                    reason: body.reason.clone(),
                }),
            )
            .with_ts(self.clock.now());
            event.validate().map_err(ApiError::from_validation)?;
            tombstones.push(Tombstone { agent, item_ids, event });
        }
        let mut results = Vec::new();
        for tombstone in tombstones {
            results.push(self.tombstone_applied(&runtime, swarm, tombstone, body.before.clone()).await?);
        }
        Ok(PurgeAnswer { purged: results, already_purged, message: None, log: Some(PURGED_FROM_THE_LOG.to_string()) })
    }

    /// Which memories a purge erases items from, each with the items it
    /// holds, and the items memories hold that an earlier purge erased.
    /// The agent's items before a time are in every memory that may see
    /// them (its shared ones in all), so a purge by time goes to every
    /// memory, for that agent's items only.
    async fn purge_targets(
        &self,
        swarm: &str,
        body: &PurgeBody,
        before: Option<Timestamp>,
    ) -> Result<(Vec<(String, Vec<String>)>, Vec<AlreadyPurged>), ApiError> {
        let memories = match before {
            Some(_) => {
                self.agents_of(swarm, body.agent.as_deref()).await?;
                self.agents_of(swarm, None).await?
            }
            None => self.agents_of(swarm, body.agent.as_deref()).await?,
        };
        let mut targets: Vec<(String, Vec<String>)> = Vec::new();
        // Items a memory holds that an earlier purge erased already: a second
        // tombstone would change nothing and cost a snapshot rewrite.
        let mut already_purged: Vec<AlreadyPurged> = Vec::new();
        for agent in memories {
            let handle = self.agent_handle(swarm, &agent, None).await?;
            let mut held = Vec::new();
            let item_ids_apply = body.agent.as_deref().is_none_or(|named| named == agent);
            let named: Vec<String> = body.item_ids.iter().filter(|_| item_ids_apply).cloned().collect();
            let found = ask(&handle, PurgeableItems(named.clone())).await?;
            for (item_id, found) in named.into_iter().zip(found) {
                match found {
                    Some(Purgeable::Erased) => already_purged.push(AlreadyPurged { agent: agent.clone(), item_id }),
                    Some(Purgeable::Held) => held.push(item_id),
                    None => {}
                }
            }
            if !held.is_empty() || before.is_some() {
                targets.push((agent, held));
            }
        }
        Ok((targets, already_purged))
    }

    /// Appends one tombstone and answers once it took effect: the agent's
    /// memory applied it, the eraser recorded what it erased, and the
    /// memory's snapshot is written again.
    async fn tombstone_applied(
        &self,
        runtime: &SwarmRuntime,
        swarm: &str,
        tombstone: Tombstone,
        before: Option<String>,
    ) -> Result<Purged, ApiError> {
        let Tombstone { agent, item_ids, event } = tombstone;
        let appended = runtime.log.append(std::slice::from_ref(&event)).await?;
        let seq = appended[0].seq;
        let handle = self.agent_handle(swarm, &agent, None).await?;
        handle.caught_up(runtime.log.as_ref(), seq, APPLY_TIMEOUT).await?;
        // Every path that reads the raw log shows the erased events as
        // erased once the eraser has recorded them (and erased what was
        // derived from them): the answer waits for that.
        runtime.erasures.wait_through(seq, APPLY_TIMEOUT).await?;
        // The snapshot on disk still holds the text until the next one is
        // written: write it now.
        let snapshot_seq = handle.addr.send(TakeSnapshot).await.map_err(|_| stopped(&agent))??;
        let listing = ask(&handle, Items::default()).await?;
        let purged = listing.counts.states.get("purged").copied().unwrap_or(0);
        let snapshot = match snapshot_seq {
            Some(_) => "rewritten without the purged content",
            None => {
                "not rewritten yet: dead letters of this agent wait to be filed; the previous snapshot \
                 still holds the purged content until the next one is written"
            }
        };
        Ok(Purged {
            agent,
            event_id: event.id.to_string(),
            seq,
            item_ids,
            before,
            purged_items_in_memory: purged,
            snapshot_seq,
            snapshot: snapshot.to_string(),
        })
    }
}

/// A `memory_purged` event checked and ready to append, for one memory.
struct Tombstone {
    agent: String,
    item_ids: Vec<String>,
    event: Event,
}

/// What a purge's answer says of the log's storage.
const PURGED_FROM_THE_LOG: &str = "every path that reads the log shows the erased events as erased (their ids, kinds, \
     agents and times, never their payloads); the log's storage still holds their bytes: on JetStream, drop them \
     by retention (log.max_age_secs) or by deleting their messages; the embedded log rewrites them away \
     at the server's next start (or `mneme erase` on a stopped server); see docs/src/erasure.md";

/// The time a purge erases an agent's items before, if it names one; a
/// purge names items, or an agent and that time.
fn purged_before(body: &PurgeBody) -> Result<Option<Timestamp>, ApiError> {
    let before =
        match &body.before {
            Some(text) => Some(text.parse::<Timestamp>().map_err(|error| {
                ApiError::bad_parameter("before", format!("before is not an RFC 3339 time: {error}"))
            })?),
            None => None,
        };
    if before.is_some() && body.agent.is_none() {
        return Err(ApiError::bad_parameter("agent", "a purge with before names the agent whose memories it erases"));
    }
    if body.item_ids.is_empty() && before.is_none() {
        return Err(ApiError::bad_parameter("item_ids", "a purge names item_ids, or an agent and a before time"));
    }
    Ok(before)
}

/// The answer of a purge that found nothing to erase: every item named
/// purged already (no tombstone appended), or none held anywhere.
fn nothing_to_purge(
    swarm: &str,
    body: &PurgeBody,
    already_purged: Vec<AlreadyPurged>,
) -> Result<PurgeAnswer, ApiError> {
    if already_purged.is_empty() {
        return Err(ApiError::not_found(
            "unknown_item",
            Some("item_ids"),
            format!("no memory of swarm {swarm:?} holds any of {:?}", body.item_ids),
        ));
    }
    Ok(PurgeAnswer {
        purged: Vec::new(),
        already_purged,
        message: Some(
            "nothing left to erase: every memory that holds these items has purged them already; \
             no tombstone was appended"
                .to_string(),
        ),
        log: None,
    })
}

/// Verdicts listed per kind in a report; counts are always complete.
const MAX_LISTED_VERDICTS: usize = 1000;

/// How long a change waits for the agent to apply it.
const APPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn milliseconds(seconds: f64) -> f64 {
    (seconds * 1000.0 * 10.0).round() / 10.0
}

fn wire_report(report: &ConsolidationReport) -> ConsolidationAnswer {
    let agents = report
        .agents
        .iter()
        .map(|agent| AgentConsolidation {
            agent: agent.agent.clone(),
            items: agent.items,
            retrievals_recorded: agent.retrievals_recorded,
            events_written: agent.events_written,
            verdict_events: agent.verdict_events,
            verdicts_dropped: agent.verdicts_dropped,
            scan_ms: milliseconds(agent.scan_seconds),
            plan: wire_plan(&agent.plan),
        })
        .collect();
    ConsolidationAnswer {
        swarm: report.swarm.clone(),
        dry_run: report.dry_run,
        elapsed_ms: report.elapsed.as_millis() as u64,
        events_written: report.events_written(),
        verdict_events: report.verdict_events(),
        shared: SharedScan {
            items: report.shared.items,
            duplicate_pairs: report.shared.duplicate_pairs,
            scan_ms: milliseconds(report.shared.shared_seconds),
        },
        agents,
    }
}

fn wire_plan(plan: &ConsolidationPlan) -> Plan {
    Plan {
        checkpoint: plan.checkpoint,
        counts: VerdictCounts {
            contradictions: plan.contradictions.len(),
            merges: plan.merges.len(),
            merged_items: plan.merges.iter().map(|merge| merge.merged.len()).sum(),
            forgotten: plan.forgotten_count(),
            decayed: plan.decayed_count(),
            links: plan.links.len(),
            deferred: plan.deferred,
        },
        contradictions: plan
            .contradictions
            .iter()
            .take(MAX_LISTED_VERDICTS)
            .map(|verdict| ContradictionVerdict {
                contradiction_id: verdict.contradiction_id.clone(),
                a: verdict.a.clone(),
                b: verdict.b.clone(),
                rule: verdict.rule.to_string(),
                reason: verdict.reason.clone(),
            })
            .collect(),
        merges: plan
            .merges
            .iter()
            .take(MAX_LISTED_VERDICTS)
            .map(|merge| MergeVerdict {
                survivor: merge.survivor.clone(),
                merged: merge.merged.clone(),
                similarity: merge.similarity,
            })
            .collect(),
        forgotten: plan
            .decays
            .iter()
            .filter(|verdict| verdict.forget)
            .take(MAX_LISTED_VERDICTS)
            .map(|verdict| Forgotten {
                item_id: verdict.item_id.clone(),
                score: verdict.score,
                reason: verdict.reason.clone(),
            })
            .collect(),
        decayed: plan
            .decays
            .iter()
            .filter(|verdict| !verdict.forget)
            .take(MAX_LISTED_VERDICTS)
            .map(|verdict| Decayed { item_id: verdict.item_id.clone(), score: verdict.score })
            .collect(),
        links: plan
            .links
            .iter()
            .take(MAX_LISTED_VERDICTS)
            .map(|link| Link { a: link.a.clone(), b: link.b.clone(), reason: link.reason.clone() })
            .collect(),
    }
}

fn wire_open(agent: &str, open: &OpenContradiction) -> Contradiction {
    Contradiction {
        contradiction_id: open.contradiction_id.clone(),
        agent: agent.to_string(),
        status: "open".to_string(),
        a: open.a.clone(),
        b: open.b.clone(),
        reason: Some(open.reason.clone()),
        resolution: None,
        provenance: provenance_refs(std::slice::from_ref(&open.provenance)),
    }
}

fn wire_resolved(agent: &str, resolved: &ResolvedContradiction) -> Contradiction {
    Contradiction {
        contradiction_id: resolved.contradiction_id.clone(),
        agent: agent.to_string(),
        status: "resolved".to_string(),
        a: resolved.a.clone(),
        b: resolved.b.clone(),
        reason: None,
        resolution: Some(resolution_name(resolved.resolution).to_string()),
        provenance: provenance_refs(std::slice::from_ref(&resolved.provenance)),
    }
}

/// Whether a contradiction may be resolved `resolution`: it is open
/// somewhere (`any_open`), and no copy of it was settled another way
/// (`already`: the first copy found resolved, with its agent).
fn check_resolvable(
    swarm: &str,
    contradiction_id: &str,
    resolution: ContradictionResolution,
    any_open: bool,
    already: Option<(String, ResolvedContradiction)>,
) -> Result<(), ApiError> {
    // Copies settled one way (in one memory, by an agent's own event)
    // are not settled another way in the others.
    if let Some((agent, resolved)) = &already
        && any_open
        && resolved.resolution != resolution
    {
        return Err(ApiError::conflict(
            "resolved_differently",
            Some("resolution"),
            format!(
                "contradiction {contradiction_id:?} was resolved {} at seq {} in the memory of {agent:?}: \
                 resolve its other copies the same way",
                resolution_name(resolved.resolution),
                resolved.provenance.seq
            ),
        ));
    }
    if any_open {
        return Ok(());
    }
    Err(match already.map(|(_, resolved)| resolved) {
        Some(resolved) => ApiError::conflict(
            "already_resolved",
            Some("contradiction_id"),
            format!(
                "contradiction {contradiction_id:?} was already resolved ({}) at seq {}",
                resolution_name(resolved.resolution),
                resolved.provenance.seq
            ),
        ),
        None => ApiError::not_found(
            "unknown_contradiction",
            Some("contradiction_id"),
            format!("no memory of swarm {swarm:?} holds a contradiction {}", quote(contradiction_id)),
        ),
    })
}

/// The answer of a resolution from what each memory answered: the first
/// memory's in full, the others' in `also_resolved`. A copy settled by
/// another resolution in between changed nothing there and is left out;
/// any other failure (a memory that did not apply its resolution in time)
/// is the answer, since the request's promise is that every copy is
/// settled.
fn first_with_the_others(applied: Vec<Result<Resolved, ApiError>>) -> Result<Resolved, ApiError> {
    let mut resolved = Vec::with_capacity(applied.len());
    let mut settled_elsewhere = None;
    for outcome in applied {
        match outcome {
            Ok(answer) => resolved.push(answer),
            Err(error) if error.code() == "already_resolved" => settled_elsewhere = settled_elsewhere.or(Some(error)),
            Err(error) => return Err(error),
        }
    }
    let mut resolved = resolved.into_iter();
    let Some(mut first) = resolved.next() else {
        return Err(settled_elsewhere.expect("every memory answered with an outcome"));
    };
    first.also_resolved = resolved.map(|answer| answer.contradiction).collect();
    Ok(first)
}

fn resolution_name(resolution: ContradictionResolution) -> &'static str {
    match resolution {
        ContradictionResolution::AWins => "a_wins",
        ContradictionResolution::BWins => "b_wins",
        ContradictionResolution::BothValid => "both_valid",
        ContradictionResolution::Merged => "merged",
    }
}

fn parse_resolution(text: &str) -> Result<ContradictionResolution, ApiError> {
    match text {
        "a_wins" => Ok(ContradictionResolution::AWins),
        "b_wins" => Ok(ContradictionResolution::BWins),
        "both_valid" => Ok(ContradictionResolution::BothValid),
        "merged" => Ok(ContradictionResolution::Merged),
        other => Err(ApiError::bad_parameter(
            "resolution",
            format!("unknown resolution {}; expected a_wins, b_wins, both_valid or merged", quote(other)),
        )),
    }
}
