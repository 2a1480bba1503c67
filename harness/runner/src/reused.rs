//! A gateway started once and kept for several fixtures (`keyless test --reuse-gateway`):
//! [`Reused`], a [`GatewayTarget`] over [`Launched`] that starts the gateway command for the
//! first fixture and leaves it running, switching only the model server's fixture
//! (`POST /_keyless/reset`) between runs. Every fixture still opens its own session and thread
//! (the driver registers a new user and creates a new thread per fixture), so what the runs share
//! is the process and whatever it keeps across sessions.
//!
//! What may leak from one fixture into the next (why it is off by default):
//! - state the gateway keeps across users and threads: caches, a global memory or summary, a
//!   database's rows, counters, rate limiters; a golden that shows such state depends on the
//!   order the fixtures ran in.
//!
//! What cannot (issue 45, findings 8 and 9), each charged to the fixture that ran last
//! ([`Reused::take_last_run`], which `keyless test` adds to that fixture's verdict once the next
//! fixture's run has begun, or [`Reused::settle`] after the last):
//! - model calls a run makes after it ended (a background title or memory update): from one
//!   run's end until the next run begins (the next fixture's session and conversation are open,
//!   its first run not yet sent) the model server has no run open, refuses every call and keeps
//!   it as a `call_between_runs` problem, so no fixture is answered from or credited with
//!   another's call;
//! - a gateway that exited after its run (seen when the next fixture starts, or when the run
//!   ends): a `gateway_exited` problem; the next fixture starts it again, with a log of its own
//!   (`job-1.2.gateway.log`, …) so the dead one's log stays as the problem names it.
//!
//! A fixture that carries its own gateway settings (`gateway_config`) never runs on the shared
//! gateway: it gets a fresh one, stopped after it, and the next fixture starts the shared one
//! again.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use replay_core::{Fixture, LoadedFixture, ModelProblem};

use crate::golden::stem_of;
use crate::launched::{GatewayCommand, GatewayExited, Launched};

use crate::model_server::{ClientError, ModelServerClient};
use crate::target::{GatewayTarget, HarnessError, ModelLedger};

/// The gateway command, started once and kept for every fixture that carries no gateway settings
/// of its own.
#[derive(Debug)]
pub struct Reused {
    launched: Launched,
    model_server: ModelServerClient,
    /// The shared gateway's log name (`<name>.gateway.log`).
    name: String,
    /// The shared gateway's base URL while it runs.
    shared: Option<String>,
    /// How many times the shared gateway was started: a restart's log is `<name>.<n>`.
    launches: usize,
    fixture: PathBuf,
    /// The current fixture has a gateway of its own, stopped when it finishes.
    own: bool,
    /// What the last reset cleared unread: problems of the run it started.
    discarded: Vec<ModelProblem>,
    /// The fixture whose replay opens when its run begins (the shared gateway was running).
    opening: Option<String>,
    /// The model server has no run open ([`ModelServerClient::end_run`]).
    between_runs: bool,
    /// Why opening the replay at the run's beginning failed, for [`GatewayTarget::finish`].
    failed: Option<ClientError>,
    /// Problems of the fixture that ran last, found after its run.
    last_run: Vec<ModelProblem>,
}

/// Whether `fixture` carries gateway settings of its own, so it must not share a gateway.
pub fn carries_gateway_config(fixture: &Fixture) -> bool {
    fixture
        .scenario
        .gateway_config
        .as_ref()
        .is_some_and(|config| !config.is_null())
}

impl Reused {
    /// The gateway `command`, its model at the model server whose OpenAI base URL is
    /// `model_base_url`; the shared gateway's log is `<name>.gateway.log`.
    pub fn new(
        command: GatewayCommand,
        model_base_url: &str,
        name: &str,
    ) -> Result<Reused, ClientError> {
        Ok(Reused {
            launched: Launched::new(command, model_base_url)?,
            model_server: ModelServerClient::new(model_base_url)?,
            name: name.to_owned(),
            shared: None,
            launches: 0,
            fixture: PathBuf::new(),
            own: false,
            discarded: Vec::new(),
            opening: None,
            between_runs: false,
            failed: None,
            last_run: Vec::new(),
        })
    }

    /// The target with the model server's reset token, which selecting a fixture needs. The
    /// gateway never gets it.
    pub fn with_reset_token(mut self, token: &str) -> Reused {
        self.launched = self.launched.with_reset_token(token);
        self.model_server = self.model_server.clone().with_reset_token(token);
        self
    }

    /// The gateway command started through `launcher` ([`Launched::with_launcher_if`]).
    pub fn with_launcher_if(mut self, launcher: Option<(PathBuf, Vec<String>)>) -> Reused {
        self.launched = self.launched.with_launcher_if(launcher);
        self
    }

    /// The log of the gateway the last fixture ran on.
    pub fn log(&self) -> Option<&Path> {
        self.launched.log()
    }

    /// Whether the last fixture ran on the shared gateway (not one of its own).
    pub fn shared_last(&self) -> bool {
        !self.own
    }

    /// Stops whichever gateway runs.
    pub async fn stop(&mut self) {
        self.launched.stop().await;
        self.shared = None;
    }

    /// The problems of the fixture that ran last found since its run ended: a model call while
    /// no run was open, its shared gateway's exit. Taken once the next fixture's run has begun
    /// (its [`GatewayTarget::finish`] returned).
    pub fn take_last_run(&mut self) -> Vec<ModelProblem> {
        std::mem::take(&mut self.last_run)
    }

