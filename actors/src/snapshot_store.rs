//! Where agent memory snapshots live: files beside the log.
//!
//! A snapshot is a head (the checkpoint and everything small) and chunks
//! (items, vectors, applied ids and the fact graph, see
//! [`mneme_projections::SnapshotPart`]). Chunks are files named by the
//! SHA-256 of their bytes, `chunks/<hex>`, so a chunk two memories hold
//! alike (the swarm's shared items, in every memory that holds them) is
//! stored once. A memory's manifest, `manifests/<swarm>/<agent>`, holds the
//! head and each chunk's name, SHA-256 and CRC-32, and carries a CRC-32 of
//! itself. (CRC-32 is what a restore checks: SHA-256 was a quarter of a
//! restore's time; these checksums catch damage, not forgery.)
//!
//! A save writes the chunks that changed (each to a temporary file, synced,
//! then renamed), then the manifest (the same way: its rename is the
//! commit), then deletes the chunk files no manifest names any more. So
//! head, checkpoint and chunks can never disagree, a crash leaves at most
//! unnamed chunk files (deleted on the next open), and the store's size is
//! that of the snapshots it holds: a chunk rewritten, or a memory's text
//! erased, leaves no copy behind in the store's files. (A sled database
//! kept every rewritten chunk until its own garbage collection: 106 MB of
//! files for 45 MB of snapshots after 21,000 events, issue 35, F6.) A
//! damaged manifest or chunk is detected and the memory rebuilt from the
//! log, never served. One process holds a store at a time (an advisory
//! lock on `<dir>/lock`).

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use mneme_projections::graph::SwarmGraph;
use mneme_projections::{AgentMemory, MemoryConfig, ProjectionError, SharedContent, SnapshotDelta, SnapshotPart};
use sha2::{Digest, Sha256};

use crate::error::ActorsError;

const MAGIC: &[u8; 4] = b"MNS4";
const CHECKSUM_LEN: usize = 4;
const HEADER_LEN: usize = MAGIC.len() + CHECKSUM_LEN;
const CHUNKS: &str = "chunks";
const MANIFESTS: &str = "manifests";

fn checksum(bytes: &[u8]) -> [u8; CHECKSUM_LEN] {
    crc32fast::hash(bytes).to_le_bytes()
}

/// A chunk's name in the store: the SHA-256 of its bytes.
type ChunkHash = [u8; 32];

fn hex(hash: &ChunkHash) -> String {
    hash.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[derive(Clone)]
pub struct SnapshotStore {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    /// Held by saves and removals, one at a time: how many manifests name
    /// each chunk file.
    references: Mutex<HashMap<ChunkHash, usize>>,
    _lock: File,
}

/// Why a stored snapshot cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotProblem {
    Missing,
    Damaged(String),
}

/// A snapshot read back whole: its head and every chunk, checked.
pub struct StoredSnapshot {
    pub head: Vec<u8>,
    pub chunks: BTreeMap<String, Vec<u8>>,
}

impl StoredSnapshot {
    /// The memory it holds; each chunk is handed over, not copied.
    pub fn restore(mut self, swarm: &str, agent: &str, config: MemoryConfig) -> Result<AgentMemory, ProjectionError> {
        let head = std::mem::take(&mut self.head);
        AgentMemory::from_snapshot_parts(
            &head,
            &mut |part| {
                self.chunks.remove(&part.name()).ok_or_else(|| {
                    ProjectionError::CorruptSnapshot(format!("the snapshot has no chunk {}", part.name()))
                })
            },
            swarm,
            agent,
            config,
        )
    }

    /// The swarm graph it holds (see [`SnapshotStore::SWARM_GRAPH`]).
    pub fn restore_swarm_graph(mut self) -> Result<SwarmGraph, ProjectionError> {
        let head = std::mem::take(&mut self.head);
        SwarmGraph::from_snapshot_parts(&head, &mut |part| {
            self.chunks.remove(&part.name()).ok_or_else(|| {
                ProjectionError::CorruptSnapshot(format!("the swarm graph's snapshot has no chunk {}", part.name()))
            })
        })
    }

