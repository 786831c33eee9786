//! `mneme-tools eval`: the memory-quality evaluation. It generates a synthetic
//! swarm with ground truth (`generator/`), runs a real `mneme serve`
//! on a scratch embedded log, publishes the events over HTTP, and asks what
//! the ground truth knows the answers to, through the public API only:
//! search in each mode, context at several budgets, consolidation, the
//! contradictions it found, what became of the items that must never be
//! forgotten, and each phase's compressed levels.

pub mod conversations;
pub mod dataset;
pub mod gate;
pub mod generator;
mod server;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use mneme_api::consolidation::{ConsolidationAnswer, ContradictionsAnswer, VerdictCounts};
use mneme_api::context::{ContextAnswer, PhaseAnswer};
use mneme_api::memory::{Hit, ItemAnswer, SearchAnswer};
use mneme_api::params::ContextBody;

use crate::eval::conversations::{ConversationSize, generate_conversations};
use crate::eval::dataset::{Dataset, EVAL_SWARM, GeneratorSize, Question, QuestionKind, Scoring, SwarmKind};
use crate::eval::generator::generate;
pub(crate) use crate::eval::server::ServerProcess;
use crate::eval::server::{Scratch, last_log_seq, publish, wait_until_applied, wait_until_enriched};
use mneme::client::{call_as, encode};

