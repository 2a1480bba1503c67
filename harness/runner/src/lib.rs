//! `keyless-runner`: the part of keyless (keyless contract tests for agent gateways) that never
//! names a gateway type, so a gateway in any language is tested through it and the `keyless`
//! binary compiles no gateway.
//!
//! - [`driver`]: the HTTP wire driver (register → thread → `runs/stream`, the web client's
//!   requests); [`transcript`]: what a streamed run produced, each frame's data parsed once.
//! - [`layer1`]: one fixture through a gateway [`target`] and its verdict and report; [`target`]:
//!   the [`GatewayTarget`](target::GatewayTarget) interface and [`AtUrl`](target::AtUrl), a
//!   gateway that runs elsewhere against a model server.
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
pub mod transcript;
