//! Where Layer 1 sends its requests: one interface, [`GatewayTarget`], that the runner
//! ([`crate::run`]) takes, its two implementations here and [`HarnessError`], why a fixture
//! could not run at all.
//!
//! - `InProcess` boots `gateway-under-test` in this process with the replay model over the
//!   fixture, as every golden test does;
//! - [`AtUrl`] drives a gateway that already runs elsewhere, in any language, whose model points
//!   at a [model server](crate::model_server): it selects the fixture on the model server before
//!   the drive and reads the model server's problems after it.
//!
//! Either way the drive (register → thread → `runs/stream`) and the golden comparison are the
//! same code, so both paths are held to the same goldens.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use replay_core::{Ambiguity, FixtureError, LoadedFixture, Miss, ModelProblem};

use crate::boundary::BoundaryLedger;
use crate::driver::DriverError;
use crate::golden::stem_of;
use crate::model_server::{ClientError, FaultFired, ModelServerClient, Problem, ServerState};

/// Why a scenario could not run at all (as opposed to running and drifting).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// The fixture is malformed.
    #[error(transparent)]
    Fixture(#[from] FixtureError),
    /// The gateway did not boot.
    #[error("booting the gateway for {fixture}: {source}")]
    Boot {
        /// The fixture file.
        fixture: PathBuf,
        /// Why (the adapter's boot error).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A request of the drive failed.
    #[error("driving the gateway for {fixture}: {source}")]
    Drive {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: DriverError,
    },
    /// The fixture's drive ran past its time limit (a fixture with thousands of follow-ups
    /// would otherwise run unbounded).
    #[error(
        "{fixture}: the drive ran past the fixture's time limit of {} s and was stopped (raise it \
         with --fixture-time-limit SECS, a flag of keyless test and cargo xtask replay, if the \
         fixture is meant to be that long)",
        .limit.as_secs_f64()
    )]
    TimedOut {
        /// The fixture file.
        fixture: PathBuf,
        /// The limit.
        limit: Duration,
    },
    /// The model server of a gateway that runs elsewhere could not select the fixture or report.
    #[error("model server for {fixture}: {source}")]
    ModelServer {
        /// The fixture file.
        fixture: PathBuf,
        /// Why.
        source: ClientError,
    },
}

/// What the model side saw during one drive.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ModelLedger {
    /// Calls with no recorded output.
    pub misses: Vec<Miss>,
    /// Calls that named no caller and met a key with several different answers.
    pub ambiguities: Vec<Ambiguity>,
    /// Other model-side failures: a strict-replay mismatch, an ambiguous caller, a request the
    /// model server could not read.
    pub other_problems: Vec<ModelProblem>,
    /// Recorded turns nobody asked for (information, not failure).
    pub unused_turns: Vec<usize>,
    /// A fault scenario's faults and how often each fired (none outside one).
    pub faults_fired: Vec<FaultFired>,
    /// What the other boundaries (HTTP, MCP) saw: their misses and unused exchanges fail the run.
    pub boundaries: BoundaryLedger,
}

impl ModelLedger {
    /// What a model server's state says the model side and the other boundaries saw, and the
    /// faults that fired.
    pub fn from_state(state: ServerState) -> ModelLedger {
        let mut ledger = ModelLedger::from_problems(state.problems, state.unused_turns);
        ledger.boundaries.unused = state.unused_exchanges;
        ledger.faults_fired = state.faults;
        ledger
    }

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
                Problem::ExchangeMiss { miss, .. } => ledger.boundaries.misses.push(*miss),
                other => ledger.other_problems.push(ModelProblem::Reported {
                    kind: other.kind(),
                    message: other.message().to_owned(),
                }),
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
    async fn start(&mut self, fixture: &LoadedFixture) -> Result<String, HarnessError>;

    /// During the drive, once the session and its conversation are open and just before the
    /// first run is sent. A target whose gateway outlives a fixture (`Reused`) opens the
    /// fixture's replay only now, so a call its gateway makes between two fixtures' runs is
    /// credited to neither (issue 45, finding 9). What goes wrong here is reported by
    /// [`finish`](Self::finish).
    async fn run_begins(&mut self) {}

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
    fixture: PathBuf,
    /// What the last reset cleared unread: problems of the run it started.
    discarded: Vec<replay_core::ModelProblem>,
}

impl AtUrl {
    /// The gateway at `gateway_url`, replaying through the model server at `model_server_url`
    /// (its root or its `/v1` base URL).
    pub fn new(gateway_url: &str, model_server_url: &str) -> Result<AtUrl, ClientError> {
        Ok(AtUrl {
            gateway_url: gateway_url.trim_end_matches('/').to_owned(),
            model_server: ModelServerClient::new(model_server_url)?,
            fixture: PathBuf::new(),
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
    async fn start(&mut self, fixture: &LoadedFixture) -> Result<String, HarnessError> {
        let path = fixture.path();
        self.fixture = path.to_path_buf();
        let reply = self
            .model_server
            .reset(Some(&stem_of(path)))
            .await
            .map_err(|source| self.model_server_error(source))?;
        self.discarded = reply.discarded_problems();
        Ok(self.gateway_url.clone())
    }

    async fn finish(&mut self) -> Result<ModelLedger, HarnessError> {
        let state = self
            .model_server
            .state()
            .await
            .map_err(|source| self.model_server_error(source))?;
        let mut ledger = ModelLedger::from_state(state);
        ledger.other_problems.append(&mut self.discarded);
        Ok(ledger)
    }
}
