//! Files in folders a pull request controls (goldens, pending goldens, the gateway's logs),
//! opened as regular files only, never through a link (issue 34, findings 2, 11 and 19).
//!
//! A committed `golden/` can hold anything a fork put there: a symbolic link to a credentials
//! file (which `review` would print and `accept` would copy into `golden/`), a link out of the
//! repository (which a pending golden written through it would overwrite), a FIFO (which an
//! open would wait on forever), a huge file. So every read here opens with `O_NOFOLLOW |
//! O_NONBLOCK` and checks the open descriptor is a regular file of a bounded size; every write
//! refuses an existing link or non-regular file and replaces a regular one atomically (a rename
//! replaces a link planted after the check, it never writes through it); a log file is opened
//! without following a link and checked before it is truncated.

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest golden (or pending golden) read: far above any real one (the shipped goldens are
/// a few KiB), far below what would exhaust memory.
pub const MAX_GOLDEN_BYTES: u64 = 64 * 1024 * 1024;

/// Why a file in a golden or log folder could not be used.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The path is a symbolic link, which keyless never follows in these folders.
    #[error(
        "{}: is a symbolic link; keyless does not follow links in its golden and log folders \
         (replace it with a regular file, or remove it)",
        .path.display()
    )]
    Symlink {
        /// The link.
        path: PathBuf,
    },
    /// The path is not a regular file (a FIFO, a device, a folder, a socket).
    #[error("{}: is {kind}, not a regular file", .path.display())]
    NotRegular {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: &'static str,
    },
    /// The file is larger than a golden can be.
    #[error("{}: is {size} bytes, more than a golden may be ({limit} bytes)", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
        /// The bound.
        limit: u64,
    },
    /// The file is not UTF-8 text.
    #[error("{}: is not UTF-8 text", .path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Any other failure to open, read, write or remove it.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
}

impl FileError {
    /// The file the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FileError::Symlink { path }
            | FileError::NotRegular { path, .. }
            | FileError::TooLarge { path, .. }
            | FileError::NotText { path }
            | FileError::Io { path, .. } => path,
        }
    }
}

/// What a file type is, for messages.
fn kind_of(file_type: std::fs::FileType) -> &'static str {
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_fifo() {
        "a FIFO"
    } else if file_type.is_socket() {
        "a socket"
    } else if file_type.is_char_device() || file_type.is_block_device() {
        "a device"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else {
        "not a regular file"
    }
}

/// The error of a failed `O_NOFOLLOW` open: `ELOOP` means the path is a link.
fn open_error(path: &Path, source: io::Error) -> FileError {
    if source.raw_os_error() == Some(libc::ELOOP) {
        FileError::Symlink {
            path: path.to_path_buf(),
        }
    } else if source.raw_os_error() == Some(libc::ENXIO) {
        // A FIFO with no reader refuses a non-blocking open for writing.
        FileError::NotRegular {
            path: path.to_path_buf(),
            kind: "a FIFO",
        }
    } else {
        FileError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// Checks that the open `file` is a regular file, returning its size.
fn regular(path: &Path, file: &File) -> Result<u64, FileError> {
    let metadata = file.metadata().map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    if !metadata.file_type().is_file() {
        return Err(FileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(metadata.file_type()),
        });
    }
    Ok(metadata.len())
}

/// The text of the regular file at `path`, at most `limit` bytes, or `None` when nothing is
/// there. A link, a FIFO or another special file is an error naming it, and is never read.
pub fn read_text(path: &Path, limit: u64) -> Result<Option<String>, FileError> {
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(open_error(path, err)),
    };
    let size = regular(path, &file)?;
    if size > limit {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size,
            limit,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    // `take`: a file that grows while it is read still stops at the bound.
    (&mut file)
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|source| FileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
    if bytes.len() as u64 > limit {
        return Err(FileError::TooLarge {
            path: path.to_path_buf(),
            size: bytes.len() as u64,
            limit,
        });
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| FileError::NotText {
            path: path.to_path_buf(),
        })
}

/// The last `max` bytes of the regular file at `path` (all of it when shorter), or `None`
/// when nothing is there; opened as [`read_text`] opens, so a link or a FIFO is an error
/// naming it and is never read.
pub fn read_tail(path: &Path, max: u64) -> Result<Option<Vec<u8>>, FileError> {
    use std::io::{Seek, SeekFrom};
    let mut file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(file) => file,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(open_error(path, err)),
    };
    let size = regular(path, &file)?;
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    file.seek(SeekFrom::Start(size.saturating_sub(max)))
        .map_err(io)?;
    let mut bytes = Vec::new();
    // `take`: a log that grows while it is read still stops at the bound.
    (&mut file).take(max).read_to_end(&mut bytes).map_err(io)?;
    Ok(Some(bytes))
}

