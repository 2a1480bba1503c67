//! The HTTP boundary served by the model server, end to end: recorded through a scripted local
//! upstream that answers like Tavily's `/search`, replayed with the upstream stopped, a changed
//! call answered as a miss that reaches the runner's ledger, and no key in any file written.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use base64::Engine;
use futures::StreamExt;
use replay_core::{Fixture, Scenario, UiMode};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use super::{Mode, ModelServer, RecordConfig, RecordLimits, ServerOptions};
use crate::boundary::{Boundaries, BoundaryName, HttpUpstream};
use crate::target::ModelLedger;

/// The key the gateway sends (in the body, as Tavily's client does, and as a bearer token).
const TAVILY_KEY: &str = "tvly-dev-8Hq2LmZ4xP0aB7cD9eF1";

fn boundaries(upstream: &str) -> Arc<Boundaries> {
    let tavily = HttpUpstream::new(upstream, &["body.request_id".to_owned()], &[]).expect("valid");
    Arc::new(Boundaries {
        http: [(BoundaryName::parse("tavily").expect("name"), tavily)].into(),
        configured_in: "keyless.toml".into(),
        ..Boundaries::default()
    })
}

/// A Tavily search as its Python client sends it.
fn search(query: &str) -> Value {
    json!({"api_key": TAVILY_KEY, "query": query, "max_results": 2, "request_id": uuid::Uuid::new_v4().to_string()})
}

