//! The model server's Anthropic Messages and OpenAI Responses wires in fixture replay
//! (`docs/replay-and-fixtures.md` §11.1): every turn of every shipped fixture, sent as each wire
//! carries its conversation (names dropped where the wire has none, as LangChain's conversions
//! drop them), hits its recorded turn with no problem, and the answer, read back with that
//! wire's codec, streamed and whole, is the recorded message. A drifted conversation is a miss
//! in the wire's error shape whose report names the name-free key tried. A tool loop recorded
//! through the proxy at each of these wires, against a scripted upstream answering in the wire's
//! own format, replays from its fixture and strictly, and a drifted request is a strict mismatch
//! naming the field in the wire's terms. The official `anthropic` and `openai` Python clients
//! (`sdk/check_wire_sdks.py`) assemble the recorded answers from these wires' streams, and
//! LangChain's chat models (`sdk/check_langchain_tool_loop.py`) drive a tool loop of their own
//! to them, from the fixture, through the proxy and from the recording.

use std::path::PathBuf;
use std::time::Duration;

use harness::workspace::fixtures_dir;
use keyless_runner::runtime;
use keyless_runner::{Mode, ModelServer, Problem, ServerOptions, server::CALLER_HEADER};
use model_wire::chat_completions::{Answer, Assembled, ChunkAssembler, parse_completion};
use model_wire::{anthropic_messages, bedrock_converse, gemini, responses};
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

/// The five wires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wire {
    ChatCompletions,
    Anthropic,
    Responses,
    Gemini,
    Converse,
}

const WIRES: [Wire; 5] = [
    Wire::ChatCompletions,
    Wire::Anthropic,
    Wire::Responses,
    Wire::Gemini,
    Wire::Converse,
];

/// A turn's stored canonical entries as the wire's request body: call ids numbered in order, a
/// tool result answering the earliest unanswered call.
fn request(wire: Wire, canonical: &str, stream: bool) -> Value {
    let entries: Vec<Value> = serde_json::from_str(canonical).expect("canonical entries");
    let mut ids = std::collections::VecDeque::new();
    let mut names = std::collections::HashMap::new();
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
                names.insert(id.clone(), name.clone());
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
            ("human", Wire::Gemini) => {
                items.push(json!({"role": "user", "parts": [{"text": content}]}));
            }
            ("human", Wire::Converse) => {
                items.push(json!({"role": "user", "content": [{"text": content}]}));
            }
            ("ai", Wire::Gemini) => {
                // No call ids: Gemini sends none, and a result is paired with its call by name.
                let mut parts = Vec::new();
                if !content.is_empty() {
                    parts.push(json!({"text": content}));
                }
                for (_, name, args) in &calls {
                    parts.push(json!({"functionCall": {"name": name, "args": args}}));
                }
                items.push(json!({"role": "model", "parts": parts}));
            }
            ("ai", Wire::Converse) => {
                let mut blocks = Vec::new();
                if !content.is_empty() {
                    blocks.push(json!({"text": content}));
                }
                for (id, name, args) in &calls {
                    blocks.push(json!({"toolUse": {"toolUseId": id, "name": name, "input": args}}));
                }
                items.push(json!({"role": "assistant", "content": blocks}));
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
                    Wire::Gemini => json!({"role": "user", "parts": [{"functionResponse": {
                        "name": names.get(&id).cloned().unwrap_or_default(),
                        "response": {"result": content}}}]}),
                    Wire::Converse => json!({"role": "user", "content": [{"toolResult": {
                        "toolUseId": id, "content": [{"text": content}]}}]}),
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
        // The model and the mode are in the path (`path_of`).
        Wire::Gemini => json!({"systemInstruction": {"parts": [{"text": "sys"}]},
                               "contents": items}),
        Wire::Converse => json!({"system": [{"text": "sys"}], "messages": items,
                                 "inferenceConfig": {"maxTokens": 1024}}),
    }
}

/// The route of a call at `wire`, streamed or not (Gemini's stream as SSE).
fn path_of(wire: Wire, stream: bool) -> &'static str {
    match (wire, stream) {
        (Wire::ChatCompletions, _) => "/v1/chat/completions",
        (Wire::Anthropic, _) => "/v1/messages",
        (Wire::Responses, _) => "/v1/responses",
        (Wire::Gemini, false) => "/v1beta/models/m:generateContent",
        (Wire::Gemini, true) => "/v1beta/models/m:streamGenerateContent?alt=sse",
        (Wire::Converse, false) => "/model/m/converse",
        (Wire::Converse, true) => "/model/m/converse-stream",
    }
}

/// The route of a call at a wire whose body says whether it streams.
fn path(wire: Wire) -> &'static str {
    path_of(wire, false)
}

/// An answer's body: its bytes (Bedrock's event stream is binary), and as text.
struct Reply {
    bytes: Vec<u8>,
    text: String,
}

impl Reply {
    fn new(bytes: Vec<u8>) -> Reply {
        let text = String::from_utf8_lossy(&bytes).into_owned();
        Reply { bytes, text }
    }
}

