//! The hermetic gateway configuration of `docs/replay-and-fixtures.md` §7: everything that could
//! reach the model's input from the developer's machine or the clock is pinned or off, and record
//! and replay differ only in the model block, because both are built by [`hermetic_config`].

use std::path::{Path, PathBuf};

use gateway_under_test::config::{
    Config, DatabaseBackend, ModelConfig, PasswordHashConfig, Synchronous,
};
use secrecy::SecretString;
use serde_json::Value;

/// The model's name in both blocks: it may appear in prompts, so it never differs.
pub const SCENARIO_MODEL: &str = "scenario-model";
/// The `use` string the replay provider is registered under.
pub(crate) const REPLAY_PROVIDER: &str = "deerflow-replay";
/// The default recording model (`RECORD_MODEL`).
pub const DEFAULT_RECORD_MODEL: &str = "gpt-5.5";

/// The only part of the configuration that differs between record and replay. The key is a
/// [`SecretString`]: this value's `Debug` never shows it.
#[derive(Debug, Clone)]
pub enum ModelBlock {
    /// The replay model (`use = deerflow-replay`).
    Replay,
    /// The real OpenAI-compatible client.
    Record {
        /// Provider model id (`RECORD_MODEL`).
        model: String,
        /// The key (`OPENAI_API_KEY`); kept in memory only.
        api_key: SecretString,
        /// The endpoint (`OPENAI_API_BASE`).
        base_url: String,
    },
}

impl ModelBlock {
    fn entry(&self) -> ModelConfig {
        match self {
            ModelBlock::Replay => {
                let mut entry = ModelConfig::new(SCENARIO_MODEL, REPLAY_PROVIDER);
                entry.display_name = Some("Scenario Model".into());
                entry.model = Some("replay".into());
                entry.supports_thinking = true;
                entry
            }
            ModelBlock::Record {
                model,
                api_key,
                base_url,
            } => {
                let mut entry = ModelConfig::new(SCENARIO_MODEL, "openai");
                entry.display_name = Some("Scenario Model".into());
                entry.model = Some(model.clone());
                entry.api_key = Some(api_key.clone());
                entry.base_url = Some(base_url.clone());
                entry
            }
        }
    }
}

/// Why a hermetic home could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum HermeticError {
    /// A file or folder could not be written.
    #[error("hermetic home {path}: {source}")]
    Io {
        /// What was being written.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A fixture's `gateway_config` overrides did not fit the configuration.
    #[error("gateway_config overrides: {0}")]
    Overrides(String),
    /// A fixture's `gateway_config` sets a key it may not (`docs/replay-and-fixtures.md` §7.6).
    #[error(
        "gateway_config key {key:?} is refused: {why}; a fixture may set only what shapes the \
         prompt or the client's view: {}",
        ALLOWED_OVERRIDES.join(", ")
    )]
    Refused {
        /// The key, as a dotted path (`models`, `title.model_name`).
        key: String,
        /// Why.
        why: &'static str,
    },
}

/// The tables a fixture's `gateway_config` may set (`docs/replay-and-fixtures.md` §7.6): each
/// shapes what the model is asked or what a client sees, and none names a model block, a URL or a
/// path. Everything else (`models`, `home`, `database`, `server`, `auth`, `sandbox`, `skills`,
/// `tools`, `memory`, …) could point a replay at the network or move its files, and is refused.
pub(crate) const ALLOWED_OVERRIDES: [&str; 8] = [
    "title",
    "suggestions",
    "token_usage",
    "uploads",
    "tool_limits",
    "message_limits",
    "llm_retry",
    "runs",
];

/// Refuses overrides outside [`ALLOWED_OVERRIDES`], and any string in them that reads as a URL
/// or a path, naming the key.
fn check_overrides(overrides: &Value) -> Result<(), HermeticError> {
    let Value::Object(tables) = overrides else {
        return Err(HermeticError::Overrides("must be a JSON object".into()));
    };
    for (key, value) in tables {
        if !ALLOWED_OVERRIDES.contains(&key.as_str()) {
            let why = if key == "models" {
                "a fixture may not bring a model block (replay must never reach a model)"
            } else {
                "it does not shape the prompt, and may point the gateway at the network or move its files"
            };
            return Err(HermeticError::Refused {
                key: key.clone(),
                why,
            });
        }
        check_leaves(key, value)?;
    }
    Ok(())
}

