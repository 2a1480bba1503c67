//! MCP's stateless revision (2026-07-28: no session, `server/discover`, `Mcp-Method`/`Mcp-Name`
//! headers, `resultType`, input-required retries) recorded and replayed under the official
//! Python SDK 2.x client (`mcp.Client`), and the same SDK's sessionful dialect on the same URL.
//! The real server is an `MCPServer` serving both eras (`mcp/stateless_server.py`), whose answer
//! holds the time: it is recorded through the model server's MCP route, stopped, and the replay
//! must give the client the recorded answers byte for byte.
//!
//! `MCP_SDK2_PYTHON` names a Python with `mcp` 2.x (`.ci/run` sets it); without it the tests
//! are skipped with a notice, except under `CI`.

use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::workspace::fixtures_dir;
use keyless_runner::boundary::{Boundaries, BoundaryLedger, BoundaryName};
use keyless_runner::mcp::McpUpstream;
use keyless_runner::server::{RecordConfig, RecordLimits};
use keyless_runner::{Mode, ModelLedger, ModelServer, ServerOptions};
use replay_core::{Exchange, Fixture, Scenario, UiMode};
use serde_json::{Value, json};

/// The Python with `mcp` 2.x, or `None` (skipped) outside CI.
fn sdk2_python() -> Option<String> {
    match std::env::var("MCP_SDK2_PYTHON") {
        Ok(python) => Some(python),
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!("CI must set MCP_SDK2_PYTHON to a Python with mcp 2.x (see .ci/run)")
        }
        Err(_) => {
            eprintln!("skipped: set MCP_SDK2_PYTHON to run the MCP 2.x client (.ci/run does)");
            None
        }
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/keyless/mcp")
        .join(name)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn boundaries(upstream: McpUpstream) -> Arc<Boundaries> {
    let mut boundaries = Boundaries {
        configured_in: "keyless.toml".into(),
        ..Boundaries::default()
    };
    (boundaries.mcp).insert(BoundaryName::parse("time").unwrap(), upstream);
    Arc::new(boundaries)
}

/// How the client reaches the model server's route.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Over {
    /// Streamable HTTP, at the route's URL.
    Http,
    /// stdio, through `keyless mcp-stdio --url <route>` (what `{mcp_cmd:<name>}` runs).
    Stdio,
}

/// Which real server a recording talks to.
#[derive(Debug, Clone, Copy)]
enum Upstream {
    /// `stateless_server.py` (SDK 2.x): both eras on one endpoint.
    DualEra { json_answers: bool },
    /// `time_server.py` (SDK 1.x): sessions only.
    Sessionful,
    /// `stateless_server.py` over stdio: a `command` keyless starts per session.
    DualEraStdio,
}

/// The real server over HTTP; killed on drop.
struct RealServer {
    child: Child,
    port: u16,
}

