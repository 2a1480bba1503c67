//! `keyless test`: every fixture through the gateway, compared with its golden. For each fixture
//! the model server (started in this process on 127.0.0.1, or one already running) is reset to
//! it, the gateway command is started and waited for (or the running gateway at `--gateway-url`
//! is used), the API is driven, the gateway is stopped and the run is judged. A missing or
//! changed golden is written as `<name>.snap.new` for `keyless accept` / `keyless review`.
//!
//! `--jobs N` runs N fixtures at once. Each job slot has a model server of its own (its own port,
//! so its own replay state and problem ledger) and its own gateway process on its own port, and
//! runs one fixture at a time: a fixture's calls can only reach the model server of its slot,
//! which serves that fixture alone while it runs, so no fixture is answered from another's
//! recording or blamed for another's calls. (One server with a base path per fixture would need
//! every gateway's base URL to carry the path through its client unchanged; a port each needs
//! nothing of the gateway.) Whatever order fixtures finish in, their lines are printed in
//! fixture-name order. `--partition` runs one shard (`partition`), `--junit` writes the report
//! (`junit`), `--reuse-gateway` keeps one gateway per slot (`keyless_runner::Reused`).

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use keyless_runner::Launched;
use keyless_runner::Reused;
use keyless_runner::{AtUrl, GatewayTarget};
use keyless_runner::{
    Drive, DriveOptions, FIXTURE_TIME_LIMIT, RunOptions, ScenarioRun, Transcripts,
};
use keyless_runner::{IgnoredEvents, find_pending, pending_diff, pending_diff_within};
use keyless_runner::{Mode, ModelServer, ServerOptions};
use keyless_runner::{
    error_chain, fixture_files, gateway_config_note, json_line, problem_lines, table_header,
    table_line,
};
use keyless_runner::{pending_path, write_pending};
use replay_core::{
    FixtureError, GoldenStatus, LoadedFixture, MissingGolden, ModelProblem, UnusedTurns, Voice,
};
use serde_json::json;

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT, FileConfig};
use crate::gateway::{Gateway, GatewayArgs};
use crate::junit::{self, Case, Failed};
use crate::output::{err, err_diff, out};

/// How many lines of a changed golden's diff a run prints under the fixture's row; the rest is
/// counted (`keyless review` shows up to 2,000).
const LOG_DIFF_LINES: usize = 60;
use crate::partition::Partition;

/// Arguments of `test`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  keyless test                                    # as keyless.toml says
  keyless test --gateway-cmd 'python app.py --port {port}' --ready /health
  keyless test --gateway-url http://127.0.0.1:8000 --model-port 8090
  keyless test write_read_file.flash --json       # one fixture, JSON lines
  keyless test --jobs 4 --junit target/keyless.xml
  keyless test --partition hash:2/3               # the second of three CI machines

A run fails when the model server answered none of the fixture's recorded turns, or none of the
lead caller's (the gateway's model is not the model server); other unused turns are reported,
and fail with --strict-unused.

A failed fixture says under its row what to do next: a changed golden's diff (at most 60 lines,
coloured on a terminal only; --json carries it as golden_diff), a miss's first differing field and
how to record again, a dead gateway's last log lines. ignore_events = [\"RAW\"] in keyless.toml
leaves a framework's own event types out of the goldens (no longer guarded), counted per type.

--max-age 30d warns about each fixture recorded (by its provenance) more than 30 days ago, and
--max-age-fail fails the run for it; the table's age column and --json's recorded_at/age_days say
each fixture's age (unknown/null for a fixture without provenance).

