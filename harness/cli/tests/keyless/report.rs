//! What a red `keyless test` says, as a CI log shows it (issue 47): a changed golden's diff
//! under the fixture's row (through the Action's own script, `dist/action/run.sh`), a miss's
//! first differing field and next step without a dead `keyless review` hint, a dead gateway's
//! last lines, and `ignore_events` leaving named event types out of the golden.

use std::path::Path;
use std::process::Command;

use harness::adapter::process::placeholder_key;
use harness::workspace::golden_dir;
use serde_json::Value;

use super::{BaseUrl, FIXTURE, UserRepo, said, toml_string};

/// The workspace's root (`dist/action/run.sh` is there).
fn workspace_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("harness/cli is two folders below the root")
}

impl UserRepo {
    /// The user's golden of `FIXTURE`: the workspace's, so a run passes.
    fn golden_copy(&self) -> std::path::PathBuf {
        let golden = self.path().join("golden");
        std::fs::create_dir_all(&golden).unwrap();
        let path = golden.join(format!("{FIXTURE}.snap"));
        std::fs::copy(golden_dir().join(format!("{FIXTURE}.snap")), &path).unwrap();
        path
    }

    /// Runs the Action's script (`dist/action/run.sh`) in the user's folder as a CI job does,
    /// its standard output and error in one log. Its Python is a stand-in whose `-m venv`
    /// makes a venv holding this build's `keyless` and whose `-m pip` installs nothing: the
    /// script is what runs, not a package index.
    fn action(&self, args: &str) -> (Option<i32>, String) {
        let python = self.path().join("stand-in-python");
        std::fs::write(
            &python,
            "#!/bin/sh\nif [ \"$2\" = venv ]; then mkdir -p \"$3/bin\" && cp \"$0\" \"$3/bin/python\" \
             && ln -s \"$KEYLESS_BUILT\" \"$3/bin/keyless\"; fi\n",
        )
        .unwrap();
        std::fs::set_permissions(
            &python,
            <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755),
        )
        .unwrap();
        let runner_temp = tempfile::tempdir().unwrap();
        let output = Command::new("sh")
            .arg("-c")
            .arg("exec \"$0\" 2>&1")
            .arg(workspace_root().join("dist/action/run.sh"))
            .current_dir(self.path())
            .env("KEYLESS_BUILT", env!("CARGO_BIN_EXE_keyless"))
            .env("KEYLESS_PYTHON", &python)
            .env("KEYLESS_PACKAGE", "keyless-stand-in")
            .env("KEYLESS_ARGS", args)
            .env("RUNNER_TEMP", runner_temp.path())
            .env("OPENAI_API_KEY", placeholder_key())
            .env_remove("CARGO_MANIFEST_DIR")
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        )
    }
}

/// Issue 47, item 1: a changed golden's CI log (the Action's script) shows the diff right under
/// the fixture's row, with no escape codes (not a terminal); `--json` carries it too.
#[test]
fn a_changed_golden_shows_its_diff_under_its_row_in_the_actions_log_and_in_json() {
    let repo = UserRepo::new();
    let golden = repo.golden_copy();
    let text = std::fs::read_to_string(&golden).unwrap();
    // The committed golden says `end` where the gateway sends `end`: rename it in the golden.
    let changed = text.replacen("\"event\": \"end\"", "\"event\": \"finished\"", 1);
    assert_ne!(changed, text, "the golden has an end event");
    std::fs::write(&golden, &changed).unwrap();

    let (code, log) = repo.action("");
    assert_eq!(code, Some(1), "{log}");
    let row = log
        .lines()
        .position(|line| line.starts_with("write_read_file") && line.contains("changed"))
        .unwrap_or_else(|| panic!("no changed row in\n{log}"));
    let after: Vec<&str> = log.lines().skip(row).collect();
    let removed = after
        .iter()
        .position(|line| *line == "-      \"event\": \"finished\",");
    let added = after
        .iter()
        .position(|line| *line == "+      \"event\": \"end\",");
    assert!(
        removed.is_some() && added.is_some() && after.iter().any(|line| line.starts_with("@@")),
        "no diff under the row:\n{log}"
    );
    assert!(!log.contains('\u{1b}'), "escape codes in a CI log:\n{log}");

    let json = repo.keyless(&["test", "--json"]);
    let line: Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    let diff = line["golden_diff"]["diff"].as_str().unwrap_or_default();
    assert!(
        diff.contains("-      \"event\": \"finished\",")
            && line["golden_diff"]["lines_left_out"] == 0,
        "{line:#}"
    );
}

