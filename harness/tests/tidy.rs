//! House rules checked under `cargo test`: every fixture has its two goldens (values-only and
//! web modes) and every golden a fixture; every Rust module starts with a `//!` doc; no test
//! carries the ignore attribute; the replay core depends on no gateway, async runtime or HTTP
//! stack.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use harness::golden::{fixtures_dir, golden_dir};

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
    let goldens: BTreeSet<String> = stems(&golden_dir(), ".snap")
        .into_iter()
        .filter(|stem| !stem.ends_with(harness::web_flow::WEB_GOLDEN_SUFFIX))
        .collect();
    assert!(!fixtures.is_empty(), "no fixtures shipped");
    let without_golden: Vec<_> = fixtures
        .difference(&goldens)
        .chain(fixtures.difference(&web_goldens))
        .collect();
    let without_fixture: Vec<_> = goldens
        .difference(&fixtures)
        .chain(web_goldens.difference(&fixtures))
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
        if text.contains(&format!("#[{}]", "ignore")) {
            problems.push(format!("{}: an ignored test", file.display()));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Packages the replay core must never reach through its normal or build dependencies: the
/// gateway under test and this harness (the adapter's side), the async runtime and the HTTP
/// stack. `replay-core` is what another gateway's harness reuses as it is.
const FORBIDDEN_IN_CORE: [&str; 6] = [
    "gateway-under-test",
    "harness",
    "tokio",
    "axum",
    "reqwest",
    "hyper",
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
fn the_replay_core_depends_on_no_gateway_runtime_or_http_stack() {
    let reached = shipped_dependencies("replay-core");
    assert!(
        reached.contains("serde_json") && reached.contains("replay-core"),
        "the tree lists the core and its own dependencies: {reached:?}"
    );
    let forbidden: Vec<&str> = FORBIDDEN_IN_CORE
        .into_iter()
        .filter(|name| reached.contains(*name))
        .collect();
    assert!(
        forbidden.is_empty(),
        "harness/core (replay-core) must stay independent of any gateway, async runtime and \
         HTTP stack, but it depends on {forbidden:?} (see `cargo tree -p replay-core -i NAME`); \
         move that code to the harness package"
    );
}
