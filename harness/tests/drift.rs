//! Proof that the harness catches drift, and stays green when only volatile things change.
//!
//! Each test replays a shipped fixture through the real gateway with one change made through the
//! gateway's own extension points (its configuration, a registered tool, a registered
//! middleware), then asserts how the harness reacts: a changed golden, a replay miss, or neither.
//! The one exception is the renamed SSE event: no extension point renames events, so that test
//! edits the collected transcript, standing in for a gateway change to its SSE writer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use gateway_under_test::messages::{Message, MessageType};
use gateway_under_test::models::{ModelError, ModelRequest, ToolSpec};
use gateway_under_test::runtime::middleware::{HookResult, Middleware, ModelCall};
use gateway_under_test::runtime::{AgentState, RunContext, StateUpdate};
use gateway_under_test::tools::{Tool, ToolContext};
use harness::adapter::Extensions;
use harness::in_process::{InProcess, options, web_options};
use harness::record_run::record_with_stand_in;
use harness::stand_in::Reply;
use harness::web_flow::messages_status;
use harness::workspace::fixtures_dir;
use keyless_runner::{ScenarioRun, run, runtime};
use replay_core::{Framing, GoldenStatus, MissingGolden, Scenario, UiMode, golden_document};
use serde_json::{Value, json};

fn scenario_fixture() -> PathBuf {
    fixtures_dir().join("write_read_file.ultra.json")
}

fn replay(path: &Path, extensions: Extensions) -> ScenarioRun {
    runtime()
        .expect("Failed to build a runtime")
        .block_on(run(&mut InProcess::new(extensions), path, &options()))
        .unwrap_or_else(|err| panic!("{} did not run: {err}", path.display()))
}

#[track_caller]
fn assert_green(run: &ScenarioRun) {
    if let Err(report) = run.check() {
        panic!("expected a clean replay:\n{report}");
    }
}

// ---------------------------------------------------------------------------------------------
// The baseline: the unchanged gateway is green, so every red below is caused by its one change.

#[test]
fn the_unchanged_gateway_replays_the_fixture_green() {
    assert_green(&replay(&scenario_fixture(), Extensions::default()));
}

// ---------------------------------------------------------------------------------------------
// Drift that must turn the build red.

#[test]
fn a_renamed_sse_event_changes_the_golden() {
    let mut run = replay(&scenario_fixture(), Extensions::default());
    for transcript in &mut run.transcripts {
        for event in &mut transcript.events {
            if event.event == "values" {
                event.event = "state".into();
            }
        }
    }
    let verdict = run.verdict();
    assert!(
        verdict.replayed_cleanly(),
        "framing and misses are unaffected"
    );
    assert_eq!(verdict.golden, GoldenStatus::Changed);
    assert!(!verdict.passes(MissingGolden::Allowed));
}

/// Writes a `todos` channel before the agent runs, as a new protocol-neutral feature might.
struct TodosMiddleware;

#[async_trait]
impl Middleware for TodosMiddleware {
    fn name(&self) -> &'static str {
        "TodosMiddleware"
    }

    async fn before_agent(&self, _state: &AgentState, _run: &RunContext) -> HookResult {
        Ok(Some(StateUpdate::channel("todos", json!([]))))
    }
}

#[test]
fn a_state_key_added_by_a_new_middleware_changes_the_golden() {
    let run = replay(
        &scenario_fixture(),
        Extensions {
            extend: Box::new(|builder| builder.middleware(Arc::new(TodosMiddleware))),
            ..Extensions::default()
        },
    );
    let verdict = run.verdict();
    assert!(
        verdict.replayed_cleanly(),
        "a new channel does not change what the model sees"
    );
    assert_eq!(verdict.golden, GoldenStatus::Changed);
    let last = run
        .shapes()
        .iter()
        .rev()
        .find(|s| s.event.as_deref() == Some("values"))
        .cloned()
        .unwrap();
    assert!(last.keys.unwrap().contains(&"todos".to_string()));
}

#[test]
fn a_state_key_removed_by_configuration_changes_the_golden() {
    let run = replay(
        &scenario_fixture(),
        Extensions {
            configure: Box::new(|config| config.title.enabled = false),
            ..Extensions::default()
        },
    );
    let verdict = run.verdict();
    assert!(
        verdict.replayed_cleanly(),
        "the local title never reaches the model"
    );
    assert_eq!(verdict.golden, GoldenStatus::Changed);
    assert!(run.shapes().iter().all(|s| {
        !s.keys
            .clone()
            .unwrap_or_default()
            .contains(&"title".to_string())
    }));
}

