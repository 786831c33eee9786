//! The graph as bytes (rkyv, behind a header naming the format) and as a
//! digest of its logical content.
//!
//! Only the primary state is saved — nodes, relation names, edges, the
//! events of the provenance (seq, time, id; provenance itself is stored as
//! seqs), asserted facts and the fix tracker; the id, name, triple and
//! adjacency indexes and the entity → event links are rebuilt on restore,
//! since they follow from the rest.

use std::collections::BTreeMap;

use mneme_events::{EventId, Timestamp};
use rkyv::rancor;
use rkyv::util::AlignedVec;

use super::fixes::{ErrorWatch, FailureTracker, WatchedCommand};
use super::model::{EntityKind, Node};
use super::store::{Changes, EdgeIndex, EdgeProvenanceLog, EdgeRecord, EventStamp, FactGraph, NodeIndex};
use crate::chunks::{GRAPH_CHUNK, GraphPart};
use crate::digest::ContentHasher;
use crate::error::ProjectionError;
use crate::item::ProvenanceRef;

/// Bumped whenever the snapshot layout or the meaning of its fields, or an
/// extraction rule, changes; other formats are refused and the graph is
/// rebuilt from the log.
pub const GRAPH_SNAPSHOT_FORMAT: u32 = 3;

/// First bytes of every graph snapshot, before the format number.
const MAGIC: &[u8; 8] = b"MNEMEFG\0";

/// Provenance is stored as seqs; each seq's event id and time are stored
/// once, in `events`.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct GraphSnapshot {
    nodes: Vec<NodeRecord>,
    relations: Vec<String>,
    edges: Vec<EdgeSnapshot>,
    /// (seq, event time in nanoseconds, event id).
    events: Vec<(u64, i64, u128)>,
    facts: Vec<FactRecord>,
    watched: Vec<WatchedRecord>,
}

/// The graph's state but its nodes, edges and event times, which are kept
/// in chunks of their own (see [`FactGraph::node_chunk`]).
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct GraphHead {
    format: u32,
    node_count: u64,
    edge_count: u64,
    relations: Vec<String>,
    facts: Vec<FactRecord>,
    watched: Vec<WatchedRecord>,
}

