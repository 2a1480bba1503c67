//! A suite run as `keyless test` schedules it, as cargo-nextest splits a runner from its
//! reporters: this module runs the fixtures of a [`Plan`] and says what happens as [`Event`]s;
//! a [`Reporter`] (the table, JSON lines, JUnit, a progress bar, side by side) prints them.
//!
//! `jobs` fixtures run at once. Each job slot has a model server of its own (its own port, so its
//! own replay state and problem ledger) and its own gateway process on its own port, and runs
//! one fixture at a time: a fixture's calls can only reach the model server of its slot, which
//! serves that fixture alone while it runs, so no fixture is answered from another's recording
//! or blamed for another's calls. (One server with a base path per fixture would need every
//! gateway's base URL to carry the path through its client unchanged; a port each needs nothing
//! of the gateway.) Whatever order fixtures finish in, [`Event::FixtureFinished`] comes in
//! fixture order. With `reuse_gateway` each slot keeps one gateway ([`Reused`]), and a fixture's
//! verdict is held until the next one's run has begun, so that what its gateway did after its
//! run is its own problem.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use replay_core::{
    FixtureError, GoldenStatus, LoadedFixture, MissingGolden, ModelProblem, UnusedTurns, Verdict,
    Voice,
};

use crate::boundary::Boundaries;
use crate::driver::DriveOptions;
use crate::faults::{FaultPlan, load_fixture_or_scenario};
use crate::golden::{golden_check, stem_of};
use crate::ignored::IgnoredEvents;
use crate::launched::{GatewayCommand, Launched};
use crate::layer1::{Drive, RunOptions, ScenarioRun, Transcripts};
use crate::model_server::{ClientError, Mode, ModelServer, ServerOptions};
use crate::pending::{CutDiff, diff_within, find as find_pending, pending_path, write_pending};
use crate::reused::Reused;
use crate::suite::{error_chain, gateway_config_note};
use crate::target::{AtUrl, GatewayTarget, HarnessError};

/// How many lines of a changed golden's diff a fixture's outcome keeps for the log under its
/// row; the rest is counted (`keyless review` shows up to 2,000).
pub const LOG_DIFF_LINES: usize = 60;

/// Where the gateway comes from.
#[derive(Debug, Clone)]
pub enum Gateway {
    /// Started for each fixture (or once per job, with `reuse_gateway`).
    Command(GatewayCommand),
    /// Already running at a URL.
    Url(String),
}

/// A model server someone else started (`keyless model-server`).
#[derive(Debug, Clone)]
pub struct RunningModelServer {
    /// Its URL (with or without `/v1`).
    pub url: String,
    /// Its reset token.
    pub reset_token: String,
}

/// Everything a suite run needs, resolved: the fixtures in the order they report, and how to
/// run them.
#[derive(Debug, Clone)]
pub struct Plan {
    pub fixtures: Vec<PathBuf>,
    /// The golden folder.
    pub golden: PathBuf,
    pub gateway: Gateway,
    pub drive: DriveOptions,
    /// A model server already running, used instead of one per job.
    pub model_server: Option<RunningModelServer>,
    /// The port of the model server a job starts (0: a free one).
    pub model_port: u16,
    /// How many fixtures run at once.
    pub jobs: usize,
    pub reuse_gateway: bool,
    pub unused: UnusedTurns,
    pub time_limit: Duration,
    pub transcripts: Transcripts,
    /// The event types every golden leaves out.
    pub ignore_events: IgnoredEvents,
    /// The types single fixtures also leave out, by fixture name.
    pub fixture_ignore_events: BTreeMap<String, IgnoredEvents>,
    /// The program and arguments a started gateway is launched through, tied to this process.
    pub launcher: Option<(PathBuf, Vec<String>)>,
    /// The other boundaries every job's model server records and replays (`[http.<name>]`).
    pub boundaries: Arc<Boundaries>,
}

