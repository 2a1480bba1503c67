//! `cargo xtask model-server` and `cargo xtask replay --gateway-url` as a user runs them: the
//! model server in its own process, the `gateway-under-test` binary in another pointed at it, and
//! the replay command driving that gateway; misses are printed by the model server the moment
//! they happen; record mode creates a missing recording folder and writes the fixture when
//! stopped.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use harness::adapter::process::{GatewayProcess, workspace_gateway_binary};
use keyless_runner::{DriveOptions, DriverError, RunTranscript, Session, runtime};
use replay_core::Fixture;
use serde_json::{Value, json};

/// Drives the gateway at `url` through `fixture`'s prompt and follow-ups in a DeerFlow session
/// with Layer 1's run request.
async fn drive_prompts(url: &str, fixture: &Fixture) -> Result<Vec<RunTranscript>, DriverError> {
    let mut session = Session::open(url, &DriveOptions::default()).await?;
    session
        .run_scenario(&fixture.scenario, &fixture.turns)
        .await
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf()
}

/// A running `xtask model-server`: its URL, and its stderr lines as they come. Killed on drop.
struct ServerProcess {
    child: Child,
    url: String,
    stderr: mpsc::Receiver<String>,
    /// Where the server wrote its reset token (`--reset-token-file`), which `replay` needs.
    token_file: PathBuf,
    _token_dir: tempfile::TempDir,
}

