//! `keyless record`: one real model run recorded into a fixture. The model server runs as a
//! recording proxy in front of a real OpenAI-compatible endpoint, the configured gateway is
//! started with its model at the proxy (or a running one is used), the driver sends the prompt
//! (and follow-ups), the gateway is stopped, and the fixture is built from the recording, as
//! `keyless model-server --record` builds it when stopped (both through [`crate::recorded`]:
//! no fixture replaced without `--force`, none built from a call that never reached the
//! upstream).

use std::process::ExitCode;

use anyhow::Context;
use keyless_runner::Launched;
use keyless_runner::Session;
use keyless_runner::suite::error_chain;
use keyless_runner::{Mode, ModelServer, ServerOptions, server::RecordConfig};
use replay_core::prompts_in;
use replay_core::recording::{Access, read_recording};

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT};
use crate::gateway::{Gateway, GatewayArgs};
use crate::model_server::{RecordBounds, ScenarioArgs, api_key_from_env, aws_credentials_from_env};
use crate::output::{err, out};
use crate::recorded::Keeping;

/// Arguments of `record`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  OPENAI_API_KEY=… keyless record --scenario write_read_file --mode flash \\
      --prompt 'Write hello to /mnt/user-data/outputs/a.txt, then read it back'
  keyless record --scenario chat --mode pro --prompt 'Hi' --followup 'And again' \\
      --upstream https://my-proxy.example/v1 --key-env MY_KEY
  keyless record --serve --scenario chat --mode flash --port 3000
      # your browser suite (or you) drives http://127.0.0.1:3000; Ctrl-C builds the fixture
  keyless record --force --scenario chat --mode flash --prompt 'Hi'
      # record fixtures/chat.flash.json again, replacing it
  keyless record --scenario chat --mode flash --prompt 'Hi' --recording-out rec/chat.jsonl
      # keep the raw recording (and its scenario metadata) in rec/

The gateway must be configured as it will be when the fixture is replayed (keyless.toml's
[record] section says why). The key is read from the environment and never written.

An existing fixture is never replaced without --force. A call that never got an HTTP answer from
the upstream (no connection, DNS, TLS, a reset) builds no fixture: the run exits 1 naming the
upstream and the error, the fixture stays as it was, and the raw recording is kept in
.keyless/recordings/ (--keep-transport-errors records such failures anyway). A provider's own
error answer (a 400, a 429) is an answer and is recorded. Without --recording-out, the raw
recording is removed once the fixture is built.")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    #[command(flatten)]
    pub gateway: GatewayArgs,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    #[command(flatten)]
    pub bounds: RecordBounds,
    /// The upstream's OpenAI base URL [default: keyless.toml's record.upstream].
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// The variable holding the upstream's API key [default: record.key_env, else
    /// OPENAI_API_KEY].
    #[arg(long, value_name = "NAME")]
    pub key_env: Option<String>,
    /// The recording proxy's port with --gateway-url [default: 8090; a free one when the
    /// gateway is started].
    #[arg(long, value_name = "PORT")]
    pub model_port: Option<u16>,
    #[command(flatten)]
    pub keeping: Keeping,
    /// Drive nothing: hold the recording proxy and the gateway up while a browser suite (or a
    /// person) drives it, and build the fixture at SIGTERM or SIGINT, its prompt and follow-ups
    /// taken from the user messages the recorded calls carried. Prints one JSON line with the
    /// gateway's URL once it is ready.
    #[arg(long, conflicts_with_all = ["prompt", "followups"])]
    pub serve: bool,
    /// With --serve: the gateway's port on 127.0.0.1 [default: a free one].
    #[arg(long, value_name = "PORT", requires = "serve")]
    pub port: Option<u16>,
}

