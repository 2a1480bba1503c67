//! A scripted OpenAI-compatible Chat Completions server on 127.0.0.1: the stand-in for a real
//! model when fixtures are built without a key. Each request gets the next scripted reply, in
//! order; the gateway's real OpenAI provider talks to it over HTTP.

use std::collections::VecDeque;
use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_util::sync::{CancellationToken, DropGuard};

/// One scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// An assistant message with text only (`finish_reason: stop`).
    Text(String),
    /// An assistant message calling tools (`finish_reason: tool_calls`): `(name, args)` pairs.
    ToolCalls(Vec<(String, Value)>),
    /// An HTTP error with an OpenAI-style error body.
    Error {
        /// The HTTP status.
        status: u16,
        /// The error message.
        message: String,
    },
}

#[derive(Debug, Default)]
struct Script {
    replies: VecDeque<Reply>,
    served: usize,
}

/// A running stand-in server. Stops when dropped.
#[derive(Debug)]
pub struct StandIn {
    base_url: String,
    script: Arc<Mutex<Script>>,
    _stop: DropGuard,
}

/// The model name the stand-in reports, written into fixtures' `model` field so nobody mistakes
/// a stand-in fixture for a real model's.
pub(crate) const STAND_IN_MODEL: &str = "scripted-openai-stand-in";

impl StandIn {
    /// Starts a server that answers with `replies` in order.
    pub async fn start(replies: Vec<Reply>) -> std::io::Result<StandIn> {
        let script = Arc::new(Mutex::new(Script {
            replies: replies.into(),
            ..Script::default()
        }));
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let router = axum::Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(script.clone());
        let stop = CancellationToken::new();
        let signal = stop.clone().cancelled_owned();
        tokio::spawn(async move {
            let served = axum::serve(listener, router).with_graceful_shutdown(signal);
            if let Err(err) = served.await {
                tracing::warn!("stand-in server stopped: {err}");
            }
        });
        Ok(StandIn {
            base_url,
            script,
            _stop: stop.drop_guard(),
        })
    }

    /// The `base_url` to configure (`http://127.0.0.1:<port>/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Replies not served yet.
    pub(crate) fn remaining(&self) -> usize {
        self.script.lock().replies.len()
    }
}

async fn complete(State(script): State<Arc<Mutex<Script>>>, Json(body): Json<Value>) -> Response {
    let (reply, index) = {
        let mut script = script.lock();
        script.served += 1;
        (script.replies.pop_front(), script.served)
    };
    let model = body.get("model").cloned().unwrap_or(json!(STAND_IN_MODEL));
    let Some(reply) = reply else {
        let error = json!({"error": {"message": "the stand-in script has no reply left", "type": "stand_in_exhausted"}});
        return (StatusCode::INTERNAL_SERVER_ERROR, Json(error)).into_response();
    };
    let streaming = body.get("stream").and_then(Value::as_bool).unwrap_or(false);
    let (message, finish_reason) = match reply {
        Reply::Text(text) => (json!({"role": "assistant", "content": text}), "stop"),
        Reply::ToolCalls(calls) => {
            let calls: Vec<Value> = calls
                .iter()
                .enumerate()
                .map(|(position, (name, args))| {
                    json!({
                        "id": format!("call_standin_{index}_{position}"),
                        "type": "function",
                        "function": {"name": name, "arguments": args.to_string()},
                    })
                })
                .collect();
            (
                json!({"role": "assistant", "content": null, "tool_calls": calls}),
                "tool_calls",
            )
        }
        Reply::Error { status, message } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
            let error = json!({"error": {"message": message, "type": "invalid_request_error"}});
            return (status, Json(error)).into_response();
        }
    };
    let usage =
        json!({"prompt_tokens": 100 + index, "completion_tokens": 10, "total_tokens": 110 + index});
    if streaming {
        return sse_response(&message, finish_reason, &usage, index, &model);
    }
    Json(json!({
        "id": format!("chatcmpl-standin-{index}"),
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": usage,
    }))
    .into_response()
}

/// Splits `text` into `parts` pieces on character boundaries.
fn split_in(text: &str, parts: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(parts).max(1);
    chars
        .chunks(size)
        .map(|chunk| chunk.iter().collect())
        .collect()
}

/// A streamed answer as OpenAI sends it: a role chunk, the text in three pieces or each tool
/// call as a start chunk plus argument fragments, a finish chunk, a usage chunk, `[DONE]`. So a
/// recording sees real chunk boundaries, arguments split mid-JSON included.
fn sse_response(
    message: &Value,
    finish_reason: &str,
    usage: &Value,
    index: usize,
    model: &Value,
) -> Response {
    let id = format!("chatcmpl-standin-{index}");
    let chunk = |delta: Value, finish: Value| {
        json!({"id": id, "object": "chat.completion.chunk", "model": model,
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    let mut chunks = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    if let Some(text) = message.get("content").and_then(Value::as_str) {
        for piece in split_in(text, 3) {
            chunks.push(chunk(json!({"content": piece}), Value::Null));
        }
    }
    let calls = message.get("tool_calls").and_then(Value::as_array);
    for (position, call) in calls.into_iter().flatten().enumerate() {
        chunks.push(chunk(
            json!({"tool_calls": [{"index": position, "id": call["id"], "type": "function",
                                   "function": {"name": call["function"]["name"], "arguments": ""}}]}),
            Value::Null,
        ));
        let arguments = call["function"]["arguments"].as_str().unwrap_or("{}");
        for piece in split_in(arguments, 3) {
            chunks.push(chunk(
                json!({"tool_calls": [{"index": position, "function": {"arguments": piece}}]}),
                Value::Null,
            ));
        }
    }
    chunks.push(chunk(json!({}), json!(finish_reason)));
    chunks.push(
        json!({"id": id, "object": "chat.completion.chunk", "model": model,
                       "choices": [], "usage": usage}),
    );
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    (
        [(axum::http::header::CONTENT_TYPE, "text/event-stream")],
        body,
    )
        .into_response()
}
