//! Layer 1: one fixture through the real gateway, keyless. Boot with the replay model (or select
//! the fixture on the model server of a gateway that runs elsewhere: see [`crate::target`]),
//! drive register → thread → `runs/stream` (then any follow-up prompts in the same thread),
//! reduce the SSE to shapes, and collect the misses the error middleware hid.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::adapter::boot::{BootError, Extensions};
use crate::driver::{Driver, DriverError, RunTranscript};
use crate::golden::stem_of;
use crate::model_server::ClientError;
use crate::target::{GatewayTarget, InProcess};
use replay_core::{Fixture, FixtureError, Miss, Shape, golden_document, shorten};

/// Why a scenario could not run at all (as opposed to running and drifting).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The fixture is malformed.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// The gateway did not boot.
    #[error("booting the gateway for {fixture}: {source}")]
    Boot {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: BootError,
    },
    /// A request of the drive failed.
    #[error("driving the gateway for {fixture}: {source}")]
    Drive {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: DriverError,
    },
    /// The model server of a gateway that runs elsewhere could not select the fixture or report.
    #[error("model server for {fixture}: {source}")]
    ModelServer {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: ClientError,
    },
}

/// The result of running one fixture.
#[derive(Debug)]
pub struct ScenarioRun {
    /// The fixture file.
    pub fixture_path: PathBuf,
    /// The fixture.
    pub fixture: Fixture,
    /// One transcript per prompt (the prompt, then each follow-up).
    pub transcripts: Vec<RunTranscript>,
    /// Model calls with no recorded output.
    pub misses: Vec<Miss>,
    /// Other model-side failures reported by a model server (a strict-replay mismatch, an
    /// ambiguous caller, an unreadable request), as their messages.
    pub model_errors: Vec<String>,
    /// Turns nobody asked for (information, not failure).
    pub unused_turns: Vec<usize>,
    /// Wall time from boot to shutdown.
    pub elapsed: Duration,
}

impl ScenarioRun {
    /// The snapshot name: the fixture's file name without `.json`.
    pub fn stem(&self) -> String {
        stem_of(&self.fixture_path)
    }

    /// The shape sequence of every run, in order.
    pub fn shapes(&self) -> Vec<Shape> {
        self.transcripts
            .iter()
            .flat_map(RunTranscript::shapes)
            .collect()
    }

    /// DeerFlow's golden document for these shapes.
    pub fn golden_document(&self) -> String {
        golden_document(
            &self.fixture.scenario.id,
            self.fixture.scenario.mode.as_str(),
            &self.shapes(),
        )
    }