/// Nodes, edges or event times held in one chunk.
#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
enum GraphChunk {
    Nodes(Vec<NodeRecord>),
    Edges(Vec<EdgeSnapshot>),
    Events(Vec<(u64, i64, u128)>),
    /// (seq, edge): the edges whose provenance holds each seq of the chunk.
    EdgeProvenance(Vec<(u64, u32)>),
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct NodeRecord {
    id: String,
    kind: String,
    name: String,
    attributes: Vec<(String, String)>,
    valid_from: Option<i64>,
    valid_to: Option<i64>,
    closed_seq: Option<u64>,
    provenance: Vec<u64>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct EdgeSnapshot {
    from: u32,
    to: u32,
    relation: u32,
    interval: u32,
    valid_from: Option<i64>,
    valid_to: Option<i64>,
    closed_seq: Option<u64>,
    recorded_seq: u64,
    confidence: Option<f32>,
    provenance: Vec<u64>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct FactRecord {
    subject: String,
    relation: String,
    object: String,
    edge: u32,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct WatchedRecord {
    command: u32,
    last_failure_seq: u64,
    errors: Vec<ErrorWatchRecord>,
}

#[derive(rkyv::Archive, rkyv::Serialize, rkyv::Deserialize)]
struct ErrorWatchRecord {
    error: u32,
    fails_with: u32,
    edits: Vec<(u32, Vec<u64>)>,
}

impl FactGraph {
    /// The head of a chunked snapshot: everything but nodes, edges and
    /// event times.
    pub(crate) fn snapshot_head(&self) -> Result<Vec<u8>, ProjectionError> {
        let head = GraphHead {
            format: GRAPH_SNAPSHOT_FORMAT,
            node_count: self.nodes.len() as u64,
            edge_count: self.edges.len() as u64,
            relations: self.relations.clone(),
            facts: self.fact_records(),
            watched: self.failures.watched.iter().map(|(command, watched)| watched_record(*command, watched)).collect(),
        };
        encode(&head, "the fact graph's head")
    }

    /// Every chunk the graph's state is held in now.
    pub(crate) fn parts(&self) -> Vec<GraphPart> {
        let chunks = |count: usize| (0..(count as u64).div_ceil(GRAPH_CHUNK)).map(|chunk| chunk as u32);
        let mut parts: Vec<GraphPart> = chunks(self.nodes.len()).map(GraphPart::Nodes).collect();
        parts.extend(chunks(self.edges.len()).map(GraphPart::Edges));
        let mut event_chunks: Vec<u32> = self.events.keys().map(|seq| (seq / GRAPH_CHUNK) as u32).collect();
        event_chunks.dedup();
        parts.extend(event_chunks.iter().copied().map(GraphPart::Events));
        parts.extend(event_chunks.into_iter().map(GraphPart::EdgeProvenance));
        parts
    }

    /// The parts changed since [`FactGraph::mark_saved`], or every part.
    pub(crate) fn changed_parts(&self) -> Vec<GraphPart> {
        if self.changes.all {
            return self.parts();
        }
        self.changes.parts.iter().copied().collect()
    }

    /// What was changed is saved now. The provenance log keeps the
    /// chunk of the newest seq, which the next checkpoint rewrites, and
    /// forgets the older ones.
    pub(crate) fn mark_saved(&mut self) {
        self.changes = Changes::default();
        let last_seq = self.events.keys().next_back().copied().unwrap_or(0);
        let from = last_seq / GRAPH_CHUNK * GRAPH_CHUNK;
        let log = &mut self.edge_provenance;
        match log.tracked_from {
            Some(tracked) if tracked <= from => log.entries.retain(|(seq, _)| *seq >= from),
            _ => {
                log.entries.clear();
                for (index, record) in self.edges.iter().enumerate() {
                    // Provenance is in seq order: only its end can be new.
                    for &seq in record.seqs().iter().rev().take_while(|&&seq| seq >= from) {
                        log.entries.push((seq, index as EdgeIndex));
                    }
                }
            }
        }
        log.tracked_from = Some(from);
    }

    /// The bytes of each of `parts`, as they stand: [`FactGraph::chunk`],
    /// with one pass over the edges for every provenance chunk the log does
    /// not hold.
    pub(crate) fn chunks(&self, parts: &[GraphPart]) -> Result<Vec<(GraphPart, Vec<u8>)>, ProjectionError> {
        let tracked_from = self.edge_provenance.tracked_from;
        let is_tracked = |chunk: u32| tracked_from.is_some_and(|from| u64::from(chunk) * GRAPH_CHUNK >= from);
        let mut provenance: BTreeMap<u32, Vec<(u64, u32)>> = BTreeMap::new();
        for part in parts {
            if let GraphPart::EdgeProvenance(chunk) = *part {
                provenance.insert(chunk, Vec::new());
            }
        }
        let needs_scan = provenance.keys().any(|chunk| !is_tracked(*chunk));
        let mut add = |seq: u64, edge: EdgeIndex, tracked: bool| {
            let chunk = (seq / GRAPH_CHUNK) as u32;
            if is_tracked(chunk) == tracked
                && let Some(entries) = provenance.get_mut(&chunk)
            {
                entries.push((seq, edge));
            }
        };
        for &(seq, edge) in &self.edge_provenance.entries {
            add(seq, edge, true);
        }
        if needs_scan {
            for (index, record) in self.edges.iter().enumerate() {
                for &seq in record.seqs() {
                    add(seq, index as EdgeIndex, false);
                }
            }
        }
        let mut chunks = Vec::with_capacity(parts.len());
        for part in parts {
            let bytes = match *part {
                GraphPart::EdgeProvenance(chunk) => {
                    let mut entries = provenance.remove(&chunk).unwrap_or_default();
                    entries.sort_unstable();
                    encode(&GraphChunk::EdgeProvenance(entries), "a fact graph chunk")?
                }
                other => self.chunk(other)?,
            };
            chunks.push((*part, bytes));
        }
        Ok(chunks)
    }

    /// The bytes of one chunk of nodes, edges or event times, as it stands
    /// (provenance chunks are [`FactGraph::chunks`]' own).
    fn chunk(&self, part: GraphPart) -> Result<Vec<u8>, ProjectionError> {
        let range = |chunk: u32, count: usize| {
            let start = (u64::from(chunk) * GRAPH_CHUNK) as usize;
            start.min(count)..(start + GRAPH_CHUNK as usize).min(count)
        };
        let chunk = match part {
            GraphPart::Nodes(chunk) => {
                GraphChunk::Nodes(self.nodes[range(chunk, self.nodes.len())].iter().map(node_record).collect())
            }
            GraphPart::Edges(chunk) => GraphChunk::Edges(
                self.edges[range(chunk, self.edges.len())].iter().map(edge_snapshot_without_provenance).collect(),
            ),
            GraphPart::EdgeProvenance(_) => unreachable!("`FactGraph::chunks` writes provenance chunks itself"),
            GraphPart::Events(chunk) => {
                let start = u64::from(chunk) * GRAPH_CHUNK;
                GraphChunk::Events(
                    self.events
                        .range(start..start + GRAPH_CHUNK)
                        .map(|(seq, event)| (*seq, event.ts.unix_nanos(), event.id.0))
                        .collect(),
                )
            }
        };
        encode(&chunk, "a fact graph chunk")
    }

    /// Restores a graph from its head and every chunk of it, in any order.
    pub(crate) fn from_parts(head: &[u8], chunks: Vec<(GraphPart, Vec<u8>)>) -> Result<FactGraph, ProjectionError> {
        let head: GraphHead = decode(head, "the fact graph's head")?;
        if head.format != GRAPH_SNAPSHOT_FORMAT {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "fact graph snapshot format {} is not {GRAPH_SNAPSHOT_FORMAT}",
                head.format
            )));
        }
        let mut chunks = chunks;
        chunks.sort_by_key(|(part, _)| *part);
        let mut snapshot = GraphSnapshot {
            nodes: Vec::with_capacity(head.node_count as usize),
            relations: head.relations,
            edges: Vec::with_capacity(head.edge_count as usize),
            events: Vec::new(),
            facts: head.facts,
            watched: head.watched,
        };
        for (part, bytes) in chunks {
            let expected = match (part, decode::<GraphChunk>(&bytes, "a fact graph chunk")?) {
                (GraphPart::Nodes(chunk), GraphChunk::Nodes(nodes)) => {
                    let expected = u64::from(chunk) * GRAPH_CHUNK == snapshot.nodes.len() as u64;
                    snapshot.nodes.extend(nodes);
                    expected
                }
                (GraphPart::Edges(chunk), GraphChunk::Edges(edges)) => {
                    let expected = u64::from(chunk) * GRAPH_CHUNK == snapshot.edges.len() as u64;
                    snapshot.edges.extend(edges);
                    expected
                }
                (GraphPart::Events(chunk), GraphChunk::Events(events)) => {
                    let start = u64::from(chunk) * GRAPH_CHUNK;
                    let expected = events.iter().all(|(seq, _, _)| (start..start + GRAPH_CHUNK).contains(seq));
                    snapshot.events.extend(events);
                    expected
                }
                // After every edge chunk (parts are sorted), in seq order:
                // each edge's provenance comes out in seq order.
                (GraphPart::EdgeProvenance(chunk), GraphChunk::EdgeProvenance(entries)) => {
                    let start = u64::from(chunk) * GRAPH_CHUNK;
                    let mut expected = true;
                    for (seq, edge) in entries {
                        match snapshot.edges.get_mut(edge as usize) {
                            Some(record) if (start..start + GRAPH_CHUNK).contains(&seq) => record.provenance.push(seq),
                            _ => expected = false,
                        }
                    }
                    expected
                }
                _ => false,
            };
            if !expected {
                return Err(ProjectionError::CorruptSnapshot(format!("fact graph chunk {part:?} is not what it says")));
            }
        }
        if snapshot.nodes.len() as u64 != head.node_count || snapshot.edges.len() as u64 != head.edge_count {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "the fact graph has {} nodes and {} edges where its head says {} and {}",
                snapshot.nodes.len(),
                snapshot.edges.len(),
                head.node_count,
                head.edge_count
            )));
        }
        restore(snapshot)
    }

    fn fact_records(&self) -> Vec<FactRecord> {
        self.facts
            .iter()
            .map(|((subject, relation, object), edge)| FactRecord {
                subject: subject.clone(),
                relation: relation.clone(),
                object: object.clone(),
                edge: *edge,
            })
            .collect()
    }

    /// Snapshot bytes: a header (magic, format) and the rkyv record.
    pub fn to_snapshot(&self) -> Result<Vec<u8>, ProjectionError> {
        let snapshot = GraphSnapshot {
            nodes: self.nodes.iter().map(node_record).collect(),
            relations: self.relations.clone(),
            edges: self.edges.iter().map(edge_snapshot).collect(),
            events: self.events.iter().map(|(seq, event)| (*seq, event.ts.unix_nanos(), event.id.0)).collect(),
            facts: self.fact_records(),
            watched: self.failures.watched.iter().map(|(command, watched)| watched_record(*command, watched)).collect(),
        };
        let body = rkyv::to_bytes::<rancor::Error>(&snapshot)
            .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot encode the fact graph: {error}")))?;
        // rkyv's relative pointers are 32-bit: a larger archive would be
        // written but could never be read back.
        if body.len() > i32::MAX as usize {
            return Err(ProjectionError::CorruptSnapshot(format!(
                "the fact graph's snapshot is {} bytes, past rkyv's {}",
                body.len(),
                i32::MAX
            )));
        }
        let mut bytes = Vec::with_capacity(MAGIC.len() + 4 + body.len());
        bytes.extend_from_slice(MAGIC);
        bytes.extend_from_slice(&GRAPH_SNAPSHOT_FORMAT.to_le_bytes());
        bytes.extend_from_slice(&body);
        Ok(bytes)
    }

    /// Restores a graph from [`FactGraph::to_snapshot`] bytes. Refuses bytes
    /// that are not a graph snapshot, of another format, or inconsistent.
    pub fn from_snapshot(bytes: &[u8]) -> Result<FactGraph, ProjectionError> {
        let corrupt = |why: String| ProjectionError::CorruptSnapshot(why);
        let header_length = MAGIC.len() + 4;
        if bytes.len() < header_length || &bytes[..MAGIC.len()] != MAGIC {
            return Err(corrupt("not a fact graph snapshot".to_string()));
        }
        let format = u32::from_le_bytes(bytes[MAGIC.len()..header_length].try_into().expect("four bytes"));
        if format != GRAPH_SNAPSHOT_FORMAT {
            return Err(corrupt(format!("fact graph snapshot format {format} is not {GRAPH_SNAPSHOT_FORMAT}")));
        }
        let mut aligned: AlignedVec<16> = AlignedVec::with_capacity(bytes.len() - header_length);
        aligned.extend_from_slice(&bytes[header_length..]);
        let snapshot = rkyv::from_bytes::<GraphSnapshot, rancor::Error>(&aligned)
            .map_err(|error| corrupt(format!("cannot decode the fact graph: {error}")))?;
        restore(snapshot)
    }

    /// Stable hash of the logical content (sha256 hex, `sha256:` prefixed
    /// like the memory digest): nodes and edges by id, with their
    /// attributes, validity and provenance; the asserted facts, the fix
    /// tracker and the event times. Storage order does not enter it.
    pub fn digest(&self) -> String {
        let mut hasher = ContentHasher::default();
        hasher.text("mneme-fact-graph");
        hasher.number(u64::from(GRAPH_SNAPSHOT_FORMAT));
        hasher.number(self.nodes.len() as u64);
        for node in self.nodes() {
            hash_node(&mut hasher, node);
        }
        // Edges by id, hashed from their records: materialising them would
        // copy every provenance list.
        let mut edge_order: Vec<(String, EdgeIndex)> =
            (0..self.edges.len() as EdgeIndex).map(|edge| (self.edge_id(edge), edge)).collect();
        edge_order.sort_unstable();
        hasher.number(edge_order.len() as u64);
        for (id, edge) in &edge_order {
            let record = &self.edges[*edge as usize];
            hasher.text(id);
            hasher.time(Some(record.valid_from));
            hasher.time(record.valid_to());
            hasher.number(record.closed_seq().unwrap_or(0));
            hasher.number(record.recorded_seq);
            hasher.number(record.confidence().map_or(u64::MAX, |confidence| u64::from(confidence.to_bits())));
            hasher.provenance(&self.references(record.seqs()));
        }
        hasher.number(self.facts.len() as u64);
        for ((subject, relation, object), edge) in &self.facts {
            hasher.text(subject);
            hasher.text(relation);
            hasher.text(object);
            hasher.text(&self.edge_id(*edge));
        }
        self.hash_tracker(&mut hasher);
        hasher.number(self.events.len() as u64);
        for (seq, event) in &self.events {
            hasher.number(*seq);
            hasher.number(event.ts.unix_nanos() as u64);
            hasher.bytes(&event.id.0.to_be_bytes());
        }
        hasher.finish()
    }

    /// The fix tracker by entity ids rather than storage indexes.
    fn hash_tracker(&self, hasher: &mut ContentHasher) {
        let id = |node: NodeIndex| self.node_at(node).id.as_str();
        let watched: BTreeMap<&str, &WatchedCommand> =
            self.failures.watched.iter().map(|(command, watched)| (id(*command), watched)).collect();
        hasher.number(watched.len() as u64);
        for (command, watched) in watched {
            hasher.text(command);
            hasher.number(watched.last_failure_seq);
            let errors: BTreeMap<&str, &ErrorWatch> =
                watched.errors.iter().map(|(error, watch)| (id(*error), watch)).collect();
            hasher.number(errors.len() as u64);
            for (error, watch) in errors {
                hasher.text(error);
                hasher.text(&self.edge_id(watch.fails_with));
                let edits: BTreeMap<&str, &Vec<ProvenanceRef>> =
                    watch.edits.iter().map(|(file, edits)| (id(*file), edits)).collect();
                hasher.number(edits.len() as u64);
                for (file, edits) in edits {
                    hasher.text(file);
                    hasher.provenance(edits);
                }
            }
        }
    }
}

