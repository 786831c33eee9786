//! How each kind of event reads as a memory: the text that is indexed,
//! searched and shown in context. Deterministic: same event, same text.

use mneme_events::{Event, EventKind, TaskStatus};

/// How long a line of the timeline may be, in characters.
const TIMELINE_CHARS: usize = 400;

/// One line of the swarm's timeline for an event: what memory reads of it,
/// or for an event that manages memory its kind and payload; cut to a few
/// hundred characters.
pub fn describe(event: &Event) -> String {
    let text = render(event, 4 * 1024).unwrap_or_else(|| {
        format!("{} {}", event.kind_name(), serde_json::to_string(&event.kind.data()).unwrap_or_default())
    });
    let mut chars = text.char_indices();
    match chars.nth(TIMELINE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text,
    }
}

/// Lines of a large output kept from its start and from its end.
const LARGE_OUTPUT_EDGE_LINES: usize = 15;
/// Error-looking lines kept from the middle of a large output.
const LARGE_OUTPUT_ERROR_LINES: usize = 20;
/// Any kept line is cut to this many bytes.
const LARGE_OUTPUT_LINE_BYTES: usize = 240;

/// Whether an event of this kind says something (and so becomes an item),
/// rather than manage memory (forget, pin, cite, merge, purge, verdicts,
/// phase summaries), which only its author's memory applies.
pub fn carries_content(kind: &EventKind) -> bool {
    !matches!(
        kind,
        EventKind::MemoryArchived(_)
            | EventKind::MemoryForgotten(_)
            | EventKind::MemoryCited(_)
            | EventKind::MemoryIgnored(_)
            | EventKind::MemoriesMerged(_)
            | EventKind::MemoryDecayed(_)
            | EventKind::ContradictionDetected(_)
            | EventKind::ContradictionResolved(_)
            | EventKind::PhaseCompressed(_)
            | EventKind::MemoriesRetrieved(_)
            | EventKind::MemoryPinned(_)
            | EventKind::MemoryUnpinned(_)
            | EventKind::MemoriesLinked(_)
            | EventKind::MemoryPurged(_)
            | EventKind::CoreMemoryUpdated(_)
            | EventKind::EmbeddingsComputed(_)
    )
}

/// The readable text of an event that becomes a memory item, or `None` for
/// events that only change other items (usage, forgetting, consolidation).
/// Tool outputs over `large_output_bytes` are compressed (see
/// [`compress_large_output`]); the whole output stays in the log.
pub(crate) fn render(event: &Event, large_output_bytes: usize) -> Option<String> {
    if !carries_content(&event.kind) {
        return None;
    }
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
            if result.output.len() > large_output_bytes {
                let output = compress_large_output(&result.output, &event.id.to_string());
                format!("$ {}{args}{status}\n{output}", result.tool)
            } else {
                format!("$ {}{args}{status}\n{}", result.tool, result.output)
            }
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
            let mut text = format!("Handoff {} received from {}", received.handoff_id, received.from);
            if let Some(package) = &received.package {
                text.push_str(&format!(": {}", package.task));
                push_section(&mut text, "Summary", std::slice::from_ref(&package.summary));
                push_section(&mut text, "Constraints", &package.constraints);
            }
            text
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
        EventKind::NoteWritten(note) if note.tags.is_empty() => format!("Note: {}", note.text),
        EventKind::NoteWritten(note) => format!("Note [{}]: {}", note.tags.join(", "), note.text),
        // What manages memory rather than says something: the kinds
        // `carries_content` lists. A new kind that says something and is
        // not rendered above fails the assertion in every test build.
        other => {
            debug_assert!(!carries_content(other), "{} carries content but has no rendering", other.name());
            return None;
        }
    };
    Some(text)
}

/// A large output's first and last lines and the error-looking lines
/// between them, with a pointer to the event that holds it whole. Search
/// still finds the failure; context never carries a megabyte of log.
pub(crate) fn compress_large_output(output: &str, event_id: &str) -> String {
    let lines: Vec<&str> = output.lines().collect();
    let cut = |line: &str| -> String {
        if line.len() <= LARGE_OUTPUT_LINE_BYTES {
            line.to_string()
        } else {
            let mut end = LARGE_OUTPUT_LINE_BYTES;
            while !line.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &line[..end])
        }
    };
    let mut kept: Vec<String> = Vec::new();
    if lines.len() <= 2 * LARGE_OUTPUT_EDGE_LINES {
        // Few but very long lines: cutting each is the compression.
        kept.extend(lines.iter().map(|line| cut(line)));
    } else {
        kept.extend(lines[..LARGE_OUTPUT_EDGE_LINES].iter().map(|line| cut(line)));
        let middle = &lines[LARGE_OUTPUT_EDGE_LINES..lines.len() - LARGE_OUTPUT_EDGE_LINES];
        let errors: Vec<String> = middle
            .iter()
            .filter(|line| looks_like_error(line))
            .take(LARGE_OUTPUT_ERROR_LINES)
            .map(|line| cut(line))
            .collect();
        kept.push(format!(
            "[… {} lines omitted, {} of them shown because they look like errors …]",
            middle.len(),
            errors.len()
        ));
        kept.extend(errors);
        kept.extend(lines[lines.len() - LARGE_OUTPUT_EDGE_LINES..].iter().map(|line| cut(line)));
    }
    kept.push(format!(
        "[output of {} bytes compressed; the whole output is event {event_id} in the log]",
        output.len()
    ));
    kept.join("\n")
}

/// Lines of a failing run's text kept in an excerpt.
const ERROR_EXCERPT_LINES: usize = 12;

/// A failing run as context shows it: the command line, the lines that
/// look like errors, and the last lines (where test runners summarise).
pub(crate) fn error_excerpt(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let Some((first, rest)) = lines.split_first() else { return String::new() };
    let tail_start = rest.len().saturating_sub(3);
    let mut kept: Vec<&str> = vec![first];
    let mut omitted = 0;
    for (position, line) in rest.iter().enumerate() {
        let wanted = position >= tail_start || looks_like_error(line);
        if wanted && kept.len() < ERROR_EXCERPT_LINES + 1 {
            kept.push(line);
        } else {
            omitted += 1;
        }
    }
    if omitted > 0 {
        kept.insert(1, "[… error lines and the end of the output; the rest is in the log …]");
    }
    kept.join("\n")
}

fn looks_like_error(line: &str) -> bool {
    const MARKERS: [&str; 9] =
        ["error", "Error", "ERROR", "FAILED", "FAIL:", "panicked", "Traceback", "Exception", "assert"];
    MARKERS.iter().any(|marker| line.contains(marker))
}

fn push_section(text: &mut String, title: &str, lines: &[String]) {
    let lines: Vec<&str> = lines.iter().map(String::as_str).filter(|line| !line.trim().is_empty()).collect();
    if !lines.is_empty() {
        text.push_str(&format!("\n{title}: {}", lines.join("; ")));
    }
}

/// How a task status reads in an item's text (`in progress`, not the wire's
/// `in_progress`).
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
