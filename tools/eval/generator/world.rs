//! Each task's world, drawn before any event is written: its language,
//! file, symbol, error, symptom, setting, conflict and fixes, with names
//! unique across tasks; and the agents' names and roles.

use std::collections::HashSet;

use super::CRATE_NAME;
use super::random::SeededRandom;
use super::vocabulary::{
    COMPONENT_ROLES, CONDITIONS, CONFLICTS, ERROR_CONCEPTS, FIELDS, FILE_STEMS, MECHANISMS, MODULES,
    PYTHON_BUILD_ERRORS, RUST_BUILD_ERRORS, SETTINGS, STRATEGIES, SYMBOL_NOUNS, SYMBOL_VERBS, SYMPTOM_FAILURES,
    SYMPTOM_SUBJECTS, SYMPTOM_TRIGGERS, Strategy, TEST_CONDITIONS, TEST_VERBS,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Language {
    Rust,
    Python,
    JavaScript,
}

impl Language {
    pub(super) fn source_path(self, module: &str, stem: &str) -> String {
        match self {
            Language::Rust => format!("src/{module}/{stem}.rs"),
            Language::Python => format!("services/{module}/{stem}.py"),
            Language::JavaScript => format!("web/src/{module}/{stem}.js"),
        }
    }

    /// Rust keeps unit tests in the source file.
    pub(super) fn test_path(self, module: &str, stem: &str) -> String {
        match self {
            Language::Rust => self.source_path(module, stem),
            Language::Python => format!("tests/{module}/test_{stem}.py"),
            Language::JavaScript => format!("web/test/{module}/{stem}.test.js"),
        }
    }

    /// A function name from snake_case words, in the language's style.
    pub(super) fn function_name(self, snake: &str) -> String {
        match self {
            Language::JavaScript => camel_case(snake, false),
            Language::Rust | Language::Python => snake.to_string(),
        }
    }

    fn test_function(self, snake: &str) -> String {
        match self {
            Language::Python => format!("test_{snake}"),
            Language::Rust | Language::JavaScript => snake.to_string(),
        }
    }

    pub(super) fn build_errors(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Language::Rust => RUST_BUILD_ERRORS,
            Language::Python => PYTHON_BUILD_ERRORS,
            Language::JavaScript => &[],
        }
    }
}

pub(super) fn camel_case(snake: &str, capitalise_first: bool) -> String {
    let mut camel = String::with_capacity(snake.len());
    for (index, part) in snake.split('_').enumerate() {
        let mut characters = part.chars();
        if let Some(first) = characters.next() {
            if index == 0 && !capitalise_first {
                camel.push(first);
            } else {
                camel.extend(first.to_uppercase());
            }
            camel.push_str(characters.as_str());
        }
    }
    camel
}

pub(super) fn capitalise(text: &str) -> String {
    let mut characters = text.chars();
    match characters.next() {
        Some(first) => first.to_uppercase().chain(characters).collect(),
        None => String::new(),
    }
}

/// Everything one task is about, drawn before any event is written.
pub(super) struct TaskWorld {
    pub(super) task_id: String,
    pub(super) issue_number: u64,
    pub(super) language: Language,
    pub(super) module: &'static str,
    pub(super) stem: String,
    pub(super) path: String,
    pub(super) test_path: String,
    /// The service the facts are about, `ledger-reconciler`.
    pub(super) component: String,
    pub(super) symbol: String,
    /// The noun of the symbol, for its doc comment.
    pub(super) noun: &'static str,
    pub(super) field: &'static str,
    pub(super) test_name: String,
    pub(super) error_name: String,
    pub(super) failing_line: u32,
    pub(super) failing_column: u32,
    /// Indices into the symptom tables: subject, failure, trigger.
    symptom: [usize; 3],
    pub(super) mechanism: usize,
    condition: usize,
    condition_number: u64,
    pub(super) setting: usize,
    pub(super) old_value: u32,
    pub(super) new_value: u32,
    pub(super) conflict: usize,
    pub(super) conflict_objects: [usize; 2],
    pub(super) port: u64,
    /// The first decision's strategy, the one that reverses it, the reviewer's.
    strategies: [usize; 3],
    pub(super) build_error: Option<usize>,
    pub(super) limit: u64,
    pub(super) attempted: u64,
}

