//! The file tools' filesystem access, confined by the operating system: every tool path is
//! resolved and opened **beneath** the thread's `user-data` folder through [`cap_std`], which on
//! Linux uses `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (and checks each component
//! itself where `openat2` is missing). No path a tool touches can leave that folder, whatever
//! symlinks are planted in it or swapped in between two steps.
//!
//! On top of that:
//!
//! - **Absolute symlinks** are refused, even ones whose target is inside the sandbox: nothing
//!   resolves from `/` beneath a folder. Relative symlinks that stay inside work.
//! - **The three roots.** A resolved path must lie in `workspace`, `uploads` or `outputs` as they
//!   are *inside* `user-data`. A root that was replaced by a symlink leading out of `user-data` is
//!   refused like any escaping link; one pointing at another root resolves into that root.
//! - **`user-data` itself** is opened without following a symlink in its place.
//! - **Regular files only.** FIFOs, sockets and devices are refused before they are opened, and
//!   every open uses `O_NONBLOCK` and is checked again on the open descriptor, so a file swapped
//!   for a FIFO in between cannot block a worker thread either.
//! - **Hard links.** A file with more than one hard link is refused for writing: the other link
//!   may be outside the sandbox, and writing through it would change that file.
//! - **The last component** of a path is opened without following symlinks: paths are resolved
//!   first, so a symlink there can only be one swapped in since.
//! - **Private.** Folders are created `0700` and files `0600` (before the umask): the sandbox
//!   holds the user's files, which other local users have no business reading.

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, DirBuilder, File, OpenOptions};

use super::SandboxPaths;
use super::paths::{PathError, ResolvedPath};

/// The names of the three roots inside `user-data`.
pub(super) const ROOT_NAMES: [&str; 3] = ["workspace", "uploads", "outputs"];

/// A virtual path resolved beneath the opened `user-data` folder.
#[derive(Debug)]
pub(crate) struct Confined {
    /// The thread's `user-data` folder, opened.
    pub(crate) user_data: Dir,
    /// The path, with the folder it lives in.
    pub(crate) resolved: ResolvedPath,
}

/// What a file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reading.
    Read,
    /// Replacing the content (the file is created when missing, truncated only after the
    /// checks).
    Overwrite,
    /// Adding to the end (the file is created when missing).
    Append,
}

impl SandboxPaths {
    /// Creates the thread's folder, `user-data` in it and the three roots. Inside the thread
    /// folder nothing is followed: an entry already there (even a symlink) is left as it is, for
    /// the tools to refuse.
    pub fn create_dirs(&self) -> io::Result<()> {
        let (Some(thread_root), Some(name)) = (self.user_data.parent(), self.user_data.file_name())
        else {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        };
        private_dir_builder_std().create(thread_root)?;
        let thread_root = Dir::open_ambient_dir(thread_root, cap_std::ambient_authority())?;
        create_if_missing(&thread_root, Path::new(name))?;
        let user_data = thread_root.open_dir_nofollow(name)?;
        for root in ROOT_NAMES {
            create_if_missing(&user_data, Path::new(root))?;
        }
        Ok(())
    }

    /// Opens the thread's `user-data` folder without following a symlink in its place. With
    /// `create`, the sandbox folders are created first when `user-data` is missing.
    pub(crate) fn open_user_data(&self, create: bool) -> Result<Dir, PathError> {
        match self.open_user_data_once() {
            Err(PathError::Io(error)) if create && error.kind() == io::ErrorKind::NotFound => {
                self.create_dirs()?;
                self.open_user_data_once()
            }
            other => other,
        }
    }

    fn open_user_data_once(&self) -> Result<Dir, PathError> {
        let (Some(thread_root), Some(name)) = (self.user_data.parent(), self.user_data.file_name())
        else {
            return Err(PathError::Denied);
        };
        // The folders above `user-data` belong to the gateway, not to the sandbox: they are
        // opened as configured, symlinks included.
        let thread_root = Dir::open_ambient_dir(thread_root, cap_std::ambient_authority())?;
        thread_root
            .open_dir_nofollow(name)
            .map_err(|error| refusal_or_io(error, PathError::Denied))
    }

    /// Maps `virtual_path`, opens `user-data` and resolves the path beneath it (see
    /// [`SandboxPaths::resolve`]). `allow_user_data_root` also accepts `/mnt/user-data` itself
    /// (for listing); `create` creates the sandbox folders when `user-data` is missing.
    pub(crate) fn confine(
        &self,
        virtual_path: &str,
        allow_user_data_root: bool,
        create: bool,
    ) -> Result<Confined, PathError> {
        let (lexical, virtual_path) = self.map_lexically(virtual_path)?;
        let user_data = self.open_user_data(create)?;
        let relative = canonical_beneath(&user_data, &lexical)?;
        let allowed = match relative.components().next() {
            Some(Component::Normal(first)) => ROOT_NAMES.iter().any(|root| first == *root),
            Some(Component::CurDir) | None => allow_user_data_root,
            _ => false,
        };
        if !allowed {
            return Err(PathError::Denied);
        }
        let host = if relative == Path::new(".") {
            self.user_data.clone()
        } else {
            self.user_data.join(&relative)
        };
        Ok(Confined {
            user_data,
            resolved: ResolvedPath {
                host,
                relative,
                virtual_path,
            },
        })
    }
}

