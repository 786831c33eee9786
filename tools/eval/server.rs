//! The evaluation's own `mneme serve`: a scratch directory, the server
//! process on the embedded log, and publishing to it until every memory
//! has applied what was published.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::Value;

use mneme::client::call_as;
use mneme_api::log::{AcceptedEvents, Health};
use mneme_api::memory::Digest;

use super::PUBLISH_BATCH;
use crate::eval::dataset::EVAL_SWARM;

/// The scratch directory: a fresh temporary one removed at the end, or the
/// one `--keep` names.
pub(super) struct Scratch {
    pub(super) path: PathBuf,
    remove: bool,
}

impl Scratch {
    pub(super) fn new(keep: Option<&Path>) -> anyhow::Result<Scratch> {
        let (path, remove) = match keep {
            Some(path) => (path.to_path_buf(), false),
            None => {
                let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_nanos();
                (std::env::temp_dir().join(format!("mneme-eval-{}-{nanos}", std::process::id())), true)
            }
        };
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        Ok(Scratch { path, remove })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// A `mneme serve` child on the embedded log, stopped with SIGTERM when
/// dropped.
pub(crate) struct ServerProcess {
    child: Child,
    base_url: String,
}

impl ServerProcess {
    pub(super) fn start(
        dir: &Path,
        agents: &[String],
        embedder: &str,
        deep: &str,
        enrichment: &[String],
        retrieval: &[String],
    ) -> anyhow::Result<ServerProcess> {
        // Consolidation runs when the evaluation asks for it, not on a
        // timer that would race the measurements.
        let mut config = format!(
            "[swarm]\nname = \"{EVAL_SWARM}\"\nadmit_unknown_agents = true\n\n[embedder]\nkind = \"{embedder}\"\n\n\
             [enrichment]\nmodel = \"{deep}\"\nidle_ms = 100\n{}\n[consolidation]\nenabled = false\n",
            enrichment.iter().map(|setting| format!("{setting}\n")).collect::<String>()
        );
        if !retrieval.is_empty() {
            config.push_str(&format!("\n[retrieval]\n{}\n", retrieval.join("\n")));
        }
        for agent in agents {
            config.push_str(&format!("\n[[agents]]\nname = \"{agent}\"\n"));
        }
        std::fs::write(dir.join("swarm.toml"), config)?;
        ServerProcess::start_configured(dir, "warn")
    }

    /// `mneme serve` with `<dir>/swarm.toml`, its data in `<dir>/data` and
    /// its log appended to `<dir>/server.log`; answers once it is up.
    pub(crate) fn start_configured(dir: &Path, log_filter: &str) -> anyhow::Result<ServerProcess> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let config_path = dir.join("swarm.toml");
        let log = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("server.log"))?;
        let child = Command::new(crate::mneme_binary()?)
            .arg("serve")
            .arg("--config")
            .arg(&config_path)
            .arg("--data-dir")
            .arg(dir.join("data"))
            .args(["--http", &format!("127.0.0.1:{port}")])
            .env("MNEME_LOG", log_filter)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting mneme serve")?;
        let mut server = ServerProcess { child, base_url: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + Duration::from_secs(60);
        while ureq::get(&server.url("/healthz")).call().is_err() {
            if let Some(status) = server.child.try_wait()? {
                bail!("mneme serve exited with {status}; see {}", dir.join("server.log").display());
            }
            if Instant::now() > deadline {
                bail!("mneme serve did not answer within 60 s; see {}", dir.join("server.log").display());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(server)
    }

    pub(crate) fn url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.base_url)
    }

    /// SIGKILL, and waits for the process to be gone.
    pub(crate) fn kill_hard(&mut self) -> anyhow::Result<()> {
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn publish(server: &ServerProcess, events: &[Value]) -> anyhow::Result<u64> {
    let mut last_seq = 0;
    for batch in events.chunks(PUBLISH_BATCH) {
        let body = serde_json::to_string(batch)?;
        let answer: AcceptedEvents = call_as(ureq::post(&server.url("/v1/events")), Some(&body))?;
        last_seq = last_seq.max(answer.accepted.iter().map(|accepted| accepted.seq).max().unwrap_or(0));
    }
    Ok(last_seq)
}

pub(super) fn last_log_seq(server: &ServerProcess) -> anyhow::Result<u64> {
    Ok(call_as::<Health>(ureq::get(&server.url("/healthz")), None)?.last_seq)
}

/// Waits until the enricher has looked at the log up to `seq` (or past it)
/// and found nothing waiting; answers the log's last seq then (its own
/// events included).
pub(super) fn wait_until_enriched(server: &ServerProcess, seq: u64) -> anyhow::Result<u64> {
    let deadline = Instant::now() + Duration::from_secs(4 * 3600);
    loop {
        let health = call_as::<Health>(ureq::get(&server.url("/healthz")), None)?;
        let swarm = health.swarms.iter().find(|swarm| swarm.swarm == EVAL_SWARM).context("the eval swarm")?;
        let enrichment = swarm.enrichment.as_ref().context("the server runs no deep tier")?;
        if enrichment.through_seq >= seq && enrichment.backlog == 0 {
            return Ok(swarm.last_seq);
        }
        if Instant::now() > deadline {
            bail!("{} items still wait for a deep vector after four hours", enrichment.backlog);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until every agent's memory has applied the log up to `seq`.
pub(super) fn wait_until_applied(server: &ServerProcess, agents: &[String], seq: u64) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(3600);
    for agent in agents {
        loop {
            let path = format!("/v1/swarms/{EVAL_SWARM}/agents/{agent}/digest");
            let applied = call_as::<Digest>(ureq::get(&server.url(&path)), None)?.seq;
            if applied >= seq {
                break;
            }
            if Instant::now() > deadline {
                bail!("{agent} applied the log only to {applied} of {seq} within an hour");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}
