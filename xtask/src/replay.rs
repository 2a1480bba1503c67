//! `cargo xtask replay`: the main job. Every fixture through the in-process gateway (or, with
//! `--gateway-url`, through a gateway that runs elsewhere against a model server), compared with
//! its golden, as a table or JSON lines; with `--web`, as the web client drives a chat page,
//! compared with the web golden.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use harness::in_process::{InProcess, options, web_options};
use harness::workspace::fixtures_dir;
use keyless_runner::suite::{
    error_chain, fixture_files, gateway_config_note, json_line, problem_lines, table_header,
    table_line,
};
use keyless_runner::{AtUrl, FIXTURE_TIME_LIMIT, RunOptions, ScenarioRun};
use replay_core::{GoldenStatus, MissingGolden, Verdict};
use serde_json::json;

/// Arguments of `replay`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A fixture to replay (repeatable). Default: every `*.json` in fixtures/. A named fixture
    /// without a golden is reported as `missing` and is not a failure.
    #[arg(long = "fixture", value_name = "FILE")]
    fixtures: Vec<PathBuf>,
    /// Print one JSON object per fixture instead of the table.
    #[arg(long)]
    json: bool,
    /// Drive the gateway already running at this URL instead of booting one in-process. Its
    /// model must point at the model server (`cargo xtask model-server`), which must have the
    /// fixtures loaded; they run one after another.
    #[arg(long, value_name = "URL")]
    gateway_url: Option<String>,
    /// The model server of `--gateway-url`: where the fixture is selected and misses are read.
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:8090",
        requires = "gateway_url"
    )]
    model_server: String,
    /// The model server's reset token, in a file (`cargo xtask model-server --reset-token-file`
    /// writes it) [default: the KEYLESS_RESET_TOKEN variable].
    #[arg(long, value_name = "FILE", requires = "gateway_url")]
    reset_token_file: Option<PathBuf>,
    /// Drive each fixture as DeerFlow's web client drives a chat page (its page requests, the
    /// four-mode run request, suggestions after each run, the reload) and compare with the web
    /// golden (`golden/<stem>.web.snap`) instead of the values-only one. Fails on a request that
    /// is not 2xx, a miss, an unused recorded turn or a changed web golden.
    #[arg(long)]
    web: bool,
    /// How long one fixture's drive may take, in seconds; past it the fixture fails, named.
    #[arg(long, value_name = "SECS", default_value_t = FIXTURE_TIME_LIMIT.as_secs())]
    fixture_time_limit: u64,
}

/// All fixture files in `fixtures/`, sorted.
pub fn all_fixtures() -> anyhow::Result<Vec<PathBuf>> {
    let dir = fixtures_dir();
    fixture_files(&dir).with_context(|| format!("cannot list {}", dir.display()))
}

/// A fixture's `gateway_config` cannot be applied to a gateway that runs elsewhere: say what the
/// gateway must be configured with.
fn warn_about_overrides(path: &std::path::Path) {
    if let Ok(fixture) = replay_core::Fixture::load(path)
        && let Some(note) = gateway_config_note(path, &fixture)
    {
        eprintln!("{note}");
    }
}

/// One fixture in-process, or through the gateway at a URL, as `options` say.
async fn run_one(
    path: &std::path::Path,
    external: Option<AtUrl>,
    options: &RunOptions,
) -> Result<ScenarioRun, keyless_runner::HarnessError> {
    match external {
        Some(mut target) => {
            warn_about_overrides(path);
            keyless_runner::run(&mut target, path, options).await
        }
        None => keyless_runner::run(&mut InProcess::default(), path, options).await,
    }
}

/// A replayed fixture and its verdict.
struct Row {
    run: ScenarioRun,
    verdict: Verdict,
}

/// `--web`: every fixture through the web client's flow, one after another, in-process or at
/// the URL; one line per fixture, the problems after it.
fn run_web(
    files: &[PathBuf],
    external: Option<AtUrl>,
    json_lines: bool,
) -> anyhow::Result<ExitCode> {
    let runtime = crate::runtime()?;
    let mut failed = false;
    if !json_lines {
        println!("{}", table_header());
    }
    for path in files {
        let run = runtime.block_on(run_one(path, external.clone(), &web_options()));
        let run = match run {
            Ok(run) => run,
            Err(err) => {
                failed = true;
                eprintln!("error: replaying {}: {err:#}", path.display());
                continue;
            }
        };
        let golden = run.golden_status();
        let scenario = &run;
        let events = run.event_count();
        if json_lines {
            let line = json!({
                "fixture": path.display().to_string(),
                "scenario": scenario.fixture.scenario.id,
                "mode": scenario.fixture.scenario.mode.as_str(),
                "frames": events,
                "golden_document": run.golden_document(),
                "misses": scenario.misses.len(),
                "unused_turns": run.verdict().unused_turns,
                "golden": golden.as_str(),
                "elapsed_ms": scenario.elapsed.as_millis() as u64,
            });
            println!("{line}");
        } else {
            println!(
                "{:<22} {:<9} {:>6} {:>10} {:>7} {:<8} {:>7}",
                scenario.fixture.scenario.id,
                scenario.fixture.scenario.mode.as_str(),
                events,
                format!("{}/{}", scenario.turns_used(), scenario.fixture.turns.len()),
                scenario.misses.len(),
                golden.as_str(),
                scenario.elapsed.as_millis(),
            );
        }
        if golden != GoldenStatus::Ok {
            failed = true;
        }
        if let Err(report) = run.check() {
            failed = true;
            eprintln!("{}: {report}\n", path.display());
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let named = !args.fixtures.is_empty();
    let files = if named {
        args.fixtures.clone()
    } else {
        all_fixtures()?
    };
    if files.is_empty() {
        anyhow::bail!("no fixtures found in {}", fixtures_dir().display());
    }
    let external = match &args.gateway_url {
        Some(url) => {
            let token = keyless::model_server::read_reset_token(args.reset_token_file.as_deref())?;
            Some(AtUrl::new(url, &args.model_server)?.with_reset_token(&token.unwrap_or_default()))
        }
        None => None,
    };
    if args.web {
        return run_web(&files, external, args.json);
    }
    let runtime = crate::runtime()?;
    // One model server serves one fixture at a time, so an external gateway runs them in turn.
    let parallel = if external.is_some() { 1 } else { 4 };
    let external = &external;
    let options = &options().time_limit(std::time::Duration::from_secs(args.fixture_time_limit));
    let results: Vec<anyhow::Result<Row>> = runtime.block_on(async {
        futures::stream::iter(files.iter().cloned())
            .map(|path| async move {
                let run = run_one(&path, external.clone(), options)
                    .await
                    .with_context(|| format!("replaying {}", path.display()))?;
                let verdict = run.verdict();
                Ok(Row { run, verdict })
            })
            .buffered(parallel)
            .collect()
            .await
    });
    // A fixture named on the command line may be new: its golden is made after this run.
    let missing_golden = if named {
        MissingGolden::Allowed
    } else {
        MissingGolden::Fails
    };
    let mut failed = false;
    if !args.json {
        println!("{}", table_header());
    }
    for result in results {
        let row = match result {
            Ok(row) => row,
            Err(err) => {
                failed = true;
                eprintln!("error: {}", error_chain(err.as_ref()));
                continue;
            }
        };
        let (run, verdict) = (&row.run, &row.verdict);
        if !verdict.passes(missing_golden) {
            failed = true;
        }
        if args.json {
            println!("{}", json_line(run, verdict));
        } else {
            println!("{}", table_line(run, verdict));
        }
        for problem in problem_lines(run, verdict) {
            eprintln!("{problem}");
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
