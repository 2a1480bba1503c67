//! `gateway-under-test`: a real agent gateway, wire-compatible with the DeerFlow gateway's HTTP/SSE
//! contract (`../shared/spec/gateway-contract.md`).
//!
//! It knows nothing of record or replay: models come from a [`models::ProviderRegistry`] that
//! embedding crates fill by name before the app starts.

pub mod auth;
pub mod config;
pub mod messages;
pub mod models;
pub mod store;
pub mod tools;
