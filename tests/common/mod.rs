//! A real `mneme serve` process for whole-system tests, and small HTTP
//! helpers. Each server gets its own data dir and a free loopback port.

#![allow(dead_code)] // each test binary uses a different part of this module

pub mod llm_server;
pub mod replicas;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub const MNEME: &str = env!("CARGO_BIN_EXE_mneme");

/// Polls `done` every 50 ms; panics after `timeout`. Answers how long it
/// took. What a test waits for instead of a fixed sleep.
pub fn wait_until(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) -> Duration {
    let started = Instant::now();
    while !done() {
        assert!(started.elapsed() < timeout, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    started.elapsed()
}

pub fn example_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/trajectory.jsonl")
}

/// `swarm.toml` lines for a `reviewer` agent, beside the `planner` and
/// `coder` every test server has, and these API tokens: (name, secret,
/// the one agent it may act as).
pub fn reviewer_and_tokens(tokens: &[(&str, &str, Option<&str>)]) -> String {
    let mut config = String::from("\n[[agents]]\nname = \"reviewer\"\n");
    for (name, secret, agent) in tokens {
        config.push_str(&format!("\n[[http.tokens]]\nname = \"{name}\"\ntoken = \"{secret}\"\n"));
        if let Some(agent) = agent {
            config.push_str(&format!("agent = \"{agent}\"\n"));
        }
    }
    config
}

/// The `swarm.toml` of a test server's swarm `name`: `planner` and `coder`,
/// the model-free embedder, no deep tier (unless `extra` has an
/// `[enrichment]`), frequent checkpoints, and `extra` appended
/// (after `[log]` on NATS: an `extra` may go on with its keys). An `extra`
/// that begins with [`SWARM_KEYS`] has its lines up to the first empty
/// one put into `[swarm]` instead, and then one that begins with
/// [`MEMORY_KEYS`] into `[memory]`.
pub fn swarm_config(name: &str, nats_url: Option<&str>, extra: &str) -> String {
    let (swarm_keys, extra) = match extra.strip_prefix(SWARM_KEYS) {
        Some(rest) => rest.split_once("\n\n").unwrap_or((rest, "")),
        None => ("", extra),
    };
    let (memory_keys, extra) = match extra.strip_prefix(MEMORY_KEYS) {
        Some(rest) => rest.split_once("\n\n").unwrap_or((rest, "")),
        None => ("", extra),
    };
    let mut config = format!(
        "[swarm]\nname = \"{name}\"\nadmit_unknown_agents = true\n{swarm_keys}\n\n[memory]\ncheckpoint_interval_ms = 200\n\
         checkpoint_every_events = 100\n{memory_keys}\n\n[embedder]\nkind = \"hashed\"\n\n{enrichment}\
         [[agents]]\nname = \"planner\"\n\n[[agents]]\nname = \"coder\"\n",
        // No deep tier unless the test asks for one: its model would keep
        // a core busy in every test server.
        enrichment = if extra.contains("[enrichment]") { "" } else { "[enrichment]\nmodel = \"off\"\n\n" },
    );
    if nats_url.is_some() {
        config.push_str("\n[log]\nbackend = \"nats\"\nduplicate_window_secs = 60\n");
    }
    config.push_str(extra);
    config
}

/// Begins an `extra` of [`swarm_config`] whose first lines are keys of
/// `[swarm]`.
pub const SWARM_KEYS: &str = "# [swarm]\n";

/// Begins an `extra` of [`swarm_config`] (after any [`SWARM_KEYS`] part)
/// whose first lines are keys of `[memory]`.
pub const MEMORY_KEYS: &str = "# [memory]\n";

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `mneme serve` child process, stopped with SIGTERM when dropped.
pub struct MnemeServer {
    child: Option<Child>,
    pub url: String,
    pub data_dir: PathBuf,
    pub config_path: PathBuf,
    /// More swarms' files, each passed with its own `--config`.
    pub more_configs: Vec<PathBuf>,
    pub nats_url: Option<String>,
    /// Sent as a bearer token by `get`, `post` and `cli`.
    pub token: Option<String>,
    /// Environment variables of the `mneme serve` process.
    environment: Vec<(String, String)>,
    /// Where the process's stderr is appended, across restarts; inherited
    /// when `None`.
    pub stderr_log: Option<PathBuf>,
    port: u16,
}

impl MnemeServer {
    /// Starts a server for swarm `demo` with a small checkpoint interval and
    /// the model-free embedder: these tests are about the system, and must
    /// not depend on whether a distilled model happens to be on the machine.
    pub fn start(work_dir: &Path, nats_url: Option<&str>) -> MnemeServer {
        MnemeServer::start_with(work_dir, nats_url, "")
    }

    /// Like [`MnemeServer::start`], with more `swarm.toml` appended.
    pub fn start_with(work_dir: &Path, nats_url: Option<&str>, extra_config: &str) -> MnemeServer {
        MnemeServer::start_with_environment(work_dir, nats_url, extra_config, &[])
    }

    /// Like [`MnemeServer::start_with`], with these environment variables.
    pub fn start_with_environment(
        work_dir: &Path,
        nats_url: Option<&str>,
        extra_config: &str,
        environment: &[(&str, &str)],
    ) -> MnemeServer {
        let mut server = MnemeServer::configure(work_dir, nats_url, extra_config, environment);
        server.spawn();
        server
    }

    /// One process serving several swarms, each `(name, more swarm.toml)`
    /// with the same base configuration as [`MnemeServer::start`]; with
    /// several, each swarm keeps its data in `<data dir>/<name>`.
    pub fn start_swarms(
        work_dir: &Path,
        nats_url: Option<&str>,
        swarms: &[(&str, &str)],
        environment: &[(&str, &str)],
    ) -> MnemeServer {
        let (first, more) = swarms.split_first().expect("at least one swarm");
        let mut server = MnemeServer::configure_swarm(work_dir, first.0, nats_url, first.1, environment);
        for (name, extra) in more {
            let path = work_dir.join(format!("{name}.toml"));
            std::fs::write(&path, swarm_config(name, nats_url, extra)).unwrap();
            server.more_configs.push(path);
        }
        server.spawn();
        server
    }

    /// Writes the configuration; starts nothing.
    fn configure(
        work_dir: &Path,
        nats_url: Option<&str>,
        extra_config: &str,
        environment: &[(&str, &str)],
    ) -> MnemeServer {
        MnemeServer::configure_swarm(work_dir, "demo", nats_url, extra_config, environment)
    }

    fn configure_swarm(
        work_dir: &Path,
        swarm: &str,
        nats_url: Option<&str>,
        extra_config: &str,
        environment: &[(&str, &str)],
    ) -> MnemeServer {
        let config_path =
            work_dir.join(if swarm == "demo" { "swarm.toml".to_string() } else { format!("{swarm}.toml") });
        std::fs::write(&config_path, swarm_config(swarm, nats_url, extra_config)).unwrap();
        MnemeServer {
            child: None,
            url: String::new(),
            data_dir: work_dir.join("data"),
            config_path,
            more_configs: Vec::new(),
            nats_url: nats_url.map(str::to_string),
            token: None,
            environment: environment.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect(),
            stderr_log: None,
            port: free_port(),
        }
    }

    /// Like [`MnemeServer::start_with`], logging at `log_filter` into
    /// `<work_dir>/serve.log` (appended to across restarts), for tests that
    /// read what the server did.
    pub fn start_logged(work_dir: &Path, extra_config: &str, log_filter: &str) -> MnemeServer {
        let mut server = MnemeServer::configure(work_dir, None, extra_config, &[("MNEME_LOG", log_filter)]);
        server.stderr_log = Some(work_dir.join("serve.log"));
        server.spawn();
        server
    }

    /// The server process's id.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("the server is running").id()
    }

    /// Kills the server with SIGKILL: no snapshot, no flush, no goodbye.
    pub fn kill_hard(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Reaps a server killed from elsewhere (by pid); panics if it is alive.
    pub fn reap_killed(&mut self) {
        if let Some(mut child) = self.child.take() {
            let status = child.wait().unwrap();
            assert!(!status.success(), "the server was expected to have been killed, but exited with {status}");
        }
    }

    /// Starts the server again on the same port and data dir after it was
    /// killed.
    pub fn start_again(&mut self) {
        assert!(self.child.is_none(), "the server is still running");
        self.spawn();
    }

    /// Starts the process and waits until it answers. A first start whose
    /// process exits at once is tried again on another free port: a port
    /// found free can be taken by a test running beside this one before
    /// the server binds it.
    fn spawn(&mut self) {
        let first_start = self.url.is_empty();
        for attempt in 1..=3 {
            match self.try_spawn() {
                Ok(()) => return,
                Err(status) if first_start && attempt < 3 => {
                    eprintln!("mneme serve exited at once with {status} on port {}; another port", self.port);
                    self.port = free_port();
                }
                Err(status) => panic!("mneme serve exited early with {status}"),
            }
        }
    }

    fn try_spawn(&mut self) -> Result<(), std::process::ExitStatus> {
        let mut command = Command::new(MNEME);
        command.args(["serve", "--config"]).arg(&self.config_path);
        for path in &self.more_configs {
            command.arg("--config").arg(path);
        }
        command
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(["--http", &format!("127.0.0.1:{}", self.port)])
            .env("MNEME_LOG", "warn")
            .envs(self.environment.iter().map(|(name, value)| (name, value)))
            .stdin(Stdio::null());
        if let Some(path) = &self.stderr_log {
            let file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
            command.stderr(file);
        }
        if let Some(url) = &self.nats_url {
            command.args(["--nats", url]);
        }
        self.child = Some(command.spawn().expect("mneme binary runs"));
        self.url = format!("http://127.0.0.1:{}", self.port);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if ureq::get(&format!("{}/healthz", self.url)).call().is_ok() {
                return Ok(());
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                self.child = None;
                return Err(status);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("mneme serve did not answer /healthz within 30 s");
    }

    /// Stops the server with SIGTERM (snapshots are written) and waits.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = Command::new("kill").args(["-TERM", &child.id().to_string()]).status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if child.try_wait().unwrap().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            panic!("mneme serve did not stop within 20 s of SIGTERM");
        }
    }

    /// The same server as a client with another token; dropping it stops
    /// nothing.
    pub fn view_with_token(&self, token: &str) -> MnemeServer {
        MnemeServer {
            child: None,
            url: self.url.clone(),
            data_dir: self.data_dir.clone(),
            config_path: self.config_path.clone(),
            more_configs: self.more_configs.clone(),
            nats_url: self.nats_url.clone(),
            token: Some(token.to_string()),
            environment: self.environment.clone(),
            stderr_log: None,
            port: self.port,
        }
    }

    /// Stops and starts again on the same port and data dir.
    pub fn restart(&mut self) {
        self.stop();
        self.spawn();
    }

    /// `GET /metrics` with `token`, as text.
    pub fn metrics_as(&self, token: &str) -> String {
        ureq::get(&format!("{}/metrics", self.url))
            .set("authorization", &format!("Bearer {token}"))
            .call()
            .unwrap()
            .into_string()
            .unwrap()
    }

    pub fn get(&self, path_and_query: &str) -> Value {
        let (status, body) = self.get_as(self.token.as_deref(), path_and_query);
        assert_eq!(status, 200, "GET {path_and_query}: {body}");
        body
    }

    /// GETs and reads the answer as the wire type `T` (a 200 expected).
    pub fn get_typed<T: serde::de::DeserializeOwned>(&self, path_and_query: &str) -> T {
        typed(&format!("GET {path_and_query}"), self.get(path_and_query))
    }

    /// POSTs and reads the answer as the wire type `T` (a 2xx expected).
    pub fn post_typed<T: serde::de::DeserializeOwned>(&self, path: &str, body: &str) -> T {
        let (status, answer) = self.post(path, body);
        assert!((200..300).contains(&status), "POST {path}: {status} {answer}");
        typed(&format!("POST {path}"), answer)
    }

    /// POSTs a request that must be refused: its status and error body.
    pub fn post_refused(&self, path: &str, body: &str) -> (u16, mneme_api::ErrorBody) {
        let (status, answer) = self.post(path, body);
        assert!(status >= 400, "POST {path} was not refused: {status} {answer}");
        (status, typed(&format!("POST {path}"), answer))
    }

    /// GETs with this bearer token (or none); returns the status and the
    /// JSON answer, errors included.
    pub fn get_as(&self, token: Option<&str>, path_and_query: &str) -> (u16, Value) {
        let mut request = ureq::get(&format!("{}{path_and_query}", self.url));
        if let Some(token) = token {
            request = request.set("authorization", &format!("Bearer {token}"));
        }
        match request.call() {
            Ok(response) => (response.status(), response.into_json().unwrap()),
            Err(ureq::Error::Status(status, response)) => (status, response.into_json().unwrap()),
            Err(error) => panic!("GET {path_and_query}: {error}"),
        }
    }

    /// POSTs a body; returns the status and the JSON answer, errors included.
    pub fn post(&self, path: &str, body: &str) -> (u16, Value) {
        self.post_as(self.token.as_deref(), path, body)
    }

    pub fn post_as(&self, token: Option<&str>, path: &str, body: &str) -> (u16, Value) {
        let mut request = ureq::post(&format!("{}{path}", self.url)).set("content-type", "application/json");
        if let Some(token) = token {
            request = request.set("authorization", &format!("Bearer {token}"));
        }
        match request.send_string(body) {
            Ok(response) => (response.status(), response.into_json().unwrap()),
            Err(ureq::Error::Status(status, response)) => (status, response.into_json().unwrap()),
            Err(error) => panic!("POST {path}: {error}"),
        }
    }

    /// Runs a `mneme` command against this server.
    pub fn cli(&self, args: &[&str]) -> Output {
        let mut command = Command::new(MNEME);
        command.args(args).env("MNEME_SERVER", &self.url).env("MNEME_LOG", "warn").env_remove("MNEME_TOKEN");
        if let Some(token) = &self.token {
            command.env("MNEME_TOKEN", token);
        }
        command.output().unwrap()
    }
}

