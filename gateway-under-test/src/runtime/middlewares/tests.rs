//! Each built-in middleware's writes, on its own: a table of (middleware, hook, state before) →
//! what the hook writes.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};

use super::*;
use crate::config::{Config, ModelConfig};
use crate::messages::{Message, ToolCall};
use crate::models::{ChatModel, ModelError, ModelRequest};
use crate::runtime::agent::{Agent, AgentParts};
use crate::runtime::context::{RunContext, RunContextParts, StreamModes};
use crate::runtime::flags::RunFlags;
use crate::runtime::middleware::{Middleware, ModelCall};
use crate::runtime::state::{AgentState, StateUpdate};
use crate::runtime::stream::RunStream;
use crate::store::Store;

/// Records the request it gets and answers "ok".
#[derive(Debug, Default)]
struct CapturingModel {
    seen: Mutex<Vec<ModelRequest>>,
}

#[async_trait]
impl ChatModel for CapturingModel {
    async fn invoke(&self, request: &ModelRequest) -> Result<Message, ModelError> {
        self.seen.lock().unwrap().push(request.clone());
        Ok(Message::ai("ok", Vec::new()))
    }
}

struct Harness {
    run: RunContext,
    model: Arc<CapturingModel>,
    _home: tempfile::TempDir,
}

fn harness(configure: impl FnOnce(&mut Config)) -> Harness {
    let model = Arc::new(CapturingModel::default());
    let (run, home) = run_context(configure, model.clone());
    Harness {
        run,
        model,
        _home: home,
    }
}

/// A run context whose lead model is `model`, with the built-in chain, in ultra mode.
fn run_context(
    configure: impl FnOnce(&mut Config),
    model: Arc<dyn ChatModel>,
) -> (RunContext, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let mut config = Config {
        home: home.path().to_path_buf(),
        ..Config::default()
    };
    config.models = vec![ModelConfig::new("m", "capture")];
    configure(&mut config);
    let agent = Agent::new(
        &config,
        AgentParts {
            models: [("m".to_string(), model.clone())].into(),
            tools: Vec::new(),
            middlewares: builtin_chain(),
            skills: Vec::new(),
        },
    );
    let store = Store::open(&config.database_dir()).unwrap();
    let parts = RunContextParts {
        run_id: "run-1".into(),
        thread_id: "thread-1".into(),
        user_id: "user-1".into(),
        flags: RunFlags::from_context(Some(&json!({"mode": "ultra"}))),
        model_name: "m".into(),
        modes: StreamModes::from_names(&["values".into()]),
        recursion_limit: 100,
    };
    let run = RunContext::new(
        Arc::new(agent),
        store,
        parts,
        model,
        Arc::new(RunStream::new(8)),
    );
    (run, home)
}

fn human(id: &str, text: &str) -> Message {
    let mut message = Message::human(text);
    message.id = Some(id.into());
    message
}

fn state_of(messages: Vec<Message>) -> AgentState {
    AgentState {
        messages: messages.into_iter().map(Arc::new).collect(),
        ..AgentState::default()
    }
}

fn channel_names(update: &StateUpdate) -> Vec<&str> {
    update
        .channels
        .iter()
        .map(|(name, _)| name.as_str())
        .collect()
}

#[derive(Clone, Copy, Debug)]
enum Hook {
    BeforeAgent,
    AfterModel,
    ToolStep,
}

async fn run_hook(
    middleware: &dyn Middleware,
    hook: Hook,
    state: &AgentState,
    run: &RunContext,
) -> Option<StateUpdate> {
    match hook {
        Hook::BeforeAgent => middleware.before_agent(state, run).await,
        Hook::AfterModel => middleware.after_model(state, run).await,
        Hook::ToolStep => middleware.tool_step(state, run).await,
    }
    .expect("hook succeeds")
}

type Check = fn(&Option<StateUpdate>, &RunContext);

