//! Many swarms in one process (issue 36): `mneme serve --config
//! design.toml --config dev.toml` holds both, each with its own log, memories
//! and tokens. Scopes hold across swarms (private and shared never cross),
//! and a token of one swarm reaches nothing of the other over HTTP, MCP or
//! `/metrics`; over NATS each swarm answers on its own subjects.

mod common;

use common::{MnemeServer, nats_request, typed};
use mneme_api::log::{AcceptedEvents, Health, Swarms};
use mneme_api::memory::SearchAnswer;
use mneme_nats::server::NatsServer;
use serde_json::{Value, json};

const DESIGN_OPS: &str = "design-operator-secret-0123456789";
const DEV_OPS: &str = "dev-operator-secret-0123456789";
const DEV_CODER: &str = "dev-coder-secret-0123456789";

/// Swarm `design` with an operator's token, swarm `dev` with an operator's
/// and one bound to its coder.
fn swarms() -> [(&'static str, String); 2] {
    let token = |name: &str, secret: &str, agent: Option<&str>| {
        let agent = agent.map(|agent| format!("agent = \"{agent}\"\n")).unwrap_or_default();
        format!("\n[[http.tokens]]\nname = \"{name}\"\ntoken = \"{secret}\"\n{agent}")
    };
    [
        ("design", token("ops", DESIGN_OPS, None)),
        (
            "dev",
            format!("{}system_publishers = [\"orchestrator\"]\n\n", common::SWARM_KEYS)
                + &token("ops", DEV_OPS, None)
                + &token("coder", DEV_CODER, Some("coder")),
        ),
    ]
}

/// The NATS token Mneme logs in with: API tokens on NATS need NATS
/// credentials.
const NATS_TOKEN: &str = "nats-token-of-mneme-0123456789";

fn start(work: &std::path::Path, nats_url: Option<&str>) -> MnemeServer {
    let [(design, design_extra), (dev, dev_extra)] = swarms();
    let environment: &[(&str, &str)] = if nats_url.is_some() { &[("MNEME_NATS_TOKEN", NATS_TOKEN)] } else { &[] };
    MnemeServer::start_swarms(work, nats_url, &[(design, &design_extra), (dev, &dev_extra)], environment)
}

fn event(swarm: &str, number: u32, agent: &str, scope: &str, text: &str) -> Value {
    json!({
        "id": format!("01KG{}000000000000000000{number:03}", if swarm == "design" { "A" } else { "B" }),
        "swarm": swarm,
        "agent": agent,
        "ts": format!("2026-03-02T10:00:{number:02}Z"),
        "scope": scope,
        "kind": "message_recorded",
        "data": {"role": "assistant", "text": text},
    })
}

/// Publishes each swarm's work with its operator's token; the last seq of
/// each.
fn publish(server: &MnemeServer) -> (u64, u64) {
    let design = json!([
        event("design", 1, "coder", "shared", "the design swarm chose zanzibar for the ledger"),
        event("design", 2, "coder", "private", "design keeps quokka to itself"),
    ]);
    let dev = json!([event("dev", 1, "coder", "shared", "the dev swarm builds narwhal")]);
    let mut last = Vec::new();
    for (token, events) in [(DESIGN_OPS, design), (DEV_OPS, dev)] {
        let (status, answer) = server.post_as(Some(token), "/v1/events", &events.to_string());
        assert_eq!(status, 202, "{answer}");
        let accepted: AcceptedEvents = typed("the publish", answer);
        last.push(accepted.accepted.last().unwrap().seq);
    }
    (last[0], last[1])
}

fn hits(server: &MnemeServer, token: &str, swarm: &str, agent: &str, word: &str, min_seq: u64) -> usize {
    let path = format!("/v1/swarms/{swarm}/agents/{agent}/search?q={word}&mode=bm25&min_seq={min_seq}");
    let (status, answer) = server.get_as(Some(token), &path);
    assert_eq!(status, 200, "{path}: {answer}");
    typed::<SearchAnswer>(&path, answer).hits.len()
}

/// What both backends must show: each swarm's memories hold only that
/// swarm's events, as their scopes say.
fn assert_scopes_hold_across_swarms(server: &MnemeServer, (design_seq, dev_seq): (u64, u64)) {
    let health: Health = typed("/healthz", server.get_as(None, "/healthz").1);
    let held: Vec<&str> = health.swarms.iter().map(|swarm| swarm.swarm.as_str()).collect();
    assert_eq!(held, ["design", "dev", "system"], "{health:?}");
    assert!(health.swarms[0].last_seq >= design_seq && health.swarms[1].last_seq >= dev_seq, "{health:?}");
    // Shared reaches the swarm's other agents; private stays with its agent.
    assert_eq!(hits(server, DESIGN_OPS, "design", "planner", "zanzibar", design_seq), 1);
    assert_eq!(hits(server, DESIGN_OPS, "design", "coder", "quokka", design_seq), 1);
    assert_eq!(hits(server, DESIGN_OPS, "design", "planner", "quokka", design_seq), 0);
    assert_eq!(hits(server, DEV_OPS, "dev", "planner", "narwhal", dev_seq), 1);
    // Neither crosses into the other swarm, not even to an agent of the
    // same name.
    for word in ["zanzibar", "quokka"] {
        for agent in ["coder", "planner"] {
            assert_eq!(hits(server, DEV_OPS, "dev", agent, word, dev_seq), 0, "{word} reached dev's {agent}");
        }
    }
    for agent in ["coder", "planner"] {
        assert_eq!(hits(server, DESIGN_OPS, "design", agent, "narwhal", design_seq), 0, "narwhal reached design");
    }
}

/// An event of the system layer, as `agent`.
fn system_event(number: u32, agent: &str, scope: &str, text: &str) -> Value {
    let mut event = event("system", number, agent, scope, text);
    event["id"] = json!(format!("01KGC000000000000000000{number:03}"));
    event
}

/// Publishes to the system layer as dev's orchestrator, which dev's file
/// lists in `system_publishers`; answers its seq on the system log. What
/// may not publish there is refused, naming the field.
fn publish_system(server: &MnemeServer) -> u64 {
    let announcement = system_event(1, "orchestrator", "system", "every swarm freezes merges on axolotl day");
    // Design's operator: design lists no system publisher.
    let (status, answer) = server.post_as(Some(DESIGN_OPS), "/v1/events", &json!([announcement]).to_string());
    assert_eq!((status, answer["error"]["code"].as_str()), (403, Some("system_scope_not_allowed")), "{answer}");
    assert_eq!(answer["error"]["field"], "[0].agent", "{answer}");
    // Dev's coder token: bound to the coder, who is not listed either.
    let as_coder = system_event(2, "coder", "system", "the coder announces to everyone");
    for forged in [&announcement, &as_coder] {
        let (status, answer) = server.post_as(Some(DEV_CODER), "/v1/events", &json!([forged]).to_string());
        assert_eq!(status, 403, "{answer}");
    }
    // Scope system names the system layer; the system layer holds only it.
    let misplaced = event("dev", 20, "orchestrator", "system", "system scope in dev's own log");
    let (status, answer) = server.post_as(Some(DEV_OPS), "/v1/events", &json!([misplaced]).to_string());
    assert_eq!((status, answer["error"]["field"].as_str()), (400, Some("[0].scope")), "{answer}");
    let shared = system_event(3, "orchestrator", "shared", "shared is a swarm's");
    let (status, answer) = server.post_as(Some(DEV_OPS), "/v1/events", &json!([shared]).to_string());
    assert_eq!((status, answer["error"]["code"].as_str()), (400, Some("invalid_scope")), "{answer}");
    let (status, answer) = server.post_as(Some(DEV_OPS), "/v1/events", &json!([announcement]).to_string());
    assert_eq!(status, 202, "{answer}");
    typed::<AcceptedEvents>("the system publish", answer).accepted[0].seq
}

/// The system layer crosses swarms: every agent of both swarms finds the
/// announcement, in search and in its context.
fn assert_system_crosses_swarms(server: &MnemeServer, system_seq: u64) {
    for (token, swarm) in [(DESIGN_OPS, "design"), (DEV_OPS, "dev"), (DEV_CODER, "dev")] {
        for agent in ["coder", "planner"] {
            if token == DEV_CODER && agent != "coder" {
                continue;
            }
            let path =
                format!("/v1/swarms/{swarm}/agents/{agent}/search?q=axolotl&mode=bm25&min_system_seq={system_seq}");
            let (status, answer) = server.get_as(Some(token), &path);
            assert_eq!(status, 200, "{path}: {answer}");
            let answer: SearchAnswer = typed(&path, answer);
            assert_eq!(answer.hits.len(), 1, "{swarm}/{agent}: {answer:?}");
            assert_eq!((answer.hits[0].scope.as_str(), answer.hits[0].agent.as_str()), ("system", "orchestrator"));
        }
        let body = json!({"query": "axolotl merges", "budget": 2000, "min_system_seq": system_seq});
        let (status, answer) =
            server.post_as(Some(token), &format!("/v1/swarms/{swarm}/agents/coder/context"), &body.to_string());
        assert_eq!(status, 200, "{answer}");
        let context: mneme_api::context::ContextAnswer = typed("context", answer);
        assert!(context.text.contains("axolotl"), "{swarm}: {}", context.text);
        assert!(context.tokens <= context.budget && context.budget == 2000, "{context:?}");
        assert!(context.items.iter().any(|item| item.tier == "system"), "{context:?}");
    }
    // A token opens its own swarm only: the system layer is read through it.
    let (status, _) = server.get_as(Some(DEV_OPS), "/v1/swarms/system/agents/system/search?q=axolotl");
    assert_eq!(status, 403);
}

/// A token of `dev` reaches nothing of `design`.
fn assert_tokens_stay_in_their_swarm(server: &MnemeServer) {
    for token in [DEV_OPS, DEV_CODER] {
        for path in
            ["/v1/swarms/design/agents/coder/search?q=zanzibar", "/v1/swarms/design/events", "/v1/swarms/design/agents"]
        {
            let (status, answer) = server.get_as(Some(token), path);
            assert_eq!(status, 403, "{path}: {answer}");
        }
        // Publishing into the other swarm is refused, naming the field.
        let forged = json!([event("design", 9, "coder", "shared", "forged into design")]);
        let (status, answer) = server.post_as(Some(token), "/v1/events", &forged.to_string());
        assert_eq!(status, 403, "{answer}");
        assert_eq!(answer["error"]["field"], "[0].swarm", "{answer}");
        // The list of swarms shows only its own.
        let listed: Swarms = typed("/v1/swarms", server.get_as(Some(token), "/v1/swarms").1);
        let names: Vec<&str> = listed.swarms.iter().map(|swarm| swarm.swarm.as_str()).collect();
        assert_eq!(names, ["dev"]);
        // MCP: another swarm's agents are refused before any MCP is spoken.
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}});
        let (status, answer) = server.post_as(Some(token), "/mcp?swarm=design&agent=coder", &initialize.to_string());
        assert_eq!(status, 403, "{answer}");
    }
    // Its own swarm answers, MCP included: the session is the token's swarm.
    let mine = json!([event("dev", 2, "coder", "shared", "the dev coder writes okapi")]);
    let (status, answer) = server.post_as(Some(DEV_CODER), "/v1/events", &mine.to_string());
    assert_eq!(status, 202, "{answer}");
    let seq = typed::<AcceptedEvents>("the publish", answer).accepted[0].seq;
    assert_eq!(hits(server, DEV_CODER, "dev", "coder", "okapi", seq), 1);
    let found = mcp_search(server, DEV_CODER, "", "okapi");
    assert!(found.contains("okapi"), "{found}");
    assert!(!mcp_search(server, DEV_CODER, "", "zanzibar").contains("zanzibar"));
    let found = mcp_search(server, DESIGN_OPS, "?agent=planner", "zanzibar");
    assert!(found.contains("zanzibar"), "{found}");
    // One batch is one swarm's.
    let mixed = json!([event("design", 10, "coder", "shared", "one"), event("dev", 10, "coder", "shared", "two"),]);
    let (status, answer) = server.post_as(Some(DESIGN_OPS), "/v1/events", &mixed.to_string());
    assert_eq!((status, answer["error"]["code"].as_str()), (400, Some("mixed_swarms")), "{answer}");
    // Metrics: a swarm's token sees its own series, never the other's.
    let metrics = server.metrics_as(DEV_OPS);
    assert!(metrics.contains("swarm=\"dev\""), "{metrics}");
    assert!(!metrics.contains("swarm=\"design\""), "{metrics}");
}