impl Drop for RealServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The real server on a free port: the dual-era `MCPServer`, or with `Upstream::Sessionful`
/// the sessionful-only FastMCP server of `mcp.rs` (SDK 1.x, `MCP_SDK_PYTHON`).
fn start_server(python: &str, upstream: Upstream) -> RealServer {
    let port = StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut command = Command::new(python);
    match upstream {
        Upstream::DualEra { json_answers } => {
            command
                .arg(script("stateless_server.py"))
                .arg(port.to_string());
            if json_answers {
                command.arg("--json");
            }
        }
        Upstream::Sessionful => {
            command
                .arg(script("time_server.py"))
                .args(["http", &port.to_string()]);
        }
        Upstream::DualEraStdio => unreachable!("keyless starts a stdio server itself"),
    }
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let server = RealServer {
        child: command.spawn().unwrap(),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "the MCPServer did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// Runs `stateless_client.py` in `mode` against the model server's route; its one JSON line.
fn run_client(
    python: &str,
    (mode, over): (&str, Over),
    server: &ModelServer,
    calls: &Value,
) -> Value {
    let url = format!("{}/_keyless/mcp/time", server.url().trim_end_matches('/'));
    let mut client = Command::new(python);
    client
        .arg(script("stateless_client.py"))
        .args([mode, &url, &calls.to_string()]);
    if over == Over::Stdio {
        client.arg(env!("CARGO_BIN_EXE_keyless"));
    }
    let output = client.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{mode} client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|err| panic!("{mode}: not one JSON line ({err}):\n{stdout}"))
}

/// Records `calls` from the client in `mode` through the model server against the real server,
/// then stops the server (its port proven closed); the client's output and the fixture.
fn record(
    python: &str,
    (server_python, upstream): (&str, Upstream),
    mode: &str,
    calls: &Value,
    folder: &Path,
) -> (Value, PathBuf) {
    let (real, mcp, over) = match upstream {
        Upstream::DualEraStdio => {
            let argv = [
                server_python,
                &script("stateless_server.py").display().to_string(),
                "stdio",
            ];
            let argv = argv.map(str::to_owned).to_vec();
            let command = McpUpstream::Command {
                argv,
                env: Default::default(),
                cwd: None,
            };
            (None, command, Over::Stdio)
        }
        _ => {
            let real = start_server(server_python, upstream);
            let url = format!("http://127.0.0.1:{}/mcp", real.port);
            (Some(real), McpUpstream::Url(url), Over::Http)
        }
    };
    let folder = folder.join(format!("{mode}-{upstream:?}"));
    std::fs::create_dir_all(&folder).unwrap();
    let runtime = runtime();
    let config = RecordConfig {
        // The model's upstream: never called here.
        upstream: "http://127.0.0.1:9/v1".into(),
        api_key: "sk-model-key-0123456789abcdef".into(),
        recording: folder.join("recording.jsonl"),
        scenario: Scenario::new("s", UiMode::Flash, "p"),
        allow_insecure_upstream: false,
        limits: RecordLimits::default(),
        aws: None,
    };
    let options = ServerOptions {
        boundaries: boundaries(mcp),
        ..ServerOptions::default()
    };
    let server = runtime
        .block_on(ModelServer::start(Mode::Record(Box::new(config)), options))
        .unwrap();
    let output = run_client(python, (mode, over), &server, calls);
    let recorded = runtime.block_on(server.stop()).unwrap().expect("a fixture");
    if let Some(real) = real {
        let port = real.port;
        drop(real);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the real server must be unreachable during the replay"
        );
    }
    let mut fixture = Fixture::load(&fixtures_dir().join("write_read_file.flash.json")).unwrap();
    fixture.exchanges = recorded.fixture.exchanges;
    let written = folder.join("fixture.flash.json");
    std::fs::write(&written, fixture.to_pretty_json()).unwrap();
    (output, written)
}

/// Replays `fixture` to the client in `mode` (the configured server a closed port); its output
/// and the model server's boundary ledger.
fn replay(
    python: &str,
    (mode, over): (&str, Over),
    calls: &Value,
    fixture: &Path,
) -> (Value, BoundaryLedger) {
    let runtime = runtime();
    // The configured server cannot be reached or started: a replay never touches it.
    let absent = match over {
        Over::Http => McpUpstream::Url("http://127.0.0.1:9/mcp".into()),
        Over::Stdio => McpUpstream::Command {
            argv: vec!["/nonexistent/mcp-server".into()],
            env: Default::default(),
            cwd: None,
        },
    };
    let options = ServerOptions {
        boundaries: boundaries(absent),
        ..ServerOptions::default()
    };
    let server = runtime
        .block_on(ModelServer::start(
            Mode::Fixtures(vec![fixture.to_path_buf()]),
            options,
        ))
        .unwrap();
    let output = run_client(python, (mode, over), &server, calls);
    let state = runtime
        .block_on(async { server.client().unwrap().state().await })
        .unwrap();
    runtime.block_on(server.stop()).unwrap();
    (output, ModelLedger::from_state(state).boundaries)
}

