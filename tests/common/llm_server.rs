//! A fake OpenAI-compatible chat endpoint for whole-system tests: there is
//! no real model on a test machine, and a real one would not answer the same
//! way twice. Every answer is derived from the request alone and marked
//! `LLM`, so a test can tell a model's levels from the extractive ones.

#![allow(dead_code)] // each test binary uses a different part of this module

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::{Value, json};

/// A request body larger than this is refused rather than read: no phase
/// transcript comes near it, and a bug should not exhaust the test's memory.
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// One `POST /v1/chat/completions` as the fake saw it.
#[derive(Debug, Clone)]
pub struct FakeLlmRequest {
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    pub body: Value,
}

/// Serves `POST /v1/chat/completions` on a free loopback port until stopped
/// or dropped, one connection at a time, closing each after its answer.
pub struct FakeLlmServer {
    port: u16,
    stopping: Arc<AtomicBool>,
    requests: Arc<Mutex<Vec<FakeLlmRequest>>>,
    request_count: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl FakeLlmServer {
    pub fn start() -> FakeLlmServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stopping = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let request_count = Arc::new(AtomicUsize::new(0));
        let thread = {
            let stopping = Arc::clone(&stopping);
            let requests = Arc::clone(&requests);
            let request_count = Arc::clone(&request_count);
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    // A client that hangs up mid-request is its own problem;
                    // the fake keeps serving the others.
                    let Ok(stream) = stream else { continue };
                    let _ = serve_connection(stream, &requests, &request_count);
                }
            })
        };
        FakeLlmServer { port, stopping, requests, request_count, thread: Some(thread) }
    }

    /// The base URL, as `[compression.llm] url` takes it.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Chat completion requests answered so far (well-formed or not).
    pub fn request_count(&self) -> usize {
        self.request_count.load(Ordering::SeqCst)
    }

    /// The well-formed chat completion requests answered so far, oldest first.
    pub fn requests(&self) -> Vec<FakeLlmRequest> {
        self.requests.lock().unwrap().clone()
    }

    pub fn stop(&mut self) {
        let Some(thread) = self.thread.take() else { return };
        self.stopping.store(true, Ordering::SeqCst);
        // `accept` blocks; one last connection wakes the thread to see the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        let _ = thread.join();
    }
}

impl Drop for FakeLlmServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The four levels the fake answers for a request: each names the phase, so
/// a test can check which phase a summary belongs to.
pub fn fake_levels(phase_name: &str) -> Value {
    json!({
        "index": format!("LLM {phase_name}"),
        "compressed": format!("LLM compressed: phase {phase_name} done."),
        "summary": format!("LLM summary: the agent worked through phase {phase_name}."),
        "findings": format!("LLM findings: phase {phase_name} as summarised by the fake model."),
    })
}

fn serve_connection(
    stream: TcpStream,
    requests: &Mutex<Vec<FakeLlmRequest>>,
    request_count: &AtomicUsize,
) -> std::io::Result<()> {
    // A client that never finishes its request must not hang the fake.
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    if request_line.is_empty() {
        return Ok(()); // the wake-up connection of `stop`, or a port probe
    }
    let mut content_length = 0;
    let mut authorization = None;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => content_length = value.trim().parse().unwrap_or(0),
            "authorization" => authorization = Some(value.trim().to_string()),
            _ => {}
        }
    }
    if content_length > MAX_BODY_BYTES {
        return respond(stream, 413, &json!({"error": {"message": "request body too large"}}));
    }
    // Read the body even for a request the fake refuses: closing a socket
    // with unread data resets it, and the client would lose the answer.
    let mut body = vec![0; content_length];
    reader.read_exact(&mut body)?;
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    if (method, path) != ("POST", "/v1/chat/completions") {
        return respond(stream, 404, &json!({"error": {"message": format!("no route {method} {path}")}}));
    }
    request_count.fetch_add(1, Ordering::SeqCst);
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return respond(stream, 400, &json!({"error": {"message": "the body is not JSON"}}));
    };
    let phase_name = phase_name_of(&body).unwrap_or_else(|| "(unnamed phase)".to_string());
    let model = body["model"].as_str().unwrap_or("fake").to_string();
    requests.lock().unwrap().push(FakeLlmRequest { authorization, body });
    let answer = json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": fake_levels(&phase_name).to_string()},
            "finish_reason": "stop",
        }],
    });
    respond(stream, 200, &answer)
}

/// The phase name from the user message's `Phase: <name>` line, which is how
/// `src/llm.rs` introduces the phase.
fn phase_name_of(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let user = messages.iter().rev().find(|message| message["role"] == "user")?;
    let content = user["content"].as_str()?;
    content.lines().find_map(|line| line.strip_prefix("Phase: ")).map(|name| name.trim().to_string())
}

fn respond(mut stream: TcpStream, status: u16, body: &Value) -> std::io::Result<()> {
    let body = body.to_string();
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        413 => "Payload Too Large",
        _ => "Error",
    };
    write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    stream.shutdown(Shutdown::Both)
}
