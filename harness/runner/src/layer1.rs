//! Layer 1, the one run API: [`run`] takes a gateway [`target`](crate::target) (in-process, or a
//! gateway elsewhere whose model is a model server), a fixture and [`RunOptions`] (the golden
//! folder, what to drive, the time limit, how reports show transcripts); it starts the target,
//! drives it ([`Drive`]: a [`Session`] in the gateway's dialect, or DeerFlow's chat page,
//! [`WebClient`]), finishes the target also after a failed drive, and returns one
//! [`ScenarioRun`] whose [`Verdict`] is the one verdict, judged by the drive's policy, with a
//! report that explains it.
//!
//! Its options have `Default` (golden folder, `Drive`, time limit, `Transcripts` cut or full,
//! `Transcripts::from_env` reading `KEYLESS_FULL_TRANSCRIPT` for the caller) and the target is
//! started, driven and finished once, for both drives (`RunOptions::voice`: the workspace's words,
//! or the installed command's, `replay_core::Voice::Keyless`: no workspace commands, a miss in
//! plain words, `Miss::in_plain_words`, and a later miss that carries on from an earlier one's
//! conversation marked as its consequence; `RunOptions::ignore_events`: `ignored.rs`'s
//! `IgnoredEvents`, event types left out of the golden before the reduction and counted). It
//! returns one `ScenarioRun` whose `verdict()` is the one `replay_core::Verdict`, judged by the
//! drive's policy (a page's run: `<stem>.web.snap`, every request 2xx, each run framed, every turn
//! reached), `check()` (green, or `RunFailed` with the report) and `runtime()` for running
//! fixtures from synchronous code.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use replay_core::protocol::FULL_TRANSCRIPT_VAR;
use replay_core::{
    Ambiguity, FailedRequest, Fixture, GoldenStatus, LoadedFixture, Miss, MissingGolden,
    ModelProblem, Shape, UnusedTurns, Verdict, Voice, golden_document, shorten,
};

use crate::boundary::BoundaryLedger;
use crate::driver::deerflow::{PageRuns, WebClient};
use crate::driver::{Api, DriveOptions, DriverError, Exchange, RunTranscript, Session};
use crate::golden::{
    MCP_GOLDEN_SUFFIX, WEB_GOLDEN_SUFFIX, golden_check, golden_path, golden_status, stem_of,
};
use crate::ignored::{Dropped, IgnoredEvents};
use crate::target::{GatewayTarget, HarnessError};

/// How long one fixture's drive may take by default: far above any shipped fixture (a few
/// seconds on a debug build), far below "unbounded".
pub const FIXTURE_TIME_LIMIT: Duration = Duration::from_secs(300);

/// What a run drives, and so the policy its verdict is judged by.
#[derive(Debug, Clone)]
pub enum Drive {
    /// A [`Session`] in the gateway's dialect (`keyless test --api …`): the fixture's prompt and
    /// follow-ups as runs, held to `<stem>.snap`; unused turns judged leniently.
    Session(DriveOptions),
    /// DeerFlow's chat page ([`WebClient`]): its page requests and runs, held to
    /// `<stem>.web.snap`; every request must answer 2xx, every run be framed by `metadata` and
    /// `end`, and every recorded turn be reached (the suggestions turns included).
    Page(WebClient),
}

impl Default for Drive {
    fn default() -> Drive {
        Drive::Session(DriveOptions::default())
    }
}

/// How a report shows each run's SSE transcript.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transcripts {
    /// One line per frame, its data cut at 160 characters.
    #[default]
    Cut,
    /// Every frame as sent.
    Full,
}

impl Transcripts {
    /// [`Transcripts::Full`] when `KEYLESS_FULL_TRANSCRIPT` (or its alias
    /// `HARNESS_FULL_TRANSCRIPT`) is set, else [`Transcripts::Cut`].
    pub fn from_env() -> Transcripts {
        match FULL_TRANSCRIPT_VAR.find(|name| std::env::var_os(name)) {
            Some(_) => Transcripts::Full,
            None => Transcripts::Cut,
        }
    }
}

