//! Erasure (issue 35): what a purge erased comes back through no read path.
//!
//! The property: for any log with purges, no path that reads the log or a
//! memory — pages of the log and their stream, provenance (every agent's
//! and the swarm's), the timeline, phases at every level and their original
//! events, handoffs and their packages, core memory, context, search, item
//! pages, dead letters — returns a byte of a purged payload, while what was
//! not purged is still there. One server takes case after case, so each
//! case also checks every earlier case's purges against a longer log.

mod common;

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::time::Duration;

use common::{MnemeServer, encode, stdout_of, typed};
use mneme_api::consolidation::PurgeAnswer;
use mneme_api::context::{PhaseAnswer, PhasesAnswer};
use mneme_api::log::{AcceptedEvents, EventsPage, LogEntry};
use mneme_api::memory::ReplayAnswer;
use mneme_nats::server::NatsServer;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};

const AGENTS: [&str; 3] = ["planner", "coder", "reviewer"];

const CONFIG: &str = "\n[[agents]]\nname = \"reviewer\"\n\n[consolidation]\nenabled = false\n";

/// MCP's provenance of items an agent does not hold is refused on purpose;
/// rmcp logs every refusal as a warning.
const QUIET: &[(&str, &str)] = &[("MNEME_LOG", "warn,rmcp=error")];

/// A kind of event that carries text, and where the secret goes in it.
#[derive(Debug, Clone, Copy)]
enum Carrier {
    Message,
    ToolArgs,
    ToolOutput,
    Decision,
    Fact,
    Note,
    CoreBlock,
    HandoffSummary,
    HandoffConstraint,
    PhaseGoal,
    TaskTitle,
    Preference,
}

const CARRIERS: [Carrier; 12] = [
    Carrier::Message,
    Carrier::ToolArgs,
    Carrier::ToolOutput,
    Carrier::Decision,
    Carrier::Fact,
    Carrier::Note,
    Carrier::CoreBlock,
    Carrier::HandoffSummary,
    Carrier::HandoffConstraint,
    Carrier::PhaseGoal,
    Carrier::TaskTitle,
    Carrier::Preference,
];

/// One event of a case: what carries the secret, whose it is, whether it
/// is shared, and whether the case purges it.
#[derive(Debug, Clone)]
struct Planted {
    carrier: Carrier,
    agent: &'static str,
    shared: bool,
    purged: bool,
}

fn planted() -> impl Strategy<Value = Planted> {
    (0..CARRIERS.len(), 0..2usize, any::<bool>(), any::<bool>()).prop_map(|(carrier, agent, shared, purged)| Planted {
        carrier: CARRIERS[carrier],
        agent: ["coder", "planner"][agent],
        shared,
        purged,
    })
}

/// The event that carries `secret`, as published.
fn event_of(planted: &Planted, id: &str, ts: &str, task: &str, secret: &str) -> Value {
    let (kind, data) = match planted.carrier {
        Carrier::Message => {
            ("message_recorded", json!({"role": "assistant", "text": format!("the key is {secret} today")}))
        }
        Carrier::ToolArgs => (
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"command": format!("export TOKEN={secret}")}, "output": "ok", "exit_code": 0}),
        ),
        Carrier::ToolOutput => (
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"command": "cat .env"}, "output": format!("TOKEN={secret}\n"), "exit_code": 0}),
        ),
        Carrier::Decision => (
            "decision_made",
            json!({"title": format!("vault for {secret}"), "choice": format!("keep {secret} in the vault"), "rationale": "audit"}),
        ),
        Carrier::Fact => ("fact_asserted", json!({"subject": "deploy_key", "predicate": "is", "object": secret})),
        Carrier::Note => ("note_written", json!({"text": format!("remember {secret}"), "tags": ["gotcha"]})),
        Carrier::CoreBlock => {
            ("core_memory_updated", json!({"block": format!("b{}", &id[20..]), "content": format!("I hold {secret}")}))
        }
        Carrier::HandoffSummary => (
            "handoff_sent",
            json!({"to": "reviewer", "task": format!("review {task}"), "summary": format!("done, see {secret}")}),
        ),
        Carrier::HandoffConstraint => (
            "handoff_sent",
            json!({"to": "reviewer", "task": format!("check {task}"), "constraints": [format!("never print {secret}")]}),
        ),
        Carrier::PhaseGoal => ("phase_started", json!({"phase": "rotate", "goal": format!("rotate {secret}")})),
        Carrier::TaskTitle => {
            ("task_updated", json!({"task_id": task, "status": "in_progress", "title": format!("ship {secret}")}))
        }
        Carrier::Preference => {
            ("preference_set", json!({"key": format!("k{}", &id[20..]), "value": format!("use {secret}")}))
        }
    };
    json!({"id": id, "swarm": "demo", "agent": planted.agent, "ts": ts, "correlation_id": task,
        "scope": if planted.shared { "shared" } else { "private" }, "kind": kind, "data": data})
}