#[derive(Args)]
pub struct EvalArgs {
    #[arg(long, value_enum, default_value = "table")]
    format: EvalFormat,
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// The kind of swarm: agents fixing bugs (swe), or pairs of people
    /// talking over months (conversations).
    #[arg(long, value_enum, default_value = "swe")]
    swarm: SwarmKind,
    /// tiny, small, medium, large; or for swe agents:tasks:filler, for
    /// conversations pairs:sessions.
    #[arg(long, default_value = "small")]
    size: String,
    /// Vector embedder: auto (the distilled static model if present, else
    /// hashed n-grams), static, minilm or hashed.
    #[arg(long, default_value = "auto")]
    embedder: String,
    /// The deep tier's model (`[enrichment] model`): auto (the 8-bit
    /// all-MiniLM-L6-v2 if present, else the float one if present, else
    /// none), minilm-int8, minilm or off. With one, the questions wait
    /// until the enricher has recorded every item's deep vector.
    #[arg(long, default_value = "auto")]
    deep: String,
    /// Context requests per budget in the budget check.
    #[arg(long, default_value_t = 50)]
    context_samples: usize,
    /// A `[retrieval]` setting of the server's `swarm.toml`, as TOML
    /// (`fusion = "rrf"`, `context_share = 0`); repeatable. For comparing
    /// retrieval settings on the same swarm.
    #[arg(long = "retrieval", value_name = "KEY = VALUE")]
    retrieval: Vec<String>,
    /// An `[enrichment]` setting of the server's `swarm.toml`, as TOML
    /// (`threads = 2`); repeatable. For measuring the enricher.
    #[arg(long = "enrichment", value_name = "KEY = VALUE")]
    enrichment: Vec<String>,
    /// Keep the scratch directory (server log, data, dataset.json) here
    /// instead of deleting it.
    #[arg(long)]
    keep: Option<PathBuf>,
    /// Check the figures against the bounds of this gate file
    /// (`tools/eval/gate.toml`): the verdicts go to stderr, and the exit
    /// status is 1 when a figure is past its bound.
    #[arg(long, value_name = "FILE")]
    gate: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EvalFormat {
    Table,
    Json,
}

pub const SEARCH_MODES: [&str; 4] = ["bm25", "vector", "graph", "hybrid"];
const CONTEXT_BUDGETS: [u64; 3] = [256, 1024, 4096];
const PHASE_LEVELS: [&str; 4] = ["index", "compressed", "summary", "findings"];
const PUBLISH_BATCH: usize = 500;

pub fn run(args: EvalArgs) -> anyhow::Result<ExitCode> {
    let embedder = resolve_embedder(&args.embedder)?;
    let deep = resolve_deep(&args.deep)?;
    let mut timings = BTreeMap::new();
    let progress = mneme::progress::spinner("generating the swarm");
    let started = Instant::now();
    let dataset = match args.swarm {
        SwarmKind::Swe => generate(args.seed, GeneratorSize::parse(&args.size).map_err(anyhow::Error::msg)?),
        SwarmKind::Conversations => {
            generate_conversations(args.seed, ConversationSize::parse(&args.size).map_err(anyhow::Error::msg)?)
        }
    };
    timings.insert("generate_s", started.elapsed().as_secs_f64());

    let scratch = Scratch::new(args.keep.as_deref())?;
    std::fs::write(scratch.path.join("dataset.json"), serde_json::to_vec(&dataset)?).context("writing dataset.json")?;
    let server =
        ServerProcess::start(&scratch.path, &dataset.agents, embedder, deep, &args.enrichment, &args.retrieval)?;

    progress.set_message(format!("publishing {} events", dataset.events.len()));
    let started = Instant::now();
    let last_seq = publish(&server, &dataset.events)?;
    timings.insert("publish_s", started.elapsed().as_secs_f64());
    let started = Instant::now();
    wait_until_applied(&server, &dataset.agents, last_seq)?;
    timings.insert("apply_wait_s", started.elapsed().as_secs_f64());
    if deep != "off" {
        progress.set_message("waiting for every item's deep vector");
        let started = Instant::now();
        let last_seq = wait_until_enriched(&server, last_seq)?;
        wait_until_applied(&server, &dataset.agents, last_seq)?;
        timings.insert("enrich_s", started.elapsed().as_secs_f64());
    }

    progress.set_message(format!("asking {} questions", dataset.truth.questions.len()));
    let started = Instant::now();
    let retrieval = evaluate_retrieval(&server, &dataset, last_seq)?;
    timings.insert("retrieval_s", started.elapsed().as_secs_f64());
    let context = evaluate_context_budgets(&server, &dataset.truth.questions, args.context_samples, last_seq)?;

    progress.set_message("consolidating, then scoring contradictions, dedup, forgetting and compression");
    let started = Instant::now();
    let consolidation: ConsolidationAnswer =
        call_as(ureq::post(&server.url(&format!("/v1/swarms/{EVAL_SWARM}/consolidate"))), Some("{}"))?;
    let after_consolidation = last_log_seq(&server)?;
    wait_until_applied(&server, &dataset.agents, after_consolidation)?;
    timings.insert("consolidation_s", started.elapsed().as_secs_f64());
    let contradictions = evaluate_contradictions(&server, &dataset)?;
    let dedup = evaluate_dedup(&consolidation, &dataset);
    let forgetting = evaluate_forgetting(&server, &consolidation, &dataset)?;
    let compression = evaluate_compression(&server, &dataset)?;

    let report = EvalReport {
        command: format!(
            "mneme-tools eval --swarm {} --seed {} --size {} --embedder {embedder} --deep {deep} --context-samples {}{}{}",
            args.swarm.as_str(),
            args.seed,
            args.size,
            args.context_samples,
            args.enrichment.iter().map(|setting| format!(" --enrichment '{setting}'")).collect::<String>(),
            args.retrieval.iter().map(|setting| format!(" --retrieval '{setting}'")).collect::<String>()
        ),
        seed: args.seed,
        swarm: args.swarm,
        size: dataset.size.clone(),
        embedder,
        deep,
        events: dataset.events.len(),
        retrieval,
        context,
        contradictions,
        dedup,
        forgetting,
        compression,
        timings,
    };
    drop(server);
    progress.finish_and_clear();
    match args.format {
        EvalFormat::Json => out!("{}", serde_json::to_string_pretty(&report.to_json())?),
        EvalFormat::Table => print_table(&report),
    }
    let Some(gate) = &args.gate else { return Ok(ExitCode::SUCCESS) };
    let run = gate::Run { swarm: args.swarm.as_str(), size: &args.size, seed: args.seed, embedder, deep };
    let verdicts = gate::GateFile::read(gate)?.check(&run, &report.to_json())?;
    let failed = verdicts.iter().filter(|verdict| !verdict.passed()).count();
    eprintln!("quality gate {} ({} swarm):\n{}", gate.display(), run.swarm, gate::table(&verdicts));
    if failed > 0 {
        eprintln!("quality gate FAILED: {failed} of {} figures past their bounds", verdicts.len());
        return Ok(ExitCode::FAILURE);
    }
    eprintln!("quality gate passed: {} figures within their bounds", verdicts.len());
    Ok(ExitCode::SUCCESS)
}

/// `auto` becomes what the server would load, so the report says which
/// embedder the vector figures belong to.
fn resolve_embedder(requested: &str) -> anyhow::Result<&'static str> {
    match requested {
        "static" => Ok("static"),
        "minilm" => Ok("minilm"),
        "hashed" => Ok("hashed"),
        "auto" => {
            let section = mneme_actors::SwarmConfig::with_name(EVAL_SWARM).embedder;
            let found = mneme::model::find_model(
                section.static_model_dir.as_deref(),
                mneme::model::STATIC_MODEL_NAME,
                &mneme::model::STATIC_FILES,
            );
            Ok(if found.is_ok() { "static" } else { "hashed" })
        }
        other => bail!("--embedder {other:?}: expected auto, static, minilm or hashed"),
    }
}