/// How [`run`] runs a fixture.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The folder of the goldens the run is judged against [default: `golden`].
    pub golden_dir: PathBuf,
    /// What to drive [default: a DeerFlow session with the values-only run request].
    pub drive: Drive,
    /// Past this the drive stops and the run is [`HarnessError::TimedOut`] [default:
    /// [`FIXTURE_TIME_LIMIT`]].
    pub time_limit: Duration,
    /// How reports show transcripts [default: cut].
    pub transcripts: Transcripts,
    /// Whose words reports speak in [default: the workspace's].
    pub voice: Voice,
    /// The event types the golden leaves out (`ignore_events`) [default: none].
    pub ignore_events: IgnoredEvents,
}

impl Default for RunOptions {
    fn default() -> RunOptions {
        RunOptions {
            golden_dir: PathBuf::from("golden"),
            drive: Drive::default(),
            time_limit: FIXTURE_TIME_LIMIT,
            transcripts: Transcripts::Cut,
            voice: Voice::Workspace,
            ignore_events: IgnoredEvents::default(),
        }
    }
}

impl RunOptions {
    /// The defaults, judged against the goldens in `golden_dir`.
    pub fn new(golden_dir: impl Into<PathBuf>) -> RunOptions {
        RunOptions {
            golden_dir: golden_dir.into(),
            ..RunOptions::default()
        }
    }

    /// These options driving `drive`.
    pub fn drive(mut self, drive: Drive) -> RunOptions {
        self.drive = drive;
        self
    }

    /// These options with the time limit `limit`.
    pub fn time_limit(mut self, limit: Duration) -> RunOptions {
        self.time_limit = limit;
        self
    }

    /// These options showing transcripts as `transcripts` says.
    pub fn transcripts(mut self, transcripts: Transcripts) -> RunOptions {
        self.transcripts = transcripts;
        self
    }

    /// These options with reports in `voice`'s words.
    pub fn voice(mut self, voice: Voice) -> RunOptions {
        self.voice = voice;
        self
    }

    /// These options leaving the `ignored` event types out of the golden.
    pub fn ignore_events(mut self, ignored: IgnoredEvents) -> RunOptions {
        self.ignore_events = ignored;
        self
    }
}

/// The fixture a run replays: a file to read (and validate), or one already loaded and shared
/// with whoever else holds it (`keyless test`'s model servers); either way it is read and
/// validated once.
#[derive(Debug, Clone)]
pub enum FixtureInput<'a> {
    /// Read (and validate) the file.
    File(&'a Path),
    /// The fixture [`LoadedFixture::load`] read and validated.
    Loaded(LoadedFixture),
}

impl<'a> From<&'a Path> for FixtureInput<'a> {
    fn from(path: &'a Path) -> FixtureInput<'a> {
        FixtureInput::File(path)
    }
}

impl<'a> From<&'a PathBuf> for FixtureInput<'a> {
    fn from(path: &'a PathBuf) -> FixtureInput<'a> {
        FixtureInput::File(path)
    }
}

impl From<LoadedFixture> for FixtureInput<'_> {
    fn from(loaded: LoadedFixture) -> Self {
        FixtureInput::Loaded(loaded)
    }
}

/// A run that did not pass: the report that explains its verdict.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{report}")]
pub struct RunFailed {
    /// The verdict's problems, then everything that explains them.
    pub report: String,
}

/// The result of running one fixture.
#[derive(Debug)]
pub struct ScenarioRun {
    /// The fixture file.
    pub fixture_path: PathBuf,
    /// The fixture (the same one the target's engine replayed, not a copy).
    pub fixture: Arc<Fixture>,
    /// What was driven (with its settings), which also says how the run is judged.
    pub drive: Drive,
    /// One transcript per prompt (the prompt, then each follow-up).
    pub transcripts: Vec<RunTranscript>,
    /// The page's requests but the streams, in order (empty for a session).
    pub exchanges: Vec<Exchange>,
    /// Model calls with no recorded output.
    pub misses: Vec<Miss>,
    /// Model calls that named no caller and met a key with several different answers.
    pub ambiguities: Vec<Ambiguity>,
    /// Other model-side failures reported by a model server (a strict-replay mismatch, an
    /// ambiguous caller, an unreadable request).
    pub model_errors: Vec<ModelProblem>,
    /// Turns nobody asked for (information, not failure, unless the drive's policy says so).
    pub unused_turns: Vec<usize>,
    /// A fault scenario's faults and how often each fired (none outside one; one that never
    /// fired is a model error too).
    pub faults_fired: Vec<crate::model_server::FaultFired>,
    /// The other boundaries' (HTTP, MCP) misses and unused exchanges: each fails the run.
    pub boundaries: BoundaryLedger,
    /// Wall time from boot to shutdown.
    pub elapsed: Duration,
    /// The golden folder the run is judged against (its golden is [`ScenarioRun::golden_stem`]
    /// `.snap` there).
    pub golden_dir: PathBuf,
    /// How reports show the transcripts.
    pub transcripts_shown: Transcripts,
    /// Whose words its report speaks in.
    pub voice: Voice,
    /// The event types its golden leaves out.
    pub ignored: IgnoredEvents,
}

