//! The enricher: one per swarm. It embeds items with the deep model, off
//! the write path, and records the vectors on the log as
//! `embeddings_computed` events, which every memory applies like any
//! other event (`mneme_projections`' `memory/deep.rs`). Replay applies the
//! recorded vectors and never embeds again; replicas share one
//! computation; queries never wait for it.
//!
//! ```text
//!  every idle_ms, or at once after a batch:
//!  Enricher ── ListAgents/GetAgent ──▶ Supervisor
//!     │ Ask(AwaitingDeep)  ──▶ each MemoryActor ──▶ DeepWork {backlog, first items}
//!     │ the first `batch` items of the swarm, each once (shared items are in
//!     │ every memory), embedded on a blocking thread
//!     │ append (fenced under the writer lease) one event per author and scope
//!     └ wait until every memory applied them, then the next batch
//! ```
//!
//! A shared item's vector is recorded once, in a `shared` event of its
//! author, and reaches every memory that holds the item; a private item's
//! in a `private` event of its author. Each event's id is derived (keyed)
//! from the model and its items, so a batch appended twice after a crash
//! is one event on the log. With replicas, only the process that holds the
//! swarm's writer lease embeds; every process reports the backlog.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use actix::prelude::*;
use mneme_events::{ComputedVector, EmbeddingsComputed, Event, EventId, EventKind, IdKey, Int8Values, Scope};
use mneme_index::QuantizedVector;
use mneme_index::embed::Embedder;
use mneme_nats::EventLog;

use crate::error::ActorsError;
use crate::lease_keeper::LeaseGate;
use crate::memory_actor::queries::{Ask, AwaitingDeep, DeepCandidate};
use crate::supervisor::{GetAgent, ListAgents, Supervisor};

/// How long the enricher waits for the memories to apply what it recorded.
const APPLY_TIMEOUT: Duration = Duration::from_secs(60);
/// How many recent batches' items are not embedded again while a memory
/// still lists them (one that never takes its vector must not keep a core
/// busy).
const RECENT_BATCHES: usize = 4;

/// What the enricher reports: `/healthz` and `/metrics` read it.
#[derive(Debug, Default)]
pub struct EnrichmentStatus {
    model: String,
    backlog: AtomicU64,
    recorded: AtomicU64,
    through: AtomicU64,
}

impl EnrichmentStatus {
    pub fn new(model: &str) -> Arc<EnrichmentStatus> {
        Arc::new(EnrichmentStatus { model: model.to_string(), ..EnrichmentStatus::default() })
    }

    /// The deep model's id.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// Items of the swarm waiting for a deep vector, as of the last pass:
    /// each memory's private ones, and the shared ones once.
    pub fn backlog(&self) -> u64 {
        self.backlog.load(Ordering::Relaxed)
    }

    /// The log's last seq as of the enricher's last look: the backlog
    /// counts the items of the log up to it.
    pub fn through(&self) -> u64 {
        self.through.load(Ordering::Relaxed)
    }

    /// Vectors this process recorded since it started.
    pub fn recorded(&self) -> u64 {
        self.recorded.load(Ordering::Relaxed)
    }
}

/// A running enricher, and what it reports; it runs while this is held.
#[derive(Clone)]
pub struct EnricherHandle {
    pub addr: Addr<Enricher>,
    pub status: Arc<EnrichmentStatus>,
}

/// How the enricher paces itself (`[enrichment]`), and the largest event
/// the log takes (`log.max_event_bytes`).
#[derive(Debug, Clone, Copy)]
pub struct EnrichmentPace {
    pub batch: usize,
    pub idle: Duration,
    pub max_event_bytes: usize,
}

pub struct Enricher {
    /// What every pass needs; each pass runs on a clone of it.
    pass: Pass,
}

impl Enricher {
    pub fn new(
        swarm: &str,
        log: Arc<dyn EventLog>,
        supervisor: Addr<Supervisor>,
        model: Arc<dyn Embedder>,
        id_key: IdKey,
        pace: EnrichmentPace,
        status: Arc<EnrichmentStatus>,
    ) -> Enricher {
        let pass = Pass {
            swarm: swarm.to_string(),
            log,
            supervisor,
            model,
            id_key,
            pace,
            gate: None,
            status,
            recent: Arc::default(),
        };
        Enricher { pass }
    }

