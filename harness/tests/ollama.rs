//! Ollama's native wire at the model server (issue 41, item 3): `POST /api/chat` (NDJSON unless
//! `"stream": false`) and `/api/generate` replay every turn of every shipped fixture from the
//! shared canonical conversation (the name-free key), with recorded reasoning as `thinking` and
//! a failure as Ollama's `{"error"}`; a drifted conversation is a miss in that shape; a tool loop
//! recorded through the proxy against a scripted Ollama upstream replays from its fixture and
//! strictly; the discovery routes name the replayed models. The official `ollama` Python client
//! (`chat`, streamed and not) and LangChain's `ChatOllama` (`sdk/check_ollama.py`) drive a tool
//! loop to the recorded answers, from the fixture, through the proxy and from the recording.

use std::path::PathBuf;
use std::time::Duration;

use harness::workspace::fixtures_dir;
use keyless_runner::runtime;
use keyless_runner::server::{CALLER_HEADER, RESET_TOKEN_HEADER, RecordConfig};
use keyless_runner::{Mode, ModelServer, Problem, ServerOptions};
use model_wire::chat_completions::{Answer, Assembled};
use model_wire::ollama;
use replay_core::{Answer as Recorded, Fixture};
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(240);

fn bounded<T>(work: impl Future<Output = T>) -> T {
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"))
}

