//! What happened in a phase, noted event by event: the `full` level and the
//! material of the extractive compressor.

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{Event, EventKind};

use crate::graph::{EntityKind, TouchedEdge, relation};
use mneme_index::tokens;

/// Messages are noted cut to this many tokens: the `full` record points at
/// the original for the rest.
const MESSAGE_NOTE_TOKENS: usize = 60;
/// The first messages of a phase (usually the ask) kept in the notes...
const FIRST_MESSAGES: usize = 2;
/// ...and the latest ones (usually the conclusion)...
const LAST_MESSAGES: usize = 3;
/// ...and those that say the most (see [`salience`]), wherever they fall:
/// "whole suite green: 13 tests pass, including
/// retries_debit_with_large_amounts" followed by three lines of chatter
/// was lost from the last ones.
const SALIENT_MESSAGES: usize = 3;

#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct DecisionNote {
    pub seq: u64,
    pub item_id: String,
    pub title: String,
    pub choice: String,
    pub rationale: String,
    pub supersedes: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CommandNote {
    pub runs: u32,
    pub failures: u32,
}

/// An error seen in the phase and what fixed it, from the fact graph's
/// `fails_with` and `fixes` relations.
#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct ErrorNote {
    /// The error entity's name: a failure signature or an error type.
    pub error: String,
    /// The command that failed with it.
    pub command: String,
    pub first_seq: u64,
    /// Files whose edits fixed it, sorted.
    pub fixed_by: Vec<String>,
    /// The passing run that settled it.
    pub fixed_seq: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct MessageNote {
    pub seq: u64,
    pub role: String,
    pub text: String,
}

/// The structured record of a phase (`full` level). Sets are sorted, lists
/// are in log order, so the record is a function of the phase's events.
#[derive(Debug, Clone, Default, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct PhaseNotes {
    /// Events by kind name.
    pub kinds: BTreeMap<String, u32>,
    /// Tokens of the phase's items as memory renders them.
    pub item_tokens: u64,
    pub decisions: Vec<DecisionNote>,
    pub files_read: BTreeSet<String>,
    pub files_modified: BTreeSet<String>,
    /// Definitions shown by the phase's edits.
    pub symbols: BTreeSet<String>,
    /// Normalised commands run, with their runs and failures.
    pub commands: BTreeMap<String, CommandNote>,
    pub errors: Vec<ErrorNote>,
    /// Facts asserted or retracted, as rendered.
    pub facts: Vec<String>,
    /// Handoffs sent or received, as rendered (first line).
    pub handoffs: Vec<String>,
    /// The phase agent's first [`FIRST_MESSAGES`] messages and its latest
    /// [`LAST_MESSAGES`].
    pub first_messages: Vec<MessageNote>,
    pub last_messages: Vec<MessageNote>,
    /// The [`SALIENT_MESSAGES`] messages of the phase agent that name the
    /// most code and numbers, with their salience; a later one takes the
    /// place of an earlier one as salient.
    pub salient_messages: Vec<(u32, MessageNote)>,
    /// Messages seen, including those not kept.
    pub message_count: u32,
}

impl PhaseNotes {
    /// `phase_agent`: whose phase this is. Every agent's events of the
    /// task count, but only that agent's messages are kept as its first and
    /// last: they tell what the phase was for and how it ended, which other
    /// agents' chatter in the same task would push out.
    pub(crate) fn observe(
        &mut self,
        seq: u64,
        event: &Event,
        (phase_agent, goal): (&str, Option<&str>),
        touched: &[TouchedEdge],
        item_text: Option<&str>,
    ) {
        *self.kinds.entry(event.kind_name().to_string()).or_default() += 1;
        if let Some(text) = item_text {
            self.item_tokens += tokens::count(text) as u64;
        }
        match &event.kind {
            EventKind::MessageRecorded(_) if event.agent != phase_agent => self.message_count += 1,
            EventKind::MessageRecorded(message) => {
                self.message_count += 1;
                let note = MessageNote {
                    seq,
                    role: message.role.clone(),
                    text: tokens::truncate(message.text.trim(), MESSAGE_NOTE_TOKENS).0,
                };
                self.note_salient(salience(&note.text, goal), &note);
                if self.first_messages.len() < FIRST_MESSAGES {
                    self.first_messages.push(note);
                } else {
                    self.last_messages.push(note);
                    if self.last_messages.len() > LAST_MESSAGES {
                        self.last_messages.remove(0);
                    }
                }
            }
            EventKind::ToolResultRecorded(result) => {
                let failed = result.exit_code.is_some_and(|code| code != 0);
                for edge in touched.iter().filter(|edge| edge.relation == relation::RUNS) {
                    let note = self.commands.entry(edge.to_name.clone()).or_default();
                    note.runs += 1;
                    if failed {
                        note.failures += 1;
                    }
                }
            }
            EventKind::DecisionMade(decision) => self.decisions.push(DecisionNote {
                seq,
                item_id: event.id.to_string(),
                title: decision.title.clone(),
                choice: decision.choice.clone(),
                rationale: decision.rationale.clone(),
                supersedes: decision.supersedes.map(|id| id.to_string()),
            }),
            EventKind::FactAsserted(fact) => {
                self.facts.push(format!("{} {} {}", fact.subject, fact.predicate, fact.object));
            }
            EventKind::FactRetracted(fact) => {
                self.facts.push(format!("no longer: {} {} {}", fact.subject, fact.predicate, fact.object));
            }
            EventKind::HandoffSent(handoff) => self.handoffs.push(format!("to {}: {}", handoff.to, handoff.task)),
            EventKind::HandoffReceived(received) => {
                self.handoffs.push(format!("from {}: handoff {}", received.from, received.handoff_id))
            }
            _ => {}
        }
        self.note_graph_changes(seq, touched);
    }

