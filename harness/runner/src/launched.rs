//! A gateway started by a command for each fixture and stopped after it, so no state leaks
//! between fixtures: [`Launched`], the [`GatewayTarget`] behind `keyless test --gateway-cmd`.
//!
//! The command runs through `sh -c` in its own process group, with the model server's OpenAI
//! base URL and a free port both substituted for `{model_base_url}` and `{port}` and set as
//! `KEYLESS_MODEL_BASE_URL` and `KEYLESS_GATEWAY_PORT`. Its output goes to a log file that every
//! failure names. The gateway is ready when its readiness path answers 2xx; it is stopped by
//! SIGTERM to its process group and to every process that left the group (SIGKILL after a grace
//! period), so a shell and its children go together and nothing is left running.
//!
//! What is stopped where (issue 34, finding 5; `docs/testing-your-own-gateway.md` says it too):
//! everywhere, the command's process group. On Linux, also every process that carries the
//! launch's mark in its environment ([`crate::processes::LAUNCH_MARK_VAR`]: a `setsid` daemon,
//! a child that called `setpgid`) or whose parent chain leads to the command, and (with
//! [`Launched::with_launcher`], which `keyless` uses) the command itself is killed by the kernel
//! when `keyless` dies, even by SIGKILL (`PR_SET_PDEATHSIG`, set by `keyless`'s launcher before
//! it becomes `sh`). A gateway that exits on its own before it is stopped is a problem of the
//! run (finding 12).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use replay_core::LoadedFixture;

use crate::boundary::{Boundaries, PlaceholderError};
use crate::golden::stem_of;

use crate::model_server::{ClientError, ModelServerClient};
use replay_core::protocol;

use crate::processes;
use crate::target::{GatewayTarget, HarnessError, ModelLedger};

/// The placeholder for the model server's OpenAI base URL in a gateway command.
pub const MODEL_BASE_URL_PLACEHOLDER: &str = "{model_base_url}";
/// The placeholder for the gateway's port in a gateway command.
pub const PORT_PLACEHOLDER: &str = "{port}";
/// The variable `keyless test --model-server` reads the reset token from; removed from the
/// gateway's environment.
pub const RESET_TOKEN_VAR: &str = protocol::RESET_TOKEN_VAR.name;

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
    /// The other boundaries the model server serves: each one's placeholder in the command
    /// (`{http_url:<name>}`) and variable (`KEYLESS_HTTP_URL_<NAME>`) stand for its URL there.
    pub boundaries: Arc<Boundaries>,
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
    /// The log file is a link or a special file, which is refused.
    #[error("cannot create the gateway log: {0}")]
    LogFile(crate::regular_file::FileError),
    /// No free port could be found.
    #[error("cannot find a free port on 127.0.0.1: {0}")]
    Port(std::io::Error),
    /// The command names a boundary that is not configured.
    #[error(transparent)]
    Placeholder(#[from] PlaceholderError),
    /// `sh` could not be started.
    #[error("cannot start the gateway command `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        source: std::io::Error,
    },
    /// The command exited before it was ready.
    #[error("the gateway command `{command}` exited ({status}) before {url} answered; its output is in {}{tail}", .log.display())]
    Exited {
        /// The command line.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// The readiness URL.
        url: String,
        /// The log file.
        log: PathBuf,
        /// Its last lines (boxed: the error stays small).
        tail: Box<LogTail>,
    },
    /// The readiness path did not answer 2xx in time.
    #[error("the gateway command `{command}` was not ready within {}s: {url} {last}; its output is in {}{tail}", .timeout.as_secs(), .log.display())]
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
        /// Its last lines (boxed: the error stays small).
        tail: Box<LogTail>,
    },
}

/// The last lines of a gateway's log, shown in the failure itself (issue 47): a gateway that
/// dies at boot (`ModuleNotFoundError: No module named 'uvicorn'`) is explained in the CI log,
/// without downloading the log as an artifact. Bounded (the last [`LogTail::LINES`] lines of
/// the last [`LogTail::BYTES`] bytes, each cut at [`LogTail::LINE_CHARS`] characters) and
/// escaped: a control character is shown as `\u{1b}`, never sent to the terminal.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogTail {
    /// The lines shown, oldest first.
    lines: Vec<String>,
    /// Whether earlier output was left out.
    cut: bool,
}

impl LogTail {
    /// How many lines are shown.
    pub const LINES: usize = 20;
    /// How many bytes at the end of the log are read.
    pub const BYTES: u64 = 8 * 1024;
    /// How many characters of one line are shown.
    pub const LINE_CHARS: usize = 300;

