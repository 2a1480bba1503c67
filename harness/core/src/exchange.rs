//! Recorded exchanges at the boundaries besides the model's chat wire (`docs/replay-and-fixtures.md`
//! §12): an MCP server, an HTTP tool API, an embeddings route. Each is a named stream of
//! recorded exchanges (a request in its canonical form and what came back), and this module is
//! the one engine they share, written once:
//!
//! - the key ([`ExchangeKey`]): SHA-256 over the boundary, the caller and the canonical request,
//!   every string in it normalised by the same volatile-text rules as a conversation
//!   ([`normalize()`](crate::normalize()));
//! - sequential replay per key: calls with one key are answered in recorded order, and a call past
//!   the last recorded answer is a miss, never a repeat ([`ExchangeReplay::lookup`]);
//! - the ledger: what was served, the misses, the exchanges nobody asked for
//!   ([`ExchangeReplay::misses`], [`ExchangeReplay::unused`]);
//! - the miss diagnostic ([`ExchangeMiss`]): the boundary, the caller, the call's label, the
//!   nearest recorded exchange and the first differing field.
//!
//! What differs per boundary is how a request is read: a [`Boundary`] turns its own request type
//! into an [`ExchangeCall`] once, at the edge, and the same call is what replay looks up and
//! what recording stores ([`ExchangeCall::answered`]). Rendering an answer and serving a
//! transport are the boundary's server's job (in the runner), not this crate's.
//!
//! The model's chat wire keeps its own engine ([`ReplayEngine`](crate::ReplayEngine)): its turns
//! are DeerFlow's fixture format, byte for byte, and are keyed by DeerFlow's rule.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::diff::{Difference, first_difference};
use super::normalize::normalize;
use super::pyjson::to_python_json;
use super::text::shorten;

/// The version of a fixture's `exchanges` section this build writes and reads.
pub const EXCHANGES_VERSION: u64 = 1;

/// How many characters of a differing value a miss shows.
const MISS_VALUE_CHARS: usize = 120;

/// Which boundary an exchange was recorded at: the `boundary` field of every exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundaryKind {
    /// A Model Context Protocol server (JSON-RPC over Streamable HTTP or stdio).
    Mcp,
    /// An HTTP API a tool calls (a search API, a crawler, an internal service).
    Http,
    /// A provider's embeddings route.
    Embeddings,
}

impl BoundaryKind {
    /// The name written in the `boundary` field.
    pub fn as_str(self) -> &'static str {
        match self {
            BoundaryKind::Mcp => "mcp",
            BoundaryKind::Http => "http",
            BoundaryKind::Embeddings => "embeddings",
        }
    }
}

impl fmt::Display for BoundaryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How a boundary reads its own requests: the only per-boundary part of the engine.
///
/// `canonical` leaves out what changes from run to run without changing the meaning (JSON-RPC
/// ids, session ids, `_meta`, a request id header, fields the user configured to ignore); the
/// engine then normalises every string in what is left.
pub trait Boundary {
    /// The boundary's request, as its server parsed it.
    type Request: ?Sized;
    /// Which boundary this is.
    fn kind(&self) -> BoundaryKind;
    /// Who made the call: the MCP server's or the HTTP upstream's configured name, or the
    /// embeddings caller.
    fn caller(&self, request: &Self::Request) -> String;
    /// One line naming the call for people: `tools/call search`, `POST /search`.
    fn label(&self, request: &Self::Request) -> String;
    /// The request's canonical form: what the key is computed from and what a miss compares.
    fn canonical(&self, request: &Self::Request) -> Value;
}

/// A call read into the engine's terms, once, at the boundary's edge: replay looks it up and
/// recording stores it.
#[derive(Debug, Clone, PartialEq)]
pub struct ExchangeCall {
    boundary: BoundaryKind,
    caller: String,
    label: String,
    request: Value,
    key: ExchangeKey,
}

impl ExchangeCall {
    /// Reads `request` with `boundary`'s rules.
    pub fn read<B: Boundary + ?Sized>(boundary: &B, request: &B::Request) -> ExchangeCall {
        ExchangeCall::new(
            boundary.kind(),
            boundary.caller(request),
            boundary.label(request),
            boundary.canonical(request),
        )
    }

    /// A call from its parts; `request` is the canonical form.
    pub fn new(
        boundary: BoundaryKind,
        caller: impl Into<String>,
        label: impl Into<String>,
        request: Value,
    ) -> ExchangeCall {
        let caller = caller.into();
        let key = ExchangeKey::of(boundary, &caller, &request);
        ExchangeCall {
            boundary,
            caller,
            label: label.into(),
            request,
            key,
        }
    }

