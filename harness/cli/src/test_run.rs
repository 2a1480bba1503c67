//! `keyless test`: every fixture through the gateway, compared with its golden. For each fixture
//! the model server (started in this process on 127.0.0.1, or one already running) is reset to
//! it, the gateway command is started and waited for (or the running gateway at `--gateway-url`
//! is used), the API is driven, the gateway is stopped and the run is judged. A missing or
//! changed golden is written as `<name>.snap.new` for `keyless accept` / `keyless review`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use keyless_runner::driver::DriveOptions;
use keyless_runner::launched::Launched;
use keyless_runner::layer1::{HarnessError, ScenarioRun, run_on_with};
use keyless_runner::model_server::{Mode, ModelServer, ServerOptions};
use keyless_runner::pending::{pending_path, write_pending};
use keyless_runner::suite::{
    error_chain, fixture_files, gateway_config_note, json_line, problem_lines, table_header,
    table_line,
};
use keyless_runner::target::{AtUrl, GatewayTarget};
use replay_core::{Fixture, GoldenStatus, MissingGolden};
use serde_json::json;

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT, FileConfig};
use crate::gateway::{Gateway, GatewayArgs};

/// Arguments of `test`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  keyless test                                    # as keyless.toml says
  keyless test --gateway-cmd 'python app.py --port {port}' --ready /health
  keyless test --gateway-url http://127.0.0.1:8000 --model-port 8090
  keyless test write_read_file.flash --json       # one fixture, JSON lines

Exit status: 0 every fixture passed; 1 a fixture missed, broke its framing, or has a changed or
missing golden (written as <name>.snap.new: see keyless review); 2 a usage or configuration error.")]
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
    if !args.names.is_empty() {
        let stems: Vec<String> = fixtures.iter().map(|path| stem(path)).collect();
        if let Some(unknown) = args.names.iter().find(|name| !stems.contains(name)) {
            return Err(ConfigError(format!(
                "no fixture {unknown:?} in {} (fixtures: {})",
                resolved.fixtures.display(),
                stems.join(", ")
            )));
        }
        fixtures.retain(|path| args.names.contains(&stem(path)));
    }
    let default_port = match gateway {
        Gateway::Command(_) => 0,
        Gateway::Url(_) => DEFAULT_MODEL_PORT,
    };
    Ok(Settings {
        fixtures,
        golden: resolved.golden,
        gateway,
        drive,
        model_server: args
            .model_server
            .clone()
            .or_else(|| file.model_server.clone()),
        model_port: args.model_port.or(file.model_port).unwrap_or(default_port),
    })
}

fn stem(path: &Path) -> String {
    keyless_runner::golden::stem_of(path)
}

/// The target the fixtures run through.
enum Target {
    /// Boxed: a launched gateway's state is several times an `AtUrl`'s.
    Launched(Box<Launched>),
    AtUrl(AtUrl),
}

impl Target {
    fn as_dyn(&mut self) -> &mut dyn GatewayTarget {
        match self {
            Target::Launched(launched) => launched.as_mut(),
            Target::AtUrl(at_url) => at_url,
        }
    }

    /// The started gateway's log of the last fixture.
    fn log(&self) -> Option<&Path> {
        match self {
            Target::Launched(launched) => launched.log(),
            Target::AtUrl(_) => None,
        }
    }
}

/// One fixture's outcome.
struct Outcome {
    passed: bool,
    json: serde_json::Value,
}

/// Judges a finished run: the table line or JSON object, the problems and where to look, the
/// pending golden written when the golden is missing or changed.
fn judge(run: &ScenarioRun, golden: &Path, log: Option<&Path>, as_json: bool) -> Outcome {
    let verdict = run.verdict();
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
                Err(err) => eprintln!("keyless: {err}"),
            }
        }
        GoldenStatus::Ok => {
            let _ = std::fs::remove_file(pending_path(golden, &run.stem()));
        }
        GoldenStatus::Missing | GoldenStatus::Changed => {}
    }
    let mut line = json_line(run, &verdict);
    line["pending_golden"] = json!(pending.as_ref().map(|p| p.display().to_string()));
    line["gateway_log"] = json!(log.map(|p| p.display().to_string()));
    if !as_json {
        println!("{}", table_line(run, &verdict));
    }
    if !passed {
        if verdict.replayed_cleanly() {
            for problem in problem_lines(run, &verdict) {
                eprintln!("{problem}");
            }
        } else {
            // The report says every problem, each miss with its diagnostic, and the transcripts.
            eprintln!("{}", run.report(&verdict));
        }
        if let Some(path) = &pending {
            eprintln!(
                "{}: golden {}: the new one is {} (keyless review shows it; keyless accept {} accepts it)",
                run.fixture_path.display(),
                verdict.golden.as_str(),
                path.display(),
                run.stem()
            );
        }
        if let Some(log) = log {
            eprintln!(
                "{}: gateway log: {}",
                run.fixture_path.display(),
                log.display()
            );
        }
    }
    Outcome { passed, json: line }
}

