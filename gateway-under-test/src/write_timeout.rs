//! The write timeout of `serve` (`server.write_timeout_secs`, docs/gateway-contract.md §0,
//! "Connections"): a connection whose writes make no progress for that long fails with
//! `TimedOut`, so hyper closes it and its slot frees.
//!
//! **Why.** hyper has no write timeout: a client that pipelines requests and never reads the
//! answers fills its socket buffers, and the connection then waits forever on a write. The timer
//! starts when a write, flush or shutdown first returns `Pending` and is cleared by any that
//! completes, so a slow reader that keeps reading is never cut; only a stall is.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// An I/O stream whose writes fail once they have stalled for `timeout`.
#[derive(Debug)]
pub(crate) struct WriteTimeout<T> {
    inner: T,
    timeout: Duration,
    /// Armed while a write is pending.
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<T> WriteTimeout<T> {
    pub(crate) fn new(inner: T, timeout: Duration) -> WriteTimeout<T> {
        WriteTimeout {
            inner,
            timeout,
            stalled: None,
        }
    }

    /// Passes a completed operation through (clearing the timer) and turns a pending one into
    /// `TimedOut` once the timer has run out.
    fn watch<R>(&mut self, cx: &mut Context<'_>, poll: Poll<io::Result<R>>) -> Poll<io::Result<R>> {
        if poll.is_ready() {
            self.stalled = None;
            return poll;
        }
        let timeout = self.timeout;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(timeout)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client read nothing within the write timeout",
            ))),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for WriteTimeout<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for WriteTimeout<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.watch(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.watch(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_flush(cx);
        self.watch(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.watch(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// A write the peer never reads stalls; after the timeout it fails instead of waiting on.
    #[tokio::test(start_paused = true)]
    async fn one_client_holding_every_slot_a_stalled_write_fails_after_the_timeout() {
        let (near, _far) = tokio::io::duplex(16);
        let mut stream = WriteTimeout::new(near, Duration::from_secs(3));
        let started = tokio::time::Instant::now();
        let err = stream
            .write_all(&[0u8; 64])
            .await
            .expect_err("the peer never reads");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert_eq!(started.elapsed(), Duration::from_secs(3));
    }

    /// Progress clears the timer: a reader that keeps reading is never cut.
    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_that_keeps_reading_is_not_cut() {
        use tokio::io::AsyncReadExt;
        let (near, mut far) = tokio::io::duplex(16);
        let reader = tokio::spawn(async move {
            let mut received = Vec::new();
            let mut chunk = [0u8; 16];
            while let Ok(n @ 1..) = far.read(&mut chunk).await {
                received.extend_from_slice(&chunk[..n]);
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            received.len()
        });
        let mut stream = WriteTimeout::new(near, Duration::from_secs(3));
        stream.write_all(&[0u8; 64]).await.expect("progress");
        drop(stream);
        assert_eq!(reader.await.expect("reader"), 64);
    }
}