fn hash_node(hasher: &mut ContentHasher, node: &Node) {
    hasher.text(&node.id);
    hasher.text(node.kind.as_str());
    hasher.text(&node.name);
    hasher.number(node.attributes.len() as u64);
    for (key, value) in &node.attributes {
        hasher.text(key);
        hasher.text(value);
    }
    hasher.time(node.valid_from);
    hasher.time(node.valid_to);
    hasher.number(node.closed_seq.unwrap_or(0));
    hasher.provenance(&node.provenance);
}

/// An rkyv archive of `value`, refused past rkyv's 32-bit reach.
pub(crate) fn encode<T>(value: &T, what: &str) -> Result<Vec<u8>, ProjectionError>
where
    T: for<'a> rkyv::Serialize<
            rkyv::api::high::HighSerializer<AlignedVec, rkyv::ser::allocator::ArenaHandle<'a>, rancor::Error>,
        >,
{
    let bytes = rkyv::to_bytes::<rancor::Error>(value)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot encode {what}: {error}")))?;
    if bytes.len() > i32::MAX as usize {
        return Err(ProjectionError::CorruptSnapshot(format!("{what} is {} bytes, past rkyv's reach", bytes.len())));
    }
    Ok(bytes.into_vec())
}

pub(crate) fn decode<T>(bytes: &[u8], what: &str) -> Result<T, ProjectionError>
where
    T: rkyv::Archive,
    T::Archived: for<'a> rkyv::bytecheck::CheckBytes<rkyv::api::high::HighValidator<'a, rancor::Error>>
        + rkyv::Deserialize<T, rkyv::api::high::HighDeserializer<rancor::Error>>,
{
    let mut aligned: AlignedVec<16> = AlignedVec::with_capacity(bytes.len());
    aligned.extend_from_slice(bytes);
    rkyv::from_bytes::<T, rancor::Error>(&aligned)
        .map_err(|error| ProjectionError::CorruptSnapshot(format!("cannot decode {what}: {error}")))
}

