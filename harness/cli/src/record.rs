//! `keyless record`: one real model run recorded into a fixture. The model server runs as a
//! recording proxy in front of a real OpenAI-compatible endpoint, the configured gateway is
//! started with its model at the proxy (or a running one is used), the driver sends the prompt
//! (and follow-ups), the gateway is stopped, and the fixture is built from the recording, as
//! `keyless model-server --record` builds it when stopped.

use std::process::ExitCode;

use anyhow::Context;
use keyless_runner::driver::{Api, Session};
use keyless_runner::launched::Launched;
use keyless_runner::model_server::{
    AwsCredentials, Mode, ModelServer, RecordConfig, ServerOptions,
};
use keyless_runner::suite::error_chain;

use crate::Folders;
use crate::config::{ConfigError, DEFAULT_MODEL_PORT};
use crate::gateway::{Gateway, GatewayArgs};
use crate::model_server::{ScenarioArgs, api_key, recording_path, save_recorded};

/// Arguments of `record`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  OPENAI_API_KEY=… keyless record --scenario write_read_file --mode flash \\
      --prompt 'Write hello to /mnt/user-data/outputs/a.txt, then read it back'
  keyless record --scenario chat --mode pro --prompt 'Hi' --followup 'And again' \\
      --upstream https://my-proxy.example/v1 --key-env MY_KEY

The gateway must be configured as it will be when the fixture is replayed (keyless.toml's
[record] section says why). The key is read from the environment and never written.")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    #[command(flatten)]
    pub gateway: GatewayArgs,
    #[command(flatten)]
    pub scenario: ScenarioArgs,
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
    /// Where to write the raw recording (default: `recording.jsonl` in a fresh temporary
    /// folder, printed). The scenario metadata goes beside it.
    #[arg(long, value_name = "FILE")]
    pub recording_out: Option<std::path::PathBuf>,
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
    let api_key = api_key(&key_env)?;
    let mut scenario = args.scenario.scenario()?;
    if drive.api == Api::Langgraph {
        // A LangGraph graph declares its own context schema, if any: the UI mode's DeerFlow
        // context is not sent, and the fixture records none.
        scenario.context = serde_json::json!({});
    }
    let recording = recording_path(args.recording_out.as_ref())?;
    let port = match gateway {
        Gateway::Command(_) => args.model_port.unwrap_or(0),
        Gateway::Url(_) => args.model_port.unwrap_or(DEFAULT_MODEL_PORT),
    };
    let config = RecordConfig {
        upstream: upstream.clone(),
        api_key: api_key.into(),
        recording: recording.clone(),
        scenario: scenario.clone(),
        aws: AwsCredentials::from_vars(|name| std::env::var(name).ok()),
    };
    crate::runtime()?.block_on(async {
        let options = ServerOptions {
            port,
            on_problem: None,
        };
        let server = ModelServer::start(Mode::Record(Box::new(config)), options)
            .await
            .map_err(|err| ConfigError(error_chain(&err)))?;
        println!(
            "recording {} through {upstream} to {}",
            scenario.stem(),
            recording.display()
        );
        let mut launched = None;
        let url = match &gateway {
            Gateway::Command(command) => {
                let started = launched.insert(Launched::new(command.clone(), &server.base_url())?);
                started.launch(&scenario.stem()).await?
            }
            Gateway::Url(url) => {
                println!(
                    "gateway at {url}; its model must be at {}",
                    server.base_url()
                );
                url.clone()
            }
        };
        let driven = crate::until_stopped(async {
            let session = Session::open(&url, &drive).await?;
            session.run_scenario(&scenario, &[]).await
        })
        .await?;
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
        save_recorded(&recorded, &recording, &resolved.fixtures)?;
        anyhow::Ok(())
    })?;
    Ok(ExitCode::SUCCESS)
}
