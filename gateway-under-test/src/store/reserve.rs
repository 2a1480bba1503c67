//! The disk-space reserve of the store (docs/gateway-contract.md §3.3): a file of
//! [`RESERVE_BYTES`] beside the database, given up when the disk is full so that a delete, which
//! frees space, still gets through.
//!
//! **Why.** On a full disk every SQLite write fails, deleting a thread included (its
//! transaction needs room in the WAL), so space could not be freed through the API. The store
//! keeps this file; when a thread delete fails with `SQLITE_FULL` it removes the file and tries
//! once more, and once a delete has freed space it puts the reserve back (best effort). Only
//! deletes use it: ordinary writes would spend it before anyone could delete. (A run's final
//! record that meets a full disk is written again later by the run worker, `runtime/runs.rs`.)

use std::io::Write;
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

use super::StoreError;

/// The reserve file's name, beside `deerflow.db`.
pub(super) const RESERVE_FILE: &str = "deerflow.db-reserve";

/// How much space the reserve holds: room for the WAL of a thread delete and a few run records.
pub(super) const RESERVE_BYTES: usize = 4 * 1024 * 1024;

/// The reserve file of one store folder, or none (`database.space_reserve = false`).
#[derive(Debug)]
pub(super) struct Reserve {
    /// The reserve file; `None` for a store configured without one.
    path: Option<PathBuf>,
}

impl Reserve {
    /// The reserve of the store in `dir`, created now when it is missing and there is room.
    pub(super) fn new(dir: &Path) -> Reserve {
        let reserve = Reserve {
            path: Some(dir.join(RESERVE_FILE)),
        };
        reserve.restore();
        reserve
    }

    /// No reserve: nothing is written, and nothing is given up on a full disk.
    pub(super) fn none() -> Reserve {
        Reserve { path: None }
    }

    /// Puts the reserve back if it is missing. A disk with no room for it stays without one (a
    /// partial file is removed again); this never fails.
    pub(super) fn restore(&self) {
        let Some(path) = &self.path else {
            return;
        };
        if path.exists() {
            return;
        }
        let written = super::private_files::create_file(path).and_then(|()| {
            let file = std::fs::OpenOptions::new().write(true).open(path)?;
            allocate(file, RESERVE_BYTES)
        });
        if let Err(err) = written {
            tracing::warn!("no disk-space reserve at {}: {err}", path.display());
            let _ = std::fs::remove_file(path);
        }
    }

    /// Gives the reserve up; true when there was one to give.
    pub(super) fn release(&self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let released = std::fs::remove_file(path).is_ok();
        if released {
            tracing::warn!("the disk is full: released the store's disk-space reserve");
        }
        released
    }
}

/// Gives `file` `len` bytes of disk blocks. The file system allocates them without writing them
/// where it can (`fallocate`): writing and syncing 4 MiB of zeros took 7–37 ms of every
/// start, most of a Layer 1 test's boot, for a file nothing reads. Only where it cannot are the
/// zeros written. Not synced: a reserve lost to a crash is put back at the next start.
fn allocate(mut file: std::fs::File, len: usize) -> std::io::Result<()> {
    let wanted = u64::try_from(len).map_err(std::io::Error::other)?;
    match rustix::fs::fallocate(&file, rustix::fs::FallocateFlags::empty(), 0, wanted) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::OPNOTSUPP | rustix::io::Errno::INVAL) => {
            file.write_all(&vec![0u8; len])
        }
        Err(errno) => Err(errno.into()),
    }
}

/// Whether `err` is SQLite's "database or disk is full".
pub(super) fn is_disk_full(err: &StoreError) -> bool {
    matches!(
        err,
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(failure, _))
            if failure.code == ErrorCode::DiskFull
    )
}
