//! The model server against a hostile neighbour, over real HTTP on 127.0.0.1 (issue 34): a
//! process resetting the ledger mid-run (finding 3), a client holding half a request (4), a web
//! page in the developer's browser (8), a body past every reason (9).

use std::path::PathBuf;
use std::sync::Arc;
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
    // (the headers a would-be resetter sends, as the gateway or any local process could)
    let wrong = format!("{RESET_TOKEN_HEADER}: {}\r\n", "0".repeat(64));
    let almost = format!("{RESET_TOKEN_HEADER}: {}\r\n", &server.reset_token()[..63]);
    for extra in ["", wrong.as_str(), almost.as_str()] {
        let answer = raw(
            &server,
            &post(port, "/_harness/reset", extra, "{}"),
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
    let loaded = Arc::new(replay_core::Fixture::load(&fixture()).expect("fixture"));
    target.start(&fixture(), &loaded).await.expect("reset");
    let ledger = target.finish().await.expect("ledger");
    assert!(
        matches!(ledger.other_problems.as_slice(), [line] if line.starts_with("discarded_at_reset: miss: ")),
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
            "/_harness/reset",
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
        .map(Problem::kind)
        .collect();
    assert_eq!(kinds, ["body_too_large", "body_too_large"]);
}
