//! The CLI prints text for people by default and the API's JSON with
//! `--json` (a global flag: before or after the verb), and draws no progress
//! when stderr is not a terminal (here it is a pipe): scripts get only the
//! result.

mod common;

use common::MnemeServer;
use mneme_api::consolidation::{ContradictionsAnswer, PurgeAnswer};
use mneme_api::log::AcceptedEvents;
use mneme_api::memory::ReplayAnswer;

fn stdout_and_quiet_stderr(output: &std::process::Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.trim().is_empty(), "nothing on a piped stderr but errors: {stderr:?}");
    common::stdout_of(output)
}

#[test]
fn verbs_print_text_by_default_and_the_apis_json_with_json_and_no_progress_into_a_pipe() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let example = common::example_path();
    let example = example.to_str().unwrap();

    let text = stdout_and_quiet_stderr(&server.cli(&["publish", example]));
    assert!(text.starts_with("published 572 events (0 already on the log); last seq 572"), "{text}");
    let again = stdout_and_quiet_stderr(&server.cli(&["--json", "publish", example]));
    let accepted: AcceptedEvents = serde_json::from_str(&again).unwrap_or_else(|error| panic!("{error}: {again}"));
    assert_eq!(accepted.accepted.len(), 572);
    assert!(accepted.accepted.iter().all(|event| event.duplicate), "published twice: every event a duplicate");

    let text = stdout_and_quiet_stderr(&server.cli(&["replay", "--agent", "coder", "--verify"]));
    assert!(text.contains("MATCH") && !text.contains("MISMATCH"), "{text}");
    let json = stdout_and_quiet_stderr(&server.cli(&["replay", "--agent", "coder", "--verify", "--json"]));
    let replay: ReplayAnswer = serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"));
    assert_eq!(replay.matches, Some(true), "{replay:?}");

    let json = stdout_and_quiet_stderr(&server.cli(&["contradictions", "--json"]));
    let _: ContradictionsAnswer = serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"));

    let item = accepted.accepted[0].id.clone();
    let json = stdout_and_quiet_stderr(&server.cli(&["purge", "--item", &item, "--json"]));
    let purge: PurgeAnswer = serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"));
    assert!(!purge.purged.is_empty(), "{purge:?}");
    let text = stdout_and_quiet_stderr(&server.cli(&["purge", "--item", &item]));
    assert!(text.starts_with("already purged from"), "{text}");
}

/// `mneme note`, `core` and `timeline`: a note is written and found, a
/// block replaced and shown, the timeline lists both; `--json` prints the
/// API's answers.
#[test]
fn an_agent_writes_notes_and_core_blocks_and_reads_its_timeline_from_the_cli() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let text = stdout_and_quiet_stderr(&server.cli(&[
        "note",
        "--agent",
        "coder",
        "the flaky test is quokka_cache",
        "--tag",
        "gotcha",
    ]));
    assert!(text.starts_with("note ") && text.contains(" written at seq 1"), "{text}");
    let json = stdout_and_quiet_stderr(&server.cli(&["search", "--agent", "coder", "quokka_cache", "--json"]));
    let hits: mneme_api::memory::SearchAnswer =
        serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"));
    assert_eq!(hits.hits[0].kind, "note_written", "{hits:?}");

    let text = stdout_and_quiet_stderr(&server.cli(&[
        "core",
        "--agent",
        "coder",
        "--block",
        "plan",
        "--content",
        "fix quokka_cache first",
    ]));
    assert!(
        text.contains("block written at seq 2") && text.contains("[plan] (") && text.contains("fix quokka_cache first"),
        "{text}"
    );
    let json = stdout_and_quiet_stderr(&server.cli(&["core", "--agent", "coder", "--json"]));
    let core: mneme_api::agent_memory::CoreMemoryAnswer =
        serde_json::from_str(&json).unwrap_or_else(|error| panic!("{error}: {json}"));
    assert_eq!(core.blocks[0].content, "fix quokka_cache first", "{core:?}");

    let text = stdout_and_quiet_stderr(&server.cli(&["timeline", "--agent", "coder"]));
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("Note [gotcha]: the flaky test is quokka_cache"), "{text}");
    assert!(text.contains("core_memory_updated"), "{text}");
}

/// A port in use: `mneme serve` says so and exits, before it opens the log
/// or starts a memory (it used to start them, then panic while dropping
/// them: "there is no reactor running").
#[test]
fn a_port_in_use_is_refused_with_its_reason_and_no_panic() {
    let work = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = taken.local_addr().unwrap().to_string();
    let config = work.path().join("swarm.toml");
    std::fs::write(&config, "[swarm]\nname = \"demo\"\n\n[embedder]\nkind = \"hashed\"\n").unwrap();
    let output = std::process::Command::new(common::MNEME)
        .args(["serve", "--http", &address, "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(work.path().join("data"))
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("binding the HTTP API to {address}")), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!work.path().join("data").join("log").exists(), "nothing opened before the port: {stderr}");
}
