//! The all-wire chat model: one [`WireChatModel`] per `[[models]]` entry, each with its own
//! `reqwest::Client`, speaking one [`Api`] (`model_wire::Wire`): OpenAI's Chat Completions
//! (`POST {base_url}/chat/completions`), OpenAI's Responses (`POST {base_url}/responses`),
//! Anthropic's Messages (`POST {base_url}/v1/messages`), Gemini's (`…/models/{model}:generateContent`)
//! or Bedrock's Converse (`…/model/{modelId}/converse`). Every provider (`models/openai.rs`,
//! `anthropic.rs`, `gemini.rs`, `bedrock.rs`) builds one from its entry; none imports another,
//! and this module imports none of them.
//!
//! [`ChatModel::invoke`] calls without streaming, [`ChatModel::stream`] with `"stream": true`
//! (and, for Chat Completions, `stream_options.include_usage`), read by the wire's
//! `model_wire::StreamReader` (see `stream.rs`). Each wire's request body is its file here
//! (`wire.rs` for Chat Completions, `responses.rs`, `anthropic_messages.rs`, `gemini.rs`,
//! `bedrock_converse.rs`); every wire's answer is read by its `model_wire` codec into the same
//! AI message (see `wire.rs`): LangChain's shape, with `response_metadata.model_provider` (the
//! wire's) and an `lc_run--<uuid>` id. The reads are bounded alike on every wire (a whole
//! answer, an error body, an SSE line).
//!
//! Failures become [`ModelError`]s named like the wire's Python client's exceptions
//! (`AuthenticationError`, `RateLimitError`, `OverloadedError`, `APIConnectionError`, …;
//! [`Api::http_error_class`]) so that the LLM error-handling middleware classifies them as
//! DeerFlow does.
//!
//! **The API key never leaves this module** except in the wire's key header (`Authorization`,
//! `x-api-key`, `x-goog-api-key`): the model's `Debug` redacts it, and every error is scrubbed
//! of it (`[secret removed]`) at the [`ChatModel`] boundary, in case a provider echoes the key
//! back in an error body.

pub(crate) mod anthropic_messages;
pub(crate) mod bedrock_converse;
pub(super) mod conversation;
pub(crate) mod gemini;
mod responses;
mod stream;
pub(super) mod wire;

#[cfg(test)]
mod path_wire_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wire_tests;

use secrecy::ExposeSecret;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use model_wire::KeyHeader;
use reqwest::Url;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde_json::{Map, Value};

use crate::config::ModelConfig;
use crate::messages::Message;
use crate::models::{
    ChatModel, ErrorClass, EventStream, ModelError, ModelRequest, one_chunk_events,
};

/// The endpoint root used when an OpenAI entry has no `base_url`.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// What replaces the API key wherever it would otherwise appear in error text.
pub const SECRET_REMOVED: &str = "[secret removed]";

/// The model setting that chooses the OpenAI wire: `api = "chat_completions"` (the default) or
/// `api = "responses"`. LangChain's spelling, `use_responses_api = true`, means the same.
pub const API_SETTING: &str = "api";

/// LangChain's `ChatOpenAI` spelling of `api = "responses"`.
pub const RESPONSES_FLAG: &str = "use_responses_api";

/// The wire a model's calls cross: `model_wire`'s, the one the harness's model server serves.
pub use model_wire::Wire as Api;

/// The wires the gateway's providers speak: every [`Api`] but Ollama's native two, which only
/// the harness's model server serves (an Ollama model is reached at its OpenAI-compatible
/// `/v1`). The tests that drive the gateway at each wire iterate this list.
pub const PROVIDER_APIS: [Api; 5] = [
    Api::ChatCompletions,
    Api::Responses,
    Api::AnthropicMessages,
    Api::Gemini,
    Api::BedrockConverse,
];

/// The endpoint root of an entry at `api` without `base_url`.
fn default_base_url(api: Api) -> &'static str {
    match api {
        Api::ChatCompletions | Api::Responses => DEFAULT_BASE_URL,
        Api::AnthropicMessages => anthropic_messages::DEFAULT_BASE_URL,
        Api::Gemini => gemini::DEFAULT_BASE_URL,
        Api::BedrockConverse => bedrock_converse::DEFAULT_BASE_URL,
        // A local Ollama's root (no gateway provider speaks it: `WireChatModel::new` refuses).
        Api::OllamaChat | Api::OllamaGenerate => "http://127.0.0.1:11434",
    }
}

