//! The sandbox's virtual-path mapping (`docs/gateway-contract.md` §8.1): where a thread's
//! `/mnt/user-data/…` folders live on the host, how a virtual path the model supplies becomes a
//! confined host path, and how paths inside file contents are rewritten in both directions.
//!
//! **Mapping** uses the longest matching root on whole segments, so `/mnt/user-data/outputsX`
//! maps under the common parent `/mnt/user-data`, not under `outputs`.
//!
//! **Confinement** (§8.1: "inside one of the three roots") is enforced by the operating system,
//! not just lexically: the target is resolved beneath the opened `user-data` folder (see
//! `beneath.rs`; `openat2(RESOLVE_BENEATH)` on Linux), every symlink on the way included, and the
//! result must lie inside `workspace`, `uploads` or `outputs` as they are inside `user-data`. So a
//! symlink inside `outputs` that points elsewhere on the host is refused for reading, listing and
//! writing alike, so is a root replaced by such a symlink, and so is anything directly in the
//! common parent (`/mnt/user-data/outputsX/a`, `/mnt/user-data/x.txt`). The one exception is
//! `ls /mnt/user-data` itself, which lists the three roots (see
//! [`SandboxPaths::resolve_for_listing`]). The tools open what was resolved beneath the same
//! folder, so a symlink swapped in between cannot lead them out either.

use std::io;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::SandboxPaths;

/// The virtual root of the thread's user data, as the model sees it.
pub const VIRTUAL_USER_DATA: &str = "/mnt/user-data";

/// Why a virtual path could not be resolved.
#[derive(Debug, thiserror::Error)]
pub enum PathError {
    /// The path is outside the sandbox: not absolute, not under a mapped root, has a `..`
    /// segment, or resolves (through a symlink) outside the thread's folders. Each tool turns
    /// this into its `Permission denied` text.
    #[error("permission denied")]
    Denied,
    /// The path names a FIFO, a socket or a device: the tools only read and write regular files
    /// (opening a FIFO would block).
    #[error("not a regular file")]
    NotRegularFile,
    /// A file to be written has more than one hard link; another link may be outside the sandbox.
    #[error("the file has other hard links")]
    HardLinked,
    /// The filesystem failed while the path was being resolved.
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// A virtual path mapped onto the host and checked for confinement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedPath {
    /// The host path: `user_data` joined with [`ResolvedPath::relative`]. Always inside one of
    /// the thread's roots (or `user_data` itself, for listing).
    pub host: PathBuf,
    /// The path relative to `user_data`, resolved beneath it: symlinks of the existing part
    /// resolved, the missing tail appended; `.` is `user_data` itself.
    pub relative: PathBuf,
    /// The virtual path in normal form: no empty or `.` segments, no trailing `/`.
    pub virtual_path: String,
}

impl SandboxPaths {
    /// `<home>/users/<user_id>/threads/<thread_id>/user-data/…`, or
    /// `<home>/threads/<thread_id>/user-data/…` without a user.
    ///
    /// A relative `home` is made absolute against the current directory, because `thread_data`
    /// must carry absolute host paths. The ids are used as given: callers pass ids that were
    /// already validated (thread ids by the threads routes, user ids by the auth layer).
    pub fn for_thread(home: &Path, user_id: Option<&str>, thread_id: &str) -> SandboxPaths {
        // `absolute` only fails for an empty path or an unreadable current directory; falling
        // back to the path as given keeps this infallible, as its signature requires.
        let home = std::path::absolute(home).unwrap_or_else(|_| home.to_path_buf());
        let thread_root = match user_id {
            Some(user_id) => home.join("users").join(user_id).join("threads"),
            None => home.join("threads"),
        }
        .join(thread_id);
        let user_data = thread_root.join("user-data");
        SandboxPaths {
            workspace: user_data.join("workspace"),
            uploads: user_data.join("uploads"),
            outputs: user_data.join("outputs"),
            user_data,
        }
    }

