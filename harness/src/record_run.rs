//! Recording a scenario: boot the gateway with the real OpenAI-compatible provider wrapped by the
//! recording model, drive the scenario through DeerFlow's chat page ([`WebClient`], the one page
//! flow the web tests drive too: its page requests, each prompt and follow-up with its run
//! request, then the suggestions it asks for after every run), write the versioned
//! recording and its scenario metadata, and build the fixture from them. The stand-in path is
//! the same with a scripted server in place of the real model.
//!
//! The scenario is redacted before anything else ([`redacted_scenario`]): a key typed into
//! `--prompt` must reach neither the metadata file nor the fixture, and the run drives the
//! redacted prompt, so the recording and every replay of it live the same conversation.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::adapter::boot::{BootError, Extensions, ModelWiring, boot};
use crate::adapter::hermetic::ModelBlock;
use crate::adapter::hermetic::SCENARIO_MODEL;
#[cfg(feature = "stand-in")]
use crate::stand_in::{Reply, STAND_IN_MODEL, StandIn};
use keyless_runner::{DriverError, RunTranscript, session::WebClient};
use replay_core::recording::{Access, RecordingFileError, RecordingSink, read_recording};
use replay_core::{BuildError, Fixture, Scenario, TurnSummary, build_fixture};

/// Why a recording failed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The gateway did not boot.
    #[error("booting the gateway to record {}: {source}", .recording.display())]
    Boot {
        /// The recording being written.
        recording: PathBuf,
        /// Why.
        source: BootError,
    },
    /// A request of the drive failed.
    #[error("driving the gateway to record {}: {source}", .recording.display())]
    Drive {
        /// The recording being written.
        recording: PathBuf,
        /// Why.
        source: DriverError,
    },
    /// The recording file could not be written or read back.
    #[error(transparent)]
    Recording(#[from] RecordingFileError),
    /// The fixture could not be built from the recording.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// A file beside the recording could not be written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The result of a recorded drive.
#[derive(Debug)]
pub struct Recorded {
    /// The fixture built from the recording.
    pub fixture: Fixture,
    /// One line per turn, for the builder's summary.
    pub summary: Vec<TurnSummary>,
    /// The run transcripts.
    pub transcripts: Vec<RunTranscript>,
    /// The suggestions answer after each run.
    pub suggestions: Vec<Value>,
    /// The scenario metadata beside it.
    pub meta_path: PathBuf,
}

/// The metadata file of a recording: `<recording>.meta.json`.
pub use keyless_runner::recordings::meta_path_for;

/// `scenario` with its prompt, follow-ups, context and configuration overrides redacted as a
/// recording is (`docs/recording-format.md` §6).
pub use keyless_runner::recordings::redacted_scenario;

/// Drives `scenario` (redacted first, [`redacted_scenario`]) against a gateway whose model is
/// `block`, recording every model call to `recording_path`, then writes the scenario beside it
/// (its metadata file) and builds the fixture.
pub async fn record_scenario(
    scenario: &Scenario,
    block: ModelBlock,
    recording_path: &Path,
    extensions: Extensions,
) -> Result<Recorded, RecordError> {
    let redacted = redacted_scenario(scenario);
    if redacted != *scenario {
        tracing::warn!(
            "the scenario held a credential-shaped value; it is replaced by \"[secret removed]\" \
             before the run, as the recording, its metadata and the fixture hold it"
        );
    }
    let scenario = &redacted;
    let origin = recording_path.to_path_buf();
    let sink = RecordingSink::open(recording_path)?;
    let booted = boot(
        ModelWiring::Record { block, sink },
        scenario.gateway_config.as_ref(),
        extensions,
    )
    .await
    .map_err(|source| RecordError::Boot {
        recording: origin.clone(),
        source,
    })?;
    let drive = async {
        // Exactly the web client's requests, so the fixture replays in the browser too.
        let runs = (WebClient::new(Some(SCENARIO_MODEL)))
            .drive(&booted.url(), scenario)
            .await?;
        if let Some(failed) = runs.first_failure() {
            return Err(failed);
        }
        Ok((runs.suggestions(), runs.transcripts))
    }
    .await;
    if let Err(err) = booted.shutdown().await {
        tracing::warn!("gateway shutdown: {err}");
    }
    let (suggestions, transcripts) = drive.map_err(|source| RecordError::Drive {
        recording: origin.clone(),
        source,
    })?;
    let meta_path = meta_path_for(recording_path);
    let text = serde_json::to_string_pretty(&scenario.to_json()).unwrap_or_default() + "\n";
    std::fs::write(&meta_path, text).map_err(|source| RecordError::Io {
        path: meta_path.clone(),
        source,
    })?;
    let recording = read_recording(recording_path, Access::External)?;
    let (fixture, summary) = build_fixture(&recording, scenario)?;
    Ok(Recorded {
        fixture,
        summary,
        transcripts,
        suggestions,
        meta_path,
    })
}

/// Records a scenario against a scripted OpenAI-compatible stand-in instead of a real model. The
/// recording lives in a temporary folder that is removed when this returns (the fixture is built
/// from it first). The fixture's `model` is `STAND_IN_MODEL`, whatever the scenario says, so it
/// never passes for a real model's recording.
#[cfg(feature = "stand-in")]
pub async fn record_with_stand_in(
    scenario: &Scenario,
    replies: Vec<Reply>,
    extensions: Extensions,
) -> Result<Recorded, RecordError> {
    let stand_in = StandIn::start(replies)
        .await
        .map_err(|err| RecordError::Boot {
            recording: PathBuf::from("<stand-in>"),
            source: BootError::Listen(err),
        })?;
    let block = ModelBlock::Record {
        model: STAND_IN_MODEL.into(),
        api_key: "stand-in-needs-no-key".into(),
        base_url: stand_in.base_url().to_string(),
    };
    let folder = tempfile::Builder::new()
        .prefix("record-gw-")
        .tempdir()
        .map_err(|source| RecordError::Io {
            path: std::env::temp_dir(),
            source,
        })?;
    let path = folder.path().join("recording.jsonl");
    let scenario = Scenario {
        model: STAND_IN_MODEL.into(),
        ..scenario.clone()
    };
    let recorded = record_scenario(&scenario, block, &path, extensions).await?;
    if stand_in.remaining() > 0 {
        tracing::warn!(
            "the stand-in script has {} unused replies",
            stand_in.remaining()
        );
    }
    Ok(recorded)
}
