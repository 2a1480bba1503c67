//! The model server's routes as one enum ([`Route`]): each route's method and path, and the
//! list of them that an unserved request's message names. The handlers each route calls are
//! `mod.rs`'s (the router), so this file imports nothing from its parent.

use axum::http::Method;
use replay_core::protocol;

use super::request::Wire;

/// Every route the model server serves; any other request is an `unserved_route` problem. A new
/// wire becomes served by a variant here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Route {
    /// `POST /v1/chat/completions`.
    ChatCompletions,
    /// `POST /chat/completions`, for clients whose base URL has no `/v1`.
    ChatCompletionsUnversioned,
    /// `POST /v1/messages`, Anthropic's Messages API (`wires.rs`).
    AnthropicMessages,
    /// `POST /v1/responses`, OpenAI's Responses API (`wires.rs`).
    Responses,
    /// `POST /v1beta/models/{model}:generateContent` and `:streamGenerateContent`, Google's
    /// Gemini API (`wires.rs`).
    Gemini,
    /// The same at `/v1/`.
    GeminiV1,
    /// `POST /model/{modelId}/converse`, AWS Bedrock's Converse API (`wires.rs`).
    BedrockConverse,
    /// `POST /model/{modelId}/converse-stream`.
    BedrockConverseStream,
    /// `POST /api/chat`, Ollama's native chat (`wires.rs`).
    OllamaChat,
    /// `POST /api/generate`, Ollama's native completion (`wires.rs`).
    OllamaGenerate,
    /// `GET /api/tags`, Ollama's model list (`mod.rs`).
    OllamaTags,
    /// `POST /api/show`, one Ollama model's facts (`mod.rs`).
    OllamaShow,
    /// `GET /api/version`, the Ollama API's version (`mod.rs`).
    OllamaVersion,
    /// `POST /v1/embeddings`, OpenAI's embeddings (`embeddings.rs`).
    Embeddings,
    /// `POST /embeddings`, for clients whose base URL has no `/v1`.
    EmbeddingsUnversioned,
    /// `POST /api/embed`, Ollama's embeddings (`embeddings.rs`).
    OllamaEmbed,
    /// `POST /api/embeddings`, Ollama's older embeddings route.
    OllamaEmbeddings,
    /// `POST /model/{modelId}/invoke`, Bedrock's InvokeModel on a Titan or Cohere embeddings
    /// model (`embeddings.rs`).
    BedrockInvoke,
    /// `GET /v1/models`.
    Models,
    /// `GET /models`.
    ModelsUnversioned,
    /// `GET /health`.
    Health,
    /// `GET /_keyless/misses` (alias `/_harness/misses`).
    Misses,
    /// `GET /_keyless/state` (alias `/_harness/state`).
    State,
    /// `POST /_keyless/reset` (alias `/_harness/reset`).
    Reset,
    /// Any method at `/_keyless/http/{name}/{*rest}`: a recorded HTTP API (`http.rs`).
    HttpBoundary,
    /// Any method at `/_keyless/http/{name}`, the API's base URL itself.
    HttpBoundaryRoot,
    /// `POST`, `DELETE` (and `GET`, answered 405) at `/_keyless/mcp/{name}`: a recorded MCP
    /// server over Streamable HTTP (`mcp_route.rs`).
    McpBoundary,
}

impl Route {
    /// Every served route.
    pub(crate) const ALL: [Route; 27] = [
        Route::ChatCompletions,
        Route::ChatCompletionsUnversioned,
        Route::AnthropicMessages,
        Route::Responses,
        Route::Gemini,
        Route::GeminiV1,
        Route::BedrockConverse,
        Route::BedrockConverseStream,
        Route::OllamaChat,
        Route::OllamaGenerate,
        Route::OllamaTags,
        Route::OllamaShow,
        Route::OllamaVersion,
        Route::Embeddings,
        Route::EmbeddingsUnversioned,
        Route::OllamaEmbed,
        Route::OllamaEmbeddings,
        Route::BedrockInvoke,
        Route::Models,
        Route::ModelsUnversioned,
        Route::Health,
        Route::Misses,
        Route::State,
        Route::Reset,
        Route::HttpBoundary,
        Route::HttpBoundaryRoot,
        Route::McpBoundary,
    ];