/// A 26-character ULID whose last digits are `n`.
fn ulid(case: usize, n: usize) -> String {
    format!("01KH{case:011}{n:011}")
}

#[test]
fn no_read_path_shows_a_byte_of_what_a_purge_erased() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with_environment(work.path(), None, CONFIG, QUIET);
    let (erased, kept) = purges_erase_from_every_read_path(&server);
    // The embedded log read offline, as `mneme tail --data-dir` does with
    // no server running, shows what the server recorded.
    server.stop();
    let data_dir = server.data_dir.to_str().unwrap().to_string();
    let offline = stdout_of(&server.cli(&["tail", "--data-dir", &data_dir]));
    assert_shows_none_of(&erased, &kept, "mneme tail --data-dir", &offline);
    // The snapshots (written after each purge, and at the stop) and the
    // text index on disk hold no byte of it; the log still does until the
    // purges are carried into it.
    for derived in ["snapshots", "text-index"] {
        assert!(!common::files_under(&server.data_dir.join(derived)).is_empty(), "nothing in {derived}");
        assert_no_file_holds(&server.data_dir.join(derived), &erased);
    }
    assert!(
        files_holding(&server.data_dir.join("log"), &erased) > 0,
        "the log holds what was purged until it is erased"
    );
    // `mneme erase` carries them into the log with no server running.
    let config = server.config_path.to_str().unwrap().to_string();
    let carried: Value = serde_json::from_str(&stdout_of(&server.cli(&[
        "--json",
        "erase",
        "--data-dir",
        &data_dir,
        "--config",
        &config,
    ])))
    .unwrap();
    assert!(carried["erased"].as_u64().unwrap() > 0 && carried["rewritten"].as_u64().unwrap() > 0, "{carried}");
    assert_no_file_holds(&server.data_dir, &erased);
    let offline = stdout_of(&server.cli(&["tail", "--data-dir", &data_dir]));
    assert_shows_none_of(&erased, &kept, "mneme tail --data-dir, after the erasure", &offline);
    // The server starts on the erased log and rebuilds every memory from it;
    // after a stop (snapshots written), no file of the data dir holds a byte.
    server.start_again();
    every_read_path_after_the_erasure(&server, &erased, &kept);
    server.stop();
    assert_no_file_holds(&server.data_dir, &erased);
    assert!(files_holding(&server.data_dir, &kept) > 0, "what was kept is in the data dir");
}

