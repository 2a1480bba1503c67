//! The model server's Anthropic Messages and OpenAI Responses wires in fixture replay
//! (`docs/replay-and-fixtures.md` §11.1): every turn of every shipped fixture, sent as each wire
//! carries its conversation (names dropped where the wire has none, as LangChain's conversions
//! drop them), hits its recorded turn with no problem, and the answer, read back with that
//! wire's codec, streamed and whole, is the recorded message. A drifted conversation is a miss
//! in the wire's error shape whose report names the name-free key tried. And the official
//! `anthropic` and `openai` Python clients (`sdk/check_wire_sdks.py`) assemble the recorded
//! answers from these wires' streams.

use std::path::PathBuf;
use std::time::Duration;

use harness::golden::fixtures_dir;
use harness::layer1::runtime;
use harness::model_server::{CALLER_HEADER, Mode, ModelServer, Problem, ServerOptions};
use model_wire::chat_completions::{Answer, Assembled, ChunkAssembler, parse_completion};
use model_wire::{anthropic_messages, responses};
use replay_core::{Answer as Recorded, Fixture};
use serde_json::{Value, json};

const BOUND: Duration = Duration::from_secs(240);

fn bounded<T>(work: impl Future<Output = T>) -> T {
    runtime()
        .expect("runtime")
        .block_on(async { tokio::time::timeout(BOUND, work).await })
        .unwrap_or_else(|_| panic!("the test did not finish within {BOUND:?}"))
}

/// The shipped fixtures, listed as every command lists a fixture folder.
fn shipped_fixtures() -> Vec<PathBuf> {
    let files = keyless_runner::suite::fixture_files(&fixtures_dir()).expect("fixtures/");
    assert!(!files.is_empty(), "no shipped fixtures");
    files
}

/// The three wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    ChatCompletions,
    Anthropic,
    Responses,
}

const WIRES: [Wire; 3] = [Wire::ChatCompletions, Wire::Anthropic, Wire::Responses];

/// A turn's stored canonical entries as the wire's request body: call ids numbered in order, a
/// tool result answering the earliest unanswered call.
fn request(wire: Wire, canonical: &str, stream: bool) -> Value {
    let entries: Vec<Value> = serde_json::from_str(canonical).expect("canonical entries");
    let mut ids = std::collections::VecDeque::new();
    let mut next = 0;
    let mut items: Vec<Value> = Vec::new();
    for entry in entries {
        let content = entry["content"].as_str().unwrap_or_default().to_owned();
        let calls: Vec<(String, String, Value)> = entry["tool_calls"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .into_iter()
            .map(|call| {
                next += 1;
                let id = format!("call_{next}");
                ids.push_back(id.clone());
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                (id, name, call["args"].clone())
            })
            .collect();
        match (entry["type"].as_str().unwrap_or_default(), wire) {
            ("human", Wire::ChatCompletions) => {
                let mut message = json!({"role": "user", "content": content});
                if let Some(name) = entry.get("name") {
                    message["name"] = name.clone();
                }
                items.push(message);
            }
            ("human", Wire::Anthropic | Wire::Responses) => {
                items.push(json!({"role": "user", "content": content}));
            }
            ("ai", Wire::ChatCompletions) => items.push(json!({"role": "assistant",
                "content": if content.is_empty() { Value::Null } else { json!(content) },
                "tool_calls": calls.iter().map(|(id, name, args)| json!({"id": id,
                    "type": "function", "function": {"name": name, "arguments": args.to_string()}}))
                    .collect::<Vec<_>>()})),
            ("ai", Wire::Anthropic) => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({"type": "text", "text": content}));
                }
                for (id, name, args) in &calls {
                    blocks.push(json!({"type": "tool_use", "id": id, "name": name, "input": args}));
                }
                items.push(json!({"role": "assistant", "content": blocks}));
            }
            ("ai", Wire::Responses) => {
                if !content.is_empty() {
                    items.push(json!({"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": content, "annotations": []}]}));
                }
                for (id, name, args) in &calls {
                    items.push(json!({"type": "function_call", "call_id": id, "name": name,
                                      "arguments": args.to_string()}));
                }
            }
            ("tool", wire) => {
                let id = ids.pop_front().unwrap_or_default();
                items.push(match wire {
                    Wire::ChatCompletions => {
                        json!({"role": "tool", "tool_call_id": id, "content": content})
                    }
                    Wire::Anthropic => json!({"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": id, "content": content}]}),
                    Wire::Responses => {
                        json!({"type": "function_call_output", "call_id": id, "output": content})
                    }
                });
            }
            (other, _) => panic!("unexpected canonical entry type {other:?}"),
        }
    }
    match wire {
        Wire::ChatCompletions => {
            items.insert(0, json!({"role": "system", "content": "sys"}));
            json!({"model": "m", "stream": stream, "messages": items})
        }
        Wire::Anthropic => json!({"model": "m", "stream": stream, "max_tokens": 1024,
                                  "system": "sys", "messages": items}),
        Wire::Responses => json!({"model": "m", "stream": stream, "instructions": "sys",
                                  "input": items}),
    }
}

