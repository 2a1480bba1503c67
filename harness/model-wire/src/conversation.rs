//! What a model call sends, whichever wire carries it: the conversation as the model sees it
//! ([`Message`]s: system text, user content, assistant text and tool calls, tool results) and the
//! bound tools ([`Tool`]). The request builders of [`responses`](crate::responses) and
//! [`anthropic_messages`](crate::anthropic_messages) take these, so a caller converts its own
//! messages once and every wire gets the same conversation.

use serde_json::Value;

/// One message of the conversation a model call sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A system prompt.
    System {
        /// Its text.
        text: String,
    },
    /// A user message: a string, or a list of LangChain content blocks (strings, `text`,
    /// `image_url`, or blocks of another kind, which each wire passes on or leaves out as it
    /// documents).
    User {
        /// The content.
        content: Value,
    },
    /// An assistant message: its text, the tool calls it made, and its signed reasoning.
    Assistant {
        /// The text (empty when the message only called tools).
        text: String,
        /// The calls, in order.
        calls: Vec<Call>,
        /// Reasoning the provider signed, which the Messages wire sends back (Anthropic refuses a
        /// tool loop with extended thinking whose earlier thinking is missing); `None` when the
        /// answer had none or it was not signed.
        thinking: Option<Thinking>,
    },
    /// The result of a tool call.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The result text.
        content: String,
    },
}

/// Signed reasoning: its text and the provider's signature of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Thinking {
    /// The reasoning text.
    pub text: String,
    /// The provider's signature.
    pub signature: String,
}

/// A tool call the assistant made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The call id.
    pub id: String,
    /// The tool name.
    pub name: String,
    /// The arguments as JSON text (an invalid call keeps its raw text).
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone, PartialEq)]
pub struct Tool {
    /// The tool name.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON schema of its arguments object.
    pub parameters: Value,
}

/// The `data:` URL's media type and base64 payload, when `url` is a base64 `data:` URL.
pub(crate) fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (media_type, data) = rest.split_once(";base64,")?;
    Some((media_type, data))
}

/// The URL of a LangChain `image_url` block (`{"image_url": {"url"}}` or `{"image_url": "<url>"}`).
pub(crate) fn image_url(block: &Value) -> Option<&str> {
    match block.get("image_url") {
        Some(Value::String(url)) => Some(url),
        Some(object) => object.get("url").and_then(Value::as_str),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{anthropic_messages::MessagesRequest, responses::ResponsesRequest};

    fn call(id: &str, arguments: &str) -> Call {
        Call {
            id: id.into(),
            name: "ls".into(),
            arguments: arguments.into(),
        }
    }

    /// Edge cases of the two request builders, each conversation with the messages (Messages
    /// wire) and the input items (Responses wire) it must become.
    #[test]
    fn each_wire_writes_the_edge_cases_of_a_conversation() {
        let image = "data:image/png;base64,AA==";
        let table = [
            (
                "an image, and a block of another kind passed on",
                vec![Message::User {
                    content: json!(["look", {"type": "image_url", "image_url": {"url": image}},
                        {"type": "file", "file": {"id": "f1"}}]),
                }],
                json!([{"role": "user", "content": [{"type": "text", "text": "look"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                        "data": "AA=="}},
                    {"type": "file", "file": {"id": "f1"}}]}]),
                json!([{"type": "message", "role": "user", "content": [
                    {"type": "input_text", "text": "look"},
                    {"type": "input_image", "image_url": image},
                    {"type": "file", "file": {"id": "f1"}}]}]),
            ),
            (
                "signed thinking, parallel calls, invalid arguments, two results and the next input merged",
                vec![
                    Message::Assistant {
                        text: String::new(),
                        calls: vec![call("c1", "{\"path\": \"/\"}"), call("c2", "{\"pa")],
                        thinking: Some(Thinking {
                            text: "Both.".into(),
                            signature: "EqQB".into(),
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
                    Message::User {
                        content: json!("go on"),
                    },
                ],
                json!([
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "Both.", "signature": "EqQB"},
                        {"type": "tool_use", "id": "c1", "name": "ls", "input": {"path": "/"}},
                        {"type": "tool_use", "id": "c2", "name": "ls", "input": {}}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "c1", "content": "a"},
                        {"type": "tool_result", "tool_use_id": "c2", "content": "bad"},
                        {"type": "text", "text": "go on"}]}
                ]),
                json!([
                    {"type": "function_call", "call_id": "c1", "name": "ls",
                        "arguments": "{\"path\": \"/\"}"},
                    {"type": "function_call", "call_id": "c2", "name": "ls", "arguments": "{\"pa"},
                    {"type": "function_call_output", "call_id": "c1", "output": "a"},
                    {"type": "function_call_output", "call_id": "c2", "output": "bad"},
                    {"type": "message", "role": "user", "content": "go on"}
                ]),
            ),
            (
                "an empty assistant message",
                vec![Message::Assistant {
                    text: String::new(),
                    calls: Vec::new(),
                    thinking: None,
                }],
                json!([{"role": "assistant", "content": ""}]),
                json!([{"type": "message", "role": "assistant",
                    "content": [{"type": "output_text", "text": ""}]}]),
            ),
        ];
        for (case, conversation, messages, input) in table {
            let anthropic = MessagesRequest::new("m", 10, &conversation, &[], false).to_value();
            assert_eq!(anthropic["messages"], messages, "Messages wire: {case}");
            assert!(anthropic.get("system").is_none(), "{case}");
            let responses = ResponsesRequest::new("m", &conversation, &[], false).to_value();
            assert_eq!(responses["input"], input, "Responses wire: {case}");
            assert!(responses.get("stream").is_none(), "{case}");
        }
    }
}
