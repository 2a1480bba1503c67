//! `keyless model-server` (and `cargo xtask model-server`, which runs this code): an
//! OpenAI-compatible server on 127.0.0.1 that replays at the model's wire, for a gateway you
//! start yourself. Point the gateway's OpenAI base URL at it, then run
//! `keyless test --gateway-url URL --model-server URL`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::{PossibleValuesParser, TypedValueParser};
use keyless_runner::golden::stem_of;
use keyless_runner::model_server::{
    AwsCredentials, CALLER_HEADER, Mode, ModelServer, Problem, RecordConfig, RecordedFixture,
    ServerOptions,
};
use keyless_runner::recorded::{
    create_parent, redacted_scenario, summary_lines, warning_lines, write_fixture, write_meta,
};
use keyless_runner::suite::fixture_files;
use replay_core::{Scenario, UiMode};

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT};

/// Arguments of `model-server`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  keyless model-server                                  # every fixture in fixtures/, port 8090
  keyless model-server --port 0 --fixture fixtures/write_read_file.flash.json
  OPENAI_API_KEY=… keyless model-server --record --upstream https://api.openai.com/v1 \\
      --scenario hello --mode flash --prompt 'Say hello'   # then drive your gateway; Ctrl-C builds the fixture
  ANTHROPIC_API_KEY=… keyless model-server --record --upstream https://api.anthropic.com/v1 \\
      --key-env ANTHROPIC_API_KEY --scenario hello --mode flash --prompt 'Say hello'
  GEMINI_API_KEY=… keyless model-server --record \\
      --upstream https://generativelanguage.googleapis.com/v1beta --key-env GEMINI_API_KEY …
  AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… AWS_REGION=us-east-1 keyless model-server --record \\
      --upstream https://bedrock-runtime.us-east-1.amazonaws.com …   # SigV4-signed")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    /// The port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = DEFAULT_MODEL_PORT)]
    pub port: u16,
    /// Fixture replay: a fixture to serve (repeatable; default: every fixture in the fixture
    /// folder). The first is active; a driver selects another with
    /// `POST /_harness/reset {"fixture": "<name>"}`. Two fixtures with one name are an error.
    #[arg(long = "fixture", value_name = "FILE", conflicts_with_all = ["recording", "record"])]
    pub fixture_files: Vec<PathBuf>,
    /// Strict replay of a recording made with --record: call by call, each request compared
    /// field by field, the chunks as recorded.
    #[arg(long, value_name = "FILE", conflicts_with = "record")]
    pub recording: Option<PathBuf>,
    /// Record: proxy every call to --upstream, write the redacted recording, and build the
    /// fixture when stopped (Ctrl-C). The key is read from the environment (--key-env).
    #[arg(long, requires_all = ["upstream", "scenario", "mode", "prompt"])]
    pub record: bool,
    /// Record: the upstream's base URL, e.g. `https://api.openai.com/v1` (Chat Completions and
    /// Responses), `https://api.anthropic.com/v1` (Messages, with `--key-env
    /// ANTHROPIC_API_KEY`), `https://generativelanguage.googleapis.com/v1beta` (Gemini, with
    /// `--key-env GEMINI_API_KEY`) or `https://bedrock-runtime.<region>.amazonaws.com` (Bedrock
    /// Converse, signed with SigV4 from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_SESSION_TOKEN` and `AWS_REGION`); each call goes to the route the gateway called
    /// under it.
    #[arg(long, value_name = "URL", requires = "record")]
    pub upstream: Option<String>,
    /// Record: the variable holding the upstream's API key (never written anywhere).
    #[arg(long, value_name = "NAME", default_value = "OPENAI_API_KEY")]
    pub key_env: String,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Record: where to write the fixture [default: the fixture folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Record: where to write the raw recording (default: `recording.jsonl` in a fresh
    /// temporary folder, printed; a missing folder is created). The scenario metadata goes
    /// beside it.
    #[arg(long, value_name = "FILE")]
    pub recording_out: Option<PathBuf>,
}

/// The scenario a recording drives (shared by `record` and `model-server --record`).
#[derive(Debug, Clone, clap::Args)]
pub struct ScenarioArgs {
    /// The scenario id; the fixture is `<fixtures>/<scenario>.<mode>.json`.
    #[arg(long)]
    pub scenario: Option<String>,
    /// The UI mode the driver uses (flash, thinking, pro or ultra).
    #[arg(long, value_parser = ui_mode_parser())]
    pub mode: Option<UiMode>,
    /// The prompt the driver sends.
    #[arg(long)]
    pub prompt: Option<String>,
    /// A later prompt in the same thread (repeatable).
    #[arg(long = "followup", value_name = "TEXT")]
    pub followups: Vec<String>,
}

impl ScenarioArgs {
    /// The scenario, or the error naming the missing flags.
    pub fn scenario(&self) -> Result<Scenario, ConfigError> {
        let (Some(id), Some(mode), Some(prompt)) =
            (self.scenario.clone(), self.mode, self.prompt.clone())
        else {
            return Err(ConfigError(
                "recording needs --scenario, --mode and --prompt".into(),
            ));
        };
        // Redacted as the recording is: a key typed into --prompt reaches no file.
        Ok(redacted_scenario(&Scenario {
            followups: self.followups.clone(),
            ..Scenario::new(id, mode, prompt)
        }))
    }
}

/// The `--mode` parser: the names of [`UiMode::ALL`], so the list exists once.
pub fn ui_mode_parser() -> impl TypedValueParser<Value = UiMode> {
    PossibleValuesParser::new(UiMode::ALL.map(UiMode::as_str))
        .try_map(|name| name.parse::<UiMode>())
}

/// Prints a problem the moment it happens.
fn print_problem(problem: &Problem) {
    eprintln!("model-server: {}: {}\n", problem.kind(), problem.message());
}

/// The API key from the variable `key_env` names, or the error that says to set it.
pub fn api_key(key_env: &str) -> Result<String, ConfigError> {
    std::env::var(key_env)
        .ok()
        .filter(|key| !key.trim().is_empty())
        .ok_or_else(|| {
            ConfigError(format!(
                "set {key_env} to the upstream's API key to record (--key-env names another variable)"
            ))
        })
}

/// The raw recording's path: `out`, its folder created, or a fresh temporary one.
pub fn recording_path(out: Option<&PathBuf>) -> anyhow::Result<PathBuf> {
    match out {
        Some(path) => {
            // On stderr: the first stdout line is the server's address, which scripts read.
            if let Some(created) = create_parent(path)? {
                eprintln!("created folder {}", created.display());
            }
            Ok(path.clone())
        }
        None => Ok(tempfile::Builder::new()
            .prefix("keyless-record-")
            .tempdir()
            .context("cannot create a temporary folder")?
            .keep()
            .join("recording.jsonl")),
    }
}

/// Writes what a recording session produced: the scenario metadata beside the recording and
/// the fixture into `fixtures`; prints a line per call and the paths.
pub fn save_recorded(
    recorded: &RecordedFixture,
    recording: &std::path::Path,
    fixtures: &std::path::Path,
) -> anyhow::Result<PathBuf> {
    for line in summary_lines(&recorded.summary) {
        println!("{line}");
    }
    for warning in warning_lines(&recorded.fixture) {
        eprintln!("{warning}");
    }
    let meta = write_meta(recording, &recorded.fixture)?;
    let fixture_path = fixtures.join(format!("{}.json", recorded.fixture.scenario.stem()));
    write_fixture(&fixture_path, &recorded.fixture)?;
    println!("raw recording: {}", recording.display());
    println!("scenario metadata: {}", meta.display());
    println!("fixture: {}", fixture_path.display());
    Ok(fixture_path)
}

fn mode(args: &Args, fixtures: &std::path::Path) -> anyhow::Result<(Mode, String)> {
    if args.record {
        let aws = AwsCredentials::from_vars(|name| std::env::var(name).ok());
        // A Bedrock-only recording signs with the AWS credentials and needs no API key.
        let api_key = match api_key(&args.key_env) {
            Err(_) if aws.is_some() => String::new(),
            key => key?,
        };
        let upstream = args
            .upstream
            .clone()
            .ok_or_else(|| ConfigError("--record needs --upstream".into()))?;
        let scenario = args.scenario.scenario()?;
        let recording = recording_path(args.recording_out.as_ref())?;
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
            aws,
        };
        return Ok((Mode::Record(Box::new(config)), described));
    }
    if let Some(recording) = &args.recording {
        let described = format!("strict replay of {}", recording.display());
        return Ok((Mode::Recording(recording.clone()), described));
    }
    let files = if args.fixture_files.is_empty() {
        fixture_files(fixtures).map_err(|err| {
            ConfigError(format!(
                "cannot list the fixture folder {}: {err}",
                fixtures.display()
            ))
        })?
    } else {
        args.fixture_files.clone()
    };
    let names: Vec<String> = files.iter().map(|path| stem_of(path)).collect();
    let described = format!("fixture replay of {}", names.join(", "));
    Ok((Mode::Fixtures(files), described))
}

/// Runs `model-server` until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let fixtures = args.folders.resolve()?.fixtures;
    let (mode, described) = mode(&args, &fixtures)?;
    let recording = match &mode {
        Mode::Record(config) => Some(config.recording.clone()),
        _ => None,
    };
    let options = ServerOptions {
        port: args.port,
        on_problem: Some(Arc::new(print_problem)),
    };
    crate::runtime()?.block_on(async {
        let server = ModelServer::start(mode, options)
            .await
            .map_err(|err| ConfigError(keyless_runner::suite::error_chain(&err)))?;
        println!("model server on {} ({described})", server.url());
        println!("OpenAI base URL for the gateway: {}", server.base_url());
        println!(
            "misses: GET {}/_harness/misses; the caller may be named in the {CALLER_HEADER} header; Ctrl-C stops",
            server.url()
        );
        crate::stopped().await?;
        let recorded = server.stop().await?;
        if let (Some(recorded), Some(recording)) = (recorded, recording) {
            save_recorded(&recorded, &recording, args.out.as_ref().unwrap_or(&fixtures))?;
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
