//! What each tier could show, best first, before the budget decides.

use std::collections::{BTreeMap, HashSet};

use crate::error::ProjectionError;
use crate::graph::EntityKind;
use crate::item::{ItemState, ProvenanceRef};
use crate::memory::AgentMemory;
use crate::phases::{Phase, PhaseLevel};
use crate::retrieval::{KindFilter, SearchFilters, SearchMode, SearchRequest, search};
use crate::superseded::supersessions;
use mneme_index::tokens;

use super::candidate::Candidate;
use super::core_tier::core_candidates;
use super::{ContextRequest, ContextTier, TIERS, ThinkingPolicy};

/// Items of the newest this-many tool results looked at for failures when
/// the agent names no error.
const RECENT_FAILURE_WINDOW: usize = 50;
const RECENT_FAILURES: usize = 3;
/// Failing runs shown per error named by the agent...
const HITS_PER_ERROR: usize = 3;
/// ...found among this many tool results that match it.
const ERROR_SEARCH_DEPTH: usize = 20;
const DECISIONS: usize = 8;
/// Decisions, preferences and facts are looked for among the newest this
/// many of their kind, so context costs the same at 10,000 items and at
/// 1,000,000; older ones reach context through search and phase summaries.
const SCAN_NEWEST: usize = 500;
const FILE_ITEMS: usize = 8;
const PHASES: usize = 12;
const POINTERS: usize = 12;
/// A contradiction's sides are cut to this many tokens each.
const SIDE_TOKENS: usize = 40;
/// Predicates of facts that read as conventions.
const CONVENTION_WORDS: [&str; 6] = ["convention", "style", "prefer", "rule", "policy", "guideline"];

/// Every tier's candidates, in tier order.
pub(super) fn candidates(
    memory: &AgentMemory,
    request: &ContextRequest,
    policy: ThinkingPolicy,
) -> Result<[Vec<Candidate>; TIERS], ProjectionError> {
    let current_task = current_task(memory, request);
    let critical = critical_candidates(memory, request, current_task.as_deref())?;
    let relevant = relevant_candidates(memory, request, policy)?;
    let background = background_candidates(memory, policy, current_task.as_deref());
    let index = index_candidates(memory);
    let core = core_candidates(memory, &request.core);
    let mut pools = [core, critical, relevant, background, index];
    mark_superseded_items(memory, &mut pools);
    Ok(pools)
}

/// Marks the items among the candidates that a later event superseded.
fn mark_superseded_items(memory: &AgentMemory, pools: &mut [Vec<Candidate>; TIERS]) {
    let supersessions = supersessions(memory);
    for candidate in pools.iter_mut().flatten() {
        if !candidate.key.starts_with("seq:") {
            continue;
        }
        let by = memory.items().get(candidate.seq).and_then(|item| supersessions.of(memory, item));
        if let Some(by) = by {
            candidate.mark_superseded(by);
        }
    }
}

/// The task of the phase the agent names, else of its latest item.
fn current_task(memory: &AgentMemory, request: &ContextRequest) -> Option<String> {
    if let Some(phase) = &request.signals.phase {
        let named = memory
            .phases()
            .phase(phase)
            .or_else(|| memory.phases().phases().iter().rev().find(|candidate| candidate.name == *phase));
        if let Some(found) = named {
            return found.task.clone();
        }
    }
    memory.items().iter().next_back().and_then(|item| item.correlation_id.clone())
}

fn item_candidate(
    memory: &AgentMemory,
    tier: ContextTier,
    reason: &'static str,
    seq: u64,
    text: Option<String>,
) -> Option<Candidate> {
    let item = memory.items().get(seq)?;
    if item.state != ItemState::Active {
        return None;
    }
    Some(Candidate::new(
        tier,
        reason,
        format!("seq:{seq}"),
        item.item_id.clone(),
        seq,
        item.kind,
        vec![text.unwrap_or_else(|| item.text.to_string())],
        item.provenance.clone(),
    ))
}

