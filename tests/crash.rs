//! Failure injection: a real `mneme serve` on the embedded log, killed with
//! SIGKILL at random points while events are published, during snapshot
//! writes, and restarted on damaged snapshots. After every restart: no
//! acknowledged event is missing from the log, none is on it twice, none is
//! applied twice (each agent's digest equals a fresh replay of the log), and
//! tokens and scopes still hold.
//!
//! Each test prints what it injected and what it checked. The seed of the
//! random kill points is printed and can be set with `MNEME_CRASH_SEED`.

mod common;

use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{MnemeServer, typed};
use mneme_api::log::{Accepted, AcceptedEvents, EventsPage, Health, LogEntry};
use mneme_api::memory::{Digest, Hit, ReplayAnswer, SearchAnswer};
use mneme_events::EventKind;
use serde_json::{Value, json};

const AGENTS: [&str; 3] = ["planner", "coder", "reviewer"];
const OPERATOR_TOKEN: &str = "operator-secret-0123456789";
const CODER_TOKEN: &str = "coder-secret-0123456789ab";

/// Every private event of the planner carries this word; no other agent may
/// ever find it, before or after a crash.
const PLANNER_SECRET: &str = "kumquat";

fn config() -> String {
    common::reviewer_and_tokens(&[("operator", OPERATOR_TOKEN, None), ("coder-key", CODER_TOKEN, Some("coder"))])
}

/// Unix milliseconds of 2026-03-02T10:00:00Z, the first event's time.
const FIRST_EVENT_MS: u64 = 1_772_445_600_000;

/// A small xorshift generator: the kill points must be random, but a
/// failing run must be repeatable from its printed seed.
struct KillPoints(u64);

