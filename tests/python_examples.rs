//! `examples/python/`: an orchestrator publishes a swarm's work straight to
//! JetStream and a reviewer receives its handoff, asks for context and
//! acknowledges it, with nats-py and the Python SDK (`clients/python`, from
//! the checkout), against a real nats-server and `mneme serve`. The Python
//! comes from `<repo>/.venv/sdk` (`scripts/install-python-clients.sh`);
//! without it the test fails, it never skips.

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

fn example(script: &str, nats: &NatsServer) -> Output {
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

    let published = stdout_of(&example("orchestrator.py", &nats), "orchestrator.py");
    let handoff_id = published.lines().last().and_then(|line| line.strip_prefix("handoff ")).unwrap().to_string();
    assert_eq!(published.lines().filter(|line| line.starts_with("seq ")).count(), 7, "{published}");

    let reviewed = stdout_of(&example("reviewer.py", &nats), "reviewer.py");
    assert!(reviewed.contains(&format!("handoff {handoff_id} from coder: task-rate-limit")), "{reviewed}");
    assert!(reviewed.contains("constraints: keep the limit configurable"), "{reviewed}");
    assert!(reviewed.contains("pending handoffs left: 0"), "{reviewed}");

    // Over HTTP too: the handoff is acknowledged, with the reviewer's note.
    let answer: HandoffsAnswer = mneme.get_typed("/v1/swarms/demo/agents/reviewer/handoffs");
    let handoff = answer.handoffs.iter().find(|handoff| handoff.handoff_id == handoff_id).expect("the handoff");
    assert_eq!(handoff.status, "acknowledged", "{handoff:?}");
}
