//! `harness`: keyless, deterministic end-to-end contract tests for LLM agent gateways.
//!
//! Record one real model run once; from then on every `cargo test` replays it through the real
//! gateway in-process, reduces the gateway's Server-Sent Events to their protocol shape, and
//! compares that shape with a committed golden snapshot.
//!
//! The generic replay core (canonical hashing, fixtures, the replay engine, shapes,
//! first-difference diffs, the recording format) is its own crate, `replay_core`, which never
//! names a gateway type; this crate holds what binds it to one gateway and drives it:
//!
//! - [`adapter`]: binds the core to `gateway-under-test` (the replay and recording models, the
//!   hermetic configuration, in-process boot, record/replay activation).
//! - [`driver`]: the HTTP wire driver; [`layer1`]: one fixture through the gateway and its
//!   verdict; [`target`]: the gateway Layer 1 drives, in-process or at a URL; [`web_flow`]: one
//!   fixture through the gateway as DeerFlow's web client drives a chat page; [`golden`]:
//!   goldens in `golden/`; [`final_messages`]: the value-level golden of a thread's final
//!   messages.
//! - [`model_server`]: an OpenAI-compatible server that replays (or records) at the model's
//!   wire, for a gateway that runs in its own process, in any language.
//! - [`record_run`]: recording a scenario and building its fixture.
//! - [`replay_gateway`]: replay gateways for a browser (the client served beside the API, a
//!   replay log written as calls hit or miss), behind `cargo xtask replay-gateway` and Layer 2.
//! - [`recording_store`]: the managed recordings store behind `cargo xtask recordings` and the
//!   record/replay activation decision for launchers.
//! - With the `stand-in` feature (tests and `cargo xtask fixtures stand-in` only): `stand_in`,
//!   a scripted OpenAI-compatible server (a test double), and `scenarios`, the shipped scenarios
//!   with the scripts that produced their fixtures.

pub mod adapter;
pub mod driver;
pub mod final_messages;
pub mod golden;
pub mod layer1;
pub mod model_server;
pub mod record_run;
pub mod recording_store;
pub mod replay_gateway;
#[cfg(feature = "stand-in")]
pub mod scenarios;
#[cfg(feature = "stand-in")]
pub mod stand_in;
pub mod target;
pub mod web_flow;