/// A turn's stored canonical entries as the `ollama` client sends them: no call ids, a tool
/// result naming its tool (`tool_name`).
fn messages(canonical: &str) -> Vec<Value> {
    let entries: Vec<Value> = serde_json::from_str(canonical).expect("canonical entries");
    let mut names = std::collections::VecDeque::new();
    let mut out = vec![json!({"role": "system", "content": "sys"})];
    for entry in entries {
        let content = entry["content"].as_str().unwrap_or_default();
        match entry["type"].as_str().unwrap_or_default() {
            "human" => out.push(json!({"role": "user", "content": content})),
            "ai" => {
                let calls: Vec<Value> = entry["tool_calls"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(|call| {
                        names.push_back(call["name"].clone());
                        json!({"function": {"name": call["name"], "arguments": call["args"]}})
                    })
                    .collect();
                let mut message = json!({"role": "assistant", "content": content});
                if !calls.is_empty() {
                    message["tool_calls"] = json!(calls);
                }
                out.push(message);
            }
            "tool" => out.push(json!({"role": "tool", "content": content,
                "tool_name": names.pop_front().unwrap_or_default()})),
            other => panic!("unexpected canonical entry type {other:?}"),
        }
    }
    out
}

/// The answer an Ollama body carries: NDJSON lines, or one JSON object.
fn read(body: &str) -> Result<Assembled, String> {
    let mut assembler = ollama::StreamAssembler::new();
    for line in body.lines().filter(|line| !line.trim().is_empty()) {
        assembler.push_data(line).map_err(|e| e.to_string())?;
    }
    assembler
        .finish()
        .map(|(_, answer)| answer)
        .map_err(|e| e.to_string())
}

/// Text, reasoning and calls (name, parsed arguments): what a client makes of an answer.
fn seen(text: &str, reasoning: &str, calls: &[(String, String)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(name, args)| {
            json!({"name": name, "args": serde_json::from_str::<Value>(args).unwrap_or(json!({}))})
        })
        .collect();
    json!({"text": text, "reasoning": reasoning, "calls": calls})
}

fn pairs(calls: &[model_wire::chat_completions::AssembledCall]) -> Vec<(String, String)> {
    calls
        .iter()
        .map(|c| (c.name.clone(), c.arguments.clone()))
        .collect()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
}

/// `POST /_keyless/reset` with the server's reset token; its status.
async fn reset(server: &ModelServer) -> u16 {
    client()
        .post(format!("{}/_keyless/reset", server.url()))
        .header(RESET_TOKEN_HEADER, server.reset_token())
        .json(&json!({}))
        .send()
        .await
        .expect("reset")
        .status()
        .as_u16()
}

/// A POST's status, content type and body.
async fn post(url: &str, body: &Value, caller: Option<&str>) -> (u16, String, String) {
    let mut request = client().post(url).json(body);
    if let Some(caller) = caller {
        request = request.header(CALLER_HEADER, caller);
    }
    let response = request.send().await.expect("answer");
    let kind = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    (
        response.status().as_u16(),
        kind,
        response.text().await.expect("body"),
    )
}

#[test]
fn every_shipped_turn_replays_at_ollama_s_chat_as_its_recorded_answer() {
    let fixtures = keyless_runner::suite::fixture_files(&fixtures_dir()).expect("fixtures/");
    assert!(!fixtures.is_empty(), "no shipped fixtures");
    bounded(async {
        for fixture_path in fixtures {
            let fixture = Fixture::load(&fixture_path).expect("fixture");
            let name = fixture_path.display().to_string();
            let server = ModelServer::start(
                Mode::Fixtures(vec![fixture_path.clone()]),
                ServerOptions::default(),
            )
            .await
            .expect("model server");
            // `None`: the body says nothing, and Ollama streams.
            for stream in [Some(false), Some(true), None] {
                assert_eq!(reset(&server).await, 200, "reset");
                for (index, turn) in fixture.turns.iter().enumerate() {
                    let how = format!("{name} turn {index} (stream: {stream:?})");
                    let canonical = turn.canonical.as_deref().expect("canonical");
                    let mut body = json!({"model": "llama3.2", "messages": messages(canonical)});
                    if let Some(stream) = stream {
                        body["stream"] = json!(stream);
                    }
                    let url = format!("{}/api/chat", server.url());
                    let (status, kind, text) = post(&url, &body, turn.caller.as_deref()).await;
                    match &turn.answer {
                        Recorded::Output(output) => {
                            assert_eq!(status, 200, "{how}: {text}");
                            let want_kind = match stream {
                                Some(false) => "application/json",
                                _ => "application/x-ndjson",
                            };
                            assert_eq!(kind, want_kind, "{how}");
                            let got = read(&text).unwrap_or_else(|e| panic!("{how}: {e}\n{text}"));
                            let want = Answer::from_ai_message(output);
                            assert_eq!(
                                seen(&got.text, &got.reasoning, &pairs(&got.calls)),
                                seen(
                                    &want.text,
                                    want.reasoning.as_deref().unwrap_or_default(),
                                    &pairs(&want.calls)
                                ),
                                "{how}"
                            );
                        }
                        Recorded::Error(_) => {
                            assert!(
                                read(&text).is_err(),
                                "{how}: a failure reads as one: {text}"
                            );
                        }
                    }
                }
                let problems = server.problems();
                assert!(
                    problems.is_empty(),
                    "{name} (stream: {stream:?}): {problems:?}"
                );
            }
            server.stop().await.expect("stop");
        }
    });
}

/// A fixture `extra.flash.json` whose turns answer `think` with reasoning and text and `fail`
/// with a failure the provider reported inside its answer.
fn reasoning_and_in_stream_failure_fixture(folder: &std::path::Path) -> PathBuf {
    let key = |text: &str| {
        replay_core::replay_key("lead_agent", &[json!({"type": "human", "content": text})])
    };
    let (think, fail) = (key("think"), key("fail"));
    let fixture = json!({"scenario": "extra", "mode": "flash", "model": "qwen3", "turns": [
        {"caller": think.caller, "conversation_hash": think.conversation_hash,
         "input_hash": think.input_hash, "canonical": think.canonical,
         "output": {"type": "ai", "data": {"content": "Yes.", "type": "ai",
            "additional_kwargs": {"reasoning_content": "Let me think."},
            "usage_metadata": {"input_tokens": 3, "output_tokens": 2, "total_tokens": 5}}}},
        {"caller": fail.caller, "conversation_hash": fail.conversation_hash,
         "input_hash": fail.input_hash, "canonical": fail.canonical,
         "error": {"type": "APIError", "message": "the provider broke down", "in_stream": true}},
    ]});
    let path = folder.join("extra.flash.json");
    std::fs::write(&path, fixture.to_string()).expect("write");
    path
}

/// Recorded reasoning is `thinking` at `/api/chat` and `/api/generate` (whose text is
/// `response`), with the recorded counts; a failure the provider reported inside its answer
/// ends the stream with Ollama's `{"error"}` line; a drifted conversation is a miss in Ollama's
/// error shape whose message names the name-free key.
#[test]
fn thinking_generate_failures_and_misses_keep_ollama_s_form() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture_path = reasoning_and_in_stream_failure_fixture(folder.path());
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        for (route, stream) in [
            ("chat", true),
            ("chat", false),
            ("generate", true),
            ("generate", false),
        ] {
            assert_eq!(reset(&server).await, 200);
            let how = format!("/api/{route} (stream: {stream})");
            let url = format!("{}/api/{route}", server.url());
            let body = |text: &str| match route {
                "chat" => json!({"model": "qwen3", "stream": stream, "think": true,
                                 "messages": [{"role": "user", "content": text}]}),
                _ => json!({"model": "qwen3", "stream": stream, "think": true, "prompt": text,
                            "system": "sys"}),
            };
            let (status, _, text) = post(&url, &body("think"), None).await;
            assert_eq!(status, 200, "{how}: {text}");
            let got = read(&text).unwrap_or_else(|e| panic!("{how}: {e}"));
            assert_eq!(
                (got.text.as_str(), got.reasoning.as_str()),
                ("Yes.", "Let me think."),
                "{how}"
            );
            assert_eq!(
                got.usage
                    .as_ref()
                    .map(|usage| usage["total_tokens"].clone()),
                Some(json!(5)),
                "{how}"
            );
            let first: Value =
                serde_json::from_str(text.lines().next().unwrap_or_default()).expect("a JSON line");
            match route {
                "chat" => assert_eq!(first["message"]["role"], "assistant", "{how}: {text}"),
                _ => assert!(first.get("response").is_some(), "{how}: {text}"),
            }
            let (status, _, text) = post(&url, &body("fail"), None).await;
            assert_eq!(status, 200, "{how}: {text}");
            assert_eq!(
                read(&text).expect_err(&how),
                "the provider broke down",
                "{how}: {text}"
            );
            let (status, _, text) = post(&url, &body("never recorded"), None).await;
            assert_eq!(status, 400, "{how}: {text}");
            let error: Value = serde_json::from_str(&text).expect("Ollama's error body");
            let message = error["error"].as_str().unwrap_or_default().to_owned();
            assert!(message.contains("name-free key"), "{how}: {message}");
            let problems = server.problems();
            assert!(
                matches!(problems.as_slice(), [Problem::Miss { message: m, .. }] if *m == message),
                "{how}: {problems:?}"
            );
        }
        assert_eq!(reset(&server).await, 200);
        server.stop().await.expect("stop");
    });
}

