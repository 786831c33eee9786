//! The Grafana dashboard `deploy/grafana/mneme.json`: importable (a title, a
//! uid, every panel on the templated Prometheus data source, unique ids, no
//! empty row), and naming only series `mneme serve` really exposes at
//! `/metrics`, with the suffixes its exporter gives them: a real server on
//! the embedded log is sent the example trajectory, queries and a
//! consolidation, and every metric name in the dashboard's queries must be a
//! series of its `/metrics`. The few counters that ordinary traffic cannot
//! make appear (panics, refusals, NATS) are listed with the reason, and are
//! checked against the metrics the source emits instead.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::llm_server::FakeLlmServer;
use common::{MnemeServer, example_path, last_seq_of_publish, stdout_of};
use serde_json::Value;

/// The dashboard, from the repository root.
const DASHBOARD: &str = "deploy/grafana/mneme.json";

/// The data source every panel and query must use: the dashboard's
/// `datasource` variable, of type prometheus.
const DATASOURCE_UID: &str = "${datasource}";

/// Metrics the dashboard shows that the test's traffic cannot make appear on
/// `/metrics` (the exporter lists a counter only once it is incremented),
/// with why. These are checked against the metrics the source emits.
const NOT_PRODUCED_BY_THE_TEST: &[(&str, &str)] = &[
    ("mneme_apply_panics_total", "only when applying an event panics, which is a bug"),
    ("mneme_queries_refused_total", "only when a caller exceeds http.max_queries_in_flight: a race to provoke"),
    ("mneme_publishes_refused_total", "only when a caller publishes past its quota (http.publish_*)"),
    (
        "mneme_handoffs_undeliverable_total",
        "only for a handoff that can never be delivered; test servers admit unknown agents",
    ),
    ("mneme_consolidation_verdicts_dropped_total", "only when a single verdict is larger than log.max_event_bytes"),
    ("mneme_events_erased_total", "only once a purge erased something; this test purges nothing"),
    (
        "mneme_enrichment_backlog",
        "only with a deep model ([enrichment]); test servers run none (tests/enrichment.rs reads it)",
    ),
    ("mneme_enrichment_vectors_total", "only with a deep model ([enrichment]), which test servers do not run"),
    ("mneme_enrichment_batch_seconds", "only with a deep model ([enrichment]), which test servers do not run"),
    ("mneme_nats_queries_total", "only for queries over NATS; this server runs on the embedded log"),
    ("mneme_nats_queries_refused_total", "only for queries over NATS; this server runs on the embedded log"),
    ("mneme_log_tail_lost_events", "only when a start finds snapshots past the log's end (tests/lost_tail.rs)"),
    ("mneme_log_tail_lost_memories_total", "only when a start finds snapshots past the log's end (tests/lost_tail.rs)"),
    ("mneme_log_tail_lost_positions_total", "only when a stored position is past the log's end"),
    ("mneme_placement_held", "only for swarms with [placement], on NATS (tests/placement.rs)"),
    ("mneme_placement_moves_total", "only for swarms with [placement], on NATS (tests/placement.rs)"),
];

/// What a `metrics::{counter,gauge,histogram}!` emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Counter,
    Gauge,
    Histogram,
}

fn repository_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn dashboard() -> Value {
    let path = repository_root().join(DASHBOARD);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{DASHBOARD} is not JSON: {error}"))
}

/// Every panel that is not a row, with the row it is in: rows that are
/// expanded are followed by their panels, collapsed ones hold them.
fn panels_by_row(dashboard: &Value) -> Vec<(Option<String>, &Value)> {
    let mut found = Vec::new();
    let mut row: Option<String> = None;
    for panel in dashboard["panels"].as_array().expect("the dashboard has a panels array") {
        if panel["type"] == "row" {
            row = Some(panel["title"].as_str().unwrap_or_default().to_string());
            for nested in panel["panels"].as_array().into_iter().flatten() {
                found.push((row.clone(), nested));
            }
        } else {
            found.push((row.clone(), panel));
        }
    }
    found
}