impl KillPoints {
    fn from_environment() -> KillPoints {
        let seed = std::env::var("MNEME_CRASH_SEED").ok().and_then(|seed| seed.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        eprintln!("kill points: seed {seed} (set MNEME_CRASH_SEED={seed} to repeat)");
        KillPoints(seed.max(1))
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn between(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low)
    }
}

/// The swarm's events, numbered: who says what follows from the number, so
/// a batch can be sent again with the same ids after a crash.
fn event(number: u64) -> Value {
    let agent = AGENTS[(number % 3) as usize];
    let second = number;
    let ts = format!("2026-03-02T{:02}:{:02}:{:02}Z", 10 + second / 3600, (second / 60) % 60, second % 60);
    let id = ulid::Ulid::from_parts(FIRST_EVENT_MS + number * 1000, u128::from(number)).to_string();
    let component = ["ledger", "billing", "session", "gateway", "scheduler"][(number % 5) as usize];
    let (kind, data, scope) = match number % 7 {
        // A handoff now and then: Mneme delivers each with a
        // `handoff_received` of its own, which must not be doubled by a
        // crash between delivering it and storing the router's position.
        _ if number % 60 == 30 => (
            "handoff_sent",
            json!({"to": "coder", "task": format!("task-{number}"), "summary": format!("take over the {component} retry fix")}),
            "shared",
        ),
        0 if agent == "planner" => (
            "message_recorded",
            json!({"role": "assistant", "text": format!("private planning note {number}: the {PLANNER_SECRET} migration of {component} stays secret")}),
            "private",
        ),
        1 => (
            "fact_asserted",
            json!({"subject": format!("{component}-service"), "predicate": "replica_count", "object": format!("{}", number % 9)}),
            "shared",
        ),
        2 => (
            "tool_result_recorded",
            json!({"tool": "bash", "args": {"cmd": format!("cargo test -p {component}")}, "output": format!("test result: FAILED. {number} passed; 1 failed\nthread 'tests::{component}_retries' panicked at src/{component}.rs:{number}:9"), "exit_code": 101}),
            "shared",
        ),
        _ => (
            "message_recorded",
            json!({"role": "assistant", "text": format!("step {number}: looked at the {component} module and updated the retry budget to {} attempts", number % 11)}),
            "shared",
        ),
    };
    json!({"id": id, "swarm": "demo", "agent": agent, "ts": ts, "kind": kind, "data": data, "scope": scope})
}

fn batch(first: u64, size: u64) -> Value {
    Value::Array((first..first + size).map(event).collect())
}

/// POSTs a batch as the operator; `None` when the server did not answer
/// (it was killed before or while answering).
/// Each event's acknowledgement: its id, its seq, and whether it was on the
/// log already (sent before, unacknowledged).
fn try_publish(server: &MnemeServer, events: &Value) -> Option<Vec<Accepted>> {
    let request = ureq::post(&format!("{}/v1/events", server.url))
        .set("content-type", "application/json")
        .set("authorization", &format!("Bearer {OPERATOR_TOKEN}"))
        .timeout(Duration::from_secs(10));
    match request.send_string(&events.to_string()) {
        Ok(response) => {
            assert_eq!(response.status(), 202);
            let answer: AcceptedEvents = response.into_json().ok()?;
            Some(answer.accepted)
        }
        Err(ureq::Error::Status(status, response)) => {
            panic!("the server refused a valid batch with {status}: {}", response.into_string().unwrap())
        }
        Err(ureq::Error::Transport(_)) => None,
    }
}

/// Every event on the log: id to every seq it is at.
fn log_ids(server: &MnemeServer) -> BTreeMap<String, Vec<u64>> {
    let mut ids: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut from_seq = 1;
    loop {
        let (status, page) =
            server.get_as(Some(OPERATOR_TOKEN), &format!("/v1/swarms/demo/events?from_seq={from_seq}&limit=10000"));
        assert_eq!(status, 200, "{page}");
        let page: EventsPage = typed("an events page", page);
        if page.events.is_empty() {
            return ids;
        }
        for entry in &page.events {
            let LogEntry::Event(event) = entry else { panic!("an invalid record on the log: {entry:?}") };
            let id = event.decode().expect("the log's events decode").id;
            ids.entry(id.to_string()).or_default().push(event.seq);
            from_seq = event.seq + 1;
        }
    }
}

fn last_seq(server: &MnemeServer) -> u64 {
    typed::<Health>("GET /healthz", server.get_as(None, "/healthz").1).last_seq
}

/// Checks the log against what was acknowledged: each acknowledged id is on
/// the log, once, at the seq its acknowledgement named. Returns how many
/// events the log holds.
fn assert_nothing_lost_or_doubled(server: &MnemeServer, acknowledged: &BTreeMap<String, u64>) -> usize {
    let on_log = log_ids(server);
    let doubled: Vec<_> = on_log.iter().filter(|(_, seqs)| seqs.len() > 1).collect();
    assert!(doubled.is_empty(), "events on the log more than once: {doubled:?}");
    for (id, seq) in acknowledged {
        let found = on_log.get(id).unwrap_or_else(|| panic!("acknowledged event {id} (seq {seq}) is not on the log"));
        assert_eq!(found, &vec![*seq], "acknowledged event {id} moved");
    }
    on_log.len()
}

/// Every handoff sent (of those acknowledged) is delivered exactly once:
/// one `handoff_received` naming it. Waits for deliveries still under way.
fn assert_each_handoff_delivered_once(server: &MnemeServer, acknowledged: &BTreeMap<String, u64>) -> usize {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut sent = Vec::new();
        let mut received: BTreeMap<String, usize> = BTreeMap::new();
        let mut from_seq = 1;
        loop {
            let path = format!("/v1/swarms/demo/events?from_seq={from_seq}&limit=10000");
            let page: EventsPage = typed(&path, server.get_as(Some(OPERATOR_TOKEN), &path).1);
            if page.events.is_empty() {
                break;
            }
            for entry in &page.events {
                from_seq = entry.seq() + 1;
                let LogEntry::Event(entry) = entry else { panic!("an invalid record on the log: {entry:?}") };
                let event = entry.decode().expect("the log's events decode");
                match &event.kind {
                    EventKind::HandoffSent(_) => sent.push(event.id.to_string()),
                    EventKind::HandoffReceived(delivery) => {
                        *received.entry(delivery.handoff_id.to_string()).or_default() += 1
                    }
                    _ => {}
                }
            }
        }
        let doubled: Vec<_> = received.iter().filter(|(_, count)| **count > 1).collect();
        assert!(doubled.is_empty(), "handoffs delivered more than once: {doubled:?}");
        let undelivered =
            sent.iter().filter(|id| acknowledged.contains_key(*id) && !received.contains_key(*id)).count();
        if undelivered == 0 {
            return sent.len();
        }
        assert!(Instant::now() < deadline, "{undelivered} handoffs not delivered within 60 s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Each agent's live digest equals a fresh replay of the log up to the same
/// seq: no event was applied twice or skipped.
fn assert_memories_equal_replay(server: &MnemeServer, min_seq: u64) {
    for agent in AGENTS {
        let path = format!("/v1/swarms/demo/agents/{agent}/replay?verify=true&min_seq={min_seq}");
        let deadline = Instant::now() + Duration::from_secs(120);
        let report = loop {
            let (status, report) = server.post_as(Some(OPERATOR_TOKEN), &path, "{}");
            // 504: the memory is still catching up on the tail after a
            // restart; the route waits 10 s at a time.
            if status == 504 && Instant::now() < deadline {
                continue;
            }
            assert_eq!(status, 200, "{report}");
            break typed::<ReplayAnswer>(&path, report);
        };
        assert_eq!(report.matches, Some(true), "{agent}: live memory differs from a replay of the log: {report:?}");
        assert!(report.seq >= min_seq, "{report:?}");
    }
}

/// The coder's token reaches only the coder's memory, and no path shows it
/// the planner's private notes.
fn assert_scopes_and_tokens_hold(server: &MnemeServer, min_seq: u64) {
    let search = |token: Option<&str>, agent: &str| {
        server
            .get_as(token, &format!("/v1/swarms/demo/agents/{agent}/search?q={PLANNER_SECRET}&k=50&min_seq={min_seq}"))
    };
    assert_eq!(search(None, "coder").0, 401);
    assert_eq!(search(Some(CODER_TOKEN), "planner").0, 403);
    let (status, own) = search(Some(CODER_TOKEN), "coder");
    assert_eq!(status, 200, "{own}");
    assert!(!own.to_string().contains(PLANNER_SECRET), "the planner's secret reached the coder: {own}");
    let (status, reviewer) = search(Some(OPERATOR_TOKEN), "reviewer");
    assert_eq!(status, 200, "{reviewer}");
    assert!(!reviewer.to_string().contains(PLANNER_SECRET), "the planner's secret reached the reviewer: {reviewer}");
    let (status, planner) = search(Some(OPERATOR_TOKEN), "planner");
    assert_eq!(status, 200, "{planner}");
    let planner: SearchAnswer = typed("the planner's search", planner);
    assert!(!planner.hits.is_empty(), "the planner finds its own private notes: {planner:?}");
    assert_eq!(server.get_as(Some(CODER_TOKEN), "/v1/swarms/demo/events").0, 403);
}

/// Enough of the server's log to tell how each memory came back.
const RESTORE_LOG_FILTER: &str = "warn,mneme_actors::memory_actor=info";

fn serve_log(server: &MnemeServer) -> String {
    std::fs::read_to_string(server.stderr_log.as_ref().unwrap()).unwrap_or_default()
}

/// The TCP sockets `pid` listens on, as (address, port): its socket inodes
/// looked up in the kernel's table (IPv4 and IPv6; loopback is `127.*` and
/// `::1`, and the unspecified address shows as all zeros).
fn listening_sockets(pid: u32) -> Vec<(String, u16)> {
    let inodes: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter_map(|target| {
            let target = target.to_string_lossy().into_owned();
            target.strip_prefix("socket:[").and_then(|rest| rest.strip_suffix(']')).map(str::to_string)
        })
        .collect();
    let mut sockets = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        for line in text.lines().skip(1) {
            let columns: Vec<&str> = line.split_whitespace().collect();
            const LISTEN: &str = "0A";
            if columns.len() > 9 && columns[3] == LISTEN && inodes.iter().any(|inode| inode == columns[9]) {
                let (address, port) = columns[1].split_once(':').unwrap();
                sockets.push((address.to_string(), u16::from_str_radix(port, 16).unwrap()));
            }
        }
    }
    sockets
}

/// Nothing but loopback: `127.0.0.1` is `0100007F` in the kernel's byte
/// order, `::1` is `00000000000000000000000001000000`.
fn assert_listens_only_on_loopback(server: &MnemeServer) {
    let sockets = listening_sockets(server.pid());
    assert!(!sockets.is_empty(), "the server listens somewhere");
    for (address, port) in &sockets {
        let loopback = address.ends_with("7F") && address.len() == 8 || address == "00000000000000000000000001000000";
        assert!(loopback, "the server listens on {address}:{port}, which is not loopback");
    }
    eprintln!("checked: the server listens only on loopback ({} sockets)", sockets.len());
}

/// No token of the configuration appears in what the server logged.
fn assert_no_secret_logged(server: &MnemeServer) {
    let log = serve_log(server);
    for secret in [OPERATOR_TOKEN, CODER_TOKEN] {
        assert!(!log.contains(secret), "a token appears in the server's log");
    }
    eprintln!("checked: no token in {} bytes of the server's log", log.len());
}

#[test]
fn killed_with_sigkill_at_random_points_nothing_acknowledged_is_lost_or_applied_twice() {
    const KILLS: usize = 24;
    const BATCH_SIZE: u64 = 8;
    // A pause between batches, as agents leave between turns: without it
    // the log outruns the memories by thousands of events per kill and the
    // test measures catch-up rather than crashes.
    const PAUSE_BETWEEN_BATCHES: Duration = Duration::from_millis(15);
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_logged(work.path(), &config(), RESTORE_LOG_FILTER);
    server.token = Some(OPERATOR_TOKEN.to_string());
    let mut kill_points = KillPoints::from_environment();
    assert_listens_only_on_loopback(&server);

    // The killer runs beside the publisher, so kills land mid-request, mid-
    // append, mid-apply and mid-snapshot, not only between batches.
    let (arm_killer, armed) = mpsc::channel::<(u32, u64)>();
    let (report_kill, killed) = mpsc::channel::<u32>();
    let killer = std::thread::spawn(move || {
        for (pid, delay_ms) in armed {
            std::thread::sleep(Duration::from_millis(delay_ms));
            let status = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status().unwrap();
            assert!(status.success(), "kill -9 {pid}");
            report_kill.send(pid).unwrap();
        }
    });

    let mut acknowledged: BTreeMap<String, u64> = BTreeMap::new();
    let mut next_event = 0u64;
    let mut retried_batches = 0;
    let mut batches_unanswered_at_a_kill = 0;
    let mut resent_events_found_on_the_log = 0;
    let started = Instant::now();
    for kill in 1..=KILLS {
        let delay_ms = kill_points.between(30, 700);
        arm_killer.send((server.pid(), delay_ms)).unwrap();
        // Publish until the server dies; a batch it did not acknowledge is
        // sent again, with the same ids, after the restart.
        loop {
            let events = batch(next_event, BATCH_SIZE);
            match try_publish(&server, &events) {
                Some(accepted) => {
                    acknowledged.extend(accepted.into_iter().map(|event| (event.id, event.seq)));
                    next_event += BATCH_SIZE;
                    std::thread::sleep(PAUSE_BETWEEN_BATCHES);
                }
                None => {
                    batches_unanswered_at_a_kill += 1;
                    break;
                }
            }
        }
        let pid = killed.recv_timeout(Duration::from_secs(10)).expect("the killer reports its kill");
        assert_eq!(pid, server.pid());
        server.reap_killed();
        server.start_again();

        // The unacknowledged batch again, same ids: acknowledged now, and
        // whatever of it reached the log before the kill is not doubled.
        let events = batch(next_event, BATCH_SIZE);
        let accepted = try_publish(&server, &events).expect("the restarted server answers");
        retried_batches += 1;
        resent_events_found_on_the_log += accepted.iter().filter(|event| event.duplicate).count();
        acknowledged.extend(accepted.into_iter().map(|event| (event.id, event.seq)));
        next_event += BATCH_SIZE;

        let handoffs = assert_each_handoff_delivered_once(&server, &acknowledged);
        let on_log = assert_nothing_lost_or_doubled(&server, &acknowledged);
        let log_end = last_seq(&server);
        assert_memories_equal_replay(&server, log_end);
        assert_scopes_and_tokens_hold(&server, log_end);
        eprintln!(
            "kill {kill}/{KILLS}: SIGKILL {delay_ms} ms into publishing; after restart {} acknowledged events all on the log once ({on_log} on the log), {handoffs} handoffs each delivered once, 3 digests equal a fresh replay at seq {log_end}, scopes hold",
            acknowledged.len()
        );
    }
    drop(arm_killer);
    killer.join().unwrap();

    assert_listens_only_on_loopback(&server);
    assert_no_secret_logged(&server);
    let restored = serve_log(&server).matches("memory restored from its snapshot").count();
    assert!(restored > 0, "no restart restored a memory from a snapshot:\n{}", serve_log(&server));
    eprintln!(
        "survived {KILLS} SIGKILLs in {:.1} s: {} events acknowledged and checked after every restart, {batches_unanswered_at_a_kill} batches unanswered at a kill and {retried_batches} resent with the same ids ({resent_events_found_on_the_log} of their events had reached the log before the kill and were not appended again), {restored} memories restored from snapshots",
        started.elapsed().as_secs_f64(),
        acknowledged.len()
    );
}

/// A field's value in a line of the server's log (`name=value`), looked up
/// after the message so that span fields do not interfere.
fn field<'line>(line: &'line str, message: &str, name: &str) -> Option<&'line str> {
    let after_message = &line[line.find(message)? + message.len()..];
    let pattern = format!(" {name}=");
    let start = after_message.find(&pattern)? + pattern.len();
    after_message[start..].split_whitespace().next()
}

