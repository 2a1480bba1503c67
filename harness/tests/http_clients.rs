//! Issue 40, item 5: real HTTP clients nobody here wrote (`httpx`, `requests`, `tavily-python`'s
//! `TavilyClient(api_base_url=...)` and Node's `fetch`), pointed at a recorded HTTP API's base
//! URL on the model server (`{http_url:tavily}`), are recorded against a scripted upstream that
//! answers like Tavily's `/search`, then replayed with the upstream stopped: every client gets
//! what it got while recording, the replay misses nothing and leaves nothing unused, and no file
//! written holds the key. `.ci/run` installs the Python clients in its venv and points
//! `WIRE_SDK_PYTHON` at it; without it the check is skipped with a notice, except under `CI`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use harness::workspace::fixtures_dir;
use keyless_runner::boundary::{Boundaries, BoundaryName, HttpUpstream, ProxyMode};
use keyless_runner::run_ca::RunCa;
use keyless_runner::server::{RecordConfig, RecordLimits};
use keyless_runner::{Mode, ModelLedger, ModelServer, ServerOptions, runtime};
use replay_core::{Fixture, Scenario, UiMode};
use serde_json::{Value, json};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

const BOUND: Duration = Duration::from_secs(240);

/// The key every client sends.
const TAVILY_KEY: &str = "tvly-dev-Zk3Qp9Lm2Xw7Rt5Yv1Nb";

fn bounded<T>(work: impl Future<Output = T>) -> T {
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"))
}

/// Answers a search like Tavily: the query echoed, one result, and a response time that differs
/// at every call (so a live call never answers twice alike, as the real API does not).
struct TavilyLike;

impl Respond for TavilyLike {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let query = body["query"].as_str().unwrap_or_default();
        ResponseTemplate::new(200).set_body_json(json!({
            "query": query,
            "results": [{"title": format!("About {query}"), "url": "https://example.com/a", "score": 0.8}],
            "response_time": rand_time(),
        }))
    }
}

fn rand_time() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.subsec_nanos());
    f64::from(nanos % 1000) / 1000.0
}

fn boundaries(upstream: &str) -> Arc<Boundaries> {
    let tavily = HttpUpstream::new(upstream, &[], &[]).expect("upstream");
    Arc::new(Boundaries {
        http: [(BoundaryName::parse("tavily").expect("name"), tavily)].into(),
        configured_in: "keyless.toml".into(),
        ..Boundaries::default()
    })
}

/// Every client's answers through the boundary of the server at `root`.
async fn clients(python: &str, root: &str) -> Value {
    let base = format!("{root}/_keyless/http/tavily");
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/sdk");
    let runs = [
        (python.to_owned(), scripts.join("check_http_clients.py")),
        ("node".to_owned(), scripts.join("check_http_fetch.mjs")),
    ];
    run_clients(&runs, &base, Vec::new()).await
}

