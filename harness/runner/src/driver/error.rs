//! The driver's error ([`DriverError`]): a failed step of the drive, naming the route.

use super::api::Api;

/// A failed step of the drive, naming the route.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The request could not be sent or its body not read.
    #[error("{route}: {source}")]
    Http {
        /// Method and path.
        route: String,
        /// What reqwest said.
        source: reqwest::Error,
    },
    /// The gateway answered with an unexpected status.
    #[error("{route}: expected {expected}, got {status}: {body}")]
    Status {
        /// Method and path.
        route: String,
        /// The expected status.
        expected: u16,
        /// The status received.
        status: u16,
        /// The response body (truncated).
        body: String,
    },
    /// Registration set no `csrf_token` cookie.
    #[error("{route}: no csrf_token cookie was set")]
    MissingCsrfCookie {
        /// Method and path.
        route: String,
    },
    /// A request of a driven page did not answer 2xx.
    #[error("{route} answered {status}: {body}")]
    PageRequest {
        /// Method and path.
        route: String,
        /// The status received.
        status: u16,
        /// The response body (truncated).
        body: String,
    },
    /// The LangGraph server lists no graph, or several, and no `--assistant` chose one.
    #[error(
        "POST {route}: {}; choose one with --assistant ID (or `assistant` in keyless.toml)",
        if .graphs.is_empty() { "the server lists no graph".to_owned() } else {
            format!("the server lists several graphs ({})", .graphs.join(", ")) }
    )]
    NoSingleAssistant {
        /// Method and path.
        route: String,
        /// The graph ids listed.
        graphs: Vec<String>,
    },
    /// An answer was not what the dialect expects.
    #[error("{route}: {message}")]
    Unexpected {
        /// Method and path.
        route: String,
        /// What was wrong.
        message: String,
    },
    /// One frame (or one line of it) of the event stream is longer than the driver reads.
    #[error(
        "{route}: SSE frame {frame} (counting from 0) is longer than {limit} bytes, which the \
         driver does not read (no gateway frame should be near it)"
    )]
    FrameTooLong {
        /// Method and path.
        route: String,
        /// The frame's index in the stream.
        frame: usize,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The whole event stream is longer than the driver reads.
    #[error(
        "{route}: the event stream is longer than {limit} bytes, which the driver does not read"
    )]
    StreamTooLong {
        /// Method and path.
        route: String,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The run's frames, as kept (their text and their parse), would pass what the driver holds.
    #[error(
        "{route}: SSE frame {frame} (counting from 0) takes the run's frames past {} MiB as \
         parsed JSON (estimated), which the driver does not hold",
        .limit / (1024 * 1024)
    )]
    ParsedTooLarge {
        /// Method and path.
        route: String,
        /// The frame's index in the stream.
        frame: usize,
        /// The bound, in bytes.
        limit: usize,
    },
    /// The dialect is not driven by this build yet.
    #[error("--api {api}: this dialect is not implemented yet")]
    Unsupported {
        /// The dialect.
        api: Api,
    },
    /// The fixture's mode is a label, where the dialect needs one of DeerFlow's UI modes.
    #[error(
        "the fixture's mode {mode:?} is a label; --api deerflow drives one of DeerFlow's UI modes \
         (flash, thinking, pro, ultra)"
    )]
    NoUiMode {
        /// The mode.
        mode: String,
    },
    /// The stream broke the protocol where its client would fail to read it.
    #[error("{route}: {message}")]
    Protocol {
        /// Method and path.
        route: String,
        /// What was wrong, naming the frame.
        message: String,
    },
    /// The SSE stream broke.
    #[error("{route}: the event stream broke: {message}")]
    Stream {
        /// Method and path.
        route: String,
        /// What went wrong.
        message: String,
    },
}