/// Every PromQL query of the dashboard, with where it is: each panel's
/// targets, and the query variables of the templating.
fn queries(dashboard: &Value) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (_, panel) in panels_by_row(dashboard) {
        let title = panel["title"].as_str().unwrap_or_default();
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap_or_else(|| panic!("panel {title:?}: a target without expr"));
            found.push((format!("panel {title:?}"), expr.to_string()));
        }
    }
    for variable in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if variable["type"] == "query" {
            let name = variable["name"].as_str().unwrap_or_default();
            let query = match &variable["query"] {
                Value::String(query) => query.clone(),
                query => query["query"].as_str().unwrap_or_default().to_string(),
            };
            found.push((format!("variable ${name}"), query));
        }
    }
    found
}

fn is_name_char(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '_' || character == ':'
}

/// The metric names (identifiers starting with `mneme_`) in a PromQL
/// expression, outside its string literals.
fn metric_names(expr: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut characters = expr.char_indices().peekable();
    let mut previous = ' ';
    while let Some((start, character)) = characters.next() {
        if matches!(character, '"' | '\'' | '`') {
            let mut escaped = false;
            for (_, inside) in characters.by_ref() {
                if !escaped && inside == character {
                    break;
                }
                escaped = !escaped && inside == '\\' && character != '`';
            }
            previous = character;
            continue;
        }
        if is_name_char(character) && !is_name_char(previous) && previous != '$' {
            let mut end = start + character.len_utf8();
            while let Some(&(index, next)) = characters.peek() {
                if !is_name_char(next) {
                    break;
                }
                end = index + next.len_utf8();
                characters.next();
            }
            let name = &expr[start..end];
            if name.starts_with("mneme_") {
                names.insert(name.to_string());
            }
            previous = 'a';
            continue;
        }
        previous = character;
    }
    names
}

/// The workspace's crates' source directories, from `Cargo.toml`.
fn source_dirs() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(repository_root().join("Cargo.toml")).unwrap();
    let members = manifest
        .lines()
        .find(|line| line.trim_start().starts_with("members"))
        .expect("Cargo.toml lists the workspace members");
    let mut dirs = vec![repository_root().join("src")];
    dirs.extend(members.split('"').skip(1).step_by(2).map(|member| repository_root().join(member).join("src")));
    dirs
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|extension| extension == "rs") {
            files.push(path);
        }
    }
}

/// Every metric the source emits, by name: the literal first argument of
/// each `counter!`, `gauge!` and `histogram!` in the workspace's crates.
fn emitted_in_source() -> BTreeMap<String, Kind> {
    let mut files = Vec::new();
    for dir in source_dirs() {
        rust_files(&dir, &mut files);
    }
    let mut emitted = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (macro_name, kind) in
            [("counter!(", Kind::Counter), ("gauge!(", Kind::Gauge), ("histogram!(", Kind::Histogram)]
        {
            for (index, _) in text.match_indices(macro_name) {
                // `describe_counter!(`, `my_gauge!(` and the like are other macros.
                if text[..index].chars().next_back().is_some_and(|before| before.is_alphanumeric() || before == '_') {
                    continue;
                }
                let arguments = text[index + macro_name.len()..].trim_start();
                let line = text[..index].lines().count();
                let name = arguments
                    .strip_prefix('"')
                    .and_then(|rest| rest.split_once('"'))
                    .map(|(name, _)| name)
                    .unwrap_or_else(|| {
                        panic!(
                            "{}:{line}: a metric whose name is not a string literal; this test reads literal \
                             names only",
                            file.display()
                        )
                    });
                if let Some(other) = emitted.insert(name.to_string(), kind)
                    && other != kind
                {
                    panic!("{name} is emitted both as a {other:?} and as a {kind:?}");
                }
            }
        }
    }
    assert!(emitted.len() >= 20, "the source scan found too few metrics: {emitted:?}");
    emitted
}

/// A `/metrics` text: the name of every series (sample line), and the type
/// of every metric family (`# TYPE` line).
struct Exposition {
    series: BTreeSet<String>,
    types: BTreeMap<String, String>,
}

fn parse_exposition(text: &str) -> Exposition {
    let mut series = BTreeSet::new();
    let mut types = BTreeMap::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty()) {
        if let Some(declared) = line.strip_prefix("# TYPE ") {
            let (name, kind) = declared.split_once(' ').unwrap_or_else(|| panic!("a bad TYPE line: {line}"));
            types.insert(name.to_string(), kind.trim().to_string());
        } else if !line.starts_with('#') {
            let end = line.find(['{', ' ']).unwrap_or_else(|| panic!("a sample line without a value: {line}"));
            series.insert(line[..end].to_string());
        }
    }
    Exposition { series, types }
}

