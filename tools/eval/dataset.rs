//! What the synthetic swarm generator emits and the evaluator reads: events
//! in Mneme's wire format, and the ground truth beside them. Ground truth
//! names events by id; the evaluator maps what the API answers (item ids,
//! provenance event ids) back to them.

use serde::{Deserialize, Serialize};

/// The swarm every generated event belongs to.
pub const EVAL_SWARM: &str = "eval";

/// How big a generated swarm is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorSize {
    /// Agents of the swarm (at least 2, so that there are handoffs).
    pub agents: usize,
    /// Tasks; each runs through its phases and hands off between agents.
    pub tasks: usize,
    /// Filler events per phase (file reads, test runs, chatter) on top of
    /// the ones that carry ground truth; scales the haystack.
    pub filler_per_phase: usize,
}

impl GeneratorSize {
    /// `small` (about 2,000 events), `medium` (about 20,000), `large`
    /// (about 200,000), or `agents:tasks:filler`.
    pub fn parse(text: &str) -> Result<GeneratorSize, String> {
        match text {
            "tiny" => Ok(GeneratorSize { agents: 3, tasks: 2, filler_per_phase: 4 }),
            "small" => Ok(GeneratorSize { agents: 3, tasks: 20, filler_per_phase: 20 }),
            "medium" => Ok(GeneratorSize { agents: 5, tasks: 100, filler_per_phase: 45 }),
            "large" => Ok(GeneratorSize { agents: 8, tasks: 500, filler_per_phase: 95 }),
            custom => {
                let parts: Vec<&str> = custom.split(':').collect();
                let [agents, tasks, filler] = parts.as_slice() else {
                    return Err(format!(
                        "size {custom:?}: expected tiny, small, medium, large or agents:tasks:filler (e.g. 3:20:20)"
                    ));
                };
                let number = |name: &str, text: &str| {
                    text.parse::<usize>().map_err(|_| format!("size {custom:?}: {name} {text:?} is not a number"))
                };
                let size = GeneratorSize {
                    agents: number("agents", agents)?,
                    tasks: number("tasks", tasks)?,
                    filler_per_phase: number("filler", filler)?,
                };
                if size.agents < 2 || size.tasks == 0 {
                    return Err(format!("size {custom:?}: expected at least 2 agents and 1 task"));
                }
                Ok(size)
            }
        }
    }
}

/// A generated swarm: events in publish order, and what a perfect memory
/// would make of them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    pub seed: u64,
    pub swarm: SwarmKind,
    /// The size as `agents:tasks:filler` or `pairs:sessions`.
    pub size: String,
    pub agents: Vec<String>,
    /// Events as `POST /v1/events` takes them, in publish order, with
    /// increasing `ts`; swarm [`EVAL_SWARM`].
    pub events: Vec<serde_json::Value>,
    pub truth: GroundTruth,
}

/// Which kind of swarm a dataset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum SwarmKind {
    /// Agents fixing bugs in a repository: tool calls, decisions, facts,
    /// handoffs and phases (`generator/`).
    Swe,
    /// Pairs of people talking over months, one turn per message
    /// (`conversations/`).
    Conversations,
}

impl SwarmKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SwarmKind::Swe => "swe",
            SwarmKind::Conversations => "conversations",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GroundTruth {
    pub questions: Vec<Question>,
    /// Each group: ids of events that say the same thing in other words
    /// and should merge into one memory.
    pub duplicate_groups: Vec<Vec<String>>,
    /// Pairs of events that look alike but differ in what matters (another
    /// number, path, identifier, or a negation): they must not merge.
    pub near_misses: Vec<(String, String)>,
    /// Pairs of events (`fact_asserted` or `decision_made`) that contradict
    /// each other, older first.
    pub contradictions: Vec<(String, String)>,
    /// Events whose memories must never be forgotten (pinned, important,
    /// active decisions, preferences).
    pub never_forget: Vec<String>,
    pub phases: Vec<PhaseTruth>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// Shares rare words (identifiers, error names, paths) with its answer.
    Lexical,
    /// Says the same as its answer in other words.
    Paraphrase,
    /// Answered by an event linked to the question's entity through the
    /// fact graph (file → error → fix), not by shared words.
    MultiHop,
    /// "What was true at t": answered by the fact valid at `as_of`, not the
    /// newer one.
    Temporal,
    /// "What fixed error E": answered by the event that fixed it.
    FixedBy,
    /// Conversations: one turn answers it, mostly in other words.
    SingleHop,
    /// Conversations: several turns, each one item of the answer ("which
    /// hobbies has X picked up?").
    List,
    /// Conversations: the answer is stated in other words or needs a small
    /// step ("a weekend in Lisbon" for "has X been abroad?").
    Inference,
}

impl QuestionKind {
    pub const ALL: [QuestionKind; 8] = [
        QuestionKind::Lexical,
        QuestionKind::Paraphrase,
        QuestionKind::SingleHop,
        QuestionKind::MultiHop,
        QuestionKind::Temporal,
        QuestionKind::FixedBy,
        QuestionKind::List,
        QuestionKind::Inference,
    ];

    /// The SWE swarm's question types.
    pub const SWE: [QuestionKind; 5] = [
        QuestionKind::Lexical,
        QuestionKind::Paraphrase,
        QuestionKind::MultiHop,
        QuestionKind::Temporal,
        QuestionKind::FixedBy,
    ];

    /// The conversations' question types.
    pub const CONVERSATIONS: [QuestionKind; 5] = [
        QuestionKind::SingleHop,
        QuestionKind::MultiHop,
        QuestionKind::Temporal,
        QuestionKind::List,
        QuestionKind::Inference,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QuestionKind::Lexical => "lexical",
            QuestionKind::Paraphrase => "paraphrase",
            QuestionKind::MultiHop => "multi_hop",
            QuestionKind::Temporal => "temporal",
            QuestionKind::FixedBy => "fixed_by",
            QuestionKind::SingleHop => "single_hop",
            QuestionKind::List => "list",
            QuestionKind::Inference => "inference",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    pub id: String,
    pub kind: QuestionKind,
    /// The agent whose memory is asked; it may see every answer.
    pub agent: String,
    pub text: String,
    /// For temporal questions: search only what was recorded up to then.
    pub as_of: Option<String>,
    /// For multi-hop questions: the entity the question is about.
    pub entity: Option<String>,
    /// Ids of the events that answer it.
    pub answers: Vec<String>,
    /// Whether one answer is enough, or each counts.
    #[serde(default)]
    pub scoring: Scoring,
}

/// How a question's hits are scored against its answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scoring {
    /// The answers say the same thing (a memory and its near duplicates):
    /// the first one found counts, and recall is 0 or 1.
    #[default]
    Any,
    /// The answers are the evidence, each a part of it: recall is the
    /// fraction of them found; the rank is the first one's.
    Each,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseTruth {
    pub agent: String,
    /// The id of the phase's `phase_started` event (Mneme's phase id).
    pub phase_id: String,
    /// Short strings (identifiers, paths, numbers, error names) a good
    /// summary of the phase keeps; matched case-insensitively.
    pub key_facts: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_by_name_and_by_numbers() {
        assert_eq!(GeneratorSize::parse("small").unwrap().tasks, 20);
        assert_eq!(
            GeneratorSize::parse("4:10:7").unwrap(),
            GeneratorSize { agents: 4, tasks: 10, filler_per_phase: 7 }
        );
        assert!(GeneratorSize::parse("1:10:7").unwrap_err().contains("at least 2 agents"));
        assert!(GeneratorSize::parse("huge").unwrap_err().contains("tiny, small"));
    }
}