impl std::ops::Deref for Reply {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl AsRef<[u8]> for Reply {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

/// The event stream's messages, read with the AWS SDK's frame reader (CRCs checked): each
/// event's type and payload, an exception as its failure.
fn event_stream_messages(mut bytes: &[u8]) -> Result<Vec<(String, Value)>, String> {
    use aws_smithy_eventstream::frame::read_message_from;
    let mut messages = Vec::new();
    while !bytes.is_empty() {
        let message = read_message_from(&mut bytes).map_err(|e| e.to_string())?;
        let header = |name: &str| {
            message
                .headers()
                .iter()
                .find(|h| h.name().as_str() == name)
                .and_then(|h| h.value().as_string().ok())
                .map(|v| v.as_str().to_owned())
                .unwrap_or_default()
        };
        let payload: Value =
            serde_json::from_slice(message.payload()).map_err(|e| e.to_string())?;
        if header(":message-type") == "exception" {
            return Err(bedrock_converse::StreamAssembler::new()
                .push_exception(&header(":exception-type"), &payload)
                .to_string());
        }
        messages.push((header(":event-type"), payload));
    }
    Ok(messages)
}

/// The `data:` payloads of an SSE body.
fn data_lines(body: &str) -> Vec<&str> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .collect()
}

/// The answer a Converse event stream carries.
fn read_event_stream(bytes: &[u8]) -> Result<Assembled, String> {
    let mut assembler = bedrock_converse::StreamAssembler::new();
    for (name, payload) in event_stream_messages(bytes)? {
        assembler
            .push_event(&name, &payload)
            .map_err(|e| e.to_string())?;
    }
    assembler.finish().map_err(|e| e.to_string())
}

/// The answer the wire's codec reads from a body.
fn read(wire: Wire, stream: bool, body: impl AsRef<[u8]>) -> Result<Assembled, String> {
    let error = |e: model_wire::chat_completions::WireError| e.to_string();
    let bytes = body.as_ref();
    if wire == Wire::Converse && stream {
        return read_event_stream(bytes);
    }
    let body = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    if !stream {
        let body: Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
        return match wire {
            Wire::ChatCompletions => parse_completion(&body).map_err(error),
            Wire::Anthropic => anthropic_messages::parse_message(&body).map_err(error),
            Wire::Responses => responses::parse_response(&body).map_err(error),
            Wire::Gemini => gemini::parse_response(&body).map_err(error),
            Wire::Converse => bedrock_converse::parse_response(&body).map_err(error),
        };
    }
    match wire {
        Wire::Gemini => {
            let mut assembler = gemini::StreamAssembler::new();
            if body.trim_start().starts_with('[') {
                let mut splitter = gemini::JsonArraySplitter::new();
                for element in splitter.push(body.as_bytes()).map_err(|e| e.to_string())? {
                    assembler.push_data(&element).map_err(error)?;
                }
            } else {
                for data in data_lines(body) {
                    assembler.push_data(data).map_err(error)?;
                }
            }
            assembler.finish().map(|(_, answer)| answer).map_err(error)
        }
        Wire::Converse => read_event_stream(bytes),
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

/// The deltas a streamed body carries, as the wire's own stream reader reads them, piece by
/// piece: so two streams of the same answer compare by where their chunks were cut.
fn streamed_deltas(wire: Wire, body: &[u8]) -> Vec<model_wire::Event> {
    let codec = match wire {
        Wire::ChatCompletions => model_wire::Wire::ChatCompletions,
        Wire::Anthropic => model_wire::Wire::AnthropicMessages,
        Wire::Responses => model_wire::Wire::Responses,
        Wire::Gemini => model_wire::Wire::Gemini,
        Wire::Converse => model_wire::Wire::BedrockConverse,
    };
    let mut reader = codec.reader();
    let pieces: Vec<(String, String)> = if wire == Wire::Converse {
        event_stream_messages(body)
            .expect("an event stream")
            .into_iter()
            .map(|(name, payload)| (name, payload.to_string()))
            .collect()
    } else {
        String::from_utf8_lossy(body)
            .replace("\r\n", "\n")
            .split("\n\n")
            .filter_map(|frame| {
                let data = frame.lines().find_map(|line| line.strip_prefix("data: "))?;
                let name = frame
                    .lines()
                    .find_map(|line| line.strip_prefix("event: "))
                    .unwrap_or("message");
                Some((name.to_owned(), data.to_owned()))
            })
            .collect()
    };
    let mut deltas = Vec::new();
    for (name, data) in pieces {
        deltas.extend(reader.push(&name, &data).expect("a good stream"));
    }
    deltas.extend(reader.finish().expect("a good answer").0);
    deltas
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

/// `POST /_keyless/reset` with the server's reset token; its status.
async fn reset(server: &ModelServer) -> u16 {
    reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client")
        .post(format!("{}/_keyless/reset", server.url()))
        .header(
            keyless_runner::server::RESET_TOKEN_HEADER,
            server.reset_token(),
        )
        .json(&json!({}))
        .send()
        .await
        .expect("reset")
        .status()
        .as_u16()
}

async fn post(url: &str, body: &Value, caller: Option<&str>) -> (u16, Reply) {
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
        Reply::new(response.bytes().await.expect("body").to_vec()),
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
                    let status = reset(&server).await;
                    assert_eq!(status, 200, "reset");
                    for (index, turn) in fixture.turns.iter().enumerate() {
                        let how = format!("{name} turn {index} over {wire:?} (stream: {stream})");
                        let canonical = turn
                            .canonical
                            .as_deref()
                            .expect("shipped turns store canonical");
                        let body = request(wire, canonical, stream);
                        let url = format!("{}{}", server.url(), path_of(wire, stream));
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
            (
                Wire::Gemini,
                json!({"contents": [{"role": "user", "parts": [{"text": "something never recorded"}]}]}),
            ),
            (
                Wire::Converse,
                json!({"messages": [{"role": "user", "content": [{"text": "something never recorded"}]}]}),
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
                Wire::Gemini => {
                    assert_eq!(body["error"]["code"], 400, "{text}");
                    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{text}");
                    body["error"]["message"].as_str()
                }
                // Its exception is in the `x-amzn-errortype` header (`converse_error_shape`).
                Wire::Converse => body["message"].as_str(),
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

/// Real clients nobody here wrote: the official `anthropic` package's `messages.stream(...)`,
/// the `openai` package's `responses.create(stream=True)`, `google-genai`'s `generate_content`
/// and `generate_content_stream` (with function declarations) and `boto3`'s `converse` and
/// `converse_stream` (at the model server with dummy credentials; botocore checks every event
/// stream frame's CRCs) replay every turn of a shipped fixture with tool calls, and assemble its
/// recorded text, tool calls and ids. `.ci/run` installs them in its venv and points
/// `WIRE_SDK_PYTHON` at its interpreter; without it the check is skipped with a notice, except
/// under `CI`, where it is a failure.
#[test]
fn the_official_clients_assemble_the_recorded_answers_at_every_wire() {
    let Some(python) = sdk_python() else {
        return;
    };
    let fixture_path = fixtures_dir().join("write_read_file.flash.json");
    let fixture = Fixture::load(&fixture_path).expect("fixture");
    let folder = tempfile::tempdir().expect("tempdir");
    let mut jobs = Vec::new();
    let mut wanted = Vec::new();
    for (wire, name) in [
        (Wire::Anthropic, "anthropic"),
        (Wire::Responses, "responses"),
        (Wire::Gemini, "gemini"),
        (Wire::Gemini, "gemini_stream"),
        (Wire::Converse, "converse"),
        (Wire::Converse, "converse_stream"),
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
        let got = run_sdk_script(
            python,
            "check_wire_sdks.py",
            vec![server.url(), jobs_path.display().to_string()],
            server.reset_token(),
        )
        .await;
        assert_eq!(got, Value::Array(wanted));
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        server.stop().await.expect("stop");
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
                "CI must set WIRE_SDK_PYTHON to a Python with anthropic, openai, google-genai, boto3, langchain-anthropic, langchain-openai, langchain-google-genai and langchain-aws installed (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set WIRE_SDK_PYTHON to run the official anthropic, openai, google-genai, boto3 and LangChain clients (.ci/run does)"
            );
            None
        }
    }
}

/// Runs one of `harness/tests/sdk/`'s scripts with `args`; its one JSON line.
async fn run_sdk_script(
    python: String,
    script: &str,
    args: Vec<String>,
    reset_token: &str,
) -> Value {
    let script = format!("{}/harness/tests/sdk/{script}", env!("CARGO_MANIFEST_DIR"));
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
    .expect("the SDK check's Python starts");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "SDK check failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    serde_json::from_str(stdout.trim()).expect("one JSON line")
}

/// Issue 18, item 4, and issue 31: LangChain's `ChatAnthropic`,
/// `ChatOpenAI(use_responses_api=True)`, `ChatGoogleGenerativeAI` and `ChatBedrockConverse`
/// drive a tool loop of their own (`sdk/check_langchain_tool_loop.py`: the model bound to real
/// `write_file` and `read_file` tools over an in-memory store, each call executed and its
/// result appended, invoked and streamed) against the model server replaying
/// `write_read_file.flash`: every answer's text and tool calls (name, arguments, id) are the
/// fixture's lead-agent turns, in order, with no problem; and the same eight loops recorded
/// through the proxy (in front of that fixture) replay strictly with no mismatch.
#[test]
fn langchain_chat_models_drive_a_tool_loop_to_the_recorded_answers_at_each_wire() {
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
            let calls: Vec<Value> = answer
                .calls
                .iter()
                .map(|c| json!({"name": c.name, "args": serde_json::from_str::<Value>(&c.arguments).unwrap_or(json!({})), "id": c.id}))
                .collect();
            json!({"text": answer.text, "calls": calls})
        })
        .collect();
    assert!(
        wanted.len() >= 3,
        "a loop with two tool calls and an answer"
    );
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        // Each family's model, run with `invoke` and then with `stream`.
        let runs_of = |families: &str| -> Vec<String> {
            families
                .split(',')
                .flat_map(|family| [format!("{family}.invoke"), format!("{family}.stream")])
                .collect()
        };
        let check = |got: &Value, families: &str, how: &str| {
            let runs = runs_of(families);
            assert_eq!(
                got.as_array().map(Vec::len),
                Some(runs.len()),
                "{how}: {got}"
            );
            for (index, run) in runs.iter().enumerate() {
                assert_eq!(got[index], Value::Array(wanted.clone()), "{run} {how}");
            }
        };
        let loops = |url: String, reset: String, families: &str| {
            run_sdk_script(
                python.clone(),
                "check_langchain_tool_loop.py",
                vec![url, prompt.clone(), reset, families.to_owned()],
                server.reset_token(),
            )
        };
        let all = "anthropic,responses,gemini,bedrock";
        check(
            &loops(server.url(), server.url(), all).await,
            all,
            "from the fixture",
        );

        // Recorded through the proxy in front of the fixture, then replayed strictly: the
        // same answers, with no mismatch. Bedrock's routes are at the root of its upstream,
        // the others under `/v1`, so it has a proxy of its own; the proxy signs its calls
        // (SigV4) with dummy credentials, which the model server accepts.
        let folder = tempfile::tempdir().expect("tempdir");
        let mut strict_servers = Vec::new();
        for (families, upstream) in [
            ("anthropic,responses,gemini", server.base_url()),
            ("bedrock", server.url()),
        ] {
            let recording = folder.path().join(format!("{families}.jsonl"));
            let proxy = ModelServer::start(
                Mode::Record(Box::new(keyless_runner::server::RecordConfig {
                    upstream,
                    api_key: UPSTREAM_KEY.into(),
                    recording: recording.clone(),
                    scenario: fixture.scenario.clone(),
                    allow_insecure_upstream: false,
                    limits: Default::default(),
                    aws: Some(dummy_aws()),
                })),
                ServerOptions::default(),
            )
            .await
            .expect("proxy");
            check(
                &loops(proxy.url(), server.url(), families).await,
                families,
                "through the proxy",
            );
            let built = proxy.stop().await.expect("stops").expect("a fixture");
            assert_eq!(
                built.fixture.turns.len(),
                runs_of(families).len() * wanted.len(),
                "{families}"
            );
            let strict = ModelServer::start(Mode::Recording(recording), ServerOptions::default())
                .await
                .expect("strict replay");
            check(
                &loops(strict.url(), "none".into(), families).await,
                families,
                "replayed strictly",
            );
            strict_servers.push(strict);
        }
        let mut servers = vec![(&server, "the fixture")];
        servers.extend(
            strict_servers
                .iter()
                .map(|strict| (strict, "strict replay")),
        );
        for (server, how) in servers {
            let problems = server.problems();
            assert!(problems.is_empty(), "{how}: {problems:?}");
        }
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
        for wire in [
            Wire::Anthropic,
            Wire::Responses,
            Wire::Gemini,
            Wire::Converse,
        ] {
            for stream in [true, false] {
                let status = reset(&server).await;
                assert_eq!(status, 200, "reset");
                let how = format!("{wire:?} (stream: {stream})");
                let url = format!("{}{}", server.url(), path_of(wire, stream));
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
                match wire {
                    Wire::Anthropic | Wire::Responses if stream => {
                        assert!(text.contains("event: error\n"), "{how}: {text}");
                    }
                    Wire::Converse if stream => assert!(
                        text.contains("modelStreamErrorException"),
                        "{how}: an exception message"
                    ),
                    _ => {}
                }
            }
            let status = reset(&server).await;
            assert_eq!(status, 200);
        }
        let problems = server.problems();
        assert!(problems.is_empty(), "{problems:?}");
        server.stop().await.expect("stop");
    });
}

/// Gemini's other routes and framings give the same answer: `streamGenerateContent` without
/// `?alt=sse` is one JSON array, `/v1/` serves as `/v1beta/` does, any key in `?key=` or
/// `x-goog-api-key` (and any SigV4 signature at Converse) is accepted and never checked. A
/// model method no recording answers (`:countTokens`) is an unserved route; a Converse error
/// names its exception in `x-amzn-errortype`, as boto3 reads it.
#[test]
fn gemini_s_routes_and_framings_and_converse_s_error_header() {
    let folder = tempfile::tempdir().expect("tempdir");
    let fixture_path = reasoning_and_in_stream_failure_fixture(folder.path());
    bounded(async {
        let server =
            ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                .await
                .expect("model server");
        let think = request(
            Wire::Gemini,
            r#"[{"content": "think", "type": "human"}]"#,
            true,
        );
        for (route, stream) in [
            (
                "/v1beta/models/m:streamGenerateContent?key=AIzaSyDUMMY",
                true,
            ),
            ("/v1/models/gemini-2.5-flash:streamGenerateContent", true),
            ("/v1/models/m:generateContent", false),
            ("/v1beta/models/m:streamGenerateContent?alt=sse&key=k", true),
        ] {
            // Each call replays the fixture afresh.
            let status = reset(&server).await;
            assert_eq!(status, 200, "reset");
            let client = reqwest::Client::builder()
                .no_proxy()
                .build()
                .expect("client");
            let response = client
                .post(format!("{}{route}", server.url()))
                .header("x-goog-api-key", "AIzaSyDUMMY-any")
                .json(&think)
                .send()
                .await
                .expect("answer");
            assert_eq!(response.status(), 200, "{route}");
            let body = response.text().await.expect("body");
            let got = read(Wire::Gemini, stream, &body).unwrap_or_else(|e| panic!("{route}: {e}"));
            assert_eq!(
                (got.text.as_str(), got.reasoning.as_str()),
                ("Yes.", "Let me think."),
                "{route}"
            );
            assert_eq!(
                body.trim_start().starts_with('['),
                stream && !route.contains("alt=sse"),
                "{route}: {body}"
            );
        }
        assert!(server.problems().is_empty(), "{:?}", server.problems());
        let (status, _) = post(
            &format!("{}/v1beta/models/m:countTokens", server.url()),
            &think,
            None,
        )
        .await;
        assert_eq!(status, 404);
        assert!(
            matches!(server.problems().last(), Some(Problem::UnservedRoute { path, .. }) if path == "/v1beta/models/m:countTokens"),
            "{:?}",
            server.problems()
        );
        let client = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client");
        let drifted = json!({"messages": [{"role": "user", "content": [{"text": "never"}]}]});
        let response = client
            .post(format!("{}/model/us.anthropic.claude-x-v2%3A0/converse", server.url()))
            .header("authorization", "AWS4-HMAC-SHA256 Credential=AKIDUMMY/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00")
            .json(&drifted)
            .send()
            .await
            .expect("answer");
        assert_eq!(response.status(), 400);
        assert_eq!(
            response
                .headers()
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok()),
            Some("ValidationException")
        );
        server.stop().await.expect("stop");
    });
}

