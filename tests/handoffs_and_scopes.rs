//! Whole-system tests of handoffs, scopes and tokens: an orchestrator
//! publishes events for three agents, the coder (A) hands a task to the
//! reviewer (B), and B gets the package and asks for context. On a real
//! nats-server, B is a plain NATS client (a subscriber on its handoff
//! subject, request/reply for queries); on the embedded log, B uses HTTP
//! (the server-sent-event stream and the query routes). In both, nothing
//! the coder kept private reaches the reviewer, no token reaches past its
//! agent or swarm.

mod common;

use std::io::BufRead;
use std::time::Duration;

use common::{MnemeServer, stdout_of, typed};
use futures::StreamExt;
use mneme_api::agent_memory::{CoreMemoryAnswer, CoreUpdated, TimelineAnswer, Written};
use mneme_api::consolidation::PurgeAnswer;
use mneme_api::context::{ContextAnswer, PhaseAnswer, PhaseEvents, PhasesAnswer};
use mneme_api::handoffs::{Acknowledged, HandoffDelivery, HandoffsAnswer};
use mneme_api::log::{AcceptedEvents, AgentProvenance, EventsPage, Health, LogEntry, SwarmProvenance};
use mneme_api::memory::{ItemAnswer, ItemStates, SearchAnswer};
use mneme_api::{ErrorBody, ErrorDetail};
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

const OPERATOR_TOKEN: &str = "operator-secret-0123456789";
const REVIEWER_TOKEN: &str = "reviewer-secret-0123456789";
const CODER_TOKEN: &str = "coder-secret-0123456789ab";
const NATS_TOKEN: &str = "nats-secret-of-the-swarm";

const CONFIG: &str = r#"
[[agents]]
name = "reviewer"
context_budget = 2500
thinking_budget = 0.25

[[agents]]
name = "scribe"
default_scope = "shared"

[handoffs]
bundle_tokens = 1500

[[http.tokens]]
name = "operator"
token = "operator-secret-0123456789"

[[http.tokens]]
name = "reviewer-key"
token = "reviewer-secret-0123456789"
agent = "reviewer"

[[http.tokens]]
name = "coder-key"
token = "coder-secret-0123456789ab"
agent = "coder"
"#;

/// Every private event of the coder names one of these; none may reach the
/// reviewer by any path.
const CODER_SECRETS: [&str; 2] = ["zanzibar", "quokka"];
const REVIEWER_SECRET: &str = "wombat";

const DECISION_ID: &str = "01KF0000000000000000000002";
const PRIVATE_NOTE_ID: &str = "01KF0000000000000000000003";
const HANDOFF_ID: &str = "01KF0000000000000000000009";

fn event(sequence: u32, agent: &str, scope: Option<&str>, kind: &str, data: Value) -> Value {
    let mut event = json!({
        "id": format!("01KF00000000000000000000{sequence:02}"),
        "swarm": "demo",
        "agent": agent,
        "ts": format!("2026-03-02T10:00:{sequence:02}Z"),
        "correlation_id": "task-ledger",
        "kind": kind,
        "data": data,
    });
    if let Some(scope) = scope {
        event["scope"] = json!(scope);
    }
    event
}

/// What the orchestrator publishes: shared and private work of the coder, a
/// private note of the reviewer, a note of the scribe without a scope (its
/// default is shared), and the coder's handoff to the reviewer.
fn orchestrated_events() -> Value {
    json!([
        event(
            1,
            "planner",
            Some("shared"),
            "task_updated",
            json!({"task_id": "task-ledger", "status": "open", "title": "Move the ledger to postgres"})
        ),
        event(
            2,
            "coder",
            Some("shared"),
            "decision_made",
            json!({"title": "Ledger storage", "choice": "postgres with pgvector",
                   "rationale": "vector search next to the ledger rows"})
        ),
        event(
            3,
            "coder",
            Some("private"),
            "message_recorded",
            json!({"role": "assistant", "text": "scratch: zanzibar suspects the flaky ledger migration test"})
        ),
        event(
            4,
            "coder",
            Some("shared"),
            "fact_asserted",
            json!({"subject": "ledger-service", "predicate": "stores_data_in", "object": "postgres"})
        ),
        event(
            5,
            "coder",
            Some("private"),
            "fact_asserted",
            json!({"subject": "zanzibar-cache", "predicate": "depends_on", "object": "quokka-db"})
        ),
        event(
            6,
            "coder",
            Some("shared"),
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"cmd": "sed -i s/sqlite/postgres/ src/ledger/store.rs"}, "output": "ok"})
        ),
        event(
            7,
            "reviewer",
            Some("private"),
            "message_recorded",
            json!({"role": "assistant", "text": "reviewer scratch: wombat review checklist for the ledger"})
        ),
        event(
            8,
            "scribe",
            None,
            "message_recorded",
            json!({"role": "assistant", "text": "the ledger runbook lives in docs/ledger-runbook.md"})
        ),
        event(
            9,
            "coder",
            Some("shared"),
            "handoff_sent",
            json!({"to": "reviewer", "task": "task-ledger",
                   "summary": "Ledger storage chosen and the store migrated; please review",
                   "artifacts": ["src/ledger/store.rs"], "decisions": [DECISION_ID],
                   "constraints": ["do not touch the auth module"]})
        ),
    ])
}

