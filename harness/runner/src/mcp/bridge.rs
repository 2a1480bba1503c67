//! keyless's stdio stand-in for an MCP server (`keyless mcp-stdio --url …`, what
//! `{mcp_cmd:<name>}` runs): each line on stdin is one JSON-RPC message, POSTed to the model
//! server's `/_keyless/mcp/<name>`; every message of the answer (a JSON body, or each event of
//! an SSE stream) is written to stdout as one line. So stdio and Streamable HTTP share one
//! replay path and one recording path.
//!
//! The session header the route issues on `initialize` is carried on every later message, and
//! the session is ended (`DELETE`) when stdin closes. A message the route cannot answer (it is
//! down, it refused) is answered here with a JSON-RPC error naming the URL, so the client fails
//! loudly instead of waiting.

use eventsource_stream::Eventsource;
use futures::StreamExt;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use super::message::{Incoming, SESSION_HEADER, error_response};

/// Why the bridge stopped.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Reading stdin or writing stdout failed.
    #[error("mcp-stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// Bridges `input` (one message per line) to `url` and the answers to `output` until `input`
/// ends.
pub async fn bridge_stdio<R, W>(url: &str, input: R, mut output: W) -> Result<(), BridgeError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let client = reqwest::Client::new();
    let mut session: Option<String> = None;
    let mut lines = input.lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        let id = match Incoming::read(line.as_bytes()) {
            Ok(Incoming::Request(call)) => Some(call.id),
            _ => None,
        };
        let answer = post(&client, url, session.as_deref(), line).await;
        let messages = match answer {
            Ok((issued, messages)) => {
                if issued.is_some() {
                    session = issued;
                }
                messages
            }
            Err(message) => match id {
                Some(id) => vec![error_response(&id, &message)],
                None => {
                    eprintln!("keyless mcp-stdio: {message}");
                    Vec::new()
                }
            },
        };
        for message in messages {
            output.write_all(message.to_string().as_bytes()).await?;
            output.write_all(b"\n").await?;
        }
        output.flush().await?;
    }
    if let Some(session) = session {
        // The session's end is a courtesy to the server: nothing waits on it.
        let _ = client
            .delete(url)
            .header(SESSION_HEADER, session)
            .send()
            .await;
    }
    Ok(())
}

/// POSTs one message; the session issued (if any) and the answer's messages, or why there are
/// none.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: Option<&str>,
    line: String,
) -> Result<(Option<String>, Vec<Value>), String> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(line);
    if let Some(session) = session {
        request = request.header(SESSION_HEADER, session);
    }
    let response = (request.send().await)
        .map_err(|err| format!("keyless mcp-stdio cannot reach {url}: {err}"))?;
    let issued = (response.headers().get(SESSION_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let status = response.status();
    if status == reqwest::StatusCode::ACCEPTED {
        return Ok((issued, Vec::new()));
    }
    let is_sse = (response.headers().get("content-type"))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        let body = (response.bytes().await).map_err(|err| format!("{url}: {err}"))?;
        return match serde_json::from_slice::<Value>(&body) {
            // A refusal's body is a JSON-RPC error too: the client reads it as the answer.
            Ok(message) if message.get("jsonrpc").is_some() => Ok((issued, vec![message])),
            _ => Err(format!(
                "{url} answered {status}: {}",
                String::from_utf8_lossy(&body)
            )),
        };
    }
    let mut messages = Vec::new();
    let mut events = response.bytes_stream().eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|err| format!("{url}: {err}"))?;
        if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
            messages.push(message);
        }
    }
    Ok((issued, messages))
}
