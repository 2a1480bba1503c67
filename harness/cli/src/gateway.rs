//! The gateway a command drives: the flags (and keys) that say how it is started or where it
//! runs, settled once for `keyless test` and `keyless record`.

use std::path::PathBuf;

use keyless_runner::launched::GatewayCommand;

use crate::Resolved;
use crate::config::{Api, ConfigError, DEFAULT_READY, ready_timeout};

/// How the gateway is started, or where it runs.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct GatewayArgs {
    /// The command that starts the gateway for each fixture (`sh -c`, in the configuration
    /// file's folder), with `{model_base_url}` and `{port}` placeholders (also set as
    /// HARNESS_MODEL_BASE_URL and HARNESS_GATEWAY_PORT).
    #[arg(long, value_name = "CMD", conflicts_with = "gateway_url")]
    pub gateway_cmd: Option<String>,
    /// A gateway already running, whose model points at the model server.
    #[arg(long, value_name = "URL")]
    pub gateway_url: Option<String>,
    /// The path that answers 2xx once the started gateway is ready [default: /health].
    #[arg(long, value_name = "PATH")]
    pub ready: Option<String>,
    /// How long the started gateway may take to become ready, in seconds [default: 60].
    #[arg(long, value_name = "SECS")]
    pub ready_timeout_secs: Option<u64>,
    /// The API the gateway speaks [default: deerflow].
    #[arg(long, value_enum)]
    pub api: Option<Api>,
    /// Where the started gateway's logs go [default: .keyless/logs beside the configuration].
    #[arg(long, value_name = "DIR")]
    pub logs: Option<PathBuf>,
}

/// Where the gateway comes from.
#[derive(Debug, Clone)]
pub enum Gateway {
    /// Started for each fixture.
    Command(GatewayCommand),
    /// Already running at a URL.
    Url(String),
}

impl GatewayArgs {
    /// The gateway, flags over the file's keys; exactly one of a command and a URL.
    pub fn resolve(&self, resolved: &Resolved) -> Result<Gateway, ConfigError> {
        let file = &resolved.loaded.file;
        // The dialect: DeerFlow's is the only one so far, so there is nothing to choose yet.
        let Api::Deerflow = self.api.or(file.api).unwrap_or_default();
        // A flag for one kind replaces the file's other kind.
        let (command, url) = match (&self.gateway_cmd, &self.gateway_url) {
            (Some(command), _) => (Some(command.clone()), None),
            (None, Some(url)) => (None, Some(url.clone())),
            (None, None) => (file.gateway_cmd.clone(), file.gateway_url.clone()),
        };
        match (command, url) {
            (Some(command), None) => Ok(Gateway::Command(GatewayCommand {
                command,
                working_dir: resolved.loaded.base.clone(),
                ready_path: self
                    .ready
                    .clone()
                    .or_else(|| file.ready.clone())
                    .unwrap_or_else(|| DEFAULT_READY.to_owned()),
                ready_timeout: ready_timeout(self.ready_timeout_secs.or(file.ready_timeout_secs)),
                log_dir: resolved.loaded.folder(
                    self.logs.as_deref(),
                    file.logs.as_ref(),
                    ".keyless/logs",
                ),
            })),
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
