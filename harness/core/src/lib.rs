//! `replay-core`: the generic replay core. Everything needed to replay a recorded LLM run by
//! content, with no dependency on any gateway, async runtime or HTTP stack, so another gateway's
//! harness can use it as it is (the `harness` package binds it to `gateway-under-test`).
//!
//! Messages are `serde_json::Value`s in LangChain's dict forms. The pieces:
//!
//! - [`pyjson`]: CPython-identical JSON text (the bytes that get hashed);
//! - [`normalize`](mod@normalize): the eight volatile-text rules;
//! - [`canonical`]: the replay key (canonical conversation, hashes, caller identity);
//! - [`fixture`]: fixture files, loading, validation and byte-exact writing;
//! - [`replay`]: the engine that serves recorded outputs and records misses;
//! - [`shapes`]: SSE shape extraction and golden documents;
//! - [`diff`]: the first-difference walk used to explain misses;
//! - [`recording`]: the versioned provider-boundary recording format (JSONL rows, redaction,
//!   the strict reader, the locked writer and strict replay).
//!
//! The specification is `replay-and-fixtures.md` §2 to §5 and §8.2, and `recording-format.md` §2
//! to §8, §11 and §13.

pub mod build_fixture;
pub mod canonical;
pub mod diff;
pub mod fixture;
pub mod normalize;
pub mod pyjson;
pub mod recording;
pub mod replay;
pub mod shapes;

pub use canonical::{
    DEFAULT_CALLER, ReplayKey, caller_identity, canonical_conversation, conversation_hash,
    input_hash, normalize_caller, replay_key,
};
pub use diff::{Difference, first_difference};
pub use fixture::{Fixture, FixtureError, Turn};
pub use normalize::{is_python_whitespace, normalize, python_strip};
pub use pyjson::{
    python_float_repr, python_repr, python_str, to_python_json, to_python_pretty_json,
};
pub use recording::{
    Access, CallWriter, Outcome, RecordedCall, RecordedRequest, Recording, RecordingFileError,
    RecordingSink, ReplayMismatch, StrictReplayError, StrictReplayer, parse_recording,
    read_recording,
};
pub use replay::{Miss, NearestTurn, ReplayEngine, Served};
pub use shapes::{Shape, golden_document, raw_prefix, shape_of, shapes_from_sse};
