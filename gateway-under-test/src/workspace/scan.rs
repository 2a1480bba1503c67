//! Taking a snapshot: walk each root in name order without following symlinks, skip tool and
//! build folders, and record size, hash and (for small text files) the text of every file.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};
use walkdir::WalkDir;

use super::{DiffUnavailable, FileSnapshot, WorkspaceLimits, WorkspaceRoot, WorkspaceSnapshot};

/// Folders that hold caches and tool state, not work products.
const EXCLUDED_DIRS: [&str; 11] = [
    ".git",
    ".hg",
    ".svn",
    ".cache",
    ".next",
    ".venv",
    "__pycache__",
    "build",
    "dist",
    "node_modules",
    ".mcp",
];

/// Extensions that are binary whatever their first bytes say.
const BINARY_EXTENSIONS: [&str; 29] = [
    "7z", "avif", "bmp", "class", "db", "dll", "dmg", "doc", "docx", "exe", "gif", "gz", "ico",
    "jar", "jpeg", "jpg", "mov", "mp3", "mp4", "o", "pdf", "png", "pyc", "so", "tar", "webp",
    "xls", "xlsx", "zip",
];

/// How a path segment may look like a secret.
enum SecretPattern {
    /// The whole segment.
    Exact(&'static str),
    /// The segment starts with it.
    Prefix(&'static str),
    /// The segment ends with it.
    Suffix(&'static str),
    /// The segment contains it.
    Contains(&'static str),
}

/// DeerFlow's sensitive-path patterns (`.env`, `.env.*`, `*.key`, `*.pem`, `*secret*`, …).
const SECRET_PATTERNS: [SecretPattern; 11] = [
    SecretPattern::Exact(".env"),
    SecretPattern::Prefix(".env."),
    SecretPattern::Contains("api_key"),
    SecretPattern::Contains("apikey"),
    SecretPattern::Suffix(".key"),
    SecretPattern::Suffix(".pem"),
    SecretPattern::Contains("credential"),
    SecretPattern::Contains("password"),
    SecretPattern::Contains("private_key"),
    SecretPattern::Contains("secret"),
    SecretPattern::Contains("token"),
];

/// How many leading bytes decide whether a file is binary.
const SAMPLE_BYTES: usize = 4096;

/// Whether any segment of `path` (case-insensitive) looks like a secret.
pub fn is_sensitive_path(path: &str) -> bool {
    path.to_lowercase()
        .split('/')
        .filter(|segment| !segment.is_empty())
        .any(|segment| {
            SECRET_PATTERNS.iter().any(|pattern| match pattern {
                SecretPattern::Exact(text) => segment == *text,
                SecretPattern::Prefix(text) => segment.starts_with(text),
                SecretPattern::Suffix(text) => segment.ends_with(text),
                SecretPattern::Contains(text) => segment.contains(text),
            })
        })
}

pub(super) fn scan(roots: &[WorkspaceRoot], limits: &WorkspaceLimits) -> WorkspaceSnapshot {
    let mut snapshot = WorkspaceSnapshot::default();
    let mut text_budget = limits.max_snapshot_text_bytes();
    for root in roots {
        if !root.host.is_dir() {
            continue;
        }
        let walk = WalkDir::new(&root.host)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|entry| {
                !(entry.depth() > 0
                    && entry.file_type().is_dir()
                    && EXCLUDED_DIRS.contains(&entry.file_name().to_string_lossy().as_ref()))
            });
        // Unreadable entries are skipped: a snapshot is best effort, never a run failure.
        for entry in walk.flatten() {
            let file_type = entry.file_type();
            if !(file_type.is_file() || file_type.is_symlink()) {
                continue;
            }
            if snapshot.files.len() >= limits.max_scanned_files {
                snapshot.truncated = true;
                return snapshot;
            }
            let Ok(relative) = entry.path().strip_prefix(&root.host) else {
                continue;
            };
            let relative = relative.to_string_lossy().replace('\\', "/");
            let virtual_path = format!("{}/{relative}", root.virtual_prefix);
            let file = if file_type.is_symlink() {
                symlink_snapshot(root, entry.path(), &virtual_path)
            } else {
                file_snapshot(root, entry.path(), &virtual_path, limits, &mut text_budget)
            };
            if let Some(file) = file {
                snapshot.files.insert(virtual_path, file);
            }
        }
    }
    snapshot
}

fn mtime_ns(metadata: &std::fs::Metadata) -> u128 {
    metadata
        .modified()
        .ok()
        .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_nanos())
}

fn symlink_snapshot(root: &WorkspaceRoot, host: &Path, virtual_path: &str) -> Option<FileSnapshot> {
    let metadata = std::fs::symlink_metadata(host).ok()?;
    Some(FileSnapshot {
        root: root.name,
        size: metadata.len(),
        mtime_ns: mtime_ns(&metadata),
        sha256: None,
        binary: false,
        sensitive: is_sensitive_path(virtual_path),
        text: None,
        unavailable: Some(DiffUnavailable::Symlink),
        symlink_target: std::fs::read_link(host)
            .ok()
            .map(|target| target.to_string_lossy().into_owned()),
        symlink: true,
    })
}

fn file_snapshot(
    root: &WorkspaceRoot,
    host: &Path,
    virtual_path: &str,
    limits: &WorkspaceLimits,
    text_budget: &mut u64,
) -> Option<FileSnapshot> {
    let metadata = std::fs::symlink_metadata(host).ok()?;
    let mut file = FileSnapshot {
        root: root.name,
        size: metadata.len(),
        mtime_ns: mtime_ns(&metadata),
        sha256: None,
        binary: false,
        sensitive: false,
        text: None,
        unavailable: None,
        symlink_target: None,
        symlink: false,
    };
    if is_sensitive_path(virtual_path) {
        file.sensitive = true;
        file.unavailable = Some(DiffUnavailable::Sensitive);
        return Some(file);
    }
    let binary_extension = host
        .extension()
        .map(|ext| ext.to_string_lossy().to_lowercase())
        .is_some_and(|ext| BINARY_EXTENSIONS.contains(&ext.as_str()));
    if file.size > limits.max_file_bytes_for_diff {
        file.binary = binary_extension || looks_binary(&read_sample(host)?);
        file.unavailable = Some(if file.binary {
            DiffUnavailable::Binary
        } else {
            DiffUnavailable::Large
        });
        return Some(file);
    }
    let bytes = std::fs::read(host).ok()?;
    file.sha256 = Some(hex::encode(Sha256::digest(&bytes)));
    let binary = binary_extension || looks_binary(&bytes[..bytes.len().min(SAMPLE_BYTES)]);
    match String::from_utf8(bytes) {
        Ok(text) if !binary => {
            if text.len() as u64 <= *text_budget {
                *text_budget -= text.len() as u64;
                file.text = Some(text);
            } else {
                file.unavailable = Some(DiffUnavailable::Truncated);
            }
        }
        _ => {
            file.binary = true;
            file.unavailable = Some(DiffUnavailable::Binary);
        }
    }
    Some(file)
}

fn read_sample(host: &Path) -> Option<Vec<u8>> {
    let mut sample = Vec::with_capacity(SAMPLE_BYTES);
    std::fs::File::open(host)
        .ok()?
        .take(SAMPLE_BYTES as u64)
        .read_to_end(&mut sample)
        .ok()?;
    Some(sample)
}

/// A NUL byte, or bytes that are not UTF-8 (a sample may end inside a character).
fn looks_binary(sample: &[u8]) -> bool {
    if sample.contains(&0) {
        return true;
    }
    match std::str::from_utf8(sample) {
        Ok(_) => false,
        Err(err) => err.error_len().is_some(),
    }
}