/// `auto` becomes what the server would run: `minilm-int8` when the 8-bit
/// all-MiniLM-L6-v2 is found, else `minilm` when the float one is, else
/// `off`.
fn resolve_deep(requested: &str) -> anyhow::Result<&'static str> {
    use mneme::model::{MINILM_FILES, MINILM_INT8_FILES, MINILM_INT8_NAME, MINILM_NAME, find_model};
    match requested {
        "minilm-int8" => Ok("minilm-int8"),
        "minilm" => Ok("minilm"),
        "off" => Ok("off"),
        "auto" => {
            let config = mneme_actors::SwarmConfig::with_name(EVAL_SWARM);
            let int8 = find_model(config.enrichment.minilm_int8_dir.as_deref(), MINILM_INT8_NAME, &MINILM_INT8_FILES);
            let float = find_model(config.embedder.minilm_dir.as_deref(), MINILM_NAME, &MINILM_FILES);
            Ok(if int8.is_ok() {
                "minilm-int8"
            } else if float.is_ok() {
                "minilm"
            } else {
                "off"
            })
        }
        other => bail!("--deep {other:?}: expected auto, minilm-int8, minilm or off"),
    }
}

/// Ranks and averages of one set of questions in one mode.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RankStats {
    pub questions: usize,
    /// Sums over the questions of the share of their answers found in the
    /// top 5 and top 10 (0 or 1 when any one answer is enough).
    pub found_in_5: f64,
    pub found_in_10: f64,
    pub reciprocal_rank_sum: f64,
}

impl RankStats {
    /// Counts a question whose first answer came at `rank` (1-based; `None`:
    /// not in the hits). MRR is over the top 10, like the recalls.
    pub fn add(&mut self, rank: Option<usize>) {
        let found = |depth: usize| if rank.is_some_and(|rank| rank <= depth) { 1.0 } else { 0.0 };
        self.add_shares(rank, found(5), found(10));
    }

    /// Counts a question scored by each of its answers: the share of them
    /// among the first 5 and 10 hits, and the rank of the first found.
    pub fn add_each(&mut self, hits: &[BTreeSet<String>], answers: &[String]) {
        let share = |depth: usize| {
            let found =
                answers.iter().filter(|answer| hits.iter().take(depth).any(|events| events.contains(*answer))).count();
            if answers.is_empty() { 0.0 } else { found as f64 / answers.len() as f64 }
        };
        self.add_shares(first_answer_rank(hits, answers), share(5), share(10));
    }

    fn add_shares(&mut self, rank: Option<usize>, in_5: f64, in_10: f64) {
        self.questions += 1;
        self.found_in_5 += in_5;
        self.found_in_10 += in_10;
        if let Some(rank) = rank.filter(|rank| *rank <= 10) {
            self.reciprocal_rank_sum += 1.0 / rank as f64;
        }
    }

    pub fn recall_at_5(&self) -> f64 {
        if self.questions == 0 { 0.0 } else { self.found_in_5 / self.questions as f64 }
    }

    pub fn recall_at_10(&self) -> f64 {
        if self.questions == 0 { 0.0 } else { self.found_in_10 / self.questions as f64 }
    }

    pub fn mrr(&self) -> f64 {
        if self.questions == 0 { 0.0 } else { self.reciprocal_rank_sum / self.questions as f64 }
    }

    fn to_json(self) -> Value {
        json!({
            "questions": self.questions,
            "recall@5": round3(self.recall_at_5()),
            "recall@10": round3(self.recall_at_10()),
            "mrr": round3(self.mrr()),
        })
    }
}

fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 / whole as f64 }
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// The 1-based rank of the first hit that stands for one of `answers`. A
/// hit stands for its own event and every event in its provenance (a
/// memory that absorbed a near duplicate answers for it too).
pub fn first_answer_rank(hits: &[BTreeSet<String>], answers: &[String]) -> Option<usize> {
    hits.iter().position(|events| answers.iter().any(|answer| events.contains(answer))).map(|index| index + 1)
}

fn hit_events(hit: &Hit) -> BTreeSet<String> {
    std::iter::once(hit.item_id.clone())
        .chain(hit.provenance.iter().map(|reference| reference.event_id.clone()))
        .collect()
}

struct Retrieval {
    by_mode: BTreeMap<&'static str, RankStats>,
    by_kind: BTreeMap<QuestionKind, BTreeMap<&'static str, RankStats>>,
}

fn search_path(question: &Question, mode: &str, min_seq: u64) -> String {
    let mut path = format!(
        "/v1/swarms/{EVAL_SWARM}/agents/{}/search?q={}&k=10&mode={mode}&min_seq={min_seq}",
        question.agent,
        encode(&question.text)
    );
    if let Some(as_of) = &question.as_of {
        path.push_str(&format!("&until={}", encode(as_of)));
    }
    path
}

