//! A gateway started once and kept for several fixtures (`keyless test --reuse-gateway`):
//! [`Reused`], a [`GatewayTarget`] over [`Launched`] that starts the gateway command for the
//! first fixture and leaves it running, switching only the model server's fixture
//! (`POST /_harness/reset`) between runs. Every fixture still opens its own session and thread
//! (the driver registers a new user and creates a new thread per fixture), so what the runs share
//! is the process and whatever it keeps across sessions.
//!
//! What may leak from one fixture into the next (why it is off by default):
//! - state the gateway keeps across users and threads: caches, a global memory or summary, a
//!   database's rows, counters, rate limiters; a golden that shows such state depends on the
//!   order the fixtures ran in;
//! - model calls the previous run makes after its stream ended (a background title or memory
//!   update): one that arrives after the switch is answered, or missed, under the next fixture;
//! - a gateway that crashed: it is started again for the next fixture, whose log is then a new
//!   file.
//!
//! A fixture that carries its own gateway settings (`gateway_config`) never runs on the shared
//! gateway: it gets a fresh one, stopped after it, and the next fixture starts the shared one
//! again.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use replay_core::{Fixture, LoadedFixture};

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
    fixture: PathBuf,
    /// The current fixture has a gateway of its own, stopped when it finishes.
    own: bool,
    /// What the last reset cleared unread: problems of the run it started.
    discarded: Vec<replay_core::ModelProblem>,
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
            fixture: PathBuf::new(),
            own: false,
            discarded: Vec::new(),
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
        let stem = stem_of(path);
        let reply = self
            .model_server
            .reset(Some(&stem))
            .await
            .map_err(|source| self.model_server_error(source))?;
        self.discarded = reply.discarded_problems();
        self.own = carries_gateway_config(fixture);
        let name = if self.own {
            // `launch` stops the shared gateway first.
            self.shared = None;
            stem
        } else {
            match &self.shared {
                Some(url) if self.launched.is_running() => return Ok(url.clone()),
                _ => self.name.clone(),
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

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        // A gateway that died during this fixture's run fails it (finding 12); a shared one is
        // started again for the next fixture.
        let exited = self.launched.exited().map(|status| {
            let log = self.launched.log().map(Path::to_path_buf);
            GatewayExited::new(status, log.unwrap_or_default()).to_string()
        });
        if self.own || exited.is_some() {
            self.launched.stop().await;
            self.shared = None;
        }
        let state = self
            .model_server
            .state()
            .await
            .map_err(|source| self.model_server_error(source))?;
        let mut ledger = ModelLedger::from_problems(state.problems, state.unused_turns);
        ledger.other_problems.append(&mut self.discarded);
        ledger
            .other_problems
            .extend(exited.map(|message| replay_core::ModelProblem::GatewayExited { message }));
        Ok(ledger)
    }
}