/// A `read_file` whose result text differs from the recorded one.
#[derive(Debug)]
struct DriftedReadFile;

#[async_trait]
impl Tool for DriftedReadFile {
    fn spec(&self) -> ToolSpec {
        gateway_under_test::tools::ToolRegistry::with_builtins()
            .get("read_file")
            .expect("the built-in read_file")
            .spec()
    }

    async fn call(&self, _args: &Value, _context: ToolContext<'_>) -> String {
        "hi from drift.".into()
    }
}

#[test]
fn a_changed_tool_result_is_a_replay_miss_even_though_the_shape_is_unchanged() {
    let run = replay(
        &scenario_fixture(),
        Extensions {
            extend: Box::new(|builder| builder.tool(Arc::new(DriftedReadFile))),
            ..Extensions::default()
        },
    );
    let verdict = run.verdict();
    assert_eq!(
        verdict.golden,
        GoldenStatus::Ok,
        "the last model call's fallback keeps the shape"
    );
    assert_eq!(verdict.framing, Framing::Ok);
    assert_eq!(verdict.misses.len(), 1);
    assert!(!verdict.passes(MissingGolden::Allowed), "a miss fails");
    let problems = verdict.problems(MissingGolden::Fails);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].starts_with("replay miss (1): the fixture is stale"),
        "{problems:?}"
    );
    let miss = verdict.misses[0].to_string();
    assert!(
        miss.starts_with("replay miss: no recorded output for input hash "),
        "{miss}"
    );
    assert!(miss.contains("Caller: 'lead_agent'"), "{miss}");
    assert!(
        miss.contains("hi from drift."),
        "the normalised input is shown: {miss}"
    );
    let nearest = verdict.misses[0]
        .nearest
        .as_ref()
        .expect("the nearest recorded turn");
    assert_eq!(
        nearest.turn_index, 2,
        "the final-answer turn was the one expected"
    );
    let difference = nearest
        .difference
        .as_ref()
        .expect("the first differing field");
    assert_eq!(difference.path, "[4].content", "{miss}");
}

/// Makes one more model call after the agent finishes (a hypothetical summary feature).
struct SummaryMiddleware;

#[async_trait]
impl Middleware for SummaryMiddleware {
    fn name(&self) -> &'static str {
        "SummaryMiddleware"
    }

    async fn after_agent(&self, state: &AgentState, run: &RunContext) -> HookResult {
        let request = ModelRequest {
            messages: vec![
                Message::human(format!("Summarise {} messages", state.messages.len())).into(),
            ],
            tools: Vec::new(),
            metadata: run.call_metadata(&["middleware:summary"], Some("summary_agent")),
            options: Default::default(),
        };
        let _ = run.call_model_raw(run.model.as_ref(), &request).await;
        Ok(None)
    }
}

#[test]
fn an_extra_model_call_is_a_replay_miss_with_its_caller() {
    let run = replay(
        &scenario_fixture(),
        Extensions {
            extend: Box::new(|builder| builder.middleware(Arc::new(SummaryMiddleware))),
            ..Extensions::default()
        },
    );
    let verdict = run.verdict();
    assert_eq!(verdict.misses.len(), 1);
    assert_eq!(verdict.misses[0].caller, "middleware:summary");
    assert!(!verdict.replayed_cleanly());
}

