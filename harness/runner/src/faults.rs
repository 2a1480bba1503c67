//! A fault scenario (issue 42): a fixture replayed with faults on purpose, read from
//! `<scenario>.<mode>@<fault-name>.faults.toml` beside the fixtures
//! (`docs/replay-and-fixtures.md`, "Fault scenarios"). The file is parsed once into a
//! [`FaultPlan`]: which calls fail ([`Select`], narrowed to a caller), how ([`FaultKind`]) and
//! how many times; the model server applies it (`model_server::faulted`). Every error names the
//! file, the line and the field.

use std::path::{Path, PathBuf};
use std::time::Duration;

use replay_core::{FixtureError, LoadedFixture};
use serde::Deserialize;

/// The suffix of a fault scenario's file.
pub const FAULTS_SUFFIX: &str = ".faults.toml";

/// The statuses a `status` fault may answer: the ones providers answer a healthy request with.
pub const FAULT_STATUSES: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// A fault scenario: the base fixture and its faults, in file order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FaultPlan {
    /// The base fixture's stem (`write_read_file.flash`), a `.json` beside the plan.
    pub fixture: String,
    /// The faults; the first that matches a call is applied to it.
    pub faults: Vec<Fault>,
}

/// One fault of a plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Which calls it matches.
    pub select: Select,
    /// Only calls of this caller (the `x-keyless-caller` header, or the caller the replay found).
    pub caller: Option<String>,
    /// What happens to a matching call.
    pub kind: FaultKind,
    /// How many matching calls get it; the next gets the recording.
    pub times: u32,
}

/// Which calls a fault matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Select {
    /// The Nth model call of the run (of the caller, with `caller`), counted from 1, and the
    /// calls after it until the fault has fired `times` times.
    Call(u32),
    /// Every call that recorded turn N (counted from 1) would answer.
    Turn(u32),
}

/// What a fault does to a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// The provider refuses the call with `status` (its own body and headers).
    Status {
        /// One of [`FAULT_STATUSES`].
        status: u16,
        /// Seconds, sent as the provider sends a wait.
        retry_after: Option<u32>,
    },
    /// The wire's own in-stream error after `after_chunks` recorded chunks.
    StreamError {
        /// How many recorded chunks go out first.
        after_chunks: usize,
    },
    /// The connection closes after `after_chunks` recorded chunks, with no end marker.
    Cut {
        /// How many recorded chunks go out first.
        after_chunks: usize,
    },
    /// The recorded answer, late.
    Delay {
        /// Before the first byte.
        first_byte: Duration,
        /// Between two chunks of a stream.
        between_chunks: Duration,
    },
    /// No answer until the client gives up.
    Hang,
}

impl FaultKind {
    /// The kind's name in the file.
    pub fn name(&self) -> &'static str {
        match self {
            FaultKind::Status { .. } => "status",
            FaultKind::StreamError { .. } => "stream_error",
            FaultKind::Cut { .. } => "cut",
            FaultKind::Delay { .. } => "delay",
            FaultKind::Hang => "hang",
        }
    }
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.select {
            Select::Call(n) => write!(f, "call {n}")?,
            Select::Turn(n) => write!(f, "turn {n}")?,
        }
        if let Some(caller) = &self.caller {
            write!(f, " of {caller}")?;
        }
        match self.kind {
            FaultKind::Status { status, .. } => write!(f, ": status {status}"),
            FaultKind::StreamError { after_chunks } => {
                write!(f, ": stream_error after {after_chunks} chunks")
            }
            FaultKind::Cut { after_chunks } => write!(f, ": cut after {after_chunks} chunks"),
            FaultKind::Delay {
                first_byte,
                between_chunks,
            } => write!(
                f,
                ": delay {}ms, {}ms between chunks",
                first_byte.as_millis(),
                between_chunks.as_millis()
            ),
            FaultKind::Hang => write!(f, ": hang"),
        }
    }
}