impl Plan {
    /// The event types the golden of the fixture `stem` leaves out.
    fn ignored_for(&self, stem: &str) -> IgnoredEvents {
        match self.fixture_ignore_events.get(stem) {
            Some(own) => self.ignore_events.with(own),
            None => self.ignore_events.clone(),
        }
    }
}

/// What a run cannot start without.
#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// A fixture the job's model server would serve cannot be loaded, or the server cannot
    /// start: a usage or configuration error.
    #[error("{0}")]
    Setup(String),
    #[error("the model server's URL")]
    Url(#[source] ClientError),
}

/// What happens during a run, in the order it happens.
#[derive(Debug)]
pub enum Event<'a> {
    /// A slot uses the gateway running at `url`, whose model must be at `model_base_url`.
    GatewayAtUrl {
        url: &'a str,
        model_base_url: &'a str,
    },
    /// The plan's fixtures were read, each once (the same values every job shares).
    FixturesLoaded {
        paths: &'a [PathBuf],
        fixtures: &'a [Result<LoadedFixture, FixtureError>],
    },
    /// Every slot is up; the fixtures start.
    RunStarted,
    /// Fixture `index` (of the plan's) started.
    FixtureStarted { index: usize, name: &'a str },
    /// Fixture `index` ran; its outcome may come later ([`Event::FixtureFinished`]).
    FixtureEnded { index: usize },
    /// Fixture `index`'s outcome, in fixture order; `time` is how long it ran.
    FixtureFinished {
        index: usize,
        outcome: &'a FixtureOutcome,
        time: Duration,
    },
}

/// A consumer of a run's events. `Break` says nobody reads on (a closed standard output): no
/// further fixture starts.
pub trait Reporter {
    fn report(&mut self, event: &Event<'_>) -> ControlFlow<()>;
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    /// Every fixture that started reported; `passed` when each passed.
    Finished { passed: bool },
    /// `stop` resolved first; the gateways were stopped.
    Interrupted,
    /// A reporter said nobody reads on before any fixture started.
    Abandoned,
}

/// One fixture's outcome.
#[derive(Debug)]
pub struct FixtureOutcome {
    pub path: PathBuf,
    /// The note on its gateway settings ([`gateway_config_note`]), said first.
    pub note: Option<String>,
    /// Its started gateway's log.
    pub log: Option<PathBuf>,
    pub kind: OutcomeKind,
}

/// A fixture's outcome: judged, or it could not run.
#[derive(Debug)]
pub enum OutcomeKind {
    Judged(Box<Judged>),
    Broken {
        /// The error's chain (naming the fixture), with the gateway log when it does not.
        message: String,
        /// Problems its gateway caused after its run (a reused gateway).
        after: Vec<ModelProblem>,
    },
}

/// A run and its verdict, with what judging it wrote.
#[derive(Debug)]
pub struct Judged {
    pub run: ScenarioRun,
    pub verdict: Verdict,
    /// The pending golden written (a missing or changed golden after a clean replay).
    pub pending: Option<PathBuf>,
    /// A changed golden's diff, bounded ([`LOG_DIFF_LINES`]).
    pub diff: Option<CutDiff>,
    /// What went wrong writing or diffing the pending golden, in order.
    pub errors: Vec<String>,
}

impl FixtureOutcome {
    pub fn passed(&self) -> bool {
        match &self.kind {
            OutcomeKind::Judged(judged) => judged.verdict.passes(MissingGolden::Fails),
            OutcomeKind::Broken { .. } => false,
        }
    }
}

/// Runs `plan`, telling `reporter`, until every fixture reported or `stop` resolves (Ctrl-C:
/// the gateways are stopped then, as they run in process groups the signal does not reach).
pub async fn run(
    plan: &Plan,
    reporter: &mut dyn Reporter,
    stop: impl std::future::Future<Output = ()>,
) -> Result<RunEnd, ScheduleError> {
    let mut faults = Vec::new();
    let fixtures: Vec<Result<LoadedFixture, FixtureError>> = (plan.fixtures.iter())
        .map(|path| {
            let (loaded, plan) = load_fixture_or_scenario(path)?;
            faults.extend(plan.map(|plan| (stem_of(path), plan)));
            Ok(loaded)
        })
        .collect();
    let loaded = Event::FixturesLoaded {
        paths: &plan.fixtures,
        fixtures: &fixtures,
    };
    if reporter.report(&loaded).is_break() {
        return Ok(RunEnd::Abandoned);
    }
    let mut slots = Vec::with_capacity(plan.jobs);
    for index in 0..plan.jobs {
        let slot = slot(index, plan, &fixtures, &faults).await?;
        if let Target::AtUrl(_, url, base_url) = &slot.target
            && reporter
                .report(&Event::GatewayAtUrl {
                    url,
                    model_base_url: base_url,
                })
                .is_break()
        {
            return Ok(RunEnd::Abandoned);
        }
        slots.push(slot);
    }
    if reporter.report(&Event::RunStarted).is_break() {
        return Ok(RunEnd::Abandoned);
    }
    let order = RefCell::new(InOrder {
        reporter,
        waiting: BTreeMap::new(),
        next: 0,
        passed: true,
        closed: false,
    });
    let next = AtomicUsize::new(0);
    let finished = {
        let workers = (slots.iter_mut()).map(|slot| work(slot, &next, plan, &fixtures, &order));
        tokio::select! {
            _ = futures::future::join_all(workers) => true,
            () = stop => false,
        }
    };
    for slot in &mut slots {
        slot.target.stop().await;
    }
    if !finished {
        return Ok(RunEnd::Interrupted);
    }
    for slot in slots {
        if let Some(server) = slot.server {
            let _ = server.stop().await;
        }
    }
    Ok(RunEnd::Finished {
        passed: order.into_inner().passed,
    })
}

/// Hands outcomes to the reporter in fixture order as they come in.
struct InOrder<'r> {
    reporter: &'r mut dyn Reporter,
    /// Outcomes that finished before an earlier fixture, by index.
    waiting: BTreeMap<usize, (FixtureOutcome, Duration)>,
    next: usize,
    passed: bool,
    /// Nobody reads on: no further fixture starts (issue 34, finding 21).
    closed: bool,
}

