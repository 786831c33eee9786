//! Core memory: what an agent always has at the top of its context — who
//! it is, what it is doing, under which constraints, the handoffs waiting
//! for it, and the named blocks it edits itself.
//!
//! The state here is a pure function of the events the memory applies: the
//! agent's own `core_memory_updated`, `task_updated` and `handoff_received`,
//! and every `preference_set` it sees. Identity and role come from the
//! swarm's configuration at query time ([`CoreRequest`]); block limits are
//! the API's to enforce when it takes an edit, and a block on the log over
//! its limit is shown cut to it (see [`CoreMemory::blocks`]).

use std::collections::{BTreeMap, BTreeSet};

use mneme_events::{Event, EventId, EventKind, TaskStatus, Timestamp};

/// A block of core memory as last written.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CoreBlock {
    pub content: String,
    /// The `core_memory_updated` event that wrote it.
    pub seq: u64,
    pub event_id: u128,
    pub ts: i64,
}

/// Where the current task was learnt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub enum TaskSource {
    TaskUpdated,
    HandoffReceived,
}

impl TaskSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskSource::TaskUpdated => "task_updated",
            TaskSource::HandoffReceived => "handoff_received",
        }
    }
}

/// The task the agent works on: the latest of its own `task_updated`
/// (open, in progress or blocked) and `handoff_received`. A task marked
/// done or cancelled is current no more.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CurrentTask {
    /// The `task_updated` task id, or the handoff's id.
    pub task_id: String,
    /// The task's title, or the handoff's task text.
    pub title: String,
    /// `open`, `in_progress`, `blocked`; `handed_off` for a handoff.
    pub status: String,
    pub source: TaskSource,
    /// The sender, for a handoff.
    pub from: Option<String>,
    pub seq: u64,
    pub event_id: u128,
    /// The event whose title it shows: this one, or an earlier update of
    /// the same task that named it.
    pub title_seq: u64,
}

/// A preference the agent sees, as last set.
#[derive(Debug, Clone, PartialEq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CorePreference {
    pub value: String,
    pub agent: String,
    pub seq: u64,
    pub event_id: u128,
}

/// One of the agent's own `core_memory_updated` events, kept so that a
/// purge can name it by id (or reach it by time) after later updates
/// replaced its block.
#[derive(Debug, Clone, Copy, PartialEq, Eq, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CoreUpdate {
    pub seq: u64,
    pub event_id: u128,
    pub ts: i64,
    /// The seq of the purge that erased it.
    pub erased_by: Option<u64>,
}

/// What the log made of an agent's core memory.
#[derive(Debug, Clone, PartialEq, Default, rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
pub struct CoreState {
    blocks: BTreeMap<String, CoreBlock>,
    task: Option<CurrentTask>,
    preferences: BTreeMap<String, CorePreference>,
    /// Every own `core_memory_updated`, in log order.
    updates: Vec<CoreUpdate>,
}

impl CoreState {
    /// The agent's blocks, by name.
    pub fn blocks(&self) -> &BTreeMap<String, CoreBlock> {
        &self.blocks
    }

    /// What the agent works on now.
    pub fn task(&self) -> Option<&CurrentTask> {
        self.task.as_ref()
    }

    /// The agent's preferences, by key.
    pub fn preferences(&self) -> &BTreeMap<String, CorePreference> {
        &self.preferences
    }

    /// Every own `core_memory_updated`, in log order.
    pub fn updates(&self) -> &[CoreUpdate] {
        &self.updates
    }

