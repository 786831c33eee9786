//! Whole-system tests: a real `mneme serve` on the embedded log and on a
//! real nats-server, the example trajectory published over HTTP, queries,
//! replay verification online and offline, restart, dead letters.

mod common;

use std::io::BufRead;

use common::{MnemeServer, example_path, last_seq_of_publish, stdout_of, typed};
use mneme_api::consolidation::{ConsolidationAnswer, ContradictionsAnswer, PurgeAnswer};
use mneme_api::context::{ContextAnswer, PhaseAnswer, PhaseEvents, PhasesAnswer};
use mneme_api::handoffs::HandoffsAnswer;
use mneme_api::log::{AcceptedEvents, DeadLetters, EventsPage, Health, LogEntry, SwarmProvenance};
use mneme_api::memory::{Digest, GraphAnswer, Hit, ItemStates, SearchAnswer};
use mneme_api::{ErrorBody, ErrorDetail};
use mneme_events::{Event, Scope};
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

fn hits_in(server: &MnemeServer, agent: &str, query: &str, min_seq: u64, mode: &str) -> Vec<Hit> {
    let path =
        format!("/v1/swarms/demo/agents/{agent}/search?q={query}&k=5&min_seq={min_seq}&mode={mode}&explain=true");
    server.get_typed::<SearchAnswer>(&path).hits
}

/// Exact-term hits: BM25 alone, so every hit contains the term.
fn hits(server: &MnemeServer, agent: &str, query: &str, min_seq: u64) -> Vec<Hit> {
    hits_in(server, agent, query, min_seq, "bm25")
}

