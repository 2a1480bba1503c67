//! The few POSIX file-system operations the store needs: private modes, no-follow opens, file
//! identity, change time. On other platforms they degrade to the portable behaviour (no modes,
//! no identity), which the store treats as "not the same file".

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::path::Path;
use std::time::SystemTime;

/// Makes `options` create files 0600 and refuse to follow a final symlink.
pub(crate) fn private_nofollow(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600).custom_flags(libc::O_NOFOLLOW);
    }
    options
}

/// Creates `path` and its missing parents with mode 0700.
pub(crate) fn create_private_dir_all(path: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        builder.mode(0o700);
    }
    builder.create(path)
}

/// Opens the directory `path` without following a symlink, sets it to 0700 through the open
/// handle (so a swapped-in symlink is never chmodded) and returns the mode it then has.
pub(crate) fn tighten_private_dir(path: &Path) -> io::Result<u32> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
        let dir = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY)
            .open(path)?;
        dir.set_permissions(std::fs::Permissions::from_mode(0o700))?;
        Ok(dir.metadata()?.permissions().mode() & 0o7777)
    }
    #[cfg(not(unix))]
    {
        std::fs::metadata(path).map(|_| 0o700)
    }
}

/// Whether two paths name the same directory entry target, compared without following a final
/// symlink (device and inode of `lstat`). False when either is missing.
pub(crate) fn same_entry(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (std::fs::symlink_metadata(a), std::fs::symlink_metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// The inode change time (`st_ctime`), else the modification time.
pub(crate) fn change_time(meta: &Metadata) -> Option<SystemTime> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let seconds = meta.ctime();
        let nanos = u32::try_from(meta.ctime_nsec()).unwrap_or(0);
        let offset = std::time::Duration::new(seconds.unsigned_abs(), nanos);
        if seconds >= 0 {
            SystemTime::UNIX_EPOCH.checked_add(offset)
        } else {
            SystemTime::UNIX_EPOCH.checked_sub(offset)
        }
    }
    #[cfg(not(unix))]
    {
        meta.modified().ok()
    }
}

/// Opens (creating 0600, never following a symlink) `<recording>.lock` and tries to take its
/// exclusive lock without blocking. `Ok(None)` means another holder has it.
pub(crate) fn try_lock_file(lock_path: &Path) -> io::Result<Option<File>> {
    let file =
        private_nofollow(OpenOptions::new().read(true).write(true).create(true)).open(lock_path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(err)) => Err(err),
    }
}

/// Seconds since the epoch as a float (negative before 1970).
pub(crate) fn epoch_seconds(time: SystemTime) -> f64 {
    match time.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(after) => after.as_secs_f64(),
        Err(before) => -before.duration().as_secs_f64(),
    }
}

/// ISO-8601 UTC with a `Z`, to the second: `2026-08-11T13:45:02Z`.
pub(crate) fn iso_utc(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time)
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}
