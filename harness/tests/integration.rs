//! The package's libtest integration tests as one binary: each file below stays where it was and
//! is one module here (`cargo test -p harness --test integration wire::` runs one file's tests).
//! One binary, not one per file, because each links the whole gateway: CI compiled and linked
//! the same code once per file. The datatest-stable tests per fixture are the `golden` binary.
//!
//! Each file is declared with `#[path]` so that its own `mod support;` resolves beside it, in
//! `harness/tests/support/`, as it did when the file was a binary's root.

// `record.rs` and `wire.rs` each keep their own `mod support;`, as when each was a binary, so
// that small module compiles once per file using it; one declaration here would change every
// file's imports (and the merges of whoever edits them).
#![allow(clippy::duplicate_mod)]

#[path = "drift.rs"]
mod drift;
#[path = "embeddings.rs"]
mod embeddings;
#[path = "http_clients.rs"]
mod http_clients;
#[path = "ollama.rs"]
mod ollama;
#[path = "record.rs"]
mod record;
#[path = "recording_round_trip.rs"]
mod recording_round_trip;
#[path = "replay_gateway.rs"]
mod replay_gateway;
#[path = "tidy.rs"]
mod tidy;
#[path = "wire.rs"]
mod wire;
#[path = "wire_web.rs"]
mod wire_web;
#[path = "wires.rs"]
mod wires;