fn path(wire: Wire) -> &'static str {
    match wire {
        Wire::ChatCompletions => "/v1/chat/completions",
        Wire::Anthropic => "/v1/messages",
        Wire::Responses => "/v1/responses",
    }
}

/// The `data:` payloads of an SSE body.
fn data_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect()
}

/// The answer the wire's codec reads from a body.
fn read(wire: Wire, stream: bool, body: &str) -> Result<Assembled, String> {
    let error = |e: model_wire::chat_completions::WireError| e.to_string();
    if !stream {
        let body: Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
        return match wire {
            Wire::ChatCompletions => parse_completion(&body).map_err(error),
            Wire::Anthropic => anthropic_messages::parse_message(&body).map_err(error),
            Wire::Responses => responses::parse_response(&body).map_err(error),
        };
    }
    match wire {
        Wire::ChatCompletions => {
            let mut assembler = ChunkAssembler::new();
            for data in data_lines(body) {
                assembler.push_data(data).map_err(error)?;
            }
            assembler.finish().map(|(_, answer)| answer).map_err(error)
        }
        Wire::Anthropic => {
            let mut assembler = anthropic_messages::StreamAssembler::new();
            for data in data_lines(body) {
                assembler.push_data(data).map_err(error)?;
            }
            assembler.finish().map_err(error)
        }
        Wire::Responses => {
            let mut assembler = responses::StreamAssembler::new();
            for data in data_lines(body) {
                assembler.push_data(data).map_err(error)?;
            }
            assembler.finish().map_err(error)
        }
    }
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

async fn post(url: &str, body: &Value, caller: Option<&str>) -> (u16, String) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let mut request = client.post(url).json(body);
    if let Some(caller) = caller {
        request = request.header(CALLER_HEADER, caller);
    }
    let response = request.send().await.expect("answer");
    (
        response.status().as_u16(),
        response.text().await.expect("body"),
    )
}