/// Each `(program, script)` run with `base` and `env`, their JSON lines merged into one object;
/// a client that fails fails the test with its output.
async fn run_clients(runs: &[(String, PathBuf)], base: &str, env: Vec<(String, String)>) -> Value {
    let mut got = serde_json::Map::new();
    for (program, script) in runs {
        let (program, script) = (program.clone(), script.clone());
        let (base, env) = (base.to_owned(), env.clone());
        let output = tokio::task::spawn_blocking(move || {
            let mut command = std::process::Command::new(&program);
            // Only what the run gives: no proxy or trust variable of the machine's own.
            for name in PROXY_VARIABLES {
                command
                    .env_remove(name)
                    .env_remove(name.to_ascii_lowercase());
            }
            command
                .arg(&script)
                .arg(&base)
                .env("TAVILY_API_KEY", TAVILY_KEY)
                .envs(env)
                .output()
        })
        .await
        .expect("join")
        .expect("the client starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}\nstdout:\n{stdout}\nstderr:\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let line: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
        got.extend(line.as_object().expect("an object").clone());
    }
    Value::Object(got)
}

/// The variables the forward-proxy mode sets (and their lowercase spellings).
const PROXY_VARIABLES: [&str; 6] = [
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
];

/// `httpx`, `requests`, `tavily-python` (its default `https://api.tavily.com`) and Node's
/// `fetch` through `undici`'s `EnvHttpProxyAgent` replay through the forward-proxy mode, with
/// only the environment `[proxy] hosts` gives the gateway (proxy variables, the run's CA) and the
/// upstream stopped, what they recorded by base URL: one HTTP boundary, whichever way a call
/// reaches it.
#[test]
fn httpx_requests_tavily_python_and_undici_replay_through_the_forward_proxy_mode() {
    let Some(python) = client_python() else {
        return;
    };
    let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness/tests/sdk");
    let undici = scripts.join("proxy-fetch");
    if !undici.join("node_modules/undici").is_dir() {
        assert!(
            std::env::var("CI").is_err(),
            "CI must install {} (npm ci, see .ci/run)",
            undici.display()
        );
        eprintln!("skipped: run npm ci in {} (.ci/run does)", undici.display());
        return;
    }
    let runs = [
        (python, scripts.join("check_http_clients.py")),
        ("node".to_owned(), undici.join("check.mjs")),
    ];
    let folder = tempfile::tempdir().expect("tempdir");
    bounded(async {
        let upstream = MockServer::start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(TavilyLike)
            .mount(&upstream)
            .await;
        let config = RecordConfig {
            upstream: format!("{}/v1", upstream.uri()),
            api_key: "sk-model-key-for-the-record-0123".into(),
            recording: folder.path().join("recording.jsonl"),
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            allow_insecure_upstream: false,
            limits: RecordLimits::default(),
            aws: None,
        };
        let options = ServerOptions {
            boundaries: boundaries(&upstream.uri()),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Record(Box::new(config)), options)
            .await
            .expect("record");
        let base = format!("{}/_keyless/http/tavily", server.url());
        let recorded = run_clients(&runs, &base, Vec::new()).await;
        let fixture = (server.stop().await.expect("built").expect("fixture")).fixture;
        assert_eq!(fixture.exchanges.len(), 4, "{:?}", fixture.exchanges);
        drop(upstream);
        let mut shipped =
            Fixture::load(&fixtures_dir().join("write_read_file.flash.json")).expect("shipped");
        shipped.exchanges = fixture.exchanges;
        let path = folder.path().join("search.flash.json");
        std::fs::write(&path, shipped.to_pretty_json()).expect("fixture written");
        let proxied = proxied_boundaries();
        let options = ServerOptions {
            boundaries: proxied.clone(),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Fixtures(vec![path]), options)
            .await
            .expect("replay");
        let env = proxied.env(&server.url());
        let replayed = run_clients(&runs, "https://api.tavily.com", env).await;
        assert_eq!(replayed, recorded);
        let state = (server.client().expect("client").state().await).expect("state");
        let ledger = ModelLedger::from_state(state);
        assert_eq!(ledger.boundaries, Default::default(), "{ledger:?}");
        assert!(server.problems().is_empty(), "{:?}", server.problems());
        server.stop().await.expect("stop");
    });
    for file in files_under(folder.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        assert!(!text.contains(TAVILY_KEY), "the key in {}", file.display());
    }
}

/// `[http.tavily]` at its real address, its host listed in `[proxy] hosts`.
fn proxied_boundaries() -> Arc<Boundaries> {
    let tavily = HttpUpstream::new("https://api.tavily.com", &[], &[]).expect("upstream");
    let http = [(BoundaryName::parse("tavily").expect("name"), tavily)].into();
    let ca = Arc::new(RunCa::generate().expect("run CA"));
    let proxy = ProxyMode::new(&["api.tavily.com".to_owned()], &http, ca).expect("proxy");
    Arc::new(Boundaries {
        http,
        proxy: Some(proxy),
        configured_in: "keyless.toml".into(),
        ..Boundaries::default()
    })
}

#[test]
fn httpx_requests_tavily_python_and_node_fetch_replay_what_they_recorded_with_the_upstream_stopped()
{
    let Some(python) = client_python() else {
        return;
    };
    let folder = tempfile::tempdir().expect("tempdir");
    bounded(async {
        let upstream = MockServer::start().await;
        Mock::given(wiremock::matchers::method("POST"))
            .respond_with(TavilyLike)
            .mount(&upstream)
            .await;
        let config = RecordConfig {
            upstream: format!("{}/v1", upstream.uri()),
            api_key: "sk-model-key-for-the-record-0123".into(),
            recording: folder.path().join("recording.jsonl"),
            scenario: Scenario::new("s", UiMode::Flash, "p"),
            allow_insecure_upstream: false,
            limits: RecordLimits::default(),
            aws: None,
        };
        let options = ServerOptions {
            boundaries: boundaries(&upstream.uri()),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Record(Box::new(config)), options)
            .await
            .expect("record");
        let recorded = clients(&python, &server.url()).await;
        let fixture = server
            .stop()
            .await
            .expect("built")
            .expect("fixture")
            .fixture;
        assert_eq!(fixture.exchanges.len(), 4, "{:?}", fixture.exchanges);
        drop(upstream);
        let mut shipped =
            Fixture::load(&fixtures_dir().join("write_read_file.flash.json")).expect("shipped");
        shipped.exchanges = fixture.exchanges;
        let path = folder.path().join("search.flash.json");
        std::fs::write(&path, shipped.to_pretty_json()).expect("fixture written");
        let options = ServerOptions {
            boundaries: boundaries("https://api.tavily.com"),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Fixtures(vec![path]), options)
            .await
            .expect("replay");
        let replayed = clients(&python, &server.url()).await;
        assert_eq!(replayed, recorded);
        let state = server
            .client()
            .expect("client")
            .state()
            .await
            .expect("state");
        let ledger = ModelLedger::from_state(state);
        assert_eq!(ledger.boundaries, Default::default(), "{ledger:?}");
        server.stop().await.expect("stop");
    });
    for file in files_under(folder.path()) {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        assert!(!text.contains(TAVILY_KEY), "the key in {}", file.display());
        assert!(
            !text.contains("Zk3Qp9Lm2Xw7Rt5Yv1Nb"),
            "the key in {}",
            file.display()
        );
    }
}

fn files_under(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).expect("folder").flatten() {
        let path = entry.path();
        match path.is_dir() {
            true => files.extend(files_under(&path)),
            false => files.push(path),
        }
    }
    files
}

/// The Python with `httpx`, `requests` and `tavily-python` (`WIRE_SDK_PYTHON`, which `.ci/run`
/// sets to its venv's); `None`, with a notice, when it is not set, except under `CI`.
fn client_python() -> Option<String> {
    match std::env::var("WIRE_SDK_PYTHON") {
        Ok(python) => Some(python),
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set WIRE_SDK_PYTHON to a Python with httpx, requests and tavily-python (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set WIRE_SDK_PYTHON to run httpx, requests and tavily-python (.ci/run does)"
            );
            None
        }
    }
}