/// The path appended to the base URL for a call at `api` to `model`, streamed or not: the
/// wire's own ([`Api::call_path`]), under `/v1` for Anthropic, whose base URL is the SDK's root
/// without the version (the other wires' base URLs include it).
fn path(api: Api, model: &str, stream: bool) -> String {
    let version = if api == Api::AnthropicMessages {
        "/v1"
    } else {
        ""
    };
    format!("{version}{}", api.call_path(model, stream))
}

/// The OpenAI provider's choice of wire means nothing at another provider: refused rather
/// than ignored.
pub(crate) fn refuse_openai_settings(
    config: &ModelConfig,
    provider: &str,
) -> Result<(), ModelError> {
    match [API_SETTING, RESPONSES_FLAG]
        .into_iter()
        .find(|key| config.settings.contains_key(*key))
    {
        Some(key) => Err(ModelError::new(
            "ConfigurationError",
            format!(
                "model '{}': {key} is a setting of use = \"openai\"; use = \"{provider}\" \
                 always speaks its own API",
                config.name
            ),
        )),
        None => Ok(()),
    }
}

/// Removes the API key from text. Its `Debug` never shows the key.
#[derive(Clone, Default)]
struct Redactor {
    secret: Option<Arc<str>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Redactor")
    }
}

impl Redactor {
    /// `text` with every occurrence of the key replaced by [`SECRET_REMOVED`]. Every non-empty
    /// key is scrubbed, however short: a garbled error text is better than a leaked key.
    fn scrub(&self, text: &str) -> String {
        match &self.secret {
            Some(secret) if !secret.is_empty() && text.contains(&**secret) => {
                text.replace(&**secret, SECRET_REMOVED)
            }
            _ => text.to_string(),
        }
    }

    /// The error with its message scrubbed.
    fn error(&self, mut error: ModelError) -> ModelError {
        error.message = self.scrub(&error.message);
        error.error_type = self.scrub(&error.error_type);
        error
    }
}

/// A chat model behind an HTTP endpoint of one [`Api`].
///
/// Cheap to share: calls take `&self` and the client pools connections.
#[derive(Clone)]
pub struct WireChatModel {
    /// The wire its calls cross.
    api: Api,
    /// The configured model name (`models[].name`), used in messages.
    name: String,
    /// The provider's model id sent as `model`.
    model: String,
    /// `{base}/chat/completions`, `{base}/responses`, `{base}/v1/messages`, or the one-answer
    /// route of Gemini or Converse.
    endpoint: Url,
    /// The streaming route (the same as `endpoint` but at Gemini and Converse).
    stream_endpoint: Url,
    /// The key, absent when none is configured (calls then fail without a network call).
    api_key: Option<Arc<str>>,
    redactor: Redactor,
    client: reqwest::Client,
    timeout: Option<Duration>,
    /// The entry's free-form settings (pass-through request keys, `extra_body`, …).
    settings: Map<String, Value>,
    /// The AWS credentials a Bedrock call without an API key is signed with (SigV4).
    aws: Option<aws_sign::AwsCredentials>,
}