/// The outcome of a fixture that could not run at all.
fn broken(path: &Path, error: &HarnessError, log: Option<&Path>) -> Outcome {
    let mut message = error_chain(error);
    if let Some(log) = log
        && !message.contains(&log.display().to_string())
    {
        message.push_str(&format!(" (gateway log: {})", log.display()));
    }
    // The error names the fixture already (`HarnessError` does).
    eprintln!("error: {message}");
    Outcome {
        passed: false,
        json: json!({
            "fixture": path.display().to_string(),
            "error": message,
            "gateway_log": log.map(|p| p.display().to_string()),
        }),
    }
}

/// Runs `test`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = settings(&args)?;
    let runtime = crate::runtime()?;
    let passed = runtime.block_on(async {
        let signals = crate::Signals::listen()?;
        // The model server: one already running, or one in this process with every fixture.
        let (server, model_root, token) = match &settings.model_server {
            Some(url) => (
                None,
                url.trim_end_matches('/').trim_end_matches("/v1").to_owned(),
                crate::model_server::read_reset_token(args.reset_token_file.as_deref())?,
            ),
            None => {
                let options = ServerOptions {
                    port: settings.model_port,
                    on_problem: None,
                    ..ServerOptions::default()
                };
                let server = ModelServer::start(Mode::Fixtures(settings.fixtures.clone()), options)
                    .await
                    .map_err(|err| ConfigError(error_chain(&err)))?;
                let url = server.url();
                let token = server.reset_token().to_owned();
                (Some(server), url, Some(token))
            }
        };
        let token = token.unwrap_or_default();
        let mut target = match &settings.gateway {
            Gateway::Command(command) => Target::Launched(Box::new(
                Launched::new(command.clone(), &format!("{model_root}/v1"))
                    .context("the model server's URL")?
                    .with_reset_token(&token)
                    .with_launcher_if(crate::launcher()),
            )),
            Gateway::Url(url) => {
                if !args.json {
                    println!("gateway at {url}; its model must be at {model_root}/v1");
                }
                Target::AtUrl(
                    AtUrl::new(url, &model_root)
                        .context("the model server's URL")?
                        .with_reset_token(&token),
                )
            }
        };
        if !args.json {
            println!("{}", table_header());
        }
        // Ctrl-C or SIGTERM stops the run, and the started gateway with it: it runs in its own
        // process group, which the terminal's signal does not reach.
        let all_passed = {
            let suite = std::pin::pin!(async {
                let mut all_passed = true;
                for path in &settings.fixtures {
                    let outcome = match Fixture::load(path) {
                        Err(err) => broken(path, &HarnessError::Fixture(err), None),
                        Ok(fixture) => {
                            if let Some(note) = gateway_config_note(path, &fixture) {
                                eprintln!("{note}");
                            }
                            let run = run_on_with(
                                target.as_dyn(),
                                path,
                                &settings.golden,
                                fixture,
                                &settings.drive,
                            )
                            .await;
                            let log = target.log();
                            match run {
                                Ok(run) => judge(&run, &settings.golden, log, args.json),
                                Err(err) => broken(path, &err, log),
                            }
                        }
                    };
                    all_passed &= outcome.passed;
                    if args.json {
                        println!("{}", outcome.json);
                    }
                }
                all_passed
            });
            signals.until_stopped(suite).await
        };
        if let Target::Launched(launched) = &mut target {
            launched.stop().await;
        }
        let Some(all_passed) = all_passed else {
            eprintln!("keyless: interrupted; the gateway was stopped");
            return anyhow::Ok(false);
        };
        if let Some(server) = server {
            let _ = server.stop().await;
        }
        anyhow::Ok(all_passed)
    })?;
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
