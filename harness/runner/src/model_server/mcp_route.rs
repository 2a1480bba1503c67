//! `/_keyless/mcp/<name>` on the model server: each `[mcp.<name>]` server served from the
//! server's mode (the active fixture's exchanges, or the recorder), through the MCP boundary's
//! own route logic (`crate::mcp`).

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use replay_core::Exchange;
use replay_core::recording::RecordingFileError;
use serde_json::json;

use super::backend::Shared;
use super::exchanges::{ExchangeRecorder, Exchanges};
use super::problems::Problem;
use crate::boundary::Boundaries;
use crate::mcp::{McpExchanges, McpServers, WriteExchange};

/// The configured MCP servers, to serve.
pub(super) fn servers(boundaries: &Boundaries) -> McpServers {
    (boundaries.mcp.iter()).fold(McpServers::new(), |servers, (name, upstream)| {
        servers.with(name.as_str(), upstream.clone())
    })
}

impl WriteExchange for ExchangeRecorder {
    fn write_exchange(&self, exchange: Exchange) -> Result<Exchange, RecordingFileError> {
        self.write(exchange)
    }

    fn learn_secret(&self, secret: &str) {
        ExchangeRecorder::learn_secret(self, secret);
    }
}

/// One request to the MCP server `name`.
pub(super) async fn serve(
    State(shared): State<Arc<Shared>>,
    Path(name): Path<String>,
    method: Method,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if shared.closed.load(std::sync::atomic::Ordering::SeqCst) {
        // As a model call then: credited to no fixture, never answered from either.
        let message = format!(
            "{method} /_keyless/mcp/{name} arrived between two runs: the gateway reused across \
             fixtures (--reuse-gateway) made it after its run, e.g. from a background task"
        );
        shared.report(Problem::CallBetweenRuns {
            message: message.clone(),
        });
        return (
            StatusCode::CONFLICT,
            Json(json!({"error": {"type": "keyless_call_between_runs", "message": message}})),
        )
            .into_response();
    }
    let exchanges = shared.backend.exchanges();
    let writer: Arc<dyn WriteExchange>;
    let exchanges = match &exchanges {
        Exchanges::Replay(replay) => McpExchanges::Replay(Some(replay)),
        Exchanges::Record(recorder) => {
            writer = Arc::clone(recorder) as Arc<dyn WriteExchange>;
            McpExchanges::Record(&writer)
        }
        Exchanges::Unserved(mode) => McpExchanges::Unserved(mode),
    };
    shared
        .mcp
        .handle(&name, &method, &headers, body, exchanges, &|miss| {
            // The run's ledger (and `keyless serve`'s tally) hears of it as of a model miss.
            shared.report(Problem::exchange_miss(miss));
        })
        .await
}
