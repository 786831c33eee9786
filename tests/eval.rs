//! `mneme-tools eval` end to end on the tiny generated swarm: it starts its
//! own `mneme serve` from the `mneme` binary beside it, and its JSON report
//! has every figure the issue asks for, in range, with no context over
//! budget.

mod common;

use serde_json::Value;

/// The tools binary: benchmarks and the evaluation, apart from `mneme`.
const MNEME_TOOLS: &str = env!("CARGO_BIN_EXE_mneme-tools");

/// The verbs `--help` lists, one per line after `Commands:`.
fn verbs_of(binary: &str) -> Vec<String> {
    let output = std::process::Command::new(binary).arg("--help").output().unwrap();
    let help = common::stdout_of(&output);
    let commands = help.split("Commands:").nth(1).unwrap_or_else(|| panic!("no Commands: in {help}"));
    let commands = commands.split("Options:").next().unwrap();
    commands.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_string).collect()
}

#[test]
fn benchmarks_and_the_evaluation_live_in_the_tools_binary_not_in_mneme() {
    let production = verbs_of(common::MNEME);
    assert!(production.contains(&"serve".to_string()), "{production:?}");
    for verb in ["bench", "eval"] {
        assert!(!production.contains(&verb.to_string()), "mneme --help lists {verb}: {production:?}");
    }
    let tools = verbs_of(MNEME_TOOLS);
    assert!(tools.contains(&"bench".to_string()) && tools.contains(&"eval".to_string()), "{tools:?}");
}

#[test]
fn eval_reports_every_metric_for_a_tiny_swarm() {
    let output = std::process::Command::new(MNEME_TOOLS)
        .args(["eval", "--size", "tiny", "--seed", "3", "--embedder", "hashed", "--format", "json"])
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&common::stdout_of(&output)).unwrap();
    assert!(report["events"].as_u64().unwrap() > 50, "{report}");
    for mode in ["bm25", "vector", "graph", "hybrid"] {
        let stats = &report["retrieval"][mode];
        for metric in ["recall@5", "recall@10", "mrr"] {
            let value = stats[metric].as_f64().unwrap_or_else(|| panic!("{mode} {metric}: {report}"));
            assert!((0.0..=1.0).contains(&value), "{mode} {metric} = {value}");
        }
        assert!(stats["recall@5"].as_f64() <= stats["recall@10"].as_f64());
    }
    for kind in ["lexical", "paraphrase", "multi_hop", "temporal", "fixed_by"] {
        assert!(report["by_question_type"][kind]["hybrid"]["questions"].as_u64().unwrap() > 0, "{kind}: {report}");
    }
    // Exact words are found by exact search: a floor well below the target,
    // so that this fails only when retrieval or the evaluation is broken.
    assert!(report["by_question_type"]["lexical"]["bm25"]["recall@10"].as_f64().unwrap() >= 0.5, "{report}");
    for section in ["contradictions", "dedup"] {
        for metric in ["precision", "recall"] {
            let value = report[section][metric].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&value), "{section} {metric}: {report}");
        }
    }
    assert!(report["forgetting"]["never_forget"].as_u64().unwrap() > 0);
    assert!(report["compression"]["phases"].as_u64().unwrap() > 0, "{report}");
    assert!(report["compression"]["levels"]["findings"]["ratio"].as_f64().unwrap() > 1.0, "{report}");
    assert_eq!(report["context"]["budget_violations"], 0, "{report}");
    assert!(report["targets"].as_array().unwrap().len() >= 8);
}

/// Issue 21: the conversational swarm, scored per evidence turn.
#[test]
fn eval_reports_every_question_type_for_tiny_conversations() {
    let output = std::process::Command::new(MNEME_TOOLS)
        .args(["eval", "--swarm", "conversations", "--size", "tiny", "--seed", "3"])
        .args(["--embedder", "hashed", "--deep", "off"])
        .args(["--format", "json", "--retrieval", "fusion = \"score\""])
        .env("MNEME_LOG", "warn")
        .output()
        .unwrap();
    let report: Value = serde_json::from_str(&common::stdout_of(&output)).unwrap();
    assert_eq!(report["swarm"], "conversations", "{report}");
    assert!(report["command"].as_str().unwrap().contains("--retrieval 'fusion = \"score\"'"), "{report}");
    for kind in ["single_hop", "multi_hop", "temporal", "list", "inference"] {
        let hybrid = &report["by_question_type"][kind]["hybrid"];
        assert!(hybrid["questions"].as_u64().unwrap() > 0, "{kind}: {report}");
        let recall = hybrid["recall@10"].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&recall), "{kind}: {recall}");
    }
    // Questions name their person: BM25 finds some evidence turns, a floor
    // far below the targets that fails only when something is broken.
    assert!(report["retrieval"]["bm25"]["recall@10"].as_f64().unwrap() >= 0.15, "{report}");
    let targets: Vec<&str> =
        report["targets"].as_array().unwrap().iter().map(|target| target["name"].as_str().unwrap()).collect();
    assert!(targets.contains(&"hybrid recall@10, list"), "{targets:?}");
    // No phases, no expected contradictions: no target for them.
    assert!(!targets.iter().any(|name| name.contains("compression") || name == &"contradiction recall"), "{targets:?}");
    assert_eq!(report["context"]["budget_violations"], 0, "{report}");
}

/// The quality gate: a figure past its bound makes the run exit 1 and is
/// named; bounds the run meets let it exit 0. (The real bounds,
/// `tools/eval/gate.toml`, are for `--size small` and run in `.ci/run`.)
#[test]
fn eval_fails_its_gate_when_a_figure_is_past_its_bound() {
    let scratch = tempfile::tempdir().unwrap();
    let gate = |hybrid_recall: f64| {
        let path = scratch.path().join(format!("gate-{hybrid_recall}.toml"));
        let text = format!(
            "[swe]\nsize = \"tiny\"\nseed = 3\nembedder = \"hashed\"\n\
             [swe.min]\n\"retrieval.hybrid.recall@10\" = {hybrid_recall}\n\"by_question_type.lexical.bm25.recall@10\" = 0.5\n\
             [swe.max]\n\"context.budget_violations\" = 0\n"
        );
        std::fs::write(&path, text).unwrap();
        path
    };
    let run = |gate: &std::path::Path| {
        std::process::Command::new(MNEME_TOOLS)
            .args(["eval", "--size", "tiny", "--seed", "3", "--embedder", "hashed", "--deep", "off"])
            .args(["--format", "json", "--gate"])
            .arg(gate)
            .env("MNEME_LOG", "warn")
            .output()
            .unwrap()
    };
    let met = run(&gate(0.1));
    let stderr = String::from_utf8_lossy(&met.stderr);
    assert!(met.status.success(), "{stderr}");
    assert!(stderr.contains("quality gate passed: 3 figures within their bounds"), "{stderr}");
    // Stdout stays the report.
    let report: Value = serde_json::from_str(&common::stdout_of(&met)).unwrap();
    assert!(report["retrieval"]["hybrid"]["recall@10"].as_f64().unwrap() < 1.01);
    let missed = run(&gate(1.01));
    let stderr = String::from_utf8_lossy(&missed.stderr);
    assert_eq!(missed.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("| retrieval.hybrid.recall@10 |") && stderr.contains("**FAILED**"), "{stderr}");
    assert!(stderr.contains("quality gate FAILED: 1 of 3 figures past their bounds"), "{stderr}");
}
