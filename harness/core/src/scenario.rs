//! One scenario model: what a run drives (the scenario id, the UI mode and the run context it
//! implies, the prompts, configuration overrides) and which model answered. The same [`Scenario`]
//! describes a run about to be recorded, the metadata written beside its recording
//! (`<recording>.meta.json`, DeerFlow's builder input) and the header of the fixture built from
//! it, so the three can never disagree on a field.
//!
//! The JSON form, shared by the metadata file and the fixture header, has the keys `scenario`,
//! `mode`, `model`, `prompt`, `context`, then this crate's optional `followups` and
//! `gateway_config`, in that order (`docs/replay-and-fixtures.md` §2.1).

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde_json::{Map, Value, json};

/// The frontend's UI mode (`docs/replay-and-fixtures.md` §7.5): it names the fixture
/// (`<scenario>.<mode>.json`) and decides the run context's flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum UiMode {
    /// No thinking, no plan mode, no subagents.
    Flash,
    /// Thinking only.
    Thinking,
    /// Thinking and plan mode.
    Pro,
    /// Thinking, plan mode and subagents.
    Ultra,
}

impl UiMode {
    /// Every mode, in the frontend's order.
    pub const ALL: [UiMode; 4] = [UiMode::Flash, UiMode::Thinking, UiMode::Pro, UiMode::Ultra];

    /// The spelling in fixtures, file names and the run context.
    pub fn as_str(self) -> &'static str {
        match self {
            UiMode::Flash => "flash",
            UiMode::Thinking => "thinking",
            UiMode::Pro => "pro",
            UiMode::Ultra => "ultra",
        }
    }

    /// The run `context` the frontend sends in this mode, keys in its order:
    /// `thinking_enabled` is "mode is not flash", plan mode comes with pro, subagents with ultra.
    pub fn context(self) -> Value {
        let (thinking, plan, subagent) = match self {
            UiMode::Flash => (false, false, false),
            UiMode::Thinking => (true, false, false),
            UiMode::Pro => (true, true, false),
            UiMode::Ultra => (true, true, true),
        };
        json!({"is_bootstrap": false, "mode": self.as_str(), "thinking_enabled": thinking,
               "is_plan_mode": plan, "subagent_enabled": subagent})
    }

    /// The `reasoning_effort` DeerFlow's web client puts in the run context for this mode: none
    /// in flash (the key is left out), then `low`, `medium` and `high`.
    pub fn reasoning_effort(self) -> Option<&'static str> {
        match self {
            UiMode::Flash => None,
            UiMode::Thinking => Some("low"),
            UiMode::Pro => Some("medium"),
            UiMode::Ultra => Some("high"),
        }
    }
}

