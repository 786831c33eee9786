//! The quality gate: bounds on the figures of `mneme-tools eval`, kept in
//! the repository (`tools/eval/gate.toml`) and checked by CI, so that a
//! change that loses retrieval quality, contradictions, dedup, forgetting,
//! compression or context budgets fails instead of passing unnoticed.
//!
//! A bound holds for one run only: the swarm, size, seed and embedder the
//! gate file names for it. A figure the report lacks fails, like one below
//! its bound: a renamed figure must not leave the gate silently empty.
//! When a change lifts a figure, its bound rises with it (by hand, in the
//! same commit: the verdict table prints the headroom of every bound).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, bail};
use serde::Deserialize;
use serde_json::Value;

/// `tools/eval/gate.toml`: per swarm (`[swe]`, `[conversations]`), the run
/// its bounds belong to and the bounds.
#[derive(Debug, Deserialize)]
#[serde(transparent)]
pub struct GateFile {
    swarms: BTreeMap<String, SwarmGate>,
}

/// One swarm's run and its bounds, by figure: a path into the JSON report
/// (`by_question_type.paraphrase.hybrid.recall@10`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwarmGate {
    size: String,
    seed: u64,
    embedder: String,
    /// The deep tier's model (`off`: none).
    #[serde(default = "no_deep_tier")]
    deep: String,
    /// Figures that must not drop below their bound.
    #[serde(default)]
    min: BTreeMap<String, f64>,
    /// Figures that must not rise above their bound (rates of errors,
    /// budget violations).
    #[serde(default)]
    max: BTreeMap<String, f64>,
}

/// The run an evaluation made, as the gate compares it.
pub struct Run<'a> {
    pub swarm: &'a str,
    pub size: &'a str,
    pub seed: u64,
    pub embedder: &'a str,
    pub deep: &'a str,
}

fn no_deep_tier() -> String {
    "off".to_string()
}

/// One bound, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    pub figure: String,
    /// `None`: the report has no such figure.
    pub value: Option<f64>,
    pub bound: Bound,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    AtLeast(f64),
    AtMost(f64),
}

impl Verdict {
    pub fn passed(&self) -> bool {
        match (self.value, self.bound) {
            (Some(value), Bound::AtLeast(bound)) => value >= bound,
            (Some(value), Bound::AtMost(bound)) => value <= bound,
            (None, _) => false,
        }
    }

    /// How far the figure is from its bound, on the side it may move.
    pub fn headroom(&self) -> Option<f64> {
        self.value.map(|value| match self.bound {
            Bound::AtLeast(bound) => value - bound,
            Bound::AtMost(bound) => bound - value,
        })
    }
}

impl GateFile {
    pub fn read(path: &Path) -> anyhow::Result<GateFile> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading the gate {}", path.display()))?;
        toml::from_str(&text).with_context(|| format!("parsing the gate {}", path.display()))
    }

    /// Every bound of `run`'s swarm, checked against its `report`. Refuses
    /// a run other than the one the bounds were set for.
    pub fn check(&self, run: &Run<'_>, report: &Value) -> anyhow::Result<Vec<Verdict>> {
        let Some(gate) = self.swarms.get(run.swarm) else {
            bail!("the gate has no bounds for the {} swarm (it has: {:?})", run.swarm, self.swarms.keys());
        };
        let wanted = (gate.size.as_str(), gate.seed, gate.embedder.as_str(), gate.deep.as_str());
        if (run.size, run.seed, run.embedder, run.deep) != wanted {
            bail!(
                "the gate's bounds for {} hold for --size {} --seed {} --embedder {} --deep {}; this run is --size {} \
                 --seed {} --embedder {} --deep {}",
                run.swarm,
                gate.size,
                gate.seed,
                gate.embedder,
                gate.deep,
                run.size,
                run.seed,
                run.embedder,
                run.deep
            );
        }
        let minima = gate.min.iter().map(|(figure, bound)| (figure, Bound::AtLeast(*bound)));
        let maxima = gate.max.iter().map(|(figure, bound)| (figure, Bound::AtMost(*bound)));
        Ok(minima
            .chain(maxima)
            .map(|(figure, bound)| Verdict { figure: figure.clone(), value: figure_of(report, figure), bound })
            .collect())
    }
}

/// The number at a dotted path of the report, if there is one.
fn figure_of(report: &Value, path: &str) -> Option<f64> {
    path.split('.').try_fold(report, |value, key| value.get(key))?.as_f64()
}

/// The verdicts as a Markdown table, failures first.
pub fn table(verdicts: &[Verdict]) -> String {
    let mut rows: Vec<&Verdict> = verdicts.iter().collect();
    rows.sort_by_key(|verdict| verdict.passed());
    let mut text = String::from("| figure | value | bound | headroom | |\n|---|---:|---:|---:|---|\n");
    for verdict in rows {
        let value = verdict.value.map_or("missing".to_string(), |value| format!("{value:.3}"));
        let bound = match verdict.bound {
            Bound::AtLeast(bound) => format!(">= {bound}"),
            Bound::AtMost(bound) => format!("<= {bound}"),
        };
        let headroom = verdict.headroom().map_or(String::new(), |headroom| format!("{headroom:+.3}"));
        let mark = if verdict.passed() { "ok" } else { "**FAILED**" };
        text.push_str(&format!("| {} | {value} | {bound} | {headroom} | {mark} |\n", verdict.figure));
    }
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const GATE: &str = r#"
        [swe]
        size = "small"
        seed = 7
        embedder = "static"
        min = { "retrieval.hybrid.recall@10" = 0.88, "by_question_type.paraphrase.hybrid.mrr" = 0.1 }
        max = { "context.budget_violations" = 0 }
    "#;

    fn run(seed: u64) -> Run<'static> {
        Run { swarm: "swe", size: "small", seed, embedder: "static", deep: "off" }
    }

    #[test]
    fn a_figure_below_its_bound_or_missing_fails_and_the_others_pass() {
        let gate: GateFile = toml::from_str(GATE).unwrap();
        let report = json!({
            "retrieval": {"hybrid": {"recall@10": 0.905}},
            "context": {"budget_violations": 1},
        });
        let verdicts = gate.check(&run(7), &report).unwrap();
        let passed: BTreeMap<&str, bool> =
            verdicts.iter().map(|verdict| (verdict.figure.as_str(), verdict.passed())).collect();
        assert_eq!(
            passed,
            BTreeMap::from([
                ("retrieval.hybrid.recall@10", true),
                ("by_question_type.paraphrase.hybrid.mrr", false),
                ("context.budget_violations", false),
            ])
        );
        let table = table(&verdicts);
        assert!(
            table.contains("| by_question_type.paraphrase.hybrid.mrr | missing | >= 0.1 |  | **FAILED** |"),
            "{table}"
        );
        assert!(table.contains("| retrieval.hybrid.recall@10 | 0.905 | >= 0.88 | +0.025 | ok |"), "{table}");
    }

    #[test]
    fn bounds_hold_only_for_the_run_they_were_set_for() {
        let gate: GateFile = toml::from_str(GATE).unwrap();
        let error = gate.check(&run(11), &json!({})).unwrap_err().to_string();
        assert!(error.contains("--seed 7") && error.contains("--seed 11"), "{error}");
        let other = Run { swarm: "conversations", ..run(7) };
        assert!(gate.check(&other, &json!({})).unwrap_err().to_string().contains("no bounds for the conversations"));
        assert!(
            toml::from_str::<GateFile>("[swe]\nsize = \"small\"\nseed = 7\nembedder = \"static\"\nmins = {}").is_err()
        );
    }
}