/// Each recorded exchange's label, in order.
fn labels(exchanges: &[Exchange]) -> Vec<&str> {
    exchanges.iter().map(|e| e.label.as_str()).collect()
}

/// The stateless client (`mode="auto"`: `server/discover`, then per-request `_meta` and
/// headers) against SSE and JSON answers, an elicitation answered by an `input_required`
/// result and a retry; and the same SDK's sessionful client (`initialize`, a session) on the
/// same URL. Each recorded with the real server, replayed twice with it stopped: the same
/// output (timestamps included), no miss, nothing unused.
#[test]
fn the_stateless_revision_and_the_sessionful_one_replay_the_recorded_answers_on_one_url() {
    let Some(python) = sdk2_python() else { return };
    let both = json!([["get_time", {"city": "Paris"}], ["get_local_time", {"city": "Paris"}]]);
    let stateless = [
        "server/discover",
        "tools/list",
        "tools/call get_time",
        "tools/call get_local_time",
        "tools/call get_local_time",
    ];
    let cases: [(&str, bool, &Value, &str, &[&str]); 3] = [
        ("auto", false, &both, "2026-07-28", &stateless),
        ("auto", true, &both, "2026-07-28", &stateless),
        (
            "legacy",
            false,
            // A sessionful server asks for the offset mid-call (`elicitation/create` on the
            // call's SSE stream) and waits for the client's answer: relayed as it comes.
            &both,
            "2025-11-25",
            &[
                "initialize",
                "tools/list",
                "tools/call get_time",
                "tools/call get_local_time",
            ],
        ),
    ];
    let folder = tempfile::tempdir().unwrap();
    for (mode, json_answers, calls, protocol, expected) in cases {
        let case = format!("{mode} (json answers: {json_answers})");
        let upstream = (python.as_str(), Upstream::DualEra { json_answers });
        let (recorded, fixture) = record(&python, upstream, mode, calls, folder.path());
        let text = recorded.to_string();
        assert_eq!(recorded["protocol"], protocol, "{case}: {text}");
        assert!(text.contains("Paris: 20"), "{case}: {text}");
        assert!(text.contains("Paris (UTC+2): 20"), "{case}: {text}");
        let exchanges = Fixture::load(&fixture).unwrap().exchanges;
        assert_eq!(labels(&exchanges), expected, "{case}");
        if mode == "legacy" {
            let before = &exchanges[3].answer["before"][0];
            assert_eq!(before["method"], "elicitation/create", "{case}: {before}");
        }
        if mode == "auto" {
            // The stateless key holds the protocol version; the retry its input responses.
            assert_eq!(exchanges[2].request["protocolVersion"], 20260728, "{case}");
            assert_eq!(
                exchanges[3].answer["response"]["result"]["resultType"],
                "input_required"
            );
            let retry = &exchanges[4].request["params"];
            assert!(retry["inputResponses"].is_object(), "{case}: {retry}");
        }
        for _ in 0..2 {
            let (replayed, ledger) = replay(&python, (mode, Over::Http), calls, &fixture);
            assert_eq!(replayed.to_string(), text, "{case}");
            assert_eq!(ledger.misses, [], "{case}");
            assert_eq!(ledger.unused, [], "{case}");
        }
    }
}

