//! Issue 21, item 8: completed phases are searchable. A search for kind
//! `phase` answers with the phases whose findings (under their name, goal
//! and outcome) best match, with their provenance; filters apply to the
//! phase; a phase completed after an earlier search is found by the next.

use mneme_events::{Event, EventKind, MemoryPurged, PHASE_SEARCH_KIND, Timestamp};
use mneme_projections::{AgentMemory, KindFilter, MemoryConfig, SearchMode, SearchRequest};

mod common;

const WEB_CLIENT: &str = "01KE99ZVJ4K6JFTW4PDZZ8207Q";
const PYTHON_CLIENT: &str = "01KE99PFBENNSQMYP5V4SPT065";
const STAGING: &str = "01KE9BCH2SW309E6DX42CWC0D2";

fn phase_search(query: &str, mode: SearchMode) -> SearchRequest {
    let mut request = SearchRequest::new(query, 3).with_mode(mode);
    request.filters.kinds = KindFilter::Phases;
    request
}

fn ids(memory: &mut AgentMemory, request: &SearchRequest) -> Vec<String> {
    memory.commit().unwrap();
    mneme_projections::search(memory, request).unwrap().into_iter().map(|hit| hit.item_id).collect()
}

#[test]
fn a_search_for_phases_finds_the_phase_that_did_it_with_its_provenance() {
    let mut memory = common::trajectory_memory("coder");
    for mode in [SearchMode::Bm25, SearchMode::Hybrid] {
        memory.commit().unwrap();
        let hits = mneme_projections::search(
            &memory,
            &phase_search("the dashboard refresh timing TypeError in session.js", mode),
        )
        .unwrap();
        let best = hits.first().unwrap_or_else(|| panic!("{mode:?}: no phase found"));
        assert_eq!((best.item_id.as_str(), best.kind), (WEB_CLIENT, PHASE_SEARCH_KIND), "{mode:?}: {hits:#?}");
        assert!(best.text.contains("Outcome: 4 tests pass") && best.text.contains("web/src/session.js"), "{best:?}");
        let phase = memory.phases().phase(WEB_CLIENT).unwrap();
        assert_eq!(best.provenance, phase.provenance, "a phase hit's provenance is the phase's events");
        assert_eq!(Some(best.seq), phase.completed_seq);
        assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score), "best first: {hits:#?}");
        let mut explained = phase_search("the dashboard refresh timing TypeError in session.js", mode);
        explained.explain = true;
        let parts = mneme_projections::search(&memory, &explained).unwrap().remove(0).explain;
        assert!(parts.iter().any(|part| part.retriever == "bm25"), "{parts:?}");
        let sum: f32 = parts.iter().map(|part| part.score).sum();
        assert!((sum - best.score).abs() < 1e-4, "the parts add up to the score: {parts:?} {}", best.score);
    }
    let staging = ids(&mut memory, &phase_search("staging expired_token_401s_per_5min", SearchMode::Bm25));
    assert_eq!(staging.first().map(String::as_str), Some(STAGING), "{staging:?}");
    // The same words search items, not phases, without the kind.
    let items = mneme_projections::search(&memory, &SearchRequest::new("dashboard refresh timing", 5)).unwrap();
    assert!(!items.is_empty() && items.iter().all(|hit| hit.kind != PHASE_SEARCH_KIND), "{items:#?}");
}

#[test]
fn filters_apply_to_the_phase() {
    let mut memory = common::trajectory_memory("coder");
    let python = memory.phases().phase(PYTHON_CLIENT).unwrap().clone();
    let query = "refresh the token and retry the request once";
    let mut in_task = phase_search(query, SearchMode::Hybrid);
    in_task.filters.correlation_id = python.task.clone();
    assert_eq!(ids(&mut memory, &in_task), [PYTHON_CLIENT], "only the phase of that task");
    let completed_at = python.completed_at.unwrap();
    let mut until = phase_search(query, SearchMode::Hybrid);
    until.filters.until = Some(completed_at);
    let before: Vec<String> = ids(&mut memory, &until);
    assert!(!before.iter().any(|id| id == PYTHON_CLIENT), "completed at the bound, not before it: {before:?}");
    for id in &before {
        let phase = memory.phases().phase(id).unwrap();
        assert!(phase.completed_at.unwrap() < completed_at, "{id} completed after the bound");
    }
    let mut since = phase_search(query, SearchMode::Hybrid);
    since.filters.since = Some(Timestamp(completed_at.unix_nanos() + 1));
    assert!(!ids(&mut memory, &since).iter().any(|id| id == PYTHON_CLIENT));
}

#[test]
fn a_phase_completed_after_a_search_is_found_by_the_next() {
    let events = common::trajectory();
    let completed_seq = common::trajectory_memory("coder").phases().phase(WEB_CLIENT).unwrap().completed_seq.unwrap();
    let completion = completed_seq as usize - 1;
    let mut memory = AgentMemory::new("demo", "coder", MemoryConfig::default()).unwrap();
    let request = phase_search("dashboard refresh timing session.js", SearchMode::Hybrid);
    for (index, event) in events.iter().enumerate().filter(|(_, event)| event.agent == "coder") {
        if index == completion {
            memory.commit().unwrap();
            assert!(!ids(&mut memory, &request).iter().any(|id| id == WEB_CLIENT), "an open phase is not searched");
        }
        memory.apply(index as u64 + 1, event).unwrap();
    }
    memory.commit().unwrap();
    assert_eq!(ids(&mut memory, &request).first().map(String::as_str), Some(WEB_CLIENT));
}

#[test]
fn a_purge_takes_what_it_erased_out_of_the_phases_searched() {
    let mut memory = common::trajectory_memory("coder");
    let words = "Proactive refresh avoids a visible failed request";
    let search = phase_search(words, SearchMode::Bm25);
    memory.commit().unwrap();
    let before = mneme_projections::search(&memory, &search).unwrap();
    assert!(before.iter().any(|hit| hit.text.contains("Proactive refresh")), "{before:#?}");
    let mut decisions = SearchRequest::new(words, 1).with_mode(SearchMode::Bm25);
    decisions.filters.kinds = KindFilter::Items(vec!["decision_made"]);
    let decision = mneme_projections::search(&memory, &decisions).unwrap().remove(0).item_id;
    let purge = |item_id: String| {
        EventKind::MemoryPurged(MemoryPurged {
            item_ids: vec![item_id],
            before: None,
            of_agent: None,
            reason: Some("erasure request".into()),
        })
    };
    // A first purge in the same phase redacts it; the second erases the
    // decision from a phase already redacted.
    let mut runs = SearchRequest::new("npm test session.js", 1).with_mode(SearchMode::Bm25);
    runs.filters.kinds = KindFilter::Items(vec!["tool_result_recorded"]);
    let run = mneme_projections::search(&memory, &runs).unwrap().remove(0).item_id;
    let seq = common::trajectory().len() as u64 + 1;
    memory.apply(seq, &Event::new("demo", "coder", purge(run))).unwrap();
    memory.commit().unwrap();
    let redacted = mneme_projections::search(&memory, &search).unwrap();
    assert!(redacted.iter().any(|hit| hit.text.contains("Proactive refresh")), "{redacted:#?}");
    memory.apply(seq + 1, &Event::new("demo", "coder", purge(decision))).unwrap();
    memory.commit().unwrap();
    let after = mneme_projections::search(&memory, &search).unwrap();
    assert!(after.iter().all(|hit| !hit.text.contains("Proactive refresh")), "{after:#?}");
}
