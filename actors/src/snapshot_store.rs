//! Where agent memory snapshots live: a sled database beside the log.
//!
//! A snapshot is a head (the checkpoint and everything small) and chunks
//! (items, vectors, applied ids and the fact graph, see
//! [`mneme_projections::SnapshotPart`]). Each chunk is a value of its own,
//! `swarm/agent/<part>`; the manifest, under `swarm/agent`, holds the head
//! and the CRC-32 of every chunk the snapshot consists of, and carries a
//! CRC-32 of itself. (SHA-256 was a quarter of a restore's time; these
//! checksums catch damage, not forgery, and CRC-32 does that at memory
//! speed.) A snapshot writes the chunks that changed, removes
//! those the memory no longer has and replaces the manifest in one atomic
//! batch, so head, checkpoint and chunks can never disagree; a damaged
//! manifest or chunk is detected and the memory rebuilt from the log, never
//! served.

use std::collections::BTreeMap;
use std::path::Path;

use mneme_projections::graph::SwarmGraph;
use mneme_projections::{AgentMemory, MemoryConfig, ProjectionError, SharedContent, SnapshotDelta, SnapshotPart};

use crate::error::ActorsError;

const MAGIC: &[u8; 4] = b"MNS3";
const CHECKSUM_LEN: usize = 4;
const HEADER_LEN: usize = MAGIC.len() + CHECKSUM_LEN;

fn checksum(bytes: &[u8]) -> [u8; CHECKSUM_LEN] {
    crc32fast::hash(bytes).to_le_bytes()
}

#[derive(Clone)]
pub struct SnapshotStore {
    tree: sled::Db,
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

/// The manifest's body: the head, then each chunk's name and checksum.
struct Manifest {
    head: Vec<u8>,
    chunks: BTreeMap<String, [u8; CHECKSUM_LEN]>,
}

impl Manifest {
    fn encode(&self) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.head.len() + 16 + self.chunks.len() * 32);
        body.extend_from_slice(&(self.head.len() as u64).to_le_bytes());
        body.extend_from_slice(&self.head);
        body.extend_from_slice(&(self.chunks.len() as u64).to_le_bytes());
        for (name, stored) in &self.chunks {
            body.extend_from_slice(&(name.len() as u16).to_le_bytes());
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(stored);
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
            let stored: [u8; CHECKSUM_LEN] = take(CHECKSUM_LEN)?.try_into().expect("a checksum's bytes");
            chunks.insert(name, stored);
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

    /// Opens the store in `dir`. A store whose files sled cannot read (cut
    /// short by a full disk, overwritten) is moved aside to
    /// `<dir>.unreadable-<unix seconds>`, with a warning, and an empty one
    /// is opened: snapshots are caches of the log, so every memory is then
    /// rebuilt from the log instead of the service refusing to start.
    /// Errors that say nothing about the files (permissions, a store held
    /// by another process) are returned.
    pub fn open(dir: &Path) -> Result<SnapshotStore, ActorsError> {
        match sled::open(dir) {
            Ok(tree) => Ok(SnapshotStore { tree }),
            Err(error) if files_are_unreadable(&error) => {
                let seconds = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|since| since.as_secs())
                    .unwrap_or_default();
                let mut aside = dir.as_os_str().to_owned();
                aside.push(format!(".unreadable-{seconds}"));
                tracing::warn!(
                    dir = %dir.display(), moved_to = ?aside, %error,
                    "snapshot store unreadable; moved aside, every memory will be rebuilt from the log"
                );
                std::fs::rename(dir, &aside).map_err(|rename_error| {
                    ActorsError::SnapshotStore(sled::Error::Io(std::io::Error::new(
                        rename_error.kind(),
                        format!(
                            "the snapshot store is unreadable ({error}) and could not be moved aside: {rename_error}"
                        ),
                    )))
                })?;
                Ok(SnapshotStore { tree: sled::open(dir)? })
            }
            Err(error) => Err(error.into()),
        }
    }

    fn key(swarm: &str, agent: &str) -> Vec<u8> {
        format!("{swarm}/{agent}").into_bytes()
    }

    fn chunk_key(swarm: &str, agent: &str, name: &str) -> Vec<u8> {
        format!("{swarm}/{agent}/{name}").into_bytes()
    }