    /// The call's key.
    pub fn key(&self) -> &ExchangeKey {
        &self.key
    }

    /// The call's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The exchange this call makes with `answer` (the boundary's recorded form of what came
    /// back), to record.
    pub fn answered(self, answer: Value) -> Exchange {
        Exchange {
            boundary: self.boundary,
            caller: self.caller,
            label: self.label,
            request: self.request,
            answer,
        }
    }
}

/// One recorded exchange: a request in canonical form and what came back. The serde form is the
/// fixture's and the recording's (`docs/replay-and-fixtures.md` §12.2).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    /// The boundary it was recorded at.
    pub boundary: BoundaryKind,
    /// Who made it ([`Boundary::caller`]).
    pub caller: String,
    /// One line naming it for people ([`Boundary::label`]).
    pub label: String,
    /// The request's canonical form ([`Boundary::canonical`]), redacted.
    pub request: Value,
    /// What came back, in the boundary's own recorded form, redacted: a result, an error,
    /// notifications before it, a status with headers and body chunks.
    pub answer: Value,
}

impl Exchange {
    /// The exchange's key, as a call with the same request computes it.
    pub fn key(&self) -> ExchangeKey {
        ExchangeKey::of(self.boundary, &self.caller, &self.request)
    }
}

/// The lookup key of an exchange: SHA-256 hex of `{"boundary", "caller", "request"}` in
/// Python-compatible JSON (sorted keys), every string of the request normalised first.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExchangeKey(String);

impl ExchangeKey {
    /// The key of a call at `boundary` from `caller` with the canonical `request`.
    pub fn of(boundary: BoundaryKind, caller: &str, request: &Value) -> ExchangeKey {
        let keyed = json!({
            "boundary": boundary.as_str(),
            "caller": caller,
            "request": normalized(request),
        });
        let digest = Sha256::digest(to_python_json(&keyed).as_bytes());
        ExchangeKey(hex::encode(digest))
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ExchangeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// `value` with every string normalised (object keys are left as they are: they are names, not
/// data).
fn normalized(value: &Value) -> Value {
    match value {
        Value::String(text) => Value::String(normalize(text)),
        Value::Array(items) => Value::Array(items.iter().map(normalized).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, value)| (key.clone(), normalized(value)))
                .collect::<Map<_, _>>(),
        ),
        other => other.clone(),
    }
}

/// A fixture's `exchanges` section, read: `{"version": 1, "recorded": [...]}`.
pub(crate) fn exchanges_from_value(value: Value) -> Result<Vec<Exchange>, String> {
    let Value::Object(mut section) = value else {
        return Err("\"exchanges\" must be an object {\"version\", \"recorded\"}".to_owned());
    };
    match section.remove("version") {
        Some(Value::Number(n)) if n.as_u64() == Some(EXCHANGES_VERSION) => {}
        other => {
            return Err(format!(
                "\"exchanges.version\" is {}; this build reads version {EXCHANGES_VERSION}",
                other.map_or_else(|| "missing".to_owned(), |v| v.to_string())
            ));
        }
    }
    let recorded = match section.remove("recorded") {
        Some(Value::Array(items)) => items,
        _ => return Err("\"exchanges.recorded\" must be an array".to_owned()),
    };
    if let Some(extra) = section.keys().next() {
        return Err(format!("\"exchanges\" has an unknown key \"{extra}\""));
    }
    recorded
        .into_iter()
        .enumerate()
        .map(|(index, item)| {
            serde_json::from_value(item)
                .map_err(|err| format!("\"exchanges.recorded[{index}]\": {err}"))
        })
        .collect()
}

/// A fixture's `exchanges` section, to write.
pub(crate) fn exchanges_to_value(exchanges: &[Exchange]) -> Value {
    let recorded: Vec<Value> = exchanges
        .iter()
        .map(|exchange| serde_json::to_value(exchange).unwrap_or(Value::Null))
        .collect();
    json!({"version": EXCHANGES_VERSION, "recorded": recorded})
}

/// The recorded exchange a call was answered with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ServedExchange<'a> {
    /// Its index among the fixture's exchanges.
    pub index: usize,
    /// The exchange; its `answer` is what the boundary renders back.
    pub exchange: &'a Exchange,
}

