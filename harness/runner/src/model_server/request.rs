//! One request at one of the model server's five wires ([`Wire`]) as the model server reads
//! it: the body, whether it streams and how ([`Framing`]; the Gemini and Converse wires name the
//! model and the mode in the path, [`Target`]; Ollama streams unless `stream` is false), the conversation the replay key reads, as the
//! wire reads it (`model_wire::Wire::conversation`), and the view a
//! recording stores and strict replay compares, in the wire's own terms
//! (`docs/recording-format.md` §17).

use replay_core::recording::RecordedRequest;
use replay_core::replay_key;
use serde_json::{Map, Value, json};

use replay_core::normalize;

/// A model wire the server serves, replays strictly and records through: `model_wire`'s, the one
/// the gateway's providers speak. Its [`Wire::api`] is the `model.api` of every request a model
/// server records at it: it names the wire in the recording, and tells a wire recording from
/// one made at a gateway's provider boundary, whose requests have another shape.
pub(crate) use model_wire::Wire;

/// What is wrong with a request body: the text the gateway is answered with (and the run's
/// `bad_request` problem says).
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadBody {
    /// Not JSON.
    #[error("the request body is not JSON: {0}")]
    NotJson(#[from] serde_json::Error),
    /// JSON, but not an object.
    #[error("the request body must be a JSON object")]
    NotAnObject,
    /// No conversation under the wire's key (the error names the key and what it must hold).
    #[error(transparent)]
    NoConversation(#[from] model_wire::NoConversation),
}

/// How a streamed answer is framed on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Framing {
    /// Server-sent events (every wire but Converse; Gemini's with `?alt=sse`).
    Sse,
    /// One JSON array sent as it is produced (Gemini's `streamGenerateContent` without
    /// `?alt=sse`).
    JsonArray,
    /// AWS's binary event stream (Converse's `converse-stream`).
    AwsEventStream,
    /// Newline-delimited JSON (Ollama's `/api/chat` and `/api/generate`).
    Ndjson,
}

/// What the path of a Gemini or Converse call says: the model, and whether and how the answer
/// streams (the body says neither).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// The model (Gemini's `models/{model}`, Converse's `{modelId}`, decoded).
    pub(crate) model: String,
    /// `None` for one answer, else how the stream is framed.
    pub(crate) stream: Option<Framing>,
}

/// The conversation as sent, without the ids a server assigned and the client echoes back:
/// a Responses client sends each output item of an earlier answer again with its `id`
/// (`fc_…`, `msg_…`, `rs_…`), which the provider chose and a replay chooses anew, so the
/// recorded request leaves them out (a `function_call`'s `call_id` stays: it pairs the call
/// with its output). The other wires echo no server id.
fn without_server_ids(wire: Wire, mut conversation: Value) -> Value {
    if wire == Wire::Responses
        && let Value::Array(items) = &mut conversation
    {
        for item in items.iter_mut().filter_map(Value::as_object_mut) {
            item.remove("id");
        }
    }
    conversation
}

/// A parsed request.
#[derive(Debug, Clone)]
pub(crate) struct WireRequest {
    /// The wire it came in at.
    pub(crate) wire: Wire,
    /// The body.
    pub(crate) body: Map<String, Value>,
    /// The body's `model` (empty when absent).
    pub(crate) model: String,
    /// `stream: true`, or a streaming path.
    pub(crate) stream: bool,
    /// How a streamed answer is framed.
    pub(crate) framing: Framing,
    /// The messages as the replay key reads them.
    pub(crate) messages: Vec<Value>,
}

impl WireRequest {
    /// Parses a request body at `wire`; the error says what is wrong with it.
    pub(crate) fn parse(wire: Wire, bytes: &[u8]) -> Result<WireRequest, BadBody> {
        let body: Value = serde_json::from_slice(bytes)?;
        let Value::Object(body) = body else {
            return Err(BadBody::NotAnObject);
        };
        let messages = wire.conversation(&body)?;
        // Ollama streams unless told not to; the other wires answer whole unless told to stream.
        let ollama = matches!(wire, Wire::OllamaChat | Wire::OllamaGenerate);
        Ok(WireRequest {
            wire,
            model: body
                .get("model")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            stream: body
                .get("stream")
                .and_then(Value::as_bool)
                .unwrap_or(ollama),
            framing: if ollama {
                Framing::Ndjson
            } else {
                Framing::Sse
            },
            messages,
            body,
        })
    }

    /// Parses a request body at a wire whose path names the model and the mode.
    pub(crate) fn parse_at(
        wire: Wire,
        bytes: &[u8],
        target: Target,
    ) -> Result<WireRequest, BadBody> {
        let mut request = WireRequest::parse(wire, bytes)?;
        request.model = target.model;
        request.stream = target.stream.is_some();
        request.framing = target.stream.unwrap_or(Framing::Sse);
        Ok(request)
    }

    /// Its path under an upstream's base URL (`https://api.anthropic.com/v1` + `/messages`;
    /// Gemini's `https://generativelanguage.googleapis.com/v1beta` +
    /// `/models/{model}:streamGenerateContent?alt=sse`; Bedrock's
    /// `https://bedrock-runtime.{region}.amazonaws.com` + `/model/{modelId}/converse-stream`).
    /// The proxy streams Gemini's answers as SSE whatever framing the gateway asked for: the
    /// recording keeps the events, not the framing.
    pub(crate) fn upstream_path(&self) -> String {
        self.wire.call_path(&self.model, self.stream)
    }

