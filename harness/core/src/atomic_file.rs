//! Replacing a file atomically: write a temporary file beside it, flush it to disk, and rename
//! it over the target, so a reader sees the old file or the new one, never half of one, and a
//! failed write leaves the old file as it was (the temporary file is removed).
//!
//! Fixtures, the recordings configuration and every other file this workspace rewrites go through
//! [`write_atomically`]; the temporary file comes from `tempfile` (created exclusively, so a
//! planted symlink is never followed).

use std::fs::Permissions;
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The mode of files other people may read (fixtures): `rw-rw-rw-` less the process umask.
pub const SHARED_FILE_MODE: u32 = 0o666;

/// Replaces `path` with `contents` through a fsynced temporary file in the same folder, created
/// with `mode` (less the umask). The folder must exist.
pub fn write_atomically(path: &Path, contents: &[u8], mode: u32) -> io::Result<()> {
    let folder = match path.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder,
        _ => Path::new("."),
    };
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".tmp")
        .permissions(Permissions::from_mode(mode))
        .tempfile_in(folder)?;
    temporary.write_all(contents)?;
    temporary.as_file().sync_all()?;
    temporary.persist(path).map_err(|err| err.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mode_of(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn replaces_the_file_with_the_mode_asked_for_and_leaves_nothing_behind() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.json");
        std::fs::write(&path, "old").unwrap();
        write_atomically(&path, b"new", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(mode_of(&path), 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no temporary file is left");
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        // The target is a folder: the rename fails after the temporary file was written.
        let path = dir.path().join("taken");
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "keep").unwrap();
        assert!(write_atomically(&path, b"new", SHARED_FILE_MODE).is_err());
        assert_eq!(
            std::fs::read_to_string(path.join("inside")).unwrap(),
            "keep"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "the temporary file was removed");
    }
}