impl ScenarioRun {
    /// The fixture's stem: its file name without `.json`.
    pub fn stem(&self) -> String {
        stem_of(&self.fixture_path)
    }

    /// The golden's stem: the fixture's, with `.web` for a page's run.
    pub fn golden_stem(&self) -> String {
        match &self.drive {
            Drive::Session(_) => self.stem(),
            Drive::Page(_) => format!("{}{WEB_GOLDEN_SUFFIX}", self.stem()),
        }
    }

    /// The MCP contract golden's stem: `<fixture stem>.mcp`.
    pub fn mcp_golden_stem(&self) -> String {
        format!("{}{MCP_GOLDEN_SUFFIX}", self.stem())
    }

    /// The MCP servers' contract document (pretty JSON of `crate::mcp::contract_shape`), when
    /// the fixture recorded a server's list.
    pub fn mcp_golden_document(&self) -> Option<String> {
        let shape = crate::mcp::contract_shape(&self.fixture.exchanges)?;
        Some(serde_json::to_string_pretty(&shape).unwrap_or_default() + "\n")
    }

    /// The shape sequence of every run, in order (each run reduced as its stream modes' golden
    /// holds it: [`RunTranscript::golden_shapes`]).
    pub fn shapes(&self) -> Vec<Shape> {
        (self.transcripts.iter())
            .flat_map(|transcript| {
                (transcript.api).golden_shapes_without(transcript, &self.ignored)
            })
            .collect()
    }

    /// How many frames each ignored event type left out of the golden (`None` when no type is
    /// ignored).
    pub fn dropped(&self) -> Option<Dropped> {
        if self.ignored.is_empty() {
            return None;
        }
        let names: Vec<Shape> = (self.transcripts.iter())
            .flat_map(RunTranscript::frame_shapes)
            .collect();
        Some(
            self.ignored
                .count(names.iter().map(|shape| shape.event.as_deref())),
        )
    }

    /// How many SSE events the runs streamed (one shape each), without reducing them.
    pub fn event_count(&self) -> usize {
        self.transcripts
            .iter()
            .map(|transcript| transcript.events.len())
            .sum()
    }

    /// The golden document for these shapes.
    pub fn golden_document(&self) -> String {
        golden_document(
            &self.fixture.scenario.id,
            self.fixture.scenario.mode.as_str(),
            &self.shapes(),
        )
    }

    /// The golden document against the committed `<golden stem>.snap`.
    pub fn golden_status(&self) -> GoldenStatus {
        golden_status(
            &self.golden_dir,
            &self.golden_stem(),
            &self.golden_document(),
        )
    }

    /// The rule unused turns are judged by when none is given: lenient for a session, every
    /// turn for a page (a browser needs them all).
    pub fn unused_rule(&self) -> UnusedTurns {
        match &self.drive {
            Drive::Session(_) => UnusedTurns::Lenient,
            Drive::Page(_) => UnusedTurns::Client,
        }
    }

    /// The verdict on this run: framing, misses and other model errors, the page's failed
    /// requests, the shapes against the committed golden, unused turns judged by
    /// [`ScenarioRun::unused_rule`].
    pub fn verdict(&self) -> Verdict {
        self.verdict_with(self.unused_rule())
    }