    /// Embeds only while this process holds `gate`'s lease.
    pub fn with_lease(mut self, gate: Option<LeaseGate>) -> Enricher {
        self.pass.gate = gate;
        self
    }

    /// Runs a pass, then the next one at once if it recorded vectors, or
    /// after `idle` if nothing waited (or it failed).
    fn schedule(&self, ctx: &mut Context<Self>, after: Duration) {
        ctx.run_later(after, |enricher, ctx| {
            let pass = enricher.pass.clone();
            let idle = enricher.pass.pace.idle;
            ctx.spawn(pass.run().into_actor(enricher).map(move |outcome, enricher, ctx| {
                let next = match outcome {
                    Ok(true) => Duration::ZERO,
                    Ok(false) => idle,
                    Err(error) => {
                        tracing::warn!(swarm = %enricher.pass.swarm, %error, "enrichment pass failed; trying again later");
                        idle
                    }
                };
                enricher.schedule(ctx, next);
            }));
        });
    }
}

impl Actor for Enricher {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        tracing::info!(swarm = %self.pass.swarm, model = self.pass.model.model_id(), "enricher started");
        self.schedule(ctx, Duration::ZERO);
    }
}

/// What a pass needs, cloned for each so that it runs as a future beside
/// the actor.
#[derive(Clone)]
struct Pass {
    swarm: String,
    log: Arc<dyn EventLog>,
    supervisor: Addr<Supervisor>,
    model: Arc<dyn Embedder>,
    id_key: IdKey,
    pace: EnrichmentPace,
    gate: Option<LeaseGate>,
    status: Arc<EnrichmentStatus>,
    /// The items of the last few batches.
    recent: Arc<std::sync::Mutex<VecDeque<Vec<EventId>>>>,
}

fn stopped(what: &str) -> ActorsError {
    ActorsError::ActorStopped { agent: what.to_string() }
}

