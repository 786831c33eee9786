//! `mneme-tools bench replicas`: several `mneme serve` on one swarm of one
//! nats-server, as real processes.
//!
//! 1. **Following.** `--events` events are published through the first
//!    replica while a second only follows: the CPU each process spends per
//!    1,000 events (user + system time from `/proc/<pid>/stat`), against
//!    the bare log's cost in the same run (this process reading and
//!    decoding the same events with `JetStreamLog::read`).
//! 2. **Queries.** `--queries` searches, from 4 client threads spread
//!    round-robin over 1, 2 and 3 replicas: throughput, p50/p99 and the
//!    CPU each replica spent, the 1-replica figure being the baseline.
//! 3. **Failover.** The holder of the writer lease is killed with SIGKILL
//!    10 times (the killed one started again as a standby each time):
//!    from the kill to the lease taken by the survivor (its `/healthz`),
//!    and to the first verdict the survivor appends (consolidation after
//!    every 40 events, which a batch published right after the kill
//!    triggers).

use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use mneme::client::call_as;
use mneme_api::log::{AcceptedEvents, EventsPage, Health, LogEntry};
use mneme_api::memory::{Digest, SearchAnswer};
use mneme_events::DecodeLimits;
use mneme_nats::server::NatsServer;
use mneme_nats::{EventLog, JetStreamLog, JetStreamOptions};

use crate::bench::search::percentile;
use crate::bench::{SWARM, ScratchDir, WordStream, machine_description, synthetic_events_from};

const AGENTS: [&str; 3] = ["agent-0", "agent-1", "agent-2"];
const ID_KEY: &str = "6d6e656d652d62656e63682d7265706c696361732d6b65792d30313233343536";
const CLIENT_THREADS: usize = 4;
const KILLS: usize = 10;
const PUBLISH_BATCH: usize = 500;

/// One replica: a `mneme serve` child on the shared nats-server.
struct Replica {
    name: String,
    dir: std::path::PathBuf,
    port: u16,
    nats_url: String,
    child: Option<Child>,
}

impl Replica {
    fn start(scratch: &std::path::Path, name: &str, nats_url: &str) -> anyhow::Result<Replica> {
        let dir = scratch.join(name);
        std::fs::create_dir_all(&dir)?;
        let mut config = format!(
            "[swarm]\nname = \"{SWARM}\"\n\n[log]\nbackend = \"nats\"\n\n[consolidation]\nevery_events = 40\n\
             interval_ms = 0\n\n[http]\npublish_events_per_sec = 0\npublish_bytes_per_sec = 0\n\
             max_queries_in_flight = 64\n"
        );
        for agent in AGENTS {
            config.push_str(&format!("\n[[agents]]\nname = \"{agent}\"\n"));
        }
        std::fs::write(dir.join("swarm.toml"), config)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let mut replica = Replica { name: name.to_string(), dir, port, nats_url: nats_url.to_string(), child: None };
        replica.spawn()?;
        Ok(replica)
    }

    fn spawn(&mut self) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(self.dir.join("server.log"))?;
        let child = Command::new(crate::mneme_binary()?)
            .arg("serve")
            .arg("--config")
            .arg(self.dir.join("swarm.toml"))
            .arg("--data-dir")
            .arg(self.dir.join("data"))
            .args(["--http", &format!("127.0.0.1:{}", self.port), "--nats", &self.nats_url])
            .env("MNEME_LOG", "warn,mneme_actors::consolidator=info,mneme_actors::lease_keeper=info")
            .env("MNEME_NODE", &self.name)
            .env("MNEME_ID_KEY", ID_KEY)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting mneme serve")?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(120);
        while ureq::get(&self.url("/healthz")).call().is_err() {
            if let Some(status) = self.child.as_mut().expect("spawned").try_wait()? {
                bail!("{} exited with {status}; see {}", self.name, self.dir.join("server.log").display());
            }
            anyhow::ensure!(Instant::now() < deadline, "{} did not answer within 120 s", self.name);
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(())
    }