fn assert_no_secret(what: &str, text: &str) {
    for secret in CODER_SECRETS {
        assert!(!text.contains(secret), "{what} leaks the coder's private {secret:?}: {text}");
    }
    assert!(!text.contains(REVIEWER_SECRET) || what.starts_with("reviewer"), "{what} leaks {REVIEWER_SECRET}: {text}");
}

/// Checks the package the reviewer got, from NATS or from HTTP.
fn assert_package_for_reviewer(delivery: &HandoffDelivery) {
    let heading = (&*delivery.handoff_id, &*delivery.from, &*delivery.to, &*delivery.status);
    assert_eq!(heading, (HANDOFF_ID, "coder", "reviewer", "pending"), "{delivery:?}");
    let package = delivery.package.as_ref().expect("a delivery carries its package");
    assert_eq!(package.task, "task-ledger");
    assert_eq!(package.constraints, ["do not touch the auth module"]);
    assert_eq!(package.bundle.budget_tokens, 1500);
    let items = &package.bundle.items;
    let decision = items
        .iter()
        .find(|item| item.section == "decision" && item.text.contains("pgvector"))
        .unwrap_or_else(|| panic!("the bundle has the shared decision: {package:?}"));
    assert_eq!(decision.agent, "coder");
    assert_eq!(decision.provenance[0].event_id.to_string(), DECISION_ID, "{decision:?}");
    assert!(decision.provenance[0].seq >= 1);
    assert!(items.iter().all(|item| !item.provenance.is_empty()), "{package:?}");
    assert!(package.bundle.files.iter().any(|file| file == "src/ledger/store.rs"), "{package:?}");
    assert!(package.bundle.used_tokens <= 1500);
    assert_no_secret("the handoff package", &serde_json::to_string(delivery).unwrap());
}

/// An answer that was given, as the wire type `T`.
fn answered<T: serde::de::DeserializeOwned>(what: &str, answer: Result<Value, Value>) -> T {
    typed(what, answer.unwrap_or_else(|refused| panic!("{what} was refused: {refused}")))
}

/// A refusal's error.
fn refusal(what: &str, answer: Result<Value, Value>) -> ErrorDetail {
    typed::<ErrorBody>(what, answer.expect_err(what)).error
}

/// The reviewer's queries, answered over NATS request/reply or HTTP: the
/// two must give the same answers, and neither may leak.
trait ReviewerQueries {
    /// `Ok(answer)` or `Err(error body)`.
    fn query(&self, agent: &str, verb: &str, body: Value) -> Result<Value, Value>;
}

struct OverHttp<'a> {
    server: &'a MnemeServer,
    token: &'a str,
}

impl ReviewerQueries for OverHttp<'_> {
    fn query(&self, agent: &str, verb: &str, body: Value) -> Result<Value, Value> {
        let base = format!("/v1/swarms/demo/agents/{agent}");
        let min_seq = body["min_seq"].as_u64().unwrap_or(0);
        let (status, answer) = match verb {
            "search" => self.server.get_as(
                Some(self.token),
                &format!(
                    "{base}/search?q={}&k=10&mode={}&min_seq={min_seq}",
                    common::encode(body["q"].as_str().unwrap()),
                    body["mode"].as_str().unwrap_or("hybrid")
                ),
            ),
            "context" => self.server.post_as(Some(self.token), &format!("{base}/context"), &body.to_string()),
            "graph" => self.server.get_as(
                Some(self.token),
                &format!("{base}/graph?entity={}&min_seq={min_seq}", common::encode(body["entity"].as_str().unwrap())),
            ),
            "provenance" => self.server.get_as(
                Some(self.token),
                &format!("{base}/provenance/{}?min_seq={min_seq}", body["item_id"].as_str().unwrap()),
            ),
            "phase" => self.server.get_as(Some(self.token), &format!("{base}/phases?min_seq={min_seq}")),
            "items" => match body["item_id"].as_str() {
                Some(item_id) => {
                    self.server.get_as(Some(self.token), &format!("{base}/items/{item_id}?min_seq={min_seq}"))
                }
                None => self.server.get_as(Some(self.token), &format!("{base}/items?min_seq={min_seq}")),
            },
            "handoffs" => self.server.get_as(Some(self.token), &format!("{base}/handoffs?min_seq={min_seq}")),
            "ack" => {
                let path = format!("{base}/handoffs/{}/ack", body["handoff_id"].as_str().unwrap());
                self.server.post_as(Some(self.token), &path, &json!({"note": body["note"]}).to_string())
            }
            "note" => self.server.post_as(Some(self.token), &format!("{base}/notes"), &body.to_string()),
            "core" if body.get("block").is_some() => {
                self.server.post_as(Some(self.token), &format!("{base}/core"), &body.to_string())
            }
            "core" => self.server.get_as(Some(self.token), &format!("{base}/core?min_seq={min_seq}")),
            "timeline" => self.server.get_as(Some(self.token), &format!("{base}/timeline?limit=500")),
            _ => unreachable!("a verb of the test"),
        };
        if status == 200 { Ok(answer) } else { Err(answer) }
    }
}

struct OverNats<'a> {
    runtime: &'a tokio::runtime::Runtime,
    client: async_nats::Client,
}

impl ReviewerQueries for OverNats<'_> {
    fn query(&self, agent: &str, verb: &str, body: Value) -> Result<Value, Value> {
        let subject = format!("mneme.demo.{agent}.query.{verb}");
        let reply = self.runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(30), self.client.request(subject, body.to_string().into()))
                .await
                .expect("a reply within 30 s")
                .expect("a reply")
        });
        let answer: Value = serde_json::from_slice(&reply.payload).unwrap();
        if answer.get("error").is_some() { Err(answer) } else { Ok(answer) }
    }
}

