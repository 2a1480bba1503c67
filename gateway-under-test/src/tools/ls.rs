//! The `ls` tool (`gateway-contract.md` §8.2): a directory's entries up to depth 2, as sorted
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

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::args::required_path;
use super::output::{describe_io_error, finish, run_blocking, truncate_head};
use super::paths::PathError;
use super::{SandboxPaths, Tool, ToolContext};
use crate::models::ToolSpec;

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
            parameters: json!({
                "type": "object",
                "properties": {
                    "description": {
                        "type": "string",
                        "description": "Explain why you are listing this directory in short words."
                    },
                    "path": {
                        "type": "string",
                        "description": "The **absolute** path to the directory to list, e.g. /mnt/user-data/outputs."
                    }
                },
                "required": ["description", "path"]
            }),
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
    let unexpected = |error: &io::Error| {
        format!(
            "Error: Unexpected error listing directory: {}",
            describe_io_error(error)
        )
    };

    let resolved = match paths.resolve_for_listing(path) {
        Ok(resolved) => resolved,
        Err(PathError::Denied) => return denied(),
        Err(PathError::Io(error)) if error.kind() == io::ErrorKind::PermissionDenied => {
            return denied();
        }
        Err(PathError::Io(error)) => return unexpected(&error),
    };
    match fs::metadata(&resolved.host) {
        Ok(metadata) if metadata.is_dir() => {}
        Ok(_) => return not_found(),
        Err(error) => {
            return match error.kind() {
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => not_found(),
                io::ErrorKind::PermissionDenied => denied(),
                _ => unexpected(&error),
            };
        }
    }

    let roots = paths.confinement_roots();
    let mut entries = Vec::new();
    if let Err(error) = walk(
        &roots,
        &resolved.host,
        &resolved.virtual_path,
        1,
        &mut entries,
    ) {
        return match error.kind() {
            io::ErrorKind::NotFound => not_found(),
            io::ErrorKind::PermissionDenied => denied(),
            _ => unexpected(&error),
        };
    }
    if entries.is_empty() {
        return "(empty)".to_string();
    }
    entries.sort();
    truncate_head(entries.join("\n"), MAX_LS_CHARS, TRUNCATION_HINT)
}

/// Appends the entries of `dir` (canonical host path; virtual path `virtual_dir`) at `depth`, and
/// those of its subfolders while `depth < MAX_DEPTH`. Only entries inside one of the canonical
/// `roots` are kept. Only the top directory's read error is reported.
fn walk(
    roots: &[PathBuf],
    dir: &Path,
    virtual_dir: &str,
    depth: usize,
    entries: &mut Vec<String>,
) -> io::Result<()> {
    let confined = |host: &Path| roots.iter().any(|root| host.starts_with(root));
    for entry in fs::read_dir(dir)? {
        // An entry that vanished or cannot be inspected mid-walk is skipped, not fatal.
        let Ok(entry) = entry else { continue };
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        let name = entry.file_name();
        let virtual_path = format!("{virtual_dir}/{}", name.to_string_lossy());
        // `dir` is canonical and this entry is not followed, so its path is canonical too (a
        // symlink's own location is; its target is checked below).
        let host = entry.path();
        if !confined(&host) {
            continue;
        }
        if file_type.is_symlink() {
            // Listed where it is, never followed: only when its target is inside the sandbox.
            let Ok(target) = fs::canonicalize(&host) else {
                continue;
            };
            if confined(&target) {
                entries.push(if target.is_dir() {
                    format!("{virtual_path}/")
                } else {
                    virtual_path
                });
            }
        } else if file_type.is_dir() {
            entries.push(format!("{virtual_path}/"));
            if depth < MAX_DEPTH {
                // An unreadable subfolder is still listed above; its contents are just omitted.
                let _ = walk(roots, &host, &virtual_path, depth + 1, entries);
            }
        } else {
            entries.push(virtual_path);
        }
    }
    Ok(())
}
