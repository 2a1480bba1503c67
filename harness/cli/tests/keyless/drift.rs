//! Issue 43: `keyless drift` records the user's fixture again against a scripted upstream that
//! the test then changes (a text, an extra tool call, a renamed argument, a new stream field),
//! and classifies each change; `--update` takes the benign one and leaves the breaking ones
//! byte-identical.

use std::io::{BufRead, BufReader, Read, Write};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::{FIXTURE, UserRepo, said};

/// One scripted answer: its text, its tool calls (`name`, arguments), and an extra field every
/// delta carries (a provider change the recording never had).
#[derive(Clone, Default)]
struct Reply {
    text: &'static str,
    calls: Vec<(&'static str, Value)>,
    extra: Option<(&'static str, &'static str)>,
}

/// A Chat Completions upstream on 127.0.0.1 that streams `script[n]` to a conversation holding
/// `n` assistant messages; the script can be changed while it runs. Its thread ends with the
/// test process.
fn scripted_upstream(script: Arc<Mutex<Vec<Reply>>>) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            let messages = request["messages"].as_array().cloned().unwrap_or_default();
            let answered = messages.iter().filter(|m| m["role"] == "assistant").count();
            let reply = script.lock().unwrap().get(answered).cloned();
            let reply = reply.unwrap_or(Reply {
                text: "(the script has no more answers)",
                ..Reply::default()
            });
            let _ = write!(
                reader.get_mut(),
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n{}",
                sse(&reply, &request["model"])
            );
        }
    });
    format!("http://{address}/v1")
}

