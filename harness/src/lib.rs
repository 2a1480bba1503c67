//! `harness`: keyless, deterministic end-to-end contract tests for LLM agent gateways.
//!
//! Record one real model run once; from then on every `cargo test` replays it through the real
//! gateway in-process, reduces the gateway's Server-Sent Events to their protocol shape, and
//! compares that shape with a committed golden snapshot.
//!
//! The generic replay core (canonical hashing, fixtures, the replay engine, shapes,
//! first-difference diffs, the recording format) is its own crate, `replay_core`, and what
//! drives any gateway without naming one (the driver, the model server, the Layer 1 runner
//! against a target, goldens, the recordings store) is `keyless_runner`, re-exported here under
//! its old paths; this crate holds what binds them to this workspace's gateway:
//!
//! - [`adapter`]: binds the core to `gateway-under-test` (the replay and recording models, the
//!   hermetic configuration, in-process boot, record/replay activation).
//! - [`layer1`] and [`target`]: the runner's, plus the in-process target and runs
//!   (`in_process`); [`web_flow`]: one fixture through the gateway as DeerFlow's web client
//!   drives a chat page.
//! - [`final_messages`]: the value-level golden of a thread's final messages.
//! - [`record_run`]: recording a scenario and building its fixture.
//! - [`replay_gateway`]: replay gateways for a browser (the client served beside the API, a
//!   replay log written as calls hit or miss), behind `cargo xtask replay-gateway` and Layer 2.
//! - With the `stand-in` feature (tests and `cargo xtask fixtures stand-in` only): `stand_in`,
//!   a scripted OpenAI-compatible server (a test double), and `scenarios`, the shipped scenarios
//!   with the scripts that produced their fixtures.

pub mod adapter;
pub mod final_messages;
mod in_process;
pub mod record_run;
pub mod replay_gateway;
#[cfg(feature = "stand-in")]
pub mod scenarios;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod web_flow;
mod workspace;

// The gateway-free runner, under the paths this package's tests, benchmarks and xtask use.
pub use keyless_runner::{driver, model_server, recording_store};

/// Goldens: the runner's [`golden`](keyless_runner::golden), plus this workspace's folders
/// (`golden/`, `fixtures/`) and its goldens read by stem.
pub mod golden {
    pub use crate::workspace::{
        fixtures_dir, golden_dir, golden_status, read_golden, workspace_root,
    };
    pub use keyless_runner::golden::*;
}

/// Layer 1: the runner's [`layer1`](keyless_runner::layer1), plus the in-process runs of this
/// workspace's gateway.
pub mod layer1 {
    pub use crate::in_process::{
        run_fixture, run_fixture_on, run_fixture_on_within, run_fixture_with, run_fixture_within,
        run_loaded,
    };
    pub use keyless_runner::layer1::*;
}

/// Where Layer 1 sends its requests: the runner's [`target`](keyless_runner::target), plus
/// [`InProcess`](crate::in_process::InProcess), this workspace's gateway booted in this process.
pub mod target {
    pub use crate::in_process::InProcess;
    pub use keyless_runner::target::*;
}
