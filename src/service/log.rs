//! The swarm's log as the API shows it: health, appending events, pages of
//! the log, dead letters, the agents, and provenance (the events behind an
//! item).

use std::borrow::Cow;
use std::sync::Arc;

use futures::StreamExt;
use tokio::sync::mpsc;

use mneme_actors::queries::Provenance;
use mneme_actors::{AgentsWritten, ListAgents, SYSTEM_SWARM, SwarmConfig};
use mneme_api::log::{
    Accepted, AcceptedEvents, AgentProvenance, Agents, DeadLetter, DeadLetters, EnrichmentHealth, EventsPage, Health,
    LeaseHealth, LostTailHealth, PlacedSwarmHealth, PlacementHolder, SwarmHealth, SwarmProvenance, SwarmSummary,
    Swarms,
};
use mneme_api::params::{EventsParams, MAX_EVENTS_PER_REQUEST, quote};
use mneme_api::query::ProvenanceInput;
use mneme_api::{self as wire};
use mneme_events::{ERASED_TEXT, Erasures, ErrorCode, Event, EventKind, Scope, Shown, decode_json_batch_of_at_most};
use mneme_nats::LogEntry;
use mneme_projections::ProvenanceRef;
use serde_json::{Value, json};

use super::error::stopped;
use super::{ApiError, Caller, Service, SwarmRuntime, ask};

/// Entries a followed log stream holds for a slow reader before the
/// follower waits for it.
const FOLLOW_BUFFER: usize = 256;

impl Service {
    /// Whether the log answers, and how far it reaches.
    pub async fn health(&self) -> Result<Health, ApiError> {
        let held = self.swarms.all();
        let mut swarms = Vec::with_capacity(held.len());
        for swarm in &held {
            let last_seq = swarm.log.last_event_seq().await?;
            let lost_tail = swarm.lost_tails.found().map(|tail| LostTailHealth {
                snapshot_seq: tail.snapshot_seq,
                log_end: tail.log_end,
                events_lost: tail.events_lost(),
                agents: tail.agents,
            });
            let lease = swarm.lease.state();
            let leases = vec![LeaseHealth {
                lease: swarm.lease.role().to_string(),
                holder: lease.holder,
                held_here: lease.held.is_some(),
            }];
            swarms.push(SwarmHealth {
                swarm: swarm.name().to_string(),
                last_seq,
                embedder: swarm.memory_config.embedder.model_id().to_string(),
                enrichment: swarm.enrichment.as_ref().map(|enricher| EnrichmentHealth {
                    model: enricher.status.model().to_string(),
                    backlog: enricher.status.backlog(),
                    through_seq: enricher.status.through(),
                    recorded: enricher.status.recorded(),
                }),
                lost_tail,
                leases,
            });
        }
        let placement = self.placement.as_ref().map_or_else(Vec::new, |placement| {
            let view = placement.view.borrow();
            placement
                .swarms
                .iter()
                .map(|(name, holders)| PlacedSwarmHealth {
                    swarm: name.clone(),
                    holders: *holders as u64,
                    placed_on: view.target(name, *holders),
                    held_by: view
                        .holds
                        .get(name)
                        .into_iter()
                        .flatten()
                        .map(|(node, hold)| PlacementHolder {
                            node: node.clone(),
                            url: hold.url.clone(),
                            ready: hold.ready,
                        })
                        .collect(),
                    held_here: self.swarms.contains_key(name),
                })
                .collect()
        });
        // With placement a process may hold no swarm for a while.
        let (swarm, last_seq) = swarms
            .iter()
            .find(|held| held.swarm != SYSTEM_SWARM)
            .map_or_else(Default::default, |first| (first.swarm.clone(), first.last_seq));
        Ok(Health { status: "ok".to_string(), swarm, last_seq, swarms, node: self.node.clone(), placement })
    }

    /// The swarms this server holds that `caller` may reach.
    pub fn swarm_list(&self, caller: &Caller) -> Swarms {
        let swarms = self
            .swarms
            .all()
            .iter()
            .filter(|swarm| swarm.name() != SYSTEM_SWARM && caller.may_reach(swarm.name()))
            .map(|swarm| SwarmSummary {
                swarm: swarm.name().to_string(),
                agents: swarm.config.agents.iter().map(|agent| agent.name.clone()).collect(),
            })
            .collect();
        Swarms { swarms }
    }