/// The text of an MCP `memory_search` for `word`, over `/mcp<query>` with
/// `token`, as a stateless streamable-HTTP client sends it.
fn mcp_search(server: &MnemeServer, token: &str, query: &str, word: &str) -> String {
    let call = |body: Value| {
        let response = ureq::post(&format!("{}/mcp{query}", server.url))
            .set("authorization", &format!("Bearer {token}"))
            .set("content-type", "application/json")
            .set("accept", "application/json, text/event-stream")
            .send_string(&body.to_string())
            .unwrap_or_else(|error| panic!("POST /mcp{query}: {error}"));
        response.into_string().unwrap()
    };
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "many-swarms-test", "version": "1"}
    }});
    let initialized = call(initialize);
    assert!(initialized.contains("serverInfo"), "{initialized}");
    call(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "memory_search", "arguments": {"query": word, "mode": "bm25"}
    }}))
}

#[test]
fn on_the_embedded_log_two_swarms_in_one_process_keep_their_memories_and_tokens_apart() {
    let work = tempfile::tempdir().unwrap();
    let mut server = start(work.path(), None);
    let seqs = publish(&server);
    assert_scopes_hold_across_swarms(&server, seqs);
    let system_seq = publish_system(&server);
    assert_system_crosses_swarms(&server, system_seq);
    assert_tokens_stay_in_their_swarm(&server);
    // Each swarm keeps its data in its own folder under --data-dir, and
    // comes back from it; the system layer beside them.
    for swarm in ["design", "dev", "system"] {
        assert!(server.data_dir.join(swarm).join("log").is_dir(), "{swarm}'s log");
    }
    server.restart();
    assert_scopes_hold_across_swarms(&server, seqs);
    assert_system_crosses_swarms(&server, system_seq);
    for (token, swarm) in [(DESIGN_OPS, "design"), (DEV_OPS, "dev")] {
        let verified = server.view_with_token(token).cli(&["replay", "--swarm", swarm, "--agent", "coder", "--verify"]);
        let verified = common::stdout_of(&verified);
        assert!(verified.contains("MATCH") && !verified.contains("MISMATCH"), "{swarm}: {verified}");
    }
}

