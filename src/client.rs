//! Command-line verbs that talk to a running `mneme serve` over HTTP.

use std::io::Read;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use serde_json::Value;

/// Query-string encoding for the few characters that matter in a query.
fn encode(text: &str) -> String {
    let mut encoded = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => encoded.push(byte as char),
            _ => encoded.push_str(&format!("%{byte:02X}")),
        }
    }
    encoded
}

/// Sends a request and returns the JSON body; an error response becomes an
/// error naming its code, field and message.
fn call(request: ureq::Request, body: Option<&str>) -> anyhow::Result<Value> {
    let url = request.url().to_string();
    let response = match body {
        Some(body) => request.set("content-type", "application/json").send_string(body),
        None => request.call(),
    };
    match response {
        Ok(response) => response.into_json().with_context(|| format!("reading the response of {url}")),
        Err(ureq::Error::Status(status, response)) => {
            let body: Value = response.into_json().unwrap_or(Value::Null);
            let error = &body["error"];
            let field = error["field"].as_str().map(|field| format!(" (field {field})")).unwrap_or_default();
            bail!(
                "{url} answered {status}: {}: {}{field}",
                error["code"].as_str().unwrap_or("error"),
                error["message"].as_str().unwrap_or("no message")
            )
        }
        Err(error) => Err(error).with_context(|| format!("calling {url} (is `mneme serve` running?)")),
    }
}

fn agent_url(server: &str, swarm: &str, agent: &str, verb: &str) -> String {
    format!("{}/v1/swarms/{swarm}/agents/{agent}/{verb}", server.trim_end_matches('/'))
}

/// Events of a file as (where, raw JSON) pairs: a JSON document holding one
/// event or an array of them, or else JSON Lines.
fn events_of_file(text: &str) -> Vec<(String, String)> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(events)) => events
            .iter()
            .enumerate()
            .map(|(index, event)| (format!("array element {index}"), event.to_string()))
            .collect(),
        Ok(event) => vec![("the document".to_string(), event.to_string())],
        Err(_) => text
            .lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(index, line)| (format!("line {}", index + 1), line.to_string()))
            .collect(),
    }
}

pub fn publish(server: &str, file: &str, batch: usize) -> anyhow::Result<ExitCode> {
    let text = if file == "-" {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).context("reading events from stdin")?;
        text
    } else {
        std::fs::read_to_string(file).with_context(|| format!("reading {file}"))?
    };
    let url = format!("{}/v1/events", server.trim_end_matches('/'));
    let (mut accepted, mut duplicates, mut last_seq) = (0usize, 0usize, 0u64);
    for chunk in events_of_file(&text).chunks(batch.max(1)) {
        let body = format!("[{}]", chunk.iter().map(|(_, json)| json.as_str()).collect::<Vec<_>>().join(","));
        let response = call(ureq::post(&url), Some(&body)).map_err(|error| {
            // The server names the event by its index in the batch.
            let message = error.to_string();
            let index = message.split("field [").nth(1).and_then(|rest| rest.split(']').next()?.parse::<usize>().ok());
            let place =
                index.and_then(|index| chunk.get(index)).map_or("a batch".to_string(), |(place, _)| place.clone());
            error.context(format!(
                "{file}: {place} was refused; {accepted} events before its batch were appended, none of its batch"
            ))
        })?;
        for item in response["accepted"].as_array().into_iter().flatten() {
            accepted += 1;
            duplicates += usize::from(item["duplicate"].as_bool().unwrap_or(false));
            last_seq = last_seq.max(item["seq"].as_u64().unwrap_or(0));
        }
    }
    out!("published {accepted} events ({duplicates} already on the log); last seq {last_seq}");
    Ok(ExitCode::SUCCESS)
}

pub fn search(
    server: &str,
    swarm: &str,
    agent: &str,
    query: &str,
    k: usize,
    kind: Option<&str>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let mut url = format!("{}?q={}&k={k}", agent_url(server, swarm, agent, "search"), encode(query));
    if let Some(kind) = kind {
        url.push_str(&format!("&kind={}", encode(kind)));
    }
    let response = call(ureq::get(&url), None)?;
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, hit) in response["hits"].as_array().into_iter().flatten().enumerate() {
        let seqs: Vec<String> =
            hit["provenance"].as_array().into_iter().flatten().map(|p| p["seq"].to_string()).collect();
        let first_line = hit["text"].as_str().unwrap_or("").lines().next().unwrap_or("");
        out!(
            "{:>2}. {:>7.3}  {}  {}  seq {}\n    {}",
            rank + 1,
            hit["score"].as_f64().unwrap_or(0.0),
            hit["item_id"].as_str().unwrap_or(""),
            hit["kind"].as_str().unwrap_or(""),
            seqs.join(","),
            first_line
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub fn context(
    server: &str,
    swarm: &str,
    agent: &str,
    query: &str,
    budget: usize,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let url = format!("{}?q={}&budget={budget}", agent_url(server, swarm, agent, "context"), encode(query));
    let response = call(ureq::get(&url), None)?;
    if json {
        out!("{}", serde_json::to_string_pretty(&response)?);
    } else {
        print!("{}", response["text"].as_str().unwrap_or(""));
        eprintln!("({} of {} tokens)", response["tokens"], response["budget"]);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn tail(server: &str, swarm: &str, agent: Option<&str>, from_seq: u64, follow: bool) -> anyhow::Result<ExitCode> {
    let mut next_seq = from_seq;
    loop {
        let mut url =
            format!("{}/v1/swarms/{swarm}/events?from_seq={next_seq}&limit=1000", server.trim_end_matches('/'));
        if let Some(agent) = agent {
            url.push_str(&format!("&agent={}", encode(agent)));
        }
        let response = call(ureq::get(&url), None)?;
        let events = response["events"].as_array().cloned().unwrap_or_default();
        for event in &events {
            out!("{event}");
        }
        next_seq = response["next_seq"].as_u64().unwrap_or(next_seq);
        if events.is_empty() {
            if !follow {
                return Ok(ExitCode::SUCCESS);
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

pub fn replay(server: &str, swarm: &str, agent: &str, verify: bool) -> anyhow::Result<ExitCode> {
    let url = format!("{}?verify={verify}", agent_url(server, swarm, agent, "replay"));
    let response = call(ureq::post(&url), Some("{}"))?;
    out!("agent {agent}: replayed {} entries to seq {}", response["entries_read"], response["seq"]);
    out!("  replayed digest {}", response["digest"].as_str().unwrap_or(""));
    out!("  live digest     {} (seq {})", response["live_digest"].as_str().unwrap_or(""), response["live_seq"]);
    let matches = response["matches"].as_bool() == Some(true);
    out!("  {}", if matches { "MATCH" } else { "MISMATCH" });
    Ok(if verify && !matches { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_as_one_document_or_as_json_lines() {
        let pretty = "{\n  \"id\": 1\n}\n";
        assert_eq!(events_of_file(pretty), vec![("the document".to_string(), "{\"id\":1}".to_string())]);
        let array = "[{\"id\": 1},\n {\"id\": 2}]";
        assert_eq!(events_of_file(array).len(), 2);
        let lines = "{\"id\": 1}\n\n{\"id\": 2}\n";
        let events = events_of_file(lines);
        assert_eq!(events.iter().map(|(place, _)| place.as_str()).collect::<Vec<_>>(), ["line 1", "line 3"]);
    }

    #[test]
    fn query_text_is_percent_encoded() {
        assert_eq!(encode("a b&c=d/é"), "a%20b%26c%3Dd%2F%C3%A9");
    }
}
