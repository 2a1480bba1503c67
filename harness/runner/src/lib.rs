//! `keyless-runner`: the part of keyless (keyless contract tests for agent gateways) that never
//! names a gateway type, so a gateway in any language is tested through it and the `keyless`
//! binary compiles no gateway. Its implementation modules are private (`schedule` and `suite`
//! are public as they are); the root holds what a library user needs to run a fixture, and the
//! namespaces below re-export the rest, grouped by audience.
//!
//! The root:
//! - [`run`]: the one run API, one fixture ([`FixtureInput`]) through a [`GatewayTarget`] as
//!   [`RunOptions`] say ([`Drive`], [`Transcripts`], [`IgnoredEvents`], [`FIXTURE_TIME_LIMIT`]),
//!   returning a [`ScenarioRun`] (its [`Dropped`] frames, [`RunFailed`]) whose
//!   [`Verdict`](replay_core::Verdict) is the one verdict; [`HarnessError`] says why a fixture
//!   could not run; [`runtime`] is the tokio runtime it needs.
//! - The targets: [`AtUrl`] (a gateway that runs elsewhere), [`Launched`] (a [`GatewayCommand`]
//!   started for each fixture), [`Reused`] (one started once for several), each answering a
//!   [`ModelLedger`] at the end of a run.
//! - [`ModelServer`] ([`ServerOptions`], [`Mode`]): the server that replays (or records) at the
//!   model's five wires, for a gateway in its own process; [`Problem`] is what it reports.
//! - [`Session`]: one session over the dialect an [`Api`] names ([`DriveOptions`]), producing a
//!   [`RunTranscript`] or a [`DriverError`].
//!
//! The namespaces:
//! - [`session`]: a dialect's details (authentication, SSE frames, stream modes, DeerFlow's chat
//!   page and its [`WebClient`](session::WebClient));
//! - [`server`]: the model server's limits, recording configuration, its `/_keyless/*` client and
//!   headers, and the [`ReplayLog`](server::ReplayLog) of what a replay served;
//! - [`goldens`]: goldens as insta snapshots, pending goldens accepted or reviewed, read as
//!   regular files, never through a link;
//! - [`recordings`]: the managed recordings store and the record/replay decision for launchers,
//!   and a recorded run's files;
//! - [`process`]: what a launched gateway left behind and how it is stopped (Linux);
//! - [`suite`]: what a suite of fixtures prints (the table, JSON lines, problem lines);
//! - [`schedule`]: a suite run in jobs, told as events to reporters (`keyless test`).
//! - [`boundary`]: the boundaries besides the model's chat wire as `keyless.toml` configures
//!   them (`[http.<name>]`, `[mcp.<name>]`), where a gateway reaches them (placeholders, variables)
//!   and the ledger of their exchanges; [`mcp`]: the MCP boundary.
//! - [`faults`]: fault scenarios (`<scenario>.<mode>@<fault>.faults.toml`), a fixture with
//!   faults the model server applies.
//!
//! The binding to this workspace's own gateway (`gateway-under-test` booted in-process) is the
//! `harness` package's, which depends on this crate; this crate never depends on it.

pub mod boundary;
mod driver;
pub mod faults;
mod golden;
mod ignored;
mod launched;
mod layer1;
pub mod mcp;
mod model_server;
mod pending;
mod processes;
mod recorded;
mod recording_store;
mod regular_file;
mod replay_log;
mod reused;
pub mod run_ca;
pub mod schedule;
pub mod suite;
mod target;

// The root: run a fixture, through a target, against a model server, over a session.
pub use driver::{Api, DriveOptions, DriverError, RunTranscript, Session};
pub use ignored::{Dropped, IgnoredEvents};
pub use launched::{GatewayCommand, Launched};
pub use layer1::{
    Drive, FIXTURE_TIME_LIMIT, FixtureInput, RunFailed, RunOptions, ScenarioRun, Transcripts, run,
    runtime,
};
pub use model_server::{Mode, ModelServer, Problem, ServerOptions};
pub use reused::Reused;
pub use target::{AtUrl, GatewayTarget, HarnessError, ModelLedger};

/// A dialect's details: its authentication header, the SSE frames and exchanges of a run, the
/// stream modes, and DeerFlow's chat page.
pub mod session {
    pub use crate::driver::deerflow::{Page, PageRuns, WebClient};
    pub use crate::driver::{
        AuthHeader, AuthHeaderError, Exchange, Protocol, RunContext, SseEvent, StreamModes,
        UnknownApi,
    };
}

/// The model server's details: its error, limits, recording configuration, the client of its
/// `/_keyless/*` routes and their headers, and the log of what a replay served and missed.
pub mod server {
    pub use crate::model_server::{
        AwsCredentials, CALLER_HEADER, ClientError, DEFAULT_CALL_TIME_LIMIT,
        DEFAULT_RECORDING_MAX_BYTES, FaultFired, ModelServerClient, ModelServerError,
        RESET_TOKEN_HEADER, RecordConfig, RecordLimits, RecordedFixture, ResetReply, ServeLimits,
        ServerState, Unreached, UpstreamReach, normalized,
    };
    pub use crate::replay_log::ReplayLog;
}

/// Goldens as insta snapshots, pending goldens accepted or reviewed, read as regular files.
pub mod goldens {
    pub use crate::golden::{
        GoldenError, WEB_GOLDEN_SUFFIX, escaped_name, golden_check, golden_path, golden_status,
        read_golden, stem_of,
    };
    pub use crate::pending::{
        CutDiff, Pending, PendingError, accept as accept_pending, diff as pending_diff,
        diff_within as pending_diff_within, find as find_pending, pending, pending_path,
        reject as reject_pending, write_pending,
    };
    pub use crate::regular_file::{FileError, exists_regular};
}

/// The managed recordings store and the record/replay decision for launchers; a recorded run's
/// files.
pub mod recordings {
    pub use crate::recorded::{
        WriteError, create_parent, meta_path_for, redacted_scenario, summary_lines, warning_lines,
        write_fixture, write_meta,
    };
    pub use crate::recording_store::{
        Activation, BLOCKED_MESSAGE, Deleted, Mode as RecordReplayMode, PruneReport, RecordReplay,
        Recorded, RecordingInfo, RecordingsError, RecordingsHome, Shown, terminal_confirmation,
    };
}

/// A launched gateway's processes: why one could not start or ended early, its log, and every
/// process a gateway command left behind, found by its mark or its parent chain (Linux).
pub mod process {
    pub use crate::launched::{GatewayExited, LaunchError, LogTail, RESET_TOKEN_VAR};
    pub use crate::processes::{
        Signal, become_subreaper, descendants_of, exec_tied_to_parent, signal_all,
    };
}
