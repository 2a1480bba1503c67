//! The model wires as one enum ([`Wire`]), and what every user of a wire asks of it through that
//! enum: its stream reader ([`StreamReader`]: one SSE event, or one event-stream message, at a
//! time into events, the one rule for when the stream has ended, the final answer), the reading
//! of a whole answer ([`Wire::parse_answer`]), the name its provider's official client gives an
//! HTTP failure ([`Wire::status_exception_name`]), and the facts the gateway's providers and the
//! harness's model server both need (its name in recordings, its request body's keys).
//!
//! The gateway's providers (`gateway-under-test/src/models/`) and the model server's recorder
//! (`harness/runner/src/model_server/assemble.rs`) read streams with the same [`StreamReader`],
//! so they cannot disagree on where a stream ends or what it said. Adding a wire is one module
//! (its codec, beside the others) and one variant here: every `match` below then names what the
//! new wire must say.

use serde_json::{Map, Value};

use crate::chat_completions::{Answer, Assembled, ChunkAssembler, Event, Identity, WireError};
use crate::reading::NoConversation;
use crate::stream::{RenderStream, StreamPiece};
use crate::{anthropic_messages, bedrock_converse, chat_completions, gemini, ollama, responses};

/// The content type of AWS's binary event stream, which Converse streams in.
pub const EVENT_STREAM_CONTENT_TYPE: &str = "application/vnd.amazon.eventstream";

/// The content type of newline-delimited JSON, which Ollama streams in.
pub const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";

/// Where a wire's client puts its API key ([`Wire::key_header`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyHeader {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The key alone, in the header of this name.
    Named(&'static str),
}

/// The characters a model id keeps in a path segment: RFC 3986's unreserved set (letters,
/// digits, `-`, `.`, `_`, `~`), as Python's `urllib.parse.quote(…, safe="")` and botocore keep
/// them; everything else (a Bedrock id's `:`, a `/`) is percent-encoded.
const SEGMENT_KEEPS: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `model` as one path segment ([`Wire::call_path`]).
pub fn model_segment(model: &str) -> String {
    percent_encoding::utf8_percent_encode(model, SEGMENT_KEEPS).to_string()
}

/// A model wire: one provider API a chat model is called through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Wire {
    /// OpenAI's Chat Completions (`POST {base}/chat/completions`), and every compatible server.
    ChatCompletions,
    /// OpenAI's Responses (`POST {base}/responses`).
    Responses,
    /// Anthropic's Messages (`POST {root}/v1/messages`).
    AnthropicMessages,
    /// Google's Gemini API (`POST {base}/models/{model}:generateContent`, or
    /// `:streamGenerateContent`).
    Gemini,
    /// AWS Bedrock's Converse API (`POST {base}/model/{modelId}/converse`, or
    /// `/converse-stream`: AWS's binary event stream).
    BedrockConverse,
    /// Ollama's native chat (`POST {root}/api/chat`; NDJSON when `stream` is true or absent).
    OllamaChat,
    /// Ollama's native completion (`POST {root}/api/generate`): one `prompt`, no tools; its
    /// answer is the chat answer's, the text as `response`.
    OllamaGenerate,
}

impl Wire {
    /// Every wire, Chat Completions first.
    pub const ALL: [Wire; 7] = [
        Wire::ChatCompletions,
        Wire::Responses,
        Wire::AnthropicMessages,
        Wire::Gemini,
        Wire::BedrockConverse,
        Wire::OllamaChat,
        Wire::OllamaGenerate,
    ];

