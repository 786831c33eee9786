//! The generator's tests: determinism, events the API takes, and ground
//! truth that names real events and holds what each kind promises.

use std::collections::{HashMap, HashSet};

use mneme_events::{DecodeLimits, decode_json};
use mneme_projections::consolidation::ConsolidationPolicy;
use mneme_projections::consolidation::lexical::{content_terms, lexically_equivalent};

use super::*;
use crate::eval::dataset::QuestionKind;

fn sized(name: &str) -> Dataset {
    generate(7, GeneratorSize::parse(name).expect("a known size"))
}

fn events_by_id(dataset: &Dataset) -> HashMap<&str, &Value> {
    dataset.events.iter().map(|event| (event["id"].as_str().expect("an id"), event)).collect()
}

/// The text an event's memory is about, for word-level checks.
fn content_text(event: &Value) -> String {
    let data = &event["data"];
    match event["kind"].as_str() {
        Some("message_recorded") => data["text"].as_str().unwrap_or_default().to_string(),
        Some("fact_asserted") => format!("{} {} {}", data["subject"], data["predicate"], data["object"]),
        _ => data.to_string(),
    }
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_other_ones() {
    let size = GeneratorSize::parse("tiny").unwrap();
    let first = serde_json::to_string(&generate(42, size)).unwrap();
    assert_eq!(first, serde_json::to_string(&generate(42, size)).unwrap());
    assert_ne!(first, serde_json::to_string(&generate(43, size)).unwrap());
}

#[test]
fn every_event_decodes_as_the_api_takes_it() {
    let dataset = sized("small");
    for (index, event) in dataset.events.iter().enumerate() {
        let bytes = serde_json::to_vec(event).unwrap();
        if let Err(error) = decode_json(&bytes, &DecodeLimits::default()) {
            panic!("event {index} does not decode: {error:?}\n{event}");
        }
        assert_eq!(event["swarm"], EVAL_SWARM);
        assert_eq!(event["id"].as_str().unwrap().len(), 26);
    }
}

#[test]
fn ids_are_unique_and_times_strictly_increase() {
    let dataset = sized("small");
    let ids: HashSet<&str> = dataset.events.iter().map(|event| event["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), dataset.events.len());
    let times: Vec<Timestamp> =
        dataset.events.iter().map(|event| event["ts"].as_str().unwrap().parse().unwrap()).collect();
    assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "timestamps must strictly increase");
}

#[test]
fn every_id_the_truth_names_is_an_event() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    let truth = &dataset.truth;
    let named = truth
        .questions
        .iter()
        .flat_map(|question| question.answers.iter())
        .chain(truth.duplicate_groups.iter().flatten())
        .chain(truth.near_misses.iter().flat_map(|(a, b)| [a, b]))
        .chain(truth.contradictions.iter().flat_map(|(a, b)| [a, b]))
        .chain(truth.never_forget.iter())
        .chain(truth.phases.iter().map(|phase| &phase.phase_id));
    for id in named {
        assert!(events.contains_key(id.as_str()), "{id} is not an event");
    }
    let question_ids: HashSet<&str> = truth.questions.iter().map(|question| question.id.as_str()).collect();
    assert_eq!(question_ids.len(), truth.questions.len());
}

#[test]
fn every_kind_of_question_is_asked_and_its_answers_are_visible_to_the_asker() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    for kind in QuestionKind::SWE {
        assert!(dataset.truth.questions.iter().any(|question| question.kind == kind), "no {kind:?} question");
    }
    assert!(dataset.truth.questions.len() >= 5 * GeneratorSize::parse("small").unwrap().tasks);
    for question in &dataset.truth.questions {
        assert!(!question.answers.is_empty(), "{} has no answer", question.id);
        assert!(dataset.agents.contains(&question.agent));
        assert_eq!(question.as_of.is_some(), question.kind == QuestionKind::Temporal);
        assert_eq!(question.entity.is_some(), question.kind == QuestionKind::MultiHop);
        for answer in &question.answers {
            let event = events[answer.as_str()];
            let visible = event["scope"] == "shared" || event["agent"] == question.agent.as_str();
            assert!(visible, "{} cannot see its answer {answer}", question.agent);
        }
    }
}