impl Drop for MnemeServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `command` to its end and answers its output; panics naming `what`,
/// with both streams, unless it could run and succeeded.
pub fn run(command: &mut Command, what: &str) -> Output {
    let output = command.output().unwrap_or_else(|error| panic!("{what} cannot be run ({error})"));
    assert_succeeded(&output, what);
    output
}

/// A command's stdout, after a panic with both streams if it failed.
pub fn stdout_of(output: &Output) -> String {
    assert_succeeded(output, "command");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn assert_succeeded(output: &Output, what: &str) {
    assert!(
        output.status.success(),
        "{what} failed with {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The seq `mneme publish` reported last.
pub fn last_seq_of_publish(stdout: &str) -> u64 {
    stdout.rsplit("last seq ").next().unwrap().trim().parse().unwrap()
}

/// Percent-encoding for a path segment or query value.
pub fn encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

/// An answer read as the wire type the server answers with.
pub fn typed<T: serde::de::DeserializeOwned>(request: &str, answer: Value) -> T {
    serde_json::from_value(answer.clone()).unwrap_or_else(|error| {
        panic!("{request}: the answer is not a {}: {error}: {answer}", std::any::type_name::<T>())
    })
}

/// Every file under `dir`, at any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files
}

/// A NATS request (a Mneme query, `mneme.<swarm>.<agent>.query.<verb>`)
/// answered within 30 s: the reply's payload.
pub fn nats_request(
    runtime: &tokio::runtime::Runtime,
    client: &async_nats::Client,
    subject: String,
    body: &serde_json::Value,
) -> Vec<u8> {
    let reply = runtime.block_on(async {
        tokio::time::timeout(Duration::from_secs(30), client.request(subject, body.to_string().into()))
            .await
            .expect("a reply within 30 s")
            .expect("a reply")
    });
    reply.payload.to_vec()
}

/// The static embedding model in `./models`, fetched and distilled (about
/// three minutes in a test build) when missing: what `mneme` finds when it
/// runs from the repository with the default `[embedder]`. Test binaries
/// run one after another, so two never distill at once.
pub fn ensure_static_model() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let model = root.join("models/static-minilm-l6-256");
    if model.join("embeddings.safetensors").is_file() && model.join("tokenizer.json").is_file() {
        return model;
    }
    let fetch = Command::new(root.join("scripts/fetch-model.sh")).output().unwrap();
    assert!(fetch.status.success(), "scripts/fetch-model.sh: {}", String::from_utf8_lossy(&fetch.stderr));
    let distill = Command::new(MNEME)
        .args(["distill", "--minilm", "models/all-MiniLM-L6-v2", "--out", "models/static-minilm-l6-256"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(distill.status.success(), "mneme distill: {}", String::from_utf8_lossy(&distill.stderr));
    model
}
