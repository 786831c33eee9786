//! Issue 37: installed Mneme runs from anywhere. `scripts/install.sh
//! --prefix <tmp> --binary <this build>` puts `mneme` and its model in
//! place (fetching and distilling the model when `./models` lacks it);
//! `mneme serve` and `mneme mcp`, started from an unrelated directory with
//! an empty home, find the model beside the binary and answer vector
//! searches with it (the answer names the model); with no model anywhere
//! `mneme serve` refuses to start and says where it looked, unless told to
//! run on hashed n-grams. Then the Debian package: built with cargo-deb
//! (`scripts/install-packaging.sh`, `MNEME_CARGO_DEB`) from this build,
//! installed with `dpkg -i`, its systemd unit's command run as the unit
//! says (as the user `mneme`, in `/var/lib/mneme`) and answering with the
//! packaged model, then purged. Both installs ship the deep tier's 8-bit
//! model and its ONNX Runtime, and the installed servers record a deep
//! vector with it.
//!
//! The package test installs into the system, so it needs root; under CI a
//! missing cargo-deb or root is a failure.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{MNEME, example_path, free_port, wait_until};
use serde_json::{Value, json};

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn succeeded(what: &str, output: Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "{what} failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// A command with an environment of its own: `home` as HOME, none of
/// Mneme's variables, no XDG overrides, started in `directory`.
fn isolated(program: &Path, home: &Path, directory: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(directory).env("HOME", home);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("MNEME_") || name.starts_with("XDG_") {
            command.env_remove(&name);
        }
    }
    command
}

/// Waits until `url/healthz` answers, or the child exits.
fn wait_healthy(url: &str, child: &mut Child) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(response) = ureq::get(&format!("{url}/healthz")).call() {
            return response.into_json().unwrap();
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!("mneme exited ({status}) before answering at {url}");
        }
        assert!(Instant::now() < deadline, "no answer at {url} within a minute");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Publishes the example and runs a vector search for coder; its answer.
fn publish_and_search(mneme: &Path, url: &str) -> Value {
    let publish =
        Command::new(mneme).args(["publish", example_path().to_str().unwrap(), "--server", url]).output().unwrap();
    let published = succeeded("mneme publish", publish);
    let last_seq = published.rsplit("last seq ").next().unwrap().trim().to_string();
    let search = Command::new(mneme)
        .args(["--json", "search", "--server", url, "--agent", "coder", "--mode", "vector", "--min-seq", &last_seq])
        .arg("the login token expired")
        .output()
        .unwrap();
    serde_json::from_str(&succeeded("mneme search", search)).unwrap()
}

fn assert_model_backed(search: &Value) {
    let model = search["vector_model"].as_str().unwrap_or_default();
    assert!(model.starts_with("static-minilm-l6-256@sha256:"), "the search ran on no model: {search}");
    assert!(!search["hits"].as_array().unwrap().is_empty(), "{search}");
}

/// The deep tier's files, under a models directory.
const DEEP_MODEL_FILES: [&str; 3] = [
    "all-MiniLM-L6-v2-int8/model.onnx",
    "all-MiniLM-L6-v2-int8/tokenizer.json",
    "all-MiniLM-L6-v2-int8/libonnxruntime.so",
];

/// The installed server runs the deep tier on the 8-bit model it shipped
/// with, and records the published item's vector.
fn assert_deep_tier(url: &str) {
    wait_until("the enricher records the deep vector", Duration::from_secs(60), || {
        let health: Value = ureq::get(&format!("{url}/healthz")).call().unwrap().into_json().unwrap();
        let enrichment = &health["swarms"][0]["enrichment"];
        enrichment["model"].as_str().is_some_and(|model| model.starts_with("all-minilm-l6-v2-int8@"))
            && enrichment["recorded"].as_u64().is_some_and(|recorded| recorded > 0)
            && enrichment["backlog"] == 0
    });
}