Exit status: 0 every fixture passed; 1 a fixture missed, broke its framing, left the turns it
must use unused, has a changed or missing golden (written as <name>.snap.new: see keyless
review), or is older than --max-age with --max-age-fail; 2 a usage or configuration error. A closed standard output stops the run quietly.")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    #[command(flatten)]
    pub gateway: GatewayArgs,
    /// Reuse a model server already running (`keyless model-server`) instead of starting one.
    #[arg(long, value_name = "URL")]
    pub model_server: Option<String>,
    /// The reset token of the model server given with --model-server, in a file (`keyless
    /// model-server --reset-token-file` writes it) [default: the KEYLESS_RESET_TOKEN variable].
    #[arg(long, value_name = "FILE", requires = "model_server")]
    pub reset_token_file: Option<PathBuf>,
    /// The port of the model server this command starts [default: a free one with
    /// --gateway-cmd, 8090 with --gateway-url].
    #[arg(long, value_name = "PORT")]
    pub model_port: Option<u16>,
    /// Print one JSON object per fixture (misses with their diagnostics) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Fail a fixture for every recorded turn the gateway did not use [default: only when it
    /// used none of the turns, or none of the lead caller's; `strict_unused` in keyless.toml].
    #[arg(long)]
    pub strict_unused: bool,
    /// How long one fixture's drive may take, in seconds; past it the fixture fails, named
    /// [default: 300; `fixture_time_limit_secs` in keyless.toml].
    #[arg(long, value_name = "SECS")]
    pub fixture_time_limit: Option<u64>,
    /// How many fixtures run at once, each with a gateway and a model server of its own
    /// [default: the number of cores; 1 with --gateway-url, --model-server or a fixed
    /// --model-port].
    #[arg(long, short = 'j', value_name = "N")]
    pub jobs: Option<NonZeroUsize>,
    /// Run only shard K of N: count:K/N deals the fixtures round-robin in name order, hash:K/N
    /// by a hash of the name (cargo-nextest's two kinds); K/N is count:K/N.
    #[arg(long, value_name = "KIND:K/N")]
    pub partition: Option<Partition>,
    /// Write a JUnit XML report to FILE (one testcase per fixture).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Start the gateway once per job and run every fixture without gateway settings of its own
    /// through it (--reuse-gateway=false turns the key off) [default: off].
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true")]
    pub reuse_gateway: Option<bool>,
    /// Warn about every fixture recorded (by its provenance) longer ago than AGE: a whole number
    /// and h, d or w, e.g. 30d [`max_age` in keyless.toml]. A fixture without provenance has an
    /// unknown age: it is named, never failed.
    #[arg(long, value_name = "AGE")]
    pub max_age: Option<crate::age::MaxAge>,
    /// Fail the run (exit 1) when a fixture is older than --max-age [`max_age_fail`].
    #[arg(long)]
    pub max_age_fail: bool,
    /// Only these fixtures (their names, e.g. `write_read_file.flash`).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
}

/// The settings of one `test` run, flags over the file over defaults.
struct Settings {
    fixtures: Vec<PathBuf>,
    golden: PathBuf,
    gateway: Gateway,
    drive: DriveOptions,
    model_server: Option<String>,
    model_port: u16,
    /// How many fixtures run at once (at most one per fixture).
    jobs: usize,
    /// The shard run, if any, and how many fixtures there were before it.
    partition: Option<(Partition, usize)>,
    junit: Option<PathBuf>,
    reuse_gateway: bool,
    unused: UnusedTurns,
    time_limit: Duration,
    /// The reset token of a model server already running (`--model-server`).
    external_token: Option<String>,
    /// The event types every golden leaves out (`ignore_events`).
    ignore_events: IgnoredEvents,
    /// The types single fixtures also leave out (`[fixture."NAME"]`), by fixture name.
    fixture_ignore_events: BTreeMap<String, IgnoredEvents>,
    /// The age past which a fixture is reported, and whether that fails the run.
    max_age: Option<(crate::age::MaxAge, bool)>,
}

impl Settings {
    /// The event types the golden of the fixture `stem` leaves out.
    fn ignored_for(&self, stem: &str) -> IgnoredEvents {
        match self.fixture_ignore_events.get(stem) {
            Some(own) => self.ignore_events.with(own),
            None => self.ignore_events.clone(),
        }
    }
}

