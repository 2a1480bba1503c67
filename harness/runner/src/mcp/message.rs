//! The MCP boundary's protocol core: how a JSON-RPC message from an MCP client is read
//! ([`Incoming`]), how a call becomes an engine call ([`McpBoundary`], the `Boundary` impl: the
//! caller is the server's configured name, the label the method and the tool, prompt or
//! resource it names, the canonical form the method and the params without `_meta`), the
//! recorded form of what came back ([`McpAnswer`]: the result or error and, in order, the
//! notifications and server→client requests sent before it) and how it is rendered back to a
//! client with the client's own ids ([`McpAnswer::messages_for`]).
//!
//! JSON-RPC ids and session ids are never part of the canonical form: they are the client's and
//! the transport's, and they differ on every run.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use replay_core::{Boundary, BoundaryKind, ExchangeCall};

/// The JSON-RPC error code a replay miss answers with (the implementation-defined server error
/// range): the message is the miss diagnostic.
pub const MISS_ERROR_CODE: i64 = -32000;

/// The `_meta` key a request of the stateless revision (2026-07-28) names its protocol version
/// under.
pub const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

/// The session header of Streamable HTTP.
pub const SESSION_HEADER: &str = "mcp-session-id";

/// A JSON-RPC message an MCP client sent, read once at the edge.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: it is keyed, looked up (or relayed and recorded) and answered.
    Request(McpCall),
    /// A notification (`notifications/initialized`, `notifications/cancelled`, …): accepted
    /// and not keyed; it changes no answer.
    Notification {
        /// Its method.
        method: String,
    },
    /// The client's answer to a request the server sent (sampling, elicitation, roots):
    /// accepted and not keyed.
    Response,
}

/// A request from an MCP client: its id (the client's; rendered back, never keyed), method and
/// params.
#[derive(Debug, Clone, PartialEq)]
pub struct McpCall {
    /// The client's JSON-RPC id.
    pub id: Value,
    /// The method: `initialize`, `tools/list`, `tools/call`, …
    pub method: String,
    /// The params, as sent (absent: `None`).
    pub params: Option<Value>,
}

impl McpCall {
    /// The progress token the client asked progress notifications to carry
    /// (`params._meta.progressToken`).
    pub fn progress_token(&self) -> Option<&Value> {
        self.params.as_ref()?.get("_meta")?.get("progressToken")
    }

    /// The protocol version a request of the stateless revision names in its `_meta`.
    pub fn meta_version(&self) -> Option<&str> {
        (self
            .params
            .as_ref()?
            .get("_meta")?
            .get(PROTOCOL_VERSION_META))?
        .as_str()
    }
}

/// Why a message is not a JSON-RPC message this boundary reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MessageError {
    /// Not JSON.
    #[error("the body is not JSON: {0}")]
    NotJson(String),
    /// A JSON array: a JSON-RPC batch, which MCP removed in protocol version 2025-06-18.
    #[error("a JSON-RPC batch (a JSON array) is not served: MCP removed batches in 2025-06-18")]
    Batch,
    /// JSON, but not a JSON-RPC 2.0 request, notification or response.
    #[error("not a JSON-RPC 2.0 message: {0}")]
    NotJsonRpc(&'static str),
}

impl Incoming {
    /// Reads one JSON-RPC message.
    pub fn read(body: &[u8]) -> Result<Incoming, MessageError> {
        let value: Value =
            serde_json::from_slice(body).map_err(|err| MessageError::NotJson(err.to_string()))?;
        Incoming::from_value(value)
    }

