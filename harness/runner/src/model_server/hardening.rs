//! The model server against a hostile neighbour, over real HTTP on 127.0.0.1 (issue 34): a
//! process resetting the ledger mid-run (finding 3), a client holding half a request (4), a web
//! page in the developer's browser (8), a body past every reason (9).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::*;
use crate::target::{AtUrl, GatewayTarget};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/write_read_file.flash.json")
}

async fn server(limits: ServeLimits) -> ModelServer {
    ModelServer::start_with_limits(
        Mode::Fixtures(vec![fixture()]),
        ServerOptions::default(),
        limits,
    )
    .await
    .expect("model server")
}

/// A request no fixture answers: one miss.
const MISSING: &str =
    r#"{"model":"m","messages":[{"role":"user","content":"nobody recorded this"}]}"#;

/// Sends `request` as raw bytes and returns what came back before the server closed or
/// `wait` passed.
async fn raw(server: &ModelServer, request: &[u8], wait: Duration) -> String {
    let mut stream = TcpStream::connect(server.address).await.expect("connect");
    stream.write_all(request).await.expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(wait, stream.read_to_end(&mut answer)).await;
    String::from_utf8_lossy(&answer).into_owned()
}

fn post(port: u16, path: &str, extra: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n\
         {extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[tokio::test]
async fn finding_3_only_the_token_holder_resets_and_what_it_discards_fails_the_run() {
    let server = server(ServeLimits::default()).await;
    let port = server.address.port();
    let miss = raw(
        &server,
        &post(port, "/v1/chat/completions", "", MISSING),
        Duration::from_secs(5),
    )
    .await;
    assert!(miss.starts_with("HTTP/1.1 400"), "{miss}");
    // Read by someone without the token (the gateway), the miss is still unread for the owner.
    for path in ["/_keyless/misses", "/_keyless/state"] {
        let request =
            format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n");
        let read = raw(&server, request.as_bytes(), Duration::from_secs(5)).await;
        assert!(read.contains("replay miss"), "{read}");
    }
    // (the headers a would-be resetter sends, as the gateway or any local process could)
    let wrong = format!("{RESET_TOKEN_HEADER}: {}\r\n", "0".repeat(64));
    let almost = format!("{RESET_TOKEN_HEADER}: {}\r\n", &server.reset_token()[..63]);
    for extra in ["", wrong.as_str(), almost.as_str()] {
        let answer = raw(
            &server,
            &post(port, "/_keyless/reset", extra, "{}"),
            Duration::from_secs(5),
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{extra:?}: {answer}");
        assert!(
            answer.contains(RESET_TOKEN_HEADER),
            "says what it needs: {answer}"
        );
    }
    assert_eq!(
        server.shared.problems.lock().list().len(),
        1,
        "the miss is still there"
    );
    // The owner resets: the unread miss is handed back and becomes a problem of the next run.
    let mut target = AtUrl::new("http://127.0.0.1:1", &server.url())
        .expect("target")
        .with_reset_token(server.reset_token());
    let loaded = replay_core::LoadedFixture::load(&fixture()).expect("fixture");
    target.start(&loaded).await.expect("reset");
    let ledger = target.finish().await.expect("ledger");
    assert!(
        matches!(
            ledger.other_problems.as_slice(),
            [replay_core::ModelProblem::DiscardedAtReset {
                kind: replay_core::ModelProblemKind::Miss,
                ..
            }]
        ),
        "{:?}",
        ledger.other_problems
    );
    // Read, a problem is the reader's: a later reset discards nothing.
    let client = server.client().expect("client");
    client.problems().await.expect("read");
    let reply = client.reset(None).await.expect("reset");
    assert_eq!(reply, ResetReply::default());
}

#[tokio::test]
async fn finding_4_a_half_sent_request_neither_holds_the_stop_nor_its_connection() {
    let limits = ServeLimits {
        header_read_timeout: Duration::from_millis(300),
        body_deadline: Duration::from_millis(300),
        stop_grace: Duration::from_millis(300),
        ..ServeLimits::default()
    };
    let server = server(limits).await;
    let port = server.address.port();
    // Half the headers: the connection is closed at the header read timeout.
    let half_headers = format!("POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n");
    let started = Instant::now();
    raw(&server, half_headers.as_bytes(), Duration::from_secs(5)).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "closed after {:?}",
        started.elapsed()
    );
    // Half the body: a 408 at the body deadline.
    let half_body = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-length: 100\r\n\r\n{{\"model\""
    );
    let answer = raw(&server, half_body.as_bytes(), Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    // A stop with a half-sent body and an idle connection open ends promptly, even when the
    // read bounds are far off.
    let server = super::hardening::server(ServeLimits {
        stop_grace: Duration::from_millis(300),
        ..ServeLimits::default()
    })
    .await;
    let mut held = TcpStream::connect(server.address).await.expect("connect");
    held.write_all(half_body.as_bytes()).await.expect("write");
    let _idle = TcpStream::connect(server.address).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(5), server.stop())
        .await
        .expect("the stop is bounded")
        .expect("stopped");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn finding_8_a_web_page_neither_replays_nor_resets() {
    let server = server(ServeLimits::default()).await;
    let port = server.address.port();
    let token = format!("{RESET_TOKEN_HEADER}: {}\r\n", server.reset_token());
    // (path, the request's lines after the request line, body, served)
    let cases: [(&str, String, &str, bool); 6] = [
        (
            "/v1/chat/completions",
            format!("host: 127.0.0.1:{port}\r\n"),
            MISSING,
            true,
        ),
        (
            "/v1/chat/completions",
            format!("host: localhost:{port}\r\norigin: http://localhost:{port}\r\n"),
            MISSING,
            true,
        ),
        // DNS rebinding: the page's own name in Host.
        (
            "/v1/chat/completions",
            format!("host: rebind.example:{port}\r\n"),
            MISSING,
            false,
        ),
        // A `text/plain` form post from another origin.
        (
            "/v1/chat/completions",
            format!(
                "host: 127.0.0.1:{port}\r\norigin: http://evil.example\r\ncontent-type: text/plain\r\n"
            ),
            MISSING,
            false,
        ),
        (
            "/v1/messages",
            format!("host: 127.0.0.1:{port}\r\nsec-fetch-site: cross-site\r\n"),
            "{}",
            false,
        ),
        // Even with the token, a page's reset is refused.
        (
            "/_keyless/reset",
            format!("host: 127.0.0.1:{port}\r\norigin: http://evil.example\r\n{token}"),
            "{}",
            false,
        ),
    ];
    for (path, headers, body, served) in cases {
        let request = format!(
            "POST {path} HTTP/1.1\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        let answer = raw(&server, request.as_bytes(), Duration::from_secs(5)).await;
        let refused = answer.starts_with("HTTP/1.1 403");
        assert_eq!(!refused, served, "{path} {headers:?}: {answer}");
        if refused {
            assert!(
                answer.contains("foreign_request")
                    || answer.contains("forbidden")
                    || answer.contains("permission"),
                "{answer}"
            );
        }
    }
    assert_eq!(
        server.shared.problems.lock().list().len(),
        2,
        "only the two served requests missed"
    );
}

#[tokio::test]
async fn finding_9_a_body_over_the_limit_is_a_413_naming_it_and_a_problem() {
    let limits = ServeLimits {
        max_body_bytes: 1024,
        ..ServeLimits::default()
    };
    let server = server(limits).await;
    let port = server.address.port();
    let big = format!(
        r#"{{"model":"m","messages":[{{"role":"user","content":"{}"}}]}}"#,
        "x".repeat(2000)
    );
    let declared = post(port, "/v1/chat/completions", "", &big);
    let chunked = format!(
        "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ntransfer-encoding: chunked\r\n\
         connection: close\r\n\r\n{:x}\r\n{big}\r\n0\r\n\r\n",
        big.len()
    );
    for request in [declared, chunked.into_bytes()] {
        let answer = raw(&server, &request, Duration::from_secs(5)).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("limit of 1024 bytes"), "{answer}");
    }
    let kinds: Vec<&str> = server
        .shared
        .problems
        .lock()
        .list()
        .iter()
        .map(|problem| problem.kind().as_str())
        .collect();
    assert_eq!(kinds, ["body_too_large", "body_too_large"]);
}

/// A recording proxy in front of `upstream` (its `/v1` base URL) holding `key`.
async fn proxy(
    upstream: String,
    key: &str,
    recording: &std::path::Path,
    limits: record::RecordLimits,
    serve: ServeLimits,
) -> ModelServer {
    ModelServer::start_with_limits(
        Mode::Record(Box::new(RecordConfig {
            upstream,
            api_key: key.into(),
            recording: recording.to_path_buf(),
            scenario: replay_core::Scenario::new("s", replay_core::UiMode::Flash, "p"),
            allow_insecure_upstream: false,
            limits,
            aws: None,
        })),
        ServerOptions::default(),
        serve,
    )
    .await
    .expect("recording proxy")
}

/// A minimal request at each wire: (path, body).
const WIRE_CALLS: [(&str, &str); 3] = [
    (
        "/v1/chat/completions",
        r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
    ),
    (
        "/v1/messages",
        r#"{"model":"m","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}"#,
    ),
    ("/v1/responses", r#"{"model":"m","input":"hi"}"#),
];

#[tokio::test]
async fn finding_7_no_credential_follows_a_redirect_to_another_origin() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let elsewhere = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({})))
        .mount(&elsewhere)
        .await;
    let origin = MockServer::start().await;
    Mock::given(method("POST"))
        .respond_with(
            ResponseTemplate::new(307)
                .insert_header("location", format!("{}/v1/stolen", elsewhere.uri())),
        )
        .mount(&origin)
        .await;
    let folder = tempfile::tempdir().expect("tempdir");
    let server = proxy(
        format!("{}/v1", origin.uri()),
        "gsk_redirectKEY0123456789abcdef",
        &folder.path().join("r.jsonl"),
        record::RecordLimits::default(),
        ServeLimits::default(),
    )
    .await;
    let http = reqwest::Client::new();
    for (path, body) in WIRE_CALLS {
        let answer = http
            .post(format!("{}{path}", server.url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("answer");
        assert!(
            !answer.status().is_success(),
            "{path}: the redirect is not an answer"
        );
    }
    let reached = elsewhere.received_requests().await.unwrap_or_default();
    for request in &reached {
        for header in ["authorization", "x-api-key", "api-key"] {
            assert!(
                !request.headers.contains_key(header),
                "{header} reached another origin: {request:?}"
            );
        }
    }
    assert_eq!(
        origin.received_requests().await.unwrap_or_default().len(),
        3
    );
}

#[tokio::test]
async fn finding_6_the_proxys_own_key_never_reaches_the_recording_the_fixture_or_the_gateway() {
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let keys = [
        "0123456789abcdef0123456789abcdef",
        "gsk_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijkl",
    ];
    for key in keys {
        let upstream = MockServer::start().await;
        let completion = |message: serde_json::Value| {
            serde_json::json!({"id": "c", "object": "chat.completion", "created": 0, "model": "m",
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
        };
        let chunk = |delta: serde_json::Value, finish: serde_json::Value| {
            serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
                "model": "m", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let stream = format!(
            "data: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
            chunk(
                serde_json::json!({"role": "assistant", "content": format!("stream {key}")}),
                serde_json::Value::Null
            ),
            chunk(serde_json::json!({}), serde_json::json!("stop"))
        );
        // (the case named in the prompt, the upstream's answer echoing the key)
        let cases = [
            ("case-body", ResponseTemplate::new(200).set_body_json(completion(
                serde_json::json!({"role": "assistant", "content": format!("your key is {key}")})))),
            ("case-stream", ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(stream)),
            ("case-tool", ResponseTemplate::new(200).set_body_json(completion(serde_json::json!({
                "role": "assistant", "content": null, "tool_calls": [{"id": "t", "type": "function",
                "function": {"name": "write_file", "arguments": format!("{{\"content\": \"{key}\"}}")}}]})))),
            ("case-error", ResponseTemplate::new(401).set_body_json(serde_json::json!(
                {"error": {"message": format!("Incorrect API key provided: {key}"), "type": "invalid_request_error"}}))),
        ];
        for (case, answer) in &cases {
            Mock::given(method("POST"))
                .and(body_string_contains(*case))
                .respond_with(answer.clone())
                .mount(&upstream)
                .await;
        }
        let folder = tempfile::tempdir().expect("tempdir");
        let recording = folder.path().join("r.jsonl");
        let server = proxy(
            format!("{}/v1", upstream.uri()),
            key,
            &recording,
            record::RecordLimits::default(),
            ServeLimits::default(),
        )
        .await;
        let http = reqwest::Client::new();
        for (case, _) in &cases {
            let streamed = *case == "case-stream";
            let body = serde_json::json!({"model": "m", "stream": streamed,
                "messages": [{"role": "user", "content": case}]});
            let answer = http
                .post(format!("{}/v1/chat/completions", server.url()))
                .json(&body)
                .send()
                .await
                .expect("answer")
                .text()
                .await
                .expect("body");
            assert!(
                !answer.contains(key),
                "{case}: the gateway got the key: {answer}"
            );
            assert!(answer.contains("[secret removed]"), "{case}: {answer}");
        }
        let recorded = server.stop().await.expect("stopped").expect("a fixture");
        let written = std::fs::read_to_string(&recording).expect("recording");
        assert!(!written.contains(key), "the recording holds {key}");
        let fixture = recorded.fixture.to_pretty_json();
        assert!(!fixture.contains(key), "the fixture holds {key}");
        assert!(
            written.matches("[secret removed]").count() >= 4,
            "{written}"
        );
    }
}

/// An upstream that streams Chat Completions chunks forever, one every millisecond.
async fn endless_upstream() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut request = [0u8; 65536];
                let _ = stream.read(&mut request).await;
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n";
                if stream.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"more and more \"},\"finish_reason\":null}]}\n\n";
                loop {
                    if stream.write_all(chunk.as_bytes()).await.is_err() {
                        return;
                    }
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
            });
        }
    });
    format!("http://{address}/v1")
}

#[tokio::test]
async fn finding_16_an_endless_upstream_is_cut_at_the_size_and_time_limits_and_at_a_stop() {
    let upstream = endless_upstream().await;
    let folder = tempfile::tempdir().expect("tempdir");
    let http = reqwest::Client::new();
    let body = |stream: bool| {
        serde_json::json!({"model": "m", "stream": stream,
            "messages": [{"role": "user", "content": "go on"}]})
    };
    // (limits, what cuts the call)
    let cases = [
        (
            record::RecordLimits {
                max_bytes: 64 * 1024,
                call_time_limit: Duration::from_secs(60),
            },
            "limit of 65536 bytes",
        ),
        (
            record::RecordLimits {
                max_bytes: u64::MAX / 2,
                call_time_limit: Duration::from_secs(1),
            },
            "call time limit of 1s",
        ),
    ];
    for (index, (limits, says)) in cases.into_iter().enumerate() {
        let recording = folder.path().join(format!("{index}.jsonl"));
        let server = proxy(
            upstream.clone(),
            "k",
            &recording,
            limits,
            ServeLimits::default(),
        )
        .await;
        let started = Instant::now();
        let answer = tokio::time::timeout(
            Duration::from_secs(20),
            http.post(format!("{}/v1/chat/completions", server.url()))
                .json(&body(true))
                .send()
                .await
                .expect("answer")
                .text(),
        )
        .await
        .expect("the call ends")
        .expect("body");
        assert!(started.elapsed() < Duration::from_secs(10), "{says}");
        let problems = server.problems();
        assert!(
            matches!(problems.as_slice(), [Problem::RecordingLimit { message }] if message.contains(says)),
            "{problems:?} / {}",
            &answer[answer.len().saturating_sub(300)..]
        );
        server.stop().await.expect("stopped");
        let size = std::fs::metadata(&recording).expect("recording").len();
        assert!(
            size < limits.max_bytes.min(8 << 20) + 16 * 1024,
            "{size} bytes"
        );
    }
    // Stopped mid-call (a gateway that asked for one answer, so nothing but the stop ends it).
    let recording = folder.path().join("stopped.jsonl");
    let server = proxy(
        upstream,
        "k",
        &recording,
        record::RecordLimits::default(),
        ServeLimits {
            stop_grace: Duration::from_millis(300),
            ..ServeLimits::default()
        },
    )
    .await;
    let call = http
        .post(format!("{}/v1/chat/completions", server.url()))
        .json(&body(false))
        .send();
    let pending = tokio::spawn(call);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = Instant::now();
    let _ = tokio::time::timeout(Duration::from_secs(10), server.stop())
        .await
        .expect("the stop is bounded");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let size = std::fs::metadata(&recording).expect("recording").len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        std::fs::metadata(&recording).expect("recording").len(),
        size,
        "still written after the stop"
    );
    pending.abort();
}

#[test]
fn finding_17_plain_http_to_another_machine_needs_an_explicit_allowance() {
    let folder = tempfile::tempdir().expect("tempdir");
    // (upstream, allowed insecure, accepted)
    let cases = [
        ("http://api.example.com/v1", false, false),
        ("http://10.0.0.5:8000/v1", false, false),
        ("http://api.example.com/v1", true, true),
        ("https://api.example.com/v1", false, true),
        ("http://127.0.0.1:9/v1", false, true),
        ("http://localhost:9/v1", false, true),
    ];
    for (upstream, allow, accepted) in cases {
        let made = record::Recorder::new(RecordConfig {
            upstream: upstream.into(),
            api_key: "sk-0123456789abcdef".into(),
            recording: folder.path().join("r.jsonl"),
            scenario: replay_core::Scenario::new("s", replay_core::UiMode::Flash, "p"),
            allow_insecure_upstream: allow,
            limits: record::RecordLimits::default(),
            aws: None,
        });
        match made {
            Ok(_) => assert!(accepted, "{upstream} accepted"),
            Err(err) => {
                assert!(!accepted, "{upstream}: {err}");
                assert!(
                    err.to_string().contains("--allow-insecure-upstream"),
                    "{err}"
                );
            }
        }
    }
}

/// The recorder builds its fixture from the calls it holds in memory (issue 28): byte for byte
/// the fixture reading its recording back builds, whatever key order the upstream's answers
/// had, streamed or not, failed or not.
#[tokio::test]
async fn the_fixture_built_from_memory_is_the_one_the_written_recording_builds() {
    use replay_core::recording::{Access, read_recording};
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let upstream = MockServer::start().await;
    let tool = serde_json::json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "t", "type": "function", "function": {"name": "write_file",
         "arguments": "{\"z\": {\"b\": 1, \"a\": [2.5, {\"y\": 0, \"x\": 1}]}, \"path\": \"/a\"}"}}]});
    let body = serde_json::json!({"id": "c", "object": "chat.completion", "created": 0,
        "model": "m", "choices": [{"index": 0, "message": tool, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}});
    let stream = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"hel\"},\"finish_reason\":null}]}\n\ndata: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let cases = [
        ("case-tool", ResponseTemplate::new(200).set_body_json(body)),
        (
            "case-stream",
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(stream),
        ),
        (
            "case-error",
            ResponseTemplate::new(429)
                .set_body_json(serde_json::json!({"error": {"message": "slow down"}})),
        ),
    ];
    for (case, answer) in &cases {
        Mock::given(method("POST"))
            .and(body_string_contains(*case))
            .respond_with(answer.clone())
            .mount(&upstream)
            .await;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let recording = folder.path().join("r.jsonl");
    let server = proxy(
        format!("{}/v1", upstream.uri()),
        "sk-memory-0123456789abcdef",
        &recording,
        record::RecordLimits::default(),
        ServeLimits::default(),
    )
    .await;
    let http = reqwest::Client::new();
    for (case, _) in &cases {
        let body = serde_json::json!({"model": "m", "stream": *case == "case-stream",
            "tools": [{"type": "function", "function": {"name": "write_file", "parameters": {"type": "object", "properties": {"z": {}, "path": {}}}}}],
            "messages": [{"role": "user", "content": case}]});
        http.post(format!("{}/v1/chat/completions", server.url()))
            .json(&body)
            .send()
            .await
            .expect("answer")
            .text()
            .await
            .expect("body");
    }
    let built = server.stop().await.expect("stopped").expect("a fixture");
    let read_back = read_recording(&recording, Access::External).expect("the recording");
    let scenario = replay_core::Scenario {
        model: "m".into(),
        ..replay_core::Scenario::new("s", replay_core::UiMode::Flash, "p")
    };
    let (mut expected, summary) = replay_core::build_fixture(&read_back, &scenario).expect("built");
    // The provenance is the proxy's (its clock, its upstream), not the recording's.
    expected.provenance = built.fixture.provenance.clone();
    assert_eq!(built.fixture.turns.len(), 3, "three calls recorded");
    assert_eq!(
        built.fixture.to_pretty_json(),
        expected.to_pretty_json(),
        "the same bytes"
    );
    assert_eq!(built.summary, summary);
}

