//! Extraction from events other than tool results: messages, decisions,
//! facts, handoffs, tasks, preferences, phases; and the linking of what any
//! text mentions.

use mneme_events::{
    DecisionMade, Event, EventId, EventKind, FactAsserted, FactRetracted, HandoffSent, MemoriesLinked, PreferenceSet,
    TaskUpdated, Timestamp,
};

use super::lookup::NameScope;
use super::mentions::{
    PathContext, TextSource, is_distinctive_identifier, is_error_name, is_identifier, looks_like_path, mentions,
};
use super::model::{EntityKind, relation};
use super::names::{bounded_key, collapse_whitespace, concept_key, snake_case};
use super::store::{EdgeTerms, EventContext, FactGraph, FactKey, NodeIndex};
use crate::item::ProvenanceRef;

/// Where the `references` edges of a text start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MentionSource {
    /// The event's own item node (`item:<event id>`), created on the first
    /// mention.
    Item,
    /// An entity the event is about (a decision, a task, a preference).
    Node(NodeIndex),
}

impl FactGraph {
    /// Applies the event at `seq`; never fails (unrecognised shapes extract
    /// nothing).
    ///
    /// Events must be applied in log order for the graph to be a function
    /// of the log; refusing an already applied seq is the caller's job (the
    /// memory's checkpoint).
    pub fn apply(&mut self, seq: u64, event: &Event) {
        self.touched.0.clear();
        let context = EventContext::new(seq, event);
        match &event.kind {
            EventKind::MessageRecorded(message) => self.link_prose(MentionSource::Item, &message.text, &context),
            EventKind::ToolResultRecorded(result) => self.apply_tool_result(result, &context),
            EventKind::DecisionMade(decision) => self.apply_decision(decision, &context),
            EventKind::FactAsserted(fact) => self.apply_fact_asserted(fact, &context),
            EventKind::FactRetracted(fact) => self.apply_fact_retracted(fact, &context),
            EventKind::HandoffSent(handoff) => self.apply_handoff(handoff, &context),
            EventKind::HandoffAcknowledged(acknowledged) => {
                if let Some(note) = &acknowledged.note {
                    self.link_prose(MentionSource::Item, note, &context);
                }
            }
            EventKind::PhaseStarted(phase) => {
                let text = format!("{}\n{}", phase.phase, phase.goal.as_deref().unwrap_or(""));
                self.link_prose(MentionSource::Item, &text, &context);
            }
            EventKind::PhaseCompleted(phase) => {
                if let Some(outcome) = &phase.outcome {
                    self.link_prose(MentionSource::Item, outcome, &context);
                }
            }
            EventKind::TaskUpdated(task) => self.apply_task(task, &context),
            EventKind::PreferenceSet(preference) => self.apply_preference(preference, &context),
            EventKind::MemoriesLinked(linked) => self.apply_links(linked, &context),
            EventKind::NoteWritten(note) => {
                let text = format!("{}\n{}", note.text, note.tags.join(" "));
                self.link_prose(MentionSource::Item, &text, &context);
            }
            // A received handoff repeats the sent one; usage feedback,
            // forgetting and consolidation outcomes change items, not facts;
            // a compressed phase restates what its events already said.
            EventKind::HandoffReceived(_) => {}
            // The kinds that manage memory (`carries_content`); a new kind
            // that says something and extracts nothing fails this in every
            // test build.
            other => debug_assert!(
                !crate::render::carries_content(other),
                "{} carries content but has no extraction",
                other.name()
            ),
        }
    }

    /// `memories_linked`: item `related_to` item for each pair, so that a
    /// walk from one memory reaches the other.
    fn apply_links(&mut self, linked: &MemoriesLinked, context: &EventContext) {
        for link in &linked.links {
            let from = self.item_node_of(&link.a, context);
            let to = self.item_node_of(&link.b, context);
            self.link(from, relation::RELATED_TO, to, context);
        }
    }

