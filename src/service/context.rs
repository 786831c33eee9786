//! What an agent should know: tiered context within a token budget, and
//! its compressed phases at each level.

use mneme_actors::AgentConfig;
use mneme_actors::queries::{Context, OnePhase, Phases};
use mneme_api::context::{
    ContextAnswer, ContextItem, PhaseAnswer, PhaseCommand, PhaseDecision, PhaseError, PhaseEvents, PhaseFull,
    PhaseHeading, PhaseLevels as WireLevels, PhaseMessage, PhaseText, PhasesAnswer, TaskRollup, TierUsage,
};
use mneme_api::params::{ContextBody, quote};
use mneme_api::query::PhaseInput;
use mneme_projections::phases::{Phase, PhaseLevel, PhaseNotes, TaskSummary};
use mneme_projections::{Activity, ContextRequest, ContextResponse, ContextSignals};

use super::log::{entry_visible_to, provenance_refs, wire_entry};
use super::{ApiError, Service, ask};

impl Service {
    /// Context within a budget. A request that gives no budget (or
    /// no thinking budget) gets the agent's from `swarm.toml`; an agent not
    /// listed there gets the defaults of one that is listed without them.
    pub async fn context(&self, swarm: &str, agent: &str, body: ContextBody) -> Result<ContextAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        let unlisted = AgentConfig::named(agent);
        let agent_config = runtime.config.agent(agent).unwrap_or(&unlisted);
        let checked = body.check(agent_config.context_budget, agent_config.thinking_budget)?;
        let signals = ContextSignals {
            current_file: checked.current_file,
            recent_errors: checked.recent_errors,
            activity: Activity::from_name(checked.activity.as_deref().unwrap_or("")),
            phase: checked.phase,
            thinking_budget: checked.thinking_budget,
        };
        let handle = runtime.agent_handle(agent, checked.min_seq).await?;
        // With a system layer that holds something, a fifth of the budget
        // (and its heading) is its, and the agent's memory gets the rest:
        // the two are assembled at once, each on its own worker.
        let system = self.system_memory(swarm, checked.min_system_seq).await?;
        let share = system.as_ref().map_or(0, |_| checked.budget / SYSTEM_SHARE_OF_BUDGET);
        let reserved = if share > 0 { share + mneme_index::tokens::count(SYSTEM_HEADING) } else { 0 };
        let system_request = ContextRequest::new(checked.query.clone(), share).with_signals(signals.clone());
        let request = ContextRequest::new(checked.query, checked.budget.saturating_sub(reserved))
            .with_signals(signals)
            .with_core(runtime.core_request(agent));
        let system_context = async {
            match (&system, share) {
                (Some(system), 1..) => ask(system, Context(system_request)).await.map(Some),
                _ => Ok(None),
            }
        };
        let (own, system_context) = futures::join!(ask(&handle, Context(request)), system_context);
        let context = own?;
        let mut answer = wire_context(&context);
        answer.budget = checked.budget;
        if let Some(system) = system_context?
            && !system.items.is_empty()
        {
            with_system_layer(&mut answer, share, &wire_context(&system));
        }
        Ok(answer)
    }

    /// Every phase of the agent's (open ones too), the task roll-ups and
    /// the session summary, and the other agents' shared phases as the
    /// agent's memory sees them.
    pub async fn phases(&self, swarm: &str, agent: &str, min_seq: Option<u64>) -> Result<PhasesAnswer, ApiError> {
        let handle = self.agent_handle(swarm, agent, min_seq).await?;
        let listing = ask(&handle, Phases).await?;
        Ok(PhasesAnswer {
            agent: agent.to_string(),
            phases: listing.phases.iter().map(phase_heading).collect(),
            shared_phases: listing.shared_phases.iter().map(phase_heading).collect(),
            tasks: listing.tasks.iter().map(task_rollup).collect(),
            session_summary: listing.session_summary,
        })
    }

    /// One phase at one level: index, compressed, summary, findings, full
    /// or original (default summary).
    pub async fn phase(
        &self,
        swarm: &str,
        agent: &str,
        phase_id: &str,
        input: &PhaseInput,
    ) -> Result<PhaseAnswer, ApiError> {
        let level = input.level;
        let runtime = self.swarm(swarm)?;
        let handle = runtime.agent_handle(agent, input.min_seq).await?;
        let found = ask(&handle, OnePhase(phase_id.to_string())).await?;
        let Some(phase) = found else {
            return Err(ApiError::not_found(
                "unknown_phase",
                Some("phase_id"),
                format!("the memory of {agent:?} knows no phase {}", quote(phase_id)),
            ));
        };
        let mut answer =
            PhaseAnswer { heading: phase_heading(&phase), level: level.as_str().to_string(), text: None, full: None };
        match level {
            PhaseLevel::Original => {
                let entries = runtime.log.read_seqs(&phase.event_seqs).await?;
                // A phase holds only events its reader's memory applied (its
                // own, and the other agents' non-private ones); checked again,
                // as every path that reads the log directly does.
                let visible = entries.iter().filter(|entry| entry_visible_to(entry, agent));
                let erasures = runtime.erasures.erasures();
                answer.heading.events =
                    PhaseEvents::Original(visible.map(|entry| wire_entry(entry, &erasures)).collect());
            }
            PhaseLevel::Full => {
                answer.full = Some(phase_full(&phase));
            }
            text_level => {
                let Some(levels) = &phase.levels else {
                    return Err(ApiError::conflict(
                        "phase_open",
                        Some("level"),
                        format!(
                            "phase {} is still open: only `full` and `original` exist before it completes",
                            quote(phase_id)
                        ),
                    ));
                };
                let text = levels.text(text_level).expect("a text level");
                answer.text = Some(PhaseText {
                    text: text.to_string(),
                    tokens: mneme_index::tokens::count(text),
                    bound: text_level.token_bound(),
                });
            }
        }
        Ok(answer)
    }
}

