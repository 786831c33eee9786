//! Issue 22: the web view at `/ui`, driven in a real headless browser.
//! `mneme serve` with API tokens, the example trajectory published; then
//! `tests/ui/views.mjs` (playwright-core from `ui/node_modules`, Debian's
//! Chromium) signs in with a wrong token and the right one, reads the
//! timeline, filters it, and searches a memory, failing on any console
//! error. Screenshots of each view are kept in
//! `target/tmp/ui-screenshots/`. Installed by
//! `scripts/install-ui-test-deps.sh` (which `scripts/test.sh` runs);
//! without Chromium, Node or playwright-core the test fails, naming what
//! is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{MnemeServer, example_path, last_seq_of_publish, reviewer_and_tokens, stdout_of};
use serde_json::Value;

const ADMIN: &str = "ui-admin-secret-0123";
const CODER_ONLY: &str = "ui-coder-secret-0123";

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("MNEME_CHROMIUM").map(PathBuf::from).unwrap_or_else(|| "/usr/bin/chromium".into());
    assert!(path.exists(), "no Chromium at {}: run scripts/install-ui-test-deps.sh", path.display());
    path
}

fn ui_dir() -> PathBuf {
    let dir = repo_root().join("ui");
    assert!(
        dir.join("node_modules/playwright-core/package.json").exists(),
        "no playwright-core in ui/node_modules: run scripts/install-ui-test-deps.sh"
    );
    dir
}

#[test]
fn the_web_view_signs_in_shows_the_timeline_and_searches_a_memory_in_a_real_browser() {
    let (chromium, ui_dir) = (chromium(), ui_dir());
    let work = tempfile::tempdir().unwrap();
    let config = reviewer_and_tokens(&[("admin", ADMIN, None), ("coder-only", CODER_ONLY, Some("coder"))]);
    let running = MnemeServer::start_with(work.path(), None, &config);
    let server = running.view_with_token(ADMIN);
    let published = stdout_of(&server.cli(&["publish", example_path().to_str().unwrap()]));
    let last_seq = last_seq_of_publish(&published);
    for agent in ["planner", "coder", "reviewer"] {
        let (status, body) =
            server.get_as(Some(ADMIN), &format!("/v1/swarms/demo/agents/{agent}/digest?min_seq={last_seq}"));
        assert_eq!(status, 200, "{body}");
    }
    // The page itself needs no token; it holds no data.
    let page = ureq::get(&format!("{}/ui", server.url)).call().unwrap();
    assert!(page.header("content-security-policy").is_some_and(|policy| policy.contains("default-src 'self'")));
    let html = page.into_string().unwrap();
    assert!(html.contains(r#"content="demo""#) && html.contains(r#"content="token""#), "{html}");

    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let node = std::env::var("MNEME_NODE").unwrap_or_else(|_| "node".to_string());
    let output = Command::new(&node)
        .arg(repo_root().join("tests/ui/views.mjs"))
        .env("MNEME_UI_URL", &server.url)
        .env("MNEME_UI_TOKEN", ADMIN)
        .env("MNEME_UI_AGENT_TOKEN", CODER_ONLY)
        .env("MNEME_UI_SHOTS", &shots)
        .env("MNEME_UI_DIR", &ui_dir)
        .env("MNEME_CHROMIUM", &chromium)
        .output()
        .unwrap_or_else(|error| panic!("running {node}: {error}; run scripts/install-ui-test-deps.sh"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the browser script failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let saw: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default()).unwrap();

    let wrong = saw["wrongToken"].as_str().unwrap();
    assert!(wrong.contains("does not open swarm demo"), "{wrong}");
    let bound = saw["agentToken"].as_str().unwrap();
    assert!(bound.contains("bound to one agent"), "{bound}");
    // Named, the agent-bound token sees that agent only.
    assert_eq!(saw["boundAgents"], serde_json::json!(["coder"]), "{saw}");
    assert_eq!(saw["boundTimelineLink"], Value::Bool(false), "no swarm-wide view for an agent's token");
    assert!(saw["boundHits"].as_u64().unwrap() > 0, "{saw}");
    let rows = saw["timelineRows"].as_u64().unwrap();
    assert_eq!(rows, last_seq.min(500), "every event, up to the 500 newest: {saw}");
    let kinds: Vec<&str> = saw["kinds"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(kinds.contains(&"decision_made") && kinds.contains(&"tool_result_recorded"), "{kinds:?}");
    let decisions = saw["coderDecisions"].as_array().unwrap();
    assert!(!decisions.is_empty(), "{saw}");
    for row in decisions {
        assert_eq!((row[0].as_str(), row[1].as_str()), (Some("coder"), Some("decision_made")), "{row}");
    }
    // The agent's item states as the API counts them, and its core memory.
    let (_, states) = server.get_as(Some(ADMIN), "/v1/swarms/demo/agents/coder/items");
    let shown = saw["itemStates"].as_str().unwrap();
    for (state, count) in states["states"].as_object().unwrap() {
        assert!(shown.contains(&format!("{count} {state}")), "{shown} against {states}");
    }
    assert!(!saw["coreTask"].as_str().unwrap().is_empty(), "{saw}");
    let hits = saw["hits"].as_array().unwrap();
    assert!(hits.iter().any(|hit| hit["text"].as_str().unwrap().to_lowercase().contains("refresh")), "{hits:?}");
    assert!(hits.iter().all(|hit| hit["explain"].as_str().unwrap().starts_with("found by ")), "{hits:?}");
    // The first hit's provenance: its creating event first (its id is the
    // item's), in log order, each the event as it is on the log.
    let first = saw["firstHit"].as_str().unwrap();
    let events = saw["provenance"].as_array().unwrap();
    assert_eq!(events[0]["json"]["id"].as_str(), Some(first), "{events:?}");
    let seqs: Vec<u64> = events.iter().map(|event| event["seq"].as_u64().unwrap()).collect();
    assert!(seqs.windows(2).all(|pair| pair[0] < pair[1]), "in log order: {seqs:?}");
    let (_, on_log) = server.get_as(Some(ADMIN), &format!("/v1/swarms/demo/events?from_seq={}&limit=1", seqs[0]));
    assert_eq!(events[0]["json"], on_log["events"][0], "the event as the log has it");
    assert_eq!(saw["consoleErrors"], Value::Array(Vec::new()), "console errors in the page");
    for shot in ["agent-token.png", "timeline.png", "timeline-filtered.png", "memory-search.png", "provenance.png"] {
        let bytes = std::fs::metadata(shots.join(shot)).map(|meta| meta.len()).unwrap_or(0);
        assert!(bytes > 10_000, "{shot}: {bytes} bytes");
    }
}