/// Why no recorded exchange answered a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum MissReason {
    /// No exchange with the call's key was recorded.
    NotRecorded,
    /// Exchanges with the call's key were recorded, and each was already served.
    Exhausted {
        /// How many were recorded.
        recorded: usize,
    },
}

/// The recorded exchange most like a missed call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NearestExchange {
    /// Its index among the fixture's exchanges.
    pub index: usize,
    /// Its label.
    pub label: String,
    /// The first field where its canonical request differs from the call's (`None`: equal,
    /// which happens for an exhausted key).
    pub difference: Option<Difference>,
}

/// A call no recorded exchange answered. It fails the run; its `Display` says what to look at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExchangeMiss {
    /// The boundary of the call.
    pub boundary: BoundaryKind,
    /// Who made it.
    pub caller: String,
    /// What it was.
    pub label: String,
    /// Its key.
    pub key: ExchangeKey,
    /// Why nothing answered it.
    pub reason: MissReason,
    /// The recorded exchange most like it (same boundary and caller), if any.
    pub nearest: Option<NearestExchange>,
    /// The fixture replayed.
    pub fixture: PathBuf,
}

impl fmt::Display for ExchangeMiss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} miss: `{}` from `{}` has no recorded answer in {} (key {})",
            self.boundary,
            self.label,
            self.caller,
            self.fixture.display(),
            &self.key.as_str()[..12.min(self.key.as_str().len())],
        )?;
        if let MissReason::Exhausted { recorded } = self.reason {
            write!(
                f,
                ": it was recorded {recorded} time(s) and each answer was already served (the \
                 backend made the call more often than when it was recorded)"
            )?;
        }
        match &self.nearest {
            None => write!(
                f,
                "; nothing was recorded from `{}` at this boundary",
                self.caller
            ),
            Some(nearest) => {
                write!(
                    f,
                    "; nearest recorded: exchange {} `{}`",
                    nearest.index, nearest.label
                )?;
                match &nearest.difference {
                    None => Ok(()),
                    Some(difference) => write!(
                        f,
                        "; first differing field: {}: recorded {}, now {}",
                        difference.path,
                        short_value(difference.recorded.as_ref()),
                        short_value(difference.incoming.as_ref()),
                    ),
                }
            }
        }
    }
}

impl std::error::Error for ExchangeMiss {}

impl ExchangeMiss {
    /// The miss with each side of its first difference cut to `max` bytes of JSON (a ledger
    /// that keeps misses stays bounded whatever the requests held).
    pub fn cut_to(&mut self, max: usize) {
        if let Some(difference) = self.nearest.as_mut().and_then(|n| n.difference.as_mut()) {
            difference.cut_to(max);
        }
    }
}

fn short_value(value: Option<&Value>) -> String {
    match value {
        None => "<missing>".to_owned(),
        Some(value) => shorten(&to_python_json(value), MISS_VALUE_CHARS).into_owned(),
    }
}

/// A recorded exchange no call asked for. It fails the run: the backend took another path than
/// the recorded one (a tool it no longer calls, a call it makes fewer times).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnusedExchange {
    /// Its index among the fixture's exchanges.
    pub index: usize,
    /// Its boundary.
    pub boundary: BoundaryKind,
    /// Who made it when it was recorded.
    pub caller: String,
    /// What it was.
    pub label: String,
}

impl fmt::Display for UnusedExchange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "recorded {} exchange {} `{}` from `{}` was never asked for in this run",
            self.boundary, self.index, self.label, self.caller
        )
    }
}

/// Replays a fixture's exchanges: answers calls by key in recorded order and keeps the ledger.
/// One per replayed fixture; it holds no state shared with any other.
#[derive(Debug)]
pub struct ExchangeReplay {
    fixture: PathBuf,
    exchanges: Vec<Exchange>,
    /// Each exchange's request, normalised as its key was computed (what a miss compares).
    normalized_requests: Vec<Value>,
    recorded_per_key: HashMap<ExchangeKey, usize>,
    ledger: Mutex<Ledger>,
}

#[derive(Debug)]
struct Ledger {
    queues: HashMap<ExchangeKey, VecDeque<usize>>,
    served: Vec<bool>,
    misses: Vec<ExchangeMiss>,
}

