//! MCP servers recorded and replayed under clients nobody here wrote: the official Python SDK's
//! `ClientSession` and `langchain-mcp-adapters`, over Streamable HTTP (SSE and JSON answers) and
//! over stdio through `keyless mcp-stdio`. The real server is a FastMCP server
//! (`mcp/time_server.py`) whose answer holds the time: it is recorded through the MCP route,
//! stopped, and the replay must give each client the recorded answers byte for byte.
//!
//! `MCP_SDK_PYTHON` names a Python with `mcp` and `langchain-mcp-adapters` (`.ci/run` sets it);
//! without it the tests are skipped with a notice, except under `CI`.

use std::collections::BTreeMap;
use std::net::TcpListener as StdListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use harness::workspace::fixtures_dir;
use keyless_runner::boundary::{Boundaries, BoundaryLedger, BoundaryName};
use keyless_runner::mcp::{McpUpstream, contract_shape};
use keyless_runner::server::{RecordConfig, RecordLimits};
use keyless_runner::{Mode, ModelLedger, ModelServer, ServerOptions};
use replay_core::{Fixture, Scenario, UiMode};
use serde_json::{Value, json};

/// The Python with `mcp` and `langchain-mcp-adapters`, or `None` (skipped) outside CI.
fn sdk_python() -> Option<String> {
    match std::env::var("MCP_SDK_PYTHON") {
        Ok(python) => Some(python),
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set MCP_SDK_PYTHON to a Python with mcp and langchain-mcp-adapters (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!("skipped: set MCP_SDK_PYTHON to run the MCP clients (.ci/run does)");
            None
        }
    }
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/keyless/mcp")
        .join(name)
}

/// How the client reaches the server.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Transport {
    /// Streamable HTTP, the server answering with SSE streams.
    HttpSse,
    /// Streamable HTTP, the server answering with JSON bodies.
    HttpJson,
    /// stdio, through `keyless mcp-stdio`.
    Stdio,
}

/// A tokio runtime for the model server while a client runs in a blocking process.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// `[mcp.time]` as keyless.toml would configure it, with the stand-in being this build's binary.
fn boundaries(upstream: McpUpstream) -> Arc<Boundaries> {
    let mut boundaries = Boundaries {
        configured_in: "keyless.toml".into(),
        stand_in: Some(env!("CARGO_BIN_EXE_keyless").to_owned()),
        ..Boundaries::default()
    };
    boundaries
        .mcp
        .insert(BoundaryName::parse("time").unwrap(), upstream);
    Arc::new(boundaries)
}

/// The model server's MCP route for `time`, or the stand-in command line running to it.
fn target(server: &ModelServer, transport: Transport, boundaries: &Boundaries) -> String {
    let kind = match transport {
        Transport::Stdio => "{mcp_cmd:time}",
        Transport::HttpSse | Transport::HttpJson => "{mcp_url:time}",
    };
    boundaries.substitute(kind, &server.url()).unwrap()
}

/// The real FastMCP server over HTTP; killed on drop.
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

