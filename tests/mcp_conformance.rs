//! The official MCP conformance suite, `@modelcontextprotocol/conformance`
//! (pinned in tests/mcp_conformance/package.json), against each of Mneme's
//! MCP servers: `/mcp` on `mneme serve` (streamable HTTP), and `mneme mcp`
//! over stdio, both with `--server` and in-process with `--data-dir`. The
//! suite speaks HTTP only, so the stdio servers are bridged to streamable
//! HTTP by supergateway (pinned there too), one `mneme mcp` per session, as
//! a host launches one.
//!
//! Every scenario of the suite's active set runs. Those that apply to what
//! Mneme advertises (tools, and one resource) must pass; the others are in
//! the suite's baseline files, tests/mcp_conformance/baseline-*.yml, each
//! with its reason, and must fail for that reason. The suite's own exit
//! status must be 0: it fails on an unexpected failure, and on a baselined
//! scenario that passes.
//!
//! Node.js (22 or later) and the npm packages come from
//! scripts/install-mcp-conformance.sh (scripts/test.sh runs it), installed
//! into `<repo>/.venv/mcp-conformance`; `MNEME_MCP_CONFORMANCE` names
//! another install. Without them the test fails, in CI and locally alike:
//! it never skips.

mod common;

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{MnemeServer, free_port, swarm_config};
use serde_json::Value;

const INSTALL_ENV: &str = "MNEME_MCP_CONFORMANCE";
const INSTALL_SCRIPT: &str = "scripts/install-mcp-conformance.sh";

/// How many scenarios `--suite active` runs in the pinned version (0.1.16).
const ACTIVE_SCENARIOS: usize = 30;

/// The scenarios that apply to `/mcp`, all of which must pass.
const APPLIES_OVER_HTTP: &[&str] =
    &["server-initialize", "ping", "tools-list", "resources-list", "dns-rebinding-protection"];

/// The scenarios that apply to `mneme mcp` behind the bridge. Through the
/// bridge's sessions, server-sse-multiple-streams sends Mneme concurrent
/// requests on one stdio session; the Host header is the bridge's.
const APPLIES_OVER_STDIO: &[&str] =
    &["server-initialize", "ping", "tools-list", "resources-list", "server-sse-multiple-streams"];

/// How long one run of the whole suite may take (it takes seconds).
const SUITE_TIMEOUT: Duration = Duration::from_secs(300);

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn packages_dir() -> PathBuf {
    repo_root().join("tests/mcp_conformance")
}

/// The installed suite: its Node and its `node_modules`.
struct Install {
    node: PathBuf,
    conformance: PathBuf,
    supergateway: PathBuf,
}

/// The installed suite, checked: Node runs and is 22 or later, and the
/// installed packages are the pinned versions. Anything missing or stale is
/// a panic that says how to install it.
fn install() -> Install {
    let dir =
        std::env::var_os(INSTALL_ENV).map(PathBuf::from).unwrap_or_else(|| repo_root().join(".venv/mcp-conformance"));
    let how = format!("run {INSTALL_SCRIPT} (scripts/test.sh runs it), or set {INSTALL_ENV}");
    let in_ci = if std::env::var("CI").is_ok_and(|value| value == "true") { " (in CI)" } else { "" };
    let node = dir.join("bin/node");
    let version = Command::new(&node).args(["-p", "process.versions.node"]).output();
    let version = match &version {
        Ok(output) if output.status.success() => String::from_utf8_lossy(&output.stdout).trim().to_string(),
        Ok(output) => panic!("{} fails{in_ci}: {}; {how}", node.display(), String::from_utf8_lossy(&output.stderr)),
        Err(error) => panic!("{} cannot run ({error}){in_ci}: {how}", node.display()),
    };
    let major: u32 = version.split('.').next().and_then(|major| major.parse().ok()).unwrap_or(0);
    assert!(major >= 22, "{} is Node {version}; the conformance suite needs 22 or later: {how}", node.display());

    let pinned: Value = serde_json::from_str(&std::fs::read_to_string(packages_dir().join("package.json")).unwrap())
        .expect("tests/mcp_conformance/package.json is JSON");
    for (name, pin) in pinned["devDependencies"].as_object().expect("devDependencies") {
        let manifest = dir.join("node_modules").join(name).join("package.json");
        let installed = std::fs::read_to_string(&manifest)
            .map(|text| serde_json::from_str::<Value>(&text).expect("package.json is JSON")["version"].clone())
            .unwrap_or_else(|error| panic!("{} cannot be read ({error}){in_ci}: {how}", manifest.display()));
        assert_eq!(&installed, pin, "{name} installed in {} is not the pinned version: {how}", dir.display());
    }
    Install {
        node,
        conformance: dir.join("node_modules/@modelcontextprotocol/conformance/dist/index.js"),
        supergateway: dir.join("node_modules/supergateway/dist/index.js"),
    }
}