/// Notes and core blocks are their author's (issue 20): the coder's
/// private note and its blocks are in no other memory, its shared note is
/// in the reviewer's; over the limit, a block is refused naming it. Asked
/// through `queries` as both agents.
fn assert_notes_and_core_blocks_are_their_authors(queries: &dyn ReviewerQueries) {
    let private: Written = answered(
        "a private note",
        queries.query("coder", "note", json!({"text": "the kinkajou flag hides the cache bug", "tags": ["gotcha"]})),
    );
    let shared: Written = answered(
        "a shared note",
        queries.query("coder", "note", json!({"text": "the capybara rollout is on monday", "scope": "shared"})),
    );
    let updated: CoreUpdated = answered(
        "a core block",
        queries.query("coder", "core", json!({"block": "plan", "content": "chase the axolotl regression"})),
    );
    assert_eq!(updated.core.blocks[0].content, "chase the axolotl regression", "{updated:?}");
    let too_long = queries.query("coder", "core", json!({"block": "plan", "content": "word ".repeat(3000)}));
    let refused = refusal("an over-long block", too_long);
    assert_eq!(refused.field.as_deref(), Some("content"), "{refused:?}");
    assert!(refused.message.contains("at most 500"), "{refused:?}");
    // Read-your-writes: the note is found at once by its author.
    let search = |agent: &str, query: &str| -> Vec<String> {
        let answer: SearchAnswer = answered(
            "a search",
            queries.query(agent, "search", json!({"q": query, "mode": "bm25", "min_seq": updated.written.seq})),
        );
        answer.hits.into_iter().map(|hit| hit.item_id).collect()
    };
    assert_eq!(search("coder", "kinkajou"), std::slice::from_ref(&private.event_id));
    assert!(search("reviewer", "kinkajou").is_empty(), "the coder's private note reached the reviewer");
    assert_eq!(search("reviewer", "capybara"), std::slice::from_ref(&shared.event_id));
    let core: CoreMemoryAnswer =
        answered("the reviewer's core", queries.query("reviewer", "core", json!({"min_seq": updated.written.seq})));
    assert!(core.blocks.is_empty(), "the coder's blocks reached the reviewer: {core:?}");
    let timeline: TimelineAnswer =
        answered("the reviewer's timeline", queries.query("reviewer", "timeline", json!({})));
    let kinds_of_coder: Vec<&str> =
        timeline.entries.iter().filter(|entry| entry.agent == "coder").map(|entry| entry.event_id.as_str()).collect();
    assert!(kinds_of_coder.contains(&shared.event_id.as_str()), "{timeline:?}");
    assert!(!kinds_of_coder.contains(&private.event_id.as_str()), "a private note in another's timeline");
    assert!(!kinds_of_coder.contains(&updated.written.event_id.as_str()), "a core block in another's timeline");
}

/// What the reviewer may and may not see, asked through `queries`.
fn assert_reviewer_sees_shared_work_only(queries: &dyn ReviewerQueries, min_seq: u64) {
    let context = queries
        .query(
            "reviewer",
            "context",
            json!({"query": "ledger storage postgres zanzibar quokka", "budget": 3000, "min_seq": min_seq}),
        )
        .unwrap();
    let context: ContextAnswer = typed("the reviewer's context", context);
    let text = &context.text;
    assert!(text.contains("pgvector"), "the reviewer sees the coder's shared decision: {text}");
    assert!(text.contains("ledger-runbook"), "the scribe's note took its default scope, shared: {text}");
    assert!(text.contains(REVIEWER_SECRET), "the reviewer sees its own private note: {text}");
    assert_no_secret("reviewer context", text);
    assert_eq!(context.budget, 3000);

    for secret in CODER_SECRETS {
        let exact = queries.query("reviewer", "search", json!({"q": secret, "mode": "bm25", "min_seq": min_seq}));
        assert!(answered::<SearchAnswer>("bm25 search", exact).hits.is_empty(), "bm25 search for {secret}");
        // Hybrid search always returns the nearest vectors: none may be private.
        let nearest = queries.query("reviewer", "search", json!({"q": secret, "min_seq": min_seq}));
        let nearest: SearchAnswer = answered("hybrid search", nearest);
        assert!(!nearest.hits.is_empty());
        assert_no_secret("reviewer hybrid search", &serde_json::to_string(&nearest).unwrap());
    }
    let shared = queries.query("reviewer", "search", json!({"q": "pgvector", "mode": "bm25", "min_seq": min_seq}));
    let shared: SearchAnswer = answered("search", shared);
    let hit = shared.hits.iter().find(|hit| hit.item_id == DECISION_ID);
    assert_eq!(hit.unwrap_or_else(|| panic!("the shared decision: {shared:?}")).agent, "coder");

    let graph = queries.query("reviewer", "graph", json!({"entity": "zanzibar-cache", "min_seq": min_seq}));
    let error = refusal("the coder's private entity is not in the reviewer's graph", graph);
    assert_eq!((error.code.as_str(), error.status), ("unknown_entity", 404), "{error:?}");
    let graph = queries.query("reviewer", "graph", json!({"entity": "ledger-service", "min_seq": min_seq})).unwrap();
    assert_no_secret("reviewer graph", &graph.to_string());

    let hidden = queries.query("reviewer", "provenance", json!({"item_id": PRIVATE_NOTE_ID, "min_seq": min_seq}));
    assert_eq!(refusal("private provenance", hidden).code, "unknown_item");
    let provenance = queries.query("reviewer", "provenance", json!({"item_id": DECISION_ID, "min_seq": min_seq}));
    let provenance: AgentProvenance = answered("provenance", provenance);
    let LogEntry::Event(first) = &provenance.events[0] else { panic!("{provenance:?}") };
    assert_eq!(first.decode().unwrap().id.to_string(), DECISION_ID, "{provenance:?}");
    assert_no_secret("reviewer provenance", &serde_json::to_string(&provenance).unwrap());

    let hidden = queries.query("reviewer", "items", json!({"item_id": PRIVATE_NOTE_ID, "min_seq": min_seq}));
    assert_eq!(refusal("a private item", hidden).code, "unknown_item");
    let item = queries.query("reviewer", "items", json!({"item_id": DECISION_ID, "min_seq": min_seq}));
    let item: ItemAnswer = answered("an item", item);
    assert_eq!((item.item_id.as_str(), item.agent.as_str()), (DECISION_ID, "coder"), "{item:?}");
    let states: ItemStates = answered("item states", queries.query("reviewer", "items", json!({"min_seq": min_seq})));
    assert!(states.states.get("active").copied().unwrap_or(0) > 0, "{states:?}");

    let phases = queries.query("reviewer", "phase", json!({"min_seq": min_seq})).unwrap();
    assert_no_secret("reviewer phases", &phases.to_string());

    // The coder's own memory keeps its private note.
    let own = queries.query("coder", "search", json!({"q": "zanzibar", "mode": "bm25", "min_seq": min_seq}));
    let own: SearchAnswer = answered("the coder's search", own);
    assert_eq!(own.hits[0].item_id, PRIVATE_NOTE_ID, "{own:?}");
}

