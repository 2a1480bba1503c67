//! `keyless model-server` (and `cargo xtask model-server`, which runs this code): an
//! OpenAI-compatible server on 127.0.0.1 that replays at the model's wire, for a gateway you
//! start yourself. Point the gateway's OpenAI base URL at it, then run
//! `keyless test --gateway-url URL --model-server URL`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::TypedValueParser;
use keyless_runner::goldens::stem_of;
use keyless_runner::recordings::redacted_scenario;
use keyless_runner::suite::fixture_files;
use keyless_runner::{
    Mode, ModelServer, Problem, ServerOptions,
    server::{
        AwsCredentials, CALLER_HEADER, DEFAULT_CALL_TIME_LIMIT, DEFAULT_RECORDING_MAX_BYTES,
        RESET_TOKEN_HEADER, RecordConfig, RecordLimits,
    },
};
use replay_core::Scenario;

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT};
use crate::output::{err, out};
use crate::recorded::{Keeping, Plan};

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
      --upstream https://bedrock-runtime.us-east-1.amazonaws.com …   # SigV4-signed

Record mode refuses an existing fixture without --force, and builds none when a call never got an
HTTP answer from the upstream (exit 1, the raw recording kept; --keep-transport-errors records
such failures anyway).")]
pub struct Args {
    /// Serve the fault scenario FILE (`<scenario>.<mode>@<fault>.faults.toml`, issue 42): its
    /// base fixture, active first, with its faults applied (`keyless model-server --faults
    /// fixtures/write_read_file.flash@rate-limit.faults.toml`).
    #[arg(long, value_name = "FILE")]
    pub faults: Option<PathBuf>,
    #[command(flatten)]
    pub folders: Folders,
    /// The port on 127.0.0.1 (0 picks a free one; the address is printed).
    #[arg(long, default_value_t = DEFAULT_MODEL_PORT)]
    pub port: u16,
    /// Fixture replay: a fixture to serve (repeatable; default: every fixture in the fixture
    /// folder). The first is active; a driver selects another with
    /// `POST /_keyless/reset {"fixture": "<name>"}`. Two fixtures with one name are an error.
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
    #[command(flatten)]
    pub bounds: RecordBounds,
    /// Record: where to write the fixture [default: the fixture folder].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub keeping: Keeping,
    /// Also write the reset token (printed at start; `POST /_keyless/reset` needs it in the
    /// `x-keyless-reset-token` header) to this file, mode 0600, replacing what is there. Give
    /// it to `keyless test --reset-token-file`, never to the gateway.
    #[arg(long, value_name = "FILE")]
    pub reset_token_file: Option<PathBuf>,
}

/// A recording's bounds and the upstreams it accepts (shared by `record` and `model-server
/// --record`).
#[derive(Debug, Clone, clap::Args)]
pub struct RecordBounds {
    /// Record: accept a plain http:// upstream on another machine, where the API key crosses
    /// the network in clear (refused otherwise; http:// to 127.0.0.1 or localhost is fine).
    #[arg(long)]
    pub allow_insecure_upstream: bool,
    /// Record: the most bytes of events one recording takes; past it the call is cut and the
    /// run has a recording_limit problem.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_RECORDING_MAX_BYTES)]
    pub record_max_bytes: u64,
    /// Record: the longest one call may take, in seconds; past it the call is cut as a timeout
    /// and the run has a recording_limit problem.
    #[arg(long, value_name = "SECS", default_value_t = DEFAULT_CALL_TIME_LIMIT.as_secs())]
    pub record_call_time_limit_secs: u64,
}

impl RecordBounds {
    /// The limits.
    pub fn limits(&self) -> RecordLimits {
        RecordLimits {
            max_bytes: self.record_max_bytes,
            call_time_limit: std::time::Duration::from_secs(self.record_call_time_limit_secs),
        }
    }
}

/// The scenario a recording drives (shared by `record` and `model-server --record`).
#[derive(Debug, Clone, clap::Args)]
pub struct ScenarioArgs {
    /// The scenario id; the fixture is `<fixtures>/<scenario>.<mode>.json`.
    #[arg(long)]
    pub scenario: Option<String>,
    /// The mode: one of DeerFlow's UI modes (flash, thinking, pro or ultra) the driver uses with
    /// --api deerflow, else a label naming the fixture (e.g. chat).
    #[arg(long, value_parser = mode_parser())]
    pub mode: Option<replay_core::Mode>,
    /// The prompt the driver sends.
    #[arg(long)]
    pub prompt: Option<String>,
    /// A later prompt in the same thread (repeatable).
    #[arg(long = "followup", value_name = "TEXT")]
    pub followups: Vec<String>,
}

