//! A real nats-server process, for tests and benchmarks.
//!
//! The JetStream log is tested against the server it will run against, never
//! a mock. [`NatsServer::start`] runs a single JetStream-enabled server on a
//! free loopback port with its store in a fresh temporary directory, and
//! removes both when dropped. [`NatsCluster::start`] runs several such
//! servers routed into one JetStream cluster, for replicated streams. The
//! binary is found by [`NatsServer::binary`]; `scripts/install-nats.sh`
//! installs the pinned version into `<repo>/.venv`.

use std::fs;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::LogError;

/// Environment variable naming the nats-server binary to use.
pub const SERVER_BINARY_ENV: &str = "MNEME_NATS_SERVER";

/// How long a starting server may take before it answers JetStream requests.
const READY_TIMEOUT: Duration = Duration::from_secs(15);

const READY_POLL_INTERVAL: Duration = Duration::from_millis(50);

/// How long one readiness or leader poll waits for JetStream's answer. Much
/// shorter than the client's default (5 s): a request that the cluster
/// cannot answer yet (no meta or stream leader) is better asked again soon,
/// so that the time measured is the election's, not the timeout's.
const POLL_REQUEST_TIMEOUT: Duration = Duration::from_millis(500);

/// Lines of the server's log quoted when it fails to start.
const LOG_TAIL_LINES: usize = 20;

/// The script that installs the binary, relative to the repository root; it
/// also marks the root when looking for `<repo>/.venv`.
const INSTALL_SCRIPT: &str = "scripts/install-nats.sh";

/// A running nats-server with JetStream, killed and cleaned up on drop.
pub struct NatsServer {
    binary: PathBuf,
    port: u16,
    /// Holds the JetStream store and the server's log; removed on drop.
    dir: PathBuf,
    child: Option<Child>,
    /// The token clients must present, when the server requires one.
    token: Option<String>,
    /// A configuration file the server runs with instead of command-line
    /// flags: cluster nodes need settings that have no flag.
    config_file: Option<PathBuf>,
    /// Whether the loopback address, port and store flags are passed with
    /// `config_file`, overriding the file's `listen` and `store_dir`.
    flags_over_config: bool,
    /// The user and password the readiness check logs in with.
    user_password: Option<(String, String)>,
    /// Environment variables of the server process, e.g. those a
    /// configuration file names with `$VARIABLE`.
    environment: Vec<(String, String)>,
}