/// A baseline file's entries: (scenario, reason).
fn baseline(path: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    let (_, list) = text.split_once("\nserver:\n").unwrap_or_else(|| panic!("{}: no `server:` list", path.display()));
    list.lines()
        .filter(|line| !line.trim_start().starts_with('#') && !line.trim().is_empty())
        .map(|line| {
            let entry = line.strip_prefix("  - ").unwrap_or_else(|| panic!("{}: not an entry: {line}", path.display()));
            let (name, reason) = entry
                .split_once("  # ")
                .unwrap_or_else(|| panic!("{}: an entry without a reason: {line}", path.display()));
            assert!(!reason.trim().is_empty(), "{}: an entry without a reason: {line}", path.display());
            (name.trim().to_string(), reason.trim().to_string())
        })
        .collect()
}

/// What a baselined scenario's failing and warning checks must show, by the
/// first words of its reason: that it fails because it does not apply, not
/// because Mneme broke.
fn fails_as_its_reason_says(reason: &str, check: &Value) -> bool {
    let status = check["status"].as_str().unwrap_or("");
    let message = check["errorMessage"].as_str().unwrap_or("");
    let id = check["id"].as_str().unwrap_or("");
    match reason.split_once(':').map(|(tag, _)| tag) {
        // JSON-RPC's method not found: a capability Mneme does not advertise.
        Some("not advertised") => status == "FAILURE" && message.contains("MCP error -32601"),
        // MCP's unknown tool (invalid params): the suite's own test tools.
        Some("fixture tool") => status == "FAILURE" && message.contains("MCP error -32602"),
        // MCP's resource not found: the suite's own test resources.
        Some("fixture resource") => status == "FAILURE" && message.contains("MCP error -32002"),
        Some("sessionless") => status == "WARNING" && id == "server-sse-multiple-streams-session",
        Some("bridge") => status == "FAILURE" && id == "localhost-host-rebinding-rejected",
        _ => panic!("a baseline reason must begin with a known tag and a colon: {reason}"),
    }
}

/// One finished run of the suite.
struct SuiteRun {
    status: ExitStatus,
    stdout: String,
    stderr: String,
    results: PathBuf,
}

impl SuiteRun {
    /// The scenarios of the summary, in order.
    fn scenarios(&self) -> Vec<String> {
        let summary = self.stdout.split_once("=== SUMMARY ===").map(|(_, summary)| summary).unwrap_or("");
        summary
            .lines()
            .filter_map(|line| line.strip_prefix("✓ ").or_else(|| line.strip_prefix("✗ ")))
            .map(|line| line.split_once(':').map_or(line, |(name, _)| name).to_string())
            .collect()
    }

    /// A scenario's checks, from its `server-<scenario>-<timestamp>` folder.
    fn checks(&self, scenario: &str) -> Vec<Value> {
        let prefix = format!("server-{scenario}-");
        let folders: Vec<PathBuf> = std::fs::read_dir(&self.results)
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                let name = path.file_name().unwrap().to_string_lossy();
                // The timestamp: 2026-12-06T09-43-00-571Z.
                name.strip_prefix(&prefix)
                    .is_some_and(|rest| rest.len() == 24 && rest.starts_with(|c: char| c.is_ascii_digit()))
            })
            .collect();
        assert_eq!(folders.len(), 1, "{scenario}: results folders {folders:?} in {}", self.results.display());
        let text = std::fs::read_to_string(folders[0].join("checks.json")).unwrap();
        serde_json::from_str::<Vec<Value>>(&text).unwrap_or_else(|error| panic!("{scenario}: {error}: {text}"))
    }

    /// What the suite said after its summary, for failure messages.
    fn summary(&self) -> String {
        let summary = self.stdout.split_once("=== SUMMARY ===").map_or(self.stdout.as_str(), |(_, summary)| summary);
        format!("--- suite stdout (summary) ---\n{summary}\n--- suite stderr ---\n{}", self.stderr)
    }
}

/// Runs the active suite against `url` with `baseline`, results under `work`.
fn run_suite(install: &Install, url: &str, baseline: &Path, work: &Path) -> SuiteRun {
    let results = work.join("results");
    let (stdout_path, stderr_path) = (work.join("suite.out"), work.join("suite.err"));
    let mut child = Command::new(&install.node)
        .arg(&install.conformance)
        .args(["server", "--url", url, "--suite", "active", "--expected-failures"])
        .arg(baseline)
        .arg("--output-dir")
        .arg(&results)
        .stdin(Stdio::null())
        .stdout(File::create(&stdout_path).unwrap())
        .stderr(File::create(&stderr_path).unwrap())
        .spawn()
        .unwrap_or_else(|error| panic!("{} cannot run: {error}", install.node.display()));
    let deadline = Instant::now() + SUITE_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the conformance suite did not finish within {SUITE_TIMEOUT:?}\n{}",
                std::fs::read_to_string(&stdout_path).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    SuiteRun {
        status,
        stdout: std::fs::read_to_string(&stdout_path).unwrap(),
        stderr: std::fs::read_to_string(&stderr_path).unwrap(),
        results,
    }
}