/// Which agents' snapshots were started and not finished when the log
/// ends, with the seq of each one's last finished snapshot (0: none).
/// `log` is the whole log; only snapshots started at or after `since` (a
/// byte offset: the last restart) count as cut off.
fn snapshots_cut_off(log: &str, since: usize) -> BTreeMap<String, u64> {
    let mut last_written: BTreeMap<String, u64> = BTreeMap::new();
    for line in log.lines() {
        if let Some(agent) = field(line, "snapshot written", "agent") {
            let seq = field(line, "snapshot written", "snapshot_seq").unwrap().parse().unwrap();
            last_written.insert(agent.to_string(), seq);
        }
    }
    let mut in_progress: BTreeMap<String, bool> = BTreeMap::new();
    for line in log[since..].lines() {
        if let Some(agent) = field(line, "snapshot started", "agent") {
            in_progress.insert(agent.to_string(), true);
        } else if let Some(agent) = field(line, "snapshot written", "agent") {
            in_progress.insert(agent.to_string(), false);
        }
    }
    in_progress
        .into_iter()
        .filter(|(_, cut_off)| *cut_off)
        .map(|(agent, _)| {
            let seq = last_written.get(&agent).copied().unwrap_or(0);
            (agent, seq)
        })
        .collect()
}

/// How each agent's memory came back in this log: the restored snapshot's
/// seq, or `None` when it was rebuilt from the log.
fn restores(log: &str) -> BTreeMap<String, Option<u64>> {
    let mut restores = BTreeMap::new();
    // The system layer's memory starts beside the swarm's: not counted.
    for line in log.lines().filter(|line| !line.contains(" swarm=system ")) {
        if let Some(agent) = field(line, "memory restored from its snapshot", "agent") {
            let seq = field(line, "memory restored from its snapshot", "snapshot_seq").unwrap().parse().unwrap();
            restores.insert(agent.to_string(), Some(seq));
        } else if let Some(agent) = field(line, "memory rebuilt from the log", "agent") {
            restores.insert(agent.to_string(), None);
        }
    }
    restores
}

