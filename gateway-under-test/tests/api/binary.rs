//! The binary: `gateway-under-test --config FILE --port 0` serves on 127.0.0.1, prints its
//! address, and exits cleanly on Ctrl-C (SIGINT), logging to a pipe without colour codes; a bad
//! config names the key and exits non-zero; after `kill -9` mid-run, the restarted binary
//! finishes the interrupted run as `error`; a second binary on a running one's home refuses to
//! start.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::vocabulary::status_and_body;

const BINARY: &str = env!("CARGO_BIN_EXE_gateway-under-test");

fn write_config(dir: &std::path::Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("gateway.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn the_binary_prints_its_address_serves_and_stops_on_ctrl_c() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "home = \"home\"\n[auth.password_hash]\nmemory_kib = 8\niterations = 1\nparallelism = 1\n",
    );
    // The log goes to a pipe, where it must carry no colour codes.
    let (mut child, url) = start_binary(&config, "info", Stdio::piped());
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    let (_, health) = get_json(&format!("{url}/health")).await;
    assert_eq!(
        health,
        serde_json::json!({"status": "healthy", "service": "deer-flow-gateway"})
    );
    assert!(
        dir.path().join("home/db/deerflow.db").exists(),
        "home is relative to the config file"
    );

    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let exit = loop {
        if let Some(exit) = child.try_wait().unwrap() {
            break exit;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the gateway did not stop on SIGINT"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(exit.success(), "{exit:?}");
    let mut logs = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut logs).unwrap();
    assert!(logs.contains("shutting down"), "{logs}");
    assert!(
        !logs.contains('\u{1b}'),
        "logs to a pipe carry no colour codes: {logs:?}"
    );
}

#[test]
fn a_bad_config_exits_non_zero_naming_the_key() {
    // (the configuration, what its error must name)
    let table = [
        (
            "[auth]\ntoken_expiry_days = 99\n",
            ["auth.token_expiry_days", ""],
        ),
        (
            "[[models]]\nname = \"m\"\nuse = \"openai\"\napi = \"completions\"\n",
            ["model 'm'", "api must be"],
        ),
    ];
    for (text, names) in table {
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(dir.path(), text);
        let output = Command::new(BINARY)
            .args(["--config", config.to_str().unwrap()])
            .output()
            .expect("Failed to start the gateway binary");
        assert!(!output.status.success(), "{text}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        for name in names {
            assert!(stderr.contains(name), "{text}: {stderr}");
        }
    }
}

/// Two gateways on one database would each finish the other's live runs as crash leftovers at
/// start: the second process refuses to start, naming the folder, while the first serves on.
#[tokio::test]
async fn a_second_gateway_on_the_same_home_exits_non_zero_naming_the_database_folder() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "home = \"home\"\n[auth.password_hash]\nmemory_kib = 8\niterations = 1\nparallelism = 1\n",
    );
    let (mut first, url) = start_binary(&config, "warn", Stdio::null());
    let mut second = Command::new(BINARY)
        .args(["--config", config.to_str().unwrap(), "--port", "0"])
        .env_remove("DEER_FLOW_HOME")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("Failed to start the gateway binary");
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            second.kill().unwrap();
            second.wait().unwrap();
            first.kill().unwrap();
            panic!("the second gateway still runs after 30 s on a home in use");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut second.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("home/db") && stderr.contains("in use by another gateway"),
        "{stderr}"
    );
    assert_eq!(get_json(&format!("{url}/health")).await.0, 200);
    first.kill().unwrap();
    first.wait().unwrap();
}

#[test]
fn the_example_config_loads() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("gateway.example.toml");
    let env = |name: &str| (name == "OPENAI_API_KEY").then(|| "sk-example".to_string());
    let config =
        gateway_under_test::Config::load(&path, &env).expect("the example config is valid");
    assert_eq!(config.models[0].use_, "openai");
}

