//! Creating the database folder and file with owner-only permissions: the database holds
//! password hashes and every conversation, which other local users must not read.

use std::fs::{DirBuilder, OpenOptions};
use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents `0700` (before the umask); an existing folder keeps its
/// mode.
pub(super) fn create_dir(dir: &Path) -> io::Result<()> {
    let mut builder = DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates `file` empty with mode `0600` (before the umask) when it is missing, so that SQLite
/// opens a file that was private from its first byte; an existing file is left untouched.
pub(super) fn create_file(file: &Path) -> io::Result<()> {
    let mut options = OpenOptions::new();
    // `write` without truncating changes nothing in an existing file; `create` needs it.
    options.write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(file).map(drop)
}
