//! Run routes (`docs/gateway-contract.md` §4): start (stream, background, wait), list, get, cancel,
//! join, and the paginated message journal.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::{FromRef, Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use crate::app::App;
use crate::config::RunsConfig;
use crate::http::guard::{CurrentUser, header};
use crate::http::sse::{self, DisconnectGuard};
use crate::http::{
    ApiError, ApiJson, ApiQuery, INVALID_THREAD_ID, accepted_as, owned_thread, readable_thread,
    valid_thread_id,
};
use crate::messages::Message;
use crate::run_status::{MultitaskStrategy, RunStatus};
use crate::runtime::agent::Agent;
use crate::runtime::context::StreamModes;
use crate::runtime::flags::RunFlags;
use crate::runtime::message_limits;
use crate::runtime::runs::{RunManager, RunSpec, StartError, start_run};
use crate::store::{EventQuery, RunRecord, Store};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route(
            "/api/threads/{thread_id}/runs",
            post(create_background).get(list),
        )
        .route("/api/threads/{thread_id}/runs/stream", post(create_stream))
        .route("/api/threads/{thread_id}/runs/wait", post(create_wait))
        .route("/api/threads/{thread_id}/runs/{run_id}", get(get_run))
        .route(
            "/api/threads/{thread_id}/runs/{run_id}/cancel",
            post(cancel),
        )
        .route("/api/threads/{thread_id}/runs/{run_id}/join", get(join))
        .route(
            "/api/threads/{thread_id}/runs/{run_id}/stream",
            get(join_or_cancel).post(join_or_cancel),
        )
        .route(
            "/api/threads/{thread_id}/runs/{run_id}/messages",
            get(thread_run_messages),
        )
        .route(
            "/api/threads/{thread_id}/runs/{run_id}/events",
            get(run_events),
        )
        .route("/api/threads/{thread_id}/messages", get(thread_messages))
        .route("/api/runs/stream", post(stateless_stream))
        .route("/api/runs/wait", post(stateless_wait))
        .route("/api/runs/{run_id}/messages", get(run_messages))
}

/// The body of every run-start route. Unknown fields are rejected (422). `command`,
/// `checkpoint_id`, `checkpoint`, `interrupt_before`, `interrupt_after` and `stream_subgraphs`
/// are part of the contract and accepted, but this gateway has no interrupts or subgraphs, so
/// they change nothing (gateway-under-test/README.md): a value is type-checked where the contract
/// gives a type, then dropped ([`IgnoredAny`]).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCreateRequest {
    assistant_id: Option<String>,
    input: Option<Value>,
    #[serde(default, rename = "command")]
    _command: IgnoredAny,
    metadata: Option<Value>,
    config: Option<Value>,
    context: Option<Value>,
    #[serde(
        default,
        rename = "checkpoint_id",
        deserialize_with = "accepted_as::<String, _>"
    )]
    _checkpoint_id: IgnoredAny,
    #[serde(default, rename = "checkpoint")]
    _checkpoint: IgnoredAny,
    #[serde(default, rename = "interrupt_before")]
    _interrupt_before: IgnoredAny,
    #[serde(default, rename = "interrupt_after")]
    _interrupt_after: IgnoredAny,
    stream_mode: Option<Value>,
    #[serde(
        default,
        rename = "stream_subgraphs",
        deserialize_with = "accepted_as::<bool, _>"
    )]
    _stream_subgraphs: IgnoredAny,
    stream_resumable: Option<Value>,
    on_disconnect: Option<String>,
    multitask_strategy: Option<String>,
    if_not_exists: Option<String>,
    webhook: Option<Value>,
    on_completion: Option<Value>,
    after_seconds: Option<Value>,
    feedback_keys: Option<Value>,
}

const STREAM_MODES: [&str; 7] = [
    "values",
    "messages-tuple",
    "updates",
    "debug",
    "tasks",
    "checkpoints",
    "custom",
];

fn unprocessable(detail: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, detail)
}