fn digest(server: &MnemeServer, agent: &str, min_seq: u64) -> Digest {
    server.get_typed(&format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={min_seq}"))
}

/// The log's last seq, as `/healthz` says it.
fn log_end(server: &MnemeServer) -> u64 {
    server.get_typed::<Health>("/healthz").last_seq
}

/// An entry of the log that must be a valid event, decoded.
fn event_of(entry: &LogEntry) -> Event {
    let LogEntry::Event(event) = entry else { panic!("an invalid record on the log: {entry:?}") };
    event.decode().expect("the log's events decode")
}

/// POSTs and reads the answer as the wire type `T`, with exactly this status.
fn post_expecting<T: serde::de::DeserializeOwned>(server: &MnemeServer, path: &str, body: &str, expected: u16) -> T {
    let (status, answer) = server.post(path, body);
    assert_eq!(status, expected, "POST {path}: {answer}");
    typed(&format!("POST {path}"), answer)
}

/// `mneme replay --verify` on the stopped server's data dir matches the
/// memory it left, for every agent of the example.
fn assert_offline_replay_matches(server: &MnemeServer) {
    for agent in ["planner", "coder", "reviewer"] {
        let offline = std::process::Command::new(common::MNEME)
            .args(["replay", "--swarm", "demo", "--agent", agent, "--verify", "--data-dir"])
            .arg(&server.data_dir)
            .arg("--config")
            .arg(&server.config_path)
            .output()
            .unwrap();
        let offline = stdout_of(&offline);
        assert!(offline.contains("MATCH") && !offline.contains("MISMATCH"), "{offline}");
    }
}

/// Handoffs in the example: Mneme delivers each with a `handoff_received`
/// of its own, appended after the example's events.
const EXAMPLE_HANDOFFS: u64 = 4;

/// Waits until the log holds `seq` events; panics after 30 s.
fn wait_for_log_end(server: &MnemeServer, seq: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while log_end(server) < seq {
        assert!(std::time::Instant::now() < deadline, "the log never reached seq {seq}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Publishes the example, checks queries, and verifies replay for every
/// agent against the live memory. Returns the last seq, once the example's
/// handoffs are delivered.
fn publish_and_check_example(server: &MnemeServer) -> u64 {
    let published = stdout_of(&server.cli(&["publish", example_path().to_str().unwrap()]));
    assert!(published.contains("published 572 events (0 already on the log)"), "{published}");
    // On NATS the writer lease's fence takes the log's first seq.
    let example_end = last_seq_of_publish(&published);
    assert!((572..=573).contains(&example_end), "{published}");
    let last_seq = example_end + EXAMPLE_HANDOFFS;
    wait_for_log_end(server, last_seq);
    let handoffs: HandoffsAnswer =
        server.get_typed(&format!("/v1/swarms/demo/agents/coder/handoffs?min_seq={last_seq}"));
    let handoffs = handoffs.handoffs;
    assert_eq!(handoffs.len(), 3, "{handoffs:?}");
    assert!(
        handoffs
            .iter()
            .all(|handoff| handoff.package.as_ref().is_some_and(|package| package.bundle.budget_tokens == 2000)),
        "{handoffs:?}"
    );

    let found = hits(server, "coder", "TokenExpiredError", last_seq);
    assert!(!found.is_empty());
    for hit in &found {
        assert!(hit.text.contains("TokenExpiredError"), "{hit:?}");
        assert_eq!(hit.provenance[0].seq, hit.seq);
        assert_eq!(hit.provenance[0].event_id, hit.item_id);
    }
    let identifier = hits(server, "coder", "refresh_access_token", last_seq);
    assert!(identifier.iter().any(|hit| hit.text.contains("refresh_access_token")));

    // Every mode answers; hybrid explains which retrievers found each hit.
    for mode in ["vector", "graph", "hybrid"] {
        assert!(!hits_in(server, "coder", "TokenExpiredError", last_seq, mode).is_empty(), "{mode}");
    }
    let hybrid = hits_in(server, "coder", "TokenExpiredError", last_seq, "hybrid");
    assert!(hybrid[0].explain.as_ref().is_some_and(|explain| explain.contains_key("bm25")), "{:?}", hybrid[0]);
    let graph: GraphAnswer = server.get_typed("/v1/swarms/demo/agents/coder/graph?entity=src/auth/token.rs&hops=1");
    assert_eq!(graph.center, "file:src/auth/token.rs");
    let relations: Vec<&str> = graph.edges.iter().map(|edge| edge.relation.as_str()).collect();
    assert!(relations.contains(&"modifies") && relations.contains(&"fixes"), "{relations:?}");
    let printed = stdout_of(&server.cli(&["graph", "--agent", "coder", "src/auth/token.rs", "--hops", "1"]));
    assert!(printed.starts_with("file:src/auth/token.rs\n"), "{printed}");
    assert!(printed.contains("-[fixes]->") && printed.contains("valid "), "{printed}");
    let graph_provenance = graph.edges[0].provenance[0].seq;
    assert!(graph_provenance >= 1 && graph_provenance <= last_seq);
    let edge_id = &graph.edges[0].id;
    let edge_events: SwarmProvenance =
        server.get_typed(&format!("/v1/swarms/demo/provenance/{}", common::encode(edge_id)));
    assert!(!edge_events.events.is_empty(), "{edge_events:?}");

    let context: ContextAnswer = server.get_typed(&format!(
        "/v1/swarms/demo/agents/coder/context?q=refresh%20token%20failure&budget=700&min_seq={last_seq}"
    ));
    let tokens = context.tokens;
    assert!(tokens > 0 && tokens <= 700, "{tokens}");
    let items = &context.items;
    assert!(items.iter().any(|item| item.tier == "relevant" && item.reason == "query match"), "{context:?}");
    assert!(items.iter().any(|item| item.tier == "relevant" && item.reason == "recent turn"), "{context:?}");
    assert!(items.iter().all(|item| !item.provenance.is_empty()), "{context:?}");

    // Signals over POST: debugging with an error widens the critical tier,
    // which then carries the failing run.
    let debugging: ContextAnswer = post_expecting(
        server,
        "/v1/swarms/demo/agents/coder/context",
        &json!({"query": "refresh token", "budget": 900, "signals": {
            "activity": "debugging", "current_file": "src/auth/token.rs",
            "recent_errors": ["reuse_revokes_newer_token_in_family panicked"], "thinking_budget": 0.2}})
        .to_string(),
        200,
    );
    assert_eq!(debugging.policy, "conservative");
    assert!(debugging.tokens <= 900);
    assert!(debugging.tiers["critical"].share > context.tiers["critical"].share * 900 / 700, "{debugging:?}");
    assert!(debugging.items.iter().any(|item| item.reason == "recent error"), "{debugging:?}");
    let (status, refused) = server.post_refused(
        "/v1/swarms/demo/agents/coder/context",
        &json!({"query": "x", "signals": {"thinking_budget": 3.0}}).to_string(),
    );
    assert_eq!(status, 400);
    assert_eq!(refused.error.field.as_deref(), Some("thinking_budget"), "{refused}");
    let printed = stdout_of(&server.cli(&[
        "context",
        "--agent",
        "coder",
        "refresh token",
        "--budget",
        "600",
        "--activity",
        "debugging",
        "--file",
        "src/auth/token.rs",
    ]));
    assert!(printed.contains("## Critical"), "{printed}");

    // Provenance: the events behind a hit, in log order, and the audit view of them.
    let item_id = found[0].item_id.as_str();
    let provenance: SwarmProvenance = server.get_typed(&format!("/v1/swarms/demo/provenance/{item_id}"));
    // A shared item is in the memory of every agent that may see it.
    assert_eq!(found[0].scope, "shared");
    assert_eq!(provenance.holders, ["coder", "planner", "reviewer"]);
    assert_eq!(event_of(&provenance.events[0]).id.to_string(), item_id);
    assert_eq!(provenance.events[0].seq(), found[0].seq);
    let timeline = stdout_of(&server.cli(&["audit", item_id]));
    assert!(timeline.contains(item_id) && timeline.contains("coder"), "{timeline}");
    let export = stdout_of(&server.cli(&[
        "audit",
        "--agent",
        "planner",
        "--since",
        "2026-01-06T11:00:00Z",
        "--format",
        "jsonl",
    ]));
    // The CLI's own audit lines, not an answer of the API: read as JSON.
    let exported: Vec<Value> = export.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    assert!(!exported.is_empty());
    assert!(
        exported
            .iter()
            .all(|event| event["agent"] == "planner" && event["ts"].as_str().unwrap() >= "2026-01-06T11:00:00Z")
    );
    // Mneme's own events speak of the time of what they follow (a delivery
    // carries its handoff's 2026-01-06 time); when they were written stays
    // on the log for audit.
    let started = mneme_events::Timestamp::now().unix_nanos() - 3_600_000_000_000;
    let page: EventsPage = server.get_typed("/v1/swarms/demo/events?from_seq=1&limit=1000");
    let delivery = page
        .events
        .iter()
        .find_map(|entry| match entry {
            LogEntry::Event(event) if entry.kind() == Some("handoff_received") && event_of(entry).agent == "coder" => {
                Some(event.clone())
            }
            _ => None,
        })
        .expect("a handoff delivered to the coder on the log");
    let written = delivery.appended_at.expect("an append time").unix_nanos();
    assert!(event_of(&page.events[0]).ts.unix_nanos() < started, "the example's events are of 2026-01-06");
    assert!(delivery.decode().expect("an event").ts.unix_nanos() < started, "{delivery:?}");
    assert!(written > started, "written during this test: {delivery:?}");
    assert!(page.events.iter().all(|entry| matches!(entry, LogEntry::Event(event) if event.appended_at.is_some())));
    let seq = delivery.seq.to_string();
    let row = stdout_of(&server.cli(&["audit", "--agent", "coder", "--format", "table"]))
        .lines()
        .find(|line| line.trim_start().starts_with(&format!("{seq} ")))
        .map(str::to_string)
        .expect("the delivery in the audit table");
    assert!(row.contains(&format!("written {}", delivery.appended_at.unwrap())), "{row}");

    let missing = server.cli(&["audit", "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6"]);
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("unknown_item"));

    for agent in ["planner", "coder", "reviewer"] {
        let verified = stdout_of(&server.cli(&["replay", "--swarm", "demo", "--agent", agent, "--verify"]));
        assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{verified}");
    }
    last_seq
}

#[test]
fn embedded_example_is_searchable_replays_identically_and_survives_restart() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start(work.path(), None);
    let last_seq = publish_and_check_example(&server);
    let before: Vec<Digest> = ["planner", "coder", "reviewer"].iter().map(|a| digest(&server, a, last_seq)).collect();

    let metrics = ureq::get(&format!("{}/metrics", server.url)).call().unwrap().into_string().unwrap();
    // The coder's memory applied its own events and every other agent's
    // that are not private and carry content (another agent's forget,
    // cite, pin or purge manages that agent's memory, not this one).
    let log: EventsPage = server.get_typed(&format!("/v1/swarms/demo/events?from_seq=1&limit={last_seq}"));
    let managing_kinds = [
        "memory_archived",
        "memory_forgotten",
        "memory_cited",
        "memory_ignored",
        "memories_merged",
        "memory_decayed",
        "contradiction_detected",
        "contradiction_resolved",
        "phase_compressed",
        "memories_retrieved",
        "memory_pinned",
        "memory_unpinned",
        "memories_linked",
        "memory_purged",
    ];
    let visible_to_coder = log
        .events
        .iter()
        .map(event_of)
        .filter(|event| {
            event.agent == "coder" || (event.scope != Scope::Private && !managing_kinds.contains(&event.kind_name()))
        })
        .count();
    assert!(visible_to_coder > 363, "the coder sees others' shared events too");
    let applied = format!("mneme_events_applied_total{{swarm=\"demo\",agent=\"coder\"}} {visible_to_coder}");
    assert!(metrics.contains(&applied), "{applied} in {metrics}");
    assert!(metrics.contains("mneme_events_dead_lettered_total"), "{metrics}");
    assert!(metrics.contains("mneme_query_seconds"), "{metrics}");

    // `mneme tail` prints the log's entries as the API answers them.
    let tail = stdout_of(&server.cli(&["tail", "--agent", "planner", "--from-seq", "560"]));
    let tailed: Vec<LogEntry> =
        tail.lines().map(|line| typed("a line of mneme tail", serde_json::from_str(line).unwrap())).collect();
    assert!(!tailed.is_empty());
    assert!(tailed.iter().all(|entry| event_of(entry).agent == "planner" && entry.seq() >= 560));

    // The coder's items, newest first, a page at a time, with the counts.
    let items = |query: &str| -> ItemStates {
        server.get_typed(&format!("/v1/swarms/demo/agents/coder/items?min_seq={last_seq}&{query}"))
    };
    let first = items("limit=5");
    let total: usize = first.states.values().sum();
    assert_eq!(first.items.len(), 5);
    assert!(first.items.windows(2).all(|pair| pair[0].seq > pair[1].seq), "{first:?}");
    assert_eq!(first.next_before_seq, Some(first.items[4].seq));
    let second = items(&format!("limit=5&before_seq={}", first.items[4].seq));
    assert!(second.items.iter().all(|item| item.seq < first.items[4].seq) && second.items.len() == 5);
    // Every page of a state, to its end.
    let all_pages = |state: &str| {
        let mut listed = Vec::new();
        let mut page = items(&format!("state={state}&limit=200"));
        loop {
            listed.append(&mut page.items);
            let Some(before_seq) = page.next_before_seq else { return listed };
            page = items(&format!("state={state}&limit=200&before_seq={before_seq}"));
        }
    };
    let mut everything = Vec::new();
    for (state, count) in &first.states {
        let listed = all_pages(state);
        assert_eq!(listed.len(), *count, "{state}");
        assert!(listed.iter().all(|item| &item.state == state), "{state}: {listed:?}");
        everything.extend(listed);
    }
    assert_eq!(everything.len(), total);
    let pinned = all_pages("pinned");
    assert_eq!(pinned.len(), first.pinned);
    assert!(pinned.iter().all(|item| item.pinned));
    // A superseded decision says by what, as its search hit does.
    let superseded: Vec<_> =
        everything.iter().filter(|item| item.kind == "decision_made" && item.superseded_by.is_some()).collect();
    assert!(!superseded.is_empty(), "no superseded decision among {everything:?}");
    let (status, refused) =
        server.get_as(None, &format!("/v1/swarms/demo/agents/coder/items?min_seq={last_seq}&state=stale"));
    assert_eq!((status, &refused["error"]["field"]), (400, &json!("state")), "{refused}");

    // Publishing the same file again appends nothing: ids deduplicate.
    let again = stdout_of(&server.cli(&["publish", example_path().to_str().unwrap()]));
    let example_end = last_seq - EXAMPLE_HANDOFFS;
    assert!(
        again.contains(&format!("published 572 events (572 already on the log); last seq {example_end}")),
        "{again}"
    );

    server.stop();
    assert_offline_replay_matches(&server);

    server.restart();
    let after: Vec<Digest> = ["planner", "coder", "reviewer"].iter().map(|a| digest(&server, a, last_seq)).collect();
    for (before, after) in before.iter().zip(&after) {
        assert_eq!(before.digest, after.digest);
        assert_eq!(before.seq, after.seq);
    }
}

#[test]
fn an_invalid_event_in_a_batch_is_refused_and_nothing_is_appended() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let good = json!({"id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6", "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:30:00Z",
        "kind": "message_recorded", "data": {"role": "user", "text": "hello"}});
    // The bad and foreign events are forged from the good one as JSON.
    let mut bad = good.clone();
    bad["id"] = json!("01JGZ5V7Q8X9Y0Z1A2B3C4D5E7");
    bad["data"] = json!({"role": "user"});
    let (status, body) = server.post_refused("/v1/events", &json!([good, bad]).to_string());
    assert_eq!(status, 400, "{body}");
    assert_eq!(body.error.code, "missing_field");
    assert_eq!(body.error.field.as_deref(), Some("[1].data.text"));
    assert_eq!(log_end(&server), 0);

    let mut other_swarm = good.clone();
    other_swarm["swarm"] = json!("elsewhere");
    let (status, body) = server.post_refused("/v1/events", &other_swarm.to_string());
    assert_eq!(status, 404, "{body}");
    assert_eq!(body.error.code, "unknown_swarm");

    let body: AcceptedEvents = post_expecting(&server, "/v1/events", &good.to_string(), 202);
    assert_eq!(body.accepted[0].seq, 1);
    assert_eq!(log_end(&server), 1);

    let refused = |path: &str, status: u16| -> ErrorDetail {
        match ureq::get(&format!("{}{path}", server.url)).call() {
            Err(ureq::Error::Status(code, response)) if code == status => {
                typed::<ErrorBody>(path, response.into_json().unwrap()).error
            }
            other => panic!("expected {status} for {path}, got {other:?}"),
        }
    };
    assert_eq!(refused("/v1/swarms/demo/agents/coder/search?q=hello&k=100000", 400).field.as_deref(), Some("k"));
    assert_eq!(refused("/v1/swarms/demo/agents/coder/search?q=hello&k=many", 400).code, "invalid_parameter");
    assert_eq!(refused("/v1/swarms/demo/events?agent=co.der", 400).field.as_deref(), Some("agent"));
    assert_eq!(refused("/v1/swarms/demo/agents/nobody/search?q=x", 404).code, "unknown_agent");
    assert_eq!(refused("/v2/nothing", 404).code, "not_found");
}

#[test]
fn a_bad_record_on_the_embedded_log_is_dead_lettered_and_consumption_continues() {
    let work = tempfile::tempdir().unwrap();
    let log_dir = work.path().join("data/log");
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        use mneme_nats::EventLog;
        let log = mneme_nats::SledLog::open(&log_dir, "demo", mneme_nats::SledOptions::default()).unwrap();
        log.append_raw("coder", b"{\"this is\": \"not an event\"}").await.unwrap();
    });
    let server = MnemeServer::start(work.path(), None);
    let event = json!({"id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6", "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:30:00Z",
        "kind": "message_recorded", "data": {"role": "user", "text": "the migration of the ledger table finished"}});
    let body: AcceptedEvents = post_expecting(&server, "/v1/events", &event.to_string(), 202);
    assert_eq!(body.accepted[0].seq, 2);
    let found = hits(&server, "coder", "ledger", 2);
    assert_eq!(found.len(), 1);
    let letters = server.get_typed::<DeadLetters>("/v1/swarms/demo/deadletters").dead_letters;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].seq, 1);
    assert!(!letters[0].reason.is_empty());
    let verified = stdout_of(&server.cli(&["replay", "--swarm", "demo", "--agent", "coder", "--verify"]));
    assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{verified}");

    // The followed log: the dead letter and the event already there, then
    // one appended while the stream is open.
    let response = ureq::get(&format!("{}/v1/swarms/demo/events?follow=true", server.url)).call().unwrap();
    assert_eq!(response.content_type(), "text/event-stream");
    let mut frames = std::io::BufReader::new(response.into_reader()).lines().map(Result::unwrap);
    let mut next_entry = || {
        let (event, id, data) = (frames.next().unwrap(), frames.next().unwrap(), frames.next().unwrap());
        assert_eq!((event.as_str(), frames.next().unwrap().as_str()), ("event: entry", ""));
        let entry: LogEntry = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(id, format!("id: {}", entry.seq()));
        entry
    };
    assert!(matches!(next_entry(), LogEntry::Invalid(letter) if letter.seq == 1 && !letter.invalid.is_empty()));
    assert_eq!(text_of(&next_entry()), "the migration of the ledger table finished");
    let later = json!({"id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5E7", "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:31:00Z",
        "kind": "message_recorded", "data": {"role": "user", "text": "and the index was rebuilt"}});
    let _: AcceptedEvents = post_expecting(&server, "/v1/events", &later.to_string(), 202);
    let appended = next_entry();
    assert_eq!((appended.seq(), text_of(&appended)), (3, "and the index was rebuilt".to_string()));
    // A page size means nothing to a stream: refused, naming it.
    let (status, refused) = server.get_as(None, "/v1/swarms/demo/events?follow=true&limit=5");
    assert_eq!(status, 400, "{refused}");
    assert_eq!(refused["error"]["field"], "limit", "{refused}");
}