impl ServerProcess {
    fn start(args: &[&str], env: &[(&str, &str)]) -> ServerProcess {
        let token_dir = tempfile::tempdir().expect("tempdir");
        let token_file = token_dir.path().join("reset-token");
        let mut child = Command::new(env!("CARGO_BIN_EXE_xtask"))
            .arg("model-server")
            .args(["--port", "0"])
            .arg("--reset-token-file")
            .arg(&token_file)
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("xtask model-server starts");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let (lines, receiver) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let first = receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the model server prints its address");
        let url = first
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .unwrap_or_else(|| panic!("no address in {first:?}"))
            .to_owned();
        let stderr = BufReader::new(child.stderr.take().expect("stderr"));
        let (lines, stderr_lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        // Keep draining stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in receiver {});
        ServerProcess {
            child,
            url,
            stderr: stderr_lines,
            token_file,
            _token_dir: token_dir,
        }
    }

    /// The next stderr line containing `needle`, within a bound.
    fn wait_for(&self, needle: &str) -> String {
        loop {
            let line = self
                .stderr
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no stderr line with {needle:?}"));
            if line.contains(needle) {
                return line;
            }
        }
    }

    /// SIGTERM, then the exit status and the rest of stdout.
    fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .expect("kill runs");
        self.child.wait().expect("the model server exits")
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn gateway(runtime: &tokio::runtime::Runtime, model_base_url: &str) -> GatewayProcess {
    let binary = workspace_gateway_binary().unwrap_or_else(|err| panic!("{err}"));
    runtime
        .block_on(GatewayProcess::spawn(&binary, model_base_url, None))
        .unwrap_or_else(|err| panic!("{err}"))
}

fn replay(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xtask"))
        .arg("replay")
        .args(args)
        .output()
        .expect("xtask replay runs")
}

/// `xtask replay --json` of `fixture` through `gateway`, whose model is `server`.
fn replay_through(gateway: &GatewayProcess, server: &ServerProcess, fixture: &Path) -> Output {
    replay(&[
        "--json",
        "--gateway-url",
        gateway.url(),
        "--model-server",
        &server.url,
        "--reset-token-file",
        server.token_file.to_str().unwrap(),
        "--fixture",
        fixture.to_str().unwrap(),
    ])
}

fn json_line(output: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

#[test]
fn replay_drives_a_gateway_at_a_url_and_the_model_server_prints_misses_as_they_happen() {
    let fixture = repo().join("fixtures/write_read_file.ultra.json");
    let server = ServerProcess::start(&["--fixture", fixture.to_str().unwrap()], &[]);
    let runtime = runtime().expect("runtime");
    let gateway = gateway(&runtime, &format!("{}/v1", server.url));

    let green = replay_through(&gateway, &server, &fixture);
    assert!(
        green.status.success(),
        "{}",
        String::from_utf8_lossy(&green.stderr)
    );
    let line = json_line(&green);
    assert_eq!(line["golden"], "ok");
    assert_eq!(line["misses"], json!([]));
    assert_eq!(line["unused_turns"], json!([3]), "the suggestions turn");

    // The same fixture with another prompt: the gateway's first call misses at the model
    // server, which prints it at once; replay exits 1 and names it.
    let folder = tempfile::tempdir().unwrap();
    let stale = folder.path().join("write_read_file.ultra.json");
    let mut changed: Value =
        serde_json::from_str(&std::fs::read_to_string(&fixture).unwrap()).unwrap();
    changed["prompt"] = json!("A different prompt than the one recorded.");
    std::fs::write(&stale, changed.to_string()).unwrap();
    let red = replay_through(&gateway, &server, &stale);
    assert_eq!(red.status.code(), Some(1));
    let line = json_line(&red);
    assert_eq!(line["misses"][0]["caller"], "lead_agent");
    let printed = server.wait_for("model-server: miss:");
    assert!(
        printed.contains("replay miss: no recorded output"),
        "{printed}"
    );
    assert!(
        String::from_utf8_lossy(&red.stderr).contains("first differing field: [0].content"),
        "{}",
        String::from_utf8_lossy(&red.stderr)
    );
    assert!(server.terminate().success());
}

#[test]
fn record_mode_proxies_a_run_and_writes_the_fixture_when_stopped() {
    let fixture_path = repo().join("fixtures/write_read_file.flash.json");
    let fixture = Fixture::load(&fixture_path).unwrap();
    let folder = tempfile::tempdir().unwrap();
    // In a folder that does not exist yet: the model server creates it and says so.
    let recording = folder.path().join("new").join("recording.jsonl");
    let upstream = ServerProcess::start(&["--fixture", fixture_path.to_str().unwrap()], &[]);
    let proxy = ServerProcess::start(
        &[
            "--record",
            "--upstream",
            &format!("{}/v1", upstream.url),
            "--scenario",
            "write_read_file",
            "--mode",
            "flash",
            "--prompt",
            &fixture.scenario.prompt,
            "--out",
            folder.path().to_str().unwrap(),
            "--recording-out",
            recording.to_str().unwrap(),
        ],
        &[("OPENAI_API_KEY", "sk-upstream-SECRET-0123456789")],
    );
    proxy.wait_for("created folder");
    let runtime = runtime().expect("runtime");
    let gateway = gateway(&runtime, &format!("{}/v1", proxy.url));
    runtime
        .block_on(drive_prompts(gateway.url(), &fixture))
        .expect("the recorded drive");
    drop(gateway);
    assert!(proxy.terminate().success());

    let built = Fixture::load(&folder.path().join("write_read_file.flash.json"))
        .expect("the fixture was written");
    let recorded: Vec<&str> = built.turns.iter().map(|t| t.input_hash.as_str()).collect();
    let shipped: Vec<&str> = fixture.turns[..3]
        .iter()
        .map(|t| t.input_hash.as_str())
        .collect();
    assert_eq!(recorded, shipped, "the same keys as the shipped fixture");
    assert!(recording.with_extension("jsonl.meta.json").is_file());
    let text = std::fs::read_to_string(&recording).unwrap();
    assert!(!text.contains("SECRET"), "the key reached the recording");
}

#[test]
fn record_mode_without_its_key_exits_2_naming_the_variable() {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args([
            "model-server",
            "--record",
            "--upstream",
            "http://127.0.0.1:9/v1",
            "--scenario",
            "s",
            "--mode",
            "flash",
            "--prompt",
            "p",
            "--key-env",
            "NO_SUCH_KEY_VARIABLE",
        ])
        .env_remove("NO_SUCH_KEY_VARIABLE")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("set NO_SUCH_KEY_VARIABLE"));
}
