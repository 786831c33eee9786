//! Issue 37: the README's five-minute tour runs as written. The blocks
//! between `<!-- tour:begin -->` and `<!-- tour:end -->` are run by bash
//! from the repository's root, with this build's `mneme` first on `PATH`:
//! the `# terminal 1` block (`mneme serve`) in the background, every
//! `# terminal 2` block after it, in order, each of which must succeed.
//! Only where the server listens and keeps its data is changed, through
//! the environment (`MNEME_HTTP`, `MNEME_SERVER`, `MNEME_DATA_DIR`), so
//! that the tour runs beside other servers.

mod common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{MNEME, free_port};

/// The tour's shell blocks: (terminal, the block's text).
fn tour_blocks(readme: &str) -> Vec<(u8, String)> {
    let begin = readme.find("<!-- tour:begin -->").expect("README.md has <!-- tour:begin -->");
    let end = readme.find("<!-- tour:end -->").expect("README.md has <!-- tour:end -->");
    let tour = &readme[begin..end];
    let mut blocks = Vec::new();
    let mut rest = tour;
    while let Some(start) = rest.find("```sh\n") {
        let body_start = start + "```sh\n".len();
        let body_end = body_start + rest[body_start..].find("```").expect("a closed ```sh block");
        let body = &rest[body_start..body_end];
        let terminal = match body.lines().next() {
            Some("# terminal 1") => 1,
            Some("# terminal 2") => 2,
            other => panic!("a tour block must begin with # terminal 1 or # terminal 2, not {other:?}"),
        };
        blocks.push((terminal, body.to_string()));
        rest = &rest[body_end + 3..];
    }
    blocks
}

#[test]
fn the_readme_tour_runs_as_written() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = tour_blocks(&readme);
    assert_eq!(blocks.iter().filter(|(terminal, _)| *terminal == 1).count(), 1, "one block for terminal 1");
    assert!(blocks.len() >= 4, "the tour has {} blocks", blocks.len());
    // The repository's swarm.toml asks for the model.
    common::ensure_static_model();

    let data = tempfile::tempdir().unwrap();
    let port = free_port();
    let url = format!("http://127.0.0.1:{port}");
    let bin = Path::new(MNEME).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let bash = |block: &str| {
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", block])
            .current_dir(root)
            .env("PATH", &path)
            .env("MNEME_HTTP", format!("127.0.0.1:{port}"))
            .env("MNEME_SERVER", &url)
            .env("MNEME_DATA_DIR", data.path())
            .env_remove("MNEME_CONFIG")
            .env_remove("MNEME_TOKEN");
        command
    };

    let (_, serve) = blocks.iter().find(|(terminal, _)| *terminal == 1).unwrap();
    // In a process group of its own, so that the whole block is stopped.
    let mut server = bash(serve).stdout(Stdio::null()).stderr(Stdio::null()).process_group(0).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while ureq::get(&format!("{url}/healthz")).call().is_err() {
        assert!(server.try_wait().unwrap().is_none(), "the tour's `mneme serve` exited");
        assert!(Instant::now() < deadline, "the tour's server did not answer within a minute");
        std::thread::sleep(Duration::from_millis(100));
    }

    let mut printed = String::new();
    for (_, block) in blocks.iter().filter(|(terminal, _)| *terminal == 2) {
        let output = bash(block).output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "the tour's block\n{block}\nfailed ({}):\n{stdout}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        printed.push_str(&stdout);
    }
    // What the tour's prose says the reader will see.
    assert!(printed.contains("published 572 events"), "{printed}");
    assert!(printed.contains("[superseded by "), "no superseded hit marked:\n{printed}");
    assert!(printed.contains("MATCH") && !printed.contains("MISMATCH"), "{printed}");

    let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", server.id())]).status();
    let deadline = Instant::now() + Duration::from_secs(30);
    while server.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the tour's server did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}
