//! A plain NATS client is a first-class user: `tests/python/orchestrator.py`
//! (nats-py, written from the README alone) publishes a swarm's work
//! straight to JetStream, receives a handoff, reads it again with a durable
//! consumer made after the delivery (as an agent that was down would),
//! lists and acknowledges it with the `handoffs` and `ack` verbs, asks every
//! query verb over request/reply and checks dead letters, against a real
//! nats-server and `mneme serve`. Then Mneme restarts, and the same
//! read-only queries must answer exactly the same (the handoff still
//! acknowledged, nothing new for the durable consumer).
//!
//! The Python and nats-py come from `<repo>/.venv`, which
//! `scripts/install-python-clients.sh` fills (scripts/test.sh runs it);
//! `MNEME_PYTHON` names another interpreter. Without them the test fails,
//! in CI and locally alike: it never skips.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::MnemeServer;
use mneme_nats::server::NatsServer;

const PYTHON_ENV: &str = "MNEME_PYTHON";
const INSTALL_SCRIPT: &str = "scripts/install-python-clients.sh";

/// Deterministic answers across the restart: no consolidation run may
/// append verdicts between the two sets of queries.
const CONFIG: &str = "\n[consolidation]\nenabled = false\n";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Succeeds only where nats-py itself is installed (its distribution, and
/// the JetStream module the orchestrator uses), not any module named `nats`.
const NATS_PY_PROBE: &str = "import importlib.metadata, nats.js; print(importlib.metadata.version('nats-py'))";

/// The interpreter with nats-py, or a panic that says how to get one: a
/// missing interpreter or nats-py fails the test whether or not `CI` is
/// set, so a machine without them cannot pass it by skipping.
fn python_with_nats() -> PathBuf {
    let python =
        std::env::var_os(PYTHON_ENV).map(PathBuf::from).unwrap_or_else(|| repo_root().join(".venv/bin/python"));
    let in_ci = std::env::var("CI").is_ok_and(|value| value == "true");
    let probe = Command::new(&python).args(["-c", NATS_PY_PROBE]).output();
    let problem = match &probe {
        Err(error) => Some(format!("cannot be run ({error})")),
        Ok(output) if !output.status.success() => {
            let stderr = String::from_utf8_lossy(&output.stderr);
            Some(format!("cannot import nats-py ({})", stderr.lines().last().unwrap_or("no error output")))
        }
        Ok(_) => None,
    };
    if let Some(problem) = problem {
        panic!(
            "{} {problem}{}: run {INSTALL_SCRIPT} (scripts/test.sh runs it), or set {PYTHON_ENV}",
            python.display(),
            if in_ci { " (in CI)" } else { "" },
        );
    }
    python
}

fn orchestrator(python: &Path, nats: &NatsServer, mneme: &MnemeServer, work: &Path, mode: &[&str]) -> Output {
    Command::new(python)
        .arg(repo_root().join("tests/python/orchestrator.py"))
        .args(["--nats", &nats.url(), "--http", &mneme.url, "--swarm", "demo"])
        .arg("--state")
        .arg(work.join("state.json"))
        .arg("--answers")
        .arg(work.join(if mode.is_empty() { "answers.json" } else { "answers-after-restart.json" }))
        .args(mode)
        .output()
        .expect("the orchestrator runs")
}

/// What went wrong with a run, if anything, with its whole output.
fn failure_of(output: &Output, what: &str) -> Option<String> {
    (!output.status.success()).then(|| {
        format!(
            "{what} failed with {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The first line where two answer files differ, if they do.
fn difference(before: &str, after: &str) -> Option<String> {
    if before.is_empty() {
        return Some("the orchestrator wrote no answers".to_string());
    }
    if before == after {
        return None;
    }
    let line = before.lines().zip(after.lines()).position(|(a, b)| a != b).unwrap_or(0);
    Some(format!(
        "the queries answered differently after the restart, first at line {}:\nbefore: {}\nafter:  {}",
        line + 1,
        before.lines().nth(line).unwrap_or("(end)"),
        after.lines().nth(line).unwrap_or("(end)")
    ))
}

#[test]
fn a_python_orchestrator_on_plain_nats_gets_what_the_readme_promises_and_the_same_after_a_restart() {
    let python = python_with_nats();
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mut mneme = MnemeServer::start_with(work.path(), Some(&nats.url()), CONFIG);

    // Every part runs even when one fails, so that one report shows all.
    let mut failures = Vec::new();
    let run = orchestrator(&python, &nats, &mneme, work.path(), &[]);
    failures.extend(failure_of(&run, "the orchestrator's run"));
    mneme.restart();
    let again = orchestrator(&python, &nats, &mneme, work.path(), &["--check-only"]);
    failures.extend(failure_of(&again, "the orchestrator's queries after the restart"));
    let read = |name: &str| std::fs::read_to_string(work.path().join(name)).unwrap_or_default();
    failures.extend(difference(&read("answers.json"), &read("answers-after-restart.json")));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
