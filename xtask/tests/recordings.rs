//! `cargo xtask recordings` as a user runs it (`docs/recording-format.md` §12, §13 "CLI"): the real
//! binary in a temporary state directory (`KEYLESS_STATE_DIR`), stdin not a terminal.

// Shared with the store's unit tests, which this package cannot import (see the file's own doc).
#[path = "../../harness/tests/support/recording_files.rs"]
mod recording_files;

use std::fs::File;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use keyless_runner::recordings::{Activation, RecordingsHome};
use recording_files::{DAY, HEADER, NO_HEADER, RECORDING_INFO_KEYS, age, mode_of, write_file};
use serde_json::{Value, json};
use tempfile::TempDir;

struct State {
    dir: TempDir,
}

impl State {
    fn new() -> Self {
        State {
            dir: tempfile::tempdir().expect("tempdir"),
        }
    }

    fn state(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    fn root(&self) -> PathBuf {
        self.state().join("recordings")
    }

    fn config_path(&self) -> PathBuf {
        self.state().join("config.json")
    }

    fn config(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.config_path()).expect("config.json"))
            .expect("config is JSON")
    }

    fn config_bytes(&self) -> Option<Vec<u8>> {
        std::fs::read(self.config_path()).ok()
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("recordings")
            .args(args)
            .env("KEYLESS_STATE_DIR", self.state())
            .stdin(Stdio::null())
            .output()
            .expect("failed to run xtask")
    }

    /// A recording file in the managed root, created by hand (the root is created 0700 first).
    fn managed(&self, id: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(self.state()).unwrap();
        if !self.root().exists() {
            std::fs::create_dir(self.root()).unwrap();
            std::fs::set_permissions(self.root(), std::fs::Permissions::from_mode(0o700)).unwrap();
        }
        let path = self.root().join(format!("{id}.jsonl"));
        write_file(&path, text, 0o600);
        path
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[track_caller]
fn assert_exit(output: &Output, code: i32) {
    assert_eq!(
        output.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(output),
        stderr(output)
    );
}

fn json_out(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {}", stdout(output)))
}

#[test]
fn recordings_without_a_verb_prints_help_and_exits_2() {
    let state = State::new();
    let output = state.run(&[]);
    assert_exit(&output, 2);
    let help = format!("{}{}", stdout(&output), stderr(&output));
    assert!(help.contains("Usage:"), "{help}");
    for verb in [
        "status", "record", "replay", "off", "list", "show", "delete", "prune",
    ] {
        assert!(help.contains(verb), "{verb} missing from help:\n{help}");
    }
    assert!(!state.state().exists(), "help touches nothing");
}

#[test]
fn recordings_parser_and_status_json_dispatch() {
    let state = State::new();
    let output = state.run(&["status", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(json_out(&output), json!({"file": "", "mode": "off"}));
    let output = state.run(&["status"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "mode: off\nfile: -\n");

    std::fs::create_dir_all(state.state()).unwrap();
    std::fs::write(
        state.config_path(),
        json!({"record_replay": {"mode": "replay", "file": "abc"}}).to_string(),
    )
    .unwrap();
    let output = state.run(&["status", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(json_out(&output), json!({"file": "abc", "mode": "replay"}));
    let output = state.run(&["status"]);
    assert_eq!(stdout(&output), "mode: replay\nfile: abc\n");
    assert!(
        !state.root().exists(),
        "status reads the configuration only"
    );

    std::fs::write(
        state.config_path(),
        json!({"record_replay": {"mode": "live"}}).to_string(),
    )
    .unwrap();
    let output = state.run(&["status"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output),
        "error: unsupported record_replay.mode: 'live'\n"
    );
}

#[test]
fn record_command_precreates_private_header_then_updates_config() {
    let state = State::new();
    let output = state.run(&["record", "--name", "fixture"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        "recording fixture; takes effect next start\n"
    );
    assert_eq!(
        state.config(),
        json!({"record_replay": {"mode": "record", "file": "fixture"}})
    );
    let path = state.root().join("fixture.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1, "header only: {text}");
    let header: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(header["type"], "header");
    assert_eq!(header["recording_id"], "fixture");
    assert_eq!(header["redaction_version"], 1);
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(mode_of(&state.root()), 0o700);

    let output = state.run(&["record"]);
    assert_exit(&output, 0);
    let id = stdout(&output)
        .strip_prefix("recording ")
        .and_then(|rest| rest.strip_suffix("; takes effect next start\n"))
        .unwrap()
        .to_string();
    // YYYYmmddTHHMMSSZ-<8 lowercase hex>
    let (stamp, suffix) = id.split_once('-').unwrap();
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    assert!(
        stamp.len() == 16
            && digits(&stamp[..8])
            && &stamp[8..9] == "T"
            && digits(&stamp[9..15])
            && stamp.ends_with('Z'),
        "{id}"
    );
    assert!(
        suffix.len() == 8
            && suffix
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
        "{id}"
    );
    assert!(state.root().join(format!("{id}.jsonl")).exists());

    let output = state.run(&["record", "--name", "bad id"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "error: invalid recording ID: 'bad id'\n");
}

#[test]
fn record_rolls_back_new_file_when_config_update_fails() {
    let state = State::new();
    std::fs::create_dir_all(state.config_path()).unwrap();
    let output = state.run(&["record", "--name", "doomed"]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).starts_with("error: "),
        "{}",
        stderr(&output)
    );
    assert!(
        state.root().is_dir(),
        "the file was created before the config write"
    );
    assert!(!state.root().join("doomed.jsonl").exists(), "rolled back");
    assert_eq!(std::fs::read_dir(state.root()).unwrap().count(), 0);
    assert!(state.config_path().is_dir(), "old config kept");
}

#[test]
fn replay_prevalidates_before_updating_config() {
    let state = State::new();
    assert_exit(&state.run(&["record", "--name", "current"]), 0);
    let before = state.config_bytes();

    state.managed("broken", NO_HEADER);
    let output = state.run(&["replay", "broken"]);
    assert_exit(&output, 1);
    let message = stderr(&output);
    assert!(
        message.starts_with("error: invalid replay recording: recording file ")
            && message.contains("no format header"),
        "{message}"
    );
    assert_eq!(state.config_bytes(), before, "config unchanged");

    let output = state.run(&["replay", "missing"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).starts_with("error: invalid replay recording: "));
    assert_eq!(state.config_bytes(), before);

    // A valid managed file stores the ID (also when named by its path).
    let good = state.managed("good", HEADER);
    std::fs::set_permissions(&good, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = state.run(&["replay", "good"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "replaying good; takes effect next start\n");
    assert_eq!(
        state.config(),
        json!({"record_replay": {"mode": "replay", "file": "good"}})
    );
    assert_eq!(mode_of(&good), 0o600, "managed files are tightened");
    assert_exit(&state.run(&["replay", good.to_str().unwrap()]), 0);
    assert_eq!(state.config()["record_replay"]["file"], "good");

    // An external 0600 file stores its absolute path.
    let external = state.dir.path().join("ext").join("run.jsonl");
    write_file(&external, HEADER, 0o600);
    let relative = format!(
        "{}/../run.jsonl",
        external.parent().unwrap().join("x").display()
    );
    let output = state.run(&["replay", &relative]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        format!(
            "replaying {}; takes effect next start\n",
            external.display()
        )
    );
    assert_eq!(
        state.config(),
        json!({"record_replay": {"mode": "replay", "file": external.to_str().unwrap()}})
    );

    // An external 0644 file is refused and left 0644.
    let before = state.config_bytes();
    let wide = state.dir.path().join("ext").join("wide.jsonl");
    write_file(&wide, HEADER, 0o644);
    let output = state.run(&["replay", wide.to_str().unwrap()]);
    assert_exit(&output, 1);
    assert!(stderr(&output).starts_with("error: invalid replay recording: "));
    assert_eq!(mode_of(&wide), 0o644);
    assert_eq!(state.config_bytes(), before);
}

#[test]
fn config_replay_mode_rejects_an_invalid_file() {
    let state = State::new();
    let external = state.dir.path().join("garbage.jsonl");
    write_file(&external, "not json at all\n", 0o600);
    let output = state.run(&["replay", external.to_str().unwrap()]);
    assert_exit(&output, 1);
    assert!(
        stderr(&output).starts_with("error: invalid replay recording: recording file "),
        "{}",
        stderr(&output)
    );
    assert_eq!(state.config_bytes(), None, "no config written");
}

#[test]
fn off_recovers_from_a_replay_file_that_became_invalid() {
    let state = State::new();
    let path = state.managed("was-good", HEADER);
    assert_exit(&state.run(&["replay", "was-good"]), 0);
    std::fs::write(&path, "{\"type\": \"event\"}\ncorrupted\n").unwrap();

    let home = RecordingsHome::new(state.state());
    match home.activation() {
        Activation::Blocked { reason } => assert!(
            reason.starts_with("invalid replay recording: recording file "),
            "{reason}"
        ),
        other => panic!("expected Blocked, got {other:?}"),
    }

    let output = state.run(&["off"]);
    assert_exit(&output, 0);
    assert_eq!(
        stdout(&output),
        "record/replay disabled; takes effect next start\n"
    );
    let output = state.run(&["status", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(
        json_out(&output),
        json!({"file": "was-good", "mode": "off"})
    );
    assert_eq!(home.activation(), Activation::Off);
}

#[test]
fn list_show_and_delete_managed_recordings() {
    let state = State::new();
    let first = state.managed("first", HEADER);
    age(&first, DAY);
    assert_exit(&state.run(&["record", "--name", "second"]), 0);
    state.managed("broken", NO_HEADER);
    age(&state.root().join("broken.jsonl"), 2 * DAY);

    let output = state.run(&["list"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "second\nfirst\nbroken\n");
    let output = state.run(&["list", "--json"]);
    assert_exit(&output, 0);
    let list = json_out(&output);
    let list = list.as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert_eq!(list[0]["recording_id"], "second");
    assert_eq!(list[0]["active"], true);
    assert_eq!(list[0]["valid"], true);
    assert_eq!(list[0]["call_count"], 0);
    assert_eq!(list[1]["active"], false);
    assert_eq!(list[2]["valid"], false);
    assert!(
        list[2]["error"]
            .as_str()
            .unwrap()
            .contains("no format header")
    );

    let output = state.run(&["show", "second", "--content"]);
    assert_exit(&output, 0);
    assert!(stdout(&output).contains("\n  \"recording_id\""), "indented");
    let shown = json_out(&output);
    assert_eq!(shown["recording_id"], "second");
    assert_eq!(shown["content"][0]["type"], "header");
    assert_eq!(shown["content"][0]["recording_id"], "second");
    assert_eq!(
        shown["path"],
        state.root().join("second.jsonl").to_str().unwrap()
    );
    for key in RECORDING_INFO_KEYS {
        assert!(shown.get(key).is_some(), "{key} missing: {shown}");
    }
    let output = state.run(&["show", "first", "--json"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output).lines().count(), 1, "compact JSON");
    assert!(json_out(&output).get("content").is_none());
    let output = state.run(&["show", "nothing"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "error: recording not found: nothing\n");

    let output = state.run(&["delete", "first", "--yes"]);
    assert_exit(&output, 0);
    assert_eq!(stdout(&output), "deleted first\n");
    assert!(!first.exists());
    assert!(!state.root().join("first.jsonl.lock").exists());
    let output = state.run(&["list"]);
    assert_eq!(stdout(&output), "second\nbroken\n");
    let output = state.run(&["delete", "first", "--yes"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "error: recording not found: first\n");
}

#[test]
fn delete_rejects_active_external_and_symlink_recordings() {
    let state = State::new();
    assert_exit(&state.run(&["record", "--name", "active"]), 0);
    let active = state.root().join("active.jsonl");
    let output = state.run(&["delete", "active", "--yes"]);
    assert_exit(&output, 1);
    assert_eq!(
        stderr(&output),
        "error: refusing to delete the active recording\n"
    );
    assert!(active.exists());

    let external = state.dir.path().join("ext.jsonl");
    write_file(&external, HEADER, 0o600);
    let output = state.run(&["delete", external.to_str().unwrap(), "--yes"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "error: delete requires a managed ID\n");
    assert!(external.exists());

    let link = state.root().join("link.jsonl");
    symlink(&external, &link).unwrap();
    let output = state.run(&["delete", "link", "--yes"]);
    assert_exit(&output, 1);
    assert!(stderr(&output).contains("symlink"), "{}", stderr(&output));
    assert!(link.is_symlink() && external.exists());

    let held = state.managed("held", HEADER);
    let lock = File::create(state.root().join("held.jsonl.lock")).unwrap();
    lock.try_lock().unwrap();
    let output = state.run(&["delete", "held", "--yes"]);
    assert_exit(&output, 1);
    assert_eq!(stderr(&output), "error: recording is locked: held\n");
    assert!(held.exists());
}

#[test]
fn destructive_dispatch_requires_yes_when_not_a_tty() {
    let state = State::new();
    let path = state.managed("keep", HEADER);
    age(&path, 10 * DAY);
    let output = state.run(&["delete", "keep"]);
    assert_exit(&output, 2);
    assert_eq!(
        stderr(&output),
        "error: delete requires --yes when stdin is not a TTY\n"
    );
    assert!(path.exists());

    let output = state.run(&["prune", "--older-than-days", "1"]);
    assert_exit(&output, 2);
    assert_eq!(
        stderr(&output),
        "error: prune requires --yes when stdin is not a TTY\n"
    );
    assert!(path.exists());
}

#[test]
fn prune_deletes_only_old_inactive_managed_files() {
    let state = State::new();
    assert_exit(&state.run(&["record", "--name", "active"]), 0);
    age(&state.root().join("active.jsonl"), 40 * DAY);
    let old = state.managed("old", HEADER);
    age(&old, 40 * DAY);
    let recent = state.managed("recent", HEADER);
    age(&recent, DAY);
    let invalid = state.managed("invalid", NO_HEADER);
    age(&invalid, 40 * DAY);

    for bad in ["0", "-2"] {
        let output = state.run(&["prune", "--older-than-days", bad, "--yes"]);
        assert_exit(&output, 1);
        assert_eq!(
            stderr(&output),
            "error: --older-than-days must be a positive integer\n"
        );
    }

    let output = state.run(&["prune", "--older-than-days", "30", "--dry-run"]);
    assert_exit(&output, 0);
    assert_eq!(
        json_out(&output),
        json!({"bytes": HEADER.len(), "deleted": 0, "failed": 0, "matched": 1, "recordings": ["old"]})
    );
    assert!(old.exists());

    let output = state.run(&["prune", "--older-than-days", "30", "--yes"]);
    assert_exit(&output, 0);
    let report = json_out(&output);
    assert_eq!(report["matched"], 1);
    assert_eq!(report["deleted"], 1);
    assert_eq!(report["failed"], 0);
    assert_eq!(report["recordings"], json!(["old"]));
    assert!(!old.exists());
    assert!(recent.exists() && invalid.exists());
    assert!(state.root().join("active.jsonl").exists());
}

#[test]
fn prune_skips_a_locked_old_recording() {
    let state = State::new();
    let path = state.managed("held", HEADER);
    age(&path, 10 * DAY);
    let lock = File::create(state.root().join("held.jsonl.lock")).unwrap();
    lock.try_lock().unwrap();
    let output = state.run(&["prune", "--older-than-days", "1", "--yes"]);
    assert_exit(&output, 0);
    let report = json_out(&output);
    assert_eq!(report["matched"], 1);
    assert_eq!(report["failed"], 1);
    assert_eq!(report["deleted"], 0);
    assert!(path.exists());
}

/// Issue 28's regression: with no `KEYLESS_STATE_DIR`, the state folder is the repository root's
/// `.harness-state/` wherever the command runs, never one under the runner crate's folder. The
/// repository's own `config.json` is put back as it was, so a developer's mode survives the test.
#[test]
fn off_from_another_folder_writes_the_repository_root_state() {
    let root = harness::workspace::workspace_root();
    let config = root.join(".harness-state").join("config.json");
    let before = std::fs::read(&config).ok();
    let elsewhere = tempfile::tempdir().expect("tempdir");
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["recordings", "off"])
        .current_dir(elsewhere.path())
        .env_remove("KEYLESS_STATE_DIR")
        .env_remove("HARNESS_STATE_DIR")
        .env_remove("CARGO_MANIFEST_DIR")
        .stdin(Stdio::null())
        .output()
        .expect("failed to run xtask");
    let written: Option<Value> = std::fs::read(&config)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok());
    match &before {
        Some(bytes) => std::fs::write(&config, bytes).expect("config.json put back"),
        None => {
            let _ = std::fs::remove_file(&config);
        }
    }
    assert_exit(&output, 0);
    assert_eq!(
        written.map(|c| c["record_replay"]["mode"].clone()),
        Some(json!("off"))
    );
    for stray in ["harness/runner/.harness-state", "xtask/.harness-state"] {
        assert!(!root.join(stray).exists(), "{stray} was written");
    }
    assert!(!elsewhere.path().join(".harness-state").exists());
}
