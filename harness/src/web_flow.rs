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
//! The flow runs against any [`GatewayTarget`]: in-process ([`run_web_flow`]) or a gateway at a
//! URL replaying through a model server ([`run_web_flow_on`]).
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
use crate::final_messages::{MESSAGES_GOLDEN_SUFFIX, messages_document};
use crate::layer1::{HarnessError, ScenarioRun, drive_target};
use crate::target::{GatewayTarget, InProcess};
use replay_core::{Fixture, Framing, GoldenStatus, Miss, first_chars, golden_document};

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

    /// The web golden document: every run's events reduced by [`replay_core::web_shapes`] (a
    /// run of streamed chunks of one message as one entry).
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

    /// The messages golden's stem: `<fixture stem>.messages`.
    pub fn messages_stem(&self) -> String {
        format!("{}{MESSAGES_GOLDEN_SUFFIX}", self.scenario.stem())
    }

    /// The messages golden document: the thread's messages in the last run's final `values`,
    /// normalised ([`crate::final_messages::messages_document`]).
    pub fn messages_document(&self) -> String {
        let values = self
            .scenario
            .transcripts
            .last()
            .and_then(RunTranscript::final_values)
            .unwrap_or(Value::Null);
        messages_document(&values)
    }

    /// The messages document against the committed `golden/<stem>.messages.snap`.
    pub fn messages_status(&self) -> GoldenStatus {
        crate::golden::golden_status(&self.messages_stem(), &self.messages_document())
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

/// A four-mode run in the notation of `docs/gateway-contract.md` §5.4: one token per node or
/// message: `<Node>` for an `updates` frame of a node that wrote, `<Node>°` for one that wrote
/// nothing (`null`), `<human>`/`<tool>`/`<ai>` for a `messages` tuple of that type, and `<chunks>`
/// for a run of `AIMessageChunk` tuples. `values`, `custom`, `metadata` and `end` frames are
/// left out.
pub fn node_order(transcript: &RunTranscript) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for event in &transcript.events {
        let Some(data) = event.json() else {
            continue;
        };
        match event.event.as_str() {
            "updates" => {
                for (node, writes) in data.as_object().into_iter().flatten() {
                    let mark = if writes.is_null() { "°" } else { "" };
                    tokens.push(format!("{node}{mark}"));
                }
            }
            "messages" => {
                let token = match data[0]["type"].as_str() {
                    Some("AIMessageChunk") => "<chunks>".to_string(),
                    Some(kind) => format!("<{kind}>"),
                    None => "<?>".to_string(),
                };
                if !(token == "<chunks>" && tokens.last() == Some(&token)) {
                    tokens.push(token);
                }
            }
            _ => {}
        }
    }
    tokens
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

/// Runs the web client's flow over a fixture file, through the gateway in-process.
pub async fn run_web_flow(path: &Path, extensions: Extensions) -> Result<WebFlowRun, HarnessError> {
    run_web_flow_on(&mut InProcess::new(extensions), path).await
}

/// Runs the web client's flow over a fixture file through `target`: in-process, or a gateway at
/// a URL whose model is a model server ([`crate::target::AtUrl`]), so a gateway elsewhere is
/// held to the same web golden.
pub async fn run_web_flow_on(
    target: &mut dyn GatewayTarget,
    path: &Path,
) -> Result<WebFlowRun, HarnessError> {
    let fixture = Fixture::load(path)?;
    let (scenario, exchanges) = drive_target(
        target,
        path,
        &crate::golden::golden_dir(),
        fixture,
        drive_web_client,
    )
    .await?;
    Ok(WebFlowRun {
        scenario,
        exchanges,
    })
}

/// The web golden's status of a web flow run: its document against the committed
/// `golden/<stem>.web.snap`.
pub fn web_golden_status(run: &WebFlowRun) -> GoldenStatus {
    crate::golden::golden_status(&run.stem(), &run.golden_document())
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
                crate::driver::ui_mode(&fixture.scenario)?,
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

    /// DeerFlow's lead-agent node order per mode, as its gateway streams the first run of these
    /// fixtures (`docs/gateway-contract.md` §5.4).
    const DEERFLOW_NODE_ORDER: [(&str, &str); 4] = [
        (
            "write_read_file.flash",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "write_read_file.pro",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent TodoMiddleware.before_agent° LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° TodoMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "write_read_file.ultra",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent TodoMiddleware.before_agent° LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° TodoMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "model_error.thinking",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° <ai> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
    ];

    #[test]
    fn the_first_run_streams_deerflows_node_order_per_mode() {
        let runtime = crate::layer1::runtime().expect("a runtime");
        for (stem, expected) in DEERFLOW_NODE_ORDER {
            let path = crate::golden::fixtures_dir().join(format!("{stem}.json"));
            let run = runtime
                .block_on(run_web_flow(&path, Extensions::default()))
                .unwrap_or_else(|err| panic!("{stem}: {err}"));
            let actual = node_order(&run.scenario.transcripts[0]).join(" ");
            assert_eq!(actual, expected, "{stem}");
        }
    }

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
