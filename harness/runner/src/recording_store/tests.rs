//! Unit tests of the managed recordings store (`docs/recording-format.md` §9 to §12): IDs,
//! selectors, the managed root checks, the configuration, activation, and the verbs as library
//! calls. The CLI itself is tested in `xtask/tests/recordings.rs`.

use std::fs::File;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde_json::{Value, json};
use tempfile::TempDir;

use super::ids::{default_recording_id, normalize_recording_id};
use super::*;

// Shared with the CLI's tests, which cannot import this module (see the file's own doc).
#[path = "../../../tests/support/recording_files.rs"]
mod recording_files;
use recording_files::{DAY, HEADER, NO_HEADER, RECORDING_INFO_KEYS, age, mode_of, write_file};

fn home() -> (TempDir, RecordingsHome) {
    let dir = tempfile::tempdir().expect("tempdir");
    let home = RecordingsHome::new(dir.path().join("state"));
    (dir, home)
}

fn config_bytes(home: &RecordingsHome) -> Option<Vec<u8>> {
    std::fs::read(home.config_path()).ok()
}

fn stored_config(home: &RecordingsHome) -> Value {
    serde_json::from_slice(&std::fs::read(home.config_path()).unwrap()).unwrap()
}

fn write_config(home: &RecordingsHome, config: Value) {
    std::fs::create_dir_all(home.state_dir()).unwrap();
    std::fs::write(home.config_path(), config.to_string()).unwrap();
}

fn yes(_: &str) -> Result<(), RecordingsError> {
    Ok(())
}

fn blocked_reason(activation: Activation) -> String {
    match activation {
        Activation::Blocked { reason } => reason,
        other => panic!("expected Blocked, got {other:?}"),
    }
}

/// A managed root that is a symlink to `<tmp>/target`, holding a valid 0600 `x.jsonl`.
fn symlinked_root(dir: &TempDir, home: &RecordingsHome) -> PathBuf {
    let target = dir.path().join("target");
    write_file(&target.join("x.jsonl"), HEADER, 0o600);
    std::fs::create_dir_all(home.state_dir()).unwrap();
    symlink(&target, home.root()).unwrap();
    target
}

// ---------------------------------------------------------------------------------------------
// IDs and selectors

#[test]
fn recordings_id_rules_table() {
    let long = format!("a{}", "b".repeat(63));
    let too_long = format!("a{}", "b".repeat(64));
    let cases: &[(&str, Option<&str>)] = &[
        ("a", Some("a")),
        ("A1", Some("A1")),
        ("0", Some("0")),
        ("x.y_z-1", Some("x.y_z-1")),
        ("fixture.jsonl", Some("fixture")),
        ("a.jsonl.jsonl", Some("a.jsonl")),
        (
            "20260811T134502Z-3f9a0c1b",
            Some("20260811T134502Z-3f9a0c1b"),
        ),
        (&long, Some(&long)),
        (&too_long, None),
        ("", None),
        (".jsonl", None),
        (".", None),
        ("..", None),
        (".hidden", None),
        ("-dash", None),
        ("_under", None),
        ("a b", None),
        ("a/b", None),
        ("a\\b", None),
        ("a:b", None),
        ("é", None),
    ];
    for (input, expected) in cases {
        let got = normalize_recording_id(input).ok();
        assert_eq!(got.as_deref(), *expected, "ID {input:?}");
    }
    assert!(!is_valid_recording_id("."));
    assert!(!is_valid_recording_id(".."));
    assert_eq!(
        normalize_recording_id("a b").unwrap_err().to_string(),
        "invalid recording ID: 'a b'"
    );
}

#[test]
fn recordings_default_id_is_a_utc_timestamp_and_8_hex() {
    let pattern = regex::Regex::new(r"^\d{8}T\d{6}Z-[0-9a-f]{8}$").unwrap();
    let first = default_recording_id();
    let second = default_recording_id();
    for id in [&first, &second] {
        assert!(pattern.is_match(id), "{id}");
        assert!(is_valid_recording_id(id));
    }
    assert_ne!(first, second, "the suffix is random");
    let today = chrono::Utc::now().format("%Y%m%d").to_string();
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1))
        .format("%Y%m%d")
        .to_string();
    assert!(first.starts_with(&today) || first.starts_with(&yesterday));
}