fn critical_candidates(
    memory: &AgentMemory,
    request: &ContextRequest,
    current_task: Option<&str>,
) -> Result<Vec<Candidate>, ProjectionError> {
    let tier = ContextTier::Critical;
    let mut candidates = Vec::new();
    for open in memory.open_contradictions() {
        // A side forgotten or purged since takes its text out of every
        // query, this one included.
        let gone = |item_id: &str| {
            memory.item(item_id).is_some_and(|item| matches!(item.state, ItemState::Forgotten | ItemState::Purged))
        };
        if gone(&open.a) || gone(&open.b) {
            continue;
        }
        let side = |item_id: &str| {
            memory
                .item(item_id)
                .map_or_else(|| format!("item {item_id}"), |item| tokens::truncate(&item.text, SIDE_TOKENS).0)
        };
        let text = format!("Unresolved: {} ⟂ {} — {}", side(&open.a), side(&open.b), open.reason);
        let mut provenance = vec![open.provenance];
        for item_id in [&open.a, &open.b] {
            if let Some(item) = memory.item(item_id) {
                provenance.extend(item.provenance.first().copied());
            }
        }
        candidates.push(Candidate::new(
            tier,
            "open contradiction",
            format!("contradiction:{}", open.contradiction_id),
            open.contradiction_id.clone(),
            open.provenance.seq,
            "contradiction",
            vec![text],
            provenance,
        ));
    }
    // Errors the agent names, else its latest failures.
    let mut failures: Vec<u64> = Vec::new();
    for error in &request.signals.recent_errors {
        // Runs that failed like this, not edits or reads that mention it.
        // Lexical: an error is matched by its words and identifiers.
        let mut lexical = SearchRequest::new(error.clone(), ERROR_SEARCH_DEPTH).with_mode(SearchMode::Bm25);
        lexical.filters =
            SearchFilters { kinds: KindFilter::Items(vec!["tool_result_recorded"]), ..SearchFilters::default() };
        let hits = search(memory, &lexical)?;
        failures
            .extend(hits.into_iter().map(|hit| hit.seq).filter(|seq| is_failed_run(memory, *seq)).take(HITS_PER_ERROR));
    }
    if request.signals.recent_errors.is_empty() {
        let recent = memory.items().seqs_of_kind("tool_result_recorded").iter().rev().take(RECENT_FAILURE_WINDOW);
        failures.extend(recent.copied().filter(|seq| is_failed_run(memory, *seq)).take(RECENT_FAILURES));
    }
    let mut seen = HashSet::new();
    for seq in failures {
        if !seen.insert(seq) {
            continue;
        }
        let excerpt = memory.items().get(seq).map(|item| crate::render::error_excerpt(&item.text));
        candidates.extend(item_candidate(memory, tier, "recent error", seq, excerpt));
        candidates.extend(fix_candidates(memory, seq));
    }
    candidates.extend(decision_candidates(memory, request, current_task));
    Ok(candidates)
}

/// What fixed the errors of a failing run, from the graph's `fixes`
/// edges: per error, the files whose edits after the failure made the
/// command pass again, with those edits (seq and item id, which expand
/// to the diff) and the passing run.
///
/// The errors are the run's own (`command —fails_with→ error` edges that
/// hold it): the names in its text resolve to error types, not to the
/// failure signatures that `fixes` links.
fn fix_candidates(memory: &AgentMemory, failing_seq: u64) -> Vec<Candidate> {
    let Some(item) = memory.items().get(failing_seq) else { return Vec::new() };
    let graph = memory.graph();
    graph
        .view()
        .fixes_of_failure(&item.agent, failing_seq)
        .into_iter()
        .map(|fix| {
            let error = fix.error.trim_start_matches("error:");
            let edits_of = |edits: &[ProvenanceRef], with_ids: bool| -> String {
                let edits: Vec<String> = edits
                    .iter()
                    .map(|edit| {
                        if with_ids {
                            format!("seq {} {}", edit.seq, edit.event_id)
                        } else {
                            format!("seq {}", edit.seq)
                        }
                    })
                    .collect();
                edits.join(", ")
            };
            let describe = |with_ids: bool| -> String {
                let files: Vec<String> =
                    fix.files.iter().map(|(file, edits)| format!("{file} ({})", edits_of(edits, with_ids))).collect();
                let passed = fix.passed.map_or_else(String::new, |run| format!("; passed again at seq {}", run.seq));
                format!("{error} (failed at seq {failing_seq}) was fixed by editing {}{passed}", files.join(", "))
            };
            let mut provenance: Vec<ProvenanceRef> =
                fix.files.iter().flat_map(|(_, edits)| edits.iter().copied()).chain(fix.passed).collect();
            provenance.sort();
            provenance.dedup();
            let last_seq = provenance.last().map_or(failing_seq, |reference| reference.seq);
            Candidate::new(
                ContextTier::Critical,
                "fix",
                format!("fix:{}:{failing_seq}", fix.error),
                fix.error.clone(),
                last_seq,
                "fix",
                vec![describe(true), describe(false)],
                provenance,
            )
        })
        .collect()
}

