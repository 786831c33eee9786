//! The story of one task, told in order: the issue, the investigation,
//! the fix (with its reversed decision, build error and changed setting),
//! the whole suite and the review, with what the lead says on the way.

use serde_json::json;

use super::outputs::{CodeShape, build_failure_output, failing_test_output, numbered_lines, passing_tests_output};
use super::random::SeededRandom;
use super::vocabulary::{CONFLICTS, CONVENTIONS, ISSUE_CONTEXT, MECHANISMS, PINNED_RULES, SETTINGS, SYMBOL_VERBS};
use super::world::{Language, TaskWorld, capitalise};
use super::{CRATE_NAME, CRATE_VERSION, Cast, Extra, Generator, MILLIS_PER_DAY, StoryIds, TaskRun, rfc3339};

impl Generator {
    /// The swarm's conventions, set once by the planner before any task.
    pub(super) fn set_conventions(&mut self) {
        let planner = self.agents[0].clone();
        let chosen = self.random.distinct::<5>(CONVENTIONS.len());
        for index in chosen {
            let (key, value) = CONVENTIONS[index];
            self.emit(&planner, "preference_set", json!({"key": key, "value": value}), Extra::important(0.5));
        }
    }

    fn cast_for_task(&mut self) -> Cast {
        let planner = self.agents[0].clone();
        let coders: Vec<&String> = self.agents.iter().filter(|agent| agent.starts_with("coder")).collect();
        let lead = if coders.is_empty() { self.agents[1].clone() } else { (*self.random.pick(&coders)).clone() };
        let tester = self.agents.iter().find(|agent| *agent == "tester").unwrap_or(&lead).clone();
        let reviewer = match self.agents.iter().find(|agent| *agent == "reviewer" && **agent != lead) {
            Some(reviewer) => reviewer.clone(),
            None => self.agents.iter().find(|agent| **agent != lead).expect("at least two agents").clone(),
        };
        Cast { planner, lead, tester, reviewer }
    }

    pub(super) fn run_task(&mut self, world: &TaskWorld) {
        let cast = self.cast_for_task();
        let mut run = TaskRun { world, cast, ids: StoryIds::default(), questions_asked: 0 };
        self.correlation_id = Some(world.task_id.clone());
        self.pause_minutes(2, 30);
        self.open_task(&mut run);
        self.investigate(&mut run);
        self.implement(&mut run);
        self.test_phase(&mut run);
        self.review(&mut run);
        self.record_story_truth(&run);
        self.ask_questions(&mut run);
    }

    fn open_task(&mut self, run: &mut TaskRun) {
        let (world, planner) = (run.world, run.cast.planner.clone());
        let symptom = capitalise(&world.symptom_text(false));
        let context = *self.random.pick(ISSUE_CONTEXT);
        let importance = if self.random.chance(0.3) { 0.9 } else { 0.7 };
        let text = format!("Issue #{} from support: {symptom}. {context}", world.issue_number);
        // The issue is what a user reported; the planner records it.
        let data = json!({"role": "user", "text": text});
        let issue = self.emit(&planner, "message_recorded", data, Extra::important(importance));
        let title = format!("Issue #{} in {}", world.issue_number, world.component);
        self.emit(
            &planner,
            "task_updated",
            json!({"task_id": world.task_id, "status": "open", "title": title}),
            Extra::default(),
        );
        let summary = format!("{symptom} (issue #{}). Find the cause; start from {}.", world.issue_number, world.path);
        let handoff =
            self.handoff(&planner, &run.cast.lead, &world.task_id, (summary, vec![world.path.clone()], vec![]));
        run.ids.issue = issue.id;
        run.ids.planner_handoff = handoff.id;
    }

