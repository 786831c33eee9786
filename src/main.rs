//! `mneme`: the memory of multi-agent LLM swarms. The binary only
//! dispatches: the verbs live in [`mneme::cli`], the server in
//! [`mneme::server`]. Benchmarks and the evaluation are another binary,
//! `mneme-tools` (`tools/`).

fn main() -> std::process::ExitCode {
    mneme::cli::main()
}