#[test]
fn on_nats_two_swarms_in_one_process_answer_on_their_own_subjects() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let nats = runtime.block_on(async {
        match NatsServer::binary() {
            Some(_) => NatsServer::start_with_token(NATS_TOKEN).await.expect("nats-server with a token"),
            None => NatsServer::require().await,
        }
    });
    let work = tempfile::tempdir().unwrap();
    let server = start(work.path(), Some(&nats.url()));
    let seqs = publish(&server);
    assert_scopes_hold_across_swarms(&server, seqs);
    let system_seq = publish_system(&server);
    assert_system_crosses_swarms(&server, system_seq);
    assert_tokens_stay_in_their_swarm(&server);
    let client =
        runtime.block_on(async_nats::ConnectOptions::with_token(NATS_TOKEN.to_string()).connect(nats.url())).unwrap();
    let search = |swarm: &str, word: &str, min_seq: u64| -> SearchAnswer {
        let body = json!({"q": word, "mode": "bm25", "min_seq": min_seq});
        let reply = nats_request(&runtime, &client, format!("mneme.{swarm}.planner.query.search"), &body);
        serde_json::from_slice(&reply).unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(&reply)))
    };
    assert_eq!(search("design", "zanzibar", seqs.0).hits.len(), 1);
    assert_eq!(search("dev", "zanzibar", seqs.1).hits.len(), 0);
    assert_eq!(search("dev", "narwhal", seqs.1).hits.len(), 1);
    assert_eq!(search("design", "narwhal", seqs.0).hits.len(), 0);
    // The system layer crosses swarms over NATS too.
    for swarm in ["design", "dev"] {
        let body = json!({"q": "axolotl", "mode": "bm25", "min_system_seq": system_seq});
        let reply = nats_request(&runtime, &client, format!("mneme.{swarm}.planner.query.search"), &body);
        let answer: SearchAnswer = serde_json::from_slice(&reply).unwrap();
        assert_eq!(answer.hits.len(), 1, "{swarm}: {answer:?}");
    }
}