    /// The wire's identifier: the `model.api` of every request a model server records at it
    /// (`docs/recording-format.md` §17), which tells a wire recording from one made at a
    /// gateway's provider boundary.
    pub fn api(self) -> &'static str {
        match self {
            Wire::ChatCompletions => "openai.chat.completions",
            Wire::AnthropicMessages => "anthropic.messages",
            Wire::Responses => "openai.responses",
            Wire::Gemini => "google.gemini",
            Wire::BedrockConverse => "aws.bedrock.converse",
            Wire::OllamaChat => "ollama.chat",
            Wire::OllamaGenerate => "ollama.generate",
        }
    }

    /// The wire an identifier ([`Wire::api`]) names.
    pub fn from_api(api: &str) -> Option<Wire> {
        Wire::ALL.into_iter().find(|wire| wire.api() == api)
    }

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            Wire::ChatCompletions => "OpenAI Chat Completions",
            Wire::AnthropicMessages => "Anthropic Messages",
            Wire::Responses => "OpenAI Responses",
            Wire::Gemini => "Google Gemini",
            Wire::BedrockConverse => "AWS Bedrock Converse",
            Wire::OllamaChat => "Ollama chat",
            Wire::OllamaGenerate => "Ollama generate",
        }
    }

    /// `response_metadata.model_provider` of its answers, as LangChain's chat model for the
    /// wire sets it.
    pub fn model_provider(self) -> &'static str {
        match self {
            Wire::ChatCompletions | Wire::Responses => "openai",
            Wire::AnthropicMessages => "anthropic",
            Wire::Gemini => "google_genai",
            Wire::BedrockConverse => "bedrock_converse",
            Wire::OllamaChat | Wire::OllamaGenerate => "ollama",
        }
    }

    /// The exception class the wire's official Python client raises for an HTTP failure status:
    /// openai-python's (`_make_status_error`) at OpenAI's two wires, `anthropic`'s at the
    /// Messages wire (a 529 is `OverloadedError`), `google-genai`'s (`ClientError`,
    /// `ServerError`) at Gemini's, and at Converse's the exception Bedrock Runtime documents for
    /// the status (boto3 raises the one the error names; see [`Wire::http_error_class`]).
    pub fn status_exception_name(self, status: u16) -> &'static str {
        match self {
            Wire::ChatCompletions | Wire::Responses => {
                chat_completions::status_exception_name(status)
            }
            Wire::AnthropicMessages => anthropic_messages::status_exception_name(status),
            Wire::Gemini => gemini::status_exception_name(status),
            Wire::BedrockConverse => bedrock_converse::status_exception_name(status),
            Wire::OllamaChat | Wire::OllamaGenerate => ollama::status_exception_name(status),
        }
    }

    /// The exception class of a failed HTTP answer, as the wire's client names it: at Converse
    /// the class the answer's `x-amzn-errortype` header names (`ThrottlingException:http://…`
    /// is `ThrottlingException`, what boto3 raises), else [`Wire::status_exception_name`].
    pub fn http_error_class(self, status: u16, amzn_error_type: Option<&str>) -> &str {
        let named = amzn_error_type
            .and_then(|value| value.split(':').next())
            .filter(|name| self == Wire::BedrockConverse && !name.is_empty());
        named.unwrap_or(self.status_exception_name(status))
    }

    /// The path of a call to `model` under the API's versioned root (`https://api.openai.com/v1`,
    /// `https://api.anthropic.com/v1`, Gemini's `…/v1beta`, Bedrock's runtime host), streamed or
    /// not: Gemini and Converse name the model and the mode in the path, the model id as one
    /// path segment ([`model_segment`]: a Bedrock id's `:` is encoded, as boto3 encodes it).
    /// The gateway's providers and the recording proxy build their URLs with it.
    pub fn call_path(self, model: &str, stream: bool) -> String {
        match (self, stream) {
            (Wire::ChatCompletions, _) => "/chat/completions".to_owned(),
            (Wire::Responses, _) => "/responses".to_owned(),
            (Wire::AnthropicMessages, _) => "/messages".to_owned(),
            (Wire::Gemini, false) => format!("/models/{}:generateContent", model_segment(model)),
            (Wire::Gemini, true) => {
                format!(
                    "/models/{}:streamGenerateContent?alt=sse",
                    model_segment(model)
                )
            }
            (Wire::BedrockConverse, false) => format!("/model/{}/converse", model_segment(model)),
            (Wire::BedrockConverse, true) => {
                format!("/model/{}/converse-stream", model_segment(model))
            }
            (Wire::OllamaChat, _) => "/api/chat".to_owned(),
            (Wire::OllamaGenerate, _) => "/api/generate".to_owned(),
        }
    }

    /// The `Accept` header a client of this wire sends: Converse streams AWS's binary event
    /// stream, every other wire streams Server-Sent Events, and a whole answer is JSON.
    pub fn accept(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Wire::BedrockConverse, true) => EVENT_STREAM_CONTENT_TYPE,
            (Wire::OllamaChat | Wire::OllamaGenerate, true) => NDJSON_CONTENT_TYPE,
            (_, true) => "text/event-stream",
            (_, false) => "application/json",
        }
    }

    /// How a client of this wire sends its API key. A Bedrock API key is a bearer token (the AWS
    /// SDKs' `AWS_BEARER_TOKEN_BEDROCK`); without a key, a Converse call is signed with SigV4
    /// instead, which is the transport's business.
    pub fn key_header(self) -> KeyHeader {
        match self {
            // A local Ollama wants none; Ollama's cloud and proxies in front of it take a bearer
            // token, as the `ollama` client sends `OLLAMA_API_KEY`.
            Wire::ChatCompletions
            | Wire::Responses
            | Wire::BedrockConverse
            | Wire::OllamaChat
            | Wire::OllamaGenerate => KeyHeader::Bearer,
            Wire::AnthropicMessages => KeyHeader::Named("x-api-key"),
            Wire::Gemini => KeyHeader::Named("x-goog-api-key"),
        }
    }

    /// True when the wire carries message names (only Chat Completions does), so a replay key
    /// that reads names applies to it.
    pub fn carries_names(self) -> bool {
        self == Wire::ChatCompletions
    }

    /// True when the wire's error body is OpenAI's (`{"error": {"message", "type", "param",
    /// "code"}}`: Chat Completions and Responses), so a failure recorded in that form (an
    /// OpenAI client's message quoting the body) goes back as the very body it was.
    pub fn speaks_openai_errors(self) -> bool {
        matches!(self, Wire::ChatCompletions | Wire::Responses)
    }

    /// The id of the `number`th answer a replay gives at this wire, shaped as the wire's own
    /// ids where its renderer does not add their prefix (`chatcmpl-replay-1`, `msg_replay_1`;
    /// `replay_1`, to which the Responses renderer adds `resp_`, `msg_`, `fc_`).
    pub fn replay_answer_id(self, number: u64) -> String {
        match self {
            Wire::ChatCompletions => format!("chatcmpl-replay-{number}"),
            Wire::AnthropicMessages => format!("msg_replay_{number}"),
            Wire::Responses
            | Wire::Gemini
            | Wire::BedrockConverse
            | Wire::OllamaChat
            | Wire::OllamaGenerate => format!("replay_{number}"),
        }
    }

    /// The request body's key holding the conversation as sent.
    pub fn conversation_key(self) -> &'static str {
        match self {
            Wire::ChatCompletions
            | Wire::AnthropicMessages
            | Wire::BedrockConverse
            | Wire::OllamaChat => "messages",
            Wire::OllamaGenerate => "prompt",
            Wire::Responses => "input",
            Wire::Gemini => "contents",
        }
    }

    /// The conversation a request body at this wire sends, read by the wire's own module
    /// (`read_conversation`) into the LangChain message dicts the replay key reads
    /// (`docs/replay-and-fixtures.md` §11.1; only Chat Completions keeps message names); the
    /// error names the key that holds no conversation.
    pub fn conversation(self, body: &Map<String, Value>) -> Result<Vec<Value>, NoConversation> {
        match (self, body.get(self.conversation_key())) {
            (Wire::ChatCompletions, Some(Value::Array(messages))) => {
                Ok(chat_completions::read_conversation(messages))
            }
            (Wire::AnthropicMessages, Some(Value::Array(messages))) => {
                Ok(anthropic_messages::read_conversation(messages))
            }
            (Wire::Responses, Some(input @ (Value::Array(_) | Value::String(_)))) => {
                Ok(responses::read_conversation(input))
            }
            (Wire::Gemini, Some(Value::Array(contents))) => Ok(gemini::read_conversation(contents)),
            (Wire::BedrockConverse, Some(Value::Array(messages))) => {
                Ok(bedrock_converse::read_conversation(messages))
            }
            (Wire::OllamaChat, Some(Value::Array(messages))) => {
                Ok(ollama::read_conversation(messages))
            }
            (Wire::OllamaGenerate, Some(Value::String(prompt))) => Ok(ollama::read_prompt(prompt)),
            (Wire::OllamaGenerate, _) => Err(NoConversation {
                what: "\"prompt\" string",
            }),
            (Wire::Responses, _) => Err(NoConversation {
                what: "\"input\" (a string or a list of items)",
            }),
            (Wire::Gemini, _) => Err(NoConversation {
                what: "\"contents\" array",
            }),
            _ => Err(NoConversation {
                what: "\"messages\" array",
            }),
        }
    }

    /// The request body's key holding the tools.
    pub fn tools_key(self) -> &'static str {
        match self {
            Wire::BedrockConverse => "toolConfig",
            _ => "tools",
        }
    }

    /// The request body's keys that are the transport, not the request (the model, the tools,
    /// the streaming switch): what a request's options leave out, so one request streamed and
    /// not is the same request.
    pub fn transport_keys(self) -> &'static [&'static str] {
        match self {
            Wire::ChatCompletions | Wire::Responses => {
                &["model", "tools", "stream", "stream_options"]
            }
            Wire::AnthropicMessages | Wire::OllamaChat | Wire::OllamaGenerate => {
                &["model", "tools", "stream"]
            }
            // The model and the mode are in the path.
            Wire::Gemini => &["tools"],
            Wire::BedrockConverse => &["toolConfig"],
        }
    }

    /// A whole (non-streamed) answer at this wire (a `chat.completion`, a Responses `response`,
    /// a Messages `message`, a Gemini `GenerateContentResponse`, a Converse answer) read into
    /// one answer.
    pub fn parse_answer(self, body: &Value) -> Result<Assembled, WireError> {
        match self {
            Wire::ChatCompletions => chat_completions::parse_completion(body),
            Wire::Responses => responses::parse_response(body),
            Wire::AnthropicMessages => anthropic_messages::parse_message(body),
            Wire::Gemini => gemini::parse_response(body),
            Wire::BedrockConverse => bedrock_converse::parse_response(body),
            Wire::OllamaChat | Wire::OllamaGenerate => ollama::parse_response(body),
        }
    }

    /// A reader for one streamed answer at this wire.
    pub fn reader(self) -> StreamReader {
        StreamReader::new(self)
    }

    /// A failure as this wire's HTTP error body, with `message` and, where the wire's body has
    /// a code field (OpenAI's two wires), `code`: OpenAI's `{"error": {"message", "type",
    /// "param", "code"}}`, Anthropic's `{"type": "error", "error": {"type", "message"}}`,
    /// Gemini's `{"error": {"code", "message", "status"}}`, Bedrock's `{"message"}` (whose
    /// exception is named in a header, [`Wire::error_header`]).
    pub fn error_body(self, status: u16, message: &str, code: Option<&str>) -> Value {
        match self {
            Wire::ChatCompletions | Wire::Responses => chat_completions::ErrorBody::new(
                message,
                chat_completions::ErrorBody::kind_for_status(status),
                code,
            )
            .to_value(),
            Wire::AnthropicMessages => anthropic_messages::error_body(
                anthropic_messages::error_kind_for_status(status),
                message,
            ),
            Wire::Gemini => gemini::error_body(status, message),
            Wire::BedrockConverse => bedrock_converse::error_body(message),
            Wire::OllamaChat | Wire::OllamaGenerate => ollama::error_body(message),
        }
    }

    /// The header a failure's answer names its class in, when the wire has one: Bedrock's
    /// `x-amzn-errortype` (boto3 raises the class it names).
    pub fn error_header(self, status: u16) -> Option<(&'static str, &'static str)> {
        match self {
            Wire::BedrockConverse => Some((
                "x-amzn-errortype",
                bedrock_converse::exception_for_status(status),
            )),
            _ => None,
        }
    }

    /// An answer as this wire's whole (non-streamed) answer: a `chat.completion`, a Responses
    /// `response`, a Messages `message`, a Gemini response, a Converse answer.
    pub fn render_answer(self, identity: &Identity, answer: &Answer) -> Value {
        match self {
            Wire::ChatCompletions => chat_completions::completion(identity, answer).to_value(),
            Wire::Responses => responses::response(identity, answer),
            Wire::AnthropicMessages => anthropic_messages::message(identity, answer),
            Wire::Gemini => gemini::response(identity, answer),
            Wire::BedrockConverse => bedrock_converse::response(identity, answer),
            Wire::OllamaChat => ollama::response(identity, answer),
            Wire::OllamaGenerate => ollama::generate_line(&ollama::response(identity, answer)),
        }
    }

    /// The wire's streaming renderer ([`RenderStream`]), which turns one answer's recorded
    /// steps (start, each delta, the end with the whole answer, or an in-stream failure) into the
    /// wire's stream as they come. `known` is the answer when it is known before its stream is
    /// rendered (a replay), `None` for a live relay.
    pub fn stream_renderer(
        self,
        identity: &Identity,
        known: Option<&Answer>,
    ) -> Box<dyn RenderStream> {
        match self {
            Wire::ChatCompletions => {
                Box::new(chat_completions::StreamRenderer::new(identity, known))
            }
            Wire::Responses => Box::new(responses::StreamRenderer::new(identity, known)),
            Wire::AnthropicMessages => {
                Box::new(anthropic_messages::StreamRenderer::new(identity, known))
            }
            Wire::Gemini => Box::new(gemini::StreamRenderer::new(identity, known)),
            Wire::BedrockConverse => {
                Box::new(bedrock_converse::StreamRenderer::new(identity, known))
            }
            Wire::OllamaChat => Box::new(ollama::StreamRenderer::chat(identity, known)),
            Wire::OllamaGenerate => Box::new(ollama::StreamRenderer::generate(identity, known)),
        }
    }

    /// An answer as this wire streams it, whole, before the transport frames it: its
    /// [`Wire::stream_renderer`] over `events` (the answer's events as a recording streamed
    /// them, or none to stream the answer in one piece per block), then the answer's end.
    pub fn render_stream(
        self,
        identity: &Identity,
        answer: &Answer,
        events: &[Event],
    ) -> Vec<StreamPiece> {
        let own;
        let events = if events.is_empty() {
            own = answer.events();
            &own
        } else {
            events
        };
        let mut renderer = self.stream_renderer(identity, Some(answer));
        let mut pieces = renderer.start();
        for event in events {
            pieces.extend(renderer.event(event));
        }
        pieces.extend(renderer.finish(answer));
        pieces.extend(renderer.end());
        pieces
    }

    /// A failure the provider reported inside a streamed answer (a 200 whose stream carries
    /// the error), as this wire streams it: the answer's first event, then the wire's error
    /// event (Chat Completions' error chunk, Responses' and Messages' `error` event, Converse's
    /// `modelStreamErrorException` message); at Gemini, the error body as the stream's one
    /// chunk. `status` is the failure's status, which only Gemini's body carries.
    pub fn render_stream_failure(
        self,
        identity: &Identity,
        status: u16,
        message: &str,
    ) -> Vec<StreamPiece> {
        let body = chat_completions::ErrorBody::new(message, "api_error", None).to_value();
        let mut renderer = self.stream_renderer(identity, None);
        let mut pieces = renderer.start();
        pieces.extend(renderer.fail(status, message, &body));
        pieces
    }
}

