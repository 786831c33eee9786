//! What an agent writes into its own memory and reads of it first: core
//! memory, notes, and the swarm's timeline as it sees it. Every write
//! answers once the agent's memory has applied it (read-your-writes).

use std::time::Duration;

use mneme_actors::AgentsWritten;
use mneme_actors::queries::Core;
use mneme_api::agent_memory::{
    CoreBlock, CoreConstraint, CoreMemoryAnswer, CoreTask, CoreUpdateBody, CoreUpdated, NoteBody, TimelineAnswer,
    TimelineEntry, Written,
};
use mneme_api::params::quote;
use mneme_api::query::TimelineInput;
use mneme_events::{CoreMemoryUpdated, ERASED_TEXT, Event, EventKind, NoteWritten, Scope, Shown};
use mneme_index::tokens;
use mneme_projections::{CoreMemory, CoreRequest, enters_memory_of};

use super::{ApiError, Caller, Service, SwarmRuntime, ask};

/// How long a write waits for the agent's memory to apply it.
const APPLY_TIMEOUT: Duration = Duration::from_secs(10);
/// Records of the log read at once while looking for a timeline's entries.
const TIMELINE_PAGE: usize = 500;
/// Pages a timeline reads before it answers with what it found: a time
/// long past on a long log costs a bounded read, and the answer's
/// `next_seq` says where to go on.
const TIMELINE_PAGES: usize = 20;

impl SwarmRuntime {
    /// The core request for `agent`: its role from its swarm's file, the
    /// block limit of `[core]`.
    pub fn core_request(&self, agent: &str) -> CoreRequest {
        let config = &self.config;
        CoreRequest {
            role: config.agent(agent).map(|config| config.role.clone()).filter(|role| !role.trim().is_empty()),
            block_tokens: Some(config.core.block_tokens),
            max_blocks: Some(config.core.max_blocks),
        }
    }
}