    /// The item node of the memory `item_id` (an event id).
    fn item_node_of(&mut self, item_id: &str, context: &EventContext) -> NodeIndex {
        // The same spelling as the node the item's own event made.
        let key = item_id.trim().parse::<EventId>().map_or_else(|_| item_id.trim().to_string(), |id| id.to_string());
        let name = format!("memory {key}");
        self.entity(EntityKind::Item, &key, &name, context)
    }

    /// Ends, at `to`, what the event at `created` asserted: its fact's edge
    /// (`fact_asserted`) or its decision (`decision_made`). Used when a
    /// contradiction is resolved against that side.
    pub(crate) fn close_asserted_by(
        &mut self,
        created: ProvenanceRef,
        to: Timestamp,
        closing_seq: u64,
        closing: &Event,
    ) {
        let context = EventContext::new(closing_seq, closing);
        let fact_edge =
            self.facts.values().copied().find(|&edge| self.edges[edge as usize].seqs().contains(&created.seq));
        if let Some(edge) = fact_edge {
            self.close_edge(edge, to, &context);
        }
        if let Some(decision) = self.find(EntityKind::Decision, &created.event_id.to_string()) {
            self.close_validity(decision, to, &context);
        }
        self.touched.0.clear();
    }

    /// The item node of the event being applied.
    pub(crate) fn item_node(&mut self, context: &EventContext) -> NodeIndex {
        let key = context.event_id.to_string();
        let name = format!("{} {key}", context.kind);
        self.entity(EntityKind::Item, &key, &name, context)
    }

    /// Links `source` —references→ each entity written prose mentions.
    pub(crate) fn link_prose(&mut self, source: MentionSource, text: &str, context: &EventContext) {
        self.link_mentions(source, text, &PathContext::default(), TextSource::Prose, context);
    }

    /// Links `source` —references→ each entity `text` mentions: paths,
    /// error names and (in prose) identifiers become entities; known names
    /// are looked up (see [`TextSource`] and [`NameScope`]).
    ///
    /// An entity the event already relates directly (the file it read, the
    /// symbol it defines, a fact's subject) gets no mention on top.
    pub(crate) fn link_mentions(
        &mut self,
        source: MentionSource,
        text: &str,
        paths: &PathContext,
        origin: TextSource,
        context: &EventContext,
    ) {
        if text.trim().is_empty() {
            return;
        }
        let existing_nodes = self.nodes.len() as NodeIndex;
        let found = mentions(text, paths, origin);
        let mut targets: Vec<NodeIndex> = Vec::new();
        for path in &found.files {
            targets.push(self.file_node(path, context));
        }
        for error in &found.errors {
            targets.push(self.entity(EntityKind::Error, &bounded_key(error), error, context));
        }
        for symbol in &found.symbols {
            let key = bounded_key(symbol);
            let node = match origin {
                TextSource::Prose => Some(self.entity(EntityKind::Symbol, &key, symbol, context)),
                TextSource::ToolOutput => self.find(EntityKind::Symbol, &key),
            };
            targets.extend(node);
        }
        if origin == TextSource::Prose {
            targets.extend(self.known_names_in(text, NameScope::Prose));
        }
        let mut source_node = match source {
            MentionSource::Node(node) => Some(node),
            MentionSource::Item => None,
        };
        let mut linked = Vec::with_capacity(targets.len());
        for target in targets {
            let related_already = target < existing_nodes && self.is_directly_linked(target, context.seq);
            if related_already || Some(target) == source_node || linked.contains(&target) {
                continue;
            }
            let from = *source_node.get_or_insert_with(|| self.item_node(context));
            self.link(from, relation::REFERENCES, target, context);
            linked.push(target);
        }
    }