    /// Reads one JSON-RPC message already parsed.
    pub fn from_value(value: Value) -> Result<Incoming, MessageError> {
        let Value::Object(mut message) = value else {
            return Err(if value.is_array() {
                MessageError::Batch
            } else {
                MessageError::NotJsonRpc("not an object")
            });
        };
        if message.get("jsonrpc") != Some(&json!("2.0")) {
            return Err(MessageError::NotJsonRpc("\"jsonrpc\" is not \"2.0\""));
        }
        let id = message.remove("id");
        match message.remove("method") {
            Some(Value::String(method)) => match id {
                Some(id) => Ok(Incoming::Request(McpCall {
                    id,
                    method,
                    params: message.remove("params"),
                })),
                None => Ok(Incoming::Notification { method }),
            },
            Some(_) => Err(MessageError::NotJsonRpc("\"method\" is not a string")),
            None if message.contains_key("result") || message.contains_key("error") => {
                Ok(Incoming::Response)
            }
            None => Err(MessageError::NotJsonRpc(
                "neither a method nor a result or error",
            )),
        }
    }
}

/// The MCP boundary for one configured server (`[mcp.<name>]`): its calls' caller is the
/// server's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpBoundary {
    /// The server's configured name.
    pub server: String,
}

impl McpBoundary {
    /// The engine call `call` makes at this server.
    pub fn call(&self, call: &McpCall) -> ExchangeCall {
        ExchangeCall::read(self, call)
    }
}

impl Boundary for McpBoundary {
    type Request = McpCall;

    fn kind(&self) -> BoundaryKind {
        BoundaryKind::Mcp
    }

    fn caller(&self, _request: &McpCall) -> String {
        self.server.clone()
    }

    /// `tools/call get_time`, `prompts/get summary`, `resources/read file:///a`, else the
    /// method alone.
    fn label(&self, request: &McpCall) -> String {
        let named = |field: &str| {
            (request.params.as_ref())
                .and_then(|params| params.get(field))
                .and_then(Value::as_str)
                .map(|name| format!("{} {name}", request.method))
        };
        match request.method.as_str() {
            "tools/call" | "prompts/get" => named("name"),
            "resources/read" | "resources/subscribe" | "resources/unsubscribe" => named("uri"),
            _ => None,
        }
        .unwrap_or_else(|| request.method.clone())
    }

    /// `{"method", "params"}`, the params without their `_meta` (the progress token, tracing
    /// ids, client info: the client's, per run); absent params are left out. A request of the
    /// stateless revision adds the protocol version its `_meta` names (`protocolVersion`, as a
    /// number): a result's shape depends on it, as a sessionful `initialize`'s does on what it
    /// announced.
    fn canonical(&self, request: &McpCall) -> Value {
        let mut canonical = Map::new();
        canonical.insert("method".to_owned(), json!(request.method));
        if let Some(version) = request.meta_version() {
            // A number (`2026-07-28` → 20260728) when the version is a date: the engine
            // normalises every date string in a key alike, which would make versions one key.
            let digits: String = version.chars().filter(|c| *c != '-').collect();
            let keyed = digits
                .parse::<u64>()
                .map_or_else(|_| json!(version), |n| json!(n));
            canonical.insert("protocolVersion".to_owned(), keyed);
        }
        match &request.params {
            Some(Value::Object(params)) => {
                let kept: Map<String, Value> = (params.iter())
                    .filter(|(key, _)| key.as_str() != "_meta")
                    .map(|(key, value)| (key.clone(), value.clone()))
                    .collect();
                canonical.insert("params".to_owned(), Value::Object(kept));
            }
            Some(other) => {
                canonical.insert("params".to_owned(), other.clone());
            }
            None => {}
        }
        Value::Object(canonical)
    }
}

/// How the server sent its answer over Streamable HTTP: one JSON body, or a Server-Sent Events
/// stream (the only form that carries messages before the response). A stdio server's answers
/// are recorded as `sse` when messages came before the response, else `json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerForm {
    /// `application/json`.
    Json,
    /// `text/event-stream`.
    Sse,
}

/// The response part of an answer: the result or the JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// `result`.
    Result(Value),
    /// `error` (`{code, message, data?}`).
    Error(Value),
}

