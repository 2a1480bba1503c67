//! The driver's side of a model server's `/_keyless/*` routes: start a fresh replay of a named
//! fixture, then read what the model side saw.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::problems::Problem;
use super::shared::RESET_TOKEN_HEADER;
use replay_core::{ModelProblem, UnusedExchange, protocol};

/// A model server's state, as `GET /_keyless/state` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerState {
    /// `fixture`, `recording` or `record`.
    pub(crate) mode: String,
    /// The active fixture's name (fixture mode).
    pub(crate) fixture: Option<String>,
    /// Every loaded fixture's name (fixture mode).
    pub(crate) fixtures: Vec<String>,
    /// Calls served since the last reset.
    pub served_calls: usize,
    /// The active fixture's turns nobody asked for (fixture mode; information, not failure).
    pub(crate) unused_turns: Vec<usize>,
    /// How many calls the recording holds (recording and record modes).
    pub recorded_calls: Option<usize>,
    /// Every problem since the start or the last reset.
    pub(crate) problems: Vec<Problem>,
    /// The active fault scenario's faults and how often each fired (none outside one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<super::faulted::FaultFired>,
    /// Fixture replay: the active fixture's recorded exchanges nobody asked for yet.
    #[serde(default)]
    pub(crate) unused_exchanges: Vec<UnusedExchange>,
}

/// Why a model server could not be reached or refused a request.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request failed.
    #[error("model server {route}: {source}")]
    Http {
        /// Method and URL.
        route: String,
        /// What reqwest said.
        source: reqwest::Error,
    },
    /// The server refused.
    #[error("model server {route}: {status}: {body}")]
    Status {
        /// Method and URL.
        route: String,
        /// The status.
        status: u16,
        /// The body.
        body: String,
    },
}

/// What `POST /_keyless/reset` answered.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ResetReply {
    /// How many problems the reset cleared that no driver had read: they happened since the
    /// last read (after one run, before the next), so the run that starts now counts them.
    #[serde(default, rename = "discarded_unread_problems")]
    pub discarded_count: usize,
    /// Those of them the ledger kept in full.
    #[serde(default)]
    pub discarded: Vec<Problem>,
}

impl ResetReply {
    /// The discarded problems as the fixture that ran last's own: what arrived after its run
    /// ended, while no run was open ([`ModelServerClient::end_run`]).
    pub fn problems_of_the_last_run(&self) -> Vec<ModelProblem> {
        self.discarded_as(|kind, message| ModelProblem::Reported { kind, message })
    }

    /// The discarded problems for a run's ledger ([`ModelProblem::DiscardedAtReset`]), and one
    /// more when some were not kept in full.
    pub fn discarded_problems(&self) -> Vec<ModelProblem> {
        self.discarded_as(|kind, message| ModelProblem::DiscardedAtReset { kind, message })
    }

    /// Each discarded problem made by `problem` from its kind and message, then one
    /// [`ModelProblem::DiscardedUnkept`] when some were not kept in full.
    fn discarded_as(
        &self,
        problem: impl Fn(replay_core::ModelProblemKind, String) -> ModelProblem,
    ) -> Vec<ModelProblem> {
        let mut problems: Vec<ModelProblem> = (self.discarded.iter())
            .map(|discarded| problem(discarded.kind(), discarded.message().to_owned()))
            .collect();
        if self.discarded_count > self.discarded.len() {
            problems.push(ModelProblem::DiscardedUnkept {
                count: self.discarded_count,
                not_kept: self.discarded_count - self.discarded.len(),
            });
        }
        problems
    }
}

/// The reset token, never shown by `Debug`.
#[derive(Clone)]
struct ResetToken(String);

impl std::fmt::Debug for ResetToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResetToken([redacted])")
    }
}

/// A client of one model server's driver routes.
#[derive(Debug, Clone)]
pub struct ModelServerClient {
    root: String,
    http: reqwest::Client,
    reset_token: Option<ResetToken>,
}

impl ModelServerClient {
    /// A client for the server at `url` (`http://127.0.0.1:<port>`; a trailing `/v1` is
    /// tolerated, so the gateway's base URL works too).
    pub fn new(url: &str) -> Result<ModelServerClient, ClientError> {
        let root = url.trim_end_matches('/');
        let root = root.strip_suffix("/v1").unwrap_or(root).to_owned();
        let http = reqwest::Client::builder()
            .no_proxy()
            .build()
            .map_err(|source| ClientError::Http {
                route: "client".into(),
                source,
            })?;
        Ok(ModelServerClient {
            root,
            http,
            reset_token: None,
        })
    }

    /// The client with the server's reset token ([`super::ModelServer::reset_token`], or what
    /// `keyless model-server` printed), which [`ModelServerClient::reset`] needs.
    pub fn with_reset_token(mut self, token: &str) -> ModelServerClient {
        let token = token.trim();
        self.reset_token = (!token.is_empty()).then(|| ResetToken(token.to_owned()));
        self
    }

    async fn send<T: for<'de> Deserialize<'de>>(
        &self,
        request: reqwest::RequestBuilder,
        route: String,
    ) -> Result<T, ClientError> {
        let http = |source| ClientError::Http {
            route: route.clone(),
            source,
        };
        let response = request.send().await.map_err(http)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(ClientError::Status {
                route,
                status: status.as_u16(),
                body,
            });
        }
        response.json().await.map_err(http)
    }

    /// Starts a fresh replay (`POST /_keyless/reset`): of the fixture named `fixture` (its file
    /// name without `.json`) in fixture mode, of the recording from its first call in recording
    /// mode. Clears the problem ledger, and returns what it cleared that nobody had read (the
    /// caller counts those as problems of the run it starts). Needs the reset token
    /// ([`ModelServerClient::with_reset_token`]); without it the server refuses (403).
    pub async fn reset(&self, fixture: Option<&str>) -> Result<ResetReply, ClientError> {
        let url = format!("{}{}", self.root, protocol::RESET_ROUTE.name);
        let route = format!("POST {url}");
        let request = self.owned(self.http.post(&url).json(&json!({"fixture": fixture})));
        self.send(request, route).await
    }

    /// Ends the run (`POST /_keyless/reset` with `{"between_runs": true}`): until the next
    /// [`ModelServerClient::reset`], every model call is refused and kept as a
    /// `call_between_runs` problem, which that reset hands back. Returns what it cleared that
    /// nobody had read.
    pub async fn end_run(&self) -> Result<ResetReply, ClientError> {
        let url = format!("{}{}", self.root, protocol::RESET_ROUTE.name);
        let route = format!("POST {url}");
        let request = self.owned(self.http.post(&url).json(&json!({"between_runs": true})));
        self.send(request, route).await
    }

    /// `GET /_keyless/state`.
    pub async fn state(&self) -> Result<ServerState, ClientError> {
        let url = format!("{}{}", self.root, protocol::STATE_ROUTE.name);
        self.send(self.owned(self.http.get(&url)), format!("GET {url}"))
            .await
    }

    /// `request` with the reset token when the client holds it: the owner's reads mark the
    /// problems read, so its next reset counts only what came after.
    fn owned(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.reset_token {
            Some(ResetToken(token)) => request.header(RESET_TOKEN_HEADER, token),
            None => request,
        }
    }

    /// `GET /_keyless/misses`: every problem since the start or the last reset.
    pub async fn problems(&self) -> Result<Vec<Problem>, ClientError> {
        let url = format!("{}{}", self.root, protocol::MISSES_ROUTE.name);
        self.send(self.owned(self.http.get(&url)), format!("GET {url}"))
            .await
    }
}