/// Tokens: none, another agent's, another swarm's path, swarm-wide routes.
fn assert_tokens_hold(server: &MnemeServer) {
    let path = "/v1/swarms/demo/agents/reviewer/search?q=ledger";
    assert_eq!(server.get_as(None, path).0, 401);
    assert_eq!(server.get_as(Some("not-a-token-of-this-swarm-0123"), path).0, 401);
    assert_eq!(server.get_as(Some(REVIEWER_TOKEN), path).0, 200);
    assert_eq!(server.get_as(Some(CODER_TOKEN), path).0, 403);
    let (status, refused) = server.get_as(Some(REVIEWER_TOKEN), "/v1/swarms/demo/agents/coder/search?q=zanzibar");
    assert_eq!(status, 403, "{refused}");
    assert_no_secret("a refused search", &refused.to_string());
    assert_eq!(server.get_as(Some(REVIEWER_TOKEN), "/v1/swarms/demo/events").0, 403);
    assert_eq!(server.get_as(Some(REVIEWER_TOKEN), &format!("/v1/swarms/demo/provenance/{PRIVATE_NOTE_ID}")).0, 403);
    assert_eq!(server.get_as(Some(OPERATOR_TOKEN), "/v1/swarms/other/agents/reviewer/search?q=x").0, 403);
    assert_eq!(server.get_as(None, "/healthz").0, 200);
    // Metrics name every agent and count what each did (issue 17, item 8).
    assert_eq!(server.get_as(None, "/metrics").0, 401);
    assert_eq!(server.get_as(Some(REVIEWER_TOKEN), "/metrics").0, 403);
    let metrics = server.metrics_as(OPERATOR_TOKEN);
    assert!(metrics.contains("mneme_events_applied_total"), "{metrics}");
    let forged = event(20, "coder", Some("shared"), "message_recorded", json!({"role": "user", "text": "forged"}));
    let (status, refused) = server.post_as(Some(REVIEWER_TOKEN), "/v1/events", &forged.to_string());
    let refused = typed::<ErrorBody>("a forged event", refused).error;
    assert_eq!((status, refused.field.as_deref()), (403, Some("[0].agent")), "{refused:?}");
    // The operator sees the private note's only holder.
    let (status, provenance) =
        server.get_as(Some(OPERATOR_TOKEN), &format!("/v1/swarms/demo/provenance/{PRIVATE_NOTE_ID}"));
    assert_eq!(status, 200);
    assert_eq!(typed::<SwarmProvenance>("provenance", provenance).holders, ["coder"]);
}

