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

use std::path::Path;
use std::process::Command;

use common::{MnemeServer, run};
use mneme_api::handoffs::HandoffsAnswer;
use mneme_nats::server::NatsServer;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What `command` printed, after it succeeded.
fn stdout(command: &mut Command, what: &str) -> String {
    String::from_utf8_lossy(&run(command, what).stdout).into_owned()
}

/// Runs a script of examples/python with the SDK as this checkout has it.
fn python_example(script: &str, nats: &NatsServer) -> String {
    let python = repo_root().join(".venv/sdk/bin/python");
    assert!(python.is_file(), "{} is missing: run scripts/install-python-clients.sh", python.display());
    stdout(
        Command::new(&python)
            .arg(repo_root().join("examples/python").join(script))
            .args(["--nats", &nats.url(), "--swarm", "demo"])
            .env("PYTHONPATH", repo_root().join("clients/python/src")),
        script,
    )
}

/// A nats-server, a `mneme serve` on it, and the orchestrator's work
/// published: the handoff to `reviewer` is the last line it prints.
struct Published {
    // Dropped in this order: the server, then the log, then its files.
    mneme: MnemeServer,
    nats: NatsServer,
    _work: tempfile::TempDir,
    handoff_id: String,
}

fn publish_the_orchestrators_work() -> Published {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let mneme = MnemeServer::start_with(work.path(), Some(&nats.url()), "");
    let published = python_example("orchestrator.py", &nats);
    assert_eq!(published.lines().filter(|line| line.starts_with("seq ")).count(), 7, "{published}");
    let handoff_id = published.lines().last().and_then(|line| line.strip_prefix("handoff ")).unwrap().to_string();
    Published { mneme, nats, _work: work, handoff_id }
}

/// What either reviewer prints and leaves: the package, no handoff left
/// pending, and the handoff acknowledged over HTTP.
fn assert_reviewed(published: &Published, reviewed: &str) {
    let handoff_id = &published.handoff_id;
    assert!(reviewed.contains(&format!("handoff {handoff_id} from coder: task-rate-limit")), "{reviewed}");
    assert!(reviewed.contains("constraints: keep the limit configurable"), "{reviewed}");
    assert!(reviewed.contains("pending handoffs left: 0"), "{reviewed}");
    let answer: HandoffsAnswer = published.mneme.get_typed("/v1/swarms/demo/agents/reviewer/handoffs");
    let handoff = answer.handoffs.iter().find(|handoff| &handoff.handoff_id == handoff_id).expect("the handoff");
    assert_eq!(handoff.status, "acknowledged", "{handoff:?}");
}

#[test]
fn the_python_examples_publish_to_jetstream_and_the_reviewer_receives_reads_and_acknowledges_its_handoff() {
    let published = publish_the_orchestrators_work();
    let reviewed = python_example("reviewer.py", &published.nats);
    assert_reviewed(&published, &reviewed);
}

#[test]
fn the_typescript_reviewer_receives_the_python_orchestrators_handoff_over_http() {
    let node = repo_root().join(".venv/node/bin/node");
    let sdk = repo_root().join("clients/typescript");
    let tsc = sdk.join("node_modules/typescript/bin/tsc");
    assert!(
        node.is_file() && tsc.is_file(),
        "{} or {} is missing: run scripts/install-typescript-sdk.sh",
        node.display(),
        tsc.display()
    );
    // The SDK built as `npm run build` builds it.
    run(Command::new(&node).arg(&tsc).args(["-p", "."]).current_dir(&sdk), "tsc");
    // The example as a user has it: its package.json's `file:` dependency
    // installed by npm (a link to the SDK), offline.
    let project = tempfile::tempdir().unwrap();
    for file in ["package.json", "reviewer.ts"] {
        let text = std::fs::read_to_string(repo_root().join("examples/typescript").join(file)).unwrap();
        let text = text.replace("file:../../clients/typescript", &format!("file:{}", sdk.display()));
        std::fs::write(project.path().join(file), text).unwrap();
    }
    run(
        Command::new(&node)
            .arg(repo_root().join(".venv/node/bin/npm-cli.js"))
            .args(["install", "--offline", "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"])
            .current_dir(project.path()),
        "npm install in the example",
    );
    // It type-checks against the SDK's types (Node runs it with the types stripped).
    run(
        Command::new(&node)
            .arg(&tsc)
            .args(["--noEmit", "--strict", "--target", "es2022", "--module", "nodenext", "--types", "node"])
            .arg("--typeRoots")
            .arg(sdk.join("node_modules/@types"))
            .arg("reviewer.ts")
            .current_dir(project.path()),
        "tsc on the example",
    );

    let published = publish_the_orchestrators_work();
    let reviewed = stdout(
        Command::new(&node)
            .args(["reviewer.ts", "--url", &published.mneme.url, "--swarm", "demo", "--wait", "30"])
            .current_dir(project.path()),
        "reviewer.ts",
    );
    assert_reviewed(&published, &reviewed);
    // The reviewer's note is in its memory.
    let notes = published.mneme.get("/v1/swarms/demo/agents/reviewer/search?q=review+of+task-rate-limit&k=3");
    assert!(notes.to_string().contains("review of task-rate-limit"), "{notes}");
}