fn evaluate_retrieval(server: &ServerProcess, dataset: &Dataset, min_seq: u64) -> anyhow::Result<Retrieval> {
    let mut by_mode: BTreeMap<&'static str, RankStats> = BTreeMap::new();
    let mut by_kind: BTreeMap<QuestionKind, BTreeMap<&'static str, RankStats>> = BTreeMap::new();
    for question in &dataset.truth.questions {
        for mode in SEARCH_MODES {
            let answer: SearchAnswer = call_as(ureq::get(&server.url(&search_path(question, mode, min_seq))), None)
                .with_context(|| format!("question {}", question.id))?;
            let hits: Vec<BTreeSet<String>> = answer.hits.iter().map(hit_events).collect();
            for stats in
                [by_mode.entry(mode).or_default(), by_kind.entry(question.kind).or_default().entry(mode).or_default()]
            {
                match question.scoring {
                    Scoring::Any => stats.add(first_answer_rank(&hits, &question.answers)),
                    Scoring::Each => stats.add_each(&hits, &question.answers),
                }
            }
        }
    }
    Ok(Retrieval { by_mode, by_kind })
}

#[derive(Debug, Default)]
struct ContextCheck {
    requests: usize,
    budget_violations: usize,
    /// Tokens over budget in the worst violation.
    worst_excess: u64,
}

/// Context at several budgets for the first `samples` questions: never a
/// token over.
fn evaluate_context_budgets(
    server: &ServerProcess,
    questions: &[Question],
    samples: usize,
    min_seq: u64,
) -> anyhow::Result<ContextCheck> {
    let mut check = ContextCheck::default();
    for question in questions.iter().take(samples) {
        for budget in CONTEXT_BUDGETS {
            let path = format!("/v1/swarms/{EVAL_SWARM}/agents/{}/context", question.agent);
            let body = ContextBody {
                query: question.text.clone(),
                budget: Some(budget as usize),
                signals: Default::default(),
                min_seq: Some(min_seq),
                min_system_seq: None,
            };
            let context: ContextAnswer = call_as(ureq::post(&server.url(&path)), Some(&serde_json::to_string(&body)?))?;
            let tokens = context.tokens as u64;
            check.requests += 1;
            if tokens > budget {
                check.budget_violations += 1;
                check.worst_excess = check.worst_excess.max(tokens - budget);
            }
        }
    }
    Ok(check)
}

/// An unordered pair, smaller id first.
pub fn pair(a: &str, b: &str) -> (String, String) {
    if a <= b { (a.to_string(), b.to_string()) } else { (b.to_string(), a.to_string()) }
}

/// Precision and recall of `predicted` pairs against `expected`, over the
/// predicted pairs that `judged` accepts (the rest are counted apart).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PairScores {
    pub predicted: usize,
    pub judged: usize,
    pub correct: usize,
    pub expected: usize,
}

impl PairScores {
    pub fn score(
        predicted: &BTreeSet<(String, String)>,
        expected: &BTreeSet<(String, String)>,
        judged: impl Fn(&(String, String)) -> bool,
    ) -> PairScores {
        let judged_pairs: Vec<&(String, String)> = predicted.iter().filter(|pair| judged(pair)).collect();
        PairScores {
            predicted: predicted.len(),
            judged: judged_pairs.len(),
            correct: judged_pairs.iter().filter(|pair| expected.contains(**pair)).count(),
            expected: expected.len(),
        }
    }

    pub fn precision(&self) -> f64 {
        if self.judged == 0 { 1.0 } else { self.correct as f64 / self.judged as f64 }
    }

    pub fn recall(&self) -> f64 {
        if self.expected == 0 { 1.0 } else { self.correct as f64 / self.expected as f64 }
    }
}

struct ContradictionResult {
    scores: PairScores,
}

/// Open contradictions in every memory (one pair may be found in several
/// memories: it counts once) against the generated ones. Every predicted
/// pair is judged: a contradiction the generator did not make is a false
/// one.
fn evaluate_contradictions(server: &ServerProcess, dataset: &Dataset) -> anyhow::Result<ContradictionResult> {
    let listed: ContradictionsAnswer =
        call_as(ureq::get(&server.url(&format!("/v1/swarms/{EVAL_SWARM}/contradictions"))), None)?;
    let predicted: BTreeSet<(String, String)> =
        listed.open.iter().chain(&listed.resolved).map(|found| pair(&found.a, &found.b)).collect();
    let expected: BTreeSet<(String, String)> = dataset.truth.contradictions.iter().map(|(a, b)| pair(a, b)).collect();
    Ok(ContradictionResult { scores: PairScores::score(&predicted, &expected, |_| true) })
}

struct DedupResult {
    scores: PairScores,
    near_misses_merged: usize,
    truncated: bool,
    /// The first judged pairs merged that should not have been, to look at.
    wrong_merges: Vec<(String, String)>,
}