/// Credentials the proxy signs Bedrock calls with (the model server checks no signature).
fn dummy_aws() -> keyless_runner::server::AwsCredentials {
    keyless_runner::server::AwsCredentials {
        access_key_id: "AKIDEXAMPLE".into(),
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".into(),
        session_token: Some("session-token-SECRET-123".into()),
        region: "us-east-1".into(),
    }
}

/// The key the recording proxy sends upstream; no recording or fixture may contain it.
const UPSTREAM_KEY: &str = "sk-ant-test-SECRETabcdefghijklmnop";

/// One call of a two-call tool loop recorded through the proxy: the request the client sends,
/// the upstream's literal answer (in that wire's own format, as its API reference shows it),
/// and what the client must read from the proxy and later from strict replay.
struct ScriptedCall {
    request: Value,
    /// The upstream's body: an SSE stream when the request streams, else a JSON answer.
    upstream: String,
    text: &'static str,
    calls: Vec<(&'static str, Value)>,
}

fn sse(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| {
            format!(
                "event: {}\ndata: {event}\n\n",
                event["type"].as_str().unwrap()
            )
        })
        .collect()
}

const ARGS_START: &str = "{\"path\": \"/mnt/user-data/outputs/a.txt\", \"con";
const ARGS_END: &str = "tent\": \"hi\"}";

fn written_args() -> Value {
    json!({"path": "/mnt/user-data/outputs/a.txt", "content": "hi"})
}

