//! The Python SDK (`clients/python`, the package `mneme-client`) as its
//! users get it: its types checked by `mypy --strict`, built as a wheel,
//! installed into `.venv/sdk` (which `scripts/install-python-clients.sh`
//! fills with its pinned dependencies), and its own tests
//! (`clients/python/tests`, pytest) run against a real `mneme serve` on a
//! real nats-server: every operation of the API through the sync and the
//! async client, the handoff follow stream, errors mapped, the JetStream
//! publisher, and the LangChain recorder driven by fake chat models through
//! a tool-calling loop and a LangGraph graph. A second test checks that
//! `models.py` is what the pinned generator makes of
//! `schemas/api.schema.json`. Without the venv both fail: they never skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{MnemeServer, run};
use mneme_nats::server::NatsServer;

const SDK: &str = "clients/python";
const INSTALL_SCRIPT: &str = "scripts/install-python-clients.sh";
/// What the SDK, its extras and its tests import.
const PROBE: &str =
    "import httpx, pydantic, nats, langchain_core, langgraph, pytest, hatchling, datamodel_code_generator, mypy";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The SDK's venv, or a panic that says how to get it.
fn sdk_python() -> PathBuf {
    let python = repo_root().join(".venv/sdk/bin/python");
    let probe = Command::new(&python).args(["-c", PROBE]).output();
    match probe {
        Ok(output) if output.status.success() => python,
        Ok(output) => panic!(
            "{} cannot import the SDK's dependencies ({}): run {INSTALL_SCRIPT}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).lines().last().unwrap_or("no error output")
        ),
        Err(error) => panic!("{} cannot be run ({error}): run {INSTALL_SCRIPT}", python.display()),
    }
}

#[test]
fn the_python_sdk_built_as_a_wheel_passes_its_tests_against_a_real_server() {
    let python = sdk_python();
    // Its types first: `mypy --strict`, as pyproject.toml configures it.
    let cache = tempfile::tempdir().unwrap();
    run(
        Command::new(&python).args(["-m", "mypy", "--cache-dir"]).arg(cache.path()).current_dir(repo_root().join(SDK)),
        "mypy on the SDK",
    );
    let wheels = tempfile::tempdir().unwrap();
    run(
        Command::new(&python)
            .args(["-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir"])
            .arg(wheels.path())
            .arg(repo_root().join(SDK)),
        "building the wheel",
    );
    let wheel = std::fs::read_dir(wheels.path())
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .find(|path| path.extension().is_some_and(|extension| extension == "whl"))
        .expect("pip wrote a wheel");
    run(
        Command::new(&python).args(["-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall"]).arg(&wheel),
        "installing the wheel",
    );

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let nats = runtime.block_on(NatsServer::require());
    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), Some(&nats.url()));
    // The tests import the installed wheel: pytest runs from the SDK's
    // folder, whose `src/` is not on the path.
    let output = run(
        Command::new(&python)
            .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
            .current_dir(repo_root().join(SDK))
            .env("MNEME_URL", &server.url)
            .env("MNEME_NATS_URL", nats.url())
            .env("MNEME_SWARM", "demo"),
        "the SDK's tests",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains(" passed") && !stdout.contains("skipped"), "pytest said:\n{stdout}");
    let imported = run(
        Command::new(&python)
            .args(["-c", "import mneme_client; print(mneme_client.__file__)"])
            .current_dir(work.path()),
        "importing the installed SDK",
    );
    assert!(String::from_utf8_lossy(&imported.stdout).contains("site-packages"), "the tests ran on the wheel");
}

#[test]
fn the_python_models_are_what_the_schemas_generate() {
    let python = sdk_python();
    let generated = tempfile::tempdir().unwrap();
    let output = generated.path().join("models.py");
    run(
        Command::new(&python)
            .args([
                "-W",
                "ignore",
                "-m",
                "datamodel_code_generator",
                "--input",
                "../../schemas/api.schema.json",
                "--output",
            ])
            .arg(&output)
            .current_dir(repo_root().join(SDK)),
        "datamodel-codegen",
    );
    let checked_in = std::fs::read_to_string(repo_root().join(SDK).join("src/mneme_client/models.py")).unwrap();
    let fresh = std::fs::read_to_string(&output).unwrap();
    assert!(
        checked_in == fresh,
        "clients/python/src/mneme_client/models.py differs from what schemas/api.schema.json generates: \
         run scripts/schemas.sh and commit the result"
    );
}