/// The `data.text` of a logged event.
fn text_of(entry: &LogEntry) -> String {
    let LogEntry::Event(event) = entry else { panic!("an invalid record on the log: {entry:?}") };
    event.event["data"]["text"].as_str().expect("a message has text").to_string()
}

#[test]
fn nats_example_is_searchable_replays_identically_and_dead_letters_foreign_bytes() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start(work.path(), Some(&nats.url()));
    let last_seq = publish_and_check_example(&server);

    // A third party publishes garbage to an events subject with a plain client.
    runtime.block_on(async {
        let client = async_nats::connect(nats.url()).await.unwrap();
        let jetstream = async_nats::jetstream::new(client);
        let ack =
            jetstream.publish("mneme.demo.coder.events.message_recorded", "not json at all".into()).await.unwrap();
        ack.await.unwrap();
    });
    let event = json!({"id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5E6", "swarm": "demo", "agent": "coder", "ts": "2026-01-06T10:30:00Z",
        "kind": "message_recorded", "data": {"role": "user", "text": "the ledger migration finished after the garbage"}});
    let body: AcceptedEvents = post_expecting(&server, "/v1/events", &event.to_string(), 202);
    let seq = body.accepted[0].seq;
    assert_eq!(seq, last_seq + 2);
    assert_eq!(hits(&server, "coder", "ledger", seq).len(), 1);
    let hybrid = hits_in(&server, "coder", "ledger", seq, "hybrid");
    assert!(hybrid[0].text.contains("ledger"), "{:?}", hybrid[0]);
    let letters = server.get_typed::<DeadLetters>("/v1/swarms/demo/deadletters").dead_letters;
    assert_eq!(letters.len(), 1, "{letters:?}");
    assert_eq!(letters[0].seq, last_seq + 1);
    assert_eq!(letters[0].raw, "not json at all");

    // Restart: memories come back from snapshots and resume from the log.
    let before = digest(&server, "coder", seq);
    server.restart();
    let after = digest(&server, "coder", seq);
    assert_eq!(before.digest, after.digest);
    let verified = stdout_of(&server.cli(&["replay", "--swarm", "demo", "--agent", "coder", "--verify"]));
    assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{verified}");
}

