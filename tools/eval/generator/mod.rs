//! The seeded generator of synthetic multi-agent SWE trajectories with
//! ground truth (see `dataset.rs`): the same seed and size give the
//! same events and the same truth, byte for byte.
//!
//! The swarm works through its tasks one after another. Each task is a bug
//! in a synthetic repository (Rust under `src/<module>/`, Python under
//! `services/<module>/`, JavaScript under `web/src/<module>/`): the planner
//! files the issue and hands it to a lead coder, who investigates (reads the
//! file, runs the failing test, explains the cause, asserts facts), then
//! implements (a decision later reversed, edits, sometimes a compile error,
//! the fix, the passing run, a setting that changes), hands over to the
//! tester (the whole suite, sometimes a fact that conflicts with the lead's)
//! and to the reviewer (the diff, sometimes a decision that conflicts, a
//! pinned rule). Filler (file reads, searches, passing runs, chatter,
//! private notes) scales the haystack around the story. Names are combined
//! from word lists and drawn without repetition per task, so thousands of
//! tasks stay distinguishable.
//!
//! Ground truth is written while the story is told, from what each event
//! says, never from what a retriever is expected to find; every answer is a
//! shared event, so any agent may ask.
//!
//! Here: the generator, its events as written and its phases. Beside it,
//! by job: the random stream (`random`), the word lists (`vocabulary`),
//! each task's world drawn from them (`world`), what tools print
//! (`outputs`), the story told per task (`story`), the questions and the
//! rest of the ground truth (`truth`), and the filler around the story
//! (`filler`).

mod filler;
mod outputs;
mod random;
pub(crate) use random::SeededRandom;
mod story;
mod truth;
mod vocabulary;
mod world;

use std::collections::HashSet;

use mneme_events::{EventId, Timestamp};
use serde_json::{Map, Value, json};

use crate::eval::dataset::{Dataset, EVAL_SWARM, GeneratorSize, GroundTruth, PhaseTruth, SwarmKind};
use vocabulary::HANDOFF_CONSTRAINTS;
use world::{TaskWorld, agent_names, message_role, plan_task};

/// 2026-03-02T08:00:00Z, the time of the swarm's first event.
const START_UNIX_MS: u64 = 1_772_438_400_000;
const MILLIS_PER_DAY: u64 = 86_400_000;
/// The synthetic repository's Rust crate.
const CRATE_NAME: &str = "orbit";
const CRATE_VERSION: &str = "0.14.2";

// ------------------------------------------------------------ recording events

/// Envelope fields beyond agent, kind and data.
#[derive(Default, Clone, Copy)]
struct Extra<'a> {
    causation_id: Option<&'a str>,
    importance: Option<f64>,
    private: bool,
}

impl<'a> Extra<'a> {
    fn caused_by(id: &'a str) -> Extra<'a> {
        Extra { causation_id: Some(id), ..Extra::default() }
    }

    fn important(importance: f64) -> Extra<'a> {
        Extra { importance: Some(importance), ..Extra::default() }
    }
}

/// An event written: its id and its time.
#[derive(Debug, Clone, Default)]
struct Emitted {
    id: String,
    unix_ms: u64,
}

/// A phase whose `phase_completed` is still to come.
struct PhaseUnderway {
    agent: String,
    phase_id: String,
    key_facts: Vec<String>,
}

/// Who does what in one task.
struct Cast {
    planner: String,
    lead: String,
    tester: String,
    reviewer: String,
}

/// Ids of the story's events that ground truth names.
#[derive(Default)]
struct StoryIds {
    issue: String,
    planner_handoff: String,
    read_file: String,
    failing_run: String,
    raised_in_fact: String,
    root_cause: Vec<String>,
    old_setting: Emitted,
    change_ms: u64,
    conflicting_facts: Vec<String>,
    port_facts: Vec<String>,
    near_miss: Vec<String>,
    /// The near miss's second text, said in the next phase.
    second_near_miss_text: String,
    /// A third wording of the cause, said in the next phase, if any.
    later_restatement: Option<usize>,
    first_decision: String,
    final_decision: String,
    reviewer_decision: Option<String>,
    build_fix_edit: Option<String>,
    fix_edit: String,
    diff: String,
}

