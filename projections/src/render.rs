//! How each kind of event reads as a memory: the text that is indexed,
//! searched and shown in context. Deterministic: same event, same text.

use mneme_events::{Event, EventKind, TaskStatus};

/// The readable text of an event that becomes a memory item, or `None` for
/// events that only change other items (usage, forgetting, consolidation).
pub(crate) fn render(event: &Event) -> Option<String> {
    let text = match &event.kind {
        EventKind::MessageRecorded(message) => format!("[{}] {}", message.role, message.text),
        EventKind::ToolResultRecorded(result) => {
            let args = result.args.to_value();
            let args = match args.as_object() {
                Some(object) if object.is_empty() => String::new(),
                _ => format!(" {args}"),
            };
            let status = match result.exit_code {
                Some(code) => format!(" → exit {code}"),
                None => String::new(),
            };
            format!("$ {}{args}{status}\n{}", result.tool, result.output)
        }
        EventKind::DecisionMade(decision) => {
            let mut text = format!("Decision: {} — {}", decision.title, decision.choice);
            if !decision.rationale.is_empty() {
                text.push_str(&format!(". Rationale: {}", decision.rationale));
            }
            if let Some(superseded) = decision.supersedes {
                text.push_str(&format!(" (supersedes {superseded})"));
            }
            text
        }
        EventKind::FactAsserted(fact) => {
            format!("Fact: {} {} {} (confidence {:.2})", fact.subject, fact.predicate, fact.object, fact.confidence)
        }
        EventKind::FactRetracted(fact) => {
            let reason = fact.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default();
            format!("Retracted: {} {} {}{reason}", fact.subject, fact.predicate, fact.object)
        }
        EventKind::HandoffSent(handoff) => {
            let mut text = format!("Handoff to {}: {}", handoff.to, handoff.task);
            push_section(&mut text, "Summary", std::slice::from_ref(&handoff.summary));
            push_section(&mut text, "Artifacts", &handoff.artifacts);
            push_section(&mut text, "Decisions", &handoff.decisions);
            push_section(&mut text, "Constraints", &handoff.constraints);
            text
        }
        EventKind::HandoffReceived(received) => {
            format!("Handoff {} received from {}", received.handoff_id, received.from)
        }
        EventKind::HandoffAcknowledged(ack) => {
            let note = ack.note.as_deref().map(|n| format!(": {n}")).unwrap_or_default();
            format!("Handoff {} acknowledged{note}", ack.handoff_id)
        }
        EventKind::PhaseStarted(phase) => {
            let goal = phase.goal.as_deref().map(|g| format!(": {g}")).unwrap_or_default();
            format!("Phase started: {}{goal}", phase.phase)
        }
        EventKind::PhaseCompleted(phase) => {
            let outcome = phase.outcome.as_deref().map(|o| format!(": {o}")).unwrap_or_default();
            format!("Phase completed: {}{outcome}", phase.phase)
        }
        EventKind::TaskUpdated(task) => {
            let title = task.title.as_deref().map(|t| format!(" {t}")).unwrap_or_default();
            let note = task.note.as_deref().map(|n| format!(" — {n}")).unwrap_or_default();
            format!("Task {}{title}: {}{note}", task.task_id, task_status_name(task.status))
        }
        EventKind::PreferenceSet(preference) => format!("Preference: {} = {}", preference.key, preference.value),
        EventKind::MemoryArchived(_)
        | EventKind::MemoryForgotten(_)
        | EventKind::MemoryCited(_)
        | EventKind::MemoryIgnored(_)
        | EventKind::MemoriesMerged(_)
        | EventKind::MemoryDecayed(_)
        | EventKind::ContradictionDetected(_)
        | EventKind::ContradictionResolved(_)
        | EventKind::PhaseCompressed(_) => return None,
    };
    Some(text)
}

fn push_section(text: &mut String, title: &str, lines: &[String]) {
    let lines: Vec<&str> = lines.iter().map(String::as_str).filter(|line| !line.trim().is_empty()).collect();
    if !lines.is_empty() {
        text.push_str(&format!("\n{title}: {}", lines.join("; ")));
    }
}

fn task_status_name(status: TaskStatus) -> &'static str {
    match status {
        TaskStatus::Open => "open",
        TaskStatus::InProgress => "in progress",
        TaskStatus::Blocked => "blocked",
        TaskStatus::Done => "done",
        TaskStatus::Cancelled => "cancelled",
    }
}

/// Whether items of this kind belong in the working tier (recent turns).
pub(crate) fn is_turn(kind: &EventKind) -> bool {
    matches!(kind, EventKind::MessageRecorded(_) | EventKind::ToolResultRecorded(_))
}
