//! The crate's module layers, read from its source: `server` joins `app` to `http`, `http` may
//! use `app` and `runtime`, `app` may use `runtime`, and `runtime` uses none of them, so no import
//! circle can form between them. Every other module (store, auth, tools, models, config, …) sits
//! beneath all four.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-down. A module may import the modules listed after its own and any module not listed;
/// a module not listed may import no listed one.
const LAYERS: [&str; 4] = ["server", "http", "app", "runtime"];

fn layer(module: &str) -> usize {
    LAYERS
        .iter()
        .position(|listed| *listed == module)
        .unwrap_or(LAYERS.len())
}

/// The top-level modules that `source` names through `crate::` paths, in `use` lines or inline,
/// including each item of a `use crate::{…}` group. Comments are skipped.
fn imported_modules(source: &str) -> BTreeSet<String> {
    let code: String = source
        .lines()
        .map(|line| line.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let mut modules = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let rest = &code[at + "crate::".len()..];
        match rest.strip_prefix('{') {
            Some(group) => modules.extend(group_heads(group)),
            None => modules.extend(leading_identifier(rest)),
        }
    }
    modules
}

/// The first path segment of every top-level item of a `{…}` group (the text after its `{`).
fn group_heads(group: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0;
    let mut item_start = true;
    for (index, character) in group.char_indices() {
        match character {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => item_start = true,
            c if item_start && !c.is_whitespace() => {
                heads.extend(leading_identifier(&group[index..]));
                item_start = false;
            }
            _ => {}
        }
    }
    heads
}

fn leading_identifier(text: &str) -> Option<String> {
    let name: String = text
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!name.is_empty()).then_some(name)
}

/// The top-level module of a file, from its path under `src/` (`runtime/agent.rs` → `runtime`).
fn module_of(path: &str) -> &str {
    let first = path.split('/').next().unwrap_or(path);
    first.strip_suffix(".rs").unwrap_or(first)
}

/// One line per import that goes up (or sideways between listed layers), naming the file.
fn violations(files: &[(String, String)]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, source) in files {
        let module = module_of(path);
        for imported in imported_modules(source) {
            let allowed = imported == module
                || layer(&imported) > layer(module)
                || layer(&imported) == LAYERS.len();
            if !allowed {
                found.push(format!("{path} imports {imported}"));
            }
        }
    }
    found
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir)
        .expect("list the source folder")
        .flatten()
    {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// `(path under src/, source)` of every file but the crate roots.
fn crate_sources() -> Vec<(String, String)> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    paths
        .iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).expect("a path under src/");
            let relative = relative.to_string_lossy().replace('\\', "/");
            let source = std::fs::read_to_string(path)
                .unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()));
            (relative, source)
        })
        .filter(|(relative, _)| relative != "lib.rs" && relative != "main.rs")
        .collect()
}

#[test]
fn app_http_and_runtime_import_each_other_in_one_direction_only() {
    let files = crate_sources();
    assert!(
        files.iter().any(|(path, _)| module_of(path) == "runtime"),
        "found no runtime sources under src/"
    );
    let found = violations(&files);
    assert!(
        found.is_empty(),
        "imports against the layers {LAYERS:?} (top-down):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_layer_check_reports_every_upward_import_and_nothing_else() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "runtime/agent.rs",
            "use crate::app::App;",
            &["runtime/agent.rs imports app"],
        ),
        (
            "runtime/middlewares/title.rs",
            "use crate::{\n    messages::Message,\n    http::{ApiError, ApiJson},\n};",
            &["runtime/middlewares/title.rs imports http"],
        ),
        (
            "app.rs",
            "let router = crate::http::router(self.clone());",
            &["app.rs imports http"],
        ),
        (
            "http/mod.rs",
            "use crate::server::RunningGateway;",
            &["http/mod.rs imports server"],
        ),
        (
            "store/runs.rs",
            "use crate::runtime::RunContext;",
            &["store/runs.rs imports runtime"],
        ),
        (
            "http/runs.rs",
            "use crate::app::App;\nuse crate::runtime::runs::RunManager;",
            &[],
        ),
        ("server.rs", "use crate::{app::App, http};", &[]),
        (
            "runtime/agent.rs",
            "use crate::runtime::state::AgentState;",
            &[],
        ),
        (
            "runtime/runs.rs",
            "use crate::{store::Store, tools::Tool};",
            &[],
        ),
        (
            "runtime/context.rs",
            "/// Unlike [`crate::app::App`], this…",
            &[],
        ),
        ("tools/mod.rs", "use crate::models::ToolSpec;", &[]),
    ];
    for (path, source, expected) in cases {
        let found = violations(&[(path.to_string(), source.to_string())]);
        assert_eq!(found, *expected, "{path}: {source}");
    }
}
