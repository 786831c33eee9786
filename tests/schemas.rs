//! The schemas are generated from the types, and checked by validators that
//! are not Mneme's:
//! - `schemas/` holds exactly what `mneme schema events|api|openapi` prints
//!   (regenerate with `scripts/schemas.sh` after changing a wire type);
//! - a running `mneme serve` serves that OpenAPI document at
//!   `GET /v1/openapi.json`, without a token even where tokens are set;
//! - `tests/python/validate_schemas.py` (openapi-spec-validator and
//!   jsonschema from `scripts/install-python-clients.sh`) validates it as
//!   OpenAPI 3.1, the two schemas as JSON Schema 2020-12, and the JSON
//!   examples of the README and of the book (`docs/src`, every chapter) and
//!   `examples/trajectory.jsonl` against them. Without that Python the test
//!   fails; it never skips;
//! - the SDKs' versions (the Python package's, the npm package's) are the
//!   API's, which `scripts/set-version.sh` sets together.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{MNEME, MnemeServer};
use serde_json::Value;

const PYTHON_ENV: &str = "MNEME_PYTHON";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Python with jsonschema and the rest (scripts/install-python-clients.sh).
fn python() -> PathBuf {
    std::env::var_os(PYTHON_ENV).map(PathBuf::from).unwrap_or_else(|| repo_root().join(".venv/bin/python"))
}

/// `mneme schema <which>`'s output.
fn generated(which: &str) -> String {
    let output = Command::new(MNEME).args(["schema", which]).output().unwrap();
    assert!(output.status.success(), "mneme schema {which}: {}", String::from_utf8_lossy(&output.stderr));
    common::stdout_of(&output)
}

#[test]
fn the_checked_in_schemas_are_what_the_types_generate() {
    let files = [
        ("events", "events.schema.json"),
        ("api", "api.schema.json"),
        ("openapi", "openapi.json"),
        ("config", "swarm.schema.json"),
    ];
    for (which, file) in files {
        let path = repo_root().join("schemas").join(file);
        let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            checked_in == generated(which),
            "{} differs from `mneme schema {which}`: run scripts/schemas.sh and commit the result",
            path.display()
        );
    }
}

/// The book's configuration reference is generated from the configuration's
/// types, like the schemas.
#[test]
fn the_configuration_reference_is_what_the_types_generate() {
    let path = repo_root().join("docs/src/configuration.md");
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == generated("config-reference"),
        "{} differs from `mneme schema config-reference`: run scripts/schemas.sh and commit the result",
        path.display()
    );
}

#[test]
fn the_served_openapi_document_validates_as_openapi_3_1_and_the_examples_as_events() {
    let work = tempfile::tempdir().unwrap();
    let tokens = common::reviewer_and_tokens(&[("operator", "operator-secret-0123", None)]);
    let server = MnemeServer::start_with(work.path(), None, &tokens);
    // Open without a token, like /healthz: the contract is not a secret.
    let (status, served) = server.get_as(None, "/v1/openapi.json");
    assert_eq!(status, 200, "{served}");
    let generated: Value = serde_json::from_str(&generated("openapi")).unwrap();
    assert_eq!(served, generated, "the server serves what `mneme schema openapi` prints");
    let openapi = work.path().join("openapi.json");
    std::fs::write(&openapi, serde_json::to_vec(&served).unwrap()).unwrap();

    let python = python();
    let output = Command::new(&python)
        .arg(repo_root().join("tests/python/validate_schemas.py"))
        .arg(&openapi)
        .arg(repo_root().join("schemas/events.schema.json"))
        .arg(repo_root().join("schemas/api.schema.json"))
        .arg(repo_root().join("examples/trajectory.jsonl"))
        .arg(repo_root().join("README.md"))
        .arg(repo_root().join("docs/src"))
        .output()
        .unwrap_or_else(|error| {
            panic!(
                "{} cannot be run ({error}): run scripts/install-python-clients.sh (scripts/test.sh runs it), \
                 or set {PYTHON_ENV}",
                python.display()
            )
        });
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "validation failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("valid OpenAPI 3.1") && stdout.contains("trajectory: 572 events valid"), "{stdout}");
    // The event reference and the NATS chapter hold examples of their own:
    // a change that stopped reading the book would show here.
    for chapter in ["events.md", "nats.md"] {
        assert!(stdout.lines().any(|line| line.contains(chapter) && line.contains(" valid")), "{chapter}: {stdout}");
    }
}

/// `schemas/swarm.schema.json` is what an editor checks a swarm file with:
/// the repository's example and the Debian package's configuration satisfy
/// it, and a misspelt key does not.
#[test]
fn the_swarm_files_satisfy_the_configuration_schema_and_a_misspelt_key_does_not() {
    let schema = repo_root().join("schemas/swarm.schema.json");
    let run = |files: &[&Path]| {
        Command::new(python())
            .arg(repo_root().join("tests/python/validate_config.py"))
            .arg(&schema)
            .args(files)
            .output()
            .unwrap_or_else(|error| panic!("validate_config.py cannot be run ({error}): set {PYTHON_ENV}"))
    };
    let shipped = run(&[&repo_root().join("swarm.toml"), &repo_root().join("debian/swarm.toml")]);
    assert!(shipped.status.success(), "{}", String::from_utf8_lossy(&shipped.stdout));
    let work = tempfile::tempdir().unwrap();
    let misspelt = work.path().join("swarm.toml");
    std::fs::write(&misspelt, "[swarm]\nname = \"demo\"\n\n[log]\nbakend = \"nats\"\n").unwrap();
    let refused = run(&[&misspelt]);
    let stdout = String::from_utf8_lossy(&refused.stdout);
    assert!(!refused.status.success() && stdout.contains("'bakend' was unexpected"), "{stdout}");
}

#[test]
fn the_sdks_versions_are_the_apis() {
    // scripts/set-version.sh writes them all.
    let api = env!("CARGO_PKG_VERSION");
    let document: Value = serde_json::from_str(&read(&repo_root().join("schemas/openapi.json"))).unwrap();
    assert_eq!(document["info"]["version"], api, "schemas/openapi.json");

    let init = read(&repo_root().join("clients/python/src/mneme_client/__init__.py"));
    let python =
        init.lines().find_map(|line| line.strip_prefix("__version__ = ")).expect("__init__.py sets __version__");
    assert_eq!(python.trim_matches('"'), api, "the Python SDK's __version__");

    let sdk = repo_root().join("clients/typescript");
    let package: Value = serde_json::from_str(&read(&sdk.join("package.json"))).unwrap();
    let lock: Value = serde_json::from_str(&read(&sdk.join("package-lock.json"))).unwrap();
    assert_eq!(package["version"], api, "clients/typescript/package.json");
    assert_eq!(lock["version"], api, "clients/typescript/package-lock.json");
    assert_eq!(lock["packages"][""]["version"], api, "clients/typescript/package-lock.json");
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}
