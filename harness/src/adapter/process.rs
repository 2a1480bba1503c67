//! `gateway-under-test` as a separate process whose model is reached over the wire: the hermetic
//! configuration with its one `[[models]]` block set to `use = "openai"` and `base_url` at a
//! model server, written to a temporary folder, and the binary started on 127.0.0.1 port 0.
//!
//! This is how the harness proves that replay at the wire agrees with in-process replay: the same
//! gateway, driven as any other gateway would be, must give the same goldens. The model block may
//! speak any of the gateway's wires ([`Api`]: Chat Completions, Responses, Anthropic Messages),
//! each of which the model server serves.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use gateway_under_test::config::ModelConfig;
use gateway_under_test::models::anthropic::ANTHROPIC_PROVIDER;
use gateway_under_test::models::bedrock::BEDROCK_PROVIDER;
use gateway_under_test::models::gemini::GEMINI_PROVIDER;
use gateway_under_test::models::wire_model::{API_SETTING, Api};
use serde_json::Value;
use tempfile::TempDir;

use crate::adapter::hermetic::{
    HermeticError, ModelBlock, SCENARIO_MODEL, hermetic_config, prepare_home, write_config_file,
};
use crate::workspace::workspace_root;

/// The variable that names a prebuilt gateway binary (for runs from a test archive).
pub(crate) const GATEWAY_BIN_VAR: &str = "GATEWAY_UNDER_TEST_BIN";

/// What the model block's key is: the model server ignores it, but the OpenAI provider refuses to
/// call without one.
const PLACEHOLDER_KEY: &str = "model-server-needs-no-key";

/// How long the gateway may take to print its address.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Why the gateway process could not be started.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    /// The temporary folder could not be made.
    #[error("temporary folder: {0}")]
    TempDir(std::io::Error),
    /// The hermetic home or config failed.
    #[error(transparent)]
    Hermetic(#[from] HermeticError),
    /// The binary could not be built or started.
    #[error("{what}: {detail}")]
    Start {
        /// What was being done.
        what: String,
        /// Why it failed.
        detail: String,
    },
}

/// A running gateway process. Killed when dropped.
#[derive(Debug)]
pub struct GatewayProcess {
    child: Child,
    url: String,
    _folder: TempDir,
}

impl GatewayProcess {
    /// Starts `binary` with the hermetic configuration, the fixture's `gateway_config`
    /// `overrides`, and its model at `model_base_url` (the model server's `/v1`). The model block
    /// sends message names (`send_message_names`), as LangChain's client does, because the replay
    /// key includes the input's `user-input` name. The environment is cleared but for the
    /// placeholder key the configuration names as `$OPENAI_API_KEY`.
    pub async fn spawn(
        binary: &Path,
        model_base_url: &str,
        overrides: Option<&Value>,
    ) -> Result<GatewayProcess, ProcessError> {
        Self::spawn_with(binary, model_base_url, overrides, Api::ChatCompletions).await
    }

    /// [`GatewayProcess::spawn`] with the model block at `api` (see [`model_block_at`]), for a
    /// model server at `server_url` (`http://127.0.0.1:<port>`, without `/v1`).
    pub async fn spawn_at_wire(
        binary: &Path,
        server_url: &str,
        overrides: Option<&Value>,
        api: Api,
    ) -> Result<GatewayProcess, ProcessError> {
        let base_url = base_url_at_wire(server_url, api);
        Self::spawn_with(binary, &base_url, overrides, api).await
    }

