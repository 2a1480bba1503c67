//! A gateway started by a command for each fixture and stopped after it, so no state leaks
//! between fixtures: [`Launched`], the [`GatewayTarget`] behind `keyless test --gateway-cmd`.
//!
//! The command runs through `sh -c` in its own process group, with the model server's OpenAI
//! base URL and a free port both substituted for `{model_base_url}` and `{port}` and set as
//! `HARNESS_MODEL_BASE_URL` and `HARNESS_GATEWAY_PORT`. Its output goes to a log file that every
//! failure names. The gateway is ready when its readiness path answers 2xx; it is stopped by
//! SIGTERM to its process group (SIGKILL after a grace period), so a shell and its children go
//! together and nothing is left running.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use replay_core::Fixture;

use crate::golden::stem_of;
use crate::layer1::HarnessError;
use crate::model_server::{ClientError, ModelServerClient};
use crate::target::{GatewayTarget, ModelLedger};

/// The placeholder for the model server's OpenAI base URL in a gateway command.
pub const MODEL_BASE_URL_PLACEHOLDER: &str = "{model_base_url}";
/// The placeholder for the gateway's port in a gateway command.
pub const PORT_PLACEHOLDER: &str = "{port}";
/// The variable holding the model server's OpenAI base URL (`http://127.0.0.1:<port>/v1`).
pub const MODEL_BASE_URL_VAR: &str = "HARNESS_MODEL_BASE_URL";
/// The variable holding the port the gateway must listen on (127.0.0.1).
pub const GATEWAY_PORT_VAR: &str = "HARNESS_GATEWAY_PORT";

/// How long a stopped gateway may take to exit after SIGTERM before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How often readiness is polled.
const READY_POLL: Duration = Duration::from_millis(100);

/// How to start and wait for the gateway.
#[derive(Debug, Clone)]
pub struct GatewayCommand {
    /// The shell command line, with `{model_base_url}` and `{port}` placeholders.
    pub command: String,
    /// The folder it runs in (the configuration file's folder).
    pub working_dir: PathBuf,
    /// The readiness path, e.g. `/health`.
    pub ready_path: String,
    /// How long the gateway may take to become ready.
    pub ready_timeout: Duration,
    /// Where the gateway's logs go (`<stem>.gateway.log`).
    pub log_dir: PathBuf,
}

/// Why the gateway command could not be started, became not ready, or could not be stopped.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// The log file could not be created.
    #[error("cannot create the gateway log {}: {source}", .log.display())]
    Log {
        /// The log file.
        log: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// No free port could be found.
    #[error("cannot find a free port on 127.0.0.1: {0}")]
    Port(std::io::Error),
    /// `sh` could not be started.
    #[error("cannot start the gateway command `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The command exited before it was ready.
    #[error("the gateway command `{command}` exited ({status}) before {url} answered; its output is in {}", .log.display())]
    Exited {
        /// The command line.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// The readiness URL.
        url: String,
        /// The log file.
        log: PathBuf,
    },
    /// The readiness path did not answer 2xx in time.
    #[error("the gateway command `{command}` was not ready within {}s: {url} {last}; its output is in {}", .timeout.as_secs(), .log.display())]
    NotReady {
        /// The command line.
        command: String,
        /// The readiness URL.
        url: String,
        /// The last answer or error.
        last: String,
        /// The timeout.
        timeout: Duration,
        /// The log file.
        log: PathBuf,
    },
}

/// The gateway command, started for each fixture against a model server.
#[derive(Debug)]
pub struct Launched {
    command: GatewayCommand,
    model_server: ModelServerClient,
    model_base_url: String,
    http: reqwest::Client,
    fixture: PathBuf,
    running: Option<Child>,
    log: Option<PathBuf>,
}

impl Launched {
    /// The gateway `command`, its model at the model server whose OpenAI base URL is
    /// `model_base_url` (`http://127.0.0.1:<port>/v1`).
    pub fn new(command: GatewayCommand, model_base_url: &str) -> Result<Launched, ClientError> {
        Ok(Launched {
            command,
            model_server: ModelServerClient::new(model_base_url)?,
            model_base_url: model_base_url.trim_end_matches('/').to_owned(),
            http: reqwest::Client::new(),
            fixture: PathBuf::new(),
            running: None,
            log: None,
        })
    }

    /// The log file of the last fixture's gateway.
    pub fn log(&self) -> Option<&Path> {
        self.log.as_deref()
    }