    /// The swarm the events of a request body are for: the one they all
    /// name, which the caller must be allowed to reach. A body whose
    /// events name no swarm, or that is not JSON, goes to the caller's
    /// default swarm (see [`Service::default_swarm`]), whose decoder then
    /// says what is wrong with it.
    fn swarm_of_batch(&self, caller: &Caller, body: &[u8]) -> Result<Arc<SwarmRuntime>, ApiError> {
        // One swarm: the decoder's check of each event's swarm says it all,
        // without a parse more.
        // (A body that may name the system layer is parsed.)
        if let Some(only) = self.swarms.only()
            && self.placement.is_none()
            && caller.may_reach(only.name())
            && !body.windows(SYSTEM_SWARM.len() + 2).any(|window| window == b"\"system\"")
        {
            return Ok(only);
        }
        let named: Vec<(usize, String)> = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Array(events)) => events
                .iter()
                .enumerate()
                .filter_map(|(index, event)| Some((index, event.get("swarm")?.as_str()?.to_string())))
                .collect(),
            Ok(event) => {
                event.get("swarm").and_then(Value::as_str).map(|swarm| vec![(0, swarm.to_string())]).unwrap_or_default()
            }
            Err(_) => Vec::new(),
        };
        let Some((_, first)) = named.first() else { return self.default_swarm(caller) };
        if let Some((index, other)) = named.iter().find(|(_, swarm)| swarm != first) {
            return Err(ApiError::bad_request(
                "mixed_swarms",
                Some(&format!("[{index}].swarm")),
                format!("a request's events must all be of one swarm: {first:?} and {other:?}"),
            ));
        }
        let swarm = match self.swarm(first) {
            Ok(swarm) => swarm,
            Err(error) if error.code() == "unknown_swarm" => {
                return Err(ApiError::not_found(
                    "unknown_swarm",
                    Some(&format!("[{}].swarm", named[0].0)),
                    format!("this server holds swarm {}, not {first:?}", self.held_names()),
                ));
            }
            Err(elsewhere) => return Err(elsewhere),
        };
        // Who may publish to the system layer is checked event by event
        // (`[swarm] system_publishers`).
        if first != SYSTEM_SWARM && !caller.may_reach(first) {
            return Err(ApiError::forbidden(
                "forbidden",
                Some(&format!("[{}].swarm", named[0].0)),
                format!("{caller} may not publish events of swarm {first:?}"),
            ));
        }
        Ok(swarm)
    }

    /// Appends one event or an array (`body`, JSON) for `caller`. Every
    /// event is validated before any is appended: an invalid one refuses
    /// the whole request, naming its index and field.
    pub async fn append_events(&self, caller: &Caller, body: &[u8]) -> Result<AcceptedEvents, ApiError> {
        let runtime = self.swarm_of_batch(caller, body)?;
        let body = with_default_scopes(&runtime.config, body)?;
        let limits = runtime.config.decode_limits();
        let events = decode_json_batch_of_at_most(&body, &limits, MAX_EVENTS_PER_REQUEST).map_err(|batch| {
            let mut error = batch.error;
            // The decoder knows the limit's value, not which setting holds it.
            if error.code == ErrorCode::PayloadTooLarge {
                error.message.push_str(", set by log.max_event_bytes");
            }
            ApiError::from_validation(error)
        })?;
        let swarm = runtime.name();
        if let Some((index, event)) = events.iter().enumerate().find(|(_, event)| event.swarm != swarm) {
            let field = format!("[{index}].swarm");
            if self.swarms.contains_key(&event.swarm) {
                return Err(ApiError::bad_request(
                    "mixed_swarms",
                    Some(&field),
                    format!("a request's events must all be of one swarm: {swarm:?} and {:?}", event.swarm),
                ));
            }
            return Err(ApiError::not_found(
                "unknown_swarm",
                Some(&field),
                format!("this server holds swarm {}, not {:?}", self.held_names(), event.swarm),
            ));
        }
        // An agent's token may not record handoffs received: Mneme's router
        // delivers them, as NATS permissions already say (deploy/nats); a
        // forged receipt would put a pending handoff in the agent's core
        // memory. An operator importing a log may.
        // Nor deep vectors: they would rank the agent's shared items in
        // every other agent's searches.
        let bound = matches!(caller, Caller::Token { agent: Some(_), .. });
        let reserved = events.iter().enumerate().find_map(|(index, event)| match event.kind {
            EventKind::HandoffReceived(_) => Some((
                index,
                "handoff_received is written by Mneme's handoff router when it delivers a handoff_sent; \
                 an agent's token may not publish it: publish the handoff_sent instead",
            )),
            EventKind::EmbeddingsComputed(_) => Some((
                index,
                "embeddings_computed is written by Mneme's enricher ([enrichment]); an agent's token may not \
                 publish it",
            )),
            _ => None,
        });
        if let (true, Some((index, message))) = (bound, reserved) {
            return Err(ApiError::forbidden("reserved_kind", Some(&format!("[{index}].kind")), message));
        }
        check_system_scope(self, caller, swarm, &events)?;
        let refused = events.iter().enumerate().find(|(_, event)| !caller.may_act_as(&event.agent));
        if let Some((index, event)) = refused {
            return Err(ApiError::forbidden(
                "forbidden",
                Some(&format!("[{index}].agent")),
                format!("{caller} may not publish events of agent {:?}", event.agent),
            ));
        }
        self.check_core_blocks(&runtime, &events, |index| format!("[{index}].data.block")).await?;
        let agents: Vec<&str> = events.iter().map(|event| event.agent.as_str()).collect();
        self.publish_quotas.take(caller, swarm, &agents, events.len(), body.len())?;
        let appended = runtime.log.append(&events).await?;
        let mut agents: Vec<String> = events.iter().map(|event| event.agent.clone()).collect();
        agents.sort();
        agents.dedup();
        runtime.supervisor.do_send(AgentsWritten(agents));
        metrics::counter!("mneme_events_appended_total", "swarm" => swarm.to_string())
            .increment(appended.iter().filter(|a| !a.duplicate).count() as u64);
        let accepted =
            appended.iter().map(|a| Accepted { id: a.id.to_string(), seq: a.seq, duplicate: a.duplicate }).collect();
        Ok(AcceptedEvents { accepted })
    }

    /// A page of the log, every agent's or one agent's.
    pub async fn events(&self, swarm: &str, params: &EventsParams) -> Result<EventsPage, ApiError> {
        let runtime = self.swarm(swarm)?;
        let page = params.check()?;
        let entries = runtime.log.read(page.from_seq, page.agent.as_deref(), page.limit).await?;
        let events =
            page_with_erased(&entries, page.from_seq, page.agent.as_deref(), page.limit, &runtime.erasures.erasures());
        let next_seq = events.last().map_or(page.from_seq, |entry| entry.seq() + 1);
        Ok(EventsPage { events, next_seq })
    }

    /// Every entry of the log from `params.from_seq` on (one agent's, if
    /// named), then each new one as it is appended, until the receiver is
    /// dropped, the server shuts down, or the log fails (the reader asks
    /// again from the seq after the last it got). Must be called on an
    /// actix system: the feed runs on it.
    pub async fn follow_events(
        self: Arc<Self>,
        swarm: &str,
        params: &EventsParams,
    ) -> Result<mpsc::Receiver<wire::log::LogEntry>, ApiError> {
        let runtime = self.swarm(swarm)?;
        let page = params.check()?;
        let mut entries = runtime.log.subscribe(page.from_seq, page.agent.as_deref()).await?;
        let (sender, receiver) = mpsc::channel(FOLLOW_BUFFER);
        let mut shutting_down = self.shutting_down.clone();
        let registry = runtime.erasures.clone();
        let agent = page.agent.clone();
        let mut next_seq = page.from_seq.max(1);
        actix_rt::spawn(async move {
            loop {
                let shown = tokio::select! {
                    entry = entries.next() => match entry {
                        // Erased records leave gaps: their stubs come first.
                        Some(Ok(entry)) => {
                            let erasures = registry.erasures();
                            let mut shown = stubs_in(&erasures, next_seq..entry.seq, agent.as_deref());
                            shown.push(wire_entry(&entry, &erasures));
                            next_seq = entry.seq + 1;
                            shown
                        }
                        Some(Err(error)) => {
                            tracing::warn!(%error, "event stream ended by a log error");
                            return;
                        }
                        None => return,
                    },
                    () = sender.closed() => return,
                    _ = shutting_down.wait_for(|shutting_down| *shutting_down) => return,
                };
                for entry in shown {
                    // A reader that stops reading must not hold the stream
                    // open through shutdown.
                    tokio::select! {
                        sent = sender.send(entry) => if sent.is_err() { return },
                        _ = shutting_down.wait_for(|shutting_down| *shutting_down) => return,
                    }
                }
            }
        });
        Ok(receiver)
    }

    /// Records that are not valid events, with why.
    pub async fn dead_letters(&self, swarm: &str) -> Result<DeadLetters, ApiError> {
        let runtime = self.swarm(swarm)?;
        let letters = runtime.log.dead_letters().await?;
        let erasures = runtime.erasures.erasures();
        let dead_letters = letters
            .iter()
            .map(|letter| DeadLetter {
                seq: letter.seq,
                agent: letter.agent.clone(),
                reason: letter.reason.clone(),
                // A letter quotes its record: not once the record is erased.
                raw: match erasures.erased(letter.seq) {
                    Some(_) => ERASED_TEXT.to_string(),
                    None => String::from_utf8_lossy(&letter.raw).into_owned(),
                },
            })
            .collect();
        Ok(DeadLetters { dead_letters })
    }

    /// The agents with a memory in this process.
    pub async fn agents(&self, swarm: &str) -> Result<Agents, ApiError> {
        let runtime = self.swarm(swarm)?;
        let agents = runtime.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
        Ok(Agents { agents })
    }

    /// The full events behind an item, in log order, from every memory
    /// that holds it. For operators: an agent asks [`Service::agent_provenance`].
    pub async fn swarm_provenance(&self, swarm: &str, item_id: &str) -> Result<SwarmProvenance, ApiError> {
        let runtime = self.swarm(swarm)?;
        let agents = runtime.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
        let mut holders = Vec::new();
        let mut seqs = std::collections::BTreeSet::new();
        for agent in agents {
            let handle = runtime.agent_handle(&agent, None).await?;
            if let Some(found) = ask(&handle, Provenance(item_id.to_string())).await? {
                holders.push(agent);
                seqs.extend(found.iter().map(|reference| reference.seq));
            }
        }
        if holders.is_empty() {
            return Err(ApiError::not_found(
                "unknown_item",
                Some("item_id"),
                format!("no memory of swarm {swarm:?} holds an item {}", quote(item_id)),
            ));
        }
        let seqs: Vec<u64> = seqs.into_iter().collect();
        let entries = runtime.log.read_seqs(&seqs).await?;
        let erasures = runtime.erasures.erasures();
        let events = entries.iter().map(|entry| wire_entry(entry, &erasures)).collect();
        Ok(SwarmProvenance { item_id: item_id.to_string(), holders, events })
    }

    /// The events behind an item of one agent's memory. A memory holds only
    /// what its agent may see, so its provenance points only at such
    /// events; the events read are checked again all the same, so that a
    /// bug in a projection cannot turn into a leak here.
    pub async fn agent_provenance(
        &self,
        swarm: &str,
        agent: &str,
        input: &ProvenanceInput,
    ) -> Result<AgentProvenance, ApiError> {
        input.check()?;
        let runtime = self.swarm(swarm)?;
        let handle = runtime.agent_handle(agent, input.min_seq).await?;
        let unknown = || {
            ApiError::not_found(
                "unknown_item",
                Some("item_id"),
                format!("the memory of {agent:?} holds no item {}", quote(&input.item_id)),
            )
        };
        let found = ask(&handle, Provenance(input.item_id.clone())).await?;
        let references = found.ok_or_else(unknown)?;
        let mut seqs: Vec<u64> = references.iter().map(|reference| reference.seq).collect();
        seqs.sort_unstable();
        seqs.dedup();
        let entries = runtime.log.read_seqs(&seqs).await?;
        let erasures = runtime.erasures.erasures();
        let visible: Vec<_> = entries
            .iter()
            .filter(|entry| entry_visible_to(entry, agent))
            .map(|entry| wire_entry(entry, &erasures))
            .collect();
        let hidden = entries.len() - visible.len();
        if hidden > 0 {
            tracing::error!(%agent, item_id = %input.item_id, hidden, "provenance pointed at events the agent may not see; withheld");
        }
        Ok(AgentProvenance { item_id: input.item_id.clone(), agent: agent.to_string(), events: visible })
    }
}

