//! Scenario tests of the three tools through [`ToolRegistry`], the way the agent loop calls them:
//! the write/read scenario, escape attempts, and each tool's contract strings. Each test owns a
//! fresh temporary `DEER_FLOW_HOME` with a thread sandbox, an empty canary folder and an
//! `outside` folder beside it; escape tests assert that nothing outside the thread folder changed.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::read_tracker::content_version;
use super::tool_meta::READ_MARK_KEY;
use super::{ReadTracker, SandboxPaths, ToolContext, ToolOutput, ToolRegistry};
use crate::config::ToolLimitsConfig;

const SECRET: &str = "top secret";

/// A thread sandbox in a temporary home, with the tools and their state.
struct Fixture {
    _dir: TempDir,
    /// Canonical temporary root: `home/`, `canary/`, `outside/secret.txt`.
    root: PathBuf,
    paths: SandboxPaths,
    limits: ToolLimitsConfig,
    reads: ReadTracker,
    registry: ToolRegistry,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_limits(ToolLimitsConfig::default())
    }

    fn with_limits(limits: ToolLimitsConfig) -> Fixture {
        let dir = tempfile::tempdir().expect("failed to create a temporary directory");
        // Canonical, so that host paths in assertions match what the tools resolve.
        let root = fs::canonicalize(dir.path()).expect("failed to canonicalize the tempdir");
        let paths = SandboxPaths::for_thread(&root.join("home"), Some("u1"), "t1");
        paths
            .create_dirs()
            .expect("failed to create the sandbox folders");
        fs::create_dir(root.join("canary")).expect("failed to create the canary");
        fs::create_dir(root.join("outside")).expect("failed to create outside/");
        fs::write(root.join("outside/secret.txt"), SECRET).expect("failed to write the secret");
        Fixture {
            _dir: dir,
            root,
            paths,
            limits,
            reads: ReadTracker::default(),
            registry: ToolRegistry::with_builtins(),
        }
    }

    /// Calls tool `name` with `args`.
    async fn call(&self, name: &str, args: Value) -> String {
        let tool = self
            .registry
            .get(name)
            .unwrap_or_else(|| panic!("no tool named {name}"));
        let context = ToolContext {
            paths: &self.paths,
            limits: &self.limits,
            reads: &self.reads,
        };
        tool.call(&args, context).await
    }

    /// Runs tool `name` with `args`: its text and its message's extra `additional_kwargs`.
    async fn run(&self, name: &str, args: Value) -> ToolOutput {
        let tool = self
            .registry
            .get(name)
            .unwrap_or_else(|| panic!("no tool named {name}"));
        let context = ToolContext {
            paths: &self.paths,
            limits: &self.limits,
            reads: &self.reads,
        };
        tool.run(&args, context).await
    }

    async fn write(&self, path: &str, content: &str) -> String {
        self.call(
            "write_file",
            json!({"description": "test", "path": path, "content": content}),
        )
        .await
    }

    async fn append(&self, path: &str, content: &str) -> String {
        self.call(
            "write_file",
            json!({"description": "test", "path": path, "content": content, "append": true}),
        )
        .await
    }

    async fn read(&self, path: &str) -> String {
        self.call("read_file", json!({"description": "test", "path": path}))
            .await
    }

    async fn ls(&self, path: &str) -> String {
        self.call("ls", json!({"description": "test", "path": path}))
            .await
    }

    /// Writes a host file under the thread's `user-data` folder, creating parents.
    fn put(&self, relative: &str, content: impl AsRef<[u8]>) {
        let host = self.paths.user_data.join(relative);
        if let Some(parent) = host.parent() {
            fs::create_dir_all(parent).expect("failed to create parent folders");
        }
        fs::write(&host, content).expect("failed to write a fixture file");
    }

    fn host_text(&self, relative: &str) -> String {
        fs::read_to_string(self.paths.user_data.join(relative)).unwrap_or_else(|error| {
            panic!("cannot read {relative}: {error}");
        })
    }

    /// Every path under the temporary root but outside the thread's `user-data` folder, with
    /// its content for files: what must not change when the agent tries to escape.
    fn outside_snapshot(&self) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
        fn visit(dir: &Path, skip: &Path, into: &mut BTreeMap<PathBuf, Option<Vec<u8>>>) {
            let Ok(entries) = fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path == skip {
                    continue;
                }
                let is_dir = entry.file_type().is_ok_and(|kind| kind.is_dir());
                into.insert(
                    path.clone(),
                    if is_dir { None } else { fs::read(&path).ok() },
                );
                if is_dir {
                    visit(&path, skip, into);
                }
            }
        }
        let mut snapshot = BTreeMap::new();
        visit(&self.root, &self.paths.user_data, &mut snapshot);
        snapshot
    }

    #[track_caller]
    fn assert_canary_empty(&self) {
        let entries: Vec<_> = fs::read_dir(self.root.join("canary"))
            .expect("the canary folder is gone")
            .flatten()
            .map(|entry| entry.path())
            .collect();
        assert!(entries.is_empty(), "canary is not empty: {entries:?}");
        assert_eq!(
            fs::read_to_string(self.root.join("outside/secret.txt"))
                .ok()
                .as_deref(),
            Some(SECRET)
        );
    }
}

#[cfg(unix)]
fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("failed to create a symlink");
}