fn settings(args: &Args) -> Result<Settings, ConfigError> {
    let resolved = args.folders.resolve()?;
    let file: &FileConfig = &resolved.loaded.file;
    let gateway = args.gateway.resolve(&resolved)?;
    let drive = args.gateway.drive_options(&resolved)?;
    let mut fixtures = fixture_files(&resolved.fixtures).map_err(|err| {
        ConfigError(format!(
            "cannot list the fixture folder {}: {err}",
            resolved.fixtures.display()
        ))
    })?;
    if fixtures.is_empty() {
        return Err(ConfigError(format!(
            "no fixtures (*.json) in {} (keyless record makes one)",
            resolved.fixtures.display()
        )));
    }
    let all: Vec<String> = fixtures.iter().map(|path| stem(path)).collect();
    let fixture_tables = file.fixture.clone().unwrap_or_default();
    if let Some(unknown) = fixture_tables.keys().find(|name| !all.contains(name)) {
        return Err(ConfigError(format!(
            "{}: [fixture.{unknown:?}] names no fixture in {} (fixtures: {})",
            resolved.loaded.describe(),
            resolved.fixtures.display(),
            all.join(", ")
        )));
    }
    let fixture_ignore_events = (fixture_tables.into_iter())
        .map(|(name, table)| {
            (
                name,
                IgnoredEvents::new(table.ignore_events.unwrap_or_default()),
            )
        })
        .collect();
    if !args.names.is_empty() {
        let stems = &all;
        if let Some(unknown) = args.names.iter().find(|name| !stems.contains(name)) {
            return Err(ConfigError(format!(
                "no fixture {unknown:?} in {} (fixtures: {})",
                resolved.fixtures.display(),
                stems.join(", ")
            )));
        }
        fixtures.retain(|path| args.names.contains(&stem(path)));
    }
    let partition = args.partition.map(|partition| {
        let before = fixtures.len();
        fixtures = partition.select(std::mem::take(&mut fixtures), |path| stem(path));
        (partition, before)
    });
    let default_port = match gateway {
        Gateway::Command(_) => 0,
        Gateway::Url(_) => DEFAULT_MODEL_PORT,
    };
    let model_server = args
        .model_server
        .clone()
        .or_else(|| file.model_server.clone());
    let model_port = args.model_port.or(file.model_port).unwrap_or(default_port);
    let jobs = jobs(args.jobs.or(file.jobs), &gateway, &model_server, model_port)?;
    Ok(Settings {
        jobs: jobs.min(fixtures.len()).max(1),
        fixtures,
        golden: resolved.golden,
        gateway,
        drive,
        model_server,
        model_port,
        partition,
        junit: args.junit.clone(),
        reuse_gateway: args.reuse_gateway.or(file.reuse_gateway).unwrap_or(false),
        unused: if args.strict_unused || file.strict_unused == Some(true) {
            UnusedTurns::Strict
        } else {
            UnusedTurns::Lenient
        },
        time_limit: args
            .fixture_time_limit
            .or(file.fixture_time_limit_secs)
            .map_or(FIXTURE_TIME_LIMIT, Duration::from_secs),
        external_token: match &args.model_server {
            Some(_) => crate::model_server::read_reset_token(args.reset_token_file.as_deref())?,
            None => None,
        },
        ignore_events: IgnoredEvents::new(file.ignore_events.clone().unwrap_or_default()),
        fixture_ignore_events,
        max_age: args
            .max_age
            .or(file.max_age)
            .map(|age| (age, args.max_age_fail || file.max_age_fail == Some(true))),
    })
}

/// How many fixtures run at once: `asked` (flag or key), else the number of cores. A gateway
/// someone else started, a model server already running, or a fixed model port each means one
/// model server for the whole run, so one fixture at a time: asking for more is a usage error.
fn jobs(
    asked: Option<NonZeroUsize>,
    gateway: &Gateway,
    model_server: &Option<String>,
    model_port: u16,
) -> Result<usize, ConfigError> {
    let single = match (gateway, model_server) {
        (Gateway::Url(_), _) => Some("the gateway at gateway_url has one model server"),
        (_, Some(_)) => Some("the model server already running replays one fixture at a time"),
        _ if model_port != 0 => Some("model_port fixes the port of one model server"),
        _ => None,
    };
    match (asked, single) {
        (Some(asked), Some(why)) if asked.get() > 1 => Err(ConfigError(format!(
            "--jobs {asked}: {why}, and each job needs its own (use --jobs 1, or let keyless \
             start the gateway and the model servers)"
        ))),
        (Some(asked), _) => Ok(asked.get()),
        (None, Some(_)) => Ok(1),
        (None, None) => Ok(std::thread::available_parallelism().map_or(1, NonZeroUsize::get)),
    }
}

fn stem(path: &Path) -> String {
    keyless_runner::stem_of(path)
}

/// The target the fixtures run through.
enum Target {
    Launched(Box<Launched>),
    Reused(Box<Reused>),
    AtUrl(AtUrl),
}

impl Target {
    fn as_dyn(&mut self) -> &mut dyn GatewayTarget {
        match self {
            Target::Launched(launched) => launched.as_mut(),
            Target::Reused(reused) => reused.as_mut(),
            Target::AtUrl(at_url) => at_url,
        }
    }