impl NatsServer {
    /// The nats-server binary: `$MNEME_NATS_SERVER`, else
    /// `<repo>/.venv/bin/nats-server`, else `nats-server` on the `PATH`.
    pub fn binary() -> Option<PathBuf> {
        if let Some(path) = std::env::var_os(SERVER_BINARY_ENV) {
            // An explicit choice is honoured even if wrong: `start` then
            // reports the path, instead of silently running another binary.
            return Some(PathBuf::from(path));
        }
        let venv_binary = repository_roots().map(|root| root.join(".venv/bin/nats-server")).find(|path| path.is_file());
        if venv_binary.is_some() {
            return venv_binary;
        }
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path).map(|dir| dir.join("nats-server")).find(|path| path.is_file())
    }

    /// Starts a server on a free loopback port with an empty store, and
    /// returns once it answers JetStream requests.
    pub async fn start() -> Result<NatsServer, LogError> {
        let mut server = NatsServer::unstarted()?;
        server.spawn_and_wait().await?;
        Ok(server)
    }

    /// A server that has not been spawned, on a free loopback port with a
    /// fresh store, with flags and no configuration file, token or
    /// credentials.
    fn unstarted() -> Result<NatsServer, LogError> {
        let binary = NatsServer::binary().ok_or_else(|| {
            LogError::Server(format!("no nats-server binary found: run {INSTALL_SCRIPT} or set {SERVER_BINARY_ENV}"))
        })?;
        Ok(NatsServer::unstarted_at(binary, free_loopback_port()?, fresh_temp_dir()?))
    }

    /// Like [`NatsServer::unstarted`], with this binary, port and store.
    fn unstarted_at(binary: PathBuf, port: u16, dir: PathBuf) -> NatsServer {
        NatsServer {
            binary,
            port,
            dir,
            child: None,
            token: None,
            config_file: None,
            flags_over_config: false,
            user_password: None,
            environment: Vec::new(),
        }
    }

    /// Like [`NatsServer::start`], with a server that refuses clients
    /// without this token (`--auth`).
    pub async fn start_with_token(token: &str) -> Result<NatsServer, LogError> {
        let mut server = NatsServer::unstarted()?;
        server.token = Some(token.to_string());
        server.spawn_and_wait().await?;
        Ok(server)
    }

    /// Like [`NatsServer::start`], with the configuration file `config_file`
    /// (its authorization and permissions, say) and these environment
    /// variables (those the file names as `$VARIABLE`). The server still
    /// listens on a free loopback port with its store in a fresh temporary
    /// directory: the `-a`, `-p` and `-sd` flags override the file's
    /// `listen` and `store_dir`. Readiness is checked as `user` with
    /// `password`, who must be allowed the JetStream API (`$JS.API.INFO`)
    /// and `_INBOX.>`.
    pub async fn start_with_config(
        config_file: &Path,
        environment: &[(&str, &str)],
        user: &str,
        password: &str,
    ) -> Result<NatsServer, LogError> {
        let mut server = NatsServer::unstarted()?;
        server.config_file = Some(config_file.to_path_buf());
        server.flags_over_config = true;
        server.user_password = Some((user.to_string(), password.to_string()));
        server.environment = environment.iter().map(|(name, value)| (name.to_string(), value.to_string())).collect();
        server.spawn_and_wait().await?;
        Ok(server)
    }

    /// Like [`NatsServer::start`], for tests: panics with instructions when
    /// there is no binary or the server does not start. Tests never skip for
    /// want of a server, so a machine without one fails loudly.
    pub async fn require() -> NatsServer {
        panic_without_binary();
        match NatsServer::start().await {
            Ok(server) => server,
            Err(error) => panic!("{error}"),
        }
    }

    /// The client URL, e.g. `nats://127.0.0.1:40123`.
    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    /// The JetStream store directory; it survives [`NatsServer::restart`].
    pub fn store_dir(&self) -> PathBuf {
        self.dir.join("store")
    }

    /// Whether the server process is running (it was not killed, and has
    /// not exited).
    pub fn is_running(&mut self) -> bool {
        self.child.as_mut().is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// Kills the server with SIGKILL, as a crash would, and waits for it.
    /// SIGKILL loses what the server holds in its own memory, not what it
    /// has written to files: the kernel keeps those pages.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // Both fail only if the process is already gone, which is the goal.
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills the server (if running) and starts it again on the same port
    /// with the same store, as after a crash.
    pub async fn restart(&mut self) -> Result<(), LogError> {
        self.kill();
        self.spawn_and_wait().await
    }

    /// The server's log (stdout and stderr), kept across restarts; it is
    /// removed with the server.
    pub fn log_path(&self) -> PathBuf {
        self.dir.join("nats-server.log")
    }

    async fn spawn_and_wait(&mut self) -> Result<(), LogError> {
        self.spawn()?;
        self.wait_until_ready().await
    }

    /// Starts the process without waiting for it to be ready: a cluster's
    /// nodes are ready only once enough of them run to elect a leader.
    fn spawn(&mut self) -> Result<(), LogError> {
        // Appending keeps the log of earlier runs of this server, which is
        // what one wants to read after a restart went wrong.
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .map_err(|error| self.io_error("could not open its log file", error))?;
        let stderr_log = log.try_clone().map_err(|error| self.io_error("could not open its log file", error))?;
        let mut command = Command::new(&self.binary);
        if let Some(token) = &self.token {
            command.args(["--auth", token]);
        }
        if let Some(config_file) = &self.config_file {
            command.arg("-c").arg(config_file);
        }
        if self.config_file.is_none() || self.flags_over_config {
            command.arg("-js").arg("-sd").arg(self.store_dir()).args(["-a", "127.0.0.1", "-p", &self.port.to_string()]);
        }
        command.envs(self.environment.iter().map(|(name, value)| (name, value)));
        let child = command.stdin(Stdio::null()).stdout(log).stderr(stderr_log).spawn().map_err(|error| {
            LogError::Server(format!(
                "could not run {}: {error}; run {INSTALL_SCRIPT} or point {SERVER_BINARY_ENV} at a nats-server",
                self.binary.display()
            ))
        })?;
        self.child = Some(child);
        Ok(())
    }

    /// Polls until a client can connect and JetStream answers an account
    /// request: a listening socket alone does not mean JetStream has
    /// recovered its store.
    async fn wait_until_ready(&mut self) -> Result<(), LogError> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let url = self.url();
        let mut last_error = String::from("not tried");
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                return Err(self.startup_failure(&format!("exited with {status}")));
            }
            let options = match (&self.token, &self.user_password) {
                (Some(token), _) => async_nats::ConnectOptions::with_token(token.clone()),
                (None, Some((user, password))) => {
                    async_nats::ConnectOptions::with_user_and_password(user.clone(), password.clone())
                }
                (None, None) => async_nats::ConnectOptions::new(),
            };
            match options.connect(&url).await {
                Ok(client) => match short_timeout_context(client).query_account().await {
                    Ok(_) => return Ok(()),
                    Err(error) => last_error = format!("JetStream not ready: {error}"),
                },
                Err(error) => last_error = format!("cannot connect: {error}"),
            }
            tokio::time::sleep(READY_POLL_INTERVAL).await;
        }
        let failure = self.startup_failure(&format!(
            "not ready after {READY_TIMEOUT:?} ({last_error}); a nats-server older than 2.10 \
             lacks what async-nats needs, run {INSTALL_SCRIPT}"
        ));
        self.kill();
        Err(failure)
    }

    fn startup_failure(&self, what: &str) -> LogError {
        LogError::Server(format!(
            "{} on {} {what}; last lines of {}:\n{}",
            self.binary.display(),
            self.url(),
            self.log_path().display(),
            log_tail(&self.log_path(), LOG_TAIL_LINES)
        ))
    }

    fn io_error(&self, what: &str, error: io::Error) -> LogError {
        LogError::Server(format!("{what} (in {}): {error}", self.dir.display()))
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        // A leftover temporary directory is harmless; failing a drop is not.
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Panics with instructions when there is no nats-server binary: tests never
/// skip for want of a server, so a machine without one fails loudly.
fn panic_without_binary() {
    if NatsServer::binary().is_none() {
        panic!(
            "nats-server is required by this test and was not found: run {INSTALL_SCRIPT} \
             (installs nats-server 2.15.1 into <repo>/.venv) or set {SERVER_BINARY_ENV}"
        );
    }
}

/// How long a cluster may go without a leader for a stream, after a node
/// was killed or while it starts, before that counts as a failure. Raft
/// elections in nats-server take a few seconds; a slow CI machine more.
const STREAM_LEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// The name of the JetStream cluster every [`NatsCluster`] forms.
const CLUSTER_NAME: &str = "mneme-test";

/// Several nats-servers on loopback, routed into one JetStream cluster, each
/// with its own store in its own temporary directory. Nodes are numbered from
/// 0; a node keeps its ports and store when killed and restarted, as a
/// machine that reboots would.
pub struct NatsCluster {
    nodes: Vec<NatsServer>,
    node_names: Vec<String>,
}

impl NatsCluster {
    /// Starts `size` nodes (3 for R3 streams) and returns once every node
    /// answers JetStream requests, which it does only when the cluster has
    /// elected its meta leader.
    pub async fn start(size: usize) -> Result<NatsCluster, LogError> {
        let binary = NatsServer::binary().ok_or_else(|| {
            LogError::Server(format!("no nats-server binary found: run {INSTALL_SCRIPT} or set {SERVER_BINARY_ENV}"))
        })?;
        let mut ports = free_loopback_ports(2 * size)?;
        let route_ports = ports.split_off(size);
        let client_ports = ports;
        let node_names: Vec<String> = (0..size).map(|index| format!("mneme-node-{index}")).collect();
        let mut nodes = Vec::with_capacity(size);
        for index in 0..size {
            let dir = fresh_temp_dir()?;
            let config_file = dir.join("nats-server.conf");
            let config = cluster_node_config(&node_names[index], client_ports[index], &dir, index, &route_ports);
            fs::write(&config_file, config)
                .map_err(|error| LogError::Server(format!("could not write {}: {error}", config_file.display())))?;
            let port = client_ports[index];
            let mut node = NatsServer::unstarted_at(binary.clone(), port, dir);
            node.config_file = Some(config_file);
            nodes.push(node);
        }
        // All nodes first: none is ready before a majority runs.
        for node in &mut nodes {
            node.spawn()?;
        }
        for node in &mut nodes {
            node.wait_until_ready().await?;
        }
        let mut cluster = NatsCluster { nodes, node_names };
        cluster.wait_until_every_node_can_hold_a_replica().await?;
        Ok(cluster)
    }

    /// Like [`NatsCluster::start`], for tests: panics with instructions when
    /// there is no binary or the cluster does not form.
    pub async fn require(size: usize) -> NatsCluster {
        panic_without_binary();
        match NatsCluster::start(size).await {
            Ok(cluster) => cluster,
            Err(error) => panic!("{error}"),
        }
    }

    pub fn size(&self) -> usize {
        self.nodes.len()
    }

    /// Every node's client URL.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(NatsServer::url).collect()
    }

    /// The client URLs joined by commas, as `mneme serve --nats` takes them.
    pub fn url_list(&self) -> String {
        self.urls().join(",")
    }

    /// The `server_name` of a node, as stream info names leaders and peers.
    pub fn node_name(&self, index: usize) -> &str {
        &self.node_names[index]
    }

    pub fn node(&mut self, index: usize) -> &mut NatsServer {
        &mut self.nodes[index]
    }

    /// Kills a node with SIGKILL, as a crash would.
    pub fn kill(&mut self, index: usize) {
        self.nodes[index].kill();
    }

    /// Starts a killed node again with its ports and store, and returns once
    /// it answers JetStream requests.
    pub async fn restart(&mut self, index: usize) -> Result<(), LogError> {
        self.nodes[index].restart().await
    }

    /// The index of the running node leading `stream`'s Raft group, waiting
    /// while the group has no leader or still names a node that was killed
    /// (until the others notice); fails after [`STREAM_LEADER_TIMEOUT`].
    pub async fn stream_leader(&mut self, stream: &str) -> Result<usize, LogError> {
        let deadline = Instant::now() + STREAM_LEADER_TIMEOUT;
        let mut last_error = String::from("not asked");
        while Instant::now() < deadline {
            match self.stream_cluster_info(stream).await {
                Ok(cluster) => {
                    let leader = cluster.leader.as_deref();
                    let index = self.node_names.iter().position(|name| Some(name.as_str()) == leader);
                    if let Some(index) = index.filter(|index| self.nodes[*index].is_running()) {
                        return Ok(index);
                    }
                    last_error = format!("no leader (leader is {leader:?})");
                }
                Err(error) => last_error = error.to_string(),
            }
            tokio::time::sleep(READY_POLL_INTERVAL).await;
        }
        Err(LogError::Server(format!("stream {stream} has no leader after {STREAM_LEADER_TIMEOUT:?}: {last_error}")))
    }

    /// Waits until `stream` has a leader and every other node is a current
    /// replica of it: after a restart, a node has caught up only then, and
    /// killing another node before would leave the group without a majority
    /// that holds everything.
    pub async fn wait_until_stream_current(&mut self, stream: &str) -> Result<(), LogError> {
        let deadline = Instant::now() + STREAM_LEADER_TIMEOUT;
        let mut last_state = String::from("not asked");
        while Instant::now() < deadline {
            match self.stream_cluster_info(stream).await {
                Ok(cluster) => {
                    let current = cluster.replicas.iter().filter(|peer| peer.current && !peer.offline).count();
                    if cluster.leader.is_some() && current + 1 == self.nodes.len() {
                        return Ok(());
                    }
                    let peers: Vec<String> = cluster
                        .replicas
                        .iter()
                        .map(|peer| format!("{} current={} offline={}", peer.name, peer.current, peer.offline))
                        .collect();
                    last_state = format!("leader {:?}, replicas [{}]", cluster.leader, peers.join(", "));
                }
                Err(error) => last_state = error.to_string(),
            }
            tokio::time::sleep(READY_POLL_INTERVAL).await;
        }
        Err(LogError::Server(format!(
            "stream {stream} replicas not all current after {STREAM_LEADER_TIMEOUT:?}: {last_state}"
        )))
    }

    /// A meta leader can exist before it knows every peer; until then it
    /// refuses streams with as many replicas as nodes ("no suitable peers
    /// for placement"). Creating and deleting such a stream is the test.
    async fn wait_until_every_node_can_hold_a_replica(&mut self) -> Result<(), LogError> {
        const PROBE_STREAM: &str = "MNEME_CLUSTER_PROBE";
        let client = async_nats::ConnectOptions::new()
            .connect(self.urls())
            .await
            .map_err(|error| LogError::Server(format!("cannot connect to the cluster: {error}")))?;
        let context = short_timeout_context(client);
        let config = async_nats::jetstream::stream::Config {
            name: PROBE_STREAM.to_string(),
            subjects: vec!["mneme-cluster-probe".to_string()],
            storage: async_nats::jetstream::stream::StorageType::Memory,
            num_replicas: self.nodes.len(),
            ..Default::default()
        };
        let deadline = Instant::now() + STREAM_LEADER_TIMEOUT;
        loop {
            match context.create_stream(config.clone()).await {
                Ok(_) => break,
                Err(error) if Instant::now() < deadline => {
                    tracing::debug!(%error, "cluster cannot place a stream on every node yet");
                    tokio::time::sleep(READY_POLL_INTERVAL).await;
                }
                Err(error) => {
                    return Err(LogError::Server(format!(
                        "the cluster cannot place a stream on all {} nodes after {STREAM_LEADER_TIMEOUT:?}: {error}",
                        self.nodes.len()
                    )));
                }
            }
        }
        context.delete_stream(PROBE_STREAM).await.map_err(LogError::nats)?;
        Ok(())
    }

    /// The Raft group of `stream` as the running nodes report it.
    async fn stream_cluster_info(
        &mut self,
        stream: &str,
    ) -> Result<async_nats::jetstream::stream::ClusterInfo, LogError> {
        let running: Vec<String> =
            self.nodes.iter_mut().filter_map(|node| node.is_running().then(|| node.url())).collect();
        let client = async_nats::ConnectOptions::new()
            .connection_timeout(Duration::from_secs(2))
            .connect(running)
            .await
            .map_err(|error| LogError::Server(format!("cannot connect to the cluster: {error}")))?;
        let mut handle = short_timeout_context(client).get_stream(stream).await.map_err(LogError::nats)?;
        let info = handle.info().await.map_err(LogError::nats)?;
        info.cluster.clone().ok_or_else(|| LogError::Server(format!("stream {stream} reports no cluster")))
    }
}

