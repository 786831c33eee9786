//! Where a persisted [`TextIndex`](crate::TextIndex) keeps its files: in
//! RAM, mirrored to a directory on disk at checkpoints.
//!
//! Memory commits its text index before a search that needs what was just
//! applied. Written to disk, each commit creates a segment's files and the
//! reader maps them again: publish → queryable p99 at 10,000 items went
//! from 13 ms to 24–29 ms that way (BENCHMARKS.md). Those commits only need
//! to make documents searchable in this process; what must survive a crash
//! is the index as of the last checkpoint, since a memory restores from its
//! snapshot and re-applies the log after it. So tantivy works on a
//! `RamDirectory`, and [`CheckpointedDirectory::make_durable`] (called
//! before a snapshot is saved) writes the files created since the last
//! call, syncs them, then replaces `meta.json` on disk, and only then
//! deletes the files the index dropped meanwhile. The directory on disk
//! always holds one whole commit: the last durable one. On open its files
//! are read back into RAM; a `meta.json` that is not the one recorded as
//! durable (a machine lost between the rename and the record) has the
//! files' checksums verified first (see `TextIndex::open`).

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, RamDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// The file recording the `meta.json` of the last durable commit.
const DURABLE_MARK: &str = "mneme-durable-meta.json";
const META: &str = "meta.json";
/// Tantivy's list of the files it manages, written with `meta.json`.
const MANAGED: &str = ".managed.json";

#[derive(Clone, Debug)]
pub(crate) struct CheckpointedDirectory {
    ram: RamDirectory,
    root: PathBuf,
    changes: Arc<Mutex<Changes>>,
}

/// What happened in RAM since the last [`CheckpointedDirectory::make_durable`].
#[derive(Debug, Default)]
struct Changes {
    /// Files written whole (their writer terminated): one still being
    /// written by a merge is not copied half-way.
    written: BTreeSet<PathBuf>,
    deleted: BTreeSet<PathBuf>,
}

/// A file's writer: the bytes go to RAM, and the file is recorded as
/// written, when it is finished.
struct Recorded {
    buffer: Vec<u8>,
    path: PathBuf,
    ram: RamDirectory,
    changes: Arc<Mutex<Changes>>,
}

impl Write for Recorded {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for Recorded {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.ram.atomic_write(&self.path, &std::mem::take(&mut self.buffer))?;
        let mut changes = self.changes.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        changes.written.insert(self.path.clone());
        Ok(())
    }
}

impl CheckpointedDirectory {
    /// The directory at `root`, its files (if any) read into RAM.
    pub(crate) fn open(root: &Path) -> io::Result<CheckpointedDirectory> {
        std::fs::create_dir_all(root)?;
        let ram = RamDirectory::create();
        for entry in std::fs::read_dir(root)? {
            let entry = entry?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let ours = name == DURABLE_MARK || name.ends_with(".tmp") || name.ends_with(".lock");
            if ours || !entry.file_type()?.is_file() {
                continue;
            }
            ram.atomic_write(Path::new(&*name), &std::fs::read(entry.path())?)?;
        }
        Ok(CheckpointedDirectory { ram, root: root.to_path_buf(), changes: Arc::default() })
    }

    fn changes(&self) -> std::sync::MutexGuard<'_, Changes> {
        self.changes.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the `meta.json` on disk is the one the last
    /// [`CheckpointedDirectory::make_durable`] recorded.
    pub(crate) fn is_durable(&self) -> bool {
        let read = |name: &str| std::fs::read(self.root.join(name)).ok();
        match (read(META), read(DURABLE_MARK)) {
            (Some(meta), Some(mark)) => meta == mark,
            _ => false,
        }
    }

    /// Writes to disk the files created since the last call, syncs them,
    /// replaces `meta.json` (and tantivy's file list), then deletes the
    /// files the index no longer has. A merge may end meanwhile (writing
    /// files and `meta.json`): the files it wrote are on disk before the
    /// `meta.json` naming them.
    pub(crate) fn make_durable(&self) -> io::Result<()> {
        let (meta, managed, deleted) = loop {
            let written = std::mem::take(&mut self.changes().written);
            for path in &written {
                // Written and dropped again since the last call.
                let Ok(bytes) = self.ram.atomic_read(path) else { continue };
                let mut file = File::create(self.root.join(path))?;
                file.write_all(&bytes)?;
                file.sync_all()?;
            }
            // Dropped before this `meta.json` was read, so it does not
            // name them (a file the index drops never comes back).
            let deleted = std::mem::take(&mut self.changes().deleted);
            let meta = self.ram.atomic_read(Path::new(META)).map_err(io::Error::other)?;
            let managed = self.ram.atomic_read(Path::new(MANAGED)).ok();
            if self.changes().written.is_empty() {
                break (meta, managed, deleted);
            }
            self.changes().deleted.extend(deleted);
        };
        if let Some(managed) = managed {
            self.replace(MANAGED, &managed)?;
        }
        self.replace(META, &meta)?;
        for path in deleted {
            match std::fs::remove_file(self.root.join(&path)) {
                Err(error) if error.kind() != io::ErrorKind::NotFound => return Err(error),
                _ => {}
            }
        }
        self.replace(DURABLE_MARK, &meta)
    }

    /// Replaces the file `name` on disk with `bytes`, synced.
    fn replace(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        let temporary = self.root.join(format!("{name}.tmp"));
        let mut file = File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, self.root.join(name))?;
        File::open(&self.root)?.sync_all()
    }

    /// Deletes every file of the index (it is rebuilt from memory).
    pub(crate) fn wipe(root: &Path) -> io::Result<()> {
        match std::fs::remove_dir_all(root) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
            _ => std::fs::create_dir_all(root),
        }
    }
}

impl Directory for CheckpointedDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.ram.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.ram.delete(path)?;
        self.changes().deleted.insert(path.to_path_buf());
        Ok(())
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.ram.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        if self.ram.exists(path).unwrap_or(false) {
            return Err(OpenWriteError::FileAlreadyExists(path.to_path_buf()));
        }
        let wrap = |error| OpenWriteError::wrap_io_error(error, path.to_path_buf());
        // The file exists from now on, empty until it is finished.
        self.ram.atomic_write(path, &[]).map_err(wrap)?;
        let recorded = Recorded {
            buffer: Vec::new(),
            path: path.to_path_buf(),
            ram: self.ram.clone(),
            changes: self.changes.clone(),
        };
        Ok(BufWriter::new(Box::new(recorded)))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.ram.atomic_read(path)
    }

    /// `meta.json` and tantivy's file list: written to disk by
    /// [`CheckpointedDirectory::make_durable`] only.
    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        self.ram.atomic_write(path, data)
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.ram.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.ram.watch(watch_callback)
    }
}