#[test]
fn temporal_answers_were_recorded_before_as_of_and_retracted_after_it() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::Temporal) {
        let as_of: Timestamp = question.as_of.as_deref().unwrap().parse().unwrap();
        let answer = events[question.answers[0].as_str()];
        assert_eq!(answer["kind"], "fact_asserted");
        assert!(answer["ts"].as_str().unwrap().parse::<Timestamp>().unwrap() < as_of);
        let retracted_later = dataset.events.iter().any(|event| {
            event["kind"] == "fact_retracted"
                && event["data"]["subject"] == answer["data"]["subject"]
                && event["data"]["object"] == answer["data"]["object"]
                && event["ts"].as_str().unwrap().parse::<Timestamp>().unwrap() > as_of
        });
        assert!(retracted_later, "{}: the old value is never replaced", question.id);
    }
}

#[test]
fn multi_hop_answers_do_not_name_the_entity() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::MultiHop) {
        let entity = question.entity.as_deref().unwrap();
        let mentions = dataset.events.iter().any(|event| event.to_string().contains(entity));
        assert!(mentions, "the entity {entity} appears in no event");
        for answer in &question.answers {
            assert!(!events[answer.as_str()].to_string().contains(entity), "{answer} names {entity} itself");
        }
    }
}

#[test]
fn paraphrase_questions_share_no_number_or_code_token_with_their_answers() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    for question in dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::Paraphrase) {
        let asked = content_terms(&question.text);
        assert!(asked.code_tokens().is_empty() && asked.numbers().is_empty(), "{}", question.text);
        for answer in &question.answers {
            let said = content_terms(&content_text(events[answer.as_str()]));
            let shared: Vec<&String> = asked.words().iter().filter(|word| said.words().contains(word)).collect();
            assert!(shared.len() <= 1, "{:?} shares {shared:?} with {answer}", question.text);
        }
    }
}

#[test]
fn key_facts_are_in_the_events_of_the_phase_owner() {
    let dataset = sized("small");
    for phase in &dataset.truth.phases {
        let start = dataset.events.iter().position(|event| event["id"] == phase.phase_id.as_str()).unwrap();
        let end = start
            + dataset.events[start..]
                .iter()
                .position(|event| event["data"]["phase_id"] == phase.phase_id.as_str())
                .expect("every phase completes");
        let text: String = dataset.events[start..=end]
            .iter()
            .filter(|event| event["agent"] == phase.agent.as_str())
            .map(|event| event.to_string().to_lowercase())
            .collect();
        assert!((2..=5).contains(&phase.key_facts.len()), "{:?}", phase.key_facts);
        for fact in &phase.key_facts {
            assert!(text.contains(&fact.to_lowercase()), "{fact} is not in phase {}", phase.phase_id);
        }
    }
}

#[test]
fn contradictions_are_unretracted_conflicts_on_single_valued_facts_or_unsuperseded_decisions() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    let policy = ConsolidationPolicy::default();
    assert!(!dataset.truth.contradictions.is_empty());
    for (older, newer) in &dataset.truth.contradictions {
        let (older, newer) = (events[older.as_str()], events[newer.as_str()]);
        assert!(older["ts"].as_str() < newer["ts"].as_str());
        assert_eq!(older["kind"], newer["kind"]);
        if older["kind"] == "fact_asserted" {
            let predicate = older["data"]["predicate"].as_str().unwrap();
            assert!(policy.is_single_valued(predicate), "{predicate} is multi-valued by default");
            assert_eq!(older["data"]["subject"], newer["data"]["subject"]);
            assert_eq!(older["data"]["predicate"], newer["data"]["predicate"]);
            assert_ne!(older["data"]["object"], newer["data"]["object"]);
            let retracted = dataset.events.iter().any(|event| {
                event["kind"] == "fact_retracted"
                    && event["data"]["object"] == older["data"]["object"]
                    && event["data"]["subject"] == older["data"]["subject"]
            });
            assert!(!retracted, "a retracted fact is a change, not a contradiction");
        } else {
            assert_eq!(older["kind"], "decision_made");
            assert_eq!(older["data"]["title"], newer["data"]["title"]);
            assert_ne!(older["data"]["choice"], newer["data"]["choice"]);
            assert!(newer["data"]["supersedes"].is_null());
        }
    }
}