/// The discovery routes name the replayed models (the fixture's), and only them; they are no
/// model calls and report no problem. An embeddings call, not served yet, is an unserved route.
#[test]
fn ollama_s_discovery_routes_name_the_replayed_models() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture_path = reasoning_and_in_stream_failure_fixture(folder.path());
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        let get = |path: &str| {
            let url = format!("{}{path}", server.url());
            async move {
                let response = client().get(url).send().await.expect("answer");
                (
                    response.status().as_u16(),
                    response.json::<Value>().await.expect("JSON"),
                )
            }
        };
        let (status, tags) = get("/api/tags").await;
        assert_eq!(
            (status, tags["models"][0]["name"].clone()),
            (200, json!("qwen3"))
        );
        let (status, version) = get("/api/version").await;
        assert_eq!(status, 200);
        assert!(version["version"].is_string(), "{version}");
        let show = format!("{}/api/show", server.url());
        let (status, _, text) = post(&show, &json!({"model": "qwen3"}), None).await;
        assert_eq!(status, 200, "{text}");
        let (status, _, text) = post(&show, &json!({"model": "mistral"}), None).await;
        assert_eq!(
            (status, text.as_str()),
            (404, r#"{"error":"model 'mistral' not found"}"#)
        );
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        // Embeddings are not served yet: a call is an unserved route, named, never a clean run.
        let embed = format!("{}/api/embed", server.url());
        let (status, _, text) = post(&embed, &json!({"model": "qwen3", "input": "a"}), None).await;
        assert_eq!(status, 404, "{text}");
        let problems = server.problems();
        assert!(
            matches!(problems.as_slice(), [Problem::UnservedRoute { path, .. }] if path == "/api/embed"),
            "{problems:?}"
        );
        server.stop().await.expect("stop");
    });
}

/// One NDJSON line of a scripted Ollama answer.
fn line(message: Value, done: bool) -> String {
    let mut line = json!({"model": "llama3.2", "created_at": "2026-01-01T00:00:00.1Z",
                          "message": message, "done": done});
    if done {
        line["done_reason"] = json!("stop");
        line["prompt_eval_count"] = json!(12);
        line["eval_count"] = json!(4);
        line["total_duration"] = json!(1_000_000);
    }
    format!("{line}\n")
}

/// A tool loop as an Ollama server answers it: a streamed call of `write_file`, then a
/// streamed text in two lines.
fn scripted_loop() -> Vec<(Value, String)> {
    let args = json!({"path": "/tmp/note.txt", "content": "hi"});
    let first = json!({"model": "llama3.2", "messages": [
        {"role": "user", "content": "Write hi"}]});
    let second = json!({"model": "llama3.2", "messages": [
        {"role": "user", "content": "Write hi"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"function": {"name": "write_file", "arguments": args}}]},
        {"role": "tool", "content": "OK", "tool_name": "write_file"}]});
    vec![
        (
            first,
            [
                line(
                    json!({"role": "assistant", "content": "", "tool_calls": [
                    {"function": {"index": 0, "name": "write_file", "arguments": args}}]}),
                    false,
                ),
                line(json!({"role": "assistant", "content": ""}), true),
            ]
            .concat(),
        ),
        (
            second,
            [
                line(json!({"role": "assistant", "content": "Wrote "}), false),
                line(json!({"role": "assistant", "content": "it."}), false),
                line(json!({"role": "assistant", "content": ""}), true),
            ]
            .concat(),
        ),
    ]
}

