//! The web client's flow: one fixture replayed through the real gateway while the driver makes
//! the requests DeerFlow's chat page makes, in its order, with its exact run request.
//!
//! Page load: `auth/me`, `features`, `models`, `skills`, `channels/providers`,
//! `suggestions/config`, `threads/search`; the thread: create, `GET`, `history`,
//! `messages/page`, `token-usage`, `uploads/limits`; each prompt streamed with the web request
//! (four stream modes) and after each run the thread, `history`, `messages/page` and
//! `token-usage` again and `suggestions` with `n = max_suggestions`; at the end each run's
//! `workspace-changes`.
//!
//! [`WebFlowRun::check`] demands what a browser needs: every request 2xx, no replay miss, and
//! every recorded turn used, the suggestions turn included. A suggestions prompt that drifts
//! from the recorded one is a miss here, although the route still answers `200`.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use reqwest::Method;
use serde_json::{Value, json};

use crate::adapter::boot::Extensions;
use crate::adapter::hermetic::SCENARIO_MODEL;
use crate::driver::{
    Driver, DriverError, Exchange, RunTranscript, suggestions_request, visible_conversation,
};
use crate::layer1::{HarnessError, ScenarioRun};
use crate::target::{GatewayTarget, InProcess};
use replay_core::{Fixture, first_chars, golden_document};

/// The suffix of a web golden's stem: `golden/<fixture stem>.web.snap`.
pub const WEB_GOLDEN_SUFFIX: &str = ".web";

/// A fixture driven as the web client drives a chat page.
#[derive(Debug)]
pub struct WebFlowRun {
    /// The replayed runs (web-mode transcripts), misses and unused turns.
    pub scenario: ScenarioRun,
    /// Every request but the streams, in order.
    pub exchanges: Vec<Exchange>,
}

impl WebFlowRun {
    /// The web golden's stem: `<fixture stem>.web`.
    pub fn stem(&self) -> String {
        format!("{}{WEB_GOLDEN_SUFFIX}", self.scenario.stem())
    }

    /// The web golden document: every run's events reduced by
    /// [`replay_core::web_shape_of`].
    pub fn golden_document(&self) -> String {
        let shapes: Vec<_> = self
            .scenario
            .transcripts
            .iter()
            .flat_map(RunTranscript::web_shapes)
            .collect();
        let fixture = &self.scenario.fixture;
        golden_document(
            &fixture.scenario.id,
            fixture.scenario.mode.as_str(),
            &shapes,
        )
    }

    /// Every request 2xx, every stream from `metadata` to `end`, no miss, every turn used. The
    /// error is a full report.
    pub fn check(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        for exchange in self.exchanges.iter().filter(|e| !e.succeeded()) {
            problems.push(format!(
                "{} {} answered {}: {}",
                exchange.method, exchange.path, exchange.status, exchange.body
            ));
        }
        for (index, transcript) in self.scenario.transcripts.iter().enumerate() {
            let first = transcript.events.first().map(|e| e.event.as_str());
            let last = transcript.events.last().map(|e| e.event.as_str());
            if (first, last) != (Some("metadata"), Some("end")) {
                problems.push(format!(
                    "run {index}: the stream goes from {first:?} to {last:?}, expected \"metadata\" to \"end\""
                ));
            }
        }
        if !self.scenario.misses.is_empty() {
            let callers: Vec<&str> = self
                .scenario
                .misses
                .iter()
                .map(|miss| miss.caller.as_str())
                .collect();
            problems.push(format!(
                "replay miss ({}, callers {callers:?}): the web client's requests differ from the recorded ones",
                self.scenario.misses.len()
            ));
        }
        if !self.scenario.model_errors.is_empty() {
            problems.push(format!(
                "the model server reported {} problem(s): {:?}",
                self.scenario.model_errors.len(),
                self.scenario.model_errors
            ));
        }
        if !self.scenario.unused_turns.is_empty() {
            problems.push(format!(
                "recorded turns {:?} were never asked for: the web client's flow did not reach them",
                self.scenario.unused_turns
            ));
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{}\n\n{}", problems.join("\n"), self.report()))
        }
    }

    /// The requests with their statuses, then the scenario's report (run requests, SSE
    /// transcripts, misses).
    pub fn report(&self) -> String {
        let mut out = String::from("--- web client requests ---\n");
        for exchange in &self.exchanges {
            let body = first_chars(&exchange.body.to_string(), 200).to_owned();
            let _ = writeln!(
                out,
                "{} {} {} {body}",
                exchange.status, exchange.method, exchange.path
            );
        }
        out.push('\n');
        out.push_str(&self.scenario.report(&self.scenario.verdict()));
        out
    }
}

