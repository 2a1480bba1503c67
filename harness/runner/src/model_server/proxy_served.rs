//! The forward-proxy mode end to end: a client that knows nothing of keyless (`reqwest` with
//! the run's proxy and CA, as the gateway's environment gives them) records a search through
//! `CONNECT` against a local HTTPS upstream signed by a second, test-only CA, then replays it
//! with the upstream stopped; the same fixture replays through base-URL mode (one engine) and as
//! a plain `http://` request through the proxy; a changed query is a named miss; an unlisted host
//! is refused naming it; no file holds the key.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use replay_core::{Fixture, Scenario, UiMode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::http_served::{files_under, percent_encoded};
use super::{Mode, ModelServer, RecordConfig, RecordLimits, ServerOptions};
use crate::boundary::{Boundaries, BoundaryName, HttpUpstream, ProxyMode};
use crate::run_ca::RunCa;

/// The key the client sends, in the body and as a bearer token.
const TAVILY_KEY: &str = "tvly-dev-Proxy7Hq2LmZ4xP0aB7cD";
const MODEL_KEY: &str = "sk-model-key-proxy-0123456789";

/// The boundaries of a run: `[http.tavily]` at `upstream` (whose host is listed in `[proxy]`),
/// a fresh run CA, and, while recording, the test upstream's CA trusted.
fn boundaries(upstream: &str, upstream_ca: Option<String>) -> Arc<Boundaries> {
    let mut tavily =
        HttpUpstream::new(upstream, &["body.request_id".to_owned()], &[]).expect("valid");
    tavily.trusted_test_ca = upstream_ca;
    let http = [(BoundaryName::parse("tavily").expect("name"), tavily)].into();
    let ca = Arc::new(RunCa::generate().expect("run CA"));
    let proxy = ProxyMode::new(&["localhost".to_owned()], &http, ca).expect("proxy mode");
    Arc::new(Boundaries {
        http,
        proxy: Some(proxy),
        configured_in: "keyless.toml".into(),
        ..Boundaries::default()
    })
}

/// A client configured as the gateway's environment says: every request through the model
/// server, only the run's CA trusted.
fn client(server: &ModelServer, boundaries: &Boundaries) -> reqwest::Client {
    let env: std::collections::BTreeMap<String, String> =
        boundaries.env(&server.url()).into_iter().collect();
    let ca = std::fs::read(&env["SSL_CERT_FILE"]).expect("the CA bundle");
    reqwest::Client::builder()
        .proxy(reqwest::Proxy::all(&env["HTTPS_PROXY"]).expect("proxy"))
        .tls_certs_only([reqwest::Certificate::from_pem(&ca).expect("pem")])
        .build()
        .expect("client")
}

fn search(query: &str) -> Value {
    json!({"api_key": TAVILY_KEY, "query": query, "max_results": 2, "request_id": uuid::Uuid::new_v4().to_string()})
}

/// One search through the proxy to `https://localhost:<port>`: status, miss header, body.
async fn call(client: &reqwest::Client, port: u16, body: &Value) -> (u16, Option<String>, String) {
    let response = client
        .post(format!("https://localhost:{port}/search"))
        .bearer_auth(TAVILY_KEY)
        .json(body)
        .send()
        .await
        .expect("answered");
    let status = response.status().as_u16();
    let miss = (response.headers().get("x-keyless-miss"))
        .map(|value| value.to_str().expect("ascii").to_owned());
    (status, miss, response.text().await.expect("body"))
}