// ---------------------------------------------------------------------------------------------
// The write/read scenario (docs/gateway-contract.md §7.3 frames 8 and 11)
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn write_then_read_the_scenario_file() {
    let fixture = Fixture::new();
    assert_eq!(
        fixture
            .write("/mnt/user-data/outputs/note.txt", "hi from replay.")
            .await,
        "OK"
    );
    assert_eq!(
        fixture.read("/mnt/user-data/outputs/note.txt").await,
        "hi from replay."
    );
    assert_eq!(
        fs::read_to_string(fixture.paths.outputs.join("note.txt"))
            .ok()
            .as_deref(),
        Some("hi from replay.")
    );
}

/// A read that showed the model file content carries DeerFlow's read mark: the path read,
/// normalised, and the SHA-256 of the whole file; other reads and other tools carry none.
#[tokio::test]
async fn read_file_results_carry_the_read_mark() {
    let fixture = Fixture::new();
    fixture
        .write("/mnt/user-data/outputs/note.txt", "hi from replay.")
        .await;
    fixture.put("outputs/empty.txt", "");
    let hash = "5e51fd38cec2a69b15e0def3d7dffa83a7ad597fe376fd3a1f7f1d665f831016";
    let mark = |path: &str, hash: &str| Some(json!({"path": path, "hash": hash}));
    let note = "/mnt/user-data/outputs/note.txt";
    let table: Vec<(&str, Value, Option<Value>)> = vec![
        ("read_file", json!({"path": note}), mark(note, hash)),
        (
            "read_file",
            json!({"path": "/mnt/user-data//outputs/./note.txt"}),
            mark(note, hash),
        ),
        (
            "read_file",
            json!({"path": note, "start_line": 1, "end_line": 1}),
            mark(note, hash),
        ),
        (
            "read_file",
            json!({"path": "/mnt/user-data/outputs/empty.txt"}),
            mark("/mnt/user-data/outputs/empty.txt", &content_version(b"")),
        ),
        ("read_file", json!({"path": note, "start_line": 5}), None),
        ("read_file", json!({"path": note, "start_line": 0}), None),
        (
            "read_file",
            json!({"path": "/mnt/user-data/outputs/missing.txt"}),
            None,
        ),
        ("ls", json!({"path": "/mnt/user-data/outputs"}), None),
    ];
    for (tool, mut args, expected) in table {
        args["description"] = json!("test");
        let output = fixture.run(tool, args.clone()).await;
        assert_eq!(
            output.additional_kwargs.get(READ_MARK_KEY).cloned(),
            expected,
            "{tool} {args} → {:?}",
            output.text
        );
    }
}

