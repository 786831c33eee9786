//! `mneme-tools`: what measures Mneme rather than runs it — the benchmarks
//! (`mneme-tools bench …`, figures in BENCHMARKS.md) and the memory-quality
//! evaluation (`mneme-tools eval`). Kept out of the production binary
//! `mneme`; both link the same library, and what they measure over HTTP is
//! a `mneme serve` process started from the `mneme` binary beside this one.

#[macro_use]
extern crate mneme;

mod bench;
mod eval;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "mneme-tools", version, about = "Benchmarks and the memory-quality evaluation of Mneme")]
struct Tools {
    /// Log filter, e.g. `info` or `mneme=debug,info`.
    #[arg(long, env = "MNEME_LOG", default_value = "info,hnsw_rs=warn,tantivy=warn", global = true)]
    log: String,
    #[command(subcommand)]
    command: Tool,
}

#[derive(Subcommand)]
enum Tool {
    /// Measure throughput, latency, restart and memory, each as a ratio to a baseline in the same run.
    Bench(bench::BenchArgs),
    /// Evaluate memory quality on a generated swarm with ground truth: retrieval per mode and question type, contradictions, dedup, forgetting, compression, context budgets.
    Eval(eval::EvalArgs),
}

fn main() -> ExitCode {
    let tools = Tools::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_new(&tools.log).unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let ran = match tools.command {
        Tool::Bench(args) => actix::System::new().block_on(bench::run(args)),
        Tool::Eval(args) => eval::run(args),
    };
    match ran {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The `mneme` binary whose `serve` the tools measure: `$MNEME_BIN`, or
/// the `mneme` beside this binary (cargo builds both into one directory).
pub fn mneme_binary() -> anyhow::Result<PathBuf> {
    if let Some(path) = std::env::var_os("MNEME_BIN") {
        return Ok(PathBuf::from(path));
    }
    let tools = std::env::current_exe().context("finding this binary")?;
    let beside = tools.with_file_name(format!("mneme{}", std::env::consts::EXE_SUFFIX));
    anyhow::ensure!(
        beside.exists(),
        "no mneme binary at {}: build it (`cargo build --release`) or set MNEME_BIN",
        beside.display()
    );
    Ok(beside)
}
