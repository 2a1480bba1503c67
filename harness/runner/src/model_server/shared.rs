//! What every part of the model server names: its error ([`ModelServerError`]), its two
//! request headers and the problem hook. Apart from `mod.rs` (the routes and
//! [`ModelServer`](super::ModelServer)'s lifecycle) so that no child module of the model server
//! imports its parent (a tidy test holds it); the handlers' state ([`Shared`](super::backend::Shared))
//! is the backend's, the answering of one call at any wire `wires.rs`'s.

use std::path::PathBuf;
use std::sync::Arc;

use replay_core::recording::RecordingFileError;
use replay_core::{BuildError, FixtureError};

use super::problems::Problem;

// The two request headers are keyless's protocol names, defined once in replay-core with the
// older spellings still accepted: the reset token only the process that started the server may
// send (never the gateway under test), and the caller a gateway may name (`lead_agent`,
// `middleware:title`, `suggest_agent`, `subagent:<name>`, or a run name the caller rules of
// `docs/replay-and-fixtures.md` normalise; without it the server infers the caller).
pub use replay_core::protocol::{CALLER_HEADER, RESET_TOKEN_HEADER};

/// Called with every problem the moment it happens (the CLI prints it).
pub(crate) type ProblemHook = Arc<dyn Fn(&Problem) + Send + Sync>;

/// Why the server could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum ModelServerError {
    /// Fixture mode was given no fixture.
    #[error("the model server needs at least one fixture")]
    NoFixture,
    /// A fixture could not be loaded.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// Two fixtures have the same file name, so a driver could not tell them apart.
    #[error("fixtures {} and {} have the same name {stem:?}; a driver selects fixtures by name", .first.display(), .second.display())]
    DuplicateFixture {
        /// The name.
        stem: String,
        /// The first file.
        first: PathBuf,
        /// The second file.
        second: PathBuf,
    },
    /// The recording could not be read, written or finished.
    #[error(transparent)]
    Recording(#[from] RecordingFileError),
    /// The recording was made at a gateway's provider boundary, not at the wire.
    #[error(
        "recording {}: call 0 was recorded at a gateway's provider boundary (cargo xtask record, cargo xtask recordings), not at the model's wire; the model server strictly replays recordings it made itself (cargo xtask model-server --record)",
        .0.display()
    )]
    NotAWireRecording(PathBuf),
    /// The finished recording holds a form of the proxy's API key (checked before it is kept).
    #[error(
        "recording {}: call {call} holds a form of the API key (in one string or across its \
         deltas); {}",
        .path.display(),
        if *.removed { "the recording was deleted, since a key must not reach a file" }
        else { "the recording could not be deleted: delete it yourself" }
    )]
    SecretInRecording {
        /// The recording.
        path: PathBuf,
        /// The call's index.
        call: usize,
        /// Whether the file was deleted.
        removed: bool,
    },
    /// The finished recording holds a form of a known secret in an exchange of another
    /// boundary (MCP, HTTP, embeddings), checked as the calls are.
    #[error(
        "recording {}: exchange {exchange} holds a form of a known secret; {}",
        .path.display(),
        if *.removed { "the recording was deleted, since a key must not reach a file" }
        else { "the recording could not be deleted: delete it yourself" }
    )]
    SecretInExchange {
        /// The recording.
        path: PathBuf,
        /// The exchange's index.
        exchange: usize,
        /// Whether the file was deleted.
        removed: bool,
    },
    /// The upstream URL or HTTP client is unusable.
    #[error("upstream: {0}")]
    Upstream(String),
    /// The fixture could not be built from the recording.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// The listener could not bind 127.0.0.1.
    #[error("listen on 127.0.0.1:{port}: {source}")]
    Listen {
        /// The port asked for.
        port: u16,
        /// Why.
        source: std::io::Error,
    },
}