#[test]
fn recordings_selector_resolution_table() {
    let cwd = std::env::current_dir().unwrap();
    // The user home is passed in (`RecordingsHome::from_env` reads `$HOME`), never read here.
    let home_dir = PathBuf::from("/home/someone");
    let cases: Vec<(&str, Selector)> = vec![
        ("abc", Selector::Id("abc".into())),
        ("abc.jsonl", Selector::Id("abc".into())),
        ("/tmp/r.jsonl", Selector::Path("/tmp/r.jsonl".into())),
        (
            "/tmp/a/../b/./r.jsonl",
            Selector::Path("/tmp/b/r.jsonl".into()),
        ),
        ("/../r", Selector::Path("/r".into())),
        ("sub/r.jsonl", Selector::Path(cwd.join("sub/r.jsonl"))),
        ("./r", Selector::Path(cwd.join("r"))),
        ("sub\\r.jsonl", Selector::Path(cwd.join("sub\\r.jsonl"))),
        ("~/r.jsonl", Selector::Path(home_dir.join("r.jsonl"))),
        ("~/a/../r", Selector::Path(home_dir.join("r"))),
    ];
    for (input, expected) in cases {
        assert_eq!(
            parse_selector(input, Some(&home_dir)).unwrap(),
            expected,
            "selector {input:?}"
        );
    }
    assert_eq!(
        parse_selector("~/r.jsonl", None).unwrap(),
        Selector::Path(cwd.join("~/r.jsonl")),
        "without a user home, `~` is an ordinary folder name"
    );
    for invalid in ["~", "bad id", "-x", ".."] {
        assert!(
            matches!(
                parse_selector(invalid, Some(&home_dir)),
                Err(RecordingsError::InvalidId(_))
            ),
            "{invalid:?} must be an invalid ID"
        );
    }

    let (_dir, home) = home();
    let root = home.root();
    let managed = |id: &str| Location::Managed {
        id: id.into(),
        path: root.join(format!("{id}.jsonl")),
    };
    assert_eq!(home.locate("abc").unwrap(), managed("abc"));
    assert_eq!(home.locate("abc.jsonl").unwrap(), managed("abc"));
    let in_root = root.join("abc.jsonl");
    assert_eq!(
        home.locate(in_root.to_str().unwrap()).unwrap(),
        managed("abc")
    );
    let dotdot = format!("{}/../recordings/./abc.jsonl", root.display());
    assert_eq!(home.locate(&dotdot).unwrap(), managed("abc"));
    // Not `<valid ID>.jsonl` (a path gets no `.jsonl` added), or deeper than the root: external.
    for external in [
        root.join("abc"),
        root.join("notes.txt"),
        root.join("sub").join("abc.jsonl"),
    ] {
        assert_eq!(
            home.locate(external.to_str().unwrap()).unwrap(),
            Location::External { path: external }
        );
    }
    assert_eq!(
        home.locate("/elsewhere/abc.jsonl").unwrap(),
        Location::External {
            path: "/elsewhere/abc.jsonl".into()
        }
    );
}

// ---------------------------------------------------------------------------------------------
// The managed root

#[test]
fn recordings_root_is_created_private_and_a_wider_root_is_tightened() {
    let (_dir, home) = home();
    let root = home.ensure_root().unwrap();
    assert_eq!(root, home.root());
    assert_eq!(mode_of(&root), 0o700);

    std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(mode_of(&root), 0o755);
    home.list().unwrap();
    assert_eq!(
        mode_of(&root),
        0o700,
        "list tightens a pre-existing 0755 root"
    );
}