/// Decisions still in force: touching the current file or task first,
/// then the newest.
fn decision_candidates(memory: &AgentMemory, request: &ContextRequest, current_task: Option<&str>) -> Vec<Candidate> {
    let file = request.signals.current_file.as_deref().filter(|file| !file.is_empty());
    let file_name = file.and_then(|file| file.rsplit('/').next()).filter(|name| !name.is_empty());
    let mut touching = Vec::new();
    let mut others = Vec::new();
    let graph = memory.graph();
    let view = graph.view();
    for &seq in memory.items().seqs_of_kind("decision_made").iter().rev().take(SCAN_NEWEST) {
        let item = &memory.items()[seq];
        let superseded = view.is_closed_at(&format!("decision:{}", item.item_id), memory.checkpoint());
        if item.state != ItemState::Active || superseded {
            continue;
        }
        let touches_file = file_name.is_some_and(|name| item.text.contains(name));
        let touches_task = current_task.is_some() && item.correlation_id.as_deref() == current_task;
        if touches_file || touches_task { touching.push(seq) } else { others.push(seq) }
    }
    touching
        .into_iter()
        .chain(others)
        .take(DECISIONS)
        .filter_map(|seq| item_candidate(memory, ContextTier::Critical, "active decision", seq, None))
        .collect()
}

fn relevant_candidates(
    memory: &AgentMemory,
    request: &ContextRequest,
    policy: ThinkingPolicy,
) -> Result<Vec<Candidate>, ProjectionError> {
    let tier = ContextTier::Relevant;
    let mut candidates = Vec::new();
    let turns: Vec<(u64, String)> =
        memory.working().entries().rev().map(|entry| (entry.seq, entry.text.clone())).collect();
    for (seq, text) in turns {
        candidates.extend(item_candidate(memory, tier, "recent turn", seq, Some(text)));
    }
    if !request.query.trim().is_empty() {
        for hit in search(memory, &SearchRequest::new(request.query.clone(), policy.hits()))? {
            candidates.extend(item_candidate(memory, tier, "query match", hit.seq, None));
        }
    }
    if let Some(file) = request.signals.current_file.as_deref().filter(|file| !file.is_empty()) {
        let graph = memory.graph();
        let view = graph.view();
        let mut entities = view.entities_in_text(file);
        entities.retain(|id| id.starts_with("file:"));
        let near = view.items_near(&entities, 1, None);
        drop(graph);
        for (seq, _) in near.into_iter().take(FILE_ITEMS) {
            candidates.extend(item_candidate(memory, tier, "current file", seq, None));
        }
    }
    for error in &request.signals.recent_errors {
        for hit in search(memory, &SearchRequest::new(error.clone(), HITS_PER_ERROR))? {
            candidates.extend(item_candidate(memory, tier, "similar error", hit.seq, None));
        }
    }
    Ok(candidates)
}