fn free_port() -> u16 {
    StdListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_http_server(python: &str, transport: Transport, renamed: bool) -> RealServer {
    let port = free_port();
    let mut command = Command::new(python);
    command
        .arg(script("time_server.py"))
        .args(["http", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if transport == Transport::HttpJson {
        command.arg("--json");
    }
    if renamed {
        command.arg("--renamed");
    }
    let server = RealServer {
        child: command.spawn().unwrap(),
        port,
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            Instant::now() < deadline,
            "the FastMCP server did not start"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    server
}

/// Runs `client.py`; its one JSON line.
fn run_client(
    python: &str,
    client: &str,
    transport: Transport,
    target: &str,
    calls: &Value,
) -> Value {
    let transport_name = if transport == Transport::Stdio {
        "stdio"
    } else {
        "http"
    };
    let output = Command::new(python)
        .arg(script("client.py"))
        .args([client, transport_name, target, &calls.to_string()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{client} over {transport:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_str(stdout.lines().last().unwrap_or(""))
        .unwrap_or_else(|err| panic!("{client}: not one JSON line ({err}):\n{stdout}"))
}

/// Records `calls` from `client` through the model server in record mode against the real
/// server; the client's output and the fixture built (a shipped fixture's turns with the
/// exchanges recorded), written in `folder`.
fn record(
    python: &str,
    client: &str,
    transport: Transport,
    calls: &Value,
    renamed: bool,
    folder: &Path,
) -> (Value, PathBuf) {
    let mut real = None;
    let upstream = match transport {
        Transport::Stdio => {
            let mut argv = vec![
                python.to_owned(),
                script("time_server.py").display().to_string(),
                "stdio".to_owned(),
            ];
            if renamed {
                argv.push("--renamed".to_owned());
            }
            McpUpstream::Command {
                argv,
                env: [("TIME_TOKEN".to_owned(), TOKEN.to_owned())].into(),
                cwd: None,
            }
        }
        Transport::HttpSse | Transport::HttpJson => {
            let server = start_http_server(python, transport, renamed);
            let url = format!("http://127.0.0.1:{}/mcp", server.port);
            real = Some(server);
            McpUpstream::Url(url)
        }
    };
    let folder = folder.join(format!("{client}-{transport:?}-renamed-{renamed}"));
    std::fs::create_dir_all(&folder).unwrap();
    let boundaries = boundaries(upstream);
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
        boundaries: Arc::clone(&boundaries),
        ..ServerOptions::default()
    };
    let server = runtime
        .block_on(ModelServer::start(Mode::Record(Box::new(config)), options))
        .unwrap();
    let output = run_client(
        python,
        client,
        transport,
        &target(&server, transport, &boundaries),
        calls,
    );
    let recorded = runtime.block_on(server.stop()).unwrap().expect("a fixture");
    if let Some(server) = real {
        let port = server.port;
        drop(server);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the real server must be unreachable during the replay"
        );
    }
    let mut fixture = Fixture::load(&fixtures_dir().join("write_read_file.flash.json")).unwrap();
    fixture.exchanges = recorded.fixture.exchanges;
    let written = folder.join(format!("{client}-{transport:?}.flash.json"));
    std::fs::write(&written, fixture.to_pretty_json()).unwrap();
    (output, written)
}

/// A secret a stdio server's `env` carries: it must be in no file written.
const TOKEN: &str = "tz-7c1e4b9a2f5d8e3c";

/// Replays `fixture` to `client` with the server's configured upstream unreachable; its output
/// and the model server's boundary ledger.
fn replay(
    python: &str,
    client: &str,
    transport: Transport,
    calls: &Value,
    fixture: &Path,
) -> (Value, BoundaryLedger) {
    // Replay never touches the configured server: a closed port, a program that does not exist.
    let upstream = match transport {
        Transport::Stdio => McpUpstream::Command {
            argv: vec!["/nonexistent/time-server".into()],
            env: BTreeMap::new(),
            cwd: None,
        },
        Transport::HttpSse | Transport::HttpJson => {
            McpUpstream::Url("http://127.0.0.1:9/mcp".into())
        }
    };
    let boundaries = boundaries(upstream);
    let runtime = runtime();
    let options = ServerOptions {
        boundaries: Arc::clone(&boundaries),
        ..ServerOptions::default()
    };
    let server = runtime
        .block_on(ModelServer::start(
            Mode::Fixtures(vec![fixture.to_path_buf()]),
            options,
        ))
        .unwrap();
    let output = run_client(
        python,
        client,
        transport,
        &target(&server, transport, &boundaries),
        calls,
    );
    let state = runtime
        .block_on(async { server.client().unwrap().state().await })
        .unwrap();
    runtime.block_on(server.stop()).unwrap();
    (output, ModelLedger::from_state(state).boundaries)
}

#[test]
fn each_client_and_transport_replays_the_recorded_answers_byte_for_byte() {
    let Some(python) = sdk_python() else { return };
    let calls = json!([["get_time", {"city": "Paris"}]]);
    let cases = [
        ("sdk", Transport::HttpSse),
        ("sdk", Transport::HttpJson),
        ("sdk", Transport::Stdio),
        ("langchain", Transport::HttpSse),
        ("langchain", Transport::Stdio),
    ];
    let folder = tempfile::tempdir().unwrap();
    for (client, transport) in cases {
        let (recorded, fixture) = record(&python, client, transport, &calls, false, folder.path());
        let text = recorded.to_string();
        assert!(
            text.contains("Paris (UTC+0): 20"),
            "{client} {transport:?}: {text}"
        );
        // The client got the exchange as written: the stdio server's token is already gone.
        assert!(!text.contains(TOKEN), "{client} {transport:?}: {text}");
        for _ in 0..2 {
            let (replayed, ledger) = replay(&python, client, transport, &calls, &fixture);
            assert_eq!(replayed.to_string(), text, "{client} over {transport:?}");
            assert_eq!(ledger.misses, [], "{client} over {transport:?}");
            assert_eq!(ledger.unused, [], "{client} over {transport:?}");
        }
    }
    for file in files_under(folder.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).unwrap()).into_owned();
        assert!(
            !text.contains(TOKEN),
            "the stdio server's env value in {}",
            file.display()
        );
    }
}

#[test]
fn a_changed_argument_and_an_extra_call_fail_naming_server_tool_and_field() {
    let Some(python) = sdk_python() else { return };
    let folder = tempfile::tempdir().unwrap();
    for transport in [Transport::HttpSse, Transport::Stdio] {
        let (_, fixture) = record(
            &python,
            "sdk",
            transport,
            &json!([["get_time", {"city": "Paris"}]]),
            false,
            folder.path(),
        );
        let calls = json!([
            ["get_time", {"city": "Paris"}],
            ["get_time", {"city": "Rome"}],
            ["get_time", {"city": "Paris"}]
        ]);
        let (replayed, ledger) = replay(&python, "sdk", transport, &calls, &fixture);
        let raised = |index: usize| replayed["calls"][index]["raised"].as_str().unwrap_or("");
        let expected = [
            (1, "mcp miss: `tools/call get_time` from `time`"),
            (
                1,
                "first differing field: params.arguments.city: recorded \"Paris\", now \"Rome\"",
            ),
            (2, "recorded 1 time(s) and each answer was already served"),
        ];
        for (index, text) in expected {
            assert!(
                raised(index).contains(text),
                "{transport:?}: {replayed}\nexpected: {text}"
            );
        }
        assert_eq!(
            ledger.misses.len(),
            2,
            "{transport:?}: the run fails with both"
        );
    }
}

#[test]
fn a_renamed_tool_changes_the_servers_contract_shape() {
    let Some(python) = sdk_python() else { return };
    let calls = json!([]);
    let folder = tempfile::tempdir().unwrap();
    let shape = |renamed| {
        let (_, fixture) = record(
            &python,
            "sdk",
            Transport::Stdio,
            &calls,
            renamed,
            folder.path(),
        );
        contract_shape(&Fixture::load(&fixture).unwrap().exchanges)
            .expect("tools/list was recorded")
    };
    let (before, after) = (shape(false), shape(true));
    assert_eq!(
        before,
        json!({"time": {"tools": {"get_time": {
            "properties": {"city": "string", "utc_offset": "integer"},
            "required": ["city"]}}}})
    );
    assert_ne!(before, after);
    assert!(after["time"]["tools"]["get_clock"].is_object(), "{after}");
}

fn files_under(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}