fn parse_stream_modes(value: Option<&Value>) -> Result<Vec<String>, ApiError> {
    let names: Vec<String> = match value {
        None | Some(Value::Null) => vec!["values".into()],
        Some(Value::String(mode)) => vec![mode.clone()],
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(String::from))
            .collect::<Option<_>>()
            .ok_or_else(|| ApiError::validation("stream_mode", "stream modes must be strings"))?,
        Some(_) => {
            return Err(ApiError::validation(
                "stream_mode",
                "must be a string or a list",
            ));
        }
    };
    let unsupported: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|name| !STREAM_MODES.contains(name))
        .collect();
    if !unsupported.is_empty() {
        return Err(unprocessable(format!(
            "Unsupported stream mode(s): {}",
            unsupported.join(", ")
        )));
    }
    Ok(names)
}

/// `config.recursion_limit`: absent or `null` is the default; a number keeps DeerFlow's clamp
/// (an integer of at least 1, capped at the maximum, anything else the default); any other JSON
/// value is refused (422) rather than silently becoming the default.
fn recursion_limit(limits: &RunsConfig, config: Option<&Value>) -> Result<u32, ApiError> {
    match config.and_then(|c| c.get("recursion_limit")) {
        None | Some(Value::Null) => Ok(limits.default_recursion_limit),
        Some(Value::Number(number)) => Ok(match number.as_i64() {
            Some(limit) if limit >= 1 => {
                (limit as u64).min(u64::from(limits.max_recursion_limit)) as u32
            }
            _ => limits.default_recursion_limit,
        }),
        Some(other) => Err(ApiError::validation(
            "config.recursion_limit",
            format!("recursion_limit must be a number, not {other}"),
        )),
    }
}

/// The assistant a run asks for. A malformed name and a well-formed name of an agent this
/// gateway does not have are both 422: running the lead agent instead would answer a question
/// the client did not ask. (DeerFlow loads custom agents by their normalised name; this gateway
/// has none.)
fn assistant_name(raw: Option<&str>) -> Result<String, ApiError> {
    let raw = raw.unwrap_or(LEAD_AGENT);
    if raw == LEAD_AGENT {
        return Ok(raw.into());
    }
    let name = raw.to_lowercase().replace('_', "-");
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err(unprocessable(format!(
            "Invalid assistant_id '{raw}': expected letters, digits, hyphens or underscores"
        )));
    }
    Err(unprocessable(format!(
        "Unknown assistant_id '{raw}': this gateway has only '{LEAD_AGENT}'"
    )))
}

/// The one assistant this gateway runs.
const LEAD_AGENT: &str = "lead_agent";

/// The input messages; a message whose text passes `message_limit` bytes is refused with 413.
fn parse_input(input: Option<&Value>, message_limit: usize) -> Result<Vec<Message>, ApiError> {
    let Some(input) = input.filter(|v| !v.is_null()) else {
        return Ok(Vec::new());
    };
    let messages = match input.get("messages") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(messages)) => messages,
        Some(_) => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "Invalid input: `messages` must be a list",
            ));
        }
    };
    messages
        .iter()
        .enumerate()
        .map(|(index, raw)| {
            let message = Message::from_json(raw).map_err(|reason| {
                ApiError::new(
                    StatusCode::BAD_REQUEST,
                    format!("Invalid message at input.messages[{index}]: {reason}"),
                )
            })?;
            match message_limits::user_message_error(&message, message_limit) {
                Some(reason) => Err(ApiError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    format!("input.messages[{index}]: {reason}"),
                )),
                None => Ok(message),
            }
        })
        .collect()
}

