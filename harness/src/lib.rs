//! `harness`: keyless, deterministic end-to-end contract tests for LLM agent gateways.
//!
//! Record one real model run once; from then on every `cargo test` replays it through the real
//! gateway in-process, reduces the gateway's Server-Sent Events to their protocol shape, and
//! compares that shape with a committed golden snapshot.

pub mod core;