fn scrape(server: &MnemeServer) -> Exposition {
    let response = ureq::get(&format!("{}/metrics", server.url)).call().expect("GET /metrics answers");
    parse_exposition(&response.into_string().unwrap())
}

/// The series names a metric of the source may have on `/metrics`: a
/// counter's or gauge's own name; a histogram's depend on how the exporter
/// renders histograms (`summary`: the quantiles under its name, `_sum`,
/// `_count`; `histogram`: `_bucket`, `_sum`, `_count`).
fn series_of(name: &str, kind: Kind, histogram_type: &str) -> Vec<String> {
    match (kind, histogram_type) {
        (Kind::Counter | Kind::Gauge, _) => vec![name.to_string()],
        (Kind::Histogram, "summary") => vec![name.to_string(), format!("{name}_sum"), format!("{name}_count")],
        (Kind::Histogram, "histogram") => {
            vec![format!("{name}_bucket"), format!("{name}_sum"), format!("{name}_count")]
        }
        (Kind::Histogram, other) => panic!("histograms rendered as {other:?}, which this test does not know"),
    }
}

/// The metric of the source a series name belongs to, stripping the
/// suffix a histogram's series may have.
fn base_metric<'a>(series: &'a str, emitted: &BTreeMap<String, Kind>) -> Option<&'a str> {
    if emitted.contains_key(series) {
        return Some(series);
    }
    ["_bucket", "_sum", "_count"]
        .iter()
        .filter_map(|suffix| series.strip_suffix(suffix))
        .find(|base| emitted.get(*base) == Some(&Kind::Histogram))
}

#[test]
fn the_dashboard_is_importable_and_well_formed() {
    let dashboard = dashboard();
    assert_eq!(dashboard["title"], "Mneme");
    assert!(dashboard["uid"].as_str().is_some_and(|uid| !uid.is_empty() && uid.len() <= 40), "a uid");
    assert!(dashboard["schemaVersion"].as_u64().is_some_and(|version| version >= 36), "a Grafana 10/11 schema");
    let variables = dashboard["templating"]["list"].as_array().expect("templating variables");
    let datasource_variable = variables
        .iter()
        .find(|variable| variable["name"] == "datasource")
        .expect("a templated datasource variable named datasource");
    assert_eq!(datasource_variable["type"], "datasource");
    assert_eq!(datasource_variable["query"], "prometheus");
    assert!(
        dashboard["__inputs"].as_array().is_some_and(|inputs| inputs
            .iter()
            .any(|input| input["name"] == "DS_PROMETHEUS" && input["pluginId"] == "prometheus")),
        "a DS_PROMETHEUS input for the import dialog"
    );

    let is_prometheus_variable =
        |datasource: &Value| datasource["type"] == "prometheus" && datasource["uid"] == DATASOURCE_UID;
    let mut ids = BTreeSet::new();
    let mut rows: Vec<(String, usize)> = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let id = panel["id"].as_u64().unwrap_or_else(|| panic!("a panel without an id: {panel}"));
        assert!(ids.insert(id), "two panels with id {id}");
        if panel["type"] == "row" {
            let nested = panel["panels"].as_array().map_or(0, Vec::len);
            let collapsed = panel["collapsed"].as_bool().unwrap_or(false);
            assert!(collapsed || nested == 0, "row {}: an expanded row holding panels", panel["title"]);
            rows.push((panel["title"].as_str().expect("a row title").to_string(), nested));
            for nested in panel["panels"].as_array().into_iter().flatten() {
                let id = nested["id"].as_u64().unwrap_or_else(|| panic!("a panel without an id: {nested}"));
                assert!(ids.insert(id), "two panels with id {id}");
                assert_ne!(nested["type"], "row", "a row inside row {}", panel["title"]);
            }
        } else if let Some((_, count)) = rows.last_mut() {
            *count += 1;
        }
    }
    assert!(rows.len() >= 3, "the panels are grouped in rows: {rows:?}");
    for (row, count) in &rows {
        assert!(*count >= 1, "row {row:?} has no panel");
    }

    let panels = panels_by_row(&dashboard);
    assert!(panels.iter().all(|(row, _)| row.is_some()), "every panel is in a row");
    for (row, panel) in panels {
        let title = panel["title"].as_str().unwrap_or_else(|| panic!("a panel without a title in row {row:?}"));
        assert!(is_prometheus_variable(&panel["datasource"]), "panel {title:?}: datasource {}", panel["datasource"]);
        let targets = panel["targets"].as_array().unwrap_or_else(|| panic!("panel {title:?} has no targets"));
        assert!(!targets.is_empty(), "panel {title:?} has no targets");
        let mut ref_ids = BTreeSet::new();
        for target in targets {
            assert!(is_prometheus_variable(&target["datasource"]), "panel {title:?}: {target}");
            assert!(target["expr"].as_str().is_some_and(|expr| !expr.trim().is_empty()), "panel {title:?}: {target}");
            assert!(ref_ids.insert(target["refId"].to_string()), "panel {title:?}: two targets with one refId");
        }
        let grid = &panel["gridPos"];
        assert!(["h", "w", "x", "y"].iter().all(|key| grid[key].is_u64()), "panel {title:?}: gridPos {grid}");
        assert!(grid["x"].as_u64().unwrap() + grid["w"].as_u64().unwrap() <= 24, "panel {title:?} is too wide");
    }
    for variable in variables.iter().filter(|variable| variable["type"] == "query") {
        assert!(is_prometheus_variable(&variable["datasource"]), "variable {}: {}", variable["name"], variable);
    }
}