    fn investigate(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let filler = self.split_filler(4);
        self.start_phase(&lead, "investigate", format!("Find the cause of issue #{}", world.issue_number));
        self.filler(run, &lead, filler[0]);
        let code = CodeShape::of(world);
        let args = json!({"path": world.path, "start_line": code.first_line, "end_line": code.last_line()});
        run.ids.read_file = self.tool(&lead, "read_file", args, code.numbered(), 0, Extra::default()).id;
        self.filler(run, &lead, filler[1]);
        let (output, exit_code) = failing_test_output(world, &mut self.random);
        let failing = self.bash(&lead, &world.test_command(), output, exit_code, Extra::default());
        self.key_fact(&world.error_name);
        self.key_fact(&world.path);
        self.key_fact(&world.test_name);
        let cause = self.message(&lead, root_cause_text(0, world), Extra::caused_by(&failing.id));
        run.ids.root_cause.push(cause.id);
        run.ids.failing_run = failing.id;
        self.assert_findings(run);
        self.filler(run, &lead, filler[2]);
        let near_miss_kind = self.random.below(4);
        let (first_near_miss, second_near_miss) = near_miss_texts(world, near_miss_kind, &mut self.random);
        run.ids.near_miss.push(self.message(&lead, first_near_miss, Extra::default()).id);
        let restatements = self.random.distinct::<2>(3);
        let restated = self.message(&lead, root_cause_text(1 + restatements[0], world), Extra::default());
        run.ids.root_cause.push(restated.id);
        self.filler(run, &lead, filler[3]);
        self.complete_phase("investigate", format!("cause found in {}", world.symbol));
        run.ids.second_near_miss_text = second_near_miss;
        run.ids.later_restatement = self.random.chance(0.4).then_some(1 + restatements[1]);
    }

    /// The lead's facts: where the error is raised, the setting the fix
    /// will change, one the tester may contradict, one it may repeat.
    fn assert_findings(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let raised_in = [world.error_name.as_str(), "raised_in", world.path.as_str()];
        run.ids.raised_in_fact = self.fact(&lead, raised_in, None, Extra::important(0.7)).id;
        // The setting held since some earlier release; the fix changes it.
        let (predicate, _, _) = SETTINGS[world.setting];
        let since = self.clock_ms - self.random.between(3, 90) * MILLIS_PER_DAY;
        let old_value = world.old_value.to_string();
        let setting = [world.component.as_str(), predicate, old_value.as_str()];
        run.ids.old_setting = self.fact(&lead, setting, Some(since), Extra::important(0.7));
        self.key_fact(predicate);
        let (conflict_predicate, objects) = CONFLICTS[world.conflict];
        let conflict = [world.component.as_str(), conflict_predicate, objects[world.conflict_objects[0]]];
        run.ids.conflicting_facts.push(self.fact(&lead, conflict, None, Extra::default()).id);
        let port = world.port.to_string();
        let port_fact = [world.component.as_str(), "listens_on_port", port.as_str()];
        run.ids.port_facts.push(self.fact(&lead, port_fact, None, Extra::default()).id);
    }

    fn implement(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let filler = self.split_filler(3);
        let code = CodeShape::of(world);
        self.pause_minutes(1, 10);
        self.start_phase(&lead, "implement", format!("Fix {} in {}", world.error_name, world.symbol));
        let in_progress = json!({"task_id": world.task_id, "status": "in_progress"});
        self.emit(&lead, "task_updated", in_progress, Extra::default());
        self.filler(run, &lead, filler[0]);
        let first = world.strategy(0);
        let content = [world.decision_title(), world.fill(first.choice), world.fill(first.rationale)];
        run.ids.first_decision = self.decision(&lead, content, None, Extra::important(0.8)).id;
        let first_code = world.strategy_code(0);
        let snippet = code.snippet_with(&first_code);
        self.edit(&lead, &world.path, code.buggy_code.clone(), first_code.clone(), snippet);
        self.build_error_and_fix(run, &code, &first_code);
        self.filler(run, &lead, filler[1]);
        let second_near_miss = std::mem::take(&mut run.ids.second_near_miss_text);
        run.ids.near_miss.push(self.message(&lead, second_near_miss, Extra::default()).id);
        if let Some(variant) = run.ids.later_restatement {
            run.ids.root_cause.push(self.message(&lead, root_cause_text(variant, world), Extra::default()).id);
        }
        self.reverse_decision_and_fix(run, &code, &first_code);
        self.change_setting(run);
        if self.random.chance(0.4) {
            let port = world.port.to_string();
            let port_fact = [world.component.as_str(), "listens_on_port", port.as_str()];
            run.ids.port_facts.push(self.fact(&lead, port_fact, None, Extra::default()).id);
        }
        self.filler(run, &lead, filler[2]);
        let outcome = format!("{} fix in place; {} passes", world.strategy(1).keyword, world.test_name);
        self.complete_phase("implement", outcome);
    }