fn short_timeout_context(client: async_nats::Client) -> async_nats::jetstream::Context {
    async_nats::jetstream::ContextBuilder::new().timeout(POLL_REQUEST_TIMEOUT).build(client)
}

/// The configuration of one cluster node: its client port, its store, and
/// routes to every other node's cluster port. `sync_interval` is left at
/// the server's default, which is what the durability notes describe.
fn cluster_node_config(name: &str, client_port: u16, dir: &Path, index: usize, route_ports: &[u16]) -> String {
    let routes: Vec<String> = route_ports
        .iter()
        .enumerate()
        .filter(|(other, _)| *other != index)
        .map(|(_, port)| format!("\"nats-route://127.0.0.1:{port}\""))
        .collect();
    format!(
        "server_name: {name:?}\nlisten: \"127.0.0.1:{client_port}\"\n\
         jetstream {{\n  store_dir: {store:?}\n}}\n\
         cluster {{\n  name: {CLUSTER_NAME:?}\n  listen: \"127.0.0.1:{route_port}\"\n  routes: [{routes}]\n}}\n",
        store = dir.join("store").display().to_string(),
        route_port = route_ports[index],
        routes = routes.join(", "),
    )
}

/// Directories that may be the repository root: those holding the install
/// script, above this crate's source and above the current directory.
fn repository_roots() -> impl Iterator<Item = PathBuf> {
    let manifest_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let current_dir = std::env::current_dir().ok();
    let starts = std::iter::once(manifest_dir).chain(current_dir);
    starts.filter_map(|start| start.ancestors().find(|dir| dir.join(INSTALL_SCRIPT).is_file()).map(Path::to_path_buf))
}

