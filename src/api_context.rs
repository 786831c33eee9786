//! HTTP for what an agent should know: tiered context (`GET`/`POST
//! …/context`) and compressed phases (`GET …/phases`, `GET
//! …/phases/{phase_id}?level=…`).

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, web};
use mneme_actors::{AgentConfig, Query, QueryAnswer};
use mneme_api::params::{ContextBody, ContextParams, MinSeqParams, NoParams, PhaseParams, quote};
use mneme_projections::phases::{Phase, PhaseLevel, PhaseNotes, TaskSummary};
use mneme_projections::{Activity, ContextRequest, ContextResponse, ContextSignals};
use serde_json::{Value, json};

use crate::api::{
    ApiError, AppState, agent_handle, ask, entry_json, entry_visible_to, json_body, provenance_json, read_command_body,
};

pub async fn get_context(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<ContextParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    let body = params.into_inner().into_body();
    Ok(HttpResponse::Ok().json(context_answer(&state, &swarm, &agent, body).await?))
}

pub async fn post_context(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    _: web::Query<NoParams>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let body = read_command_body(payload).await?;
    let body: ContextBody = json_body(&body)?;
    let (swarm, agent) = path.into_inner();
    Ok(HttpResponse::Ok().json(context_answer(&state, &swarm, &agent, body).await?))
}

/// Context as HTTP and NATS answer it. A request that gives no budget (or
/// no thinking budget) gets the agent's from `swarm.toml`; an agent not
/// listed there gets the defaults of one that is listed without them.
pub async fn context_answer(state: &AppState, swarm: &str, agent: &str, body: ContextBody) -> Result<Value, ApiError> {
    let unlisted = AgentConfig::named(agent);
    let agent_config = state.config.agent(agent).unwrap_or(&unlisted);
    let checked = body.check(agent_config.context_budget, agent_config.thinking_budget)?;
    let signals = ContextSignals {
        current_file: checked.current_file,
        recent_errors: checked.recent_errors,
        activity: Activity::from_name(checked.activity.as_deref().unwrap_or("")),
        phase: checked.phase,
        thinking_budget: checked.thinking_budget,
    };
    let handle = agent_handle(state, swarm, agent, checked.min_seq).await?;
    let request = ContextRequest::new(checked.query, checked.budget).with_signals(signals);
    let QueryAnswer::Context(context) = ask(&handle, Query::Context(request)).await? else {
        unreachable!("a context query answers with context")
    };
    Ok(context_json(&context))
}

pub fn context_json(context: &ContextResponse) -> Value {
    let items: Vec<Value> = context
        .items
        .iter()
        .map(|item| {
            json!({
                "tier": item.tier.as_str(),
                "reason": item.reason,
                "item_id": item.item_id,
                "seq": item.seq,
                "kind": item.kind,
                "text": item.text,
                "tokens": item.tokens,
                "provenance": provenance_json(&item.provenance),
                "superseded_by": item.superseded_by,
            })
        })
        .collect();
    let tiers: serde_json::Map<String, Value> = context
        .tiers
        .iter()
        .map(|usage| {
            (
                usage.tier.as_str().to_string(),
                json!({
                    "share": usage.share_tokens,
                    "allocated": usage.allocated_tokens,
                    "used": usage.used_tokens,
                    "wanted": usage.wanted_tokens,
                }),
            )
        })
        .collect();
    json!({
        "text": context.text,
        "tokens": context.tokens,
        "budget": context.budget_tokens,
        "policy": context.policy.as_str(),
        "tiers": tiers,
        "as_of_seq": context.as_of_seq,
        "items": items,
    })
}

/// `GET …/phases`: every phase of the agent's (open ones too), the task
/// roll-ups and the session summary, and the other agents' shared phases
/// as the agent's memory sees them.
pub async fn list_phases(
    state: web::Data<AppState>,
    path: web::Path<(String, String)>,
    params: web::Query<MinSeqParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent) = path.into_inner();
    Ok(HttpResponse::Ok().json(phases_answer(&state, &swarm, &agent, params.min_seq).await?))
}

/// The phase listing as HTTP and NATS answer it.
pub async fn phases_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    min_seq: Option<u64>,
) -> Result<Value, ApiError> {
    let handle = agent_handle(state, swarm, agent, min_seq).await?;
    let QueryAnswer::Phases(listing) = ask(&handle, Query::Phases).await? else {
        unreachable!("a phases query answers with phases")
    };
    let phases: Vec<Value> = listing.phases.iter().map(phase_heading_json).collect();
    let shared_phases: Vec<Value> = listing.shared_phases.iter().map(phase_heading_json).collect();
    let tasks: Vec<Value> = listing.tasks.iter().map(task_json).collect();
    Ok(json!({
        "agent": agent,
        "phases": phases,
        "shared_phases": shared_phases,
        "tasks": tasks,
        "session_summary": listing.session_summary,
    }))
}

/// `GET …/phases/{phase_id}?level=index|compressed|summary|findings|full|original`
/// (default `summary`).
pub async fn get_phase(
    state: web::Data<AppState>,
    path: web::Path<(String, String, String)>,
    params: web::Query<PhaseParams>,
) -> Result<HttpResponse, ApiError> {
    let (swarm, agent, phase_id) = path.into_inner();
    Ok(HttpResponse::Ok().json(phase_answer(&state, &swarm, &agent, &phase_id, &params).await?))
}

