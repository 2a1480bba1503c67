//! Layer 1: one fixture through the real gateway, keyless. Boot with the replay model (or select
//! the fixture on the model server of a gateway that runs elsewhere: see [`crate::target`]),
//! drive register → thread → `runs/stream` (then any follow-up prompts in the same thread),
//! reduce the SSE to shapes, collect the misses the error middleware hid, and give the run its
//! [`Verdict`] and a report that explains it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use replay_core::{
    Ambiguity, Fixture, FixtureError, GoldenStatus, Miss, MissingGolden, Shape, UnusedTurns,
    Verdict, golden_document, shorten,
};

use crate::driver::{DriveOptions, Driver, DriverError, FramingRule, RunTranscript, Session};
use crate::golden::{golden_check, golden_path, stem_of};
use crate::model_server::ClientError;
use crate::target::GatewayTarget;

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
        /// Why (the adapter's boot error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A request of the drive failed.
    #[error("driving the gateway for {fixture}: {source}")]
    Drive {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: DriverError,
    },
    /// The fixture's drive ran past its time limit (a fixture with thousands of follow-ups
    /// would otherwise run unbounded).
    #[error(
        "{fixture}: the drive ran past the fixture's time limit of {} s and was stopped (raise it \
         with --fixture-time-limit SECS, a flag of keyless test and cargo xtask replay, if the \
         fixture is meant to be that long)",
        .limit.as_secs_f64()
    )]
    TimedOut {
        /// The fixture file.
        fixture: PathBuf,
        /// The limit.
        limit: Duration,
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
    /// The fixture (the same one the target's engine replayed, not a copy).
    pub fixture: Arc<Fixture>,
    /// One transcript per prompt (the prompt, then each follow-up).
    pub transcripts: Vec<RunTranscript>,
    /// Model calls with no recorded output.
    pub misses: Vec<Miss>,
    /// Model calls that named no caller and met a key with several different answers.
    pub ambiguities: Vec<Ambiguity>,
    /// Other model-side failures reported by a model server (a strict-replay mismatch, an
    /// ambiguous caller, an unreadable request), as their messages.
    pub model_errors: Vec<String>,
    /// Turns nobody asked for (information, not failure).
    pub unused_turns: Vec<usize>,
    /// Wall time from boot to shutdown.
    pub elapsed: Duration,
    /// The golden folder the run is judged against (its golden is `<stem>.snap` there).
    pub golden_dir: PathBuf,
}

impl ScenarioRun {
    /// The snapshot name: the fixture's file name without `.json`.
    pub fn stem(&self) -> String {
        stem_of(&self.fixture_path)
    }

    /// The shape sequence of every run, in order (each run reduced as its stream modes' golden
    /// holds it: [`RunTranscript::golden_shapes`]).
    pub fn shapes(&self) -> Vec<Shape> {
        self.transcripts
            .iter()
            .flat_map(RunTranscript::golden_shapes)
            .collect()
    }

    /// How many SSE events the runs streamed (one shape each), without reducing them.
    pub fn event_count(&self) -> usize {
        self.transcripts
            .iter()
            .map(|transcript| transcript.events.len())
            .sum()
    }

    /// DeerFlow's golden document for these shapes.
    pub fn golden_document(&self) -> String {
        golden_document(
            &self.fixture.scenario.id,
            self.fixture.scenario.mode.as_str(),
            &self.shapes(),
        )
    }

    /// The Layer 1 verdict on this run: framing, misses and other model errors, the shapes
    /// against the committed golden, unused turns (judged [`UnusedTurns::Lenient`]).
    pub fn verdict(&self) -> Verdict {
        self.verdict_with(UnusedTurns::Lenient)
    }

    /// [`ScenarioRun::verdict`] with the unused turns judged under `rule`.
    pub fn verdict_with(&self, rule: UnusedTurns) -> Verdict {
        let shapes = self.shapes();
        let document = golden_document(
            &self.fixture.scenario.id,
            self.fixture.scenario.mode.as_str(),
            &shapes,
        );
        let (golden, refusal) = match golden_check(&self.golden_dir, &self.stem(), &document) {
            Ok(status) => (status, None),
            Err(err) => (GoldenStatus::Refused, Some(err.to_string())),
        };
        let callers: Vec<Option<&str>> = (self.fixture.turns.iter())
            .map(|turn| turn.caller.as_deref())
            .collect();
        let mut verdict = Verdict::new(
            &shapes,
            self.misses.clone(),
            self.ambiguities.clone(),
            self.model_errors.clone(),
            golden,
            self.unused_turns.clone(),
            self.fixture.turns.len(),
        )
        .judge_unused(&callers, rule);
        verdict.golden_refusal = refusal;
        // A dialect other than DeerFlow's is held to its own rule, run by run.
        let rule = self.transcripts.first().map(|t| t.framing_rule);
        if let Some(rule) = rule.filter(|rule| *rule != FramingRule::MetadataThenEnd) {
            let model_error_recorded = (self.fixture.turns.iter())
                .any(|turn| matches!(turn.answer, replay_core::Answer::Error(_)));
            verdict.framing = rule.framing(&self.transcripts, model_error_recorded);
        }
        verdict
    }