/// One task being told: what it is about, who works on it, and the ids
/// its ground truth will name.
struct TaskRun<'w> {
    world: &'w TaskWorld,
    cast: Cast,
    ids: StoryIds,
    questions_asked: usize,
}

/// The whole swarm being written: one clock, one random stream, the events
/// so far and the truth gathered beside them.
struct Generator {
    random: SeededRandom,
    clock_ms: u64,
    agents: Vec<String>,
    filler_per_phase: usize,
    /// Files that tasks are about: filler never reads them, so that only
    /// the story says anything about a task's file.
    reserved_paths: HashSet<String>,
    correlation_id: Option<String>,
    phase: Option<PhaseUnderway>,
    events: Vec<Value>,
    truth: GroundTruth,
}

/// A swarm of `size`, the same for the same `seed`.
pub fn generate(seed: u64, size: GeneratorSize) -> Dataset {
    let agents = agent_names(size.agents.max(2));
    let mut random = SeededRandom::new(seed);
    let mut taken = HashSet::new();
    let worlds: Vec<TaskWorld> = (0..size.tasks).map(|index| plan_task(&mut random, index, &mut taken)).collect();
    let reserved_paths = worlds.iter().flat_map(|world| [world.path.clone(), world.test_path.clone()]).collect();
    let mut generator = Generator {
        random,
        clock_ms: START_UNIX_MS,
        agents: agents.clone(),
        filler_per_phase: size.filler_per_phase,
        reserved_paths,
        correlation_id: None,
        phase: None,
        events: Vec::with_capacity(size.tasks * (4 * size.filler_per_phase + 48) + 8),
        truth: GroundTruth::default(),
    };
    generator.set_conventions();
    for world in &worlds {
        generator.run_task(world);
    }
    generator.collect_never_forget();
    Dataset {
        seed,
        swarm: SwarmKind::Swe,
        size: format!("{}:{}:{}", size.agents, size.tasks, size.filler_per_phase),
        agents,
        events: generator.events,
        truth: generator.truth,
    }
}

impl Generator {
    /// Writes one event in the wire format, 0.5 to 20 s after the previous
    /// one: times strictly increase, and ids (ULIDs of that millisecond and
    /// 80 seeded random bits) are unique and sort in publish order.
    fn emit(&mut self, agent: &str, kind: &str, data: Value, extra: Extra) -> Emitted {
        self.clock_ms += self.random.between(500, 20_000);
        let random_bits = (u128::from(self.random.next_u64()) << 64) | u128::from(self.random.next_u64());
        let id = EventId::from_parts(self.clock_ms, random_bits).to_string();
        let mut event = Map::new();
        event.insert("id".into(), Value::String(id.clone()));
        event.insert("swarm".into(), Value::String(EVAL_SWARM.into()));
        event.insert("agent".into(), Value::String(agent.into()));
        event.insert("ts".into(), Value::String(rfc3339(self.clock_ms)));
        event.insert("kind".into(), Value::String(kind.into()));
        event.insert("data".into(), data);
        if let Some(correlation_id) = &self.correlation_id {
            event.insert("correlation_id".into(), Value::String(correlation_id.clone()));
        }
        if let Some(causation_id) = extra.causation_id {
            event.insert("causation_id".into(), Value::String(causation_id.into()));
        }
        event.insert("scope".into(), Value::String(if extra.private { "private" } else { "shared" }.into()));
        if let Some(importance) = extra.importance {
            event.insert("importance".into(), json!(importance));
        }
        self.events.push(Value::Object(event));
        Emitted { id, unix_ms: self.clock_ms }
    }

    fn message(&mut self, agent: &str, text: String, extra: Extra) -> Emitted {
        let role = message_role(agent).to_string();
        self.emit(agent, "message_recorded", json!({"role": role, "text": text}), extra)
    }

    fn tool(&mut self, agent: &str, tool: &str, args: Value, output: String, exit_code: i32, extra: Extra) -> Emitted {
        let duration_ms = self.random.between(80, 30_000);
        let data =
            json!({"tool": tool, "args": args, "output": output, "exit_code": exit_code, "duration_ms": duration_ms});
        self.emit(agent, "tool_result_recorded", data, extra)
    }

