//! One agent's memory: search, the fact graph around an entity, its items
//! and their states, its digest, and a replay that checks it against the
//! log.

use mneme_actors::queries::{Graph, Items, Search, Status};
use mneme_actors::{SYSTEM_READER, SYSTEM_SWARM, verify_against_log};
use mneme_api::memory::{
    Digest, GraphAnswer, GraphEdge, GraphNode, Hit, ItemAnswer, ItemStates, ListedItem, ReplayAnswer, RetrieverRank,
    SearchAnswer,
};
use mneme_api::params::{ReplayParams, check_item_id, quote};
use mneme_api::query::{GraphInput, ItemsInput};
use mneme_api::search::SearchInput;
use mneme_projections::graph::{Edge, GraphQuery, Node};
use mneme_projections::{SearchHit, SearchMode, SearchRequest};

use super::log::provenance_refs;
use super::{ApiError, Service, ask};

impl Service {
    /// A search of the agent's memory: bm25, vector, graph or hybrid.
    pub async fn search(&self, swarm: &str, agent: &str, input: &SearchInput) -> Result<SearchAnswer, ApiError> {
        let runtime = self.swarm(swarm)?;
        let request = input.check(&runtime.config.retrieval)?;
        let handle = runtime.agent_handle(agent, input.min_seq).await?;
        let explain = request.explain;
        let mode = request.mode;
        let k = request.k;
        let system = self.system_memory(swarm, input.min_system_seq).await?;
        // The two memories answer at once, each on its own worker.
        let system_request = SearchRequest { k: system_slots(k), ..request.clone() };
        let system_search = async {
            match &system {
                Some(system) => ask(system, Search(system_request)).await.map(Some),
                None => Ok(None),
            }
        };
        let (own, system_hits) = futures::join!(ask(&handle, Search(request)), system_search);
        let own = own?;
        let mut hits: Vec<Hit> = own.iter().map(|hit| wire_hit(hit, explain)).collect();
        // The system layer's best hits join the agent's by score (both
        // memories score with the same retrievers and weights), in at most
        // a quarter of the places: each memory normalises its own scores,
        // so its best hit always scores high, and a layer allowed every
        // place would crowd the agent's own memories out.
        if let Some(system_hits) = system_hits?
            && !system_hits.is_empty()
        {
            hits.extend(system_hits.iter().map(|hit| wire_hit(hit, explain)));
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            hits.truncate(k);
        }
        let vector_model = matches!(mode, SearchMode::Vector | SearchMode::Hybrid)
            .then(|| runtime.memory_config.embedder.model_id().to_string());
        Ok(SearchAnswer {
            swarm: swarm.to_string(),
            agent: agent.to_string(),
            mode: mode.as_str().to_string(),
            vector_model,
            hits,
        })
    }

    /// The system layer's memory, which every memory of every swarm reads
    /// through, once it has applied the system log up to `min_system_seq`;
    /// `None` for the system layer itself, and while it holds nothing (no
    /// query of it is worth a message then).
    pub(crate) async fn system_memory(
        &self,
        swarm: &str,
        min_system_seq: Option<u64>,
    ) -> Result<Option<mneme_actors::AgentHandle>, ApiError> {
        if swarm == SYSTEM_SWARM {
            return Ok(None);
        }
        let Some(system) = self.swarms.system() else { return Ok(None) };
        let handle = system.agent_handle(SYSTEM_READER, min_system_seq).await?;
        let applied = *handle.applied_seq.borrow();
        Ok((applied > 0).then_some(handle))
    }

    /// The fact graph around an entity, both directions, with validity and
    /// provenance.
    pub async fn graph(&self, swarm: &str, agent: &str, input: &GraphInput) -> Result<GraphAnswer, ApiError> {
        input.check()?;
        let query = GraphQuery {
            entity: input.entity.clone(),
            hops: input.hops,
            relations: input.relations.clone(),
            as_of: input.as_of,
        };
        let handle = self.agent_handle(swarm, agent, input.min_seq).await?;
        let subgraph = ask(&handle, Graph(query)).await?;
        let Some(subgraph) = subgraph else {
            return Err(ApiError::not_found(
                "unknown_entity",
                Some("entity"),
                format!("the memory of {agent:?} knows no entity {}", quote(&input.entity)),
            ));
        };
        Ok(GraphAnswer {
            center: subgraph.center.clone(),
            nodes: subgraph.nodes.iter().map(wire_node).collect(),
            edges: subgraph.edges.iter().map(wire_edge).collect(),
        })
    }

    /// The memory's checkpoint and the digest of its state there.
    pub async fn digest(&self, swarm: &str, agent: &str, min_seq: Option<u64>) -> Result<Digest, ApiError> {
        let handle = self.agent_handle(swarm, agent, min_seq).await?;
        let status = ask(&handle, Status).await?;
        Ok(Digest {
            agent: status.agent,
            seq: status.checkpoint,
            digest: status.digest,
            items: status.items,
            snapshot_seq: status.snapshot_seq,
        })
    }