/// Issue 43 (`keyless drift`): the fixture's provenance keeps every term of what the upstream
/// sent, each with the call that first used it, at a whole answer, a Chat Completions stream and
/// a Messages stream whose events are named; field paths and kinds only, never a value.
#[tokio::test]
async fn the_provenance_keeps_the_terms_of_the_upstreams_answers_by_call() {
    use wiremock::matchers::{body_string_contains, method};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let upstream = MockServer::start().await;
    let whole = serde_json::json!({"id": "c", "object": "chat.completion", "created": 0,
        "model": "m", "choices": [{"index": 0, "message": {"role": "assistant", "content": "a"},
        "finish_reason": "stop"}]});
    let chat = "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"secret-text\",\"reasoning_content\":\"r\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n";
    let messages = [
        ("message_start", r#"{"type":"message_start","message":{"id":"m1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":0}}}"#),
        ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}"#),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":1}}"#),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]
    .map(|(event, data)| format!("event: {event}\ndata: {data}\n\n"))
    .concat();
    let sse = |body: String| {
        ResponseTemplate::new(200)
            .insert_header("content-type", "text/event-stream")
            .set_body_string(body)
    };
    let cases = [
        (
            "case-whole",
            ResponseTemplate::new(200).set_body_json(whole),
        ),
        ("case-chat", sse(chat.to_owned())),
        ("case-messages", sse(messages)),
    ];
    for (case, answer) in &cases {
        Mock::given(method("POST"))
            .and(body_string_contains(*case))
            .respond_with(answer.clone())
            .mount(&upstream)
            .await;
    }
    let folder = tempfile::tempdir().expect("tempdir");
    let server = proxy(
        format!("{}/v1", upstream.uri()),
        "sk-terms-0123456789abcdef",
        &folder.path().join("r.jsonl"),
        record::RecordLimits::default(),
        ServeLimits::default(),
    )
    .await;
    let http = reqwest::Client::new();
    for (path, body) in [
        (
            "/v1/chat/completions",
            r#"{"model":"m","messages":[{"role":"user","content":"case-whole"}]}"#,
        ),
        (
            "/v1/chat/completions",
            r#"{"model":"m","stream":true,"messages":[{"role":"user","content":"case-chat"}]}"#,
        ),
        (
            "/v1/messages",
            r#"{"model":"m","max_tokens":16,"stream":true,"messages":[{"role":"user","content":"case-messages"}]}"#,
        ),
    ] {
        http.post(format!("{}{path}", server.url()))
            .header("content-type", "application/json")
            .body(body)
            .send()
            .await
            .expect("answer")
            .text()
            .await
            .expect("body");
    }
    let built = server.stop().await.expect("stopped").expect("a fixture");
    let provenance = built.fixture.provenance.expect("a provenance");
    let stream = provenance.stream.expect("the stream's terms");
    for (term, call) in [
        ("object=chat.completion", 0),
        ("choices[].message.content", 0),
        ("object=chat.completion.chunk", 1),
        ("choices[].delta.reasoning_content", 1),
        ("content_block_delta: delta.type=text_delta", 2),
        ("content_block_start: content_block.type=text", 2),
        ("message_delta: usage.output_tokens", 2),
    ] {
        let found = stream.terms().find(|(t, _)| *t == term).map(|(_, c)| c);
        assert_eq!(found, Some(call), "{term}: {:?}", stream.to_value());
    }
    assert!(
        !stream.to_value().to_string().contains("secret-text"),
        "a value became a term: {:?}",
        stream.to_value()
    );
}

