//! The `ls` tool (`docs/gateway-contract.md` §8.2): a directory's entries up to depth 2, as sorted
//! virtual paths, directories ending with `/`.
//!
//! Choices where the contract is open:
//!
//! - The listed directory itself is **not** included; an empty directory gives `(empty)`.
//! - Sorting is plain string order of the final lines (trailing `/` included), as DeerFlow's
//!   `sorted(result)` does.
//! - A path that exists but is not a directory gives `Error: Directory not found: <path>`.
//! - Symlinks are listed where they are, never followed into: one whose target lies inside the
//!   thread's folders is shown (with `/` when the target is a directory); one that points outside
//!   or nowhere is left out, so the listing reveals nothing beyond the sandbox.
//! - `ls /mnt/user-data` (the common parent) is allowed and shows the three roots and their
//!   children; anything else directly in the parent is outside the sandbox (§8.1) and left out.
//! - A subfolder that cannot be read is shown but not descended into.
//! - Truncation keeps exactly the first 20000 characters; the marker is not counted in them.

use std::io;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use serde_json::Value;

use super::args::{file_tool_parameters, required_path};
use super::beneath::{Confined, ROOT_NAMES};
use super::output::{describe_io_error, finish, run_blocking, truncate_head};
use super::paths::PathError;
use super::{SandboxPaths, Tool, ToolContext};
use crate::models::ToolSpec;
use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

/// Listings longer than this many characters are truncated.
const MAX_LS_CHARS: usize = 20_000;
/// How deep the listing goes: children and grandchildren.
const MAX_DEPTH: usize = 2;
const TRUNCATION_HINT: &str = "Use a more specific path to see fewer results";

/// `ls`: lists a sandbox directory two levels deep.
#[derive(Debug, Clone, Copy, Default)]
pub struct LsTool;

#[async_trait]
impl Tool for LsTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "ls".to_string(),
            description: "List the contents of a directory up to 2 levels deep. Returns one \
                absolute path per line, sorted; directories end with `/`. Files live under \
                /mnt/user-data: workspace/ (scratch work), uploads/ (the user's files) and \
                outputs/ (deliverables)."
                .to_string(),
            parameters: file_tool_parameters(
                "Explain why you are listing this directory in short words.",
                "The **absolute** path to the directory to list, e.g. /mnt/user-data/outputs.",
                Vec::new(),
                &[],
            ),
        }
    }

    async fn call(&self, args: &Value, context: ToolContext<'_>) -> String {
        let path = match required_path(args) {
            Ok(path) => path.to_string(),
            Err(error) => return error,
        };
        let paths = context.paths.clone();
        let text = run_blocking(
            move || list(&paths, &path),
            |detail| format!("Error: Unexpected error listing directory: {detail}"),
        )
        .await;
        finish(text)
    }
}

/// The whole tool, blocking: resolves `path`, walks it and formats the result.
fn list(paths: &SandboxPaths, path: &str) -> String {
    let denied = || format!("Error: Permission denied: {path}");
    let not_found = || format!("Error: Directory not found: {path}");
    let from_io = |error: &io::Error| match error.kind() {
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => not_found(),
        io::ErrorKind::PermissionDenied => denied(),
        _ => format!(
            "Error: Unexpected error listing directory: {}",
            describe_io_error(error)
        ),
    };
    let refused = |error: PathError| match error {
        PathError::Io(error) => from_io(&error),
        PathError::Denied | PathError::NotRegularFile | PathError::HardLinked => denied(),
    };

    let confined = match paths.confine(path, true, false) {
        Ok(confined) => confined,
        Err(error) => return refused(error),
    };
    let dir = match confined.open_dir() {
        Ok(dir) => dir,
        Err(error) => return refused(error),
    };
    let mut entries = Vec::new();
    let top = Folder {
        dir: &dir,
        relative: &confined.resolved.relative,
        virtual_path: &confined.resolved.virtual_path,
    };
    if let Err(error) = walk(&confined, &top, 1, &mut entries) {
        return from_io(&error);
    }
    if entries.is_empty() {
        return "(empty)".to_string();
    }
    entries.sort();
    truncate_head(entries.join("\n"), MAX_LS_CHARS, TRUNCATION_HINT)
}

/// A folder being listed: opened beneath `user-data`, with its paths.
struct Folder<'a> {
    /// The opened folder.
    dir: &'a Dir,
    /// Its path relative to `user-data` (`.` for `user-data` itself).
    relative: &'a Path,
    /// Its virtual path.
    virtual_path: &'a str,
}

/// Appends the entries of `folder` at `depth`, and those of its subfolders while
/// `depth < MAX_DEPTH`. Only entries inside one of the three roots are kept. Only the top
/// folder's read error is reported.
fn walk(
    confined: &Confined,
    folder: &Folder<'_>,
    depth: usize,
    entries: &mut Vec<String>,
) -> io::Result<()> {
    for entry in folder.dir.entries()? {
        // An entry that vanished or cannot be inspected mid-walk is skipped, not fatal.
        let Ok(entry) = entry else { continue };
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let virtual_path = format!("{}/{}", folder.virtual_path, name.to_string_lossy());
        // The folder is resolved and this entry is not followed, so its path is resolved too (a
        // symlink's own location is; its target is checked below).
        let relative = if folder.relative == Path::new(".") {
            PathBuf::from(&name)
        } else {
            folder.relative.join(&name)
        };
        let in_a_root = matches!(
            relative.components().next(),
            Some(Component::Normal(first)) if ROOT_NAMES.iter().any(|root| first == *root)
        );
        if !in_a_root {
            continue;
        }
        if file_type.is_symlink() {
            // Listed where it is, never followed: only when its target is inside the sandbox.
            match confined.listed_target(&relative) {
                Some(true) => entries.push(format!("{virtual_path}/")),
                Some(false) => entries.push(virtual_path),
                None => {}
            }
        } else if file_type.is_dir() {
            entries.push(format!("{virtual_path}/"));
            if depth < MAX_DEPTH
                && let Ok(dir) = folder.dir.open_dir_nofollow(&name)
            {
                // An unreadable subfolder is still listed above; its contents are just omitted.
                let child = Folder {
                    dir: &dir,
                    relative: &relative,
                    virtual_path: &virtual_path,
                };
                let _ = walk(confined, &child, depth + 1, entries);
            }
        } else {
            entries.push(virtual_path);
        }
    }
    Ok(())
}