/// A tool loop at the Messages API: a streamed `tool_use` (arguments split mid-JSON, a `ping`
/// between events), then a whole text answer to its `tool_result`.
fn anthropic_script() -> Vec<ScriptedCall> {
    let tools = json!([{"name": "write_file", "description": "Write a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"},
                         "content": {"type": "string"}}}}]);
    let user = json!({"role": "user", "content": "Write hi to a.txt"});
    let first = json!({"model": "claude-test", "max_tokens": 1024, "stream": true,
        "system": "You are a helper. Today is 2026-05-17.", "tools": tools, "messages": [user]});
    let mut second = first.clone();
    second["stream"] = json!(false);
    second["messages"] = json!([user,
        {"role": "assistant", "content": [{"type": "text", "text": "Writing it."},
            {"type": "tool_use", "id": "toolu_01", "name": "write_file", "input": written_args()}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "OK"}]}]);
    let delta = |index: u64, delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    vec![
        ScriptedCall {
            request: first,
            upstream: sse(&[
                json!({"type": "message_start", "message": {"id": "msg_01", "type": "message",
                    "role": "assistant", "model": "claude-upstream", "content": [],
                    "stop_reason": null, "usage": {"input_tokens": 12, "output_tokens": 1}}}),
                json!({"type": "ping"}),
                json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                delta(0, json!({"type": "text_delta", "text": "Writing it."})),
                json!({"type": "content_block_stop", "index": 0}),
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use",
                    "id": "toolu_01", "name": "write_file", "input": {}}}),
                delta(1, json!({"type": "input_json_delta", "partial_json": ARGS_START})),
                delta(1, json!({"type": "input_json_delta", "partial_json": ARGS_END})),
                json!({"type": "content_block_stop", "index": 1}),
                json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}}),
                json!({"type": "message_stop"}),
            ]),
            text: "Writing it.",
            calls: vec![("write_file", written_args())],
        },
        ScriptedCall {
            request: second,
            upstream: json!({"id": "msg_02", "type": "message", "role": "assistant",
                "model": "claude-upstream", "content": [{"type": "text", "text": "Done: a.txt holds hi."}],
                "stop_reason": "end_turn", "usage": {"input_tokens": 30, "output_tokens": 8}})
            .to_string(),
            text: "Done: a.txt holds hi.",
            calls: vec![],
        },
    ]
}

/// The same tool loop at the Responses API: a streamed `function_call` item, then a whole
/// response with an output message.
fn responses_script() -> Vec<ScriptedCall> {
    let tools = json!([{"type": "function", "name": "write_file", "description": "Write a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"},
                       "content": {"type": "string"}}}}]);
    let user = json!({"role": "user", "content": "Write hi to a.txt"});
    let first = json!({"model": "gpt-test", "stream": true, "instructions": "You are a helper.",
        "tools": tools, "input": [user]});
    let arguments = format!("{ARGS_START}{ARGS_END}");
    let call = json!({"type": "function_call", "id": "fc_01", "call_id": "call_01",
        "name": "write_file", "arguments": arguments, "status": "completed"});
    let mut second = first.clone();
    second["stream"] = json!(false);
    second["input"] = json!([user, call,
        {"type": "function_call_output", "call_id": "call_01", "output": "OK"}]);
    let mut added = call.clone();
    added["arguments"] = json!("");
    added["status"] = json!("in_progress");
    let response = |status: &str, output: Value| {
        json!({"id": "resp_01", "object": "response",
        "status": status, "model": "gpt-upstream", "output": output,
        "usage": {"input_tokens": 12, "output_tokens": 20, "total_tokens": 32}})
    };
    let args_delta = |n: u64, delta: &str| {
        json!({"type": "response.function_call_arguments.delta",
        "sequence_number": n, "item_id": "fc_01", "output_index": 0, "delta": delta})
    };
    vec![
        ScriptedCall {
            request: first,
            upstream: sse(&[
                json!({"type": "response.created", "sequence_number": 0, "response": response("in_progress", json!([]))}),
                json!({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": added}),
                args_delta(2, ARGS_START),
                args_delta(3, ARGS_END),
                json!({"type": "response.function_call_arguments.done", "sequence_number": 4,
                    "item_id": "fc_01", "output_index": 0, "arguments": arguments}),
                json!({"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": call}),
                json!({"type": "response.completed", "sequence_number": 6, "response": response("completed", json!([call]))}),
            ]),
            text: "",
            calls: vec![("write_file", written_args())],
        },
        ScriptedCall {
            request: second,
            upstream: json!({"id": "resp_02", "object": "response", "status": "completed",
                "model": "gpt-upstream", "output": [{"id": "msg_02", "type": "message",
                "role": "assistant", "status": "completed", "content": [{"type": "output_text",
                "text": "Done: a.txt holds hi.", "annotations": []}]}],
                "usage": {"input_tokens": 30, "output_tokens": 8, "total_tokens": 38}})
            .to_string(),
            text: "Done: a.txt holds hi.",
            calls: vec![],
        },
    ]
}

/// Posts a call as a client of the wire would, with its own (dummy) credential and version
/// headers; the status and body.
async fn post_as_client(url: &str, body: &Value) -> (u16, String) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let response = client
        .post(url)
        .header("x-api-key", "gateway-dummy-key")
        .header("authorization", "Bearer gateway-dummy-key")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "tools-2024-05-16")
        .json(body)
        .send()
        .await
        .expect("answer");
    (
        response.status().as_u16(),
        response.text().await.expect("body"),
    )
}

/// What a client reads from an answer: text and calls (name, parsed arguments).
fn read_answer(wire: Wire, call: &ScriptedCall, status: u16, body: &str, how: &str) -> Value {
    assert_eq!(status, 200, "{how}: {body}");
    let stream = call.request["stream"] == json!(true);
    let got = read(wire, stream, body).unwrap_or_else(|e| panic!("{how}: {e}\n{body}"));
    let calls: Vec<Value> = got
        .calls
        .iter()
        .map(|c| {
            json!([
                c.name,
                serde_json::from_str::<Value>(&c.arguments).unwrap_or_default()
            ])
        })
        .collect();
    json!({"text": got.text, "calls": calls})
}

fn expected_answer(call: &ScriptedCall) -> Value {
    let calls: Vec<Value> = call.calls.iter().map(|(n, a)| json!([n, a])).collect();
    json!({"text": call.text, "calls": calls})
}

/// Sends each scripted call to `base`'s route for `wire` as a client would, and checks that
/// each answer reads as the call's scripted text and tool calls (`served` names the server in
/// the failure).
async fn assert_answers_as_scripted(base: &str, wire: Wire, script: &[ScriptedCall], served: &str) {
    let url = format!("{base}{}", path(wire));
    for (index, call) in script.iter().enumerate() {
        let how = format!("{wire:?} call {index} {served}");
        let (status, body) = post_as_client(&url, &call.request).await;
        assert_eq!(
            read_answer(wire, call, status, &body, &how),
            expected_answer(call),
            "{how}"
        );
        // While recording, the stream's opening says what the upstream's opening said: its
        // model, and at the Messages wire its input tokens.
        if call.request["stream"] == json!(true) && served == "through the proxy" {
            let opening: Value =
                serde_json::from_str(data_lines(&body)[0]).expect("the opening event");
            let (model, input_tokens) = match wire {
                Wire::Anthropic => (
                    &opening["message"]["model"],
                    &opening["message"]["usage"]["input_tokens"],
                ),
                _ => (&opening["response"]["model"], &json!(12)),
            };
            let upstream: Value = serde_json::from_str(data_lines(&call.upstream)[0]).unwrap();
            let said = &upstream["message"]["model"];
            let said = if said.is_null() {
                &upstream["response"]["model"]
            } else {
                said
            };
            assert_eq!(
                (model, input_tokens),
                (said, &json!(12)),
                "{how}: the opening"
            );
        }
        // Issue 38, item 3: a recorded stream keeps the upstream's chunk boundaries at every
        // wire (a fixture's turn holds the message, not its chunks).
        if call.request["stream"] == json!(true) && served != "from the built fixture" {
            assert_eq!(
                streamed_deltas(wire, body.as_bytes()),
                streamed_deltas(wire, call.upstream.as_bytes()),
                "{how}: the upstream's deltas"
            );
        }
    }
}