#[test]
fn no_read_path_shows_a_byte_of_what_a_purge_erased_on_jetstream() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_with_environment(work.path(), Some(&nats.url()), CONFIG, QUIET);
    let (erased, kept) = purges_erase_from_every_read_path(&server);
    assert_answers_show_none_of(&nats_answers(&runtime, &nats.url()), &erased);
    assert!(files_holding(&nats.store_dir(), &erased) > 0, "the streams hold what was purged until it is erased");
    // At its next start the server carries the purges into the streams
    // and rebuilds every memory from them.
    server.restart();
    every_read_path_after_the_erasure(&server, &erased, &kept);
    assert_answers_show_none_of(&nats_answers(&runtime, &nats.url()), &erased);
    server.stop();
    for dir in [server.data_dir.clone(), nats.store_dir()] {
        assert_no_file_holds(&dir, &erased);
    }
    assert!(files_holding(&nats.store_dir(), &kept) > 0, "what was kept is in the JetStream store");
}

/// Once the purges are carried into the log: every read path shows none of
/// what was erased and all that was kept, the log's pages show the erased
/// records' stubs, and replay rebuilds the same memories.
fn every_read_path_after_the_erasure(server: &MnemeServer, erased: &[String], kept: &[String]) {
    let seen = read_everything(server);
    assert_answers_show_none_of(&seen, erased);
    let log: String = seen
        .iter()
        .filter(|(path, _)| path.starts_with("GET /v1/swarms/demo/events"))
        .map(|(_, body)| body.as_str())
        .collect();
    for secret in kept {
        assert!(log.contains(secret.as_str()), "{secret}, not purged, is missing from the log's pages");
    }
    assert!(log.contains("\"erased_by\""), "the log's pages show the erased records' stubs");
    cli_and_replay_show_none_of(server, erased, kept);
}

fn assert_answers_show_none_of(seen: &[(String, String)], erased: &[String]) {
    for (path, body) in seen {
        for secret in erased {
            assert!(
                !body.contains(secret.as_str()),
                "the erased {secret} came back through {path}: {}",
                excerpt(body, secret)
            );
        }
    }
}

/// The number of files under `dir` holding any of `secrets`.
fn files_holding(dir: &std::path::Path, secrets: &[String]) -> usize {
    common::files_under(dir)
        .iter()
        .filter(|path| {
            let bytes = std::fs::read(path).unwrap_or_default();
            secrets.iter().any(|secret| bytes.windows(secret.len()).any(|window| window == secret.as_bytes()))
        })
        .count()
}

fn assert_no_file_holds(dir: &std::path::Path, secrets: &[String]) {
    for path in common::files_under(dir) {
        let bytes = std::fs::read(&path).unwrap_or_default();
        for secret in secrets {
            let found = bytes.windows(secret.len()).any(|window| window == secret.as_bytes());
            assert!(!found, "the erased {secret} is in {}", path.display());
        }
    }
}

/// Fails if `shown` holds an erased secret, or lacks a kept one.
fn assert_shows_none_of(erased: &[String], kept: &[String], what: &str, shown: &str) {
    for secret in erased {
        assert!(
            !shown.contains(secret.as_str()),
            "the erased {secret} came back through {what}: {}",
            excerpt(shown, secret)
        );
    }
    for secret in kept {
        assert!(shown.contains(secret.as_str()), "{secret}, not purged, is missing from {what}");
    }
}