/// A Tavily-like HTTPS upstream on 127.0.0.1 with a certificate for `localhost` from its own
/// CA: its port, that CA's certificate, and the task serving it (abort it to stop it).
async fn https_upstream(answer: Value) -> (u16, String, tokio::task::JoinHandle<()>) {
    let ca = RunCa::generate().expect("the upstream's CA");
    let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config("localhost").expect("tls"));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let body = json!({"echoed": TAVILY_KEY, "answer": answer}).to_string();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, body) = (acceptor.clone(), body.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = hyper::service::service_fn(
                    move |request: axum::http::Request<hyper::body::Incoming>| {
                        let body = body.clone();
                        async move {
                            assert_eq!(request.uri().path(), "/search");
                            let response = axum::http::Response::builder()
                                .header("content-type", "application/json")
                                .body(axum::body::Body::from(body))
                                .expect("response");
                            Ok::<_, std::convert::Infallible>(response)
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, ca.pem(), task)
}

/// Records one search through the proxy; returns the fixture written, the answer the client
/// got and the upstream's port (stopped on return).
async fn record(folder: &Path, answer: &Value) -> (PathBuf, String, u16) {
    let (port, upstream_ca, upstream) = https_upstream(answer.clone()).await;
    let config = RecordConfig {
        upstream: "http://127.0.0.1:9/v1".into(),
        api_key: MODEL_KEY.into(),
        recording: folder.join("recording.jsonl"),
        scenario: Scenario::new("s", UiMode::Flash, "p"),
        allow_insecure_upstream: false,
        limits: RecordLimits::default(),
        aws: None,
    };
    let boundaries = boundaries(&format!("https://localhost:{port}"), Some(upstream_ca));
    let options = ServerOptions {
        boundaries: boundaries.clone(),
        ..ServerOptions::default()
    };
    let server = ModelServer::start(Mode::Record(Box::new(config)), options)
        .await
        .expect("record");
    let (status, _, got) = call(
        &client(&server, &boundaries),
        port,
        &search("weather in Paris"),
    )
    .await;
    assert_eq!(status, 200, "{got}");
    let recorded = server.stop().await.expect("built").expect("a fixture");
    upstream.abort();
    assert_eq!(recorded.fixture.exchanges.len(), 1);
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let mut fixture = Fixture::load(&shipped).expect("shipped");
    fixture.exchanges = recorded.fixture.exchanges;
    let written = folder.join("search.flash.json");
    std::fs::write(&written, fixture.to_pretty_json()).expect("fixture written");
    (written, got, port)
}

/// Sends `head` raw to the server and returns what it answered (the refusal of a `CONNECT`,
/// which a client library only reports as a failed tunnel).
async fn raw(server: &ModelServer, head: &str) -> String {
    let address = server.url().trim_start_matches("http://").to_owned();
    let mut stream = tokio::net::TcpStream::connect(address)
        .await
        .expect("connect");
    stream.write_all(head.as_bytes()).await.expect("write");
    let mut answer = vec![0u8; 4096];
    let read = stream.read(&mut answer).await.expect("read");
    String::from_utf8_lossy(&answer[..read]).into_owned()
}

/// Two recordings through the proxy whose upstream answered differently each replay through
/// it, with the upstream stopped, byte for byte; base-URL mode serves the same fixture the same;
/// a changed query is a miss naming the upstream and field; an unlisted host is refused naming
/// it, in a CONNECT and in an absolute-form request, and reported; no file holds the key.
#[tokio::test]
async fn a_search_through_the_proxy_records_replays_and_an_unlisted_host_is_refused() {
    let folder = tempfile::tempdir().expect("tempdir");
    let answers = [
        json!({"query": "weather in Paris", "results": [{"title": "Sunny", "score": 0.9}]}),
        json!({"query": "weather in Paris", "results": [{"title": "Rain", "score": 0.7}]}),
    ];
    let mut replays = Vec::new();
    for (index, answer) in answers.iter().enumerate() {
        let run = folder.path().join(format!("run-{index}"));
        std::fs::create_dir_all(&run).expect("folder");
        let (fixture, recorded, port) = record(&run, answer).await;
        assert_eq!(
            serde_json::from_str::<Value>(&recorded).expect("json"),
            json!({"echoed": "[secret removed]", "answer": answer}),
        );
        let boundaries = boundaries(&format!("https://localhost:{port}"), None);
        let options = ServerOptions {
            boundaries: boundaries.clone(),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Fixtures(vec![fixture]), options)
            .await
            .expect("replay");
        let proxied = client(&server, &boundaries);
        let replayed = call(&proxied, port, &search("weather in Paris")).await;
        assert_eq!(replayed, (200, None, recorded.clone()), "run {index}");
        replays.push(replayed.2);
        let (status, miss, text) = call(&proxied, port, &search("weather in Rome")).await;
        assert_eq!(status, 502, "{text}");
        let miss = miss.expect("a miss header");
        assert!(
            miss.starts_with("http miss: `POST /search` from `tavily`"),
            "{miss}"
        );
        assert!(
            text.contains(
                "body.json.query: recorded \\\"weather in Paris\\\", now \\\"weather in Rome\\\""
            ),
            "{text}"
        );
        let connect = raw(
            &server,
            "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n",
        )
        .await;
        assert!(connect.starts_with("HTTP/1.1 403"), "{connect}");
        assert!(
            connect.contains("the host \\\"example.com\\\" is not listed in [proxy] hosts in keyless.toml (listed: localhost)"),
            "{connect}"
        );
        let plain = raw(
            &server,
            "GET http://example.org/x HTTP/1.1\r\nHost: example.org\r\n\r\n",
        )
        .await;
        assert!(plain.starts_with("HTTP/1.1 403"), "{plain}");
        assert!(plain.contains("example.org"), "{plain}");
        let problems: Vec<(String, String)> = (server.problems().iter())
            .map(|problem| (problem.kind().to_string(), problem.message().to_owned()))
            .collect();
        let kinds: Vec<&str> = problems.iter().map(|(kind, _)| kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["exchange_miss", "unserved_route", "unserved_route"],
            "{problems:?}"
        );
        assert!(problems[1].1.contains("example.com"), "{problems:?}");
        server.stop().await.expect("stopped");
        // Base-URL mode: the same fixture, the same engine, the same bytes.
        let server = ModelServer::start(
            Mode::Fixtures(vec![run.join("search.flash.json")]),
            ServerOptions {
                boundaries: boundaries.clone(),
                ..ServerOptions::default()
            },
        )
        .await
        .expect("replay");
        let by_base_url = reqwest::Client::new()
            .post(format!("{}/_keyless/http/tavily/search", server.url()))
            .json(&search("weather in Paris"))
            .send()
            .await
            .expect("answered");
        assert_eq!(by_base_url.status().as_u16(), 200);
        assert_eq!(by_base_url.text().await.expect("body"), recorded);
        server.stop().await.expect("stopped");
        // A plain `http://` request to the listed host (absolute form through the proxy).
        let server = ModelServer::start(
            Mode::Fixtures(vec![run.join("search.flash.json")]),
            ServerOptions {
                boundaries: boundaries.clone(),
                ..ServerOptions::default()
            },
        )
        .await
        .expect("replay");
        let plain = client(&server, &boundaries)
            .post(format!("http://localhost:{port}/search"))
            .json(&search("weather in Paris"))
            .send()
            .await
            .expect("answered");
        assert_eq!(plain.status().as_u16(), 200);
        assert_eq!(plain.text().await.expect("body"), recorded);
        assert!(server.problems().is_empty(), "{:?}", server.problems());
        server.stop().await.expect("stopped");
    }
    assert_ne!(replays[0], replays[1], "the two recordings differ");
    let encodings = [
        TAVILY_KEY.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(TAVILY_KEY),
        percent_encoded(TAVILY_KEY),
        MODEL_KEY.to_owned(),
    ];
    let files = files_under(folder.path());
    assert!(files.len() >= 4, "{files:?}");
    for file in files {
        let text = String::from_utf8_lossy(&std::fs::read(&file).expect("read")).into_owned();
        for form in &encodings {
            assert!(
                !text.contains(form.as_str()),
                "{form} in {}",
                file.display()
            );
        }
    }
}