#[test]
fn swarms_that_would_share_a_data_dir_or_a_secret_are_refused_at_start() {
    let work = tempfile::tempdir().unwrap();
    let write = |name: &str, text: String| {
        let path = work.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let shared_dir = work.path().join("one-folder");
    let with_dir =
        |name: &str| common::swarm_config(name, None, &format!("\n[log]\ndata_dir = \"{}\"\n", shared_dir.display()));
    let a = write("a.toml", with_dir("a"));
    let b = write("b.toml", with_dir("b"));
    let output = std::process::Command::new(common::MNEME)
        .args(["serve", "--http", &format!("127.0.0.1:{}", common::free_port())])
        .arg("--config")
        .arg(&a)
        .arg("--config")
        .arg(&b)
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success() && stderr.contains("\"a\" and \"b\" both keep their data"), "{stderr}");
    assert!(!shared_dir.exists(), "nothing is opened before the deployment is checked");
}

/// Replicas share a JetStream cluster; the embedded log is one process's:
/// a second `mneme serve` on the same data dir is refused, saying why.
#[test]
fn a_second_process_on_an_embedded_data_dir_is_refused_saying_why() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let output = std::process::Command::new(common::MNEME)
        .args(["serve", "--config"])
        .arg(&server.config_path)
        .arg("--data-dir")
        .arg(&server.data_dir)
        .args(["--http", &format!("127.0.0.1:{}", common::free_port())])
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("is in use by another process") && stderr.contains("mneme serve"), "{stderr}");
    // The first server is untouched.
    let (status, _) = server.get_as(None, "/healthz");
    assert_eq!(status, 200);
}