/// Issue 45, finding 1: an upstream that streams the proxy's key split over two chunks
/// (`"Your key: "`, its first 16 characters, its last 16, `" end"`), at Chat Completions and at
/// Gemini's `?alt=sse`, puts neither half in the recording; the fixture and the gateway's
/// Chat Completions stream hold the placeholder where the key was.
#[tokio::test]
async fn finding_45_1_a_key_split_over_chunks_never_reaches_the_recording() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let key = "0123456789abcdef0123456789abcdef";
    let pieces = ["Your key: ", &key[..16], &key[16..], " end"];
    let chat = |content: &str, finish: serde_json::Value| {
        serde_json::json!({"id": "c", "object": "chat.completion.chunk", "created": 0,
            "model": "m", "choices": [{"index": 0, "delta": {"content": content},
            "finish_reason": finish}]})
    };
    let gemini = |text: &str, last: bool| {
        let mut candidate = serde_json::json!({"index": 0,
            "content": {"role": "model", "parts": [{"text": text}]}});
        if last {
            candidate["finishReason"] = "STOP".into();
        }
        serde_json::json!({"candidates": [candidate], "modelVersion": "m"})
    };
    let frames = |chunks: Vec<serde_json::Value>, done: &str| {
        let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
        body.push_str(done);
        body
    };
    let chat_stream = frames(
        (pieces.iter().map(|p| chat(p, serde_json::Value::Null)))
            .chain([chat("", "stop".into())])
            .collect(),
        "data: [DONE]\n\n",
    );
    let gemini_stream = frames(
        (pieces.iter().enumerate())
            .map(|(at, p)| gemini(p, at == pieces.len() - 1))
            .collect(),
        "",
    );
    let cases = [
        ("/v1/chat/completions", chat_stream, "/v1"),
        (
            "/v1beta/models/m:streamGenerateContent?alt=sse",
            gemini_stream,
            "/v1beta",
        ),
    ];
    for (path, stream, base) in cases {
        let upstream = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .insert_header("content-type", "text/event-stream")
                    .set_body_string(stream),
            )
            .mount(&upstream)
            .await;
        let folder = tempfile::tempdir().expect("tempdir");
        let recording = folder.path().join("r.jsonl");
        let server = proxy(
            format!("{}{base}", upstream.uri()),
            key,
            &recording,
            record::RecordLimits::default(),
            ServeLimits::default(),
        )
        .await;
        let body = if path.starts_with("/v1beta") {
            serde_json::json!({"contents": [{"role": "user", "parts": [{"text": "hi"}]}]})
        } else {
            serde_json::json!({"model": "m", "stream": true,
                "messages": [{"role": "user", "content": "hi"}]})
        };
        let answer = (reqwest::Client::new())
            .post(format!("{}{path}", server.url()))
            .json(&body)
            .send()
            .await
            .expect("answer")
            .text()
            .await
            .expect("body");
        let written = std::fs::read_to_string(&recording).expect("recording");
        let recorded = server.stop().await.expect("stopped").expect("a fixture");
        for half in [&key[..16], &key[16..]] {
            assert!(
                !written.contains(half),
                "{path}: the recording holds {half}: {written}"
            );
        }
        assert!(written.contains("[secret removed]"), "{path}: {written}");
        let fixture = recorded.fixture.to_pretty_json();
        assert!(
            fixture.contains("Your key: [secret removed] end"),
            "{path}: {fixture}"
        );
        if path.starts_with("/v1/") {
            assert!(
                !answer.contains(&key[..16]),
                "{path}: the gateway got {answer}"
            );
        }
    }
}