#[test]
fn every_shipped_turn_replays_at_every_wire_as_its_recorded_answer() {
    bounded(async {
        for fixture_path in shipped_fixtures() {
            let fixture = Fixture::load(&fixture_path).expect("fixture");
            let name = fixture_path.display().to_string();
            let server = ModelServer::start(
                Mode::Fixtures(vec![fixture_path.clone()]),
                ServerOptions::default(),
            )
            .await
            .expect("model server");
            for wire in WIRES {
                for stream in [false, true] {
                    // Each pass replays the fixture afresh.
                    let (status, _) = post(
                        &format!("{}/_harness/reset", server.url()),
                        &json!({}),
                        None,
                    )
                    .await;
                    assert_eq!(status, 200, "reset");
                    for (index, turn) in fixture.turns.iter().enumerate() {
                        let how = format!("{name} turn {index} over {wire:?} (stream: {stream})");
                        let canonical = turn
                            .canonical
                            .as_deref()
                            .expect("shipped turns store canonical");
                        let body = request(wire, canonical, stream);
                        let url = format!("{}{}", server.url(), path(wire));
                        let (status, text) = post(&url, &body, turn.caller.as_deref()).await;
                        match &turn.answer {
                            Recorded::Output(output) => {
                                assert_eq!(status, 200, "{how}: {text}");
                                let got = read(wire, stream, &text)
                                    .unwrap_or_else(|e| panic!("{how}: {e}\n{text}"));
                                let want = Answer::from_ai_message(output);
                                let calls = |calls: &[model_wire::chat_completions::AssembledCall]| -> Vec<(String, String)> {
                                    calls.iter().map(|c| (c.name.clone(), c.arguments.clone())).collect()
                                };
                                assert_eq!(
                                    seen(&got.text, &got.reasoning, &calls(&got.calls)),
                                    seen(
                                        &want.text,
                                        want.reasoning.as_deref().unwrap_or_default(),
                                        &calls(&want.calls)
                                    ),
                                    "{how}"
                                );
                                let want_ids: Vec<&str> =
                                    want.calls.iter().map(|c| c.id.as_str()).collect();
                                let got_ids: Vec<&str> =
                                    got.calls.iter().map(|c| c.id.as_str()).collect();
                                assert_eq!(got_ids, want_ids, "{how}: the recorded call ids");
                            }
                            Recorded::Error(recorded) => {
                                let want = recorded.status.filter(|_| !recorded.in_stream);
                                if let Some(status_recorded) = want {
                                    assert_eq!(status, status_recorded, "{how}: {text}");
                                }
                                assert!(
                                    read(wire, stream, &text).is_err(),
                                    "{how}: a failure reads as one: {text}"
                                );
                            }
                        }
                    }
                    let problems = server.problems();
                    assert!(problems.is_empty(), "{name} over {wire:?}: {problems:?}");
                }
            }
            server.stop().await.expect("stop");
        }
    });
}

#[test]
fn a_drifted_conversation_misses_in_the_wire_s_error_shape_naming_the_name_free_key() {
    let fixture_path = fixtures_dir().join("write_read_file.flash.json");
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        let cases = [
            (
                Wire::Anthropic,
                json!({"model": "m", "max_tokens": 8,
                "messages": [{"role": "user", "content": "something never recorded"}]}),
            ),
            (
                Wire::Responses,
                json!({"model": "m", "input": "something never recorded"}),
            ),
        ];
        for (wire, body) in cases {
            let (status, text) =
                post(&format!("{}{}", server.url(), path(wire)), &body, None).await;
            assert_eq!(status, 400, "{wire:?}: {text}");
            let body: Value = serde_json::from_str(&text).expect("an error body");
            let message = match wire {
                Wire::Anthropic => {
                    assert_eq!(body["type"], "error", "{text}");
                    assert_eq!(body["error"]["type"], "invalid_request_error", "{text}");
                    body["error"]["message"].as_str()
                }
                _ => {
                    assert_eq!(body["error"]["code"], "replay_miss", "{text}");
                    body["error"]["message"].as_str()
                }
            }
            .unwrap_or_default()
            .to_owned();
            assert!(message.contains("name-free key"), "{wire:?}: {message}");
            let problems = server.problems();
            assert!(
                matches!(problems.last(), Some(Problem::Miss { message: m, .. }) if *m == message),
                "{wire:?}: {problems:?}"
            );
        }
        server.stop().await.expect("stop");
    });
}

