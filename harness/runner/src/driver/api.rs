//! The API dialects a gateway may speak ([`Api`], parsed from `--api` and `keyless.toml`) and
//! the stream modes a run asks for ([`StreamModes`]): names only, so every file of the driver
//! uses them without reaching back into `driver.rs`, which dispatches each [`Api`] to its file.

use std::fmt;

/// The API dialect a gateway speaks (`docs/testing-your-own-gateway.md`, "The dialects"): the
/// one list `keyless test --api` and `keyless.toml`'s `api` parse ([`Api::ALL`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// DeerFlow's gateway API: register, cookie session and CSRF, routes below `/api`.
    #[default]
    Deerflow,
    /// LangGraph's own API server (`langgraph dev`, a LangSmith deployment): no session, routes
    /// at the root, graphs as assistants.
    Langgraph,
    /// The Vercel AI SDK's UI message stream: a chat route (`POST /api/chat`) that `useChat`'s
    /// `DefaultChatTransport` posts UI messages to.
    AiSdk,
    /// AG-UI: an agent endpoint that takes a `RunAgentInput` and streams typed events.
    AgUi,
    /// An agent served as OpenAI's Responses API (`POST /v1/responses`, streamed).
    OpenaiResponses,
    /// An agent served as OpenAI's Chat Completions API (`POST /v1/chat/completions`,
    /// streamed).
    OpenaiChat,
}

/// A name that is not one of [`Api::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API {0:?}: expected one of {names}", names = Api::names())]
pub struct UnknownApi(pub String);
impl Api {
    /// Every dialect, in the order `--help` lists them.
    pub const ALL: [Api; 6] = [
        Api::Deerflow,
        Api::Langgraph,
        Api::AiSdk,
        Api::AgUi,
        Api::OpenaiResponses,
        Api::OpenaiChat,
    ];

    /// The spelling of `--api` and `keyless.toml`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Deerflow => "deerflow",
            Api::Langgraph => "langgraph",
            Api::AiSdk => "ai-sdk",
            Api::AgUi => "ag-ui",
            Api::OpenaiResponses => "openai-responses",
            Api::OpenaiChat => "openai-chat",
        }
    }

    /// The names, comma-separated, for messages.
    pub fn names() -> String {
        Api::ALL.map(Api::as_str).join(", ")
    }
}

impl fmt::Display for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Api {
    type Err = UnknownApi;

    fn from_str(name: &str) -> Result<Api, UnknownApi> {
        Api::ALL
            .into_iter()
            .find(|api| api.as_str() == name)
            .ok_or_else(|| UnknownApi(name.to_owned()))
    }
}
/// The stream modes a run asks for, and so the golden it is held to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamModes {
    /// `["values"]`: Layer 1's golden, every event's shape.
    #[default]
    Values,
    /// DeerFlow's web client's four modes (`deerflow::WEB_STREAM_MODES`): the web golden, runs of chunks of one
    /// message reduced to one entry ([`replay_core::web_shapes`]).
    Web,
}