/// Redacts values under secret-looking keys before a config is stored in `kwargs`.
fn redact_secrets(value: &Value) -> Value {
    match value {
        Value::Object(object) => Value::Object(
            object
                .iter()
                .map(|(key, value)| {
                    let lower = key.to_lowercase();
                    let secret = ["key", "token", "secret", "password", "authorization"]
                        .iter()
                        .any(|word| lower.contains(word))
                        && !lower.contains("recursion");
                    let value = if secret {
                        json!("[redacted]")
                    } else {
                        redact_secrets(value)
                    };
                    (key.clone(), value)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact_secrets).collect()),
        other => other.clone(),
    }
}

/// The parts of the app that starting a run uses: the agent (to check the model), the store
/// (the thread) and the run manager.
#[derive(Clone)]
struct RunStarter {
    agent: Arc<Agent>,
    store: Store,
    runs: Arc<RunManager>,
}

impl FromRef<App> for RunStarter {
    fn from_ref(app: &App) -> RunStarter {
        RunStarter {
            agent: app.agent().clone(),
            store: app.store().clone(),
            runs: app.runs().clone(),
        }
    }
}

/// Validates a run request into a [`RunSpec`] (`docs/gateway-contract.md` §4.1–4.3).
async fn build_spec(
    starter: &RunStarter,
    user: &CurrentUser,
    thread_id: &str,
    body: RunCreateRequest,
    default_modes: &[&str],
) -> Result<RunSpec, ApiError> {
    if !valid_thread_id(thread_id) {
        return Err(unprocessable(INVALID_THREAD_ID));
    }
    for (name, value) in [
        ("webhook", &body.webhook),
        ("on_completion", &body.on_completion),
        ("after_seconds", &body.after_seconds),
        ("feedback_keys", &body.feedback_keys),
    ] {
        if value.as_ref().is_some_and(|v| !v.is_null()) {
            return Err(unprocessable(format!(
                "Run option '{name}' is not supported by DeerFlow"
            )));
        }
    }
    if !matches!(
        body.stream_resumable,
        None | Some(Value::Null) | Some(Value::Bool(false))
    ) {
        return Err(unprocessable("stream_resumable must be null or false"));
    }
    let on_disconnect = body.on_disconnect.as_deref().unwrap_or("cancel");
    if !matches!(on_disconnect, "cancel" | "continue") {
        return Err(ApiError::validation(
            "on_disconnect",
            "must be 'cancel' or 'continue'",
        ));
    }
    let strategy = match body.multitask_strategy.as_deref() {
        None => MultitaskStrategy::default(),
        Some(name) => name.parse().map_err(|_| {
            ApiError::validation(
                "multitask_strategy",
                "must be 'reject', 'rollback' or 'interrupt'",
            )
        })?,
    };
    if body.if_not_exists.as_deref().is_some_and(|v| v != "create") {
        return Err(ApiError::validation(
            "if_not_exists",
            "only 'create' is supported",
        ));
    }
    let modes = match &body.stream_mode {
        None => default_modes.iter().map(|m| m.to_string()).collect(),
        Some(value) => parse_stream_modes(Some(value))?,
    };
    let assistant_id = assistant_name(body.assistant_id.as_deref())?;
    let input = parse_input(
        body.input.as_ref(),
        starter.agent.settings().message_limits.user_message_bytes,
    )?;
    let flags = RunFlags::from_context(body.context.as_ref());
    let model_name = match flags.model_name() {
        Some(name) if starter.agent.model(name).is_none() => {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!("Model '{name}' is not in the configured model allowlist"),
            ));
        }
        Some(name) => name.to_string(),
        None => starter
            .agent
            .default_model_name()
            .ok_or_else(|| ApiError::new(StatusCode::BAD_REQUEST, "No model is configured"))?
            .to_string(),
    };
    let thread_exists = readable_thread(&starter.store, user, thread_id)
        .await?
        .is_some();
    if !thread_exists {
        if body.if_not_exists.as_deref() == Some("create") {
            create_thread_for_run(&starter.store, user, thread_id).await?;
        } else {
            return Err(ApiError::thread_not_found(thread_id));
        }
    }
    let limit = recursion_limit(starter.runs.settings(), body.config.as_ref())?;
    let mut config = body.config.clone().unwrap_or_else(|| json!({}));
    if let Value::Object(object) = &mut config {
        object.insert("recursion_limit".into(), json!(limit));
        for target in ["configurable", "context"] {
            let entry = object.entry(target).or_insert_with(|| json!({}));
            if let Value::Object(entry) = entry {
                entry.extend(flags.values.clone());
                if target == "configurable" {
                    entry.insert("thread_id".into(), json!(thread_id));
                }
            }
        }
    }
    Ok(RunSpec {
        thread_id: thread_id.to_string(),
        user_id: user.id.clone(),
        assistant_id,
        input,
        flags,
        model_name,
        modes: StreamModes::from_names(&modes),
        recursion_limit: limit,
        multitask_strategy: strategy,
        continue_on_disconnect: on_disconnect == "continue",
        metadata: body
            .metadata
            .filter(Value::is_object)
            .unwrap_or_else(|| json!({})),
        kwargs: json!({"input": body.input, "config": redact_secrets(&config)}),
    })
}

