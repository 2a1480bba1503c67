//! What a recording session leaves behind, written the same way by every command that records
//! (`keyless record`, `keyless model-server --record`, `cargo xtask record`): the fixture,
//! written atomically into its folder, and the scenario metadata beside the raw recording
//! (`<recording>.meta.json`, DeerFlow's fixture builder input).

use std::path::{Path, PathBuf};

use replay_core::recording::{redact, redact_text};
use replay_core::{
    BuildWarning, Fixture, SHARED_FILE_MODE, Scenario, TurnSummary, first_chars, write_atomically,
};

/// Why a fixture or its metadata could not be written.
#[derive(Debug, thiserror::Error)]
#[error("cannot write {}: {source}", .path.display())]
pub struct WriteError {
    /// The file or folder.
    pub path: PathBuf,
    /// Why.
    pub source: std::io::Error,
}

/// The metadata file of a recording: `<recording>.meta.json`.
pub fn meta_path_for(recording: &Path) -> PathBuf {
    let mut name = recording.as_os_str().to_owned();
    name.push(".meta.json");
    PathBuf::from(name)
}

/// Writes `fixture` to `path` (creating its folder) atomically, so a failure leaves no
/// half-written fixture.
pub fn write_fixture(path: &Path, fixture: &Fixture) -> Result<(), WriteError> {
    if let Some(folder) = path
        .parent()
        .filter(|folder| !folder.as_os_str().is_empty())
    {
        std::fs::create_dir_all(folder).map_err(|source| WriteError {
            path: folder.to_path_buf(),
            source,
        })?;
    }
    write_atomically(path, fixture.to_pretty_json().as_bytes(), SHARED_FILE_MODE).map_err(
        |source| WriteError {
            path: path.to_path_buf(),
            source,
        },
    )
}

/// Writes the scenario metadata of `fixture` beside `recording` and returns its path.
pub fn write_meta(recording: &Path, fixture: &Fixture) -> Result<PathBuf, WriteError> {
    let meta = meta_path_for(recording);
    let text = serde_json::to_string_pretty(&fixture.scenario.to_json()).unwrap_or_default() + "\n";
    std::fs::write(&meta, text).map_err(|source| WriteError {
        path: meta.clone(),
        source,
    })?;
    Ok(meta)
}

/// One line per recorded call: index, caller, the start of its key, what it answered.
pub fn summary_lines(summary: &[TurnSummary]) -> Vec<String> {
    summary
        .iter()
        .map(|line| {
            format!(
                "  call {}: {:<18} {}…  {}",
                line.call_index,
                line.caller,
                first_chars(&line.input_hash, 12),
                line.what
            )
        })
        .collect()
}

/// The fixture builder's warnings about `fixture` (turns that share a key but answer
/// differently, which a replay reports as ambiguous), one line each.
pub fn warning_lines(fixture: &Fixture) -> Vec<String> {
    BuildWarning::of(fixture)
        .into_iter()
        .map(|warning| format!("warning: {warning}"))
        .collect()
}

/// `scenario` with its prompt, follow-ups, context and configuration overrides redacted as a
/// recording is (`docs/recording-format.md` §6): what is driven, written beside the recording and
/// put in the fixture, so a key typed into a prompt reaches no file.
pub fn redacted_scenario(scenario: &Scenario) -> Scenario {
    Scenario {
        prompt: redact_text(&scenario.prompt),
        followups: scenario.followups.iter().map(|f| redact_text(f)).collect(),
        context: redact(&scenario.context),
        gateway_config: scenario.gateway_config.as_ref().map(redact),
        ..scenario.clone()
    }
}

/// Creates the folder `path` goes into when it does not exist yet (the recording writer would
/// otherwise fail on its lock file) and returns it, so the caller says so.
pub fn create_parent(path: &Path) -> Result<Option<PathBuf>, WriteError> {
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(None);
    };
    if parent.exists() {
        return Ok(None);
    }
    std::fs::create_dir_all(parent).map_err(|source| WriteError {
        path: parent.to_path_buf(),
        source,
    })?;
    Ok(Some(parent.to_path_buf()))
}
