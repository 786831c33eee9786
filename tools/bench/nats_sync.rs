//! `mneme-tools bench nats-sync`: what nats-server's `sync_interval:
//! always` (an fsync before each acknowledgement) costs Mneme's appends,
//! against the default (an fsync every 2 minutes), measured in one run on
//! the same disk. Two single-node servers, identical but for that one
//! setting, each take the same events through Mneme's `JetStreamLog`: in
//! batches of `--batch` (as `POST /v1/events` appends them), and one at a
//! time (a client publishing event by event). RELIABILITY.md says what
//! each setting risks.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use mneme_events::{DecodeLimits, Event, decode_json};
use mneme_nats::server::NatsServer;
use mneme_nats::{Credentials, EventLog, JetStreamLog, JetStreamOptions};

use super::{SWARM, ScratchDir, machine_description, synthetic_events};

const USER: &str = "bench";
const PASSWORD: &str = "bench-password";

/// A server whose configuration differs only in `jetstream_extra`.
async fn server(dir: &std::path::Path, name: &str, jetstream_extra: &str) -> anyhow::Result<NatsServer> {
    let file = dir.join(format!("{name}.conf"));
    let config = format!(
        "jetstream {{\n  {jetstream_extra}\n}}\nauthorization {{\n  user: {USER}\n  password: {PASSWORD}\n}}\n"
    );
    std::fs::write(&file, config)?;
    Ok(NatsServer::start_with_config(&file, &[], USER, PASSWORD).await?)
}

async fn log_on(server: &NatsServer, swarm: &str) -> anyhow::Result<JetStreamLog> {
    let options = JetStreamOptions {
        credentials: Some(Credentials::UserPassword { user: USER.to_string(), password: PASSWORD.to_string() }),
        ..JetStreamOptions::default()
    };
    Ok(JetStreamLog::connect(&server.url(), swarm, options).await?)
}

/// Appends `events` in batches of `batch`: events a second.
async fn append_rate(log: &JetStreamLog, events: &[Event], batch: usize) -> anyhow::Result<f64> {
    let started = Instant::now();
    for chunk in events.chunks(batch.max(1)) {
        log.append(chunk).await?;
    }
    Ok(events.len() as f64 / started.elapsed().as_secs_f64())
}

/// Appends each of `events` alone: the median and p99 of one append.
async fn single_latencies(log: &JetStreamLog, events: &[Event]) -> anyhow::Result<(Duration, Duration)> {
    let mut latencies = Vec::with_capacity(events.len());
    for event in events {
        let started = Instant::now();
        log.append(std::slice::from_ref(event)).await?;
        latencies.push(started.elapsed());
    }
    latencies.sort_unstable();
    let at = |quantile: f64| latencies[((latencies.len() - 1) as f64 * quantile).round() as usize];
    Ok((at(0.5), at(0.99)))
}

pub async fn run(events: usize, singles: usize, batch: usize) -> anyhow::Result<ExitCode> {
    out!("{}", machine_description());
    out!("command: mneme-tools bench nats-sync --events {events} --queries {singles} --batch {batch}");
    let dir = ScratchDir::new("nats-sync")?;
    let agents = vec!["agent-0".to_string(), "agent-1".to_string(), "agent-2".to_string()];
    let limits = DecodeLimits::default();
    let decode = |json: &String| decode_json(json.as_bytes(), &limits).map_err(|error| anyhow::anyhow!("{error}"));
    let batched: Vec<Event> = synthetic_events(events, &agents).iter().map(decode).collect::<Result<_, _>>()?;
    // The single appends are other events (ids not yet on either log).
    let singles: Vec<Event> =
        synthetic_events(events + singles, &agents)[events..].iter().map(decode).collect::<Result<_, _>>()?;
    let mut rows = Vec::new();
    // Default first, then always, then default again on a third server: a
    // drift in the machine's load shows as two default figures that differ.
    for (label, extra) in [("default (2 min)", ""), ("always", "sync_interval: always"), ("default again", "")] {
        let server = server(&dir.0, &format!("server-{}", rows.len()), extra).await?;
        let log = log_on(&server, SWARM).await?;
        let rate = append_rate(&log, &batched, batch).await?;
        let (median, p99) = single_latencies(&log, &singles).await?;
        out!("{label}: {rate:.0} events/s in batches of {batch}; one at a time: median {median:?}, p99 {p99:?}");
        rows.push((label, rate, median, p99));
    }
    let baseline = (rows[0].1 + rows[2].1) / 2.0;
    let baseline_median = (rows[0].2 + rows[2].2) / 2;
    out!("");
    out!("| sync_interval | batched appends (events/s) | ratio to default | one append: median | p99 |");
    out!("|---|---:|---:|---:|---:|");
    for (label, rate, median, p99) in &rows {
        out!(
            "| {label} | {rate:.0} | {:.2} | {:.2} ms ({:.1}×) | {:.2} ms |",
            rate / baseline,
            super::system::ms(*median),
            median.as_secs_f64() / baseline_median.as_secs_f64(),
            super::system::ms(*p99)
        );
    }
    Ok(ExitCode::SUCCESS)
}