    /// `{"workspace_path", "uploads_path", "outputs_path"}` with host paths: the `thread_data`
    /// state channel.
    pub fn thread_data(&self) -> Value {
        json!({
            "workspace_path": self.workspace.to_string_lossy(),
            "uploads_path": self.uploads.to_string_lossy(),
            "outputs_path": self.outputs.to_string_lossy(),
        })
    }

    /// Maps a virtual path onto a confined host path. Blocking (it touches the filesystem): call
    /// it from a blocking context.
    ///
    /// Rules: the path must be absolute; empty and `.` segments are ignored; any `..` segment is
    /// refused; the longest root prefix on whole segments wins; the result, resolved beneath the
    /// `user-data` folder with the symlinks of its existing part followed, must lie inside
    /// `workspace`, `uploads` or `outputs`. Anything else, including `/mnt/skills/…` (read-only
    /// and not mounted here), the common parent's own entries and a path that leads out of
    /// `user-data`, is [`PathError::Denied`]. A missing `user-data` folder is
    /// [`PathError::Io`] (not found).
    pub fn resolve(&self, virtual_path: &str) -> Result<ResolvedPath, PathError> {
        Ok(self.confine(virtual_path, false, false)?.resolved)
    }

    /// [`SandboxPaths::resolve`], but also accepting the common parent `/mnt/user-data` itself,
    /// for listing: `ls` then shows only the entries that lie inside the three roots.
    pub fn resolve_for_listing(&self, virtual_path: &str) -> Result<ResolvedPath, PathError> {
        Ok(self.confine(virtual_path, true, false)?.resolved)
    }

    /// Rewrites virtual paths inside text to host paths (what `write_file` stores).
    pub(crate) fn virtual_to_host_text(&self, text: &str) -> String {
        let pairs: Vec<(String, String)> = self
            .roots()
            .iter()
            .map(|(virtual_root, host)| (virtual_root.clone(), host.to_string_lossy().into_owned()))
            .collect();
        replace_path_prefixes(text, &pairs)
    }

    /// Rewrites host paths inside text back to virtual paths (what `read_file` returns), so that
    /// host paths never reach the model.
    pub(crate) fn host_to_virtual_text(&self, text: &str) -> String {
        let pairs: Vec<(String, String)> = self
            .roots()
            .iter()
            .map(|(virtual_root, host)| (host.to_string_lossy().into_owned(), virtual_root.clone()))
            .collect();
        replace_path_prefixes(text, &pairs)
    }

    /// The four mapped roots as (virtual, host), the three leaves before their common parent so
    /// that a first match is the longest.
    fn roots(&self) -> [(String, &Path); 4] {
        [
            (format!("{VIRTUAL_USER_DATA}/workspace"), &self.workspace),
            (format!("{VIRTUAL_USER_DATA}/uploads"), &self.uploads),
            (format!("{VIRTUAL_USER_DATA}/outputs"), &self.outputs),
            (VIRTUAL_USER_DATA.to_string(), &self.user_data),
        ]
    }

    /// The purely lexical half of [`SandboxPaths::resolve`]: the path relative to `user_data`
    /// (symlinks not yet resolved; empty for `user_data` itself) and the normal form of the
    /// virtual path.
    pub(super) fn map_lexically(&self, virtual_path: &str) -> Result<(PathBuf, String), PathError> {
        let (host, normal) = self.map_to_host_lexically(virtual_path)?;
        let relative = host
            .strip_prefix(&self.user_data)
            .map_err(|_| PathError::Denied)?;
        Ok((relative.to_path_buf(), normal))
    }

