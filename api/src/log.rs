//! Answers about the swarm's log: what was accepted, pages of events, dead
//! letters, the agents, the service's health, and the events behind an
//! item.

use serde::{Deserialize, Serialize};

/// `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Health {
    /// `ok`.
    pub status: String,
    /// The first swarm this server holds (the only one, unless it was
    /// started with several configurations: see `swarms`).
    pub swarm: String,
    /// That swarm's log's last seq (0 when empty).
    pub last_seq: u64,
    /// Every swarm this server holds, by name.
    pub swarms: Vec<SwarmHealth>,
    /// This process's name among the processes serving the same swarms
    /// (`MNEME_NODE`, or the host name and HTTP port): what `holder` names.
    pub node: String,
    /// Swarms placed among several processes (`[placement]`), held here or
    /// not, and which processes hold them, as this process last read the
    /// placement bucket. Empty without placement.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub placement: Vec<PlacedSwarmHealth>,
}

/// One placed swarm of `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlacedSwarmHealth {
    pub swarm: String,
    /// The processes it asks for (`[placement] holders`).
    pub holders: u64,
    /// The live processes it is placed on now, first-ranked first.
    pub placed_on: Vec<String>,
    /// The processes holding it, and whether each answers for it yet (a
    /// process catching up does not).
    pub held_by: Vec<PlacementHolder>,
    /// Whether this process answers for it.
    pub held_here: bool,
}

/// A process holding a placed swarm.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlacementHolder {
    pub node: String,
    /// Its HTTP API.
    pub url: String,
    pub ready: bool,
}

/// One swarm of `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwarmHealth {
    pub swarm: String,
    /// Its log's last seq (0 when empty).
    pub last_seq: u64,
    /// The embedding model its vector index runs on (`[embedder]`), e.g.
    /// `static-minilm-l6-256@sha256:…`, or `hashed-ngrams…` when it runs
    /// without one.
    pub embedder: String,
    /// The deep tier (`[enrichment]`); `null` when it is off.
    pub enrichment: Option<EnrichmentHealth>,
    /// Set when this process started on a log that had lost its tail:
    /// snapshots past the log's end, whose memories were rebuilt from the
    /// log (RELIABILITY.md). `null` otherwise.
    pub lost_tail: Option<LostTailHealth>,
    /// The swarm's leases (one: `writer`, under which the consolidator, the
    /// handoff router, the phase summariser and the eraser run), and who
    /// holds each as this process last saw.
    pub leases: Vec<LeaseHealth>,
}

/// The deep tier of a swarm, in `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EnrichmentHealth {
    /// The deep model, e.g. `all-minilm-l6-v2@sha256:…`.
    pub model: String,
    /// Items waiting for a deep vector as of the enricher's last look (each
    /// memory's private ones, and the shared ones once). Queries never wait
    /// for them: an item without one is ranked by its static vector.
    pub backlog: u64,
    /// The log's last seq as of that look (0 before the first).
    pub through_seq: u64,
    /// Deep vectors this process recorded on the log since it started.
    pub recorded: u64,
}

/// One lease of a swarm, in `GET /healthz`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LeaseHealth {
    pub lease: String,
    /// The node holding it, as last seen (renewed or looked at every third
    /// of its time to live); `null` when nobody did.
    pub holder: Option<String>,
    /// Whether this process holds it.
    pub held_here: bool,
}

/// A tail the log lost, as a swarm's start found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LostTailHealth {
    /// The highest checkpoint of a snapshot past the log's end.
    pub snapshot_seq: u64,
    /// The log's last seq when the process started.
    pub log_end: u64,
    /// Events the snapshots had applied that the log no longer holds.
    pub events_lost: u64,
    /// The memories rebuilt from the log because of it.
    pub agents: Vec<String>,
}

/// `GET /v1/swarms`: the swarms this server holds that the caller's token
/// opens (every one without tokens), by name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Swarms {
    pub swarms: Vec<SwarmSummary>,
}

/// One swarm of `GET /v1/swarms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwarmSummary {
    pub swarm: String,
    /// The agents its configuration lists (agents that publish without
    /// being listed have memories too, when the swarm admits them).
    pub agents: Vec<String>,
}

/// `POST /v1/events` (202): each event of the request, in request order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AcceptedEvents {
    pub accepted: Vec<Accepted>,
}

/// One event as the log took it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Accepted {
    pub id: String,
    /// Its seq on the log: the earlier one if it is a duplicate.
    pub seq: u64,
    /// An event with this id and the same content was already on the log.
    pub duplicate: bool,
}

/// One entry of the log as the API shows it: a valid event with its seq, a
/// record that is not one (dead-lettered), with why, or an event a purge
/// erased, of which only its stub is shown.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum LogEntry {
    Invalid(InvalidEntry),
    Erased(ErasedEntry),
    Event(EventEntry),
}

/// An event a purge erased: its seq, id, agent, kind, time and scope, and
/// the purges that erased it; never its payload (docs/src/erasure.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErasedEntry {
    pub seq: u64,
    pub id: String,
    pub agent: String,
    pub kind: String,
    pub ts: mneme_events::Timestamp,
    pub scope: mneme_events::Scope,
    /// The `memory_purged` tombstones that erased it.
    pub erased_by: Vec<ErasedBy>,
}

