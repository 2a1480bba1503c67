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

use keyless_runner::mcp::{
    McpRecorder, McpServers, McpSource, McpUpstream, contract_shape, mcp_router,
};
use replay_core::recording::RecordingSink;
use replay_core::{Exchange, ExchangeReplay};
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

/// The MCP route served on 127.0.0.1 for one server named `time`.
struct Route {
    runtime: tokio::runtime::Runtime,
    url: String,
}

fn serve(source: McpSource) -> Route {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let address = listener.local_addr().unwrap();
    let servers = Arc::new(McpServers::new().with("time", source));
    runtime.spawn(async move { axum::serve(listener, mcp_router::<()>(servers)).await });
    Route {
        runtime,
        url: format!("http://{address}/_keyless/mcp/time"),
    }
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
fn run_client(python: &str, client: &str, transport: Transport, url: &str, calls: &Value) -> Value {
    let target = match transport {
        Transport::Stdio => format!("{} mcp-stdio --url {url}", env!("CARGO_BIN_EXE_keyless")),
        Transport::HttpSse | Transport::HttpJson => url.to_owned(),
    };
    let transport_name = if transport == Transport::Stdio {
        "stdio"
    } else {
        "http"
    };
    let output = Command::new(python)
        .arg(script("client.py"))
        .args([client, transport_name, &target, &calls.to_string()])
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

/// Records `calls` from `client` through the route against the real server; the client's
/// output and the exchanges written.
fn record(
    python: &str,
    client: &str,
    transport: Transport,
    calls: &Value,
    renamed: bool,
) -> (Value, Vec<Exchange>) {
    let dir = tempfile::tempdir().unwrap();
    let sink = RecordingSink::open_remembering(&dir.path().join("mcp.jsonl")).unwrap();
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
                env: BTreeMap::new(),
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
    let route = serve(McpSource::Record(Arc::new(McpRecorder::new(
        upstream,
        sink.clone(),
    ))));
    let output = run_client(python, client, transport, &route.url, calls);
    drop(route);
    if let Some(server) = real {
        let port = server.port;
        drop(server);
        assert!(
            std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
            "the real server must be unreachable during the replay"
        );
    }
    (output, sink.remembered_exchanges())
}

/// Replays `exchanges` to `client`; its output and the replay (its ledger).
fn replay(
    python: &str,
    client: &str,
    transport: Transport,
    calls: &Value,
    exchanges: &[Exchange],
) -> (Value, Arc<ExchangeReplay>) {
    let replay = Arc::new(ExchangeReplay::new(
        Path::new("fixtures/mcp.flash.json"),
        exchanges.to_vec(),
    ));
    let route = serve(McpSource::Replay(Arc::new(Arc::clone(&replay))));
    let output = run_client(python, client, transport, &route.url, calls);
    route.runtime.shutdown_background();
    (output, replay)
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
    for (client, transport) in cases {
        let (recorded, exchanges) = record(&python, client, transport, &calls, false);
        let text = recorded.to_string();
        assert!(
            text.contains("Paris (UTC+0): 20"),
            "{client} {transport:?}: {text}"
        );
        for _ in 0..2 {
            let (replayed, ledger) = replay(&python, client, transport, &calls, &exchanges);
            assert_eq!(replayed.to_string(), text, "{client} over {transport:?}");
            assert_eq!(ledger.misses(), [], "{client} over {transport:?}");
            assert_eq!(ledger.unused(), [], "{client} over {transport:?}");
        }
    }
}

#[test]
fn a_changed_argument_and_an_extra_call_fail_naming_server_tool_and_field() {
    let Some(python) = sdk_python() else { return };
    for transport in [Transport::HttpSse, Transport::Stdio] {
        let (_, exchanges) = record(
            &python,
            "sdk",
            transport,
            &json!([["get_time", {"city": "Paris"}]]),
            false,
        );
        let calls = json!([
            ["get_time", {"city": "Paris"}],
            ["get_time", {"city": "Rome"}],
            ["get_time", {"city": "Paris"}]
        ]);
        let (replayed, ledger) = replay(&python, "sdk", transport, &calls, &exchanges);
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
            ledger.misses().len(),
            2,
            "{transport:?}: the run fails with both"
        );
    }
}

#[test]
fn a_renamed_tool_changes_the_servers_contract_shape() {
    let Some(python) = sdk_python() else { return };
    let calls = json!([]);
    let shape = |renamed| {
        let (_, exchanges) = record(&python, "sdk", Transport::Stdio, &calls, renamed);
        contract_shape(&exchanges).expect("tools/list was recorded")
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