/// Runs the property's cases on `server`, then checks the CLI and replay;
/// answers the secrets erased and kept.
fn purges_erase_from_every_read_path(server: &MnemeServer) -> (Vec<String>, Vec<String>) {
    let cases: u32 = std::env::var("MNEME_ERASURE_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(6);
    // No shrinking: the server's log grows with every case, so a smaller
    // case would not be run against the same log.
    let config = Config { cases, failure_persistence: None, max_shrink_iters: 0, ..Config::default() };
    let mut runner = TestRunner::new(config);
    // (cases run, secrets erased, secrets kept)
    let state = RefCell::new((0usize, Vec::<String>::new(), Vec::<String>::new()));
    let strategy = proptest::collection::vec(planted(), 1..10);
    runner
        .run(&strategy, |plan| {
            let mut state = state.borrow_mut();
            let (case, erased, kept) = &mut *state;
            *case += 1;
            let case = *case;
            let task = format!("task-{case}");
            let mut events = Vec::new();
            let mut purged_ids = Vec::new();
            let mut secrets = Vec::new();
            for (index, planted) in plan.iter().enumerate() {
                let id = ulid(case, index + 1);
                let secret = format!("zqs{case}x{index}q");
                let ts = format!("2026-02-{:02}T{:02}:{:02}:00Z", case.min(28), index / 60, index % 60);
                events.push(event_of(planted, &id, &ts, &task, &secret));
                if planted.purged {
                    purged_ids.push(id);
                }
                secrets.push((secret, planted.purged));
            }
            // A message that stays, and a handoff of the task to the
            // reviewer, whose bundle quotes the task's shared work.
            let kept_secret = format!("zqk{case}q");
            events.push(json!({"id": ulid(case, 90), "swarm": "demo", "agent": "coder", "ts": "2026-02-28T23:00:00Z",
                "correlation_id": task, "scope": "shared", "kind": "message_recorded",
                "data": {"role": "assistant", "text": format!("kept {kept_secret}")}}));
            events.push(json!({"id": ulid(case, 91), "swarm": "demo", "agent": "coder", "ts": "2026-02-28T23:01:00Z",
                "correlation_id": task, "scope": "shared", "kind": "handoff_sent",
                "data": {"to": "reviewer", "task": format!("take over {task}")}}));
            let accepted: AcceptedEvents = server.post_typed("/v1/events", &Value::Array(events).to_string());
            let last = accepted.accepted.iter().map(|accepted| accepted.seq).max().unwrap();
            wait_for_delivery(server, last);
            // Verdicts that quote the items (links, contradictions).
            let _: Value = server.post_typed("/v1/swarms/demo/consolidate", "");
            if !purged_ids.is_empty() {
                let purge: PurgeAnswer = server.post_typed(
                    "/v1/swarms/demo/purge",
                    &json!({"item_ids": purged_ids, "reason": "erasure request"}).to_string(),
                );
                prop_assert!(!purge.purged.is_empty(), "{purge:?}");
            }
            for (secret, purged) in secrets {
                if purged { erased.push(secret) } else { kept.push(secret) }
            }
            kept.push(kept_secret);
            let seen = read_everything(server);
            for secret in erased.iter() {
                if let Some(path) = seen.iter().find(|(_, body)| body.contains(secret.as_str())) {
                    prop_assert!(
                        false,
                        "the erased {secret} came back through {}: {}",
                        path.0,
                        excerpt(&path.1, secret)
                    );
                }
            }
            let log: String = seen
                .iter()
                .filter(|(path, _)| path.starts_with("GET /v1/swarms/demo/events"))
                .map(|(_, body)| body.as_str())
                .collect();
            for secret in kept.iter() {
                prop_assert!(log.contains(secret.as_str()), "{secret}, not purged, is missing from the log's pages");
            }
            Ok(())
        })
        .unwrap();
    let (_, erased, kept) = state.into_inner();
    cli_and_replay_show_none_of(server, &erased, &kept);
    (erased, kept)
}

/// The CLI reads the same answers (the log, and each agent's record), and
/// replay rebuilds the same memories.
fn cli_and_replay_show_none_of(server: &MnemeServer, erased: &[String], kept: &[String]) {
    let tail = stdout_of(&server.cli(&["tail"]));
    assert_shows_none_of(erased, kept, "mneme tail", &tail);
    for agent in AGENTS {
        let audit = stdout_of(&server.cli(&["audit", "--agent", agent, "--format", "jsonl"]));
        assert_shows_none_of(erased, &[], &format!("mneme audit --agent {agent}"), &audit);
    }
    // Replay rebuilds the same memories.
    for agent in AGENTS {
        let replay: ReplayAnswer =
            server.post_typed(&format!("/v1/swarms/demo/agents/{agent}/replay?verify=true"), "{}");
        assert_eq!(replay.matches, Some(true), "{agent}: {replay:?}");
    }
}

/// Waits until Mneme delivered the case's handoff, published up to `seq`
/// (its `handoff_received`, the one event Mneme appends after a case's
/// publish), and every memory has applied it.
fn wait_for_delivery(server: &MnemeServer, seq: u64) {
    let after = format!("/v1/swarms/demo/events?from_seq={}&limit=10", seq + 1);
    let mut delivered = None;
    common::wait_until("the case's handoff is delivered", Duration::from_secs(30), || {
        let page: EventsPage = server.get_typed(&after);
        delivered = page.events.iter().find(|entry| entry.kind() == Some("handoff_received")).map(LogEntry::seq);
        delivered.is_some()
    });
    let delivered = delivered.expect("waited for above");
    for agent in AGENTS {
        let _ = server.get(&format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={delivered}"));
    }
}

/// Every answer a read path gave, as text, with what was asked.
struct Reader<'a> {
    server: &'a MnemeServer,
    seen: Vec<(String, String)>,
}

impl Reader<'_> {
    /// A GET that must answer 200.
    fn get(&mut self, path: &str) -> Value {
        let body = self.server.get(path);
        self.seen.push((format!("GET {path}"), body.to_string()));
        body
    }

    /// A GET that may be refused (an item another memory holds).
    fn get_any(&mut self, path: &str) -> (u16, Value) {
        let (status, body) = self.server.get_as(None, path);
        self.seen.push((format!("GET {path}"), body.to_string()));
        (status, body)
    }

    fn post(&mut self, path: &str, body: &Value) {
        let (status, answer) = self.server.post(path, &body.to_string());
        assert_eq!(status, 200, "POST {path}: {answer}");
        self.seen.push((format!("POST {path}"), answer.to_string()));
    }
}