/// Issue 45, finding 9: between two runs (`{"between_runs": true}` until the next reset) a model
/// call at any wire is refused (409) and kept as a `call_between_runs` problem, which the next
/// reset hands back; after it, calls are answered again. Ending a run selects no fixture.
#[tokio::test]
async fn finding_9_a_call_between_runs_is_refused_and_handed_back_by_the_next_reset() {
    let server = server(ServeLimits::default()).await;
    let port = server.address.port();
    let client = ModelServerClient::new(&server.url())
        .expect("client")
        .with_reset_token(server.reset_token());
    let ended = client.end_run().await.expect("end the run");
    assert_eq!(ended.discarded_count, 0);
    for (path, body) in [
        ("/v1/chat/completions", MISSING),
        (
            "/v1/messages",
            r#"{"model":"m","max_tokens":5,"messages":[]}"#,
        ),
    ] {
        let refused = raw(&server, &post(port, path, "", body), Duration::from_secs(5)).await;
        assert!(refused.starts_with("HTTP/1.1 409"), "{path}: {refused}");
        assert!(
            refused.contains("arrived between two runs"),
            "{path}: {refused}"
        );
    }
    let reply = client
        .reset(Some("write_read_file.flash"))
        .await
        .expect("reset");
    let kinds: Vec<&str> = reply
        .discarded
        .iter()
        .map(|problem| problem.kind().as_str())
        .collect();
    assert_eq!(kinds, ["call_between_runs", "call_between_runs"]);
    assert!(
        (reply.problems_of_the_last_run().iter())
            .all(|problem| problem.to_string().starts_with("call_between_runs: ")),
        "{reply:?}"
    );
    let answered = raw(
        &server,
        &post(port, "/v1/chat/completions", "", MISSING),
        Duration::from_secs(5),
    )
    .await;
    assert!(
        answered.starts_with("HTTP/1.1 400"),
        "a miss again: {answered}"
    );
    let token = format!("{RESET_TOKEN_HEADER}: {}\r\n", server.reset_token());
    let both = r#"{"between_runs": true, "fixture": "write_read_file.flash"}"#;
    let refused = raw(
        &server,
        &post(port, "/_keyless/reset", &token, both),
        Duration::from_secs(5),
    )
    .await;
    assert!(refused.starts_with("HTTP/1.1 400"), "{refused}");
}