impl fmt::Display for UiMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A mode name that is not one of [`UiMode::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown UI mode {0:?}: expected flash, thinking, pro or ultra")]
pub struct UnknownMode(pub String);

/// A fixture's mode: one of DeerFlow's four UI modes, or, for an API without UI modes (the AI
/// SDK's chat route, AG-UI, an OpenAI-style endpoint), a label that only names the fixture
/// (`<scenario>.<label>.json`, e.g. `chat`) and implies no run context
/// (`docs/replay-and-fixtures.md` §2.1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Mode {
    /// A DeerFlow UI mode, with the run context it implies.
    Ui(UiMode),
    /// A label: lowercase ASCII letters, digits, `-` and `_`, starting with a letter or digit,
    /// at most 40 characters (it is part of file names).
    Label(String),
}

impl Mode {
    /// The spelling in fixtures, file names and goldens.
    pub fn as_str(&self) -> &str {
        match self {
            Mode::Ui(mode) => mode.as_str(),
            Mode::Label(label) => label,
        }
    }

    /// The UI mode, when this is one.
    pub fn ui(&self) -> Option<UiMode> {
        match self {
            Mode::Ui(mode) => Some(*mode),
            Mode::Label(_) => None,
        }
    }

    /// The run context a new scenario in this mode sends: the UI mode's, `{}` for a label.
    pub fn context(&self) -> Value {
        match self {
            Mode::Ui(mode) => mode.context(),
            Mode::Label(_) => Value::Object(Map::new()),
        }
    }
}

impl From<UiMode> for Mode {
    fn from(mode: UiMode) -> Mode {
        Mode::Ui(mode)
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<UiMode> for Mode {
    fn eq(&self, other: &UiMode) -> bool {
        self.ui() == Some(*other)
    }
}

/// A mode that is neither a UI mode nor a valid label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{0:?} is not a mode: expected flash, thinking, pro, ultra, or a label of at most 40 \
     lowercase letters, digits, '-' and '_' (e.g. chat)"
)]
pub struct BadMode(pub String);

impl FromStr for Mode {
    type Err = BadMode;

    fn from_str(name: &str) -> Result<Mode, BadMode> {
        if let Ok(mode) = name.parse::<UiMode>() {
            return Ok(Mode::Ui(mode));
        }
        let mut chars = name.chars();
        let first_ok = chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
        let rest_ok =
            chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_".contains(c));
        if first_ok && rest_ok && name.len() <= 40 {
            Ok(Mode::Label(name.to_owned()))
        } else {
            Err(BadMode(name.to_owned()))
        }
    }
}

impl FromStr for UiMode {
    type Err = UnknownMode;

    fn from_str(name: &str) -> Result<UiMode, UnknownMode> {
        UiMode::ALL
            .into_iter()
            .find(|mode| mode.as_str() == name)
            .ok_or_else(|| UnknownMode(name.to_owned()))
    }
}

/// One scenario: what to drive and which model answered.
#[derive(Debug, Clone, PartialEq)]
pub struct Scenario {
    /// The scenario id, e.g. `write_read_file` (the JSON key `scenario`).
    pub id: String,
    /// The mode: a DeerFlow UI mode, or a label where the API has none.
    pub mode: Mode,
    /// The model that answered when recording; informational only, never used for matching.
    pub model: String,
    /// The first prompt, sent verbatim.
    pub prompt: String,
    /// The run `context` posted with every prompt, sent back verbatim on replay (the mode's
    /// [`UiMode::context`] for a new scenario; a fixture keeps what it recorded).
    pub context: Value,
    /// This crate's extension: prompts sent after `prompt`, in the same thread, one run each.
    pub followups: Vec<String>,
    /// This crate's extension: configuration overrides (a JSON object deep-merged into the
    /// hermetic gateway configuration), applied alike when recording and replaying.
    pub gateway_config: Option<Value>,
}

/// Why a scenario metadata file could not be read. Every variant names the file.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// The file could not be read.
    #[error("scenario metadata {}: cannot read: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a valid scenario: not JSON, or not an object.
    #[error("scenario metadata {}: {problem}", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: String,
    },
    /// A key of the scenario is missing or wrong.
    #[error("scenario metadata {}: {problem}", .path.display())]
    Field {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming the key.
        #[source]
        problem: FieldError,
    },
}

/// Checks a scenario id, which names files (`<id>.<mode>.json`, `<id>.<mode>.snap`): it must
/// not be empty, `.` or `..`, nor hold a path separator or a control character, so it can
/// neither name a file outside its folder nor disturb a terminal (issue 34, findings 15 and 18).
pub fn check_scenario_id(id: &str) -> Result<(), BadScenarioId> {
    let why = if id.is_empty() {
        IdProblem::Empty
    } else if id == "." || id == ".." {
        IdProblem::NamesAFolder
    } else if id.contains(['/', '\\']) {
        IdProblem::PathSeparator
    } else if id.chars().any(char::is_control) {
        IdProblem::ControlCharacter
    } else {
        return Ok(());
    };
    Err(BadScenarioId {
        id: id.to_owned(),
        why,
    })
}

/// A scenario id that cannot name a file ([`check_scenario_id`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the scenario id {id:?} cannot name a file: {why} (use letters, digits, `_`, `-`)")]
pub struct BadScenarioId {
    /// The id as given.
    pub id: String,
    /// Why it cannot name a file.
    pub why: IdProblem,
}

/// Why a scenario id cannot name a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum IdProblem {
    /// The id is empty.
    #[error("it is empty")]
    Empty,
    /// The id is `.` or `..`.
    #[error("it names a folder")]
    NamesAFolder,
    /// The id holds `/` or `\\`.
    #[error("it holds a path separator")]
    PathSeparator,
    /// The id holds a control character.
    #[error("it holds a control character")]
    ControlCharacter,
}

/// A key of a JSON document (a scenario header, a fixture turn) that is missing or does not hold
/// what it must; the Display names the key as the file spells it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    /// A required key is absent, e.g. `missing "mode"`.
    #[error("missing \"{0}\"")]
    Missing(String),
    /// A key holds the wrong JSON type, e.g. `"context" must be an object, got a string`.
    #[error("\"{field}\"{} must be {expected}, got {found}", item_suffix(*.item))]
    WrongType {
        /// The key (`error.status` for a nested one).
        field: String,
        /// The position inside an array key (`"followups"[2]`), when the item is wrong.
        item: Option<usize>,
        /// What it must hold, e.g. `a string`.
        expected: &'static str,
        /// The JSON type it holds, e.g. `a number`.
        found: &'static str,
    },
    /// A number that is no HTTP status (`"error.status" must be an HTTP status, got 70000`).
    #[error("\"{field}\" must be an HTTP status, got {found}")]
    NotAStatus {
        /// The key.
        field: String,
        /// The number as written.
        found: String,
    },
    /// A key of the right type whose value is refused, e.g. a `provenance.recorded_at` that is
    /// no time.
    #[error("\"{field}\" {message}")]
    Invalid {
        /// The key (`provenance.version` for a nested one).
        field: String,
        /// What is wrong with its value.
        message: String,
    },
    /// `scenario` cannot name a file.
    #[error("\"scenario\": {0}")]
    ScenarioId(#[from] BadScenarioId),
    /// `mode` is neither a UI mode nor a label.
    #[error("\"mode\": {0}")]
    Mode(#[from] BadMode),
}

fn item_suffix(index: Option<usize>) -> String {
    index.map(|i| format!("[{i}]")).unwrap_or_default()
}

impl FieldError {
    /// `"<field>" must be <expected>, got <the JSON type of found>`.
    pub(crate) fn wrong_type(
        field: impl Into<String>,
        expected: &'static str,
        found: &Value,
    ) -> FieldError {
        FieldError::WrongType {
            field: field.into(),
            item: None,
            expected,
            found: json_type(found),
        }
    }
}

/// Names of the JSON types, for error messages.
pub(crate) fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

impl Scenario {
    /// A scenario in `mode` with the mode's run context, no follow-ups, no overrides and no
    /// model yet.
    pub fn new(
        id: impl Into<String>,
        mode: impl Into<Mode>,
        prompt: impl Into<String>,
    ) -> Scenario {
        let mode = mode.into();
        Scenario {
            id: id.into(),
            context: mode.context(),
            mode,
            model: String::new(),
            prompt: prompt.into(),
            followups: Vec::new(),
            gateway_config: None,
        }
    }

    /// The prompt, then each follow-up: one run each, in one thread.
    pub fn prompts(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.prompt.as_str()).chain(self.followups.iter().map(String::as_str))
    }

    /// The file stem of its fixture and golden: `<id>.<mode>`.
    pub fn stem(&self) -> String {
        format!("{}.{}", self.id, self.mode)
    }

    /// The metadata document written beside a recording: the JSON form without `turns`.
    pub fn to_json(&self) -> Value {
        let mut out = Map::new();
        self.write_into(&mut out);
        Value::Object(out)
    }

    /// Reads a metadata file written beside a recording. `scenario`, `mode` and `prompt` are
    /// required (as in DeerFlow's builder); `model` defaults to `model_default` and `context` to
    /// `{}`.
    pub fn load(path: &Path, model_default: &str) -> Result<Scenario, ScenarioError> {
        let invalid = |problem: String| ScenarioError::Invalid {
            path: path.to_path_buf(),
            problem,
        };
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|err| {
            invalid(format!(
                "invalid JSON at line {}, column {}: {err}",
                err.line(),
                err.column()
            ))
        })?;
        let Value::Object(mut top) = value else {
            return Err(invalid(format!(
                "the document must be an object, got {}",
                json_type(&value)
            )));
        };
        Scenario::take_from(&mut top, &["scenario", "mode", "prompt"], model_default).map_err(
            |problem| ScenarioError::Field {
                path: path.to_path_buf(),
                problem,
            },
        )
    }

    /// Inserts the JSON form's keys into `out`, in file order (`None` and empty follow-ups
    /// omitted).
    pub(crate) fn write_into(&self, out: &mut Map<String, Value>) {
        out.insert("scenario".to_owned(), Value::String(self.id.clone()));
        out.insert("mode".to_owned(), Value::from(self.mode.as_str()));
        out.insert("model".to_owned(), Value::String(self.model.clone()));
        out.insert("prompt".to_owned(), Value::String(self.prompt.clone()));
        out.insert("context".to_owned(), self.context.clone());
        if !self.followups.is_empty() {
            let followups = self.followups.iter().cloned().map(Value::String).collect();
            out.insert("followups".to_owned(), Value::Array(followups));
        }
        if let Some(config) = &self.gateway_config {
            out.insert("gateway_config".to_owned(), config.clone());
        }
    }

    /// Removes the scenario's keys from a parsed document and checks them. Keys in `required`
    /// must be present (`mode` always is: it cannot default); other text keys default to `""`
    /// (`model` to `model_default`), `context` to `{}`. A key present with the wrong type is an
    /// error; `null` reads as absent for the optional extensions. The error names the field.
    pub(crate) fn take_from(
        top: &mut Map<String, Value>,
        required: &[&str],
        model_default: &str,
    ) -> Result<Scenario, FieldError> {
        let mut text = |key: &str, default: &str| match top.remove(key) {
            None if required.contains(&key) || key == "mode" => {
                Err(FieldError::Missing(key.to_owned()))
            }
            None => Ok(default.to_owned()),
            Some(Value::String(text)) => Ok(text),
            Some(other) => Err(FieldError::wrong_type(key, "a string", &other)),
        };
        let id = text("scenario", "")?;
        if !id.is_empty() {
            check_scenario_id(&id)?;
        }
        let mode = text("mode", "")?.parse::<Mode>()?;
        let model = text("model", model_default)?;
        let prompt = text("prompt", "")?;
        let context = match top.remove("context") {
            None => Value::Object(Map::new()),
            Some(context @ Value::Object(_)) => context,
            Some(other) => return Err(FieldError::wrong_type("context", "an object", &other)),
        };
        let followups = match top.remove("followups") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .into_iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(text) => Ok(text),
                    other => Err(FieldError::WrongType {
                        field: "followups".to_owned(),
                        item: Some(index),
                        expected: "a string",
                        found: json_type(&other),
                    }),
                })
                .collect::<Result<_, _>>()?,
            Some(other) => {
                return Err(FieldError::wrong_type(
                    "followups",
                    "an array of strings",
                    &other,
                ));
            }
        };
        let gateway_config = match top.remove("gateway_config") {
            None | Some(Value::Null) => None,
            Some(config @ Value::Object(_)) => Some(config),
            Some(other) => {
                return Err(FieldError::wrong_type(
                    "gateway_config",
                    "an object",
                    &other,
                ));
            }
        };
        Ok(Scenario {
            id,
            mode,
            model,
            prompt,
            context,
            followups,
            gateway_config,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_parse_print_and_imply_their_context() {
        for mode in UiMode::ALL {
            assert_eq!(mode.as_str().parse::<UiMode>(), Ok(mode));
            assert_eq!(mode.context()["mode"], mode.as_str());
        }
        let flags = |mode: UiMode| {
            let context = mode.context();
            ["thinking_enabled", "is_plan_mode", "subagent_enabled"].map(|key| context[key] == true)
        };
        assert_eq!(flags(UiMode::Flash), [false, false, false]);
        assert_eq!(flags(UiMode::Thinking), [true, false, false]);
        assert_eq!(flags(UiMode::Pro), [true, true, false]);
        assert_eq!(flags(UiMode::Ultra), [true, true, true]);
        assert_eq!(
            "Ultra".parse::<UiMode>().unwrap_err().to_string(),
            "unknown UI mode \"Ultra\": expected flash, thinking, pro or ultra"
        );
    }

    #[test]
    fn a_mode_is_a_ui_mode_else_a_label_that_can_name_a_file() {
        // (name, parsed: Some(is a UI mode), None: refused)
        let cases = [
            ("flash", Some(true)),
            ("ultra", Some(true)),
            ("chat", Some(false)),
            ("tool-loop_2", Some(false)),
            ("9lives", Some(false)),
            ("Chat", None),
            ("", None),
            ("a.b", None),
            ("a/b", None),
            ("-x", None),
            (&"x".repeat(41), None),
        ];
        for (name, expected) in cases {
            let parsed = name.parse::<Mode>();
            assert_eq!(
                parsed.as_ref().ok().map(|mode| mode.ui().is_some()),
                expected,
                "{name:?}: {parsed:?}"
            );
            if let Ok(mode) = parsed {
                assert_eq!(mode.as_str(), name);
            }
        }
        let chat = Scenario::new("s", "chat".parse::<Mode>().unwrap(), "Hi");
        assert_eq!(
            (chat.stem(), chat.context),
            ("s.chat".to_owned(), json!({}))
        );
        let flash = Scenario::new("s", UiMode::Flash, "Hi");
        assert_eq!(flash.context, UiMode::Flash.context());
    }

    #[test]
    fn the_metadata_file_round_trips_and_names_bad_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("recording.jsonl.meta.json");
        let mut scenario = Scenario::new("two_run_thread", UiMode::Pro, "Write a list.");
        scenario.model = "gpt-5.5".into();
        scenario.followups = vec!["Now read it.".into()];
        scenario.gateway_config = Some(json!({"title": {"enabled": false}}));
        std::fs::write(&path, scenario.to_json().to_string()).unwrap();
        assert_eq!(Scenario::load(&path, "other").unwrap(), scenario);

        let cases = [
            (
                json!({"mode": "pro", "prompt": "p"}),
                "missing \"scenario\"",
            ),
            (json!({"scenario": "s", "prompt": "p"}), "missing \"mode\""),
            (
                json!({"scenario": "s", "mode": "a.b", "prompt": "p"}),
                "\"mode\": \"a.b\" is not a mode",
            ),
            (
                json!({"scenario": "s", "mode": "pro", "prompt": "p", "followups": ["a", 2]}),
                "\"followups\"[1] must be a string, got a number",
            ),
            (json!([]), "the document must be an object, got an array"),
        ];
        for (document, expected) in cases {
            std::fs::write(&path, document.to_string()).unwrap();
            let message = Scenario::load(&path, "m").unwrap_err().to_string();
            let prefix = format!("scenario metadata {}: {expected}", path.display());
            assert!(message.starts_with(&prefix), "{message}");
        }
    }

    #[test]
    fn the_model_and_context_have_defaults_in_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("meta.json");
        std::fs::write(
            &path,
            r#"{"scenario": "s", "mode": "flash", "prompt": "p"}"#,
        )
        .unwrap();
        let scenario = Scenario::load(&path, "gpt-5.5").unwrap();
        assert_eq!(scenario.model, "gpt-5.5");
        assert_eq!(scenario.context, json!({}));
        assert_eq!(scenario.prompts().collect::<Vec<_>>(), ["p"]);
        assert_eq!(scenario.stem(), "s.flash");
    }

    /// Issue 34, finding 18: an id that would name a file outside its folder is refused.
    #[test]
    fn a_scenario_id_that_is_no_file_name_is_refused() {
        let cases = [
            ("write_read_file", None),
            ("chat-2", None),
            ("../../x", Some("path separator")),
            ("a\\b", Some("path separator")),
            ("..", Some("names a folder")),
            ("", Some("empty")),
            ("a\u{1b}[2J", Some("control character")),
        ];
        for (id, refused) in cases {
            match (check_scenario_id(id), refused) {
                (Ok(()), None) => {}
                (Err(err), Some(why)) => assert!(err.to_string().contains(why), "{id:?}: {err}"),
                (result, _) => panic!("{id:?}: {result:?}"),
            }
        }
        let mut document = serde_json::json!({"scenario": "../x", "mode": "flash"});
        let err = Scenario::take_from(document.as_object_mut().unwrap(), &[], "").unwrap_err();
        assert!(err.to_string().starts_with("\"scenario\": "), "{err}");
    }
}
