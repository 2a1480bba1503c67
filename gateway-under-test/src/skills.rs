//! The skills `GET /api/skills` lists, read from disk once and again only when something
//! changed (docs/gateway-contract.md §4.9).
//!
//! Listing reads up to 500 `SKILL.md` files per category; a client that polls the route would
//! make the gateway re-read all of them on every request. The catalog keeps the last listing
//! beside a fingerprint of what it read (each folder's `SKILL.md` and `extensions_config.json`:
//! inode, size, modification and change times) and answers from it while a fresh fingerprint,
//! which costs directory reads and `lstat`s but no file reads, is the same. Each gateway has
//! its own catalog: nothing is shared between gateways in one process.
//!
//! File times are coarse (a kernel tick), so a file rewritten with the same length in the tick
//! it was listed in would look unchanged. As git does with its index, a listing that saw a file
//! modified less than [`SETTLE`] before it is not kept: the next request reads again.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use serde_json::Map;

/// Skill folders read per category.
const MAX_SKILLS: usize = 500;
/// Bytes of one `SKILL.md` read.
const MAX_SKILL_FILE_BYTES: u64 = 64 * 1024;
/// Bytes of `extensions_config.json` read; a larger file is ignored.
const MAX_EXTENSIONS_BYTES: u64 = 1024 * 1024;
/// How long before a listing a file must have been modified for the listing to be kept.
const SETTLE: Duration = Duration::from_secs(1);
/// The two categories, in the order the listing gives them.
const CATEGORIES: [&str; 2] = ["public", "custom"];

/// The skills folder of one gateway and its last listing.
#[derive(Debug)]
pub struct SkillsCatalog {
    root: PathBuf,
    extensions: PathBuf,
    last: Mutex<Option<(Fingerprint, Arc<Vec<Value>>)>>,
}

/// Whether [`SkillsCatalog::list`] read the files or answered from its last listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Listing {
    /// Something changed (or nothing was read yet): the `SKILL.md` files were read.
    Read,
    /// Nothing changed since the last read.
    Unchanged,
}

/// What a listing depends on: for each file it would read, its path and metadata (`None` when
/// it is missing or not a regular file).
type Fingerprint = Vec<(PathBuf, Option<FileStamp>)>;

/// The metadata that changes when a file is replaced or written.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    inode: u64,
    len: u64,
    /// Nanoseconds since the epoch.
    modified: i128,
    changed: i128,
}

impl SkillsCatalog {
    /// A catalog of `<root>/{public,custom}/*/SKILL.md`, switched by `extensions`
    /// (`<home>/extensions_config.json`).
    pub fn new(root: PathBuf, extensions: PathBuf) -> SkillsCatalog {
        SkillsCatalog {
            root,
            extensions,
            last: Mutex::new(None),
        }
    }

    /// The skills, sorted by category then folder: every `SKILL.md`'s front matter, `enabled`
    /// from `extensions_config.json` (`{"skills": {"<name>": {"enabled": bool}}}`, default
    /// true); custom skills are editable, public ones are not. Blocking: call it off the
    /// runtime's workers.
    pub fn list(&self) -> (Arc<Vec<Value>>, Listing) {
        let settled_before = SystemTime::now()
            .checked_sub(SETTLE)
            .and_then(|time| time.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos() as i128);
        let fingerprint = self.fingerprint();
        // A poisoned lock only means another listing panicked mid-way; the value is replaced
        // whole, so it is never half-written and can still be read.
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some((seen, skills)) = last.as_ref()
            && *seen == fingerprint
        {
            return (skills.clone(), Listing::Unchanged);
        }
        let skills = Arc::new(self.read());
        let settled = fingerprint.iter().all(|(_, stamp)| {
            stamp
                .as_ref()
                .is_none_or(|stamp| stamp.modified < settled_before)
        });
        *last = settled.then(|| (fingerprint, skills.clone()));
        (skills, Listing::Read)
    }