impl TaskWorld {
    pub(super) fn fill(&self, template: &str) -> String {
        template
            .replace("{error}", &self.error_name)
            .replace("{field}", self.field)
            .replace("{limit}", &self.limit.to_string())
    }

    pub(super) fn strategy(&self, which: usize) -> &'static Strategy {
        &STRATEGIES[self.strategies[which]]
    }

    pub(super) fn strategy_code(&self, which: usize) -> String {
        let strategy = self.strategy(which);
        let template = match self.language {
            Language::Rust => strategy.rust,
            Language::Python => strategy.python,
            Language::JavaScript => strategy.javascript,
        };
        self.fill(template)
    }

    pub(super) fn condition_text(&self) -> String {
        CONDITIONS[self.condition].replace("{n}", &self.condition_number.to_string())
    }

    /// The symptom as the issue states it, or as a question asks about it.
    pub(super) fn symptom_text(&self, as_question: bool) -> String {
        let side = |pair: &(&'static str, &'static str)| if as_question { pair.1 } else { pair.0 };
        let [subject, failure, trigger] = self.symptom;
        format!(
            "{} {} {}",
            side(&SYMPTOM_SUBJECTS[subject]),
            side(&SYMPTOM_FAILURES[failure]),
            side(&SYMPTOM_TRIGGERS[trigger])
        )
    }

    pub(super) fn decision_title(&self) -> String {
        format!("How {} deals with {}", self.symbol, self.error_name)
    }

    pub(super) fn rust_test_path(&self) -> String {
        format!("{}::{}::tests::{}", self.module, self.stem, self.test_name)
    }

    /// The test as its runner names it in a listing of results.
    pub(super) fn test_id(&self) -> String {
        match self.language {
            Language::Rust => self.rust_test_path(),
            Language::Python => format!("{}::{}", self.test_path, self.test_name),
            Language::JavaScript => self.test_name.clone(),
        }
    }

    pub(super) fn test_command(&self) -> String {
        match self.language {
            Language::Rust => format!("RUST_BACKTRACE=1 cargo test -p {CRATE_NAME} {}", self.rust_test_path()),
            Language::Python => format!("pytest {}::{} --tb=native", self.test_path, self.test_name),
            Language::JavaScript => format!("node --test {}", self.test_path),
        }
    }
}

/// Draws names until `make` gives one not taken. From the 64th try on,
/// `make` gets a round number to append, so that any count of tasks ends.
fn draw_unique(
    random: &mut SeededRandom,
    taken: &mut HashSet<String>,
    kind: &str,
    mut make: impl FnMut(&mut SeededRandom, Option<usize>) -> String,
) -> String {
    let mut attempt = 0usize;
    loop {
        let round = (attempt >= 64).then_some(attempt / 64 + 1);
        let name = make(random, round);
        if taken.insert(format!("{kind}:{name}")) {
            return name;
        }
        attempt += 1;
    }
}

fn with_round(name: String, round: Option<usize>, separator: &str) -> String {
    match round {
        Some(round) => format!("{name}{separator}{round}"),
        None => name,
    }
}