    /// Some first edits do not compile (or type-check): the build fails at
    /// the edited line, a second edit fixes it, the build passes.
    fn build_error_and_fix(&mut self, run: &mut TaskRun, code: &CodeShape, first_code: &str) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (Some(which), Some((line, old, new))) = (world.build_error, &code.type_fix) else { return };
        let (error_code, _) = world.language.build_errors()[which];
        let (command, passed) = match world.language {
            Language::Python => {
                (format!("mypy services/{}", world.module), "Success: no issues found in 14 source files".to_string())
            }
            _ => (
                "cargo build".to_string(),
                format!(
                    "   Compiling {CRATE_NAME} v{CRATE_VERSION} (/repo)\n    Finished `dev` profile [unoptimized + debuginfo] target(s) in 4.87s"
                ),
            ),
        };
        let exit_code = if world.language == Language::Python { 1 } else { 101 };
        let output = build_failure_output(world, error_code, code.buggy_line, first_code);
        self.bash(&lead, &command, output, exit_code, Extra::default());
        self.key_fact(error_code);
        let snippet = numbered_lines(*line, &[format!("{}{new}", code.indent)]);
        let type_fix = self.edit(&lead, &world.path, old.clone(), new.clone(), snippet);
        self.bash(&lead, &command, passed, 0, Extra::caused_by(&type_fix.id));
        run.ids.build_fix_edit = Some(type_fix.id);
    }

    /// The first decision is reversed by one that supersedes it; the edit
    /// that implements the new one is what makes the failing test pass.
    fn reverse_decision_and_fix(&mut self, run: &mut TaskRun, code: &CodeShape, first_code: &str) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (first, second) = (world.strategy(0), world.strategy(1));
        let rationale =
            format!("{}; {} only hid the failure of {}", world.fill(second.rationale), first.keyword, world.test_name);
        let content = [world.decision_title(), world.fill(second.choice), rationale];
        let superseding = self.decision(&lead, content, Some(run.ids.first_decision.as_str()), Extra::important(0.85));
        self.key_fact(second.keyword);
        let second_code = world.strategy_code(1);
        let snippet = code.snippet_with(&second_code);
        let fix = self.edit(&lead, &world.path, first_code.to_string(), second_code, snippet);
        self.key_fact(&world.path);
        let tests = [world.test_id()];
        let output = passing_tests_output(world.language, &tests, &mut self.random);
        self.bash(&lead, &world.test_command(), output, 0, Extra::caused_by(&fix.id));
        run.ids.final_decision = superseding.id;
        run.ids.fix_edit = fix.id;
    }

    /// The fix changes a setting: the old fact is retracted from the
    /// change's time and the new one holds from then (a change, not a
    /// contradiction).
    fn change_setting(&mut self, run: &mut TaskRun) {
        let (world, lead) = (run.world, run.cast.lead.clone());
        let (predicate, _, _) = SETTINGS[world.setting];
        let change_ms = self.clock_ms + 1;
        let (old_value, new_value) = (world.old_value.to_string(), world.new_value.to_string());
        let retraction = json!({
            "subject": world.component, "predicate": predicate, "object": old_value,
            "valid_to": rfc3339(change_ms), "reason": format!("changed together with the fix for {}", world.error_name),
        });
        self.emit(&lead, "fact_retracted", retraction, Extra::caused_by(&run.ids.old_setting.id));
        let setting = [world.component.as_str(), predicate, new_value.as_str()];
        self.fact(&lead, setting, Some(change_ms), Extra::important(0.7));
        let text =
            format!("Changed {predicate} of {} from {old_value} to {new_value} as part of the fix.", world.component);
        self.message(&lead, text, Extra::default());
        if new_value.len() >= 2 {
            self.key_fact(&new_value);
        }
        run.ids.change_ms = change_ms;
    }

    fn test_phase(&mut self, run: &mut TaskRun) {
        let world = run.world;
        let (lead, tester) = (run.cast.lead.clone(), run.cast.tester.clone());
        if tester != lead {
            let summary = format!(
                "Fix for {} is in ({}); please run the whole suite.",
                world.error_name,
                world.strategy(1).keyword
            );
            let fields =
                (summary, vec![world.path.clone(), world.test_path.clone()], vec![run.ids.final_decision.clone()]);
            self.handoff(&lead, &tester, &world.task_id, fields);
        }
        let filler = self.split_filler(2);
        self.pause_minutes(1, 15);
        self.start_phase(&tester, "test", format!("Run the whole suite against the fix for {}", world.error_name));
        self.filler(run, &tester, filler[0]);
        self.run_whole_suite(world, &tester);
        if self.random.chance(0.45) {
            // The tester reads the deployment differently and says so
            // without retracting the lead's fact: a real conflict.
            let (predicate, objects) = CONFLICTS[world.conflict];
            let object = objects[world.conflict_objects[1]];
            let conflict = [world.component.as_str(), predicate, object];
            run.ids.conflicting_facts.push(self.fact(&tester, conflict, None, Extra::default()).id);
            self.key_fact(object);
        }
        self.filler(run, &tester, filler[1]);
        self.complete_phase("test", "suite green".to_string());
    }

    /// The tester's run of every test, the task's among them, and its report.
    fn run_whole_suite(&mut self, world: &TaskWorld, tester: &str) {
        let mut tests: Vec<String> =
            (0..self.random.between(7, 15)).map(|_| self.filler_test_name(world.language, world.module)).collect();
        let position = self.random.below(tests.len() + 1);
        tests.insert(position, world.test_id());
        let command = match world.language {
            Language::Rust => format!("cargo test -p {CRATE_NAME}"),
            Language::Python => "pytest -v".to_string(),
            Language::JavaScript => "node --test web/test/".to_string(),
        };
        let output = passing_tests_output(world.language, &tests, &mut self.random);
        self.bash(tester, &command, output, 0, Extra::default());
        self.key_fact(&world.test_name);
        let count = format!("{} tests", tests.len());
        let report = format!("Whole suite green: {count} pass, including {}.", world.test_name);
        self.message(tester, report, Extra::default());
        self.key_fact(&count);
    }

    fn review(&mut self, run: &mut TaskRun) {
        let world = run.world;
        let (tester, reviewer) = (run.cast.tester.clone(), run.cast.reviewer.clone());
        if tester != reviewer {
            let summary = format!("Suite green; the fix for {} is ready for review.", world.error_name);
            let fields = (summary, vec![world.path.clone()], vec![run.ids.final_decision.clone()]);
            self.handoff(&tester, &reviewer, &world.task_id, fields);
        }
        let filler = self.split_filler(2);
        self.pause_minutes(1, 20);
        self.start_phase(&reviewer, "review", format!("Review the change to {}", world.path));
        self.filler(run, &reviewer, filler[0]);
        let diff = self.diff_output(world);
        let args = json!({"args": ["diff", "main...HEAD", "--", world.path]});
        run.ids.diff = self.tool(&reviewer, "git", args, diff, 0, Extra::default()).id;
        self.key_fact(&world.path);
        let second = world.strategy(1);
        let text = format!(
            "Reviewed the {} change to {}: it reads well; keep {} as the regression test.",
            second.keyword, world.symbol, world.test_name
        );
        self.message(&reviewer, text, Extra::default());
        self.key_fact(second.keyword);
        self.review_verdicts(run);
        self.filler(run, &reviewer, filler[1]);
        let merged = format!("merged as {}", self.random.hex(7));
        let done = json!({"task_id": world.task_id, "status": "done", "note": merged});
        self.emit(&reviewer, "task_updated", done, Extra::default());
        self.complete_phase("review", format!("approved: {}", world.path));
    }

    /// What some reviews add: a decision that conflicts with the lead's, a
    /// pinned rule, a preference.
    fn review_verdicts(&mut self, run: &mut TaskRun) {
        let (world, reviewer) = (run.world, run.cast.reviewer.clone());
        if self.random.chance(0.35) {
            // The reviewer decides the same question otherwise and does
            // not supersede the lead's decision: two active decisions.
            let third = world.strategy(2);
            let rationale = format!("Reviewer's call: {}", world.fill(third.rationale));
            let content = [world.decision_title(), world.fill(third.choice), rationale];
            run.ids.reviewer_decision = Some(self.decision(&reviewer, content, None, Extra::important(0.7)).id);
            self.key_fact(third.keyword);
        }
        if self.random.chance(0.35) {
            let (setting, _, _) = SETTINGS[world.setting];
            let rule = self.random.pick(PINNED_RULES).replace("{component}", &world.component);
            let rule = rule.replace("{test}", &world.test_name).replace("{setting}", setting);
            let rule_message = self.message(&reviewer, format!("Rule from now on: {rule}."), Extra::important(0.9));
            let pin = json!({"item_id": rule_message.id, "reason": "a standing rule for this component"});
            self.emit(&reviewer, "memory_pinned", pin, Extra::caused_by(&rule_message.id));
        }
        if self.random.chance(0.15) {
            let key = format!("{}.review", world.component);
            let value = format!("{} needs a regression test named after the issue", world.component);
            self.emit(&reviewer, "preference_set", json!({"key": key, "value": value}), Extra::important(0.5));
        }
    }

    fn diff_output(&mut self, world: &TaskWorld) -> String {
        let code = CodeShape::of(world);
        let (path, start) = (&world.path, code.first_line);
        let header = code.lines[1].trim();
        let header = if world.language == Language::Python { code.lines[0].trim() } else { header };
        let index = (code.buggy_line - code.first_line) as usize;
        let mut body = Vec::new();
        for (offset, line) in code.lines.iter().enumerate().skip(2) {
            if offset == index {
                body.push(format!("-{line}"));
                body.push(format!("+{}{}", code.indent, world.strategy_code(1)));
            } else {
                body.push(format!(" {line}"));
            }
        }
        let count = code.lines.len() - 2;
        format!(
            "diff --git a/{path} b/{path}\nindex {}..{} 100644\n--- a/{path}\n+++ b/{path}\n@@ -{},{count} +{},{count} @@ {header}\n{}",
            self.random.hex(7),
            self.random.hex(7),
            start + 2,
            start + 2,
            body.join("\n"),
        )
    }
}