    /// The skill folders of one category, sorted, symlinked folders left out (`file_type` does
    /// not follow symlinks: a linked folder is not a skill folder).
    fn folders(&self, category: &str) -> Vec<PathBuf> {
        let Ok(entries) = std::fs::read_dir(self.root.join(category)) else {
            return Vec::new();
        };
        let mut folders: Vec<_> = entries
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|kind| kind.is_dir()))
            .map(|entry| entry.path())
            .take(MAX_SKILLS)
            .collect();
        folders.sort();
        folders
    }

    fn fingerprint(&self) -> Fingerprint {
        let files = CATEGORIES
            .iter()
            .flat_map(|category| self.folders(category))
            .map(|folder| folder.join("SKILL.md"));
        std::iter::once(self.extensions.clone())
            .chain(files)
            .map(|path| {
                let stamp = std::fs::symlink_metadata(&path)
                    .ok()
                    .filter(std::fs::Metadata::is_file)
                    .map(|meta| FileStamp {
                        inode: meta.ino(),
                        len: meta.len(),
                        modified: nanos(meta.mtime(), meta.mtime_nsec()),
                        changed: nanos(meta.ctime(), meta.ctime_nsec()),
                    });
                (path, stamp)
            })
            .collect()
    }

    /// Every read is bounded: at most [`MAX_SKILLS`] folders per category, symlinked folders
    /// and files skipped, only regular files read (a FIFO is never waited on), and only the
    /// first [`MAX_SKILL_FILE_BYTES`] of a `SKILL.md` (the front matter is at its top) and
    /// [`MAX_EXTENSIONS_BYTES`] of `extensions_config.json`.
    fn read(&self) -> Vec<Value> {
        let switches = read_regular_file(&self.extensions, MAX_EXTENSIONS_BYTES + 1)
            .filter(|text| text.len() as u64 <= MAX_EXTENSIONS_BYTES)
            .and_then(|text| serde_json::from_str::<Value>(&text).ok())
            .and_then(|config| config.get("skills").cloned())
            .unwrap_or(Value::Null);
        let mut skills = Vec::new();
        for category in CATEGORIES {
            for folder in self.folders(category) {
                let Some(text) = read_regular_file(&folder.join("SKILL.md"), MAX_SKILL_FILE_BYTES)
                else {
                    continue;
                };
                let front = front_matter(&text);
                let folder_name = folder
                    .file_name()
                    .map(|name| name.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let name = front
                    .get("name")
                    .and_then(Value::as_str)
                    .map(String::from)
                    .unwrap_or(folder_name);
                let enabled = switches
                    .pointer(&format!(
                        "/{}/enabled",
                        name.replace('~', "~0").replace('/', "~1")
                    ))
                    .and_then(Value::as_bool)
                    .unwrap_or(true);
                skills.push(json!({
                    "name": name,
                    "description": front.get("description").cloned().unwrap_or(json!("")),
                    "license": front.get("license").cloned().unwrap_or(Value::Null),
                    "category": category,
                    "enabled": enabled,
                    "editable": category == "custom",
                }));
            }
        }
        skills
    }
}

fn nanos(seconds: i64, nanoseconds: i64) -> i128 {
    i128::from(seconds) * 1_000_000_000 + i128::from(nanoseconds)
}

/// The `key: value` lines of a SKILL.md front matter block (between the leading `---` lines).
/// Values are scalars with optional quotes; nested YAML is not read (skills use flat keys).
fn front_matter(text: &str) -> Map<String, Value> {
    let mut keys = Map::new();
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some("---") {
        return keys;
    }
    for line in lines {
        if line.trim() == "---" {
            break;
        }
        if line.starts_with([' ', '\t', '-']) {
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            let value = value.trim();
            let unquoted = value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
                .unwrap_or(value);
            if !unquoted.is_empty() {
                keys.insert(key.trim().to_string(), Value::String(unquoted.to_string()));
            }
        }
    }
    keys
}