    /// [`ScenarioRun::verdict`] with the unused turns judged under `rule`.
    pub fn verdict_with(&self, rule: UnusedTurns) -> Verdict {
        let shapes = self.shapes();
        let document = golden_document(
            &self.fixture.scenario.id,
            self.fixture.scenario.mode.as_str(),
            &shapes,
        );
        let (golden, refusal) = match golden_check(&self.golden_dir, &self.golden_stem(), &document)
        {
            Ok(status) => (status, None),
            Err(err) => (GoldenStatus::Refused, Some(err.to_string())),
        };
        // The MCP servers' contract is golden too: the worse of the two statuses is the run's.
        let (golden, refusal) = match self.mcp_golden_document() {
            None => (golden, refusal),
            Some(document) => {
                match golden_check(&self.golden_dir, &self.mcp_golden_stem(), &document) {
                    Ok(status) => (worse(golden, status), refusal),
                    Err(err) => (GoldenStatus::Refused, Some(err.to_string())),
                }
            }
        };
        let callers: Vec<Option<&str>> = (self.fixture.turns.iter())
            .map(|turn| turn.caller.as_deref())
            .collect();
        // Every run is held to its dialect's framing rule, a page's as a session's.
        let api = self.transcripts.first().map_or(Api::default(), |t| t.api);
        // A fault scenario's fault that fired is a model error on purpose.
        let model_error_recorded = (self.fixture.turns.iter())
            .any(|turn| matches!(turn.answer, replay_core::Answer::Error(_)))
            || self.faults_fired.iter().any(|fault| fault.fired > 0);
        let mut verdict = Verdict::new(
            api.framing(&self.transcripts, model_error_recorded),
            self.misses.clone(),
            self.ambiguities.clone(),
            self.model_errors.clone(),
            golden,
            self.unused_turns.clone(),
            self.fixture.turns.len(),
        )
        .judge_unused(&callers, rule)
        .with_exchanges(
            self.boundaries.misses.clone(),
            self.boundaries.unused.clone(),
        );
        verdict.golden_refusal = refusal;
        verdict.failed_requests = (self.exchanges.iter())
            .filter(|exchange| !exchange.succeeded())
            .map(FailedRequest::from)
            .collect();
        verdict
    }

    /// `Ok` when the run's verdict passes with a missing golden failing it, as a test or a
    /// benchmark demands of a shipped fixture; otherwise the report that explains the verdict.
    pub fn check(&self) -> Result<(), RunFailed> {
        let verdict = self.verdict();
        if verdict.passes(MissingGolden::Fails) {
            Ok(())
        } else {
            Err(RunFailed {
                report: self.report(&verdict),
            })
        }
    }

    /// Everything needed to explain `verdict`: its failed checks, the page's requests with
    /// their statuses, the fixture, each request and SSE transcript, every miss with its key,
    /// canonical input and nearest recorded turn, the model server's other problems, and the
    /// unused turns.
    pub fn report(&self, verdict: &Verdict) -> String {
        let mut out = String::new();
        for problem in verdict.problems_in(MissingGolden::Fails, self.voice) {
            let _ = writeln!(out, "{problem}");
        }
        if verdict.golden != GoldenStatus::Ok {
            let _ = writeln!(
                out,
                "\ngolden: {} ({})",
                golden_path(&self.golden_dir, &self.golden_stem()).display(),
                verdict.golden.as_str()
            );
        }
        if !self.exchanges.is_empty() {
            out.push_str("\n--- web client requests ---\n");
            for exchange in &self.exchanges {
                let body = replay_core::first_chars(&exchange.body.to_string(), 200).to_owned();
                let _ = writeln!(
                    out,
                    "{} {} {} {body}",
                    exchange.status, exchange.method, exchange.path
                );
            }
        }
        out.push_str(&self.details());
        out
    }

    /// What explains any verdict on this run, without judging it: the fixture, each request and
    /// SSE transcript, every miss, the model server's other problems and the unused turns.
    pub fn details(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "\nfixture: {}", self.fixture_path.display());
        let full = self.transcripts_shown == Transcripts::Full;
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
                "--- run {index} SSE transcript (data cut at 160 characters; KEYLESS_FULL_TRANSCRIPT=1 shows it all) ---"
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
        for index in 0..self.misses.len() {
            let _ = writeln!(out, "--- miss ---\n{}", self.miss_text(index));
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
        for fault in &self.faults_fired {
            let _ = writeln!(
                out,
                "fault {}: fired {} of {} time(s)",
                fault.fault, fault.fired, fault.times
            );
        }
        out
    }

