//! `keyless test`: arguments → configuration → runner → reporters. The flags and
//! `keyless.toml` resolve into a [`Plan`]; the runner ([`keyless_runner::schedule`]) runs every
//! fixture through the gateway (a model server and a gateway per job, `--reuse-gateway`, the
//! held verdict of a reused gateway) and compares it with its golden; the reporters
//! ([`crate::reporter`]) print the table or JSON lines and collect the JUnit report. A missing
//! or changed golden is written as `<name>.snap.new` for `keyless accept` / `keyless review`.
//! `--partition` runs one shard (`partition`), `--junit` writes the report (`junit`).

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use keyless_runner::schedule::{self, Plan, RunEnd, RunningModelServer, ScheduleError};
use keyless_runner::{FIXTURE_TIME_LIMIT, IgnoredEvents, Transcripts, suite::fixture_files};
use replay_core::UnusedTurns;

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT, FileConfig};
use crate::gateway::{Gateway, GatewayArgs};
use crate::junit;
use crate::output::{StdoutClosed, err, out};
use crate::partition::Partition;
use crate::reporter::Reporters;

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

Fault scenarios (<scenario>.<mode>@<fault-name>.faults.toml beside the fixtures) run as fixtures
of their own, each with its golden; the row's note (and --json's faults) says which fault fired
how many times, and a fault that never fired fails the fixture (docs/replay-and-fixtures.md §13).

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
    /// and h, d or w, e.g. 30d (key `max_age` in keyless.toml). A fixture without provenance has an
    /// unknown age: it is named, never failed.
    #[arg(long, value_name = "AGE")]
    pub max_age: Option<crate::age::MaxAge>,
    /// Fail the run (exit 1) when a fixture is older than --max-age (key `max_age_fail` in
    /// keyless.toml).
    #[arg(long)]
    pub max_age_fail: bool,
    /// Only these fixtures (their names, e.g. `write_read_file.flash`).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
}

/// The settings of one `test` run, flags over the file over defaults: the runner's plan, and
/// what only the command does (the shard's line, the JUnit file).
struct Settings {
    plan: Plan,
    /// The shard run, if any, and how many fixtures there were before it.
    partition: Option<(Partition, usize)>,
    junit: Option<PathBuf>,
    /// The age past which a fixture is reported, and whether that fails the run.
    max_age: Option<(crate::age::MaxAge, bool)>,
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
    // Fault scenarios (`<scenario>.<mode>@<fault>.faults.toml`) run as fixtures of their own.
    fixtures.extend(
        keyless_runner::faults::fault_scenario_files(&resolved.fixtures).map_err(|err| {
            ConfigError(format!(
                "cannot list the fixture folder {}: {err}",
                resolved.fixtures.display()
            ))
        })?,
    );
    fixtures.sort();
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
    let external_token = match &args.model_server {
        Some(_) => crate::model_server::read_reset_token(args.reset_token_file.as_deref())?,
        None => None,
    };
    let plan = Plan {
        jobs: jobs.min(fixtures.len()).max(1),
        fixtures,
        golden: resolved.golden,
        gateway,
        drive,
        model_server: model_server.map(|url| RunningModelServer {
            url,
            reset_token: external_token.unwrap_or_default(),
        }),
        model_port,
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
        transcripts: Transcripts::from_env(),
        ignore_events: IgnoredEvents::new(file.ignore_events.clone().unwrap_or_default()),
        fixture_ignore_events,
        launcher: crate::launcher(),
        boundaries: resolved.loaded.boundaries.clone(),
    };
    Ok(Settings {
        plan,
        partition,
        junit: args.junit.clone(),
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
    keyless_runner::goldens::stem_of(path)
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
    let plan = &settings.plan;
    if plan.fixtures.is_empty() {
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
            plan.fixtures.len()
        ))?;
    }
    let runtime = crate::runtime_for_jobs(plan.jobs)?;
    let started = Instant::now();
    let mut reporters = Reporters::new(
        &plan.fixtures,
        args.json,
        settings.junit.is_some(),
        &plan.golden,
    )
    .max_age(settings.max_age);
    let end = runtime.block_on(async {
        // Ctrl-C or SIGTERM stops the run, and the started gateways with it.
        let signals = crate::Signals::listen()?;
        schedule::run(plan, &mut reporters, signals.stopped())
            .await
            .map_err(|error| match error {
                ScheduleError::Setup(message) => ConfigError(message).into(),
                ScheduleError::Url(_) => anyhow::Error::new(error),
            })
    });
    let too_old = reporters.too_old();
    let cases = reporters.into_cases();
    let passed = match end? {
        RunEnd::Finished { passed } => passed,
        RunEnd::Interrupted => {
            err("keyless: interrupted; the gateways were stopped");
            return Ok(ExitCode::FAILURE);
        }
        RunEnd::Abandoned => return Err(StdoutClosed.into()),
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
            boundaries: Default::default(),
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
