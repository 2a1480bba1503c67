//! The Gemini codec held to the streams of the Gemini API reference (text over several chunks,
//! thought parts with a signature, a whole `functionCall` part, usage on every chunk, an error
//! chunk, a cut stream, a blocked prompt), the JSON-array stream cut at every byte, the request
//! builder, and the renderer's round trip.

use serde_json::{Value, json};

use super::*;
use crate::chat_completions::{Answer, AssembledCall, Identity, WireError};
use crate::conversation::{Call, Message, Thinking, Tool as ConversationTool};

fn chunk(parts: Value, finish: Option<&str>) -> Value {
    let mut candidate = json!({"content": {"role": "model", "parts": parts}, "index": 0});
    if let Some(finish) = finish {
        candidate["finishReason"] = json!(finish);
    }
    json!({"candidates": [candidate], "modelVersion": "gemini-2.5-flash",
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 4,
            "thoughtsTokenCount": 2, "totalTokenCount": 16}})
}

/// `(text, reasoning, calls (name, arguments), finish reason, signature)`.
type Want = (
    &'static str,
    &'static str,
    Vec<(&'static str, &'static str)>,
    &'static str,
    &'static str,
);

fn streams() -> Vec<(&'static str, Vec<Value>, Result<Want, &'static str>)> {
    vec![
        (
            "text_over_three_chunks",
            vec![
                chunk(json!([{"text": "Hel"}]), None),
                chunk(json!([{"text": "lo"}]), None),
                chunk(json!([{"text": "!"}]), Some("STOP")),
            ],
            Ok(("Hello!", "", vec![], "stop", "")),
        ),
        (
            "thoughts_then_a_signed_function_call",
            vec![
                chunk(json!([{"text": "Need ", "thought": true}]), None),
                chunk(json!([{"text": "a file.", "thought": true}]), None),
                chunk(
                    json!([{"functionCall": {"name": "ls", "args": {"path": "/"}},
                        "thoughtSignature": "CiQB"}]),
                    Some("STOP"),
                ),
            ],
            Ok((
                "",
                "Need a file.",
                vec![("ls", "{\"path\":\"/\"}")],
                "tool_calls",
                "CiQB",
            )),
        ),
        (
            "max_tokens",
            vec![chunk(json!([{"text": "cut"}]), Some("MAX_TOKENS"))],
            Ok(("cut", "", vec![], "length", "")),
        ),
        (
            "an_error_chunk_mid_stream",
            vec![
                chunk(json!([{"text": "Hel"}]), None),
                json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
            ],
            Err("The model is overloaded."),
        ),
        (
            "a_stream_cut_before_a_finish_reason",
            vec![chunk(json!([{"text": "Hel"}]), None)],
            Err("the stream ended before the answer was complete (no finish_reason and no [DONE])"),
        ),
        (
            "a_blocked_prompt",
            vec![json!({"promptFeedback": {"blockReason": "SAFETY"}})],
            Err("Gemini blocked the prompt (SAFETY)"),
        ),
    ]
}

fn assemble(chunks: &[Value]) -> Result<crate::chat_completions::Assembled, WireError> {
    let mut assembler = StreamAssembler::new();
    for chunk in chunks {
        assembler.push_data(&chunk.to_string())?;
    }
    assembler.finish().map(|(_, assembled)| assembled)
}

#[test]
fn each_stream_assembles_as_the_reference_says() {
    for (name, chunks, want) in streams() {
        let got = assemble(&chunks).map(|a| {
            let calls: Vec<(String, String)> = a
                .calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect();
            (
                a.text,
                a.reasoning,
                calls,
                a.finish_reason.unwrap_or_default(),
                a.reasoning_signature,
            )
        });
        let want = want
            .map(|(text, reasoning, calls, finish, signature)| {
                (
                    text.to_owned(),
                    reasoning.to_owned(),
                    calls
                        .into_iter()
                        .map(|(n, a)| (n.to_owned(), a.to_owned()))
                        .collect(),
                    finish.to_owned(),
                    signature.to_owned(),
                )
            })
            .map_err(str::to_owned);
        assert_eq!(got.map_err(|e| e.to_string()), want, "{name}");
    }
}

#[test]
fn usage_counts_thoughts_as_completion_and_reasoning_tokens() {
    let read = assemble(&[chunk(json!([{"text": "x"}]), Some("STOP"))]).expect("an answer");
    let usage = read.usage.expect("usage");
    assert_eq!(
        (
            &usage["prompt_tokens"],
            &usage["completion_tokens"],
            &usage["total_tokens"],
            &usage["completion_tokens_details"]["reasoning_tokens"]
        ),
        (&json!(10), &json!(6), &json!(16), &json!(2))
    );
}

#[test]
fn a_call_without_an_id_gets_the_same_id_on_every_read() {
    let stream = [chunk(
        json!([{"functionCall": {"name": "ls", "args": {}}}]),
        Some("STOP"),
    )];
    let first = assemble(&stream).expect("answer").calls;
    let again = assemble(&stream).expect("answer").calls;
    assert!(first[0].id.starts_with("call_"), "{first:?}");
    assert_eq!(first, again);
}