/// Starts the binary on `config`, logging at `rust_log` to `stderr`, and returns it with its URL
/// (from its first output line).
fn start_binary(
    config: &std::path::Path,
    rust_log: &str,
    stderr: Stdio,
) -> (std::process::Child, String) {
    let mut child = Command::new(BINARY)
        .args(["--config", config.to_str().unwrap(), "--port", "0"])
        .env("RUST_LOG", rust_log)
        .env_remove("DEER_FLOW_HOME")
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("Failed to start the gateway binary");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .trim()
        .strip_prefix("gateway-under-test listening on ")
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .to_string();
    (child, url)
}

/// A model endpoint on 127.0.0.1 that accepts every request and never answers: a run calling it
/// stays `running` until the gateway dies. Each accepted connection is reported on the channel.
async fn model_that_never_answers() -> (String, tokio::sync::mpsc::UnboundedReceiver<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let (accepted, calls) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
            let _ = accepted.send(());
        }
    });
    (url, calls)
}

async fn get_json(url: &str) -> (u16, serde_json::Value) {
    status_and_body(reqwest::Client::new().get(url)).await
}

/// Finding 4 of issue 10 ("runs stuck `running` after a crash"): after `kill -9` and a restart,
/// the interrupted run and its thread stayed `running` forever. At start the gateway now marks
/// runs no worker owns as `error` with DeerFlow's reason and frees their threads; the database
/// passes `integrity_check`.
#[tokio::test]
async fn runs_stuck_running_after_a_crash_are_recovered_at_restart() {
    let (model_url, mut model_calls) = model_that_never_answers().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "home = \"home\"\n[auth]\ndisabled = true\n\
             [auth.password_hash]\nmemory_kib = 8\niterations = 1\nparallelism = 1\n\
             [[models]]\nname = \"m\"\nuse = \"openai\"\nmodel = \"stand-in\"\n\
             api_key = \"sk-test\"\nbase_url = \"{model_url}\"\n"
        ),
    );
    let (mut child, url) = start_binary(&config, "warn", Stdio::null());
    let http = reqwest::Client::new();
    let thread_id = "crash-thread";
    let created = http
        .post(format!("{url}/api/threads"))
        .json(&serde_json::json!({"thread_id": thread_id, "metadata": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);
    let (_, run) = status_and_body(
        http.post(format!("{url}/api/threads/{thread_id}/runs"))
            .json(&serde_json::json!({
                "assistant_id": "lead_agent",
                "input": {"messages": [{"role": "user", "content": "hello"}]},
            })),
    )
    .await;
    let run_id = run["run_id"].as_str().expect("a run id").to_string();
    let run_url = format!("{url}/api/threads/{thread_id}/runs/{run_id}");
    tokio::time::timeout(Duration::from_secs(30), model_calls.recv())
        .await
        .expect("the run calls the model within 30 s");
    assert_eq!(get_json(&run_url).await.1["status"], "running");

    child.kill().unwrap();
    child.wait().unwrap();
    let (mut restarted, url) = start_binary(&config, "warn", Stdio::null());
    let run_url = format!("{url}/api/threads/{thread_id}/runs/{run_id}");
    let (_, run) = get_json(&run_url).await;
    assert_eq!(run["status"], "error", "{run}");
    let (_, thread) = get_json(&format!("{url}/api/threads/{thread_id}")).await;
    assert_eq!(thread["status"], "error", "{thread}");
    let cancel = http.post(format!("{run_url}/cancel")).send().await.unwrap();
    assert_eq!(cancel.status(), 409, "a finished run is not cancellable");
    let db = rusqlite::Connection::open(dir.path().join("home/db/deerflow.db")).unwrap();
    let (status, error): (String, Option<String>) = db
        .query_row(
            "SELECT status, error FROM runs WHERE run_id = ?1",
            [&run_id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!(
        (status.as_str(), error.as_deref()),
        (
            "error",
            Some("Gateway restarted before this run reached a durable final state.")
        )
    );
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");
    restarted.kill().unwrap();
    restarted.wait().unwrap();
}