/// The wire's assembler.
#[derive(Debug)]
enum Codec {
    ChatCompletions(ChunkAssembler),
    Responses(responses::StreamAssembler),
    AnthropicMessages(anthropic_messages::StreamAssembler),
    Gemini(gemini::StreamAssembler),
    BedrockConverse(bedrock_converse::StreamAssembler),
    Ollama(Wire, ollama::StreamAssembler),
}

/// Reads one streamed answer at one wire: each SSE event (its name and `data`; at Converse each
/// event-stream message, named by its `:event-type`) becomes the codec's [`Event`]s, the reader
/// says when the wire's last event has arrived ([`StreamReader::ended`]), and
/// [`StreamReader::finish`] judges how the stream ended and yields the answer.
///
/// SSE framing (and AWS's binary framing) stays with the transport: the reader takes the parsed
/// pieces.
#[derive(Debug)]
pub struct StreamReader {
    codec: Codec,
}

impl StreamReader {
    /// A reader for one answer at `wire`.
    pub fn new(wire: Wire) -> StreamReader {
        let codec = match wire {
            Wire::ChatCompletions => Codec::ChatCompletions(ChunkAssembler::new()),
            Wire::Responses => Codec::Responses(responses::StreamAssembler::new()),
            Wire::AnthropicMessages => {
                Codec::AnthropicMessages(anthropic_messages::StreamAssembler::new())
            }
            Wire::Gemini => Codec::Gemini(gemini::StreamAssembler::new()),
            Wire::BedrockConverse => {
                Codec::BedrockConverse(bedrock_converse::StreamAssembler::new())
            }
            Wire::OllamaChat | Wire::OllamaGenerate => {
                Codec::Ollama(wire, ollama::StreamAssembler::new())
            }
        };
        StreamReader { codec }
    }