/// Every read path, each answer as text: (what was asked, the answer).
fn read_everything(server: &MnemeServer) -> Vec<(String, String)> {
    let mut reader = Reader { server, seen: Vec::new() };
    let mut from = 1;
    let mut item_ids = Vec::new();
    let mut last_seq = 0;
    loop {
        let page: EventsPage =
            typed("events", reader.get(&format!("/v1/swarms/demo/events?from_seq={from}&limit=1000")));
        for entry in &page.events {
            last_seq = entry.seq();
            match entry {
                LogEntry::Event(event) => item_ids.push(event.event["id"].as_str().unwrap().to_string()),
                LogEntry::Erased(erased) => item_ids.push(erased.id.clone()),
                LogEntry::Invalid(_) => {}
            }
        }
        if page.events.is_empty() {
            break;
        }
        from = page.next_seq;
    }
    reader.get("/v1/swarms/demo/deadletters");
    for agent in AGENTS {
        let base = format!("/v1/swarms/demo/agents/{agent}");
        reader.get(&format!("{base}/timeline?limit=500"));
        reader.get(&format!("{base}/core"));
        reader.get(&format!("{base}/handoffs"));
        reader.get(&format!("{base}/items?limit=500"));
        for state in ["active", "purged", "forgotten", "merged"] {
            reader.get(&format!("{base}/items?state={state}&limit=500"));
        }
        reader
            .get(&format!("{base}/search?q={}&k=50&mode=bm25", encode("zqs key token vault remember rotate ship use")));
        let phases: PhasesAnswer = typed("phases", reader.get(&format!("{base}/phases")));
        for phase in phases.phases.iter().chain(&phases.shared_phases) {
            for level in ["index", "compressed", "summary", "findings", "full", "original"] {
                let path = format!("{base}/phases/{}?level={level}", phase.phase_id);
                let (status, body) = reader.get_any(&path);
                if status == 200 {
                    let _: PhaseAnswer = typed(&path, body);
                }
            }
        }
        reader.post(&format!("{base}/context"), &json!({"query": "key token", "budget": 8000}));
        for item_id in &item_ids {
            reader.get_any(&format!("{base}/provenance/{item_id}"));
        }
    }
    for item_id in &item_ids {
        reader.get_any(&format!("/v1/swarms/demo/provenance/{item_id}"));
    }
    // MCP's tools answer from the same service.
    for agent in AGENTS {
        for (tool, arguments) in [
            ("memory_search", json!({"query": "zqs key token vault remember rotate ship use", "limit": 50})),
            ("memory_context", json!({"query": "key token", "budget_tokens": 8000})),
            ("memory_timeline", json!({})),
        ] {
            let answer = mcp_tool(server, agent, tool, arguments);
            reader.seen.push((format!("MCP {tool} as {agent}"), answer));
        }
        for item_id in &item_ids {
            let answer = mcp_tool(server, agent, "memory_provenance", json!({"item_id": item_id}));
            reader.seen.push((format!("MCP memory_provenance {item_id} as {agent}"), answer));
        }
    }
    let mut seen = reader.seen;
    seen.push(("GET /v1/swarms/demo/events?follow=true".to_string(), follow_stream(server, last_seq)));
    seen
}