impl Confined {
    /// Opens the file for `access`: a regular file only, with one hard link when writing.
    /// Directories give `IsADirectory`; missing files `NotFound` when reading.
    pub(crate) fn open_file(&self, access: Access) -> Result<File, PathError> {
        let relative = &self.resolved.relative;
        // Refused before opening, so a FIFO or a device is never even opened in the normal case.
        match self.user_data.symlink_metadata(relative) {
            Ok(metadata) => check_kind(&metadata, access)?,
            Err(error) if access != Access::Read && error.kind() == io::ErrorKind::NotFound => {}
            Err(error) => return Err(error.into()),
        }
        if access != Access::Read
            && let Some(parent) = relative.parent().filter(|p| !p.as_os_str().is_empty())
        {
            self.user_data
                .create_dir_with(parent, private_dir_builder().recursive(true))?;
        }
        let mut options = OpenOptions::new();
        match access {
            Access::Read => options.read(true),
            Access::Overwrite => options.write(true).create(true),
            Access::Append => options.append(true).create(true),
        };
        options.follow(FollowSymlinks::No).nonblock(true);
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::mode(&mut options, PRIVATE_FILE_MODE);
        let file = self
            .user_data
            .open_with(relative, &options)
            .map_err(|error| refusal_or_io(error, PathError::Denied))?;
        // Checked again on the descriptor: what was opened is what counts.
        check_kind(&file.metadata()?, access)?;
        Ok(file)
    }

    /// Opens the folder for listing.
    pub(crate) fn open_dir(&self) -> Result<Dir, PathError> {
        self.user_data
            .open_dir_nofollow(&self.resolved.relative)
            .map_err(|error| refusal_or_io(error, PathError::Denied))
    }

    /// Whether `relative` (a path beneath `user-data`, as listed) resolves, symlinks followed
    /// beneath `user-data`, into one of the three roots; and if so whether it is a directory.
    /// `None` when it resolves nowhere or outside the roots.
    pub(crate) fn listed_target(&self, relative: &Path) -> Option<bool> {
        let target = self.user_data.canonicalize(relative).ok()?;
        let confined = matches!(
            target.components().next(),
            Some(Component::Normal(first)) if ROOT_NAMES.iter().any(|root| first == *root)
        );
        confined.then(|| self.user_data.is_dir(&target))
    }
}

/// The mode of the files the tools create.
#[cfg(unix)]
const PRIVATE_FILE_MODE: u32 = 0o600;

/// The mode of the folders the tools create.
#[cfg(unix)]
const PRIVATE_DIR_MODE: u32 = 0o700;

/// A builder of private folders beneath a [`Dir`] (not recursive).
fn private_dir_builder() -> DirBuilder {
    let mut builder = DirBuilder::new();
    #[cfg(unix)]
    cap_std::fs::DirBuilderExt::mode(&mut builder, PRIVATE_DIR_MODE);
    builder
}

/// A builder of private folders on the host path, creating missing parents.
fn private_dir_builder_std() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, PRIVATE_DIR_MODE);
    builder
}

/// Creates the folder `name` in `dir` unless something is there already.
fn create_if_missing(dir: &Dir, name: &Path) -> io::Result<()> {
    match dir.create_dir_with(name, &private_dir_builder()) {
        Err(error) if error.kind() != io::ErrorKind::AlreadyExists => Err(error),
        _ => Ok(()),
    }
}

/// Refuses what the tools must not touch as `access`.
fn check_kind(metadata: &cap_std::fs::Metadata, access: Access) -> Result<(), PathError> {
    if metadata.is_dir() {
        return Err(io::Error::from(io::ErrorKind::IsADirectory).into());
    }
    if !metadata.is_file() {
        return Err(PathError::NotRegularFile);
    }
    #[cfg(unix)]
    if access != Access::Read && cap_std::fs::MetadataExt::nlink(metadata) > 1 {
        return Err(PathError::HardLinked);
    }
    Ok(())
}

/// `refusal` for a refusal (the sandbox's or the OS's: an escape attempt, `EACCES`, a symlink
/// where none may be), the I/O error otherwise.
fn refusal_or_io(error: io::Error, refusal: PathError) -> PathError {
    if error.kind() == io::ErrorKind::PermissionDenied || is_symlink_loop(&error) {
        refusal
    } else {
        PathError::Io(error)
    }
}

/// `ELOOP`: what opening a symlink without following it, or a symlink loop, gives.
fn is_symlink_loop(error: &io::Error) -> bool {
    #[cfg(unix)]
    {
        error.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = error;
        false
    }
}

/// Canonicalises the deepest existing ancestor of `lexical` (a path relative to `user_data`,
/// free of `..`) beneath `user_data` and appends the part that does not exist yet. The result
/// is relative to `user_data`; `.` is the folder itself.
///
/// An existing entry that cannot be resolved beneath (an escaping or dangling symlink, a loop, a
/// folder we may not search) is refused: following a dangling symlink on write would create its
/// target, wherever it points.
fn canonical_beneath(user_data: &Dir, lexical: &Path) -> Result<PathBuf, PathError> {
    let mut existing = lexical.to_path_buf();
    let mut missing: Vec<OsString> = Vec::new();
    loop {
        let probe = if existing.as_os_str().is_empty() {
            Path::new(".")
        } else {
            existing.as_path()
        };
        match user_data.canonicalize(probe) {
            Ok(mut canonical) => {
                if canonical == Path::new(".") && !missing.is_empty() {
                    canonical = PathBuf::new();
                }
                canonical.extend(missing.iter().rev());
                return Ok(canonical);
            }
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                // Something is there but does not resolve: a dangling symlink.
                if user_data.symlink_metadata(probe).is_ok() {
                    return Err(PathError::Denied);
                }
                match (existing.file_name(), existing.parent()) {
                    (Some(name), Some(_)) => {
                        missing.push(name.to_os_string());
                        existing.pop();
                    }
                    _ => return Err(PathError::Io(error)),
                }
            }
            Err(_) => return Err(PathError::Denied),
        }
    }
}