pub(super) fn plan_task(random: &mut SeededRandom, index: usize, taken: &mut HashSet<String>) -> TaskWorld {
    let language = match random.below(10) {
        0..=5 => Language::Rust,
        6..=8 => Language::Python,
        _ => Language::JavaScript,
    };
    let (mut module, mut stem) = (MODULES[0], String::new());
    let path = draw_unique(random, taken, "path", |random, round| {
        module = *random.pick(MODULES);
        stem = with_round(random.pick(FILE_STEMS).to_string(), round, "_");
        language.source_path(module, &stem)
    });
    let component = draw_unique(random, taken, "component", |random, round| {
        let role = loop {
            let role = *random.pick(COMPONENT_ROLES);
            if role != module {
                break role;
            }
        };
        with_round(format!("{module}-{role}"), round, "-")
    });
    let error_name = draw_unique(random, taken, "error", |random, round| {
        let concept = with_round(random.pick(ERROR_CONCEPTS).to_string(), round, "");
        format!("{}{concept}Error", camel_case(module, true))
    });
    let mut noun = SYMBOL_NOUNS[0];
    let symbol = draw_unique(random, taken, "symbol", |random, round| {
        noun = *random.pick(SYMBOL_NOUNS);
        with_round(format!("{}_{module}_{noun}", random.pick(SYMBOL_VERBS)), round, "_v")
    });
    let test_name = draw_unique(random, taken, "test", |random, round| {
        let name =
            format!("{}_{}_{}", random.pick(TEST_VERBS), random.pick(SYMBOL_NOUNS), random.pick(TEST_CONDITIONS));
        with_round(name, round, "_")
    });
    let mut symptom = [0; 3];
    draw_unique(random, taken, "symptom", |random, round| {
        symptom = [
            random.below(SYMPTOM_SUBJECTS.len()),
            random.below(SYMPTOM_FAILURES.len()),
            random.below(SYMPTOM_TRIGGERS.len()),
        ];
        // Past the tables' 9,600 combinations a symptom repeats (and its
        // paraphrase question becomes ambiguous); the round keeps the draw finite.
        with_round(format!("{symptom:?}"), round, "#")
    });
    let setting = random.below(SETTINGS.len());
    let [old_index, new_index] = random.distinct::<2>(SETTINGS[setting].2.len());
    let conflict = random.below(CONFLICTS.len());
    let build_errors = language.build_errors();
    let field = *random.pick(FIELDS);
    let limit = *random.pick(&[65_535, 100_000, 1_000_000, 4_294_967_295, 10_000_000]);
    TaskWorld {
        task_id: format!("task-{:04}", index + 1),
        issue_number: 1000 + index as u64 * 7 + random.between(0, 6),
        language,
        module,
        test_path: language.test_path(module, &stem),
        stem,
        path,
        component,
        symbol: language.function_name(&symbol),
        noun,
        field,
        test_name: language.test_function(&test_name),
        error_name,
        failing_line: random.between(40, 420) as u32,
        failing_column: random.between(9, 33) as u32,
        symptom,
        mechanism: random.below(MECHANISMS.len()),
        condition: random.below(CONDITIONS.len()),
        condition_number: random.between(12, 4096),
        setting,
        old_value: SETTINGS[setting].2[old_index],
        new_value: SETTINGS[setting].2[new_index],
        conflict,
        conflict_objects: random.distinct::<2>(CONFLICTS[conflict].1.len()),
        port: random.between(8000, 9899),
        strategies: random.distinct::<3>(STRATEGIES.len()),
        build_error: (!build_errors.is_empty() && random.chance(0.5)).then(|| random.below(build_errors.len())),
        limit,
        attempted: limit + random.between(1, 5000),
    }
}

/// Agent names: a planner, a coder, a reviewer and a tester first (the
/// fewest that give every role), then more coders and helpers.
pub(super) fn agent_names(count: usize) -> Vec<String> {
    const NAMED: [&str; 8] = ["planner", "coder-1", "reviewer", "tester", "coder-2", "coder-3", "ops", "researcher"];
    (0..count)
        .map(|index| match NAMED.get(index) {
            Some(name) => name.to_string(),
            None => format!("coder-{}", index - NAMED.len() + 4),
        })
        .collect()
}

/// The role a message is recorded with: `coder-2` speaks as `coder`.
pub(super) fn message_role(agent: &str) -> &str {
    match agent {
        "planner" => "orchestrator",
        other => other.trim_end_matches(|character: char| character.is_ascii_digit()).trim_end_matches('-'),
    }
}