    /// Bytes stored, head and chunks.
    pub fn bytes(&self) -> usize {
        self.head.len() + self.chunks.values().map(Vec::len).sum::<usize>()
    }
}

/// A chunk as a manifest names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChunkRef {
    hash: ChunkHash,
    crc: [u8; CHECKSUM_LEN],
}

/// The manifest's body: the head, then each chunk's name, hash and CRC.
struct Manifest {
    head: Vec<u8>,
    chunks: BTreeMap<String, ChunkRef>,
}

impl Manifest {
    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.head.len() + 16 + self.chunks.len() * 64);
        body.extend_from_slice(&(self.head.len() as u64).to_le_bytes());
        body.extend_from_slice(&self.head);
        body.extend_from_slice(&(self.chunks.len() as u64).to_le_bytes());
        for (name, chunk) in &self.chunks {
            body.extend_from_slice(&(name.len() as u16).to_le_bytes());
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(&chunk.hash);
            body.extend_from_slice(&chunk.crc);
        }
        let mut value = Vec::with_capacity(HEADER_LEN + body.len());
        value.extend_from_slice(MAGIC);
        value.extend_from_slice(&checksum(&body));
        value.extend_from_slice(&body);
        value
    }

    fn decode(value: &[u8]) -> Result<Manifest, String> {
        if value.len() < HEADER_LEN || &value[..MAGIC.len()] != MAGIC {
            return Err("header is missing or unknown".to_string());
        }
        let (stored, body) = value[MAGIC.len()..].split_at(CHECKSUM_LEN);
        if checksum(body) != stored {
            return Err("checksum does not match the body".to_string());
        }
        let mut rest = body;
        let mut take = |length: usize| -> Result<&[u8], String> {
            if rest.len() < length {
                return Err("manifest is cut short".to_string());
            }
            let (taken, left) = rest.split_at(length);
            rest = left;
            Ok(taken)
        };
        let head_length = u64::from_le_bytes(take(8)?.try_into().expect("eight bytes")) as usize;
        let head = take(head_length)?.to_vec();
        let count = u64::from_le_bytes(take(8)?.try_into().expect("eight bytes"));
        let mut chunks = BTreeMap::new();
        for _ in 0..count {
            let name_length = u16::from_le_bytes(take(2)?.try_into().expect("two bytes")) as usize;
            let name = String::from_utf8(take(name_length)?.to_vec()).map_err(|_| "a chunk name is not UTF-8")?;
            let hash: ChunkHash = take(32)?.try_into().expect("a hash's bytes");
            let crc: [u8; CHECKSUM_LEN] = take(CHECKSUM_LEN)?.try_into().expect("a checksum's bytes");
            chunks.insert(name, ChunkRef { hash, crc });
        }
        Ok(Manifest { head, chunks })
    }
}

impl SnapshotStore {
    /// Where a swarm's graph of shared events is kept, in place of an
    /// agent's name: no agent can be called this (names are `A-Z a-z 0-9
    /// _ -`).
    pub const SWARM_GRAPH: &'static str = "~graph";