/// Why a fault scenario cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum FaultPlanError {
    /// The file cannot be read.
    #[error("cannot read the fault scenario {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not a fault scenario (TOML's message names the line and the field).
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    /// A field's value is not allowed.
    #[error("{path}:{line}: field `{field}`: {message}")]
    Field {
        path: PathBuf,
        line: usize,
        field: &'static str,
        message: String,
    },
    /// The file's name is not `<scenario>.<mode>@<fault-name>.faults.toml`.
    #[error(
        "{path}: a fault scenario is named <scenario>.<mode>@<fault-name>.faults.toml, after its \
         fixture (fixture = {fixture:?}); this name is not {fixture}@<fault-name>.faults.toml"
    )]
    Name { path: PathBuf, fixture: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlan {
    fixture: String,
    #[serde(default)]
    fault: Vec<toml::Spanned<RawFault>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFault {
    call: Option<u32>,
    turn: Option<u32>,
    caller: Option<String>,
    kind: RawKind,
    status: Option<u16>,
    retry_after: Option<u32>,
    after_chunks: Option<usize>,
    first_byte_ms: Option<u64>,
    between_chunks_ms: Option<u64>,
    times: Option<u32>,
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum RawKind {
    Status,
    StreamError,
    Cut,
    Delay,
    Hang,
}

/// The fields each kind may carry (besides `call`, `turn`, `caller`, `kind` and `times`).
fn allowed(kind: RawKind) -> &'static [&'static str] {
    match kind {
        RawKind::Status => &["status", "retry_after"],
        RawKind::StreamError | RawKind::Cut => &["after_chunks"],
        RawKind::Delay => &["first_byte_ms", "between_chunks_ms"],
        RawKind::Hang => &[],
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

impl FaultPlan {
    /// Reads the fault scenario at `path`, checking that its name is its fixture's stem, `@`,
    /// and a fault name.
    pub fn load(path: &Path) -> Result<FaultPlan, FaultPlanError> {
        let text = std::fs::read_to_string(path).map_err(|source| FaultPlanError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let plan = FaultPlan::parse(path, &text)?;
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let named = name
            .strip_suffix(FAULTS_SUFFIX)
            .and_then(|stem| stem.strip_prefix(&format!("{}@", plan.fixture)))
            .is_some_and(|fault| !fault.is_empty() && !fault.contains('@'));
        if !named {
            return Err(FaultPlanError::Name {
                path: path.to_path_buf(),
                fixture: plan.fixture,
            });
        }
        Ok(plan)
    }

    /// The plan in `text`; `path` names it in errors.
    pub fn parse(path: &Path, text: &str) -> Result<FaultPlan, FaultPlanError> {
        let raw: RawPlan = toml::from_str(text).map_err(|err| FaultPlanError::Parse {
            path: path.to_path_buf(),
            message: err.to_string().trim_end().to_owned(),
        })?;
        let field_error =
            |line: usize, field: &'static str, message: String| FaultPlanError::Field {
                path: path.to_path_buf(),
                line,
                field,
                message,
            };
        if raw.fixture.trim().is_empty() || raw.fixture.ends_with(".json") {
            return Err(field_error(
                1,
                "fixture",
                format!(
                    "{:?} is not a fixture's stem (its file name without .json, e.g. \
                     write_read_file.flash)",
                    raw.fixture
                ),
            ));
        }
        if raw.fault.is_empty() {
            return Err(FaultPlanError::Parse {
                path: path.to_path_buf(),
                message: "no [[fault]]: a fault scenario has at least one fault".to_owned(),
            });
        }
        let mut faults = Vec::new();
        for spanned in raw.fault {
            let line = line_of(text, spanned.span().start);
            let raw = spanned.into_inner();
            let select = match (raw.call, raw.turn) {
                (Some(0), _) => {
                    return Err(field_error(line, "call", "counts from 1".into()));
                }
                (_, Some(0)) => {
                    return Err(field_error(line, "turn", "counts from 1".into()));
                }
                (Some(call), None) => Select::Call(call),
                (None, Some(turn)) => Select::Turn(turn),
                (Some(_), Some(_)) => {
                    return Err(field_error(
                        line,
                        "turn",
                        "give `call` or `turn`, not both".into(),
                    ));
                }
                (None, None) => {
                    return Err(field_error(
                        line,
                        "call",
                        "missing: say which call (`call = N`) or which recorded turn's call \
                         (`turn = N`) the fault is for"
                            .into(),
                    ));
                }
            };
            let present = [
                ("status", raw.status.is_some()),
                ("retry_after", raw.retry_after.is_some()),
                ("after_chunks", raw.after_chunks.is_some()),
                ("first_byte_ms", raw.first_byte_ms.is_some()),
                ("between_chunks_ms", raw.between_chunks_ms.is_some()),
            ];
            let kind_name = raw_kind_name(raw.kind);
            if let Some((field, _)) =
                (present.iter()).find(|(field, given)| *given && !allowed(raw.kind).contains(field))
            {
                return Err(field_error(
                    line,
                    field,
                    format!("not a field of kind = \"{kind_name}\""),
                ));
            }
            let kind = match raw.kind {
                RawKind::Status => {
                    let Some(status) = raw.status else {
                        return Err(field_error(
                            line,
                            "status",
                            "missing: kind = \"status\" needs the status to answer".into(),
                        ));
                    };
                    if !FAULT_STATUSES.contains(&status) {
                        return Err(field_error(
                            line,
                            "status",
                            format!("{status} is not one of {FAULT_STATUSES:?}"),
                        ));
                    }
                    FaultKind::Status {
                        status,
                        retry_after: raw.retry_after,
                    }
                }
                RawKind::StreamError => FaultKind::StreamError {
                    after_chunks: raw.after_chunks.unwrap_or(0),
                },
                RawKind::Cut => FaultKind::Cut {
                    after_chunks: raw.after_chunks.unwrap_or(0),
                },
                RawKind::Delay => FaultKind::Delay {
                    first_byte: Duration::from_millis(raw.first_byte_ms.unwrap_or(0)),
                    between_chunks: Duration::from_millis(raw.between_chunks_ms.unwrap_or(0)),
                },
                RawKind::Hang => FaultKind::Hang,
            };
            let times = raw.times.unwrap_or(1);
            if times == 0 {
                return Err(field_error(
                    line,
                    "times",
                    "0 would never fire; a fault fires at least once".into(),
                ));
            }
            faults.push(Fault {
                select,
                caller: raw.caller,
                kind,
                times,
            });
        }
        Ok(FaultPlan {
            fixture: raw.fixture,
            faults,
        })
    }
}

fn raw_kind_name(kind: RawKind) -> &'static str {
    match kind {
        RawKind::Status => "status",
        RawKind::StreamError => "stream_error",
        RawKind::Cut => "cut",
        RawKind::Delay => "delay",
        RawKind::Hang => "hang",
    }
}

/// The base fixture of the fault scenario at `path`: `<fixture>.json` in its folder.
pub fn base_fixture_path(path: &Path, plan: &FaultPlan) -> PathBuf {
    path.with_file_name(format!("{}.json", plan.fixture))
}

/// Whether `path` names a fault scenario (`….faults.toml`).
pub fn is_fault_scenario(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|name| name.to_string_lossy().ends_with(FAULTS_SUFFIX))
}

/// The fault scenarios of `dir` (`*.faults.toml`), sorted by name.
pub fn fault_scenario_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file() && is_fault_scenario(path))
        .collect();
    files.sort();
    Ok(files)
}

