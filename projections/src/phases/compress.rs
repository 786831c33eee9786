//! The deterministic, extractive compressor: each level is built from the
//! phase's notes by fixed rules, most important lines first, and cut to its
//! token bound. No model, so replay recomputes it exactly.

use super::{EXTRACTIVE_COMPRESSOR, Phase, PhaseLevel, PhaseLevels};
use mneme_index::tokens;

/// At most this many files or symbols are named on one line; the rest are
/// counted.
const NAMES_PER_LINE: usize = 8;
/// Rationales are cut to this many tokens in `findings`.
const RATIONALE_TOKENS: usize = 50;

pub(crate) fn extractive_levels(phase: &Phase) -> PhaseLevels {
    PhaseLevels {
        compressor: EXTRACTIVE_COMPRESSOR.to_string(),
        index: fit_to_tokens(&index_text(phase), PhaseLevel::Index),
        compressed: fit_to_tokens(&compressed_text(phase), PhaseLevel::Compressed),
        summary: fit_lines(&summary_lines(phase), PhaseLevel::Summary),
        findings: fit_lines(&findings_lines(phase), PhaseLevel::Findings),
    }
}

/// What the phase came to: its outcome, else its goal, else its name.
fn gist(phase: &Phase) -> &str {
    phase.outcome.as_deref().or(phase.goal.as_deref()).unwrap_or("")
}

/// Names longer than this many tokens (a task id like
/// `task-214-rust-refresh`) leave no room for the gist at the `index` level.
const SHORT_NAME_TOKENS: usize = 4;

fn index_text(phase: &Phase) -> String {
    let gist = gist(phase);
    if gist.is_empty() {
        phase.name.clone()
    } else if tokens::count(&phase.name) <= SHORT_NAME_TOKENS {
        format!("{}: {gist}", phase.name)
    } else {
        gist.to_string()
    }
}

fn named_gist(phase: &Phase) -> String {
    let gist = gist(phase);
    if gist.is_empty() { phase.name.clone() } else { format!("{}: {gist}", phase.name) }
}

fn compressed_text(phase: &Phase) -> String {
    let notes = &phase.notes;
    let mut text = named_gist(phase);
    let fixed = notes.errors.iter().filter(|error| error.fixed_seq.is_some()).count();
    let mut counts = vec![format!("{} events", notes.event_count())];
    if !notes.decisions.is_empty() {
        counts.push(format!("{} decisions", notes.decisions.len()));
    }
    if !notes.errors.is_empty() {
        counts.push(format!("{} errors, {fixed} fixed", notes.errors.len()));
    }
    text.push_str(&format!(" ({})", counts.join("; ")));
    if !notes.files_modified.is_empty() {
        text.push_str(&format!("; changed {}", names(notes.files_modified.iter(), 3)));
    }
    text
}

fn summary_lines(phase: &Phase) -> Vec<String> {
    let notes = &phase.notes;
    let mut lines = opening_lines(phase);
    for decision in &notes.decisions {
        let superseded = superseded_marker(notes, &decision.item_id);
        lines.push(format!("Decided: {} — {}{superseded}", decision.title, decision.choice));
    }
    if !notes.files_modified.is_empty() {
        lines.push(format!("Changed: {}", names(notes.files_modified.iter(), NAMES_PER_LINE)));
    }
    for error in &notes.errors {
        lines.push(error_line(error));
    }
    lines
}

/// ` (superseded by <item>)` when a later decision of the same phase
/// replaced this one, so that both do not read as in force; else empty.
/// Levels are fixed at completion: a decision superseded after the phase
/// completed is marked on its item (`superseded_by`), not here.
fn superseded_marker(notes: &super::PhaseNotes, item_id: &str) -> String {
    notes
        .decisions
        .iter()
        .find(|later| later.supersedes.as_deref() == Some(item_id))
        .map_or_else(String::new, |later| format!(" (superseded by {})", later.item_id))
}

fn findings_lines(phase: &Phase) -> Vec<String> {
    let notes = &phase.notes;
    let mut lines = opening_lines(phase);
    if !notes.decisions.is_empty() {
        lines.push("Decisions:".to_string());
        for decision in &notes.decisions {
            let superseded = superseded_marker(notes, &decision.item_id);
            let mut line =
                format!("- {} — {} [item {}]{superseded}", decision.title, decision.choice, decision.item_id);
            if !decision.rationale.is_empty() {
                line.push_str(&format!(". Why: {}", tokens::truncate(&decision.rationale, RATIONALE_TOKENS).0));
            }
            lines.push(line);
        }
    }
    if !notes.errors.is_empty() {
        lines.push("Errors and fixes:".to_string());
        for error in &notes.errors {
            lines.push(format!("- {}", error_line(error)));
        }
    }
    if !notes.files_modified.is_empty() {
        lines.push(format!("Files changed: {}", names(notes.files_modified.iter(), NAMES_PER_LINE * 2)));
    }
    if !notes.facts.is_empty() {
        lines.push(format!("Facts: {}", notes.facts.join("; ")));
    }
    // What the phase's agent said that names code or numbers, and how it
    // began and ended: before the lists, which the bound cuts first.
    let messages: Vec<String> =
        notes.kept_messages().map(|message| format!("- [{}] {}", message.role, message.text)).collect();
    if !messages.is_empty() {
        lines.push("Key messages:".to_string());
        lines.extend(messages);
    }
    if !notes.handoffs.is_empty() {
        lines.push(format!("Handoffs: {}", notes.handoffs.join("; ")));
    }
    if !notes.commands.is_empty() {
        let mut commands: Vec<(&String, &super::CommandNote)> = notes.commands.iter().collect();
        // Most run first; ties by name, so the order is fixed.
        commands.sort_by(|a, b| b.1.runs.cmp(&a.1.runs).then_with(|| a.0.cmp(b.0)));
        let shown: Vec<String> = commands
            .iter()
            .take(NAMES_PER_LINE)
            .map(|(command, note)| {
                if note.failures > 0 {
                    format!("`{command}` ×{} ({} failed)", note.runs, note.failures)
                } else {
                    format!("`{command}` ×{}", note.runs)
                }
            })
            .collect();
        lines.push(format!("Commands: {}", shown.join(", ")));
    }
    if !notes.symbols.is_empty() {
        lines.push(format!("Symbols: {}", names(notes.symbols.iter(), NAMES_PER_LINE * 2)));
    }
    let only_read: Vec<&String> =
        notes.files_read.iter().filter(|file| !notes.files_modified.contains(*file)).collect();
    if !only_read.is_empty() {
        lines.push(format!("Files read: {}", names(only_read.into_iter(), NAMES_PER_LINE)));
    }
    lines
}