impl Pass {
    /// Answers whether it recorded vectors.
    async fn run(self) -> Result<bool, ActorsError> {
        let agents = self.supervisor.send(ListAgents).await.map_err(|_| stopped("supervisor"))?;
        // What waits is asked of memories that have applied the log as it
        // is now: one still replaying it (after a restart) would list items
        // whose vectors the log already holds.
        let log_end = self.log.last_event_seq().await?;
        let recent: HashSet<EventId> = {
            let recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            recent.iter().flatten().copied().collect()
        };
        let (mut private_waiting, mut shared_waiting) = (0u64, 0u64);
        let mut waiting: BTreeMap<u64, DeepCandidate> = BTreeMap::new();
        let mut handles = Vec::with_capacity(agents.len());
        for agent in agents {
            let handle = self.supervisor.send(GetAgent(agent.clone())).await.map_err(|_| stopped("supervisor"))??;
            handle.caught_up(self.log.as_ref(), log_end, APPLY_TIMEOUT).await?;
            let ask = AwaitingDeep { after: 0, limit: self.pace.batch + recent.len() };
            let work = handle.addr.send(Ask(ask)).await.map_err(|_| stopped(&agent))??;
            private_waiting += work.private_waiting;
            // Shared items are the swarm's: each memory holds (nearly) the
            // same ones.
            shared_waiting = shared_waiting.max(work.shared_waiting);
            for candidate in work.items.into_iter().filter(|candidate| !recent.contains(&candidate.event_id)) {
                waiting.entry(candidate.seq).or_insert(candidate);
            }
            handles.push(handle);
        }
        let backlog = private_waiting + shared_waiting;
        self.status.backlog.store(backlog, Ordering::Relaxed);
        self.status.through.store(log_end, Ordering::Relaxed);
        metrics::gauge!("mneme_enrichment_backlog", "swarm" => self.swarm.clone()).set(backlog as f64);
        if waiting.is_empty() {
            return Ok(false);
        }
        let lease = match &self.gate {
            Some(gate) => match gate.held() {
                Some(lease) => Some(lease),
                // Another process holds the writer lease: it enriches.
                None => return Ok(false),
            },
            None => None,
        };
        let batch: Vec<DeepCandidate> = waiting.into_values().take(self.pace.batch).collect();
        let started = Instant::now();
        let model = self.model.clone();
        let texts: Vec<String> = batch.iter().map(|candidate| candidate.text.clone()).collect();
        let vectors = tokio::task::spawn_blocking(move || {
            let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
            model.embed_batch(&texts)
        })
        .await
        .map_err(|error| ActorsError::Enrichment {
            swarm: self.swarm.clone(),
            message: format!("the deep model panicked: {error}"),
        })?;
        metrics::histogram!("mneme_enrichment_batch_seconds", "swarm" => self.swarm.clone())
            .record(started.elapsed().as_secs_f64());
        let per_event = vectors_per_event(self.model.dimensions(), self.pace.max_event_bytes);
        let events = computed_events(&self.swarm, &self.id_key, self.model.as_ref(), &batch, &vectors, per_event);
        if let Some(error) = events.iter().find_map(|event| event.validate().err()) {
            // A model that answers NaN, say: nothing is appended, and the
            // items are not asked for again for a few batches.
            self.remember(&batch);
            return Err(ActorsError::Enrichment {
                swarm: self.swarm.clone(),
                message: format!("the deep model's vectors are not a valid event: {error}"),
            });
        }
        let appended = match &lease {
            Some(lease) => self.log.append_fenced(lease, &events).await?,
            None => self.log.append(&events).await?,
        };
        self.remember(&batch);
        self.status.recorded.fetch_add(batch.len() as u64, Ordering::Relaxed);
        metrics::counter!("mneme_enrichment_vectors_total", "swarm" => self.swarm.clone())
            .increment(batch.len() as u64);
        tracing::debug!(swarm = %self.swarm, items = batch.len(), seconds = started.elapsed().as_secs_f64(), "deep vectors recorded");
        // The next pass asks the memories what still waits: they must
        // have applied these first.
        if let Some(last) = appended.iter().map(|appended| appended.seq).max() {
            for handle in &handles {
                handle.caught_up(self.log.as_ref(), last, APPLY_TIMEOUT).await?;
            }
        }
        Ok(true)
    }

    /// Keeps `batch`'s items from being embedded again for a few batches.
    fn remember(&self, batch: &[DeepCandidate]) {
        let mut recent = self.recent.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        recent.push_back(batch.iter().map(|candidate| candidate.event_id).collect());
        while recent.len() > RECENT_BATCHES {
            recent.pop_front();
        }
    }
}

/// How many vectors of `dimensions` fit in one event with room to spare:
/// a vector is about `dimensions × 4/3` bytes of base64 and 80 of id, scale
/// and keys, and an event takes at most half of `max_event_bytes`.
pub fn vectors_per_event(dimensions: usize, max_event_bytes: usize) -> usize {
    let vector_bytes = dimensions.div_ceil(3) * 4 + 80;
    (max_event_bytes / 2 / vector_bytes).clamp(1, mneme_events::MAX_COMPUTED_VECTORS)
}

