//! `keyless-runner`: the part of keyless (keyless contract tests for agent gateways) that never
//! names a gateway type, so a gateway in any language is tested through it and the `keyless`
//! binary compiles no gateway. Its modules are private; what callers use is re-exported here.
//!
//! - [`run`]: the one run API, one fixture through a [`GatewayTarget`] as [`RunOptions`] say,
//!   returning a [`ScenarioRun`] whose [`Verdict`](replay_core::Verdict) is the one verdict
//!   (`layer1`); [`AtUrl`] drives a gateway that runs elsewhere against a model server,
//!   [`HarnessError`] says why a fixture could not run (`target`).
//! - The driver (`driver`): one [`Session`] over a dialect per [`Api`] (one file each under
//!   `driver/`, DeerFlow's holding its chat page, [`WebClient`]), and what a streamed run
//!   produced ([`RunTranscript`], each frame's data parsed once).
//! - [`Launched`]: a gateway command started for each fixture; [`Reused`]: one started once and
//!   kept for several fixtures; [`descendants_of`] and its kin: every process a gateway command
//!   left behind, found by its mark or its parent chain (Linux).
//! - Goldens as insta snapshots ([`golden_status`], [`read_golden`]), pending goldens accepted or
//!   reviewed ([`Pending`]), read as regular files, never through a link ([`FileError`]).
//! - [`ModelServer`]: an OpenAI-compatible server that replays (or records) at the model's wire,
//!   for a gateway that runs in its own process, in any language; [`ReplayLog`]: what a replay
//!   served and missed, as JSON lines the moment it happens.
//! - [`RecordingsHome`]: the managed recordings store and the record/replay [`Activation`]
//!   decision for launchers; [`write_fixture`] and its kin: a recorded run's files.
//! - [`table_line`], [`json_line`], [`problem_lines`]: what a suite of fixtures prints;
//!   [`schedule`]: a suite run in jobs, told as events to reporters (`keyless test`).
//!
//! The binding to this workspace's own gateway (`gateway-under-test` booted in-process) is the
//! `harness` package's, which depends on this crate; this crate never depends on it.

mod boundary;
mod driver;
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
pub mod schedule;
mod suite;
mod target;

// The surface callers use (the `keyless` binary, the `harness` package, xtask, tests): every
// module is private, and this is what the crate offers.

// The one run API and where it sends its requests.
pub use ignored::{Dropped, IgnoredEvents};
pub use launched::{
    GatewayCommand, GatewayExited, LaunchError, Launched, LogTail, RESET_TOKEN_VAR,
};
pub use layer1::{
    Drive, FIXTURE_TIME_LIMIT, FixtureInput, RunFailed, RunOptions, ScenarioRun, Transcripts, run,
    runtime,
};
pub use reused::Reused;
pub use target::{AtUrl, BoundaryLedger, GatewayTarget, HarnessError, ModelLedger};

// The boundaries besides the model's chat wire, as configured, and where the gateway reaches them.
pub use boundary::{
    BOUNDARY_ROUTE_PREFIX, Boundaries, BoundaryConfigError, BoundaryEndpoint, BoundaryName,
    EndpointKind, HttpUpstream, IgnoredField, PlaceholderError,
};

// The driver: one session over a dialect per API, DeerFlow's chat page.
pub use driver::deerflow::{Page, PageRuns, WebClient};
pub use driver::{
    Api, AuthHeader, AuthHeaderError, DriveOptions, DriverError, Exchange, Protocol, RunContext,
    RunTranscript, Session, SseEvent, StreamModes, UnknownApi,
};

// Goldens and pending goldens.
pub use golden::{
    GoldenError, WEB_GOLDEN_SUFFIX, escaped_name, golden_check, golden_path, golden_status,
    read_golden, stem_of,
};
pub use pending::{
    CutDiff, Pending, PendingError, accept as accept_pending, diff as pending_diff,
    diff_within as pending_diff_within, find as find_pending, pending, pending_path,
    reject as reject_pending, write_pending,
};
pub use regular_file::{FileError, exists_regular};

// The model server.
pub use model_server::{
    AwsCredentials, CALLER_HEADER, ClientError, DEFAULT_CALL_TIME_LIMIT,
    DEFAULT_RECORDING_MAX_BYTES, Mode, ModelServer, ModelServerClient, ModelServerError, Problem,
    RESET_TOKEN_HEADER, RecordConfig, RecordLimits, RecordedFixture, ResetReply, ServeLimits,
    ServerOptions, ServerState, Unreached, UpstreamReach, normalized,
};
pub use replay_log::ReplayLog;

// Recordings: the managed store, and a recorded run's files.
pub use recorded::{
    WriteError, create_parent, meta_path_for, redacted_scenario, summary_lines, warning_lines,
    write_fixture, write_meta,
};
pub use recording_store::{
    Activation, BLOCKED_MESSAGE, Deleted, Mode as RecordReplayMode, PruneReport, RecordReplay,
    Recorded, RecordingInfo, RecordingsError, RecordingsHome, Shown, terminal_confirmation,
};

// A suite of fixtures: the table, JSON lines and problem lines a run prints.
pub use suite::{
    error_chain, fixture_files, gateway_config_note, json_line, problem_lines, table_header,
    table_line,
};

// The processes a gateway command left behind.
pub use processes::{Signal, become_subreaper, descendants_of, exec_tied_to_parent, signal_all};
