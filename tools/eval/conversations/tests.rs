//! The conversation generator's tests: determinism, events the API takes,
//! and questions whose answers are real turns of the person asked about.

use std::collections::{HashMap, HashSet};

use mneme_events::{DecodeLimits, decode_json};

use super::*;

fn sized(name: &str) -> Dataset {
    generate_conversations(7, ConversationSize::parse(name).expect("a known size"))
}

#[test]
fn sizes_parse_by_name_and_by_numbers() {
    assert_eq!(ConversationSize::parse("small").unwrap(), ConversationSize { pairs: 3, sessions: 16 });
    assert_eq!(ConversationSize::parse("2:9").unwrap(), ConversationSize { pairs: 2, sessions: 9 });
    assert!(ConversationSize::parse("0:9").unwrap_err().contains("1 to 24 pairs"));
    assert!(ConversationSize::parse("25:9").unwrap_err().contains("1 to 24 pairs"));
    assert!(ConversationSize::parse("2:3").unwrap_err().contains("at least 4 sessions"));
    assert!(ConversationSize::parse("huge").unwrap_err().contains("pairs:sessions"));
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_other_ones() {
    let size = ConversationSize::parse("tiny").unwrap();
    let first = serde_json::to_string(&generate_conversations(42, size)).unwrap();
    assert_eq!(first, serde_json::to_string(&generate_conversations(42, size)).unwrap());
    assert_ne!(first, serde_json::to_string(&generate_conversations(43, size)).unwrap());
}

#[test]
fn every_turn_decodes_with_unique_ids_and_increasing_times() {
    let dataset = sized("small");
    assert_eq!(dataset.swarm, crate::eval::dataset::SwarmKind::Conversations);
    let mut ids = HashSet::new();
    let mut last: Option<Timestamp> = None;
    for event in &dataset.events {
        let bytes = serde_json::to_vec(event).unwrap();
        decode_json(&bytes, &DecodeLimits::default()).unwrap_or_else(|error| panic!("{error:?}\n{event}"));
        assert_eq!(event["kind"], "message_recorded");
        assert!(ids.insert(event["id"].as_str().unwrap().to_string()));
        let ts: Timestamp = event["ts"].as_str().unwrap().parse().unwrap();
        assert!(last.is_none_or(|last| last < ts), "times must strictly increase");
        last = Some(ts);
    }
    // Sessions run over months, not one afternoon.
    let first: Timestamp = dataset.events[0]["ts"].as_str().unwrap().parse().unwrap();
    assert!(last.unwrap().unix_nanos() - first.unix_nanos() > 60 * MILLIS_PER_DAY as i64 * 1_000_000);
}

#[test]
fn every_question_type_is_asked_and_answered_by_its_persons_own_turns() {
    let dataset = sized("small");
    let by_id: HashMap<&str, &Value> =
        dataset.events.iter().map(|event| (event["id"].as_str().unwrap(), event)).collect();
    for kind in QuestionKind::CONVERSATIONS {
        assert!(dataset.truth.questions.iter().any(|question| question.kind == kind), "no {kind:?} question");
    }
    let mut multi_session = 0;
    for question in &dataset.truth.questions {
        assert_eq!(question.scoring, Scoring::Each);
        assert!(!question.answers.is_empty(), "{} has no answer", question.text);
        let distinct: HashSet<&String> = question.answers.iter().collect();
        assert_eq!(distinct.len(), question.answers.len(), "{}", question.text);
        for answer in &question.answers {
            let turn = by_id[answer.as_str()];
            // The question names its person; every answer is that person's turn.
            assert_eq!(turn["agent"], question.agent, "{}", question.text);
            assert!(question.text.to_lowercase().contains(&question.agent), "{}", question.text);
        }
        if question.kind == QuestionKind::MultiHop {
            assert!(question.answers.len() >= 2, "{}", question.text);
            let days: HashSet<&str> =
                question.answers.iter().map(|answer| &by_id[answer.as_str()]["ts"].as_str().unwrap()[..10]).collect();
            multi_session += usize::from(days.len() >= 2);
        }
    }
    let multi_hop = dataset.truth.questions.iter().filter(|question| question.kind == QuestionKind::MultiHop).count();
    assert_eq!(multi_session, multi_hop, "every multi-hop question spans sessions");
}

#[test]
fn a_multi_hop_follow_up_names_its_subject_only_through_the_first_turn() {
    let dataset = sized("small");
    let by_id: HashMap<&str, &Value> =
        dataset.events.iter().map(|event| (event["id"].as_str().unwrap(), event)).collect();
    for question in dataset.truth.questions.iter().filter(|question| question.text.contains("adopted")) {
        let follow_up = by_id[question.answers[1].as_str()]["data"]["text"].as_str().unwrap().to_lowercase();
        for kind in ["dog", "cat", "rabbit", "bird"] {
            assert!(!follow_up.contains(kind), "{follow_up} names the pet's kind");
        }
    }
}