impl ScenarioArgs {
    /// The scenario of a run whose prompts are not known yet (`keyless record --serve`: the
    /// browser's, filled in from the recording), or the error naming the missing flags.
    pub fn scenario_without_prompt(&self) -> Result<Scenario, ConfigError> {
        let (Some(id), Some(mode)) = (self.scenario.clone(), self.mode.clone()) else {
            return Err(ConfigError("recording needs --scenario and --mode".into()));
        };
        replay_core::check_scenario_id(&id)
            .map_err(|err| ConfigError(format!("--scenario: {err}")))?;
        Ok(Scenario::new(id, mode, ""))
    }

    /// The scenario, or the error naming the missing flags.
    pub fn scenario(&self) -> Result<Scenario, ConfigError> {
        let (Some(id), Some(mode), Some(prompt)) = (
            self.scenario.clone(),
            self.mode.clone(),
            self.prompt.clone(),
        ) else {
            return Err(ConfigError(
                "recording needs --scenario, --mode and --prompt".into(),
            ));
        };
        // The id names the fixture file: nothing outside the fixture folder (finding 18).
        replay_core::check_scenario_id(&id)
            .map_err(|err| ConfigError(format!("--scenario: {err}")))?;
        // Redacted as the recording is: a key typed into --prompt reaches no file.
        Ok(redacted_scenario(&Scenario {
            followups: self.followups.clone(),
            ..Scenario::new(id, mode, prompt)
        }))
    }
}

/// The `--mode` parser: a UI mode, else a label ([`replay_core::Mode`]'s rules).
pub fn mode_parser() -> impl TypedValueParser<Value = replay_core::Mode> {
    clap::builder::NonEmptyStringValueParser::new()
        .try_map(|name| name.parse::<replay_core::Mode>())
}

/// Prints a problem the moment it happens.
fn print_problem(problem: &Problem) {
    err(format!(
        "model-server: {}: {}\n",
        problem.kind(),
        problem.message()
    ));
}

/// The API key from the variable `key_env` names, or the error that says to set it.
pub fn api_key_from_env(key_env: &str) -> Result<String, ConfigError> {
    std::env::var(key_env)
        .ok()
        .filter(|key| !key.trim().is_empty())
        .ok_or_else(|| {
            ConfigError(format!(
                "set {key_env} to the upstream's API key to record (--key-env names another variable)"
            ))
        })
}

/// The mode to serve, how to describe it, and in record mode where its files go.
fn mode(args: &Args, resolved: &crate::Resolved) -> anyhow::Result<(Mode, String, Option<Plan>)> {
    let fixtures = &resolved.fixtures;
    if args.record {
        let aws = aws_credentials_from_env();
        // A Bedrock-only recording signs with the AWS credentials and needs no API key.
        let api_key = match api_key_from_env(&args.key_env) {
            Err(_) if aws.is_some() => String::new(),
            key => key?,
        };
        let upstream = args
            .upstream
            .clone()
            .ok_or_else(|| ConfigError("--record needs --upstream".into()))?;
        let scenario = args.scenario.scenario()?;
        let plan = args.keeping.plan(
            &resolved.loaded.base,
            args.out.as_ref().unwrap_or(fixtures),
            &scenario.stem(),
            &upstream,
        )?;
        let described = format!(
            "recording {} to {} through {upstream}",
            scenario.stem(),
            plan.recording.display()
        );
        let config = RecordConfig {
            upstream,
            api_key: api_key.into(),
            recording: plan.recording.clone(),
            scenario,
            allow_insecure_upstream: args.bounds.allow_insecure_upstream,
            limits: args.bounds.limits(),
            aws,
        };
        return Ok((Mode::Record(Box::new(config)), described, Some(plan)));
    }
    if let Some(recording) = &args.recording {
        let described = format!("strict replay of {}", recording.display());
        return Ok((Mode::Recording(recording.clone()), described, None));
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
    Ok((Mode::Fixtures(files), described, None))
}

/// Writes the reset token to `path`, mode 0600: whatever was there (a file, a link) is removed
/// first and the file is created anew, so no link is followed.
pub fn write_reset_token(path: &std::path::Path, token: &str) -> anyhow::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => {
            return Err(err).with_context(|| format!("cannot replace {}", path.display()));
        }
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("cannot create the reset token file {}", path.display()))?;
    writeln!(file, "{token}")
        .with_context(|| format!("cannot write the reset token file {}", path.display()))
}