    /// The tail of the log at `path` (empty when it cannot be read: its path is named anyway).
    pub fn read(path: &Path) -> LogTail {
        let Ok(Some(bytes)) = crate::regular_file::read_tail(path, LogTail::BYTES) else {
            return LogTail::default();
        };
        let whole = std::fs::symlink_metadata(path).is_ok_and(|m| m.len() <= LogTail::BYTES);
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().collect();
        // A read that started mid-file starts mid-line: that line is left out.
        if !whole && !lines.is_empty() {
            lines.remove(0);
        }
        let cut = !whole || lines.len() > LogTail::LINES;
        let kept = &lines[lines.len().saturating_sub(LogTail::LINES)..];
        LogTail {
            lines: kept.iter().map(|line| escaped(line)).collect(),
            cut,
        }
    }
}

/// `line` cut at [`LogTail::LINE_CHARS`] characters, its control characters escaped.
fn escaped(line: &str) -> String {
    let mut out = String::new();
    for (index, c) in line.chars().enumerate() {
        if index == LogTail::LINE_CHARS {
            out.push('…');
            break;
        }
        if c.is_control() && c != '\t' {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

impl std::fmt::Display for LogTail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.lines.is_empty() {
            return f.write_str(" (it printed nothing)");
        }
        let which = if self.cut {
            "its last lines"
        } else {
            "all of it"
        };
        write!(f, "; {which}:")?;
        for line in &self.lines {
            write!(f, "\n  | {line}")?;
        }
        Ok(())
    }
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
    /// What the last reset cleared unread: problems of the run it started.
    discarded: Vec<replay_core::ModelProblem>,
    /// The running command's mark ([`processes::LAUNCH_MARK_VAR`]).
    mark: Option<String>,
    /// A program the command line is run through, with its leading arguments.
    launcher: Option<(PathBuf, Vec<String>)>,
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
            discarded: Vec::new(),
            mark: None,
            launcher: None,
        })
    }

    /// [`Launched::with_launcher`] when there is one.
    pub fn with_launcher_if(self, launcher: Option<(PathBuf, Vec<String>)>) -> Launched {
        match launcher {
            Some((program, args)) => self.with_launcher(program, args),
            None => self,
        }
    }

    /// Runs the command through `program args… sh -c <line>` instead of `sh -c <line>`: a
    /// launcher that readies the process before it becomes `sh` (`keyless`'s own sets
    /// `PR_SET_PDEATHSIG`, so the gateway dies with `keyless`).
    pub fn with_launcher(mut self, program: PathBuf, args: Vec<String>) -> Launched {
        self.launcher = Some((program, args));
        self
    }

    /// The target with the model server's reset token, which selecting a fixture needs
    /// ([`crate::model_server::ModelServer::reset_token`]). The gateway never gets it.
    pub fn with_reset_token(mut self, token: &str) -> Launched {
        self.model_server = self.model_server.clone().with_reset_token(token);
        self
    }

    /// The log file of the last fixture's gateway.
    pub fn log(&self) -> Option<&Path> {
        self.log.as_deref()
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
        // Never through a link or into a FIFO a repository planted (issue 34, finding 2).
        let out = crate::regular_file::create_log(&log).map_err(LaunchError::LogFile)?;
        let err = out.try_clone().map_err(log_error)?;
        let line = self
            .command
            .command
            .replace(MODEL_BASE_URL_PLACEHOLDER, &self.model_base_url)
            .replace(PORT_PLACEHOLDER, &port.to_string());
        let line = (self.command.boundaries).substitute(&line, &self.model_base_url)?;
        let mut command = match &self.launcher {
            Some((program, args)) => {
                let mut command = Command::new(program);
                command.args(args).arg("sh");
                command
            }
            None => Command::new("sh"),
        };
        let mark = uuid::Uuid::new_v4().to_string();
        self.mark = Some(mark.clone());
        command
            .arg("-c")
            .arg(&line)
            .current_dir(&self.command.working_dir)
            .env(processes::LAUNCH_MARK_VAR, &mark)
            .envs(
                // The model server's URL (`http://127.0.0.1:<port>/v1`) and the port the gateway
                // must listen on (127.0.0.1), under each name and the aliases older gateways read.
                protocol::MODEL_BASE_URL_VAR
                    .spellings()
                    .map(|name| (name, self.model_base_url.clone()))
                    .chain(
                        protocol::GATEWAY_PORT_VAR
                            .spellings()
                            .map(|name| (name, port.to_string())),
                    ),
            )
            .envs(self.command.boundaries.env(&self.model_base_url))
            // The reset token is the driver's alone.
            .env_remove(RESET_TOKEN_VAR)
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
                // Kept as running: the caller's stop still takes what the shell left behind.
                return Err(LaunchError::Exited {
                    command: self.command.command.clone(),
                    status,
                    url: ready,
                    tail: Box::new(LogTail::read(&log)),
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
                    tail: Box::new(LogTail::read(&log)),
                    log,
                });
            }
            tokio::time::sleep(READY_POLL).await;
        }
    }

    /// Starts the command (its log named after `name`) and waits until it is ready; returns its
    /// base URL. Whatever ran before is stopped first.
    pub async fn launch(&mut self, name: &str) -> Result<String, LaunchError> {
        let port = free_port().map_err(LaunchError::Port)?;
        self.launch_at(name, port).await
    }

    /// [`Self::launch`] on a given `port` (`keyless serve --port`, so a browser suite's
    /// configuration can name the gateway's URL in advance).
    pub async fn launch_at(&mut self, name: &str, port: u16) -> Result<String, LaunchError> {
        self.stop().await;
        self.running = Some(self.spawn(name, port)?);
        match self.wait_ready(port).await {
            Ok(url) => Ok(url),
            Err(error) => {
                self.stop().await;
                Err(error)
            }
        }
    }

    /// The running gateway's process group id (its shell's pid), while it runs.
    pub fn process_group(&self) -> Option<u32> {
        self.running.as_ref().map(Child::id)
    }

    /// Every process of the running command outside its group that can be found: those with
    /// its mark, and those below its shell.
    fn strays(&self, child: &Child) -> std::collections::BTreeSet<i32> {
        let mut found = self
            .mark
            .as_deref()
            .map(processes::marked)
            .unwrap_or_default();
        found.extend(processes::descendants_of(child.id() as i32));
        found.remove(&(child.id() as i32));
        found
    }

    /// Stops the running gateway: SIGTERM to its process group and to every process that left
    /// it, SIGKILL after the grace period (or once the shell is gone) to all of them again.
    /// Returns how the command ended when it had exited, or begun to exit, on its own before
    /// the SIGTERM (issue 45, finding 8): decided at the signal from the reaped status and the
    /// kernel's exiting flag, so an exit that races the stop is still the gateway's own.
    pub async fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.running.take()?;
        let group = rustix::process::Pid::from_child(&child);
        let strays = self.strays(&child);
        let own = own_exit(&mut child).await;
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::TERM);
        processes::signal_all(&strays, rustix::process::Signal::TERM);
        let deadline = Instant::now() + STOP_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // The shell is gone or out of time; anything it left, in its group or not, goes too.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        let _ = child.kill();
        let _ = child.wait();
        let mut strays = strays;
        strays.extend(
            self.mark
                .as_deref()
                .map(processes::marked)
                .unwrap_or_default(),
        );
        processes::signal_all(&strays, rustix::process::Signal::KILL);
        // Re-parented here by the subreaper, a killed stray is this process's zombie until
        // reaped.
        for _ in 0..20 {
            processes::reap(&strays);
            if !strays.iter().any(|pid| processes::alive(*pid)) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        self.mark = None;
        own
    }

    /// How the running command ended, if it has exited on its own since it was launched (call
    /// [`Self::stop`] still: it clears what the command left behind).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        self.running
            .as_mut()
            .and_then(|child| child.try_wait().ok().flatten())
    }

    /// [`Self::exited`], also when the command has only begun to exit: its exit is waited out,
    /// so a gateway that exits right after its run is never taken for a running one.
    pub async fn exited_now(&mut self) -> Option<ExitStatus> {
        match self.running.as_mut() {
            Some(child) => own_exit(child).await,
            None => None,
        }
    }
}