/// The headline, the goal and the outcome: how `summary` and `findings` begin.
fn opening_lines(phase: &Phase) -> Vec<String> {
    let mut lines = vec![headline(phase)];
    lines.extend(phase.goal.as_ref().map(|goal| format!("Goal: {goal}")));
    lines.extend(phase.outcome.as_ref().map(|outcome| format!("Outcome: {outcome}")));
    lines
}

fn headline(phase: &Phase) -> String {
    let notes = &phase.notes;
    let task = phase.task.as_deref().map(|task| format!(" of task {task}")).unwrap_or_default();
    let end = phase.completed_seq.unwrap_or(phase.started_seq);
    format!(
        "Phase {}{task} [{}], seq {}–{end}, {} events.",
        phase.name,
        phase.phase_id,
        phase.started_seq,
        notes.event_count()
    )
}

fn error_line(error: &super::ErrorNote) -> String {
    match (error.fixed_seq, error.fixed_by.is_empty()) {
        (Some(seq), false) => format!(
            "{} (`{}`) fixed by editing {} (passing run seq {seq})",
            error.error,
            error.command,
            error.fixed_by.join(", ")
        ),
        (Some(seq), true) => format!("{} (`{}`) passed again at seq {seq}", error.error, error.command),
        (None, _) => format!("{} (`{}`) still failing", error.error, error.command),
    }
}

fn names<'a>(names: impl Iterator<Item = &'a String>, shown: usize) -> String {
    let all: Vec<&String> = names.collect();
    let mut text = all.iter().take(shown).map(|name| name.as_str()).collect::<Vec<_>>().join(", ");
    if all.len() > shown {
        text.push_str(&format!(" and {} more", all.len() - shown));
    }
    text
}

/// `text` cut to the level's token bound: at a word, with an ellipsis, for
/// the short levels, where a `…[truncated]` marker would take half the room.
pub(crate) fn fit_to_tokens(text: &str, level: PhaseLevel) -> String {
    let bound = level.token_bound().expect("only text levels have a bound");
    let text = text.trim();
    if tokens::count(text) <= bound {
        return text.to_string();
    }
    if bound <= PhaseLevel::Compressed.token_bound().expect("a bound") {
        return cut_at_word(text, bound);
    }
    tokens::truncate(text, bound).0
}

/// The longest run of whole words, plus `…`, within `bound` tokens.
pub(crate) fn cut_at_word(text: &str, bound: usize) -> String {
    let mut kept = String::new();
    // No word is shorter than a token, so more words than the bound never fit.
    for word in text.split_whitespace().take(bound) {
        let candidate = if kept.is_empty() { word.to_string() } else { format!("{kept} {word}") };
        if tokens::count(&format!("{candidate}…")) > bound {
            break;
        }
        kept = candidate;
    }
    if kept.is_empty() {
        // One word longer than the bound: cut inside it.
        return tokens::truncate(text, bound).0;
    }
    let kept = kept.trim_end_matches([',', ';', ':', '.', '-', '—']).to_string();
    format!("{kept}…")
}

/// Whole lines, in order, while they fit; then the first line that does not
/// fit, cut, if enough room is left for it to say something.
fn fit_lines(lines: &[String], level: PhaseLevel) -> String {
    let bound = level.token_bound().expect("only text levels have a bound");
    fit_lines_to(lines, bound)
}

pub(crate) fn fit_lines_to(lines: &[String], bound: usize) -> String {
    let mut text = String::new();
    for line in lines {
        let candidate = if text.is_empty() { line.clone() } else { format!("{text}\n{line}") };
        if tokens::count(&candidate) <= bound {
            text = candidate;
            continue;
        }
        let remaining = bound.saturating_sub(tokens::count(&text) + 1);
        if remaining >= 12 {
            let cut = tokens::truncate(line, remaining).0;
            let candidate = if text.is_empty() { cut } else { format!("{text}\n{cut}") };
            if tokens::count(&candidate) <= bound {
                text = candidate;
            }
        }
        break;
    }
    text
}