impl ExchangeReplay {
    /// A replay of `exchanges`, recorded in `fixture` (named in misses).
    pub fn new(fixture: &Path, exchanges: Vec<Exchange>) -> ExchangeReplay {
        let mut queues: HashMap<ExchangeKey, VecDeque<usize>> = HashMap::new();
        for (index, exchange) in exchanges.iter().enumerate() {
            queues.entry(exchange.key()).or_default().push_back(index);
        }
        let recorded_per_key = queues.iter().map(|(k, q)| (k.clone(), q.len())).collect();
        ExchangeReplay {
            fixture: fixture.to_path_buf(),
            normalized_requests: exchanges.iter().map(|e| normalized(&e.request)).collect(),
            ledger: Mutex::new(Ledger {
                queues,
                served: vec![false; exchanges.len()],
                misses: Vec::new(),
            }),
            recorded_per_key,
            exchanges,
        }
    }

    /// Answers `call` with the next recorded exchange of its key, or records and returns a miss.
    pub fn lookup(&self, call: &ExchangeCall) -> Result<ServedExchange<'_>, Box<ExchangeMiss>> {
        let mut ledger = self.ledger.lock();
        let next = ledger
            .queues
            .get_mut(&call.key)
            .and_then(VecDeque::pop_front);
        if let Some(index) = next {
            ledger.served[index] = true;
            return Ok(ServedExchange {
                index,
                exchange: &self.exchanges[index],
            });
        }
        let reason = match self.recorded_per_key.get(&call.key) {
            Some(&recorded) => MissReason::Exhausted { recorded },
            None => MissReason::NotRecorded,
        };
        let miss = ExchangeMiss {
            boundary: call.boundary,
            caller: call.caller.clone(),
            label: call.label.clone(),
            key: call.key.clone(),
            reason,
            nearest: self.nearest(call, &ledger.served),
            fixture: self.fixture.clone(),
        };
        ledger.misses.push(miss.clone());
        Err(Box::new(miss))
    }

    /// The recorded exchange most like `call`: same boundary and caller; the same label first,
    /// then one not served yet, then the earliest.
    fn nearest(&self, call: &ExchangeCall, served: &[bool]) -> Option<NearestExchange> {
        let index = (0..self.exchanges.len())
            .filter(|&i| {
                let e = &self.exchanges[i];
                e.boundary == call.boundary && e.caller == call.caller
            })
            .min_by_key(|&i| (self.exchanges[i].label != call.label, served[i], i))?;
        Some(NearestExchange {
            index,
            label: self.exchanges[index].label.clone(),
            difference: first_difference(
                &self.normalized_requests[index],
                &normalized(&call.request),
                &[],
            ),
        })
    }

    /// The misses so far, oldest first.
    pub fn misses(&self) -> Vec<ExchangeMiss> {
        self.ledger.lock().misses.clone()
    }

    /// The recorded exchanges no call has asked for yet, in recorded order.
    pub fn unused(&self) -> Vec<UnusedExchange> {
        let ledger = self.ledger.lock();
        (self.exchanges.iter().enumerate())
            .filter(|(index, _)| !ledger.served[*index])
            .map(|(index, e)| UnusedExchange {
                index,
                boundary: e.boundary,
                caller: e.caller.clone(),
                label: e.label.clone(),
            })
            .collect()
    }

    /// The exchanges replayed.
    pub fn exchanges(&self) -> &[Exchange] {
        &self.exchanges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(caller: &str, label: &str, request: Value) -> ExchangeCall {
        ExchangeCall::new(BoundaryKind::Http, caller, label, request)
    }

    fn recorded(caller: &str, label: &str, request: Value, answer: &str) -> Exchange {
        call(caller, label, request).answered(json!(answer))
    }

    fn replay(exchanges: Vec<Exchange>) -> ExchangeReplay {
        ExchangeReplay::new(Path::new("fixtures/x.flash.json"), exchanges)
    }

    #[test]
    fn a_key_ignores_volatile_text_and_nothing_else() {
        let base =
            json!({"query": "weather in Paris", "id": "3f2b8c1e-1d2a-4c1b-9f3e-2a1b3c4d5e6f"});
        let key = |caller: &str, boundary: BoundaryKind, request: &Value| {
            ExchangeKey::of(boundary, caller, request)
        };
        let same =
            [json!({"query": "weather in Paris", "id": "00000000-1111-4222-8333-444444444444"})];
        for request in &same {
            assert_eq!(
                key("tavily", BoundaryKind::Http, &base),
                key("tavily", BoundaryKind::Http, request),
                "{request}"
            );
        }
        let different = [
            (
                json!({"query": "weather in Rome", "id": "3f2b8c1e-1d2a-4c1b-9f3e-2a1b3c4d5e6f"}),
                "tavily",
                BoundaryKind::Http,
            ),
            (base.clone(), "brave", BoundaryKind::Http),
            (base.clone(), "tavily", BoundaryKind::Mcp),
        ];
        for (request, caller, boundary) in &different {
            assert_ne!(
                key("tavily", BoundaryKind::Http, &base),
                key(caller, *boundary, request),
                "{request} {caller} {boundary}"
            );
        }
    }

    #[test]
    fn calls_with_one_key_are_answered_in_recorded_order_then_miss() {
        let q = json!({"q": "a"});
        let replay = replay(vec![
            recorded("s", "GET /search", q.clone(), "first"),
            recorded("s", "GET /other", json!({"q": "b"}), "other"),
            recorded("s", "GET /search", q.clone(), "second"),
        ]);
        let answers: Vec<Value> = (0..2)
            .map(|_| {
                replay
                    .lookup(&call("s", "GET /search", q.clone()))
                    .expect("served")
                    .exchange
                    .answer
                    .clone()
            })
            .collect();
        assert_eq!(answers, [json!("first"), json!("second")]);
        let miss = replay
            .lookup(&call("s", "GET /search", q.clone()))
            .expect_err("a third call is a miss");
        assert_eq!(miss.reason, MissReason::Exhausted { recorded: 2 });
        assert!(miss.to_string().contains("recorded 2 time(s)"), "{miss}");
        assert_eq!(replay.misses(), vec![*miss]);
        let unused: Vec<usize> = replay.unused().iter().map(|u| u.index).collect();
        assert_eq!(unused, [1]);
        assert!(
            replay.unused()[0]
                .to_string()
                .contains("`GET /other` from `s` was never asked")
        );
    }

    #[test]
    fn a_miss_names_the_nearest_exchange_and_the_first_differing_field() {
        let replay = replay(vec![
            recorded(
                "tavily",
                "POST /search",
                json!({"body": {"query": "Paris", "max_results": 5}}),
                "x",
            ),
            recorded(
                "tavily",
                "POST /extract",
                json!({"body": {"urls": ["u"]}}),
                "y",
            ),
        ]);
        let cases = [
            (
                call(
                    "tavily",
                    "POST /search",
                    json!({"body": {"query": "Rome", "max_results": 5}}),
                ),
                "nearest recorded: exchange 0 `POST /search`; first differing field: body.query: recorded \"Paris\", now \"Rome\"",
            ),
            (
                call(
                    "tavily",
                    "POST /extract",
                    json!({"body": {"urls": ["u", "v"]}}),
                ),
                "first differing field: body.urls[1]: recorded <missing>, now \"v\"",
            ),
            (
                call("brave", "POST /search", json!({})),
                "nothing was recorded from `brave` at this boundary",
            ),
        ];
        for (call, expected) in cases {
            let miss = replay.lookup(&call).expect_err("a miss");
            assert_eq!(miss.reason, MissReason::NotRecorded);
            let text = miss.to_string();
            assert!(
                text.starts_with(&format!("http miss: `{}` from ", call.label())),
                "{text}"
            );
            assert!(text.contains(expected), "{text}\nexpected: {expected}");
        }
    }

    #[test]
    fn the_fixture_section_round_trips_and_names_what_is_wrong() {
        let exchanges = vec![recorded(
            "s",
            "tools/call echo",
            json!({"name": "echo"}),
            "ok",
        )];
        let value = exchanges_to_value(&exchanges);
        assert_eq!(value["version"], json!(1));
        assert_eq!(exchanges_from_value(value).expect("reads"), exchanges);
        let bad = [
            (json!([]), "must be an object"),
            (
                json!({"version": 2, "recorded": []}),
                "\"exchanges.version\" is 2",
            ),
            (json!({"recorded": []}), "\"exchanges.version\" is missing"),
            (
                json!({"version": 1}),
                "\"exchanges.recorded\" must be an array",
            ),
            (
                json!({"version": 1, "recorded": [], "x": 1}),
                "unknown key \"x\"",
            ),
            (
                json!({"version": 1, "recorded": [{"boundary": "ftp"}]}),
                "\"exchanges.recorded[0]\": unknown variant `ftp`",
            ),
            (
                json!({"version": 1, "recorded": [{"boundary": "mcp", "caller": "s", "label": "l", "request": {}, "answer": 1, "extra": 1}]}),
                "\"exchanges.recorded[0]\": unknown field `extra`",
            ),
        ];
        for (value, expected) in bad {
            let err = exchanges_from_value(value.clone()).expect_err("refused");
            assert!(err.contains(expected), "{value}: {err}");
        }
    }
}