    async fn spawn_with(
        binary: &Path,
        model_base_url: &str,
        overrides: Option<&Value>,
        api: Api,
    ) -> Result<GatewayProcess, ProcessError> {
        let folder = tempfile::Builder::new()
            .prefix("wire-gw-")
            .tempdir()
            .map_err(ProcessError::TempDir)?;
        let config_path =
            write_config_at_wire(folder.path(), model_base_url, overrides, true, api)?;
        let mut child = Command::new(binary)
            .arg("--config")
            .arg(&config_path)
            .args(["--port", "0"])
            .env_clear()
            .env("OPENAI_API_KEY", PLACEHOLDER_KEY)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|err| ProcessError::Start {
                what: format!("starting {}", binary.display()),
                detail: err.to_string(),
            })?;
        let stdout = child.stdout.take().ok_or_else(|| ProcessError::Start {
            what: "reading the gateway's output".into(),
            detail: "no stdout".into(),
        })?;
        // The address line comes first; everything after it (logs) is passed to stderr on a
        // thread of its own, so a full pipe never blocks the gateway.
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            let first = lines.next().and_then(Result::ok);
            let _ = sender.send(first);
            for line in lines.map_while(Result::ok) {
                eprintln!("[gateway] {line}");
            }
        });
        let waited = tokio::time::timeout(START_TIMEOUT, receiver).await;
        let line = match waited {
            Ok(Ok(Some(line))) => line,
            other => {
                let _ = child.kill();
                let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
                return Err(ProcessError::Start {
                    what: format!("waiting for {} to listen", binary.display()),
                    detail: match other {
                        Err(_) => format!("no address within {START_TIMEOUT:?}"),
                        _ => format!("it exited ({status}) before printing its address"),
                    },
                });
            }
        };
        let url = line
            .split_whitespace()
            .find(|word| word.starts_with("http://"))
            .map(str::to_owned)
            .ok_or_else(|| ProcessError::Start {
                what: "reading the gateway's address".into(),
                detail: format!("unexpected first line {line:?}"),
            })?;
        Ok(GatewayProcess {
            child,
            url,
            _folder: folder,
        })
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the hermetic configuration of a gateway process into `folder` (its home beside it) and
/// returns the file: its one model block at `model_base_url` (a model server's `/v1`, or a
/// `$VAR` the gateway expands at load, as `keyless test` sets `KEYLESS_MODEL_BASE_URL`), its key
/// `$OPENAI_API_KEY`, the fixture's `gateway_config` `overrides` applied, and message names sent
/// (`send_message_names`) or not.
pub fn write_wire_config(
    folder: &Path,
    model_base_url: &str,
    overrides: Option<&Value>,
    send_message_names: bool,
) -> Result<PathBuf, ProcessError> {
    write_config_at_wire(
        folder,
        model_base_url,
        overrides,
        send_message_names,
        Api::ChatCompletions,
    )
}

/// The `base_url` of a model block speaking `api` to the model server at `server_url`: `/v1`
/// for OpenAI's wires; the root for Anthropic's (its SDK appends `/v1/messages`) and Bedrock's
/// (`/model/{id}/converse`); `/v1beta` for Gemini's (the version is part of its base URL).
pub fn base_url_at_wire(server_url: &str, api: Api) -> String {
    match api {
        Api::ChatCompletions | Api::Responses => format!("{server_url}/v1"),
        Api::AnthropicMessages | Api::BedrockConverse => server_url.to_owned(),
        Api::Gemini => format!("{server_url}/v1beta"),
        // Ollama's clients take the root (`/api/chat`).
        Api::OllamaChat | Api::OllamaGenerate => server_url.to_owned(),
    }
}

/// The hermetic model block set to speak `api`: `use = "openai"` as it is (Chat Completions),
/// with `api = "responses"`, `use = "anthropic"`, `use = "gemini"` or `use = "bedrock"`.
pub fn model_block_at(model: &mut ModelConfig, api: Api) {
    match api {
        Api::ChatCompletions => {}
        Api::Responses => {
            model
                .settings
                .insert(API_SETTING.into(), Value::String("responses".into()));
        }
        Api::AnthropicMessages => model.use_ = ANTHROPIC_PROVIDER.into(),
        Api::Gemini => model.use_ = GEMINI_PROVIDER.into(),
        Api::BedrockConverse => model.use_ = BEDROCK_PROVIDER.into(),
        // No gateway provider speaks Ollama's native wire (`PROVIDER_APIS`): the gateway
        // refuses the block loudly rather than call another wire.
        Api::OllamaChat | Api::OllamaGenerate => model.use_ = "ollama".into(),
    }
}