    /// `Ok` when the run's verdict passes with a missing golden failing it, as a test or a
    /// benchmark demands of a shipped fixture; otherwise the report that explains the verdict.
    pub fn check(&self) -> Result<(), String> {
        let verdict = self.verdict();
        if verdict.passes(MissingGolden::Fails) {
            Ok(())
        } else {
            Err(self.report(&verdict))
        }
    }

    /// Everything needed to explain `verdict`: its failed checks, the fixture, each request and
    /// SSE transcript, every miss with its key, canonical input and nearest recorded turn, the
    /// model server's other problems, and the unused turns.
    pub fn report(&self, verdict: &Verdict) -> String {
        let mut out = String::new();
        for problem in verdict.problems(MissingGolden::Fails) {
            let _ = writeln!(out, "{problem}");
        }
        if verdict.golden != GoldenStatus::Ok {
            let _ = writeln!(
                out,
                "\ngolden: {} ({})",
                golden_path(&self.golden_dir, &self.stem()).display(),
                verdict.golden.as_str()
            );
        }
        out.push_str(&self.details());
        out
    }

    /// What explains any verdict on this run, without judging it: the fixture, each request and
    /// SSE transcript, every miss, the model server's other problems and the unused turns. (The
    /// web client flow judges its runs by its own verdict, not by the Layer 1 golden.)
    pub fn details(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "\nfixture: {}", self.fixture_path.display());
        let full = std::env::var_os("HARNESS_FULL_TRANSCRIPT").is_some();
        for (index, transcript) in self.transcripts.iter().enumerate() {
            let _ = writeln!(out, "\n--- run {index} request ---\n{}", transcript.request);
            if full {
                let _ = writeln!(
                    out,
                    "--- run {index} SSE transcript ---\n{}",
                    transcript.raw()
                );
                continue;
            }
            let _ = writeln!(
                out,
                "--- run {index} SSE transcript (data cut at 160 characters; HARNESS_FULL_TRANSCRIPT=1 shows it all) ---"
            );
            let shapes = transcript.frame_shapes();
            for (position, (event, shape)) in transcript.events.iter().zip(shapes).enumerate() {
                let _ = writeln!(
                    out,
                    "[{position:>2}] {:<9} keys={:?}\n     data: {}",
                    shape.event.as_deref().unwrap_or(&event.event),
                    shape.keys.unwrap_or_default(),
                    shorten(event.data(), 160)
                );
            }
        }
        for miss in &self.misses {
            let _ = writeln!(out, "--- miss ---\n{miss}");
        }
        for ambiguity in &self.ambiguities {
            let _ = writeln!(out, "--- ambiguous ---\n{ambiguity}");
        }
        for problem in &self.model_errors {
            let _ = writeln!(out, "--- model server ---\n{problem}");
        }
        if !self.unused_turns.is_empty() {
            let _ = writeln!(out, "unused turns: {:?}", self.unused_turns);
        }
        out
    }

    /// Turns used of recorded.
    pub fn turns_used(&self) -> usize {
        self.fixture.turns.len() - self.unused_turns.len()
    }
}

/// The Tokio runtime to run fixtures on from synchronous code: a `datatest-stable` test, a
/// benchmark, a command. It is multi-threaded with two workers, because an in-process gateway
/// serves on the same runtime as the driver that streams from it; I/O and timers are on.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

/// Runs a fixture file through `target`, judged against the goldens in `golden_dir`.
pub async fn run_fixture_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
) -> Result<ScenarioRun, HarnessError> {
    run_fixture_on_within(target, path, golden_dir, FIXTURE_TIME_LIMIT).await
}

/// How long one fixture's drive may take by default: far above any shipped fixture (a few
/// seconds on a debug build), far below "unbounded".
pub const FIXTURE_TIME_LIMIT: Duration = Duration::from_secs(300);

/// [`run_fixture_on`] with a time limit for the drive: past it, the drive stops, the target
/// finishes, and the run is [`HarnessError::TimedOut`], naming the fixture.
pub async fn run_fixture_on_within(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    limit: Duration,
) -> Result<ScenarioRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    run_on_within(target, path, golden_dir, fixture, limit).await
}