fn stop(mut child: Child) {
    // SIGTERM: the server writes its snapshots and exits.
    let _ = Command::new("kill").arg(child.id().to_string()).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "mneme did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `mneme mcp` over its pipes: initialize, then one memory_search; the
/// search's structured answer.
fn mcp_search(mut command: Command) -> Value {
    let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).unwrap();
        stdin.flush().unwrap();
        loop {
            let mut line = String::new();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "mneme mcp closed stdout before answering {method}");
            let answer: Value = serde_json::from_str(&line).unwrap();
            if answer["id"] == json!(id) {
                return answer;
            }
        }
    };
    let initialize = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "install-test", "version": "1"}});
    let initialized = call(1, "initialize", initialize);
    assert!(initialized["result"]["serverInfo"].is_object(), "{initialized}");
    let search = json!({"name": "memory_search", "arguments": {"query": "the login token expired", "mode": "vector"}});
    let answer = call(2, "tools/call", search);
    assert_eq!(answer["result"]["isError"], json!(false), "{answer}");
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "mneme mcp did not end when its stdin closed");
        std::thread::sleep(Duration::from_millis(50));
    }
    answer["result"]["structuredContent"].clone()
}

#[test]
fn install_sh_puts_mneme_and_its_model_where_it_runs_from_any_directory() {
    let work = tempfile::tempdir().unwrap();
    let prefix = work.path().join("prefix");
    let home = work.path().join("home");
    let elsewhere = work.path().join("elsewhere");
    for directory in [&home, &elsewhere] {
        std::fs::create_dir_all(directory).unwrap();
    }
    let install = Command::new(repo_root().join("scripts/install.sh"))
        .args(["--prefix", prefix.to_str().unwrap(), "--binary", MNEME])
        .env("HOME", &home)
        .env_remove("MNEME_HOME")
        .output()
        .unwrap();
    succeeded("scripts/install.sh", install);
    let installed = prefix.join("bin/mneme");
    for file in ["static-minilm-l6-256/embeddings.safetensors", "static-minilm-l6-256/tokenizer.json"]
        .into_iter()
        .chain(DEEP_MODEL_FILES)
    {
        let path = prefix.join("share/mneme/models").join(file);
        assert!(path.is_file(), "install.sh left no {}", path.display());
    }

    // `mneme serve` from an unrelated directory, an empty home, no flags:
    // the built-in configuration, data in the per-user directory, the
    // model found beside the binary.
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = isolated(&installed, &home, &elsewhere)
        .args(["serve", "--http", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let health = wait_healthy(&url, &mut server);
    assert!(health["swarms"][0]["embedder"].as_str().unwrap().starts_with("static-minilm-l6-256@"), "{health}");
    assert_model_backed(&publish_and_search(&installed, &url));
    assert_deep_tier(&url);

    // `mneme mcp` honours MNEME_SERVER: it relays to the server.
    let mut bridge = isolated(&installed, &home, &elsewhere);
    bridge.args(["mcp", "--agent", "coder"]).env("MNEME_SERVER", &url);
    assert_model_backed(&mcp_search(bridge));
    stop(server);
    let data = home.join(".local/share/mneme/data");
    assert!(data.join("log").exists(), "serve kept no data in {}", data.display());
    assert!(!elsewhere.join(".data").exists(), "serve wrote into the directory it started in");

    // `mneme mcp` without a server runs the service itself, on the same
    // per-user data, with the same model.
    let mut embedded = isolated(&installed, &home, &elsewhere);
    embedded.args(["mcp", "--agent", "coder"]);
    assert_model_backed(&mcp_search(embedded));

    // No model anywhere: a refusal naming where it looked, unless hashed
    // vectors are asked for.
    let bare = work.path().join("bare/bin");
    std::fs::create_dir_all(&bare).unwrap();
    std::fs::copy(&installed, bare.join("mneme")).unwrap();
    let empty_home = work.path().join("empty-home");
    std::fs::create_dir_all(&empty_home).unwrap();
    let refused = isolated(&bare.join("mneme"), &empty_home, &elsewhere)
        .args(["serve", "--http", &format!("127.0.0.1:{}", free_port())])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(!refused.status.success(), "serve started without a model: {stderr}");
    assert!(stderr.contains("no embedding model"), "{stderr}");
    assert!(stderr.contains("--allow-hashed-vectors"), "{stderr}");
    for place in [
        empty_home.join(".local/share/mneme/models/static-minilm-l6-256"),
        work.path().join("bare/share/mneme/models/static-minilm-l6-256"),
    ] {
        assert!(stderr.contains(place.to_str().unwrap()), "{} not named: {stderr}", place.display());
    }
    let port = free_port();
    let mut hashed = isolated(&bare.join("mneme"), &empty_home, &elsewhere)
        .args(["serve", "--allow-hashed-vectors", "--http", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let health = wait_healthy(&format!("http://127.0.0.1:{port}"), &mut hashed);
    assert!(health["swarms"][0]["embedder"].as_str().unwrap().starts_with("hashed"), "{health}");
    stop(hashed);
}

fn cargo_deb() -> Option<PathBuf> {
    let path = std::env::var_os("MNEME_CARGO_DEB").map(PathBuf::from);
    match path {
        Some(path) if path.exists() => Some(path),
        _ if std::env::var_os("CI").is_some() => {
            panic!("no cargo-deb (MNEME_CARGO_DEB): run scripts/install-packaging.sh, as scripts/test.sh does")
        }
        _ => {
            eprintln!("skipped: no cargo-deb (MNEME_CARGO_DEB); scripts/install-packaging.sh installs it");
            None
        }
    }
}

#[test]
fn the_debian_package_installs_a_service_that_runs_with_its_model() {
    let Some(cargo_deb) = cargo_deb() else { return };
    let is_root = Command::new("id").arg("-u").output().map(|output| output.stdout.starts_with(b"0\n")).unwrap();
    if !is_root {
        assert!(std::env::var_os("CI").is_none(), "the package test installs into the system: it needs root");
        eprintln!("skipped: dpkg -i needs root");
        return;
    }
    // The package's models come from ./models.
    common::ensure_static_model();
    for file in DEEP_MODEL_FILES {
        let path = repo_root().join("models").join(file);
        assert!(path.is_file(), "no {}: run scripts/fetch-deep-model.sh, as scripts/test.sh does", path.display());
    }
    let work = tempfile::tempdir().unwrap();
    // This test build's binary (the dev profile: cargo-deb warns that
    // packages are meant for release builds, which CI does not build).
    let build = Command::new(&cargo_deb)
        .args(["--no-build", "--profile", "dev", "--fast", "--output"])
        .arg(work.path())
        .current_dir(repo_root())
        .output()
        .unwrap();
    let built = succeeded("cargo deb", build);
    let package = built.lines().rev().find(|line| line.ends_with(".deb")).expect("cargo deb names its package").trim();
    let _purge = Purge;
    succeeded("dpkg -i", Command::new("dpkg").args(["-i", package]).output().unwrap());
    assert!(Command::new("id").arg("mneme").output().unwrap().status.success(), "no user mneme");

    // The unit's command, as the unit runs it.
    let unit = std::fs::read_to_string("/lib/systemd/system/mneme.service")
        .or_else(|_| std::fs::read_to_string("/usr/lib/systemd/system/mneme.service"))
        .expect("the package installs mneme.service");
    let setting = |key: &str| {
        let prefix = format!("{key}=");
        unit.lines().find_map(|line| line.strip_prefix(&prefix)).unwrap_or_else(|| panic!("no {key} in {unit}"))
    };
    assert_eq!(setting("User"), "mneme");
    let (variable, value) = setting("Environment").split_once('=').unwrap();
    let exec: Vec<&str> = setting("ExecStart").split_whitespace().collect();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let mut service = Command::new("runuser")
        .args(["-u", "mneme", "--", "env", "-C", setting("WorkingDirectory")])
        .args(&exec)
        .env(variable, value)
        .env("MNEME_HTTP", format!("127.0.0.1:{port}"))
        .env_remove("MNEME_DATA_DIR")
        .env_remove("MNEME_CONFIG")
        .current_dir("/")
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let health = wait_healthy(&url, &mut service);
    assert!(health["swarms"][0]["embedder"].as_str().unwrap().starts_with("static-minilm-l6-256@"), "{health}");
    assert_model_backed(&publish_and_search(Path::new("/usr/bin/mneme"), &url));
    assert_deep_tier(&url);
    // runuser passes SIGTERM on to mneme.
    stop(service);
    assert!(Path::new("/var/lib/mneme/data/log").exists(), "the service kept no data in /var/lib/mneme");
}

/// Removes the package, its data and its configuration when the test ends,
/// however it ends.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        let _ = Command::new("dpkg").args(["--purge", "mneme"]).output();
    }
}