impl InOrder<'_> {
    fn tell(&mut self, event: &Event<'_>) {
        self.closed |= self.reporter.report(event).is_break();
    }

    fn finished(&mut self, index: usize, outcome: FixtureOutcome, time: Duration) {
        self.tell(&Event::FixtureEnded { index });
        self.waiting.insert(index, (outcome, time));
        while let Some((outcome, time)) = self.waiting.remove(&self.next) {
            self.passed &= outcome.passed();
            self.tell(&Event::FixtureFinished {
                index: self.next,
                outcome: &outcome,
                time,
            });
            self.next += 1;
        }
    }
}

/// The target the fixtures run through.
enum Target {
    Launched(Box<Launched>),
    Reused(Box<Reused>),
    /// The gateway at a URL, with the URL and its model's base URL.
    AtUrl(AtUrl, String, String),
}

impl Target {
    fn as_dyn(&mut self) -> &mut dyn GatewayTarget {
        match self {
            Target::Launched(launched) => launched.as_mut(),
            Target::Reused(reused) => reused.as_mut(),
            Target::AtUrl(at_url, ..) => at_url,
        }
    }

    /// The started gateway's log of the last fixture.
    fn log(&self) -> Option<&Path> {
        match self {
            Target::Launched(launched) => launched.log(),
            Target::Reused(reused) => reused.log(),
            Target::AtUrl(..) => None,
        }
    }

    /// Stops the gateway it started, if any.
    async fn stop(&mut self) {
        match self {
            Target::Launched(launched) => {
                launched.stop().await;
            }
            Target::Reused(reused) => reused.stop().await,
            Target::AtUrl(..) => {}
        }
    }

    /// Whether a fixture's verdict waits for what its gateway does after its run: a gateway
    /// kept for the next fixture.
    fn holds_verdicts(&self) -> bool {
        matches!(self, Target::Reused(_))
    }