#[test]
fn registry_has_the_three_tools_with_object_schemas() {
    let registry = ToolRegistry::with_builtins();
    let expected: &[(&str, &[&str], &[&str])] = &[
        ("ls", &["description", "path"], &["description", "path"]),
        (
            "read_file",
            &["description", "path", "start_line", "end_line"],
            &["description", "path"],
        ),
        (
            "write_file",
            &["description", "path", "content", "append"],
            &["description", "path", "content"],
        ),
    ];
    for (name, properties, required) in expected {
        let spec = registry
            .get(name)
            .unwrap_or_else(|| panic!("missing {name}"))
            .spec();
        assert_eq!(spec.name, *name);
        assert!(!spec.description.is_empty());
        assert_eq!(spec.parameters["type"], "object", "{name}");
        let keys: Vec<&str> = spec.parameters["properties"]
            .as_object()
            .map(|props| props.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(keys, *properties, "{name}");
        assert_eq!(spec.parameters["required"], json!(required), "{name}");
    }
    let read_spec = registry.get("read_file").map(|tool| tool.spec());
    let read_params = read_spec.map(|spec| spec.parameters).unwrap_or_default();
    assert_eq!(read_params["properties"]["start_line"]["minimum"], 1);
    assert_eq!(read_params["properties"]["end_line"]["minimum"], 1);
}

// ---------------------------------------------------------------------------------------------
// Escape attempts
// ---------------------------------------------------------------------------------------------

/// Lexical escapes: every tool refuses each path with its permission text naming the path as
/// given, and nothing outside the thread folder changes.
#[tokio::test]
async fn lexical_escape_attempts_are_refused() {
    let fixture = Fixture::new();
    let before = fixture.outside_snapshot();
    let attempts = [
        "/mnt/user-data/../x",
        "/mnt/user-data/outputs/../../x",
        "/mnt/user-data/outputs/../../../../../canary/x",
        "/mnt/user-data/outputs/../workspace/x",
        "/mnt/user-data/outputs/a/..",
        "/mnt/../mnt/user-data/outputs/x",
        "/../mnt/user-data/outputs/x",
        "..",
        "../canary/x",
        "/etc/passwd",
        "/tmp/x",
        "/mnt/user-data/outputsX/a",
        "/mnt/user-dataX/a",
        "/mnt/user-data/x.txt",
        "note.txt",
        "outputs/note.txt",
        "mnt/user-data/outputs/x",
        "/mnt/skills/public/x/SKILL.md",
        "/mnt/acp-workspace/x",
        "/",
        " /mnt/user-data/outputs/x",
    ];
    for path in attempts {
        assert_eq!(
            fixture.write(path, "pwned").await,
            format!("Error: Permission denied writing to file: {path}"),
            "write {path:?}"
        );
        assert_eq!(
            fixture.append(path, "pwned").await,
            format!("Error: Permission denied writing to file: {path}"),
            "append {path:?}"
        );
        assert_eq!(
            fixture.read(path).await,
            format!("Error: Permission denied reading file: {path}"),
            "read {path:?}"
        );
        assert_eq!(
            fixture.ls(path).await,
            format!("Error: Permission denied: {path}"),
            "ls {path:?}"
        );
    }
    assert_eq!(fixture.outside_snapshot(), before);
    fixture.assert_canary_empty();
    // Nothing was created inside user-data either, outside the three roots.
    let mut top: Vec<String> = fs::read_dir(&fixture.paths.user_data)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| entry.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    top.sort();
    assert_eq!(top, ["outputs", "uploads", "workspace"]);
}

/// Symlinks inside the sandbox that lead outside: refused for writing, reading and listing, and
/// left out of listings of their folder.
#[cfg(unix)]
#[tokio::test]
async fn symlink_escape_attempts_are_refused() {
    let fixture = Fixture::new();
    let outputs = &fixture.paths.outputs;
    symlink(&fixture.root.join("canary"), &outputs.join("to_canary"));
    symlink(&fixture.root.join("outside"), &outputs.join("to_outside"));
    symlink(
        &fixture.root.join("outside/secret.txt"),
        &outputs.join("secret_link.txt"),
    );
    symlink(
        &fixture.root.join("canary/new.txt"),
        &outputs.join("dangling.txt"),
    );
    // A relative symlink climbing out of the sandbox.
    symlink(
        Path::new("../../../../../../../canary"),
        &outputs.join("relative_up"),
    );
    let before = fixture.outside_snapshot();

    let write_denied = |path: &str| format!("Error: Permission denied writing to file: {path}");
    let read_denied = |path: &str| format!("Error: Permission denied reading file: {path}");
    let ls_denied = |path: &str| format!("Error: Permission denied: {path}");
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "write",
            "/mnt/user-data/outputs/to_canary/x.txt",
            write_denied("/mnt/user-data/outputs/to_canary/x.txt"),
        ),
        (
            "write",
            "/mnt/user-data/outputs/to_canary/deep/er/x.txt",
            write_denied("/mnt/user-data/outputs/to_canary/deep/er/x.txt"),
        ),
        (
            "write",
            "/mnt/user-data/outputs/relative_up/x.txt",
            write_denied("/mnt/user-data/outputs/relative_up/x.txt"),
        ),
        (
            "write",
            "/mnt/user-data/outputs/secret_link.txt",
            write_denied("/mnt/user-data/outputs/secret_link.txt"),
        ),
        (
            "write",
            "/mnt/user-data/outputs/dangling.txt",
            write_denied("/mnt/user-data/outputs/dangling.txt"),
        ),
        (
            "append",
            "/mnt/user-data/outputs/secret_link.txt",
            write_denied("/mnt/user-data/outputs/secret_link.txt"),
        ),
        (
            "append",
            "/mnt/user-data/outputs/dangling.txt",
            write_denied("/mnt/user-data/outputs/dangling.txt"),
        ),
        (
            "read",
            "/mnt/user-data/outputs/to_outside/secret.txt",
            read_denied("/mnt/user-data/outputs/to_outside/secret.txt"),
        ),
        (
            "read",
            "/mnt/user-data/outputs/secret_link.txt",
            read_denied("/mnt/user-data/outputs/secret_link.txt"),
        ),
        (
            "read",
            "/mnt/user-data/outputs/dangling.txt",
            read_denied("/mnt/user-data/outputs/dangling.txt"),
        ),
        (
            "ls",
            "/mnt/user-data/outputs/to_outside",
            ls_denied("/mnt/user-data/outputs/to_outside"),
        ),
        (
            "ls",
            "/mnt/user-data/outputs/to_canary/",
            ls_denied("/mnt/user-data/outputs/to_canary/"),
        ),
    ];
    for (action, path, expected) in &cases {
        let got = match *action {
            "write" => fixture.write(path, "pwned").await,
            "append" => fixture.append(path, "pwned").await,
            "read" => fixture.read(path).await,
            _ => fixture.ls(path).await,
        };
        assert_eq!(&got, expected, "{action} {path}");
        assert!(!got.contains(SECRET), "{action} {path} leaked the secret");
    }
    // The links themselves are not listed: the listing reveals nothing beyond the sandbox.
    assert_eq!(fixture.ls("/mnt/user-data/outputs").await, "(empty)");
    assert_eq!(fixture.outside_snapshot(), before);
    fixture.assert_canary_empty();
}