/// Issue 47, items 2 and 3: a miss's log names the first differing field and the next step,
/// in a stranger's words: no `keyless review` (no pending golden is written for a miss), no
/// workspace commands, no DeerFlow vocabulary; the follow-up's miss, a consequence of the
/// first, is one short line saying so.
#[test]
fn a_miss_names_the_differing_field_and_the_next_step_without_a_review_hint() {
    let repo = UserRepo::new();
    repo.golden_copy();
    // Message names off: the conversation the gateway sends differs from the recorded one.
    let drifted = repo.gateway_cmd("drifted", false, BaseUrl::Env);
    std::fs::write(
        repo.path().join("keyless.toml"),
        format!(
            "gateway_cmd = {}\nready = \"/health\"\n",
            toml_string(&drifted)
        ),
    )
    .unwrap();
    let (code, log) = repo.action("");
    assert_eq!(code, Some(1), "{log}");
    if std::env::var_os("KEYLESS_TEST_SHOW_LOG").is_some() {
        eprintln!("{log}");
    }
    for says in [
        "first differing field: ",
        "record the fixture again (keyless record)",
    ] {
        assert!(log.contains(says), "{says:?} not in\n{log}");
    }
    for never in [
        "keyless review",
        "cargo insta",
        "in this workspace",
        "cargo xtask",
        "graph changed",
        "Normalized input",
        "'type': 'ai'",
        "\"type\": \"ai\"",
    ] {
        assert!(!log.contains(never), "{never:?} in\n{log}");
    }

    let json = repo.keyless(&["test", "--json"]);
    let line: Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    let misses = line["misses"].as_array().cloned().unwrap_or_default();
    assert!(
        misses
            .first()
            .is_some_and(|miss| miss["first_differing_field"].is_string()
                && miss["consequence_of"].is_null()),
        "{line:#}"
    );
    for (index, miss) in misses.iter().enumerate().skip(1) {
        let diagnostic = miss["diagnostic"].as_str().unwrap_or_default();
        if miss["consequence_of"].is_number() {
            assert!(
                diagnostic.contains("a consequence of miss") && !diagnostic.contains('\n'),
                "miss {index}: {line:#}"
            );
        }
    }
}

/// Issue 47, item 4: a gateway that dies at boot is explained by its log's last lines in the
/// failure itself, escaped.
#[test]
fn a_gateway_that_dies_at_boot_shows_its_last_lines_escaped() {
    let repo = UserRepo::new();
    let dies = "echo starting; for i in $(seq 1 40); do echo line $i; done; \
        printf 'ModuleNotFoundError: No module named uvicorn\\033[2J\\n' >&2; exit 1";
    let output = repo.keyless(&["test", "--gateway-cmd", dies]);
    let everything = said(&output);
    assert_eq!(output.status.code(), Some(1), "{everything}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("its last lines:")
            && stderr.contains("  | ModuleNotFoundError: No module named uvicorn\\u{1b}[2J")
            && stderr.contains("  | line 40")
            && !stderr.contains("  | starting"),
        "{everything}"
    );
    assert!(!everything.contains('\u{1b}'), "a raw ESC: {everything}");
}

/// Issue 47, item 5: `ignore_events` leaves the named event types out of the golden, says how
/// many frames each type dropped, and the golden is red again once the rule is removed; a
/// `[fixture."NAME"]` table that names no fixture is a configuration error.
#[test]
fn ignored_events_leave_the_golden_and_are_counted_and_removing_the_rule_turns_it_red() {
    let repo = UserRepo::new();
    let config = std::fs::read_to_string(repo.path().join("keyless.toml")).unwrap();
    let write = |extra: &str| {
        std::fs::write(repo.path().join("keyless.toml"), format!("{config}{extra}")).unwrap();
    };
    write(&format!(
        "ignore_events = [\"custom\"]\n[fixture.\"{FIXTURE}\"]\nignore_events = [\"values\"]\n"
    ));
    let first = repo.keyless(&["test"]);
    assert_eq!(first.status.code(), Some(1), "{}", said(&first));
    let accepted = repo.keyless(&["accept"]);
    assert_eq!(accepted.status.code(), Some(0), "{}", said(&accepted));
    let golden = std::fs::read_to_string(repo.path().join(format!("golden/{FIXTURE}.snap")));
    assert!(
        !golden.unwrap().contains("\"values\""),
        "an ignored event in the golden"
    );
    let green = repo.keyless(&["test"]);
    assert_eq!(green.status.code(), Some(0), "{}", said(&green));
    let stdout = String::from_utf8_lossy(&green.stdout);
    assert!(
        stdout.contains("ignore_events left 0 custom, ") && stdout.contains(" values frame(s)"),
        "{}",
        said(&green)
    );
    let json = repo.keyless(&["test", "--json"]);
    let line: Value = serde_json::from_slice(&json.stdout).expect("one JSON object");
    assert!(
        line["ignored_events"]["values"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{line:#}"
    );

    write("ignore_events = [\"custom\"]\n");
    let red = repo.keyless(&["test"]);
    assert_eq!(red.status.code(), Some(1), "{}", said(&red));
    assert!(
        String::from_utf8_lossy(&red.stdout).contains("changed"),
        "{}",
        said(&red)
    );

    write("[fixture.\"no_such.flash\"]\nignore_events = [\"RAW\"]\n");
    let unknown = repo.keyless(&["test"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", said(&unknown));
    assert!(
        String::from_utf8_lossy(&unknown.stderr).contains("no_such.flash"),
        "{}",
        said(&unknown)
    );
}