async fn create_thread_for_run(
    store: &Store,
    user: &CurrentUser,
    thread_id: &str,
) -> Result<(), ApiError> {
    let (thread, initial) = super::threads::new_thread(thread_id, &user.id, None, Map::new());
    store.create_thread(thread, initial).await?;
    Ok(())
}

fn start_error(error: StartError) -> ApiError {
    match error {
        StartError::Busy(_) => ApiError::new(StatusCode::CONFLICT, error.to_string()),
        StartError::UnknownModel(_) => ApiError::new(StatusCode::BAD_REQUEST, error.to_string()),
        StartError::Store(err) => err.into(),
    }
}

/// RunResponse (§4.5).
pub(super) fn run_response(record: &RunRecord) -> Value {
    let counter = |name: &str| record.counters.get(name).cloned().unwrap_or(json!(0));
    json!({
        "run_id": record.run_id,
        "thread_id": record.thread_id,
        "assistant_id": record.assistant_id,
        "status": record.status,
        "metadata": record.metadata,
        "kwargs": record.kwargs,
        "multitask_strategy": record.multitask_strategy,
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "total_input_tokens": counter("total_input_tokens"),
        "total_output_tokens": counter("total_output_tokens"),
        "total_tokens": counter("total_tokens"),
        "llm_call_count": counter("llm_call_count"),
        "lead_agent_tokens": counter("lead_agent_tokens"),
        "subagent_tokens": counter("subagent_tokens"),
        "middleware_tokens": counter("middleware_tokens"),
        "message_count": counter("message_count"),
        "stop_reason": record.stop_reason,
    })
}

fn heartbeat(runs: &RunManager) -> Duration {
    Duration::from_secs(runs.settings().heartbeat_seconds.max(1))
}

async fn stream_run(
    starter: RunStarter,
    user: CurrentUser,
    thread_id: String,
    body: RunCreateRequest,
) -> Result<Response, ApiError> {
    let spec = build_spec(&starter, &user, &thread_id, body, &["values"]).await?;
    let (run, subscription) = start_run(&starter.runs, spec).await.map_err(start_error)?;
    let location = format!("/api/threads/{thread_id}/runs/{}", run.record().run_id);
    let events = sse::frames(subscription, Some(DisconnectGuard::new(run)));
    Ok(sse::response(
        events,
        heartbeat(&starter.runs),
        Some(location),
    ))
}

async fn wait_run(
    starter: RunStarter,
    user: CurrentUser,
    thread_id: String,
    body: RunCreateRequest,
) -> Result<Json<Value>, ApiError> {
    let spec = build_spec(&starter, &user, &thread_id, body, &["values"]).await?;
    let (run, _subscription) = start_run(&starter.runs, spec).await.map_err(start_error)?;
    run.wait().await;
    let record = run.record();
    if record.status == RunStatus::Success {
        Ok(Json(run.final_values().unwrap_or_else(|| json!({}))))
    } else {
        Ok(Json(
            json!({"status": record.status, "error": record.error}),
        ))
    }
}

async fn create_stream(
    State(starter): State<RunStarter>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<RunCreateRequest>,
) -> Result<Response, ApiError> {
    stream_run(starter, user, thread_id, body).await
}

async fn create_wait(
    State(starter): State<RunStarter>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<RunCreateRequest>,
) -> Result<Json<Value>, ApiError> {
    wait_run(starter, user, thread_id, body).await
}