fn write_config_at_wire(
    folder: &Path,
    model_base_url: &str,
    overrides: Option<&Value>,
    send_message_names: bool,
    api: Api,
) -> Result<PathBuf, ProcessError> {
    let home = prepare_home(folder)?;
    let block = ModelBlock::Record {
        model: SCENARIO_MODEL.into(),
        api_key: PLACEHOLDER_KEY.into(),
        base_url: model_base_url.to_owned(),
    };
    let mut config = hermetic_config(&home, &block, overrides)?;
    for model in &mut config.models {
        model
            .settings
            .insert("send_message_names".into(), Value::Bool(send_message_names));
        model_block_at(model, api);
    }
    Ok(write_config_file(folder, &config)?)
}

/// The key a gateway process started with [`write_wire_config`]'s file needs in
/// `OPENAI_API_KEY` (a model server ignores it; the OpenAI provider refuses to call without one).
pub const fn placeholder_key() -> &'static str {
    PLACEHOLDER_KEY
}

/// This workspace's `gateway-under-test` binary, as [`GatewayBinary::from_env`] finds it.
pub fn workspace_gateway_binary() -> Result<PathBuf, ProcessError> {
    GatewayBinary::from_env().path()
}

/// Where this workspace's `gateway-under-test` binary comes from: a prebuilt file (a run from a
/// test archive), or `cargo build --bin gateway-under-test` in the profile of the running
/// executable, next to it in the target folder.
#[derive(Debug, Clone)]
pub struct GatewayBinary {
    /// The prebuilt binary, when one is named.
    pub prebuilt: Option<PathBuf>,
    /// The cargo that builds it otherwise.
    pub cargo: std::ffi::OsString,
}

impl GatewayBinary {
    /// `$GATEWAY_UNDER_TEST_BIN` as the prebuilt binary when set, and `$CARGO` (as cargo sets it
    /// for tests and build scripts, else `cargo` on the `PATH`) to build it. The one place this
    /// module reads the environment.
    pub fn from_env() -> GatewayBinary {
        GatewayBinary {
            prebuilt: std::env::var_os(GATEWAY_BIN_VAR).map(PathBuf::from),
            cargo: std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()),
        }
    }

    /// The prebuilt binary, or the one cargo builds (or finds up to date).
    pub fn path(&self) -> Result<PathBuf, ProcessError> {
        if let Some(path) = &self.prebuilt {
            return Ok(path.clone());
        }
        let failed = |detail: String| ProcessError::Start {
            what: "building gateway-under-test".into(),
            detail,
        };
        let executable = std::env::current_exe().map_err(|err| failed(err.to_string()))?;
        // target/<profile>/deps/<test> or target/<profile>/<binary>.
        let profile_dir = executable
            .ancestors()
            .skip(1)
            .find(|dir| dir.file_name().is_some_and(|name| name != "deps"))
            .ok_or_else(|| failed(format!("no target folder above {}", executable.display())))?;
        let mut command = Command::new(&self.cargo);
        command.current_dir(workspace_root()).args([
            "build",
            "--quiet",
            "--bin",
            "gateway-under-test",
        ]);
        if profile_dir
            .file_name()
            .is_some_and(|name| name == "release")
        {
            command.arg("--release");
        }
        if let Some(target_dir) = profile_dir.parent() {
            command.arg("--target-dir").arg(target_dir);
        }
        let output = command
            .output()
            .map_err(|err| failed(format!("cannot run cargo: {err}")))?;
        if !output.status.success() {
            return Err(failed(String::from_utf8_lossy(&output.stderr).into_owned()));
        }
        let binary = profile_dir.join("gateway-under-test");
        if !binary.is_file() {
            return Err(failed(format!("{} was not built", binary.display())));
        }
        Ok(binary)
    }
}
