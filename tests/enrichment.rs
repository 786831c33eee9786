//! The deep tier end to end (issue 39, part 1), on a real `mneme serve`
//! with the 8-bit all-MiniLM-L6-v2 as its deep model (on two enricher
//! threads) and hashed static vectors: the enricher records every item's
//! deep vector on the log, the backlog shows in `/healthz` and `/metrics`
//! and drains to 0, a reworded question finds its answer, a restart embeds
//! nothing again, an agent's token may not publish the kind and a bad one
//! is refused naming its field. The float model serves the tier too.

mod common;

use std::time::Duration;

use common::{MnemeServer, encode, reviewer_and_tokens, typed, wait_until};
use mneme_api::ErrorBody;
use mneme_api::log::{AcceptedEvents, Health};
use mneme_api::memory::SearchAnswer;
use serde_json::{Value, json};

const OPERATOR_TOKEN: &str = "operator-secret-0123456789";
const CODER_TOKEN: &str = "coder-secret-0123456789";

const TEXTS: [(&str, &str); 6] = [
    ("shared", "The nightly database migration finished at noon without errors."),
    ("private", "Our ledger service stores its balances in postgres."),
    ("shared", "I finally joined the bouldering gym and now climb three evenings a week."),
    ("private", "The deploy failed because an environment variable was missing."),
    ("shared", "Please rotate the signing keys before Friday's release."),
    ("private", "The flaky integration test was quarantined until the fix lands."),
];

fn config(model: &str) -> String {
    let tokens = reviewer_and_tokens(&[("operator", OPERATOR_TOKEN, None), ("coder-key", CODER_TOKEN, Some("coder"))]);
    format!(
        "{tokens}\n[enrichment]\nmodel = \"{model}\"\nthreads = 2\nidle_ms = 50\n\n[consolidation]\nenabled = false\n"
    )
}

/// Publishes `TEXTS` as the coder's messages; their ids, in order.
fn publish_texts(server: &MnemeServer) -> Vec<String> {
    let events: Vec<Value> = TEXTS
        .iter()
        .enumerate()
        .map(|(index, (scope, text))| {
            json!({"id": mneme_events::EventId::new().to_string(), "swarm": "demo", "agent": "coder", "scope": scope, "kind": "message_recorded",
                "data": {"role": "user", "text": text}, "ts": format!("2026-03-01T10:0{index}:00Z")})
        })
        .collect();
    let (status, accepted) = server.post_as(Some(OPERATOR_TOKEN), "/v1/events", &Value::Array(events).to_string());
    assert_eq!(status, 202, "{accepted}");
    typed::<AcceptedEvents>("publish", accepted).accepted.into_iter().map(|event| event.id).collect()
}

fn enrichment(server: &MnemeServer) -> Value {
    let health: Health = typed("/healthz", server.get_as(None, "/healthz").1);
    serde_json::to_value(&health.swarms[0].enrichment).unwrap()
}

/// Waits until the enricher has recorded a vector for each of `TEXTS`
/// and nothing waits, and checks it ran the model named `model_prefix`.
fn drained_by(server: &MnemeServer, model_prefix: &str) {
    wait_until("the backlog drains", Duration::from_secs(120), || {
        let report = enrichment(server);
        report["backlog"] == 0 && report["recorded"] == TEXTS.len()
    });
    let report = enrichment(server);
    assert!(report["model"].as_str().unwrap().starts_with(model_prefix), "{report}");
}

fn search(server: &MnemeServer, agent: &str, query: &str, min_seq: u64) -> Vec<String> {
    let (status, answer) = server.get_as(
        Some(OPERATOR_TOKEN),
        &format!("/v1/swarms/demo/agents/{agent}/search?q={}&k=3&min_seq={min_seq}", encode(query)),
    );
    assert_eq!(status, 200, "{answer}");
    typed::<SearchAnswer>("search", answer).hits.into_iter().map(|hit| hit.item_id).collect()
}

