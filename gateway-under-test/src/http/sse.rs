//! SSE framing of a run's stream (`docs/gateway-contract.md` §5): `event`, `data`, `id` lines in
//! that order, `end` last with `data: null` and no id, `gap` when a reconnect cursor fell out of
//! the buffer, heartbeat comments when idle, and cancellation of the run when the client goes away.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::http::HeaderValue;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::{Stream, StreamExt, stream};
use serde_json::json;

use crate::runtime::runs::ActiveRun;
use crate::runtime::stream::{Frame, Gap, Subscription};

/// Cancels the run when the client disconnects before the run ends, unless the run was started
/// with `on_disconnect=continue`.
#[derive(Debug)]
pub struct DisconnectGuard {
    run: Arc<ActiveRun>,
}

impl DisconnectGuard {
    /// A guard for `run`.
    pub fn new(run: Arc<ActiveRun>) -> DisconnectGuard {
        DisconnectGuard { run }
    }
}

impl Drop for DisconnectGuard {
    fn drop(&mut self) {
        if !self.run.is_done() && !self.run.continue_on_disconnect {
            tracing::info!(run_id = %self.run.record().run_id, "client disconnected; cancelling run");
            self.run.cancel.cancel();
        }
    }
}

fn frame_event(frame: &Frame) -> Event {
    Event::default()
        .event(&frame.event)
        .data(&*frame.data)
        .id(&frame.id)
}

fn end_event() -> Event {
    Event::default().event("end").data("null")
}

/// The frames of a subscription, then `end`.
pub fn frames(
    subscription: Subscription,
    guard: Option<DisconnectGuard>,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + use<> {
    let backlog = stream::iter(subscription.backlog.into_iter().map(|f| frame_event(&f)));
    let live = stream::unfold((subscription.live, guard), |(mut live, guard)| async move {
        live.recv()
            .await
            .map(|frame| (frame_event(&frame), (live, guard)))
    });
    backlog
        .chain(live)
        .chain(stream::once(async { end_event() }))
        .map(Ok)
}

/// Only `end`: joining a run whose buffer is gone.
pub fn end_only() -> impl Stream<Item = Result<Event, Infallible>> + Send + use<> {
    stream::once(async { Ok(end_event()) })
}

/// The `gap` frame, and nothing after it.
pub fn gap(
    run_id: &str,
    gap: &Gap,
) -> impl Stream<Item = Result<Event, Infallible>> + Send + use<> {
    let data = json!({
        "code": "stream_replay_gap",
        "run_id": run_id,
        "requested_event_id": gap.requested,
        "earliest_available_event_id": gap.earliest,
        "latest_available_event_id": gap.latest,
        "recovery": "reload_durable_state",
    });
    stream::once(async move { Ok(Event::default().event("gap").data(data.to_string())) })
}

/// An SSE response with the contract's headers.
pub fn response<S>(events: S, heartbeat: Duration, content_location: Option<String>) -> Response
where
    S: Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut response = Sse::new(events)
        .keep_alive(KeepAlive::new().interval(heartbeat).text("heartbeat"))
        .into_response();
    let headers = response.headers_mut();
    headers.insert("cache-control", HeaderValue::from_static("no-cache"));
    headers.insert("connection", HeaderValue::from_static("keep-alive"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    if let Some(location) = content_location.and_then(|l| HeaderValue::from_str(&l).ok()) {
        headers.insert("content-location", location);
    }
    response
}