fn node_record(node: &Node) -> NodeRecord {
    NodeRecord {
        id: node.id.clone(),
        kind: node.kind.as_str().to_string(),
        name: node.name.clone(),
        attributes: node.attributes.iter().map(|(key, value)| (key.clone(), value.clone())).collect(),
        valid_from: node.valid_from.map(Timestamp::unix_nanos),
        valid_to: node.valid_to.map(Timestamp::unix_nanos),
        closed_seq: node.closed_seq,
        provenance: provenance_record(&node.provenance),
    }
}

fn edge_snapshot(edge: &EdgeRecord) -> EdgeSnapshot {
    EdgeSnapshot { provenance: edge.seqs().to_vec(), ..edge_snapshot_without_provenance(edge) }
}

fn edge_snapshot_without_provenance(edge: &EdgeRecord) -> EdgeSnapshot {
    EdgeSnapshot {
        from: edge.from,
        to: edge.to,
        relation: edge.relation,
        interval: edge.interval,
        valid_from: Some(edge.valid_from.unix_nanos()),
        valid_to: edge.valid_to().map(Timestamp::unix_nanos),
        closed_seq: edge.closed_seq(),
        recorded_seq: edge.recorded_seq,
        confidence: edge.confidence(),
        provenance: Vec::new(),
    }
}

