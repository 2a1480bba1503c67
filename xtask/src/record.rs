//! `cargo xtask record` and `cargo xtask build-fixture`: a real model run recorded once, on a
//! machine with a key, and turned into a fixture.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use harness::adapter::Extensions;
use harness::adapter::hermetic::{DEFAULT_RECORD_MODEL, ModelBlock};
use harness::record_run::record_scenario;
use harness::workspace::fixtures_dir;
use replay_core::recording::{Access, read_recording};
use replay_core::{Fixture, Scenario, TurnSummary, UiMode, build_fixture};

/// Arguments of `record`.
#[derive(Debug, clap::Args)]
pub struct RecordArgs {
    /// Scenario id, e.g. `write_read_file`; the fixture is `<out>/<scenario>.<mode>.json`.
    #[arg(long)]
    scenario: String,
    /// UI mode: flash, thinking, pro or ultra (sets the run context's flags).
    #[arg(long, value_parser = ui_mode_parser())]
    mode: UiMode,
    /// The prompt, sent verbatim.
    #[arg(long)]
    prompt: String,
    /// A later prompt in the same thread (repeatable).
    #[arg(long = "followup", value_name = "TEXT")]
    followups: Vec<String>,
    /// Where to write the fixture.
    #[arg(long, default_value_os_t = fixtures_dir())]
    out: PathBuf,
    /// Where to write the raw recording (default: `recording.jsonl` in a fresh temporary folder,
    /// printed). The scenario metadata goes beside it as `<file>.meta.json`.
    #[arg(long)]
    recording_out: Option<PathBuf>,
}

/// Arguments of `build-fixture`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The versioned JSONL recording (mode 0600).
    #[arg(long)]
    recording: PathBuf,
    /// The scenario metadata written beside it (`<recording>.meta.json`).
    #[arg(long)]
    meta: PathBuf,
    /// The fixture to write.
    #[arg(long)]
    out: PathBuf,
    /// The recorded model's name, when the metadata has none.
    #[arg(long, default_value = DEFAULT_RECORD_MODEL)]
    model: String,
}

/// The `--mode` parser: the names of [`UiMode::ALL`], so the list exists once.
fn ui_mode_parser() -> impl TypedValueParser<Value = UiMode> {
    PossibleValuesParser::new(UiMode::ALL.map(UiMode::as_str))
        .try_map(|name| name.parse::<UiMode>())
}

fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|value| !value.is_empty() && value != "false" && value != "0")
}

fn required(name: &str) -> Option<String> {
    std::env::var(name)
        .ok()
        .filter(|value| !value.trim().is_empty())
}

/// Prints one line per recorded call: caller, key prefix, tool calls (DeerFlow's builder does).
/// One line per recorded call, then each of the builder's warnings about the fixture on stderr
/// (turns that share a key but answer differently, which a replay reports as ambiguous).
pub fn print_summary(summary: &[TurnSummary], fixture: &Fixture) {
    for line in keyless_runner::recordings::summary_lines(summary) {
        println!("{line}");
    }
    for warning in keyless_runner::recordings::warning_lines(fixture) {
        eprintln!("{warning}");
    }
}

/// Writes `fixture` to `path` (creating its folder) atomically, so a failure leaves no
/// half-written fixture.
pub fn write_fixture(path: &Path, fixture: &Fixture) -> anyhow::Result<()> {
    Ok(keyless_runner::recordings::write_fixture(path, fixture)?)
}

pub fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    if in_ci() {
        eprintln!(
            "error: cargo xtask record needs a real model and key and never runs in CI (CI is set)"
        );
        return Ok(ExitCode::from(2));
    }
    let (Some(api_key), Some(base_url)) = (required("OPENAI_API_KEY"), required("OPENAI_API_BASE"))
    else {
        let missing: Vec<&str> = ["OPENAI_API_KEY", "OPENAI_API_BASE"]
            .into_iter()
            .filter(|name| required(name).is_none())
            .collect();
        eprintln!(
            "error: set {} to record (OPENAI_API_BASE is the OpenAI-compatible endpoint, e.g. https://api.openai.com/v1; RECORD_MODEL picks the model, default {DEFAULT_RECORD_MODEL})",
            missing.join(" and ")
        );
        return Ok(ExitCode::from(2));
    };
    let model = required("RECORD_MODEL").unwrap_or_else(|| DEFAULT_RECORD_MODEL.to_string());
    let recording_path = match args.recording_out {
        Some(path) => {
            if let Some(created) = create_parent(&path)? {
                println!("created folder {}", created.display());
            }
            path
        }
        None => tempfile::Builder::new()
            .prefix("record-gw-")
            .tempdir()
            .context("cannot create a temporary folder")?
            .keep()
            .join("recording.jsonl"),
    };
    println!(
        "recording {} ({}) with model {model}",
        args.scenario, args.mode
    );
    println!("raw recording: {}", recording_path.display());
    let scenario = Scenario {
        model: model.clone(),
        followups: args.followups,
        ..Scenario::new(args.scenario, args.mode, args.prompt)
    };
    let block = ModelBlock::Record {
        model: model.clone(),
        api_key: api_key.into(),
        base_url,
    };
    let runtime = crate::runtime()?;
    let recorded = runtime.block_on(async {
        let work = record_scenario(&scenario, block, &recording_path, Extensions::default());
        tokio::pin!(work);
        let started = Instant::now();
        let mut ticker = tokio::time::interval(Duration::from_secs(2));
        ticker.tick().await;
        loop {
            tokio::select! {
                result = &mut work => break result,
                _ = ticker.tick() => eprintln!("  … the model is working ({} s)", started.elapsed().as_secs()),
            }
        }
    })?;
    print_summary(&recorded.summary, &recorded.fixture);
    let fixture_path = args.out.join(format!("{}.json", scenario.stem()));
    write_fixture(&fixture_path, &recorded.fixture)?;
    println!("scenario metadata: {}", recorded.meta_path.display());
    println!("fixture: {}", fixture_path.display());
    println!(
        "next: cargo test -p harness --test golden, then cargo insta review to accept its golden"
    );
    Ok(ExitCode::SUCCESS)
}

pub fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let recording = read_recording(&args.recording, Access::External)?;
    let scenario = Scenario::load(&args.meta, &args.model)?;
    let (fixture, summary) = build_fixture(&recording, &scenario)?;
    print_summary(&summary, &fixture);
    write_fixture(&args.out, &fixture)?;
    println!(
        "wrote {} ({} turns)",
        args.out.display(),
        fixture.turns.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// Creates the folder a `--recording-out` file goes into when it does not exist yet (the
/// recording writer would otherwise fail on its lock file) and returns it, so the caller says so.
pub(crate) fn create_parent(path: &std::path::Path) -> anyhow::Result<Option<PathBuf>> {
    Ok(keyless_runner::recordings::create_parent(path)?)
}