/// The cause as the lead explains it; variants restate the same cause with
/// the same path, identifiers and numbers in other words and order.
fn root_cause_text(variant: usize, world: &TaskWorld) -> String {
    let (symbol, path, error) = (&world.symbol, &world.path, &world.error_name);
    let (mechanism, condition, line) = (MECHANISMS[world.mechanism], world.condition_text(), world.failing_line);
    match variant {
        0 => format!("Found it: {symbol} in {path} {mechanism} {condition}, so {error} is raised at line {line}."),
        1 => format!("{error} is raised at line {line} because {symbol} in {path} {mechanism} {condition}."),
        2 => format!(
            "To restate the cause: {condition}, {symbol} in {path} {mechanism}, which raises {error} at line {line}."
        ),
        _ => {
            format!("Same cause as before: {symbol} ({path}) {mechanism} {condition}; {error} comes from line {line}.")
        }
    }
}

/// Two messages of the lead that read alike but differ in one thing that
/// matters: a number, a path, a negation or an identifier.
fn near_miss_texts(world: &TaskWorld, kind: usize, random: &mut SeededRandom) -> (String, String) {
    let (test, component) = (&world.test_name, &world.component);
    match kind {
        0 => {
            let writers = random.between(3, 12);
            let other = writers * 10;
            let text =
                |count: u64| format!("Reproduced {test} locally with {count} concurrent writers and a cold cache.");
            (text(writers), text(other))
        }
        1 => {
            let other_path = world.language.test_path(world.module, &format!("{}_regression", world.stem));
            let text = |path: &str| format!("The regression test {test} belongs in {path} next to the other cases.");
            (text(&world.test_path), text(&other_path))
        }
        2 => (
            format!("The change to {component} is covered by the nightly integration suite."),
            format!("The change to {component} is not covered by the nightly integration suite."),
        ),
        _ => {
            let [first, second] = random.distinct::<2>(SYMBOL_VERBS.len());
            let caller = |verb: usize| world.language.function_name(&format!("{}_{}", SYMBOL_VERBS[verb], world.noun));
            let text = |name: String| format!("{test} only exercises the path through {name} for now.");
            (text(caller(first)), text(caller(second)))
        }
    }
}