/// Finding 3 of issue 10 ("sandbox roots and links"): a root folder (`workspace`, `uploads`,
/// `outputs`) or `user-data` itself replaced by a symlink leading out of the thread folder is
/// refused by every tool, and nothing outside changes.
#[cfg(unix)]
#[tokio::test]
async fn sandbox_roots_and_links_a_root_replaced_by_a_symlink_is_refused() {
    let fixture = Fixture::new();
    let outside = fixture.root.join("outside");
    fs::remove_dir(&fixture.paths.outputs).expect("failed to remove outputs/");
    symlink(&outside, &fixture.paths.outputs);
    fs::remove_dir(&fixture.paths.uploads).expect("failed to remove uploads/");
    // Relative, climbing out of the thread folder.
    symlink(
        Path::new("../../../../../../canary"),
        &fixture.paths.uploads,
    );
    let before = fixture.outside_snapshot();
    for (root, file) in [("outputs", "secret.txt"), ("uploads", "x.txt")] {
        let path = format!("/mnt/user-data/{root}/{file}");
        for got in [
            fixture.write(&path, "pwned").await,
            fixture.append(&path, "pwned").await,
        ] {
            assert_eq!(
                got,
                format!("Error: Permission denied writing to file: {path}")
            );
        }
        assert_eq!(
            fixture.read(&path).await,
            format!("Error: Permission denied reading file: {path}")
        );
        let dir = format!("/mnt/user-data/{root}");
        assert_eq!(
            fixture.ls(&dir).await,
            format!("Error: Permission denied: {dir}")
        );
    }
    // The replaced roots are not listed either; the intact one still works.
    assert_eq!(
        fixture.write("/mnt/user-data/workspace/ok.txt", "ok").await,
        "OK"
    );
    assert_eq!(
        fixture.ls("/mnt/user-data").await,
        "/mnt/user-data/workspace/\n/mnt/user-data/workspace/ok.txt"
    );
    assert_eq!(fixture.outside_snapshot(), before);
    fixture.assert_canary_empty();

    // `user-data` itself replaced by a symlink to a folder outside the thread.
    let other = Fixture::new();
    let fake = other.root.join("outside/fake-user-data");
    fs::create_dir_all(fake.join("workspace")).expect("failed to create the fake root");
    fs::write(fake.join("workspace/secret.txt"), SECRET).expect("failed to write");
    fs::remove_dir_all(&other.paths.user_data).expect("failed to remove user-data/");
    symlink(&fake, &other.paths.user_data);
    let path = "/mnt/user-data/workspace/secret.txt";
    assert!(!other.read(path).await.contains(SECRET));
    assert!(other.write(path, "pwned").await.starts_with("Error: "));
    assert_eq!(
        fs::read_to_string(fake.join("workspace/secret.txt"))
            .ok()
            .as_deref(),
        Some(SECRET)
    );
    assert!(
        other
            .ls("/mnt/user-data/workspace")
            .await
            .starts_with("Error: ")
    );
}

/// Finding 3 of issue 10: a planted hard link to a file outside the sandbox is refused for
/// writing (overwrite and append, gate on or off), so the outside file never changes.
#[cfg(unix)]
#[tokio::test]
async fn sandbox_roots_and_links_a_hard_link_is_refused_for_writing() {
    for read_before_write in [true, false] {
        let fixture = Fixture::with_limits(ToolLimitsConfig {
            read_before_write,
            ..ToolLimitsConfig::default()
        });
        let secret = fixture.root.join("outside/secret.txt");
        fs::hard_link(&secret, fixture.paths.outputs.join("linked.txt"))
            .expect("failed to create a hard link");
        let path = "/mnt/user-data/outputs/linked.txt";
        let refused =
            format!("Error: Permission denied writing to file: {path} (it has other hard links)");
        assert_eq!(fixture.read(path).await, SECRET);
        assert_eq!(fixture.write(path, "pwned").await, refused);
        assert_eq!(fixture.read(path).await, SECRET);
        assert_eq!(fixture.append(path, "pwned").await, refused);
        assert_eq!(fs::read_to_string(&secret).ok().as_deref(), Some(SECRET));
    }
}

/// Finding 3 of issue 10: a planted FIFO blocked a worker thread forever. Every tool now answers
/// at once: reading and writing a FIFO is refused, and `ls` lists it without opening it.
#[cfg(unix)]
#[tokio::test]
async fn sandbox_roots_and_links_a_fifo_is_refused_without_blocking() {
    let fixture = Fixture::new();
    let fifo = fixture.paths.outputs.join("pipe");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("failed to run mkfifo");
    assert!(status.success(), "mkfifo failed");
    let path = "/mnt/user-data/outputs/pipe";
    let read_refused =
        format!("Error: Permission denied reading file: {path} (not a regular file)");
    let write_refused =
        format!("Error: Permission denied writing to file: {path} (not a regular file)");
    let calls: Vec<(&str, Value, String)> = vec![
        (
            "read_file",
            json!({"description": "t", "path": path}),
            read_refused,
        ),
        (
            "write_file",
            json!({"description": "t", "path": path, "content": "x"}),
            write_refused.clone(),
        ),
        (
            "write_file",
            json!({"description": "t", "path": path, "content": "x", "append": true}),
            write_refused,
        ),
        (
            "ls",
            json!({"description": "t", "path": "/mnt/user-data/outputs"}),
            path.to_string(),
        ),
    ];
    for (tool, args, expected) in calls {
        let call = fixture.call(tool, args.clone());
        let got = match tokio::time::timeout(std::time::Duration::from_secs(10), call).await {
            Ok(got) => got,
            Err(_) => {
                // Release the blocked worker thread (open both ends), so the runtime can stop.
                let _reader = fs::OpenOptions::new().read(true).write(true).open(&fifo);
                panic!("{tool} {args} blocked on the FIFO");
            }
        };
        assert_eq!(got, expected, "{tool} {args}");
    }
}