    /// Rebuilds the agent's memory from the log into a fresh projection, up
    /// to the live memory's checkpoint, and compares digests. One replay at
    /// a time per process: another is refused with 429.
    pub async fn replay(&self, swarm: &str, agent: &str, params: &ReplayParams) -> Result<ReplayAnswer, ApiError> {
        let _permit = self.replay_permits.try_acquire().map_err(|_| {
            ApiError::too_many_requests("replay_in_progress", None, "a replay is already running; retry when it ends")
        })?;
        let runtime = self.swarm(swarm)?;
        let handle = runtime.agent_handle(agent, params.min_seq).await?;
        let status = ask(&handle, Status).await?;
        let config = runtime.memory_config.clone();
        let report = verify_against_log(runtime.log.as_ref(), agent, config, status.checkpoint, &status.digest).await?;
        let matches = report.matches();
        if params.verify && matches == Some(false) {
            tracing::error!(%agent, live = %status.digest, replayed = %report.digest, "replay digest differs from live memory");
        }
        Ok(ReplayAnswer {
            agent: agent.to_string(),
            seq: report.checkpoint,
            digest: report.digest,
            entries_read: report.entries_read,
            dead_lettered: report.dead_lettered,
            live_seq: report.live_checkpoint,
            live_digest: report.live_digest,
            matches,
        })
    }

    /// How many of the memory's items are in each state (active, archived,
    /// decayed, forgotten, merged, purged) and pinned, with the page of
    /// items `input` asks for, newest first.
    pub async fn item_states(&self, swarm: &str, agent: &str, input: &ItemsInput) -> Result<ItemStates, ApiError> {
        input.check()?;
        let handle = self.agent_handle(swarm, agent, input.min_seq).await?;
        let listing = ask(&handle, Items { item_id: None, page: Some(input.page.clone()) }).await?;
        let states = listing.counts.states.into_iter().map(|(state, count)| (state.to_string(), count)).collect();
        let next_before_seq = listing.page.more.then(|| listing.page.items.last().map(|item| item.seq)).flatten();
        let items = listing
            .page
            .items
            .into_iter()
            .map(|item| ListedItem {
                item_id: item.item_id,
                seq: item.seq,
                kind: item.kind.to_string(),
                agent: item.agent,
                ts: item.ts,
                state: item.state.as_str().to_string(),
                pinned: item.pinned,
                text: item.text,
                superseded_by: item.superseded_by,
            })
            .collect();
        Ok(ItemStates { agent: agent.to_string(), states, pinned: listing.counts.pinned, items, next_before_seq })
    }

    /// One memory and what became of it: its state (forgotten, merged,
    /// decayed…), pin, usage and provenance.
    pub async fn item(
        &self,
        swarm: &str,
        agent: &str,
        item_id: &str,
        min_seq: Option<u64>,
    ) -> Result<ItemAnswer, ApiError> {
        check_item_id(item_id)?;
        let handle = self.agent_handle(swarm, agent, min_seq).await?;
        let listing = ask(&handle, Items { item_id: Some(item_id.to_string()), page: None }).await?;
        let Some(item) = listing.item else {
            return Err(ApiError::not_found(
                "unknown_item",
                Some("item_id"),
                format!("the memory of {agent:?} holds no item {}", quote(item_id)),
            ));
        };
        Ok(ItemAnswer {
            item_id: item.item_id.clone(),
            seq: item.seq,
            kind: item.kind.to_string(),
            agent: item.agent.clone(),
            scope: item.scope.as_str().to_string(),
            ts: item.ts,
            state: item.state.as_str().to_string(),
            pinned: item.pinned,
            importance: item.importance.map(mneme_events::published_number),
            retrievals: item.retrievals,
            citations: item.citations,
            ignored: item.ignored,
            text: item.text.as_str().to_string(),
            provenance: provenance_refs(&item.provenance),
            superseded_by: listing.superseded_by,
        })
    }
}

fn wire_hit(hit: &SearchHit, explain: bool) -> Hit {
    let explain = explain.then(|| {
        hit.explain
            .iter()
            .map(|rank| (rank.retriever.to_string(), RetrieverRank { rank: rank.rank, score: rank.score }))
            .collect()
    });
    Hit {
        item_id: hit.item_id.clone(),
        seq: hit.seq,
        kind: hit.kind.to_string(),
        score: hit.score,
        text: hit.text.clone(),
        agent: hit.agent.clone(),
        scope: hit.scope.as_str().to_string(),
        ts: hit.ts,
        provenance: provenance_refs(&hit.provenance),
        superseded_by: hit.superseded_by.clone(),
        explain,
    }
}

fn wire_edge(edge: &Edge) -> GraphEdge {
    GraphEdge {
        id: edge.id.clone(),
        from: edge.from.clone(),
        to: edge.to.clone(),
        relation: edge.relation.clone(),
        valid_from: edge.valid_from,
        valid_to: edge.valid_to,
        recorded_seq: edge.recorded_seq,
        confidence: edge.confidence.map(mneme_events::published_number),
        provenance: provenance_refs(&edge.provenance),
    }
}

fn wire_node(node: &Node) -> GraphNode {
    GraphNode {
        id: node.id.clone(),
        kind: node.kind.as_str().to_string(),
        name: node.name.clone(),
        provenance: provenance_refs(&node.provenance),
    }
}

/// The places of a search's `k` the system layer may take: a quarter, at
/// least one.
fn system_slots(k: usize) -> usize {
    (k / 4).max(1)
}