#[test]
fn a_miss_swallowed_by_the_error_middleware_still_fails_the_scenario() {
    let path = scenario_fixture();
    let mut fixture = replay_core::Fixture::load(&path).unwrap();
    fixture.scenario.prompt.push_str(" Please.");
    let folder = tempfile::tempdir().unwrap();
    let drifted = folder.path().join(path.file_name().unwrap());
    std::fs::write(&drifted, fixture.to_pretty_json()).unwrap();
    let run = runtime()
        .expect("Failed to build a runtime")
        .block_on(run(&mut InProcess::default(), &drifted, &options()))
        .unwrap();
    let events: Vec<&str> = run.transcripts[0]
        .events
        .iter()
        .map(|e| e.event.as_str())
        .collect();
    assert!(
        !events.contains(&"error"),
        "the miss never reaches the wire: {events:?}"
    );
    assert_eq!(events.first(), Some(&"metadata"));
    assert_eq!(events.last(), Some(&"end"));
    let values = run.transcripts[0].final_values().unwrap();
    let last = values["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(last["additional_kwargs"]["deerflow_error_fallback"], true);
    assert_eq!(last["additional_kwargs"]["error_type"], "ReplayMiss");
    let verdict = run.verdict();
    assert_eq!(verdict.framing, Framing::Ok, "the stream looks fine");
    assert_eq!(verdict.misses.len(), 1, "only the ledger knows");
    assert!(!verdict.passes(MissingGolden::Allowed));
    assert!(run.report(&verdict).contains("replay miss (1)"));
}

// ---------------------------------------------------------------------------------------------
// Volatile changes that must stay green.

/// Rewrites the system prompt on every lead-agent call.
struct PromptEditMiddleware;

#[async_trait]
impl Middleware for PromptEditMiddleware {
    fn name(&self) -> &'static str {
        "PromptEditMiddleware"
    }

    async fn wrap_model_call(
        &self,
        mut request: ModelRequest,
        _run: &RunContext,
        next: ModelCall<'_>,
    ) -> Result<Message, ModelError> {
        if let Some(system) = request
            .messages
            .first_mut()
            .filter(|m| m.kind == MessageType::System)
        {
            std::sync::Arc::make_mut(system).content =
                json!("A completely rewritten system prompt, version 2.");
        }
        next.call(request).await
    }
}

#[test]
fn a_rewritten_system_prompt_stays_green() {
    let run = replay(
        &scenario_fixture(),
        Extensions {
            extend: Box::new(|builder| builder.middleware(Arc::new(PromptEditMiddleware))),
            ..Extensions::default()
        },
    );
    assert_green(&run);
}

/// A tool whose result holds a UUID, a timestamp, a date and a temporary path, all fresh on
/// every call, or (as the control) a fresh 8-hex-digit job name that no rule normalises.
#[derive(Debug)]
struct StampTool {
    volatile: bool,
}

#[async_trait]
impl Tool for StampTool {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "stamp".into(),
            description: "Start a job and report where it runs".into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    async fn call(&self, _args: &Value, _context: ToolContext<'_>) -> String {
        let id = uuid::Uuid::new_v4();
        if self.volatile {
            let now = gateway_under_test::clock::now_iso();
            let today = &now[..10];
            format!(
                "job {id} started at {now} for {today}, output in /tmp/stamp-{}/out.txt",
                id.simple()
            )
        } else {
            format!("job {}", &id.simple().to_string()[..8])
        }
    }
}

fn stamp_extensions(volatile: bool) -> Extensions {
    Extensions {
        configure: Box::new(|config| {
            config
                .tool_groups
                .push(gateway_under_test::config::ToolGroupConfig {
                    name: "jobs".into(),
                });
            config.tools.push(gateway_under_test::config::ToolConfig {
                name: "stamp".into(),
                group: "jobs".into(),
            });
        }),
        extend: Box::new(move |builder| builder.tool(Arc::new(StampTool { volatile }))),
    }
}

/// Records a stamp scenario against the stand-in, then replays it with fresh volatile values.
/// Returns the recording's final state and the replay.
fn record_then_replay(volatile: bool) -> (Value, ScenarioRun) {
    let scenario = Scenario::new(
        "stamp",
        UiMode::Flash,
        "Start a job with the stamp tool and tell me where its output goes.",
    );
    let replies = vec![
        Reply::ToolCalls(vec![("stamp".into(), json!({}))]),
        Reply::Text("Your job is running.".into()),
        Reply::Text("[\"Stop the job\"]".into()),
    ];
    let runtime = runtime().expect("Failed to build a runtime");
    let recorded_run = runtime
        .block_on(record_with_stand_in(
            &scenario,
            replies,
            stamp_extensions(volatile),
        ))
        .expect("the recording run");
    let folder = tempfile::tempdir().unwrap();
    let path = folder.path().join("stamp.flash.json");
    std::fs::write(&path, recorded_run.fixture.to_pretty_json()).unwrap();
    let recorded = recorded_run.transcripts[0]
        .final_values()
        .expect("recorded state");
    let run = runtime
        .block_on(run(
            &mut InProcess::new(stamp_extensions(volatile)),
            &path,
            &options(),
        ))
        .expect("replay");
    (recorded, run)
}