/// A relative symlink whose target stays inside the sandbox is fine, and listed where it is. An
/// absolute one is refused even when its target is inside: paths are resolved beneath
/// `user-data`, where nothing starts from `/`.
#[cfg(unix)]
#[tokio::test]
async fn symlinks_inside_the_sandbox_work() {
    let fixture = Fixture::new();
    fixture.put("workspace/data/a.txt", "inside");
    symlink(
        Path::new("../workspace/data"),
        &fixture.paths.outputs.join("data_link"),
    );
    symlink(
        &fixture.paths.workspace.join("data"),
        &fixture.paths.outputs.join("absolute_link"),
    );
    assert_eq!(
        fixture.read("/mnt/user-data/outputs/data_link/a.txt").await,
        "inside"
    );
    assert_eq!(
        fixture
            .read("/mnt/user-data/outputs/absolute_link/a.txt")
            .await,
        "Error: Permission denied reading file: /mnt/user-data/outputs/absolute_link/a.txt"
    );
    assert_eq!(
        fixture.ls("/mnt/user-data/outputs").await,
        "/mnt/user-data/outputs/data_link/"
    );
}

// ---------------------------------------------------------------------------------------------
// ls
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn ls_lists_two_levels_sorted_with_directory_slashes() {
    let fixture = Fixture::new();
    fixture.put("outputs/b.txt", "b");
    fixture.put("outputs/a/one.txt", "1");
    fixture.put("outputs/a/deeper/hidden.txt", "too deep");
    fixture.put("outputs/a-b.txt", "ab");
    fixture.put("outputs/.dot", "dot");
    fs::create_dir_all(fixture.paths.outputs.join("empty_dir")).expect("mkdir");
    let expected = [
        "/mnt/user-data/outputs/.dot",
        "/mnt/user-data/outputs/a-b.txt",
        "/mnt/user-data/outputs/a/",
        "/mnt/user-data/outputs/a/deeper/",
        "/mnt/user-data/outputs/a/one.txt",
        "/mnt/user-data/outputs/b.txt",
        "/mnt/user-data/outputs/empty_dir/",
    ]
    .join("\n");
    for path in [
        "/mnt/user-data/outputs",
        "/mnt/user-data/outputs/",
        "/mnt/user-data//./outputs",
    ] {
        assert_eq!(fixture.ls(path).await, expected, "ls {path}");
    }
}

#[tokio::test]
async fn ls_of_the_common_parent_shows_the_three_roots_only() {
    let fixture = Fixture::new();
    fixture.put("workspace/w.txt", "w");
    fixture.put("workspace/sub/deep.txt", "too deep");
    fixture.put("stray.txt", "not in a root");
    assert_eq!(
        fixture.ls("/mnt/user-data").await,
        [
            "/mnt/user-data/outputs/",
            "/mnt/user-data/uploads/",
            "/mnt/user-data/workspace/",
            "/mnt/user-data/workspace/sub/",
            "/mnt/user-data/workspace/w.txt",
        ]
        .join("\n")
    );
}

#[tokio::test]
async fn ls_messages() {
    let fixture = Fixture::new();
    fixture.put("outputs/file.txt", "x");
    let cases = [
        ("/mnt/user-data/uploads", "(empty)"),
        (
            "/mnt/user-data/outputs/missing",
            "Error: Directory not found: /mnt/user-data/outputs/missing",
        ),
        (
            "/mnt/user-data/outputs/file.txt",
            "Error: Directory not found: /mnt/user-data/outputs/file.txt",
        ),
        (
            "/mnt/user-data/outputs/file.txt/sub",
            "Error: Directory not found: /mnt/user-data/outputs/file.txt/sub",
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(fixture.ls(path).await, expected, "ls {path}");
    }
    assert_eq!(
        fixture.call("ls", json!({"description": "x"})).await,
        "Error: Missing required argument 'path'"
    );
    assert_eq!(
        fixture.call("ls", json!({"path": 42})).await,
        "Error: Argument 'path' must be a string, not a number"
    );
}

#[tokio::test]
async fn ls_truncates_after_20000_chars() {
    let fixture = Fixture::new();
    for index in 0..400 {
        fixture.put(
            &format!("workspace/file-{index:04}-{}.txt", "x".repeat(40)),
            "",
        );
    }
    let full_lines: Vec<String> = {
        let mut lines: Vec<String> = (0..400)
            .map(|index| {
                format!(
                    "/mnt/user-data/workspace/file-{index:04}-{}.txt",
                    "x".repeat(40)
                )
            })
            .collect();
        lines.sort();
        lines
    };
    let full = full_lines.join("\n");
    assert!(full.len() > 20_000);
    let got = fixture.ls("/mnt/user-data/workspace").await;
    let expected = format!(
        "{}\n... [truncated: showing first 20000 of {} chars. Use a more specific path to see \
         fewer results] ...",
        &full[..20_000],
        full.len()
    );
    assert_eq!(got, expected);
}

// ---------------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn read_file_ranges_and_messages() {
    let fixture = Fixture::new();
    fixture.put("uploads/lines.txt", "one\ntwo\nthree\n");
    fixture.put("uploads/empty.txt", "");
    fixture.put("uploads/blank_middle.txt", "a\n\nc");
    let path = "/mnt/user-data/uploads/lines.txt";
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "one\ntwo\nthree\n"),
        (json!({"start_line": 1, "end_line": 1}), "one"),
        (json!({"start_line": 2}), "two\nthree"),
        (json!({"end_line": 2}), "one\ntwo"),
        (json!({"start_line": 2, "end_line": 3}), "two\nthree"),
        (json!({"start_line": 3, "end_line": 100}), "three"),
        (json!({"start_line": "2", "end_line": 2.0}), "two"),
        (json!({"start_line": 0}), "(start_line must be >= 1)"),
        (
            json!({"start_line": -5, "end_line": 1}),
            "(start_line must be >= 1)",
        ),
        (json!({"end_line": 0}), "(end_line must be >= 1)"),
        (
            json!({"start_line": 3, "end_line": 2}),
            "(start_line > end_line \u{2014} no lines in range)",
        ),
        (json!({"start_line": 4}), "(start_line exceeds file length)"),
        (
            json!({"start_line": 40, "end_line": 50}),
            "(start_line exceeds file length)",
        ),
        (
            json!({"start_line": "two"}),
            "Error: Argument 'start_line' must be an integer, not a string",
        ),
    ];
    for (range, expected) in cases {
        let mut args = json!({"description": "test", "path": path});
        if let (Some(args), Some(range)) = (args.as_object_mut(), range.as_object()) {
            args.extend(range.clone());
        }
        assert_eq!(
            fixture.call("read_file", args.clone()).await,
            expected,
            "{args}"
        );
    }
    assert_eq!(
        fixture.read("/mnt/user-data/uploads/empty.txt").await,
        "(empty)"
    );
    let ranged = |path: &str, start: i64, end: i64| json!({"description": "t", "path": path, "start_line": start, "end_line": end});
    assert_eq!(
        fixture
            .call(
                "read_file",
                ranged("/mnt/user-data/uploads/empty.txt", 1, 1)
            )
            .await,
        "(empty)"
    );
    assert_eq!(
        fixture
            .call(
                "read_file",
                ranged("/mnt/user-data/uploads/empty.txt", 2, 3)
            )
            .await,
        "(start_line exceeds file length)"
    );
    assert_eq!(
        fixture
            .call(
                "read_file",
                ranged("/mnt/user-data/uploads/blank_middle.txt", 2, 2)
            )
            .await,
        "(empty)"
    );
}