#[test]
fn recordings_symlinked_root_is_refused() {
    let (dir, home) = home();
    let target = symlinked_root(&dir, &home);
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
    for result in [
        home.ensure_root().map(|_| ()),
        home.list().map(|_| ()),
        home.record(Some("new")).map(|_| ()),
        home.show("x", false).map(|_| ()),
        home.delete("x", &mut yes).map(|_| ()),
    ] {
        let err = result.unwrap_err();
        assert!(
            matches!(&err, RecordingsError::UnsafeRoot { path, .. } if *path == home.root()),
            "{err}"
        );
        assert!(err.to_string().contains("symlink"), "{err}");
    }
    assert!(!target.join("new.jsonl").exists());
    assert!(target.join("x.jsonl").exists());
    assert_eq!(
        mode_of(&target),
        0o755,
        "the symlink target is never chmodded"
    );
}

#[test]
fn recordings_dotdot_and_case_variants_cannot_bypass_the_symlinked_root() {
    let (dir, home) = home();
    let target = symlinked_root(&dir, &home);
    let state = home.state_dir().to_path_buf();
    // On a case-sensitive file system a case variant is another entry; make it a symlink to the
    // same folder, as a case-insensitive file system would make it the root itself.
    symlink(&target, state.join("RECORDINGS")).unwrap();
    std::fs::create_dir_all(state.join("other")).unwrap();
    let tricks = [
        format!("{}/recordings/../recordings/x.jsonl", state.display()),
        format!("{}/other/../recordings/x.jsonl", state.display()),
        format!("{}/./recordings/x.jsonl", state.display()),
        format!("{}/RECORDINGS/x.jsonl", state.display()),
        format!("{}/Recordings/x.jsonl", state.display()),
        format!("{}/other/../RECORDINGS/x.jsonl", state.display()),
    ];
    for trick in &tricks {
        let err = home.locate(trick).unwrap_err();
        assert!(
            matches!(err, RecordingsError::UnsafeRoot { .. }),
            "{trick}: {err}"
        );
        let before = config_bytes(&home);
        let err = home.replay(trick).unwrap_err();
        assert!(
            err.to_string().starts_with("invalid replay recording: ")
                && err.to_string().contains("symlink"),
            "{trick}: {err}"
        );
        assert_eq!(config_bytes(&home), before, "{trick}: config unchanged");
    }
    // The same file through the symlink is readable as an external file, so only the checks
    // above stop these paths.
    assert!(
        replay_core::recording::read_recording(
            &state.join("RECORDINGS/x.jsonl"),
            replay_core::recording::Access::External
        )
        .is_ok(),
        "precondition: the format library reads an external 0600 file through a symlinked \
         parent (§13 recording_does_not_chmod_external_parent_symlink)"
    );
}

#[test]
fn recordings_external_path_works_while_the_managed_root_is_a_symlink() {
    let (dir, home) = home();
    symlinked_root(&dir, &home);
    let external = dir.path().join("elsewhere").join("run.jsonl");
    write_file(&external, HEADER, 0o600);
    let stored = home.replay(external.to_str().unwrap()).unwrap();
    assert_eq!(stored.file, external.to_str().unwrap());
    assert_eq!(
        home.activation(),
        Activation::Replay {
            path: external.clone()
        }
    );
    let shown = home.show(external.to_str().unwrap(), false).unwrap();
    assert!(shown.info.valid, "{:?}", shown.info.error);
    assert!(shown.info.active);
}

#[test]
fn recordings_intermediate_symlink_inside_the_root_is_refused_without_chmod() {
    let (dir, home) = home();
    let root = home.ensure_root().unwrap();
    let elsewhere = dir.path().join("elsewhere");
    write_file(&elsewhere.join("x.jsonl"), HEADER, 0o644);
    symlink(&elsewhere, root.join("sub")).unwrap();
    let selector = root.join("sub").join("x.jsonl");
    let err = home.replay(selector.to_str().unwrap()).unwrap_err();
    assert!(err.to_string().contains("symlink"), "{err}");
    assert_eq!(mode_of(&elsewhere.join("x.jsonl")), 0o644);
    assert_eq!(config_bytes(&home), None);
}

#[test]
fn recordings_symlink_to_a_managed_file_remains_external() {
    let (dir, home) = home();
    let managed = home.ensure_root().unwrap().join("x.jsonl");
    write_file(&managed, HEADER, 0o600);
    let link = dir.path().join("link.jsonl");
    symlink(&managed, &link).unwrap();
    assert_eq!(
        home.locate(link.to_str().unwrap()).unwrap(),
        Location::External { path: link.clone() }
    );
    assert!(home.replay(link.to_str().unwrap()).is_err());
}