    fn bash(&mut self, agent: &str, command: &str, output: String, exit_code: i32, extra: Extra) -> Emitted {
        self.tool(agent, "bash", json!({"cmd": command, "cwd": "/repo"}), output, exit_code, extra)
    }

    fn edit(&mut self, agent: &str, path: &str, old: String, new: String, snippet: String) -> Emitted {
        let output = format!(
            "The file {path} has been edited. Here is the result of running `cat -n` on a snippet of it:\n{snippet}"
        );
        let args = json!({"path": path, "old_string": old, "new_string": new});
        self.tool(agent, "edit_file", args, output, 0, Extra::default())
    }

    fn fact(&mut self, agent: &str, triple: [&str; 3], valid_from: Option<u64>, extra: Extra) -> Emitted {
        let [subject, predicate, object] = triple;
        let mut data = json!({"subject": subject, "predicate": predicate, "object": object, "confidence": 0.9});
        if let Some(valid_from) = valid_from {
            data["valid_from"] = Value::String(rfc3339(valid_from));
        }
        self.emit(agent, "fact_asserted", data, extra)
    }

    fn decision(&mut self, agent: &str, content: [String; 3], supersedes: Option<&str>, extra: Extra) -> Emitted {
        let [title, choice, rationale] = content;
        let mut data = json!({"title": title, "choice": choice, "rationale": rationale});
        if let Some(supersedes) = supersedes {
            data["supersedes"] = Value::String(supersedes.into());
        }
        self.emit(agent, "decision_made", data, extra)
    }

    fn handoff(&mut self, from: &str, to: &str, task: &str, fields: (String, Vec<String>, Vec<String>)) -> Emitted {
        let (summary, artifacts, decisions) = fields;
        let constraint = *self.random.pick(HANDOFF_CONSTRAINTS);
        let data = json!({"to": to, "task": task, "summary": summary, "artifacts": artifacts, "decisions": decisions, "constraints": [constraint]});
        self.emit(from, "handoff_sent", data, Extra::important(0.8))
    }

    fn pause_minutes(&mut self, low: u64, high: u64) {
        self.clock_ms += self.random.between(low, high) * 60_000;
    }

    // -------------------------------------------------------- phases

    /// Opens an explicit phase. Each agent has at most one open at a time,
    /// so every event it writes until `complete_phase` belongs to it.
    fn start_phase(&mut self, agent: &str, phase: &str, goal: String) {
        let started = self.emit(agent, "phase_started", json!({"phase": phase, "goal": goal}), Extra::important(0.6));
        self.phase = Some(PhaseUnderway { agent: agent.to_string(), phase_id: started.id, key_facts: Vec::new() });
    }

    /// Notes a short string that the phase owner's last event holds and a
    /// summary of the phase should keep.
    fn key_fact(&mut self, fact: &str) {
        if let Some(phase) = &mut self.phase
            && !phase.key_facts.iter().any(|known| known.eq_ignore_ascii_case(fact))
        {
            phase.key_facts.push(fact.to_string());
        }
    }

    fn complete_phase(&mut self, phase: &str, outcome: String) {
        let underway = self.phase.take().expect("a phase is underway");
        let data = json!({"phase": phase, "phase_id": underway.phase_id, "outcome": outcome});
        self.emit(&underway.agent, "phase_completed", data, Extra::default());
        let mut key_facts = underway.key_facts;
        key_facts.truncate(5);
        self.truth.phases.push(PhaseTruth { agent: underway.agent, phase_id: underway.phase_id, key_facts });
    }

    /// How a phase's filler is spread over the gaps between its story beats.
    fn split_filler(&mut self, gaps: usize) -> Vec<usize> {
        let mut shares = vec![0; gaps];
        for _ in 0..self.filler_per_phase {
            shares[self.random.below(gaps)] += 1;
        }
        shares
    }
}

fn rfc3339(unix_ms: u64) -> String {
    Timestamp::from_unix_millis(unix_ms as i64).to_string()
}

#[cfg(test)]
mod tests;