#[tokio::test]
async fn read_file_errors() {
    let fixture = Fixture::new();
    fixture.put(
        "uploads/image.png",
        [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0xff],
    );
    fixture.put("uploads/nul.txt", b"text\0with nul");
    fixture.put("uploads/latin1.txt", [b'c', b'a', b'f', 0xe9]);
    let binary = |path: &str| {
        format!(
            "Error: cannot read '{path}' as text \u{2014} it appears to be a binary file (e.g. \
             .xlsx, .pdf, or an image). read_file only supports UTF-8 text. Use bash with a \
             suitable library instead (pandas/openpyxl for spreadsheets), or view_image for \
             images."
        )
    };
    let cases = [
        (
            "/mnt/user-data/uploads/image.png",
            binary("/mnt/user-data/uploads/image.png"),
        ),
        (
            "/mnt/user-data/uploads/nul.txt",
            binary("/mnt/user-data/uploads/nul.txt"),
        ),
        (
            "/mnt/user-data/uploads/latin1.txt",
            binary("/mnt/user-data/uploads/latin1.txt"),
        ),
        (
            "/mnt/user-data/uploads",
            "Error: Path is a directory, not a file: /mnt/user-data/uploads".to_string(),
        ),
        (
            "/mnt/user-data/uploads/missing.txt",
            "Error: File not found: /mnt/user-data/uploads/missing.txt".to_string(),
        ),
        (
            "/mnt/user-data/uploads/image.png/x",
            "Error: File not found: /mnt/user-data/uploads/image.png/x".to_string(),
        ),
        (
            "/mnt/user-data/uploads/no/such/dir/x",
            "Error: File not found: /mnt/user-data/uploads/no/such/dir/x".to_string(),
        ),
    ];
    for (path, expected) in cases {
        assert_eq!(fixture.read(path).await, expected, "read {path}");
    }
    assert_eq!(
        fixture.call("read_file", json!({"path": ""})).await,
        "Error: Argument 'path' must not be empty"
    );
}

#[tokio::test]
async fn read_file_truncates_after_50000_chars() {
    let fixture = Fixture::new();
    // Multi-byte characters: the limit and the counts are in characters.
    let content = "é".repeat(50_010);
    fixture.put("workspace/big.txt", &content);
    let got = fixture.read("/mnt/user-data/workspace/big.txt").await;
    assert_eq!(
        got,
        format!(
            "{}\n... [truncated: showing first 50000 of 50010 chars. Use start_line/end_line to \
             read a specific range] ...",
            "é".repeat(50_000)
        )
    );
    // Exactly at the limit: untouched.
    fixture.put("workspace/exact.txt", "x".repeat(50_000));
    assert_eq!(
        fixture.read("/mnt/user-data/workspace/exact.txt").await,
        "x".repeat(50_000)
    );
}

#[tokio::test]
async fn long_errors_are_shortened_in_the_middle() {
    let fixture = Fixture::new();
    // Many short segments: one long name would hit the OS's name-length limit instead.
    let path = format!("/mnt/user-data/uploads/{}x.txt", "abcdefghi/".repeat(300));
    let got = fixture.read(&path).await;
    assert_eq!(got.chars().count(), 2000);
    assert!(
        got.starts_with("Error: File not found: /mnt/user-data/uploads/abcdefghi/"),
        "{got}"
    );
    assert!(got.ends_with("abcdefghi/x.txt"), "{got}");
    assert!(got.contains(" chars omitted] ...\n"), "{got}");
}

