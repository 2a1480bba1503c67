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
    /// An assistant message: its text and the tool calls it made.
    Assistant {
        /// The text (empty when the message only called tools).
        text: String,
        /// The calls, in order.
        calls: Vec<Call>,
    },
    /// The result of a tool call.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The result text.
        content: String,
    },
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
