//! xtask's integration tests as one binary: each file below stays where it was and is one module
//! here (`cargo test -p xtask --test integration cli::` runs one file's tests). One binary, not
//! one per file, because each links the gateway and the harness.
//!
//! Each file is declared with `#[path]` so that its own `mod support;` (and `recordings.rs`'s
//! `#[path]` module) resolves beside it, as it did when the file was a binary's root.

// `cli.rs` and `record.rs` each keep their own `mod support;`, as when each was a binary, so
// that small module compiles once per file using it; one declaration here would change every
// file's imports (and the merges of whoever edits them).
#![allow(clippy::duplicate_mod)]

#[path = "cli.rs"]
mod cli;
#[path = "model_server.rs"]
mod model_server;
#[path = "record.rs"]
mod record;
#[path = "recordings.rs"]
mod recordings;