/// Phases completed while live are summarised by the configured model, once;
/// its summaries are on the log, so a replay with the model switched off
/// rebuilds the same memory.
#[test]
fn phases_are_summarised_by_a_model_once_and_replay_without_it_matches() {
    let mut llm = common::llm_server::FakeLlmServer::start();
    let work = tempfile::tempdir().unwrap();
    let extra = format!("\n[compression.llm]\nurl = \"{}\"\nmodel = \"fake\"\ntimeout_ms = 5000\n", llm.url());
    let mut server = MnemeServer::start_with(work.path(), None, &extra);
    let published = stdout_of(&server.cli(&["publish", example_path().to_str().unwrap()]));
    let last_seq = last_seq_of_publish(&published);

    // Every completed phase of every agent gets one phase_compressed event.
    let completed = |server: &MnemeServer| -> usize {
        ["planner", "coder", "reviewer"]
            .iter()
            .map(|agent| {
                let listing: PhasesAnswer =
                    server.get_typed(&format!("/v1/swarms/demo/agents/{agent}/phases?min_seq={last_seq}"));
                listing.phases.iter().filter(|phase| phase.status == "completed").count()
            })
            .sum()
    };
    let expected = completed(&server);
    assert!(expected >= 10, "{expected} completed phases");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let summaries = loop {
        // From the start: the example holds no phase_compressed, and a
        // phase completed early is summarised while the publish goes on,
        // so its summary may land before the publish's last seq.
        let events: EventsPage = server.get_typed("/v1/swarms/demo/events?from_seq=1&limit=10000");
        let summaries: Vec<LogEntry> =
            events.events.into_iter().filter(|entry| entry.kind() == Some("phase_compressed")).collect();
        if summaries.len() >= expected || std::time::Instant::now() > deadline {
            break summaries;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    assert_eq!(summaries.len(), expected, "one summary per completed phase");
    assert_eq!(llm.request_count(), expected, "the model was asked once per phase");
    let summary_seq = summaries.iter().map(LogEntry::seq).max().unwrap();

    let listing: PhasesAnswer =
        server.get_typed(&format!("/v1/swarms/demo/agents/planner/phases?min_seq={summary_seq}"));
    let phase = listing.phases.iter().find(|phase| phase.name == "investigate").unwrap();
    assert_eq!(phase.compressor.as_deref(), Some("llm:fake"), "{phase:?}");
    let phase_id = phase.phase_id.as_str();
    assert_eq!(phase_id, "01KE98KZ003SQZDANB75N9T00F", "a phase's id is its phase_started event's");
    let index: PhaseAnswer = server.get_typed(&format!("/v1/swarms/demo/agents/planner/phases/{phase_id}?level=index"));
    let index_text = index.text.as_ref().unwrap_or_else(|| panic!("not a text level: {index:?}"));
    assert!(index_text.text.starts_with("LLM"), "{index:?}");
    assert!(index_text.tokens <= 8);
    // `original` is exactly the phase's events, from the log.
    let full: PhaseAnswer = server.get_typed(&format!("/v1/swarms/demo/agents/planner/phases/{phase_id}?level=full"));
    let original: PhaseAnswer =
        server.get_typed(&format!("/v1/swarms/demo/agents/planner/phases/{phase_id}?level=original"));
    let PhaseEvents::Original(events) = &original.heading.events else { panic!("not the events: {original:?}") };
    let original_seqs: Vec<u64> = events.iter().map(LogEntry::seq).collect();
    let full_record = full.full.as_ref().unwrap_or_else(|| panic!("not the full level: {full:?}"));
    assert_eq!(original_seqs, full_record.event_seqs);
    let first = event_of(&events[0]);
    assert_eq!(first.id.to_string(), phase_id);
    assert_eq!(first.kind_name(), "phase_started");
    assert_eq!(event_of(events.last().unwrap()).kind_name(), "phase_completed");
    let bad_level =
        ureq::get(&format!("{}/v1/swarms/demo/agents/planner/phases/{phase_id}?level=gist", server.url)).call();
    assert!(matches!(bad_level, Err(ureq::Error::Status(400, _))));
    let printed = stdout_of(&server.cli(&["phase", "--agent", "planner"]));
    assert!(printed.contains(phase_id) && printed.contains("completed"), "{printed}");
    // The planner's shared phase is the coder's to read too (issue 16).
    let printed = stdout_of(&server.cli(&["phase", "--agent", "coder"]));
    let shared = printed.split("other agents' shared phases:").nth(1).unwrap_or_default();
    assert!(shared.contains(phase_id) && shared.contains("(of planner)"), "{printed}");
    let printed = stdout_of(&server.cli(&["phase", "--agent", "planner", phase_id, "--level", "compressed"]));
    assert!(printed.starts_with("LLM compressed"), "{printed}");
    // Completed phases are searched with kind=phase: the hit is the phase,
    // its text what the phase's levels say (the model's here).
    let path = format!("/v1/swarms/demo/agents/planner/search?q=investigate&kind=phase&k=3&min_seq={summary_seq}");
    let found = server.get_typed::<SearchAnswer>(&path).hits;
    let best = found.first().unwrap_or_else(|| panic!("no phase found: {found:?}"));
    assert_eq!((best.item_id.as_str(), best.kind.as_str()), (phase_id, "phase"), "{found:?}");
    assert!(best.text.contains("LLM"), "{best:?}");

    let before: Vec<Digest> =
        ["planner", "coder", "reviewer"].iter().map(|a| digest(&server, a, summary_seq)).collect();
    server.stop();
    llm.stop();
    let asked = llm.request_count();
    assert_offline_replay_matches(&server);
    // Restarting replays nothing to the model: the summaries are on the log.
    server.restart();
    let after: Vec<Digest> = ["planner", "coder", "reviewer"].iter().map(|a| digest(&server, a, summary_seq)).collect();
    for (before, after) in before.iter().zip(&after) {
        assert_eq!(before.digest, after.digest);
    }
    assert_eq!(llm.request_count(), asked);
}

/// Events of the coder that consolidation must act on: a near duplicate, a
/// single-valued fact with two values, a secret to purge.
fn consolidation_events(first_id_ms: u64) -> String {
    let event = |offset: u64, kind: &str, data: Value| {
        json!({
            "id": ulid::Ulid::from_parts(first_id_ms + offset, u128::from(offset)).to_string(),
            "swarm": "demo",
            "agent": "coder",
            "ts": "2026-11-22T12:00:00Z",
            "kind": kind,
            "data": data,
            "scope": "shared",
            "correlation_id": "task-consolidation",
        })
    };
    let events = vec![
        event(
            1,
            "message_recorded",
            json!({"role": "assistant", "text": "The nightly build uses the release profile with LTO."}),
        ),
        event(
            2,
            "message_recorded",
            json!({"role": "assistant", "text": "the nightly build uses the release profile with LTO"}),
        ),
        event(3, "fact_asserted", json!({"subject": "token_store", "predicate": "backed_by", "object": "redis"})),
        event(4, "fact_asserted", json!({"subject": "token_store", "predicate": "backed_by", "object": "postgres"})),
        event(
            5,
            "message_recorded",
            json!({"role": "user", "text": "My personal access token is zq-secret-7781, use it for the registry."}),
        ),
    ];
    serde_json::to_string(&events).unwrap()
}

#[test]
fn consolidation_writes_verdicts_as_events_and_replay_applies_them_without_scanning() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with(work.path(), None, "\n[consolidation]\nenabled = false\n");
    let example_last_seq = publish_and_check_example(&server);
    let accepted: AcceptedEvents = post_expecting(&server, "/v1/events", &consolidation_events(1_790_000_000_000), 202);
    let secret_id = accepted.accepted[4].id.clone();
    let last_seq = accepted.accepted[4].seq;
    assert!(last_seq > example_last_seq);
    assert!(!hits(&server, "coder", "registry", last_seq).is_empty());

    // A dry run reports and writes nothing.
    let dry: ConsolidationAnswer = post_expecting(&server, "/v1/swarms/demo/consolidate?dry_run=true", "", 200);
    assert!(dry.dry_run, "{dry:?}");
    assert_eq!(dry.events_written, 0);
    let coder = dry.agents.iter().find(|agent| agent.agent == "coder").unwrap();
    assert!(coder.plan.counts.merges >= 1, "{coder:?}");
    assert!(coder.plan.counts.contradictions >= 1, "{coder:?}");
    // The shared duplicates were compared once, for every agent.
    assert!(dry.shared.duplicate_pairs >= 1, "{dry:?}");
    assert!(dry.shared.items >= 2, "{dry:?}");
    let after_dry_run: EventsPage = server.get_typed(&format!("/v1/swarms/demo/events?from_seq={}", last_seq + 1));
    assert_eq!(after_dry_run.events.len(), 0, "{after_dry_run:?}");

    // The CLI's dry run says the same.
    let cli = stdout_of(&server.cli(&["consolidate", "--dry-run", "--agent", "coder"]));
    assert!(cli.contains("dry run") && cli.contains("coder") && cli.contains("compared once"), "{cli}");

    // A real run writes verdicts as events of each agent.
    let run: ConsolidationAnswer = post_expecting(&server, "/v1/swarms/demo/consolidate?dry_run=false", "", 200);
    assert!(run.events_written > 0, "{run:?}");
    let written: EventsPage =
        server.get_typed(&format!("/v1/swarms/demo/events?from_seq={}&limit=10000", last_seq + 1));
    let kinds: Vec<&str> =
        written.events.iter().map(|entry| entry.kind().unwrap_or_else(|| panic!("not an event: {entry:?}"))).collect();
    assert!(kinds.contains(&"memories_merged") && kinds.contains(&"contradiction_detected"), "{kinds:?}");
    // The search above was counted, and recorded before the scan.
    assert!(kinds.contains(&"memories_retrieved"), "{kinds:?}");

    // The contradiction is listed, and resolved once.
    let listing: ContradictionsAnswer = server.get_typed("/v1/swarms/demo/contradictions?agent=coder");
    let backed_by = listing
        .open
        .iter()
        .find(|open| {
            open.reason.as_deref().unwrap_or_else(|| panic!("an open one says why: {open:?}")).contains("backed_by")
        })
        .expect("listed");
    let contradiction_id = backed_by.contradiction_id.clone();
    let resolved = stdout_of(&server.cli(&["resolve", &contradiction_id, "b_wins", "--note", "moved to postgres"]));
    assert!(resolved.contains("resolved") && resolved.contains("in the memory of coder"), "{resolved}");
    // Settled in every memory that held it open, each by its own event.
    let everywhere: ContradictionsAnswer = server.get_typed("/v1/swarms/demo/contradictions");
    assert!(everywhere.open.iter().all(|open| open.contradiction_id != contradiction_id), "{everywhere:?}");
    let settled: Vec<&str> = everywhere
        .resolved
        .iter()
        .filter(|resolved| resolved.contradiction_id == contradiction_id)
        .map(|resolved| resolved.agent.as_str())
        .collect();
    for agent in &settled {
        assert!(resolved.contains(agent), "{agent} not named in {resolved}");
    }
    let (status, again) = server.post_refused(
        &format!("/v1/swarms/demo/contradictions/{contradiction_id}/resolve"),
        r#"{"resolution": "a_wins"}"#,
    );
    assert_eq!(status, 409, "{again}");
    // A contradiction one memory settled by its agent's own event is not
    // settled another way in the others; the same way, it is.
    let other = everywhere
        .open
        .iter()
        .find(|open| everywhere.open.iter().filter(|copy| copy.contradiction_id == open.contradiction_id).count() >= 2)
        .expect("another contradiction held by two memories");
    let own = json!({"id": "01JGZ5V7Q8X9Y0Z1A2B3C4D5F0", "swarm": "demo", "agent": other.agent, "ts": "2026-01-06T12:00:00Z",
        "kind": "contradiction_resolved", "data": {"contradiction_id": other.contradiction_id, "resolution": "a_wins"}});
    let own: AcceptedEvents = post_expecting(&server, "/v1/events", &own.to_string(), 202);
    let path = format!("/v1/swarms/demo/contradictions/{}/resolve", other.contradiction_id);
    let listed = format!("/v1/swarms/demo/contradictions?agent={}", other.agent);
    wait_for_log_end(&server, own.accepted[0].seq);
    let mut settled_by_its_agent = false;
    for _ in 0..100 {
        let listing: ContradictionsAnswer = server.get_typed(&listed);
        settled_by_its_agent =
            listing.resolved.iter().any(|resolved| resolved.contradiction_id == other.contradiction_id);
        if settled_by_its_agent {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(settled_by_its_agent, "{} did not apply its own resolution", other.agent);
    let (status, differently) = server.post_refused(&path, r#"{"resolution": "b_wins"}"#);
    assert_eq!((status, differently.error.code.as_str()), (409, "resolved_differently"), "{differently}");
    let same: mneme_api::consolidation::Resolved = post_expecting(&server, &path, r#"{"resolution": "a_wins"}"#, 200);
    assert_eq!(same.contradiction.resolution.as_deref(), Some("a_wins"), "{same:?}");
    assert!(same.contradiction.agent != other.agent, "the other copies only: {same:?}");
    let (status, bad) = server.post_refused(
        &format!("/v1/swarms/demo/contradictions/{contradiction_id}/resolve"),
        r#"{"resolution": "coin_toss"}"#,
    );
    assert_eq!((status, bad.error.field.as_deref()), (400, Some("resolution")), "{bad}");
    let graph: GraphAnswer = server.get_typed("/v1/swarms/demo/agents/coder/graph?entity=token_store&hops=1");
    let redis = graph.edges.iter().find(|edge| edge.relation == "backed_by" && edge.to.contains("redis"));
    assert!(redis.unwrap().valid_to.is_some(), "the losing side's validity is closed: {graph:?}");

    // A second run finds nothing new to merge or report.
    let second: ConsolidationAnswer = server.post_typed("/v1/swarms/demo/consolidate?dry_run=true&agent=coder", "");
    assert_eq!(second.agents[0].plan.counts.merges, 0, "{second:?}");
    assert_eq!(second.agents[0].plan.counts.contradictions, 0, "{second:?}");

    // Purge: the secret leaves memory and the snapshot.
    let purged = stdout_of(&server.cli(&["purge", "--item", &secret_id, "--reason", "erasure request"]));
    assert!(purged.contains("purged from coder"), "{purged}");
    let search: SearchAnswer =
        server.get_typed("/v1/swarms/demo/agents/coder/search?q=zq-secret-7781%20registry&k=10&mode=bm25");
    assert!(search.hits.iter().all(|hit| hit.item_id != secret_id), "{search:?}");
    // The same purge again changes nothing and says so, appending nothing
    // (issue 17, item 9).
    let end_before = log_end(&server);
    let again: PurgeAnswer =
        post_expecting(&server, "/v1/swarms/demo/purge", &json!({"item_ids": [secret_id]}).to_string(), 200);
    assert!(again.purged.is_empty(), "{again:?}");
    let holders: Vec<&str> = again.already_purged.iter().map(|held| held.agent.as_str()).collect();
    assert_eq!(holders, ["coder", "planner", "reviewer"], "a shared secret was purged from every memory: {again:?}");
    assert_eq!(log_end(&server), end_before, "no tombstone appended");

    let tail: EventsPage = server.get_typed(&format!("/v1/swarms/demo/events?from_seq={}&limit=10000", last_seq + 1));
    let final_seq = tail.next_seq - 1;
    let before: Vec<Digest> = ["planner", "coder", "reviewer"].iter().map(|a| digest(&server, a, final_seq)).collect();
    server.stop();
    // Replay with no consolidation at all rebuilds the same memory.
    assert_offline_replay_matches(&server);
    // The restart carries the purge into the log (docs/src/erasure.md): every
    // memory is rebuilt from the erased log, which never held the secret,
    // so it is what a replay of that log gives, not what it was before.
    server.restart();
    let mut after = Vec::new();
    for (agent, before) in ["planner", "coder", "reviewer"].iter().zip(&before) {
        let rebuilt = digest(&server, agent, final_seq);
        assert_ne!(rebuilt.digest, before.digest, "{agent}: the memory rebuilt from the erased log never held it");
        let replay: mneme_api::memory::ReplayAnswer =
            server.post_typed(&format!("/v1/swarms/demo/agents/{agent}/replay?verify=true"), "{}");
        assert_eq!(replay.matches, Some(true), "{agent}: {replay:?}");
        after.push(rebuilt);
    }
    let search: SearchAnswer =
        server.get_typed("/v1/swarms/demo/agents/coder/search?q=zq-secret-7781%20registry&k=10&mode=bm25");
    assert!(search.hits.iter().all(|hit| hit.item_id != secret_id), "{search:?}");
    // With nothing left to erase, a restart restores the same memories.
    server.restart();
    for (agent, after) in ["planner", "coder", "reviewer"].iter().zip(&after) {
        assert_eq!(digest(&server, agent, final_seq).digest, after.digest, "{agent}");
    }
}