/// Runs the suite against `url` and asserts on everything it reports:
/// exactly the active suite's scenarios ran, each either applies (in
/// `applies`) or is in `baseline_file`; every check of each that applies
/// passed, and the server's own tools and resource were listed; each
/// baselined scenario failed for its reason; and the suite exited 0.
fn assert_conformance(install: &Install, url: &str, baseline_file: &str, applies: &[&str], work: &Path) {
    let baseline_path = packages_dir().join(baseline_file);
    let baseline = baseline(&baseline_path);
    let run = run_suite(install, url, &baseline_path, work);
    let ran = run.scenarios();
    let mut problems = Vec::new();

    let expected: BTreeSet<&str> =
        applies.iter().copied().chain(baseline.iter().map(|(name, _)| name.as_str())).collect();
    assert_eq!(expected.len(), applies.len() + baseline.len(), "a scenario both applies and is in {baseline_file}");
    let ran_set: BTreeSet<&str> = ran.iter().map(String::as_str).collect();
    if ran.len() != ACTIVE_SCENARIOS || ran_set.len() != ran.len() || ran_set != expected {
        problems.push(format!(
            "the suite ran {} scenarios, {ACTIVE_SCENARIOS} expected; not run: {:?}; neither applying nor in {baseline_file}: {:?}",
            ran.len(),
            expected.difference(&ran_set).collect::<Vec<_>>(),
            ran_set.difference(&expected).collect::<Vec<_>>(),
        ));
    }

    for scenario in applies.iter().filter(|scenario| ran_set.contains(*scenario)) {
        let checks = run.checks(scenario);
        let not_passed: Vec<&Value> =
            checks.iter().filter(|check| !matches!(check["status"].as_str(), Some("SUCCESS" | "INFO"))).collect();
        if !checks.iter().any(|check| check["status"] == "SUCCESS") || !not_passed.is_empty() {
            problems.push(format!("{scenario} applies and did not pass: {}", Value::from(checks.clone())));
        }
        let listed = |key: &str| -> Vec<String> {
            checks
                .iter()
                .filter_map(|check| check["details"][key].as_array())
                .flatten()
                .map(ToString::to_string)
                .collect()
        };
        if *scenario == "tools-list" && !listed("tools").contains(&"\"memory_search\"".to_string()) {
            problems.push(format!("tools-list did not list Mneme's memory_search: {:?}", listed("tools")));
        }
        if *scenario == "resources-list" && !listed("resources").contains(&"\"mneme://demo/coder/core\"".to_string()) {
            problems.push(format!("resources-list did not list mneme://demo/coder/core: {:?}", listed("resources")));
        }
    }

    for (scenario, reason) in baseline.iter().filter(|(scenario, _)| ran_set.contains(scenario.as_str())) {
        let checks = run.checks(scenario);
        let not_passed: Vec<&Value> =
            checks.iter().filter(|check| matches!(check["status"].as_str(), Some("FAILURE" | "WARNING"))).collect();
        if not_passed.is_empty() || !not_passed.iter().all(|check| fails_as_its_reason_says(reason, check)) {
            problems.push(format!(
                "{scenario} is baselined as \"{reason}\" but its checks say otherwise: {}",
                Value::from(checks.clone())
            ));
        }
    }

    if !run.status.success() {
        problems.push(format!("the suite exited with {}", run.status));
    }
    assert!(problems.is_empty(), "against {url}:\n- {}\n{}", problems.join("\n- "), run.summary());
    eprintln!(
        "{url}: {} scenarios, {} apply and pass, {} do not apply ({baseline_file})",
        ran.len(),
        applies.len(),
        baseline.len()
    );
}

/// Quotes for `sh -c`, which supergateway runs its `--stdio` command with.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// supergateway bridging a stdio MCP server to streamable HTTP at `url`:
/// stateful, each session its own child process running `command`.
struct Gateway {
    child: Option<Child>,
    /// Held open: supergateway exits when its stdin closes, so it goes
    /// with the test process however that ends.
    _stdin: ChildStdin,
    url: String,
    log: PathBuf,
}