    /// The started gateway's log of the last fixture.
    fn log(&self) -> Option<&Path> {
        match self {
            Target::Launched(launched) => launched.log(),
            Target::Reused(reused) => reused.log(),
            Target::AtUrl(_) => None,
        }
    }

    /// Stops the gateway it started, if any.
    async fn stop(&mut self) {
        match self {
            Target::Launched(launched) => {
                launched.stop().await;
            }
            Target::Reused(reused) => reused.stop().await,
            Target::AtUrl(_) => {}
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
            Target::Launched(_) | Target::AtUrl(_) => Vec::new(),
        }
    }

    /// After the slot's last fixture: [`Self::after_run`] once the gateway is stopped.
    async fn settle(&mut self) -> Vec<ModelProblem> {
        match self {
            Target::Reused(reused) => reused.settle().await,
            Target::Launched(_) | Target::AtUrl(_) => Vec::new(),
        }
    }
}

/// A line a fixture's outcome prints, held until the fixtures before it have printed theirs.
enum Printed {
    Out(String),
    Err(String),
    /// A golden's diff, on standard error (coloured on a terminal).
    Diff(String),
}

/// One fixture's outcome.
struct Outcome {
    passed: bool,
    json: serde_json::Value,
    /// What it prints, in order.
    printed: Vec<Printed>,
    /// Its JUnit failure (`None` when it passed).
    failed: Option<Failed>,
    log: Option<PathBuf>,
}

impl Outcome {
    /// Everything it prints on stderr, as one text (a JUnit failure's).
    fn stderr_text(&self) -> String {
        let lines: Vec<&str> = self
            .printed
            .iter()
            .filter_map(|printed| match printed {
                Printed::Err(line) => Some(line.as_str()),
                // The report carries the whole diff (up to `keyless review`'s bound) instead.
                Printed::Out(_) | Printed::Diff(_) => None,
            })
            .collect();
        lines.join("\n")
    }
}

/// Judges a finished run: the table line or JSON object, the problems and where to look, the
/// pending golden written when the golden is missing or changed.
fn judge(run: &ScenarioRun, settings: &Settings, log: Option<&Path>, as_json: bool) -> Outcome {
    let golden = settings.golden.as_path();
    let mut printed = Vec::new();
    let verdict = run.verdict_with(settings.unused);
    let passed = verdict.passes(MissingGolden::Fails);
    // A run that missed or broke its framing is no golden to accept: only a clean replay
    // leaves a pending golden, and a passing one removes a stale pending file.
    let mut pending = None;
    match verdict.golden {
        GoldenStatus::Missing | GoldenStatus::Changed if verdict.replayed_cleanly() => {
            // Named from the folder that holds the golden folder (the configuration's), as the
            // workspace's goldens name `fixtures/…`, so a committed golden holds no machine's path.
            let base = golden.parent().unwrap_or(golden);
            let fixture = run
                .fixture_path
                .strip_prefix(base)
                .unwrap_or(&run.fixture_path)
                .display()
                .to_string();
            match write_pending(golden, &run.stem(), &fixture, &run.golden_document()) {
                Ok(path) => pending = Some(path),
                Err(err) => printed.push(Printed::Err(format!("keyless: {err}"))),
            }
        }
        GoldenStatus::Ok => {
            // Removing a link removes the link, never what it points at.
            let _ = std::fs::remove_file(pending_path(golden, &run.stem()));
        }
        GoldenStatus::Missing | GoldenStatus::Changed | GoldenStatus::Refused => {}
    }
    // A changed golden's diff, bounded, for the log under the row and for --json (issue 47).
    let diff = match (&pending, verdict.golden) {
        (Some(_), GoldenStatus::Changed) => find_pending(golden, &run.stem())
            .and_then(|found| pending_diff_within(&found, LOG_DIFF_LINES))
            .map_err(|err| printed.push(Printed::Err(format!("keyless: {err}"))))
            .ok(),
        _ => None,
    };
    let mut line = json_line(run, &verdict);
    line["pending_golden"] = json!(pending.as_ref().map(|p| p.display().to_string()));
    line["golden_diff"] = json!(diff.as_ref().map(|diff| json!({
        "diff": diff.text,
        "lines_left_out": diff.left_out,
    })));
    line["gateway_log"] = json!(log.map(|p| p.display().to_string()));
    line["unused_failure"] = json!(verdict.unused_failure.as_ref().map(ToString::to_string));
    line["golden_refusal"] = json!(verdict.golden_refusal);
    if !as_json {
        printed.push(Printed::Out(table_line(run, &verdict)));
        if let Some(dropped) = run.dropped() {
            printed.push(Printed::Out(format!(
                "{}: {dropped}",
                run.fixture_path.display()
            )));
        }
    }
    let mut failed = None;
    if !passed {
        if verdict.replayed_cleanly() {
            for problem in problem_lines(run, &verdict) {
                printed.push(Printed::Err(problem));
            }
        } else {
            // The report says every problem, each miss with its diagnostic, and the transcripts.
            printed.push(Printed::Err(run.report(&verdict)));
        }
        if let Some(path) = &pending {
            printed.push(Printed::Err(format!(
                "{}: golden {}: the new one is {} (keyless review shows it; keyless accept {} accepts it)",
                run.fixture_path.display(),
                verdict.golden.as_str(),
                path.display(),
                run.stem()
            )));
        }
        if let Some(diff) = &diff {
            let mut text = diff.text.clone();
            if diff.left_out > 0 {
                text.push_str(&format!(
                    "… {} more diff lines not shown (keyless review shows them all)\n",
                    diff.left_out
                ));
            }
            printed.push(Printed::Diff(text));
        }
        if let Some(log) = log {
            printed.push(Printed::Err(format!(
                "{}: gateway log: {}",
                run.fixture_path.display(),
                log.display()
            )));
        }
        failed = Some(Failed::Check {
            message: verdict
                .problems_in(MissingGolden::Fails, Voice::Keyless)
                .join("; "),
            text: String::new(),
        });
    }
    let mut outcome = Outcome {
        passed,
        json: line,
        printed,
        failed,
        log: log.map(Path::to_path_buf),
    };
    // The JUnit failure's text: what the run printed, and the golden's diff.
    let text = outcome.stderr_text();
    if let Some(Failed::Check { text: slot, .. }) = &mut outcome.failed {
        *slot = text;
        if pending.is_some()
            && let Ok(found) = find_pending(golden, &run.stem())
            && let Ok(diff) = pending_diff(&found)
        {
            slot.push_str("\n\n");
            slot.push_str(&diff);
        }
    }
    outcome
}