// ---------------------------------------------------------------------------------------------
// write_file
// ---------------------------------------------------------------------------------------------

#[tokio::test]
async fn write_file_size_limit() {
    let limited = Fixture::with_limits(ToolLimitsConfig {
        write_file_max_bytes: 10,
        read_before_write: true,
    });
    let path = "/mnt/user-data/outputs/big.txt";
    let refused = limited.write(path, "0123456789A").await;
    assert!(
        refused.starts_with(
            "Error: write_file content (11 bytes) exceeds the 10-byte single-call limit. \
             Split the content into smaller pieces: "
        ),
        "{refused}"
    );
    assert!(!limited.paths.outputs.join("big.txt").exists());
    // At the limit is fine.
    assert_eq!(limited.write(path, "0123456789").await, "OK");
    assert_eq!(limited.read(path).await, "0123456789");

    for disabled in [0, -1] {
        let unlimited = Fixture::with_limits(ToolLimitsConfig {
            write_file_max_bytes: disabled,
            read_before_write: true,
        });
        let content = "z".repeat(200_000);
        assert_eq!(
            unlimited.write(path, &content).await,
            "OK",
            "limit {disabled}"
        );
        assert_eq!(unlimited.host_text("outputs/big.txt"), content);
    }
}

/// Finding 6 of issue 10: `append: true` bypassed the limit (a 5 MB append was accepted). The
/// limit applies to the resulting file: an append that would make the file larger is refused and
/// leaves the file as it was; appends that stay within it pass.
#[tokio::test]
async fn append_bypasses_write_file_limit() {
    let limited = Fixture::with_limits(ToolLimitsConfig {
        write_file_max_bytes: 10,
        read_before_write: true,
    });
    let path = "/mnt/user-data/outputs/log.txt";
    let over = |total: usize| {
        format!(
            "Error: write_file append would make {path} {total} bytes, over the 10-byte file \
             limit. Write the rest to another file."
        )
    };
    // A new file, one call far over the limit (the finding's 5 MB, scaled down).
    assert_eq!(limited.append(path, &"x".repeat(5_000)).await, over(5_000));
    assert!(!limited.paths.outputs.join("log.txt").exists());
    // Growing an existing file past the limit, one small append at a time.
    assert_eq!(limited.append(path, "012345").await, "OK");
    assert_eq!(limited.read(path).await, "012345");
    assert_eq!(limited.append(path, "6789A").await, over(11));
    assert_eq!(limited.host_text("outputs/log.txt"), "012345");
    assert_eq!(limited.read(path).await, "012345");
    assert_eq!(limited.append(path, "6789").await, "OK");
    assert_eq!(limited.host_text("outputs/log.txt"), "0123456789");
    // A file already at the limit takes no more; a disabled limit takes anything.
    assert_eq!(limited.read(path).await, "0123456789");
    assert_eq!(limited.append(path, "A").await, over(11));
    let unlimited = Fixture::with_limits(ToolLimitsConfig {
        write_file_max_bytes: 0,
        read_before_write: false,
    });
    assert_eq!(unlimited.append(path, &"y".repeat(200_000)).await, "OK");
}

#[tokio::test]
async fn read_before_write_gate() {
    let fixture = Fixture::new();
    let path = "/mnt/user-data/workspace/draft.md";
    let blocked = format!(
        "Error: write_file blocked \u{2014} {path} already exists and you have not read its \
         current version. Any write invalidates earlier reads, so re-read before every \
         modification. Call read_file on it (a ranged read of the relevant section is enough, \
         e.g. the last ~30 lines before an append), check what is already there, then retry."
    );
    // Creating a new file is never blocked, even in a folder that does not exist yet.
    assert_eq!(fixture.write(path, "v1\n").await, "OK");
    // Our own write invalidated nothing we had, and recorded nothing: the overwrite is blocked.
    assert_eq!(fixture.write(path, "v2\n").await, blocked);
    assert_eq!(fixture.append(path, "more\n").await, blocked);
    assert_eq!(fixture.host_text("workspace/draft.md"), "v1\n");
    // After a read the overwrite passes...
    assert_eq!(fixture.read(path).await, "v1\n");
    assert_eq!(fixture.write(path, "v2\n").await, "OK");
    // ...and invalidates that read.
    assert_eq!(fixture.write(path, "v3\n").await, blocked);
    // A ranged read is enough, also for an append.
    let ranged = json!({"description": "t", "path": path, "start_line": 1, "end_line": 1});
    assert_eq!(fixture.call("read_file", ranged).await, "v2");
    assert_eq!(fixture.append(path, "tail\n").await, "OK");
    assert_eq!(fixture.append(path, "again\n").await, blocked);
    assert_eq!(fixture.host_text("workspace/draft.md"), "v2\ntail\n");
    // A change behind the agent's back makes its read stale.
    assert_eq!(fixture.read(path).await, "v2\ntail\n");
    fixture.put("workspace/draft.md", "changed elsewhere\n");
    assert_eq!(fixture.write(path, "v4\n").await, blocked);
    // Appending to a missing file creates it, unblocked.
    assert_eq!(
        fixture
            .append("/mnt/user-data/workspace/log.txt", "line\n")
            .await,
        "OK"
    );
    // A failed write (here: a directory in the way) also reports the contract text.
    assert_eq!(
        fixture.write("/mnt/user-data/workspace", "x").await,
        "Error: Path is a directory, not a file: /mnt/user-data/workspace"
    );
}