/// The request body with `scope` set, on every event that leaves it out,
/// to its agent's `default_scope` from `swarm.toml`. The envelope's own
/// default is `private`, so when every agent's default is `private` the body
/// is passed on as it came, without a second parse. A body that is not JSON
/// is passed on too: the decoder names what is wrong with it.
/// Scope `system` is the system layer's, and the system layer holds
/// nothing else: an event of swarm `system` has scope `system` and an
/// agent the caller may publish system events as (`[swarm]
/// system_publishers`); an event of another swarm may not have it.
fn check_system_scope(service: &Service, caller: &Caller, swarm: &str, events: &[Event]) -> Result<(), ApiError> {
    for (index, event) in events.iter().enumerate() {
        if swarm == SYSTEM_SWARM {
            if event.scope != Scope::System {
                return Err(ApiError::bad_request(
                    "invalid_scope",
                    Some(&format!("[{index}].scope")),
                    format!(
                        "an event of swarm {SYSTEM_SWARM:?} has scope \"system\", not {:?}: the system layer holds \
                         what every swarm reads",
                        event.scope.as_str()
                    ),
                ));
            }
            if !service.may_publish_system(caller, &event.agent) {
                return Err(ApiError::forbidden(
                    "system_scope_not_allowed",
                    Some(&format!("[{index}].agent")),
                    format!(
                        "{caller} may not publish to the system layer as agent {:?}: list the agent in its swarm's \
                         [swarm] system_publishers",
                        event.agent
                    ),
                ));
            }
        } else if event.scope == Scope::System {
            return Err(ApiError::bad_request(
                "invalid_scope",
                Some(&format!("[{index}].scope")),
                format!(
                    "scope \"system\" reaches every swarm: publish the event as swarm {SYSTEM_SWARM:?} (allowed \
                     for the agents [swarm] system_publishers lists), or give it scope \"shared\" for swarm {swarm:?}"
                ),
            ));
        }
    }
    Ok(())
}

