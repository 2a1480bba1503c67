//! `keyless test` with a recorded embeddings call (issue 41), as a user runs it: the scripted
//! gateway embeds the prompt at the model server's `POST /v1/embeddings` before its chat call,
//! and the fixture's recorded exchange answers it. A changed text is a miss naming the call and
//! the text; an embeddings call in a fixture that recorded none fails naming the route.

use harness::workspace::workspace_root;
use serde_json::{Value, json};

use super::{UserRepo, said, toml_string};

/// An OpenAI embeddings call of `text`, answered with a 2-dimension vector `[0.5, -0.25]`.
fn exchange(text: &str) -> Value {
    json!({
        "boundary": "embeddings",
        "caller": "lead_agent",
        "label": "OpenAI embeddings text-embedding-3-small",
        "request": {"model": "text-embedding-3-small", "inputs": [text], "dimensions": null,
                    "options": {}},
        "answer": {"vectors": [{"dims": 2, "f32le": "AAAAPwAAgL4="}], "prompt_tokens": 1},
    })
}

impl UserRepo {
    /// One chat fixture whose run embeds its prompt (recorded as `recorded`, or no exchange),
    /// through the scripted gateway with `GW_EMBED=1`.
    fn embedding(&self, recorded: Option<&str>) {
        let fixtures = self.path().join("fixtures");
        std::fs::remove_dir_all(&fixtures).unwrap();
        std::fs::create_dir_all(&fixtures).unwrap();
        let hello = workspace_root().join("examples/ai-sdk-chat/web/fixtures/hello.chat.json");
        let mut fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(hello).unwrap()).unwrap();
        if let Some(text) = recorded {
            fixture["exchanges"] = json!({"version": 1, "recorded": [exchange(text)]});
        }
        std::fs::write(fixtures.join("rag.chat.json"), fixture.to_string()).unwrap();
        let gateway = workspace_root().join("harness/cli/tests/keyless/scripted_gateway.py");
        let command = format!("GW_EMBED=1 exec python3 '{}'", gateway.display());
        std::fs::write(
            self.path().join("keyless.toml"),
            format!(
                "gateway_cmd = {}\nready = \"/\"\napi = \"langgraph\"\n",
                toml_string(&command)
            ),
        )
        .unwrap();
    }
}

#[test]
fn a_recorded_embedding_replays_through_keyless_test_and_a_changed_or_unrecorded_one_fails_named() {
    let repo = UserRepo::new();
    repo.embedding(Some("Hello!"));
    let first = repo.keyless(&["test"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "no golden yet: {}",
        said(&first)
    );
    let accepted = repo.keyless(&["accept"]);
    assert!(accepted.status.success(), "{}", said(&accepted));
    // Clean: the call was answered (a miss fails the run) and asked for (an exchange nobody
    // asks for fails it too).
    let clean = repo.keyless(&["test"]);
    assert!(clean.status.success(), "{}", said(&clean));
    let cases = [
        (
            Some("Hello there!"),
            "embeddings miss: `OpenAI embeddings text-embedding-3-small` from `lead_agent`",
        ),
        (
            Some("Hello there!"),
            "first differing field: inputs[0]: recorded \"Hello there!\", now \"Hello!\"",
        ),
        (
            None,
            "POST /v1/embeddings: the fixture records no embeddings call",
        ),
    ];
    for (recorded, expected) in cases {
        repo.embedding(recorded);
        let output = repo.keyless(&["test"]);
        assert_eq!(output.status.code(), Some(1), "{}", said(&output));
        assert!(
            said(&output).contains(expected),
            "{}\nexpected: {expected}",
            said(&output)
        );
    }
}

/// A scripted OpenAI upstream: `/embeddings` answers `[0.5, -0.25]`, any other path one chat
/// completion. Its thread ends with the test process.
fn scripted_upstream() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let (mut length, mut first) = (0, String::new());
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if first.is_empty() {
                    first = line.clone();
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = if first.contains("/embeddings ") {
                json!({"object": "list", "model": "text-embedding-3-small",
                    "data": [{"object": "embedding", "index": 0, "embedding": [0.5, -0.25]}],
                    "usage": {"prompt_tokens": 1, "total_tokens": 1}})
            } else {
                json!({"id": "c1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "Hi there"}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
            }
            .to_string();
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    format!("http://{address}/v1")
}

/// `keyless record` through the OpenAI upstream records the gateway's `/v1/embeddings` call
/// into the fixture's exchanges (the vector compact), and `keyless test` replays it green.
#[test]
fn keyless_record_records_an_embeddings_call_into_the_fixture_and_keyless_test_replays_it() {
    let repo = UserRepo::new();
    repo.embedding(None);
    let upstream = scripted_upstream();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args([
            "record",
            "--scenario",
            "rag",
            "--mode",
            "chat",
            "--prompt",
            "Hello!",
        ])
        .args(["--upstream", &upstream, "--force"])
        .current_dir(repo.path())
        .env(
            "OPENAI_API_KEY",
            harness::adapter::process::placeholder_key(),
        )
        .env_remove("CARGO_MANIFEST_DIR")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", said(&output));
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(repo.path().join("fixtures/rag.chat.json")).unwrap(),
    )
    .unwrap();
    let recorded = &fixture["exchanges"]["recorded"];
    assert_eq!(recorded, &json!([exchange("Hello!")]), "{}", said(&output));
    let first = repo.keyless(&["test"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "no golden yet: {}",
        said(&first)
    );
    let accepted = repo.keyless(&["accept"]);
    assert!(accepted.status.success(), "{}", said(&accepted));
    let clean = repo.keyless(&["test"]);
    assert!(clean.status.success(), "{}", said(&clean));
}