    /// Stores a snapshot: the chunks `delta` wrote, the removal of those it
    /// no longer has, and its head, in one atomic batch; then flushes.
    /// Returns the bytes written.
    pub fn save(&self, swarm: &str, agent: &str, delta: &SnapshotDelta) -> Result<usize, ActorsError> {
        let previous = self.tree.get(SnapshotStore::key(swarm, agent))?.and_then(|value| Manifest::decode(&value).ok());
        let mut chunks: BTreeMap<String, [u8; CHECKSUM_LEN]> = BTreeMap::new();
        let mut batch = sled::Batch::default();
        let mut written = 0;
        for (part, bytes) in &delta.written {
            let name = part.name();
            chunks.insert(name.clone(), checksum(bytes));
            batch.insert(SnapshotStore::chunk_key(swarm, agent, &name), bytes.as_slice());
            written += bytes.len();
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
        if let Some(previous) = &previous {
            for name in previous.chunks.keys().filter(|name| !chunks.contains_key(*name)) {
                batch.remove(SnapshotStore::chunk_key(swarm, agent, name));
            }
        }
        let manifest = Manifest { head: delta.head.clone(), chunks }.encode();
        written += manifest.len();
        batch.insert(SnapshotStore::key(swarm, agent), manifest);
        self.tree.apply_batch(batch)?;
        self.tree.flush()?;
        Ok(written)
    }

    /// The stored snapshot, if there is a sound one.
    pub fn load(&self, swarm: &str, agent: &str) -> Result<Result<StoredSnapshot, SnapshotProblem>, ActorsError> {
        let Some(value) = self.tree.get(SnapshotStore::key(swarm, agent))? else {
            return Ok(Err(SnapshotProblem::Missing));
        };
        let manifest = match Manifest::decode(&value) {
            Ok(manifest) => manifest,
            Err(why) => return Ok(Err(SnapshotProblem::Damaged(why))),
        };
        let mut chunks = BTreeMap::new();
        for (name, stored) in manifest.chunks {
            let Some(bytes) = self.tree.get(SnapshotStore::chunk_key(swarm, agent, &name))? else {
                return Ok(Err(SnapshotProblem::Damaged(format!("chunk {name} is missing"))));
            };
            if checksum(&bytes) != stored {
                return Ok(Err(SnapshotProblem::Damaged(format!("chunk {name} does not match its checksum"))));
            }
            chunks.insert(name, bytes.to_vec());
        }
        Ok(Ok(StoredSnapshot { head: manifest.head, chunks }))
    }

    /// Removes a snapshot (it will be rebuilt from the log).
    pub fn remove(&self, swarm: &str, agent: &str) -> Result<(), ActorsError> {
        let mut batch = sled::Batch::default();
        batch.remove(SnapshotStore::key(swarm, agent));
        for key in self.tree.scan_prefix(SnapshotStore::chunk_key(swarm, agent, "")).keys() {
            batch.remove(key?);
        }
        self.tree.apply_batch(batch)?;
        self.tree.flush()?;
        Ok(())
    }

    /// A snapshot's raw stored manifest, header included: for
    /// failure-injection tests.
    #[doc(hidden)]
    pub fn raw_for_tests(&self, swarm: &str, agent: &str) -> Result<Option<Vec<u8>>, ActorsError> {
        Ok(self.tree.get(SnapshotStore::key(swarm, agent))?.map(|value| value.to_vec()))
    }

    /// Overwrites a snapshot's raw stored manifest: for failure-injection
    /// tests.
    #[doc(hidden)]
    pub fn put_raw_for_tests(&self, swarm: &str, agent: &str, value: &[u8]) -> Result<(), ActorsError> {
        self.tree.insert(SnapshotStore::key(swarm, agent), value)?;
        self.tree.flush()?;
        Ok(())
    }

    /// Overwrites one stored chunk: for failure-injection tests.
    #[doc(hidden)]
    pub fn put_chunk_for_tests(
        &self,
        swarm: &str,
        agent: &str,
        part: SnapshotPart,
        value: &[u8],
    ) -> Result<(), ActorsError> {
        self.tree.insert(SnapshotStore::chunk_key(swarm, agent, &part.name()), value)?;
        self.tree.flush()?;
        Ok(())
    }
}

/// Whether sled's error means its files are damaged, rather than that they
/// could not be reached.
fn files_are_unreadable(error: &sled::Error) -> bool {
    match error {
        sled::Error::Corruption { .. } | sled::Error::Unsupported(_) => true,
        sled::Error::Io(io) => {
            matches!(io.kind(), std::io::ErrorKind::UnexpectedEof | std::io::ErrorKind::InvalidData)
        }
        _ => false,
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
}