/// Runs the web client's flow over a fixture file.
pub async fn run_web_flow(path: &Path, extensions: Extensions) -> Result<WebFlowRun, HarnessError> {
    let started = Instant::now();
    let fixture = Fixture::load(path)?;
    let mut target = InProcess::new(extensions);
    let url = target.start(path, &fixture).await?;
    let drive = drive_web_client(&url, &fixture).await;
    let ledger = target.finish().await;
    let (transcripts, exchanges) = drive.map_err(|source| HarnessError::Drive {
        fixture: path.to_path_buf(),
        source,
    })?;
    let ledger = ledger?;
    Ok(WebFlowRun {
        scenario: ScenarioRun {
            fixture_path: path.to_path_buf(),
            misses: ledger.misses,
            model_errors: ledger.other_problems,
            unused_turns: ledger.unused_turns,
            fixture,
            transcripts,
            elapsed: started.elapsed(),
        },
        exchanges,
    })
}

/// The requests of a chat page, in the web client's order.
pub async fn drive_web_client(
    url: &str,
    fixture: &Fixture,
) -> Result<(Vec<RunTranscript>, Vec<Exchange>), DriverError> {
    let mut driver = Driver::new(url)?;
    driver.register().await?;
    let mut exchanges = Vec::new();
    for path in [
        "/api/v1/auth/me",
        "/api/features",
        "/api/models",
        "/api/skills",
        "/api/channels/providers",
        "/api/suggestions/config",
    ] {
        exchanges.push(driver.exchange(Method::GET, path, None).await?);
    }
    let max_suggestions = exchanges
        .last()
        .and_then(|config| config.body.get("max_suggestions"))
        .and_then(Value::as_u64)
        .unwrap_or(3) as u32;
    let search = json!({"limit": 50, "offset": 0, "sort_by": "updated_at", "sort_order": "desc"});
    exchanges.push(
        driver
            .exchange(Method::POST, "/api/threads/search", Some(&search))
            .await?,
    );
    let thread_id = uuid::Uuid::new_v4().to_string();
    let create = json!({"thread_id": thread_id, "metadata": {}});
    exchanges.push(
        driver
            .exchange(Method::POST, "/api/threads", Some(&create))
            .await?,
    );
    exchanges.extend(thread_page(&driver, &thread_id).await?);
    let upload_limits = format!("/api/threads/{thread_id}/uploads/limits");
    exchanges.push(driver.exchange(Method::GET, &upload_limits, None).await?);
    let mut transcripts = Vec::new();
    for prompt in fixture.scenario.prompts() {
        let transcript = driver
            .stream_web_run(
                &thread_id,
                prompt,
                fixture.scenario.mode,
                Some(SCENARIO_MODEL),
            )
            .await?;
        // After every run the page reloads the thread and asks for follow-up suggestions.
        exchanges.extend(thread_page(&driver, &thread_id).await?);
        let conversation = transcript
            .final_values()
            .map(|values| visible_conversation(&values))
            .unwrap_or_default();
        transcripts.push(transcript);
        let suggestions = suggestions_request(&conversation, max_suggestions);
        let path = format!("/api/threads/{thread_id}/suggestions");
        exchanges.push(
            driver
                .exchange(Method::POST, &path, Some(&suggestions))
                .await?,
        );
    }
    for run_id in transcripts.iter().filter_map(RunTranscript::run_id) {
        let path = format!("/api/threads/{thread_id}/runs/{run_id}/workspace-changes");
        exchanges.push(driver.exchange(Method::GET, &path, None).await?);
    }
    Ok((transcripts, exchanges))
}

/// What a chat page reads about its thread: the thread, its history, its message page and its
/// token usage.
async fn thread_page(driver: &Driver, thread_id: &str) -> Result<Vec<Exchange>, DriverError> {
    let history = json!({"limit": 1});
    Ok(vec![
        driver
            .exchange(Method::GET, &format!("/api/threads/{thread_id}"), None)
            .await?,
        driver
            .exchange(
                Method::POST,
                &format!("/api/threads/{thread_id}/history"),
                Some(&history),
            )
            .await?,
        driver
            .exchange(
                Method::GET,
                &format!("/api/threads/{thread_id}/messages/page?limit=50"),
                None,
            )
            .await?,
        driver
            .exchange(
                Method::GET,
                &format!("/api/threads/{thread_id}/token-usage"),
                None,
            )
            .await?,
    ])
}
