//! Phase summaries from an OpenAI-compatible chat completion endpoint
//! (OpenAI, vLLM, llama.cpp's server, Ollama and the like), configured by
//! `[compression.llm]` in `swarm.toml`.
//!
//! The API key lives only in this process's memory: it is read from the
//! environment at start, sent as a bearer token, and kept out of every error
//! message and of `Debug`.

use std::fmt;
use std::time::Duration;

use anyhow::bail;
use futures::future::BoxFuture;
use mneme_actors::swarm_config::LlmSection;
use mneme_actors::{PhaseSummarizer, PhaseSummary, PhaseSummaryRequest};
use serde_json::{Value, json};

/// The four levels a model must return, shortest first; the prompt gives
/// each its token bound, and the caller cuts any level that is longer.
const LEVEL_KEYS: [&str; 4] = ["index", "compressed", "summary", "findings"];

/// Long enough to show what a server or model complained about, short enough
/// that an error stays one readable line.
const EXCERPT_CHARS: usize = 200;

const SYSTEM_PROMPT: &str = "\
You compress one completed phase of an AI agent's work into the memory of its swarm. \
Answer with a single JSON object with exactly these four keys, each a non-empty string, and nothing else:
- \"index\": at most 8 tokens: a label that names what the phase did to what.
- \"compressed\": at most 32 tokens: one sentence: what was done and how it ended.
- \"summary\": at most 128 tokens: the goal, what was done, and the outcome.
- \"findings\": at most 512 tokens: the key findings; the files and symbols touched; \
decisions with their rationale; errors and how they were fixed.
Be faithful to the transcript: state only what it shows and invent nothing, no files, symbols, \
results or reasons it does not contain. Keep identifiers, paths and error messages exactly as written.";

/// A [`PhaseSummarizer`] that asks an OpenAI-compatible `/chat/completions`
/// endpoint for the four levels of a phase, as a JSON object.
pub struct OpenAiCompatibleSummarizer {
    /// `{url}/chat/completions`, with any trailing `/` of `url` removed.
    endpoint: String,
    model: String,
    temperature: f32,
    timeout: Duration,
    api_key: Option<String>,
    agent: ureq::Agent,
}

impl OpenAiCompatibleSummarizer {
    /// `api_key`, when given, is sent as `Authorization: Bearer ...`.
    pub fn new(section: &LlmSection, api_key: Option<String>) -> OpenAiCompatibleSummarizer {
        let timeout = Duration::from_millis(section.timeout_ms);
        // No redirects: a POST that is redirected is a misconfigured URL, and
        // following it could carry the key to another host.
        let agent = ureq::AgentBuilder::new().timeout(timeout).redirects(0).build();
        OpenAiCompatibleSummarizer {
            endpoint: format!("{}/chat/completions", section.url.trim_end_matches('/')),
            model: section.model.clone(),
            temperature: section.temperature,
            timeout,
            api_key,
            agent,
        }
    }

    /// Reads the API key from the environment variable that `api_key_env`
    /// names. An unset or empty variable means no key: local servers such as
    /// llama.cpp's need none.
    pub fn from_config(section: &LlmSection) -> anyhow::Result<OpenAiCompatibleSummarizer> {
        let api_key = match std::env::var(&section.api_key_env) {
            Ok(key) if key.trim().is_empty() => None,
            Ok(key) => Some(key.trim().to_string()),
            Err(std::env::VarError::NotPresent) => None,
            Err(std::env::VarError::NotUnicode(_)) => bail!(
                "the environment variable {} (compression.llm.api_key_env) is not valid UTF-8; \
                 expected an API key",
                section.api_key_env
            ),
        };
        Ok(OpenAiCompatibleSummarizer::new(section, api_key))
    }

    /// Where requests go, for logs: it never contains the key.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    fn request_body(&self, request: &PhaseSummaryRequest) -> Value {
        json!({
            "model": self.model,
            "temperature": self.temperature,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user_message(request)},
            ],
            "response_format": {"type": "json_object"},
        })
    }
}