fn background_candidates(memory: &AgentMemory, policy: ThinkingPolicy, current_task: Option<&str>) -> Vec<Candidate> {
    let tier = ContextTier::Background;
    let mut candidates = Vec::new();
    let session = memory.phases().session_summary();
    if !session.is_empty() {
        // The session summary stands on the completions it rolls up:
        // those of the newest phases, as many as it can name.
        let mut provenance: Vec<ProvenanceRef> = memory
            .phases()
            .phases()
            .iter()
            .rev()
            .filter(|phase| phase.is_completed())
            .take(PHASES)
            .filter_map(|phase| phase.provenance.last().copied())
            .collect();
        provenance.sort();
        let first_seq = provenance.first().map_or(0, |reference| reference.seq);
        candidates.push(Candidate::new(
            tier,
            "session summary",
            "session".to_string(),
            "session".to_string(),
            first_seq,
            "session",
            vec![session.to_string()],
            provenance,
        ));
    }
    // Preferences (the latest value per key) and conventions.
    let mut latest_preference: BTreeMap<String, u64> = BTreeMap::new();
    let preferences = memory.items().seqs_of_kind("preference_set");
    for &seq in &preferences[preferences.len().saturating_sub(SCAN_NEWEST)..] {
        let text = &memory.items()[seq].text;
        let key = text.split(" = ").next().unwrap_or(text).to_string();
        latest_preference.insert(key, seq);
    }
    let mut preference_seqs: Vec<u64> = latest_preference.into_values().collect();
    preference_seqs.sort_unstable_by(|a, b| b.cmp(a));
    for seq in preference_seqs {
        candidates.extend(item_candidate(memory, tier, "preference", seq, None));
    }
    for &seq in memory.items().seqs_of_kind("fact_asserted").iter().rev().take(SCAN_NEWEST) {
        let text = memory.items()[seq].text.to_lowercase();
        if CONVENTION_WORDS.iter().any(|word| text.contains(word)) {
            candidates.extend(item_candidate(memory, tier, "convention", seq, None));
        }
    }
    // The current task's summary, then completed phases newest first,
    // those of the current task before others.
    if let Some(task) = current_task.and_then(|task| memory.phases().task(task)) {
        candidates.push(task_candidate(task, memory.phases()));
    }
    let mut completed: Vec<&Phase> = memory.phases().phases().iter().filter(|phase| phase.is_completed()).collect();
    completed.sort_by_key(|phase| {
        (phase.task.as_deref() != current_task || current_task.is_none(), std::cmp::Reverse(phase.completed_seq))
    });
    for phase in completed.into_iter().take(PHASES) {
        candidates.push(phase_candidate(tier, "phase", phase, policy.phase_level()));
    }
    for task in memory.phases().tasks_newest_first().take(PHASES) {
        if Some(task.task.as_str()) != current_task {
            candidates.push(task_candidate(task, memory.phases()));
        }
    }
    candidates.extend(workflow_candidate(memory));
    candidates
}

/// The commands run most across this agent's completed phases, and how
/// often they failed: how this swarm builds and tests. A phase opened
/// for a task holds the other agents' shared events of the task too, so
/// these are the task's runs, not only this agent's: the line says so.
fn workflow_candidate(memory: &AgentMemory) -> Option<Candidate> {
    let mut runs: BTreeMap<&str, (u32, u32)> = BTreeMap::new();
    let mut provenance = Vec::new();
    for phase in memory.phases().phases().iter().filter(|phase| phase.is_completed()) {
        for (command, note) in &phase.notes.commands {
            let entry = runs.entry(command.as_str()).or_default();
            entry.0 += note.runs;
            entry.1 += note.failures;
        }
        if !phase.notes.commands.is_empty() {
            provenance.extend(phase.provenance.first().copied());
        }
    }
    if runs.is_empty() {
        return None;
    }
    let mut ranked: Vec<(&str, (u32, u32))> = runs.into_iter().collect();
    ranked.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(b.0)));
    let shown: Vec<String> = ranked
        .iter()
        .take(5)
        .map(|(command, (runs, failures))| format!("`{command}` ×{runs} ({failures} failed)"))
        .collect();
    Some(Candidate::new(
        ContextTier::Background,
        "workflow",
        "workflow".to_string(),
        "workflow".to_string(),
        provenance.first().map_or(0, |reference: &ProvenanceRef| reference.seq),
        "workflow",
        vec![format!("Commands run most in this agent's phases: {}", shown.join(", "))],
        provenance,
    ))
}