/// A purge that erased an event: the tombstone's seq and id, and whose
/// memory it erased from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ErasedBy {
    pub agent: String,
    pub seq: u64,
    pub event_id: String,
}

/// A valid event: the envelope as published (`id`, `swarm`, `agent`, `ts`,
/// `kind`, `data`, `scope`…), its `seq`, and when the log stored it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventEntry {
    pub seq: u64,
    /// When the log stored the event, by the log's clock. `ts` is the
    /// time the event speaks of, set by its publisher (a handoff's delivery
    /// carries the handoff's time, a verdict the newest time it judged);
    /// this is when it was written, for audit. Absent for records the
    /// embedded log stored before it kept these times.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended_at: Option<mneme_events::Timestamp>,
    #[serde(flatten)]
    pub event: serde_json::Map<String, serde_json::Value>,
}

/// A record on the log that is not a valid event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InvalidEntry {
    pub seq: u64,
    /// The agent of the subject it came on.
    pub agent: String,
    /// When the log stored it (see [`EventEntry::appended_at`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub appended_at: Option<mneme_events::Timestamp>,
    /// Why it is not an event.
    pub invalid: String,
    /// The record, as text (lossy UTF-8).
    pub raw: String,
}

impl LogEntry {
    pub fn seq(&self) -> u64 {
        match self {
            LogEntry::Invalid(entry) => entry.seq,
            LogEntry::Erased(entry) => entry.seq,
            LogEntry::Event(entry) => entry.seq,
        }
    }

    /// The event's kind; `None` for an invalid record.
    pub fn kind(&self) -> Option<&str> {
        match self {
            LogEntry::Event(entry) => entry.event.get("kind").and_then(serde_json::Value::as_str),
            LogEntry::Erased(entry) => Some(&entry.kind),
            LogEntry::Invalid(_) => None,
        }
    }
}

impl EventEntry {
    /// The event, decoded and validated as the log took it.
    pub fn decode(&self) -> Result<mneme_events::Event, mneme_events::ValidationError> {
        let json = serde_json::to_vec(&self.event).expect("a JSON object writes as JSON");
        // What the log holds was within the server's limits; the client
        // reads it back without its own.
        let limits = mneme_events::DecodeLimits { max_event_bytes: json.len().max(1) };
        mneme_events::decode_json(&json, &limits)
    }
}

/// `GET /v1/swarms/{swarm}/events`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventsPage {
    pub events: Vec<LogEntry>,
    /// Where the next page starts (`from_seq`).
    pub next_seq: u64,
}

/// `GET /v1/swarms/{swarm}/deadletters`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeadLetters {
    pub dead_letters: Vec<DeadLetter>,
}

/// A record no memory could apply, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeadLetter {
    pub seq: u64,
    pub agent: String,
    pub reason: String,
    pub raw: String,
}

/// `GET /v1/swarms/{swarm}/agents`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Agents {
    pub agents: Vec<String>,
}

/// `GET /v1/swarms/{swarm}/provenance/{item_id}`: the events behind an item,
/// in log order, from every memory that holds it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SwarmProvenance {
    pub item_id: String,
    /// The agents whose memories hold the item.
    pub holders: Vec<String>,
    pub events: Vec<LogEntry>,
}

/// `GET …/agents/{agent}/provenance/{item_id}`: the events behind an item
/// of one agent's memory, in log order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentProvenance {
    pub item_id: String,
    pub agent: String,
    pub events: Vec<LogEntry>,
}

/// An event an item, node or edge came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProvenanceRef {
    pub seq: u64,
    pub event_id: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_an_event_or_an_invalid_record() {
        let event = serde_json::json!({"seq": 3, "id": "01KG", "agent": "coder", "kind": "message_recorded",
            "data": {"role": "user", "text": "hi"}});
        let entry: LogEntry = serde_json::from_value(event.clone()).unwrap();
        assert_eq!((entry.seq(), entry.kind()), (3, Some("message_recorded")));
        let LogEntry::Event(event_entry) = &entry else { panic!("an event") };
        assert!(event_entry.decode().is_err(), "an id that is not a ULID is refused on decode");
        assert_eq!(serde_json::to_value(&entry).unwrap(), event);
        let invalid = serde_json::json!({"seq": 4, "agent": "coder", "invalid": "not JSON", "raw": "{"});
        let entry: LogEntry = serde_json::from_value(invalid.clone()).unwrap();
        assert!(matches!(entry, LogEntry::Invalid(_)));
        assert_eq!(entry.kind(), None);
        assert_eq!(serde_json::to_value(&entry).unwrap(), invalid);
        let erased = serde_json::json!({"seq": 5, "id": "01KG", "agent": "coder", "kind": "message_recorded",
            "ts": "2026-01-06T09:00:00Z", "scope": "shared",
            "erased_by": [{"agent": "coder", "seq": 9, "event_id": "01KH"}]});
        let entry: LogEntry = serde_json::from_value(erased.clone()).unwrap();
        assert!(matches!(entry, LogEntry::Erased(_)), "an erased stub is not taken for an event");
        assert_eq!((entry.seq(), entry.kind()), (5, Some("message_recorded")));
        assert_eq!(serde_json::to_value(&entry).unwrap(), erased);
    }
}