/// Every metric Mneme emits has a panel, so that a metric added to the
/// source without one is noticed here.
#[test]
fn the_dashboard_shows_every_metric_mneme_emits() {
    let emitted = emitted_in_source();
    let dashboard = dashboard();
    let shown: BTreeSet<String> = queries(&dashboard)
        .iter()
        .flat_map(|(_, expr)| metric_names(expr))
        .filter_map(|name| base_metric(&name, &emitted).map(str::to_string))
        .collect();
    let missing: Vec<&String> = emitted.keys().filter(|name| !shown.contains(*name)).collect();
    assert!(missing.is_empty(), "metrics Mneme emits that {DASHBOARD} does not show: {missing:?}");
    for (name, why) in NOT_PRODUCED_BY_THE_TEST {
        assert!(emitted.contains_key(*name), "{name} ({why}) is no longer emitted by the source: drop it");
    }
}

#[test]
fn every_metric_the_dashboard_names_is_served_at_metrics() {
    let dashboard = dashboard();
    let named: BTreeMap<String, Vec<String>> =
        queries(&dashboard).into_iter().fold(BTreeMap::new(), |mut named, (place, expr)| {
            for name in metric_names(&expr) {
                named.entry(name).or_insert_with(Vec::new).push(place.clone());
            }
            named
        });
    assert!(named.len() >= 20, "too few metric names found in the dashboard's queries: {named:?}");
    let emitted = emitted_in_source();
    let exempt = |name: &str| {
        base_metric(name, &emitted)
            .is_some_and(|base| NOT_PRODUCED_BY_THE_TEST.iter().any(|(exempt, _)| *exempt == base))
    };

    // A server whose phases a (fake) model summarises, sent the example,
    // queries of several verbs and consolidations; snapshots and
    // handoff deliveries follow from the example on their own.
    let model = FakeLlmServer::start();
    let work = tempfile::tempdir().unwrap();
    let config = format!("\n[compression.llm]\nurl = \"{}\"\nmodel = \"fake\"\ntimeout_ms = 5000\n", model.url());
    let server = MnemeServer::start_with(work.path(), None, &config);
    let published = stdout_of(&server.cli(&["publish", example_path().to_str().unwrap()]));
    assert!(published.contains("published 572 events"), "{published}");
    // Each query waits until its memory applied the example: on a busy
    // machine the reviewer's graph may not know the file yet otherwise.
    let seq = last_seq_of_publish(&published);
    server.get(&format!("/v1/swarms/demo/agents/coder/search?q=TokenExpiredError&k=3&min_seq={seq}"));
    server.get(&format!("/v1/swarms/demo/agents/planner/context?q=refresh%20token&budget=500&min_seq={seq}"));
    server.get(&format!("/v1/swarms/demo/agents/reviewer/graph?entity=src/auth/token.rs&hops=1&min_seq={seq}"));
    // A real run writes the searches' retrieval counts at least, and counts
    // outcomes only when it writes something.
    for dry_run in [true, false] {
        let (status, answer) = server.post(&format!("/v1/swarms/demo/consolidate?dry_run={dry_run}"), "");
        assert_eq!(status, 200, "POST /v1/swarms/demo/consolidate?dry_run={dry_run}: {answer}");
    }

    // Phase summaries, snapshots and handoffs are asynchronous: scrape until
    // every name the dashboard needs is there, or time runs out.
    let wanted: Vec<&String> = named.keys().filter(|name| !exempt(name)).collect();
    let deadline = Instant::now() + Duration::from_secs(20);
    let exposition = loop {
        let exposition = scrape(&server);
        if wanted.iter().all(|name| exposition.series.contains(*name)) || Instant::now() > deadline {
            break exposition;
        }
        std::thread::sleep(Duration::from_millis(100));
    };

    // The source scan the exempt names fall back on sees every metric the
    // server serves, and the histograms' rendering is read off the server.
    let served_families: Vec<&String> = exposition.types.keys().filter(|name| name.starts_with("mneme_")).collect();
    let unscanned: Vec<&&String> = served_families.iter().filter(|name| !emitted.contains_key(**name)).collect();
    assert!(unscanned.is_empty(), "metrics on /metrics the source scan did not find: {unscanned:?}");
    let histogram_types: BTreeSet<&str> = emitted
        .iter()
        .filter(|(_, kind)| **kind == Kind::Histogram)
        .filter_map(|(name, _)| exposition.types.get(name).map(String::as_str))
        .collect();
    assert_eq!(histogram_types.len(), 1, "histograms rendered as one type: {histogram_types:?}");
    let histogram_type = histogram_types.into_iter().next().unwrap();

    let mut problems = Vec::new();
    for (name, places) in &named {
        if exposition.series.contains(name) {
            continue;
        }
        let source_series = base_metric(name, &emitted)
            .map(|base| series_of(base, emitted[base], histogram_type))
            .filter(|series| series.contains(name));
        let problem = match (exempt(name), source_series) {
            (true, Some(_)) => continue,
            (true, None) => "is not a series of a metric the source emits (wrong suffix?)",
            (false, Some(_)) => "is emitted by the source but did not appear on /metrics after the test's traffic",
            (false, None) => "is not a series Mneme serves",
        };
        problems.push(format!("{name} ({}) {problem}", places.join(", ")));
    }
    let served: Vec<&String> = exposition.series.iter().filter(|name| name.starts_with("mneme_")).collect();
    assert!(
        problems.is_empty(),
        "{DASHBOARD} names metrics Mneme does not serve:\n  {}\nseries on /metrics: {served:?}\n\
         metrics in the source: {:?}",
        problems.join("\n  "),
        emitted.keys().collect::<Vec<_>>()
    );
    // Every quantile the dashboard asks of a summary is one the exporter renders.
    let exposition_text = ureq::get(&format!("{}/metrics", server.url)).call().unwrap().into_string().unwrap();
    for (place, expr) in queries(&dashboard) {
        for quantile in expr.split("quantile=\"").skip(1).filter_map(|rest| rest.split('"').next()) {
            let rendered = format!("quantile=\"{quantile}\"");
            assert!(exposition_text.contains(&rendered), "{place}: {rendered} is not on /metrics: {expr}");
        }
    }
}

#[test]
fn metric_names_are_read_from_promql_outside_strings() {
    let names = metric_names(
        r#"sum by (verb) (rate(mneme_query_seconds_sum{instance=~"$instance", x="mneme_not_a_metric"}[$__rate_interval])) / mneme_agents"#,
    );
    assert_eq!(names.into_iter().collect::<Vec<_>>(), ["mneme_agents", "mneme_query_seconds_sum"]);
    assert!(metric_names("label_values(mneme_events_applied_total, agent)").contains("mneme_events_applied_total"));
    assert!(metric_names("$mneme_variable + not_mneme_total").is_empty());
}
