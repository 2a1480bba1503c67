//! `cargo xtask replay`: the main job. Every fixture through the in-process gateway (or, with
//! `--gateway-url`, through a gateway that runs elsewhere against a model server), compared with
//! its golden, as a table or JSON lines.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use futures::StreamExt;
use harness::golden::fixtures_dir;
use harness::layer1::{ScenarioRun, run_fixture, run_fixture_on};
use harness::target::AtUrl;
use keyless_runner::suite::{
    error_chain, fixture_files, gateway_config_note, json_line, problem_lines, table_header,
    table_line,
};
use replay_core::{MissingGolden, Verdict};

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

/// One fixture in-process, or through the gateway at a URL.
async fn run_one(
    path: &std::path::Path,
    external: Option<AtUrl>,
) -> Result<ScenarioRun, harness::layer1::HarnessError> {
    match external {
        Some(mut target) => {
            warn_about_overrides(path);
            run_fixture_on(&mut target, path).await
        }
        None => run_fixture(path).await,
    }
}

/// A replayed fixture and its verdict.
struct Row {
    run: ScenarioRun,
    verdict: Verdict,
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
    let runtime = crate::runtime()?;
    let external = match &args.gateway_url {
        Some(url) => Some(AtUrl::new(url, &args.model_server)?),
        None => None,
    };
    // One model server serves one fixture at a time, so an external gateway runs them in turn.
    let parallel = if external.is_some() { 1 } else { 4 };
    let external = &external;
    let results: Vec<anyhow::Result<Row>> = runtime.block_on(async {
        futures::stream::iter(files.iter().cloned())
            .map(|path| async move {
                let run = run_one(&path, external.clone())
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