async fn create_background(
    State(starter): State<RunStarter>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<RunCreateRequest>,
) -> Result<Json<Value>, ApiError> {
    let spec = build_spec(&starter, &user, &thread_id, body, &["values"]).await?;
    let (run, _subscription) = start_run(&starter.runs, spec).await.map_err(start_error)?;
    Ok(Json(run_response(&run.record())))
}

fn stateless_thread_id(body: &RunCreateRequest) -> Result<String, ApiError> {
    body.config
        .as_ref()
        .and_then(|config| config.pointer("/configurable/thread_id"))
        .and_then(Value::as_str)
        .map(String::from)
        .ok_or_else(|| ApiError::validation("config", "config.configurable.thread_id is required"))
}

async fn stateless_stream(
    State(starter): State<RunStarter>,
    user: CurrentUser,
    ApiJson(body): ApiJson<RunCreateRequest>,
) -> Result<Response, ApiError> {
    let thread_id = stateless_thread_id(&body)?;
    stream_run(starter, user, thread_id, body).await
}

async fn stateless_wait(
    State(starter): State<RunStarter>,
    user: CurrentUser,
    ApiJson(body): ApiJson<RunCreateRequest>,
) -> Result<Json<Value>, ApiError> {
    let thread_id = stateless_thread_id(&body)?;
    wait_run(starter, user, thread_id, body).await
}

#[derive(Debug, Deserialize)]
struct ListQuery {
    limit: Option<usize>,
    offset: Option<usize>,
}

/// Runs of the thread, newest first by `created_at` compared as strings (§4.6): in-memory
/// records win over stored ones with the same id.
async fn list(
    State(store): State<Store>,
    State(active): State<Arc<RunManager>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<Value>, ApiError> {
    readable_thread(&store, &user, &thread_id).await?;
    let mut runs: Vec<RunRecord> = active
        .runs_of_thread(&thread_id)
        .into_iter()
        .filter(|run| run.owner_id == user.id)
        .collect();
    for stored in store.list_runs(&thread_id, &user.id, 100).await? {
        if !runs.iter().any(|run| run.run_id == stored.run_id) {
            runs.push(stored);
        }
    }
    runs.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    let offset = query.offset.unwrap_or(0);
    let limit = query.limit.unwrap_or(100).min(100);
    let page: Vec<Value> = runs
        .iter()
        .skip(offset)
        .take(limit)
        .map(run_response)
        .collect();
    Ok(Json(Value::Array(page)))
}

/// The run, from memory or the store, when it belongs to `user` and `thread_id`.
pub(super) async fn find_run(
    store: &Store,
    runs: &RunManager,
    user: &CurrentUser,
    thread_id: &str,
    run_id: &str,
) -> Result<RunRecord, ApiError> {
    let record = match runs.get(run_id) {
        Some(run) => Some(run.record()),
        None => store.get_run(run_id).await?,
    };
    record
        .filter(|record| record.owner_id == user.id && record.thread_id == thread_id)
        .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("Run {run_id} not found")))
}

async fn get_run(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
) -> Result<Json<Value>, ApiError> {
    readable_thread(&store, &user, &thread_id).await?;
    Ok(Json(run_response(
        &find_run(&store, &runs, &user, &thread_id, &run_id).await?,
    )))
}

#[derive(Debug, Deserialize)]
struct CancelQuery {
    wait: Option<bool>,
    action: Option<String>,
}

/// Cancels an active run: 202 at once, or 204 once it stopped with `wait=true`; 409 when the
/// run is already finished. `rollback` is accepted and behaves as `interrupt` (the steps already
/// checkpointed are kept).
async fn cancel(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<CancelQuery>,
) -> Result<Response, ApiError> {
    owned_thread(&store, &user, &thread_id).await?;
    if query
        .action
        .as_deref()
        .is_some_and(|a| a != "interrupt" && a != "rollback")
    {
        return Err(ApiError::validation(
            "action",
            "must be 'interrupt' or 'rollback'",
        ));
    }
    let record = find_run(&store, &runs, &user, &thread_id, &run_id).await?;
    match runs.get(&run_id).filter(|run| !run.is_done()) {
        Some(run) => {
            run.cancel.cancel();
            if query.wait.unwrap_or(false) {
                run.wait().await;
                Ok(StatusCode::NO_CONTENT.into_response())
            } else {
                Ok(StatusCode::ACCEPTED.into_response())
            }
        }
        None => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!(
                "Run {run_id} is not cancellable (status: {})",
                record.status
            ),
        )),
    }
}