    /// Restores the swarm's graph into `shared` from its snapshot, once per
    /// swarm, before the first memory restores; a missing or unusable one
    /// leaves the graph empty (the memories' snapshots are then refused,
    /// and they are rebuilt from the log).
    pub fn restore_swarm_graph(&self, swarm: &str, shared: &SharedContent) {
        shared.restore_graph_once(|| match self.load(swarm, SnapshotStore::SWARM_GRAPH) {
            Ok(Ok(stored)) => match stored.restore_swarm_graph() {
                Ok(graph) => {
                    tracing::info!(%swarm, covers = graph.covers(), "swarm graph restored from its snapshot");
                    Some(graph)
                }
                Err(error) => {
                    tracing::warn!(%swarm, %error, "swarm graph snapshot unusable; memories rebuild from the log");
                    None
                }
            },
            Ok(Err(SnapshotProblem::Missing)) => None,
            Ok(Err(SnapshotProblem::Damaged(why))) => {
                tracing::warn!(%swarm, %why, "swarm graph snapshot damaged; memories rebuild from the log");
                None
            }
            Err(error) => {
                tracing::warn!(%swarm, %error, "swarm graph snapshot unreadable; memories rebuild from the log");
                None
            }
        });
    }

    /// Saves the swarm's graph so that it covers `checkpoint` (a memory's,
    /// about to be saved): what changed, or all of it when the store lacks
    /// what the graph thinks it saved.
    /// Answers the bytes written.
    pub fn save_swarm_graph(
        &self,
        swarm: &str,
        agent: &str,
        shared: &SharedContent,
        checkpoint: u64,
    ) -> Result<usize, ActorsError> {
        shared.save_graph(agent, checkpoint, |delta| self.save(swarm, SnapshotStore::SWARM_GRAPH, delta))
    }

    /// Where the vector graphs of `swarm`'s memories are saved (see
    /// [`mneme_projections::AgentMemory::save_vector_graphs`]): files
    /// beside the snapshots, named by agent (`~shared` for the swarm's).
    pub fn vector_graphs_dir(&self, swarm: &str) -> PathBuf {
        self.inner.dir.join("vector-graphs").join(swarm)
    }

