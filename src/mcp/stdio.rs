//! `mneme mcp --agent NAME` over stdio, what an MCP host launches: JSON-RPC
//! messages one per line on stdin and stdout, logs on stderr.
//!
//! - With `--server URL` ([`bridge`]), each message goes to that server's
//!   `/mcp?agent=NAME` with the process's token, and its answer comes back:
//!   the tools are the server's, with its tokens and scopes.
//! - Without ([`crate::server::run`] with [`crate::server::Front::McpStdio`]),
//!   the whole memory service runs in this process on the configured log
//!   and serves [`MemoryTools`](super::MemoryTools) over stdio; its
//!   snapshots are written when the host closes stdin.

use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use serde_json::{Value, json};

/// How long one tool call may take over the bridge.
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// Relays stdin to `server`'s `/mcp` as `agent` and the answers to stdout
/// until stdin ends. Requests run concurrently, each on its thread; an
/// answer is written whole, one line, when it comes.
pub fn bridge(server: &str, agent: &str) -> anyhow::Result<()> {
    mneme_events::validate_name(agent).map_err(|error| anyhow::anyhow!("--agent: {}", error.message))?;
    let url = format!("{}/mcp?agent={agent}", server.trim_end_matches('/'));
    let http = ureq::AgentBuilder::new().timeout_connect(Duration::from_secs(10)).timeout_read(CALL_TIMEOUT).build();
    let stdout = Arc::new(Mutex::new(std::io::stdout()));
    let protocol_version: Arc<Mutex<Option<String>>> = Arc::new(Mutex::new(None));
    let mut calls = Vec::new();
    for line in std::io::stdin().lock().lines() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let (http, url, stdout, protocol_version) =
            (http.clone(), url.clone(), stdout.clone(), protocol_version.clone());
        let initialize = line.contains("\"initialize\"");
        let call = std::thread::spawn(move || {
            let answers = relay(&http, &url, &line, &protocol_version);
            let mut stdout = stdout.lock().expect("no panic while stdout is held");
            for answer in answers {
                let _ = writeln!(stdout, "{answer}");
            }
            let _ = stdout.flush();
        });
        if initialize {
            // The protocol version the server chose goes on every later
            // request: wait for it.
            let _ = call.join();
        } else {
            calls.push(call);
        }
        calls.retain(|call| !call.is_finished());
    }
    for call in calls {
        let _ = call.join();
    }
    Ok(())
}

/// One message to the server; what goes back to the host, if anything.
fn relay(http: &ureq::Agent, url: &str, message: &str, protocol_version: &Mutex<Option<String>>) -> Vec<Value> {
    let parsed: Option<Value> = serde_json::from_str(message).ok();
    let id = parsed.as_ref().and_then(|message| message.get("id")).cloned();
    let mut request = crate::client::authorized(http.post(url))
        .set("content-type", "application/json")
        .set("accept", "application/json, text/event-stream");
    if let Some(version) = protocol_version.lock().expect("no panic while the version is held").as_deref() {
        request = request.set("mcp-protocol-version", version);
    }
    let answers = match request.send_string(message) {
        Ok(response) => read_answers(response),
        Err(ureq::Error::Status(status, response)) => {
            let body: Value = response.into_json().unwrap_or(Value::Null);
            let text = body.pointer("/error/message").and_then(Value::as_str).map(str::to_string);
            let text = text.unwrap_or_else(|| format!("the server answered {status}"));
            tracing::warn!(status, "the MCP server refused a message: {text}");
            let code = if matches!(status, 401 | 403) { -32600 } else { -32603 };
            return id.map(|id| error_answer(id, code, text, body)).into_iter().collect();
        }
        Err(error) => {
            let text = format!("cannot reach the Mneme server at {url}: {error}");
            tracing::warn!("{text}");
            return id.map(|id| error_answer(id, -32603, text, Value::Null)).into_iter().collect();
        }
    };
    for answer in &answers {
        if let Some(version) = answer.pointer("/result/protocolVersion").and_then(Value::as_str) {
            *protocol_version.lock().expect("no panic while the version is held") = Some(version.to_string());
        }
    }
    answers
}

/// The messages of an answer: a JSON body, an event stream's `data:`
/// lines, or nothing (a notification's 202).
fn read_answers(response: ureq::Response) -> Vec<Value> {
    let streamed = response.content_type() == "text/event-stream";
    let body = match response.into_string() {
        Ok(body) => body,
        Err(error) => {
            tracing::warn!(%error, "cannot read the MCP server's answer");
            return Vec::new();
        }
    };
    let texts: Vec<&str> = if streamed {
        body.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim).collect()
    } else {
        vec![body.as_str()]
    };
    texts
        .into_iter()
        .filter(|text| !text.trim().is_empty())
        .filter_map(|text| serde_json::from_str(text).ok())
        .collect()
}

fn error_answer(id: Value, code: i64, message: String, data: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}})
}
