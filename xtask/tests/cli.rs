//! The xtask commands as a user runs them: exit codes and output of `replay`, `hash`, `fixtures`
//! and `replay-gateway` (one gateway, and the browser suite's set with its manifest).

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use harness::adapter::hermetic::SCENARIO_MODEL;
use serde_json::{Value, json};
use support::{free_port, interrupt};

fn xtask(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .output()
        .expect("Failed to run xtask")
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// Asserts that `output` is a success, showing its stderr otherwise.
#[track_caller]
fn assert_success(output: &Output) {
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// How many fixtures ship in `fixtures/`: one table row, check line or gateway each.
fn shipped_fixture_count() -> usize {
    std::fs::read_dir(repo().join("fixtures")).unwrap().count()
}

fn json_lines(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

const PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

#[test]
fn hash_prints_the_spec_vector_for_the_first_lead_agent_call() {
    let dir = tempfile::tempdir().unwrap();
    let messages = dir.path().join("messages.json");
    let list = json!([
        {"type": "system", "content": "any system prompt"},
        {"type": "human", "name": "user-input", "content": format!("--- BEGIN USER INPUT ---\n{PROMPT}\n--- END USER INPUT ---")},
    ]);
    std::fs::write(&messages, list.to_string()).unwrap();
    let output = xtask(&["hash", "--messages", messages.to_str().unwrap()]);
    assert_success(&output);
    let printed: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(printed["caller"], "lead_agent");
    assert_eq!(
        printed["conversation_hash"],
        "9c50eda6ab7e8593dabccbdeadc70a4a7bf778b2c0c3f275f1f96cf2c8ab58db"
    );
    assert_eq!(
        printed["input_hash"],
        "27aeb4c11bff2c3ebc182fe52a06556823c21928620a400c7f26be9733c31f3f"
    );
    let titled = xtask(&[
        "hash",
        "--caller",
        "title_agent",
        "--messages",
        messages.to_str().unwrap(),
    ]);
    let printed: Value = serde_json::from_slice(&titled.stdout).unwrap();
    assert_eq!(printed["caller"], "middleware:title", "the alias applies");
}

#[test]
fn hash_names_a_bad_messages_file() {
    let dir = tempfile::tempdir().unwrap();
    let messages = dir.path().join("bad.json");
    std::fs::write(&messages, "{\"not\": \"a list\"}").unwrap();
    let output = xtask(&["hash", "--messages", messages.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(String::from_utf8_lossy(&output.stderr).contains("bad.json"));
}

#[test]
fn replay_json_reports_a_green_fixture_with_its_shape() {
    let fixture = repo().join("fixtures/write_read_file.ultra.json");
    let output = xtask(&["replay", "--json", "--fixture", fixture.to_str().unwrap()]);
    assert_success(&output);
    let lines = json_lines(&output);
    assert_eq!(lines.len(), 1);
    let line = &lines[0];
    let keys: Vec<&String> = line.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "fixture",
            "scenario",
            "mode",
            "events",
            "framing",
            "misses",
            "model_errors",
            "unused_turns",
            "golden",
            "elapsed_ms",
            "recorded_at",
            "age_days"
        ]
    );
    assert_eq!(line["golden"], "ok");
    // The shipped fixtures predate provenance: their age is unknown, not made up.
    assert_eq!(
        (&line["recorded_at"], &line["age_days"]),
        (&json!(null), &json!(null))
    );
    assert_eq!(line["misses"], json!([]));
    assert_eq!(line["unused_turns"], json!([3]), "the suggestions turn");
    assert_eq!(line["events"].as_array().unwrap().len(), 15);
    assert_eq!(
        line["events"][0],
        json!({"event": "metadata", "keys": ["run_id", "thread_id"]})
    );
    assert_eq!(line["events"][14], json!({"event": "end", "keys": null}));
}

#[test]
fn replay_reports_a_named_fixture_without_golden_as_missing_but_not_failed() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("brand_new.flash.json");
    std::fs::copy(repo().join("fixtures/write_read_file.flash.json"), &copy).unwrap();
    let output = xtask(&["replay", "--json", "--fixture", copy.to_str().unwrap()]);
    assert_success(&output);
    assert_eq!(json_lines(&output)[0]["golden"], "missing");
}

#[test]
fn replay_exits_1_on_a_stale_fixture_and_names_the_miss() {
    let dir = tempfile::tempdir().unwrap();
    let stale = dir.path().join("write_read_file.ultra.json");
    let mut fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("fixtures/write_read_file.ultra.json")).unwrap(),
    )
    .unwrap();
    fixture["prompt"] = json!("A different prompt than the one recorded.");
    std::fs::write(&stale, fixture.to_string()).unwrap();
    let output = xtask(&["replay", "--json", "--fixture", stale.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let line = &json_lines(&output)[0];
    assert_eq!(line["misses"][0]["caller"], "lead_agent");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("replay miss: no recorded output for input hash"),
        "{stderr}"
    );
}

#[test]
fn the_table_lists_every_shipped_fixture() {
    let output = xtask(&["replay"]);
    assert_success(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let fixtures = shipped_fixture_count();
    assert_eq!(stdout.lines().count(), fixtures + 1, "{stdout}");
    assert!(stdout.lines().next().unwrap().starts_with("scenario"));
    assert!(
        stdout.lines().skip(1).all(|line| line.contains(" ok ")),
        "{stdout}"
    );
}

#[test]
fn no_command_prints_help_and_exits_2() {
    let output = xtask(&[]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stdout).contains("replay"));
}

#[test]
fn the_replay_gateway_serves_a_fixture_with_health_runs_and_suggestions() {
    use std::io::{BufRead, BufReader};
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(["replay-gateway", "--port", &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("Failed to start the replay gateway");
    let mut line = String::new();
    // Keep the pipe open until the launcher exits: it prints a summary when it stops.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    stdout.read_line(&mut line).unwrap();
    assert!(line.contains(&format!("http://127.0.0.1:{port}")), "{line}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let outcome = runtime.block_on(async {
        let base = format!("http://127.0.0.1:{port}");
        let health: Value = reqwest_get(&format!("{base}/health")).await;
        assert_eq!(health["status"], "healthy");
        let fixture =
            replay_core::Fixture::load(&repo().join("fixtures/write_read_file.ultra.json"))
                .unwrap();
        // DeerFlow's chat page: the run, then the suggestions it asks for after it.
        let runs = keyless_runner::session::WebClient::new(Some(SCENARIO_MODEL))
            .drive(&base, &fixture.scenario)
            .await
            .unwrap();
        assert_eq!(runs.transcripts.len(), 1);
        let suggestions = runs.suggestions();
        assert_eq!(
            suggestions.len(),
            1,
            "one suggestions request after the run"
        );
        suggestions[0].clone()
    });
    let rest = interrupt(&child, &mut stdout);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        rest.contains("write_read_file.ultra: 4 hit(s), 0 miss(es), unused turns: none"),
        "every turn served, suggestions included: {rest}"
    );
    let first = outcome["suggestions"][0].as_str().unwrap().to_string();
    assert_eq!(
        first, "Can you append a second line to the note?",
        "the recorded suggestions turn is served"
    );
}

/// Polls `url` until the server answers (it is ready once `/health` does).
async fn reqwest_get(url: &str) -> Value {
    for _ in 0..100 {
        if let Ok(response) = reqwest::get(url).await {
            return response.json().await.expect("JSON body");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("{url} never answered");
}

#[test]
fn fixtures_check_reports_every_fixture_green_with_its_unused_turns() {
    let output = xtask(&["fixtures", "check"]);
    assert_success(&output);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let fixtures = shipped_fixture_count();
    assert_eq!(stdout.lines().count(), fixtures, "{stdout}");
    assert!(
        stdout
            .lines()
            .all(|line| line.contains("golden ok, misses 0")),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "write_read_file.ultra: golden ok, misses 0, unused turns [3 (suggest_agent)]"
        ),
        "{stdout}"
    );
}

#[test]
fn the_suite_gateways_write_their_manifest_and_a_miss_makes_the_launcher_exit_1() {
    let folder = tempfile::tempdir().unwrap();
    let manifest = folder.path().join("e2e/gateways.json");
    let web = folder.path().join("dist");
    std::fs::create_dir_all(&web).unwrap();
    std::fs::write(web.join("index.html"), "<div id=\"root\"></div>").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("replay-gateway")
        .arg("--manifest")
        .arg(&manifest)
        .arg("--web-dir")
        .arg(&web)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("Failed to start the replay gateways");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !manifest.exists() {
        assert!(child.try_wait().unwrap().is_none(), "the launcher exited");
        assert!(std::time::Instant::now() < deadline, "no manifest in 60 s");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let document: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest).unwrap()).unwrap();
    let gateways = document["gateways"].as_array().unwrap();
    let fixtures = shipped_fixture_count();
    assert_eq!(gateways.len(), fixtures + 4, "{document}");
    let flash = gateways
        .iter()
        .find(|gateway| gateway["name"] == "write_read_file.flash")
        .unwrap();
    assert_eq!(
        flash["replay_log"],
        "gateways/write_read_file.flash.replay.jsonl"
    );
    let base = flash["base_url"].as_str().unwrap().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        assert_eq!(
            reqwest_get(&format!("{base}/health")).await["status"],
            "healthy"
        );
        let mut page = keyless_runner::session::WebClient::new(Some(SCENARIO_MODEL))
            .open(&base)
            .await
            .unwrap();
        let thread = page.new_thread().await.unwrap();
        // A conversation the fixture never recorded: the suggestions model call misses.
        let unrecorded = [("user".to_owned(), "Something nobody recorded".to_owned())];
        page.suggest(&thread, &unrecorded).await.unwrap();
    });
    let log = folder
        .path()
        .join("e2e/gateways/write_read_file.flash.replay.jsonl");
    let logged = std::fs::read_to_string(&log).unwrap();
    let line: Value = serde_json::from_str(logged.trim_end()).unwrap();
    assert_eq!(
        (&line["event"], &line["caller"]),
        (&json!("miss"), &json!("suggest_agent")),
        "{logged}"
    );
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("replay gateway write_read_file.flash: replay miss (caller suggest_agent): replay miss: no recorded output")
            && stderr.contains("error: replay missed in write_read_file.flash (1)"),
        "{stderr}"
    );
    assert!(
        stdout.contains("write_read_file.flash: 0 hit(s), 1 miss(es), unused turns: #0 lead_agent, #1 lead_agent, #2 lead_agent, #3 suggest_agent")
            && stdout.contains("write_read_file.ultra: no model call"),
        "{stdout}"
    );
}

#[test]
fn replay_keeps_gateway_logs_and_colour_codes_out_of_its_report() {
    // The error fixture makes the gateway log warnings (its model call fails on purpose).
    let fixture = repo().join("fixtures/model_error.thinking.json");
    let output = xtask(&["replay", "--fixture", fixture.to_str().unwrap()]);
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{printed}");
    assert!(
        !printed.contains("WARN"),
        "log lines in the report:\n{printed}"
    );
    assert!(
        !printed.contains('\u{1b}'),
        "colour codes into a pipe:\n{printed:?}"
    );
    let verbose = xtask(&["replay", "-v", "--fixture", fixture.to_str().unwrap()]);
    let logs = String::from_utf8_lossy(&verbose.stderr);
    assert!(
        logs.contains("WARN"),
        "-v shows the gateway's warnings:\n{logs}"
    );
    assert!(
        !logs.contains('\u{1b}'),
        "colour codes into a pipe:\n{logs:?}"
    );
}