fn with_default_scopes<'body>(config: &SwarmConfig, body: &'body [u8]) -> Result<Cow<'body, [u8]>, ApiError> {
    if config.agents.iter().all(|agent| agent.default_scope == Scope::Private) {
        return Ok(Cow::Borrowed(body));
    }
    let Ok(mut document) = serde_json::from_slice::<Value>(body) else { return Ok(Cow::Borrowed(body)) };
    let events: Vec<&mut Value> = match &mut document {
        Value::Array(events) => events.iter_mut().collect(),
        event => vec![event],
    };
    let mut changed = false;
    for event in events {
        let Some(fields) = event.as_object_mut() else { continue };
        if fields.contains_key("scope") {
            continue;
        }
        let Some(agent) = fields.get("agent").and_then(Value::as_str).and_then(|name| config.agent(name)) else {
            continue;
        };
        if agent.default_scope != Scope::Private {
            fields.insert("scope".to_string(), json!(agent.default_scope.as_str()));
            changed = true;
        }
    }
    if !changed {
        return Ok(Cow::Borrowed(body));
    }
    let body =
        serde_json::to_vec(&document).map_err(|error| ApiError::internal("internal", None, error.to_string()))?;
    Ok(Cow::Owned(body))
}

/// Whether `agent` may read a log entry: its own, or another agent's event
/// that is not private. A record that is not a valid event has no scope: only
/// its own agent sees it.
pub fn entry_visible_to(entry: &LogEntry, agent: &str) -> bool {
    match &entry.record {
        Ok(event) => event.agent == agent || event.scope != Scope::Private,
        Err(_) => entry.agent == agent,
    }
}

