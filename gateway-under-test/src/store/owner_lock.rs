//! One gateway per database: an exclusive advisory lock on `<dir>/deerflow.db.lock`, taken when a
//! [`Store`](super::Store) opens and released when its last handle is dropped (or the process
//! dies, which is why a lock file and not a marker file: `kill -9` leaves nothing to clean up).
//!
//! Two gateways on one database would not corrupt SQLite, but each would take the other's live
//! runs for runs a crash left behind and finish them as `error` at start (crash recovery), and
//! each would serve threads whose runs it does not drive. So the second one refuses to start.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use super::StoreError;

/// The lock file inside the database folder.
const LOCK_FILE: &str = "deerflow.db.lock";

/// The held lock; dropping the file releases it.
#[derive(Debug)]
pub(super) struct OwnerLock {
    _file: File,
}

impl OwnerLock {
    /// Takes the lock of `dir` without waiting: [`StoreError::InUse`] when another store holds
    /// it, in this process or another.
    pub(super) fn take(dir: &Path) -> Result<OwnerLock, StoreError> {
        let path = dir.join(LOCK_FILE);
        let io_error = |source| StoreError::Io {
            path: path.clone(),
            source,
        };
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&path).map_err(io_error)?;
        match file.try_lock() {
            Ok(()) => Ok(OwnerLock { _file: file }),
            Err(TryLockError::WouldBlock) => Err(StoreError::InUse {
                dir: dir.to_path_buf(),
                lock: PathBuf::from(LOCK_FILE),
            }),
            Err(TryLockError::Error(source)) => Err(io_error(source)),
        }
    }
}
