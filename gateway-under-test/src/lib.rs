//! `gateway-under-test`: a real agent gateway, wire-compatible with the DeerFlow gateway's HTTP/SSE
//! contract (`docs/gateway-contract.md`).
//!
//! It knows nothing of record or replay: models come from a [`models::ProviderRegistry`] that
//! embedding crates fill by name before the app starts ([`app::AppBuilder::provider`]).

pub mod app;
pub mod auth;
mod body_deadline;
pub mod clock;
pub mod config;
mod connections;
pub mod http;
mod lock;
pub mod messages;
pub mod models;
pub mod run_status;
pub mod runtime;
mod serve;
mod server;
mod skills;
pub mod store;
pub mod tools;
pub mod workspace;
mod write_timeout;

pub use app::{App, AppBuilder, AppError};
pub use config::Config;
pub use server::RunningGateway;
