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

use reqwest::Method;
use serde_json::{Value, json};

use crate::adapter::boot::Extensions;
use crate::adapter::hermetic::SCENARIO_MODEL;
use crate::driver::{
    Driver, DriverError, Exchange, RunTranscript, suggestions_request, visible_conversation,
};
use crate::layer1::{HarnessError, ScenarioRun, drive_target};
use crate::target::InProcess;
use replay_core::{Fixture, Framing, Miss, first_chars, golden_document};

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

    /// What the flow concludes: the requests that were not 2xx, each run's framing, the misses
    /// and other model-side errors, and the recorded turns the flow never reached.
    pub fn verdict(&self) -> WebVerdict {
        WebVerdict {
            failed_requests: self
                .exchanges
                .iter()
                .filter(|exchange| !exchange.succeeded())
                .cloned()
                .collect(),
            framing: self
                .scenario
                .transcripts
                .iter()
                .map(|transcript| Framing::of(&transcript.shapes()))
                .collect(),
            misses: self.scenario.misses.clone(),
            model_errors: (self.scenario.ambiguities.iter().map(ToString::to_string))
                .chain(self.scenario.model_errors.iter().cloned())
                .collect(),
            unused_turns: self.scenario.unused_turns.clone(),
        }
    }

    /// [`WebFlowRun::verdict`] as a test result: `Err` carries its problem lines and the full
    /// report.
    pub fn check(&self) -> Result<(), String> {
        let problems = self.verdict().problems();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!("{}\n\n{}", problems.join("\n"), self.report()))
        }
    }

    /// The requests with their statuses, then the scenario's details (run requests, SSE
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
        // The runs' transcripts and misses, not the Layer 1 verdict: these are four-mode runs,
        // which the values-only golden does not describe.
        out.push_str(&self.scenario.details());
        out
    }
}

/// Everything the web client's flow concludes about one fixture. It passes when every request
/// was 2xx, every run was framed by `metadata` and `end`, nothing missed, and every recorded turn
/// was used: a browser needs all of them, the suggestions turn included.
#[derive(Debug, Clone, PartialEq)]
pub struct WebVerdict {
    /// The page's requests that did not answer 2xx, in order.
    pub failed_requests: Vec<Exchange>,
    /// Each run's framing, in order.
    pub(crate) framing: Vec<Framing>,
    /// The model calls that had no recorded answer.
    pub misses: Vec<Miss>,
    /// Other failures the model side reported.
    pub(crate) model_errors: Vec<String>,
    /// Indexes of the recorded turns no call used.
    pub unused_turns: Vec<usize>,
}

impl WebVerdict {
    /// One line per failed check: requests, framing, misses, model errors, unused turns.
    pub(crate) fn problems(&self) -> Vec<String> {
        let mut problems: Vec<String> = self
            .failed_requests
            .iter()
            .map(|exchange| {
                format!(
                    "{} {} answered {}: {}",
                    exchange.method, exchange.path, exchange.status, exchange.body
                )
            })
            .collect();
        for (index, framing) in self.framing.iter().enumerate() {
            if let Framing::Broken { first, last } = framing {
                problems.push(format!(
                    "run {index}: the stream goes from {first:?} to {last:?}, expected \"metadata\" to \"end\""
                ));
            }
        }
        if !self.misses.is_empty() {
            let callers: Vec<&str> = self
                .misses
                .iter()
                .map(|miss| miss.caller.as_str())
                .collect();
            problems.push(format!(
                "replay miss ({}, callers {callers:?}): the web client's requests differ from the recorded ones",
                self.misses.len()
            ));
        }
        if !self.model_errors.is_empty() {
            problems.push(format!(
                "the model server reported {} problem(s): {:?}",
                self.model_errors.len(),
                self.model_errors
            ));
        }
        if !self.unused_turns.is_empty() {
            problems.push(format!(
                "recorded turns {:?} were never asked for: the web client's flow did not reach them",
                self.unused_turns
            ));
        }
        problems
    }
}

/// Runs the web client's flow over a fixture file.
pub async fn run_web_flow(path: &Path, extensions: Extensions) -> Result<WebFlowRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    let mut target = InProcess::new(extensions);
    let (scenario, exchanges) = drive_target(&mut target, path, fixture, drive_web_client).await?;
    Ok(WebFlowRun {
        scenario,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn clean() -> WebVerdict {
        WebVerdict {
            failed_requests: Vec::new(),
            framing: vec![Framing::Ok],
            misses: Vec::new(),
            model_errors: Vec::new(),
            unused_turns: Vec::new(),
        }
    }

    /// A case: its name, how it spoils a clean verdict, and the text its one problem line holds.
    type Case = (&'static str, fn(&mut WebVerdict), &'static str);

    #[test]
    fn each_failed_check_is_one_problem_line() {
        let cases: Vec<Case> = vec![
            (
                "a 404",
                |v| {
                    v.failed_requests.push(Exchange {
                        method: "GET".into(),
                        path: "/api/models".into(),
                        status: 404,
                        body: json!({"detail": "Not Found"}),
                    })
                },
                "GET /api/models answered 404",
            ),
            (
                "a broken stream",
                |v| {
                    v.framing.push(Framing::Broken {
                        first: Some("metadata".into()),
                        last: None,
                    })
                },
                "run 1: the stream goes from",
            ),
            (
                "a model error",
                |v| v.model_errors.push("ambiguous caller".into()),
                "ambiguous caller",
            ),
            (
                "an unused turn",
                |v| v.unused_turns.push(3),
                "recorded turns [3]",
            ),
        ];
        assert!(clean().problems().is_empty());
        for (name, spoil, expected) in cases {
            let mut verdict = clean();
            spoil(&mut verdict);
            let problems = verdict.problems();
            assert_eq!(problems.len(), 1, "{name}: {problems:?}");
            assert!(problems[0].contains(expected), "{name}: {problems:?}");
        }
    }
}