/// The reset token of a model server this command did not start: the file `--reset-token-file`
/// names, else the variable `KEYLESS_RESET_TOKEN`, else none (a reset is then refused, and the
/// error says how to give the token).
pub fn read_reset_token(file: Option<&std::path::Path>) -> Result<Option<String>, ConfigError> {
    if let Some(file) = file {
        let token = std::fs::read_to_string(file).map_err(|err| {
            ConfigError(format!(
                "cannot read the reset token file {}: {err}",
                file.display()
            ))
        })?;
        let token = token.trim();
        if token.is_empty() {
            return Err(ConfigError(format!(
                "the reset token file {} is empty",
                file.display()
            )));
        }
        return Ok(Some(token.to_owned()));
    }
    Ok(reset_token_from_env())
}

/// `KEYLESS_RESET_TOKEN`, trimmed, when set and not empty.
fn reset_token_from_env() -> Option<String> {
    std::env::var(keyless_runner::process::RESET_TOKEN_VAR)
        .ok()
        .map(|token| token.trim().to_owned())
        .filter(|token| !token.is_empty())
}

/// The AWS credentials of the standard variables, for recording Bedrock calls.
pub fn aws_credentials_from_env() -> Option<AwsCredentials> {
    AwsCredentials::from_vars(|name| std::env::var(name).ok())
}

/// Runs `model-server` until Ctrl-C or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let resolved = args.folders.resolve()?;
    let (mode, described, plan) = mode(&args, &resolved)?;
    let mut faults = Vec::new();
    let mode = match (&args.faults, mode) {
        (None, mode) => mode,
        (Some(file), Mode::Fixtures(mut paths)) => {
            let fault_plan = keyless_runner::faults::FaultPlan::load(file)
                .map_err(|err| ConfigError(keyless_runner::suite::error_chain(&err)))?;
            faults.push((keyless_runner::goldens::stem_of(file), fault_plan));
            paths.insert(0, file.clone());
            Mode::Fixtures(paths)
        }
        (Some(_), _) => {
            return Err(ConfigError(
                "--faults applies to fixture replay only (not --recording or --record)".into(),
            )
            .into());
        }
    };
    let options = ServerOptions {
        port: args.port,
        on_problem: Some(Arc::new(print_problem)),
        faults,
        boundaries: resolved.loaded.boundaries.clone(),
        ..ServerOptions::default()
    };
    crate::runtime()?.block_on(async {
        let signals = crate::Signals::listen()?;
        let server = ModelServer::start(mode, options).await.map_err(|err| {
            if let Some(plan) = &plan {
                plan.abandon();
            }
            ConfigError(keyless_runner::suite::error_chain(&err))
        })?;
        // A closed stdout after the address (`| head -1`) leaves the server serving.
        // The token is written before it is printed, so a script that read the line finds the
        // file.
        if let Some(file) = &args.reset_token_file {
            write_reset_token(file, server.reset_token())?;
        }
        let _ = out(format!("model server on {} ({described})", server.url()))
            .and_then(|()| out(format!("OpenAI base URL for the gateway: {}", server.base_url())))
            .and_then(|()| {
                out(format!(
                    "misses: GET {}/_keyless/misses; the caller may be named in the {CALLER_HEADER} header; Ctrl-C stops",
                    server.url()
                ))
            })
            // The driver's alone: POST /_keyless/reset needs it, so the gateway cannot clear the
            // ledger of a run in progress.
            .and_then(|()| {
                out(format!(
                    "reset token ({RESET_TOKEN_HEADER} header of POST /_keyless/reset; keyless test \
                     --reset-token-file or {}): {}",
                    keyless_runner::process::RESET_TOKEN_VAR,
                    server.reset_token()
                ))
            })
            .and_then(|()| match &resolved.loaded.boundaries.proxy {
                // The gateway is started by hand here: it needs these to use the proxy mode.
                Some(proxy) => out(format!(
                    "forward proxy for [proxy] hosts ({}); the gateway's environment: {}",
                    proxy.hosts.keys().cloned().collect::<Vec<_>>().join(", "),
                    (proxy.env(&server.url()).iter())
                        .map(|(name, value)| format!("{name}={value}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )),
                None => Ok(()),
            });
        signals.stopped().await;
        let recorded = server.stop().await?;
        if let (Some(recorded), Some(plan)) = (recorded, plan) {
            plan.save(&recorded)?;
        }
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