/// A log entry as the API shows it: the event with its `seq`, or why the
/// record is not a valid event; an erased event as its stub, an event that
/// quotes an erased one without the quote. The one place that decides what
/// a reader sees of the raw log: every path that shows log entries calls
/// it with the swarm's erasures (`mneme_events::erasure`).
pub fn wire_entry(entry: &LogEntry, erasures: &Erasures) -> wire::log::LogEntry {
    let event = match &entry.record {
        Ok(event) => event,
        Err(invalid) => {
            let raw = match erasures.erased(entry.seq) {
                Some(_) => ERASED_TEXT.to_string(),
                None => String::from_utf8_lossy(&invalid.raw).into_owned(),
            };
            return wire::log::LogEntry::Invalid(wire::log::InvalidEntry {
                seq: entry.seq,
                agent: entry.agent.clone(),
                appended_at: entry.appended_at,
                invalid: invalid.reason.clone(),
                raw,
            });
        }
    };
    let event_entry = |event: &Event| {
        let event = event.to_json_object();
        wire::log::LogEntry::Event(wire::log::EventEntry { seq: entry.seq, appended_at: entry.appended_at, event })
    };
    match erasures.show(entry.seq, event) {
        Shown::Intact(event) => event_entry(event),
        Shown::Redacted(event) => event_entry(&event),
        Shown::Erased { event, by } => erased_entry(event, by),
    }
}