#[test]
fn the_enricher_records_deep_vectors_that_answer_a_reworded_question_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with(dir.path(), None, &config("minilm-int8"));
    let climbing = publish_texts(&server)[2].clone();

    // Every item gets its vector, each once: 3 shared, 3 private.
    drained_by(&server, "all-minilm-l6-v2-int8@sha256:");
    let metrics = server.metrics_as(OPERATOR_TOKEN);
    assert!(metrics.contains("mneme_enrichment_backlog{swarm=\"demo\"} 0"), "{metrics}");

    // On the log: one private event (the coder's private items) and one
    // shared (its shared items, which the planner's memory holds too).
    let (_, page) = server.get_as(Some(OPERATOR_TOKEN), "/v1/swarms/demo/events?from_seq=1&limit=100");
    let recorded: Vec<&Value> =
        page["events"].as_array().unwrap().iter().filter(|entry| entry["kind"] == "embeddings_computed").collect();
    let mut scopes: Vec<(&str, usize)> = recorded
        .iter()
        .map(|event| (event["scope"].as_str().unwrap(), event["data"]["vectors"].as_array().unwrap().len()))
        .collect();
    scopes.sort_unstable();
    assert_eq!(scopes, [("private", 3), ("shared", 3)], "{recorded:?}");
    assert!(recorded.iter().all(|event| event["agent"] == "coder" && event["data"]["dimensions"] == 384));
    let last_seq = recorded.iter().map(|event| event["seq"].as_u64().unwrap()).max().unwrap();

    // A question none of whose words the answer uses.
    let question = "Which sport did she take up recently?";
    assert_eq!(search(&server, "coder", question, last_seq).first(), Some(&climbing));
    assert_eq!(search(&server, "planner", question, last_seq).first(), Some(&climbing));

    // An agent's token may not record deep vectors; a malformed one is
    // refused before the log, naming its field.
    let vector = recorded[0]["data"].clone();
    let forged = json!({"id": mneme_events::EventId::new().to_string(), "swarm": "demo", "agent": "coder", "scope": "shared", "kind": "embeddings_computed", "ts": "2026-03-01T11:00:00Z",
        "data": vector});
    let (status, refused) = server.post_as(Some(CODER_TOKEN), "/v1/events", &forged.to_string());
    let refused = typed::<ErrorBody>("a forged embeddings_computed", refused).error;
    assert_eq!((status, refused.code.as_str(), refused.field.as_deref()), (403, "reserved_kind", Some("[0].kind")));
    let mut short = forged.clone();
    short["data"]["dimensions"] = json!(383);
    let (status, refused) = server.post_as(Some(OPERATOR_TOKEN), "/v1/events", &short.to_string());
    let refused = typed::<ErrorBody>("a short vector", refused).error;
    assert_eq!((status, refused.field.as_deref()), (400, Some("data.vectors[0].values")), "{refused:?}");

    // A restart applies what the log holds: nothing is embedded again.
    server.restart();
    assert_eq!(search(&server, "coder", question, last_seq).first(), Some(&climbing));
    // The enricher looks every 50 ms.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(enrichment(&server)["recorded"], 0, "a restart embeds nothing again");
    assert_eq!(enrichment(&server)["backlog"], 0);
}

/// `[enrichment] model = "minilm"`: the float model on candle, whose
/// vectors are its own.
#[test]
fn the_float_model_serves_the_deep_tier_too() {
    let dir = tempfile::tempdir().unwrap();
    let server = MnemeServer::start_with(dir.path(), None, &config("minilm"));
    let climbing = publish_texts(&server)[2].clone();
    drained_by(&server, "all-minilm-l6-v2@sha256:");
    let (_, page) = server.get_as(Some(OPERATOR_TOKEN), "/v1/swarms/demo/events?from_seq=1&limit=100");
    let last_seq = page["events"].as_array().unwrap().iter().map(|event| event["seq"].as_u64().unwrap()).max().unwrap();
    assert_eq!(search(&server, "planner", "Which sport did she take up recently?", last_seq).first(), Some(&climbing));
}