    fn url(&self, path_and_query: &str) -> String {
        format!("http://127.0.0.1:{}{path_and_query}", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// User + system CPU time the process has used.
    fn cpu(&self) -> Duration {
        cpu_of(self.pid())
    }

    fn health(&self) -> Option<Health> {
        ureq::get(&self.url("/healthz")).timeout(Duration::from_secs(2)).call().ok()?.into_json().ok()
    }

    fn holds_the_lease(&self) -> bool {
        self.health().is_some_and(|health| health.swarms.iter().any(|swarm| swarm.leases.iter().any(|l| l.held_here)))
    }

    fn kill_hard(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Waits until every agent's memory here has applied `seq` (asking
    /// again after each 10 s the server waits at most).
    fn wait_applied(&self, seq: u64) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(1800);
        for agent in AGENTS {
            let path = format!("/v1/swarms/{SWARM}/agents/{agent}/digest?min_seq={seq}");
            loop {
                match call_as::<Digest>(ureq::get(&self.url(&path)), None) {
                    Ok(_) => break,
                    Err(error) if Instant::now() < deadline && format!("{error:#}").contains("catch_up_timeout") => {}
                    Err(error) => return Err(error),
                }
            }
        }
        Ok(())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// User + system CPU time of process `pid`, from `/proc/<pid>/stat`.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start
    // after its closing parenthesis; utime and stime are fields 14 and 15.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |index: usize| fields.get(index).and_then(|field| field.parse::<u64>().ok()).unwrap_or(0);
    // Fields 3.. follow the name: utime is the 12th of those, stime the 13th.
    let total = ticks(11) + ticks(12);
    let per_second = clock_ticks_per_second();
    Duration::from_secs_f64(total as f64 / per_second as f64)
}

fn clock_ticks_per_second() -> u64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .and_then(|text| text.trim().parse().ok())
        .unwrap_or(100)
}

fn publish(replica: &Replica, bodies: &[String]) -> anyhow::Result<u64> {
    let mut last_seq = 0;
    for chunk in bodies.chunks(PUBLISH_BATCH) {
        let body = format!("[{}]", chunk.join(","));
        let answer: AcceptedEvents = call_as(ureq::post(&replica.url("/v1/events")), Some(&body))?;
        last_seq = last_seq.max(answer.accepted.iter().map(|accepted| accepted.seq).max().unwrap_or(0));
    }
    Ok(last_seq)
}

/// Events that give consolidation something to decide: the same note said
/// again and again (duplicates to merge), and facts about a component whose
/// value changes.
fn events_to_consolidate(round: usize, count: usize) -> Vec<String> {
    (0..count)
        .map(|index| {
            let number = (round * 10_000 + index) as u64;
            let id = mneme_events::EventId::from_parts(1_780_000_000_000 + number, u128::from(number) + 1);
            let (kind, data) = match index % 2 {
                0 => (
                    "message_recorded",
                    serde_json::json!({"role": "assistant",
                        "text": format!("round {round}: the retry budget of the ledger service is three attempts")}),
                ),
                _ => (
                    "fact_asserted",
                    serde_json::json!({"subject": format!("component-{}", index % 5), "predicate": "replica_count",
                        "object": format!("{}", (round + index) % 9)}),
                ),
            };
            serde_json::json!({"id": id.to_string(), "swarm": SWARM, "agent": AGENTS[index % 3],
                "ts": "2026-03-01T00:00:00Z", "kind": kind, "scope": "shared", "data": data})
            .to_string()
        })
        .collect()
}

pub fn run(events: usize, queries: usize) -> anyhow::Result<ExitCode> {
    out!("{}", machine_description());
    out!("command: mneme-tools bench replicas --events {events} --queries {queries}");
    let scratch = ScratchDir::new("replicas")?;
    let runtime = tokio::runtime::Runtime::new()?;
    let nats = runtime.block_on(NatsServer::start()).context("starting nats-server (scripts/install-nats.sh)")?;
    let mut replicas = vec![Replica::start(&scratch.0, "replica-1", &nats.url())?];
    let deadline = Instant::now() + Duration::from_secs(10);
    while !replicas[0].holds_the_lease() {
        anyhow::ensure!(Instant::now() < deadline, "replica-1 did not take the lease");
        std::thread::sleep(Duration::from_millis(50));
    }
    replicas.push(Replica::start(&scratch.0, "replica-2", &nats.url())?);

    // 1. Following.
    let agents: Vec<String> = AGENTS.iter().map(|agent| agent.to_string()).collect();
    let mut words = WordStream::zipf(20_000);
    let bodies = synthetic_events_from(events, &agents, &mut words);
    let cpu_before: Vec<Duration> = replicas.iter().map(Replica::cpu).collect();
    let started = Instant::now();
    let last_seq = publish(&replicas[0], &bodies)?;
    for replica in &replicas {
        replica.wait_applied(last_seq)?;
    }
    let wall = started.elapsed();
    let cpu: Vec<Duration> =
        replicas.iter().zip(&cpu_before).map(|(replica, before)| replica.cpu() - *before).collect();
    let raw = runtime.block_on(raw_read_cpu(&nats.url(), last_seq))?;
    let per_thousand = |spent: Duration| spent.as_secs_f64() * 1000.0 / (events as f64 / 1000.0);
    out!("");
    out!("## Following the log: {events} events published through replica-1 in {:.1} s", wall.as_secs_f64());
    out!("");
    out!("| process | CPU ms per 1,000 events | against the bare log's read |");
    out!("|---|---:|---:|");
    out!("| bare log: this process reading and decoding them (JetStreamLog::read) | {:.1} | 1.0× |", per_thousand(raw));
    for (replica, spent) in replicas.iter().zip(&cpu) {
        let role = if replica.name == "replica-1" {
            "takes the appends (HTTP, decode, publish), follows, holds the lease"
        } else {
            "follows only"
        };
        out!(
            "| {} ({role}) | {:.1} | {:.1}× |",
            replica.name,
            per_thousand(*spent),
            spent.as_secs_f64() / raw.as_secs_f64().max(1e-9)
        );
    }

    // 2. Queries with 1, 2 and 3 replicas.
    replicas.push(Replica::start(&scratch.0, "replica-3", &nats.url())?);
    replicas[2].wait_applied(last_seq)?;
    let terms: Vec<String> = {
        let mut words = WordStream::zipf(20_000);
        (0..64)
            .map(|_| {
                let first = words.next_word().to_string();
                format!("{first}+{}", words.next_word())
            })
            .collect()
    };
    out!("");
    out!("## Hybrid search, {queries} queries from {CLIENT_THREADS} client threads, round-robin over the replicas");
    out!("");
    out!("| replicas | queries/s | against 1 replica | p50 ms | p99 ms | CPU s per replica (each) |");
    out!("|---:|---:|---:|---:|---:|---|");
    let mut one_replica = 0.0;
    for count in 1..=3 {
        let serving = &replicas[..count];
        let before: Vec<Duration> = serving.iter().map(Replica::cpu).collect();
        let (throughput, mut latencies) = query_load(serving, &terms, queries)?;
        let spent: Vec<String> = serving
            .iter()
            .zip(&before)
            .map(|(replica, before)| format!("{:.2}", (replica.cpu() - *before).as_secs_f64()))
            .collect();
        latencies.sort_unstable();
        if count == 1 {
            one_replica = throughput;
        }
        out!(
            "| {count} | {throughput:.0} | {:.2}× | {:.1} | {:.1} | {} |",
            throughput / one_replica,
            percentile(&latencies, 0.5).as_secs_f64() * 1000.0,
            percentile(&latencies, 0.99).as_secs_f64() * 1000.0,
            spent.join(", ")
        );
    }
    drop(replicas.pop());

    // 3. Failover.
    out!("");
    out!("## Failover of the writer lease: {KILLS} SIGKILLs of its holder (lease_ttl_ms 3000)");
    out!("");
    out!("| kill | killed | lease taken after | first verdict by the new holder after |");
    out!("|---:|---|---:|---:|");
    let mut taken = Vec::new();
    let mut verdicts = Vec::new();
    for round in 1..=KILLS {
        let holder = replicas.iter().position(Replica::holds_the_lease).context("no replica holds the lease")?;
        let survivor = 1 - holder;
        let log_end = call_as::<Health>(ureq::get(&replicas[survivor].url("/healthz")), None)?.last_seq;
        let killed_at = Instant::now();
        replicas[holder].kill_hard()?;
        // Published while nobody holds the lease: the new holder's
        // consolidator counts them, and runs.
        publish(&replicas[survivor], &events_to_consolidate(round, 60))?;
        let mut lease_taken = None;
        let mut first_verdict = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        while first_verdict.is_none() || lease_taken.is_none() {
            if Instant::now() > deadline {
                let log = std::fs::read_to_string(replicas[survivor].dir.join("server.log")).unwrap_or_default();
                let tail: Vec<&str> = log.lines().rev().take(30).collect();
                bail!(
                    "kill {round}: within 60 s, lease taken after {lease_taken:?}, first verdict after \
                     {first_verdict:?}; the survivor's log ends:\n{}",
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n")
                );
            }
            if lease_taken.is_none() && replicas[survivor].holds_the_lease() {
                lease_taken = Some(killed_at.elapsed());
            }
            if first_verdict.is_none() && verdict_after(&replicas[survivor], log_end)? {
                first_verdict = Some(killed_at.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let (lease_taken, first_verdict) = (lease_taken.expect("set"), first_verdict.expect("set"));
        out!(
            "| {round} | {} | {:.2} s | {:.2} s |",
            replicas[holder].name,
            lease_taken.as_secs_f64(),
            first_verdict.as_secs_f64()
        );
        taken.push(lease_taken);
        verdicts.push(first_verdict);
        replicas[holder].spawn()?;
    }
    taken.sort_unstable();
    verdicts.sort_unstable();
    out!("");
    out!(
        "lease taken: median {:.2} s, max {:.2} s; first verdict: median {:.2} s, max {:.2} s",
        percentile(&taken, 0.5).as_secs_f64(),
        taken.last().expect("kills").as_secs_f64(),
        percentile(&verdicts, 0.5).as_secs_f64(),
        verdicts.last().expect("kills").as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// Runs `count` searches from [`CLIENT_THREADS`] threads, query `i` to
/// replica `i % replicas`: queries a second and each query's latency.
fn query_load(replicas: &[Replica], terms: &[String], count: usize) -> anyhow::Result<(f64, Vec<Duration>)> {
    let urls: Vec<String> = replicas.iter().map(|replica| replica.url("")).collect();
    let started = Instant::now();
    let latencies = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..CLIENT_THREADS)
            .map(|thread| {
                let urls = &urls;
                scope.spawn(move || -> anyhow::Result<Vec<Duration>> {
                    let mut latencies = Vec::new();
                    for index in (thread..count).step_by(CLIENT_THREADS) {
                        let agent = AGENTS[index % AGENTS.len()];
                        let url = format!(
                            "{}/v1/swarms/{SWARM}/agents/{agent}/search?q={}&k=10",
                            urls[index % urls.len()],
                            terms[index % terms.len()]
                        );
                        let asked = Instant::now();
                        let _: SearchAnswer = call_as(ureq::get(&url), None)?;
                        latencies.push(asked.elapsed());
                    }
                    Ok(latencies)
                })
            })
            .collect();
        handles.into_iter().map(|handle| handle.join().expect("a client thread")).collect::<anyhow::Result<Vec<_>>>()
    })?;
    let throughput = count as f64 / started.elapsed().as_secs_f64();
    Ok((throughput, latencies.into_iter().flatten().collect()))
}

/// Whether the log holds a verdict past `after` (an event Mneme wrote that
/// is neither a delivery nor retrieval counts).
fn verdict_after(replica: &Replica, after: u64) -> anyhow::Result<bool> {
    let path = format!("/v1/swarms/{SWARM}/events?from_seq={}&limit=10000", after + 1);
    let page: EventsPage = call_as(ureq::get(&replica.url(&path)), None)?;
    Ok(page.events.iter().any(|entry| match entry {
        LogEntry::Event(event) => event.decode().is_ok_and(|event| {
            matches!(
                event.kind_name(),
                "contradiction_detected"
                    | "contradiction_resolved"
                    | "memories_merged"
                    | "memory_decayed"
                    | "memory_archived"
                    | "memory_forgotten"
                    | "memories_linked"
            )
        }),
        _ => false,
    }))
}

/// CPU time this process spends reading and decoding the swarm's first
/// `through` events from the log.
async fn raw_read_cpu(nats_url: &str, through: u64) -> anyhow::Result<Duration> {
    let options = JetStreamOptions::default().with_limits(DecodeLimits::default());
    let log = JetStreamLog::connect(nats_url, SWARM, options).await?;
    let before = cpu_of(std::process::id());
    let mut from = 1;
    while from <= through {
        let page = log.read(from, None, 2048).await?;
        let Some(last) = page.last() else { break };
        from = last.seq + 1;
    }
    Ok(cpu_of(std::process::id()) - before)
}