fn check_leaves(path: &str, value: &Value) -> Result<(), HermeticError> {
    match value {
        Value::String(text) => {
            let url = text.contains("://");
            let file = text.starts_with(['/', '~', '.']) || text.contains(['/', '\\']);
            if url || file {
                return Err(HermeticError::Refused {
                    key: path.to_owned(),
                    why: "its value reads as a URL or a path",
                });
            }
            Ok(())
        }
        Value::Object(map) => map
            .iter()
            .try_for_each(|(key, item)| check_leaves(&format!("{path}.{key}"), item)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(index, item)| check_leaves(&format!("{path}[{index}]"), item)),
        _ => Ok(()),
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HermeticError + '_ {
    move |source| HermeticError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `<root>/home` with an empty skills folder (`public/`, `custom/`) and an empty
/// extensions config, and returns the home folder.
pub fn prepare_home(root: &Path) -> Result<PathBuf, HermeticError> {
    let home = root.join("home");
    // No database folder: the hermetic database is in memory.
    for folder in [home.join("skills/public"), home.join("skills/custom")] {
        std::fs::create_dir_all(&folder).map_err(io(&folder))?;
    }
    let extensions = home.join("extensions_config.json");
    std::fs::write(&extensions, "{\"mcpServers\": {}, \"skills\": {}}\n")
        .map_err(io(&extensions))?;
    Ok(home)
}

/// The pinned configuration for `home` with `block`, plus a fixture's `gateway_config` overrides
/// (a JSON object deep-merged into the configuration; applied the same way when recording), which
/// may set only `ALLOWED_OVERRIDES`.
pub fn hermetic_config(
    home: &Path,
    block: &ModelBlock,
    overrides: Option<&Value>,
) -> Result<Config, HermeticError> {
    let mut config = Config {
        home: home.to_path_buf(),
        log_level: "warning".into(),
        models: vec![block.entry()],
        ..Config::default()
    };
    // The database is thrown away with the run, so it lives in memory (DeerFlow's own
    // `memory` backend, its default): no file, lock, log or sync. On a disk, the syncs alone
    // were half of a Layer 1 test's time (docs/replay-and-fixtures.md §7.3); in `/dev/shm` the
    // file's writes and locks were still a fifth of its CPU time (issue 46). The `sqlite`
    // settings stay pinned as before (a fixture may not override `database`), so that a file
    // database, were it ever chosen here again, is still a throw-away one.
    config.database.backend = DatabaseBackend::Memory;
    config.database.sqlite_dir = PathBuf::from("db");
    config.database.synchronous = Synchronous::Off;
    config.database.space_reserve = false;
    config.skills.path = PathBuf::from("skills");
    config.skills.container_path = "/mnt/skills".into();
    config.memory.enabled = false;
    config.memory.injection_enabled = false;
    config.summarization.enabled = false;
    config.title = Default::default();
    config.auth.password_hash = PasswordHashConfig::cheap();
    config.auth.jwt_secret = Some("ci-replay-secret".into());
    if let Some(overrides) = overrides.filter(|o| !o.is_null()) {
        check_overrides(overrides)?;
        config = apply_overrides(&config, overrides)?;
    }
    config
        .validate()
        .map_err(|err| HermeticError::Overrides(err.to_string()))?;
    Ok(config)
}

fn apply_overrides(config: &Config, overrides: &Value) -> Result<Config, HermeticError> {
    let mut value =
        serde_json::to_value(config).map_err(|err| HermeticError::Overrides(err.to_string()))?;
    if !overrides.is_object() {
        return Err(HermeticError::Overrides("must be a JSON object".into()));
    }
    merge(&mut value, overrides);
    serde_json::from_value(value).map_err(|err| HermeticError::Overrides(err.to_string()))
}

fn merge(target: &mut Value, patch: &Value) {
    match (target, patch) {
        (Value::Object(target), Value::Object(patch)) => {
            for (key, value) in patch {
                merge(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// Writes the configuration as TOML beside the home, for a gateway started as a process. The record
/// block's key is replaced by `$OPENAI_API_KEY`, so the file never holds a secret.
pub(crate) fn write_config_file(root: &Path, config: &Config) -> Result<PathBuf, HermeticError> {
    let mut shown = config.clone();
    for model in &mut shown.models {
        if model.api_key.is_some() {
            model.api_key = Some("$OPENAI_API_KEY".into());
        }
    }
    let path = root.join("config.toml");
    let text = toml::to_string_pretty(&shown)
        .map_err(|err| HermeticError::Overrides(format!("cannot render config.toml: {err}")))?;
    std::fs::write(&path, text).map_err(io(&path))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn record_and_replay_differ_only_in_the_model_entry() {
        let home = Path::new("/tmp/h");
        let replay = hermetic_config(home, &ModelBlock::Replay, None).unwrap();
        let record = hermetic_config(
            home,
            &ModelBlock::Record {
                model: "m".into(),
                api_key: "k".into(),
                base_url: "http://b".into(),
            },
            None,
        )
        .unwrap();
        assert_eq!(replay.models[0].name, record.models[0].name);
        assert_ne!(replay.models[0].use_, record.models[0].use_);
        // Compared as their serialised form: `Config` holds secrets, so it has no `==`.
        let strip = |mut config: Config| {
            config.models.clear();
            serde_json::to_value(config).unwrap()
        };
        assert_eq!(strip(replay), strip(record));
    }

    #[test]
    fn the_pinned_settings_are_the_spec_table() {
        let config = hermetic_config(Path::new("/tmp/h"), &ModelBlock::Replay, None).unwrap();
        let tools: Vec<(&str, &str)> = config
            .tools
            .iter()
            .map(|t| (t.name.as_str(), t.group.as_str()))
            .collect();
        assert_eq!(
            tools,
            [
                ("ls", "file:read"),
                ("read_file", "file:read"),
                ("write_file", "file:write")
            ]
        );
        assert!(!config.memory.enabled && !config.summarization.enabled);
        assert!(config.title.enabled && config.title.model_name.is_none());
        assert_eq!((config.title.max_chars, config.title.max_words), (60, 6));
        assert_eq!(config.sandbox.use_, "local");
        assert_eq!(config.log_level, "warning");
        // A throw-away database: in memory; were it a file, never synced (the product's
        // default syncs).
        assert_eq!(config.database.backend, DatabaseBackend::Memory);
        assert_eq!(config.database.synchronous, Synchronous::Off);
        assert!(!config.database.space_reserve);
        assert_eq!(config.auth.password_hash, PasswordHashConfig::cheap());
    }

    #[test]
    fn overrides_merge_into_the_configuration_and_bad_ones_are_named() {
        let overrides = json!({"title": {"model_name": SCENARIO_MODEL}});
        let config =
            hermetic_config(Path::new("/tmp/h"), &ModelBlock::Replay, Some(&overrides)).unwrap();
        assert_eq!(config.title.model_name.as_deref(), Some(SCENARIO_MODEL));
        assert!(
            config.title.enabled,
            "untouched keys keep their pinned values"
        );
        let bad = json!({"title": {"model_name": "ghost"}});
        let err =
            hermetic_config(Path::new("/tmp/h"), &ModelBlock::Replay, Some(&bad)).unwrap_err();
        assert!(err.to_string().contains("title.model_name"), "{err}");
    }

    #[test]
    fn overrides_outside_the_allow_list_are_refused_by_key() {
        // (overrides, the refused key, or None when they apply)
        let cases = [
            (json!({"title": {"model_name": SCENARIO_MODEL}}), None),
            (
                json!({"suggestions": {"max_suggestions": 2}, "token_usage": {"enabled": true}}),
                None,
            ),
            (json!({"runs": {"default_recursion_limit": 30}}), None),
            (
                json!({"models": [{"name": "live", "use": "openai", "base_url": "https://api.openai.com/v1"}]}),
                Some("models"),
            ),
            (json!({"home": "/tmp/elsewhere"}), Some("home")),
            (
                json!({"database": {"sqlite_dir": "/var/db"}}),
                Some("database"),
            ),
            (json!({"server": {"web_dir": "/etc"}}), Some("server")),
            (
                json!({"skills": {"path": "/home/me/skills"}}),
                Some("skills"),
            ),
            (json!({"memory": {"enabled": true}}), Some("memory")),
            (
                json!({"title": {"model_name": "https://evil.example/v1"}}),
                Some("title.model_name"),
            ),
            (
                json!({"suggestions": {"model_name": "../../etc/passwd"}}),
                Some("suggestions.model_name"),
            ),
        ];
        for (overrides, refused) in cases {
            let result =
                hermetic_config(Path::new("/tmp/h"), &ModelBlock::Replay, Some(&overrides));
            match (result, refused) {
                (Ok(_), None) => {}
                (Err(HermeticError::Refused { key, .. }), Some(expected)) => {
                    assert_eq!(key, expected, "{overrides}")
                }
                (other, _) => panic!("{overrides}: {:?}", other.map(|_| "applied")),
            }
        }
    }

    #[test]
    fn the_written_config_file_never_holds_the_key() {
        let root = tempfile::tempdir().unwrap();
        let block = ModelBlock::Record {
            model: "m".into(),
            api_key: "sk-very-secret-key-123456".into(),
            base_url: "http://b".into(),
        };
        let config = hermetic_config(&prepare_home(root.path()).unwrap(), &block, None).unwrap();
        let path = write_config_file(root.path(), &config).unwrap();
        let text = std::fs::read_to_string(path).unwrap();
        assert!(!text.contains("sk-very-secret"), "{text}");
        assert!(text.contains("$OPENAI_API_KEY"));
    }

    #[test]
    fn the_model_block_never_shows_the_key_in_debug() {
        let block = ModelBlock::Record {
            model: "m".into(),
            api_key: "sk-very-secret-key-123456".into(),
            base_url: "http://b".into(),
        };
        let debug = format!("{block:?} {block:#?}");
        assert!(!debug.contains("sk-very-secret"), "{debug}");
        assert!(
            debug.contains("http://b"),
            "the rest stays visible: {debug}"
        );
    }
}