/// The answer as Chat Completions chunks: the text, then each tool call, then the finish.
fn sse(reply: &Reply, model: &Value) -> String {
    let chunk = |delta: Value, finish: Value| {
        let mut delta = delta;
        if let Some((key, value)) = reply.extra {
            delta[key] = json!(value);
        }
        let chunk = json!({"id": "chatcmpl-scripted", "object": "chat.completion.chunk",
            "created": 1_700_000_000, "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        format!("data: {chunk}\n\n")
    };
    let mut text = chunk(
        json!({"role": "assistant", "content": reply.text}),
        Value::Null,
    );
    for (index, (name, args)) in reply.calls.iter().enumerate() {
        let call = json!({"index": index, "id": format!("call_{index}"), "type": "function",
            "function": {"name": name, "arguments": args.to_string()}});
        text.push_str(&chunk(json!({"tool_calls": [call]}), Value::Null));
    }
    let finish = if reply.calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    text.push_str(&chunk(json!({}), json!(finish)));
    text.push_str("data: [DONE]\n\n");
    text
}

fn write(path_key: &'static str) -> (&'static str, Value) {
    (
        "write_file",
        json!({path_key: "/mnt/user-data/outputs/a.txt", "content": "hi", "description": "d"}),
    )
}

fn read() -> (&'static str, Value) {
    (
        "read_file",
        json!({"path": "/mnt/user-data/outputs/a.txt", "description": "d"}),
    )
}

/// The script the fixture is recorded with: write a file, then say so.
fn recorded() -> Vec<Reply> {
    vec![
        Reply {
            calls: vec![write("path")],
            ..Reply::default()
        },
        Reply {
            text: "Wrote hi.",
            ..Reply::default()
        },
    ]
}

#[test]
fn each_provider_change_is_classified_and_update_takes_only_the_benign_one() {
    let repo = UserRepo::new();
    let script = Arc::new(Mutex::new(recorded()));
    let upstream = scripted_upstream(script.clone());
    let (scenario, mode) = FIXTURE.split_once('.').unwrap();
    let recording = repo.keyless(&[
        "record",
        "--force",
        "--scenario",
        scenario,
        "--mode",
        mode,
        "--prompt",
        "Write hi to /mnt/user-data/outputs/a.txt",
        "--upstream",
        &upstream,
    ]);
    assert_eq!(recording.status.code(), Some(0), "{}", said(&recording));
    let made_golden = repo.keyless(&["test"]);
    assert_eq!(made_golden.status.code(), Some(1), "{}", said(&made_golden));
    let accepted = repo.keyless(&["accept"]);
    assert_eq!(accepted.status.code(), Some(0), "{}", said(&accepted));
    let fixture = repo.path().join(format!("fixtures/{FIXTURE}.json"));

    let mut extra_call = recorded();
    extra_call[0].calls.push(read());
    let mut renamed = recorded();
    renamed[0].calls = vec![write("file_path")];
    let mut new_field = recorded();
    new_field[0].extra = Some(("reasoning_content", "thinking first"));
    let mut text = recorded();
    text[1].text = "I wrote hi to the file.";
    // (case, the upstream's script, verdict, the first change's call and field); each run with
    // --update, the benign one last. The gateway's shapes differing from the golden is played by
    // a golden that says otherwise.
    let golden = repo.path().join(format!("golden/{FIXTURE}.snap"));
    let accepted_golden = std::fs::read_to_string(&golden).unwrap();
    let cases = [
        ("nothing changed", recorded(), "identical", None),
        (
            "the gateway's shapes differ from the golden",
            recorded(),
            "breaking",
            Some((Value::Null, "golden")),
        ),
        (
            "an extra tool call",
            extra_call,
            "breaking",
            Some((json!(0), "tool_calls")),
        ),
        (
            "a renamed argument",
            renamed,
            "breaking",
            Some((json!(0), "tool_calls[0].args")),
        ),
        (
            "a new stream field",
            new_field,
            "breaking",
            Some((json!(0), "stream")),
        ),
        ("a text change", text, "benign", Some((json!(1), "content"))),
    ];
    for (case, replies, verdict, first) in cases {
        *script.lock().unwrap() = replies;
        let other = accepted_golden.replacen("\"run_id\"", "\"the_run_id\"", 1);
        let edited = first.as_ref().is_some_and(|(_, field)| *field == "golden");
        std::fs::write(&golden, if edited { &other } else { &accepted_golden }).unwrap();
        let before = std::fs::read(&fixture).unwrap();
        let run = repo.keyless(&[
            "drift",
            "--json",
            "--update",
            "--report",
            "drift.md",
            "--upstream",
            &upstream,
        ]);
        let expected_code = if verdict == "breaking" { 1 } else { 0 };
        assert_eq!(
            run.status.code(),
            Some(expected_code),
            "{case}: {}",
            said(&run)
        );
        let line: Value = serde_json::from_slice(&run.stdout)
            .unwrap_or_else(|err| panic!("{case}: not one JSON line ({err}): {}", said(&run)));
        assert_eq!(line["fixture"], FIXTURE, "{case}: {line:#}");
        assert_eq!(line["verdict"], verdict, "{case}: {line:#}");
        let change = &line["changes"][0];
        let got = first.as_ref().map(|_| {
            (
                change["call"].clone(),
                change["field"].as_str().unwrap_or(""),
            )
        });
        assert_eq!(got, first, "{case}: {line:#}");
        if let Some(change) = line["changes"].as_array().and_then(|c| c.first()) {
            for key in ["recorded", "now"] {
                assert!(change.get(key).is_some(), "{case}: no {key} in {line:#}");
            }
        }
        let report = std::fs::read_to_string(repo.path().join("drift.md")).unwrap();
        assert!(
            report.contains(&format!("| `{FIXTURE}` | {verdict} |")),
            "{case}: {report}"
        );
        let after = std::fs::read(&fixture).unwrap();
        assert_eq!(
            after != before,
            verdict == "benign",
            "{case}: the fixture was {} by --update: {}",
            if after != before { "rewritten" } else { "left" },
            said(&run)
        );
    }
    // The benign re-recording is now the fixture: the same script again is identical.
    let again = repo.keyless(&["drift", "--upstream", &upstream]);
    assert_eq!(again.status.code(), Some(0), "{}", said(&again));
    let table = String::from_utf8_lossy(&again.stdout);
    assert!(
        table
            .lines()
            .any(|row| row.starts_with(FIXTURE) && row.contains("identical")),
        "{}",
        said(&again)
    );
}

/// Usage and configuration errors exit 2 naming what to fix (no upstream, an unknown fixture,
/// the key's variable unset); a scenario that cannot be recorded again (an upstream nobody
/// answers at) is breaking, its change the recording's error, and its fixture stays as it was.
#[test]
fn drift_without_an_upstream_a_fixture_or_a_key_is_a_usage_error_and_no_recording_is_breaking() {
    let repo = UserRepo::new();
    let config = repo.path().join("keyless.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(
        &config,
        format!("{text}[record]\nkey_env = \"KEYLESS_TEST_UNSET_DRIFT_KEY\"\n"),
    )
    .unwrap();
    let unreachable = "http://127.0.0.1:9/v1";
    for (args, says) in [
        (vec!["drift"], "no upstream"),
        (
            vec![
                "drift",
                "--upstream",
                unreachable,
                "--fixture",
                "nope.flash",
            ],
            "no fixture \"nope.flash\"",
        ),
        (
            vec!["drift", "--upstream", unreachable],
            "set KEYLESS_TEST_UNSET_DRIFT_KEY",
        ),
    ] {
        let output = repo.keyless(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", said(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(says),
            "{args:?}: {}",
            said(&output)
        );
    }
    let fixture = repo.path().join(format!("fixtures/{FIXTURE}.json"));
    let committed = std::fs::read(&fixture).unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_keyless"))
        .args(["drift", "--json", "--update", "--upstream", unreachable])
        .current_dir(repo.path())
        .env("KEYLESS_TEST_UNSET_DRIFT_KEY", "sk-drift-0123456789abcdef")
        // The gateway's own key (its model is the recording proxy).
        .env(
            "OPENAI_API_KEY",
            harness::adapter::process::placeholder_key(),
        )
        .env_remove("CARGO_MANIFEST_DIR")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    let line: Value = serde_json::from_slice(&output.stdout).expect("one JSON line");
    assert_eq!(
        (
            &line["verdict"],
            &line["changes"][0]["field"],
            &line["changes"][0]["call"]
        ),
        (&json!("breaking"), &json!("record"), &Value::Null),
        "{line:#}"
    );
    assert!(
        line["changes"][0]["now"]
            .as_str()
            .is_some_and(|now| now.contains("127.0.0.1:9")),
        "{line:#}"
    );
    assert_eq!(std::fs::read(&fixture).unwrap(), committed);
}