    /// The wire it reads.
    pub fn wire(&self) -> Wire {
        match self.codec {
            Codec::ChatCompletions(_) => Wire::ChatCompletions,
            Codec::Responses(_) => Wire::Responses,
            Codec::AnthropicMessages(_) => Wire::AnthropicMessages,
            Codec::Gemini(_) => Wire::Gemini,
            Codec::BedrockConverse(_) => Wire::BedrockConverse,
            Codec::Ollama(wire, _) => wire,
        }
    }

    /// One SSE event named `name` (`message` when unnamed) with its `data`. Chat Completions
    /// sends its chunks as unnamed events and a failure as an `error` event, and other names
    /// (and comments) are not the answer; the Responses and Messages wires name every event
    /// after its payload's `type`, so the payload alone says what it is (their codecs ignore
    /// `ping` and unknown types); every Gemini `data:` is a whole chunk; a Converse message's
    /// name is its `:event-type`. An event without data is nothing. A failure ends the answer:
    /// the caller reads no more.
    pub fn push(&mut self, name: &str, data: &str) -> Result<Vec<Event>, WireError> {
        match &mut self.codec {
            Codec::ChatCompletions(_) if name == "error" => Err(WireError::from_error_event(data)),
            Codec::ChatCompletions(_) if name != "message" => Ok(Vec::new()),
            _ if data.trim().is_empty() => Ok(Vec::new()),
            Codec::ChatCompletions(codec) => codec.push_data(data),
            Codec::Responses(codec) => codec.push_data(data),
            Codec::AnthropicMessages(codec) => codec.push_data(data),
            Codec::Gemini(codec) => codec.push_data(data),
            Codec::BedrockConverse(codec) => codec.push_data(name, data),
            Codec::Ollama(_, codec) => codec.push_data(data),
        }
    }

