//! `examples/`: a Python orchestrator publishes a swarm's work straight to
//! JetStream and a reviewer receives its handoff, asks for context and
//! acknowledges it, against a real nats-server and `mneme serve`; once the
//! Python reviewer (`examples/python/`, nats-py and the Python SDK from the
//! checkout), once the TypeScript one (`examples/typescript/`, over HTTP
//! with the TypeScript SDK, installed by npm from the checkout). The Python
//! comes from `<repo>/.venv/sdk` (`scripts/install-python-clients.sh`), Node
//! and tsc from `scripts/install-typescript-sdk.sh`; without them the tests
//! fail, they never skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::MnemeServer;
use mneme_api::handoffs::HandoffsAnswer;
use mneme_nats::server::NatsServer;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    repo_root().join(".venv/sdk/bin/python")
}

fn python_example(script: &str, nats: &NatsServer) -> Output {
    let python = python();
    Command::new(&python)
        .arg(repo_root().join("examples/python").join(script))
        .args(["--nats", &nats.url(), "--swarm", "demo"])
        // The SDK as this checkout has it.
        .env("PYTHONPATH", repo_root().join("clients/python/src"))
        .output()
        .unwrap_or_else(|error| {
            panic!("{} cannot run ({error}): run scripts/install-python-clients.sh", python.display())
        })
}

fn stdout_of(output: &Output, what: &str) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[test]
fn the_python_examples_publish_to_jetstream_and_the_reviewer_receives_reads_and_acknowledges_its_handoff() {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mneme = MnemeServer::start_with(work.path(), Some(&nats.url()), "");

    let published = stdout_of(&python_example("orchestrator.py", &nats), "orchestrator.py");
    let handoff_id = published.lines().last().and_then(|line| line.strip_prefix("handoff ")).unwrap().to_string();
    assert_eq!(published.lines().filter(|line| line.starts_with("seq ")).count(), 7, "{published}");

    let reviewed = stdout_of(&python_example("reviewer.py", &nats), "reviewer.py");
    assert!(reviewed.contains(&format!("handoff {handoff_id} from coder: task-rate-limit")), "{reviewed}");
    assert!(reviewed.contains("constraints: keep the limit configurable"), "{reviewed}");
    assert!(reviewed.contains("pending handoffs left: 0"), "{reviewed}");

    // Over HTTP too: the handoff is acknowledged, with the reviewer's note.
    let answer: HandoffsAnswer = mneme.get_typed("/v1/swarms/demo/agents/reviewer/handoffs");
    let handoff = answer.handoffs.iter().find(|handoff| handoff.handoff_id == handoff_id).expect("the handoff");
    assert_eq!(handoff.status, "acknowledged", "{handoff:?}");
}

/// Node and the SDK's build tools (scripts/install-typescript-sdk.sh).
fn node() -> PathBuf {
    let node = repo_root().join(".venv/node/bin/node");
    let tsc = repo_root().join("clients/typescript/node_modules/typescript/bin/tsc");
    assert!(
        node.is_file() && tsc.is_file(),
        "{} or {} is missing: run scripts/install-typescript-sdk.sh",
        node.display(),
        tsc.display()
    );
    node
}

#[test]
fn the_typescript_reviewer_receives_the_python_orchestrators_handoff_over_http() {
    let node = node();
    let sdk = repo_root().join("clients/typescript");
    // The SDK built as `npm run build` builds it.
    stdout_of(
        &Command::new(&node)
            .arg(sdk.join("node_modules/typescript/bin/tsc"))
            .args(["-p", "."])
            .current_dir(&sdk)
            .output()
            .unwrap(),
        "tsc",
    );
    // The example as a user has it: its package.json's `file:` dependency
    // installed by npm (a link to the SDK), offline.
    let project = tempfile::tempdir().unwrap();
    for file in ["package.json", "reviewer.ts"] {
        let text = std::fs::read_to_string(repo_root().join("examples/typescript").join(file)).unwrap();
        let text = text.replace("file:../../clients/typescript", &format!("file:{}", sdk.display()));
        std::fs::write(project.path().join(file), text).unwrap();
    }
    stdout_of(
        &Command::new(&node)
            .arg(repo_root().join(".venv/node/bin/npm-cli.js"))
            .args(["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"])
            .current_dir(project.path())
            .output()
            .unwrap(),
        "npm install in the example",
    );
    // It type-checks against the SDK's types (Node runs it with the types stripped).
    stdout_of(
        &Command::new(&node)
            .arg(sdk.join("node_modules/typescript/bin/tsc"))
            .args(["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--types", "node"])
            .arg("--typeRoots")
            .arg(sdk.join("node_modules/@types"))
            .arg("reviewer.ts")
            .current_dir(project.path())
            .output()
            .unwrap(),
        "tsc on the example",
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mneme = MnemeServer::start_with(work.path(), Some(&nats.url()), "");
    let published = stdout_of(&python_example("orchestrator.py", &nats), "orchestrator.py");
    let handoff_id = published.lines().last().and_then(|line| line.strip_prefix("handoff ")).unwrap().to_string();

    let reviewed = stdout_of(
        &Command::new(&node)
            .args(["reviewer.ts", "--url", &mneme.url, "--swarm", "demo", "--wait", "30"])
            .current_dir(project.path())
            .output()
            .unwrap(),
        "reviewer.ts",
    );
    assert!(reviewed.contains(&format!("handoff {handoff_id} from coder: task-rate-limit")), "{reviewed}");
    assert!(reviewed.contains("constraints: keep the limit configurable"), "{reviewed}");
    assert!(reviewed.contains("pending handoffs left: 0"), "{reviewed}");

    let answer: HandoffsAnswer = mneme.get_typed("/v1/swarms/demo/agents/reviewer/handoffs");
    let handoff = answer.handoffs.iter().find(|handoff| handoff.handoff_id == handoff_id).expect("the handoff");
    assert_eq!(handoff.status, "acknowledged", "{handoff:?}");
    // The reviewer's note is in its memory.
    let notes = mneme.get("/v1/swarms/demo/agents/reviewer/search?q=review+of+task-rate-limit&k=3");
    assert!(notes.to_string().contains("review of task-rate-limit"), "{notes}");
}