/// One row: a name, the middleware, the hook to run, the state before, and the check.
type Case = (&'static str, Arc<dyn Middleware>, Hook, AgentState, Check);

#[tokio::test]
async fn each_middleware_writes_exactly_its_channels() {
    let ai_with_call = Message::ai(
        "",
        vec![ToolCall {
            name: "write_file".into(),
            args: json!({"description": "save", "path": "/p"}),
            id: "call_1".into(),
        }],
    );
    let ai_with_two_calls = {
        let mut message = ai_with_call.clone();
        let mut second = message.tool_calls[0].clone();
        second.id = "call_2".into();
        message.tool_calls.push(second);
        message
    };
    let mut stamped = human("h1", "hi");
    stamped
        .additional_kwargs
        .insert("run_id".into(), json!("run-1"));
    let mut reminder_id_user = human("h1__user", "hi");
    reminder_id_user.name = Some("user-input".into());
    let with_files = {
        let mut message = human("h1", "see file");
        message
            .additional_kwargs
            .insert("files".into(), json!([{"filename": "a.txt"}]));
        message
    };
    let titled = {
        let mut state = state_of(vec![
            human("h1", "question"),
            Message::ai("answer", Vec::new()),
        ]);
        state.apply(StateUpdate::channel("title", json!("Existing")));
        state
    };
    let sandboxed = {
        let mut state = state_of(vec![]);
        state.apply(StateUpdate::channel("sandbox", json!({"sandbox_id": "x"})));
        state
    };
    let call = |name: &str, id: &str| ToolCall {
        name: name.into(),
        args: json!({"description": "d", "path": "/mnt/user-data/outputs/a.txt"}),
        id: id.into(),
    };
    let looping = |repeats: usize| {
        let mut messages = vec![human("h1", "q")];
        for index in 0..repeats {
            messages.push(Message::ai(
                "",
                vec![call("read_file", &format!("c{index}"))],
            ));
            if index + 1 < repeats {
                messages.push(Message::tool(
                    "x",
                    "read_file",
                    &format!("c{index}"),
                    "success",
                ));
            }
        }
        state_of(messages)
    };
    // Five answers calling `read_file` with the arguments `args(index)` gives each.
    let looping_with = |args: fn(usize) -> serde_json::Value| {
        let mut messages = vec![human("h1", "q")];
        for index in 0..5 {
            let id = format!("c{index}");
            let call = ToolCall {
                name: "read_file".into(),
                args: args(index),
                id: id.clone(),
            };
            messages.push(Message::ai("", vec![call]));
            if index < 4 {
                messages.push(Message::tool("x", "read_file", &id, "success"));
            }
        }
        state_of(messages)
    };
    let finished = |reason: (&str, &str), text: &str, calls: Vec<ToolCall>| {
        let mut answer = Message::ai(text, calls);
        answer
            .response_metadata
            .insert(reason.0.into(), json!(reason.1));
        state_of(vec![human("h1", "q"), answer])
    };
    let empty_after_tools = state_of(vec![
        human("h1", "q"),
        Message::ai("", vec![call("ls", "c1")]),
        Message::tool("x", "ls", "c1", "success"),
        Message::ai("", Vec::new()),
    ]);
    let five_tasks = state_of(vec![
        human("h1", "q"),
        Message::ai(
            "",
            (0..5)
                .map(|i| call("task", &format!("t{i}")))
                .chain([call("ls", "l1")])
                .collect(),
        ),
    ]);
    let table: Vec<Case> = vec![
        (
            "loop detection stops the fifth identical tool-call set of a turn",
            Arc::new(LoopDetectionMiddleware),
            Hook::AfterModel,
            looping(5),
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                assert!(message.tool_calls.is_empty());
                assert!(message.text().starts_with("[FORCED STOP]"));
            },
        ),
        (
            "loop detection lets four repeats through",
            Arc::new(LoopDetectionMiddleware),
            Hook::AfterModel,
            looping(4),
            |update, _| assert!(update.is_none()),
        ),
        (
            "loop detection counts arguments that differ only in key order, at any depth",
            Arc::new(LoopDetectionMiddleware),
            Hook::AfterModel,
            looping_with(|index| match index % 2 {
                0 => json!({"path": "/a", "range": {"start": 1, "end": 2}}),
                _ => json!({"range": {"end": 2, "start": 1}, "path": "/a"}),
            }),
            |update, _| assert!(update.is_some(), "the fifth repeat is stopped"),
        ),
        (
            "loop detection does not count calls whose arguments differ",
            Arc::new(LoopDetectionMiddleware),
            Hook::AfterModel,
            looping_with(|index| json!({"path": format!("/{index}")})),
            |update, _| assert!(update.is_none()),
        ),
        (
            "a content-filtered answer loses its tool calls",
            Arc::new(SafetyFinishReasonMiddleware),
            Hook::AfterModel,
            finished(
                ("finish_reason", "content_filter"),
                "",
                vec![call("write_file", "c1")],
            ),
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                assert!(message.tool_calls.is_empty());
                assert_eq!(
                    message.additional_kwargs["safety_termination"]["suppressed_tool_call_names"],
                    json!(["write_file"])
                );
                assert!(
                    message
                        .text()
                        .starts_with("The model provider stopped this response")
                );
            },
        ),
        (
            "a content-filtered answer without tool calls passes",
            Arc::new(SafetyFinishReasonMiddleware),
            Hook::AfterModel,
            finished(("finish_reason", "content_filter"), "partial", Vec::new()),
            |update, _| assert!(update.is_none()),
        ),
        (
            "a length-capped answer loses its tool calls and keeps its text",
            Arc::new(ModelLengthFinishReasonMiddleware),
            Hook::AfterModel,
            finished(
                ("finish_reason", "length"),
                "so far",
                vec![call("write_file", "c1")],
            ),
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                assert!(message.tool_calls.is_empty());
                assert_eq!(message.text(), "so far");
                assert_eq!(
                    message.additional_kwargs["model_length_termination"]["reason_value"],
                    "length"
                );
            },
        ),
        (
            "a length-capped answer with text only passes",
            Arc::new(ModelLengthFinishReasonMiddleware),
            Hook::AfterModel,
            finished(("finish_reason", "length"), "so far", Vec::new()),
            |update, _| assert!(update.is_none()),
        ),
        (
            "an empty answer after tools becomes the fallback",
            Arc::new(TerminalResponseMiddleware),
            Hook::AfterModel,
            empty_after_tools,
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                assert!(
                    message
                        .text()
                        .starts_with("The model completed the tool run")
                );
                assert_eq!(message.additional_kwargs["deerflow_error_fallback"], true);
            },
        ),
        (
            "an empty answer without tools passes",
            Arc::new(TerminalResponseMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q"), Message::ai("", Vec::new())]),
            |update, _| assert!(update.is_none()),
        ),
        (
            "the subagent limit keeps three task calls",
            Arc::new(SubagentLimitMiddleware),
            Hook::AfterModel,
            five_tasks,
            |update, _| {
                let ids: Vec<&str> = update.as_ref().unwrap().messages[0]
                    .tool_calls
                    .iter()
                    .map(|c| c.id.as_str())
                    .collect();
                assert_eq!(ids, ["t0", "t1", "t2", "l1"]);
            },
        ),
        (
            "thread data stamps the input",
            Arc::new(ThreadDataMiddleware),
            Hook::BeforeAgent,
            state_of(vec![human("h1", "hi")]),
            |update, run| {
                let update = update.as_ref().unwrap();
                assert_eq!(channel_names(update), ["thread_data"]);
                assert_eq!(update.channels[0].1, run.paths.thread_data());
                let message = &update.messages[0];
                assert_eq!(message.name.as_deref(), Some("user-input"));
                assert_eq!(message.additional_kwargs["run_id"], "run-1");
                assert!(
                    message.additional_kwargs["timestamp"]
                        .as_str()
                        .is_some_and(|ts| chrono::DateTime::parse_from_rfc3339(ts).is_ok()),
                    "DeerFlow's isoformat() timestamp: {:?}",
                    message.additional_kwargs["timestamp"]
                );
                assert!(run.paths.outputs.is_dir(), "the sandbox folders exist");
            },
        ),
        (
            "thread data leaves an already stamped input alone",
            Arc::new(ThreadDataMiddleware),
            Hook::BeforeAgent,
            state_of(vec![stamped]),
            |update, _| {
                assert!(update.as_ref().unwrap().messages.is_empty());
            },
        ),
        (
            "uploads writes an empty list",
            Arc::new(UploadsMiddleware),
            Hook::BeforeAgent,
            state_of(vec![human("h1", "hi")]),
            |update, _| {
                assert_eq!(
                    update.as_ref().unwrap().channels,
                    [("uploaded_files".to_string(), json!([]))]
                );
            },
        ),
        (
            "uploads lists attached files",
            Arc::new(UploadsMiddleware),
            Hook::BeforeAgent,
            state_of(vec![with_files]),
            |update, _| {
                assert_eq!(
                    update.as_ref().unwrap().channels[0].1,
                    json!([{"filename": "a.txt"}])
                );
            },
        ),
        (
            "dynamic context swaps in the reminder and a visible copy",
            Arc::new(DynamicContextMiddleware),
            Hook::BeforeAgent,
            state_of(vec![human("h1", "hi")]),
            |update, _| {
                let update = update.as_ref().unwrap();
                assert!(update.channels.is_empty());
                let (reminder, copy) = (&update.messages[0], &update.messages[1]);
                assert_eq!(reminder.kind.as_str(), "system");
                assert_eq!(
                    reminder.id.as_deref(),
                    Some("h1"),
                    "the reminder takes the human message's id"
                );
                assert!(reminder.is_hidden());
                assert_eq!(reminder.additional_kwargs["dynamic_context_reminder"], true);
                let date = reminder.additional_kwargs["reminder_date"]
                    .as_str()
                    .unwrap()
                    .to_string();
                assert_eq!(
                    reminder.text(),
                    format!(
                        "<system-reminder>\n<current_date>{date}</current_date>\n</system-reminder>"
                    )
                );
                assert_eq!(copy.id.as_deref(), Some("h1__user"));
                assert_eq!(copy.text(), "hi");
            },
        ),
        (
            "dynamic context runs once per input",
            Arc::new(DynamicContextMiddleware),
            Hook::BeforeAgent,
            state_of(vec![reminder_id_user]),
            |update, _| {
                assert!(update.is_none());
            },
        ),
        (
            "title writes the local fallback",
            Arc::new(TitleMiddleware),
            Hook::AfterModel,
            state_of(vec![
                human("h1", "question"),
                Message::ai("answer", Vec::new()),
            ]),
            |update, _| {
                assert_eq!(
                    update.as_ref().unwrap().channels,
                    [("title".to_string(), json!("question"))]
                );
            },
        ),
        (
            "title is written once",
            Arc::new(TitleMiddleware),
            Hook::AfterModel,
            titled,
            |update, _| {
                assert!(update.is_none());
            },
        ),
        (
            "title waits for an AI message",
            Arc::new(TitleMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q"), human("h2", "q2")]),
            |update, _| {
                assert!(update.is_none());
            },
        ),
        (
            "token usage attributes a tool batch",
            Arc::new(TokenUsageMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q"), ai_with_call]),
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                let attribution = &message.additional_kwargs["token_usage_attribution"];
                assert_eq!(attribution["kind"], "tool_batch");
                assert_eq!(attribution["tool_call_ids"], json!(["call_1"]));
                assert_eq!(
                    attribution["actions"],
                    json!([{"kind": "tool", "tool_name": "write_file", "description": "save", "tool_call_id": "call_1"}])
                );
                assert_eq!(attribution["shared_attribution"], false, "one action");
            },
        ),
        (
            "token usage says two actions share the call's tokens",
            Arc::new(TokenUsageMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q"), ai_with_two_calls]),
            |update, _| {
                let message = &update.as_ref().unwrap().messages[0];
                assert_eq!(
                    message.additional_kwargs["token_usage_attribution"]["shared_attribution"],
                    true
                );
            },
        ),
        (
            "token usage attributes a final answer",
            Arc::new(TokenUsageMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q"), Message::ai("done", Vec::new())]),
            |update, _| {
                assert_eq!(
                    update.as_ref().unwrap().messages[0].additional_kwargs["token_usage_attribution"]
                        ["kind"],
                    "final_answer"
                );
            },
        ),
        (
            "token usage ignores a non-AI tail",
            Arc::new(TokenUsageMiddleware),
            Hook::AfterModel,
            state_of(vec![human("h1", "q")]),
            |update, _| {
                assert!(update.is_none());
            },
        ),
        (
            "the sandbox is acquired on the first tool step",
            Arc::new(SandboxMiddleware),
            Hook::ToolStep,
            state_of(vec![]),
            |update, _| {
                assert_eq!(
                    update.as_ref().unwrap().channels,
                    [(
                        "sandbox".to_string(),
                        json!({"sandbox_id": "local:user-1:thread-1"})
                    )]
                );
            },
        ),
        (
            "the sandbox is acquired once",
            Arc::new(SandboxMiddleware),
            Hook::ToolStep,
            sandboxed,
            |update, _| {
                assert!(update.is_none());
            },
        ),
    ];
    for (name, middleware, hook, state, check) in table {
        let harness = harness(|_| {});
        let update = run_hook(middleware.as_ref(), hook, &state, &harness.run).await;
        eprintln!("case: {name}");
        check(&update, &harness.run);
        for other in [Hook::BeforeAgent, Hook::AfterModel, Hook::ToolStep] {
            if std::mem::discriminant(&other) != std::mem::discriminant(&hook) {
                let silent = run_hook(middleware.as_ref(), other, &state, &harness.run).await;
                assert!(silent.is_none(), "{name}: {other:?} must be silent");
            }
        }
    }
}

#[tokio::test]
async fn title_is_off_when_disabled() {
    let harness = harness(|config| config.title.enabled = false);
    let state = state_of(vec![
        human("h1", "question"),
        Message::ai("answer", Vec::new()),
    ]);
    assert!(
        TitleMiddleware
            .after_model(&state, &harness.run)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn sanitisation_wraps_only_the_user_input_and_only_on_the_request() {
    let harness = harness(|_| {});
    let mut input = human("h1__user", "hello");
    input.name = Some("user-input".into());
    let mut hidden = human("h0", "secret context");
    hidden
        .additional_kwargs
        .insert("hide_from_ui".into(), json!(true));
    let plain = human("h2", "not from the input box");
    let request = ModelRequest {
        messages: [Message::system("prompt"), hidden, input.clone(), plain]
            .map(Arc::new)
            .to_vec(),
        tools: Vec::new(),
        metadata: Default::default(),
        options: Default::default(),
    };
    let chain: Vec<Arc<dyn Middleware>> = vec![Arc::new(InputSanitizationMiddleware)];
    ModelCall::new(&chain, harness.model.as_ref(), &harness.run)
        .call(request)
        .await
        .unwrap();
    let seen = harness.model.seen.lock().unwrap()[0].clone();
    let texts: Vec<String> = seen.messages.iter().map(|m| m.text()).collect();
    assert_eq!(texts[1], "secret context");
    assert_eq!(
        texts[2],
        "--- BEGIN USER INPUT ---\nhello\n--- END USER INPUT ---"
    );
    assert_eq!(
        seen.messages[2].additional_kwargs["original_user_content"],
        json!("hello")
    );
    assert_eq!(texts[3], "not from the input box");
    assert_eq!(input.text(), "hello", "state is untouched");
}

#[tokio::test]
async fn the_error_middleware_turns_a_generic_failure_into_the_fallback_without_retrying() {
    #[derive(Debug, Default)]
    struct Failing {
        calls: Mutex<u32>,
    }
    #[async_trait]
    impl ChatModel for Failing {
        async fn invoke(&self, _: &ModelRequest) -> Result<Message, ModelError> {
            *self.calls.lock().unwrap() += 1;
            Err(ModelError::new(
                "ReplayMiss",
                "replay miss: nothing recorded",
            ))
        }
    }
    let harness = harness(|_| {});
    let failing = Failing::default();
    let chain: Vec<Arc<dyn Middleware>> = vec![Arc::new(LlmErrorHandlingMiddleware)];
    let request = ModelRequest {
        messages: vec![Message::human("hi").into()],
        tools: Vec::new(),
        metadata: Default::default(),
        options: Default::default(),
    };
    let answer = ModelCall::new(&chain, &failing, &harness.run)
        .call(request)
        .await
        .unwrap();
    assert_eq!(*failing.calls.lock().unwrap(), 1);
    assert_eq!(
        answer.additional_kwargs["deerflow_error_fallback"],
        Value::Bool(true)
    );
    assert_eq!(
        answer.text(),
        "LLM request failed: replay miss: nothing recorded"
    );
}

/// The date reminder is written once per day (`docs/gateway-contract.md` §6.4): each row is a
/// thread's messages and today's date → the ids the update writes (none: a silent step).
#[test]
fn the_date_reminder_is_added_once_per_day() {
    use super::dynamic_context::{date_reminder, inject};
    let reminded = |id: &str, date: &str| {
        let mut reminder = date_reminder(date);
        reminder.id = Some(id.into());
        reminder
    };
    let first_run = vec![human("h1", "hi")];
    let second_run = vec![
        reminded("h1", "2026-12-01, Tuesday"),
        human("h1__user", "hi"),
        Message::ai("done", Vec::new()),
        human("h2", "again"),
    ];
    let table: Vec<(&str, Vec<Message>, &str, Vec<&str>)> = vec![
        (
            "a first run",
            first_run,
            "2026-12-01, Tuesday",
            vec!["h1", "h1__user"],
        ),
        (
            "a later run on the same day",
            second_run.clone(),
            "2026-12-01, Tuesday",
            vec![],
        ),
        (
            "a later run on a new day",
            second_run,
            "2026-12-02, Wednesday",
            vec!["h2", "h2__user"],
        ),
        (
            "a visible copy only",
            vec![human("h1__user", "hi")],
            "2026-12-01, Tuesday",
            vec![],
        ),
    ];
    for (name, messages, today, expected) in table {
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
        let ids: Vec<String> = inject(&messages, today)
            .map(|update| update.messages.into_iter().filter_map(|m| m.id).collect())
            .unwrap_or_default();
        assert_eq!(ids, expected, "{name}");
    }
}

/// Answers every call with the same tool call.
#[derive(Debug)]
struct RepeatingModel;

#[async_trait]
impl ChatModel for RepeatingModel {
    async fn invoke(&self, _request: &ModelRequest) -> Result<Message, ModelError> {
        let call = ToolCall {
            name: "ls".into(),
            args: json!({"description": "again", "path": "/mnt/user-data/outputs"}),
            id: uuid::Uuid::new_v4().to_string(),
        };
        Ok(Message::ai("", vec![call]))
    }
}

/// A model that repeats itself ends its run after the fifth identical call, with the forced-stop
/// answer, well inside the recursion limit: the loop reads the answer after the after-model
/// hooks, which may strip its tool calls.
#[tokio::test]
async fn a_repeating_model_is_stopped_by_loop_detection() {
    let (run, _home) = run_context(|_| {}, Arc::new(RepeatingModel));
    let outcome = crate::runtime::agent::AgentLoop::new(&run, AgentState::default(), None)
        .run(vec![human("h1", "list it")])
        .await;
    assert_eq!(outcome.error, None);
    let answers: Vec<&Message> = outcome
        .state
        .messages
        .iter()
        .filter(|m| m.kind == crate::messages::MessageType::Ai)
        .map(|m| &**m)
        .collect();
    assert_eq!(answers.len(), 5, "five model calls");
    let last = answers[4];
    assert!(last.tool_calls.is_empty());
    assert!(last.text().starts_with("[FORCED STOP]"), "{}", last.text());
}