    /// The earlier miss of this run that miss `index` is a consequence of ([`Miss::continues`]),
    /// if any.
    pub fn consequence_of(&self, index: usize) -> Option<usize> {
        let miss = self.misses.get(index)?;
        (self.misses[..index].iter()).position(|earlier| miss.continues(earlier))
    }

    /// Miss `index` as the report says it: DeerFlow's message in the workspace's voice; in
    /// keyless's, its plain words, or, for a consequence of an earlier miss, one short line
    /// saying so.
    pub fn miss_text(&self, index: usize) -> String {
        let Some(miss) = self.misses.get(index) else {
            return String::new();
        };
        match (self.voice, self.consequence_of(index)) {
            (Voice::Workspace, _) => miss.to_string(),
            (Voice::Keyless, Some(earlier)) => format!(
                "replay miss {} of {}: a consequence of miss {}: this call's conversation carries \
                 on from the one that missed, so it cannot match the recording either; it goes \
                 when miss {} is fixed",
                index + 1,
                self.misses.len(),
                earlier + 1,
                earlier + 1,
            ),
            (Voice::Keyless, None) => miss.in_plain_words(),
        }
    }

    /// Turns used of recorded.
    pub fn turns_used(&self) -> usize {
        self.fixture.turns.len() - self.unused_turns.len()
    }
}

/// The Tokio runtime to run fixtures on from synchronous code: a `datatest-stable` test, a
/// benchmark, a command. I/O and timers are on. It has one thread, which the driver and an
/// in-process gateway share: every wake-up between them stays on that thread, where a
/// multi-threaded runtime woke another core for each SSE frame and each answer (a third of a
/// Layer 1 test process's time on two virtual cores, issue 46). Blocking work (a gateway's
/// file tools, its database file) still goes to threads of its own.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// Runs `fixture` through `target` as `options` say: starts the target, drives it (within the
/// time limit: past it the drive is dropped, its requests cancelled, and the run is
/// [`HarnessError::TimedOut`]), then finishes the target, also after a failed drive, so the
/// gateway stops and the model side is read.
pub async fn run(
    target: &mut dyn GatewayTarget,
    fixture: impl Into<FixtureInput<'_>>,
    options: &RunOptions,
) -> Result<ScenarioRun, HarnessError> {
    let loaded = match fixture.into() {
        FixtureInput::File(path) => LoadedFixture::load(path)?,
        FixtureInput::Loaded(loaded) => loaded,
    };
    let (path, fixture) = (loaded.path(), Arc::clone(loaded.fixture()));
    let started = Instant::now();
    let url = target.start(&loaded).await?;
    let drive = tokio::time::timeout(
        options.time_limit,
        drive(&options.drive, &url, &fixture, &mut *target),
    );
    let drive = drive.await;
    let ledger = target.finish().await;
    let Ok(drive) = drive else {
        return Err(HarnessError::TimedOut {
            fixture: path.to_path_buf(),
            limit: options.time_limit,
        });
    };
    let (transcripts, exchanges) = drive.map_err(|source| HarnessError::Drive {
        fixture: path.to_path_buf(),
        source,
    })?;
    let ledger = ledger?;
    Ok(ScenarioRun {
        fixture_path: path.to_path_buf(),
        drive: options.drive.clone(),
        misses: ledger.misses,
        ambiguities: ledger.ambiguities,
        model_errors: ledger.other_problems,
        unused_turns: ledger.unused_turns,
        faults_fired: ledger.faults_fired,
        boundaries: ledger.boundaries,
        fixture,
        transcripts,
        exchanges,
        elapsed: started.elapsed(),
        golden_dir: options.golden_dir.clone(),
        transcripts_shown: options.transcripts,
        voice: options.voice,
        ignored: options.ignore_events.clone(),
    })
}

