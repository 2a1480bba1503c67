//! The provider-boundary recording format (`docs/recording-format.md` §2 to §8, §11 and §13): one
//! JSONL record per model call, holding the redacted request and the stream of events that came
//! back, written append-only and replayed strictly by call order.
//!
//! Requests are `serde_json::Value` payloads; events are this crate's typed [`RecordedEvent`],
//! whose serde form is the format. Nothing here knows a gateway type. The private modules, whose
//! items are re-exported here:
//!
//! - `event`: the recorded stream's event, [`RecordedEvent`], parsed once at the boundary
//!   ([`RecordedEvent::parse`], failing with an [`EventError`]);
//! - `rows`: versions, outcomes, the request, the parsed [`Recording`] and the
//!   [`RecordingFileError`];
//! - `redact`: the secret redaction applied before writing and before comparing ([`redact()`]);
//! - `split_secrets`: a known secret split over a stream's deltas ([`DeltaHold`]) and the check
//!   of finished calls for one ([`KnownSecrets::first_in_calls`]);
//! - `reader`: the strict reader and the read-permission rules ([`read_recording`]);
//! - `writer`: the locked, append-only [`RecordingSink`] and its per-call [`CallWriter`];
//! - `strict_replay`: the [`StrictReplayer`] and its value-free [`ReplayMismatch`].
//!
//! The managed-recordings folder, configuration and CLI (§9, §10, §12) live in the `harness`
//! package (`recording_store`).

mod event;
mod reader;
mod redact;
mod rows;
mod split_secrets;
mod strict_replay;
mod writer;

#[cfg(test)]
mod tests;

pub use event::{EventError, FieldKind, FieldProblem, RecordedEvent};
pub use reader::{Access, parse_recording, read_recording};
pub use redact::{
    KnownSecrets, MIN_KNOWN_SECRET_LEN, PLACEHOLDER as SECRET_PLACEHOLDER, redact, redact_text,
};
pub use rows::{Outcome, RecordedCall, RecordedRequest, Recording, RecordingFileError};
pub use split_secrets::{DeltaHold, SecretFound};
pub use strict_replay::{ReplayMismatch, StrictReplayError, StrictReplayer};
pub use writer::{CallWriter, RecordingSink, lock_path_for};
