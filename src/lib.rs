//! Mneme's server and command line, as a library behind two thin binaries:
//! `mneme` (`src/main.rs`: serve, publish, query, replay, audit) and
//! `mneme-tools` (`tools/`: benchmarks and the evaluation).
//!
//! - [`service`]: every query and command, transport-neutral: what HTTP,
//!   NATS and (next) MCP answer is computed here, once.
//! - [`http`]: the HTTP API, routes a few lines each, bearer tokens.
//! - [`nats`]: the same queries over NATS request/reply.
//! - [`server`]: `mneme serve`: opens the log, starts the actors, runs the
//!   transports until its shutdown future resolves.
//! - [`client`]: the typed HTTP client of the wire contract (the wire types
//!   of `mneme-api`), used by the CLI verbs, the MCP stdio relay and the
//!   tools.
//! - [`cli`]: the `mneme` verbs.
//! - [`model`]: embedding models on the binary's side; [`progress`]: the
//!   long verbs' progress bars, on a terminal only.

/// `println!` that ends the program quietly when stdout is a closed pipe.
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::print_line(format_args!($($arg)*)) };
}

pub mod cli;
pub mod client;
pub mod config_reference;
pub mod http;
pub mod mcp;
pub mod model;
pub mod nats;
pub mod progress;
pub mod render;
pub mod server;
pub mod service;
pub mod ui;

/// Prints a line to stdout; a closed pipe (`mneme tail | head`) ends the
/// program quietly instead of panicking.
pub fn print_line(line: impl std::fmt::Display) {
    use std::io::Write;
    let written = progress::suspended(|| writeln!(std::io::stdout().lock(), "{line}"));
    if let Err(error) = written {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        panic!("cannot write to stdout: {error}");
    }
}