/// The first `limit` bytes of the regular file at `path` (invalid UTF-8 replaced), without
/// following a symlink in its place and without blocking on a FIFO; `None` for anything else.
fn read_regular_file(path: &Path, limit: u64) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(limit).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes `path` and dates it [`SETTLE`] and more in the past, as a file written before
    /// the listing would be.
    fn write_settled(path: &Path, text: &str) {
        std::fs::write(path, text).unwrap();
        let past = SystemTime::now() - SETTLE * 10;
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(past)
            .unwrap();
    }

    fn write_skill(root: &Path, category: &str, folder: &str, description: &str) {
        let dir = root.join(category).join(folder);
        std::fs::create_dir_all(&dir).unwrap();
        let text = format!("---\nname: {folder}\ndescription: {description}\n---\n");
        write_settled(&dir.join("SKILL.md"), &text);
    }

    /// Issue 21 F14: `/api/skills` re-read every skill file per request. Each step changes the
    /// folder (or not) and says whether the next listing must read the files again, and what
    /// it must then show; a fingerprint that missed a kind of change would answer stale.
    #[test]
    fn skills_are_read_again_only_when_a_skill_or_the_switches_change() {
        let home = tempfile::tempdir().unwrap();
        let root = home.path().join("skills");
        let extensions = home.path().join("extensions_config.json");
        write_skill(&root, "public", "pdf", "Read PDFs");
        let catalog = SkillsCatalog::new(root.clone(), extensions.clone());
        type Step<'a> = (&'a str, Box<dyn Fn()>, Listing, Value);
        let pdf = |description: &str, enabled: bool| {
            json!({"name": "pdf", "description": description, "license": null,
                   "category": "public", "enabled": enabled, "editable": false})
        };
        let steps: Vec<Step> = vec![
            (
                "first listing",
                Box::new(|| {}),
                Listing::Read,
                json!([pdf("Read PDFs", true)]),
            ),
            (
                "nothing changed",
                Box::new(|| {}),
                Listing::Unchanged,
                json!([pdf("Read PDFs", true)]),
            ),
            (
                "a SKILL.md rewritten with the same length",
                Box::new({
                    let root = root.clone();
                    move || write_skill(&root, "public", "pdf", "Read PDFz")
                }),
                Listing::Read,
                json!([pdf("Read PDFz", true)]),
            ),
            (
                "a skill switched off",
                Box::new({
                    let extensions = extensions.clone();
                    move || write_settled(&extensions, r#"{"skills": {"pdf": {"enabled": false}}}"#)
                }),
                Listing::Read,
                json!([pdf("Read PDFz", false)]),
            ),
            (
                "a custom skill added",
                Box::new({
                    let root = root.clone();
                    move || write_skill(&root, "custom", "notes", "Take notes")
                }),
                Listing::Read,
                json!([pdf("Read PDFz", false), {"name": "notes", "description": "Take notes",
                       "license": null, "category": "custom", "enabled": true, "editable": true}]),
            ),
            (
                "a skill removed",
                Box::new({
                    let root = root.clone();
                    move || std::fs::remove_dir_all(root.join("custom/notes")).unwrap()
                }),
                Listing::Read,
                json!([pdf("Read PDFz", false)]),
            ),
            (
                "nothing changed again",
                Box::new(|| {}),
                Listing::Unchanged,
                json!([pdf("Read PDFz", false)]),
            ),
            (
                "a skill written just now (its time may not move on a same-length rewrite)",
                Box::new({
                    let root = root.clone();
                    move || {
                        std::fs::write(root.join("public/pdf/SKILL.md"), "---\nname: pdf\n---\n")
                            .unwrap()
                    }
                }),
                Listing::Read,
                json!([pdf("", false)]),
            ),
            (
                "not kept: read again",
                Box::new(|| {}),
                Listing::Read,
                json!([pdf("", false)]),
            ),
        ];
        for (what, change, expected_listing, expected_skills) in steps {
            change();
            let (skills, listing) = catalog.list();
            assert_eq!(listing, expected_listing, "{what}");
            assert_eq!(Value::Array(skills.to_vec()), expected_skills, "{what}");
        }
    }

    #[test]
    fn front_matter_reads_flat_scalar_keys_only() {
        let cases = [
            (
                "---\nname: pdf\ndescription: \"Read PDFs: text and tables\"\nlicense: 'MIT'\n---\n# body\nname: not-this",
                json!({"name": "pdf", "description": "Read PDFs: text and tables", "license": "MIT"}),
            ),
            ("no front matter\nname: x", json!({})),
            (
                "---\nname: nested\nmeta:\n  key: v\n---",
                json!({"name": "nested"}),
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(Value::Object(front_matter(text)), expected, "{text}");
        }
    }
}
