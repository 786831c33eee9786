//! What query answers say, through a real `mneme serve` (issue 16): a
//! request field the verb does not take is refused naming it, over HTTP and
//! NATS (item 5); a superseded decision says what replaced it in its search
//! hit and its item (item 3); an importance comes back as published
//! (item 10).

mod common;

use common::{MnemeServer, encode, typed};
use mneme_api::ErrorBody;
use mneme_api::context::ContextAnswer;
use mneme_api::log::{AcceptedEvents, AgentProvenance, EventsPage, LogEntry};
use mneme_api::memory::{ItemAnswer, SearchAnswer};
use mneme_events::EventId;
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

fn event(agent: &str, kind: &str, data: Value, importance: Option<f64>) -> Value {
    let mut event = json!({
        "id": EventId::new().to_string(), "swarm": "demo", "agent": agent, "ts": "2026-01-06T10:30:00Z",
        "kind": kind, "data": data, "scope": "shared",
    });
    if let Some(importance) = importance {
        event["importance"] = json!(importance);
    }
    event
}

/// A decision, the decision that supersedes it (importance 0.8), and a
/// message; answers the ids and the last seq.
fn publish_decisions(server: &MnemeServer) -> (String, String, u64) {
    let redis = event(
        "coder",
        "decision_made",
        json!({"title": "Token storage", "choice": "keep refresh tokens in redis", "rationale": "fast"}),
        None,
    );
    let redis_id = redis["id"].as_str().unwrap().to_string();
    let postgres = event(
        "coder",
        "decision_made",
        json!({"title": "Token storage", "choice": "keep refresh tokens in postgres", "rationale": "durable",
               "supersedes": redis_id}),
        Some(0.8),
    );
    let postgres_id = postgres["id"].as_str().unwrap().to_string();
    let message =
        event("coder", "message_recorded", json!({"role": "assistant", "text": "storage settled"}), Some(0.3));
    let accepted: AcceptedEvents = server.post_typed("/v1/events", &json!([redis, postgres, message]).to_string());
    let last_seq = accepted.accepted[2].seq;
    (redis_id, postgres_id, last_seq)
}

fn assert_unknown_field(what: &str, (status, body): (u16, Value), field: &str) {
    eprintln!("  {what}: {status} {body}");
    assert_eq!(status, 400, "{what}: {body}");
    let ErrorBody { error } = typed(what, body);
    assert_eq!(
        (error.status, error.code.as_str(), error.field.as_deref()),
        (400, "unknown_field", Some(field)),
        "{what}"
    );
    assert!(error.message.contains(field), "{what}: the message does not name {field:?}: {}", error.message);
}