/// The `embeddings_computed` events of one batch: one per author and scope
/// (private items' vectors in a private event) and `per_event` vectors,
/// in the order of their first item, each at its newest item's time.
pub fn computed_events(
    swarm: &str,
    id_key: &IdKey,
    model: &dyn Embedder,
    batch: &[DeepCandidate],
    vectors: &[Vec<f32>],
    per_event: usize,
) -> Vec<Event> {
    let (name, hash) = EmbeddingsComputed::model_parts(model.model_id());
    // (author, private) and the group's items with their vectors.
    type Group<'a> = ((String, bool), Vec<(&'a DeepCandidate, &'a Vec<f32>)>);
    let mut groups: Vec<Group<'_>> = Vec::new();
    for (candidate, vector) in batch.iter().zip(vectors) {
        let key = (candidate.author.clone(), candidate.private);
        match groups.iter_mut().find(|(group, _)| *group == key) {
            Some((_, members)) => members.push((candidate, vector)),
            None => groups.push((key, vec![(candidate, vector)])),
        }
    }
    groups
        .iter()
        .flat_map(|((author, private), members)| {
            members.chunks(per_event.max(1)).map(move |chunk| (author, *private, chunk))
        })
        .map(|(author, private, members)| {
            let computed = EmbeddingsComputed {
                model: name.to_string(),
                model_hash: hash.to_string(),
                dimensions: model.dimensions() as u32,
                vectors: members
                    .iter()
                    .map(|(candidate, vector)| {
                        let quantized = QuantizedVector::of(vector);
                        ComputedVector {
                            event_id: candidate.event_id,
                            scale: quantized.scale,
                            values: Int8Values(quantized.values),
                        }
                    })
                    .collect(),
            };
            let key = format!("{}/{}/{}", model.model_id(), members[0].0.event_id, members.len());
            let newest = members.iter().map(|(candidate, _)| candidate.ts).max().expect("a group has members");
            Event::new(swarm, author, EventKind::EmbeddingsComputed(computed))
                .with_id(id_key.derive(author, "embeddings_computed", &key))
                .with_scope(if private { Scope::Private } else { Scope::Shared })
                .with_ts(newest)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_events::Timestamp;
    use mneme_index::embed::HashedNgramEmbedder;

    fn candidate(seq: u64, author: &str, private: bool) -> DeepCandidate {
        DeepCandidate {
            seq,
            event_id: EventId(u128::from(seq)),
            author: author.to_string(),
            private,
            ts: Timestamp::from_unix_millis(seq as i64 * 1000),
            text: format!("item {seq} of {author}"),
        }
    }

    #[test]
    fn an_event_holds_what_half_the_log_s_limit_allows() {
        assert_eq!(vectors_per_event(384, 1024 * 1024), mneme_events::MAX_COMPUTED_VECTORS);
        assert_eq!(vectors_per_event(384, 64 * 1024), 55);
        assert_eq!(vectors_per_event(4096, 4096), 1, "never none");
    }

    #[test]
    fn a_batch_becomes_events_per_author_and_scope_cut_to_size_with_stable_ids() {
        let model = HashedNgramEmbedder::new(16);
        let key = IdKey::from_bytes([3; mneme_events::derived::ID_KEY_BYTES]);
        let batch = [
            candidate(1, "coder", true),
            candidate(2, "coder", false),
            candidate(3, "coder", true),
            candidate(4, "planner", false),
            candidate(5, "coder", true),
        ];
        let vectors: Vec<Vec<f32>> = batch.iter().map(|candidate| model.embed(&candidate.text)).collect();
        let events = computed_events("demo", &key, &model, &batch, &vectors, 2);
        let shape: Vec<(&str, Scope, Vec<u64>)> = events
            .iter()
            .map(|event| {
                let EventKind::EmbeddingsComputed(computed) = &event.kind else { panic!("{event:?}") };
                let seqs = computed.vectors.iter().map(|vector| vector.event_id.0 as u64).collect();
                (event.agent.as_str(), event.scope, seqs)
            })
            .collect();
        assert_eq!(
            shape,
            [
                ("coder", Scope::Private, vec![1, 3]),
                ("coder", Scope::Private, vec![5]),
                ("coder", Scope::Shared, vec![2]),
                ("planner", Scope::Shared, vec![4]),
            ]
        );
        assert!(events.iter().all(|event| event.validate().is_ok()));
        assert_eq!(events[1].ts, Timestamp::from_unix_millis(5000), "at its newest item's time");
        let again = computed_events("demo", &key, &model, &batch, &vectors, 2);
        assert_eq!(
            events.iter().map(|event| event.id).collect::<Vec<_>>(),
            again.iter().map(|event| event.id).collect::<Vec<_>>(),
            "a batch appended twice is one record"
        );
    }
}
