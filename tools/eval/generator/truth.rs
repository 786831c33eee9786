//! Ground truth gathered beside the story: duplicates, near misses and
//! contradictions per task, the questions asked about it, and what must
//! never be forgotten.

use std::collections::HashSet;

use super::vocabulary::SETTINGS;
use super::world::Language;
use super::{Generator, TaskRun, rfc3339};
use crate::eval::dataset::{Question, QuestionKind, Scoring};

impl Generator {
    pub(super) fn record_story_truth(&mut self, run: &TaskRun) {
        let ids = &run.ids;
        self.truth.duplicate_groups.push(ids.root_cause.clone());
        if ids.port_facts.len() > 1 {
            self.truth.duplicate_groups.push(ids.port_facts.clone());
        }
        self.truth.near_misses.push((ids.near_miss[0].clone(), ids.near_miss[1].clone()));
        if ids.conflicting_facts.len() > 1 {
            self.truth.contradictions.push((ids.conflicting_facts[0].clone(), ids.conflicting_facts[1].clone()));
        }
        if let Some(reviewer_decision) = &ids.reviewer_decision {
            self.truth.contradictions.push((ids.final_decision.clone(), reviewer_decision.clone()));
        }
    }

    /// At least six questions per task, one or more of each kind, asked by
    /// any agent (every answer is shared).
    pub(super) fn ask_questions(&mut self, run: &mut TaskRun) {
        let mut questions = self.lexical_questions(run);
        questions.extend(self.questions_by_meaning(run));
        for mut question in questions {
            run.questions_asked += 1;
            question.id = format!("{}-q{}", run.world.task_id, run.questions_asked);
            question.agent = self.random.pick(&self.agents).clone();
            self.truth.questions.push(question);
        }
    }

    /// Questions that share rare tokens (error name, symbol) with their
    /// answers, and what-fixed questions, which name the error too.
    fn lexical_questions(&mut self, run: &TaskRun) -> Vec<Question> {
        let (world, ids) = (run.world, &run.ids);
        let raised = ["Where is {error} raised?", "What raises {error}, and where?", "Which code path throws {error}?"];
        let raised = self.random.pick(&raised).replace("{error}", &world.error_name);
        let mut raised_answers = vec![ids.failing_run.clone(), ids.raised_in_fact.clone()];
        raised_answers.extend(ids.root_cause.iter().cloned());
        // The backtrace and the diff's hunk header show the file too.
        let defined = self.random.pick(&["Which file defines {symbol}?", "Where is {symbol} defined?"]);
        let defined = defined.replace("{symbol}", &world.symbol);
        let defined_answers = vec![ids.read_file.clone(), ids.failing_run.clone(), ids.diff.clone()];
        let fixed = self.random.pick(&["What fixed {error}?", "How was {error} fixed?"]);
        let fixed = fixed.replace("{error}", &world.error_name);
        let mut questions = vec![
            question(QuestionKind::Lexical, raised, raised_answers),
            question(QuestionKind::Lexical, defined, defined_answers),
            question(QuestionKind::FixedBy, fixed, vec![ids.fix_edit.clone(), ids.final_decision.clone()]),
        ];
        if let (Some(edit), Some(which)) = (&ids.build_fix_edit, world.build_error) {
            let (code, label) = world.language.build_errors()[which];
            let text = match world.language {
                Language::Python => format!("What fixed the mypy {code} error ({label}) in {}?", world.path),
                _ => format!("What fixed the {code} {label} error in {}?", world.path),
            };
            questions.push(question(QuestionKind::FixedBy, text, vec![edit.clone()]));
        }
        questions
    }

    /// Questions answered by meaning, by the graph or by time rather than
    /// by shared words.
    fn questions_by_meaning(&mut self, run: &TaskRun) -> Vec<Question> {
        let (world, ids) = (run.world, &run.ids);
        let asked = ["Which ticket said that {q}?", "Who complained that {q}?", "What was the problem where {q}?"];
        let paraphrase = self.random.pick(&asked).replace("{q}", &world.symptom_text(true));
        let paraphrase =
            question(QuestionKind::Paraphrase, paraphrase, vec![ids.issue.clone(), ids.planner_handoff.clone()]);
        // The decisions name the symbol and the error, never the file: the
        // file reaches them through the failure (file → error → decision).
        let mut decided = vec![ids.final_decision.clone()];
        decided.extend(ids.reviewer_decision.iter().cloned());
        let text = format!("What was finally decided for the code in {}?", world.path);
        let multi_hop =
            Question { entity: Some(world.path.clone()), ..question(QuestionKind::MultiHop, text, decided) };
        let (_, setting_name, _) = SETTINGS[world.setting];
        let as_of = ids.old_setting.unix_ms + (ids.change_ms - ids.old_setting.unix_ms) / 2;
        let text = format!("What was the {setting_name} of {}?", world.component);
        let old_value = vec![ids.old_setting.id.clone()];
        let temporal = Question { as_of: Some(rfc3339(as_of)), ..question(QuestionKind::Temporal, text, old_value) };
        vec![paraphrase, multi_hop, temporal]
    }

    /// Pinned items, important events, decisions nothing superseded, and
    /// preferences: read off the events, so the list cannot drift from them.
    pub(super) fn collect_never_forget(&mut self) {
        let superseded: HashSet<&str> =
            self.events.iter().filter_map(|event| event["data"]["supersedes"].as_str()).collect();
        let mut seen = HashSet::new();
        for event in &self.events {
            let id = event["id"].as_str().expect("every event has an id");
            let important = event["importance"].as_f64().is_some_and(|importance| importance >= 0.9);
            let remembered = match event["kind"].as_str() {
                Some("memory_pinned") => event["data"]["item_id"].as_str(),
                Some("preference_set") => Some(id),
                Some("decision_made") if !superseded.contains(id) => Some(id),
                _ if important => Some(id),
                _ => None,
            };
            if let Some(remembered) = remembered
                && seen.insert(remembered)
            {
                self.truth.never_forget.push(remembered.to_string());
            }
        }
    }
}

/// A question without asker and id, which [`Generator::ask_questions`] sets.
fn question(kind: QuestionKind, text: String, answers: Vec<String>) -> Question {
    Question {
        id: String::new(),
        kind,
        agent: String::new(),
        text,
        as_of: None,
        entity: None,
        answers,
        scoring: Scoring::Any,
    }
}