#[test]
fn over_http_unknown_fields_are_refused_superseded_items_say_so_and_importance_is_as_published() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let (redis_id, postgres_id, seq) = publish_decisions(&server);
    let base = "/v1/swarms/demo/agents/coder";

    // Item 5: query strings and bodies refuse what they do not take.
    let get = |path: &str| server.get_as(None, path);
    assert_unknown_field("search kk", get(&format!("{base}/search?q=x&kk=3&min_seq={seq}")), "kk");
    assert_unknown_field("graph hopz", get(&format!("{base}/graph?entity=coder&hopz=2")), "hopz");
    assert_unknown_field("context GET k", get(&format!("{base}/context?q=x&k=3")), "k");
    assert_unknown_field("items minseq", get(&format!("{base}/items?minseq={seq}")), "minseq");
    assert_unknown_field("events form_seq", get("/v1/swarms/demo/events?form_seq=1"), "form_seq");
    let post_context = |body: Value| server.post(&format!("{base}/context"), &body.to_string());
    // `q` is the search's field; the context's body calls it `query`.
    assert_unknown_field("context body q", post_context(json!({"q": "x", "budget": 500})), "q");
    assert_unknown_field("context body kk", post_context(json!({"query": "x", "kk": 3})), "kk");
    assert_unknown_field("context body k", post_context(json!({"query": "x", "k": 3})), "k");
    assert_unknown_field(
        "context signals",
        post_context(json!({"query": "x", "signals": {"errors": ["E"]}})),
        "signals.errors",
    );
    // Routes that take no parameters refuse any (found in review).
    assert_unknown_field("deadletters x", get("/v1/swarms/demo/deadletters?x=1"), "x");
    assert_unknown_field("agents verbose", get("/v1/swarms/demo/agents?verbose=true"), "verbose");
    let post = |path: &str, body: Value| server.post(path, &body.to_string());
    assert_unknown_field("events dry_run", post("/v1/events?dry_run=true", json!([])), "dry_run");
    assert_unknown_field(
        "context body min_seq",
        post(&format!("{base}/context?min_seq=1"), json!({"query": "x"})),
        "min_seq",
    );
    assert_unknown_field(
        "purge dry_run",
        post("/v1/swarms/demo/purge?dry_run=true", json!({"item_ids": []})),
        "dry_run",
    );
    // What the verb takes still works.
    let (status, context) = post_context(json!({"query": "refresh tokens in postgres", "budget": 500, "min_seq": seq}));
    assert_eq!(status, 200, "{context}");
    let context: ContextAnswer = typed("context", context);
    assert!(context.text.contains("postgres"), "{context:?}");

    // Item 3: the superseded decision says what replaced it.
    let search: SearchAnswer =
        server.get_typed(&format!("{base}/search?q={}&min_seq={seq}", encode("refresh tokens redis postgres")));
    let superseded_by = |id: &str| {
        let hit = search.hits.iter().find(|hit| hit.item_id == id);
        hit.unwrap_or_else(|| panic!("{id} is a hit: {search:?}")).superseded_by.clone()
    };
    assert_eq!(superseded_by(&redis_id), Some(postgres_id.clone()));
    assert_eq!(superseded_by(&postgres_id), None);
    let redis: ItemAnswer = server.get_typed(&format!("{base}/items/{redis_id}"));
    assert_eq!((redis.superseded_by.as_deref(), redis.state.as_str()), (Some(postgres_id.as_str()), "active"));

    // Item 10: importance as published, in the item, the log and provenance.
    let postgres: ItemAnswer = server.get_typed(&format!("{base}/items/{postgres_id}"));
    assert_eq!((postgres.importance, postgres.superseded_by.as_deref()), (Some(0.8), None), "{postgres:?}");
    let importance = |entry: &LogEntry| match entry {
        LogEntry::Event(event) => event.decode().expect("the log's events decode").importance,
        LogEntry::Invalid(invalid) => panic!("an invalid record: {invalid:?}"),
        LogEntry::Erased(erased) => panic!("an erased record: {erased:?}"),
    };
    let events: EventsPage = server.get_typed("/v1/swarms/demo/events");
    let published: Vec<Option<f32>> = events.events.iter().map(importance).collect();
    assert_eq!(published, [None, Some(0.8), Some(0.3)], "{events:?}");
    let provenance: AgentProvenance = server.get_typed(&format!("{base}/provenance/{postgres_id}"));
    assert_eq!(importance(&provenance.events[0]), Some(0.8), "{provenance:?}");
}

#[test]
fn over_nats_query_bodies_refuse_unknown_fields_naming_them() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), Some(&nats.url()));
    let (redis_id, postgres_id, seq) = publish_decisions(&server);
    let client = runtime.block_on(async_nats::connect(nats.url())).unwrap();
    let query = |verb: &str, body: Value| -> Value {
        let reply = common::nats_request(&runtime, &client, format!("mneme.demo.coder.query.{verb}"), &body);
        serde_json::from_slice(&reply).unwrap()
    };
    let refused = |what: &str, answer: Value, field: &str| assert_unknown_field(what, (400, answer), field);
    refused("search kk", query("search", json!({"q": "x", "kk": 3})), "kk");
    refused("context q", query("context", json!({"q": "the search verb's field", "budget": 500})), "q");
    refused("context kk", query("context", json!({"query": "x", "kk": 3})), "kk");
    refused("context k", query("context", json!({"query": "x", "k": 3})), "k");
    refused("context signals", query("context", json!({"query": "x", "signals": {"file": "a.rs"}})), "signals.file");
    refused("graph hopz", query("graph", json!({"entity": "coder", "hopz": 2})), "hopz");
    refused("provenance id", query("provenance", json!({"id": redis_id})), "id");
    refused("phase level", query("phase", json!({"levle": "summary"})), "levle");
    let ErrorBody { error } = typed("phase without phase_id", query("phase", json!({"level": "summary"})));
    assert_eq!((error.status, error.field.as_deref()), (400, Some("phase_id")), "a level without a phase: {error:?}");
    // The same answers as over HTTP for what the verbs take.
    let search: SearchAnswer =
        typed("search", query("search", json!({"q": "refresh tokens redis postgres", "min_seq": seq})));
    let redis = search.hits.iter().find(|hit| hit.item_id == redis_id).expect("the redis decision is a hit");
    assert_eq!(redis.superseded_by.as_deref(), Some(postgres_id.as_str()), "{search:?}");
}
