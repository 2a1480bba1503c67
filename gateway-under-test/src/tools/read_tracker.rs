//! The read-before-write memory (`docs/gateway-contract.md` §8.4): which version of each file the
//! agent last read, so that `write_file` can refuse to overwrite or append to a file it has not
//! seen.
//!
//! **Version.** A file's version is the lowercase hex SHA-256 of its bytes. A content hash rather
//! than `(len, mtime)` because mtime granularity can hide two quick writes and a restored file is
//! the same file; the price is hashing the file once more before a gated write.
//!
//! **Scope.** One tracker per gateway instance, keyed by the canonical host path. Host paths are
//! per user and thread, so the memory is per thread and per path without naming either.
//!
//! **Lifecycle.** `read_file` records the version of the whole file it read (a ranged read counts:
//! the contract says a ranged read is enough). Any write attempt by `write_file` forgets the path,
//! so the agent must read again before the next modification ("Any write invalidates earlier
//! reads, so re-read before every modification"). Creating a new file needs no read.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::MutexGuard;

use sha2::{Digest, Sha256};

use super::ReadTracker;

impl ReadTracker {
    /// Remembers that the agent has read `host_path` at `version` (see [`content_version`]).
    pub fn record(&self, host_path: PathBuf, version: String) {
        self.lock().insert(host_path, version);
    }

    /// Whether the agent's last read of `host_path` saw exactly `version`.
    pub fn is_current(&self, host_path: &Path, version: &str) -> bool {
        self.lock()
            .get(host_path)
            .is_some_and(|recorded| recorded == version)
    }

    /// Forgets the read of `host_path`: called after every write to it.
    pub fn invalidate(&self, host_path: &Path) {
        self.lock().remove(host_path);
    }

    /// Forgets every read under `root`, for example when a thread and its folder are deleted.
    pub fn forget_under(&self, root: &Path) {
        self.lock().retain(|path, _| !path.starts_with(root));
    }

    /// The map, even after a panic elsewhere poisoned the lock: every critical section is a
    /// single map operation, so the map is never left half-updated.
    fn lock(&self) -> MutexGuard<'_, HashMap<PathBuf, String>> {
        crate::lock::unpoisoned(&self.versions)
    }
}

/// The version of a file with these bytes: lowercase hex SHA-256.
pub fn content_version(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_checks_and_invalidates() {
        let tracker = ReadTracker::default();
        let file = Path::new("/h/t1/user-data/outputs/a.txt");
        let version = content_version(b"hello");
        assert!(!tracker.is_current(file, &version));
        tracker.record(file.to_path_buf(), version.clone());
        assert!(tracker.is_current(file, &version));
        assert!(!tracker.is_current(file, &content_version(b"hello!")));
        tracker.invalidate(file);
        assert!(!tracker.is_current(file, &version));
    }

    #[test]
    fn forget_under_drops_one_thread_only() {
        let tracker = ReadTracker::default();
        let mine = Path::new("/h/t1/user-data/outputs/a.txt");
        let other = Path::new("/h/t2/user-data/outputs/a.txt");
        let version = content_version(b"x");
        tracker.record(mine.to_path_buf(), version.clone());
        tracker.record(other.to_path_buf(), version.clone());
        tracker.forget_under(Path::new("/h/t1"));
        assert!(!tracker.is_current(mine, &version));
        assert!(tracker.is_current(other, &version));
    }

    #[test]
    fn version_is_hex_sha256() {
        assert_eq!(
            content_version(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
    }
}