    /// `decision_made`: the decision (`decision:<event id>`), `decided` from
    /// its agent, and `supersedes` the decision it replaces, whose validity
    /// it closes. The superseded decision stays in the graph.
    fn apply_decision(&mut self, decision: &DecisionMade, context: &EventContext) {
        let node = self.decision_node(context.event_id, context);
        self.rename(node, decision.title.trim(), context);
        self.start_validity(node, context.ts, context);
        self.set_attribute(node, "choice", decision.choice.trim(), context);
        if !decision.rationale.trim().is_empty() {
            self.set_attribute(node, "rationale", decision.rationale.trim(), context);
        }
        let agent = self.publisher(context);
        self.link(agent, relation::DECIDED, node, context);
        if let Some(superseded) = decision.supersedes {
            let superseded = self.decision_node(superseded, context);
            self.link(node, relation::SUPERSEDES, superseded, context);
            self.close_validity(superseded, context.ts, context);
        }
        let text = format!("{}\n{}\n{}", decision.title, decision.choice, decision.rationale);
        self.link_prose(MentionSource::Node(node), &text, context);
    }

    /// The decision made by event `id`; a placeholder named by the id until
    /// its `decision_made` is applied (it may belong to another agent).
    fn decision_node(&mut self, id: EventId, context: &EventContext) -> NodeIndex {
        let key = id.to_string();
        self.entity(EntityKind::Decision, &key, &key, context)
    }

    /// `fact_asserted`: subject —predicate→ object, with the fact's
    /// confidence, valid from its `valid_from` (default: the event's time)
    /// to its `valid_to`; and `asserted` from the agent to the subject.
    ///
    /// A new object for the same subject and predicate does not close the
    /// old fact: both stay valid until retracted (detecting and settling
    /// contradictions is the consolidator's job). Asserting an open fact
    /// again confirms it: provenance grows, confidence becomes the latest.
    fn apply_fact_asserted(&mut self, fact: &FactAsserted, context: &EventContext) {
        let subject = self.fact_term(&fact.subject, context);
        let object = self.fact_term(&fact.object, context);
        let predicate = snake_case(&fact.predicate);
        let terms =
            EdgeTerms { valid_from: fact.valid_from, valid_to: fact.valid_to, confidence: Some(fact.confidence) };
        let edge = self.link_with(subject, &predicate, object, context, &[], terms);
        self.facts.insert(fact_key(&fact.subject, &predicate, &fact.object), edge);
        let agent = self.publisher(context);
        self.link(agent, relation::ASSERTED, subject, context);
        let text = format!("{}\n{}", fact.subject, fact.object);
        self.link_prose(MentionSource::Item, &text, context);
    }

    /// `fact_retracted`: closes the asserted fact at the retraction's
    /// `valid_to` (default: the event's time). Retracting a fact the graph
    /// never saw changes nothing but the mentions of its reason.
    fn apply_fact_retracted(&mut self, fact: &FactRetracted, context: &EventContext) {
        let predicate = snake_case(&fact.predicate);
        if let Some(&edge) = self.facts.get(&fact_key(&fact.subject, &predicate, &fact.object)) {
            self.close_edge(edge, fact.valid_to.unwrap_or(context.ts), context);
        }
        if let Some(reason) = &fact.reason {
            self.link_prose(MentionSource::Item, reason, context);
        }
    }

    /// The entity a fact's subject or object names: an explicit id
    /// (`file:src/a.rs`), a path, an error name, a code identifier, a known
    /// name, or else a concept.
    fn fact_term(&mut self, text: &str, context: &EventContext) -> NodeIndex {
        let text = collapse_whitespace(text);
        if let Some(node) = self.explicit_entity(&text, context) {
            return node;
        }
        if looks_like_path(&text)
            && let Some(path) = PathContext::default().normalise(&text)
        {
            return self.file_node(&path, context);
        }
        if is_error_name(&text) {
            return self.entity(EntityKind::Error, &text, &text, context);
        }
        let is_code_path = text.contains("::") && text.split("::").all(is_identifier);
        if is_distinctive_identifier(&text) || is_code_path {
            return self.entity(EntityKind::Symbol, &bounded_key(&text), &text, context);
        }
        if let Some(node) = self.resolve_name(&text).filter(|&node| self.node_at(node).kind != EntityKind::Item) {
            return node;
        }
        self.entity(EntityKind::Concept, &concept_key(&text), &text, context)
    }