#[test]
fn the_json_array_stream_is_cut_into_its_elements_at_any_boundary() {
    let elements = [
        chunk(json!([{"text": "a ] } \" \\\" ["}]), None),
        chunk(json!([{"text": "b"}]), Some("STOP")),
    ];
    let body = format!("[{}\n,\r\n{}]\n", elements[0], elements[1]);
    for size in [1, 2, 7, body.len()] {
        let mut splitter = JsonArraySplitter::new();
        let mut got = Vec::new();
        for piece in body.as_bytes().chunks(size) {
            got.extend(splitter.push(piece).expect("a JSON array"));
        }
        assert!(splitter.ended(), "size {size}");
        let got: Vec<Value> = got
            .iter()
            .map(|text| serde_json::from_str(text).expect("an element"))
            .collect();
        assert_eq!(got, elements, "size {size}");
    }
    for (body, error) in [
        ("{\"a\": 1}", SplitError::NotAnArray('{')),
        ("[{} x", SplitError::Unexpected('x')),
        ("[{}] {}", SplitError::TrailingData),
    ] {
        assert_eq!(
            JsonArraySplitter::new().push(body.as_bytes()),
            Err(error),
            "{body}"
        );
    }
}

fn answer() -> Answer {
    Answer {
        text: "Let me look.".to_owned(),
        reasoning: Some("Think.".to_owned()),
        refusal: None,
        calls: vec![AssembledCall {
            id: "call_9".to_owned(),
            name: "read_file".to_owned(),
            arguments: "{\"path\":\"/a\"}".to_owned(),
        }],
        finish_reason: "tool_calls".to_owned(),
        usage: Some(json!({"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10})),
        model: Some("gemini-x".to_owned()),
    }
}

fn identity() -> Identity {
    Identity {
        id: "replay_1".to_owned(),
        model: "requested".to_owned(),
        created: 0,
    }
}

#[test]
fn a_rendered_answer_reads_back_the_same_streamed_or_whole() {
    let answer = answer();
    let streamed = stream_chunks(&identity(), &answer, &[]);
    assert!(streamed.len() > 1, "a chunk per block");
    let whole = parse_response(&response(&identity(), &answer));
    for (name, read) in [("streamed", assemble(&streamed)), ("whole", whole)] {
        let read = read.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(read.text, answer.text, "{name}");
        assert_eq!(read.reasoning, "Think.", "{name}");
        assert_eq!(read.calls, answer.calls, "{name}");
        assert_eq!(read.finish_reason.as_deref(), Some("tool_calls"), "{name}");
        assert_eq!(read.model.as_deref(), Some("gemini-x"), "{name}");
        assert_eq!(
            read.usage.as_ref().map(|u| u["total_tokens"].clone()),
            Some(json!(10)),
            "{name}"
        );
    }
}

#[test]
fn an_error_body_has_gemini_s_shape_and_the_client_s_class() {
    assert_eq!(
        error_body(429, "slow down"),
        json!({"error": {"code": 429, "message": "slow down", "status": "RESOURCE_EXHAUSTED"}})
    );
    let classes: Vec<&str> = [400, 404, 429, 500, 503]
        .into_iter()
        .map(status_exception_name)
        .collect();
    assert_eq!(
        classes,
        [
            "ClientError",
            "ClientError",
            "ClientError",
            "ServerError",
            "ServerError"
        ]
    );
}

#[test]
fn a_conversation_becomes_contents_with_results_merged_and_names_recovered() {
    let conversation = vec![
        Message::System {
            text: "Be brief.".into(),
        },
        Message::User {
            content: json!(["look", {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}]),
        },
        Message::Assistant {
            text: String::new(),
            calls: vec![
                Call {
                    id: "c1".into(),
                    name: "ls".into(),
                    arguments: "{\"path\": \"/\"}".into(),
                },
                Call {
                    id: "c2".into(),
                    name: "cat".into(),
                    arguments: "{\"pa".into(),
                },
            ],
            thinking: Some(Thinking {
                text: "Both.".into(),
                signature: "CiQB".into(),
            }),
        },
        Message::Tool {
            call_id: "c1".into(),
            content: "a".into(),
        },
        Message::Tool {
            call_id: "c2".into(),
            content: "bad".into(),
        },
    ];
    let tools = [ConversationTool {
        name: "ls".into(),
        description: "List.".into(),
        parameters: json!({"type": "object", "additionalProperties": false}),
    }];
    let body = GenerateContentRequest::new(&conversation, &tools).to_value();
    assert_eq!(
        body,
        json!({
            "contents": [
                {"role": "user", "parts": [{"text": "look"},
                    {"inlineData": {"mimeType": "image/png", "data": "AA=="}}]},
                {"role": "model", "parts": [
                    {"thoughtSignature": "CiQB", "functionCall": {"id": "c1", "name": "ls", "args": {"path": "/"}}},
                    {"functionCall": {"id": "c2", "name": "cat", "args": {}}}]},
                {"role": "user", "parts": [
                    {"functionResponse": {"id": "c1", "name": "ls", "response": {"result": "a"}}},
                    {"functionResponse": {"id": "c2", "name": "cat", "response": {"result": "bad"}}}]}
            ],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "tools": [{"functionDeclarations": [{"name": "ls", "description": "List.",
                "parametersJsonSchema": {"type": "object", "additionalProperties": false}}]}]
        })
    );
    let read: GenerateContentRequest = serde_json::from_value(body.clone()).expect("reads back");
    assert_eq!(read.to_value(), body);
    let snake: GenerateContentRequest = serde_json::from_value(json!({
        "contents": [{"role": "model", "parts": [{"function_call": {"name": "ls", "args": {}}}]}],
        "system_instruction": {"parts": [{"text": "s"}]}}))
    .expect("snake_case reads");
    assert_eq!(
        snake.contents[0].parts[0]
            .function_call
            .as_ref()
            .map(|c| c.name.as_str()),
        Some("ls")
    );
    assert!(snake.system_instruction.is_some());
}