impl Service {
    /// The agent's core memory.
    pub async fn core(&self, swarm: &str, agent: &str, min_seq: Option<u64>) -> Result<CoreMemoryAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        let core = self.core_memory(&runtime, agent, min_seq).await?;
        Ok(self.core_answer(&runtime, core))
    }

    async fn core_memory(
        &self,
        runtime: &SwarmRuntime,
        agent: &str,
        min_seq: Option<u64>,
    ) -> Result<CoreMemory, ApiError> {
        let handle = runtime.agent_handle(agent, min_seq).await?;
        Ok(*ask(&handle, Core(runtime.core_request(agent))).await?)
    }

    fn core_answer(&self, runtime: &SwarmRuntime, core: CoreMemory) -> CoreMemoryAnswer {
        CoreMemoryAnswer {
            role: core.role,
            task: core.task.map(|task| CoreTask {
                task_id: task.task_id,
                title: task.title,
                status: task.status,
                source: task.source.as_str().to_string(),
                from: task.from,
                seq: task.seq,
                event_id: mneme_events::EventId(task.event_id).to_string(),
            }),
            constraints: core
                .constraints
                .into_iter()
                .map(|constraint| CoreConstraint {
                    text: constraint.text,
                    source: constraint.source.to_string(),
                    seq: constraint.provenance.seq,
                    event_id: constraint.provenance.event_id.to_string(),
                })
                .collect(),
            pending_handoffs: core
                .pending_handoffs
                .iter()
                .map(|record| runtime.shown_delivery(&core.agent, record))
                .collect(),
            blocks: core
                .blocks
                .into_iter()
                .map(|block| CoreBlock {
                    name: block.name,
                    content: block.content,
                    tokens: block.tokens,
                    truncated: block.truncated,
                    seq: block.provenance.seq,
                    event_id: block.provenance.event_id.to_string(),
                    updated_at: block.updated_at,
                })
                .collect(),
            block_tokens: runtime.config.core.block_tokens,
            blocks_total: core.block_names.len(),
            max_blocks: runtime.config.core.max_blocks,
            as_of_seq: core.as_of_seq,
            agent: core.agent,
        }
    }

    /// Replaces one block of the agent's core memory; refused over the
    /// block limit, with the limit named. Core memory is the agent's own:
    /// the event is private.
    pub async fn update_core(
        &self,
        caller: &Caller,
        swarm: &str,
        agent: &str,
        body: CoreUpdateBody,
    ) -> Result<CoreUpdated, ApiError> {
        let runtime = self.swarm(swarm)?;
        let limit = runtime.config.core.block_tokens;
        let tokens = tokens::count(&body.content);
        if tokens > limit {
            return Err(ApiError::bad_parameter(
                "content",
                format!(
                    "block {} is {tokens} tokens; a core memory block holds at most {limit} (core.block_tokens)",
                    quote(&body.block)
                ),
            ));
        }
        let kind = EventKind::CoreMemoryUpdated(CoreMemoryUpdated { block: body.block, content: body.content });
        let event = Event::new(swarm, agent, kind).with_ts(self.clock.now());
        self.check_core_blocks(&runtime, std::slice::from_ref(&event), |_| "block".to_string()).await?;
        let mut written = self.write(caller, event).await?;
        // What a purge names the update by (`item_ids`).
        written.item_id = Some(written.event_id.clone());
        let core = self.core(swarm, agent, Some(written.seq)).await?;
        Ok(CoreUpdated { written, core })
    }

    /// Refuses `events` if their `core_memory_updated` would give an agent
    /// more than `core.max_blocks` blocks; `field` names the block field
    /// of the event at an index.
    pub(super) async fn check_core_blocks(
        &self,
        runtime: &SwarmRuntime,
        events: &[Event],
        field: impl Fn(usize) -> String,
    ) -> Result<(), ApiError> {
        let max = runtime.config.core.max_blocks;
        let mut blocks: std::collections::BTreeMap<&str, std::collections::BTreeSet<String>> = Default::default();
        for (index, event) in events.iter().enumerate() {
            let EventKind::CoreMemoryUpdated(update) = &event.kind else { continue };
            if !blocks.contains_key(event.agent.as_str()) {
                let names = match self.core_memory(runtime, &event.agent, None).await {
                    Ok(core) => core.block_names,
                    // An agent with no memory yet has no blocks.
                    Err(error) if error.code() == "unknown_agent" => Vec::new(),
                    Err(error) => return Err(error),
                };
                blocks.insert(&event.agent, names.into_iter().collect());
            }
            let names = blocks.get_mut(event.agent.as_str()).expect("inserted above");
            if update.content.trim().is_empty() {
                names.remove(&update.block);
            } else if names.insert(update.block.clone()) && names.len() > max {
                return Err(ApiError::conflict(
                    "too_many_blocks",
                    Some(&field(index)),
                    format!(
                        "agent {:?} would have {} core memory blocks; it may have at most {max} (core.max_blocks): \
                         clear one (empty content) or write into an existing one",
                        event.agent,
                        names.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Writes a note into the agent's memory: an item like any other,
    /// private unless `scope` is `shared`.
    pub async fn write_note(
        &self,
        caller: &Caller,
        swarm: &str,
        agent: &str,
        body: NoteBody,
    ) -> Result<Written, ApiError> {
        let scope = match body.scope.as_deref() {
            None | Some("private") => Scope::Private,
            Some("shared") => Scope::Shared,
            Some(other) => {
                return Err(ApiError::bad_parameter(
                    "scope",
                    format!("scope {} is not one of private, shared", quote(other)),
                ));
            }
        };
        let kind = EventKind::NoteWritten(NoteWritten { text: body.text, tags: body.tags });
        let event = Event::new(swarm, agent, kind)
            .with_ts(self.clock.now())
            .with_scope(scope)
            .with_importance(body.importance)
            .with_correlation(body.task);
        let mut written = self.write(caller, event).await?;
        written.item_id = Some(written.event_id.clone());
        Ok(written)
    }

    /// Appends one event the service built for `caller`, and answers once
    /// the memory of the event's agent has applied it. Validated first: a
    /// field at fault is named, as `data.<field>` becomes `<field>`.
    pub async fn write(&self, caller: &Caller, event: Event) -> Result<Written, ApiError> {
        let runtime = self.swarm(&event.swarm)?;
        if !caller.may_reach(&event.swarm) || !caller.may_act_as(&event.agent) {
            return Err(ApiError::forbidden(
                "forbidden",
                Some("agent"),
                format!("{caller} may not write to the memory of {}", quote(&event.agent)),
            ));
        }
        event.validate().map_err(|mut error| {
            if let Some(field) = error.field.take() {
                error.field = Some(field.strip_prefix("data.").unwrap_or(&field).to_string());
            }
            ApiError::from_validation(error)
        })?;
        let bytes = event.to_json().len();
        self.publish_quotas.take(caller, runtime.name(), &[event.agent.as_str()], 1, bytes)?;
        let appended = runtime.log.append(std::slice::from_ref(&event)).await?;
        let appended = appended.first().expect("one event appended, one answer");
        runtime.supervisor.do_send(AgentsWritten(vec![event.agent.clone()]));
        let handle = runtime.agent_handle(&event.agent, None).await?;
        handle.caught_up(runtime.log.as_ref(), appended.seq, APPLY_TIMEOUT).await?;
        Ok(Written {
            event_id: appended.id.to_string(),
            seq: appended.seq,
            item_id: None,
            duplicate: appended.duplicate,
        })
    }

    /// What the swarm did after `since_seq` or from the time `since`, as
    /// `agent` sees it: its own events and the others' shared ones.
    pub async fn timeline(&self, swarm: &str, agent: &str, input: &TimelineInput) -> Result<TimelineAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        mneme_events::validate_name(agent).map_err(|error| ApiError::from_validation(error.under("agent")))?;
        input.check()?;
        let (limit, since) = (input.limit, input.since);
        let admitted = runtime.memory_config.admitted_agents.as_ref();
        let mut from_seq = input.since_seq.map_or(1, |seq| seq.saturating_add(1));
        let mut entries = Vec::new();
        'pages: for _ in 0..TIMELINE_PAGES {
            let page = runtime.log.read(from_seq, None, TIMELINE_PAGE).await?;
            for entry in &page {
                // Erased records leave gaps: their stubs stand there.
                let gap = from_seq..entry.seq;
                from_seq = entry.seq + 1;
                let erasures = runtime.erasures.erasures();
                for (erased, _) in erasures.erased_in(gap) {
                    let visible = erased.agent == agent
                        || mneme_projections::scope_reaches(admitted, &erased.agent, erased.scope);
                    if !visible || since.is_some_and(|since| erased.ts < since) {
                        continue;
                    }
                    entries.push(TimelineEntry {
                        seq: erased.seq,
                        ts: erased.ts,
                        agent: erased.agent.clone(),
                        kind: erased.kind.clone(),
                        task: None,
                        event_id: erased.id.to_string(),
                        text: ERASED_TEXT.to_string(),
                    });
                    if entries.len() == limit {
                        from_seq = erased.seq + 1;
                        break 'pages;
                    }
                }
                let Ok(event) = &entry.record else { continue };
                if !enters_memory_of(agent, admitted, event) || since.is_some_and(|since| event.ts < since) {
                    continue;
                }
                let (task, text) = match erasures.show(entry.seq, event) {
                    Shown::Intact(event) => (event.correlation_id.clone(), mneme_projections::describe(event)),
                    Shown::Redacted(event) => (event.correlation_id.clone(), mneme_projections::describe(&event)),
                    Shown::Erased { .. } => (None, ERASED_TEXT.to_string()),
                };
                entries.push(TimelineEntry {
                    seq: entry.seq,
                    ts: event.ts,
                    agent: event.agent.clone(),
                    kind: event.kind_name().to_string(),
                    task,
                    event_id: event.id.to_string(),
                    text,
                });
                if entries.len() == limit {
                    break 'pages;
                }
            }
            if page.len() < TIMELINE_PAGE {
                break;
            }
        }
        let more = runtime.log.last_event_seq().await? >= from_seq;
        Ok(TimelineAnswer { agent: agent.to_string(), entries, next_seq: from_seq, more })
    }
}