    /// `kind:key` written out, for a kind other than items.
    fn explicit_entity(&mut self, text: &str, context: &EventContext) -> Option<NodeIndex> {
        let (prefix, rest) = text.split_once(':')?;
        let kind = EntityKind::from_name(prefix).filter(|kind| *kind != EntityKind::Item)?;
        let rest = rest.trim();
        if rest.is_empty() {
            return None;
        }
        let node = match kind {
            EntityKind::File => {
                let path = PathContext::default().normalise(rest)?;
                self.file_node(&path, context)
            }
            EntityKind::Concept => self.entity(kind, &concept_key(rest), rest, context),
            _ => self.entity(kind, &bounded_key(rest), rest, context),
        };
        Some(node)
    }

    /// `handoff_sent`: `handed_off_to` between the agents; the task; the
    /// artifacts that are paths as files the task `references`; the item
    /// `references` the task and the decisions handed over.
    fn apply_handoff(&mut self, handoff: &HandoffSent, context: &EventContext) {
        let sender = self.publisher(context);
        let receiver = self.entity(EntityKind::Agent, handoff.to.trim(), handoff.to.trim(), context);
        self.link(sender, relation::HANDED_OFF_TO, receiver, context);
        let task_name = collapse_whitespace(&handoff.task);
        let task = self.entity(EntityKind::Task, &bounded_key(&task_name), &task_name, context);
        let item = self.item_node(context);
        self.link(item, relation::REFERENCES, task, context);
        let mut prose = vec![handoff.summary.as_str()];
        for artifact in &handoff.artifacts {
            let artifact = artifact.trim();
            match PathContext::default().normalise(artifact).filter(|_| looks_like_path(artifact)) {
                Some(path) => {
                    let file = self.file_node(&path, context);
                    self.link(task, relation::REFERENCES, file, context);
                }
                None => prose.push(artifact),
            }
        }
        for decision in &handoff.decisions {
            match decision.trim().parse::<EventId>() {
                Ok(id) => {
                    let decision = self.decision_node(id, context);
                    self.link(item, relation::REFERENCES, decision, context);
                }
                Err(_) => prose.push(decision),
            }
        }
        prose.extend(handoff.constraints.iter().map(String::as_str));
        self.link_prose(MentionSource::Item, &prose.join("\n"), context);
    }

    /// `task_updated`: the task with its latest status, title and note.
    fn apply_task(&mut self, task: &TaskUpdated, context: &EventContext) {
        let task_id = collapse_whitespace(&task.task_id);
        let node = self.entity(EntityKind::Task, &bounded_key(&task_id), &task_id, context);
        self.touch(node, context);
        self.set_attribute(node, "status", task.status.as_str(), context);
        if let Some(title) = task.title.as_deref().map(str::trim).filter(|title| !title.is_empty()) {
            self.set_attribute(node, "title", title, context);
        }
        if let Some(note) = task.note.as_deref().map(str::trim).filter(|note| !note.is_empty()) {
            self.set_attribute(node, "note", note, context);
        }
        let text = format!("{}\n{}", task.title.as_deref().unwrap_or(""), task.note.as_deref().unwrap_or(""));
        self.link_prose(MentionSource::Node(node), &text, context);
    }

    /// `preference_set`: the preference (`preference:<key>`) with its value.
    fn apply_preference(&mut self, preference: &PreferenceSet, context: &EventContext) {
        let key = collapse_whitespace(&preference.key);
        let node = self.entity(EntityKind::Preference, &bounded_key(&key), &key, context);
        self.touch(node, context);
        self.set_attribute(node, "value", preference.value.trim(), context);
        self.link_prose(MentionSource::Node(node), &preference.value, context);
    }
}

/// The retraction key of a fact.
fn fact_key(subject: &str, predicate: &str, object: &str) -> FactKey {
    (collapse_whitespace(subject).to_lowercase(), predicate.to_string(), collapse_whitespace(object).to_lowercase())
}