impl fmt::Debug for WireChatModel {
    // Written by hand so that the key can never show up in logs or panics.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WireChatModel")
            .field("api", &self.api)
            .field("name", &self.name)
            .field("model", &self.model)
            .field("endpoint", &self.endpoint.as_str())
            .field(
                "api_key",
                &self
                    .api_key
                    .as_ref()
                    .map(|_| "[redacted]")
                    .unwrap_or("None"),
            )
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl WireChatModel {
    /// Builds the model for one `[[models]]` entry, at `api`.
    ///
    /// - Base URL: `base_url` (a trailing slash is tolerated), else [`DEFAULT_BASE_URL`] (for
    ///   Anthropic, `https://api.anthropic.com`).
    /// - Model id: `model`, else the entry's `name`.
    /// - Key: `api_key` (already `$ENV`-expanded by config loading). A missing or blank key is
    ///   **not** a build error; calls then fail with `AuthenticationError`.
    /// - Timeout: `request_timeout_secs` bounds connecting and each read (so a long stream
    ///   that keeps sending is not cut off, as with the Python client's timeouts); `0` means no
    ///   timeout.
    ///
    /// Fails with `ConfigurationError` only when the base URL is not an http(s) URL or the HTTP
    /// client cannot be built.
    pub fn new(config: &ModelConfig, api: Api) -> Result<WireChatModel, ModelError> {
        let api_key: Option<Arc<str>> = config
            .api_key
            .as_ref()
            .map(ExposeSecret::expose_secret)
            .filter(|key| !key.trim().is_empty())
            .map(Arc::from);
        let redactor = Redactor {
            secret: api_key.clone(),
        };
        let configuration_error = |problem: String| {
            redactor.error(ModelError::new(
                "ConfigurationError",
                format!("model '{}': {problem}", config.name),
            ))
        };

        // The model server serves Ollama's native wire; the gateway's providers do not call it
        // (an Ollama model is reached at its OpenAI-compatible `/v1`).
        if matches!(api, Api::OllamaChat | Api::OllamaGenerate) {
            return Err(configuration_error(format!(
                "no gateway provider speaks {} (use the openai provider with Ollama's /v1)",
                api.name()
            )));
        }
        let base = config
            .base_url
            .as_deref()
            .map(str::trim)
            .filter(|base| !base.is_empty())
            .unwrap_or(default_base_url(api))
            .trim_end_matches('/');
        // The base is checked on its own (`http://` + `/chat/completions` would otherwise
        // parse with `chat` as the host). The URL itself is not quoted in the error: it may
        // carry a token in its query.
        let not_a_url =
            |err: String| configuration_error(format!("base_url is not a valid URL: {err}"));
        let parsed = Url::parse(base).map_err(|err| not_a_url(err.to_string()))?;
        if !matches!(parsed.scheme(), "http" | "https")
            || parsed.host_str().is_none_or(str::is_empty)
        {
            return Err(configuration_error(
                "base_url must be an http:// or https:// URL with a host".to_string(),
            ));
        }
        let model = config
            .model
            .clone()
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| config.name.clone());
        let endpoint = Url::parse(&format!("{base}{}", path(api, &model, false)))
            .map_err(|err| not_a_url(err.to_string()))?;
        let stream_endpoint = Url::parse(&format!("{base}{}", path(api, &model, true)))
            .map_err(|err| not_a_url(err.to_string()))?;

        let timeout = Some(Duration::from_secs(config.request_timeout_secs))
            .filter(|timeout| !timeout.is_zero());
        let mut builder = reqwest::Client::builder()
            .user_agent(concat!("gateway-under-test/", env!("CARGO_PKG_VERSION")))
            .redirect(transport::upstream::same_origin_redirects());
        if let Some(timeout) = timeout {
            builder = builder.connect_timeout(timeout).read_timeout(timeout);
        }
        // System proxy settings apply as usual, except to a loopback endpoint (local servers
        // and test doubles): a proxy cannot reach our own loopback, and an `HTTP_PROXY` in the
        // environment would otherwise break every local call.
        if transport::upstream::is_loopback(&endpoint) {
            builder = builder.no_proxy();
        }
        let client = builder
            .build()
            .map_err(|err| configuration_error(format!("cannot build the HTTP client: {err}")))?;

        Ok(WireChatModel {
            api,
            name: config.name.clone(),
            model,
            endpoint,
            stream_endpoint,
            api_key,
            redactor,
            client,
            timeout,
            settings: config.settings.clone(),
            aws: None,
        })
    }

    /// The same model, signing its calls with `aws` (SigV4) when it has no API key: Bedrock's
    /// (`use = "bedrock"`) alternative to a Bedrock API key.
    pub fn with_aws(mut self, aws: Option<aws_sign::AwsCredentials>) -> WireChatModel {
        self.aws = aws;
        self
    }

    /// The configured model name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The model id sent to the provider.
    pub fn model_id(&self) -> &str {
        &self.model
    }

    /// The wire its calls cross.
    pub fn api(&self) -> Api {
        self.api
    }