/// Publishes the orchestrator's events as the operator; returns the seq the
/// log reaches once the handoff is delivered.
fn publish_and_wait_for_delivery(server: &MnemeServer) -> u64 {
    let (status, accepted) = server.post_as(Some(OPERATOR_TOKEN), "/v1/events", &orchestrated_events().to_string());
    assert_eq!(status, 202, "{accepted}");
    let published = typed::<AcceptedEvents>("the orchestrator's events", accepted).accepted.len() as u64;
    assert_eq!(published, 9);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let last_seq = typed::<Health>("/healthz", server.get_as(None, "/healthz").1).last_seq;
        if last_seq > published {
            return last_seq;
        }
        assert!(std::time::Instant::now() < deadline, "the handoff was never delivered");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The first handoff on B's server-sent-event stream.
fn first_handoff_on_the_stream(server: &MnemeServer) -> HandoffDelivery {
    let response = ureq::get(&format!("{}/v1/swarms/demo/agents/reviewer/handoffs?follow=true", server.url))
        .set("authorization", &format!("Bearer {REVIEWER_TOKEN}"))
        .call()
        .unwrap();
    assert_eq!(response.content_type(), "text/event-stream");
    let mut lines = std::io::BufReader::new(response.into_reader()).lines();
    assert_eq!(lines.next().unwrap().unwrap(), "event: handoff");
    assert_eq!(lines.next().unwrap().unwrap(), format!("id: {HANDOFF_ID}"));
    let data = lines.next().unwrap().unwrap();
    serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap()
}

/// The first line `mneme handoffs --follow --json` prints, as the reviewer.
fn first_handoff_of_the_cli(server: &MnemeServer) -> HandoffDelivery {
    let mut follower = std::process::Command::new(common::MNEME)
        .args(["handoffs", "--agent", "reviewer", "--follow", "--json"])
        .env("MNEME_SERVER", &server.url)
        .env("MNEME_TOKEN", REVIEWER_TOKEN)
        .env("MNEME_LOG", "warn")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(follower.stdout.take().unwrap()).read_line(&mut line).unwrap();
    follower.kill().unwrap();
    follower.wait().unwrap();
    serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line:?}"))
}

/// Acknowledges with the CLI; the list shows it, a second ack is refused.
fn acknowledge_with_the_cli(server: &MnemeServer, seq: u64) {
    let reviewer = server.view_with_token(REVIEWER_TOKEN);
    let listed = stdout_of(&reviewer.cli(&["handoffs", "--agent", "reviewer"]));
    assert!(listed.contains(HANDOFF_ID) && listed.contains("pending") && listed.contains("from coder"), "{listed}");
    let acknowledged = stdout_of(&reviewer.cli(&["handoffs", "--agent", "reviewer", "--ack", HANDOFF_ID]));
    assert!(acknowledged.contains(&format!("acknowledged {HANDOFF_ID}")), "{acknowledged}");
    let again = reviewer.cli(&["handoffs", "--agent", "reviewer", "--ack", HANDOFF_ID]);
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already_acknowledged"), "{again:?}");
    let (status, listed) =
        server.get_as(Some(REVIEWER_TOKEN), &format!("/v1/swarms/demo/agents/reviewer/handoffs?min_seq={seq}"));
    assert_eq!(status, 200);
    let listed: HandoffsAnswer = typed("the reviewer's handoffs", listed);
    assert_eq!(listed.handoffs[0].status, "acknowledged", "{listed:?}");
    let (status, _) = server.post_as(
        Some(REVIEWER_TOKEN),
        "/v1/swarms/demo/agents/reviewer/handoffs/01KF0000000000000000000099/ack",
        "",
    );
    assert_eq!(status, 404);
}

#[test]
fn on_nats_the_reviewer_gets_the_package_on_its_subject_and_queries_by_request_reply() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    // A server that wants a token; Mneme's comes from the environment.
    let nats = runtime.block_on(async {
        match NatsServer::binary() {
            Some(_) => NatsServer::start_with_token(NATS_TOKEN).await.expect("nats-server with a token"),
            None => NatsServer::require().await,
        }
    });
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with_environment(
        work.path(),
        Some(&nats.url()),
        CONFIG,
        &[("MNEME_NATS_TOKEN", NATS_TOKEN)],
    );
    // The reviewer is any NATS client: it subscribes before the handoff.
    let connect = async_nats::ConnectOptions::with_token(NATS_TOKEN.to_string()).connect(nats.url());
    let client = runtime.block_on(connect).unwrap();
    let mut handoffs = runtime.block_on(client.subscribe("mneme.demo.reviewer.handoff")).unwrap();
    runtime.block_on(client.flush()).unwrap();

    let seq = publish_and_wait_for_delivery(&server);
    let next_handoff = |handoffs: &mut async_nats::Subscriber| -> HandoffDelivery {
        let message = runtime
            .block_on(async { tokio::time::timeout(Duration::from_secs(30), handoffs.next()).await })
            .expect("a handoff within 30 s")
            .unwrap();
        serde_json::from_slice(&message.payload).unwrap()
    };
    assert_package_for_reviewer(&next_handoff(&mut handoffs));

    let queries = OverNats { runtime: &runtime, client: client.clone() };
    assert_reviewer_sees_shared_work_only(&queries, seq);
    assert_notes_and_core_blocks_are_their_authors(&queries);
    assert_eq!(refusal("an unknown verb", queries.query("reviewer", "teleport", json!({}))).code, "unknown_verb");
    let bad = refusal("k = 0", queries.query("reviewer", "search", json!({"q": "x", "k": 0})));
    assert_eq!((bad.status, bad.field.as_deref()), (400, Some("k")), "{bad:?}");
    assert_tokens_hold(&server);
    // A reply subject that is not an inbox is refused: Mneme must not
    // publish where a requester points it.
    let mut hijacked = runtime.block_on(client.subscribe("mneme.demo.coder.events.message_recorded")).unwrap();
    runtime.block_on(async {
        let body = json!({"q": "ledger"}).to_string();
        client
            .publish_with_reply(
                "mneme.demo.reviewer.query.search",
                "mneme.demo.coder.events.message_recorded",
                body.into(),
            )
            .await
            .unwrap();
        client.flush().await.unwrap();
    });
    let nothing = runtime.block_on(async { tokio::time::timeout(Duration::from_secs(1), hijacked.next()).await });
    assert!(nothing.is_err(), "Mneme answered onto an events subject: {nothing:?}");

    // Another swarm's subjects: this server answers none of them.
    let other_swarm = runtime.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(10),
            client.request("mneme.other.reviewer.query.search", json!({"q": "ledger"}).to_string().into()),
        )
        .await
    });
    let error = other_swarm.expect("an answer within 10 s").expect_err("no responder for another swarm");
    assert_eq!(error.kind(), async_nats::client::RequestErrorKind::NoResponders, "{error}");

    // Not acknowledged yet: a restart delivers it again.
    server.restart();
    let redelivered = next_handoff(&mut handoffs);
    assert_eq!(redelivered.handoff_id, HANDOFF_ID);
    assert_package_for_reviewer(&redelivered);
    // ...and no second `handoff_received` is stored.
    let (_, log) = server.get_as(Some(OPERATOR_TOKEN), "/v1/swarms/demo/events?agent=reviewer");
    let log: EventsPage = typed("the reviewer's events", log);
    let receipts = log.events.iter().filter(|entry| entry.kind() == Some("handoff_received"));
    assert_eq!(receipts.count(), 1, "{log:?}");
    acknowledge_with_the_cli(&server, seq);
}

