//! One Chat Completions request as the model server reads it: the body, whether it streams, the
//! messages converted for the replay key (`replay_core::messages_from_chat_completions`), and
//! the provider-boundary view a recording stores and strict replay compares.

use replay_core::recording::RecordedRequest;
use replay_core::{messages_from_chat_completions, replay_key};
use serde_json::{Map, Value, json};

use replay_core::normalize;

/// The `model.api` of every request a model server records: it tells a wire recording from one
/// made at a gateway's provider boundary, whose requests have another shape.
pub(crate) const WIRE_API: &str = "openai.chat.completions";

/// Body keys that are the transport, not the request: left out of the recorded request, so a
/// recording replays to a streaming and a non-streaming client alike.
const TRANSPORT_KEYS: [&str; 5] = ["model", "messages", "tools", "stream", "stream_options"];

/// A parsed request.
#[derive(Debug, Clone)]
pub(crate) struct WireRequest {
    /// The body.
    pub(crate) body: Map<String, Value>,
    /// The body's `model` (empty when absent).
    pub(crate) model: String,
    /// `stream: true`.
    pub(crate) stream: bool,
    /// The messages as the replay key reads them.
    pub(crate) messages: Vec<Value>,
}

impl WireRequest {
    /// Parses a request body; the error says what is wrong with it.
    pub(crate) fn parse(bytes: &[u8]) -> Result<WireRequest, String> {
        let body: Value = serde_json::from_slice(bytes)
            .map_err(|err| format!("the request body is not JSON: {err}"))?;
        let Value::Object(body) = body else {
            return Err("the request body must be a JSON object".to_owned());
        };
        let Some(Value::Array(messages)) = body.get("messages") else {
            return Err("the request body has no \"messages\" array".to_owned());
        };
        let messages = messages_from_chat_completions(messages);
        Ok(WireRequest {
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            stream: body.get("stream").and_then(Value::as_bool).unwrap_or(false),
            messages,
            body,
        })
    }

    /// The request as a recording stores it: `model` names the wire API and the model id;
    /// `context` holds the caller, both replay hashes and the canonical conversation (so a
    /// fixture built from the recording explains its misses), the messages as sent and the
    /// tools; `options` every other body key. Text is normalised (dates, UUIDs, temporary paths)
    /// so a strict replay survives a new day.
    pub(crate) fn recorded(&self, caller: &str) -> RecordedRequest {
        let key = replay_key(caller, &self.messages);
        let field = |name: &str| self.body.get(name).cloned().unwrap_or(Value::Null);
        let options: Map<String, Value> = self
            .body
            .iter()
            .filter(|(name, _)| !TRANSPORT_KEYS.contains(&name.as_str()))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        RecordedRequest::new(
            json!({"api": WIRE_API, "model": self.model}),
            json!({
                "caller": key.caller,
                "conversation_hash": key.conversation_hash,
                "input_hash": key.input_hash,
                "canonical": key.canonical,
                "messages": normalized(&field("messages")),
                "tools": normalized(&field("tools")),
            }),
            normalized(&Value::Object(options)),
        )
    }
}

/// `value` with every string normalised (`replay_core::normalize`), at any depth.
pub fn normalized(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(normalize(text)),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), normalized(value)))
                .collect(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_are_named() {
        let cases: [(&[u8], &str); 3] = [
            (b"{", "the request body is not JSON"),
            (b"[1]", "the request body must be a JSON object"),
            (
                b"{\"model\": \"m\"}",
                "the request body has no \"messages\" array",
            ),
        ];
        for (body, expected) in cases {
            let error = WireRequest::parse(body).expect_err(expected);
            assert!(error.starts_with(expected), "{error}");
        }
    }

    #[test]
    fn the_recorded_request_keeps_the_call_and_leaves_the_transport_out() {
        let body = json!({
            "model": "m", "stream": true, "stream_options": {"include_usage": true},
            "temperature": 0.5,
            "messages": [{"role": "system", "content": "Today is 2026-05-17."},
                         {"role": "user", "content": "hi", "name": "user-input"}],
        });
        let request = WireRequest::parse(body.to_string().as_bytes()).expect("parses");
        assert!(request.stream);
        let recorded = request.recorded("");
        assert_eq!(recorded.model, json!({"api": WIRE_API, "model": "m"}));
        assert_eq!(recorded.options, json!({"temperature": 0.5}));
        assert_eq!(recorded.context["caller"], "lead_agent");
        assert_eq!(
            recorded.context["messages"][0]["content"],
            "Today is <DATE>."
        );
        assert_eq!(
            recorded.context["canonical"],
            "[{\"content\": \"hi\", \"name\": \"user-input\", \"type\": \"human\"}]"
        );
        assert_eq!(recorded.context["tools"], Value::Null);
    }
}