    /// Opens the store in `dir`, creating it, and takes its lock; chunk
    /// files no manifest names (a save cut short) are deleted. A directory
    /// holding the sled database earlier versions kept snapshots in is
    /// emptied first, with a warning: snapshots are caches of the log, so
    /// every memory is then rebuilt from it, once.
    pub fn open(dir: &Path) -> Result<SnapshotStore, ActorsError> {
        std::fs::create_dir_all(dir)?;
        let earlier: Vec<PathBuf> = std::fs::read_dir(dir)?
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
                ["conf", "db", "blobs", "snap"].contains(&name) || name.starts_with("snap.")
            })
            .collect();
        if !earlier.is_empty() {
            tracing::warn!(
                dir = %dir.display(),
                "snapshot store of an earlier version (sled) removed; every memory is rebuilt from the log once"
            );
            for path in earlier {
                if path.is_dir() { std::fs::remove_dir_all(&path)? } else { std::fs::remove_file(&path)? }
            }
        }
        let lock = File::options().create(true).truncate(false).write(true).open(dir.join("lock"))?;
        lock.try_lock().map_err(|error| {
            std::io::Error::new(
                std::io::ErrorKind::WouldBlock,
                format!("the snapshot store in {} is held by another process ({error})", dir.display()),
            )
        })?;
        std::fs::create_dir_all(dir.join(CHUNKS))?;
        std::fs::create_dir_all(dir.join(MANIFESTS))?;
        let store = SnapshotStore {
            inner: Arc::new(Inner { dir: dir.to_path_buf(), references: Mutex::new(HashMap::new()), _lock: lock }),
        };
        let mut references: HashMap<ChunkHash, usize> = HashMap::new();
        for path in store.manifest_paths()? {
            let Ok(value) = std::fs::read(&path) else { continue };
            if let Ok(manifest) = Manifest::decode(&value) {
                for chunk in manifest.chunks.values() {
                    *references.entry(chunk.hash).or_insert(0) += 1;
                }
            }
        }
        let named: std::collections::HashSet<String> = references.keys().map(hex).collect();
        for entry in std::fs::read_dir(dir.join(CHUNKS))? {
            let path = entry?.path();
            let name = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            if !named.contains(name) {
                std::fs::remove_file(&path)?;
            }
        }
        *store.inner.references.lock().expect("no panic holds it") = references;
        Ok(store)
    }

    fn manifest_path(&self, swarm: &str, agent: &str) -> PathBuf {
        self.inner.dir.join(MANIFESTS).join(swarm).join(agent)
    }

    fn chunk_path(&self, hash: &ChunkHash) -> PathBuf {
        self.inner.dir.join(CHUNKS).join(hex(hash))
    }

    /// Every manifest's file (not the temporary ones of a save cut short).
    fn manifest_paths(&self) -> Result<Vec<PathBuf>, ActorsError> {
        let mut paths = Vec::new();
        for swarm in std::fs::read_dir(self.inner.dir.join(MANIFESTS))? {
            let swarm = swarm?.path();
            if !swarm.is_dir() {
                continue;
            }
            for agent in std::fs::read_dir(&swarm)? {
                let agent = agent?.path();
                let temporary =
                    agent.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(".tmp-"));
                if temporary {
                    std::fs::remove_file(&agent)?;
                } else if agent.is_file() {
                    paths.push(agent);
                }
            }
        }
        Ok(paths)
    }

    /// Writes `bytes` to `path` whole or not at all: a temporary file in
    /// the same directory, synced, renamed over it, the directory synced.
    fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), ActorsError> {
        let dir = path.parent().expect("store paths have a parent");
        std::fs::create_dir_all(dir)?;
        let mut file = tempfile::Builder::new().prefix(".tmp-").tempfile_in(dir)?;
        file.write_all(bytes)?;
        file.as_file().sync_all()?;
        file.persist(path).map_err(|error| error.error)?;
        File::open(dir)?.sync_all()?;
        Ok(())
    }

    fn read_manifest(&self, swarm: &str, agent: &str) -> Result<Option<Vec<u8>>, ActorsError> {
        match std::fs::read(self.manifest_path(swarm, agent)) {
            Ok(value) => Ok(Some(value)),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(error) => Err(error.into()),
        }
    }

    /// Counts `next`'s chunks in and `previous`'s out, and deletes the
    /// chunk files no manifest names any more.
    fn rereference(
        &self,
        references: &mut HashMap<ChunkHash, usize>,
        previous: Option<&Manifest>,
        next: Option<&Manifest>,
    ) -> Result<(), ActorsError> {
        for chunk in next.iter().flat_map(|manifest| manifest.chunks.values()) {
            *references.entry(chunk.hash).or_insert(0) += 1;
        }
        for chunk in previous.iter().flat_map(|manifest| manifest.chunks.values()) {
            let Some(count) = references.get_mut(&chunk.hash) else { continue };
            *count -= 1;
            if *count == 0 {
                references.remove(&chunk.hash);
                match std::fs::remove_file(self.chunk_path(&chunk.hash)) {
                    Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error.into()),
                    _ => {}
                }
            }
        }
        Ok(())
    }

    /// Stores a snapshot: the chunks `delta` wrote that the store lacks,
    /// then its manifest (the commit), then the deletion of chunk files no
    /// manifest names any more. Returns the bytes written.
    pub fn save(&self, swarm: &str, agent: &str, delta: &SnapshotDelta) -> Result<usize, ActorsError> {
        let mut references = self.inner.references.lock().expect("no panic holds it");
        let previous = self.read_manifest(swarm, agent)?.and_then(|value| Manifest::decode(&value).ok());
        let mut chunks: BTreeMap<String, ChunkRef> = BTreeMap::new();
        let mut written = 0;
        for (part, bytes) in &delta.written {
            let hash: ChunkHash = Sha256::digest(bytes).into();
            let path = self.chunk_path(&hash);
            if !references.contains_key(&hash) || !path.exists() {
                SnapshotStore::write_atomically(&path, bytes)?;
                written += bytes.len();
            }
            chunks.insert(part.name(), ChunkRef { hash, crc: checksum(bytes) });
        }
        for part in &delta.parts {
            let name = part.name();
            if chunks.contains_key(&name) {
                continue;
            }
            // Unchanged since the snapshot before: its stored copy stands.
            let stored = previous.as_ref().and_then(|manifest| manifest.chunks.get(&name)).ok_or_else(|| {
                ActorsError::SnapshotIncomplete(format!(
                    "{swarm}/{agent}: chunk {name} did not change, yet the store holds none"
                ))
            })?;
            chunks.insert(name, *stored);
        }
        let manifest = Manifest { head: delta.head.clone(), chunks };
        let encoded = manifest.encode();
        written += encoded.len();
        SnapshotStore::write_atomically(&self.manifest_path(swarm, agent), &encoded)?;
        self.rereference(&mut references, previous.as_ref(), Some(&manifest))?;
        Ok(written)
    }

    /// The stored snapshot, if there is a sound one.
    pub fn load(&self, swarm: &str, agent: &str) -> Result<Result<StoredSnapshot, SnapshotProblem>, ActorsError> {
        let Some(value) = self.read_manifest(swarm, agent)? else {
            return Ok(Err(SnapshotProblem::Missing));
        };
        let manifest = match Manifest::decode(&value) {
            Ok(manifest) => manifest,
            Err(why) => return Ok(Err(SnapshotProblem::Damaged(why))),
        };
        let mut chunks = BTreeMap::new();
        for (name, chunk) in manifest.chunks {
            let bytes = match std::fs::read(self.chunk_path(&chunk.hash)) {
                Ok(bytes) => bytes,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    return Ok(Err(SnapshotProblem::Damaged(format!("chunk {name} is missing"))));
                }
                Err(error) => return Err(error.into()),
            };
            if checksum(&bytes) != chunk.crc {
                return Ok(Err(SnapshotProblem::Damaged(format!("chunk {name} does not match its checksum"))));
            }
            chunks.insert(name, bytes);
        }
        Ok(Ok(StoredSnapshot { head: manifest.head, chunks }))
    }

    /// How far the stored swarm graph of `swarm` covers the log (it covers
    /// every memory snapshot saved with it), and the agents with a
    /// snapshot: `None` without a readable graph snapshot. Reads manifests
    /// only, no chunk.
    pub fn coverage(&self, swarm: &str) -> Result<Option<(u64, Vec<String>)>, ActorsError> {
        let Some(value) = self.read_manifest(swarm, SnapshotStore::SWARM_GRAPH)? else { return Ok(None) };
        let Ok(manifest) = Manifest::decode(&value) else { return Ok(None) };
        let Ok(covers) = SwarmGraph::covers_in_head(&manifest.head) else { return Ok(None) };
        let mut agents = Vec::new();
        let dir = self.inner.dir.join(MANIFESTS).join(swarm);
        for entry in std::fs::read_dir(&dir)? {
            let name = entry?.file_name().to_string_lossy().into_owned();
            if name != SnapshotStore::SWARM_GRAPH && !name.starts_with(".tmp-") {
                agents.push(name);
            }
        }
        agents.sort();
        Ok(Some((covers, agents)))
    }

    /// Removes a snapshot (it will be rebuilt from the log).
    pub fn remove(&self, swarm: &str, agent: &str) -> Result<(), ActorsError> {
        let mut references = self.inner.references.lock().expect("no panic holds it");
        let previous = self.read_manifest(swarm, agent)?.and_then(|value| Manifest::decode(&value).ok());
        match std::fs::remove_file(self.manifest_path(swarm, agent)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error.into()),
            _ => {}
        }
        self.rereference(&mut references, previous.as_ref(), None)
    }

    /// Bytes of the files the store holds: chunks and manifests.
    pub fn stored_bytes(&self) -> Result<u64, ActorsError> {
        let mut bytes = 0;
        for entry in std::fs::read_dir(self.inner.dir.join(CHUNKS))? {
            bytes += entry?.metadata()?.len();
        }
        for path in self.manifest_paths()? {
            bytes += std::fs::metadata(path)?.len();
        }
        Ok(bytes)
    }

    /// A snapshot's raw stored manifest, header included: for
    /// failure-injection tests.
    #[doc(hidden)]
    pub fn raw_for_tests(&self, swarm: &str, agent: &str) -> Result<Option<Vec<u8>>, ActorsError> {
        self.read_manifest(swarm, agent)
    }

    /// Overwrites a snapshot's raw stored manifest: for failure-injection
    /// tests.
    #[doc(hidden)]
    pub fn put_raw_for_tests(&self, swarm: &str, agent: &str, value: &[u8]) -> Result<(), ActorsError> {
        SnapshotStore::write_atomically(&self.manifest_path(swarm, agent), value)
    }

    /// Overwrites the file of one stored chunk (and so of every snapshot
    /// that holds the same bytes): for failure-injection tests.
    #[doc(hidden)]
    pub fn put_chunk_for_tests(
        &self,
        swarm: &str,
        agent: &str,
        part: SnapshotPart,
        value: &[u8],
    ) -> Result<(), ActorsError> {
        let manifest = self.read_manifest(swarm, agent)?.expect("a snapshot to damage");
        let manifest = Manifest::decode(&manifest).expect("a sound manifest to damage");
        let chunk = manifest.chunks.get(&part.name()).expect("the chunk to damage");
        std::fs::write(self.chunk_path(&chunk.hash), value)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_events::{Event, EventId, EventKind, MessageRecorded, Timestamp};

    fn message(seq: u64) -> Event {
        Event::new(
            "s",
            "a",
            EventKind::MessageRecorded(MessageRecorded { role: "user".into(), text: format!("note {seq}") }),
        )
        .with_id(EventId::from_parts(1_760_000_000_000 + seq, u128::from(seq)))
        .with_ts(Timestamp::from_unix_millis(1_760_000_000_000 + seq as i64))
    }

    /// A second snapshot writes the head and what the ten new events
    /// changed, not the 10,000 items before them, and the store gives back
    /// the memory as it is now.
    #[test]
    fn a_snapshot_writes_what_changed_and_loads_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Missing)));
        let mut memory = AgentMemory::new("s", "a", MemoryConfig::default()).unwrap();
        for seq in 1..=10_000 {
            memory.apply(seq, &message(seq)).unwrap();
        }
        let first = store.save("s", "a", &memory.snapshot_delta().unwrap()).unwrap();
        memory.mark_snapshot_saved();
        for seq in 10_001..=10_010 {
            memory.apply(seq, &message(seq)).unwrap();
        }
        let second = store.save("s", "a", &memory.snapshot_delta().unwrap()).unwrap();
        memory.mark_snapshot_saved();
        assert!(second * 5 < first, "the second snapshot wrote {second} bytes, the first {first}");
        let restored = store.load("s", "a").unwrap().unwrap().restore("s", "a", MemoryConfig::default()).unwrap();
        assert_eq!(restored.checkpoint(), 10_010);
        assert_eq!(restored.digest(), memory.digest());
    }

    #[test]
    fn a_damaged_manifest_or_chunk_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        let mut memory = AgentMemory::new("s", "a", MemoryConfig::default()).unwrap();
        for seq in 1..=5 {
            memory.apply(seq, &message(seq)).unwrap();
        }
        store.save("s", "a", &memory.snapshot_delta().unwrap()).unwrap();
        assert!(store.load("s", "a").unwrap().is_ok());
        store.put_chunk_for_tests("s", "a", SnapshotPart::Items(0), b"junk").unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Damaged(_))));
        let mut value = store.raw_for_tests("s", "a").unwrap().unwrap();
        let last = value.len() - 1;
        value[last] ^= 0xff;
        store.put_raw_for_tests("s", "a", &value).unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Damaged(_))));
        store.put_raw_for_tests("s", "a", b"MN").unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Damaged(_))));
    }

    fn memory_of(agent: &str, events: std::ops::RangeInclusive<u64>) -> AgentMemory {
        let mut memory = AgentMemory::new("s", agent, MemoryConfig::default()).unwrap();
        for seq in events {
            memory.apply(seq, &message(seq)).unwrap();
        }
        memory
    }

    /// Issue 35, F6: 21,000 shared messages left 106 MB of sled files for
    /// 45 MB of snapshots, every rewritten chunk kept. Snapshot after
    /// snapshot, the store's files are what its snapshots hold, and a
    /// chunk two memories hold alike is stored once.
    #[test]
    fn f6_the_store_holds_its_snapshots_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        let mut memory = memory_of("a", 1..=2_000);
        let mut live = 0;
        for round in 0..10u64 {
            for seq in 2_001 + round * 200..=2_200 + round * 200 {
                memory.apply(seq, &message(seq)).unwrap();
            }
            let delta = memory.snapshot_delta().unwrap();
            store.save("s", "a", &delta).unwrap();
            memory.mark_snapshot_saved();
            live = store.load("s", "a").unwrap().unwrap().bytes();
        }
        let stored = store.stored_bytes().unwrap() as usize;
        assert!(stored < live + live / 10, "{stored} bytes of files for a snapshot of {live}");
        // A second memory of the same events: its chunks are the first's.
        let twin = memory_of("a", 1..=4_000);
        store.save("s", "twin", &twin.snapshot_delta().unwrap()).unwrap();
        let both = store.stored_bytes().unwrap() as usize;
        assert!(both < stored + live / 10, "{both} bytes for two alike snapshots of {live}");
        // Removing one keeps the other whole; removing both empties it.
        store.remove("s", "a").unwrap();
        // (The twin is agent a's memory, kept under another name.)
        let restored = store.load("s", "twin").unwrap().unwrap().restore("s", "a", MemoryConfig::default());
        assert_eq!(restored.unwrap().digest(), twin.digest());
        store.remove("s", "twin").unwrap();
        assert_eq!(store.stored_bytes().unwrap(), 0);
    }

    /// Chunk files no manifest names (a save cut short before its
    /// manifest) are deleted on open; a second process cannot open the
    /// store while one holds it.
    #[test]
    fn a_save_cut_short_leaves_nothing_after_the_next_open_and_one_process_holds_the_store() {
        let dir = tempfile::tempdir().unwrap();
        {
            let store = SnapshotStore::open(dir.path()).unwrap();
            store.save("s", "a", &memory_of("a", 1..=50).snapshot_delta().unwrap()).unwrap();
            let error = SnapshotStore::open(dir.path()).err().expect("held by the first");
            assert!(error.to_string().contains("held by another process"), "{error}");
        }
        std::fs::write(dir.path().join(CHUNKS).join("00ff"), b"orphan").unwrap();
        std::fs::write(dir.path().join(MANIFESTS).join("s").join(".tmp-x"), b"half").unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        assert!(!dir.path().join(CHUNKS).join("00ff").exists());
        assert!(!dir.path().join(MANIFESTS).join("s").join(".tmp-x").exists());
        assert!(store.load("s", "a").unwrap().is_ok());
    }

    /// A directory of the sled store earlier versions wrote is emptied:
    /// its memories are rebuilt from the log.
    #[test]
    fn a_store_of_the_earlier_format_is_replaced() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("conf"), b"segment_size: 524288").unwrap();
        std::fs::write(dir.path().join("db"), vec![7u8; 4096]).unwrap();
        std::fs::create_dir(dir.path().join("blobs")).unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        assert!(!dir.path().join("db").exists() && !dir.path().join("blobs").exists());
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Missing)));
    }
}