/// Runs `record`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let resolved = args.folders.resolve()?;
    let gateway = args.gateway.resolve(&resolved)?;
    let drive = args.gateway.drive_options(&resolved)?;
    let record = resolved.loaded.file.record.clone().unwrap_or_default();
    let upstream = args.upstream.clone().or(record.upstream).ok_or_else(|| {
        ConfigError(format!(
            "no upstream: give --upstream URL or set [record] upstream in {}",
            resolved.loaded.describe()
        ))
    })?;
    let key_env = args
        .key_env
        .clone()
        .or(record.key_env)
        .unwrap_or_else(|| "OPENAI_API_KEY".into());
    let api_key = api_key_from_env(&key_env)?;
    let mut scenario = if args.serve {
        // The prompts are the browser's, read from the recording once it is finished.
        args.scenario.scenario_without_prompt()?
    } else {
        args.scenario.scenario()?
    };
    if !drive.api.has_ui_modes() {
        // Only DeerFlow's dialect sends the UI mode's run context (a LangGraph graph declares its
        // own context schema, if any; the other dialects have no run context): the fixture
        // records none, and its mode is a label.
        scenario.context = serde_json::json!({});
    }
    let plan = args.keeping.plan(
        &resolved.loaded.base,
        &resolved.fixtures,
        &scenario.stem(),
        &upstream,
    )?;
    let recording = plan.recording.clone();
    let port = match gateway {
        Gateway::Command(_) => args.model_port.unwrap_or(0),
        Gateway::Url(_) => args.model_port.unwrap_or(DEFAULT_MODEL_PORT),
    };
    let config = RecordConfig {
        upstream: upstream.clone(),
        api_key: api_key.into(),
        recording: recording.clone(),
        scenario: scenario.clone(),
        allow_insecure_upstream: args.bounds.allow_insecure_upstream,
        limits: args.bounds.limits(),
        aws: aws_credentials_from_env(),
    };
    crate::runtime()?.block_on(async {
        let signals = crate::Signals::listen()?;
        let options = ServerOptions {
            port,
            on_problem: None,
            boundaries: resolved.loaded.boundaries.clone(),
            ..ServerOptions::default()
        };
        let server = ModelServer::start(Mode::Record(Box::new(config)), options)
            .await
            .map_err(|err| {
                plan.abandon();
                ConfigError(error_chain(&err))
            })?;
        let described = format!(
            "recording {} through {upstream} to {}",
            scenario.stem(),
            recording.display()
        );
        if args.serve {
            // stdout's first line is the JSON a suite reads.
            err(described);
        } else {
            out(described)?;
        }
        let mut launched = None;
        let url = match &gateway {
            Gateway::Command(command) => {
                let started = launched.insert(
                    Launched::new(command.clone(), &server.base_url())?
                        .with_launcher_if(crate::launcher()),
                );
                match args.port {
                    // --serve --port: the port the browser suite's URL names.
                    Some(port) => started.launch_at(&scenario.stem(), port).await?,
                    None => started.launch(&scenario.stem()).await?,
                }
            }
            Gateway::Url(url) => {
                out(format!(
                    "gateway at {url}; its model must be at {}",
                    server.base_url()
                ))?;
                url.clone()
            }
        };
        if args.serve {
            let held = hold(&signals, launched.as_mut(), &url, &server.base_url()).await;
            if let Some(started) = launched.as_mut() {
                started.stop().await;
            }
            let recorded = server.stop().await?;
            held?;
            let mut recorded = recorded.context("the model server recorded nothing")?;
            let read = read_recording(&recording, Access::External)?;
            let mut prompts = prompts_in(&read).into_iter();
            let Some(prompt) = prompts.next() else {
                anyhow::bail!(
                    "no model call with a user message was recorded, so no fixture was built (the raw recording is {})",
                    recording.display()
                );
            };
            recorded.fixture.scenario.prompt = prompt;
            recorded.fixture.scenario.followups = prompts.collect();
            plan.save(&recorded)?;
            return anyhow::Ok(());
        }
        let driven = signals
            .until_stopped(async {
                let mut session = Session::open(&url, &drive).await?;
                session.run_scenario(&scenario, &[]).await
            })
            .await;
        if let Some(started) = launched.as_mut() {
            started.stop().await;
        }
        let Some(driven) = driven else {
            let _ = server.stop().await;
            anyhow::bail!(
                "interrupted: the gateway was stopped and no fixture was built (the raw recording is {})",
                recording.display()
            );
        };
        let log = launched.as_ref().and_then(Launched::log);
        let recorded = server.stop().await?;
        if let Err(err) = driven {
            let log = log.map(|p| format!(" (gateway log: {})", p.display()));
            anyhow::bail!(
                "driving the gateway: {}{}",
                error_chain(&err),
                log.unwrap_or_default()
            );
        }
        let recorded = recorded.context("the model server recorded nothing")?;
        plan.save(&recorded)?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}

/// `--serve`: prints the URLs, then holds until a signal; a gateway that exits on its own first
/// is an error naming its log.
async fn hold(
    signals: &crate::Signals,
    launched: Option<&mut Launched>,
    url: &str,
    model_base_url: &str,
) -> anyhow::Result<()> {
    out(format!(
        "{}",
        serde_json::json!({"gateway_url": url, "model_base_url": model_base_url})
    ))?;
    let Some(launched) = launched else {
        signals.stopped().await;
        return Ok(());
    };
    let exited = signals
        .until_stopped(async {
            loop {
                if let Some(status) = launched.exited() {
                    return status;
                }
                tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            }
        })
        .await;
    match exited {
        None => Ok(()),
        Some(status) => Err(anyhow::anyhow!(
            "the gateway exited on its own ({status}) while recording{}",
            launched
                .log()
                .map(|log| format!("; its output is in {}", log.display()))
                .unwrap_or_default()
        )),
    }
}
