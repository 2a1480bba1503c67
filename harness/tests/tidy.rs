//! House rules checked under `cargo test`: every fixture has its two goldens (values-only and
//! web modes) and every golden a fixture; every Rust module starts with a `//!` doc; no test
//! carries the ignore attribute; the replay core and the model-wire codec depend on no gateway,
//! async runtime or HTTP stack (nor the codec on record/replay or SSE framing); nothing points
//! outside the repository for its specification; every section a file cites exists in the cited
//! document under `docs/`; no two files of a crate import each other, directly or in a circle,
//! and library code reads the environment only in `from_env` constructors (`tidy/sources.rs`
//! reads the module trees); the gateway knows no record/replay crate; one verdict type; replay
//! opens no socket; every ARCHITECTURE.md invariant names a test that exists.

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

/// Issue 47, item 7: the Action's repository path is written in one place, the `repository`
/// of the `keyless` package (harness/cli/Cargo.toml), and every `uses:` of the Action in a
/// tracked document or workflow (README, docs, `action.yml`) is that path at the package's
/// version, so a CI snippet can be pasted as it is; every `actions/upload-artifact` is one
/// version.
#[test]
fn ci_snippets_use_the_keyless_packages_repository_and_one_upload_artifact_version() {
    let root = workspace_root();
    let manifest = std::fs::read_to_string(root.join("harness/cli/Cargo.toml")).unwrap();
    let manifest: toml::Value = toml::from_str(&manifest).unwrap();
    let package = &manifest["package"];
    let repository = package.get("repository").and_then(toml::Value::as_str);
    let path = repository
        .and_then(|url| url.strip_prefix("https://github.com/"))
        .expect("harness/cli/Cargo.toml: package.repository = \"https://github.com/OWNER/NAME\"");
    let version = package["version"].as_str().expect("a version");
    let action = format!("{path}@v{version}");
    let mut wrong = Vec::new();
    let mut upload_versions = BTreeSet::new();
    for file in tracked_files() {
        let text_file = ["md", "yml", "yaml"]
            .iter()
            .any(|ext| file.extension().is_some_and(|found| found == *ext));
        let Some(text) = text_file
            .then(|| std::fs::read_to_string(root.join(&file)).ok())
            .flatten()
        else {
            continue;
        };
        for (number, line) in text.lines().enumerate() {
            let Some(used) = line
                .split("uses:")
                .nth(1)
                .and_then(|rest| rest.split_whitespace().next())
            else {
                continue;
            };
            if let Some(upload) = used.strip_prefix("actions/upload-artifact@") {
                upload_versions.insert(upload.to_owned());
            }
            let names_keyless =
                used.contains("/keyless@") || used.contains("<owner>") || used.contains("OWNER/");
            if names_keyless && used != action {
                wrong.push(format!("{}:{}: {used}", file.display(), number + 1));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "uses of the Action that are not {action} (package.repository and version of \
         harness/cli/Cargo.toml): {wrong:#?}"
    );
    assert_eq!(
        upload_versions.len(),
        1,
        "actions/upload-artifact at several versions: {upload_versions:?}"
    );
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

#[path = "tidy/sources.rs"]
mod sources;

/// A library or binary target of a workspace package: its label and root file.
struct Target {
    label: String,
    root: PathBuf,
    library: bool,
}

/// Every library and binary target of the workspace's packages, as `cargo metadata` lists them.
fn workspace_targets() -> Vec<Target> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--offline",
            "--no-deps",
            "--format-version",
            "1",
        ])
        .arg("--manifest-path")
        .arg(workspace_root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut targets = Vec::new();
    for package in metadata["packages"].as_array().unwrap() {
        for target in package["targets"].as_array().unwrap() {
            let kinds: Vec<&str> = target["kind"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|kind| kind.as_str())
                .collect();
            let library = kinds.contains(&"lib");
            if library || kinds.contains(&"bin") {
                targets.push(Target {
                    label: format!(
                        "{} ({})",
                        package["name"].as_str().unwrap(),
                        kinds.join(",")
                    ),
                    root: PathBuf::from(target["src_path"].as_str().unwrap()),
                    library,
                });
            }
        }
    }
    assert!(
        targets.len() >= 9,
        "cargo metadata lists too few targets: {}",
        targets.len()
    );
    targets
}

#[test]
fn no_import_circle_between_the_files_of_a_crate() {
    let mut problems = Vec::new();
    for target in workspace_targets() {
        let crate_sources = sources::read_crate(&target.root);
        problems.extend(crate_sources.problems.iter().cloned());
        for circle in crate_sources.circles() {
            problems.push(format!(
                "{}: an import circle: {}",
                target.label,
                circle.describe(&workspace_root())
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "move what both files need into one of them, into a module both import, or down into a \
         child module (a child may use its parent):\n{}",
        problems.join("\n")
    );
}

/// The modules whose children may not import them: each parent holds its routes or its
/// lifecycle and its children what it is made of, so a child reaching back up would make the
/// parent a second home for what the children share (issue 38).
const PARENTS_NO_CHILD_IMPORTS: [(&str, &[&str]); 2] = [
    ("harness/runner/src/lib.rs", &["model_server"]),
    ("harness/runner/src/lib.rs", &["driver"]),
];

#[test]
fn no_child_module_imports_its_parent_in_the_model_server_and_the_driver() {
    let root = workspace_root();
    let mut problems = Vec::new();
    for (crate_root, module) in PARENTS_NO_CHILD_IMPORTS {
        let crate_sources = sources::read_crate(&root.join(crate_root));
        problems.extend(crate_sources.problems.iter().cloned());
        for (file, import) in crate_sources.parent_imports(module) {
            let file = file
                .strip_prefix(&root)
                .unwrap_or(&file)
                .display()
                .to_string();
            problems.push(format!(
                "{file}:{} uses `{}`, which lives in its parent module `{}`",
                import.line,
                import.path,
                module.join("::")
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "move what the children share into a child module (as model_server/shared.rs) and \
         import it from there:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_parent_import_reader_finds_a_child_using_its_parent() {
    let dir = synthetic_crate(&[
        ("lib.rs", "mod server;"),
        (
            "server/mod.rs",
            "mod child; mod state; pub struct Top; pub use state::Shared;",
        ),
        (
            "server/child.rs",
            "use super::state::Shared; fn f(_: Shared) {} fn g() -> super::Top { todo!() }",
        ),
        ("server/state.rs", "pub struct Shared;"),
    ]);
    let crate_sources = sources::read_crate(&dir.path().join("lib.rs"));
    let found: Vec<(String, String)> = crate_sources
        .parent_imports(&["server"])
        .into_iter()
        .map(|(file, import)| {
            let name = file.file_name().unwrap().to_string_lossy().into_owned();
            (name, import.path)
        })
        .collect();
    assert_eq!(
        found,
        [("child.rs".to_owned(), "super::Top".to_owned())],
        "the sibling import is allowed, the parent's item is not"
    );
}

/// A case: its name, its files (path → text) and the circles expected, each by its files.
type CircleCase = (
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static [&'static [&'static str]],
);

/// Synthetic crates (file → text, `lib.rs` the root) and the circles the reader must find in
/// each, by their files: the detector goes red on a circle and stays green on nesting.
const CIRCLE_CASES: &[CircleCase] = &[
    (
        "two sibling files that use each other",
        &[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "use crate::b::B; pub struct A;"),
            ("b.rs", "pub struct B; fn f() -> crate::a::A { todo!() }"),
        ],
        &[&["a.rs", "b.rs"]],
    ),
    (
        "a child using its parent, and the parent re-exporting it, is nesting",
        &[
            (
                "lib.rs",
                "mod a; pub struct R; mod shared { pub struct S; }",
            ),
            ("a.rs", "mod inner; pub use inner::X; pub struct A;"),
            (
                "a/inner.rs",
                "use super::A; use crate::R; use crate::shared::S; pub struct X;",
            ),
        ],
        &[],
    ),
    (
        "a circle through a folder's mod.rs",
        &[
            ("lib.rs", "mod http;"),
            ("http/mod.rs", "mod compat; mod runs;"),
            (
                "http/compat/mod.rs",
                "mod page; pub struct C; fn routes() { page::f() }",
            ),
            (
                "http/compat/page.rs",
                "pub fn f() { crate::http::runs::go() }",
            ),
            ("http/runs.rs", "use super::compat::C; pub fn go() {}"),
        ],
        &[&["http/compat/mod.rs", "http/compat/page.rs", "http/runs.rs"]],
    ),
    (
        "a module bound by `use` and named in code",
        &[
            ("lib.rs", "mod http; mod a;"),
            ("http/mod.rs", "pub mod runs;"),
            ("http/runs.rs", "use crate::a::A; pub fn go() {}"),
            (
                "a.rs",
                "use crate::http; pub struct A; fn f() { http::runs::go() }",
            ),
        ],
        &[&["a.rs", "http/runs.rs"]],
    ),
    (
        "test-only modules may import anything",
        &[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "pub struct A; #[cfg(test)] mod tests;"),
            ("a/tests.rs", "use crate::b::B;"),
            (
                "b.rs",
                "use crate::a::A; pub struct B; #[cfg(test)] mod tests { use crate::a::A; }",
            ),
        ],
        &[],
    ),
    (
        "a one-way chain",
        &[
            ("lib.rs", "mod a; mod b; mod c;"),
            ("a.rs", "use crate::b::B;"),
            ("b.rs", "pub struct B; use super::c::C;"),
            ("c.rs", "pub struct C;"),
        ],
        &[],
    ),
];

/// Writes `files` into a fresh folder.
fn synthetic_crate(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, text) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn the_circle_reader_finds_circles_and_passes_nesting() {
    for (case, files, expected) in CIRCLE_CASES {
        let dir = synthetic_crate(files);
        let crate_sources = sources::read_crate(&dir.path().join("lib.rs"));
        assert!(
            crate_sources.problems.is_empty(),
            "{case}: {:?}",
            crate_sources.problems
        );
        let circles = crate_sources.circles();
        let found: Vec<Vec<String>> = circles
            .iter()
            .map(|circle| {
                circle
                    .members
                    .iter()
                    .map(|file| file.strip_prefix(dir.path()).unwrap().display().to_string())
                    .collect()
            })
            .collect();
        assert_eq!(found, *expected, "{case}");
        for circle in &circles {
            let text = circle.describe(dir.path());
            for member in &circle.members {
                let name = member
                    .strip_prefix(dir.path())
                    .unwrap()
                    .display()
                    .to_string();
                assert!(text.contains(&name), "{case}: {text} does not name {name}");
            }
        }
    }
}

/// Whether a read sits in an explicit environment constructor: a function named `from_env`, or
/// `<what>_from_env`, which the edges (binaries, xtask, tests) call once.
fn in_from_env(read: &sources::EnvRead) -> bool {
    read.functions
        .iter()
        .any(|name| name == "from_env" || name.ends_with("_from_env"))
}

/// The environment reads of library code that no `from_env` constructor holds, as
/// `(workspace-relative file, what)` with their lines.
fn stray_env_reads(reads: &[sources::EnvRead]) -> Vec<(String, String, usize)> {
    let root = workspace_root();
    reads
        .iter()
        .filter(|read| !in_from_env(read))
        .map(|read| {
            let file = read.file.strip_prefix(&root).unwrap_or(&read.file);
            (file.display().to_string(), read.what.clone(), read.line)
        })
        .collect()
}

#[test]
fn library_code_reads_the_environment_only_in_from_env_constructors() {
    let mut problems = Vec::new();
    let mut stray = Vec::new();
    for target in workspace_targets()
        .into_iter()
        .filter(|target| target.library)
    {
        let crate_sources = sources::read_crate(&target.root);
        problems.extend(crate_sources.problems.iter().cloned());
        stray.extend(stray_env_reads(&crate_sources.env_reads));
    }
    for (file, what, line) in &stray {
        problems.push(format!(
            "{file}:{line}: reads `{what}` in library code; take the value as a parameter and \
             read it in a `from_env` constructor that the binary, xtask or the tests call"
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Synthetic library files and the stray reads the reader must report in each, by function
/// context: reads inside `from_env` pass, everything else (a macro's arguments included) fails.
const ENV_CASES: &[(&str, &str, &[&str])] = &[
    (
        "a read in an ordinary function",
        "fn dir() -> Option<std::ffi::OsString> { std::env::var_os(\"HOME\") }",
        &["std::env::var_os"],
    ),
    (
        "the manifest folder at compile time",
        "fn root() -> &'static str { env!(\"CARGO_MANIFEST_DIR\") }",
        &["env!(CARGO_MANIFEST_DIR)"],
    ),
    (
        "a read inside a macro's arguments, through `use std::env`",
        "use std::env; fn f() { println!(\"{:?}\", env::var(\"X\")); }",
        &["env::var inside println!"],
    ),
    (
        "explicit constructors",
        "struct S; impl S { fn from_env() -> S { let _ = std::env::var(\"A\"); S } } \
         fn key_from_env() -> Option<String> { std::env::var(\"K\").ok() }",
        &[],
    ),
    (
        "tests may read anything",
        "#[cfg(test)] mod tests { fn f() { let _ = std::env::var(\"A\"); } }",
        &[],
    ),
    (
        "a version at compile time is no read",
        "const V: &str = env!(\"CARGO_PKG_VERSION\");",
        &[],
    ),
];

#[test]
fn the_env_reader_flags_reads_outside_from_env() {
    for (case, text, expected) in ENV_CASES {
        let dir = synthetic_crate(&[("lib.rs", text)]);
        let crate_sources = sources::read_crate(&dir.path().join("lib.rs"));
        assert!(
            crate_sources.problems.is_empty(),
            "{case}: {:?}",
            crate_sources.problems
        );
        let found: Vec<String> = crate_sources
            .env_reads
            .iter()
            .filter(|read| !in_from_env(read))
            .map(|read| read.what.clone())
            .collect();
        assert_eq!(found, *expected, "{case}");
    }
}

/// The crates that know record and replay; the gateway reaches none of them.
const RECORD_REPLAY_CRATES: [&str; 4] = ["replay-core", "keyless-runner", "harness", "keyless"];

#[test]
fn the_gateway_depends_on_no_record_or_replay_crate() {
    let reached = shipped_dependencies("gateway-under-test");
    assert!(
        reached.contains("gateway-under-test") && reached.contains("model-wire"),
        "the tree lists the gateway and its codec: {reached:?}"
    );
    let known: Vec<&str> = RECORD_REPLAY_CRATES
        .into_iter()
        .filter(|name| reached.contains(*name))
        .collect();
    assert!(
        known.is_empty(),
        "gateway-under-test must know nothing of record or replay, but it depends on {known:?} \
         (see `cargo tree -p gateway-under-test -e normal -i NAME`); register a provider from the \
         harness instead"
    );
}

/// The Rust sources of every library and binary target, workspace-relative, with their text.
fn product_sources() -> Vec<(String, String)> {
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in ["harness", "gateway-under-test/src", "xtask/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    files
        .into_iter()
        .filter(|file| {
            let relative = file.strip_prefix(&root).unwrap();
            !relative.components().any(|part| {
                matches!(
                    part.as_os_str().to_str(),
                    Some("tests" | "benches" | "target")
                )
            }) && !relative.ends_with("tests.rs")
        })
        .map(|file| {
            let text = std::fs::read_to_string(&file).unwrap();
            (
                file.strip_prefix(&root).unwrap().display().to_string(),
                text,
            )
        })
        .collect()
}

#[test]
fn one_verdict_type_outside_the_core() {
    let declaration =
        regex::Regex::new(r"(?m)^\s*pub(\([a-z]+\))? (struct|enum) (\w*Verdict)\b").unwrap();
    let mut found = BTreeSet::new();
    for (file, text) in product_sources() {
        for capture in declaration.captures_iter(&text) {
            found.insert((file.clone(), capture[3].to_string()));
        }
    }
    assert!(
        found.contains(&("harness/core/src/verdict.rs".into(), "Verdict".into())),
        "the reader finds replay_core's Verdict: {found:?}"
    );
    let mut problems = Vec::new();
    for (file, name) in &found {
        if !(file == "harness/core/src/verdict.rs" && name == "Verdict") {
            problems.push(format!(
                "{file}: `{name}` is a second verdict; whether a replay passed is a \
                 replay_core::Verdict (make the difference a policy of it)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The identifiers in a Rust source's code: comments and string literals (messages, docs) are
/// left out, so a check on names is not fooled by prose.
fn identifiers(file: &Path) -> BTreeSet<String> {
    fn collect(stream: proc_macro2::TokenStream, out: &mut BTreeSet<String>) {
        for tree in stream {
            match tree {
                proc_macro2::TokenTree::Group(group) => collect(group.stream(), out),
                proc_macro2::TokenTree::Ident(ident) => {
                    out.insert(ident.to_string());
                }
                proc_macro2::TokenTree::Punct(_) | proc_macro2::TokenTree::Literal(_) => {}
            }
        }
    }
    let text = std::fs::read_to_string(file)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", file.display()));
    let stream: proc_macro2::TokenStream = text
        .parse()
        .unwrap_or_else(|err| panic!("cannot tokenize {}: {err:?}", file.display()));
    let mut out = BTreeSet::new();
    collect(stream, &mut out);
    out
}

/// AWS's event-stream frames are read in one place (`transport::eventstream::FrameReader`): the
/// gateway's Converse provider and the recording proxy both read with it, so they cannot
/// disagree on a frame (issue 38: they were read twice).
#[test]
fn one_event_stream_frame_reader() {
    let reader = "harness/transport/src/eventstream.rs";
    let root = workspace_root();
    let decoding: BTreeSet<String> = product_sources()
        .into_iter()
        .filter(|(file, _)| {
            let names = identifiers(&root.join(file));
            names.contains("MessageFrameDecoder") || names.contains("decode_frame")
        })
        .map(|(file, _)| file)
        .collect();
    assert!(
        decoding.contains(reader),
        "the check finds the one reader, {reader}: {decoding:?}"
    );
    let others: Vec<&String> = decoding.iter().filter(|file| *file != reader).collect();
    assert!(
        others.is_empty(),
        "{others:?} decode AWS event-stream frames themselves; read them with \
         transport::eventstream::FrameReader ({reader})"
    );
}

#[test]
fn recording_does_not_use_the_test_runner() {
    let file = workspace_root().join("harness/src/record_run.rs");
    let names = identifiers(&file);
    assert!(
        names.contains("record_scenario"),
        "the reader sees record_run's code: {names:?}"
    );
    assert!(
        !names.contains("layer1"),
        "{} names layer1: recording drives a scenario through the adapter and the driver, never \
         the test runner",
        file.display()
    );
}

/// The replay side's files, which must open no connection: the in-process replay model and the
/// core (whose dependency tree has no HTTP stack, checked above).
const REPLAY_FILES: [&str; 1] = ["harness/src/adapter/replay_model.rs"];

/// Names that open or accept a network connection.
const NETWORK_NAMES: [&str; 6] = [
    "reqwest",
    "hyper",
    "TcpStream",
    "TcpListener",
    "UdpSocket",
    "ToSocketAddrs",
];

#[test]
fn replay_opens_no_socket_and_nothing_binds_beyond_loopback() {
    let mut problems = Vec::new();
    for file in REPLAY_FILES {
        let names = identifiers(&workspace_root().join(file));
        assert!(names.len() > 20, "the reader sees {file}'s code");
        for name in NETWORK_NAMES {
            if names.contains(name) {
                problems.push(format!(
                    "{file}: names `{name}`; replay never reaches the network"
                ));
            }
        }
    }
    // Every address a server in this workspace binds is loopback: no Rust source names the
    // unspecified address, in either family.
    let root = workspace_root();
    let mut files = Vec::new();
    for dir in [
        "harness",
        "gateway-under-test/src",
        "gateway-under-test/tests",
        "xtask",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    let unspecified = regex::Regex::new(r"(^|[^0-9.])0\.0\.0\.0([^0-9./]|$)|\[::\]").unwrap();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (index, line) in text.lines().enumerate() {
            if unspecified.is_match(line) {
                problems.push(format!(
                    "{}:{}: names the unspecified address (`{}`); bind 127.0.0.1 only",
                    file.strip_prefix(&root).unwrap_or(&file).display(),
                    index + 1,
                    line.trim()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What is wrong with `document`'s invariants: each `**Architecture invariant:**` paragraph must
/// carry a `Test:` (or `Tests:`) line naming `path/to/file.rs::function`s, each a function that
/// exists in that file under `root`.
fn invariant_problems(document: &str, root: &Path) -> Vec<String> {
    let named = regex::Regex::new(r"`([^`\s]+\.rs)::([a-z_0-9]+)`").unwrap();
    let mut problems = Vec::new();
    let mut count = 0;
    for paragraph in document.split("\n\n") {
        let Some(claim) = paragraph
            .trim_start()
            .strip_prefix("**Architecture invariant:**")
        else {
            continue;
        };
        count += 1;
        let title: String = claim.trim().chars().take(60).collect();
        let test_lines: Vec<&str> = paragraph
            .lines()
            .filter(|line| line.starts_with("Test: ") || line.starts_with("Tests: "))
            .collect();
        let tests: Vec<(String, String)> = test_lines
            .iter()
            .flat_map(|line| named.captures_iter(line))
            .map(|capture| (capture[1].to_string(), capture[2].to_string()))
            .collect();
        if tests.is_empty() {
            problems.push(format!(
                "the invariant \"{title}…\" names no test (a `Test: `path/file.rs::function`` line)"
            ));
        }
        for (file, function) in tests {
            let text = std::fs::read_to_string(root.join(&file)).unwrap_or_default();
            let defined = regex::Regex::new(&format!(r"fn\s+{function}\s*[(<]")).unwrap();
            if !defined.is_match(&text) {
                problems.push(format!(
                    "the invariant \"{title}…\" names `{file}::{function}`, which does not exist"
                ));
            }
        }
    }
    if count == 0 {
        problems.push("no `**Architecture invariant:**` paragraph found".into());
    }
    problems
}

#[test]
fn every_architecture_invariant_names_a_test_that_exists() {
    let root = workspace_root();
    let document = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let problems = invariant_problems(&document, &root);
    assert!(
        problems.is_empty(),
        "ARCHITECTURE.md:\n{}",
        problems.join("\n")
    );
}

/// The most characters ARCHITECTURE.md may hold: it is the map (a code map per crate and the
/// invariants with their tests), and the detail of a module lives in its `//!` documentation
/// (issue 38; rust-analyzer's is about 27k for a far larger tree).
const ARCHITECTURE_MAX_CHARS: usize = 30_000;

#[test]
fn architecture_md_stays_within_30000_characters() {
    let text = std::fs::read_to_string(workspace_root().join("ARCHITECTURE.md")).unwrap();
    let chars = text.chars().count();
    assert!(
        chars <= ARCHITECTURE_MAX_CHARS,
        "ARCHITECTURE.md has {chars} characters, over {ARCHITECTURE_MAX_CHARS}: move detail into \
         the `//!` documentation of the module it describes and keep the map"
    );
}

#[test]
fn the_invariant_check_refuses_a_missing_or_unknown_test() {
    let root = workspace_root();
    let cases = [
        (
            "**Architecture invariant:** held.\nTest: `harness/tests/tidy.rs::every_architecture_invariant_names_a_test_that_exists`",
            0,
        ),
        ("**Architecture invariant:** no test named.", 1),
        (
            "**Architecture invariant:** a test that is gone.\nTest: `harness/tests/tidy.rs::no_such_test`",
            1,
        ),
        (
            "**Architecture invariant:** a file that is gone.\nTest: `harness/tests/nowhere.rs::every_architecture_invariant_names_a_test_that_exists`",
            1,
        ),
    ];
    for (document, expected) in cases {
        let problems = invariant_problems(document, &root);
        assert_eq!(problems.len(), expected, "{document}: {problems:?}");
    }
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

/// What breaks "a dialect's constants are in its file" in the driver's root `driver_rs` (its
/// code before the tests), given each dialect file's name and text: a route literal (`"/"` then
/// a letter, e.g. a default path) in the root, or a dialect file that declares no `PROTOCOL`.
fn dialect_constant_problems(driver_rs: &str, dialects: &[(String, String)]) -> Vec<String> {
    let code = driver_rs.split("#[cfg(test)]").next().unwrap_or_default();
    let mut problems = Vec::new();
    for (index, line) in code.lines().enumerate() {
        let literal = line.split('"').skip(1).step_by(2).find(|literal| {
            let mut chars = literal.chars();
            chars.next() == Some('/') && chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        });
        if let Some(literal) = literal {
            problems.push(format!(
                "harness/runner/src/driver.rs:{}: {literal:?} belongs in its dialect's file",
                index + 1
            ));
        }
    }
    for (name, text) in dialects {
        if !text.contains("pub const PROTOCOL: Protocol") {
            problems.push(format!(
                "harness/runner/src/driver/{name}: a dialect declares its `pub const PROTOCOL: \
                 Protocol` (default paths, framing, shapes) in its own file"
            ));
        }
    }
    problems
}

/// A dialect owns its protocol (ARCHITECTURE.md): its default paths, framing rule and shapes are
/// declared in its file under `harness/runner/src/driver/` (its `PROTOCOL`), and the driver's
/// root holds no dialect's route or default path.
#[test]
fn a_dialects_constants_are_in_its_file() {
    let root = workspace_root();
    let driver = root.join("harness/runner/src/driver");
    let driver_rs = std::fs::read_to_string(root.join("harness/runner/src/driver.rs")).unwrap();
    let mut dialects = Vec::new();
    for entry in std::fs::read_dir(&driver).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if text.contains("impl Dialect for ") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            dialects.push((name, text));
        }
    }
    assert_eq!(dialects.len(), 6, "one file per dialect of `Api::ALL`");
    let problems = dialect_constant_problems(&driver_rs, &dialects);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The rule catches what it names: a default path in the root, a dialect without PROTOCOL.
    let before =
        "fn ready(api: Api) -> &'static str {\n    match api { Api::Langgraph => \"/ok\" }\n}";
    let without = [("x.rs".to_owned(), "impl Dialect for X {}".to_owned())];
    assert_eq!(dialect_constant_problems(before, &without).len(), 2);
}

/// What breaks "every wire through one renderer" in the model server's file `name`, given its
/// text (its code before the tests, comments left out): a `Wire::ChatCompletions` outside the
/// routes (`mod.rs`, `routes.rs`), which would be a Chat Completions special case, or a wire's
/// stream written outside `render.rs` (an SSE `data:` or `event:` line, an event-stream
/// frame), which would be a second renderer beside model-wire's.
fn one_renderer_problems(name: &str, text: &str) -> Vec<String> {
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let frames = ["\"data: ", "\"event: ", "event_frame(", "exception_frame("];
    let mut problems = Vec::new();
    for (index, line) in code.lines().enumerate() {
        if line.trim_start().starts_with("//") {
            continue;
        }
        let at = format!("harness/runner/src/model_server/{name}:{}", index + 1);
        if line.contains("Wire::ChatCompletions") && !matches!(name, "mod.rs" | "routes.rs") {
            problems.push(format!(
                "{at}: a Chat Completions special case (only the routes name one wire)"
            ));
        }
        if name != "render.rs" && frames.iter().any(|frame| line.contains(frame)) {
            problems.push(format!(
                "{at}: a wire's stream written outside render.rs (model-wire's streaming renderer \
                 renders every wire, render.rs frames it)"
            ));
        }
    }
    problems
}

/// Every wire through one renderer (issue 38, item 3): in the model server, every wire's stream
/// is model-wire's streaming renderer's (`Wire::stream_renderer`) framed by `render.rs`, for a
/// replay and the recording proxy alike, and no file but the routes names Chat Completions.
#[test]
fn the_model_server_renders_every_wire_through_one_renderer() {
    let root = workspace_root();
    let mut files = Vec::new();
    rust_files(&root.join("harness/runner/src/model_server"), &mut files);
    assert!(files.len() > 5, "the model server's files");
    // The modules `mod.rs` declares for its tests only (`#[cfg(test)] mod hardening;`).
    let parent = std::fs::read_to_string(root.join("harness/runner/src/model_server/mod.rs"));
    let test_only: Vec<String> = parent
        .unwrap()
        .split("#[cfg(test)]")
        .skip(1)
        .filter_map(|after| after.trim_start().strip_prefix("mod "))
        .filter_map(|rest| rest.split(';').next())
        .map(|module| format!("{}.rs", module.trim()))
        .collect();
    let mut problems = Vec::new();
    for file in files {
        let name = file
            .strip_prefix(root.join("harness/runner/src/model_server"))
            .unwrap()
            .display()
            .to_string();
        if test_only.contains(&name) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        problems.extend(one_renderer_problems(&name, &text));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The rule catches what it names: a Chat Completions branch, an SSE frame, AWS framing.
    let before = "match wire { Wire::ChatCompletions => x }\nlet f = format!(\"data: {c}\\n\\n\");\n\
                  let b = event_frame(name, &payload);\n#[cfg(test)]\nWire::ChatCompletions";
    assert_eq!(one_renderer_problems("wires.rs", before).len(), 3);
    assert!(one_renderer_problems("routes.rs", "Wire::ChatCompletions").is_empty());
}