/// The outcome of a fixture that could not run at all.
fn broken(path: &Path, error: &(dyn std::error::Error + 'static), log: Option<&Path>) -> Outcome {
    let mut message = error_chain(error);
    if let Some(log) = log
        && !message.contains(&log.display().to_string())
    {
        message.push_str(&format!(" (gateway log: {})", log.display()));
    }
    // The error names the fixture already (`HarnessError` does).
    Outcome {
        passed: false,
        json: json!({
            "fixture": path.display().to_string(),
            "error": message,
            "gateway_log": log.map(|p| p.display().to_string()),
        }),
        printed: vec![Printed::Err(format!("error: {message}"))],
        failed: Some(Failed::Error { message }),
        log: log.map(Path::to_path_buf),
    }
}

/// Every fixture of the run, each read and validated once: the job's model server replays the
/// very one the run is judged on.
type LoadedFixtures = [Result<LoadedFixture, FixtureError>];

/// Loads the fixture at each of `paths`, keeping a broken one's error for the fixture's outcome.
fn load_fixtures(paths: &[PathBuf]) -> Vec<Result<LoadedFixture, FixtureError>> {
    paths.iter().map(|path| LoadedFixture::load(path)).collect()
}

/// A fixture's run, not yet judged: under `--reuse-gateway` what its gateway did after the run
/// is added first ([`Target::after_run`]).
struct Ran {
    path: PathBuf,
    run: Result<ScenarioRun, keyless_runner::HarnessError>,
    /// Its gateway's log.
    log: Option<PathBuf>,
    /// The note on its gateway settings, printed first.
    note: Option<String>,
}

/// Runs the fixture at `path` (loaded as `loaded`) through `target`; `None` when the fixture
/// could not be loaded (its outcome is given).
async fn run_one(
    target: &mut Target,
    path: &Path,
    loaded: &Result<LoadedFixture, FixtureError>,
    settings: &Settings,
) -> Result<Ran, Outcome> {
    let loaded = match loaded {
        Err(err) => return Err(broken(path, err, None)),
        Ok(loaded) => loaded,
    };
    let note = gateway_config_note(path, loaded.fixture());
    let options = RunOptions::new(&settings.golden)
        .drive(Drive::Session(settings.drive.clone()))
        .time_limit(settings.time_limit)
        .transcripts(Transcripts::from_env())
        .voice(Voice::Keyless)
        .ignore_events(settings.ignored_for(&stem(path)));
    let run = keyless_runner::run(target.as_dyn(), loaded.clone(), &options).await;
    Ok(Ran {
        path: path.to_path_buf(),
        run,
        log: target.log().map(Path::to_path_buf),
        note,
    })
}

/// Judges `ran`, with `after`, the problems its gateway caused after its run.
fn judged(ran: Ran, after: Vec<ModelProblem>, settings: &Settings, as_json: bool) -> Outcome {
    let log = ran.log.as_deref();
    let mut outcome = match ran.run {
        Ok(mut run) => {
            run.model_errors.extend(after);
            judge(&run, settings, log, as_json)
        }
        Err(err) => {
            let mut outcome = broken(&ran.path, &err, log);
            for problem in after {
                outcome.printed.push(Printed::Err(format!(
                    "{}: after its run: {problem}",
                    ran.path.display()
                )));
            }
            outcome
        }
    };
    if let Some(note) = ran.note {
        outcome.printed.insert(0, Printed::Err(note));
    }
    outcome
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
    settings: &Settings,
    fixtures: &LoadedFixtures,
    as_json: bool,
) -> anyhow::Result<Slot> {
    let (server, model_root, token) = match &settings.model_server {
        Some(url) => (
            None,
            url.trim_end_matches('/').trim_end_matches("/v1").to_owned(),
            settings.external_token.clone().unwrap_or_default(),
        ),
        None => {
            let options = ServerOptions {
                port: settings.model_port,
                on_problem: None,
                ..ServerOptions::default()
            };
            let loaded = fixtures
                .iter()
                .map(|loaded| loaded.as_ref().cloned())
                .collect::<Result<Vec<LoadedFixture>, &FixtureError>>()
                .map_err(|err| ConfigError(error_chain(err)))?;
            let server = ModelServer::start(Mode::LoadedFixtures(loaded), options)
                .await
                .map_err(|err| ConfigError(error_chain(&err)))?;
            let url = server.url();
            let token = server.reset_token().to_owned();
            (Some(server), url, token)
        }
    };
    let base_url = format!("{model_root}/v1");
    let target = match &settings.gateway {
        Gateway::Command(command) if settings.reuse_gateway => Target::Reused(Box::new(
            Reused::new(command.clone(), &base_url, &format!("job-{}", index + 1))
                .context("the model server's URL")?
                .with_reset_token(&token)
                .with_launcher_if(crate::launcher()),
        )),
        Gateway::Command(command) => Target::Launched(Box::new(
            Launched::new(command.clone(), &base_url)
                .context("the model server's URL")?
                .with_reset_token(&token)
                .with_launcher_if(crate::launcher()),
        )),
        Gateway::Url(url) => {
            if !as_json {
                out(format!("gateway at {url}; its model must be at {base_url}"))?;
            }
            Target::AtUrl(
                AtUrl::new(url, &model_root)
                    .context("the model server's URL")?
                    .with_reset_token(&token),
            )
        }
    };
    Ok(Slot { server, target })
}

/// Prints outcomes in fixture order as they come in, keeps the progress line, and keeps what the
/// JUnit report needs.
struct Reporter {
    names: Vec<String>,
    folders: Vec<String>,
    /// Outcomes that finished before an earlier fixture, by index.
    waiting: BTreeMap<usize, Outcome>,
    next: usize,
    cases: Vec<Case>,
    all_passed: bool,
    as_json: bool,
    progress: ProgressBar,
    /// The fixtures running now, by index.
    running: BTreeMap<usize, String>,
    /// Standard output was closed: nobody reads on, so no further fixture starts (issue 34,
    /// finding 21).
    closed: bool,
}

impl Reporter {
    fn new(fixtures: &[PathBuf], as_json: bool) -> Reporter {
        let shown = !as_json && std::io::stderr().is_terminal();
        let progress = ProgressBar::with_draw_target(
            Some(fixtures.len() as u64),
            if shown {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {pos}/{len} fixtures {wide_msg}",
        ) {
            progress.set_style(style);
        }
        if shown {
            progress.enable_steady_tick(Duration::from_millis(200));
        }
        // The JUnit classname: the fixture folder, relative to the current folder when inside it.
        let cwd = std::env::current_dir().unwrap_or_default();
        Reporter {
            names: fixtures.iter().map(|path| stem(path)).collect(),
            folders: fixtures
                .iter()
                .map(|path| {
                    let folder = path.parent().unwrap_or(Path::new(""));
                    folder
                        .strip_prefix(&cwd)
                        .unwrap_or(folder)
                        .display()
                        .to_string()
                })
                .collect(),
            waiting: BTreeMap::new(),
            next: 0,
            cases: Vec::new(),
            all_passed: true,
            as_json,
            progress,
            running: BTreeMap::new(),
            closed: false,
        }
    }

    fn started(&mut self, index: usize) {
        self.running.insert(index, self.names[index].clone());
        self.show_running();
    }

    fn show_running(&self) {
        let running: Vec<&str> = self.running.values().map(String::as_str).collect();
        self.progress
            .set_message(format!("running: {}", running.join(", ")));
    }

    fn finished(&mut self, index: usize, outcome: Outcome, time: Duration) {
        self.running.remove(&index);
        self.show_running();
        self.progress.inc(1);
        self.cases.push(Case {
            name: self.names[index].clone(),
            folder: self.folders[index].clone(),
            time,
            failed: outcome.failed.clone(),
            gateway_log: outcome.log.clone(),
        });
        self.waiting.insert(index, outcome);
        while let Some(outcome) = self.waiting.remove(&self.next) {
            self.next += 1;
            self.all_passed &= outcome.passed;
            let as_json = self.as_json;
            let closed = &mut self.closed;
            self.progress.suspend(|| {
                for printed in &outcome.printed {
                    match printed {
                        Printed::Out(line) => *closed |= out(line).is_err(),
                        Printed::Err(line) => err(line),
                        Printed::Diff(diff) => err_diff(diff),
                    }
                }
                if as_json {
                    *closed |= out(outcome.json.to_string()).is_err();
                }
            });
        }
    }

    /// The JUnit cases in fixture order.
    fn cases(&self) -> Vec<Case> {
        let mut cases = self.cases.clone();
        cases.sort_by_key(|case| self.names.iter().position(|name| *name == case.name));
        cases
    }
}

/// Runs fixtures from `next` on `slot` until none is left. Under `--reuse-gateway` a fixture is
/// judged once the next one's run has begun (or after the last): a model call its gateway made
/// after its run, or the gateway's exit after it, is its own problem (issue 45, findings 8
/// and 9).
async fn work(
    slot: &mut Slot,
    next: &AtomicUsize,
    settings: &Settings,
    fixtures: &LoadedFixtures,
    reporter: &parking_lot::Mutex<Reporter>,
    as_json: bool,
) {
    let mut held: Option<(usize, Ran, Duration)> = None;
    loop {
        let index = next.fetch_add(1, Ordering::Relaxed);
        let Some(path) = settings.fixtures.get(index) else {
            break;
        };
        if reporter.lock().closed {
            break;
        }
        reporter.lock().started(index);
        let started = Instant::now();
        let ran = run_one(&mut slot.target, path, &fixtures[index], settings).await;
        let time = started.elapsed();
        if let Some((before, ran, time)) = held.take() {
            let outcome = judged(ran, slot.target.after_run(), settings, as_json);
            reporter.lock().finished(before, outcome, time);
        }
        match ran {
            Ok(ran) if slot.target.holds_verdicts() => held = Some((index, ran, time)),
            Ok(ran) => {
                let outcome = judged(ran, Vec::new(), settings, as_json);
                reporter.lock().finished(index, outcome, time);
            }
            Err(outcome) => reporter.lock().finished(index, outcome, time),
        }
    }
    if let Some((before, ran, time)) = held.take() {
        let after = slot.target.settle().await;
        let outcome = judged(ran, after, settings, as_json);
        reporter.lock().finished(before, outcome, time);
    }
}

/// The JUnit report's suite name: `keyless test`, with the shard when there is one.
fn suite_name(settings: &Settings) -> String {
    match settings.partition {
        Some((partition, _)) => format!("keyless test ({partition})"),
        None => "keyless test".to_owned(),
    }
}

/// Runs `test`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = settings(&args)?;
    if settings.fixtures.is_empty() {
        // A shard of a small suite may hold nothing: that is not a failure of this machine.
        if let Some((partition, before)) = settings.partition {
            err(format!(
                "keyless: shard {partition} holds none of the {before} fixtures; nothing to run"
            ));
        }
        if let Some(path) = &settings.junit {
            junit::write(
                path,
                &junit::report(&suite_name(&settings), &[], Duration::ZERO),
            )?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if let Some((partition, before)) = settings.partition
        && !args.json
    {
        out(format!(
            "shard {partition}: {} of {before} fixtures",
            settings.fixtures.len()
        ))?;
    }
    let runtime = crate::runtime()?;
    let started = Instant::now();
    let fixtures = load_fixtures(&settings.fixtures);
    let mut too_old = false;
    if let Some((max_age, fail)) = settings.max_age {
        let ages = crate::age::check(&settings.fixtures, &fixtures, max_age, chrono::Utc::now());
        let kind = if fail { "error" } else { "warning" };
        for line in &ages.too_old {
            err(format!("{kind}: {line}"));
        }
        for line in &ages.unknown {
            err(format!("warning: {line}"));
        }
        too_old = fail && !ages.too_old.is_empty();
    }
    let outcome = runtime.block_on(async {
        let signals = crate::Signals::listen()?;
        let mut slots = Vec::with_capacity(settings.jobs);
        for index in 0..settings.jobs {
            slots.push(slot(index, &settings, &fixtures, args.json).await?);
        }
        if !args.json {
            out(table_header())?;
        }
        let reporter = parking_lot::Mutex::new(Reporter::new(&settings.fixtures, args.json));
        let next = AtomicUsize::new(0);
        // Ctrl-C or SIGTERM stops the run, and the started gateways with it: they run in their
        // own process groups, which the terminal's signal does not reach.
        let finished = {
            let workers = slots
                .iter_mut()
                .map(|slot| work(slot, &next, &settings, &fixtures, &reporter, args.json));
            signals
                .until_stopped(futures::future::join_all(workers))
                .await
        };
        for slot in &mut slots {
            slot.target.stop().await;
        }
        let reporter = reporter.into_inner();
        reporter.progress.finish_and_clear();
        if finished.is_none() {
            err("keyless: interrupted; the gateways were stopped");
            return anyhow::Ok(None);
        }
        for slot in slots {
            if let Some(server) = slot.server {
                let _ = server.stop().await;
            }
        }
        anyhow::Ok(Some((reporter.all_passed, reporter.cases())))
    })?;
    let Some((passed, cases)) = outcome else {
        return Ok(ExitCode::FAILURE);
    };
    if let Some(path) = &settings.junit {
        let report = junit::report(&suite_name(&settings), &cases, started.elapsed());
        junit::write(path, &report)?;
    }
    Ok(if passed && !too_old {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// How many jobs a run gets: asked for, else the cores; one when a single model server
    /// serves the run, and asking for more then is a usage error naming why.
    #[test]
    fn jobs_are_as_asked_else_the_cores_and_one_model_server_means_one_job() {
        let command = Gateway::Command(keyless_runner::GatewayCommand {
            command: "true".into(),
            working_dir: PathBuf::from("."),
            ready_path: "/health".into(),
            ready_timeout: Duration::from_secs(1),
            log_dir: PathBuf::from("."),
        });
        let url = Gateway::Url("http://127.0.0.1:9".into());
        let running = Some("http://127.0.0.1:8090".to_owned());
        let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        let three = NonZeroUsize::new(3);
        let one = NonZeroUsize::new(1);
        // (case, asked, gateway, model server, model port, expected jobs or error fragment)
        let cases = [
            ("asked", three, &command, &None, 0, Ok(3)),
            ("the cores", None, &command, &None, 0, Ok(cores)),
            ("a gateway at a URL", None, &url, &None, 8090, Ok(1)),
            (
                "more at a URL",
                three,
                &url,
                &None,
                8090,
                Err("gateway_url"),
            ),
            ("one at a URL", one, &url, &None, 8090, Ok(1)),
            (
                "a running model server",
                three,
                &command,
                &running,
                0,
                Err("already running"),
            ),
            (
                "a fixed model port",
                three,
                &command,
                &None,
                8091,
                Err("model_port"),
            ),
        ];
        for (case, asked, gateway, server, port, expected) in cases {
            match (jobs(asked, gateway, server, port), expected) {
                (Ok(jobs), Ok(expected)) => assert_eq!(jobs, expected, "{case}"),
                (Err(err), Err(fragment)) => {
                    assert!(
                        err.0.contains(fragment) && err.0.contains("--jobs 3"),
                        "{case}: {err}"
                    )
                }
                (got, expected) => panic!("{case}: {got:?}, expected {expected:?}"),
            }
        }
    }
}
