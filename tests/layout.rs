//! The code's layout, as ARCHITECTURE.md states it, held to the tree:
//! files are split by job long before 1,000 lines, and the service layer
//! and the NATS transport know nothing of HTTP.

use std::path::{Path, PathBuf};

const MAX_LINES: usize = 1000;

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`, leaving out build output, virtualenvs and
/// test folders.
fn rust_files(dir: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(name.as_str(), "target" | "tests" | ".venv" | ".git" | "node_modules") {
                rust_files(&path, found);
            }
        } else if name.ends_with(".rs") {
            found.push(path);
        }
    }
}

#[test]
fn no_source_file_outside_tests_reaches_a_thousand_lines() {
    let mut files = Vec::new();
    rust_files(repo_root(), &mut files);
    assert!(files.len() > 100, "found only {} files", files.len());
    let long: Vec<String> = files
        .iter()
        .filter_map(|path| {
            let lines = std::fs::read_to_string(path).unwrap().lines().count();
            (lines > MAX_LINES)
                .then(|| format!("{} ({lines} lines)", path.strip_prefix(repo_root()).unwrap().display()))
        })
        .collect();
    assert!(long.is_empty(), "split these by job: {long:?}");
}

#[test]
fn the_service_layer_and_the_nats_transport_do_not_know_http() {
    for folder in ["src/service", "src/nats"] {
        let mut files = Vec::new();
        rust_files(&repo_root().join(folder), &mut files);
        assert!(!files.is_empty(), "{folder} has no files");
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            // Code, not the comments that point the reader to the HTTP side.
            let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
            for http in ["crate::http", "actix_web", "ureq"] {
                let uses = code.iter().find(|line| line.contains(http));
                assert!(uses.is_none(), "{} uses {http}: {uses:?}", path.display());
            }
        }
    }
}

/// The typed HTTP client is `mneme::client`, not part of the command line:
/// the MCP stdio relay and the tools speak HTTP through it, and nothing
/// outside `src/cli/` reaches into the CLI's verbs, except the `mneme`
/// binary, which only calls `cli::main`.
#[test]
fn nothing_outside_the_cli_imports_from_it() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    rust_files(&repo_root().join("tools"), &mut files);
    let cli = repo_root().join("src/cli");
    let binary = repo_root().join("src/main.rs");
    let outside: Vec<&PathBuf> = files.iter().filter(|path| !path.starts_with(&cli) && **path != binary).collect();
    assert!(outside.len() > 40, "found only {} files outside src/cli", outside.len());
    for path in outside {
        let text = std::fs::read_to_string(path).unwrap();
        let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
        for cli_path in ["crate::cli", "mneme::cli", "super::cli"] {
            let uses = code.iter().find(|line| names_path(line, cli_path));
            assert!(uses.is_none(), "{} uses {cli_path}: {uses:?}", path.display());
        }
    }
}

/// Whether `line` names the module path `path` itself (`crate::cli`,
/// `crate::cli::x`), not one it is the start of (`crate::client`).
fn names_path(line: &str, path: &str) -> bool {
    line.match_indices(path).any(|(at, _)| {
        let next = line[at + path.len()..].chars().next();
        !next.is_some_and(|next| next.is_alphanumeric() || next == '_')
    })
}

/// The crates' floors, as ARCHITECTURE.md's code map lays them out: each
/// crate depends only on the Mneme crates below it, so no import can run
/// back up (`index` knows no event, `projections` no log, `api` no memory,
/// `actors` no wire type: answers are built in `src/service/`).
#[test]
fn each_crate_depends_only_on_the_crates_below_it() {
    let floors: [(&str, &[&str]); 6] = [
        ("events", &[]),
        ("index", &[]),
        ("nats", &["mneme-events"]),
        ("projections", &["mneme-events", "mneme-index"]),
        ("api", &["mneme-events"]),
        ("actors", &["mneme-events", "mneme-index", "mneme-nats", "mneme-projections"]),
    ];
    for (crate_dir, allowed) in floors {
        let manifest = std::fs::read_to_string(repo_root().join(crate_dir).join("Cargo.toml")).unwrap();
        let mut in_dependencies = false;
        let mut found = Vec::new();
        for line in manifest.lines() {
            if line.starts_with('[') {
                in_dependencies = line == "[dependencies]";
            } else if in_dependencies && line.starts_with("mneme-") {
                found.push(line.split(['.', ' ', '=']).next().unwrap().to_string());
            }
        }
        found.sort();
        assert_eq!(found, allowed, "{crate_dir}/Cargo.toml's Mneme dependencies");
    }
}

/// Each query to a memory actor is its own message with its own answer
/// (`mneme_actors::queries`), so the service never matches on an answer it
/// did not ask for.
#[test]
fn the_service_layer_has_no_unreachable_arms() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src/service"), &mut files);
    assert!(!files.is_empty());
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let code: Vec<&str> = text.lines().filter(|line| !line.trim_start().starts_with("//")).collect();
        let found = code.iter().find(|line| line.contains("unreachable!"));
        assert!(found.is_none(), "{}: {found:?}", path.display());
    }
}
