//! The gateway a command drives: the flags (and keys) that say how it is started or where it
//! runs, settled once for `keyless test` and `keyless record`.

use std::path::PathBuf;

use keyless_runner::GatewayCommand;
use keyless_runner::{DriveOptions, session::AuthHeader};

use crate::Resolved;
use crate::config::{Api, ConfigError, StreamModes, api_parser, ready_timeout};

/// How the gateway is started, or where it runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GatewayArgs {
    /// The command that starts the gateway for each fixture (`sh -c`, in the configuration
    /// file's folder), with `{model_base_url}` and `{port}` placeholders (also set as
    /// KEYLESS_MODEL_BASE_URL and KEYLESS_GATEWAY_PORT).
    #[arg(long, value_name = "CMD", conflicts_with = "gateway_url")]
    pub gateway_cmd: Option<String>,
    /// A gateway already running, whose model points at the model server.
    #[arg(long, value_name = "URL")]
    pub gateway_url: Option<String>,
    /// The path that answers 2xx once the started gateway is ready [default: /health; /ok with
    /// --api langgraph; / with the other dialects].
    #[arg(long, value_name = "PATH")]
    pub ready: Option<String>,
    /// How long the started gateway may take to become ready, in seconds [default: 60].
    #[arg(long, value_name = "SECS")]
    pub ready_timeout_secs: Option<u64>,
    /// The API the gateway speaks [default: deerflow].
    #[arg(long, value_parser = api_parser())]
    pub api: Option<Api>,
    /// The prefix of the API's routes [default: /api for deerflow, the root for the others].
    #[arg(long, value_name = "PATH")]
    pub base_path: Option<String>,
    /// The route runs are posted to, below --base-path [default: /api/chat for ai-sdk, / for
    /// ag-ui, /v1/responses for openai-responses, /v1/chat/completions for openai-chat].
    #[arg(long, value_name = "PATH")]
    pub endpoint: Option<String>,
    /// LangGraph: the assistant (a graph id of langgraph.json) every run goes to [default: the
    /// only graph POST /assistants/search lists].
    #[arg(long, value_name = "ID")]
    pub assistant: Option<String>,
    /// A static auth header sent with every request (e.g. x-api-key for a LangSmith
    /// deployment); its value is read from --auth-env and never written.
    #[arg(long, value_name = "NAME", requires = "auth_env")]
    pub auth_header: Option<String>,
    /// The environment variable holding --auth-header's value.
    #[arg(long, value_name = "VAR")]
    pub auth_env: Option<String>,
    /// The stream modes every run asks for: values (the golden in --golden) or web (the web
    /// client's four modes) [default: values].
    #[arg(long, value_enum)]
    pub stream_modes: Option<StreamModes>,
    /// Where the started gateway's logs go [default: .keyless/logs beside the configuration].
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
}

/// Where the gateway comes from (the runner's, which schedules the run).
pub use keyless_runner::schedule::Gateway;

impl GatewayArgs {
    /// The gateway, flags over the file's keys; exactly one of a command and a URL.
    pub fn resolve(&self, resolved: &Resolved) -> Result<Gateway, ConfigError> {
        let file = &resolved.loaded.file;
        let api = self.api.or(file.api).unwrap_or_default();
        // A flag for one kind replaces the file's other kind.
        let (command, url) = match (&self.gateway_cmd, &self.gateway_url) {
            (Some(command), _) => (Some(command.clone()), None),
            (None, Some(url)) => (None, Some(url.clone())),
            (None, None) => (file.gateway_cmd.clone(), file.gateway_url.clone()),
        };
        match (command, url) {
            (Some(command), None) => {
                // A placeholder naming no configured boundary is a usage error, before anything
                // starts (the URL here is a stand-in; each launch substitutes its own).
                (resolved.loaded.boundaries)
                    .substitute(&command, "http://127.0.0.1:0")
                    .map_err(|err| ConfigError(format!("gateway_cmd: {err}")))?;
                Ok(Gateway::Command(GatewayCommand {
                    command,
                    working_dir: resolved.loaded.base.clone(),
                    ready_path: self
                        .ready
                        .clone()
                        .or_else(|| file.ready.clone())
                        .unwrap_or_else(|| api.default_ready_path().to_owned()),
                    ready_timeout: ready_timeout(
                        self.ready_timeout_secs.or(file.ready_timeout_secs),
                    ),
                    log_dir: resolved.loaded.folder(
                        self.logs.as_deref(),
                        file.logs.as_ref(),
                        ".keyless/logs",
                    ),
                    boundaries: resolved.loaded.boundaries.clone(),
                }))
            }
            (None, Some(url)) => Ok(Gateway::Url(url)),
            (Some(_), Some(_)) => Err(ConfigError(format!(
                "{}: set one of gateway_cmd and gateway_url, not both",
                resolved.loaded.describe()
            ))),
            (None, None) => Err(ConfigError(format!(
                "no gateway: give --gateway-cmd CMD or --gateway-url URL, or set gateway_cmd in {} (keyless init writes one)",
                resolved.loaded.describe()
            ))),
        }
    }
}

impl GatewayArgs {
    /// How the driver drives the gateway: the dialect, its base path, the assistant, the auth
    /// header (its value read from the environment now, so a missing one is a usage error before
    /// any fixture runs) and the stream modes, flags over the file's keys.
    pub fn drive_options(&self, resolved: &Resolved) -> Result<DriveOptions, ConfigError> {
        let file = &resolved.loaded.file;
        let header = self
            .auth_header
            .clone()
            .or_else(|| file.auth_header.clone());
        let var = self.auth_env.clone().or_else(|| file.auth_env.clone());
        let auth = match (header, var) {
            (None, None) => None,
            (Some(header), Some(var)) => Some(
                AuthHeader::from_env(&header, &var).map_err(|err| ConfigError(err.to_string()))?,
            ),
            (Some(_), None) | (None, Some(_)) => {
                return Err(ConfigError(format!(
                    "{}: set both auth_header and auth_env (the header's name and the variable \
                     holding its value), or neither",
                    resolved.loaded.describe()
                )));
            }
        };
        Ok(DriveOptions {
            api: self.api.or(file.api).unwrap_or_default(),
            base_path: self.base_path.clone().or_else(|| file.base_path.clone()),
            endpoint: self.endpoint.clone().or_else(|| file.endpoint.clone()),
            assistant: self.assistant.clone().or_else(|| file.assistant.clone()),
            assistants: file.assistants.clone().unwrap_or_default(),
            auth,
            stream_modes: self
                .stream_modes
                .or(file.stream_modes)
                .unwrap_or_default()
                .driver(),
        })
    }
}