    /// Takes in an event the memory applies; `own` says whether its agent
    /// wrote it.
    pub(crate) fn observe(&mut self, seq: u64, event: &Event, own: bool) {
        let event_id = event.id.0;
        match &event.kind {
            EventKind::CoreMemoryUpdated(update) if own => {
                self.updates.push(CoreUpdate { seq, event_id, ts: event.ts.0, erased_by: None });
                if update.content.trim().is_empty() {
                    self.blocks.remove(&update.block);
                } else {
                    let block = CoreBlock { content: update.content.clone(), seq, event_id, ts: event.ts.0 };
                    self.blocks.insert(update.block.clone(), block);
                }
            }
            EventKind::TaskUpdated(update) if own => match update.status {
                TaskStatus::Done | TaskStatus::Cancelled => {
                    if self.task.as_ref().is_some_and(|task| task.task_id == update.task_id) {
                        self.task = None;
                    }
                }
                status => {
                    let earlier = self.task.as_ref().filter(|task| task.task_id == update.task_id);
                    let (title, title_seq) = match (&update.title, earlier) {
                        (Some(title), _) => (title.clone(), seq),
                        (None, Some(task)) => (task.title.clone(), task.title_seq),
                        (None, None) => (update.task_id.clone(), seq),
                    };
                    self.task = Some(CurrentTask {
                        task_id: update.task_id.clone(),
                        title,
                        status: status.as_str().to_string(),
                        source: TaskSource::TaskUpdated,
                        from: None,
                        seq,
                        event_id,
                        title_seq,
                    });
                }
            },
            EventKind::HandoffReceived(received) if own => {
                let title = received.package.as_ref().map(|package| package.task.clone());
                self.task = Some(CurrentTask {
                    task_id: received.handoff_id.to_string(),
                    title: title.unwrap_or_else(|| format!("handoff {} from {}", received.handoff_id, received.from)),
                    status: "handed_off".to_string(),
                    source: TaskSource::HandoffReceived,
                    from: Some(received.from.clone()),
                    seq,
                    event_id,
                    title_seq: seq,
                });
            }
            EventKind::PreferenceSet(preference) => {
                if preference.value.trim().is_empty() {
                    self.preferences.remove(&preference.key);
                } else {
                    let set =
                        CorePreference { value: preference.value.clone(), agent: event.agent.clone(), seq, event_id };
                    self.preferences.insert(preference.key.clone(), set);
                }
            }
            _ => {}
        }
    }

    /// A purge at `purge_seq`: erases the own updates it names (by event
    /// id) or reaches (`before`, when the purge is of this agent's own
    /// items), the blocks they wrote, and the task and preferences that
    /// came from the items it erased (`erased_items`, their seqs). Answers
    /// the seqs of the updates it erased.
    pub(crate) fn purge(
        &mut self,
        ids: &BTreeSet<EventId>,
        before: Option<Timestamp>,
        erased_items: &BTreeSet<u64>,
        purge_seq: u64,
    ) -> BTreeSet<u64> {
        let mut erased = BTreeSet::new();
        for update in self.updates.iter_mut().filter(|update| update.erased_by.is_none()) {
            if ids.contains(&EventId(update.event_id)) || before.is_some_and(|before| update.ts < before.0) {
                update.erased_by = Some(purge_seq);
                erased.insert(update.seq);
            }
        }
        self.blocks.retain(|_, block| !erased.contains(&block.seq));
        if self
            .task
            .as_ref()
            .is_some_and(|task| erased_items.contains(&task.seq) || erased_items.contains(&task.title_seq))
        {
            self.task = None;
        }
        self.preferences.retain(|_, preference| !erased_items.contains(&preference.seq));
        erased
    }

    /// Whether `id` names one of the agent's own core memory updates, and
    /// whether a purge erased it already.
    pub(crate) fn update(&self, id: EventId) -> Option<&CoreUpdate> {
        self.updates.iter().find(|update| EventId(update.event_id) == id)
    }

    /// Feeds the memory's digest, so that replay checks core memory too.
    pub(crate) fn digest_into(&self, hasher: &mut crate::digest::ContentHasher) {
        hasher.number(self.blocks.len() as u64);
        for (name, block) in &self.blocks {
            hasher.text(name);
            hasher.text(&block.content);
            hasher.number(block.seq);
        }
        match &self.task {
            None => hasher.number(0),
            Some(task) => {
                hasher.number(task.seq);
                hasher.text(&task.task_id);
                hasher.text(&task.title);
                hasher.text(&task.status);
            }
        }
        hasher.number(self.preferences.len() as u64);
        for (key, preference) in &self.preferences {
            hasher.text(key);
            hasher.text(&preference.value);
            hasher.number(preference.seq);
        }
        hasher.number(self.updates.len() as u64);
        for update in &self.updates {
            hasher.number(update.seq);
            hasher.number(update.erased_by.map_or(0, |seq| seq + 1));
        }
    }
}
