//! The TypeScript SDK (`clients/typescript`, the package `mneme-client`) as
//! its users get it: checked formatted by prettier, compiled by tsc (pinned in its package-lock.json, which
//! `scripts/install-typescript-sdk.sh` installs with `npm ci`) and its own
//! tests (`clients/typescript/test`, `node --test`) run on Node 24 against a
//! real `mneme serve`: every operation of the API, each JSON answer checked
//! against the OpenAPI document, errors mapped, retries, read-your-writes,
//! both follow streams, and the README's and the book's quick starts run as
//! written. A second test checks that `src/schema.ts` is what the pinned
//! openapi-typescript makes of `schemas/openapi.json`. Without Node or the
//! packages both fail: they never skip.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{MnemeServer, run};

const SDK: &str = "clients/typescript";
const INSTALL_SCRIPT: &str = "scripts/install-typescript-sdk.sh";

fn sdk_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(SDK)
}

/// Node (the one scripts/install-node.sh installs), checked to run, and a
/// package's entry point under the SDK's node_modules, checked to exist.
fn node() -> PathBuf {
    let node = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/node/bin/node");
    match Command::new(&node).arg("--version").output() {
        Ok(output) if output.status.success() => node,
        _ => panic!("{} cannot be run: run {INSTALL_SCRIPT}", node.display()),
    }
}

fn package_bin(relative: &str) -> PathBuf {
    let path = sdk_dir().join("node_modules").join(relative);
    assert!(path.is_file(), "{} is missing: run {INSTALL_SCRIPT}", path.display());
    path
}

#[test]
fn the_typescript_sdk_built_by_tsc_passes_its_tests_against_a_real_server() {
    let node = node();
    // Formatted as `npm run format` leaves it (prettier, pinned).
    run(
        Command::new(&node).arg(package_bin("prettier/bin/prettier.cjs")).args(["--check", "."]).current_dir(sdk_dir()),
        "prettier --check (run `npm run format` in clients/typescript)",
    );
    let tsc = package_bin("typescript/bin/tsc");
    // A clean build: nothing left from an older tree is tested.
    let dist = sdk_dir().join("dist");
    if dist.exists() {
        std::fs::remove_dir_all(&dist).unwrap();
    }
    run(Command::new(&node).arg(&tsc).args(["-p", "."]).current_dir(sdk_dir()), "tsc");

    let work = tempfile::tempdir().unwrap();
    let server = MnemeServer::start(work.path(), None);
    let output = run(
        Command::new(&node)
            .args(["--test", "--test-reporter=spec", "--test-timeout=180000", "dist/test/*.test.js"])
            .current_dir(sdk_dir())
            .env("MNEME_URL", &server.url)
            .env("MNEME_SWARM", "demo"),
        "the SDK's tests",
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("ℹ pass ") && stdout.contains("ℹ fail 0") && stdout.contains("ℹ skipped 0"),
        "node --test said:\n{stdout}"
    );

    // What `npm pack` would publish: the compiled code, its types, the sources.
    let packed = run(
        Command::new(&node)
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/node/bin/npm-cli.js"))
            .args(["pack", "--dry-run", "--json", "--ignore-scripts"])
            .current_dir(sdk_dir()),
        "npm pack --dry-run",
    );
    let listing: serde_json::Value = serde_json::from_slice(&packed.stdout).expect("npm pack --json answers JSON");
    let files: Vec<&str> =
        listing[0]["files"].as_array().unwrap().iter().map(|file| file["path"].as_str().unwrap()).collect();
    for needed in [
        "package.json",
        "dist/src/index.js",
        "dist/src/index.d.ts",
        "dist/src/schema.d.ts",
        "dist/src/ai.js",
        "src/client.ts",
    ] {
        assert!(files.contains(&needed), "the package holds {needed}: {files:?}");
    }
    assert!(!files.iter().any(|file| file.starts_with("dist/test")), "the package leaves the tests out: {files:?}");
}

#[test]
fn the_typescript_types_are_what_the_openapi_document_generates() {
    let node = node();
    let generator = package_bin("openapi-typescript/bin/cli.js");
    let generated = tempfile::tempdir().unwrap();
    let output = generated.path().join("schema.ts");
    // The package's `generate` script (which scripts/schemas.sh runs), with
    // its output here.
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(sdk_dir().join("package.json")).unwrap()).unwrap();
    let script = manifest["scripts"]["generate"].as_str().expect("package.json has a generate script");
    let mut words = script.split_whitespace();
    assert_eq!(words.next(), Some("openapi-typescript"), "{script}");
    let mut arguments: Vec<String> = words.map(str::to_owned).collect();
    let at = arguments.iter().position(|word| word == "--output").expect("the script names its --output");
    arguments[at + 1] = output.display().to_string();
    run(Command::new(&node).arg(generator).args(&arguments).current_dir(sdk_dir()), "openapi-typescript");
    let checked_in = std::fs::read_to_string(sdk_dir().join("src/schema.ts")).unwrap();
    let fresh = std::fs::read_to_string(&output).unwrap();
    assert!(
        checked_in == fresh,
        "clients/typescript/src/schema.ts differs from what schemas/openapi.json generates: \
         run scripts/schemas.sh and commit the result"
    );
}
