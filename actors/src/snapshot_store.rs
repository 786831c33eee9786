//! Where agent memory snapshots live: a sled database beside the log.
//!
//! A snapshot holds the memory and its checkpoint in one value, written with
//! one insert, so state and checkpoint can never disagree. Each value carries
//! a SHA-256 of its body: a damaged snapshot is detected and rebuilt from the
//! log, never served.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::ActorsError;

const MAGIC: &[u8; 4] = b"MNS1";
const HEADER_LEN: usize = MAGIC.len() + 32;

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

impl SnapshotStore {
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

    /// Stores a snapshot, replacing the previous one, and flushes to disk.
    pub fn save(&self, swarm: &str, agent: &str, body: &[u8]) -> Result<(), ActorsError> {
        let mut value = Vec::with_capacity(HEADER_LEN + body.len());
        value.extend_from_slice(MAGIC);
        value.extend_from_slice(&Sha256::digest(body));
        value.extend_from_slice(body);
        self.tree.insert(SnapshotStore::key(swarm, agent), value)?;
        self.tree.flush()?;
        Ok(())
    }

    /// The stored snapshot body, if there is a sound one.
    pub fn load(&self, swarm: &str, agent: &str) -> Result<Result<Vec<u8>, SnapshotProblem>, ActorsError> {
        let Some(value) = self.tree.get(SnapshotStore::key(swarm, agent))? else {
            return Ok(Err(SnapshotProblem::Missing));
        };
        if value.len() < HEADER_LEN || &value[..MAGIC.len()] != MAGIC {
            return Ok(Err(SnapshotProblem::Damaged("header is missing or unknown".to_string())));
        }
        let (checksum, body) = value[MAGIC.len()..].split_at(32);
        if Sha256::digest(body).as_slice() != checksum {
            return Ok(Err(SnapshotProblem::Damaged("checksum does not match the body".to_string())));
        }
        Ok(Ok(body.to_vec()))
    }

    /// Removes a snapshot (it will be rebuilt from the log).
    pub fn remove(&self, swarm: &str, agent: &str) -> Result<(), ActorsError> {
        self.tree.remove(SnapshotStore::key(swarm, agent))?;
        self.tree.flush()?;
        Ok(())
    }

    /// A snapshot's raw stored value, header included: for failure-injection
    /// tests.
    #[doc(hidden)]
    pub fn raw_for_tests(&self, swarm: &str, agent: &str) -> Result<Option<Vec<u8>>, ActorsError> {
        Ok(self.tree.get(SnapshotStore::key(swarm, agent))?.map(|value| value.to_vec()))
    }

    /// Overwrites a snapshot's raw stored value: for failure-injection tests.
    #[doc(hidden)]
    pub fn put_raw_for_tests(&self, swarm: &str, agent: &str, value: &[u8]) -> Result<(), ActorsError> {
        self.tree.insert(SnapshotStore::key(swarm, agent), value)?;
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

    #[test]
    fn a_saved_snapshot_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        assert_eq!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Missing));
        store.save("s", "a", b"state").unwrap();
        assert_eq!(store.load("s", "a").unwrap(), Ok(b"state".to_vec()));
    }

    #[test]
    fn a_damaged_snapshot_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let store = SnapshotStore::open(dir.path()).unwrap();
        store.save("s", "a", b"state").unwrap();
        let mut value = store.tree.get(b"s/a").unwrap().unwrap().to_vec();
        let last = value.len() - 1;
        value[last] ^= 0xff;
        store.put_raw_for_tests("s", "a", &value).unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Damaged(_))));
        store.put_raw_for_tests("s", "a", b"MN").unwrap();
        assert!(matches!(store.load("s", "a").unwrap(), Err(SnapshotProblem::Damaged(_))));
    }
}
