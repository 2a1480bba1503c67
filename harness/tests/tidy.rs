//! House rules checked under `cargo test`: every fixture has its two goldens (values-only and
//! web modes) and every golden a fixture; every Rust module starts with a `//!` doc; no test
//! carries the ignore attribute; the replay core and the model-wire codec depend on no gateway,
//! async runtime or HTTP stack (nor the codec on record/replay or SSE framing); nothing points outside the repository for its specification; every section a file
//! cites exists in the cited document under `docs/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::workspace::{fixtures_dir, golden_dir, workspace_root};

fn stems(dir: &Path, suffix: &str) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", dir.display()))
        .filter_map(|entry| entry.ok())
        .filter_map(|entry| entry.file_name().to_str().map(String::from))
        .filter_map(|name| name.strip_suffix(suffix).map(String::from))
        .collect()
}

#[test]
fn fixtures_and_goldens_correspond_one_to_one() {
    let fixtures = stems(&fixtures_dir(), ".json");
    let web_suffix = format!("{}.snap", harness::web_flow::WEB_GOLDEN_SUFFIX);
    let web_goldens = stems(&golden_dir(), &web_suffix);
    let messages_suffix = format!("{}.snap", harness::final_messages::MESSAGES_GOLDEN_SUFFIX);
    let messages_goldens = stems(&golden_dir(), &messages_suffix);
    let goldens: BTreeSet<String> = stems(&golden_dir(), ".snap")
        .into_iter()
        .filter(|stem| {
            !stem.ends_with(harness::web_flow::WEB_GOLDEN_SUFFIX)
                && !stem.ends_with(harness::final_messages::MESSAGES_GOLDEN_SUFFIX)
        })
        .collect();
    assert!(!fixtures.is_empty(), "no fixtures shipped");
    let without_golden: Vec<_> = fixtures
        .difference(&goldens)
        .chain(fixtures.difference(&web_goldens))
        .chain(fixtures.difference(&messages_goldens))
        .collect();
    let without_fixture: Vec<_> = goldens
        .difference(&fixtures)
        .chain(web_goldens.difference(&fixtures))
        .chain(messages_goldens.difference(&fixtures))
        .collect();
    assert!(
        without_golden.is_empty() && without_fixture.is_empty(),
        "fixtures without a golden (run cargo test, then cargo insta review): {without_golden:?}\n\
         goldens without a fixture (delete them, or cargo insta test --unreferenced=delete): {without_fixture:?}"
    );
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_says_what_it_is_for_and_nothing_is_ignored() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for dir in [
        "harness",
        "gateway-under-test/src",
        "gateway-under-test/tests",
        "xtask/src",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut problems = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        if !text.trim_start().starts_with("//!") {
            problems.push(format!("{}: no `//!` module doc", file.display()));
        }
        // The bare attribute and the one with a reason alike: a test nobody runs proves nothing.
        if text.contains(&format!("#[{}", "ignore")) {
            problems.push(format!("{}: an ignored test", file.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The packages that must stay independent, each with what it must never reach through its
/// normal or build dependencies and where the offending code belongs instead. `replay-core` is
/// what another gateway's harness reuses as it is: no gateway, no harness, no async runtime, no
/// HTTP stack. `model-wire` is the one codec per model wire, shared by the gateway's provider
/// and the harness's model server: it depends on neither of them, on no record/replay concept
/// (`replay-core`), no async runtime, no HTTP stack and no SSE framing (the transports keep it).
const INDEPENDENT: [(&str, &[&str], &str); 2] = [
    (
        "replay-core",
        &[
            "gateway-under-test",
            "harness",
            "tokio",
            "axum",
            "reqwest",
            "hyper",
        ],
        "move that code to the harness package",
    ),
    (
        "model-wire",
        &[
            "gateway-under-test",
            "harness",
            "replay-core",
            "tokio",
            "axum",
            "reqwest",
            "hyper",
            "eventsource-stream",
        ],
        "keep transports and recording in their users (the gateway's provider, the model server)",
    ),
];

/// The names of every package `package` reaches through normal and build dependencies on this
/// platform, as `cargo tree` lists them (offline: the lock file and the local registry suffice).
fn shipped_dependencies(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let output = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "--edges",
            "normal,build",
            "--prefix",
            "none",
        ])
        .args(["--format", "{p}", "--package", package, "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_shared_crates_depend_on_no_gateway_runtime_or_http_stack() {
    for (package, forbidden, advice) in INDEPENDENT {
        let reached = shipped_dependencies(package);
        assert!(
            reached.contains("serde_json") && reached.contains(package),
            "the tree lists {package} and its own dependencies: {reached:?}"
        );
        let reached_forbidden: Vec<&str> = forbidden
            .iter()
            .copied()
            .filter(|name| reached.contains(*name))
            .collect();
        assert!(
            reached_forbidden.is_empty(),
            "{package} must stay independent of {forbidden:?}, but it depends on \
             {reached_forbidden:?} (see `cargo tree -p {package} -i NAME`); {advice}"
        );
    }
}

/// The packages a user installs or builds on to test a gateway of their own: they never compile
/// this workspace's gateway (nor the `harness` package, its adapter).
const GATEWAY_FREE: [&str; 2] = ["keyless-runner", "keyless"];

#[test]
fn the_runner_and_the_keyless_binary_depend_on_no_gateway() {
    for package in GATEWAY_FREE {
        let reached = shipped_dependencies(package);
        assert!(
            reached.contains(package) && reached.contains("replay-core"),
            "the tree of {package} lists it and the core: {reached:?}"
        );
        let gateway: Vec<&str> = ["gateway-under-test", "harness"]
            .into_iter()
            .filter(|name| reached.contains(*name))
            .collect();
        assert!(
            gateway.is_empty(),
            "{package} must not compile a gateway, but it depends on {gateway:?} (see \
             `cargo tree -p {package} -e normal -i NAME`); keep gateway-bound code in the harness \
             package"
        );
    }
}

/// The files git tracks, relative to the repository root ("tracked" is what a clone gets).
fn tracked_files() -> Vec<PathBuf> {
    let root = workspace_root();
    let output = Command::new("git")
        .arg("-C")
        .arg(&root)
        .args(["ls-files", "-z"])
        .output()
        .unwrap_or_else(|err| panic!("cannot run `git ls-files` in {}: {err}", root.display()));
    assert!(
        output.status.success(),
        "`git ls-files` failed in {}: {}",
        root.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    output
        .stdout
        .split(|byte| *byte == 0)
        .filter(|path| !path.is_empty())
        .map(|path| PathBuf::from(String::from_utf8_lossy(path).into_owned()))
        .collect()
}

/// The tracked text files outside `docs/`, with their contents. Files deleted from the working
/// tree and files that are not UTF-8 are skipped.
fn tracked_texts_outside_docs() -> Vec<(PathBuf, String)> {
    let root = workspace_root();
    tracked_files()
        .into_iter()
        .filter(|path| !path.starts_with("docs"))
        .filter_map(|path| {
            let text = std::fs::read_to_string(root.join(&path)).ok()?;
            Some((path, text))
        })
        .collect()
}

/// Text that points outside the repository for a specification, and why it must not. The
/// needles are joined at run time so that this file does not contain them.
const OUTSIDE_POINTERS: &[(&[&str], &str)] = &[
    (
        &["..", "/shared"],
        "a folder beside the repository, which a clone does not have",
    ),
    (
        &["shared", "/spec"],
        "the original specification folder, which a clone does not have",
    ),
];

#[test]
fn nothing_outside_docs_points_at_a_specification_outside_the_repository() {
    let files = tracked_texts_outside_docs();
    assert!(!files.is_empty(), "git lists no tracked text files");
    let mut problems = Vec::new();
    for (pieces, why) in OUTSIDE_POINTERS {
        let needle = pieces.concat();
        for (path, text) in &files {
            for (index, line) in text.lines().enumerate() {
                if line.contains(&needle) {
                    problems.push(format!(
                        "{}:{}: mentions `{needle}`, {why}; cite docs/<document>.md instead",
                        path.display(),
                        index + 1
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The section sign, written as an escape so that this file cites nothing itself.
const SECTION: char = '\u{a7}';

/// The numbered headings of every `docs/<name>.md`: name → {"7.3" → "## 7.3 Title"}.
fn documented_sections() -> BTreeMap<String, BTreeMap<String, String>> {
    let docs = workspace_root().join("docs");
    let mut documents = BTreeMap::new();
    for entry in std::fs::read_dir(&docs)
        .unwrap_or_else(|err| panic!("cannot list {}: {err}", docs.display()))
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let headings = text
            .lines()
            .filter(|line| line.starts_with("##"))
            .filter_map(|line| {
                let number = section_number(line.trim_start_matches('#').trim_start())?;
                Some((number, line.to_string()))
            })
            .collect();
        documents.insert(stem.to_string(), headings);
    }
    documents
}

/// The section number at the start of `text` (`7.3` of `7.3 Title`, `2` of `2. File format`).
fn section_number(text: &str) -> Option<String> {
    let end = text
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(text.len());
    let number = text[..end].trim_end_matches('.');
    number
        .starts_with(|c: char| c.is_ascii_digit())
        .then(|| number.to_string())
}

/// What one line cites, in order: documents named as `docs/<name>.md`, and section numbers
/// (both ends of a range such as `2.8–2.10`). Sections of RFCs are not ours and are skipped.
fn citations(line: &str) -> Vec<(usize, Citation)> {
    let mut found = Vec::new();
    for (at, _) in line.match_indices("docs/") {
        let rest = &line[at + "docs/".len()..];
        let name_len = rest
            .find(|c: char| !c.is_ascii_lowercase() && c != '-')
            .unwrap_or(rest.len());
        if name_len > 0 && rest[name_len..].starts_with(".md") {
            found.push((at, Citation::Document(rest[..name_len].to_string())));
        }
    }
    for (at, sign) in line.match_indices(SECTION) {
        let before = line[..at].trim_end();
        let by_rfc = before
            .rsplit_once(' ')
            .is_some_and(|(head, number)| head.ends_with("RFC") && number.parse::<u32>().is_ok());
        if by_rfc {
            continue;
        }
        let rest = &line[at + sign.len()..];
        let Some(first) = section_number(rest) else {
            continue;
        };
        found.push((at, Citation::Section(first.clone())));
        let after = &rest[first.len()..];
        if let Some(range_end) = after
            .strip_prefix('\u{2013}')
            .or_else(|| after.strip_prefix('-'))
            .and_then(section_number)
        {
            found.push((at, Citation::Section(range_end)));
        }
    }
    found.sort_by_key(|(at, _)| *at);
    found
}

#[derive(Debug)]
enum Citation {
    Document(String),
    Section(String),
}

#[test]
fn every_cited_section_exists_in_the_document_it_cites() {
    let documents = documented_sections();
    assert!(!documents.is_empty(), "no documents in docs/");
    let mut problems = Vec::new();
    let mut checked = 0;
    for (path, text) in tracked_texts_outside_docs() {
        // A section cites the document most recently named before it in the same file.
        let mut document: Option<String> = None;
        for (index, line) in text.lines().enumerate() {
            let place = format!("{}:{}", path.display(), index + 1);
            for (_, citation) in citations(line) {
                match (citation, &document) {
                    (Citation::Document(name), _) => {
                        if !documents.contains_key(&name) {
                            problems.push(format!("{place}: docs/{name}.md does not exist"));
                        }
                        document = Some(name);
                    }
                    (Citation::Section(number), None) => problems.push(format!(
                        "{place}: cites {SECTION}{number} without naming its docs/<document>.md \
                         earlier in the file"
                    )),
                    (Citation::Section(number), Some(name)) => {
                        checked += 1;
                        let exists = documents
                            .get(name)
                            .is_some_and(|headings| headings.contains_key(&number));
                        if !exists {
                            problems.push(format!(
                                "{place}: cites docs/{name}.md {SECTION}{number}, which has no such \
                                 numbered heading"
                            ));
                        }
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        checked > 0,
        "no section citations found; is the parser broken?"
    );
}

/// One driver (ARCHITECTURE.md): a dialect's routes are written in its file under
/// `harness/runner/src/driver/` only; every other caller drives the gateway through the
/// runner's `Session` or `WebClient`.
#[test]
fn a_dialects_routes_are_written_in_its_file_only() {
    let root = workspace_root();
    let dialects = root.join("harness/runner/src/driver");
    let mut files = Vec::new();
    for dir in ["harness", "xtask"] {
        rust_files(&root.join(dir), &mut files);
    }
    // Built with `format!`, so this file does not hold the literals it looks for.
    let routes: Vec<String> = ["api/threads", "threads", "assistants"]
        .iter()
        .map(|route| format!("\"/{route}\""))
        .collect();
    let mut found = Vec::new();
    for file in files {
        if file.parent() == Some(dialects.as_path()) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        for (index, line) in text.lines().enumerate() {
            for route in routes.iter().filter(|route| line.contains(route.as_str())) {
                let shown = file.strip_prefix(&root).unwrap_or(&file).display();
                found.push(format!("{shown}:{}: {route}", index + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "route literals outside their dialect's file (harness/runner/src/driver/<dialect>.rs):\n{}",
        found.join("\n")
    );
}