    /// The problems of the fixture that ran last found since its run ([`Reused::take_last_run`]).
    fn after_run(&mut self) -> Vec<ModelProblem> {
        match self {
            Target::Reused(reused) => reused.take_last_run(),
            Target::Launched(_) | Target::AtUrl(..) => Vec::new(),
        }
    }

    /// After the slot's last fixture: [`Self::after_run`] once the gateway is stopped.
    async fn settle(&mut self) -> Vec<ModelProblem> {
        match self {
            Target::Reused(reused) => reused.settle().await,
            Target::Launched(_) | Target::AtUrl(..) => Vec::new(),
        }
    }
}

/// One job: a model server of its own (unless one already runs) and the target its fixtures run
/// through.
struct Slot {
    server: Option<ModelServer>,
    target: Target,
}

/// Starts job `index`'s model server (with the run's fixtures) and target.
async fn slot(
    index: usize,
    plan: &Plan,
    fixtures: &[Result<LoadedFixture, FixtureError>],
    faults: &[(String, FaultPlan)],
) -> Result<Slot, ScheduleError> {
    let (server, model_root, token) = match &plan.model_server {
        Some(running) => (
            None,
            (running.url.trim_end_matches('/').trim_end_matches("/v1")).to_owned(),
            running.reset_token.clone(),
        ),
        None => {
            let options = ServerOptions {
                port: plan.model_port,
                on_problem: None,
                faults: faults.to_vec(),
                boundaries: plan.boundaries.clone(),
                ..ServerOptions::default()
            };
            let loaded = (fixtures.iter())
                .map(|loaded| loaded.as_ref().cloned())
                .collect::<Result<Vec<LoadedFixture>, &FixtureError>>()
                .map_err(|err| ScheduleError::Setup(error_chain(err)))?;
            let server = ModelServer::start(Mode::LoadedFixtures(loaded), options)
                .await
                .map_err(|err| ScheduleError::Setup(error_chain(&err)))?;
            let url = server.url();
            let token = server.reset_token().to_owned();
            (Some(server), url, token)
        }
    };
    let base_url = format!("{model_root}/v1");
    let target = match &plan.gateway {
        Gateway::Command(command) if plan.reuse_gateway => Target::Reused(Box::new(
            Reused::new(command.clone(), &base_url, &format!("job-{}", index + 1))
                .map_err(ScheduleError::Url)?
                .with_reset_token(&token)
                .with_launcher_if(plan.launcher.clone()),
        )),
        Gateway::Command(command) => Target::Launched(Box::new(
            Launched::new(command.clone(), &base_url)
                .map_err(ScheduleError::Url)?
                .with_reset_token(&token)
                .with_launcher_if(plan.launcher.clone()),
        )),
        Gateway::Url(url) => Target::AtUrl(
            AtUrl::new(url, &model_root)
                .map_err(ScheduleError::Url)?
                .with_reset_token(&token),
            url.clone(),
            base_url,
        ),
    };
    Ok(Slot { server, target })
}

/// A fixture's run, not yet judged: with a reused gateway what it did after the run is added
/// first ([`Target::after_run`]).
struct Ran {
    path: PathBuf,
    run: Result<ScenarioRun, HarnessError>,
    log: Option<PathBuf>,
    note: Option<String>,
}

/// Runs fixtures from `next` on `slot` until none is left. With a reused gateway a fixture is
/// judged once the next one's run has begun (or after the last): a model call its gateway made
/// after its run, or the gateway's exit after it, is its own problem (issue 45, findings 8
/// and 9).
async fn work(
    slot: &mut Slot,
    next: &AtomicUsize,
    plan: &Plan,
    fixtures: &[Result<LoadedFixture, FixtureError>],
    order: &RefCell<InOrder<'_>>,
) {
    let mut held: Option<(usize, Ran, Duration)> = None;
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = plan.fixtures.get(index) else {
            break;
        };
        if order.borrow().closed {
            break;
        }
        let name = stem_of(path);
        (order.borrow_mut()).tell(&Event::FixtureStarted { index, name: &name });
        let started = Instant::now();
        let ran = run_one(&mut slot.target, path, &fixtures[index], plan).await;
        let time = started.elapsed();
        if let Some((before, ran, time)) = held.take() {
            let outcome = judged(ran, slot.target.after_run(), plan);
            order.borrow_mut().finished(before, outcome, time);
        }
        match ran {
            Ok(ran) if slot.target.holds_verdicts() => held = Some((index, ran, time)),
            Ok(ran) => {
                let outcome = judged(ran, Vec::new(), plan);
                order.borrow_mut().finished(index, outcome, time);
            }
            Err(outcome) => order.borrow_mut().finished(index, outcome, time),
        }
    }
    if let Some((before, ran, time)) = held.take() {
        let after = slot.target.settle().await;
        let outcome = judged(ran, after, plan);
        order.borrow_mut().finished(before, outcome, time);
    }
}