/// Drives the gateway at `url` through `fixture` as `drive` says: the transcripts of the runs
/// and the page's other requests.
async fn drive(
    drive: &Drive,
    url: &str,
    fixture: &Fixture,
    target: &mut dyn GatewayTarget,
) -> Result<(Vec<RunTranscript>, Vec<Exchange>), DriverError> {
    match drive {
        Drive::Session(options) => {
            let mut session = Session::open(url, options).await?;
            session.begin(&fixture.scenario).await?;
            target.run_begins().await;
            let transcripts = session.runs(&fixture.scenario, &fixture.turns).await?;
            Ok((transcripts, Vec::new()))
        }
        Drive::Page(client) => {
            // The page's first request may already reach the model (its suggestions).
            target.run_begins().await;
            let PageRuns {
                transcripts,
                exchanges,
                ..
            } = client.drive(url, &fixture.scenario).await?;
            Ok((transcripts, exchanges))
        }
    }
}

/// The worse of two golden statuses (refused, then changed, then missing, then ok).
fn worse(a: GoldenStatus, b: GoldenStatus) -> GoldenStatus {
    let rank = |status| match status {
        GoldenStatus::Ok => 0,
        GoldenStatus::Missing => 1,
        GoldenStatus::Changed => 2,
        GoldenStatus::Refused => 3,
    };
    if rank(b) > rank(a) { b } else { a }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::driver::SseEvent;

    /// A run of these frames, streamed with the web client's modes.
    fn page_transcript(events: &[&str]) -> RunTranscript {
        RunTranscript {
            request: Value::Null,
            events: (events.iter())
                .map(|event| SseEvent::new((*event).to_owned(), "{}".to_owned(), None))
                .collect(),
            modes: crate::driver::StreamModes::Web,
            api: Api::Deerflow,
            headers: Vec::new(),
            history: None,
        }
    }

    /// A clean run of DeerFlow's chat page over a shipped fixture: two framed runs, every
    /// request 2xx, every turn used; its golden folder is empty (the golden is only missing).
    fn clean_page_run() -> ScenarioRun {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/two_run_thread.pro.json");
        let fixture = Arc::new(Fixture::load(&path).expect("a shipped fixture"));
        ScenarioRun {
            fixture_path: path,
            fixture,
            drive: Drive::Page(WebClient::new(None)),
            transcripts: vec![
                page_transcript(&["metadata", "values", "end"]),
                page_transcript(&["metadata", "values", "end"]),
            ],
            exchanges: vec![Exchange {
                method: "GET".into(),
                path: "/api/models".into(),
                status: 200,
                body: json!({"models": []}),
            }],
            misses: Vec::new(),
            ambiguities: Vec::new(),
            model_errors: Vec::new(),
            unused_turns: Vec::new(),
            faults_fired: Vec::new(),
            boundaries: BoundaryLedger::default(),
            elapsed: Duration::ZERO,
            golden_dir: PathBuf::from("/nonexistent-golden-folder"),
            transcripts_shown: Transcripts::Cut,
            voice: Voice::Workspace,
            ignored: IgnoredEvents::default(),
        }
    }

    /// A case: its name, how it spoils a clean page run, and the text its one problem holds.
    type Case = (&'static str, fn(&mut ScenarioRun), &'static str);

    /// The page's policy, which the web flow's own verdict held before: each failed check is
    /// one problem line of the one verdict.
    #[test]
    fn a_page_run_is_judged_by_the_pages_policy_one_problem_per_failed_check() {
        let cases: [Case; 7] = [
            (
                "an HTTP API call no recording answered",
                |run| {
                    let call = replay_core::ExchangeCall::new(
                        replay_core::BoundaryKind::Http,
                        "tavily",
                        "POST /search",
                        json!({"path": "/search"}),
                    );
                    let replay = replay_core::ExchangeReplay::new(Path::new("f.json"), Vec::new());
                    let miss = replay.lookup(&call).expect_err("nothing recorded");
                    run.boundaries.misses.push(*miss);
                },
                "http miss: `POST /search` from `tavily` has no recorded answer in f.json",
            ),
            (
                "a recorded HTTP exchange never asked for",
                |run| {
                    run.boundaries.unused.push(replay_core::UnusedExchange {
                        index: 0,
                        boundary: replay_core::BoundaryKind::Http,
                        caller: "tavily".into(),
                        label: "POST /search".into(),
                    })
                },
                "recorded http exchange 0 `POST /search` from `tavily` was never asked for",
            ),
            (
                "a 404",
                |run| run.exchanges[0].status = 404,
                "GET /api/models answered 404: {\"models\":[]}",
            ),
            (
                "the second run without end",
                |run| run.transcripts[1] = page_transcript(&["metadata", "values"]),
                "run 1: the last frame is Some(\"values\"), expected \"end\"",
            ),
            (
                "a run that does not open with metadata",
                |run| run.transcripts[0] = page_transcript(&["values", "end"]),
                "run 0: the first frame is Some(\"values\"), expected \"metadata\"",
            ),
            (
                "a model server problem",
                |run| {
                    run.model_errors.push(ModelProblem::Reported {
                        kind: replay_core::ModelProblemKind::AmbiguousCaller,
                        message: "name the caller".into(),
                    })
                },
                "[\"ambiguous_caller: name the caller\"]",
            ),
            (
                "the suggestions turn never reached",
                |run| run.unused_turns.push(2),
                "recorded turns [2] were never asked for: the web client's flow did not reach them",
            ),
        ];
        let clean = clean_page_run();
        assert_eq!(clean.golden_stem(), "two_run_thread.pro.web");
        let verdict = clean.verdict();
        assert!(
            verdict.replayed_cleanly(),
            "{:?}",
            verdict.problems(MissingGolden::Allowed)
        );
        for (name, spoil, expected) in cases {
            let mut run = clean_page_run();
            spoil(&mut run);
            let verdict = run.verdict();
            let problems = verdict.problems(MissingGolden::Allowed);
            assert!(!verdict.replayed_cleanly(), "{name}");
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            assert!(problems[0].contains(expected), "{name}: {problems:?}");
        }
        // A session's run keeps Layer 1's policy: an unused suggestions turn is information.
        let mut session = clean_page_run();
        session.drive = Drive::default();
        session.unused_turns.push(2);
        assert!(session.verdict().replayed_cleanly());
    }

    /// A session's run of AG-UI frames (Agno's router: `RAW` telemetry among the message's
    /// deltas where `raw_at` says), judged against the goldens in `golden_dir`.
    fn ag_ui_run(golden_dir: &Path, raw_at: usize, ignored: &[&str]) -> ScenarioRun {
        let mut frames = vec![
            json!({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}),
            json!({"type": "TEXT_MESSAGE_START", "messageId": "m", "role": "assistant"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "Hel"}),
            json!({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "lo"}),
            json!({"type": "TEXT_MESSAGE_END", "messageId": "m"}),
            json!({"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}),
        ];
        frames.insert(
            raw_at,
            json!({"type": "RAW", "event": {"name": "ModelRequestCompleted"}}),
        );
        let mut run = clean_page_run();
        run.drive = Drive::Session(DriveOptions::default());
        run.exchanges.clear();
        run.transcripts = vec![RunTranscript {
            request: Value::Null,
            events: (frames.iter())
                .map(|frame| SseEvent::new("message".into(), frame.to_string(), None))
                .collect(),
            modes: crate::driver::StreamModes::Values,
            api: Api::AgUi,
            headers: Vec::new(),
            history: None,
        }];
        run.golden_dir = golden_dir.to_path_buf();
        run.ignored = IgnoredEvents::new(ignored.iter().copied());
        run
    }

    /// Issue 47, item 5: a golden made with `RAW` ignored stays green when the framework moves
    /// its `RAW` frame (here from between two deltas of one message, where it split their
    /// run, to before the message), counting what it dropped; without the rule the same move
    /// changes the golden.
    #[test]
    fn an_ignored_event_moved_by_the_framework_keeps_the_golden_and_is_red_without_the_rule() {
        let dir = tempfile::tempdir().unwrap();
        let accept = |run: &ScenarioRun| {
            let stem = run.golden_stem();
            crate::pending::write_pending(dir.path(), &stem, "f.json", &run.golden_document())
                .unwrap();
            crate::pending::accept(&crate::pending::find(dir.path(), &stem).unwrap()).unwrap();
        };
        let recorded = ag_ui_run(dir.path(), 3, &["RAW"]);
        accept(&recorded);
        assert!(!recorded.golden_document().contains("RAW"));
        let moved = ag_ui_run(dir.path(), 1, &["RAW"]);
        assert_eq!(moved.golden_status(), GoldenStatus::Ok);
        let counted = moved
            .dropped()
            .map(|dropped| dropped.0.into_iter().collect::<Vec<_>>());
        assert_eq!(counted, Some(vec![("RAW".to_owned(), 1)]));

        let recorded = ag_ui_run(dir.path(), 3, &[]);
        accept(&recorded);
        let moved = ag_ui_run(dir.path(), 1, &[]);
        assert_eq!(moved.golden_status(), GoldenStatus::Changed);
        assert_eq!(moved.dropped(), None);
    }

    /// Issue 39, item 4: the MCP servers' contract is golden beside the stream's
    /// (`<stem>.mcp.snap`): missing until accepted, then a renamed tool parameter turns the run's
    /// golden status to changed while the stream's own golden is untouched.
    #[test]
    fn a_renamed_mcp_tool_parameter_changes_the_runs_golden_status() {
        use crate::mcp::{AnswerForm, McpAnswer, McpBoundary, McpCall, Outcome};
        let dir = tempfile::tempdir().unwrap();
        let run_with = |parameter: &str| {
            let call = McpCall {
                id: json!(1),
                method: "tools/list".into(),
                params: None,
            };
            let tools = json!({"tools": [{"name": "get_time", "inputSchema": {"type": "object",
                "properties": {parameter: {"type": "string"}}, "required": [parameter]}}]});
            let answer = McpAnswer {
                form: AnswerForm::Json,
                before: Vec::new(),
                response: Outcome::Result(tools),
                status: None,
            };
            let boundary = McpBoundary {
                server: "time".into(),
            };
            let mut run = clean_page_run();
            let mut fixture = (*run.fixture).clone();
            fixture.exchanges = vec![boundary.call(&call).answered(answer.to_value())];
            run.fixture = Arc::new(fixture);
            run.golden_dir = dir.path().to_path_buf();
            run
        };
        let stream_accepted = |run: &ScenarioRun| {
            let stem = run.golden_stem();
            crate::pending::write_pending(dir.path(), &stem, "f.json", &run.golden_document())
                .unwrap();
            crate::pending::accept(&crate::pending::find(dir.path(), &stem).unwrap()).unwrap();
        };
        let recorded = run_with("city");
        stream_accepted(&recorded);
        assert_eq!(recorded.golden_status(), GoldenStatus::Ok);
        assert_eq!(recorded.verdict().golden, GoldenStatus::Missing);
        let stem = recorded.mcp_golden_stem();
        let document = recorded.mcp_golden_document().expect("a contract");
        crate::pending::write_pending(dir.path(), &stem, "f.json", &document).unwrap();
        crate::pending::accept(&crate::pending::find(dir.path(), &stem).unwrap()).unwrap();
        assert!(dir.path().join("two_run_thread.pro.mcp.snap").is_file());
        assert_eq!(recorded.verdict().golden, GoldenStatus::Ok);
        let renamed = run_with("town");
        assert_eq!(renamed.golden_status(), GoldenStatus::Ok);
        assert_eq!(renamed.verdict().golden, GoldenStatus::Changed);
    }

    /// Issue 47: in keyless's voice a miss whose conversation carries on from an earlier miss's
    /// is one short line naming it (its nearest turn would be noise); the workspace's voice
    /// keeps DeerFlow's message for every miss.
    #[test]
    fn a_consequence_of_an_earlier_miss_is_marked_and_kept_short() {
        let miss = |canonical: &str| Miss {
            caller: "lead_agent".into(),
            input_hash: "k".into(),
            conversation_hash: "c".into(),
            canonical: canonical.into(),
            fixture_path: PathBuf::from("f.json"),
            known_hashes: Vec::new(),
            nearest: None,
        };
        let mut run = clean_page_run();
        run.misses = vec![
            miss(r#"[{"content": "hi", "type": "human"}]"#),
            miss(r#"[{"content": "hi", "type": "human"}, {"content": "more", "type": "human"}]"#),
        ];
        run.voice = Voice::Keyless;
        assert_eq!(run.consequence_of(1), Some(0));
        let second = run.miss_text(1);
        assert!(
            second.starts_with("replay miss 2 of 2: a consequence of miss 1")
                && !second.contains('\n'),
            "{second}"
        );
        assert!(
            run.miss_text(0)
                .contains("record the fixture again (keyless record)")
        );
        run.voice = Voice::Workspace;
        assert_eq!(run.miss_text(1), run.misses[1].to_string());
    }
}
