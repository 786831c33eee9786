//! The typed HTTP client of the wire contract: requests to a running `mneme
//! serve` carry the process's API token, answers are read back into the
//! wire types of `mneme-api`, and an error answer becomes an error naming
//! its code, field and message. The CLI verbs (`cli/`), the MCP stdio relay
//! (`mcp/stdio.rs`) and the tools (`tools/`) all speak HTTP through it.

use std::time::Duration;

use anyhow::Context;
use mneme_api::ErrorBody;
use serde_json::Value;

/// Query-string encoding for the few characters that matter in a query.
pub fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => encoded.push(byte as char),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// `name=value&…`, each value encoded.
pub fn query_string(parameters: &[(&str, String)]) -> String {
    parameters.iter().map(|(name, value)| format!("{name}={}", encode(value))).collect::<Vec<_>>().join("&")
}

/// The URL of a swarm's route: `{server}/v1/swarms/{swarm}/{verb}`.
pub fn swarm_url(server: &str, swarm: &str, verb: &str) -> String {
    format!("{}/v1/swarms/{swarm}/{verb}", server.trim_end_matches('/'))
}

/// The URL of an agent's route: `{server}/v1/swarms/{swarm}/agents/{agent}/{verb}`.
pub fn agent_url(server: &str, swarm: &str, agent: &str, verb: &str) -> String {
    format!("{}/v1/swarms/{swarm}/agents/{agent}/{verb}", server.trim_end_matches('/'))
}

/// A read that waits until the memory has applied the log up to `min_seq`.
pub fn after(request: ureq::Request, min_seq: Option<u64>) -> ureq::Request {
    match min_seq {
        Some(seq) => request.query("min_seq", &seq.to_string()),
        None => request,
    }
}

/// The API token every request of this process sends (`--token` or
/// `MNEME_TOKEN`), set once at start-up.
static API_TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Sets the token every later request of this process sends; an empty or
/// missing one sends none.
pub fn use_api_token(token: Option<String>) {
    if let Some(token) = token.filter(|token| !token.is_empty()) {
        let _ = API_TOKEN.set(token);
    }
}

/// `request` with the process's token as a bearer token, if it has one.
pub fn authorized(request: ureq::Request) -> ureq::Request {
    match API_TOKEN.get() {
        Some(token) => request.set("authorization", &format!("Bearer {token}")),
        None => request,
    }
}

/// Sends a request and reads the answer as the wire type `T`; an error
/// response becomes an error naming its code, field and message.
pub fn call_as<T: serde::de::DeserializeOwned>(request: ureq::Request, body: Option<&str>) -> anyhow::Result<T> {
    let url = request.url().to_string();
    let value = call(request, body)?;
    serde_json::from_value(value).with_context(|| format!("reading the answer of {url}"))
}

/// The longest a call waits, in all, on a server that answers 429 before
/// it gives up and reports the refusal.
const MOST_RETRY_WAIT: Duration = Duration::from_secs(600);

/// Sends a request and returns the JSON body; an error response becomes an
/// error naming its code, field and message. A 429 (a publish quota, or
/// too many queries in flight) is retried after the server's `Retry-After`.
fn call(request: ureq::Request, body: Option<&str>) -> anyhow::Result<Value> {
    let url = request.url().to_string();
    let request = authorized(request);
    let mut waited = Duration::ZERO;
    loop {
        let response = match body {
            Some(body) => request.clone().set("content-type", "application/json").send_string(body),
            None => request.clone().call(),
        };
        match response {
            Ok(response) => {
                return response.into_json().with_context(|| format!("reading the response of {url}"));
            }
            Err(ureq::Error::Status(429, response)) if waited < MOST_RETRY_WAIT => {
                let after = response.header("retry-after").and_then(|secs| secs.trim().parse::<u64>().ok());
                let after = Duration::from_secs(after.unwrap_or(1).clamp(1, 60));
                std::thread::sleep(after);
                waited += after;
            }
            Err(error) => return Err(describe_error(&url, error)),
        }
    }
}

/// The `data:` payloads of a server-sent event stream at `url`, one item
/// each, as they come; the iterator ends when the server ends the stream.
pub fn event_stream(url: &str) -> anyhow::Result<impl Iterator<Item = std::io::Result<String>>> {
    // ureq's agents have no read timeout unless given one: the stream may
    // stay quiet for hours.
    let request = authorized(ureq::AgentBuilder::new().build().get(url).set("accept", "text/event-stream"));
    let response = request.call().map_err(|error| describe_error(url, error))?;
    let reader = std::io::BufReader::new(response.into_reader());
    Ok(std::io::BufRead::lines(reader).filter_map(|line| match line {
        Ok(line) => line.strip_prefix("data: ").map(|data| Ok(data.to_string())),
        Err(error) => Some(Err(error)),
    }))
}

/// An error answer as an error naming its code, field and message; a
/// transport error as a hint that the server may not be running.
fn describe_error(url: &str, error: ureq::Error) -> anyhow::Error {
    match error {
        ureq::Error::Status(status, response) => {
            let text = response.into_string().unwrap_or_default();
            match serde_json::from_str::<ErrorBody>(&text) {
                Ok(ErrorBody { error }) => {
                    let field = error.field.map(|field| format!(" (field {field})")).unwrap_or_default();
                    anyhow::anyhow!("{url} answered {status}: {}: {}{field}", error.code, error.message)
                }
                // Not Mneme's answer (a proxy's page, a cut-off body).
                Err(_) => anyhow::anyhow!("{url} answered {status}: {}", text.chars().take(200).collect::<String>()),
            }
        }
        error => anyhow::Error::new(error).context(format!("calling {url} (is `mneme serve` running?)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_text_is_percent_encoded() {
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