/// One call to the tavily boundary of the server at `root`: the status, the miss header and the
/// body's bytes.
async fn call(root: &str, body: &Value) -> (u16, Option<String>, String) {
    let response = reqwest::Client::new()
        .post(format!("{root}/_keyless/http/tavily/search?ts=1"))
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

/// Records one search through the model server against an upstream answering `answer`, and
/// returns the fixture written (a shipped fixture's turns with the exchanges recorded) and what
/// the gateway got.
async fn record(folder: &Path, answer: &Value) -> (PathBuf, String) {
    let upstream = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/search"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("set-cookie", format!("session={TAVILY_KEY}"))
                // An upstream that echoes the key where no field name says it is one.
                .set_body_json(json!({"echoed": TAVILY_KEY, "answer": answer})),
        )
        .mount(&upstream)
        .await;
    let recording = folder.join("recording.jsonl");
    let config = RecordConfig {
        upstream: format!("{}/v1", upstream.uri()),
        api_key: "sk-model-key-0123456789abcdef".into(),
        recording: recording.clone(),
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
    let (status, _, got) = call(&server.url(), &search("weather in Paris")).await;
    assert_eq!(status, 200, "{got}");
    let recorded = server.stop().await.expect("built").expect("a fixture");
    assert_eq!(recorded.fixture.exchanges.len(), 1);
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let mut fixture = Fixture::load(&shipped).expect("shipped");
    fixture.exchanges = recorded.fixture.exchanges;
    let written = folder.join("search.flash.json");
    std::fs::write(&written, fixture.to_pretty_json()).expect("fixture written");
    (written, got)
}

/// Two recordings whose upstream answered differently each replay, with the upstream stopped,
/// byte for byte what their recording answered; a repeated call, a changed query and an
/// unconfigured name are misses naming the upstream, the call and the field, and reach the
/// runner's ledger; no file written holds the key in any encoding.
#[tokio::test]
async fn a_search_records_then_replays_byte_identically_and_a_changed_query_is_a_named_miss() {
    let folder = tempfile::tempdir().expect("tempdir");
    let answers = [
        json!({"query": "weather in Paris", "results": [{"title": "Sunny", "url": "https://w.example/1", "score": 0.9}], "response_time": 0.42}),
        json!({"query": "weather in Paris", "results": [{"title": "Rain", "url": "https://w.example/2", "score": 0.7}], "response_time": 1.07}),
    ];
    for (index, answer) in answers.iter().enumerate() {
        let run = folder.path().join(format!("run-{index}"));
        std::fs::create_dir_all(&run).expect("folder");
        let (fixture, recorded) = record(&run, answer).await;
        assert_eq!(
            serde_json::from_str::<Value>(&recorded).expect("json"),
            json!({"echoed": "[secret removed]", "answer": answer}),
            "the gateway gets the answer as written, the key removed"
        );
        let server = ModelServer::start(
            Mode::Fixtures(vec![fixture]),
            ServerOptions {
                boundaries: boundaries("https://api.tavily.com"),
                ..ServerOptions::default()
            },
        )
        .await
        .expect("replay");
        let (status, miss, replayed) = call(&server.url(), &search("weather in Paris")).await;
        assert_eq!(
            (status, miss, &replayed),
            (200, None, &recorded),
            "run {index}"
        );
        let cases = [
            (
                search("weather in Paris"),
                "recorded 1 time(s) and each answer was already served",
            ),
            (
                search("weather in Rome"),
                "first differing field: body.json.query: recorded \"weather in Paris\", now \"weather in Rome\"",
            ),
        ];
        for (body, expected) in cases {
            let (status, miss, text) = call(&server.url(), &body).await;
            let miss = miss.expect("a miss header");
            assert_eq!(status, 502, "{text}");
            assert!(
                miss.starts_with("http miss: `POST /search` from `tavily`"),
                "{miss}"
            );
            let error: Value = serde_json::from_str(&text).expect("json");
            assert_eq!(error["error"]["upstream"], "tavily");
            assert!(
                error["error"]["message"]
                    .as_str()
                    .expect("message")
                    .contains(expected),
                "{text}"
            );
        }
        let (status, _, text) = reqwest::get(format!("{}/_keyless/http/brave/x", server.url()))
            .await
            .map(|r| (r.status().as_u16(), (), r))
            .expect("answered");
        let text = text.text().await.expect("body");
        assert_eq!(status, 404);
        assert!(
            text.contains("no HTTP API named \\\"brave\\\" is configured (configured: tavily)"),
            "{text}"
        );
        let ledger = ModelLedger::from_state(
            server
                .client()
                .expect("client")
                .state()
                .await
                .expect("state"),
        );
        assert_eq!(ledger.boundaries.misses.len(), 2, "{ledger:?}");
        let kinds: Vec<String> = (server.problems().iter())
            .map(|problem| problem.kind().to_string())
            .collect();
        assert_eq!(kinds, ["exchange_miss", "exchange_miss", "unserved_route"]);
        assert!(ledger.boundaries.unused.is_empty());
        server.stop().await.expect("stopped");
    }
    let encodings = [
        TAVILY_KEY.to_owned(),
        base64::engine::general_purpose::STANDARD.encode(TAVILY_KEY),
        percent_encoded(TAVILY_KEY),
        "sk-model-key-0123456789abcdef".to_owned(),
    ];
    for file in files_under(folder.path()) {
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

/// `text` URL-encoded as a query or form value carries it (every byte but a letter or digit).
pub(super) fn percent_encoded(text: &str) -> String {
    (text.bytes())
        .map(|b| match b.is_ascii_alphanumeric() {
            true => char::from(b).to_string(),
            false => format!("%{b:02X}"),
        })
        .collect()
}

pub(super) fn files_under(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).expect("folder").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// An upstream on 127.0.0.1 streaming three SSE chunks, 50 ms apart.
async fn streaming_upstream() -> String {
    use axum::body::{Body, Bytes};
    let app = axum::Router::new().route(
        "/stream",
        axum::routing::get(|| async {
            let chunks = futures::stream::iter(["data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"])
                .then(|chunk| async move {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    Ok::<_, std::convert::Infallible>(Bytes::from(chunk))
                });
            (
                [("content-type", "text/event-stream")],
                Body::from_stream(chunks),
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}")
}

/// A streamed answer is recorded chunk by chunk, as it arrived, and replayed so.
#[tokio::test]
async fn a_streamed_answer_is_recorded_chunk_by_chunk_and_replayed_so() {
    let folder = tempfile::tempdir().expect("tempdir");
    let upstream = streaming_upstream().await;
    let config = RecordConfig {
        upstream: format!("{upstream}/v1"),
        api_key: "sk-model-key-0123456789abcdef".into(),
        recording: folder.path().join("r.jsonl"),
        scenario: Scenario::new("s", UiMode::Flash, "p"),
        allow_insecure_upstream: false,
        limits: RecordLimits::default(),
        aws: None,
    };
    let options = ServerOptions {
        boundaries: boundaries(&upstream),
        ..ServerOptions::default()
    };
    let server = ModelServer::start(Mode::Record(Box::new(config)), options)
        .await
        .expect("record");
    let url = format!("{}/_keyless/http/tavily/stream", server.url());
    let recorded = reqwest::get(&url)
        .await
        .expect("answered")
        .text()
        .await
        .expect("body");
    let fixture = server
        .stop()
        .await
        .expect("built")
        .expect("fixture")
        .fixture;
    let answer = &fixture.exchanges[0].answer;
    assert_eq!(
        answer["body"],
        json!(["data: 1\n\n", "data: 2\n\n", "data: [DONE]\n\n"])
    );
    assert_eq!(
        answer["headers"],
        json!({"content-type": "text/event-stream"})
    );
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let mut replayable = Fixture::load(&shipped).expect("shipped");
    replayable.exchanges = fixture.exchanges;
    let path = folder.path().join("stream.flash.json");
    std::fs::write(&path, replayable.to_pretty_json()).expect("written");
    let options = ServerOptions {
        boundaries: boundaries(&upstream),
        ..ServerOptions::default()
    };
    let server = ModelServer::start(Mode::Fixtures(vec![path]), options)
        .await
        .expect("replay");
    let response = reqwest::get(format!("{}/_keyless/http/tavily/stream", server.url()))
        .await
        .expect("answered");
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let chunks: Vec<_> = response.bytes_stream().collect().await;
    let replayed: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.expect("chunk").to_vec())
        .collect();
    assert_eq!(String::from_utf8(replayed).expect("utf-8"), recorded);
}

/// Between two runs of a reused gateway an HTTP call is refused and reported, as a model call
/// is: it is credited to no fixture.
#[tokio::test]
async fn an_http_call_between_runs_is_refused_and_reported() {
    let shipped =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json");
    let options = ServerOptions {
        boundaries: boundaries("https://api.tavily.com"),
        ..ServerOptions::default()
    };
    let server = ModelServer::start(Mode::Fixtures(vec![shipped]), options)
        .await
        .expect("replay");
    let client = server.client().expect("client");
    client.end_run().await.expect("ended");
    let (status, _, text) = call(&server.url(), &search("weather in Paris")).await;
    assert_eq!(status, 409, "{text}");
    let problems = client
        .reset(None)
        .await
        .expect("reset")
        .problems_of_the_last_run();
    assert!(
        matches!(problems.as_slice(), [problem] if problem.to_string().contains("POST /_keyless/http/tavily/search arrived between two runs")),
        "{problems:?}"
    );
}