fn tool_message(values: &Value) -> Value {
    values["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["type"] == "tool")
        .cloned()
        .expect("a tool message")
}

#[test]
fn fresh_uuids_timestamps_dates_and_temp_paths_in_a_tool_result_stay_green() {
    let (recorded, run) = record_then_replay(true);
    let verdict = run.verdict();
    // This scenario ships no golden: the framing and the misses are the checks.
    assert!(verdict.replayed_cleanly(), "{}", run.report(&verdict));
    let scenario = &run.fixture.scenario;
    let document = golden_document(&scenario.id, scenario.mode.as_str(), &run.shapes());
    assert!(document.contains("\"sandbox\""), "the tool really ran");
    let replayed = run.transcripts[0].final_values().unwrap();
    let (before, after) = (tool_message(&recorded), tool_message(&replayed));
    assert_ne!(
        before["content"], after["content"],
        "the volatile values really differ"
    );
    assert_ne!(
        before["id"], after["id"],
        "message ids differ between recording and replay"
    );
}

#[test]
fn a_fresh_value_that_no_rule_normalises_is_a_miss() {
    // The control for the test above: the same path with a fresh job name that no rule
    // recognises misses, so the green above is the normalisation's doing.
    let (_, run) = record_then_replay(false);
    let verdict = run.verdict();
    assert_eq!(verdict.misses.len(), 1, "{}", run.report(&verdict));
}

// ---------------------------------------------------------------------------------------------
// The web client's flow: a suggestions prompt that drifts is caught, although the route answers
// `200 {"suggestions": []}`.

#[test]
fn a_drifted_suggestions_prompt_fails_the_web_client_flow() {
    let baseline = runtime()
        .expect("Failed to build a runtime")
        .block_on(run(
            &mut InProcess::default(),
            &scenario_fixture(),
            &web_options(),
        ))
        .expect("the web flow runs");
    if let Err(report) = baseline.check() {
        panic!("expected a clean web flow:\n{report}");
    }
    // DeerFlow's frontend sends `n = max_suggestions`; with 5 instead of the recorded 3 the
    // suggestions prompt says "Generate 5 follow-up questions" and no recorded turn matches.
    let drifted = runtime()
        .expect("Failed to build a runtime")
        .block_on(run(
            &mut InProcess::new(Extensions {
                configure: Box::new(|config| config.suggestions.max_suggestions = 5),
                ..Extensions::default()
            }),
            &scenario_fixture(),
            &web_options(),
        ))
        .expect("the web flow runs");
    let suggestions = drifted
        .exchanges
        .iter()
        .find(|exchange| exchange.path.ends_with("/suggestions"))
        .expect("the flow asked for suggestions");
    assert_eq!(
        (suggestions.status, &suggestions.body),
        (200, &json!({"suggestions": []})),
        "the route itself hides the failure, as DeerFlow's does"
    );
    let verdict = drifted.verdict();
    let report = drifted.check().expect_err("the miss must fail the flow");
    let callers: Vec<&str> = verdict.misses.iter().map(|m| m.caller.as_str()).collect();
    assert_eq!(callers, ["suggest_agent"], "{report}");
    assert!(
        !verdict.unused_turns.is_empty(),
        "the recorded suggestions turn stays unused: {report}"
    );
    assert!(
        verdict.failed_requests.is_empty(),
        "every request still answers 2xx: {report}"
    );
}

/// DeerFlow's frontend asks for no suggestions while `suggestions/config` says they are off
/// (`input-box.tsx`), and neither does the page flow: the recorded suggestions turn is then never
/// reached, which the page's verdict fails, naming it.
#[test]
fn the_page_asks_for_no_suggestions_while_they_are_off() {
    let run = runtime()
        .expect("Failed to build a runtime")
        .block_on(run(
            &mut InProcess::new(Extensions {
                configure: Box::new(|config| config.suggestions.enabled = false),
                ..Extensions::default()
            }),
            &scenario_fixture(),
            &web_options(),
        ))
        .expect("the web flow runs");
    let verdict = run.verdict();
    let report = run.report(&verdict);
    assert!(
        !(run.exchanges.iter()).any(|exchange| exchange.path.ends_with("/suggestions")),
        "no suggestions request: {report}"
    );
    let suggest_turns: Vec<usize> = (run.fixture.turns.iter().enumerate())
        .filter(|(_, turn)| turn.caller.as_deref() == Some("suggest_agent"))
        .map(|(index, _)| index)
        .collect();
    assert!(!suggest_turns.is_empty(), "the fixture records suggestions");
    assert_eq!(
        verdict.unused_failure,
        Some(replay_core::UnusedFailure::NotReached {
            turns: suggest_turns
        }),
        "{report}"
    );
}

// ---------------------------------------------------------------------------------------------
// Values below the shapes: the thread's final messages, normalised, against
// `golden/<stem>.messages.snap` (docs/golden-format.md §9).

/// Rewrites every message of the final state with its `drift` after the agent ran, standing in
/// for a gateway that writes a value differently (a key-only golden cannot see these).
struct MessageDrift(Drift);

/// How a message is rewritten.
type Drift = fn(&mut Message);

#[async_trait]
impl Middleware for MessageDrift {
    fn name(&self) -> &'static str {
        "MessageDriftMiddleware"
    }

    async fn after_agent(&self, state: &AgentState, _run: &RunContext) -> HookResult {
        let mut update = StateUpdate::default();
        for message in &state.messages {
            let mut drifted = Message::clone(message);
            (self.0)(&mut drifted);
            if drifted != **message {
                update.messages.push(drifted);
            }
        }
        Ok(Some(update))
    }
}