/// One phase at one level as HTTP and NATS answer it.
pub async fn phase_answer(
    state: &AppState,
    swarm: &str,
    agent: &str,
    phase_id: &str,
    params: &PhaseParams,
) -> Result<Value, ApiError> {
    let level_name = params.level.as_deref().unwrap_or("summary");
    let level = PhaseLevel::from_name(level_name).ok_or_else(|| {
        ApiError::bad_parameter(
            "level",
            format!(
                "unknown level {}; expected index, compressed, summary, findings, full or original",
                quote(level_name)
            ),
        )
    })?;
    let handle = agent_handle(state, swarm, agent, params.min_seq).await?;
    let QueryAnswer::Phase(found) = ask(&handle, Query::Phase(phase_id.to_string())).await? else {
        unreachable!("a phase query answers with a phase")
    };
    let Some(phase) = found else {
        return Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "unknown_phase",
            Some("phase_id"),
            format!("the memory of {agent:?} knows no phase {}", quote(phase_id)),
        ));
    };
    let mut body = phase_heading_json(&phase);
    let object = body.as_object_mut().expect("a phase heading is an object");
    object.insert("level".to_string(), json!(level.as_str()));
    match level {
        PhaseLevel::Original => {
            let entries = state.log.read_seqs(&phase.event_seqs).await?;
            // A phase holds only events its reader's memory applied (its
            // own, and the other agents' non-private ones); checked again,
            // as every path that reads the log directly does.
            let visible = entries.iter().filter(|entry| entry_visible_to(entry, agent));
            object.insert("events".to_string(), json!(visible.map(entry_json).collect::<Vec<_>>()));
        }
        PhaseLevel::Full => {
            object.insert("full".to_string(), full_json(&phase));
        }
        text_level => {
            let Some(levels) = &phase.levels else {
                return Err(ApiError::new(
                    StatusCode::CONFLICT,
                    "phase_open",
                    Some("level"),
                    format!(
                        "phase {} is still open: only `full` and `original` exist before it completes",
                        quote(phase_id)
                    ),
                ));
            };
            let text = levels.text(text_level).expect("a text level");
            object.insert("text".to_string(), json!(text));
            object.insert("tokens".to_string(), json!(mneme_projections::tokens::count(text)));
            object.insert("bound".to_string(), json!(text_level.token_bound()));
        }
    }
    Ok(body)
}

fn phase_heading_json(phase: &Phase) -> Value {
    json!({
        "phase_id": phase.phase_id,
        "agent": phase.agent,
        "name": phase.name,
        "boundary": phase.boundary.as_str(),
        "task": phase.task,
        "status": if phase.is_completed() { "completed" } else { "open" },
        "goal": phase.goal,
        "outcome": phase.outcome,
        "started_seq": phase.started_seq,
        "started_at": phase.started_at.to_string(),
        "completed_seq": phase.completed_seq,
        "completed_at": phase.completed_at.map(|at| at.to_string()),
        "events": phase.event_seqs.len(),
        "compressor": phase.levels.as_ref().map(|levels| levels.compressor.clone()),
        "index": phase.levels.as_ref().map(|levels| levels.index.clone()),
        "provenance": provenance_json(&phase.provenance),
    })
}

fn task_json(task: &TaskSummary) -> Value {
    json!({
        "task": task.task,
        "title": task.title,
        "phase_ids": task.phase_ids,
        "index": task.index,
        "summary": task.summary,
    })
}

/// The `full` level: the phase's structured record.
fn full_json(phase: &Phase) -> Value {
    let notes: &PhaseNotes = &phase.notes;
    json!({
        "event_seqs": phase.event_seqs,
        "kinds": notes.kinds,
        "item_tokens": notes.item_tokens,
        "decisions": notes.decisions.iter().map(|decision| json!({
            "seq": decision.seq,
            "item_id": decision.item_id,
            "title": decision.title,
            "choice": decision.choice,
            "rationale": decision.rationale,
            "supersedes": decision.supersedes,
        })).collect::<Vec<_>>(),
        "files_read": notes.files_read,
        "files_modified": notes.files_modified,
        "symbols": notes.symbols,
        "commands": notes.commands.iter().map(|(command, note)| json!({
            "command": command, "runs": note.runs, "failures": note.failures,
        })).collect::<Vec<_>>(),
        "errors": notes.errors.iter().map(|error| json!({
            "error": error.error,
            "command": error.command,
            "first_seq": error.first_seq,
            "fixed_by": error.fixed_by,
            "fixed_seq": error.fixed_seq,
        })).collect::<Vec<_>>(),
        "facts": notes.facts,
        "handoffs": notes.handoffs,
        "messages": notes.kept_messages().map(|message| json!({
            "seq": message.seq, "role": message.role, "text": message.text,
        })).collect::<Vec<_>>(),
        "message_count": notes.message_count,
        "levels": phase.levels.as_ref().map(|levels| json!({
            "compressor": levels.compressor,
            "index": levels.index,
            "compressed": levels.compressed,
            "summary": levels.summary,
            "findings": levels.findings,
        })),
    })
}