    /// The full endpoint URL.
    pub fn endpoint(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Sends the request body and returns a successful response, or the mapped error.
    async fn post(&self, body: &Value, stream: bool) -> Result<reqwest::Response, ModelError> {
        let key = self.api_key.as_deref();
        let signer = self
            .aws
            .as_ref()
            .filter(|_| self.api == Api::BedrockConverse);
        if key.is_none() && signer.is_none() {
            // Forced to `auth` because the text carries none of the auth patterns.
            return Err(ModelError::new(
                "AuthenticationError",
                format!("no API key configured for model '{}'", self.name),
            )
            .with_class(ErrorClass::Auth));
        }
        tracing::debug!(model = %self.name, model_id = %self.model, api = ?self.api, stream,
            "model call");
        let accept = self.api.accept(stream);
        let endpoint = if stream {
            &self.stream_endpoint
        } else {
            &self.endpoint
        };
        let bytes = serde_json::to_vec(body).unwrap_or_default();
        let post = self
            .client
            .post(endpoint.clone())
            .header(reqwest::header::ACCEPT, accept)
            .header(CONTENT_TYPE, "application/json");
        let post = match (self.api.key_header(), key) {
            (KeyHeader::Bearer, Some(key)) => post.bearer_auth(key),
            (KeyHeader::Named(name), Some(key)) => post.header(name, key),
            (_, None) => {
                let signed = [("content-type", "application/json"), ("accept", accept)];
                let headers = signer
                    .map(|aws| {
                        aws_sign::sigv4_headers(aws, "bedrock", endpoint.as_str(), &signed, &bytes)
                    })
                    .transpose()
                    .map_err(|err| ModelError::new("ConfigurationError", err.to_string()))?
                    .unwrap_or_default();
                headers
                    .into_iter()
                    .fold(post, |post, (name, value)| post.header(name, value))
            }
        };
        let post = if self.api == Api::AnthropicMessages {
            post.header("anthropic-version", anthropic_messages::API_VERSION)
        } else {
            post
        };
        let response = post
            .body(bytes)
            .send()
            .await
            .map_err(|err| transport_error(err, false))?;
        if !response.status().is_success() {
            return Err(status_error(response, self.api).await);
        }
        Ok(response)
    }

    /// The request body at this model's wire.
    fn body(&self, request: &ModelRequest, stream: bool) -> Value {
        let (model, settings) = (&self.model, &self.settings);
        match self.api {
            Api::ChatCompletions => wire::request_body(model, request, settings, stream),
            Api::Responses => responses::request_body(model, request, settings, stream),
            Api::AnthropicMessages => {
                anthropic_messages::request_body(model, request, settings, stream)
            }
            Api::Gemini => gemini::request_body(request, settings),
            Api::BedrockConverse => bedrock_converse::request_body(request, settings),
            // Never built: `WireChatModel::new` refuses Ollama's wires.
            Api::OllamaChat | Api::OllamaGenerate => Value::Null,
        }
    }

    async fn invoke_inner(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        let body = self.body(request, false);
        let response = self.post(&body, false).await?;
        self.read_completion(response).await
    }

    /// Reads a whole (non-streamed) answer body as the answer message, at most
    /// [`MAX_COMPLETION_BYTES`] of it: a larger body fails the call rather than fill memory.
    async fn read_completion(&self, response: reqwest::Response) -> Result<Message, ModelError> {
        let (bytes, whole) = read_capped(response, MAX_COMPLETION_BYTES)
            .await
            .map_err(|err| transport_error(err, true))?;
        if !whole {
            return Err(ModelError::new(
                "APIResponseValidationError",
                format!("the provider's answer is larger than {MAX_COMPLETION_BYTES} bytes"),
            ));
        }
        let answer: Value = serde_json::from_slice(&bytes).map_err(|err| {
            ModelError::new(
                "APIResponseValidationError",
                format!("the provider's answer is not valid JSON: {err}"),
            )
        })?;
        wire::parse_answer(self.api, &answer, &self.model)
    }

    async fn stream_inner(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let body = self.body(request, true);
        let response = self.post(&body, true).await?;
        // Some compatible servers ignore `stream` and answer with one JSON body: serve it as a
        // single chunk rather than failing.
        let is_json = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.trim_start().starts_with("application/json"));
        if is_json {
            let message = self.read_completion(response).await?;
            return Ok(Box::pin(futures::stream::iter(one_chunk_events(&message))));
        }
        let bytes = response
            .bytes_stream()
            .map(|chunk| chunk.map_err(|err| transport_error(err, true)));
        if self.api == Api::BedrockConverse {
            return Ok(stream::event_stream_events(bytes, &self.model));
        }
        Ok(stream::sse_events(bytes, &self.model, self.api))
    }
}

