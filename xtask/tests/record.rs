//! `record`, `build-fixture` and `serve` as a user runs them.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use harness::stand_in::{Reply, StandIn};
use replay_core::Fixture;
use serde_json::{Value, json};
use support::{free_port, interrupt};

const XTASK: &str = env!("CARGO_BIN_EXE_xtask");
const KEY: &str = "sk-test-cli-secret-1234567890";

fn record_command() -> Command {
    let mut command = Command::new(XTASK);
    command
        .args([
            "record",
            "--scenario",
            "cli_demo",
            "--mode",
            "flash",
            "--prompt",
            "Say hello.",
        ])
        .env_remove("CI")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_API_BASE");
    command
}

#[test]
fn record_refuses_to_run_in_ci() {
    let output = record_command()
        .env("CI", "true")
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("never runs in CI"));
}

#[test]
fn record_without_key_or_base_exits_2_naming_them() {
    let output = record_command().output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("OPENAI_API_KEY and OPENAI_API_BASE"),
        "{stderr}"
    );
    let output = record_command()
        .env("OPENAI_API_KEY", KEY)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("set OPENAI_API_BASE"));
}

fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.path().is_dir() {
            out.extend(files_under(&entry.path()));
        } else {
            out.push(entry.path());
        }
    }
    out
}

#[test]
fn record_writes_the_recording_its_metadata_and_the_fixture_and_build_fixture_agrees() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stand_in = runtime
        .block_on(StandIn::start(vec![
            Reply::Text("Hello!".into()),
            Reply::Text("[\"Say it again\"]".into()),
        ]))
        .unwrap();
    let work = tempfile::tempdir().unwrap();
    // A folder that does not exist yet: record creates it and says so.
    let recording = work.path().join("rec/new/recording.jsonl");
    let output = record_command()
        .env("OPENAI_API_KEY", KEY)
        .env("OPENAI_API_BASE", stand_in.base_url())
        .env("RECORD_MODEL", "stand-in-model")
        .args(["--out", work.path().join("fixtures").to_str().unwrap()])
        .args(["--recording-out", recording.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("call 0: lead_agent"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "created folder {}",
            recording.parent().unwrap().display()
        )),
        "{stdout}"
    );
    let fixture_path = work.path().join("fixtures/cli_demo.flash.json");
    let fixture = Fixture::load(&fixture_path).unwrap();
    assert_eq!(fixture.scenario.model, "stand-in-model");
    assert_eq!(fixture.turns.len(), 2);
    let meta = work.path().join("rec/new/recording.jsonl.meta.json");
    let meta_json: Value = serde_json::from_str(&std::fs::read_to_string(&meta).unwrap()).unwrap();
    assert_eq!(meta_json["scenario"], "cli_demo");
    for file in files_under(work.path()) {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        assert!(
            !text.contains(KEY),
            "the key leaked into {}",
            file.display()
        );
    }

    let rebuilt = work.path().join("rebuilt.json");
    let output = Command::new(XTASK)
        .args(["build-fixture", "--recording", recording.to_str().unwrap()])
        .args([
            "--meta",
            meta.to_str().unwrap(),
            "--out",
            rebuilt.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&rebuilt).unwrap(),
        std::fs::read_to_string(&fixture_path).unwrap()
    );
    drop(stand_in);
}

#[test]
fn build_fixture_names_a_broken_recording() {
    let work = tempfile::tempdir().unwrap();
    let recording = work.path().join("bad.jsonl");
    std::fs::write(&recording, "{\"format_version\": 2, \"type\": \"header\"}\n{\"call_index\": 3, \"type\": \"request\"}\n").unwrap();
    std::fs::set_permissions(
        &recording,
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let meta = work.path().join("bad.meta.json");
    std::fs::write(
        &meta,
        json!({"scenario": "s", "mode": "flash", "prompt": "p"}).to_string(),
    )
    .unwrap();
    let output = Command::new(XTASK)
        .args([
            "build-fixture",
            "--recording",
            recording.to_str().unwrap(),
            "--meta",
            meta.to_str().unwrap(),
        ])
        .args(["--out", work.path().join("out.json").to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("bad.jsonl") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert!(
        !work.path().join("out.json").exists(),
        "nothing half-written"
    );
}

#[test]
fn serve_with_a_broken_replay_configuration_stays_up_and_fails_model_calls_closed() {
    let state = tempfile::tempdir().unwrap();
    std::fs::write(
        state.path().join("config.json"),
        json!({"record_replay": {"mode": "replay", "file": "no-such-recording"}}).to_string(),
    )
    .unwrap();
    let work = tempfile::tempdir().unwrap();
    let config = work.path().join("gateway.toml");
    std::fs::write(
        &config,
        "home = \"home\"\n[auth.password_hash]\nmemory_kib = 8\niterations = 1\nparallelism = 1\n\
         [[models]]\nname = \"m\"\nuse = \"openai\"\napi_key = \"unused\"\nbase_url = \"http://127.0.0.1:9/v1\"\n",
    )
    .unwrap();
    let port = free_port();
    let mut child = Command::new(XTASK)
        .args([
            "serve",
            "--config",
            config.to_str().unwrap(),
            "--port",
            &port.to_string(),
        ])
        .env("KEYLESS_STATE_DIR", state.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut lines = String::new();
    for _ in 0..2 {
        stdout.read_line(&mut lines).unwrap();
    }
    assert!(lines.contains("record/replay: BLOCKED"), "{lines}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let answer = runtime.block_on(async {
        let url = format!("http://127.0.0.1:{port}");
        let mut session =
            keyless_runner::Session::open(&url, &keyless_runner::DriveOptions::default())
                .await
                .unwrap();
        let scenario = replay_core::Scenario::new("hello", replay_core::UiMode::Flash, "hello");
        let transcripts = session.run_scenario(&scenario, &[]).await.unwrap();
        transcripts[0].final_values().unwrap()["messages"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()
            .clone()
    });
    interrupt(&child, &mut stdout);
    assert!(child.wait().unwrap().success());
    let detail = answer["additional_kwargs"]["error_detail"]
        .as_str()
        .unwrap();
    assert!(
        detail.contains("cargo xtask recordings status")
            && detail.contains("cargo xtask recordings off"),
        "{detail}"
    );

    let off = Command::new(XTASK)
        .args(["recordings", "off"])
        .env("KEYLESS_STATE_DIR", state.path())
        .output()
        .unwrap();
    assert!(
        off.status.success(),
        "{}",
        String::from_utf8_lossy(&off.stderr)
    );
    let status = Command::new(XTASK)
        .args(["recordings", "status", "--json"])
        .env("KEYLESS_STATE_DIR", state.path())
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(status["mode"], "off");
    assert_eq!(
        status["file"], "no-such-recording",
        "off keeps the last file"
    );
}