/// A page of the log as readers see it: `entries`, read from `from` on
/// (one agent's, if named) and at most `max`, with the stubs of the records
/// erased in that stretch at their seqs — once a purge is carried into the
/// log, nothing is there.
pub fn page_with_erased(
    entries: &[LogEntry],
    from: u64,
    agent: Option<&str>,
    max: usize,
    erasures: &Erasures,
) -> Vec<wire::log::LogEntry> {
    // A full page reaches up to its last entry; a short one to the end.
    let through = match entries.last() {
        Some(last) if entries.len() >= max => last.seq,
        _ => u64::MAX,
    };
    let mut shown: std::collections::BTreeMap<u64, wire::log::LogEntry> =
        stubs_in(erasures, from..=through, agent).into_iter().map(|stub| (stub.seq(), stub)).collect();
    shown.extend(entries.iter().map(|entry| (entry.seq, wire_entry(entry, erasures))));
    shown.into_values().take(max).collect()
}

/// The stubs of the records erased at `seqs` (one agent's, if named).
pub fn stubs_in(
    erasures: &Erasures,
    seqs: impl std::ops::RangeBounds<u64>,
    agent: Option<&str>,
) -> Vec<wire::log::LogEntry> {
    erasures
        .erased_in(seqs)
        .filter(|(event, _)| agent.is_none_or(|agent| event.agent == agent))
        .map(|(event, by)| erased_entry(event, by))
        .collect()
}

fn erased_entry(event: &mneme_events::ErasedEvent, by: &[mneme_events::PurgeRef]) -> wire::log::LogEntry {
    wire::log::LogEntry::Erased(wire::log::ErasedEntry {
        seq: event.seq,
        id: event.id.to_string(),
        agent: event.agent.clone(),
        kind: event.kind.clone(),
        ts: event.ts,
        scope: event.scope,
        erased_by: by
            .iter()
            .map(|purge| wire::log::ErasedBy {
                agent: purge.agent.clone(),
                seq: purge.seq,
                event_id: purge.event_id.to_string(),
            })
            .collect(),
    })
}

/// [`wire_entry`] as JSON.
pub fn entry_json(entry: &LogEntry, erasures: &Erasures) -> Value {
    serde_json::to_value(wire_entry(entry, erasures)).expect("a log entry is JSON")
}

/// Provenance as the wire has it.
pub fn provenance_refs(provenance: &[ProvenanceRef]) -> Vec<wire::log::ProvenanceRef> {
    provenance.iter().map(|p| wire::log::ProvenanceRef { seq: p.seq, event_id: p.event_id.to_string() }).collect()
}