impl Gateway {
    fn start(install: &Install, command: &str, work: &Path) -> Gateway {
        let log = work.join("supergateway.log");
        for _ in 0..3 {
            let port = free_port();
            let output = File::create(&log).unwrap();
            let mut child = Command::new(&install.node)
                .arg(&install.supergateway)
                .args(["--stdio", command, "--outputTransport", "streamableHttp", "--stateful"])
                // Idle sessions' processes are ended after 10 s.
                .args(["--sessionTimeout", "10000", "--port", &port.to_string(), "--healthEndpoint", "/healthz"])
                .args(["--logLevel", "info"])
                .env("MNEME_LOG", "warn")
                .stdin(Stdio::piped())
                .stdout(output.try_clone().unwrap())
                .stderr(output)
                .spawn()
                .unwrap_or_else(|error| panic!("{} cannot run: {error}", install.node.display()));
            let stdin = child.stdin.take().unwrap();
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline && child.try_wait().unwrap().is_none() {
                if ureq::get(&format!("http://127.0.0.1:{port}/healthz")).call().is_ok() {
                    return Gateway {
                        child: Some(child),
                        _stdin: stdin,
                        url: format!("http://127.0.0.1:{port}/mcp"),
                        log,
                    };
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
            eprintln!("supergateway did not answer on port {port}:\n{}", std::fs::read_to_string(&log).unwrap());
        }
        panic!("supergateway did not start: {}", log.display());
    }

    /// Stops the gateway with SIGTERM, which ends each session's process
    /// (and its process group) before it exits, and waits.
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else { return };
        let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if child.try_wait().unwrap().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("supergateway did not stop within 20 s of SIGTERM:\n{}", std::fs::read_to_string(&self.log).unwrap());
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// `mneme serve` for swarm `demo` (agents planner and coder), logging
/// errors only: rmcp logs each protocol error it answers, and the suite
/// asks for many on purpose.
fn quiet_server(work: &Path) -> MnemeServer {
    MnemeServer::start_with_environment(work, None, "", &[("MNEME_LOG", "error")])
}

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies_to_mcp_over_streamable_http() {
    let install = install();
    let work = tempfile::tempdir().unwrap();
    let server = quiet_server(work.path());
    // No tokens: the agent comes from `?agent=`, and the DNS-rebinding
    // guard of an open loopback endpoint is on.
    let url = format!("{}/mcp?agent=coder", server.url);
    assert_conformance(&install, &url, "baseline-http.yml", APPLIES_OVER_HTTP, work.path());
}

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies_to_mneme_mcp_with_a_server() {
    let install = install();
    let work = tempfile::tempdir().unwrap();
    let server = quiet_server(work.path());
    let command =
        format!("exec {} mcp --agent coder --server {}", shell_quote(common::MNEME), shell_quote(&server.url));
    let mut gateway = Gateway::start(&install, &command, work.path());
    assert_conformance(&install, &gateway.url, "baseline-stdio.yml", APPLIES_OVER_STDIO, work.path());
    gateway.stop();
}

#[test]
fn the_official_conformance_suite_passes_every_scenario_that_applies_to_mneme_mcp_in_process() {
    let install = install();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("swarm.toml");
    std::fs::write(&config, swarm_config("demo", None, "")).unwrap();
    // The embedded log is open in one process at a time: each session's
    // process gets a data dir of its own.
    let sessions = work.path().join("sessions");
    std::fs::create_dir(&sessions).unwrap();
    let command = format!(
        "exec {} mcp --agent coder --config {} --data-dir \"$(mktemp -d -p {})\"",
        shell_quote(common::MNEME),
        shell_quote(&config.to_string_lossy()),
        shell_quote(&sessions.to_string_lossy()),
    );
    let mut gateway = Gateway::start(&install, &command, work.path());
    assert_conformance(&install, &gateway.url, "baseline-stdio.yml", APPLIES_OVER_STDIO, work.path());
    gateway.stop();
    assert!(std::fs::read_dir(&sessions).unwrap().count() > 0, "no `mneme mcp` session was started");
}

#[test]
fn the_two_baselines_differ_only_where_the_transports_do() {
    let names = |file: &str, except: &str| -> Vec<String> {
        baseline(&packages_dir().join(file)).into_iter().map(|(name, _)| name).filter(|name| name != except).collect()
    };
    assert_eq!(
        names("baseline-http.yml", "server-sse-multiple-streams"),
        names("baseline-stdio.yml", "dns-rebinding-protection")
    );
    for file in ["baseline-http.yml", "baseline-stdio.yml"] {
        let entries = baseline(&packages_dir().join(file));
        let applies = if file == "baseline-http.yml" { APPLIES_OVER_HTTP } else { APPLIES_OVER_STDIO };
        assert_eq!(entries.len() + applies.len(), ACTIVE_SCENARIOS, "{file}");
    }
}