/// How long an exit under way may take to finish before [`own_exit`] gives up on its status.
const EXIT_TEARDOWN: Duration = Duration::from_secs(2);

/// How `child` ended if it has exited, or begun to exit, on its own (its status, reaped; an
/// exit under way is waited out for up to [`EXIT_TEARDOWN`]); `None` while it runs.
async fn own_exit(child: &mut Child) -> Option<ExitStatus> {
    if let Ok(Some(status)) = child.try_wait() {
        return Some(status);
    }
    if !processes::exiting(child.id() as i32) {
        return None;
    }
    let deadline = Instant::now() + EXIT_TEARDOWN;
    while Instant::now() < deadline {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

/// A free port on 127.0.0.1 (the listener is closed before the gateway binds it).
fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    Ok(listener.local_addr()?.port())
}

#[async_trait]
impl GatewayTarget for Launched {
    async fn start(&mut self, fixture: &LoadedFixture) -> Result<String, HarnessError> {
        let path = fixture.path();
        self.fixture = path.to_path_buf();
        self.stop().await;
        let stem = stem_of(path);
        let reply = self
            .model_server
            .reset(Some(&stem))
            .await
            .map_err(|source| HarnessError::ModelServer {
                fixture: path.to_path_buf(),
                source,
            })?;
        self.discarded = reply.discarded_problems();
        self.launch(&stem).await.map_err(|error| self.failed(error))
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        // A gateway that crashed after its last answer would otherwise pass (finding 12), also
        // when its exit races the stop (issue 45, finding 8).
        let exited = self.stop().await.map(|status| {
            GatewayExited::new(status, self.log.clone().unwrap_or_default()).to_string()
        });
        let state =
            self.model_server
                .state()
                .await
                .map_err(|source| HarnessError::ModelServer {
                    fixture: self.fixture.clone(),
                    source,
                })?;
        let mut ledger = ModelLedger::from_state(state);
        ledger.other_problems.append(&mut self.discarded);
        ledger
            .other_problems
            .extend(exited.map(|message| replay_core::ModelProblem::GatewayExited { message }));
        Ok(ledger)
    }
}

/// A gateway that exited, on its own or by a signal, before the runner stopped it: a problem
/// of the run, whatever its stream looked like.
#[derive(Debug, thiserror::Error)]
#[error(
    "gateway_exited: the gateway command exited ({status}) before it was stopped; its output is in {}{tail}",
    .log.display()
)]
pub struct GatewayExited {
    /// How it exited.
    pub status: ExitStatus,
    /// Its log.
    pub log: PathBuf,
    /// The log's last lines.
    pub tail: LogTail,
}