/// `--config` may name a folder: every `*.toml` in it is a swarm.
#[test]
fn a_folder_of_swarm_files_is_served_as_its_swarms() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("swarms");
    std::fs::create_dir_all(&folder).unwrap();
    for name in ["design", "dev"] {
        std::fs::write(folder.join(format!("{name}.toml")), common::swarm_config(name, None, "")).unwrap();
    }
    std::fs::write(folder.join("README.txt"), "not a swarm file").unwrap();
    let port = common::free_port();
    let mut child = std::process::Command::new(common::MNEME)
        .args(["serve", "--config"])
        .arg(&folder)
        .arg("--data-dir")
        .arg(work.path().join("data"))
        .args(["--http", &format!("127.0.0.1:{port}")])
        .env("MNEME_LOG", "warn")
        .spawn()
        .unwrap();
    let url = format!("http://127.0.0.1:{port}/healthz");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let health: Health = loop {
        if let Ok(response) = ureq::get(&url).call() {
            break response.into_json().unwrap();
        }
        assert!(child.try_wait().unwrap().is_none(), "mneme serve exited early");
        assert!(std::time::Instant::now() < deadline, "no answer within 30 s");
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    let held: Vec<&str> = health.swarms.iter().map(|swarm| swarm.swarm.as_str()).collect();
    assert_eq!(held, ["design", "dev", "system"], "{health:?}");
}