#[test]
fn a_drifted_message_value_changes_the_messages_golden() {
    let flow = |extensions| {
        runtime()
            .expect("Failed to build a runtime")
            .block_on(run(
                &mut InProcess::new(extensions),
                &scenario_fixture(),
                &web_options(),
            ))
            .expect("the web flow runs")
    };
    assert_eq!(
        messages_status(&flow(Extensions::default())),
        GoldenStatus::Ok,
        "the unchanged gateway matches its messages golden"
    );
    let drifts: [(&str, Drift); 3] = [
        ("shared_attribution is the usage object again", |m| {
            if let Some(attribution) = m.additional_kwargs.get_mut("token_usage_attribution") {
                attribution["shared_attribution"] = json!({"input_tokens": 1});
            }
        }),
        ("a tool message without deerflow_tool_meta", |m| {
            if m.kind == MessageType::Tool {
                m.additional_kwargs.remove("deerflow_tool_meta");
            }
        }),
        ("a read_file result without deerflow_read_mark", |m| {
            m.additional_kwargs.remove("deerflow_read_mark");
        }),
    ];
    for (name, drift) in drifts {
        let run = flow(Extensions {
            extend: Box::new(move |builder| builder.middleware(Arc::new(MessageDrift(drift)))),
            ..Extensions::default()
        });
        assert!(run.verdict().misses.is_empty(), "{name}: no miss");
        assert_eq!(messages_status(&run), GoldenStatus::Changed, "{name}");
    }
}

// ---------------------------------------------------------------------------------------------
// A fixture cannot point a replay at the network or move its files.

#[test]
fn a_fixture_whose_gateway_config_leaves_the_allow_list_is_refused_naming_file_and_key() {
    let shipped: Value =
        serde_json::from_str(&std::fs::read_to_string(scenario_fixture()).expect("read"))
            .expect("json");
    // (overrides, the key the error names)
    let cases = [
        (
            json!({"models": [{"name": "scenario-model", "use": "openai",
                   "base_url": "https://api.openai.com/v1", "api_key": "$OPENAI_API_KEY"}]}),
            "\"models\"",
        ),
        (json!({"home": "/tmp/elsewhere"}), "\"home\""),
        (
            json!({"database": {"sqlite_dir": "/tmp/db"}}),
            "\"database\"",
        ),
        (
            json!({"suggestions": {"model_name": "http://127.0.0.1:9/v1"}}),
            "\"suggestions.model_name\"",
        ),
    ];
    for (overrides, key) in cases {
        let folder = tempfile::tempdir().expect("tempdir");
        let path = folder.path().join("hostile.ultra.json");
        let mut fixture = shipped.clone();
        fixture["gateway_config"] = overrides.clone();
        std::fs::write(&path, fixture.to_string()).expect("write");
        let error = runtime()
            .expect("runtime")
            .block_on(run(&mut InProcess::default(), &path, &options()))
            .expect_err("refused");
        let message = error.to_string();
        assert!(
            message.contains(&path.display().to_string()) && message.contains(key),
            "{overrides}: {message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// A fixture cannot run unbounded.

#[test]
fn a_fixture_past_its_time_limit_fails_naming_the_fixture() {
    let path = scenario_fixture();
    let error = runtime()
        .expect("runtime")
        .block_on(run(
            &mut InProcess::default(),
            &path,
            &options().time_limit(std::time::Duration::from_millis(1)),
        ))
        .expect_err("past the limit");
    let message = error.to_string();
    assert!(
        matches!(error, keyless_runner::HarnessError::TimedOut { .. })
            && message.contains(&path.display().to_string())
            && message.contains("time limit"),
        "{message}"
    );
}