    /// Whether it answers every method (a boundary's route), not only its own.
    fn any_method(self) -> bool {
        matches!(
            self,
            Route::HttpBoundary | Route::HttpBoundaryRoot | Route::McpBoundary
        )
    }

    /// Its method (the one listed; a boundary's route takes any) and path.
    pub(crate) fn method_and_path(self) -> (Method, &'static str) {
        match self {
            Route::ChatCompletions => (Method::POST, "/v1/chat/completions"),
            Route::ChatCompletionsUnversioned => (Method::POST, "/chat/completions"),
            Route::AnthropicMessages => (Method::POST, "/v1/messages"),
            Route::Responses => (Method::POST, "/v1/responses"),
            Route::Gemini => (Method::POST, "/v1beta/models/{model_action}"),
            Route::GeminiV1 => (Method::POST, "/v1/models/{model_action}"),
            Route::BedrockConverse => (Method::POST, "/model/{model_id}/converse"),
            Route::BedrockConverseStream => (Method::POST, "/model/{model_id}/converse-stream"),
            Route::OllamaChat => (Method::POST, "/api/chat"),
            Route::OllamaGenerate => (Method::POST, "/api/generate"),
            Route::OllamaTags => (Method::GET, "/api/tags"),
            Route::OllamaShow => (Method::POST, "/api/show"),
            Route::OllamaVersion => (Method::GET, "/api/version"),
            Route::Embeddings => (Method::POST, "/v1/embeddings"),
            Route::EmbeddingsUnversioned => (Method::POST, "/embeddings"),
            Route::OllamaEmbed => (Method::POST, "/api/embed"),
            Route::OllamaEmbeddings => (Method::POST, "/api/embeddings"),
            Route::BedrockInvoke => (Method::POST, "/model/{model_id}/invoke"),
            Route::Models => (Method::GET, "/v1/models"),
            Route::ModelsUnversioned => (Method::GET, "/models"),
            Route::Health => (Method::GET, "/health"),
            Route::Misses => (Method::GET, protocol::MISSES_ROUTE.name),
            Route::State => (Method::GET, protocol::STATE_ROUTE.name),
            Route::Reset => (Method::POST, protocol::RESET_ROUTE.name),
            Route::HttpBoundary => (Method::GET, "/_keyless/http/{name}/{*rest}"),
            Route::HttpBoundaryRoot => (Method::GET, "/_keyless/http/{name}"),
            Route::McpBoundary => (Method::POST, "/_keyless/mcp/{name}"),
        }
    }

    /// The older spellings of its path, served by the same handler (`replay_core::protocol`).
    pub(crate) fn aliases(self) -> &'static [&'static str] {
        match self {
            Route::Misses => protocol::MISSES_ROUTE.aliases,
            Route::State => protocol::STATE_ROUTE.aliases,
            Route::Reset => protocol::RESET_ROUTE.aliases,
            _ => &[],
        }
    }

    /// `POST /v1/chat/completions, GET /v1/models, …`: what the server serves, for messages.
    pub(crate) fn listed() -> String {
        let routes: Vec<String> = Route::ALL
            .iter()
            .map(|route| {
                let (method, path) = route.method_and_path();
                match route.any_method() {
                    true => format!("ANY {path}"),
                    false => format!("{method} {path}"),
                }
            })
            .collect();
        routes.join(", ")
    }
}

/// The wire a path belongs to, so a refusal before routing (a foreign request, a body too large
/// or too slow) is worded in the shape its client reads; any path no other wire's is Chat
/// Completions'.
pub(crate) fn wire_of(path: &str) -> Wire {
    match path {
        "/v1/messages" => Wire::AnthropicMessages,
        "/v1/responses" => Wire::Responses,
        _ => Wire::ChatCompletions,
    }
}