/// Pointers: phases by their index line, newest first, then the
/// entities with the most memories linked to them.
fn index_candidates(memory: &AgentMemory) -> Vec<Candidate> {
    let tier = ContextTier::Index;
    let mut candidates: Vec<Candidate> = memory
        .phases()
        .phases()
        .iter()
        .rev()
        .filter(|phase| phase.is_completed())
        .take(POINTERS)
        .map(|phase| phase_candidate(tier, "pointer", phase, PhaseLevel::Index))
        .collect();
    let graph = memory.graph();
    let view = graph.view();
    let mut busiest: Vec<(usize, &str, &str)> = view
        .entities_by_links(|kind| {
            matches!(
                kind,
                EntityKind::File | EntityKind::Symbol | EntityKind::Error | EntityKind::Concept | EntityKind::Task
            )
        })
        .into_iter()
        .filter(|(links, _, _)| *links > 1)
        .collect();
    // Only the top few are shown: select them, then sort those.
    let order = |a: &(usize, &str, &str), b: &(usize, &str, &str)| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1));
    if busiest.len() > POINTERS {
        busiest.select_nth_unstable_by(POINTERS, order);
        busiest.truncate(POINTERS);
    }
    busiest.sort_by(order);
    for (links, id, name) in busiest.into_iter().take(POINTERS) {
        let latest = view.items_of(id).into_iter().max().unwrap_or(0);
        let Some(provenance) =
            memory.items().get(latest).and_then(|item| item.provenance.first()).map(|first| vec![*first])
        else {
            continue;
        };
        let mut candidate = Candidate::new(
            tier,
            "pointer",
            format!("entity:{id}"),
            id.to_string(),
            latest,
            "entity",
            vec![format!("{name}: {links} memories")],
            provenance,
        );
        candidate.truncatable = false;
        candidates.push(candidate);
    }
    candidates
}

/// Whether the item is a tool run that exited non-zero (its rendering
/// says `→ exit N` at the end of its first line).
fn is_failed_run(memory: &AgentMemory, seq: u64) -> bool {
    let Some(item) = memory.items().get(seq) else { return false };
    let first_line = item.text.lines().next().unwrap_or("");
    item.kind == "tool_result_recorded" && first_line.rsplit_once("→ exit ").is_some_and(|(_, code)| code.trim() != "0")
}

fn phase_candidate(tier: ContextTier, reason: &'static str, phase: &Phase, level: PhaseLevel) -> Candidate {
    let levels = phase.levels.as_ref().expect("completed phases have levels");
    let texts: Vec<String> = [PhaseLevel::Findings, PhaseLevel::Summary, PhaseLevel::Compressed, PhaseLevel::Index]
        .into_iter()
        .filter(|candidate| *candidate <= level)
        .filter_map(|candidate| levels.text(candidate).map(str::to_string))
        .collect();
    let mut candidate = Candidate::new(
        tier,
        reason,
        format!("phase:{}", phase.phase_id),
        phase.phase_id.clone(),
        phase.started_seq,
        "phase",
        texts,
        phase.provenance.clone(),
    );
    candidate.truncatable = false;
    candidate
}

fn task_candidate(task: &crate::phases::TaskSummary, tracker: &crate::phases::PhaseTracker) -> Candidate {
    let provenance: Vec<ProvenanceRef> = task
        .phase_ids
        .iter()
        .filter_map(|id| tracker.phase(id))
        .flat_map(|phase| phase.provenance.iter().copied())
        .collect();
    let mut candidate = Candidate::new(
        ContextTier::Background,
        "task summary",
        format!("task:{}", task.task),
        task.task.clone(),
        provenance.first().map_or(0, |reference| reference.seq),
        "task",
        vec![task.summary.clone(), task.index.clone()],
        provenance,
    );
    candidate.truncatable = false;
    candidate
}