/// Runs the fixture at `path` (loaded as `loaded`) through `target`; the outcome itself when
/// the fixture could not be loaded.
async fn run_one(
    target: &mut Target,
    path: &Path,
    loaded: &Result<LoadedFixture, FixtureError>,
    plan: &Plan,
) -> Result<Ran, FixtureOutcome> {
    let loaded = match loaded {
        Err(err) => return Err(broken(path, err, None, Vec::new(), None)),
        Ok(loaded) => loaded,
    };
    let note = gateway_config_note(path, loaded.fixture());
    let options = RunOptions::new(&plan.golden)
        .drive(Drive::Session(plan.drive.clone()))
        .time_limit(plan.time_limit)
        .transcripts(plan.transcripts)
        .voice(Voice::Keyless)
        .ignore_events(plan.ignored_for(&stem_of(path)));
    let run = crate::layer1::run(target.as_dyn(), loaded.clone(), &options).await;
    Ok(Ran {
        path: path.to_path_buf(),
        run,
        log: target.log().map(Path::to_path_buf),
        note,
    })
}

/// Judges `ran`, with `after`, the problems its gateway caused after its run.
fn judged(ran: Ran, after: Vec<ModelProblem>, plan: &Plan) -> FixtureOutcome {
    match ran.run {
        Ok(mut run) => {
            run.model_errors.extend(after);
            let note = faults_note(ran.note, &run.faults_fired);
            let judged = judge(run, plan);
            FixtureOutcome {
                path: ran.path,
                note,
                log: ran.log,
                kind: OutcomeKind::Judged(Box::new(judged)),
            }
        }
        Err(err) => broken(&ran.path, &err, ran.log, after, ran.note),
    }
}

/// `note` with a line saying which of a fault scenario's faults fired, and how often.
fn faults_note(note: Option<String>, fired: &[crate::model_server::FaultFired]) -> Option<String> {
    if fired.is_empty() {
        return note;
    }
    let faults: Vec<String> = (fired.iter())
        .map(|fault| format!("{} fired {}/{}", fault.fault, fault.fired, fault.times))
        .collect();
    let line = format!("faults: {}", faults.join("; "));
    Some(match note {
        Some(note) => format!("{note}\n{line}"),
        None => line,
    })
}