    /// An exception message of a Converse stream (`:message-type: exception`, its
    /// `:exception-type` and payload text): the provider's failure, reported inside its answer.
    /// At the other wires the same failure, named by the exception type.
    pub fn push_exception(&mut self, exception_type: &str, data: &str) -> WireError {
        let payload = serde_json::from_str::<Value>(data)
            .unwrap_or_else(|_| serde_json::json!({"message": data}));
        match &mut self.codec {
            Codec::BedrockConverse(codec) => codec.push_exception(exception_type, &payload),
            _ => bedrock_converse::StreamAssembler::new().push_exception(exception_type, &payload),
        }
    }

    /// True once the wire's last event has arrived (`data: [DONE]` at Chat Completions,
    /// `response.completed` or `response.incomplete` at Responses, `message_stop` at Messages):
    /// nothing after it is the answer, and the caller reads no more. Never at Gemini (no end
    /// marker) and Converse (the usage follows `messageStop`), whose streams are read to their
    /// end.
    pub fn ended(&self) -> bool {
        match &self.codec {
            Codec::ChatCompletions(codec) => codec.done(),
            Codec::Responses(codec) => codec.ended(),
            Codec::AnthropicMessages(codec) => codec.ended(),
            Codec::Ollama(_, codec) => codec.finished(),
            Codec::Gemini(_) | Codec::BedrockConverse(_) => false,
        }
    }