async fn attach(
    store: &Store,
    runs: &RunManager,
    user: &CurrentUser,
    thread_id: &str,
    run_id: &str,
    headers: &HeaderMap,
) -> Result<Response, ApiError> {
    readable_thread(store, user, thread_id).await?;
    find_run(store, runs, user, thread_id, run_id).await?;
    let heartbeat = heartbeat(runs);
    let Some(run) = runs.get(run_id) else {
        return Ok(sse::response(sse::end_only(), heartbeat, None));
    };
    match run.stream.subscribe(header(headers, "last-event-id")) {
        Ok(subscription) => Ok(sse::response(
            sse::frames(subscription, None),
            heartbeat,
            None,
        )),
        Err(gap) => Ok(sse::response(sse::gap(run_id, &gap), heartbeat, None)),
    }
}

async fn join(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    attach(&store, &runs, &user, &thread_id, &run_id, &headers).await
}

/// `…/runs/{run_id}/stream`'s query. `wait` is accepted and type-checked, but the answer is a
/// stream either way, which already waits for the run.
#[derive(Debug, Deserialize)]
struct StreamQuery {
    action: Option<String>,
    #[serde(default, rename = "wait", deserialize_with = "accepted_as::<bool, _>")]
    _wait: IgnoredAny,
}

async fn join_or_cancel(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<StreamQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    if query.action.is_some()
        && let Some(run) = runs.get(&run_id)
    {
        find_run(&store, &runs, &user, &thread_id, &run_id).await?;
        run.cancel.cancel();
    }
    attach(&store, &runs, &user, &thread_id, &run_id, &headers).await
}

#[derive(Debug, Deserialize)]
struct MessagesQuery {
    limit: Option<i64>,
    before_seq: Option<i64>,
    after_seq: Option<i64>,
}

pub(super) fn seconds_between(start: &str, end: &str) -> Option<i64> {
    let start = chrono::DateTime::parse_from_rfc3339(start).ok()?;
    let end = chrono::DateTime::parse_from_rfc3339(end).ok()?;
    Some((end - start).num_seconds())
}

pub(super) fn row_json(thread_id: &str, row: &crate::store::EventRecord) -> Value {
    let mut metadata = row.event.metadata.as_object().cloned().unwrap_or_default();
    metadata.insert("content_is_json".into(), json!(true));
    metadata.insert(
        "content_is_dict".into(),
        json!(row.event.content.is_object()),
    );
    json!({
        "thread_id": thread_id,
        "run_id": row.event.run_id,
        "event_type": row.event.event_type,
        "category": row.event.category,
        "content": row.event.content,
        "metadata": metadata,
        "seq": row.seq,
        "created_at": row.event.created_at,
    })
}

/// §4.7: the run's message rows in ascending `seq`, a `limit + 1` window, and the turn duration
/// on the last non-middleware AI row.
async fn messages_page(
    store: &Store,
    record: &RunRecord,
    query: MessagesQuery,
) -> Result<Json<Value>, ApiError> {
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::validation(
            "limit",
            "limit must be between 1 and 200",
        ));
    }
    let limit = limit as usize;
    let rows = store
        .query_events(
            &record.thread_id,
            EventQuery {
                run_id: Some(record.run_id.clone()),
                category: Some("message".into()),
                event_types: Vec::new(),
                before_seq: query.before_seq,
                after_seq: query.after_seq,
                limit: limit + 1,
            },
        )
        .await?;
    let has_more = rows.len() > limit;
    let kept: Vec<_> = if query.after_seq.is_some() {
        rows.into_iter().take(limit).collect()
    } else {
        let skip = rows.len().saturating_sub(limit);
        rows.into_iter().skip(skip).collect()
    };
    let mut data: Vec<Value> = kept
        .iter()
        .map(|row| row_json(&record.thread_id, row))
        .collect();
    let duration = seconds_between(&record.created_at, &record.updated_at);
    if let Some(duration) = duration
        && let Some(last_ai) = data.iter_mut().rev().find(|row| {
            row["event_type"] == "llm.ai.response"
                && !row["metadata"]["caller"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("middleware:")
        })
        && let Some(kwargs) = last_ai
            .pointer_mut("/content/additional_kwargs")
            .and_then(Value::as_object_mut)
    {
        kwargs.insert("turn_duration".into(), json!(duration));
    }
    Ok(Json(json!({"data": data, "has_more": has_more})))
}

