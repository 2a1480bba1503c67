//! The recording proxy's upstream (`docs/recording-format.md` §17): one base URL, the proxy's
//! key and the AWS credentials, and the one place a request to it is built ([`ModelUpstream::post`]),
//! so a chat call at any wire and an embeddings call at the same provider carry the key (or the
//! SigV4 signature) the same way. The key lives in memory only and `Debug` never shows it.

use axum::http::HeaderMap;
use model_wire::{KeyHeader, Wire};
use secrecy::{ExposeSecret, SecretString};

use aws_sign::AwsCredentials;

/// Request headers passed on to the upstream when the gateway sends them: the API version and
/// beta features a Messages or Responses client asks for are part of the call. The gateway's
/// own credentials (`Authorization`, `x-api-key`) never are: the upstream gets the proxy's key.
const PASSED_HEADERS: [&str; 3] = ["anthropic-version", "anthropic-beta", "openai-beta"];

/// The SigV4 service name of Bedrock's runtime API.
const BEDROCK_SERVICE: &str = "bedrock";

/// The `anthropic-version` sent when the gateway sends none (the API requires one).
const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Why an upstream request could not be made.
#[derive(Debug, thiserror::Error)]
pub(super) enum UpstreamSetup {
    /// A Bedrock call without credentials.
    #[error(
        "no AWS credentials to sign the Bedrock request with (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and AWS_SESSION_TOKEN for temporary ones)"
    )]
    NoAwsCredentials,
    /// SigV4 refused the request.
    #[error("the Bedrock request: {0}")]
    Signing(#[from] aws_sign::SigningError),
    /// A signature header no HTTP header can carry.
    #[error("the Bedrock request's signature is not a header value")]
    BadHeader,
}

/// Where the recording proxy sends every call, and with what credentials.
pub(crate) struct ModelUpstream {
    /// The base URL, without a trailing `/`; each wire's path follows it.
    pub(super) base: String,
    /// The proxy's key (`Recorder::new` checked that a header can carry it).
    pub(super) api_key: SecretString,
    /// The client, with the proxy's timeouts and redirect rule.
    pub(super) http: reqwest::Client,
    /// What a Bedrock request is signed with.
    pub(super) aws: Option<AwsCredentials>,
}

impl std::fmt::Debug for ModelUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelUpstream")
            .field("base", &replay_core::recording::redact_text(&self.base))
            .finish_non_exhaustive()
    }
}

impl ModelUpstream {
    /// A `POST` of `body` to `path` under the base URL at `wire`: the proxy's key in the wire's
    /// header (`Authorization: Bearer` for OpenAI's wires and Ollama's, `x-api-key` for
    /// Anthropic's, `x-goog-api-key` for Gemini's) or, for Bedrock (Converse and InvokeModel), a
    /// SigV4 signature of the [`AwsCredentials`], and the [`PASSED_HEADERS`] the gateway sent.
    pub(super) fn post(
        &self,
        wire: Wire,
        path: &str,
        accept: &str,
        body: Vec<u8>,
        headers: &HeaderMap,
    ) -> Result<reqwest::RequestBuilder, UpstreamSetup> {
        let url = format!("{}{path}", self.base);
        let mut builder = self
            .http
            .post(&url)
            .header(reqwest::header::ACCEPT, accept)
            .header(reqwest::header::CONTENT_TYPE, "application/json");
        let key = || {
            let mut key = reqwest::header::HeaderValue::from_str(self.api_key.expose_secret())
                .unwrap_or_else(|_| reqwest::header::HeaderValue::from_static(""));
            key.set_sensitive(true);
            key
        };
        builder = match (wire, wire.key_header()) {
            // The proxy signs every Bedrock call: its key is the AWS credentials.
            (Wire::BedrockConverse, _) => {
                let aws = self.aws.as_ref().ok_or(UpstreamSetup::NoAwsCredentials)?;
                let signed = [("content-type", "application/json"), ("accept", accept)];
                for (name, value) in
                    aws_sign::sigv4_headers(aws, BEDROCK_SERVICE, &url, &signed, &body)?
                {
                    let mut value = reqwest::header::HeaderValue::from_str(&value)
                        .map_err(|_| UpstreamSetup::BadHeader)?;
                    value.set_sensitive(true);
                    builder = builder.header(name, value);
                }
                builder
            }
            (_, KeyHeader::Named(name)) => builder.header(name, key()),
            (_, KeyHeader::Bearer) => builder.bearer_auth(self.api_key.expose_secret()),
        };
        for name in PASSED_HEADERS {
            if let Some(value) = headers.get(name) {
                builder = builder.header(name, value.as_bytes());
            }
        }
        if wire == Wire::AnthropicMessages && !headers.contains_key("anthropic-version") {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        }
        Ok(builder.body(body))
    }
}
