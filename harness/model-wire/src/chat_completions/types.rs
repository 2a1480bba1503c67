//! The Chat Completions JSON as types: what the renderer writes (`chat.completion`,
//! `chat.completion.chunk`, OpenAI's error body) and the tool-call form requests and answers
//! share. Field order is the order OpenAI writes them; optional fields are left out rather than
//! written as `null`, except where OpenAI writes `null` (`content` beside tool calls, `logprobs`,
//! `finish_reason` before the last chunk).
//!
//! Reading goes the other way on purpose: the assembler navigates `serde_json::Value`s
//! (`assemble.rs`), because compatible servers send fields of other types than these (content as
//! a list of parts, arguments as an object) and a typed parse would refuse them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One tool call as requests and whole answers carry it: `{"id", "type": "function",
/// "function": {"name", "arguments"}}`, the arguments as JSON text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireToolCall {
    /// The call id.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The function called.
    pub function: WireFunction,
}

impl WireToolCall {
    /// A `function` call.
    pub fn function(id: &str, name: &str, arguments: &str) -> WireToolCall {
        WireToolCall {
            id: id.to_owned(),
            kind: "function".to_owned(),
            function: WireFunction {
                name: name.to_owned(),
                arguments: arguments.to_owned(),
            },
        }
    }
}

/// A called function's name and arguments (JSON text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WireFunction {
    /// The tool name.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

/// The assistant message of a whole `chat.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseMessage {
    /// Always `assistant`.
    pub role: String,
    /// The text; `null` when the answer is only tool calls or a refusal.
    pub content: Option<String>,
    /// DeepSeek-style reasoning text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// A refusal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The tool calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<WireToolCall>,
}

/// One choice of a whole `chat.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice {
    /// The choice's index (0: this workspace never asks for `n > 1`).
    pub index: u32,
    /// The message.
    pub message: ResponseMessage,
    /// Always `null` here.
    pub logprobs: Option<Value>,
    /// Why the answer ended (`stop`, `tool_calls`, `length`, …).
    pub finish_reason: Option<String>,
}

/// A whole `chat.completion`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// `chatcmpl-…`.
    pub id: String,
    /// Always `chat.completion`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model that answered.
    pub model: String,
    /// One choice.
    pub choices: Vec<CompletionChoice>,
    /// OpenAI's `usage` object.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// A tool call's fragment in a chunk's delta: the first one carries `id`, `type` and the name,
/// later ones only argument text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallDelta {
    /// Which call of the answer this fragment belongs to.
    pub index: u32,
    /// The call id (first fragment only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function` (first fragment only).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function's name (first fragment only) and an arguments fragment.
    pub function: FunctionDelta,
}

/// The function part of a [`ToolCallDelta`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionDelta {
    /// The tool name (first fragment only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A fragment of the arguments' JSON text.
    pub arguments: String,
}

/// A chunk's delta. Every field is optional; a chunk carries one kind of fragment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delta {
    /// `assistant`, on the first chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// A text fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A reasoning fragment (DeepSeek's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// A refusal fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Tool-call fragments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// One choice of a chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChunkChoice {
    /// The choice's index (0).
    pub index: u32,
    /// The fragment.
    pub delta: Delta,
    /// Always `null` here.
    pub logprobs: Option<Value>,
    /// Set on the choice's last chunk.
    pub finish_reason: Option<String>,
}

/// One `chat.completion.chunk`, a `data:` payload of a streamed answer. With `include_usage`,
/// the last chunk has no choices and carries `usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// `chatcmpl-…`, the same on every chunk of one answer.
    pub id: String,
    /// Always `chat.completion.chunk`.
    pub object: String,
    /// Unix seconds.
    pub created: u64,
    /// The model that answers.
    pub model: String,
    /// No choice (a usage-only chunk) or one.
    pub choices: Vec<ChunkChoice>,
    /// OpenAI's `usage` object, on the usage-only chunk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
}

/// OpenAI's error object, inside [`ErrorBody`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorObject {
    /// What went wrong.
    pub message: String,
    /// OpenAI's error type (`invalid_request_error`, `api_error`, …).
    #[serde(rename = "type")]
    pub kind: String,
    /// The request parameter at fault; always `null` here.
    pub param: Option<String>,
    /// A machine-readable code.
    pub code: Option<String>,
}

/// OpenAI's error body, `{"error": {"message", "type", "param", "code"}}`: the body of an HTTP
/// error, or (inside a 200 stream) a chunk that reports a failure mid-answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The error.
    pub error: ErrorObject,
}

impl ErrorBody {
    /// An error body with `message`, OpenAI's `kind` and an optional `code`.
    pub fn new(message: &str, kind: &str, code: Option<&str>) -> ErrorBody {
        ErrorBody {
            error: ErrorObject {
                message: message.to_owned(),
                kind: kind.to_owned(),
                param: None,
                code: code.map(str::to_owned),
            },
        }
    }

    /// OpenAI's error `type` for an HTTP status.
    pub fn kind_for_status(status: u16) -> &'static str {
        match status {
            400 | 404 | 409 | 422 => "invalid_request_error",
            401 => "authentication_error",
            403 => "permission_error",
            429 => "rate_limit_error",
            _ => "api_error",
        }
    }

    /// As JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}