/// A tool called over `/mcp` (stateless, JSON answers), its answer as text.
fn mcp_tool(server: &MnemeServer, agent: &str, tool: &str, arguments: Value) -> String {
    let request =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}});
    let answer = ureq::post(&format!("{}/mcp?agent={agent}", server.url))
        .set("Accept", "application/json, text/event-stream")
        .set("Content-Type", "application/json")
        .send_string(&request.to_string())
        .unwrap_or_else(|error| panic!("MCP {tool} as {agent}: {error}"));
    let text = answer.into_string().unwrap();
    assert!(text.contains("\"result\"") || text.contains("unknown_item"), "MCP {tool} as {agent}: {text}");
    text
}

/// The answers of NATS queries (`mneme.demo.<agent>.query.<verb>`), as text.
fn nats_answers(runtime: &tokio::runtime::Runtime, url: &str) -> Vec<(String, String)> {
    let client = runtime.block_on(async_nats::connect(url)).unwrap();
    let mut seen = Vec::new();
    for agent in AGENTS {
        for (verb, body) in [
            ("search", json!({"q": "zqs key token vault remember rotate ship use", "k": 50, "mode": "bm25"})),
            ("context", json!({"query": "key token", "budget": 8000})),
            ("items", json!({"limit": 500})),
            ("handoffs", json!({})),
            ("core", json!({})),
            ("timeline", json!({"limit": 500})),
        ] {
            let reply = common::nats_request(runtime, &client, format!("mneme.demo.{agent}.query.{verb}"), &body);
            let text = String::from_utf8_lossy(&reply).into_owned();
            assert!(!text.contains("\"error\""), "NATS {verb} as {agent}: {text}");
            seen.push((format!("NATS {verb} as {agent}"), text));
        }
    }
    seen
}

/// The log's event stream from its start up to `last_seq`, as text.
fn follow_stream(server: &MnemeServer, last_seq: u64) -> String {
    let response = ureq::get(&format!("{}/v1/swarms/demo/events?follow=true&from_seq=1", server.url))
        .timeout(Duration::from_secs(30))
        .call()
        .unwrap();
    let mut text = String::new();
    for line in BufReader::new(response.into_reader()).lines() {
        let line = line.unwrap();
        text.push_str(&line);
        text.push('\n');
        if let Some(data) = line.strip_prefix("data:") {
            let entry: LogEntry = serde_json::from_str(data.trim()).unwrap();
            if entry.seq() >= last_seq {
                break;
            }
        }
    }
    text
}

/// The part of `body` around `secret`.
fn excerpt(body: &str, secret: &str) -> String {
    let at = body.find(secret).unwrap_or(0);
    let before: String = body[..at].chars().rev().take(300).collect::<Vec<_>>().into_iter().rev().collect();
    let after: String = body[at..].chars().take(300).collect();
    format!("{before}{after}")
}