fn watched_record(command: NodeIndex, watched: &WatchedCommand) -> WatchedRecord {
    WatchedRecord {
        command,
        last_failure_seq: watched.last_failure_seq,
        errors: watched
            .errors
            .iter()
            .map(|(error, watch)| ErrorWatchRecord {
                error: *error,
                fails_with: watch.fails_with,
                edits: watch.edits.iter().map(|(file, edits)| (*file, provenance_record(edits))).collect(),
            })
            .collect(),
    }
}

fn provenance_record(provenance: &[ProvenanceRef]) -> Vec<u64> {
    provenance.iter().map(|reference| reference.seq).collect()
}

/// Provenance seqs back to references, through the graph's event table.
fn provenance_refs(events: &BTreeMap<u64, EventStamp>, seqs: Vec<u64>) -> Result<Vec<ProvenanceRef>, ProjectionError> {
    seqs.into_iter()
        .map(|seq| match events.get(&seq) {
            Some(event) => Ok(ProvenanceRef { seq, event_id: event.id }),
            None => Err(ProjectionError::CorruptSnapshot(format!("provenance names seq {seq}, which has no event"))),
        })
        .collect()
}

/// An edge's provenance seqs, each checked to have its event.
fn provenance_seqs(events: &BTreeMap<u64, EventStamp>, seqs: Vec<u64>) -> Result<Vec<u64>, ProjectionError> {
    match seqs.iter().find(|seq| !events.contains_key(seq)) {
        Some(seq) => Err(ProjectionError::CorruptSnapshot(format!("provenance names seq {seq}, which has no event"))),
        None if seqs.is_empty() || !seqs.is_sorted_by(|a, b| a < b) => {
            Err(ProjectionError::CorruptSnapshot("an edge's provenance is empty or out of order".to_string()))
        }
        None => Ok(seqs),
    }
}