    /// The request as a recording stores it: `model` names the wire API ([`Wire::api`]) and
    /// the model id; `context` holds the caller, both replay hashes and the canonical
    /// conversation (so a fixture built from the recording explains its misses), the
    /// conversation as sent under the wire's own key (`messages`, or the Responses API's
    /// `input`) and the tools; `options` every other body key (Anthropic's `system` and
    /// `max_tokens`, the Responses API's `instructions`). Text is normalised (dates, UUIDs,
    /// temporary paths) so a strict replay survives a new day.
    pub(crate) fn recorded(&self, caller: &str) -> RecordedRequest {
        let key = replay_key(caller, &self.messages);
        let field = |name: &str| self.body.get(name).cloned().unwrap_or(Value::Null);
        let conversation = self.wire.conversation_key();
        let options: Map<String, Value> = self
            .body
            .iter()
            .filter(|(name, _)| {
                name.as_str() != conversation
                    && !self.wire.transport_keys().contains(&name.as_str())
            })
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        let mut context = json!({
            "caller": key.caller,
            "conversation_hash": key.conversation_hash,
            "input_hash": key.input_hash,
            "canonical": key.canonical,
        });
        context[conversation] = normalized(&without_server_ids(self.wire, field(conversation)));
        context["tools"] = normalized(&field(self.wire.tools_key()));
        RecordedRequest::new(
            json!({"api": self.wire.api(), "model": self.model}),
            context,
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
            let error = WireRequest::parse(Wire::ChatCompletions, body).expect_err(expected);
            assert!(error.to_string().starts_with(expected), "{error}");
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
        let request =
            WireRequest::parse(Wire::ChatCompletions, body.to_string().as_bytes()).expect("parses");
        assert!(request.stream);
        let recorded = request.recorded("");
        assert_eq!(
            recorded.model,
            json!({"api": "openai.chat.completions", "model": "m"})
        );
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

    #[test]
    fn each_wire_records_its_conversation_under_its_own_key_and_names_itself() {
        let cases = [
            (
                Wire::AnthropicMessages,
                json!({"model": "claude", "stream": true, "max_tokens": 64, "system": "Be brief.",
                       "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}),
                "messages",
                json!({"max_tokens": 64, "system": "Be brief."}),
            ),
            (
                Wire::Responses,
                json!({"model": "gpt", "stream": true, "instructions": "Be brief.",
                       "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}),
                "input",
                json!({"instructions": "Be brief."}),
            ),
        ];
        for (wire, body, conversation, options) in cases {
            let request = WireRequest::parse(wire, body.to_string().as_bytes()).expect("parses");
            let recorded = request.recorded("");
            assert_eq!(
                Wire::from_api(recorded.model["api"].as_str().unwrap()),
                Some(wire)
            );
            assert_eq!(
                recorded.context[conversation], body[conversation],
                "{wire:?}"
            );
            assert_eq!(recorded.options, options, "{wire:?}");
            assert_eq!(
                recorded.context["canonical"], "[{\"content\": \"hi\", \"type\": \"human\"}]",
                "{wire:?}"
            );
        }
    }

    #[test]
    fn a_responses_request_is_recorded_without_the_item_ids_a_server_assigned() {
        let call =
            json!({"type": "function_call", "call_id": "call_1", "name": "ls", "arguments": "{}"});
        let mut sent = call.clone();
        sent["id"] = json!("fc_from_the_provider_123");
        let body = json!({"model": "gpt", "input": [
            {"role": "user", "content": "hi"}, sent,
            {"type": "function_call_output", "call_id": "call_1", "output": "a.txt"}]});
        let request =
            WireRequest::parse(Wire::Responses, body.to_string().as_bytes()).expect("parses");
        let recorded = request.recorded("");
        assert_eq!(recorded.context["input"][1], call);
        assert_eq!(recorded.context["input"][2]["call_id"], "call_1");
    }

    /// Ollama streams when `stream` is absent (the server's default), in NDJSON.
    #[test]
    fn an_ollama_request_streams_unless_told_not_to() {
        let cases = [
            (
                Wire::OllamaChat,
                json!({"model": "m", "messages": []}),
                true,
            ),
            (
                Wire::OllamaChat,
                json!({"model": "m", "messages": [], "stream": false}),
                false,
            ),
            (
                Wire::OllamaGenerate,
                json!({"model": "m", "prompt": "hi"}),
                true,
            ),
            (
                Wire::ChatCompletions,
                json!({"model": "m", "messages": []}),
                false,
            ),
        ];
        for (wire, body, stream) in cases {
            let request = WireRequest::parse(wire, body.to_string().as_bytes()).expect("parses");
            assert_eq!(request.stream, stream, "{wire:?} {body}");
        }
        let generate =
            WireRequest::parse(Wire::OllamaGenerate, br#"{"model": "m", "prompt": "hi"}"#)
                .expect("parses");
        assert_eq!(generate.framing, Framing::Ndjson);
        assert_eq!(generate.recorded("").context["prompt"], "hi");
        let error = WireRequest::parse(Wire::OllamaGenerate, br#"{"model": "m"}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "the request body has no \"prompt\" string"
        );
    }
}