/// Real clients nobody here wrote: the official `anthropic` package's `messages.stream(...)` and
/// the `openai` package's `responses.create(stream=True)` replay every turn of a shipped fixture
/// with tool calls, and assemble its recorded text and tool calls. `.ci/run` installs both in its
/// venv and points `WIRE_SDK_PYTHON` at its interpreter; without it the check is skipped with a
/// notice, except under `CI`, where it is a failure.
#[test]
fn the_official_anthropic_and_openai_clients_assemble_the_recorded_answers() {
    let python = match std::env::var("WIRE_SDK_PYTHON") {
        Ok(python) => python,
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set WIRE_SDK_PYTHON to a Python with anthropic and openai installed (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set WIRE_SDK_PYTHON to run the official anthropic and openai clients (.ci/run does)"
            );
            return;
        }
    };
    let fixture_path = fixtures_dir().join("write_read_file.flash.json");
    let fixture = Fixture::load(&fixture_path).expect("fixture");
    let folder = tempfile::tempdir().expect("tempdir");
    let mut jobs = Vec::new();
    let mut wanted = Vec::new();
    for (wire, name) in [
        (Wire::Anthropic, "anthropic"),
        (Wire::Responses, "responses"),
    ] {
        jobs.push(json!({"wire": "reset"}));
        for turn in &fixture.turns {
            let Recorded::Output(output) = &turn.answer else {
                continue;
            };
            let mut body = request(wire, turn.canonical.as_deref().expect("canonical"), false);
            if let Some(fields) = body.as_object_mut() {
                fields.remove("stream");
            }
            jobs.push(json!({"wire": name, "caller": turn.caller, "body": body}));
            let answer = Answer::from_ai_message(output);
            let calls: Vec<Value> = answer
                .calls
                .iter()
                .map(|c| json!({"name": c.name, "args": serde_json::from_str::<Value>(&c.arguments).unwrap_or(json!({})), "id": c.id}))
                .collect();
            wanted.push(json!({"text": answer.text, "reasoning": answer.reasoning.unwrap_or_default(), "calls": calls}));
        }
    }
    assert!(
        wanted
            .iter()
            .any(|w| w["calls"].as_array().is_some_and(|c| !c.is_empty())),
        "the fixture has tool calls"
    );
    let jobs_path = folder.path().join("jobs.json");
    std::fs::write(&jobs_path, Value::Array(jobs).to_string()).expect("write the jobs");
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/harness/tests/sdk/check_wire_sdks.py"
        );
        let url = server.url();
        let output = tokio::task::spawn_blocking(move || {
            std::process::Command::new(python)
                .arg(script)
                .arg(url)
                .arg(jobs_path)
                .output()
        })
        .await
        .expect("join")
        .expect("the SDK check's Python starts");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "SDK check failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
            output.status
        );
        let got: Value = serde_json::from_str(stdout.trim()).expect("one JSON line");
        assert_eq!(got, Value::Array(wanted));
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        server.stop().await.expect("stop");
    });
}

/// A fixture `extra.flash.json` whose turns answer `think` with reasoning and text and `fail`
/// with a failure the provider reported inside its answer.
fn reasoning_and_in_stream_failure_fixture(folder: &std::path::Path) -> PathBuf {
    let key = |text: &str| {
        replay_core::replay_key("lead_agent", &[json!({"type": "human", "content": text})])
    };
    let (think, fail) = (key("think"), key("fail"));
    let fixture = json!({"scenario": "extra", "mode": "flash", "turns": [
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

#[test]
fn recorded_reasoning_and_an_in_stream_failure_keep_their_form_at_each_wire() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture_path = reasoning_and_in_stream_failure_fixture(folder.path());
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        for wire in [Wire::Anthropic, Wire::Responses] {
            for stream in [true, false] {
                let (status, _) = post(
                    &format!("{}/_harness/reset", server.url()),
                    &json!({}),
                    None,
                )
                .await;
                assert_eq!(status, 200, "reset");
                let how = format!("{wire:?} (stream: {stream})");
                let url = format!("{}{}", server.url(), path(wire));
                let think = request(wire, r#"[{"content": "think", "type": "human"}]"#, stream);
                let (status, text) = post(&url, &think, None).await;
                assert_eq!(status, 200, "{how}: {text}");
                let got = read(wire, stream, &text).unwrap_or_else(|e| panic!("{how}: {e}"));
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
                let fail = request(wire, r#"[{"content": "fail", "type": "human"}]"#, stream);
                let (status, text) = post(&url, &fail, None).await;
                // Inside a 200 answer: an `error` event on a stream, an error body otherwise.
                assert_eq!(status, 200, "{how}: {text}");
                let error = read(wire, stream, &text).expect_err(&how);
                assert_eq!(error, "the provider broke down", "{how}: {text}");
                if stream {
                    assert!(text.contains("event: error\n"), "{how}: {text}");
                }
            }
            let (status, _) = post(
                &format!("{}/_harness/reset", server.url()),
                &json!({}),
                None,
            )
            .await;
            assert_eq!(status, 200);
        }
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        server.stop().await.expect("stop");
    });
}
