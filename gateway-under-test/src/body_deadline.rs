//! A deadline for a whole request body. `tower_http`'s `TimeoutBody` ends a body that goes
//! silent, but a client that sends one byte just inside that timeout, again and again, would hold
//! its connection (one of the `max_connections` slots) for as long as it likes; with the
//! connection bound, a few hundred such clients would lock everyone else out. This wrapper fails
//! the body once its deadline has passed since the request arrived, however steadily it trickles.
//!
//! A body that has ended is never polled again, so a request whose body arrived in time is not
//! touched by the deadline afterwards (a long SSE response included).

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::BoxError;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Sleep, sleep};

/// The error a body reports once its deadline has passed; the body extractors of `http` answer
/// it with 408.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive within its deadline")]
pub(crate) struct BodyDeadlineElapsed;

pin_project! {
    /// `inner`, failing with [`BodyDeadlineElapsed`] once `deadline` has fired.
    pub(crate) struct DeadlineBody<B> {
        #[pin]
        inner: B,
        #[pin]
        deadline: Sleep,
    }
}

impl<B> DeadlineBody<B> {
    /// `inner`, which must have ended within `limit` from now.
    pub(crate) fn new(limit: Duration, inner: B) -> DeadlineBody<B> {
        DeadlineBody {
            inner,
            deadline: sleep(limit),
        }
    }
}

impl<B> Body for DeadlineBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        if this.deadline.poll(cx).is_ready() {
            return Poll::Ready(Some(Err(Box::new(BodyDeadlineElapsed))));
        }
        this.inner.poll_frame(cx).map_err(Into::into)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Full, StreamBody};

    /// A body that sends `chunks` one byte each, `gap` apart.
    fn trickle(
        chunks: usize,
        gap: Duration,
    ) -> impl Body<Data = bytes::Bytes, Error = std::convert::Infallible> {
        let frames = futures::stream::unfold(0, move |sent| async move {
            if sent == chunks {
                return None;
            }
            tokio::time::sleep(gap).await;
            Some((Ok(Frame::data(bytes::Bytes::from_static(b"x"))), sent + 1))
        });
        StreamBody::new(frames)
    }

    #[tokio::test(start_paused = true)]
    async fn a_body_that_trickles_past_its_deadline_fails_and_one_within_it_arrives_whole() {
        // (body, deadline, the bytes it should yield, or None for the deadline error)
        let within = DeadlineBody::new(Duration::from_secs(10), trickle(5, Duration::from_secs(1)));
        let past = DeadlineBody::new(Duration::from_secs(10), trickle(50, Duration::from_secs(1)));
        assert_eq!(within.collect().await.unwrap().to_bytes(), "xxxxx");
        let error = past.collect().await.unwrap_err();
        assert!(error.is::<BodyDeadlineElapsed>(), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_whole_body_is_read_at_once() {
        let body = DeadlineBody::new(Duration::from_secs(1), Full::new(bytes::Bytes::from("{}")));
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
    }
}