/// A stdio server (`[mcp.<name>] command`) that asks the client mid-call (`elicitation/create`)
/// and waits for its answer, driven by a client over stdio through `keyless mcp-stdio` (what
/// `{mcp_cmd:<name>}` runs): the request reaches the client as it comes and its answer reaches
/// the server, so the call is recorded; replayed twice with the server's command absent, the
/// same output, no miss, nothing unused.
#[test]
fn a_stdio_server_asking_the_client_mid_call_is_recorded_through_the_stdio_stand_in() {
    let Some(python) = sdk2_python() else { return };
    let calls = json!([["get_time", {"city": "Paris"}], ["get_local_time", {"city": "Paris"}]]);
    let folder = tempfile::tempdir().unwrap();
    let upstream = (python.as_str(), Upstream::DualEraStdio);
    let (recorded, fixture) = record(&python, upstream, "legacy", &calls, folder.path());
    let text = recorded.to_string();
    assert!(text.contains("Paris (UTC+2): 20"), "{text}");
    let exchanges = Fixture::load(&fixture).unwrap().exchanges;
    assert_eq!(
        labels(&exchanges),
        [
            "initialize",
            "tools/list",
            "tools/call get_time",
            "tools/call get_local_time"
        ]
    );
    let before = &exchanges[3].answer["before"][0];
    assert_eq!(before["method"], "elicitation/create", "{before}");
    for _ in 0..2 {
        let (replayed, ledger) = replay(&python, ("legacy", Over::Stdio), &calls, &fixture);
        assert_eq!(replayed.to_string(), text);
        assert_eq!(ledger.misses, []);
        assert_eq!(ledger.unused, []);
    }
}

/// A changed argument on the stateless dialect is a miss naming server, tool and field, and
/// the run's ledger holds it.
#[test]
fn a_changed_stateless_argument_is_a_miss_naming_server_tool_and_field() {
    let Some(python) = sdk2_python() else { return };
    let folder = tempfile::tempdir().unwrap();
    let (_, fixture) = record(
        &python,
        (
            &python,
            Upstream::DualEra {
                json_answers: false,
            },
        ),
        "auto",
        &json!([["get_time", {"city": "Paris"}]]),
        folder.path(),
    );
    let (replayed, ledger) = replay(
        &python,
        ("auto", Over::Http),
        &json!([["get_time", {"city": "Rome"}]]),
        &fixture,
    );
    let raised = replayed["calls"][0]["raised"].as_str().unwrap_or("");
    for text in [
        "mcp miss: `tools/call get_time` from `time`",
        "first differing field: params.arguments.city: recorded \"Paris\", now \"Rome\"",
    ] {
        assert!(raised.contains(text), "{replayed}\nexpected: {text}");
    }
    assert_eq!(ledger.misses.len(), 1, "the run fails with it");
}

/// A stateless client against a sessionful-only server: its `server/discover` probe is refused
/// (`400`, a JSON-RPC error) and it falls back to `initialize`. The refusal is recorded as the
/// probe's answer, so the replay refuses alike, the client falls back alike, and nothing misses.
#[test]
fn a_refused_discover_probe_is_recorded_so_the_replay_falls_back_alike() {
    let Some(python) = sdk2_python() else { return };
    let Ok(sessionful_python) = std::env::var("MCP_SDK_PYTHON") else {
        eprintln!("skipped: set MCP_SDK_PYTHON for the sessionful server (.ci/run does)");
        return;
    };
    let calls = json!([["get_time", {"city": "Paris"}]]);
    let folder = tempfile::tempdir().unwrap();
    let upstream = (sessionful_python.as_str(), Upstream::Sessionful);
    let (recorded, fixture) = record(&python, upstream, "auto", &calls, folder.path());
    let text = recorded.to_string();
    assert_eq!(recorded["protocol"], "2025-11-25", "{text}");
    let exchanges = Fixture::load(&fixture).unwrap().exchanges;
    assert_eq!(
        labels(&exchanges),
        [
            "server/discover",
            "initialize",
            "tools/list",
            "tools/call get_time"
        ]
    );
    assert_eq!(
        exchanges[0].answer["status"], 400,
        "{}",
        exchanges[0].answer
    );
    for _ in 0..2 {
        let (replayed, ledger) = replay(&python, ("auto", Over::Http), &calls, &fixture);
        assert_eq!(replayed.to_string(), text);
        assert_eq!(ledger.misses, []);
        assert_eq!(ledger.unused, []);
    }
}