pub fn wire_context(context: &ContextResponse) -> ContextAnswer {
    let items = context
        .items
        .iter()
        .map(|item| ContextItem {
            tier: item.tier.as_str().to_string(),
            reason: item.reason.to_string(),
            item_id: item.item_id.clone(),
            seq: item.seq,
            kind: item.kind.to_string(),
            text: item.text.clone(),
            tokens: item.tokens,
            provenance: provenance_refs(&item.provenance),
            superseded_by: item.superseded_by.clone(),
        })
        .collect();
    let tiers = context
        .tiers
        .iter()
        .map(|usage| {
            let usage_on_wire = TierUsage {
                share: usage.share_tokens,
                allocated: usage.allocated_tokens,
                used: usage.used_tokens,
                wanted: usage.wanted_tokens,
            };
            (usage.tier.as_str().to_string(), usage_on_wire)
        })
        .collect();
    ContextAnswer {
        text: context.text.clone(),
        tokens: context.tokens,
        budget: context.budget_tokens,
        policy: context.policy.as_str().to_string(),
        tiers,
        as_of_seq: context.as_of_seq,
        as_of_system_seq: None,
        items,
    }
}

/// Divides a context's budget: the system layer's part is at most this
/// fraction of it.
const SYSTEM_SHARE_OF_BUDGET: usize = 5;
/// What begins the system layer's part of a context.
const SYSTEM_HEADING: &str = "\n## System (every swarm)\n";

/// Appends the system layer's context to an agent's: its text under
/// [`SYSTEM_HEADING`], its items (tier `system`), and a `system` tier. The
/// agent's part was assembled within what the system's share and heading
/// left of the budget, so the whole stays within it; should the joined
/// text count more (BPE merges across the join), the system's part is left
/// out.
fn with_system_layer(answer: &mut ContextAnswer, share: usize, system: &ContextAnswer) {
    let text = format!("{}{SYSTEM_HEADING}{}", answer.text, system.text);
    let tokens = mneme_index::tokens::count(&text);
    if tokens > answer.budget {
        return;
    }
    answer.text = text;
    answer.tokens = tokens;
    answer.as_of_system_seq = Some(system.as_of_seq);
    let wanted = system.tiers.values().map(|tier| tier.wanted).sum();
    answer.tiers.insert("system".to_string(), TierUsage { share, allocated: share, used: system.tokens, wanted });
    answer.items.extend(system.items.iter().cloned().map(|item| ContextItem { tier: "system".to_string(), ..item }));
}

fn phase_heading(phase: &Phase) -> PhaseHeading {
    PhaseHeading {
        phase_id: phase.phase_id.clone(),
        agent: phase.agent.clone(),
        name: phase.name.clone(),
        boundary: phase.boundary.as_str().to_string(),
        task: phase.task.clone(),
        status: if phase.is_completed() { "completed" } else { "open" }.to_string(),
        goal: phase.goal.clone(),
        outcome: phase.outcome.clone(),
        started_seq: phase.started_seq,
        started_at: phase.started_at,
        completed_seq: phase.completed_seq,
        completed_at: phase.completed_at,
        events: PhaseEvents::Count(phase.event_seqs.len()),
        compressor: phase.levels.as_ref().map(|levels| levels.compressor.clone()),
        index: phase.levels.as_ref().map(|levels| levels.index.clone()),
        provenance: provenance_refs(&phase.provenance),
    }
}

fn task_rollup(task: &TaskSummary) -> TaskRollup {
    TaskRollup {
        task: task.task.clone(),
        title: task.title.clone(),
        phase_ids: task.phase_ids.clone(),
        index: task.index.clone(),
        summary: task.summary.clone(),
    }
}

/// The `full` level: the phase's structured record.
fn phase_full(phase: &Phase) -> PhaseFull {
    let notes: &PhaseNotes = &phase.notes;
    PhaseFull {
        event_seqs: phase.event_seqs.clone(),
        kinds: notes.kinds.clone(),
        item_tokens: notes.item_tokens,
        decisions: notes
            .decisions
            .iter()
            .map(|decision| PhaseDecision {
                seq: decision.seq,
                item_id: decision.item_id.clone(),
                title: decision.title.clone(),
                choice: decision.choice.clone(),
                rationale: decision.rationale.clone(),
                supersedes: decision.supersedes.clone(),
            })
            .collect(),
        files_read: notes.files_read.clone(),
        files_modified: notes.files_modified.clone(),
        symbols: notes.symbols.clone(),
        commands: notes
            .commands
            .iter()
            .map(|(command, note)| PhaseCommand { command: command.clone(), runs: note.runs, failures: note.failures })
            .collect(),
        errors: notes
            .errors
            .iter()
            .map(|error| PhaseError {
                error: error.error.clone(),
                command: error.command.clone(),
                first_seq: error.first_seq,
                fixed_by: error.fixed_by.clone(),
                fixed_seq: error.fixed_seq,
            })
            .collect(),
        facts: notes.facts.clone(),
        handoffs: notes.handoffs.clone(),
        messages: notes
            .kept_messages()
            .map(|message| PhaseMessage { seq: message.seq, role: message.role.clone(), text: message.text.clone() })
            .collect(),
        message_count: notes.message_count,
        levels: phase.levels.as_ref().map(|levels| WireLevels {
            compressor: levels.compressor.clone(),
            index: levels.index.clone(),
            compressed: levels.compressed.clone(),
            summary: levels.summary.clone(),
            findings: levels.findings.clone(),
        }),
    }
}