/// The reviewer's durable consumer on the handoffs stream: every handoff
/// stored for it that it has not acknowledged to JetStream.
struct DurableHandoffs<'a> {
    runtime: &'a tokio::runtime::Runtime,
    consumer: async_nats::jetstream::consumer::PullConsumer,
}

impl DurableHandoffs<'_> {
    fn create(runtime: &tokio::runtime::Runtime, client: async_nats::Client) -> DurableHandoffs<'_> {
        use async_nats::jetstream::consumer::{AckPolicy, pull};
        let consumer = runtime.block_on(async {
            let stream =
                async_nats::jetstream::new(client).get_stream("MNEME_demo_HANDOFFS").await.expect("the stream");
            let config = pull::Config {
                durable_name: Some("reviewer-handoffs".to_string()),
                filter_subject: "mneme.demo.reviewer.handoff".to_string(),
                ack_policy: AckPolicy::Explicit,
                ..Default::default()
            };
            stream.get_or_create_consumer("reviewer-handoffs", config).await.expect("a durable consumer")
        });
        DurableHandoffs { runtime, consumer }
    }

    /// The handoffs the consumer has now, each acknowledged to JetStream,
    /// with their `Nats-Msg-Id`s.
    fn fetch_and_ack(&self) -> Vec<(String, HandoffDelivery)> {
        self.runtime.block_on(async {
            let mut batch = self
                .consumer
                .fetch()
                .max_messages(10)
                .expires(Duration::from_secs(1))
                .messages()
                .await
                .expect("a pull request");
            let mut handoffs = Vec::new();
            while let Some(message) = batch.next().await {
                let message = message.expect("a message");
                message.ack().await.expect("ack");
                let id = message.headers.as_ref().and_then(|headers| headers.get("Nats-Msg-Id"));
                let id = id.expect("a Nats-Msg-Id").as_str().to_string();
                handoffs.push((id, serde_json::from_slice(&message.payload).expect("JSON")));
            }
            handoffs
        })
    }
}

