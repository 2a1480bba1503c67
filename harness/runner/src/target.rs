//! Where Layer 1 sends its requests: one interface, [`GatewayTarget`], that the runner
//! (`layer1::run_on`) takes, and its two implementations.
//!
//! - `InProcess` boots `gateway-under-test` in this process with the replay model over the
//!   fixture, as every golden test does;
//! - [`AtUrl`] drives a gateway that already runs elsewhere, in any language, whose model points
//!   at a [model server](crate::model_server): it selects the fixture on the model server before
//!   the drive and reads the model server's problems after it.
//!
//! Either way the drive (register → thread → `runs/stream`) and the golden comparison are the
//! same code, so both paths are held to the same goldens.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use replay_core::{Ambiguity, Fixture, Miss};

use crate::golden::stem_of;
use crate::layer1::HarnessError;
use crate::model_server::{ClientError, ModelServerClient, Problem};

/// What the model side saw during one drive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelLedger {
    /// Calls with no recorded output.
    pub misses: Vec<Miss>,
    /// Calls that named no caller and met a key with several different answers.
    pub ambiguities: Vec<Ambiguity>,
    /// Other model-side failures, as their messages: a strict-replay mismatch, an ambiguous
    /// caller, a request the model server could not read.
    pub other_problems: Vec<String>,
    /// Recorded turns nobody asked for (information, not failure).
    pub unused_turns: Vec<usize>,
}

impl ModelLedger {
    /// Sorts a model server's problems into misses and the rest.
    pub fn from_problems(problems: Vec<Problem>, unused_turns: Vec<usize>) -> ModelLedger {
        let mut ledger = ModelLedger {
            unused_turns,
            ..ModelLedger::default()
        };
        for problem in problems {
            match problem {
                Problem::Miss { miss, .. } => ledger.misses.push(*miss),
                Problem::AmbiguousAnswer { ambiguity, .. } => ledger.ambiguities.push(*ambiguity),
                other => {
                    ledger
                        .other_problems
                        .push(format!("{}: {}", other.kind(), other.message()))
                }
            }
        }
        ledger
    }
}

/// A gateway Layer 1 can drive through one fixture.
#[async_trait]
pub trait GatewayTarget: Send {
    /// Readies a gateway to replay `fixture` (read from `path`) and returns its base URL
    /// (`http://127.0.0.1:<port>`). A target that replays in process shares the fixture with
    /// its engine instead of copying it.
    async fn start(&mut self, path: &Path, fixture: &Arc<Fixture>) -> Result<String, HarnessError>;

    /// After the drive, whether it succeeded or not: stops what [`start`](Self::start) started
    /// and returns what the model side saw.
    async fn finish(&mut self) -> Result<ModelLedger, HarnessError>;
}

/// A gateway already running at a URL, whose model is a model server. The fixture's
/// `gateway_config` cannot be applied to it: the gateway must be configured to match.
#[derive(Debug, Clone)]
pub struct AtUrl {
    gateway_url: String,
    model_server: ModelServerClient,
    fixture: std::path::PathBuf,
    /// What the last reset cleared unread: problems of the run it started.
    discarded: Vec<String>,
}

impl AtUrl {
    /// The gateway at `gateway_url`, replaying through the model server at `model_server_url`
    /// (its root or its `/v1` base URL).
    pub fn new(gateway_url: &str, model_server_url: &str) -> Result<AtUrl, ClientError> {
        Ok(AtUrl {
            gateway_url: gateway_url.trim_end_matches('/').to_owned(),
            model_server: ModelServerClient::new(model_server_url)?,
            fixture: std::path::PathBuf::new(),
            discarded: Vec::new(),
        })
    }

    /// The target with the model server's reset token, which selecting a fixture needs
    /// ([`crate::model_server::ModelServer::reset_token`], or what `keyless model-server`
    /// printed).
    pub fn with_reset_token(mut self, token: &str) -> AtUrl {
        self.model_server = self.model_server.with_reset_token(token);
        self
    }

    fn model_server_error(&self, source: ClientError) -> HarnessError {
        HarnessError::ModelServer {
            fixture: self.fixture.clone(),
            source,
        }
    }
}

#[async_trait]
impl GatewayTarget for AtUrl {
    async fn start(
        &mut self,
        path: &Path,
        _fixture: &Arc<Fixture>,
    ) -> Result<String, HarnessError> {
        self.fixture = path.to_path_buf();
        let reply = self
            .model_server
            .reset(Some(&stem_of(path)))
            .await
            .map_err(|source| self.model_server_error(source))?;
        self.discarded = reply.problem_lines();
        Ok(self.gateway_url.clone())
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        let state = self
            .model_server
            .state()
            .await
            .map_err(|source| self.model_server_error(source))?;
        let mut ledger = ModelLedger::from_problems(state.problems, state.unused_turns);
        ledger.other_problems.append(&mut self.discarded);
        Ok(ledger)
    }
}