/// A tool loop recorded through the proxy in front of a scripted Ollama server: the gateway
/// gets the upstream's lines as they came (NDJSON), the recording names the wire per call
/// (`ollama.chat`), and the fixture built from it replays the loop, as does the recording
/// strictly; a drifted request is a strict mismatch naming the field in Ollama's terms.
#[test]
fn a_tool_loop_recorded_through_the_proxy_at_ollama_replays_from_its_fixture_and_strictly() {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let script = scripted_loop();
    bounded(async {
        let folder = tempfile::tempdir().expect("tempdir");
        let upstream = MockServer::start().await;
        for (_, answer) in &script {
            Mock::given(method("POST"))
                .and(path("/api/chat"))
                .respond_with(
                    ResponseTemplate::new(200).set_body_raw(answer.clone(), "application/x-ndjson"),
                )
                .up_to_n_times(1)
                .mount(&upstream)
                .await;
        }
        let recording = folder.path().join("loop.jsonl");
        let proxy = ModelServer::start(
            Mode::Record(Box::new(RecordConfig {
                upstream: upstream.uri(),
                api_key: "ollama-local".into(),
                recording: recording.clone(),
                scenario: replay_core::Scenario::new(
                    "loop",
                    replay_core::UiMode::Flash,
                    "Write hi",
                ),
                allow_insecure_upstream: false,
                limits: Default::default(),
                aws: None,
            })),
            ServerOptions::default(),
        )
        .await
        .expect("proxy");
        let answers = |base: String| {
            let script = script.clone();
            async move {
                let mut got = Vec::new();
                for (request, _) in &script {
                    let (status, kind, text) =
                        post(&format!("{base}/api/chat"), request, None).await;
                    assert_eq!(status, 200, "{text}");
                    assert_eq!(kind, "application/x-ndjson");
                    let answer = read(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
                    got.push(seen(&answer.text, &answer.reasoning, &pairs(&answer.calls)));
                }
                got
            }
        };
        let wanted = vec![
            seen(
                "",
                "",
                &[(
                    "write_file".into(),
                    r#"{"path":"/tmp/note.txt","content":"hi"}"#.into(),
                )],
            ),
            seen("Wrote it.", "", &[]),
        ];
        assert_eq!(answers(proxy.url()).await, wanted, "through the proxy");
        let built = proxy.stop().await.expect("stops").expect("a fixture");
        assert_eq!(built.fixture.turns.len(), 2);
        let text = std::fs::read_to_string(&recording).expect("recording");
        let apis: Vec<String> = text
            .lines()
            .filter_map(|row| serde_json::from_str::<Value>(row).ok())
            .filter_map(|row| row["model"]["api"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(apis, ["ollama.chat", "ollama.chat"]);

        let fixture_path = folder.path().join("loop.flash.json");
        std::fs::write(&fixture_path, built.fixture.to_pretty_json()).expect("fixture");
        let replay =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("fixture replay");
        assert_eq!(answers(replay.url()).await, wanted, "from the fixture");
        let strict = ModelServer::start(Mode::Recording(recording), ServerOptions::default())
            .await
            .expect("strict replay");
        assert_eq!(answers(strict.url()).await, wanted, "replayed strictly");
        for (server, how) in [(&replay, "the fixture"), (&strict, "strict replay")] {
            let problems = server.problems();
            assert!(problems.is_empty(), "{how}: {problems:?}");
        }
        let mut drifted = script[0].0.clone();
        drifted["messages"][0]["content"] = json!("Write bye");
        assert_eq!(reset(&strict).await, 200);
        let (status, _, text) = post(&format!("{}/api/chat", strict.url()), &drifted, None).await;
        assert_ne!(status, 200, "{text}");
        let problems = strict.problems();
        let shown = format!("{problems:?}");
        assert!(shown.contains("context.messages[0].content"), "{shown}");
        replay.stop().await.expect("stop");
        strict.stop().await.expect("stop");
    });
}

/// The Python with the official clients and LangChain installed (`WIRE_SDK_PYTHON`, which
/// `.ci/run` sets to its venv's); `None`, with a notice, when it is not set, except under `CI`,
/// where it is a failure.
fn sdk_python() -> Option<String> {
    match std::env::var("WIRE_SDK_PYTHON") {
        Ok(python) => Some(python),
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set WIRE_SDK_PYTHON to a Python with ollama and langchain-ollama installed (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set WIRE_SDK_PYTHON to run the official ollama client and ChatOllama (.ci/run does)"
            );
            None
        }
    }
}

/// Runs `sdk/check_ollama.py` with `args`; its one JSON line.
async fn check_ollama(python: String, args: Vec<String>, reset_token: &str) -> Value {
    let script = format!(
        "{}/harness/tests/sdk/check_ollama.py",
        env!("CARGO_MANIFEST_DIR")
    );
    let reset_token = reset_token.to_owned();
    let output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args(args)
            .env("KEYLESS_RESET_TOKEN", reset_token)
            .output()
    })
    .await
    .expect("join")
    .expect("the check's Python starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "check_ollama.py failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).expect("one JSON line")
}