impl fmt::Debug for OpenAiCompatibleSummarizer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("OpenAiCompatibleSummarizer")
            .field("endpoint", &self.endpoint)
            .field("model", &self.model)
            .field("temperature", &self.temperature)
            .field("timeout", &self.timeout)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl PhaseSummarizer for OpenAiCompatibleSummarizer {
    fn compressor_name(&self) -> String {
        format!("llm:{}", self.model)
    }

    // Written out as `#[async_trait]` expands it, so that the binary needs no
    // async-trait dependency of its own.
    fn summarize<'summarizer, 'request, 'future>(
        &'summarizer self,
        request: &'request PhaseSummaryRequest,
    ) -> BoxFuture<'future, Result<PhaseSummary, String>>
    where
        'summarizer: 'future,
        'request: 'future,
        Self: 'future,
    {
        let body = self.request_body(request);
        let agent = self.agent.clone();
        let endpoint = self.endpoint.clone();
        let api_key = self.api_key.clone();
        let timeout = self.timeout;
        Box::pin(async move {
            // ureq blocks for up to `timeout`; on the blocking pool that never
            // holds up an actor's or an HTTP worker's thread.
            let blocking_endpoint = endpoint.clone();
            let answer = tokio::task::spawn_blocking(move || {
                post(&agent, &blocking_endpoint, api_key.as_deref(), timeout, &body)
            })
            .await
            .map_err(|error| format!("the call to {endpoint} did not finish: {error}"))??;
            parse_completion(&answer).map_err(|reason| format!("{endpoint}: {reason}"))
        })
    }
}

/// What the model is told about the phase. The system tests' fake server
/// (`tests/common/llm_server.rs`) reads the phase name from the `Phase:` line.
fn user_message(request: &PhaseSummaryRequest) -> String {
    let none = "(not recorded)";
    format!(
        "Agent: {agent} (swarm {swarm})\nPhase: {name}\nGoal: {goal}\nOutcome: {outcome}\n\n\
         Extractive findings (deterministic, a starting point):\n{findings}\n\n\
         Transcript (oldest first):\n{transcript}\n",
        agent = request.agent,
        swarm = request.swarm,
        name = request.phase_name,
        goal = request.goal.as_deref().unwrap_or(none),
        outcome = request.outcome.as_deref().unwrap_or(none),
        findings = request.extractive_findings,
        transcript = request.transcript,
    )
}

/// POSTs the request and returns the body of a 2xx answer.
fn post(
    agent: &ureq::Agent,
    endpoint: &str,
    api_key: Option<&str>,
    timeout: Duration,
    body: &Value,
) -> Result<String, String> {
    let mut http_request = agent.post(endpoint);
    if let Some(key) = api_key {
        http_request = http_request.set("Authorization", &format!("Bearer {key}"));
    }
    let response = match http_request.send_json(body) {
        Ok(response) => response,
        Err(ureq::Error::Status(status, response)) => {
            let text = response.into_string().unwrap_or_default();
            return Err(format!("{endpoint} answered HTTP {status}: {}", excerpt(&text)));
        }
        // ureq's transport errors name the URL and the cause, never headers.
        Err(ureq::Error::Transport(transport)) => {
            return Err(format!("cannot call the LLM (timeout {} ms): {transport}", timeout.as_millis()));
        }
    };
    let status = response.status();
    let text = response.into_string().map_err(|error| format!("cannot read the answer of {endpoint}: {error}"))?;
    // Redirects are off, so a 3xx arrives here rather than as an error.
    if !(200..300).contains(&status) {
        return Err(format!("{endpoint} answered HTTP {status}: {}", excerpt(&text)));
    }
    Ok(text)
}

/// The four levels from a chat completion's `choices[0].message.content`.
fn parse_completion(body: &str) -> Result<PhaseSummary, String> {
    let completion: Value =
        serde_json::from_str(body).map_err(|error| format!("the answer is not JSON ({error}): {}", excerpt(body)))?;
    let content = completion
        .pointer("/choices/0/message/content")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("the answer has no choices[0].message.content string: {}", excerpt(body)))?;
    parse_levels(content)
}

fn parse_levels(content: &str) -> Result<PhaseSummary, String> {
    let levels: Value = serde_json::from_str(strip_code_fence(content))
        .map_err(|error| format!("the model's content is not JSON ({error}): {}", excerpt(content)))?;
    let Some(levels) = levels.as_object() else {
        return Err(format!("the model's content is not a JSON object: {}", excerpt(content)));
    };
    let expected = "expected index, compressed, summary and findings, each a non-empty string";
    let mut texts = Vec::with_capacity(LEVEL_KEYS.len());
    for key in LEVEL_KEYS {
        let text = match levels.get(key) {
            Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_string(),
            Some(Value::String(_)) => return Err(format!("the model's \"{key}\" is empty; {expected}")),
            Some(other) => {
                return Err(format!("the model's \"{key}\" is {}; {expected}", excerpt(&other.to_string())));
            }
            None => return Err(format!("the model's answer has no \"{key}\" key; {expected}")),
        };
        texts.push(text);
    }
    let [index, compressed, summary, findings] = <[String; 4]>::try_from(texts).expect("one text per level");
    Ok(PhaseSummary { index, compressed, summary, findings })
}