/// For each agent restored from its snapshot, whether it took its documents
/// over from the text index on disk.
fn text_index_reuse(log: &str) -> BTreeMap<String, bool> {
    let message = "memory restored from its snapshot";
    log.lines()
        .filter(|line| !line.contains(" swarm=system "))
        .filter_map(|line| {
            let agent = field(line, message, "agent")?;
            Some((agent.to_string(), field(line, message, "text_index_reused")? == "true"))
        })
        .collect()
}

/// Each agent's BM25 and hybrid hits (ids and scores) for a few queries.
fn searches(server: &MnemeServer, min_seq: u64) -> Vec<Vec<Hit>> {
    let mut answers = Vec::new();
    for agent in AGENTS {
        for query in ["retry budget", "ledger", "cargo test billing", "panicked"] {
            for mode in ["bm25", "hybrid"] {
                let path = format!(
                    "/v1/swarms/demo/agents/{agent}/search?q={}&k=20&mode={mode}&min_seq={min_seq}",
                    query.replace(' ', "+")
                );
                let (status, body) = server.get_as(Some(OPERATOR_TOKEN), &path);
                assert_eq!(status, 200, "{body}");
                answers.push(typed::<SearchAnswer>(&path, body).hits);
            }
        }
    }
    answers
}

#[test]
fn killed_while_writing_a_snapshot_the_last_complete_one_is_used_and_the_tail_replayed() {
    const WANTED_CUTS: usize = 3;
    const ATTEMPTS: usize = 40;
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_logged(work.path(), &config(), "warn,mneme_actors::memory_actor=debug");
    // Memories of a few thousand items, so that a snapshot takes long
    // enough to be caught in the act.
    let mut next_event = 0u64;
    while next_event < 3000 {
        try_publish(&server, &batch(next_event, 500)).expect("published");
        next_event += 500;
    }
    let mut cuts = 0;
    let mut cuts_before_the_new_snapshot_was_stored = 0;
    for attempt in 1..=ATTEMPTS {
        let log_path = server.stderr_log.clone().unwrap();
        let log_start = std::fs::metadata(&log_path).unwrap().len() as usize;
        try_publish(&server, &batch(next_event, 400)).expect("published");
        next_event += 400;
        // Watch the server's log and kill the moment a snapshot starts.
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut started_seen = false;
        while Instant::now() < deadline {
            let log = std::fs::read(&log_path).unwrap();
            if String::from_utf8_lossy(&log[log_start..]).contains("snapshot started") {
                server.kill_hard();
                started_seen = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        assert!(started_seen, "no snapshot started within 10 s of 400 new events");
        let log_before_kill = serve_log(&server);
        let cut_off = snapshots_cut_off(&log_before_kill, log_start);
        let restart_log_start = log_before_kill.len();
        server.start_again();
        let log_end = last_seq(&server);
        assert_memories_equal_replay(&server, log_end);
        let restart_log = serve_log(&server)[restart_log_start..].to_string();
        let restored = restores(&restart_log);
        for (agent, last_complete_seq) in &cut_off {
            let restored_from = restored.get(agent).copied().flatten();
            let restored_seq = restored_from.unwrap_or(0);
            // The cut-off snapshot is used only if its single insert landed
            // before the kill: then it is complete. Anything else would be
            // a torn snapshot served.
            let started_seq: u64 = log_before_kill[log_start..]
                .lines()
                .rev()
                .find(|line| field(line, "snapshot started", "agent") == Some(agent.as_str()))
                .and_then(|line| field(line, "snapshot started", "snapshot_seq"))
                .unwrap()
                .parse()
                .unwrap();
            assert!(
                restored_seq == *last_complete_seq || restored_seq == started_seq,
                "{agent}: restored seq {restored_seq}, last complete {last_complete_seq}, cut off at {started_seq}"
            );
            if restored_seq == *last_complete_seq {
                cuts_before_the_new_snapshot_was_stored += 1;
            }
            cuts += 1;
            let restarted_from = match restored_from {
                Some(seq) => format!("the snapshot at seq {seq}"),
                None => "the log (no snapshot was complete)".to_string(),
            };
            eprintln!(
                "attempt {attempt}: SIGKILL during {agent}'s snapshot at seq {started_seq}; restarted from {restarted_from}, tail replayed to {log_end}, digests equal a fresh replay"
            );
        }
        if cuts_before_the_new_snapshot_was_stored >= WANTED_CUTS {
            break;
        }
    }
    assert_no_secret_logged(&server);
    eprintln!(
        "{cuts} snapshot writes cut off by SIGKILL, {cuts_before_the_new_snapshot_was_stored} before the new snapshot was stored; every restart used the last complete snapshot and replayed the tail"
    );
    assert!(
        cuts_before_the_new_snapshot_was_stored >= WANTED_CUTS,
        "only {cuts_before_the_new_snapshot_was_stored} kills landed inside a snapshot write in {ATTEMPTS} attempts"
    );
}

#[test]
fn a_damaged_or_truncated_snapshot_is_detected_and_rebuilt_from_the_log_never_served() {
    let work = tempfile::tempdir().unwrap();
    let mut server = MnemeServer::start_logged(work.path(), &config(), RESTORE_LOG_FILTER);
    try_publish(&server, &batch(0, 600)).expect("published");
    let log_end = last_seq(&server);
    assert_memories_equal_replay(&server, log_end);
    let digest_of = |server: &MnemeServer, agent: &str| {
        let (status, digest) =
            server.get_as(Some(OPERATOR_TOKEN), &format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={log_end}"));
        assert_eq!(status, 200, "{digest}");
        typed::<Digest>("a digest", digest).digest
    };
    let before: Vec<String> = AGENTS.iter().map(|agent| digest_of(&server, agent)).collect();
    let searches_before = searches(&server, log_end);
    server.stop();

    // The planner's snapshot loses its second half; one byte in the middle
    // of the coder's flips; the reviewer's is left alone.
    let snapshots = server.data_dir.join("snapshots");
    {
        let store = mneme_actors::SnapshotStore::open(&snapshots).unwrap();
        let planner = store.raw_for_tests("demo", "planner").unwrap().expect("the planner has a snapshot");
        store.put_raw_for_tests("demo", "planner", &planner[..planner.len() / 2]).unwrap();
        let mut coder = store.raw_for_tests("demo", "coder").unwrap().expect("the coder has a snapshot");
        let middle = coder.len() / 2;
        coder[middle] ^= 0x5a;
        store.put_raw_for_tests("demo", "coder", &coder).unwrap();
    }
    eprintln!("injected: planner's snapshot truncated to half, one byte of the coder's flipped");
    let log_start = serve_log(&server).len();
    server.start_again();
    let after: Vec<String> = AGENTS.iter().map(|agent| digest_of(&server, agent)).collect();
    assert_eq!(before, after, "memories after the damaged snapshots equal those before");
    assert_memories_equal_replay(&server, log_end);
    let restart_log = serve_log(&server)[log_start..].to_string();
    let damaged_warnings: Vec<&str> =
        restart_log.lines().filter(|line| line.contains("WARN") && line.contains("snapshot damaged")).collect();
    assert_eq!(damaged_warnings.len(), 2, "{restart_log}");
    assert!(damaged_warnings.iter().any(|line| line.contains("agent=planner")), "{damaged_warnings:?}");
    assert!(damaged_warnings.iter().any(|line| line.contains("agent=coder")), "{damaged_warnings:?}");
    let restored = restores(&restart_log);
    assert_eq!(restored.get("planner"), Some(&None), "{restart_log}");
    assert_eq!(restored.get("coder"), Some(&None), "{restart_log}");
    assert!(matches!(restored.get("reviewer"), Some(Some(_))), "{restart_log}");
    // The sound one took its documents over from the text index on disk;
    // the rebuilt ones' old documents were dropped, not searched twice.
    assert_eq!(text_index_reuse(&restart_log), BTreeMap::from([("reviewer".to_string(), true)]), "{restart_log}");
    let searches_after = searches(&server, log_end);
    for (index, (after, before)) in searches_after.iter().zip(&searches_before).enumerate() {
        if after != before {
            eprintln!("DIFF {index}");
            for (a, b) in after.iter().zip(before) {
                eprintln!(
                    "  after {} {:.4} | before {} {:.4} {}",
                    a.seq,
                    a.score,
                    b.seq,
                    b.score,
                    &a.text[..a.text.len().min(60)]
                );
            }
        }
    }
    assert_eq!(searches_after, searches_before);
    eprintln!(
        "checked: 2 warnings naming the damaged snapshots, both memories rebuilt from the log, the sound one restored with its text index documents; 3 digests equal those before and a fresh replay, searches equal those before"
    );

    // The text index deleted: every memory restores from its snapshot and
    // indexes its items again.
    server.stop();
    std::fs::remove_dir_all(server.data_dir.join("text-index")).unwrap();
    let log_start = serve_log(&server).len();
    server.start_again();
    let after_deletion: Vec<String> = AGENTS.iter().map(|agent| digest_of(&server, agent)).collect();
    assert_eq!(before, after_deletion);
    assert_eq!(searches(&server, log_end), searches_before);
    let restart_log = serve_log(&server)[log_start..].to_string();
    let reuse = text_index_reuse(&restart_log);
    assert_eq!(reuse.len(), AGENTS.len(), "{restart_log}");
    assert!(reuse.values().all(|reused| !reused), "{restart_log}");
    eprintln!(
        "checked: with the text index deleted, 3 memories restored and indexed again; digests and searches equal"
    );

    // The snapshot store's files themselves cut short, as by a full disk.
    server.stop();
    let mut cut_files = 0;
    for path in common::files_under(&snapshots) {
        let length = std::fs::metadata(&path).unwrap().len();
        if length > 64 {
            std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(length / 3).unwrap();
            cut_files += 1;
        }
    }
    assert!(cut_files > 0);
    eprintln!("injected: {cut_files} files of the snapshot store truncated to a third");
    let log_start = serve_log(&server).len();
    server.start_again();
    let after_truncation: Vec<String> = AGENTS.iter().map(|agent| digest_of(&server, agent)).collect();
    assert_eq!(before, after_truncation, "{}", &serve_log(&server)[log_start..]);
    assert_memories_equal_replay(&server, log_end);
    let restart_log = serve_log(&server)[log_start..].to_string();
    let restored = restores(&restart_log);
    assert_eq!(restored.len(), AGENTS.len(), "{restart_log}");
    assert!(restored.values().all(Option::is_none), "every cut snapshot is refused: {restart_log}");
    eprintln!(
        "checked: the server started on the truncated store, every memory rebuilt from the log; 3 digests equal those before and a fresh replay"
    );
}
