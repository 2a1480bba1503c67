//! `keyless-runner`: the part of keyless (keyless contract tests for agent gateways) that never
//! names a gateway type, so a gateway in any language is tested through it and the `keyless`
//! binary compiles no gateway.
//!
//! - [`run`] (in [`layer1`]): the one run API, one fixture through a [`GatewayTarget`] as
//!   [`RunOptions`] say, returning a [`ScenarioRun`] whose [`Verdict`](replay_core::Verdict) is
//!   the one verdict; [`target`]: the [`GatewayTarget`] interface, [`AtUrl`] (a gateway that runs
//!   elsewhere against a model server) and [`HarnessError`].
//! - [`driver`]: the HTTP wire driver, one [`Session`] over a `Dialect` per API (one file each
//!   under `driver/`, DeerFlow's holding its chat page, [`WebClient`]), and what a streamed run
//!   produced ([`RunTranscript`], each frame's data parsed once).
//! - [`launched`]: a gateway command started for each fixture; [`reused`]: one started once and
//!   kept for several fixtures.
//! - [`golden`]: goldens as insta snapshots; [`pending`]: pending goldens, accepted or
//!   reviewed; [`regular_file`]: their files and the gateway's logs, never through a link.
//! - [`model_server`]: an OpenAI-compatible server that replays (or records) at the model's
//!   wire, for a gateway that runs in its own process, in any language.
//! - [`replay_log`]: what a replay served and missed, as JSON lines the moment it happens.
//! - [`processes`]: every process a gateway command left behind, found by its mark or its
//!   parent chain (Linux).
//! - [`recording_store`]: the managed recordings store and the record/replay activation
//!   decision for launchers.
//!
//! The binding to this workspace's own gateway (`gateway-under-test` booted in-process) is the
//! `harness` package's, which depends on this crate; this crate never depends on it.

pub mod driver;
pub mod golden;
pub mod launched;
pub mod layer1;
pub mod model_server;
pub mod pending;
pub mod processes;
pub mod recorded;
pub mod recording_store;
pub mod regular_file;
pub mod replay_log;
pub mod reused;
pub mod suite;
pub mod target;

// The surface callers use (the `keyless` binary, the `harness` package, xtask, tests).
pub use driver::deerflow::{Page, PageRuns, WebClient};
pub use driver::{
    Api, AuthHeader, AuthHeaderError, DriveOptions, DriverError, Exchange, FramingRule,
    RunTranscript, Session, SseEvent, StreamModes, UnknownApi,
};
pub use golden::{
    GoldenError, WEB_GOLDEN_SUFFIX, golden_check, golden_path, golden_status, read_golden, stem_of,
};
pub use layer1::{
    Drive, DriveKind, FIXTURE_TIME_LIMIT, FixtureInput, RunFailed, RunOptions, ScenarioRun,
    Transcripts, run, runtime,
};
pub use target::{AtUrl, GatewayTarget, HarnessError, ModelLedger};