/// What an MCP server answered a call, as recorded: an exchange's `answer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpAnswer {
    /// How it was sent.
    pub form: AnswerForm,
    /// The notifications and server→client requests the server sent before the response, in
    /// order, as sent (a server request keeps the server's id: the client answers it with that).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub before: Vec<Value>,
    /// The response.
    pub response: Outcome,
    /// The HTTP status the server refused the request with, its body a JSON-RPC error (a
    /// sessionful server's `400` to a stateless client's `server/discover` probe, which makes
    /// the client fall back to `initialize`); absent: answered (`200`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
}

/// Why a recorded answer cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a recorded MCP answer is not {{form, before?, response}}: {0}")]
pub struct AnswerError(String);

impl McpAnswer {
    /// Reads an exchange's `answer`.
    pub fn from_value(answer: &Value) -> Result<McpAnswer, AnswerError> {
        serde_json::from_value(answer.clone()).map_err(|err| AnswerError(err.to_string()))
    }

    /// The answer's recorded form.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The answer of a server that sent `messages` for the call with the client's `id`: every
    /// message before the response to `id`, then the response. `None` when no response to `id`
    /// is among them.
    pub fn from_messages(form: AnswerForm, id: &Value, messages: Vec<Value>) -> Option<McpAnswer> {
        let mut before = Vec::new();
        for mut message in messages {
            let is_response = message.get("method").is_none() && message.get("id") == Some(id);
            if !is_response {
                before.push(message);
                continue;
            }
            let Value::Object(mut fields) = message.take() else {
                return None;
            };
            let response = match (fields.remove("result"), fields.remove("error")) {
                (Some(result), _) => Outcome::Result(result),
                (None, Some(error)) => Outcome::Error(error),
                (None, None) => return None,
            };
            return Some(McpAnswer {
                form,
                before,
                response,
                status: None,
            });
        }
        None
    }

    /// The messages to send the client for `call`: the messages recorded before the response
    /// (a progress notification carrying the client's progress token), then the response with
    /// the client's id.
    pub fn messages_for(&self, call: &McpCall) -> Vec<Value> {
        let mut messages: Vec<Value> = (self.before.iter())
            .map(|message| with_progress_token(message, call.progress_token()))
            .collect();
        messages.push(response_message(&call.id, &self.response));
        messages
    }
}