    /// The host path (symlinks not yet resolved) and the normal form of the virtual path.
    fn map_to_host_lexically(&self, virtual_path: &str) -> Result<(PathBuf, String), PathError> {
        // A NUL byte cannot name a file and would make the OS calls fail oddly: refuse it here.
        if !virtual_path.starts_with('/') || virtual_path.contains('\0') {
            return Err(PathError::Denied);
        }
        let segments: Vec<&str> = virtual_path
            .split('/')
            .filter(|segment| !segment.is_empty() && *segment != ".")
            .collect();
        if segments.contains(&"..") {
            return Err(PathError::Denied);
        }
        let normal = format!("/{}", segments.join("/"));
        for (virtual_root, host_root) in self.roots() {
            let root_segments: Vec<&str> =
                virtual_root.split('/').filter(|s| !s.is_empty()).collect();
            if let Some(rest) = segments.strip_prefix(root_segments.as_slice()) {
                let mut host = host_root.to_path_buf();
                host.extend(rest);
                return Ok((host, normal));
            }
        }
        Err(PathError::Denied)
    }
}

/// Replaces every occurrence of a `from` prefix that ends on a path boundary with its `to`.
/// At each position the first matching pair wins, so pairs go longest-first.
fn replace_path_prefixes(text: &str, pairs: &[(String, String)]) -> String {
    let pairs: Vec<&(String, String)> = pairs.iter().filter(|(from, _)| !from.is_empty()).collect();
    // The next occurrence of each `from` at or after `position`, cached so that a long text is
    // scanned once per pair rather than once per match.
    let mut next: Vec<Option<usize>> = pairs
        .iter()
        .map(|(from, _)| text.find(from.as_str()))
        .collect();
    let mut result = String::with_capacity(text.len());
    let mut position = 0;
    loop {
        for ((from, _), cached) in pairs.iter().zip(next.iter_mut()) {
            if cached.is_some_and(|at| at < position) {
                *cached = text[position..].find(from.as_str()).map(|at| at + position);
            }
        }
        let Some(start) = next.iter().flatten().min().copied() else {
            result.push_str(&text[position..]);
            return result;
        };
        result.push_str(&text[position..start]);
        let candidate = &text[start..];
        let replaced = pairs.iter().find_map(|(from, to)| {
            let after = candidate.strip_prefix(from.as_str())?;
            ends_on_boundary(after).then_some((to, from.len()))
        });
        match replaced {
            Some((to, consumed)) => {
                result.push_str(to);
                position = start + consumed;
            }
            None => {
                // Not on a boundary (`/mnt/user-dataX`): keep one character and search on.
                let step = candidate.chars().next().map_or(1, char::len_utf8);
                result.push_str(&candidate[..step]);
                position = start + step;
            }
        }
    }
}