/// Every pair a merge joins (survivor with each merged item, and merged
/// items with each other), across memories, against the generated duplicate
/// groups. Only pairs of labelled events are judged: filler that repeats
/// itself (two identical passing test runs) may rightly merge, and the
/// generator does not label it.
fn evaluate_dedup(consolidation: &ConsolidationAnswer, dataset: &Dataset) -> DedupResult {
    let mut predicted = BTreeSet::new();
    let mut truncated = false;
    for agent in &consolidation.agents {
        let merges = &agent.plan.merges;
        truncated |= agent.plan.counts.merges > merges.len();
        for merge in merges {
            let mut group: Vec<String> = merge.merged.clone();
            group.push(merge.survivor.clone());
            for (index, a) in group.iter().enumerate() {
                for b in &group[index + 1..] {
                    predicted.insert(pair(a, b));
                }
            }
        }
    }
    let mut expected = BTreeSet::new();
    for group in &dataset.truth.duplicate_groups {
        for (index, a) in group.iter().enumerate() {
            for b in &group[index + 1..] {
                expected.insert(pair(a, b));
            }
        }
    }
    let near_misses: BTreeSet<(String, String)> = dataset.truth.near_misses.iter().map(|(a, b)| pair(a, b)).collect();
    let labelled: BTreeSet<&String> = dataset
        .truth
        .duplicate_groups
        .iter()
        .flatten()
        .chain(dataset.truth.near_misses.iter().flat_map(|(a, b)| [a, b]))
        .collect();
    let judged = |(a, b): &(String, String)| labelled.contains(a) && labelled.contains(b);
    let scores = PairScores::score(&predicted, &expected, judged);
    let near_misses_merged = predicted.intersection(&near_misses).count();
    let wrong_merges =
        predicted.iter().filter(|pair| judged(pair) && !expected.contains(*pair)).take(10).cloned().collect();
    DedupResult { scores, near_misses_merged, truncated, wrong_merges }
}

struct ForgettingResult {
    never_forget: usize,
    falsely_forgotten: Vec<String>,
    forgotten_total: u64,
    decayed_total: u64,
}

/// What became of each item that must never be forgotten, asked of its
/// author's memory.
fn evaluate_forgetting(
    server: &ServerProcess,
    consolidation: &ConsolidationAnswer,
    dataset: &Dataset,
) -> anyhow::Result<ForgettingResult> {
    let author: BTreeMap<&str, &str> =
        dataset.events.iter().filter_map(|event| Some((event["id"].as_str()?, event["agent"].as_str()?))).collect();
    let mut falsely_forgotten = Vec::new();
    for item_id in &dataset.truth.never_forget {
        let agent = author.get(item_id.as_str()).with_context(|| format!("never_forget {item_id} is no event"))?;
        let path = format!("/v1/swarms/{EVAL_SWARM}/agents/{agent}/items/{item_id}");
        let item: ItemAnswer = call_as(ureq::get(&server.url(&path)), None)?;
        if matches!(item.state.as_str(), "forgotten" | "purged") {
            falsely_forgotten.push(item_id.clone());
        }
    }
    let total = |count: fn(&VerdictCounts) -> usize| {
        consolidation.agents.iter().map(|agent| count(&agent.plan.counts) as u64).sum()
    };
    Ok(ForgettingResult {
        never_forget: dataset.truth.never_forget.len(),
        falsely_forgotten,
        forgotten_total: total(|counts| counts.forgotten),
        decayed_total: total(|counts| counts.decayed),
    })
}

#[derive(Debug, Default, Clone, Copy)]
struct LevelTotals {
    tokens: u64,
    key_facts_kept: usize,
}

struct CompressionResult {
    phases: usize,
    original_tokens: u64,
    key_facts: usize,
    levels: BTreeMap<&'static str, LevelTotals>,
    /// Key facts the `findings` level lost: (agent, phase, fact), the
    /// first [`MISSED_FACTS_LISTED`].
    missed_at_findings: Vec<(String, String, String)>,
}

/// How many facts lost at `findings` the report lists.
const MISSED_FACTS_LISTED: usize = 40;

/// Whether `text` keeps `fact`: case-insensitive containment.
pub fn keeps_fact(text: &str, fact: &str) -> bool {
    text.to_lowercase().contains(&fact.to_lowercase())
}