/// Issue 41, items 3 and 5: the official `ollama` client (`chat`, `stream=False` and `True`,
/// after `list()` and `show()`) and LangChain's `ChatOllama` (`invoke` and `stream`, with
/// `validate_model_on_init`) drive a tool loop to the lead-agent turns of
/// `write_read_file.flash`, in order, with no problem: from the fixture, through the recording
/// proxy in front of it, and from that recording strictly.
#[test]
fn the_ollama_client_and_chat_ollama_drive_a_tool_loop_to_the_recorded_answers() {
    let Some(python) = sdk_python() else {
        return;
    };
    let fixture_path = fixtures_dir().join("write_read_file.flash.json");
    let fixture = Fixture::load(&fixture_path).expect("fixture");
    let lead: Vec<&replay_core::Turn> = fixture
        .turns
        .iter()
        .filter(|turn| turn.caller.as_deref() == Some("lead_agent"))
        .collect();
    let first: Vec<Value> =
        serde_json::from_str(lead[0].canonical.as_deref().expect("canonical")).expect("entries");
    let prompt = first[0]["content"].as_str().expect("the prompt").to_owned();
    let wanted: Vec<Value> = lead
        .iter()
        .map(|turn| {
            let Recorded::Output(output) = &turn.answer else {
                panic!("a lead-agent turn that failed")
            };
            let answer = Answer::from_ai_message(output);
            let mut got = seen(
                &answer.text,
                answer.reasoning.as_deref().unwrap_or_default(),
                &pairs(&answer.calls),
            );
            got["thinking"] = got["reasoning"].take();
            got.as_object_mut().map(|fields| fields.remove("reasoning"));
            got
        })
        .collect();
    assert!(
        wanted.len() >= 3,
        "a loop with two tool calls and an answer"
    );
    // The client's two runs, then ChatOllama's two.
    let all_runs = Value::Array(vec![Value::Array(wanted.clone()); 4]);
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        let token = server.reset_token().to_owned();
        let run = |url: String, reset: String| {
            check_ollama(python.clone(), vec![url, prompt.clone(), reset], &token)
        };
        assert_eq!(
            run(server.url(), server.url()).await,
            all_runs,
            "from the fixture"
        );

        let folder = tempfile::tempdir().expect("tempdir");
        let recording = folder.path().join("ollama.jsonl");
        let proxy = ModelServer::start(
            Mode::Record(Box::new(RecordConfig {
                upstream: server.url(),
                api_key: "ollama-local".into(),
                recording: recording.clone(),
                scenario: fixture.scenario.clone(),
                allow_insecure_upstream: false,
                limits: Default::default(),
                aws: None,
            })),
            ServerOptions::default(),
        )
        .await
        .expect("proxy");
        assert_eq!(
            run(proxy.url(), server.url()).await,
            all_runs,
            "through the proxy"
        );
        let built = proxy.stop().await.expect("stops").expect("a fixture");
        assert_eq!(built.fixture.turns.len(), 4 * wanted.len());
        let strict = ModelServer::start(Mode::Recording(recording), ServerOptions::default())
            .await
            .expect("strict replay");
        assert_eq!(
            run(strict.url(), "none".into()).await,
            all_runs,
            "replayed strictly"
        );
        for (server, how) in [(&server, "the fixture"), (&strict, "strict replay")] {
            let problems = server.problems();
            assert!(problems.is_empty(), "{how}: {problems:?}");
        }
        strict.stop().await.expect("stop");
        server.stop().await.expect("stop");
    });
}
