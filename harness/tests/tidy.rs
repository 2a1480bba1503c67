//! House rules checked under `cargo test`: every fixture has its two goldens (values-only and
//! web modes) and every golden a fixture;
//! every Rust module starts with a `//!` doc; no test carries the ignore attribute.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

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