fn evaluate_compression(server: &ServerProcess, dataset: &Dataset) -> anyhow::Result<CompressionResult> {
    let mut result = CompressionResult {
        phases: 0,
        original_tokens: 0,
        key_facts: 0,
        levels: BTreeMap::new(),
        missed_at_findings: Vec::new(),
    };
    for phase in &dataset.truth.phases {
        let base = format!("/v1/swarms/{EVAL_SWARM}/agents/{}/phases/{}", phase.agent, phase.phase_id);
        let full: PhaseAnswer = call_as(ureq::get(&server.url(&format!("{base}?level=full"))), None)
            .with_context(|| format!("phase {} of {}", phase.phase_id, phase.agent))?;
        if full.heading.status != "completed" {
            continue;
        }
        result.phases += 1;
        result.original_tokens += full.full.as_ref().map_or(0, |full| full.item_tokens);
        result.key_facts += phase.key_facts.len();
        for level in PHASE_LEVELS {
            let answer: PhaseAnswer = call_as(ureq::get(&server.url(&format!("{base}?level={level}"))), None)?;
            let (text, tokens) = answer.text.as_ref().map_or(("", 0), |text| (text.text.as_str(), text.tokens));
            let totals = result.levels.entry(level).or_default();
            totals.tokens += tokens as u64;
            totals.key_facts_kept += phase.key_facts.iter().filter(|fact| keeps_fact(text, fact)).count();
            if level == "findings" {
                for fact in phase.key_facts.iter().filter(|fact| !keeps_fact(text, fact)) {
                    if result.missed_at_findings.len() < MISSED_FACTS_LISTED {
                        let missed = (phase.agent.clone(), phase.phase_id.clone(), fact.clone());
                        result.missed_at_findings.push(missed);
                    }
                }
            }
        }
    }
    Ok(result)
}

struct EvalReport {
    command: String,
    seed: u64,
    swarm: SwarmKind,
    size: String,
    embedder: &'static str,
    /// The deep tier's model, or `off`.
    deep: &'static str,
    events: usize,
    retrieval: Retrieval,
    context: ContextCheck,
    contradictions: ContradictionResult,
    dedup: DedupResult,
    forgetting: ForgettingResult,
    compression: CompressionResult,
    timings: BTreeMap<&'static str, f64>,
}

/// One target of the issue, met or not.
struct Target {
    name: String,
    target: String,
    value: f64,
    met: bool,
}

impl EvalReport {
    fn hybrid(&self, kind: QuestionKind) -> Option<RankStats> {
        self.retrieval.by_kind.get(&kind).and_then(|modes| modes.get("hybrid")).copied()
    }

    fn compression_ratio(&self, level: &str) -> f64 {
        let tokens = self.compression.levels.get(level).map_or(0, |totals| totals.tokens);
        if tokens == 0 { 0.0 } else { self.compression.original_tokens as f64 / tokens as f64 }
    }

    fn key_fact_retention(&self, level: &str) -> f64 {
        let kept = self.compression.levels.get(level).map_or(0, |totals| totals.key_facts_kept);
        ratio(kept, self.compression.key_facts)
    }

    fn false_forgetting_rate(&self) -> f64 {
        ratio(self.forgetting.falsely_forgotten.len(), self.forgetting.never_forget)
    }

    fn targets(&self) -> Vec<Target> {
        let mut targets = Vec::new();
        let mut at_least = |name: &str, value: f64, bound: f64| {
            targets.push(Target { name: name.to_string(), target: format!(">= {bound}"), value, met: value >= bound });
        };
        // Issue 21's bounds: every SWE type at 0.85 (multi-hop 0.80, and
        // paraphrase named at 0.90), every conversation type at 0.75.
        let kinds: &[QuestionKind] = match self.swarm {
            SwarmKind::Swe => &QuestionKind::SWE,
            SwarmKind::Conversations => &QuestionKind::CONVERSATIONS,
        };
        for kind in kinds {
            let bound = match (self.swarm, kind) {
                (SwarmKind::Conversations, _) => 0.75,
                (SwarmKind::Swe, QuestionKind::Paraphrase) => 0.90,
                (SwarmKind::Swe, QuestionKind::MultiHop) => 0.80,
                (SwarmKind::Swe, _) => 0.85,
            };
            if let Some(stats) = self.hybrid(*kind) {
                at_least(&format!("hybrid recall@10, {}", kind.as_str()), stats.recall_at_10(), bound);
            }
        }
        at_least("contradiction precision", self.contradictions.scores.precision(), 0.90);
        if self.contradictions.scores.expected > 0 {
            at_least("contradiction recall", self.contradictions.scores.recall(), 0.90);
        }
        if self.compression.phases > 0 {
            at_least("compression at findings (x)", self.compression_ratio("findings"), 10.0);
            at_least("key-fact retention at findings", self.key_fact_retention("findings"), 0.90);
        }
        let false_forgetting = self.false_forgetting_rate();
        targets.push(Target {
            name: "false forgetting".to_string(),
            target: "< 0.01".to_string(),
            value: false_forgetting,
            met: false_forgetting < 0.01,
        });
        targets.push(Target {
            name: "context budget violations".to_string(),
            target: "= 0".to_string(),
            value: self.context.budget_violations as f64,
            met: self.context.budget_violations == 0,
        });
        targets
    }