/// Judges a finished run, writing the pending golden when the golden is missing or changed.
fn judge(run: ScenarioRun, plan: &Plan) -> Judged {
    let golden = plan.golden.as_path();
    let mut errors = Vec::new();
    let verdict = run.verdict_with(plan.unused);
    // A run that missed or broke its framing is no golden to accept: only a clean replay
    // leaves a pending golden, and a passing one removes a stale pending file.
    let mut pending = None;
    // Named from the folder that holds the golden folder (the configuration's), as the
    // workspace's goldens name `fixtures/…`, so a committed golden holds no machine's path.
    let base = golden.parent().unwrap_or(golden);
    let fixture = (run.fixture_path.strip_prefix(base))
        .unwrap_or(&run.fixture_path)
        .display()
        .to_string();
    // The stream's golden alone (the verdict's status also counts the MCP contract's).
    let stream_golden = run.golden_status();
    match stream_golden {
        GoldenStatus::Missing | GoldenStatus::Changed if verdict.replayed_cleanly() => {
            match write_pending(golden, &run.stem(), &fixture, &run.golden_document()) {
                Ok(path) => pending = Some(path),
                Err(err) => errors.push(err.to_string()),
            }
        }
        GoldenStatus::Ok => {
            // Removing a link removes the link, never what it points at.
            let _ = std::fs::remove_file(pending_path(golden, &run.stem()));
        }
        GoldenStatus::Missing | GoldenStatus::Changed | GoldenStatus::Refused => {}
    }
    // The MCP servers' contract (`<stem>.mcp.snap`), pending beside it the same way.
    if let Some(document) = run.mcp_golden_document() {
        let stem = run.mcp_golden_stem();
        match golden_check(golden, &stem, &document) {
            Ok(GoldenStatus::Missing | GoldenStatus::Changed) if verdict.replayed_cleanly() => {
                match write_pending(golden, &stem, &fixture, &document) {
                    Ok(path) => pending = pending.or(Some(path)),
                    Err(err) => errors.push(err.to_string()),
                }
            }
            Ok(GoldenStatus::Ok) => {
                let _ = std::fs::remove_file(pending_path(golden, &stem));
            }
            Ok(_) => {}
            Err(err) => errors.push(err.to_string()),
        }
    }
    // A changed golden's diff, bounded, for the log under the row and for --json (issue 47).
    let diff = match (&pending, stream_golden) {
        (Some(_), GoldenStatus::Changed) => find_pending(golden, &run.stem())
            .and_then(|found| diff_within(&found, LOG_DIFF_LINES))
            .map_err(|err| errors.push(err.to_string()))
            .ok(),
        _ => None,
    };
    Judged {
        run,
        verdict,
        pending,
        diff,
        errors,
    }
}

/// The outcome of a fixture that could not run at all.
fn broken(
    path: &Path,
    error: &(dyn std::error::Error + 'static),
    log: Option<PathBuf>,
    after: Vec<ModelProblem>,
    note: Option<String>,
) -> FixtureOutcome {
    let mut message = error_chain(error);
    if let Some(log) = &log
        && !message.contains(&log.display().to_string())
    {
        message.push_str(&format!(" (gateway log: {})", log.display()));
    }
    FixtureOutcome {
        path: path.to_path_buf(),
        note,
        log,
        kind: OutcomeKind::Broken { message, after },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records what it is told, as short words.
    #[derive(Default)]
    struct Told(Vec<String>);

    impl Reporter for Told {
        fn report(&mut self, event: &Event<'_>) -> ControlFlow<()> {
            self.0.push(match event {
                Event::FixtureEnded { index } => format!("ended {index}"),
                Event::FixtureFinished { index, outcome, .. } => {
                    format!("finished {index} {}", outcome.path.display())
                }
                other => format!("{other:?}"),
            });
            ControlFlow::Continue(())
        }
    }

    fn outcome(name: &str) -> FixtureOutcome {
        FixtureOutcome {
            path: PathBuf::from(name),
            note: None,
            log: None,
            kind: OutcomeKind::Broken {
                message: "no gateway".into(),
                after: Vec::new(),
            },
        }
    }

    /// Whatever order fixtures finish in, their outcomes are reported in fixture order, each
    /// as soon as every earlier one was; the end of each run is told at once (the progress bar).
    #[test]
    fn outcomes_are_reported_in_fixture_order_and_ends_as_they_happen() {
        let mut told = Told::default();
        let mut order = InOrder {
            reporter: &mut told,
            waiting: BTreeMap::new(),
            next: 0,
            passed: true,
            closed: false,
        };
        for index in [2, 0, 1] {
            order.finished(index, outcome(&format!("f{index}")), Duration::ZERO);
        }
        assert!(!order.passed, "a broken fixture fails the run");
        assert_eq!(
            told.0,
            [
                "ended 2",
                "ended 0",
                "finished 0 f0",
                "ended 1",
                "finished 1 f1",
                "finished 2 f2"
            ]
        );
    }
}