    /// Whether the gateway it started is still running (a reused gateway that died with the
    /// last fixture is started again for the next: `reused`).
    pub fn is_running(&mut self) -> bool {
        self.running
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    fn failed(&self, error: LaunchError) -> HarnessError {
        HarnessError::Boot {
            fixture: self.fixture.clone(),
            source: Box::new(error),
        }
    }

    /// Starts the command for `stem` on `port` and returns the child.
    fn spawn(&mut self, stem: &str, port: u16) -> Result<Child, LaunchError> {
        let log = self.command.log_dir.join(format!("{stem}.gateway.log"));
        self.log = Some(log.clone());
        let log_error = |source| LaunchError::Log {
            log: log.clone(),
            source,
        };
        std::fs::create_dir_all(&self.command.log_dir).map_err(log_error)?;
        let out = File::create(&log).map_err(log_error)?;
        let err = out.try_clone().map_err(log_error)?;
        let line = self
            .command
            .command
            .replace(MODEL_BASE_URL_PLACEHOLDER, &self.model_base_url)
            .replace(PORT_PLACEHOLDER, &port.to_string());
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(&line)
            .current_dir(&self.command.working_dir)
            .env(MODEL_BASE_URL_VAR, &self.model_base_url)
            .env(GATEWAY_PORT_VAR, port.to_string())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command.spawn().map_err(|source| LaunchError::Spawn {
            command: line,
            source,
        })
    }

    /// Polls the readiness URL until it answers 2xx, the child exits, or the timeout passes.
    async fn wait_ready(&mut self, port: u16) -> Result<String, LaunchError> {
        let url = format!("http://127.0.0.1:{port}");
        let ready = format!("{url}/{}", self.command.ready_path.trim_start_matches('/'));
        let log = self.log.clone().unwrap_or_default();
        let started = Instant::now();
        loop {
            if let Some(child) = self.running.as_mut()
                && let Ok(Some(status)) = child.try_wait()
            {
                self.running = None;
                return Err(LaunchError::Exited {
                    command: self.command.command.clone(),
                    status,
                    url: ready,
                    log,
                });
            }
            let last = match self
                .http
                .get(&ready)
                .timeout(Duration::from_secs(2))
                .send()
                .await
            {
                Ok(response) if response.status().is_success() => return Ok(url),
                Ok(response) => format!("answered {}", response.status()),
                Err(err) => format!("did not answer ({err})"),
            };
            if started.elapsed() > self.command.ready_timeout {
                return Err(LaunchError::NotReady {
                    command: self.command.command.clone(),
                    url: ready,
                    last,
                    timeout: self.command.ready_timeout,
                    log,
                });
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// Starts the command (its log named after `name`) and waits until it is ready; returns its
    /// base URL. Whatever ran before is stopped first.
    pub async fn launch(&mut self, name: &str) -> Result<String, LaunchError> {
        self.stop().await;
        let port = free_port().map_err(LaunchError::Port)?;
        self.running = Some(self.spawn(name, port)?);
        match self.wait_ready(port).await {
            Ok(url) => Ok(url),
            Err(error) => {
                self.stop().await;
                Err(error)
            }
        }
    }

    /// Stops the running gateway: SIGTERM to its process group, SIGKILL after the grace period.
    pub async fn stop(&mut self) {
        let Some(mut child) = self.running.take() else {
            return;
        };
        let group = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                // The shell is gone; anything it left in its group goes too.
                let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = child.wait();
    }
}

/// A free port on 127.0.0.1 (the listener is closed before the gateway binds it).
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[async_trait]
impl GatewayTarget for Launched {
    async fn start(
        &mut self,
        path: &Path,
        _fixture: &Arc<Fixture>,
    ) -> Result<String, HarnessError> {
        self.fixture = path.to_path_buf();
        self.stop().await;
        let stem = stem_of(path);
        self.model_server
            .reset(Some(&stem))
            .await
            .map_err(|source| HarnessError::ModelServer {
                fixture: path.to_path_buf(),
                source,
            })?;
        self.launch(&stem).await.map_err(|error| self.failed(error))
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        self.stop().await;
        let state =
            self.model_server
                .state()
                .await
                .map_err(|source| HarnessError::ModelServer {
                    fixture: self.fixture.clone(),
                    source,
                })?;
        Ok(ModelLedger::from_problems(
            state.problems,
            state.unused_turns,
        ))
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if let Some(mut child) = self.running.take() {
            let group = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            let _ = child.wait();
        }
    }
}