    fn to_json(&self) -> Value {
        let retrieval: serde_json::Map<String, Value> =
            self.retrieval.by_mode.iter().map(|(mode, stats)| (mode.to_string(), stats.to_json())).collect();
        let by_question_type: serde_json::Map<String, Value> = self
            .retrieval
            .by_kind
            .iter()
            .map(|(kind, modes)| {
                let modes: serde_json::Map<String, Value> =
                    modes.iter().map(|(mode, stats)| (mode.to_string(), stats.to_json())).collect();
                (kind.as_str().to_string(), Value::Object(modes))
            })
            .collect();
        let levels: serde_json::Map<String, Value> = PHASE_LEVELS
            .iter()
            .map(|level| {
                let tokens = self.compression.levels.get(level).map_or(0, |totals| totals.tokens);
                let value = json!({
                    "tokens": tokens,
                    "ratio": round3(self.compression_ratio(level)),
                    "key_fact_retention": round3(self.key_fact_retention(level)),
                });
                (level.to_string(), value)
            })
            .collect();
        let contradictions = &self.contradictions.scores;
        let dedup = &self.dedup.scores;
        json!({
            "machine": crate::bench::machine_description(),
            "command": self.command,
            "seed": self.seed,
            "swarm": self.swarm.as_str(),
            "size": self.size,
            "embedder": self.embedder,
            "deep": self.deep,
            "events": self.events,
            "retrieval": retrieval,
            "by_question_type": by_question_type,
            "contradictions": {
                "precision": round3(contradictions.precision()),
                "recall": round3(contradictions.recall()),
                "predicted": contradictions.predicted,
                "correct": contradictions.correct,
                "expected": contradictions.expected,
            },
            "dedup": {
                "precision": round3(dedup.precision()),
                "recall": round3(dedup.recall()),
                "predicted_pairs": dedup.predicted,
                "judged_pairs": dedup.judged,
                "correct_pairs": dedup.correct,
                "expected_pairs": dedup.expected,
                "near_misses_merged": self.dedup.near_misses_merged,
                "listing_truncated": self.dedup.truncated,
                "wrong_merges": self.dedup.wrong_merges.iter().map(|(a, b)| json!([a, b])).collect::<Vec<_>>(),
            },
            "forgetting": {
                "never_forget": self.forgetting.never_forget,
                "falsely_forgotten": self.forgetting.falsely_forgotten,
                "false_forgetting_rate": round3(self.false_forgetting_rate()),
                "forgotten_total": self.forgetting.forgotten_total,
                "decayed_total": self.forgetting.decayed_total,
            },
            "compression": {
                "phases": self.compression.phases,
                "original_tokens": self.compression.original_tokens,
                "key_facts": self.compression.key_facts,
                "levels": levels,
                "missed_at_findings": self
                    .compression
                    .missed_at_findings
                    .iter()
                    .map(|(agent, phase, fact)| json!({"agent": agent, "phase": phase, "fact": fact}))
                    .collect::<Vec<_>>(),
            },
            "context": {
                "requests": self.context.requests,
                "budgets": CONTEXT_BUDGETS,
                "budget_violations": self.context.budget_violations,
                "worst_excess_tokens": self.context.worst_excess,
            },
            "targets": self.targets().iter().map(|target| json!({
                "name": target.name, "target": target.target, "value": round3(target.value), "met": target.met,
            })).collect::<Vec<_>>(),
            "timings_s": self.timings.iter().map(|(name, seconds)| (name.to_string(), json!(round3(*seconds)))).collect::<serde_json::Map<_, _>>(),
        })
    }
}