#[tokio::test]
async fn read_before_write_can_be_switched_off() {
    let fixture = Fixture::with_limits(ToolLimitsConfig {
        write_file_max_bytes: 81_920,
        read_before_write: false,
    });
    let path = "/mnt/user-data/outputs/a.txt";
    assert_eq!(fixture.write(path, "1").await, "OK");
    assert_eq!(fixture.write(path, "2").await, "OK");
    assert_eq!(fixture.append(path, "3").await, "OK");
    assert_eq!(fixture.host_text("outputs/a.txt"), "23");
}

#[tokio::test]
async fn write_file_creates_parents_and_appends() {
    let fixture = Fixture::new();
    let path = "/mnt/user-data/outputs/reports/2026/q1.md";
    assert_eq!(fixture.write(path, "# Q1\n").await, "OK");
    assert_eq!(fixture.read(path).await, "# Q1\n");
    assert_eq!(fixture.append(path, "more\n").await, "OK");
    assert_eq!(
        fixture.host_text("outputs/reports/2026/q1.md"),
        "# Q1\nmore\n"
    );
    assert_eq!(
        fixture.ls("/mnt/user-data/outputs").await,
        "/mnt/user-data/outputs/reports/\n/mnt/user-data/outputs/reports/2026/"
    );
}

/// Finding 9 of issue 10: the sandbox folders are created `0700` and the files the tools create
/// `0600`, so other local users can read neither.
#[cfg(unix)]
#[tokio::test]
async fn sandbox_files_are_created_private() {
    use std::os::unix::fs::PermissionsExt;
    let mode = |path: &Path| {
        fs::metadata(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
            .permissions()
            .mode()
            & 0o777
    };
    let fixture = Fixture::new();
    let thread_root = fixture.paths.user_data.parent().expect("a thread folder");
    for dir in [
        thread_root,
        &fixture.paths.user_data,
        &fixture.paths.workspace,
        &fixture.paths.uploads,
        &fixture.paths.outputs,
    ] {
        assert_eq!(mode(dir), 0o700, "{}", dir.display());
    }
    let path = "/mnt/user-data/outputs/new/deeper/a.txt";
    assert_eq!(fixture.write(path, "private").await, "OK");
    assert_eq!(
        fixture.append("/mnt/user-data/outputs/b.txt", "x").await,
        "OK"
    );
    for dir in ["new", "new/deeper"] {
        assert_eq!(mode(&fixture.paths.outputs.join(dir)), 0o700, "{dir}");
    }
    for file in ["new/deeper/a.txt", "b.txt"] {
        assert_eq!(mode(&fixture.paths.outputs.join(file)), 0o600, "{file}");
    }
}

#[tokio::test]
async fn write_file_argument_errors() {
    let fixture = Fixture::new();
    let cases = [
        (
            json!({"description": "t", "content": "x"}),
            "Error: Missing required argument 'path'",
        ),
        (
            json!({"path": "/mnt/user-data/outputs/a"}),
            "Error: Missing required argument 'content'",
        ),
        (
            json!({"path": "/mnt/user-data/outputs/a", "content": {"text": "x"}}),
            "Error: Argument 'content' must be a string, not an object",
        ),
        (
            json!({"path": "/mnt/user-data/outputs/a", "content": "x", "append": "maybe"}),
            "Error: Argument 'append' must be a boolean, not a string",
        ),
        (json!(null), "Error: Missing required argument 'path'"),
    ];
    for (args, expected) in cases {
        assert_eq!(
            fixture.call("write_file", args.clone()).await,
            expected,
            "{args}"
        );
    }
    assert!(!fixture.paths.outputs.join("a").exists());
}

#[tokio::test]
async fn virtual_paths_in_content_round_trip() {
    let fixture = Fixture::new();
    let content = "See /mnt/user-data/uploads/data.csv and /mnt/user-data/outputs/chart.png.\n\
                   Parent: /mnt/user-data\nNot a path: /mnt/user-dataX\n";
    let path = "/mnt/user-data/workspace/notes.md";
    assert_eq!(fixture.write(path, content).await, "OK");
    let on_disk = fixture.host_text("workspace/notes.md");
    let user_data = fixture.paths.user_data.to_string_lossy().into_owned();
    assert_eq!(
        on_disk,
        format!(
            "See {user_data}/uploads/data.csv and {user_data}/outputs/chart.png.\n\
             Parent: {user_data}\nNot a path: /mnt/user-dataX\n"
        )
    );
    // read_file reverses the rewrite, whole or ranged: no host path reaches the model.
    assert_eq!(fixture.read(path).await, content);
    let ranged = json!({"description": "t", "path": path, "start_line": 2, "end_line": 2});
    assert_eq!(
        fixture.call("read_file", ranged).await,
        "Parent: /mnt/user-data"
    );
    // Host paths written by someone else are masked too.
    fixture.put(
        "outputs/log.txt",
        format!("wrote {}/chart.png", fixture.paths.outputs.display()),
    );
    assert_eq!(
        fixture.read("/mnt/user-data/outputs/log.txt").await,
        "wrote /mnt/user-data/outputs/chart.png"
    );
}
