//! `replay-core`: the generic replay core. Everything needed to replay a recorded LLM run by
//! content, with no dependency on any gateway, async runtime or HTTP stack, so another gateway's
//! harness can use it as it is (the `harness` package binds it to `gateway-under-test`).
//!
//! Messages are `serde_json::Value`s in LangChain's dict forms. The pieces (private modules; the
//! items below are re-exported at the crate root):
//!
//! - `pyjson`: CPython-identical JSON text, the bytes that get hashed ([`to_python_json`]);
//! - `normalize`: the eight volatile-text rules ([`normalize()`]);
//! - `canonical`: the replay key: canonical conversation, hashes, caller identity
//!   ([`replay_key`]);
//! - `scenario`: one scenario model, the same before recording, beside a recording and at the
//!   head of a fixture ([`Scenario`], [`UiMode`]);
//! - `fixture`: fixture files, loading, validation and byte-exact writing ([`Fixture`]; a file
//!   loaded once and shared, [`LoadedFixture`]);
//! - `replay`: the engine that serves recorded outputs and records misses ([`ReplayEngine`]),
//!   telling an optional [`ReplayObserver`] of each lookup as it happens;
//! - `exchange`: the one engine of every boundary besides the model's chat wire (MCP servers,
//!   HTTP tool APIs, embeddings): a boundary is a stream of recorded exchanges, keyed, replayed
//!   in order per key, with one miss diagnostic and one ledger ([`ExchangeReplay`], [`Boundary`]);
//! - `shapes`: SSE shapes and golden documents ([`shape_of`], [`golden_document`]);
//! - `diff`: the first-difference walk used to explain misses ([`first_difference`]);
//! - [`recording`]: the versioned provider-boundary recording format (JSONL rows, redaction,
//!   the strict reader, the locked writer and strict replay), a public module of its own;
//! - `build_fixture`: a recording plus its scenario into a fixture ([`build_fixture()`], or
//!   from the calls a writer holds in memory, [`build_fixture_from_calls`]);
//! - `verdict`: the Layer 1 verdict on one replay: framing, misses, golden status, unused turns
//!   ([`Verdict`]);
//! - `wire`: keys computed at the model's wire from the conversation a request's wire reads
//!   (`model_wire::Wire::conversation`, one reader per wire in its own module): the key of
//!   [`replay_key`] over those messages, and the name-free key ([`name_free_key`]) at the wires
//!   that carry no names; the engine looks them up ([`ReplayEngine::lookup_at_wire`],
//!   [`ReplayEngine::lookup_at_wire_without_names`]), `wire` knows nothing of it;
//! - `provenance`: when, where and by which keyless a fixture was recorded ([`Provenance`]),
//!   with the event names and fields its provider's stream used (`vocabulary`,
//!   [`StreamVocabulary`]); `drift`: a fresh recording compared with the committed fixture
//!   ([`compare_fixtures`]);
//! - [`protocol`]: keyless's protocol names, one table per kind (headers, the model server's
//!   routes, environment variables), each `keyless` spelling with the older aliases it accepts
//!   ([`CALLER_HEADER`]);
//! - `atomic_file`, `text`, `unique_json`: replacing files atomically, cutting text for
//!   messages, JSON with no duplicate key (fixtures).
//!
//! The specification is `docs/replay-and-fixtures.md` §2 to §5, §8.2, §8.3 and §11, and
//! `docs/recording-format.md` §2 to §8, §11 and §13.

mod atomic_file;
mod build_fixture;
mod canonical;
mod diff;
mod drift;
mod exchange;
mod fixture;
mod normalize;
pub mod protocol;
mod provenance;
mod pyjson;
pub mod recording;
mod replay;
mod scenario;
mod shapes;
mod text;
mod unique_json;
mod verdict;
mod vocabulary;
mod wire;

pub use atomic_file::{SHARED_FILE_MODE, write_atomically};
pub use build_fixture::{
    BuildError, BuildWarning, CallSummary, TurnSummary, build_fixture, build_fixture_from_calls,
    prompts_in,
};
pub use canonical::{
    DEFAULT_CALLER, ReplayKey, caller_identity, names_caller, normalize_caller, replay_key,
};
pub use diff::{Difference, first_difference};
pub use drift::{Drift, DriftChange, DriftClass, compare_fixtures};
pub use exchange::{
    Boundary, BoundaryKind, EXCHANGES_VERSION, Exchange, ExchangeCall, ExchangeKey, ExchangeMiss,
    ExchangeReplay, MissReason, NearestExchange, ServedExchange, UnusedExchange,
};
pub use fixture::{Answer, Fixture, FixtureError, LoadedFixture, RecordedError, SharedKey, Turn};
pub use normalize::normalize;
pub use protocol::{CALLER_HEADER, RESET_TOKEN_HEADER};
pub use provenance::{PROVENANCE_VERSION, Provenance};
pub use pyjson::to_python_json;
pub use replay::{Ambiguity, LookupError, Miss, NearestTurn, ReplayEngine, ReplayObserver, Served};
pub use scenario::{
    BadMode, BadScenarioId, FieldError, IdProblem, Mode, Scenario, ScenarioError, UiMode,
    UnknownMode, check_scenario_id,
};
pub use shapes::{
    DONE_MARKER, DeltaRule, FrameData, FrameName, Shape, delta_id, delta_run_shapes, frame_shape,
    golden_document, named_frame_shape, shape_of, web_frame_shape, web_frame_shapes, web_shape_of,
    web_shapes,
};
pub use text::{first_chars, shorten};
pub use verdict::{
    FailedRequest, Framing, FramingProblem, GoldenStatus, MissingGolden, ModelProblem,
    ModelProblemKind, UnusedFailure, UnusedTurns, Verdict, Voice,
};
pub use vocabulary::StreamVocabulary;
pub use wire::name_free_key;