/// Asks the kernel for a free port. Another process could take it before the
/// server binds it; the kernel hands out ephemeral ports in rotation, so that
/// is unlikely enough for tests.
/// `count` distinct free loopback ports. Each is held until all are found:
/// ports taken one at a time may repeat, since the system hands a port
/// released a moment ago out again (a cluster node once got the same port
/// for clients and routes, and nats-server exited).
fn free_loopback_ports(count: usize) -> Result<Vec<u16>, LogError> {
    let ports = || -> std::io::Result<Vec<u16>> {
        let listeners = (0..count).map(|_| TcpListener::bind("127.0.0.1:0")).collect::<Result<Vec<_>, _>>()?;
        listeners.iter().map(|listener| listener.local_addr().map(|address| address.port())).collect()
    };
    ports().map_err(|error| LogError::Server(format!("could not find a free port: {error}")))
}

fn free_loopback_port() -> Result<u16, LogError> {
    Ok(free_loopback_ports(1)?[0])
}

/// A new, empty directory under the system's temporary directory, unique
/// across processes and across servers of one process.
fn fresh_temp_dir() -> Result<PathBuf, LogError> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |since| since.as_nanos());
    loop {
        let serial = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("mneme-nats-{}-{serial}-{nanos}", std::process::id());
        let dir = std::env::temp_dir().join(name);
        match fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(error) => {
                return Err(LogError::Server(format!("could not create {}: {error}", dir.display())));
            }
        }
    }
}

/// The last `lines` lines of a log file, or why there are none.
fn log_tail(path: &Path, lines: usize) -> String {
    // Reading only the end keeps this cheap even if the server logged a lot.
    const TAIL_BYTES: u64 = 16 * 1024;
    let read = || -> io::Result<String> {
        let mut file = fs::File::open(path)?;
        let len = file.metadata()?.len();
        file.seek(SeekFrom::Start(len.saturating_sub(TAIL_BYTES)))?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    };
    match read() {
        Ok(text) => {
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(error) => format!("(no log: {error})"),
    }
}