async fn thread_run_messages(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<MessagesQuery>,
) -> Result<Json<Value>, ApiError> {
    readable_thread(&store, &user, &thread_id).await?;
    let record = find_run(&store, &runs, &user, &thread_id, &run_id).await?;
    messages_page(&store, &record, query).await
}

async fn run_messages(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path(run_id): Path<String>,
    ApiQuery(query): ApiQuery<MessagesQuery>,
) -> Result<Json<Value>, ApiError> {
    let record = match runs.get(&run_id) {
        Some(run) => Some(run.record()),
        None => store.get_run(&run_id).await?,
    }
    .filter(|record| record.owner_id == user.id)
    .ok_or_else(|| ApiError::new(StatusCode::NOT_FOUND, format!("Run {run_id} not found")))?;
    readable_thread(&store, &user, &record.thread_id).await?;
    messages_page(&store, &record, query).await
}

#[derive(Debug, Deserialize)]
struct EventsQuery {
    event_types: Option<String>,
    limit: Option<usize>,
    after_seq: Option<i64>,
}

/// Raw journal rows of one run (§4.8).
async fn run_events(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<Json<Value>, ApiError> {
    readable_thread(&store, &user, &thread_id).await?;
    find_run(&store, &runs, &user, &thread_id, &run_id).await?;
    let limit = query.limit.unwrap_or(500);
    if !(1..=2000).contains(&limit) {
        return Err(ApiError::validation(
            "limit",
            "limit must be between 1 and 2000",
        ));
    }
    let event_types = query
        .event_types
        .map(|types| {
            types
                .split(',')
                .map(|t| t.trim().to_string())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let rows = store
        .query_events(
            &thread_id,
            EventQuery {
                run_id: Some(run_id),
                category: None,
                event_types,
                before_seq: None,
                after_seq: query.after_seq,
                limit,
            },
        )
        .await?;
    Ok(Json(Value::Array(
        rows.iter().map(|row| row_json(&thread_id, row)).collect(),
    )))
}

/// Message rows of the whole thread, each with a `feedback` field (§4.8).
async fn thread_messages(
    State(store): State<Store>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiQuery(query): ApiQuery<MessagesQuery>,
) -> Result<Json<Value>, ApiError> {
    readable_thread(&store, &user, &thread_id).await?;
    let limit = query.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(ApiError::validation(
            "limit",
            "limit must be between 1 and 200",
        ));
    }
    let own_runs: Vec<String> = store
        .list_runs(&thread_id, &user.id, 1000)
        .await?
        .into_iter()
        .map(|run| run.run_id)
        .collect();
    let rows = store
        .query_events(
            &thread_id,
            EventQuery {
                run_id: None,
                category: Some("message".into()),
                event_types: Vec::new(),
                before_seq: query.before_seq,
                after_seq: query.after_seq,
                limit: limit as usize,
            },
        )
        .await?;
    let data: Vec<Value> = rows
        .iter()
        .filter(|row| own_runs.contains(&row.event.run_id))
        .map(|row| {
            let mut json = row_json(&thread_id, row);
            if let Value::Object(object) = &mut json {
                object.insert("feedback".into(), Value::Null);
            }
            json
        })
        .collect();
    Ok(Json(Value::Array(data)))
}
