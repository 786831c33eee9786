//! Issue 37: LangChain's MCP adapters (langchain-mcp-adapters 0.3.2, in
//! `.venv/langchain` from `scripts/install-python-clients.sh`) load
//! Mneme's tools over streamable HTTP and over `mneme mcp` on stdio, as a
//! LangChain or LangGraph agent would: what the model is handed is text it
//! reads (the hits, the context within its budget), and a refused call is a
//! tool error that `handle_tool_error` gives back to the model, naming the
//! field, instead of ending the agent's run. `tests/python/langchain_client.py`
//! does the calling; without that venv the test fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{MnemeServer, example_path, last_seq_of_publish, stdout_of};

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn langchain_python() -> PathBuf {
    let python = repo_root().join(".venv/langchain/bin/python");
    assert!(python.exists(), "no {}: run scripts/install-python-clients.sh", python.display());
    python
}

#[test]
fn langchain_agents_read_text_and_get_refusals_back_as_tool_errors() {
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let published = server.cli(&["publish", example_path().to_str().unwrap()]);
    let last_seq = last_seq_of_publish(&stdout_of(&published));
    // The coder's memory has applied the example before the agent asks.
    server.get(&format!("/v1/swarms/demo/agents/coder/digest?min_seq={last_seq}"));
    let python = langchain_python();
    let output = Command::new(&python)
        .arg(repo_root().join("tests/python/langchain_client.py"))
        .args(["--mneme", common::MNEME, "--server", &server.url])
        .output()
        .unwrap_or_else(|error| panic!("{} cannot run ({error})", python.display()));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "langchain_client.py failed with {}\n--- stdout ---\n{stdout}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    for transport in ["http", "stdio"] {
        for check in ["tools loaded", "memory_search gives", "memory_context gives", "refused as a tool error"] {
            assert!(
                stdout.lines().any(|line| line.starts_with(&format!("{transport}: ")) && line.contains(check)),
                "{stdout}"
            );
        }
    }
}