/// The fixture at `path`, or, for a fault scenario, its base fixture under the scenario's own
/// name (so its golden is `<scenario>.<mode>@<fault-name>.snap`) with its plan. A plan that
/// cannot be read is the fixture's error, naming the file, the line and the field.
pub fn load_fixture_or_scenario(
    path: &Path,
) -> Result<(LoadedFixture, Option<FaultPlan>), FixtureError> {
    if !is_fault_scenario(path) {
        return Ok((LoadedFixture::load(path)?, None));
    }
    let plan = FaultPlan::load(path).map_err(|err| FixtureError::Invalid {
        path: path.to_path_buf(),
        message: format!("fault scenario: {err}"),
    })?;
    let base = LoadedFixture::load(&base_fixture_path(path, &plan))?;
    Ok((base.renamed(path), Some(plan)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<FaultPlan, String> {
        FaultPlan::parse(Path::new("s.flash@f.faults.toml"), text).map_err(|e| e.to_string())
    }

    #[test]
    fn every_kind_reads_into_its_typed_value() {
        let plan = parse(
            "fixture = \"s.flash\"\n\
             [[fault]]\ncall = 1\nkind = \"status\"\nstatus = 429\nretry_after = 2\ntimes = 2\n\
             [[fault]]\nturn = 3\ncaller = \"title\"\nkind = \"stream_error\"\nafter_chunks = 3\n\
             [[fault]]\ncall = 4\nkind = \"cut\"\n\
             [[fault]]\ncall = 5\nkind = \"delay\"\nfirst_byte_ms = 40000\n\
             [[fault]]\ncall = 6\nkind = \"hang\"\n",
        )
        .expect("parses");
        let kinds: Vec<String> = plan.faults.iter().map(ToString::to_string).collect();
        assert_eq!(
            kinds,
            [
                "call 1: status 429",
                "turn 3 of title: stream_error after 3 chunks",
                "call 4: cut after 0 chunks",
                "call 5: delay 40000ms, 0ms between chunks",
                "call 6: hang",
            ]
        );
        assert_eq!(plan.faults[0].times, 2);
        assert_eq!(
            plan.faults[0].kind,
            FaultKind::Status {
                status: 429,
                retry_after: Some(2)
            }
        );
    }

    #[test]
    fn a_bad_field_is_named_with_its_file_and_line() {
        // (file, what the error says)
        let cases = [
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"status\"\nstatus = 404\n",
                "s.flash@f.faults.toml:2: field `status`: 404 is not one of [429, 500, 502, 503, 504, 529]",
            ),
            (
                "fixture = \"s.flash\"\n\n[[fault]]\nkind = \"hang\"\n",
                "s.flash@f.faults.toml:3: field `call`: missing",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nturn = 2\nkind = \"hang\"\n",
                "field `turn`: give `call` or `turn`, not both",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"cut\"\nstatus = 429\n",
                "field `status`: not a field of kind = \"cut\"",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 0\nkind = \"cut\"\n",
                "field `call`: counts from 1",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"hang\"\ntimes = 0\n",
                "field `times`: 0 would never fire",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"hang\"\nchaos = 0.5\n",
                "unknown field `chaos`",
            ),
            (
                "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"boom\"\n",
                "unknown variant `boom`",
            ),
            ("fixture = \"s.flash\"\n", "no [[fault]]"),
        ];
        for (text, expected) in cases {
            let error = parse(text).expect_err(text);
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let line = parse("fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"boom\"\n")
            .expect_err("bad kind");
        assert!(
            line.contains("line 4"),
            "TOML's error names the line: {line}"
        );
    }

    #[test]
    fn the_file_is_named_after_its_fixture() {
        let dir = tempfile::tempdir().expect("dir");
        let text = "fixture = \"s.flash\"\n[[fault]]\ncall = 1\nkind = \"hang\"\n";
        for (name, ok) in [
            ("s.flash@hang.faults.toml", true),
            ("other.flash@hang.faults.toml", false),
            ("s.flash@.faults.toml", false),
            ("s.flash.faults.toml", false),
        ] {
            let path = dir.path().join(name);
            std::fs::write(&path, text).expect("write");
            assert_eq!(FaultPlan::load(&path).is_ok(), ok, "{name}");
        }
    }
}