/// The `handoffs` and `ack` verbs answer over NATS exactly as HTTP does,
/// refusals too; after the ack the handoff is no longer pending.
fn acknowledge_over_request_reply(nats: &OverNats<'_>, http: &OverHttp<'_>, seq: u64) {
    let listed = nats.query("reviewer", "handoffs", json!({"min_seq": seq}));
    assert_eq!(listed, http.query("reviewer", "handoffs", json!({"min_seq": seq})));
    let listed: HandoffsAnswer = answered("the handoffs", listed);
    assert_eq!(listed.handoffs[0].status, "pending", "{listed:?}");
    let unknown = json!({"handoff_id": "01KF0000000000000000000099"});
    let refused = nats.query("reviewer", "ack", unknown.clone());
    assert_eq!(refused, http.query("reviewer", "ack", unknown));
    let refused = refusal("an unknown handoff", refused);
    assert_eq!((refused.status, refused.code.as_str()), (404, "unknown_handoff"));
    let not_an_id = refusal("not an id", nats.query("reviewer", "ack", json!({"handoff_id": "nine"})));
    assert_eq!((not_an_id.status, not_an_id.field.as_deref()), (400, Some("handoff_id")));
    let stray = nats.query("reviewer", "ack", json!({"handoff_id": HANDOFF_ID, "notes": "typo"}));
    let stray = refusal("a stray field", stray);
    assert_eq!((stray.code.as_str(), stray.field.as_deref()), ("unknown_field", Some("notes")));
    let path = format!("/v1/swarms/demo/agents/reviewer/handoffs/{HANDOFF_ID}/ack");
    let (status, stray_over_http) = http.server.post_as(Some(http.token), &path, r#"{"notes": "typo"}"#);
    let stray_over_http = typed::<ErrorBody>(&path, stray_over_http).error;
    assert_eq!((status, stray_over_http.field.as_deref()), (400, Some("notes")), "{stray_over_http:?}");
    let stray = refusal("follow", nats.query("reviewer", "handoffs", json!({"min_seq": seq, "follow": true})));
    assert_eq!((stray.code.as_str(), stray.field.as_deref()), ("unknown_field", Some("follow")));
    let listing = "/v1/swarms/demo/agents/reviewer/handoffs?folow=true";
    let (status, stray_over_http) = http.server.get_as(Some(http.token), listing);
    let stray_over_http = typed::<ErrorBody>(listing, stray_over_http).error;
    assert_eq!((status, stray_over_http.field.as_deref()), (400, Some("folow")), "{stray_over_http:?}");

    let ack = json!({"handoff_id": HANDOFF_ID, "note": "reviewing now"});
    let acknowledged: Acknowledged = answered("the ack", nats.query("reviewer", "ack", ack.clone()));
    assert_eq!((acknowledged.handoff_id.as_str(), acknowledged.duplicate), (HANDOFF_ID, false));
    let ack_seq = acknowledged.seq;
    let again = nats.query("reviewer", "ack", ack.clone());
    assert_eq!(again, http.query("reviewer", "ack", ack));
    let again = refusal("a second ack", again);
    assert_eq!((again.status, again.code.as_str()), (409, "already_acknowledged"));

    let listed = nats.query("reviewer", "handoffs", json!({"min_seq": ack_seq}));
    assert_eq!(listed, http.query("reviewer", "handoffs", json!({"min_seq": ack_seq})));
    let listed: HandoffsAnswer = answered("the handoffs", listed);
    assert_eq!(listed.handoffs[0].status, "acknowledged", "{listed:?}");
    assert_eq!(listed.handoffs[0].acknowledged_seq, Some(ack_seq), "{listed:?}");
}

/// A reviewer that is not listening when its handoff is delivered, and
/// comes up after Mneme restarted (and published the pending handoff
/// again), reads it once from the handoffs stream with a durable consumer,
/// then lists and acknowledges it by request/reply.
#[test]
fn on_nats_a_reviewer_that_was_away_reads_its_handoff_from_the_stream_and_acknowledges_it() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    // A NATS server without auth beside API tokens: Mneme starts only when
    // told to (issue 17, item 5), under [log], which the helper opens.
    let config = format!("allow_unauthenticated_nats = true\n{CONFIG}");
    let mut server = MnemeServer::start_with(work.path(), Some(&nats.url()), &config);
    let seq = publish_and_wait_for_delivery(&server);
    // An observer, not the reviewer, sees the restart publish the pending
    // handoff again.
    let client = runtime.block_on(async_nats::connect(nats.url())).unwrap();
    let mut observer = runtime.block_on(client.subscribe("mneme.demo.reviewer.handoff")).unwrap();
    // Answered on the same connection: the server has the subscription.
    let queries = OverNats { runtime: &runtime, client: client.clone() };
    queries.query("reviewer", "handoffs", json!({"min_seq": seq})).unwrap();
    server.restart();
    let redelivered = runtime.block_on(async { tokio::time::timeout(Duration::from_secs(30), observer.next()).await });
    let redelivered: HandoffDelivery =
        serde_json::from_slice(&redelivered.expect("a redelivery").unwrap().payload).unwrap();
    assert_eq!(redelivered.handoff_id, HANDOFF_ID);

    let durable = DurableHandoffs::create(&runtime, client);
    let handoffs = durable.fetch_and_ack();
    assert_eq!(handoffs.len(), 1, "one handoff, stored once across the restart: {handoffs:?}");
    assert_eq!(handoffs[0].0, HANDOFF_ID, "its Nats-Msg-Id is the handoff id");
    assert_package_for_reviewer(&handoffs[0].1);

    assert!(durable.fetch_and_ack().is_empty(), "what the reviewer acknowledged to JetStream does not come again");

    acknowledge_over_request_reply(&queries, &OverHttp { server: &server, token: REVIEWER_TOKEN }, seq);
}

#[test]
fn on_the_embedded_log_the_reviewer_gets_the_package_over_http_and_nothing_private_leaks() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with(work.path(), None, CONFIG);
    let seq = publish_and_wait_for_delivery(&server);
    assert_package_for_reviewer(&first_handoff_on_the_stream(&server));
    assert_package_for_reviewer(&first_handoff_of_the_cli(&server));
    let queries = OverHttp { server: &server, token: REVIEWER_TOKEN };
    assert_reviewer_sees_shared_work_only(&OverHttp { server: &server, token: OPERATOR_TOKEN }, seq);
    assert_notes_and_core_blocks_are_their_authors(&OverHttp { server: &server, token: OPERATOR_TOKEN });
    // A token bound to the reviewer writes neither the coder's notes nor
    // its core memory, and opens only the reviewer's MCP tools.
    for (path, body) in [
        ("/v1/swarms/demo/agents/coder/notes", json!({"text": "forged"})),
        ("/v1/swarms/demo/agents/coder/core", json!({"block": "plan", "content": "forged"})),
        ("/mcp?agent=coder", json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})),
    ] {
        let (status, refused) = server.post_as(Some(REVIEWER_TOKEN), path, &body.to_string());
        assert_eq!(status, 403, "{path}: {refused}");
    }
    // The reviewer's own token gets the same answers for its own memory.
    let context = queries.query("reviewer", "context", json!({"query": "ledger", "min_seq": seq}));
    let context: ContextAnswer = answered("the reviewer's context", context);
    assert_no_secret("reviewer context", &context.text);
    assert_eq!(context.budget, 2500, "a request without a budget gets the agent's context_budget");
    assert_tokens_hold(&server);
    acknowledge_with_the_cli(&server, seq);

    // Replay rebuilds the same memories, and the handoff stays acknowledged.
    server.restart();
    for agent in ["coder", "reviewer", "scribe"] {
        let verified = stdout_of(
            &server.view_with_token(OPERATOR_TOKEN).cli(&["replay", "--swarm", "demo", "--agent", agent, "--verify"]),
        );
        assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{verified}");
    }
    let listed: HandoffsAnswer =
        typed("the handoffs", server.get_as(Some(REVIEWER_TOKEN), "/v1/swarms/demo/agents/reviewer/handoffs").1);
    assert_eq!(listed.handoffs[0].status, "acknowledged", "{listed:?}");

    // Erasing the coder's memories by time reaches every memory that holds
    // them, and nothing of anyone else's.
    let erase = json!({"agent": "coder", "before": "2100-01-01T00:00:00Z", "reason": "erasure request"});
    let (status, purged) = server.post_as(Some(OPERATOR_TOKEN), "/v1/swarms/demo/purge", &erase.to_string());
    assert_eq!(status, 200, "{purged}");
    let purged: PurgeAnswer = typed("the purge", purged);
    let tombstoned: Vec<&str> = purged.purged.iter().map(|result| result.agent.as_str()).collect();
    assert!(tombstoned.contains(&"reviewer") && tombstoned.contains(&"coder"), "{purged:?}");
    let search = |agent: &str, query: &str| {
        let path = format!("/v1/swarms/demo/agents/{agent}/search?q={query}&mode=bm25");
        typed::<SearchAnswer>(&path, server.get_as(Some(OPERATOR_TOKEN), &path).1).hits.len()
    };
    assert_eq!(search("reviewer", "pgvector"), 0, "the coder's shared decision is erased from the reviewer's memory");
    assert_eq!(search("coder", "zanzibar"), 0);
    assert_eq!(search("reviewer", REVIEWER_SECRET), 1, "the reviewer's own note stays");
    assert_eq!(search("reviewer", "runbook"), 1, "the scribe's note stays");
}