/// A JSON-RPC response to `id`.
pub fn response_message(id: &Value, outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Result(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Outcome::Error(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

/// The JSON-RPC error a miss (or any call keyless cannot answer) gets: `message` is the whole
/// diagnostic, so a client that shows errors shows what to fix.
pub fn error_response(id: &Value, message: &str) -> Value {
    response_message(
        id,
        &Outcome::Error(json!({"code": MISS_ERROR_CODE, "message": message})),
    )
}

/// A recorded `notifications/progress` with the progress token of this run's call: the token is
/// the client's, like an id.
fn with_progress_token(message: &Value, token: Option<&Value>) -> Value {
    let mut message = message.clone();
    if message.get("method").and_then(Value::as_str) == Some("notifications/progress")
        && let (Some(token), Some(params)) = (token, message.get_mut("params"))
        && let Some(params) = params.as_object_mut()
    {
        params.insert("progressToken".to_owned(), token.clone());
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(method: &str, params: Value) -> McpCall {
        McpCall {
            id: json!(7),
            method: method.to_owned(),
            params: Some(params),
        }
    }

    #[test]
    fn messages_are_read_as_requests_notifications_or_responses() {
        let cases = [
            (
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
                Ok(Incoming::Request(McpCall {
                    id: json!(1),
                    method: "tools/list".to_owned(),
                    params: None,
                })),
            ),
            (
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                Ok(Incoming::Notification {
                    method: "notifications/initialized".to_owned(),
                }),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 0, "result": {}}),
                Ok(Incoming::Response),
            ),
            (json!([]), Err(MessageError::Batch)),
            (
                json!({"id": 1, "method": "x"}),
                Err(MessageError::NotJsonRpc("\"jsonrpc\" is not \"2.0\"")),
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(Incoming::from_value(message.clone()), expected, "{message}");
        }
    }

    /// A stateless request's key holds the protocol version its `_meta` names (a result's
    /// shape depends on it) and nothing else of the `_meta` (client info, capabilities).
    #[test]
    fn a_stateless_key_holds_the_protocol_version_and_no_other_meta() {
        let boundary = McpBoundary {
            server: "time".to_owned(),
        };
        let stateless = |version: &str, client: &str| {
            let meta = json!({PROTOCOL_VERSION_META: version,
                "io.modelcontextprotocol/clientInfo": {"name": client}});
            boundary.call(&call("tools/list", json!({"_meta": meta})))
        };
        let sessionful = boundary.call(&call("tools/list", json!({})));
        assert_eq!(
            stateless("2026-07-28", "a").key(),
            stateless("2026-07-28", "b").key()
        );
        assert_ne!(stateless("2026-07-28", "a").key(), sessionful.key());
        assert_ne!(
            stateless("2026-07-28", "a").key(),
            stateless("2027-01-01", "a").key()
        );
    }

    #[test]
    fn the_key_leaves_out_ids_and_meta_and_the_label_names_the_tool() {
        let boundary = McpBoundary {
            server: "time".to_owned(),
        };
        let args = json!({"name": "get_time", "arguments": {"city": "Paris"}});
        let with_meta = json!({"name": "get_time", "arguments": {"city": "Paris"},
            "_meta": {"progressToken": 3}});
        let a = boundary.call(&call("tools/call", args.clone()));
        let mut other_id = call("tools/call", with_meta);
        other_id.id = json!("abc");
        assert_eq!(a.key(), boundary.call(&other_id).key());
        assert_eq!(a.label(), "tools/call get_time");
        let changed = call(
            "tools/call",
            json!({"name": "get_time", "arguments": {"city": "Rome"}}),
        );
        assert_ne!(a.key(), boundary.call(&changed).key());
        let other_server = McpBoundary {
            server: "clock".to_owned(),
        };
        assert_ne!(a.key(), other_server.call(&call("tools/call", args)).key());
        let labels = [
            (
                "resources/read",
                json!({"uri": "file:///a"}),
                "resources/read file:///a",
            ),
            ("prompts/get", json!({"name": "brief"}), "prompts/get brief"),
            ("tools/list", json!({}), "tools/list"),
        ];
        for (method, params, label) in labels {
            assert_eq!(boundary.call(&call(method, params)).label(), label);
        }
    }

    #[test]
    fn an_answer_is_rendered_with_the_clients_id_and_progress_token() {
        let recorded_call = json!({"jsonrpc": "2.0", "id": 1, "method": "notifications/progress",
            "params": {"progressToken": 1, "progress": 0.5}});
        let messages = vec![
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 0.5}}),
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
        ];
        let answer =
            McpAnswer::from_messages(AnswerForm::Sse, &json!(1), messages).expect("a response");
        assert_eq!(answer.before.len(), 1);
        assert_eq!(
            McpAnswer::from_value(&answer.to_value()),
            Ok(answer.clone())
        );
        let replayed = McpCall {
            id: json!("req-9"),
            method: "tools/call".to_owned(),
            params: Some(json!({"name": "t", "_meta": {"progressToken": "tok"}})),
        };
        assert_eq!(
            answer.messages_for(&replayed),
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": "tok", "progress": 0.5}}),
                json!({"jsonrpc": "2.0", "id": "req-9", "result": {"content": []}}),
            ]
        );
        assert_eq!(
            McpAnswer::from_messages(AnswerForm::Json, &json!(2), vec![recorded_call]),
            None
        );
    }
}