#[async_trait]
impl ChatModel for WireChatModel {
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        self.invoke_inner(request)
            .await
            .map_err(|err| self.redactor.error(err))
    }

    async fn stream(&self, request: &ModelRequest) -> Result<EventStream, ModelError> {
        let events = self
            .stream_inner(request)
            .await
            .map_err(|err| self.redactor.error(err))?;
        let redactor = self.redactor.clone();
        Ok(Box::pin(
            events.map(move |item| item.map_err(|err| redactor.error(err))),
        ))
    }
}

/// Maps a non-success response to the error the wire's Python client raises: named as that
/// client names the status, or at Converse as the answer's `x-amzn-errortype` names it
/// ([`Api::http_error_class`]), worded as openai-python (and `anthropic`, which words it alike)
/// words it (`_make_status_error_from_response`, [`model_wire::edge::client_error_text`]:
/// `Error code: <code> - <the parsed JSON body>`, its Python `str`), with the status and any
/// `Retry-After`. The caller scrubs the key.
async fn status_error(response: reqwest::Response, api: Api) -> ModelError {
    let retry_after = retry_after(response.headers());
    // A body that cannot be read still leaves the status to report (an unreadable body reads
    // as an empty one: `Error code: <code>`); only its first `MAX_ERROR_BODY_BYTES` are read
    // (the detail kept is far shorter).
    let failed = transport::upstream::read_failed_answer(response, MAX_ERROR_BODY_BYTES).await;
    let mut error = error_from_status(api, failed.status, retry_after, &failed.body, failed.whole);
    error.error_type = api
        .http_error_class(failed.status, failed.amzn_error_type.as_deref())
        .to_owned();
    error
}

/// The most of a whole (non-streamed) answer the provider reads (issue 21, finding 4: a body is
/// never buffered without bound).
const MAX_COMPLETION_BYTES: usize = 32 * 1024 * 1024;

/// The most of an error body the provider reads.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// A body's first `limit` bytes, and whether that is all of it (`transport::read_capped`,
/// shared with the harness's recording proxy). Reading stops at the limit (the rest is never
/// received into memory; dropping the response closes the connection).
async fn read_capped(
    response: reqwest::Response,
    limit: usize,
) -> Result<(Vec<u8>, bool), reqwest::Error> {
    transport::read_capped(response.bytes_stream(), limit).await
}

fn error_from_status(
    api: Api,
    code: u16,
    retry_after: Option<Duration>,
    body: &str,
    whole: bool,
) -> ModelError {
    let message = model_wire::edge::client_error_text(code, body, whole);
    let mut error = ModelError::new(api.status_exception_name(code), message).with_status(code);
    error.retry_after = retry_after;
    error
}

/// `Retry-After` as the Python client reads it: `retry-after-ms` (milliseconds) first, then
/// `retry-after` in (possibly fractional) seconds. HTTP-date values are not understood.
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let number = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<f64>().ok())
            .filter(|value| value.is_finite() && *value >= 0.0)
    };
    number("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| number("retry-after"))
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

/// Maps a reqwest failure as the recording proxy does (`transport::upstream::TransportFailure`).
/// `in_body` says the response had started, so a broken connection is a protocol failure
/// (`RemoteProtocolError`) rather than a failure to connect. The URL is left out of the text (it
/// may carry a token in its query).
fn transport_error(err: reqwest::Error, in_body: bool) -> ModelError {
    let failure = transport::upstream::TransportFailure::of(&err, in_body);
    ModelError::new(
        failure.class(),
        failure.message(&error_chain(&err.without_url())),
    )
}

/// An error and its sources, joined by `: `, skipping a source that repeats its parent's text.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut parts = vec![err.to_string()];
    let mut source = err.source();
    while let Some(next) = source {
        let text = next.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = next.source();
    }
    parts.join(": ")
}