/// Builds the graph from a decoded snapshot, checking that every index in
/// it points where it should.
fn restore(snapshot: GraphSnapshot) -> Result<FactGraph, ProjectionError> {
    let corrupt = |why: String| Err(ProjectionError::CorruptSnapshot(why));
    let node_count = snapshot.nodes.len() as u64;
    let relation_count = snapshot.relations.len() as u64;
    let edge_count = snapshot.edges.len() as u64;
    let mut graph = FactGraph::new();
    graph.events = snapshot
        .events
        .into_iter()
        .map(|(seq, nanos, id)| (seq, EventStamp { ts: Timestamp(nanos), id: EventId(id) }))
        .collect();
    for record in snapshot.nodes {
        let Some(kind) = EntityKind::from_name(&record.kind) else {
            return corrupt(format!("unknown entity kind {:?}", record.kind));
        };
        if !record.id.strip_prefix(kind.as_str()).is_some_and(|key| key.starts_with(':')) {
            return corrupt(format!("node {:?} is not of kind {}", record.id, kind.as_str()));
        }
        graph.nodes.push(Node {
            id: record.id,
            kind,
            name: record.name,
            attributes: record.attributes.into_iter().collect(),
            valid_from: record.valid_from.map(Timestamp),
            valid_to: record.valid_to.map(Timestamp),
            closed_seq: record.closed_seq,
            provenance: provenance_refs(&graph.events, record.provenance)?,
        });
    }
    graph.relations = snapshot.relations;
    for edge in snapshot.edges {
        let in_range = u64::from(edge.from) < node_count && u64::from(edge.to) < node_count;
        if !in_range || u64::from(edge.relation) >= relation_count {
            return corrupt("an edge points outside the graph".to_string());
        }
        let Some(valid_from) = edge.valid_from else {
            return corrupt("an edge has no start of validity".to_string());
        };
        let mut record = EdgeRecord::new(
            (edge.from, edge.relation, edge.to),
            edge.interval,
            Timestamp(valid_from),
            edge.recorded_seq,
        );
        if edge.valid_to.is_some() != edge.closed_seq.is_some() {
            return corrupt("an edge's end and the seq that ended it disagree".to_string());
        }
        record.restore_valid_to(edge.valid_to.map(Timestamp), edge.closed_seq);
        record.set_confidence(edge.confidence);
        record.set_seqs(provenance_seqs(&graph.events, edge.provenance)?);
        graph.edges.push(record);
    }
    for fact in snapshot.facts {
        if u64::from(fact.edge) >= edge_count {
            return corrupt("a fact points outside the graph".to_string());
        }
        graph.facts.insert((fact.subject, fact.relation, fact.object), fact.edge);
    }
    graph.failures = restore_tracker(&graph.events, snapshot.watched, node_count, edge_count)?;
    graph.rebuild_indexes();
    if graph.node_index.len() != graph.nodes.len() {
        return corrupt("two nodes share an id".to_string());
    }
    // Nothing of the provenance is in the log: found by scanning until the
    // next checkpoint is saved (see `FactGraph::mark_saved`).
    graph.edge_provenance = EdgeProvenanceLog { tracked_from: None, entries: Vec::new() };
    Ok(graph)
}

fn restore_tracker(
    events: &BTreeMap<u64, EventStamp>,
    records: Vec<WatchedRecord>,
    node_count: u64,
    edge_count: u64,
) -> Result<FailureTracker, ProjectionError> {
    let mut tracker = FailureTracker::default();
    let node_ok = |node: u32| u64::from(node) < node_count;
    for record in records {
        let mut watched = WatchedCommand { last_failure_seq: record.last_failure_seq, errors: BTreeMap::new() };
        for error in record.errors {
            let files_ok = error.edits.iter().all(|(file, _)| node_ok(*file));
            if !node_ok(error.error) || u64::from(error.fails_with) >= edge_count || !files_ok {
                return Err(ProjectionError::CorruptSnapshot("the fix tracker points outside the graph".to_string()));
            }
            let mut edits = BTreeMap::new();
            for (file, seqs) in error.edits {
                edits.insert(file, provenance_refs(events, seqs)?);
            }
            watched.errors.insert(error.error, ErrorWatch { fails_with: error.fails_with, edits });
        }
        if !node_ok(record.command) {
            return Err(ProjectionError::CorruptSnapshot("the fix tracker points outside the graph".to_string()));
        }
        tracker.watched.insert(record.command, watched);
    }
    Ok(tracker)
}