    fn note_graph_changes(&mut self, seq: u64, touched: &[TouchedEdge]) {
        let edits_something = touched.iter().any(|edge| edge.relation == relation::MODIFIES);
        for edge in touched {
            match edge.relation.as_str() {
                relation::READS if edge.to_kind == EntityKind::File => {
                    self.files_read.insert(edge.to_name.clone());
                }
                relation::MODIFIES if edge.to_kind == EntityKind::File => {
                    self.files_modified.insert(edge.to_name.clone());
                }
                relation::DEFINES if edits_something && edge.to_kind == EntityKind::Symbol => {
                    self.symbols.insert(edge.to_name.clone());
                }
                relation::FAILS_WITH if edge.open => {
                    let known = self.errors.iter().any(|note| {
                        note.error == edge.to_name && note.command == edge.from_name && note.fixed_seq.is_none()
                    });
                    if !known {
                        self.errors.push(ErrorNote {
                            error: edge.to_name.clone(),
                            command: edge.from_name.clone(),
                            first_seq: seq,
                            fixed_by: Vec::new(),
                            fixed_seq: None,
                        });
                    }
                }
                relation::FAILS_WITH => {
                    // Closed by a passing run of the same command.
                    for note in self.errors.iter_mut().filter(|note| {
                        note.error == edge.to_name && note.command == edge.from_name && note.fixed_seq.is_none()
                    }) {
                        note.fixed_seq = Some(seq);
                    }
                }
                relation::FIXES => {
                    for note in self.errors.iter_mut().filter(|note| note.error == edge.to_name) {
                        if !note.fixed_by.contains(&edge.from_name) {
                            note.fixed_by.push(edge.from_name.clone());
                            note.fixed_by.sort();
                        }
                        note.fixed_seq.get_or_insert(seq);
                    }
                }
                _ => {}
            }
        }
    }

    /// Events in the phase.
    pub fn event_count(&self) -> u32 {
        self.kinds.values().sum()
    }

    /// Messages kept, in log order, each once.
    pub fn kept_messages(&self) -> impl Iterator<Item = &MessageNote> {
        let mut kept: Vec<&MessageNote> = self
            .first_messages
            .iter()
            .chain(self.salient_messages.iter().map(|(_, note)| note))
            .chain(self.last_messages.iter())
            .collect();
        kept.sort_by_key(|note| note.seq);
        kept.dedup_by_key(|note| note.seq);
        kept.into_iter()
    }

    /// Keeps `note` among the salient messages if it says more than the
    /// least of them (or as much: the later wins).
    fn note_salient(&mut self, salience: u32, note: &MessageNote) {
        if salience == 0 {
            return;
        }
        if self.salient_messages.len() == SALIENT_MESSAGES {
            let (least, _) = self
                .salient_messages
                .iter()
                .enumerate()
                .min_by_key(|(_, (salience, note))| (*salience, note.seq))
                .expect("full");
            if self.salient_messages[least].0 > salience {
                return;
            }
            self.salient_messages.remove(least);
        }
        self.salient_messages.push((salience, note.clone()));
    }
}

/// How much a message says, for keeping it in a phase's notes: three for
/// each identifier or path it names (`retries_debit_with_large_amounts`,
/// `src/cart/index.rs`, `TokenExpiredError`), one for each number of two
/// digits or more ("13 tests", "port 8443"), and four for each word of the
/// phase's goal it repeats (not a stop word): the message that says the
/// suite is green in a phase to "run the whole suite" carries the phase's
/// point, where chatter that names a file and a ticket does not.
pub(crate) fn salience(text: &str, goal: Option<&str>) -> u32 {
    let goal_words = goal.map_or(0, |goal| {
        let words = |text: &str| -> std::collections::BTreeSet<String> {
            text.split(|c: char| !c.is_alphanumeric())
                .filter(|word| word.len() >= 3)
                .map(str::to_lowercase)
                .filter(|word| !crate::words::is_stop_word(word))
                .collect()
        };
        words(goal).intersection(&words(text)).count() as u32
    });
    let identifiers = mneme_index::identifiers(text).len() as u32;
    let numbers = text
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '.')
        .map(|word| word.trim_end_matches('.'))
        .filter(|word| word.len() >= 2 && word.chars().all(|c| c.is_ascii_digit()))
        .count() as u32;
    3 * identifiers + numbers + 4 * goal_words
}

#[cfg(test)]
mod tests {
    use super::salience;

    /// The report that repeats the phase's goal outweighs chatter that
    /// names more code; without a goal, the chatter wins.
    #[test]
    fn a_message_that_repeats_the_goal_is_salient() {
        let goal = Some("Run the whole suite against the fix for LedgerOverflowError");
        let report = "Whole suite green: 13 tests pass, including retries_debit_with_large_amounts.";
        let chatter = "FYI parse_header in src/wire/frame.rs has an old TODO (#4812); leaving it alone.";
        assert!(salience(report, goal) > salience(chatter, goal));
        assert!(salience(report, None) < salience(chatter, None));
        assert_eq!(salience("Ha, nice.", goal), 0);
    }
}