#[test]
fn near_misses_differ_in_what_matters_and_duplicates_keep_their_guards() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    for (first, second) in &dataset.truth.near_misses {
        let (first, second) = (events[first.as_str()], events[second.as_str()]);
        assert_eq!(first["agent"], second["agent"]);
        let (first, second) = (content_terms(&content_text(first)), content_terms(&content_text(second)));
        let guards_differ = first.numbers() != second.numbers()
            || first.code_tokens() != second.code_tokens()
            || first.negation_count() != second.negation_count();
        assert!(guards_differ && !lexically_equivalent(&first, &second));
    }
    for group in &dataset.truth.duplicate_groups {
        assert!((2..=3).contains(&group.len()));
        let members: Vec<&Value> = group.iter().map(|id| events[id.as_str()]).collect();
        assert!(members.iter().all(|event| event["agent"] == members[0]["agent"]));
        assert!(members.iter().all(|event| event["kind"] == members[0]["kind"]));
        let terms: Vec<_> = members.iter().map(|event| content_terms(&content_text(event))).collect();
        for other in &terms[1..] {
            assert_eq!(other.numbers(), terms[0].numbers());
            assert_eq!(other.code_tokens(), terms[0].code_tokens());
            assert_eq!(other.negation_count(), terms[0].negation_count());
        }
    }
}

#[test]
fn never_forget_holds_pins_preferences_and_active_decisions_only() {
    let dataset = sized("small");
    let events = events_by_id(&dataset);
    let superseded: HashSet<&str> =
        dataset.events.iter().filter_map(|event| event["data"]["supersedes"].as_str()).collect();
    let pinned: HashSet<&str> = dataset
        .events
        .iter()
        .filter(|event| event["kind"] == "memory_pinned")
        .map(|event| event["data"]["item_id"].as_str().unwrap())
        .collect();
    assert!(!pinned.is_empty());
    for id in &dataset.truth.never_forget {
        let event = events[id.as_str()];
        let kind = event["kind"].as_str().unwrap();
        let important = event["importance"].as_f64().is_some_and(|importance| importance >= 0.9);
        let active_decision = kind == "decision_made" && !superseded.contains(id.as_str());
        assert!(important || active_decision || kind == "preference_set" || pinned.contains(id.as_str()));
    }
    assert!(superseded.iter().all(|id| !dataset.truth.never_forget.iter().any(|kept| kept == id)));
}

#[test]
fn tiny_is_small_enough_for_quick_tests() {
    let dataset = sized("tiny");
    assert_eq!(dataset.agents, ["planner", "coder-1", "reviewer"]);
    assert!(dataset.events.len() < 200, "{} events", dataset.events.len());
    assert_eq!(dataset.truth.phases.len(), 2 * 4);
}

#[test]
fn two_agents_and_many_agents_both_make_a_story() {
    for (agents, expected) in [(2, "coder-1"), (12, "coder-7")] {
        let size = GeneratorSize { agents, tasks: 3, filler_per_phase: 2 };
        let dataset = generate(1, size);
        assert_eq!(dataset.agents.last().unwrap(), expected);
        assert_eq!(dataset.truth.phases.len(), 12);
        for event in &dataset.events {
            decode_json(&serde_json::to_vec(event).unwrap(), &DecodeLimits::default()).unwrap();
        }
    }
}