/// Issue 18, item 2: a tool loop recorded through the proxy at the Messages and the Responses
/// API (against a scripted upstream answering in the wire's own format) is written with the
/// wire named and the upstream's key nowhere, reaches the upstream with the proxy's key in the
/// wire's header and the client's version headers, builds a fixture that replays at that wire
/// with no miss, and replays strictly with no mismatch; a drifted request is a strict mismatch
/// in the wire's error shape naming the field, in the wire's own terms.
#[test]
fn a_tool_loop_recorded_through_the_proxy_at_each_wire_replays_strictly_and_drift_names_the_field()
{
    use wiremock::matchers::{method, path as route};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let cases = [
        (
            Wire::Anthropic,
            anthropic_script(),
            "x-api-key",
            UPSTREAM_KEY.to_owned(),
            "anthropic.messages",
            "context.messages[0].content",
            "max_tokens",
        ),
        (
            Wire::Responses,
            responses_script(),
            "authorization",
            format!("Bearer {UPSTREAM_KEY}"),
            "openai.responses",
            "context.input[0].content",
            "max_output_tokens",
        ),
    ];
    bounded(async {
        for (wire, script, key_header, key_value, api, drifted_field, option) in cases {
            let folder = tempfile::tempdir().expect("tempdir");
            let upstream = MockServer::start().await;
            for call in &script {
                let kind = if call.request["stream"] == json!(true) {
                    "text/event-stream"
                } else {
                    "application/json"
                };
                Mock::given(method("POST"))
                    .and(route(path(wire)))
                    .respond_with(
                        ResponseTemplate::new(200).set_body_raw(call.upstream.clone(), kind),
                    )
                    .up_to_n_times(1)
                    .mount(&upstream)
                    .await;
            }
            let recording = folder.path().join("loop.jsonl");
            let scenario =
                replay_core::Scenario::new("loop", replay_core::UiMode::Flash, "Write hi");
            let proxy = ModelServer::start(
                Mode::Record(Box::new(keyless_runner::server::RecordConfig {
                    upstream: format!("{}/v1", upstream.uri()),
                    api_key: UPSTREAM_KEY.into(),
                    recording: recording.clone(),
                    scenario,
                    allow_insecure_upstream: false,
                    limits: Default::default(),
                    aws: None,
                })),
                ServerOptions::default(),
            )
            .await
            .expect("proxy");
            assert_answers_as_scripted(&proxy.url(), wire, &script, "through the proxy").await;
            let sent = upstream.received_requests().await.expect("requests");
            assert_eq!(
                sent.len(),
                script.len(),
                "{wire:?}: one upstream call per call"
            );
            for request in &sent {
                let header = |name: &str| {
                    request
                        .headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                assert_eq!(
                    header(key_header),
                    Some(key_value.clone()),
                    "{wire:?}: the proxy's key"
                );
                assert_eq!(
                    header("anthropic-version").as_deref(),
                    Some("2023-06-01"),
                    "{wire:?}"
                );
                assert_eq!(
                    header("anthropic-beta").as_deref(),
                    Some("tools-2024-05-16"),
                    "{wire:?}"
                );
                let shown = format!("{:?}", request.headers);
                assert!(
                    !shown.contains("gateway-dummy-key"),
                    "{wire:?}: the client's key went upstream"
                );
            }
            let built = proxy.stop().await.expect("stops").expect("a fixture");
            let text = std::fs::read_to_string(&recording).expect("recording");
            let fixture_text = built.fixture.to_pretty_json();
            for written in [&text, &fixture_text] {
                assert!(
                    !written.contains("SECRET"),
                    "{wire:?}: the upstream key was written"
                );
            }
            let rows: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).expect("row"))
                .collect();
            let apis: Vec<&str> = rows
                .iter()
                .filter_map(|r| r["model"]["api"].as_str())
                .collect();
            assert_eq!(
                apis,
                vec![api; script.len()],
                "{wire:?}: the wire is named per call"
            );
            assert_eq!(built.fixture.turns.len(), script.len(), "{wire:?}");

            // The fixture built replays at the wire it was recorded at, with no miss.
            let fixture_path = folder.path().join("loop.flash.json");
            std::fs::write(&fixture_path, &fixture_text).expect("fixture");
            let replay =
                ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                    .await
                    .expect("fixture replay");
            assert_answers_as_scripted(&replay.url(), wire, &script, "from the built fixture")
                .await;
            assert!(
                replay.problems().is_empty(),
                "{wire:?}: {:?}",
                replay.problems()
            );

            // Strict replay: the same calls match; a drifted one is a mismatch naming the field.
            let strict =
                ModelServer::start(Mode::Recording(recording.clone()), ServerOptions::default())
                    .await
                    .expect("strict replay");
            assert_answers_as_scripted(&strict.url(), wire, &script, "replayed strictly").await;
            let url = format!("{}{}", strict.url(), path(wire));
            assert!(
                strict.problems().is_empty(),
                "{wire:?}: {:?}",
                strict.problems()
            );
            let option_field = format!("options.{option}");
            let drifts = [
                ("text", drifted_field, json!("Write bye to a.txt")),
                ("option", option_field.as_str(), json!(7)),
            ];
            for (what, field, value) in drifts {
                let status = reset(&strict).await;
                assert_eq!(status, 200, "reset");
                let mut drifted = script[0].request.clone();
                match what {
                    "text" => {
                        drifted[if wire == Wire::Anthropic {
                            "messages"
                        } else {
                            "input"
                        }][0]["content"] = value
                    }
                    _ => drifted[option] = value,
                }
                let (status, body) = post_as_client(&url, &drifted).await;
                let how = format!("{wire:?} drifted {what}");
                assert_eq!(status, 400, "{how}: {body}");
                let error: Value = serde_json::from_str(&body).expect("an error body");
                assert!(
                    error["error"]["message"]
                        .as_str()
                        .is_some_and(|m| m.contains(field)),
                    "{how}: {body}"
                );
                if wire == Wire::Anthropic {
                    assert_eq!(
                        error["type"], "error",
                        "{how}: Anthropic's error shape: {body}"
                    );
                }
                let problems = strict.problems();
                assert!(
                    matches!(problems.as_slice(), [Problem::Mismatch { field_path, call_index: 0, .. }] if field_path == field),
                    "{how}: {problems:?}"
                );
            }
        }
    });
}

