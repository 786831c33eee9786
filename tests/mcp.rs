//! The MCP server against real clients: the official Python MCP SDK
//! (`mcp` on PyPI, installed by scripts/install-python-clients.sh) drives
//! `mneme mcp --agent coder --server …` over stdio and `/mcp` on
//! `mneme serve` over streamable HTTP (tests/python/mcp_client.py); and
//! `mneme mcp --data-dir` is driven over its stdin and stdout with the
//! service in-process. Each ends with replay --verify: what the tools wrote
//! is what the log rebuilds. Without the Python SDK the test fails; it
//! never skips.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{MnemeServer, reviewer_and_tokens, stdout_of};
use mneme_api::memory::ReplayAnswer;
use serde_json::{Value, json};

const CODER_SECRET: &str = "coder-mcp-secret-0123456789";
const REVIEWER_SECRET: &str = "reviewer-mcp-secret-0123456789";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    std::env::var_os("MNEME_PYTHON").map(PathBuf::from).unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

#[test]
fn the_python_mcp_sdk_uses_every_tool_over_stdio_and_http_and_replay_rebuilds_what_they_wrote() {
    let work = tempfile::tempdir().unwrap();
    let tokens = [("coder-key", CODER_SECRET, Some("coder")), ("reviewer-key", REVIEWER_SECRET, Some("reviewer"))];
    let server = MnemeServer::start_with(work.path(), None, &reviewer_and_tokens(&tokens));
    let python = python();
    let output = Command::new(&python)
        .arg(repo_root().join("tests/python/mcp_client.py"))
        .args(["--mneme", common::MNEME, "--server", &server.url, "--swarm", "demo"])
        .args(["--coder-token", CODER_SECRET, "--reviewer-token", REVIEWER_SECRET])
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap_or_else(|error| {
            panic!("{} cannot run ({error}): run scripts/install-python-clients.sh", python.display())
        });
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "mcp_client.py failed with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for transport in ["stdio", "http"] {
        assert!(stdout.lines().any(|line| line.starts_with(&format!("{transport}: "))), "{stdout}");
    }
    for (agent, secret) in [("coder", CODER_SECRET), ("reviewer", REVIEWER_SECRET)] {
        let replay: ReplayAnswer = server
            .view_with_token(secret)
            .post_typed(&format!("/v1/swarms/demo/agents/{agent}/replay?verify=true"), "");
        assert_eq!(replay.matches, Some(true), "{agent}: {replay:?}");
        assert!(replay.seq > 0, "{agent}: {replay:?}");
    }
}

/// One JSON-RPC exchange with a `mneme mcp` child over its pipes.
struct StdioSession {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl StdioSession {
    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Sends a request and reads lines until its answer.
    fn call(&mut self, id: u64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let mut line = String::new();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "mneme mcp closed stdout before answering {id}");
            let answer: Value = serde_json::from_str(&line).unwrap_or_else(|error| panic!("{error}: {line}"));
            if answer["id"] == json!(id) {
                return answer;
            }
        }
    }

    fn tool(&mut self, id: u64, name: &str, arguments: Value) -> Value {
        let answer = self.call(id, "tools/call", json!({"name": name, "arguments": arguments}));
        assert_eq!(answer["result"]["isError"], json!(false), "{name}: {answer}");
        answer["result"]["structuredContent"].clone()
    }
}

#[test]
fn mneme_mcp_on_a_data_dir_serves_the_tools_in_process_and_replay_rebuilds_what_they_wrote() {
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("swarm.toml");
    std::fs::write(
        &config,
        "[swarm]\nname = \"demo\"\n\n[embedder]\nkind = \"hashed\"\n\n[[agents]]\nname = \"coder\"\nrole = \"implementer\"\n",
    )
    .unwrap();
    let data_dir = work.path().join("data");
    let mut child = Command::new(common::MNEME)
        .args(["mcp", "--agent", "coder", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data_dir)
        .env("MNEME_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut session = StdioSession {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()),
        child,
    };
    let initialized = session.call(
        1,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
    );
    assert_eq!(initialized["result"]["serverInfo"]["name"], json!("mneme"), "{initialized}");
    session.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = session.call(2, "tools/list", json!({}));
    assert_eq!(tools["result"]["tools"].as_array().unwrap().len(), 15, "{tools}");

    let note = session.tool(3, "memory_write", json!({"text": "the retry budget lives in src/retry.rs (wombat31)"}));
    let note_id = note["item_id"].as_str().unwrap().to_string();
    let hits = session.tool(4, "memory_search", json!({"query": "wombat31"}));
    assert_eq!(hits["hits"][0]["item_id"], json!(note_id), "{hits}");
    let updated = session.tool(5, "core_memory_update", json!({"block": "plan", "content": "finish the retry budget"}));
    assert_eq!(updated["core"]["role"], json!("implementer"), "{updated}");
    assert_eq!(updated["core"]["blocks"][0]["name"], json!("plan"), "{updated}");
    let answer = session.call(
        6,
        "tools/call",
        json!({"name": "memory_context", "arguments": {"query": "retry budget", "budget_tokens": 600}}),
    );
    let context = &answer["result"]["structuredContent"];
    let text = context["text"].as_str().unwrap();
    // The content a host gives its model is the context text, in budget.
    assert_eq!(answer["result"]["content"][0]["text"].as_str(), Some(text), "{answer}");
    assert!(context["tokens"].as_u64().unwrap() <= 600, "{context}");
    assert!(text.contains("role: implementer") && text.contains("finish the retry budget"), "{text}");
    // Over the limit: refused before the log, naming the field and limit.
    let refused = session.call(
        7,
        "tools/call",
        json!({"name": "core_memory_update", "arguments": {"block": "plan", "content": "word ".repeat(3000)}}),
    );
    // A tool error the model reads, not a JSON-RPC error: its text names
    // the field, `_meta` holds the HTTP error body.
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    let text = refused["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.starts_with("content: ") && text.contains("at most 500"), "{refused}");
    assert_eq!(refused["result"]["_meta"]["mneme/error"]["error"]["field"], json!("content"), "{refused}");
    // A wrong argument's type, and an item that does not exist, the same way.
    let wrong =
        session.call(8, "tools/call", json!({"name": "memory_search", "arguments": {"query": "x", "limit": "ten"}}));
    assert_eq!(wrong["result"]["isError"], json!(true), "{wrong}");
    assert!(wrong["result"]["content"][0]["text"].as_str().unwrap().starts_with("limit: "), "{wrong}");
    let unknown = session.call(
        9,
        "tools/call",
        json!({"name": "memory_forget", "arguments": {"item_id": "01KE0000000000000000000000"}}),
    );
    assert_eq!(unknown["result"]["isError"], json!(true), "{unknown}");
    assert!(unknown["result"]["content"][0]["text"].as_str().unwrap().starts_with("item_id: "), "{unknown}");

    // The host closes stdin: the session ends and snapshots are written.
    let StdioSession { mut child, stdin, .. } = session;
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let replay = Command::new(common::MNEME)
        .args(["replay", "--swarm", "demo", "--agent", "coder", "--verify", "--data-dir"])
        .arg(&data_dir)
        .arg("--config")
        .arg(&config)
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let replay = stdout_of(&replay);
    assert!(replay.contains("MATCH") && !replay.contains("MISMATCH"), "{replay}");
}
