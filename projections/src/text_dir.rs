//! Where a persisted [`TextIndex`](crate::TextIndex) keeps its files: a
//! tantivy `MmapDirectory` that syncs to disk at checkpoints, not at every
//! commit.
//!
//! Memory commits its text index before a search that needs what was just
//! applied; `MmapDirectory` fsyncs every file of a commit, about 0.6 ms
//! each here, several files per commit. Those commits only need to make
//! documents searchable in this process: what must survive a crash is the
//! index as of the last checkpoint, since a memory restores from its
//! snapshot and re-applies the log after it. So files are written without
//! a sync, [`LazySyncDirectory::make_durable`] syncs everything written
//! since the last call (and the directory) when a checkpoint is saved, and
//! then records the index's `meta.json` as durable. On open, an index whose
//! `meta.json` is not the recorded one was committed after its last
//! checkpoint: a process that was killed leaves intact files behind (the
//! kernel has them), a machine that lost power may not, so its files'
//! checksums are verified before it is used (see `TextIndex::open`).

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    AntiCallToken, Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, TerminatingWrite, WatchCallback,
    WatchHandle, WritePtr,
};

/// The file recording the `meta.json` of the last durable commit.
const DURABLE_MARK: &str = "mneme-durable-meta.json";
const META: &str = "meta.json";

#[derive(Clone, Debug)]
pub(crate) struct LazySyncDirectory {
    inner: MmapDirectory,
    root: PathBuf,
    /// Files written since the last [`LazySyncDirectory::make_durable`].
    unsynced: Arc<Mutex<Vec<PathBuf>>>,
}

impl LazySyncDirectory {
    pub(crate) fn open(root: &Path) -> tantivy::Result<LazySyncDirectory> {
        std::fs::create_dir_all(root)?;
        Ok(LazySyncDirectory {
            inner: MmapDirectory::open(root)?,
            root: root.to_path_buf(),
            unsynced: Arc::new(Mutex::new(Vec::new())),
        })
    }

    fn unsynced(&self) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
        self.unsynced.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether the index's `meta.json` is the one the last
    /// [`LazySyncDirectory::make_durable`] recorded.
    pub(crate) fn is_durable(&self) -> bool {
        let read = |name: &str| std::fs::read(self.root.join(name)).ok();
        match (read(META), read(DURABLE_MARK)) {
            (Some(meta), Some(mark)) => meta == mark,
            _ => false,
        }
    }

    /// Syncs every file written since the last call, then the directory,
    /// then records the current `meta.json` as durable. A merge may end
    /// meanwhile (writing files and `meta.json`): the files it wrote are
    /// synced before the `meta.json` naming them is recorded.
    pub(crate) fn make_durable(&self) -> io::Result<()> {
        let meta = loop {
            let written = std::mem::take(&mut *self.unsynced());
            for path in &written {
                match File::open(self.root.join(path)) {
                    Ok(file) => file.sync_all()?,
                    // Merged away or garbage-collected since.
                    Err(error) if error.kind() == io::ErrorKind::NotFound => {}
                    Err(error) => return Err(error),
                }
            }
            File::open(&self.root)?.sync_all()?;
            let meta = std::fs::read(self.root.join(META))?;
            if self.unsynced().is_empty() {
                break meta;
            }
        };
        let temporary = self.root.join(format!("{DURABLE_MARK}.tmp"));
        let mut file = File::create(&temporary)?;
        file.write_all(&meta)?;
        file.sync_all()?;
        std::fs::rename(&temporary, self.root.join(DURABLE_MARK))?;
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

/// A file written without a sync; [`LazySyncDirectory::make_durable`]
/// syncs it.
struct UnsyncedFile(File);

impl Write for UnsyncedFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl TerminatingWrite for UnsyncedFile {
    fn terminate_ref(&mut self, _: AntiCallToken) -> io::Result<()> {
        self.0.flush()
    }
}

impl Directory for LazySyncDirectory {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }

    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }

    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }

    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let file = OpenOptions::new().write(true).create_new(true).open(self.root.join(path)).map_err(|error| {
            if error.kind() == io::ErrorKind::AlreadyExists {
                OpenWriteError::FileAlreadyExists(path.to_path_buf())
            } else {
                OpenWriteError::wrap_io_error(error, path.to_path_buf())
            }
        })?;
        self.unsynced().push(path.to_path_buf());
        Ok(BufWriter::new(Box::new(UnsyncedFile(file))))
    }

    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }

    fn atomic_write(&self, path: &Path, data: &[u8]) -> io::Result<()> {
        // Atomic against a crash of the process (the rename), not of the
        // machine until the next `make_durable`.
        let mut file = tempfile::Builder::new().tempfile_in(&self.root)?;
        file.write_all(data)?;
        file.flush()?;
        file.into_temp_path().persist(self.root.join(path))?;
        self.unsynced().push(path.to_path_buf());
        Ok(())
    }

    fn sync_directory(&self) -> io::Result<()> {
        Ok(())
    }

    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        self.inner.acquire_lock(lock)
    }

    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}