    /// After the last fixture: stops the shared gateway and returns [`Self::take_last_run`]
    /// with what the stop and the model server found after that fixture's run.
    pub async fn settle(&mut self) -> Vec<ModelProblem> {
        if self.shared.take().is_some()
            && let Some(status) = self.launched.stop().await
        {
            let exited = self.exited_after_run(status);
            self.last_run.push(exited);
        }
        if self.between_runs {
            match self.model_server.state().await {
                Ok(state) => self.last_run.extend((state.problems.iter()).map(|problem| {
                    ModelProblem::Reported {
                        kind: problem.kind(),
                        message: problem.message().to_owned(),
                    }
                })),
                Err(err) => self.last_run.push(ModelProblem::Reported {
                    kind: replay_core::ModelProblemKind::CallBetweenRuns,
                    message: format!(
                        "the model server could not say whether a call came after the run: {}",
                        crate::suite::error_chain(&err)
                    ),
                }),
            }
        }
        self.take_last_run()
    }

    /// The problem of a shared gateway that exited after the run of the fixture that ran last.
    fn exited_after_run(&self, status: std::process::ExitStatus) -> ModelProblem {
        let exited = GatewayExited::new(
            status,
            self.log().map(Path::to_path_buf).unwrap_or_default(),
        );
        ModelProblem::GatewayExited {
            message: format!(
                "{exited} (the shared gateway, after this fixture's run and before the next \
                 fixture's; the next one starts it again)"
            ),
        }
    }

    /// Opens `stem`'s replay (`POST /_keyless/reset`). What it discarded is the fixture that
    /// ran last's when no run was open (calls between the runs), else the starting run's.
    async fn open(&mut self, stem: &str) -> Result<(), ClientError> {
        let reply = self.model_server.reset(Some(stem)).await?;
        if std::mem::take(&mut self.between_runs) {
            self.last_run.extend(reply.problems_of_the_last_run());
            self.discarded.clear();
        } else {
            self.discarded = reply.discarded_problems();
        }
        Ok(())
    }

    fn model_server_error(&self, source: ClientError) -> HarnessError {
        HarnessError::ModelServer {
            fixture: self.fixture.clone(),
            source,
        }
    }
}

#[async_trait]
impl GatewayTarget for Reused {
    async fn start(&mut self, loaded: &LoadedFixture) -> Result<String, HarnessError> {
        let (path, fixture) = (loaded.path(), loaded.fixture());
        self.fixture = path.to_path_buf();
        self.failed = None;
        self.opening = None;
        let stem = stem_of(path);
        // A shared gateway that exited after the last fixture's run is that fixture's problem.
        if self.shared.is_some()
            && let Some(status) = self.launched.exited_now().await
        {
            let exited = self.exited_after_run(status);
            self.last_run.push(exited);
            self.launched.stop().await;
            self.shared = None;
        }
        self.own = carries_gateway_config(fixture);
        if !self.own
            && let Some(url) = &self.shared
        {
            // The replay opens when the run begins: until then no run is open.
            self.opening = Some(stem);
            self.discarded.clear();
            return Ok(url.clone());
        }
        // A gateway starts now, and may call the model as it boots: the replay opens first.
        self.open(&stem)
            .await
            .map_err(|source| self.model_server_error(source))?;
        let name = if self.own {
            // `launch` stops the shared gateway first.
            self.shared = None;
            stem
        } else {
            self.launches += 1;
            match self.launches {
                1 => self.name.clone(),
                n => format!("{}.{n}", self.name),
            }
        };
        let url = self
            .launched
            .launch(&name)
            .await
            .map_err(|error| HarnessError::Boot {
                fixture: path.to_path_buf(),
                source: Box::new(error),
            })?;
        if !self.own {
            self.shared = Some(url.clone());
        }
        Ok(url)
    }

    async fn run_begins(&mut self) {
        if let Some(stem) = self.opening.take()
            && let Err(err) = self.open(&stem).await
        {
            self.failed = Some(err);
        }
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        // A drive that failed before its run began still opens the replay, so what came in
        // between is the last fixture's and this one's ledger is its own.
        self.run_begins().await;
        // A gateway that died during this fixture's run fails it (finding 12), also when its
        // exit races the check (issue 45, finding 8); a shared one is started again for the
        // next fixture.
        let exited = if self.own {
            self.launched.stop().await
        } else {
            self.launched.exited_now().await
        };
        if self.own || exited.is_some() {
            self.launched.stop().await;
            self.shared = None;
        }
        if let Some(source) = self.failed.take() {
            return Err(self.model_server_error(source));
        }
        let state = self
            .model_server
            .state()
            .await
            .map_err(|source| self.model_server_error(source))?;
        let mut ledger = ModelLedger::from_state(state);
        ledger.other_problems.append(&mut self.discarded);
        ledger.other_problems.extend(exited.map(|status| {
            ModelProblem::GatewayExited {
                message: GatewayExited::new(
                    status,
                    self.log().map(Path::to_path_buf).unwrap_or_default(),
                )
                .to_string(),
            }
        }));
        if self.shared.is_some() {
            // The run has ended: a call from now until the next run begins is refused and this
            // fixture's (issue 45, finding 9).
            let reply = self
                .model_server
                .end_run()
                .await
                .map_err(|source| self.model_server_error(source))?;
            ledger
                .other_problems
                .extend(reply.problems_of_the_last_run());
            self.between_runs = true;
        }
        Ok(ledger)
    }
}