/// One call of a tool loop at a wire whose path names the mode (Gemini, Converse): whether it
/// streams, its body, the upstream's literal answer and what the client must read.
struct PathCall {
    stream: bool,
    request: Value,
    upstream: Vec<u8>,
    content_type: &'static str,
    text: &'static str,
    calls: Vec<(&'static str, Value)>,
}

/// An AWS event stream message, framed with the SDK's writer (CRCs computed by it).
fn aws_frame(headers: &[(&'static str, &str)], payload: &Value) -> Vec<u8> {
    use aws_smithy_types::event_stream::{Header, HeaderValue, Message};
    let headers = headers
        .iter()
        .map(|(name, value)| Header::new(*name, HeaderValue::String(value.to_string().into())))
        .collect();
    let message = Message::new_from_parts(headers, payload.to_string().into_bytes());
    let mut buffer: Vec<u8> = Vec::new();
    aws_smithy_eventstream::frame::write_message_to(&message, &mut buffer).expect("a frame");
    buffer
}

fn converse_event(event_type: &str, payload: Value) -> Vec<u8> {
    aws_frame(
        &[
            (":event-type", event_type),
            (":content-type", "application/json"),
            (":message-type", "event"),
        ],
        &payload,
    )
}

/// A tool loop at Gemini's API: a streamed `functionCall` (SSE, usage on each chunk), then a
/// whole text answer to its `functionResponse`.
fn gemini_script() -> Vec<PathCall> {
    let tools = json!([{"functionDeclarations": [{"name": "write_file",
        "description": "Write a file.", "parametersJsonSchema": {"type": "object"}}]}]);
    let user = json!({"role": "user", "parts": [{"text": "Write hi to a.txt"}]});
    let first = json!({"systemInstruction": {"parts": [{"text": "You are a helper. Today is 2026-05-17."}]},
        "contents": [user], "tools": tools, "generationConfig": {"temperature": 0.2}});
    let mut second = first.clone();
    second["contents"] = json!([user,
        {"role": "model", "parts": [{"text": "Writing it."},
            {"functionCall": {"name": "write_file", "args": written_args()}, "thoughtSignature": "CiQB"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "write_file", "response": {"result": "OK"}}}]}]);
    let chunk = |parts: Value, finish: Option<&str>| {
        let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
        if let Some(finish) = finish {
            candidate["finishReason"] = json!(finish);
        }
        json!({"candidates": [candidate], "modelVersion": "gemini-upstream",
            "usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 5, "totalTokenCount": 17}})
    };
    let sse: String = [
        chunk(json!([{"text": "Writing "}]), None),
        chunk(json!([{"text": "it."}]), None),
        chunk(
            json!([{"functionCall": {"name": "write_file", "args": written_args()}, "thoughtSignature": "CiQB"}]),
            Some("STOP"),
        ),
    ]
    .iter()
    .map(|chunk| format!("data: {chunk}\r\n\r\n"))
    .collect();
    vec![
        PathCall {
            stream: true,
            request: first,
            upstream: sse.into_bytes(),
            content_type: "text/event-stream",
            text: "Writing it.",
            calls: vec![("write_file", written_args())],
        },
        PathCall {
            stream: false,
            request: second,
            upstream: chunk(json!([{"text": "Done: a.txt holds hi."}]), Some("STOP"))
                .to_string()
                .into_bytes(),
            content_type: "application/json",
            text: "Done: a.txt holds hi.",
            calls: vec![],
        },
    ]
}

/// The same tool loop at Bedrock's Converse API: a streamed `toolUse` (its input split mid-JSON,
/// AWS's binary event stream), then a whole text answer to its `toolResult`.
fn converse_script() -> Vec<PathCall> {
    let tool_config = json!({"tools": [{"toolSpec": {"name": "write_file",
        "description": "Write a file.", "inputSchema": {"json": {"type": "object"}}}}]});
    let user = json!({"role": "user", "content": [{"text": "Write hi to a.txt"}]});
    let first = json!({"messages": [user], "system": [{"text": "You are a helper."}],
        "inferenceConfig": {"maxTokens": 512}, "toolConfig": tool_config});
    let mut second = first.clone();
    second["messages"] = json!([user,
        {"role": "assistant", "content": [{"text": "Writing it."},
            {"toolUse": {"toolUseId": "tooluse_01", "name": "write_file", "input": written_args()}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_01", "content": [{"text": "OK"}]}}]}]);
    let delta = |index: u64, delta: Value| {
        converse_event(
            "contentBlockDelta",
            json!({"delta": delta, "contentBlockIndex": index}),
        )
    };
    let stream = [
        converse_event("messageStart", json!({"role": "assistant"})),
        delta(0, json!({"text": "Writing it."})),
        converse_event("contentBlockStop", json!({"contentBlockIndex": 0})),
        converse_event(
            "contentBlockStart",
            json!({"start": {"toolUse": {"toolUseId": "tooluse_01", "name": "write_file"}},
                   "contentBlockIndex": 1}),
        ),
        delta(1, json!({"toolUse": {"input": ARGS_START}})),
        delta(1, json!({"toolUse": {"input": ARGS_END}})),
        converse_event("contentBlockStop", json!({"contentBlockIndex": 1})),
        converse_event("messageStop", json!({"stopReason": "tool_use"})),
        converse_event(
            "metadata",
            json!({"usage": {"inputTokens": 12, "outputTokens": 20, "totalTokens": 32},
                   "metrics": {"latencyMs": 300}}),
        ),
    ]
    .concat();
    vec![
        PathCall {
            stream: true,
            request: first,
            upstream: stream,
            content_type: "application/vnd.amazon.eventstream",
            text: "Writing it.",
            calls: vec![("write_file", written_args())],
        },
        PathCall {
            stream: false,
            request: second,
            upstream: json!({"output": {"message": {"role": "assistant",
                "content": [{"text": "Done: a.txt holds hi."}]}}, "stopReason": "end_turn",
                "usage": {"inputTokens": 30, "outputTokens": 8, "totalTokens": 38},
                "metrics": {"latencyMs": 200}})
            .to_string()
            .into_bytes(),
            content_type: "application/json",
            text: "Done: a.txt holds hi.",
            calls: vec![],
        },
    ]
}

/// The client's route for a call: the model in the path (Bedrock's id with its `:`).
fn client_path(wire: Wire, stream: bool) -> &'static str {
    match (wire, stream) {
        (Wire::Gemini, false) => "/v1beta/models/gemini-test:generateContent",
        (Wire::Gemini, true) => "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        (Wire::Converse, false) => "/model/anthropic.claude-test-v1:0/converse",
        _ => "/model/anthropic.claude-test-v1:0/converse-stream",
    }
}

/// The upstream's route for a call, as the proxy must call it (the id's `:` encoded).
fn upstream_route(wire: Wire, stream: bool) -> &'static str {
    match (wire, stream) {
        (Wire::Gemini, false) => "/v1beta/models/gemini-test:generateContent",
        (Wire::Gemini, true) => "/v1beta/models/gemini-test:streamGenerateContent",
        (Wire::Converse, false) => "/model/anthropic.claude-test-v1%3A0/converse",
        _ => "/model/anthropic.claude-test-v1%3A0/converse-stream",
    }
}

/// Posts a call as a client of the wire would, with its own (dummy) key or signature.
async fn post_path_call(base: &str, wire: Wire, call: &PathCall, body: &Value) -> (u16, Reply) {
    let client = reqwest::Client::builder()
        .no_proxy()
        .build()
        .expect("client");
    let response = client
        .post(format!("{base}{}", client_path(wire, call.stream)))
        .header("x-goog-api-key", "gateway-dummy-key")
        .header(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=GATEWAYDUMMY/x, Signature=gateway-dummy-key",
        )
        .json(body)
        .send()
        .await
        .expect("answer");
    (
        response.status().as_u16(),
        Reply::new(response.bytes().await.expect("body").to_vec()),
    )
}

async fn assert_path_calls_as_scripted(base: &str, wire: Wire, script: &[PathCall], served: &str) {
    for (index, call) in script.iter().enumerate() {
        let how = format!("{wire:?} call {index} {served}");
        let (status, body) = post_path_call(base, wire, call, &call.request).await;
        assert_eq!(status, 200, "{how}: {body}");
        let got = read(wire, call.stream, &body).unwrap_or_else(|e| panic!("{how}: {e}"));
        let calls: Vec<Value> = got
            .calls
            .iter()
            .map(|c| {
                json!([
                    c.name,
                    serde_json::from_str::<Value>(&c.arguments).unwrap_or_default()
                ])
            })
            .collect();
        let want: Vec<Value> = call.calls.iter().map(|(n, a)| json!([n, a])).collect();
        assert_eq!(
            json!({"text": got.text, "calls": calls}),
            json!({"text": call.text, "calls": want}),
            "{how}"
        );
        if call.stream && served != "from the built fixture" {
            assert_eq!(
                streamed_deltas(wire, body.as_ref()),
                streamed_deltas(wire, &call.upstream),
                "{how}: the upstream's deltas"
            );
        }
    }
}

/// Issue 31, item 3: a tool loop recorded through the proxy at Gemini's and Bedrock's Converse
/// API (against a scripted upstream answering in the wire's own format: Gemini's SSE chunks,
/// Converse's binary event stream) reaches the upstream with the proxy's credential (Gemini's
/// key in `x-goog-api-key`; a SigV4 signature of the AWS credentials, the session token in
/// `x-amz-security-token`) and never the client's, is written with the wire named and no
/// credential anywhere, builds a fixture that replays with no miss, and replays strictly; a
/// drifted second request is a strict mismatch naming call 1 and the field in the wire's terms.
#[test]
fn a_tool_loop_recorded_through_the_proxy_at_gemini_and_converse_replays_strictly() {
    use wiremock::matchers::{method, path as route};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let cases = [
        (
            Wire::Gemini,
            gemini_script(),
            "/v1beta",
            "google.gemini",
            "context.contents[0].parts[0].text",
        ),
        (
            Wire::Converse,
            converse_script(),
            "",
            "aws.bedrock.converse",
            "context.messages[0].content[0].text",
        ),
    ];
    bounded(async {
        for (wire, script, prefix, api, drifted_field) in cases {
            let folder = tempfile::tempdir().expect("tempdir");
            let upstream = MockServer::start().await;
            for call in &script {
                Mock::given(method("POST"))
                    .and(route(upstream_route(wire, call.stream)))
                    .respond_with(
                        ResponseTemplate::new(200)
                            .set_body_raw(call.upstream.clone(), call.content_type),
                    )
                    .up_to_n_times(1)
                    .mount(&upstream)
                    .await;
            }
            let recording = folder.path().join("loop.jsonl");
            let proxy = ModelServer::start(
                Mode::Record(Box::new(keyless_runner::server::RecordConfig {
                    upstream: format!("{}{prefix}", upstream.uri()),
                    api_key: UPSTREAM_KEY.into(),
                    recording: recording.clone(),
                    scenario: replay_core::Scenario::new(
                        "loop",
                        replay_core::UiMode::Flash,
                        "Write hi",
                    ),
                    allow_insecure_upstream: false,
                    limits: Default::default(),
                    aws: Some(dummy_aws()),
                })),
                ServerOptions::default(),
            )
            .await
            .expect("proxy");
            assert_path_calls_as_scripted(&proxy.url(), wire, &script, "through the proxy").await;
            let sent = upstream.received_requests().await.expect("requests");
            assert_eq!(
                sent.len(),
                script.len(),
                "{wire:?}: one upstream call per call"
            );
            for (request, call) in sent.iter().zip(&script) {
                let header = |name: &str| {
                    request
                        .headers
                        .get(name)
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                };
                match wire {
                    Wire::Gemini => {
                        assert_eq!(header("x-goog-api-key").as_deref(), Some(UPSTREAM_KEY));
                        assert_eq!(
                            request.url.query() == Some("alt=sse"),
                            call.stream,
                            "{wire:?}: SSE asked for a stream"
                        );
                    }
                    _ => {
                        let signature = header("authorization").unwrap_or_default();
                        assert!(
                            signature.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
                                && signature.contains("/us-east-1/bedrock/aws4_request"),
                            "{signature}"
                        );
                        assert!(header("x-amz-date").is_some());
                        assert_eq!(
                            header("x-amz-security-token").as_deref(),
                            Some("session-token-SECRET-123")
                        );
                    }
                }
                let shown = format!("{:?}", request.headers);
                assert!(!shown.contains("gateway-dummy-key"), "{wire:?}: {shown}");
                let body: Value = serde_json::from_slice(&request.body).expect("JSON body");
                assert_eq!(body, call.request, "{wire:?}: the body as sent");
            }
            let built = proxy.stop().await.expect("stops").expect("a fixture");
            let text = std::fs::read_to_string(&recording).expect("recording");
            let fixture_text = built.fixture.to_pretty_json();
            for written in [&text, &fixture_text] {
                for secret in ["SECRET", "wJalrXUtnFEMI", "AKIDEXAMPLE"] {
                    assert!(!written.contains(secret), "{wire:?}: {secret} was written");
                }
            }
            let apis: Vec<String> = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).expect("row"))
                .filter_map(|r| r["model"]["api"].as_str().map(str::to_owned))
                .collect();
            assert_eq!(apis, vec![api; script.len()], "{wire:?}");

            let fixture_path = folder.path().join("loop.flash.json");
            std::fs::write(&fixture_path, &fixture_text).expect("fixture");
            let replay =
                ModelServer::start(Mode::Fixtures(vec![fixture_path]), ServerOptions::default())
                    .await
                    .expect("fixture replay");
            assert_path_calls_as_scripted(&replay.url(), wire, &script, "from the built fixture")
                .await;
            assert!(
                replay.problems().is_empty(),
                "{wire:?}: {:?}",
                replay.problems()
            );

            let strict =
                ModelServer::start(Mode::Recording(recording.clone()), ServerOptions::default())
                    .await
                    .expect("strict replay");
            assert_path_calls_as_scripted(&strict.url(), wire, &script, "replayed strictly").await;
            assert!(
                strict.problems().is_empty(),
                "{wire:?}: {:?}",
                strict.problems()
            );

            let status = reset(&strict).await;
            assert_eq!(status, 200, "reset");
            let (status, _) =
                post_path_call(&strict.url(), wire, &script[0], &script[0].request).await;
            assert_eq!(status, 200);
            let mut drifted = script[1].request.clone();
            match wire {
                Wire::Gemini => drifted["contents"][0]["parts"][0]["text"] = json!("Write bye"),
                _ => drifted["messages"][0]["content"][0]["text"] = json!("Write bye"),
            }
            let (status, body) = post_path_call(&strict.url(), wire, &script[1], &drifted).await;
            let how = format!("{wire:?} drifted");
            assert_eq!(status, 400, "{how}: {body}");
            let error: Value = serde_json::from_str(&body).expect("an error body");
            let message = match wire {
                Wire::Gemini => error["error"]["message"].as_str(),
                _ => error["message"].as_str(),
            }
            .unwrap_or_default();
            assert!(
                message.contains(drifted_field) && message.contains("call 1"),
                "{how}: {message}"
            );
            let problems = strict.problems();
            assert!(
                matches!(problems.as_slice(), [Problem::Mismatch { field_path, call_index: 1, .. }] if field_path == drifted_field),
                "{how}: {problems:?}"
            );
        }
    });
}

/// A Converse stream whose second frame is corrupt (a flipped payload byte: its message CRC no
/// longer matches) is refused by the recorder: the call is recorded as failed with an error
/// naming the frame, and the gateway's stream ends there.
#[test]
fn a_corrupt_event_stream_frame_from_the_upstream_is_refused_naming_the_frame() {
    use wiremock::matchers::method;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let script = converse_script();
    let first_frame = converse_event("messageStart", json!({"role": "assistant"})).len();
    let mut corrupt = script[0].upstream.clone();
    corrupt[first_frame + 20] ^= 0x01;
    bounded(async {
        let folder = tempfile::tempdir().expect("tempdir");
        let upstream = MockServer::start().await;
        Mock::given(method("POST"))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_raw(corrupt, "application/vnd.amazon.eventstream"),
            )
            .mount(&upstream)
            .await;
        let recording = folder.path().join("corrupt.jsonl");
        let proxy = ModelServer::start(
            Mode::Record(Box::new(keyless_runner::server::RecordConfig {
                upstream: upstream.uri(),
                api_key: UPSTREAM_KEY.into(),
                recording: recording.clone(),
                scenario: replay_core::Scenario::new("c", replay_core::UiMode::Flash, "p"),
                allow_insecure_upstream: false,
                limits: Default::default(),
                aws: Some(dummy_aws()),
            })),
            ServerOptions::default(),
        )
        .await
        .expect("proxy");
        let (status, body) =
            post_path_call(&proxy.url(), Wire::Converse, &script[0], &script[0].request).await;
        assert_eq!(status, 200);
        assert!(
            read(Wire::Converse, true, &body).is_err(),
            "a broken stream"
        );
        proxy.stop().await.expect("stops");
        let text = std::fs::read_to_string(&recording).expect("recording");
        let error = text
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("row"))
            .find(|row| row["event"]["type"] == "error")
            .unwrap_or_else(|| panic!("an error event: {text}"));
        let message = error["event"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("event stream frame 2 (counting from 1) is corrupt"),
            "{message}"
        );
        assert!(text.contains("\"outcome\": \"error\""), "{text}");
    });
}

/// Issue 42, item 3: each wire's official client meets a fault scenario's fault as its
/// provider's own failure. A 429 raises `openai.RateLimitError`, `anthropic.RateLimitError`,
/// google-genai's `ClientError` (`RESOURCE_EXHAUSTED`) and botocore's `ThrottlingException`; a
/// 5xx the client's server error (Anthropic's 529 its `OverloadedError`); a `stream_error`
/// after two chunks the wire's in-stream error (`openai.APIError` from Chat Completions' error
/// chunk, Responses' `response.failed`, Messages' `event: error` with `overloaded_error`,
/// Gemini's error chunk as `ServerError`, Converse's `modelStreamErrorException`); a cut stream
/// a broken read; and through a 429 with `retry-after: 1` each client's own retries reach the
/// recorded answer, the `openai` and `anthropic` clients after the second it asks for.
#[test]
fn the_official_clients_raise_each_providers_own_fault() {
    use keyless_runner::faults::{Fault, FaultKind, FaultPlan, Select};
    let Some(python) = sdk_python() else {
        return;
    };
    let fixture_path = fixtures_dir().join("write_read_file.flash.json");
    let fixture = Fixture::load(&fixture_path).expect("fixture");
    let turn = &fixture.turns[0];
    let canonical = turn.canonical.as_deref().expect("canonical");
    let body = |wire: Wire| {
        let mut body = request(wire, canonical, false);
        if let Some(fields) = body.as_object_mut() {
            fields.remove("stream");
        }
        body
    };
    let wires = [
        ("chat", Wire::ChatCompletions),
        ("responses", Wire::Responses),
        ("anthropic", Wire::Anthropic),
        ("gemini", Wire::Gemini),
        ("converse", Wire::Converse),
    ];
    let status = |status: u16, retry_after: Option<u32>| FaultKind::Status {
        status,
        retry_after,
    };
    // (the fault, its times, the client's retries, per wire what the client did: raised,
    // status, detail, answered)
    type Expected = [(&'static str, Value, Value, bool); 5];
    let cases: Vec<(FaultKind, u32, u32, Expected)> = vec![
        (
            status(429, None),
            100,
            0,
            [
                ("RateLimitError", json!(429), json!("requests"), false),
                ("RateLimitError", json!(429), json!("requests"), false),
                (
                    "RateLimitError",
                    json!(429),
                    json!("rate_limit_error"),
                    false,
                ),
                (
                    "ClientError",
                    json!(429),
                    json!("RESOURCE_EXHAUSTED"),
                    false,
                ),
                (
                    "ThrottlingException",
                    json!(429),
                    json!("ThrottlingException"),
                    false,
                ),
            ],
        ),
        (
            status(500, None),
            100,
            0,
            [
                (
                    "InternalServerError",
                    json!(500),
                    json!("server_error"),
                    false,
                ),
                (
                    "InternalServerError",
                    json!(500),
                    json!("server_error"),
                    false,
                ),
                ("InternalServerError", json!(500), json!("api_error"), false),
                ("ServerError", json!(500), json!("INTERNAL"), false),
                (
                    "InternalServerException",
                    json!(500),
                    json!("InternalServerException"),
                    false,
                ),
            ],
        ),
        (
            status(529, None),
            100,
            0,
            [
                (
                    "InternalServerError",
                    json!(529),
                    json!("server_error"),
                    false,
                ),
                (
                    "InternalServerError",
                    json!(529),
                    json!("server_error"),
                    false,
                ),
                (
                    "OverloadedError",
                    json!(529),
                    json!("overloaded_error"),
                    false,
                ),
                ("ServerError", json!(529), json!("INTERNAL"), false),
                (
                    "ServiceUnavailableException",
                    json!(529),
                    json!("ServiceUnavailableException"),
                    false,
                ),
            ],
        ),
        (
            FaultKind::StreamError { after_chunks: 2 },
            100,
            0,
            [
                ("APIError", Value::Null, json!("server_error"), false),
                (
                    "",
                    Value::Null,
                    json!("response.failed:server_error"),
                    false,
                ),
                (
                    "APIStatusError",
                    json!(200),
                    json!("overloaded_error"),
                    false,
                ),
                ("ServerError", json!(500), json!("INTERNAL"), false),
                (
                    "EventStreamError",
                    Value::Null,
                    json!("modelStreamErrorException"),
                    false,
                ),
            ],
        ),
    ];
    let folder = tempfile::tempdir().expect("tempdir");
    let jobs: Vec<Value> = (wires.iter())
        .map(|(name, wire)| json!({"wire": name, "caller": turn.caller, "body": body(*wire)}))
        .collect();
    let jobs_path = folder.path().join("jobs.json");
    std::fs::write(&jobs_path, Value::Array(jobs).to_string()).expect("write the jobs");
    let serve = |kind: FaultKind, times: u32, jobs: &std::path::Path| {
        let plan = FaultPlan {
            fixture: "write_read_file.flash".to_owned(),
            faults: vec![Fault {
                select: Select::Call(1),
                caller: None,
                kind,
                times,
            }],
        };
        let options = ServerOptions {
            faults: vec![("write_read_file.flash".to_owned(), plan)],
            ..ServerOptions::default()
        };
        let (python, fixture_path, jobs) = (python.clone(), fixture_path.clone(), jobs.to_owned());
        async move {
            let server = ModelServer::start(Mode::Fixtures(vec![fixture_path]), options)
                .await
                .expect("model server");
            let got = run_sdk_script(
                python,
                "check_wire_faults.py",
                vec![server.url(), jobs.display().to_string()],
                server.reset_token(),
            )
            .await;
            server.stop().await.expect("stop");
            got
        }
    };
    for (kind, times, retries, expected) in cases {
        assert_eq!(retries, 0);
        let got = bounded(serve(kind, times, &jobs_path));
        for ((name, _), (got, (raised, status, detail, answered))) in wires
            .iter()
            .zip(got.as_array().expect("results").iter().zip(expected))
        {
            let raised = if raised.is_empty() {
                Value::Null
            } else {
                json!(raised)
            };
            assert_eq!(
                (
                    &got["raised"],
                    &got["status"],
                    &got["detail"],
                    got["answered"].as_bool()
                ),
                (&raised, &status, &detail, Some(answered)),
                "{kind:?} at {name}: {got}"
            );
        }
    }
    // A cut stream: every client's read breaks (none completes the call).
    let got = bounded(serve(FaultKind::Cut { after_chunks: 2 }, 100, &jobs_path));
    for ((name, _), got) in wires.iter().zip(got.as_array().expect("results")) {
        assert_eq!(got["answered"], json!(false), "cut at {name}: {got}");
    }
    // A 429 with retry-after 1 once: every client's own retries reach the recording (the turn
    // the refused call was served goes back to the replay), and the `openai` and `anthropic`
    // clients wait the second `retry-after` asks for.
    let retry_jobs = folder.path().join("retry.json");
    let jobs: Vec<Value> = (wires.iter())
        .map(|(name, wire)| json!({"wire": name, "caller": turn.caller, "body": body(*wire), "retries": 2}))
        .collect();
    std::fs::write(&retry_jobs, Value::Array(jobs).to_string()).expect("write the jobs");
    let got = bounded(serve(status(429, Some(1)), 1, &retry_jobs));
    for ((name, _), got) in wires.iter().zip(got.as_array().expect("results")) {
        assert_eq!(got["answered"], json!(true), "retried at {name}: {got}");
        let seconds = got["seconds"].as_f64().unwrap_or_default();
        if ["chat", "responses", "anthropic"].contains(name) {
            assert!(seconds >= 0.9, "{name} waited retry-after's second: {got}");
        }
    }
}
