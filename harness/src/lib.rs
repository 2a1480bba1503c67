//! `harness`: keyless, deterministic end-to-end contract tests for LLM agent gateways.
//!
//! Record one real model run once; from then on every `cargo test` replays it through the real
//! gateway in-process, reduces the gateway's Server-Sent Events to their protocol shape, and
//! compares that shape with a committed golden snapshot.
//!
//! The generic replay core (canonical hashing, fixtures, the replay engine, shapes,
//! first-difference diffs, the recording format) is its own crate, `replay_core`, and what
//! drives any gateway without naming one (the driver, the one run API against a target, the
//! model server, goldens, the recordings store) is `keyless_runner`, used through its root; this
//! crate holds what binds them to this workspace's gateway:
//!
//! - [`adapter`]: binds the core to `gateway-under-test` (the replay and recording models, the
//!   hermetic configuration, in-process boot, record/replay activation).
//! - [`in_process`]: the in-process target and this workspace's run options (its `golden/`,
//!   DeerFlow's chat page with the hermetic model); [`web_flow`]: what reads a page's run here
//!   (the messages golden, the node order); [`workspace`]: this workspace's folders.
//! - [`final_messages`]: the value-level golden of a thread's final messages.
//! - [`record_run`]: recording a scenario and building its fixture.
//! - [`replay_gateway`]: replay gateways for a browser (the client served beside the API, a
//!   replay log written as calls hit or miss), behind `cargo xtask replay-gateway` and Layer 2.
//! - With the `stand-in` feature (tests and `cargo xtask fixtures stand-in` only): `stand_in`,
//!   a scripted OpenAI-compatible server (a test double), and `scenarios`, the shipped scenarios
//!   with the scripts that produced their fixtures.

pub mod adapter;
pub mod final_messages;
pub mod in_process;
pub mod record_run;
pub mod replay_gateway;
#[cfg(feature = "stand-in")]
pub mod scenarios;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod web_flow;
pub mod workspace;