// ---------------------------------------------------------------------------------------------
// Configuration and activation

#[test]
fn recordings_record_precreates_private_header_then_updates_config() {
    let (_dir, home) = home();
    let recorded = home.record(Some("fixture")).unwrap();
    assert_eq!(recorded.id, "fixture");
    assert_eq!(recorded.path, home.root().join("fixture.jsonl"));
    assert_eq!(
        stored_config(&home),
        json!({"record_replay": {"mode": "record", "file": "fixture"}})
    );
    let text = std::fs::read_to_string(&recorded.path).unwrap();
    assert_eq!(text.lines().count(), 1, "header only: {text}");
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["type"], "header");
    assert_eq!(header["recording_id"], "fixture");
    assert_eq!(header["redaction_version"], 1);
    assert!(header["created_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(mode_of(&recorded.path), 0o600);
    assert_eq!(mode_of(&home.root()), 0o700);
    assert_eq!(mode_of(&home.config_path()), 0o600);
    assert_eq!(home.status().unwrap().mode, Mode::Record);

    // Exclusive creation: the same name again fails and leaves everything as it was.
    let before = std::fs::read(&recorded.path).unwrap();
    assert!(home.record(Some("fixture")).is_err());
    assert_eq!(std::fs::read(&recorded.path).unwrap(), before);

    // The default ID.
    let fresh = home.record(None).unwrap();
    assert!(is_valid_recording_id(&fresh.id) && fresh.id.contains('T'));
    assert_eq!(home.status().unwrap().file, fresh.id);
}

#[test]
fn recordings_record_rolls_back_new_file_when_config_update_fails() {
    let (_dir, home) = home();
    home.ensure_root().unwrap();
    std::fs::create_dir_all(home.config_path()).unwrap();
    let err = home.record(Some("doomed")).unwrap_err();
    assert!(err.to_string().contains("config"), "{err}");
    assert!(!home.root().join("doomed.jsonl").exists(), "rolled back");
    let left: Vec<_> = std::fs::read_dir(home.root()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(home.config_path().is_dir(), "old config kept");
}

#[test]
fn recordings_config_validation_messages() {
    let (dir, home) = home();
    home.off().unwrap();
    let before = config_bytes(&home);
    let required = "record_replay.file is required when mode is record or replay";
    for (mode, file, message) in [
        (Mode::Record, "", required.to_string()),
        (Mode::Replay, "", required.to_string()),
        (Mode::Replay, "  ", required.to_string()),
        (
            Mode::Record,
            "/tmp/x.jsonl",
            "record mode requires a managed recording ID".to_string(),
        ),
        (
            Mode::Record,
            "sub/x",
            "record mode requires a managed recording ID".to_string(),
        ),
    ] {
        let err = home.set_record_replay(mode, file).unwrap_err();
        assert_eq!(err.to_string(), message, "{mode} {file:?}");
        assert_eq!(config_bytes(&home), before);
    }

    let invalid = home.root().join("bad.jsonl");
    write_file(&invalid, NO_HEADER, 0o600);
    let err = home.set_record_replay(Mode::Replay, "bad").unwrap_err();
    let message = err.to_string();
    assert!(
        message.starts_with("invalid replay recording: recording file ")
            && message.contains("no format header"),
        "{message}"
    );
    assert_eq!(config_bytes(&home), before);
    let err = home.set_record_replay(Mode::Replay, "missing").unwrap_err();
    assert!(err.to_string().starts_with("invalid replay recording: "));
    assert_eq!(config_bytes(&home), before);

    // Other keys of the document survive a write; the file stays 0600.
    write_config(
        &home,
        json!({"theme": "dark", "record_replay": {"mode": "off", "file": "", "note": 1}}),
    );
    let external = dir.path().join("ok.jsonl");
    write_file(&external, HEADER, 0o600);
    home.replay(external.to_str().unwrap()).unwrap();
    assert_eq!(
        stored_config(&home),
        json!({"theme": "dark", "record_replay": {"mode": "replay", "file": external.to_str().unwrap(), "note": 1}})
    );
    assert_eq!(mode_of(&home.config_path()), 0o600);
}

#[test]
fn recordings_unsupported_mode_is_reported_and_off_recovers() {
    let (_dir, home) = home();
    write_config(
        &home,
        json!({"record_replay": {"mode": "live", "file": "x"}}),
    );
    assert_eq!(
        home.status().unwrap_err().to_string(),
        "unsupported record_replay.mode: 'live'"
    );
    assert_eq!(
        blocked_reason(home.activation()),
        "unsupported record_replay.mode: 'live'"
    );
    write_config(&home, json!({"record_replay": {"mode": 3}}));
    assert_eq!(
        home.status().unwrap_err().to_string(),
        "unsupported record_replay.mode: '3'"
    );
    write_config(
        &home,
        json!({"record_replay": {"mode": "live", "file": "x"}}),
    );
    let off = home.off().unwrap();
    assert_eq!(
        off,
        RecordReplay {
            mode: Mode::Off,
            file: "x".into()
        }
    );
    assert_eq!(home.status().unwrap(), off);
    assert_eq!(home.activation(), Activation::Off);
}

#[test]
fn recordings_missing_config_or_subtree_is_off() {
    let (_dir, home) = home();
    assert_eq!(home.status().unwrap(), RecordReplay::default());
    assert_eq!(home.activation(), Activation::Off);
    assert!(
        !home.state_dir().exists(),
        "status and activation create nothing"
    );
    write_config(&home, json!({"theme": "dark"}));
    assert_eq!(home.status().unwrap().mode, Mode::Off);
    assert_eq!(home.activation(), Activation::Off);
    std::fs::write(home.config_path(), "{not json").unwrap();
    let reason = blocked_reason(home.activation());
    assert!(reason.starts_with("cannot parse config "), "{reason}");
    assert!(
        home.off().is_err(),
        "an unparseable config is never clobbered"
    );
}

#[test]
fn recordings_settings_are_next_start() {
    let (dir, home) = home();
    let at_start = home.activation();
    assert_eq!(at_start, Activation::Off);
    let recorded = home.record(Some("run")).unwrap();
    assert_eq!(
        at_start,
        Activation::Off,
        "a computed activation never changes"
    );
    let next = home.activation();
    assert_eq!(
        next,
        Activation::Record {
            path: recorded.path.clone()
        }
    );
    let external = dir.path().join("replay.jsonl");
    write_file(&external, HEADER, 0o600);
    home.replay(external.to_str().unwrap()).unwrap();
    assert_eq!(
        next,
        Activation::Record {
            path: recorded.path
        }
    );
    assert_eq!(home.activation(), Activation::Replay { path: external });
    home.off().unwrap();
    assert_eq!(home.activation(), Activation::Off);

    // An empty file with a mode that needs one is refused when written, and blocks when it was
    // written by hand.
    for mode in [Mode::Record, Mode::Replay] {
        assert!(home.set_record_replay(mode, "").is_err());
        write_config(
            &home,
            json!({"record_replay": {"mode": mode.as_str(), "file": ""}}),
        );
        assert_eq!(
            blocked_reason(home.activation()),
            "record_replay.file is required when mode is record or replay"
        );
    }
}

#[test]
fn recordings_activation_blocks_every_unusable_configuration() {
    let (dir, home) = home();
    let external = dir.path().join("ext.jsonl");
    write_file(&external, HEADER, 0o600);
    write_config(
        &home,
        json!({"record_replay": {"mode": "record", "file": external.to_str().unwrap()}}),
    );
    assert_eq!(
        blocked_reason(home.activation()),
        "record mode requires a managed recording ID"
    );
    write_config(
        &home,
        json!({"record_replay": {"mode": "record", "file": "gone"}}),
    );
    let reason = blocked_reason(home.activation());
    assert!(reason.contains("gone.jsonl"), "{reason}");

    // A replay file that became invalid after `replay`: blocked, with a reason that never echoes
    // the file's contents.
    let managed = home.root().join("was-good.jsonl");
    write_file(&managed, HEADER, 0o600);
    home.replay("was-good").unwrap();
    std::fs::write(&managed, "SECRET-sk-live-123 not json\n").unwrap();
    let reason = blocked_reason(home.activation());
    assert!(
        reason.starts_with("invalid replay recording: recording file "),
        "{reason}"
    );
    assert!(!reason.contains("SECRET"), "{reason}");
    assert!(reason.chars().count() <= 500);
    // `off` never reads the recording and keeps the file.
    home.off().unwrap();
    assert_eq!(home.status().unwrap().file, "was-good");
    assert_eq!(home.activation(), Activation::Off);

    // An external file with wide permissions is refused and never chmodded.
    let wide = dir.path().join("wide.jsonl");
    write_file(&wide, HEADER, 0o644);
    write_config(
        &home,
        json!({"record_replay": {"mode": "replay", "file": wide.to_str().unwrap()}}),
    );
    assert!(matches!(home.activation(), Activation::Blocked { .. }));
    assert_eq!(mode_of(&wide), 0o644);
}

#[test]
fn recordings_replay_stores_ids_for_managed_files_and_paths_otherwise() {
    let (dir, home) = home();
    let managed = home.root().join("kept.jsonl");
    write_file(&managed, HEADER, 0o644);
    std::fs::set_permissions(home.root(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let stored = home.replay("kept").unwrap();
    assert_eq!(stored.file, "kept");
    assert_eq!(
        mode_of(&managed),
        0o600,
        "a managed file is repaired to 0600"
    );
    let stored = home.replay(managed.to_str().unwrap()).unwrap();
    assert_eq!(
        stored.file, "kept",
        "a path into the managed root stores the ID"
    );

    let external = dir.path().join("ext.jsonl");
    write_file(&external, HEADER, 0o600);
    let relative = format!("{}/../ext.jsonl", dir.path().join("x").display());
    let stored = home.replay(&relative).unwrap();
    assert_eq!(stored.file, external.to_str().unwrap());

    let before = config_bytes(&home);
    let wide = dir.path().join("wide.jsonl");
    write_file(&wide, HEADER, 0o644);
    assert!(home.replay(wide.to_str().unwrap()).is_err());
    assert_eq!(mode_of(&wide), 0o644);
    assert_eq!(config_bytes(&home), before);
}

// ---------------------------------------------------------------------------------------------
// list, show, delete, prune

#[test]
fn recordings_list_is_newest_first_and_keeps_going_past_bad_files() {
    let (dir, home) = home();
    let root = home.ensure_root().unwrap();
    for (id, seconds_ago) in [("old", 3 * DAY), ("mid", DAY), ("new", 0)] {
        write_file(&root.join(format!("{id}.jsonl")), HEADER, 0o600);
        age(&root.join(format!("{id}.jsonl")), seconds_ago);
    }
    // Same modification time: the ID breaks the tie (descending).
    let same = SystemTime::now() - Duration::from_secs(2 * DAY);
    for id in ["tie-a", "tie-b"] {
        let path = root.join(format!("{id}.jsonl"));
        write_file(&path, HEADER, 0o600);
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(same)
            .unwrap();
    }
    write_file(&root.join("broken.jsonl"), NO_HEADER, 0o600);
    age(&root.join("broken.jsonl"), 4 * DAY);
    let outside = dir.path().join("outside.jsonl");
    write_file(&outside, HEADER, 0o600);
    symlink(&outside, root.join("linked.jsonl")).unwrap();
    age(&outside, 5 * DAY);
    write_file(&root.join("notes.txt"), "not a recording", 0o600);

    let infos = home.list().unwrap();
    let ids: Vec<&str> = infos.iter().map(|i| i.recording_id.as_str()).collect();
    // The symlink's own mtime is "now", so it sorts with the newest.
    let linked_first = ids[0] == "linked";
    let rest = if linked_first { &ids[1..] } else { &ids[..] };
    let without_link: Vec<&str> = rest.iter().copied().filter(|id| *id != "linked").collect();
    assert_eq!(
        without_link,
        ["new", "mid", "tie-b", "tie-a", "old", "broken"],
        "{ids:?}"
    );
    assert!(ids.contains(&"linked"));
    for info in &infos {
        let bad = matches!(info.recording_id.as_str(), "broken" | "linked");
        assert_eq!(info.valid, !bad, "{info:?}");
        assert_eq!(info.error.is_some(), bad, "{info:?}");
        assert_eq!(info.call_count, if bad { None } else { Some(0) });
    }
    let linked = infos.iter().find(|i| i.recording_id == "linked").unwrap();
    assert!(linked.error.as_deref().unwrap().contains("symlink"));
    let json = infos[0].to_json();
    let keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, RECORDING_INFO_KEYS);
    assert!(json["modified_at"].is_f64());
}

#[test]
fn recordings_show_reports_info_and_content() {
    let (dir, home) = home();
    let recorded = home.record(Some("shown")).unwrap();
    let shown = home.show("shown", true).unwrap();
    assert!(shown.info.valid && shown.info.active);
    assert_eq!(shown.info.path, recorded.path);
    assert_eq!(shown.info.call_count, Some(0));
    let header: Value =
        serde_json::from_str(std::fs::read_to_string(&recorded.path).unwrap().trim()).unwrap();
    assert_eq!(
        shown.info.created_at,
        header["created_at"].as_str().unwrap()
    );
    let json = shown.to_json();
    assert_eq!(json["content"][0]["type"], "header");
    assert_eq!(json["content"][0]["recording_id"], "shown");
    assert!(
        home.show("shown", false)
            .unwrap()
            .to_json()
            .get("content")
            .is_none()
    );

    // No created_at in the header: the change time; an invalid file: null content.
    let bare = home.root().join("bare.jsonl");
    write_file(&bare, HEADER, 0o600);
    let info = home.show("bare", false).unwrap().info;
    assert!(!info.active);
    assert!(
        chrono::DateTime::parse_from_rfc3339(&info.created_at).is_ok(),
        "{}",
        info.created_at
    );
    write_file(&home.root().join("bad.jsonl"), NO_HEADER, 0o600);
    let shown = home.show("bad", true).unwrap();
    assert!(!shown.info.valid && shown.info.error.is_some());
    assert_eq!(shown.to_json()["content"], Value::Null);

    // External: the header's recording_id, read without chmod.
    let external = dir.path().join("copy.jsonl");
    write_file(
        &external,
        "{\"format_version\": 2, \"recording_id\": \"orig\", \"type\": \"header\"}\n",
        0o600,
    );
    let info = home.show(external.to_str().unwrap(), false).unwrap().info;
    assert_eq!(info.recording_id, "orig");
    assert!(info.valid);
    assert!(matches!(
        home.show("absent", false),
        Err(RecordingsError::NotFound(id)) if id == "absent"
    ));
}

#[test]
fn recordings_delete_refuses_active_external_symlink_missing_and_locked() {
    let (dir, home) = home();
    let active = home.record(Some("active")).unwrap();
    let err = home.delete("active", &mut yes).unwrap_err();
    assert_eq!(err.to_string(), "refusing to delete the active recording");
    assert!(active.path.exists());

    let external = dir.path().join("ext.jsonl");
    write_file(&external, HEADER, 0o600);
    let err = home
        .delete(external.to_str().unwrap(), &mut yes)
        .unwrap_err();
    assert_eq!(err.to_string(), "delete requires a managed ID");
    let err = home
        .delete(active.path.to_str().unwrap(), &mut yes)
        .unwrap_err();
    assert_eq!(err.to_string(), "delete requires a managed ID");
    assert!(external.exists());

    symlink(&external, home.root().join("link.jsonl")).unwrap();
    let err = home.delete("link", &mut yes).unwrap_err();
    assert!(matches!(err, RecordingsError::Symlink(_)), "{err}");
    assert!(home.root().join("link.jsonl").is_symlink() && external.exists());

    let err = home.delete("absent", &mut yes).unwrap_err();
    assert_eq!(err.to_string(), "recording not found: absent");

    let victim = home.root().join("victim.jsonl");
    write_file(&victim, HEADER, 0o600);
    let mut refuse = |_: &str| Err(RecordingsError::Refused("no".into()));
    let err = home.delete("victim", &mut refuse).unwrap_err();
    assert_eq!(err.exit_code(), 2);
    assert!(victim.exists());

    let lock = File::create(replay_core::recording::lock_path_for(&victim)).unwrap();
    lock.try_lock().unwrap();
    let err = home.delete("victim", &mut yes).unwrap_err();
    assert_eq!(err.to_string(), "recording is locked: victim");
    assert!(victim.exists());
    drop(lock);

    let mut asked = Vec::new();
    let deleted = home
        .delete("victim.jsonl", &mut |word: &str| {
            asked.push(word.to_string());
            Ok(())
        })
        .unwrap();
    assert_eq!(asked, ["victim"], "the user types the ID");
    assert_eq!(deleted.id, "victim");
    assert!(!victim.exists());
    assert!(
        !replay_core::recording::lock_path_for(&victim).exists(),
        "lock file removed"
    );
}

#[test]
fn recordings_prune_deletes_only_old_inactive_valid_managed_files() {
    let (_dir, home) = home();
    let root = home.ensure_root().unwrap();
    let active = home.record(Some("active-old")).unwrap();
    age(&active.path, 40 * DAY);
    for (id, text, days) in [
        ("old", HEADER, 40),
        ("recent", HEADER, 1),
        ("broken-old", NO_HEADER, 40),
    ] {
        let path = root.join(format!("{id}.jsonl"));
        write_file(&path, text, 0o600);
        age(&path, days * DAY);
    }
    assert!(matches!(
        home.prune(0, true, &mut yes),
        Err(RecordingsError::InvalidAge)
    ));
    assert!(home.prune(-3, true, &mut yes).is_err());

    let dry = home.prune(30, true, &mut refuse_all).unwrap();
    assert_eq!(
        dry,
        PruneReport {
            matched: 1,
            deleted: 0,
            failed: 0,
            bytes: HEADER.len() as u64,
            recordings: vec!["old".into()],
        }
    );
    assert!(root.join("old.jsonl").exists());

    assert!(home.prune(30, false, &mut refuse_all).is_err());
    assert!(root.join("old.jsonl").exists(), "refused: nothing deleted");

    let mut asked = Vec::new();
    let real = home
        .prune(30, false, &mut |word: &str| {
            asked.push(word.to_string());
            Ok(())
        })
        .unwrap();
    assert_eq!(asked, ["prune"]);
    assert_eq!((real.matched, real.deleted, real.failed), (1, 1, 0));
    assert!(!root.join("old.jsonl").exists());
    for kept in ["recent", "broken-old", "active-old"] {
        assert!(root.join(format!("{kept}.jsonl")).exists(), "{kept}");
    }
}

fn refuse_all(_: &str) -> Result<(), RecordingsError> {
    Err(RecordingsError::Refused("refused".into()))
}

#[test]
fn recordings_prune_skips_a_locked_old_recording() {
    let (_dir, home) = home();
    let path = home.ensure_root().unwrap().join("held.jsonl");
    write_file(&path, HEADER, 0o600);
    age(&path, 10 * DAY);
    let lock = File::create(replay_core::recording::lock_path_for(&path)).unwrap();
    lock.try_lock().unwrap();
    let report = home.prune(1, false, &mut yes).unwrap();
    assert_eq!((report.matched, report.deleted, report.failed), (1, 0, 1));
    assert_eq!(report.recordings, ["held"]);
    assert!(path.exists());
    drop(lock);
    let report = home.prune(1, false, &mut yes).unwrap();
    assert_eq!((report.matched, report.deleted, report.failed), (1, 1, 0));
}

#[test]
fn recordings_from_env_defaults_to_the_folder_it_is_given() {
    // Only the default is checked: tests never set process environment variables.
    if STATE_DIR_VAR
        .env_value(|name| std::env::var_os(name))
        .is_none()
    {
        let given = Path::new("/somewhere/repo/.harness-state");
        assert_eq!(RecordingsHome::from_env(given).state_dir(), given);
    }
    let relative = RecordingsHome::new("some/../state");
    assert!(relative.state_dir().is_absolute());
    assert!(relative.state_dir().ends_with("state"));
    assert!(!relative.state_dir().to_string_lossy().contains(".."));
}