    /// What the stream has said of its answer so far, as an answer with no content: the model
    /// and the usage its opening carried (Messages' `message_start`, Responses'
    /// `response.created`, Gemini's latest chunk), which a live relay's renderer opens the
    /// stream with ([`Wire::stream_renderer`]); nothing at Chat Completions and Converse, whose
    /// openings say neither.
    pub fn so_far(&self) -> Answer {
        let (model, usage) = match &self.codec {
            Codec::AnthropicMessages(codec) => codec.so_far(),
            Codec::Responses(codec) => codec.so_far(),
            Codec::Gemini(codec) => codec.so_far(),
            Codec::Ollama(_, codec) => codec.so_far(),
            Codec::ChatCompletions(_) | Codec::BedrockConverse(_) => (None, None),
        };
        Answer {
            model,
            usage,
            ..Answer::empty()
        }
    }

    /// The stream is over: the closing events and the answer, or why the stream is no good
    /// answer (cut off before its last event, or without a choice).
    pub fn finish(self) -> Result<(Vec<Event>, Assembled), WireError> {
        match self.codec {
            Codec::ChatCompletions(codec) => codec.finish(),
            Codec::Responses(codec) => Ok((Vec::new(), codec.finish()?)),
            Codec::AnthropicMessages(codec) => Ok((Vec::new(), codec.finish()?)),
            Codec::Gemini(codec) => codec.finish(),
            Codec::BedrockConverse(codec) => Ok((Vec::new(), codec.finish()?)),
            Codec::Ollama(_, codec) => codec.finish(),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A rendered piece as the reader takes it: each SSE event's name and `data`, a Gemini
    /// chunk or an Ollama line as an unnamed event, a Converse message by its `:event-type`.
    fn named(piece: StreamPiece) -> Vec<(String, String)> {
        match piece {
            StreamPiece::Sse(body) => body
                .split("\n\n")
                .filter(|frame| !frame.is_empty())
                .map(|frame| {
                    let name = frame
                        .lines()
                        .find_map(|line| line.strip_prefix("event: "))
                        .unwrap_or("message");
                    let data = frame
                        .lines()
                        .find_map(|line| line.strip_prefix("data: "))
                        .unwrap_or("");
                    (name.to_owned(), data.to_owned())
                })
                .collect(),
            StreamPiece::Chunk(chunk) | StreamPiece::Line(chunk) => {
                vec![("message".to_owned(), chunk.to_string())]
            }
            StreamPiece::Event(event) => vec![(event.name.to_owned(), event.payload.to_string())],
            StreamPiece::Exception(_) => Vec::new(),
        }
    }

    #[test]
    fn every_wire_names_itself_once_and_is_found_by_that_name() {
        for wire in Wire::ALL {
            assert_eq!(Wire::from_api(wire.api()), Some(wire));
            assert_eq!(wire.reader().wire(), wire);
        }
        assert_eq!(Wire::from_api("openai.completions"), None);
    }

    /// Each wire's failure status named as its own client names it, not as openai-python does.
    #[test]
    fn a_failure_status_is_named_by_the_wire_s_own_client() {
        let table = [
            (Wire::AnthropicMessages, 529, None, "OverloadedError"),
            (Wire::AnthropicMessages, 413, None, "RequestTooLargeError"),
            (Wire::ChatCompletions, 529, None, "InternalServerError"),
            (Wire::Responses, 429, None, "RateLimitError"),
            (Wire::Gemini, 429, None, "ClientError"),
            (Wire::Gemini, 503, None, "ServerError"),
            (
                Wire::BedrockConverse,
                400,
                Some("ThrottlingException:http://internal.amazon.com/coral/"),
                "ThrottlingException",
            ),
            (Wire::BedrockConverse, 429, Some(""), "ThrottlingException"),
            // Only Bedrock's client reads the header.
            (
                Wire::ChatCompletions,
                400,
                Some("ThrottlingException"),
                "BadRequestError",
            ),
        ];
        for (wire, status, header, expected) in table {
            assert_eq!(
                wire.http_error_class(status, header),
                expected,
                "{wire:?} {status} {header:?}"
            );
        }
    }

    /// One end rule per wire: the reader stops at the wire's last event and nowhere else.
    #[test]
    fn each_wire_s_reader_ends_at_its_last_event() {
        let chunk =
            json!({"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]});
        let cases: [(Wire, Vec<(&str, String)>); 6] = [
            (
                Wire::ChatCompletions,
                vec![("message", chunk.to_string()), ("message", "[DONE]".into())],
            ),
            (
                Wire::Responses,
                vec![(
                    "response.completed",
                    json!({"type": "response.completed", "response": {"status": "completed", "output": []}}).to_string(),
                )],
            ),
            (
                Wire::AnthropicMessages,
                vec![("message_stop", json!({"type": "message_stop"}).to_string())],
            ),
            (
                Wire::Gemini,
                vec![(
                    "message",
                    json!({"candidates": [{"content": {"parts": [{"text": "Hi"}]}, "finishReason": "STOP"}]}).to_string(),
                )],
            ),
            (
                Wire::BedrockConverse,
                vec![(
                    "messageStop",
                    json!({"stopReason": "end_turn"}).to_string(),
                )],
            ),
            (
                Wire::OllamaChat,
                vec![
                    ("message", json!({"message": {"content": "Hi"}, "done": false}).to_string()),
                    ("message", json!({"message": {"content": ""}, "done": true}).to_string()),
                ],
            ),
        ];
        for (wire, events) in cases {
            let mut reader = wire.reader();
            let (last, before) = events.split_last().unwrap();
            for (name, data) in before {
                reader.push(name, data).unwrap();
                assert!(!reader.ended(), "{wire:?} ended before its last event");
            }
            reader.push(last.0, &last.1).unwrap();
            let ends = !matches!(wire, Wire::Gemini | Wire::BedrockConverse);
            assert_eq!(reader.ended(), ends, "{wire:?}");
        }
    }

    #[test]
    fn an_event_without_data_is_nothing_and_a_chat_error_event_is_the_provider_s_failure() {
        for wire in Wire::ALL {
            assert_eq!(
                wire.reader().push("message", " "),
                Ok(Vec::new()),
                "{wire:?}"
            );
        }
        let failed = Wire::ChatCompletions
            .reader()
            .push("error", r#"{"error": {"message": "boom"}}"#)
            .unwrap_err();
        assert_eq!(failed.to_string(), "boom");
        assert_eq!(failed.exception_name(), "APIError");
    }

    /// What a wire's renderer writes, its reader reads back as the same answer: streamed (fed
    /// to the [`StreamReader`] event by event) and whole.
    #[test]
    fn each_wire_reads_back_what_it_renders() {
        let message = json!({"content": "Hi", "tool_calls": [{"id": "c1", "name": "ls", "args": {"path": "/"}}],
                             "response_metadata": {"finish_reason": "tool_calls"}});
        let answer = Answer::from_ai_message(&message);
        let identity = Identity {
            id: "replay_1".into(),
            model: "m".into(),
            created: 7,
        };
        for wire in Wire::ALL {
            let whole = wire
                .parse_answer(&wire.render_answer(&identity, &answer))
                .unwrap();
            let mut reader = wire.reader();
            let pieces: Vec<(String, String)> = wire
                .render_stream(&identity, &answer, &[])
                .into_iter()
                .flat_map(named)
                .collect();
            for (name, data) in &pieces {
                reader.push(name, data).unwrap();
            }
            let (_, streamed) = reader.finish().unwrap();
            // Ollama's generate has no tools: its answer carries the text alone.
            let (calls, finish) = match wire {
                Wire::OllamaGenerate => (0, "stop"),
                _ => (1, "tool_calls"),
            };
            for assembled in [whole, streamed] {
                assert_eq!(assembled.text, "Hi", "{wire:?}");
                assert_eq!(assembled.calls.len(), calls, "{wire:?}");
                if calls > 0 {
                    assert_eq!(assembled.calls[0].name, "ls", "{wire:?}");
                }
                assert_eq!(assembled.finish_reason.as_deref(), Some(finish), "{wire:?}");
            }
        }
    }

    /// A failure rendered inside a stream reads back, at every wire, as the provider's failure
    /// with its message (never as a good answer).
    #[test]
    fn each_wire_reads_a_rendered_in_stream_failure_as_the_provider_s() {
        let identity = Identity {
            id: "replay_1".into(),
            model: "m".into(),
            created: 7,
        };
        for wire in Wire::ALL {
            let mut reader = wire.reader();
            let failed = wire
                .render_stream_failure(&identity, 429, "Overloaded")
                .into_iter()
                .find_map(|piece| match piece {
                    StreamPiece::Exception(exception) => {
                        let payload = serde_json::json!({"message": exception.message});
                        Some(reader.push_exception(exception.exception_type, &payload.to_string()))
                    }
                    piece => named(piece)
                        .into_iter()
                        .find_map(|(name, data)| reader.push(&name, &data).err()),
                });
            let failed = failed.unwrap_or_else(|| panic!("{wire:?}: no failure read"));
            assert_eq!(failed.exception_name(), "APIError", "{wire:?}");
            assert!(
                failed.to_string().contains("Overloaded"),
                "{wire:?}: {failed}"
            );
        }
    }

    /// What the gateway's providers and the recording proxy both build a call from: its path
    /// under the versioned root, with the model id as one segment as boto3 and google-genai
    /// encode it (the unreserved `-._~` kept, `:` and `/` encoded), its `Accept` and its key
    /// header.
    #[test]
    fn each_wire_names_its_call_path_accept_and_key_header() {
        let id = "anthropic.claude-3-5:0/v~1_x";
        let cases = [
            (
                Wire::ChatCompletions,
                true,
                "/chat/completions",
                "text/event-stream",
                KeyHeader::Bearer,
            ),
            (
                Wire::Responses,
                false,
                "/responses",
                "application/json",
                KeyHeader::Bearer,
            ),
            (
                Wire::AnthropicMessages,
                true,
                "/messages",
                "text/event-stream",
                KeyHeader::Named("x-api-key"),
            ),
            (
                Wire::Gemini,
                true,
                "/models/anthropic.claude-3-5%3A0%2Fv~1_x:streamGenerateContent?alt=sse",
                "text/event-stream",
                KeyHeader::Named("x-goog-api-key"),
            ),
            (
                Wire::Gemini,
                false,
                "/models/anthropic.claude-3-5%3A0%2Fv~1_x:generateContent",
                "application/json",
                KeyHeader::Named("x-goog-api-key"),
            ),
            (
                Wire::BedrockConverse,
                true,
                "/model/anthropic.claude-3-5%3A0%2Fv~1_x/converse-stream",
                EVENT_STREAM_CONTENT_TYPE,
                KeyHeader::Bearer,
            ),
            (
                Wire::BedrockConverse,
                false,
                "/model/anthropic.claude-3-5%3A0%2Fv~1_x/converse",
                "application/json",
                KeyHeader::Bearer,
            ),
        ];
        for (wire, stream, path, accept, key) in cases {
            let seen = (
                wire.call_path(id, stream),
                wire.accept(stream),
                wire.key_header(),
            );
            assert_eq!(
                seen,
                (path.to_owned(), accept, key),
                "{wire:?}, stream {stream}"
            );
        }
    }
}