    /// The Layer 1 assertions before the golden comparison (`replay-and-fixtures.md` §8.3):
    /// the first event is `metadata`, the last is `end`, and the replay model missed nothing.
    /// The error is a full report.
    pub fn check(&self) -> Result<(), String> {
        let shapes = self.shapes();
        let first = shapes.first().and_then(|s| s.event.as_deref());
        let last = shapes.last().and_then(|s| s.event.as_deref());
        let mut problems = Vec::new();
        if first != Some("metadata") {
            problems.push(format!(
                "the first event is {first:?}, expected \"metadata\""
            ));
        }
        if last != Some("end") {
            problems.push(format!("the last event is {last:?}, expected \"end\""));
        }
        if !self.misses.is_empty() {
            let hashes: Vec<&str> = self.misses.iter().map(|m| m.input_hash.as_str()).collect();
            problems.push(format!(
                "replay miss ({}): the fixture is stale vs the current gateway; re-record it (cargo xtask record) or fix the drift. Missed hashes: {hashes:?}",
                self.misses.len()
            ));
        }
        if !self.model_errors.is_empty() {
            problems.push(format!(
                "the model server reported {} problem(s): {:?}",
                self.model_errors.len(),
                self.model_errors
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{}\n\n{}", problems.join("\n"), self.report()))
        }
    }

    /// Everything needed to explain a failure: the fixture, each request and raw SSE transcript,
    /// and every miss with its key, canonical input and nearest recorded turn.
    pub fn report(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "fixture: {}", self.fixture_path.display());
        let full = std::env::var_os("HARNESS_FULL_TRANSCRIPT").is_some();
        for (index, transcript) in self.transcripts.iter().enumerate() {
            let _ = writeln!(out, "\n--- run {index} request ---\n{}", transcript.request);
            if full {
                let _ = writeln!(
                    out,
                    "--- run {index} SSE transcript ---\n{}",
                    transcript.raw
                );
                continue;
            }
            let _ = writeln!(
                out,
                "--- run {index} SSE transcript (data cut at 160 characters; HARNESS_FULL_TRANSCRIPT=1 shows it all) ---"
            );
            for (position, event) in transcript.events.iter().enumerate() {
                let shape = replay_core::shape_of(Some(&event.event), &event.data);
                let _ = writeln!(
                    out,
                    "[{position:>2}] {:<9} keys={:?}\n     data: {}",
                    event.event,
                    shape.keys.unwrap_or_default(),
                    shorten(&event.data, 160)
                );
            }
        }
        for miss in &self.misses {
            let _ = writeln!(out, "--- miss ---\n{miss}");
        }
        for problem in &self.model_errors {
            let _ = writeln!(out, "--- model server ---\n{problem}");
        }
        if !self.unused_turns.is_empty() {
            let _ = writeln!(
                out,
                "unused turns (information only): {:?}",
                self.unused_turns
            );
        }
        out
    }

    /// Turns used of recorded.
    pub fn turns_used(&self) -> usize {
        self.fixture.turns.len() - self.unused_turns.len()
    }
}

/// Runs a fixture file.
pub async fn run_fixture(path: &Path) -> Result<ScenarioRun, HarnessError> {
    run_fixture_with(path, Extensions::default()).await
}

/// Runs a fixture file with test extensions (drift tests use the gateway's real extension
/// points through these).
pub async fn run_fixture_with(
    path: &Path,
    extensions: Extensions,
) -> Result<ScenarioRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    run_loaded(path, fixture, extensions).await
}

/// Runs an already loaded fixture through an in-process gateway.
pub async fn run_loaded(
    path: &Path,
    fixture: Fixture,
    extensions: Extensions,
) -> Result<ScenarioRun, HarnessError> {
    run_on(&mut InProcess::new(extensions), path, fixture).await
}

/// Runs a fixture file through `target`.
pub async fn run_fixture_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
) -> Result<ScenarioRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    run_on(target, path, fixture).await
}

/// Runs an already loaded fixture through `target`: start, drive, then finish (also after a
/// failed drive, so the gateway stops and the model side is read).
pub async fn run_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
    fixture: Fixture,
) -> Result<ScenarioRun, HarnessError> {
    let started = Instant::now();
    let url = target.start(path, &fixture).await?;
    let drive = drive_prompts(&url, &fixture).await;
    let ledger = target.finish().await;
    let transcripts = drive.map_err(|source| HarnessError::Drive {
        fixture: path.to_path_buf(),
        source,
    })?;
    let ledger = ledger?;
    Ok(ScenarioRun {
        fixture_path: path.to_path_buf(),
        misses: ledger.misses,
        model_errors: ledger.other_problems,
        unused_turns: ledger.unused_turns,
        fixture,
        transcripts,
        elapsed: started.elapsed(),
    })
}

/// Registers, creates a thread, and streams the fixture's prompt and follow-ups in it.
pub async fn drive_prompts(
    url: &str,
    fixture: &Fixture,
) -> Result<Vec<RunTranscript>, DriverError> {
    let mut driver = Driver::new(url)?;
    driver.register().await?;
    let (_, transcripts) = driver.run_scenario(&fixture.scenario).await?;
    Ok(transcripts)
}