/// Runs an already loaded fixture through `target`: start, drive, then finish (also after a
/// failed drive, so the gateway stops and the model side is read).
pub async fn run_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    fixture: Fixture,
) -> Result<ScenarioRun, HarnessError> {
    run_on_within(target, path, golden_dir, fixture, FIXTURE_TIME_LIMIT).await
}

/// [`run_on_within`] driving the gateway in the dialect and stream modes `options` say
/// (`keyless test --api langgraph`, `--stream-modes web`). A fixture already in an [`Arc`] (one
/// a model server serves too) is shared, not copied.
pub async fn run_on_with(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    fixture: impl Into<Arc<Fixture>>,
    options: &DriveOptions,
    limit: Duration,
) -> Result<ScenarioRun, HarnessError> {
    let (run, ()) = drive_target_within(
        target,
        path,
        golden_dir,
        fixture,
        limit,
        async |url, fixture| Ok((drive_prompts_with(url, fixture, options).await?, ())),
    )
    .await?;
    Ok(run)
}

/// Opens a session in `options`' dialect and streams the fixture's prompt and follow-ups in one
/// thread, each human message as the fixture recorded it.
pub async fn drive_prompts_with(
    url: &str,
    fixture: &Fixture,
    options: &DriveOptions,
) -> Result<Vec<RunTranscript>, DriverError> {
    let mut session = Session::open(url, options).await?;
    session
        .run_scenario(&fixture.scenario, &fixture.turns)
        .await
}

/// [`run_on`] with a time limit for the drive.
pub async fn run_on_within(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    fixture: Fixture,
    limit: Duration,
) -> Result<ScenarioRun, HarnessError> {
    let (run, ()) = drive_target_within(
        target,
        path,
        golden_dir,
        fixture,
        limit,
        async |url, fixture| Ok((drive_prompts(url, fixture).await?, ())),
    )
    .await?;
    Ok(run)
}

/// Starts `target` for `fixture`, drives it with `drive`, then finishes it, also after a failed
/// drive, so the gateway stops and the model side is read. `drive` returns the transcripts of
/// the runs and whatever else it observed (the web client's flow keeps its page requests). The
/// run is judged against the goldens in `golden_dir`.
pub async fn drive_target<T>(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    fixture: Fixture,
    drive: impl AsyncFnOnce(&str, &Fixture) -> Result<(Vec<RunTranscript>, T), DriverError>,
) -> Result<(ScenarioRun, T), HarnessError> {
    drive_target_within(target, path, golden_dir, fixture, FIXTURE_TIME_LIMIT, drive).await
}

/// [`drive_target`] with a time limit for the drive: past it the drive is dropped (its requests
/// cancelled), the target finishes, and the run is [`HarnessError::TimedOut`].
async fn drive_target_within<T>(
    target: &mut dyn GatewayTarget,
    path: &Path,
    golden_dir: &Path,
    fixture: impl Into<Arc<Fixture>>,
    limit: Duration,
    drive: impl AsyncFnOnce(&str, &Fixture) -> Result<(Vec<RunTranscript>, T), DriverError>,
) -> Result<(ScenarioRun, T), HarnessError> {
    let started = Instant::now();
    let fixture: Arc<Fixture> = fixture.into();
    let url = target.start(path, &fixture).await?;
    let drive = tokio::time::timeout(limit, drive(&url, &fixture)).await;
    let ledger = target.finish().await;
    let Ok(drive) = drive else {
        return Err(HarnessError::TimedOut {
            fixture: path.to_path_buf(),
            limit,
        });
    };
    let (transcripts, observed) = drive.map_err(|source| HarnessError::Drive {
        fixture: path.to_path_buf(),
        source,
    })?;
    let ledger = ledger?;
    let run = ScenarioRun {
        fixture_path: path.to_path_buf(),
        misses: ledger.misses,
        ambiguities: ledger.ambiguities,
        model_errors: ledger.other_problems,
        unused_turns: ledger.unused_turns,
        fixture,
        transcripts,
        elapsed: started.elapsed(),
        golden_dir: golden_dir.to_path_buf(),
    };
    Ok((run, observed))
}

/// Registers, creates a thread, and streams the fixture's prompt and follow-ups in it (public:
/// a test that starts its gateway and model server itself drives them with this).
pub async fn drive_prompts(
    url: &str,
    fixture: &Fixture,
) -> Result<Vec<RunTranscript>, DriverError> {
    let mut driver = Driver::new(url)?;
    driver.register().await?;
    let (_, transcripts) = driver.run_scenario(&fixture.scenario).await?;
    Ok(transcripts)
}
