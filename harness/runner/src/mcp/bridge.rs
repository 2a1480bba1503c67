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
//!
//! Requests are sent one at a time, in the order the client wrote them, and each answer's
//! messages reach stdout as they arrive; notifications and the client's answers to what the
//! server asked (sampling, elicitation) are sent at once, even while a call waits, because the
//! call may be waiting for exactly that answer (the server asks mid-call, as the route relays it
//! while recording).

use std::sync::Arc;

use eventsource_stream::Eventsource;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use super::message::{Incoming, SESSION_HEADER, error_response};

/// Why the bridge stopped.
#[derive(Debug, thiserror::Error)]
pub enum BridgeError {
    /// Reading stdin or writing stdout failed.
    #[error("mcp-stdio: {0}")]
    Io(#[from] std::io::Error),
}

/// The session the route issued on `initialize`, shared by every message sent after it.
type Session = Arc<Mutex<Option<String>>>;

/// Bridges `input` (one message per line) to `url` and the answers to `output` until `input`
/// ends (and the last call is answered).
pub async fn bridge_stdio<R, W>(url: &str, input: R, output: W) -> Result<(), BridgeError>
where
    R: AsyncBufRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let (sender, receiver) = unbounded_channel();
    let (relayed, written) = tokio::join!(
        relay_lines(url, input, sender),
        write_lines(receiver, output)
    );
    relayed?;
    written
}

/// Sends each line of `input` to `url`, the answers' messages to `sender`.
async fn relay_lines<R>(
    url: &str,
    input: R,
    sender: UnboundedSender<Value>,
) -> Result<(), BridgeError>
where
    R: AsyncBufRead + Unpin,
{
    let client = reqwest::Client::new();
    let session: Session = Arc::default();
    let mut call_in_flight: Option<tokio::task::JoinHandle<()>> = None;
    let mut lines = input.lines();
    while let Some(line) = lines.next_line().await? {
        if line.trim().is_empty() {
            continue;
        }
        match Incoming::read(line.as_bytes()) {
            Ok(Incoming::Request(call)) => {
                // One call at a time, in the client's order: the one before is answered first.
                if let Some(previous) = call_in_flight.take() {
                    let _ = previous.await;
                }
                let (client, url, session, sender) = (
                    client.clone(),
                    url.to_owned(),
                    Arc::clone(&session),
                    sender.clone(),
                );
                call_in_flight = Some(tokio::spawn(async move {
                    if let Err(message) = post(&client, &url, &session, line, &sender).await {
                        let _ = sender.send(error_response(&call.id, &message));
                    }
                }));
            }
            _ => {
                if let Err(message) = post(&client, url, &session, line, &sender).await {
                    eprintln!("keyless mcp-stdio: {message}");
                }
            }
        }
    }
    if let Some(last) = call_in_flight.take() {
        let _ = last.await;
    }
    let session = session.lock().take();
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

/// Writes each message to `output` as one line, until every sender is gone.
async fn write_lines<W>(
    mut receiver: UnboundedReceiver<Value>,
    mut output: W,
) -> Result<(), BridgeError>
where
    W: AsyncWrite + Unpin,
{
    while let Some(message) = receiver.recv().await {
        output.write_all(message.to_string().as_bytes()).await?;
        output.write_all(b"\n").await?;
        output.flush().await?;
    }
    Ok(())
}

/// POSTs one message, the session carried (and kept when the route issues one); each message
/// of the answer goes to `sender` as it arrives. `Err`: why there is no answer.
async fn post(
    client: &reqwest::Client,
    url: &str,
    session: &Session,
    line: String,
    sender: &UnboundedSender<Value>,
) -> Result<(), String> {
    let mut request = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(line);
    let carried = session.lock().clone();
    if let Some(carried) = carried {
        request = request.header(SESSION_HEADER, carried);
    }
    let response = (request.send().await)
        .map_err(|err| format!("keyless mcp-stdio cannot reach {url}: {err}"))?;
    if let Some(issued) = (response.headers().get(SESSION_HEADER)).and_then(|v| v.to_str().ok()) {
        *session.lock() = Some(issued.to_owned());
    }
    let status = response.status();
    if status == reqwest::StatusCode::ACCEPTED {
        return Ok(());
    }
    let is_sse = (response.headers().get("content-type"))
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_sse {
        let body = (response.bytes().await).map_err(|err| format!("{url}: {err}"))?;
        return match serde_json::from_slice::<Value>(&body) {
            // A refusal's body is a JSON-RPC error too: the client reads it as the answer.
            Ok(message) if message.get("jsonrpc").is_some() => {
                let _ = sender.send(message);
                Ok(())
            }
            _ => Err(format!(
                "{url} answered {status}: {}",
                String::from_utf8_lossy(&body)
            )),
        };
    }
    let mut events = response.bytes_stream().eventsource();
    while let Some(event) = events.next().await {
        let event = event.map_err(|err| format!("{url}: {err}"))?;
        if let Ok(message) = serde_json::from_str::<Value>(&event.data) {
            let _ = sender.send(message);
        }
    }
    Ok(())
}