impl GatewayExited {
    /// The gateway that exited with `status`, its log at `log` (its last lines read now).
    pub fn new(status: ExitStatus, log: PathBuf) -> GatewayExited {
        GatewayExited {
            status,
            tail: LogTail::read(&log),
            log,
        }
    }
}

impl Drop for Launched {
    fn drop(&mut self) {
        if let Some(mut child) = self.running.take() {
            let strays = self.strays(&child);
            let group = rustix::process::Pid::from_child(&child);
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
            processes::signal_all(&strays, rustix::process::Signal::KILL);
            let _ = child.wait();
            processes::reap(&strays);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model_server::{Mode, ModelServer, ServerOptions};

    /// The gateway's environment names the model server's URL and its port under each
    /// spelling (`replay_core::protocol`): a gateway reading `KEYLESS_GATEWAY_PORT` or its alias
    /// `HARNESS_GATEWAY_PORT` gets ready on the port keyless picked, and sees the same URL under
    /// both base URL names.
    #[tokio::test]
    async fn a_gateway_reads_its_port_and_model_url_under_each_protocol_spelling() {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/write_read_file.flash.json");
        let server = ModelServer::start(
            Mode::Fixtures(vec![fixture.clone()]),
            ServerOptions::default(),
        )
        .await
        .expect("model server");
        let logs = tempfile::tempdir().expect("tempdir");
        let loaded = LoadedFixture::load(&fixture).expect("fixture");
        let urls: Vec<String> = protocol::MODEL_BASE_URL_VAR
            .spellings()
            .map(|name| format!("${name}"))
            .collect();
        for port_var in protocol::GATEWAY_PORT_VAR.spellings() {
            let command = format!(
                "echo \"{}\" > urls.txt; exec python3 -m http.server ${port_var} --bind 127.0.0.1",
                urls.join(" ")
            );
            let mut launched = Launched::new(
                GatewayCommand {
                    command,
                    working_dir: logs.path().to_path_buf(),
                    ready_path: "/".into(),
                    ready_timeout: Duration::from_secs(20),
                    log_dir: logs.path().to_path_buf(),
                    boundaries: Default::default(),
                },
                &server.base_url(),
            )
            .expect("launched")
            .with_reset_token(server.reset_token());
            let ready = launched.start(&loaded).await;
            launched.finish().await.expect("ledger");
            assert!(ready.is_ok(), "{port_var}: {ready:?}");
            let written = std::fs::read_to_string(logs.path().join("urls.txt")).expect("urls");
            let expected = vec![server.base_url(); urls.len()].join(" ");
            assert_eq!(written.trim(), expected, "{port_var}");
        }
    }

    #[tokio::test]
    async fn finding_12_a_gateway_that_exits_before_it_is_stopped_is_a_problem_of_the_run() {
        let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/write_read_file.flash.json");
        let server = ModelServer::start(
            Mode::Fixtures(vec![fixture.clone()]),
            ServerOptions::default(),
        )
        .await
        .expect("model server");
        let logs = tempfile::tempdir().expect("tempdir");
        // (command, what the problem says): the shell ends on its own once the test, after the
        // gateway was ready, creates `go`.
        let serve = "python3 -m http.server {port} --bind 127.0.0.1 & \
                     while [ ! -e go ]; do sleep 0.05; done;";
        let cases = [
            (format!("{serve} exit 7"), Some("exit status: 7")),
            (format!("{serve} kill -9 $$"), Some("signal: 9")),
            (format!("{serve} wait"), None),
        ];
        for (command, says) in cases {
            let mut launched = Launched::new(
                GatewayCommand {
                    command: command.clone(),
                    working_dir: logs.path().to_path_buf(),
                    ready_path: "/".into(),
                    ready_timeout: Duration::from_secs(20),
                    log_dir: logs.path().to_path_buf(),
                    boundaries: Default::default(),
                },
                &server.base_url(),
            )
            .expect("launched")
            .with_reset_token(server.reset_token());
            let loaded = LoadedFixture::load(&fixture).expect("fixture");
            let go = logs.path().join("go");
            let _ = std::fs::remove_file(&go);
            launched.start(&loaded).await.expect("ready");
            std::fs::write(&go, "").expect("go");
            tokio::time::sleep(Duration::from_millis(500)).await;
            let ledger = launched.finish().await.expect("ledger");
            let exited: Vec<&String> = (ledger.other_problems.iter())
                .filter_map(|problem| match problem {
                    replay_core::ModelProblem::GatewayExited { message } => Some(message),
                    _ => None,
                })
                .collect();
            match says {
                Some(says) => assert!(
                    matches!(exited.as_slice(), [line] if line.contains(says)),
                    "{command}: {exited:?}"
                ),
                None => assert!(exited.is_empty(), "{command}: {exited:?}"),
            }
        }
    }
}

#[cfg(test)]
mod boundary_tests {
    use super::*;
    use crate::boundary::{BoundaryName, HttpUpstream};

    fn command(line: &str, folder: &Path) -> GatewayCommand {
        let tavily = HttpUpstream::new("https://api.tavily.com", &[], &[]).expect("upstream");
        GatewayCommand {
            command: line.to_owned(),
            working_dir: folder.to_path_buf(),
            ready_path: "/".into(),
            ready_timeout: Duration::from_secs(20),
            log_dir: folder.to_path_buf(),
            boundaries: Arc::new(Boundaries {
                http: [(BoundaryName::parse("tavily").expect("name"), tavily)].into(),
                configured_in: "/repo/keyless.toml".into(),
                ..Boundaries::default()
            }),
        }
    }

    /// The gateway command gets each boundary's URL on the model server in its placeholder and
    /// its variable; a placeholder naming no configured boundary stops the launch, naming it and
    /// the file.
    #[tokio::test]
    async fn a_boundary_s_placeholder_and_variable_hold_its_url_and_an_unknown_one_is_refused() {
        let folder = tempfile::tempdir().expect("tempdir");
        let line = "echo \"{http_url:tavily} $KEYLESS_HTTP_URL_TAVILY\" > seen; \
                    exec python3 -m http.server {port} --bind 127.0.0.1";
        let mut launched = Launched::new(command(line, folder.path()), "http://127.0.0.1:8090/v1")
            .expect("launched");
        launched.launch("boundary").await.expect("ready");
        let seen = std::fs::read_to_string(folder.path().join("seen")).expect("seen");
        launched.stop().await;
        let url = "http://127.0.0.1:8090/_keyless/http/tavily";
        assert_eq!(seen.trim(), format!("{url} {url}"));
        let mut launched = Launched::new(
            command("exec serve {http_url:brave}", folder.path()),
            "http://127.0.0.1:8090/v1",
        )
        .expect("launched");
        let err = launched
            .launch("unknown")
            .await
            .expect_err("refused")
            .to_string();
        assert!(
            err.starts_with("{http_url:brave} names no boundary configured in /repo/keyless.toml"),
            "{err}"
        );
    }
}