/// Models asked for JSON still often wrap it in a Markdown code fence.
fn strip_code_fence(content: &str) -> &str {
    let trimmed = content.trim();
    let Some(fenced) = trimmed.strip_prefix("```") else {
        return trimmed;
    };
    // The fence's info string (`json`, or nothing) runs to the end of its line.
    let inner = fenced.split_once('\n').map_or("", |(_, inner)| inner);
    inner.trim_end().strip_suffix("```").unwrap_or(inner).trim()
}

/// The start of a text, on one line.
fn excerpt(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.is_empty() {
        return "(empty body)".to_string();
    }
    match flat.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}…", &flat[..cut]),
        None => flat,
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::thread::JoinHandle;

    use super::*;

    /// One HTTP request as the fake server saw it; header names lowercased.
    struct SeenRequest {
        request_line: String,
        headers: Vec<(String, String)>,
        body: Value,
    }

    impl SeenRequest {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers.iter().find(|(key, _)| key == name).map(|(_, value)| value.as_str())
        }
    }

    /// Serves one request with a canned answer; returns the base URL (with a
    /// trailing `/`, which the summariser must trim) and what was asked.
    fn serve_once(status: u16, answer: String) -> (String, JoinHandle<SeenRequest>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1/", listener.local_addr().unwrap());
        let handle = std::thread::spawn(move || {
            let (stream, _) = listener.accept().unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap();
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                let Some((name, value)) = line.trim_end().split_once(':') else { break };
                headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
            }
            let length: usize = headers
                .iter()
                .find(|(name, _)| name == "content-length")
                .map_or(0, |(_, value)| value.parse().unwrap());
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            let mut stream = stream;
            write!(
                stream,
                "HTTP/1.1 {status} Canned\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                 Connection: close\r\n\r\n{answer}",
                answer.len()
            )
            .unwrap();
            SeenRequest {
                request_line: request_line.trim_end().to_string(),
                headers,
                body: serde_json::from_slice(&body).unwrap(),
            }
        });
        (url, handle)
    }

    fn section(url: &str) -> LlmSection {
        LlmSection {
            url: url.to_string(),
            model: "tiny-model".to_string(),
            api_key_env: "MNEME_TEST_LLM_KEY_THAT_IS_NEVER_SET".to_string(),
            timeout_ms: 5000,
            max_transcript_tokens: 6000,
            temperature: 0.0,
        }
    }

    fn phase() -> PhaseSummaryRequest {
        PhaseSummaryRequest {
            swarm: "demo".to_string(),
            agent: "coder".to_string(),
            phase_id: "01HPHASE".to_string(),
            phase_name: "fix-login".to_string(),
            goal: Some("make login work again".to_string()),
            outcome: Some("login fixed".to_string()),
            extractive_findings: "edited src/auth.rs".to_string(),
            transcript: "tool cargo test: 1 failed: rotate_signing_keys".to_string(),
        }
    }

    fn completion(content: &str) -> String {
        json!({"choices": [{"index": 0, "message": {"role": "assistant", "content": content}}]}).to_string()
    }

    fn levels_json() -> String {
        json!({
            "index": "login fix",
            "compressed": "Fixed login by rotating keys.",
            "summary": "The coder fixed login.",
            "findings": "src/auth.rs: rotate_signing_keys fixed.",
        })
        .to_string()
    }

    fn expected_levels() -> PhaseSummary {
        PhaseSummary {
            index: "login fix".to_string(),
            compressed: "Fixed login by rotating keys.".to_string(),
            summary: "The coder fixed login.".to_string(),
            findings: "src/auth.rs: rotate_signing_keys fixed.".to_string(),
        }
    }

    #[tokio::test]
    async fn a_completion_becomes_the_four_levels() {
        let (url, server) = serve_once(200, completion(&levels_json()));
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), Some("sk-test".to_string()));
        let summary = summarizer.summarize(&phase()).await.unwrap();
        assert_eq!(summary, expected_levels());

        let seen = server.join().unwrap();
        assert_eq!(seen.request_line, "POST /v1/chat/completions HTTP/1.1");
        assert_eq!(seen.header("authorization"), Some("Bearer sk-test"));
        assert_eq!(seen.body["model"], "tiny-model");
        assert_eq!(seen.body["temperature"], 0.0);
        assert_eq!(seen.body["response_format"], json!({"type": "json_object"}));
        assert_eq!(seen.body["messages"][0]["role"], "system");
        assert!(seen.body["messages"][0]["content"].as_str().unwrap().contains("\"findings\""));
        assert_eq!(seen.body["messages"][1]["role"], "user");
        let user = seen.body["messages"][1]["content"].as_str().unwrap();
        for part in ["Phase: fix-login", "Goal: make login work again", "login fixed", "edited src/auth.rs"] {
            assert!(user.contains(part), "{part:?} missing from {user}");
        }
        assert!(user.contains("rotate_signing_keys"), "{user}");
    }

    #[tokio::test]
    async fn without_a_key_no_authorization_is_sent() {
        let (url, server) = serve_once(200, completion(&levels_json()));
        let summarizer = OpenAiCompatibleSummarizer::from_config(&section(&url)).unwrap();
        summarizer.summarize(&phase()).await.unwrap();
        assert_eq!(server.join().unwrap().header("authorization"), None);
    }

    #[tokio::test]
    async fn fenced_content_is_accepted() {
        let (url, _server) = serve_once(200, completion(&format!("```json\n{}\n```\n", levels_json())));
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), None);
        assert_eq!(summarizer.summarize(&phase()).await.unwrap(), expected_levels());
    }

    #[tokio::test]
    async fn a_missing_level_is_named() {
        let content = json!({"index": "i", "compressed": "c", "summary": "s"}).to_string();
        let (url, _server) = serve_once(200, completion(&content));
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), None);
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains("no \"findings\" key"), "{error}");
    }

    #[tokio::test]
    async fn an_empty_level_is_refused() {
        let content = json!({"index": "i", "compressed": " ", "summary": "s", "findings": "f"}).to_string();
        let (url, _server) = serve_once(200, completion(&content));
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), None);
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains("\"compressed\" is empty"), "{error}");
    }

    #[tokio::test]
    async fn content_that_is_not_json_is_refused() {
        let (url, _server) = serve_once(200, completion("The phase fixed login."));
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), None);
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains("not JSON") && error.contains("The phase fixed login."), "{error}");
    }

    #[tokio::test]
    async fn an_answer_without_choices_is_refused() {
        let (url, _server) = serve_once(200, json!({"object": "chat.completion"}).to_string());
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), None);
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains("choices[0].message.content"), "{error}");
    }

    #[tokio::test]
    async fn a_server_error_names_its_status_and_body() {
        let (url, _server) = serve_once(500, json!({"error": {"message": "model overloaded"}}).to_string());
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&url), Some("sk-secret-key".to_string()));
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains("HTTP 500") && error.contains("model overloaded"), "{error}");
        assert!(!error.contains("sk-secret-key"), "{error}");
    }

    #[tokio::test]
    async fn a_refused_connection_is_an_error() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let summarizer = OpenAiCompatibleSummarizer::new(&section(&format!("http://127.0.0.1:{port}/v1")), None);
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(error.contains(&format!("127.0.0.1:{port}/v1/chat/completions")), "{error}");
        assert!(error.to_lowercase().contains("refused"), "{error}");
    }

    #[tokio::test]
    async fn a_silent_server_times_out() {
        // Bound and never accepted: the kernel completes the connection, and
        // no answer ever comes.
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let mut config = section(&format!("http://{}/v1", listener.local_addr().unwrap()));
        config.timeout_ms = 200;
        let summarizer = OpenAiCompatibleSummarizer::new(&config, None);
        let started = std::time::Instant::now();
        let error = summarizer.summarize(&phase()).await.unwrap_err();
        assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(error.contains("timeout 200 ms"), "{error}");
        drop(listener);
    }

    #[test]
    fn the_compressor_is_named_after_the_model() {
        let summarizer = OpenAiCompatibleSummarizer::new(&section("http://127.0.0.1:1/v1"), None);
        assert_eq!(summarizer.compressor_name(), "llm:tiny-model");
        assert_eq!(summarizer.endpoint(), "http://127.0.0.1:1/v1/chat/completions");
    }

    #[test]
    fn debug_never_shows_the_key() {
        let summarizer = OpenAiCompatibleSummarizer::new(&section("http://h/v1"), Some("sk-secret-key".to_string()));
        let shown = format!("{summarizer:?}");
        assert!(!shown.contains("sk-secret-key") && shown.contains("<redacted>"), "{shown}");
    }

    #[test]
    fn fences_with_and_without_a_language_are_stripped() {
        assert_eq!(strip_code_fence("```json\n{\"a\": 1}\n```"), "{\"a\": 1}");
        assert_eq!(strip_code_fence("  ```\n{}\n```  "), "{}");
        assert_eq!(strip_code_fence("{\"a\": 1}"), "{\"a\": 1}");
    }

    #[test]
    fn excerpts_are_short_and_on_one_line() {
        assert_eq!(excerpt("a\n  b"), "a b");
        assert_eq!(excerpt(""), "(empty body)");
        let long = "é".repeat(500);
        assert_eq!(excerpt(&long).chars().count(), EXCERPT_CHARS + 1);
    }
}
