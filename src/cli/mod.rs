//! The `mneme` command line: one verb a variant of [`Command`], each
//! dispatched to the server, a client call over HTTP, or an offline tool.

mod consolidation;
mod log;
mod memory;
mod offline;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use mneme_actors::{LogBackend, SwarmConfig};

#[derive(Parser)]
#[command(name = "mneme", version, about = "The memory of multi-agent LLM swarms")]
struct Cli {
    /// Log filter, e.g. `info` or `mneme=debug,info`.
    #[arg(
        long,
        env = "MNEME_LOG",
        default_value = "info,hnsw_rs=warn,tantivy=warn,rmcp::service=error",
        global = true
    )]
    log: String,
    /// API token for a server with `[[http.tokens]]` (sent as a bearer token).
    #[arg(long, env = "MNEME_TOKEN", global = true, hide_env_values = true)]
    token: Option<String>,
    /// Print what the API answered, as JSON, instead of text for people
    /// (one JSON object per line where a verb prints a stream).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the memory service: log, agent memories and HTTP API.
    Serve(ConfigArgs),
    /// Serve one agent's memory as MCP tools over stdio, for an MCP host
    /// (Claude Code, Cursor, an agent SDK) to launch: a bridge to a running
    /// server's /mcp with --server, else the memory service in this process.
    Mcp {
        /// The agent whose memory the tools read and write.
        #[arg(long, env = "MNEME_AGENT")]
        agent: String,
        /// Bridge to this running `mneme serve` (its /mcp, with --token or
        /// MNEME_TOKEN) instead of running the service here.
        #[arg(long, env = "MNEME_SERVER", conflicts_with_all = ["data_dir", "config", "nats", "http"])]
        server: Option<String>,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Publish events from a JSON file (one event or an array), a JSONL file, or `-` for stdin.
    Publish {
        file: String,
        /// Events per request.
        #[arg(long, default_value_t = 500)]
        batch: usize,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Search an agent's memory. Hits a later event superseded (a newer
    /// decision, a retraction, the losing side of a resolved contradiction)
    /// are marked [superseded by ID].
    Search(SearchArgs),
    /// The fact graph around an entity, with validity and provenance.
    Graph {
        #[command(flatten)]
        target: AgentArgs,
        /// An entity id (`file:src/auth/token.rs`) or name (`src/auth/token.rs`).
        entity: String,
        #[arg(long, default_value_t = 2)]
        hops: usize,
        /// Only these relations, comma-separated.
        #[arg(long)]
        relations: Option<String>,
        /// Only what was valid at this RFC 3339 event time.
        #[arg(long)]
        as_of: Option<String>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print a JSON Schema, the OpenAPI document or the configuration reference, generated from the types (as checked in under schemas/ and docs/).
    Schema {
        #[arg(value_enum)]
        which: SchemaKind,
    },
    /// Distill the static embedding model from all-MiniLM-L6-v2 (after scripts/fetch-model.sh).
    Distill(crate::model::DistillArgs),
    /// Assemble an agent's budgeted context for a query.
    Context {
        #[command(flatten)]
        target: AgentArgs,
        #[arg(default_value = "")]
        query: String,
        /// Token budget (cl100k_base tokens).
        #[arg(long, default_value_t = 8000)]
        budget: usize,
        #[command(flatten)]
        signals: memory::SignalArgs,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List an agent's phases, or show one at a level of compression.
    Phase {
        #[command(flatten)]
        target: AgentArgs,
        /// The phase's id (the id of its phase_started event); without it,
        /// every phase, the task roll-ups and the session summary.
        phase_id: Option<String>,
        /// index, compressed, summary, findings, full or original.
        #[arg(long, default_value = "summary")]
        level: String,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Print the log as JSON lines, from a running server or a data dir.
    Tail {
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, default_value_t = 1)]
        from_seq: u64,
        /// Keep printing new events as they arrive.
        #[arg(long)]
        follow: bool,
        /// Read the embedded log in this data dir instead of asking a server.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Erase purged records from the log's storage now, as `mneme serve` does at its next start (the server must not be running).
    Erase {
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        /// The data dir of the stopped server.
        #[arg(long)]
        data_dir: PathBuf,
        /// The swarm.toml the server runs with (its log backend).
        #[arg(long, env = "MNEME_CONFIG")]
        config: Option<PathBuf>,
    },
    /// Rebuild an agent's memory from the log and compare it with the live one.
    Replay {
        #[command(flatten)]
        target: AgentArgs,
        /// Exit non-zero when the rebuilt digest differs from the live one.
        #[arg(long)]
        verify: bool,
        /// Work offline on this data dir (the server must not be running),
        /// against the memory persisted there.
        #[arg(long)]
        data_dir: Option<PathBuf>,
        /// The swarm.toml whose memory settings the persisted memory used.
        #[arg(long, env = "MNEME_CONFIG")]
        config: Option<PathBuf>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// The events behind an item as a timeline, or an agent's record of who recorded what and when.
    Audit {
        /// An item, fact, edge or summary id (as search and context return them).
        item_id: Option<String>,
        /// Export this agent's events instead.
        #[arg(long)]
        agent: Option<String>,
        /// Only events with `ts` at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        #[arg(long, value_enum, default_value = "table")]
        format: log::AuditFormat,
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Handoffs an agent received, pending first; --follow streams new ones, --ack acknowledges one.
    Handoffs {
        #[command(flatten)]
        target: AgentArgs,
        /// Keep printing handoffs as they are delivered.
        #[arg(long, conflicts_with = "ack")]
        follow: bool,
        /// Acknowledge this handoff (its `handoff_id`).
        #[arg(long)]
        ack: Option<String>,
        /// A note to record with --ack.
        #[arg(long, requires = "ack")]
        note: Option<String>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// An agent's core memory (role, task, constraints, pending handoffs, blocks); with --block, replace that block.
    Core {
        #[command(flatten)]
        target: AgentArgs,
        /// The block to replace.
        #[arg(long, requires = "content")]
        block: Option<String>,
        /// Its whole new content (empty clears it).
        #[arg(long, requires = "block")]
        content: Option<String>,
        #[command(flatten)]
        read: ReadArgs,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Write a note into an agent's memory (private unless --shared); prints its item id once applied.
    Note {
        #[command(flatten)]
        target: AgentArgs,
        text: String,
        #[arg(long = "tag")]
        tags: Vec<String>,
        /// 0..1.
        #[arg(long)]
        importance: Option<f32>,
        /// Every agent of the swarm may see it.
        #[arg(long)]
        shared: bool,
        /// The task it belongs to.
        #[arg(long)]
        task: Option<String>,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// What the swarm did after a seq or from a time, as an agent may see it.
    Timeline {
        #[command(flatten)]
        target: AgentArgs,
        #[arg(long)]
        since_seq: Option<u64>,
        /// An RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        #[arg(long, default_value_t = 50)]
        limit: usize,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Run consolidation now (dedup, forgetting, contradictions, links); its verdicts go to the log as events.
    Consolidate {
        /// Report what it would do and count the events of its verdicts;
        /// write nothing. A real run also writes the retrieval counts
        /// gathered since the last run (one event per agent with any), and
        /// those counts can change what it forgets.
        #[arg(long)]
        dry_run: bool,
        /// Only this agent's memory.
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// List open and resolved contradictions.
    Contradictions {
        #[arg(long)]
        agent: Option<String>,
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Resolve a contradiction: a_wins, b_wins, both_valid or merged.
    Resolve {
        contradiction_id: String,
        resolution: String,
        #[arg(long)]
        note: Option<String>,
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Erase memories from projections and snapshots (an erasure request); the log keeps a tombstone.
    Purge {
        /// Items to erase (repeatable); held by any agent unless --agent says whose.
        #[arg(long = "item")]
        items: Vec<String>,
        #[arg(long)]
        agent: Option<String>,
        /// Erase every item of --agent with an event time before this RFC 3339 time.
        #[arg(long)]
        before: Option<String>,
        #[arg(long)]
        reason: Option<String>,
        #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
        swarm: String,
        #[command(flatten)]
        server: ServerArgs,
    },
}

/// The arguments of `mneme search`.
#[derive(Args)]
struct SearchArgs {
    #[command(flatten)]
    target: AgentArgs,
    query: String,
    /// How many hits.
    #[arg(long, default_value_t = 10)]
    k: usize,
    /// bm25 (words), vector (meaning: the embedding model), graph (the
    /// fact graph around entities the query names), or hybrid: all
    /// three, fused by weighted normalised scores (`[retrieval] fusion`,
    /// or reciprocal rank with `fusion = "rrf"`).
    #[arg(long, default_value = "hybrid", value_parser = ["hybrid", "bm25", "vector", "graph"])]
    mode: String,
    /// Only these kinds, comma-separated (e.g. `decision_made,fact_asserted`).
    #[arg(long)]
    kind: Option<String>,
    /// Only items with event time at or after this RFC 3339 time.
    #[arg(long)]
    since: Option<String>,
    /// Only items with event time before this RFC 3339 time.
    #[arg(long)]
    until: Option<String>,
    /// Only items linked to this entity in the fact graph.
    #[arg(long)]
    entity: Option<String>,
    #[arg(long)]
    correlation_id: Option<String>,
    /// Show each retriever's rank and score per hit.
    #[arg(long)]
    explain: bool,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    server: ServerArgs,
}

impl SearchArgs {
    /// The search's query string, as the route reads it.
    fn parameters(&self) -> Vec<(&'static str, String)> {
        let mut parameters = vec![("q", self.query.clone()), ("k", self.k.to_string()), ("mode", self.mode.clone())];
        parameters.extend(self.read.min_seq.map(|seq| ("min_seq", seq.to_string())));
        let optional = [("kind", &self.kind), ("since", &self.since), ("until", &self.until), ("entity", &self.entity)];
        parameters.extend(optional.into_iter().filter_map(|(name, value)| value.clone().map(|value| (name, value))));
        if let Some(correlation_id) = &self.correlation_id {
            parameters.push(("correlation_id", correlation_id.clone()));
        }
        if self.explain {
            parameters.push(("explain", "true".to_string()));
        }
        parameters
    }
}

/// What `mneme schema` prints.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SchemaKind {
    /// The event envelope and every kind's payload (JSON Schema 2020-12).
    Events,
    /// Every request and answer body of the HTTP API and NATS queries.
    Api,
    /// The OpenAPI 3.1 document `GET /v1/openapi.json` serves.
    Openapi,
    /// A swarm file (`swarm.toml`), as a JSON Schema an editor can check one with.
    Config,
    /// The configuration reference (Markdown, docs/src/configuration.md).
    ConfigReference,
}

impl SchemaKind {
    /// The document, as `schemas/<file>` holds it.
    fn document(self) -> serde_json::Value {
        match self {
            SchemaKind::Events => mneme_events::schema::event_schema().to_value(),
            SchemaKind::Api => mneme_api::openapi::api_schema(),
            SchemaKind::Openapi => mneme_api::openapi::openapi(env!("CARGO_PKG_VERSION")),
            SchemaKind::Config => crate::config_reference::schema(),
            SchemaKind::ConfigReference => unreachable!("the reference is Markdown, printed as text"),
        }
    }
}

#[derive(Args, Clone)]
struct ServerArgs {
    /// Base URL of a running `mneme serve`.
    #[arg(long, env = "MNEME_SERVER", default_value = "http://127.0.0.1:7700")]
    server: String,
}

/// Read-your-writes for a read verb.
#[derive(Args, Clone)]
struct ReadArgs {
    /// Answer once the memory has applied the log up to this seq (what
    /// `mneme publish` printed as its last seq): a read right after a
    /// publish then sees what was published, on any log and any replica.
    #[arg(long)]
    min_seq: Option<u64>,
}

#[derive(Args, Clone)]
struct AgentArgs {
    #[arg(long, env = "MNEME_SWARM", default_value = "demo")]
    swarm: String,
    #[arg(long, env = "MNEME_AGENT")]
    agent: String,
}

#[derive(Args, Clone)]
pub struct ConfigArgs {
    /// A swarm's configuration file, or a folder of them (every `*.toml`
    /// in it); repeat it to serve several swarms from one process.
    /// Defaults to ./swarm.toml when it exists, else swarm.toml in Mneme's
    /// home ($MNEME_HOME, by default ~/.local/share/mneme) when it exists,
    /// else a swarm named `demo` with every setting at its default.
    #[arg(long, env = "MNEME_CONFIG")]
    config: Vec<PathBuf>,
    /// Where the embedded log and snapshots live (default: the file's
    /// `[log] data_dir`, else data/ in Mneme's home); with several swarms,
    /// each swarm's in DIR/<swarm>.
    #[arg(long, env = "MNEME_DATA_DIR")]
    data_dir: Option<PathBuf>,
    /// Run on hashed n-grams (which match spellings, not meaning) when no
    /// embedding model is found, instead of refusing to start.
    #[arg(long, env = "MNEME_ALLOW_HASHED_VECTORS")]
    allow_hashed_vectors: bool,
    /// Address the HTTP API listens on, e.g. 127.0.0.1:7700.
    #[arg(long, env = "MNEME_HTTP")]
    http: Option<SocketAddr>,
    /// Use NATS JetStream at this URL (or several comma-separated URLs of one
    /// cluster) instead of the embedded log.
    #[arg(long, env = "MNEME_NATS_URL")]
    nats: Option<String>,
}

impl ConfigArgs {
    /// Every swarm's configuration, in the order given (a folder's files
    /// by name), with flags and environment on top.
    pub fn load_all(&self) -> anyhow::Result<Vec<SwarmConfig>> {
        let mut configs = Vec::new();
        if self.config.is_empty() {
            configs.push(load_config_file(None)?);
        }
        for path in &self.config {
            if path.is_dir() {
                let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                    .with_context(|| format!("reading the folder of swarm files {}", path.display()))?
                    .filter_map(|entry| entry.ok().map(|entry| entry.path()))
                    .filter(|file| file.extension().is_some_and(|extension| extension == "toml"))
                    .collect();
                files.sort();
                if files.is_empty() {
                    anyhow::bail!("the folder {} holds no swarm file (*.toml)", path.display());
                }
                for file in files {
                    configs.push(load_config_file(Some(&file))?);
                }
            } else {
                configs.push(load_config_file(Some(path))?);
            }
        }
        let several = configs.len() > 1;
        for config in &mut configs {
            if let Some(data_dir) = &self.data_dir {
                config.log.data_dir = if several { data_dir.join(&config.swarm.name) } else { data_dir.clone() };
                // Several swarms in DIR/<swarm>: the system layer beside them,
                // in DIR/system, whichever file comes first.
                if several {
                    config.log.system_data_dir = Some(data_dir.join(mneme_actors::SYSTEM_SWARM));
                }
            }
            if let Some(http) = self.http {
                config.http.bind = http;
            }
            if self.allow_hashed_vectors {
                config.embedder.allow_hashed_fallback = true;
            }
            if let Some(url) = &self.nats {
                config.log.backend = LogBackend::Nats;
                config.log.nats_url = url.clone();
            }
        }
        Ok(configs)
    }

    /// The one swarm's configuration, for a verb that works on one.
    pub fn load(&self) -> anyhow::Result<SwarmConfig> {
        let mut configs = self.load_all()?;
        if configs.len() > 1 {
            let names: Vec<&str> = configs.iter().map(|config| config.swarm.name.as_str()).collect();
            anyhow::bail!("this verb works on one swarm; --config gave {}: give one", names.join(", "));
        }
        Ok(configs.remove(0))
    }
}

fn load_config_file(path: Option<&std::path::Path>) -> anyhow::Result<SwarmConfig> {
    if let Some(path) = path {
        return Ok(SwarmConfig::load(path)?);
    }
    let defaults = [PathBuf::from("swarm.toml"), mneme_actors::swarm_config::mneme_home().join("swarm.toml")];
    match defaults.iter().find(|path| path.is_file()) {
        Some(path) => Ok(SwarmConfig::load(path)?),
        None => Ok(SwarmConfig::with_name("demo")),
    }
}

/// Parses the command line, sets up logging and runs the verb.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&cli.log).unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        // Colour codes only for a person at a terminal, not in log files.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    crate::client::use_api_token(cli.token);
    match run(cli.command, cli.json) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs one verb, each arm handing its arguments to the function that does it.
fn run(command: Command, json: bool) -> anyhow::Result<ExitCode> {
    match command {
        Command::Serve(args) => serve(&args),
        Command::Mcp { agent, server: Some(server), .. } => {
            crate::mcp::stdio::bridge(&server, &agent)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Mcp { agent, server: None, config } => serve_mcp_stdio(agent, &config),
        Command::Publish { file, batch, server } => log::publish(&server.server, &file, batch, json),
        Command::Search(search) => {
            let (server, target) = (&search.server.server, &search.target);
            memory::search(server, &target.swarm, &target.agent, &search.parameters(), search.explain, json)
        }
        Command::Graph { target, entity, hops, relations, as_of, read, server } => {
            let mut parameters = vec![("entity", entity), ("hops", hops.to_string())];
            parameters.extend(read.min_seq.map(|seq| ("min_seq", seq.to_string())));
            parameters.extend(relations.map(|relations| ("relations", relations)));
            parameters.extend(as_of.map(|as_of| ("as_of", as_of)));
            memory::graph(&server.server, &target.swarm, &target.agent, &parameters, json)
        }
        Command::Schema { which: SchemaKind::ConfigReference } => {
            print!("{}", crate::config_reference::markdown());
            Ok(ExitCode::SUCCESS)
        }
        Command::Schema { which } => {
            out!("{}", serde_json::to_string_pretty(&which.document())?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Distill(args) => crate::model::run_distill(&args),
        Command::Context { target, query, budget, signals, read, server } => {
            let read = memory::ReadAs { min_seq: read.min_seq, json };
            memory::context(&server.server, &target.swarm, &target.agent, &query, budget, &signals, read)
        }
        Command::Phase { target, phase_id, level, read, server } => {
            let (server, swarm, agent) = (&server.server, &target.swarm, &target.agent);
            memory::phase(server, swarm, agent, phase_id.as_deref(), &level, read.min_seq, json)
        }
        Command::Core { target, block, content, read, server } => {
            memory::core(&server.server, &target.swarm, &target.agent, block.zip(content), read.min_seq, json)
        }
        Command::Note { target, text, tags, importance, shared, task, server } => {
            let scope = shared.then(|| "shared".to_string());
            let note = mneme_api::agent_memory::NoteBody { text, tags, importance, scope, task };
            memory::note(&server.server, &target.swarm, &target.agent, note, json)
        }
        Command::Timeline { target, since_seq, since, limit, server } => {
            memory::timeline(&server.server, &target.swarm, &target.agent, since_seq, since.as_deref(), limit, json)
        }
        Command::Handoffs { target, follow, ack, note, read, server } => {
            let (ack, note, read) = (ack.as_deref(), note.as_deref(), memory::ReadAs { min_seq: read.min_seq, json });
            memory::handoffs(&server.server, &target.swarm, &target.agent, follow, ack, note, read)
        }
        Command::Tail { swarm, agent, from_seq, follow, data_dir, server } => match data_dir {
            Some(data_dir) => {
                actix::System::new().block_on(offline::tail(&data_dir, &swarm, agent.as_deref(), from_seq, follow))
            }
            None => log::tail(&server.server, &swarm, agent.as_deref(), from_seq, follow),
        },
        Command::Erase { swarm, data_dir, config } => {
            let swarm_config = offline_config(config.as_deref(), swarm, data_dir)?;
            actix::System::new().block_on(offline::erase(&swarm_config, json))
        }
        Command::Replay { target, verify, data_dir, config, read, server } => match data_dir {
            Some(data_dir) => {
                let swarm_config = offline_config(config.as_deref(), target.swarm.clone(), data_dir)?;
                actix::System::new().block_on(offline::replay(&swarm_config, &target.agent, verify, json))
            }
            None => memory::replay(&server.server, &target.swarm, &target.agent, verify, read.min_seq, json),
        },
        Command::Audit { item_id, agent, since, format, swarm, read, server } => {
            // --json is the JSON-lines format.
            let format = if json { log::AuditFormat::Jsonl } else { format };
            let (item_id, agent, since) = (item_id.as_deref(), agent.as_deref(), since.as_deref());
            log::audit(&server.server, &swarm, item_id, agent, since, format, read.min_seq)
        }
        Command::Consolidate { dry_run, agent, swarm, server } => {
            consolidation::consolidate(&server.server, &swarm, agent.as_deref(), dry_run, json)
        }
        Command::Contradictions { agent, swarm, server } => {
            consolidation::contradictions(&server.server, &swarm, agent.as_deref(), json)
        }
        Command::Resolve { contradiction_id, resolution, note, swarm, server } => {
            consolidation::resolve(&server.server, &swarm, &contradiction_id, &resolution, note.as_deref(), json)
        }
        Command::Purge { items, agent, before, reason, swarm, server } => {
            if items.is_empty() && before.is_none() {
                anyhow::bail!("mneme purge needs --item ID (repeatable) or --agent A --before TIME");
            }
            consolidation::purge(
                &server.server,
                &swarm,
                agent.as_deref(),
                &items,
                before.as_deref(),
                reason.as_deref(),
                json,
            )
        }
    }
}

/// `mneme serve`: the memory service until SIGINT or SIGTERM.
fn serve(args: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let config = args.load_all()?;
    actix::System::new().block_on(async {
        let (failed_to_listen, signal) = tokio::sync::oneshot::channel();
        let shutdown = async move {
            if let Err(error) = crate::server::shutdown_signal().await {
                let _ = failed_to_listen.send(error);
            }
        };
        // A signal handler that cannot be installed is an error,
        // as before; the server then stops at once.
        let served = crate::server::serve(config, shutdown).await;
        if let Ok(error) = signal.await {
            return Err(error);
        }
        served
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `mneme mcp` without `--server`: the memory service in this process,
/// serving `agent`'s tools on stdio until the host closes stdin.
fn serve_mcp_stdio(agent: String, config: &ConfigArgs) -> anyhow::Result<ExitCode> {
    let config = config.load()?;
    let front = crate::server::Front::McpStdio(agent);
    actix::System::new().block_on(async {
        let shutdown = async {
            if crate::server::shutdown_signal().await.is_err() {
                std::future::pending::<()>().await;
            }
        };
        crate::server::run(vec![config], front, shutdown).await
    })?;
    // Stdin's reader may still be blocked in a read the host never
    // ends: the snapshots are written, leave without waiting for it.
    std::process::exit(0);
}

/// The configuration of an offline verb on a stopped server's data dir.
fn offline_config(config: Option<&std::path::Path>, swarm: String, data_dir: PathBuf) -> anyhow::Result<SwarmConfig> {
    let mut swarm_config = load_config_file(config).context("loading the swarm configuration")?;
    swarm_config.swarm.name = swarm;
    swarm_config.log.data_dir = data_dir;
    Ok(swarm_config)
}