/// What is at `path`, without following a link: `Ok(false)` when nothing, `Ok(true)` when a
/// regular file, an error naming it when a link or a special file.
pub fn exists_regular(path: &Path) -> Result<bool, FileError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) if metadata.file_type().is_file() => Ok(true),
        Ok(metadata) if metadata.file_type().is_symlink() => Err(FileError::Symlink {
            path: path.to_path_buf(),
        }),
        Ok(metadata) => Err(FileError::NotRegular {
            path: path.to_path_buf(),
            kind: kind_of(metadata.file_type()),
        }),
        Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(FileError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Replaces the file at `path` with `contents` (creating it and its folder if needed): an
/// existing link or special file is refused, a regular one replaced atomically, so nothing is
/// ever written through a link.
pub fn replace(path: &Path, contents: &[u8]) -> Result<(), FileError> {
    exists_regular(path)?;
    let io = |source| FileError::Io {
        path: path.to_path_buf(),
        source,
    };
    if let Some(folder) = path.parent().filter(|f| !f.as_os_str().is_empty()) {
        std::fs::create_dir_all(folder).map_err(io)?;
    }
    replay_core::write_atomically(path, contents, replay_core::SHARED_FILE_MODE).map_err(io)
}

/// Opens the log file at `path` for writing from its start, creating it: a link or a special
/// file there is refused and left as it is (never truncated or written through).
pub fn create_log(path: &Path) -> Result<File, FileError> {
    let file = OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| open_error(path, err))?;
    regular(path, &file)?;
    // Checked, so truncated only now: a FIFO or device is never touched.
    file.set_len(0).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    // The gateway writes through it blocking, as to any file.
    set_blocking(&file).map_err(|source| FileError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(file)
}

/// Clears `O_NONBLOCK` on an open file.
fn set_blocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsFd;
    let fd = file.as_fd();
    let flags = rustix::fs::fcntl_getfl(fd)?;
    rustix::fs::fcntl_setfl(fd, flags - rustix::fs::OFlags::NONBLOCK)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder with one entry of each kind keyless must refuse, and a regular file.
    fn hostile_folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "sk-secret").unwrap();
        std::os::unix::fs::symlink(&secret, dir.path().join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("folder")).unwrap();
        std::fs::write(dir.path().join("plain"), "text").unwrap();
        dir
    }

    #[test]
    fn links_and_special_files_are_refused_naming_them_and_regular_files_are_read() {
        let dir = hostile_folder();
        let path = |name: &str| dir.path().join(name);
        let cases = [
            ("link", "is a symbolic link"),
            ("fifo", "is a FIFO"),
            ("folder", "is a folder"),
        ];
        for (name, said) in cases {
            let read = read_text(&path(name), MAX_GOLDEN_BYTES).unwrap_err();
            let written = replace(&path(name), b"new").unwrap_err();
            for err in [read.to_string(), written.to_string()] {
                assert!(
                    err.contains(&path(name).display().to_string()) && err.contains(said),
                    "{name}: {err}"
                );
            }
        }
        for name in ["link", "fifo"] {
            let err = create_log(&path(name)).unwrap_err().to_string();
            assert!(err.contains(&path(name).display().to_string()), "{err}");
        }
        assert_eq!(
            std::fs::read_to_string(path("secret")).unwrap(),
            "sk-secret"
        );
        assert_eq!(
            read_text(&path("plain"), MAX_GOLDEN_BYTES)
                .unwrap()
                .as_deref(),
            Some("text")
        );
        assert_eq!(read_text(&path("none"), MAX_GOLDEN_BYTES).unwrap(), None);
        let err = read_text(&path("plain"), 2).unwrap_err().to_string();
        assert!(err.contains("more than a golden may be"), "{err}");
        replace(&path("plain"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(path("plain")).unwrap(), "new");
        std::io::Write::write_all(&mut create_log(&path("plain")).unwrap(), b"log").unwrap();
        assert_eq!(std::fs::read_to_string(path("plain")).unwrap(), "log");
    }
}
