//! `cargo xtask model-server`: an OpenAI-compatible server on 127.0.0.1 that replays at the
//! model's wire, for a gateway in any language that runs in its own process. Point the gateway's
//! OpenAI base URL at it, then drive the gateway with `cargo xtask replay --gateway-url`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use harness::golden::fixtures_dir;
use harness::model_server::{
    CALLER_HEADER, Mode, ModelServer, Problem, RecordConfig, ServerOptions,
};
use harness::record_run::{meta_path_for, redacted_scenario};
use replay_core::{Scenario, UiMode};

use crate::fixtures::print_summary;
use crate::record::write_fixture;

/// Arguments of `model-server`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = 8090)]
    port: u16,
    /// Fixture replay: a fixture to serve (repeatable; default: every fixture in fixtures/). The
    /// first is active; a driver selects another with `POST /_harness/reset {"fixture": "<name>"}`.
    #[arg(long = "fixture", value_name = "FILE", conflicts_with_all = ["recording", "record"])]
    fixtures: Vec<PathBuf>,
    /// Strict replay of a recording made with --record: call by call, each request compared
    /// field by field, the chunks as recorded.
    #[arg(long, value_name = "FILE", conflicts_with = "record")]
    recording: Option<PathBuf>,
    /// Record: proxy every call to --upstream, write the redacted recording, and build the
    /// fixture when stopped (Ctrl-C). The key is read from the environment (--key-env).
    #[arg(long, requires_all = ["upstream", "scenario", "mode", "prompt"])]
    record: bool,
    /// Record: the upstream's OpenAI base URL, e.g. `https://api.openai.com/v1`.
    #[arg(long, value_name = "URL", requires = "record")]
    upstream: Option<String>,
    /// Record: the variable holding the upstream's API key (never written anywhere).
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    key_env: String,
    /// Record: the scenario id the gateway is driven through; the fixture is
    /// `<out>/<scenario>.<mode>.json`.
    #[arg(long, requires = "record")]
    scenario: Option<String>,
    /// Record: the UI mode the driver uses (flash, thinking, pro or ultra).
    #[arg(long, value_parser = ui_mode_parser(), requires = "record")]
    mode: Option<UiMode>,
    /// Record: the prompt the driver sends.
    #[arg(long, requires = "record")]
    prompt: Option<String>,
    /// Record: a later prompt in the same thread (repeatable).
    #[arg(long = "followup", value_name = "TEXT", requires = "record")]
    followups: Vec<String>,
    /// Record: where to write the fixture.
    #[arg(long, default_value_os_t = fixtures_dir())]
    out: PathBuf,
    /// Record: where to write the raw recording (default: `recording.jsonl` in a fresh
    /// temporary folder, printed; a missing folder is created). The scenario metadata goes
    /// beside it.
    #[arg(long, value_name = "FILE")]
    recording_out: Option<PathBuf>,
}

fn ui_mode_parser() -> impl TypedValueParser<Value = UiMode> {
    PossibleValuesParser::new(UiMode::ALL.map(UiMode::as_str))
        .try_map(|name| name.parse::<UiMode>())
}

/// Prints a problem the moment it happens.
fn print_problem(problem: &Problem) {
    eprintln!("model-server: {}: {}\n", problem.kind(), problem.message());
}

fn mode(args: &Args) -> anyhow::Result<Option<(Mode, String)>> {
    if args.record {
        let key = std::env::var(&args.key_env)
            .ok()
            .filter(|key| !key.trim().is_empty());
        let Some(api_key) = key else {
            eprintln!(
                "error: set {} to the upstream's API key to record (--key-env names another variable)",
                args.key_env
            );
            return Ok(None);
        };
        let (Some(upstream), Some(id), Some(ui_mode), Some(prompt)) = (
            args.upstream.clone(),
            args.scenario.clone(),
            args.mode,
            args.prompt.clone(),
        ) else {
            anyhow::bail!("--record needs --upstream, --scenario, --mode and --prompt");
        };
        let recording = match &args.recording_out {
            Some(path) => {
                // On stderr: the first stdout line is the server's address, which scripts read.
                if let Some(created) = crate::record::create_parent(path)? {
                    eprintln!("model-server: created folder {}", created.display());
                }
                path.clone()
            }
            None => tempfile::Builder::new()
                .prefix("model-server-")
                .tempdir()
                .context("cannot create a temporary folder")?
                .keep()
                .join("recording.jsonl"),
        };
        // Redacted as the recording is: a key typed into --prompt reaches no file.
        let scenario = redacted_scenario(&Scenario {
            followups: args.followups.clone(),
            ..Scenario::new(id, ui_mode, prompt)
        });
        let described = format!(
            "recording {} to {} through {upstream}",
            scenario.stem(),
            recording.display()
        );
        let config = RecordConfig {
            upstream,
            api_key: api_key.into(),
            recording,
            scenario,
        };
        return Ok(Some((Mode::Record(Box::new(config)), described)));
    }
    if let Some(recording) = &args.recording {
        let described = format!("strict replay of {}", recording.display());
        return Ok(Some((Mode::Recording(recording.clone()), described)));
    }
    let fixtures = if args.fixtures.is_empty() {
        crate::replay::all_fixtures()?
    } else {
        args.fixtures.clone()
    };
    let names: Vec<String> = fixtures
        .iter()
        .map(|path| harness::golden::stem_of(path))
        .collect();
    let described = format!("fixture replay of {}", names.join(", "));
    Ok(Some((Mode::Fixtures(fixtures), described)))
}

/// Waits for Ctrl-C or SIGTERM.
async fn stopped() -> anyhow::Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("cannot wait for SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("cannot wait for Ctrl-C")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some((mode, described)) = mode(&args)? else {
        return Ok(ExitCode::from(2));
    };
    let recording_scenario = match &mode {
        Mode::Record(config) => Some((config.scenario.clone(), config.recording.clone())),
        _ => None,
    };
    let options = ServerOptions {
        port: args.port,
        on_problem: Some(Arc::new(print_problem)),
    };
    let runtime = crate::runtime()?;
    runtime.block_on(async {
        let server = ModelServer::start(mode, options).await?;
        println!("model server on {} ({described})", server.url());
        println!("OpenAI base URL for the gateway: {}", server.base_url());
        println!(
            "misses: GET {}/_harness/misses; the caller may be named in the {CALLER_HEADER} header; Ctrl-C stops",
            server.url()
        );
        stopped().await?;
        let recorded = server.stop().await?;
        if let (Some(recorded), Some((scenario, recording))) = (recorded, recording_scenario) {
            print_summary(&recorded.summary, &recorded.fixture);
            let meta = meta_path_for(&recording);
            let text = serde_json::to_string_pretty(&recorded.fixture.scenario.to_json())? + "\n";
            std::fs::write(&meta, text)
                .with_context(|| format!("cannot write {}", meta.display()))?;
            let fixture_path = args.out.join(format!("{}.json", scenario.stem()));
            write_fixture(&fixture_path, &recorded.fixture)?;
            println!("raw recording: {}", recording.display());
            println!("scenario metadata: {}", meta.display());
            println!("fixture: {}", fixture_path.display());
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