/// Issue 16, item 7, over HTTP: the planner's phase for the task holds the
/// coder's shared failure and fix, and the coder, with its own token, reads
/// that phase from its own memory; the coder's private note is in neither.
#[test]
fn a_phase_opened_for_a_task_holds_every_agents_shared_work_and_the_others_read_it() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start_with(work.path(), None, CONFIG);
    let phase_id = "01KF0000000000000000000001";
    let failing = "thread 'ledger::tests::migrate' panicked at src/ledger/store.rs:40:5:\nassertion failed: rows == 3";
    let events = json!([
        event(1, "planner", Some("shared"), "phase_started", json!({"phase": "migrate", "goal": "ledger on postgres"})),
        event(
            2,
            "coder",
            Some("shared"),
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"command": "cargo test"}, "output": failing, "exit_code": 101})
        ),
        event(
            3,
            "coder",
            Some("private"),
            "message_recorded",
            json!({"role": "assistant", "text": "zanzibar: the old rows were never counted"})
        ),
        event(
            4,
            "coder",
            Some("shared"),
            "tool_result_recorded",
            json!({"tool": "edit_file", "args": {"path": "src/ledger/store.rs", "old_string": "rows", "new_string": "rows + 1"},
                     "output": "edited", "exit_code": 0})
        ),
        event(
            5,
            "coder",
            Some("shared"),
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"command": "cargo test"}, "output": "test result: ok", "exit_code": 0})
        ),
        event(
            6,
            "planner",
            Some("shared"),
            "phase_completed",
            json!({"phase": "migrate", "phase_id": phase_id, "outcome": "migrated"})
        ),
    ]);
    let (status, accepted) = server.post_as(Some(OPERATOR_TOKEN), "/v1/events", &events.to_string());
    assert_eq!(status, 202, "{accepted}");
    let accepted: AcceptedEvents = typed("the planner's events", accepted);
    let min_seq = accepted.accepted.iter().map(|accepted| accepted.seq).max().unwrap();
    let phase = |token: &str, agent: &str, level: &str| -> PhaseAnswer {
        let path = format!("/v1/swarms/demo/agents/{agent}/phases/{phase_id}?level={level}&min_seq={min_seq}");
        let (status, body) = server.get_as(Some(token), &path);
        assert_eq!(status, 200, "{agent} {level}: {body}");
        typed(&path, body)
    };
    for (token, agent) in [(OPERATOR_TOKEN, "planner"), (CODER_TOKEN, "coder")] {
        let findings = phase(token, agent, "findings");
        assert_eq!(findings.heading.agent, "planner", "{findings:?}");
        let text = &findings.text.as_ref().expect("a text level").text;
        assert!(text.contains("fixed by editing src/ledger/store.rs"), "{agent}: {text}");
        assert!(text.contains("`cargo test` ×2 (1 failed)"), "{agent}: {text}");
        let original = phase(token, agent, "original");
        let PhaseEvents::Original(events) = &original.heading.events else { panic!("{agent}: {original:?}") };
        assert_eq!(events.len(), 5, "{agent}: {original:?}");
        let view = format!("{agent}'s view of the planner's phase");
        assert_no_secret(&view, &serde_json::to_string(&original).unwrap());
        assert_no_secret(&view, &serde_json::to_string(&phase(token, agent, "full")).unwrap());
    }
    let (_, listing) =
        server.get_as(Some(CODER_TOKEN), &format!("/v1/swarms/demo/agents/coder/phases?min_seq={min_seq}"));
    let listing: PhasesAnswer = typed("the coder's phases", listing);
    assert_eq!(listing.shared_phases[0].phase_id, phase_id, "{listing:?}");
    assert!(listing.phases.iter().all(|own| own.agent == "coder"), "{listing:?}");
}