/// Whether a path prefix followed by `after` ends a path segment: at the end of the text, before
/// a `/`, or before a character that cannot continue a file name. A `.` continues the name only
/// when a name character follows it, so `…/outputs.` at the end of a sentence still matches.
fn ends_on_boundary(after: &str) -> bool {
    fn is_name_char(c: char) -> bool {
        c.is_alphanumeric() || c == '_' || c == '-'
    }
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        Some('.') => !chars.next().is_some_and(|c| is_name_char(c) || c == '.'),
        Some(c) => !is_name_char(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths() -> SandboxPaths {
        SandboxPaths::for_thread(Path::new("/home/df"), Some("u1"), "t1")
    }

    #[test]
    fn for_thread_builds_both_layouts() {
        let with_user = paths();
        assert_eq!(
            with_user.user_data,
            Path::new("/home/df/users/u1/threads/t1/user-data")
        );
        assert_eq!(
            with_user.outputs,
            Path::new("/home/df/users/u1/threads/t1/user-data/outputs")
        );
        let without_user = SandboxPaths::for_thread(Path::new("/home/df"), None, "t1");
        assert_eq!(
            without_user.workspace,
            Path::new("/home/df/threads/t1/user-data/workspace")
        );
        assert_eq!(
            without_user.uploads,
            Path::new("/home/df/threads/t1/user-data/uploads")
        );
    }

    #[test]
    fn for_thread_makes_a_relative_home_absolute() {
        let paths = SandboxPaths::for_thread(Path::new(".deer-flow"), None, "t1");
        assert!(paths.user_data.is_absolute(), "{:?}", paths.user_data);
    }

    #[test]
    fn thread_data_has_the_three_host_paths_in_order() {
        let data = paths().thread_data();
        assert_eq!(
            serde_json::to_string(&data).unwrap_or_default(),
            concat!(
                r#"{"workspace_path":"/home/df/users/u1/threads/t1/user-data/workspace","#,
                r#""uploads_path":"/home/df/users/u1/threads/t1/user-data/uploads","#,
                r#""outputs_path":"/home/df/users/u1/threads/t1/user-data/outputs"}"#
            )
        );
    }

    #[test]
    fn lexical_mapping_table() {
        let base = "/home/df/users/u1/threads/t1/user-data";
        let cases: &[(&str, Option<(&str, &str)>)] = &[
            (
                "/mnt/user-data/outputs/note.txt",
                Some(("outputs/note.txt", "/mnt/user-data/outputs/note.txt")),
            ),
            (
                "/mnt/user-data/workspace",
                Some(("workspace", "/mnt/user-data/workspace")),
            ),
            (
                "/mnt/user-data/uploads/",
                Some(("uploads", "/mnt/user-data/uploads")),
            ),
            ("/mnt/user-data", Some(("", "/mnt/user-data"))),
            (
                "//mnt/./user-data//outputs/a",
                Some(("outputs/a", "/mnt/user-data/outputs/a")),
            ),
            // Whole segments only: `outputsX` maps under the common parent (and `resolve` then
            // refuses it: it is in none of the three roots).
            (
                "/mnt/user-data/outputsX/a",
                Some(("outputsX/a", "/mnt/user-data/outputsX/a")),
            ),
            ("/mnt/user-dataX/a", None),
            ("/mnt/user-data/outputs/../../x", None),
            ("/mnt/user-data/..", None),
            ("/mnt/user-data/a/../b", None),
            ("/etc/passwd", None),
            ("note.txt", None),
            ("mnt/user-data/outputs/a", None),
            ("/mnt/skills/public/x", None),
            ("/mnt", None),
            ("/", None),
            ("", None),
            ("/mnt/user-data/a\0b", None),
        ];
        let paths = paths();
        for (input, expected) in cases {
            let got = paths.map_to_host_lexically(input).ok();
            let expected = expected.map(|(host_rest, normal)| {
                let host = if host_rest.is_empty() {
                    PathBuf::from(base)
                } else {
                    Path::new(base).join(host_rest)
                };
                (host, normal.to_string())
            });
            assert_eq!(got, expected, "input {input:?}");
        }
    }

    #[test]
    fn content_rewriting_table() {
        let paths = paths();
        let host = "/home/df/users/u1/threads/t1/user-data";
        let cases: &[(&str, String)] = &[
            ("no paths here", "no paths here".into()),
            (
                "see /mnt/user-data/outputs/a.txt and /mnt/user-data/workspace",
                format!("see {host}/outputs/a.txt and {host}/workspace"),
            ),
            ("/mnt/user-data", host.to_string()),
            ("at /mnt/user-data/uploads.", format!("at {host}/uploads.")),
            ("/mnt/user-data/outputsX/y", format!("{host}/outputsX/y")),
            ("/mnt/user-dataX/y", "/mnt/user-dataX/y".into()),
            ("/mnt/user-data.bak", "/mnt/user-data.bak".into()),
            ("\"/mnt/user-data/outputs\"", format!("\"{host}/outputs\"")),
            ("ünïcödé /mnt/user-data é", format!("ünïcödé {host} é")),
        ];
        for (text, expected) in cases {
            let written = paths.virtual_to_host_text(text);
            assert_eq!(&written, expected, "virtual to host of {text:?}");
            assert_eq!(
                paths.host_to_virtual_text(&written),
                *text,
                "round trip of {text:?}"
            );
        }
    }
}