fn print_table(report: &EvalReport) {
    out!("{}", crate::bench::machine_description());
    out!("command: {}", report.command);
    out!("events: {}, embedder: {}, deep: {}", report.events, report.embedder, report.deep);
    out!("");
    out!("| question type | mode | questions | recall@5 | recall@10 | MRR |");
    out!("|---|---|---:|---:|---:|---:|");
    for kind in QuestionKind::ALL {
        let Some(modes) = report.retrieval.by_kind.get(&kind) else { continue };
        for mode in SEARCH_MODES {
            if let Some(stats) = modes.get(mode) {
                out!(
                    "| {} | {mode} | {} | {:.3} | {:.3} | {:.3} |",
                    kind.as_str(),
                    stats.questions,
                    stats.recall_at_5(),
                    stats.recall_at_10(),
                    stats.mrr()
                );
            }
        }
    }
    for mode in SEARCH_MODES {
        if let Some(stats) = report.retrieval.by_mode.get(mode) {
            out!(
                "| **all** | {mode} | {} | {:.3} | {:.3} | {:.3} |",
                stats.questions,
                stats.recall_at_5(),
                stats.recall_at_10(),
                stats.mrr()
            );
        }
    }
    out!("");
    let contradictions = &report.contradictions.scores;
    out!(
        "contradictions: precision {:.3}, recall {:.3} ({} found, {} right, {} expected)",
        contradictions.precision(),
        contradictions.recall(),
        contradictions.predicted,
        contradictions.correct,
        contradictions.expected
    );
    let dedup = &report.dedup.scores;
    out!(
        "dedup: precision {:.3}, recall {:.3} ({} pairs merged, {} judged, {} right, {} expected; {} near misses merged{})",
        dedup.precision(),
        dedup.recall(),
        dedup.predicted,
        dedup.judged,
        dedup.correct,
        dedup.expected,
        report.dedup.near_misses_merged,
        if report.dedup.truncated { "; merge listing truncated" } else { "" }
    );
    out!(
        "forgetting: {} of {} never-forget items forgotten (rate {:.3}); {} forgotten and {} demoted in all",
        report.forgetting.falsely_forgotten.len(),
        report.forgetting.never_forget,
        report.false_forgetting_rate(),
        report.forgetting.forgotten_total,
        report.forgetting.decayed_total
    );
    out!(
        "context: {} requests at budgets {:?}, {} over budget",
        report.context.requests,
        CONTEXT_BUDGETS,
        report.context.budget_violations
    );
    out!("");
    out!(
        "compression of {} completed phases ({} original tokens, {} key facts):",
        report.compression.phases,
        report.compression.original_tokens,
        report.compression.key_facts
    );
    out!("| level | tokens | ratio | key-fact retention |");
    out!("|---|---:|---:|---:|");
    for level in PHASE_LEVELS {
        let tokens = report.compression.levels.get(level).map_or(0, |totals| totals.tokens);
        out!(
            "| {level} | {tokens} | {:.1}x | {:.3} |",
            report.compression_ratio(level),
            report.key_fact_retention(level)
        );
    }
    out!("");
    out!("| target | wanted | measured | met |");
    out!("|---|---|---:|---|");
    for target in report.targets() {
        out!(
            "| {} | {} | {:.3} | {} |",
            target.name,
            target.target,
            target.value,
            if target.met { "yes" } else { "NO" }
        );
    }
    let timings: Vec<String> = report.timings.iter().map(|(name, seconds)| format!("{name} {seconds:.1}")).collect();
    out!("");
    out!("timings (s): {}", timings.join(", "));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|id| id.to_string()).collect()
    }

    /// Three questions with known ranks: 1, 4 and not found.
    #[test]
    fn recall_and_mrr_on_a_hand_built_case() {
        let hits = vec![events(&["a"]), events(&["b"]), events(&["c"]), events(&["d", "merged-answer"])];
        let mut stats = RankStats::default();
        stats.add(first_answer_rank(&hits, &["a".to_string()]));
        stats.add(first_answer_rank(&hits, &["merged-answer".to_string()]));
        stats.add(first_answer_rank(&hits, &["nowhere".to_string()]));
        assert_eq!(first_answer_rank(&hits, &["merged-answer".to_string()]), Some(4));
        assert_eq!(stats.questions, 3);
        assert!((stats.recall_at_5() - 2.0 / 3.0).abs() < 1e-9);
        assert!((stats.recall_at_10() - 2.0 / 3.0).abs() < 1e-9);
        assert!((stats.mrr() - (1.0 + 0.25) / 3.0).abs() < 1e-9);
        // A rank past 10 counts for neither recall nor MRR; past 5, only @10.
        let mut late = RankStats::default();
        late.add(Some(7));
        late.add(Some(11));
        assert_eq!((late.found_in_5, late.found_in_10), (0.0, 1.0));
        assert!((late.mrr() - (1.0 / 7.0) / 2.0).abs() < 1e-9);
    }

    #[test]
    fn pair_precision_and_recall_on_a_hand_built_case() {
        let expected: BTreeSet<_> = [pair("a", "b"), pair("c", "d"), pair("e", "f")].into();
        // One right (in reverse order), one wrong, one unjudged.
        let predicted: BTreeSet<_> = [pair("b", "a"), pair("a", "c"), pair("x", "y")].into();
        let scores = PairScores::score(&predicted, &expected, |(a, _)| a != "x");
        assert_eq!(scores, PairScores { predicted: 3, judged: 2, correct: 1, expected: 3 });
        assert!((scores.precision() - 0.5).abs() < 1e-9);
        assert!((scores.recall() - 1.0 / 3.0).abs() < 1e-9);
        // Nothing predicted is precise; nothing expected is fully recalled.
        let none = PairScores::score(&BTreeSet::new(), &BTreeSet::new(), |_| true);
        assert_eq!((none.precision(), none.recall()), (1.0, 1.0));
    }

    #[test]
    fn a_fact_is_kept_whatever_its_case() {
        assert!(keeps_fact("Fixed LedgerOverflowError in src/ledger/apply.rs", "ledgeroverflowerror"));
        assert!(!keeps_fact("fixed the overflow", "LedgerOverflowError"));
    }
}
