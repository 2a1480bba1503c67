//! `/api/threads`: create (idempotent), get, state, history, search, patch and delete, with
//! ownership checks (`docs/gateway-contract.md` §3).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::{Map, Value, json};

use std::sync::Arc;

use crate::app::App;
use crate::http::guard::CurrentUser;
use crate::http::{ApiError, ApiJson, accepted_as, owned_thread, valid_thread_id};
use crate::messages::Message;
use crate::runtime::agent::Agent;
use crate::runtime::runs::RunManager;
use crate::runtime::state::{AgentState, StateUpdate};
use crate::store::{CheckpointRecord, Store, ThreadRecord};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/threads", post(create))
        .route("/api/threads/search", post(search))
        .route(
            "/api/threads/{thread_id}",
            get(get_thread).patch(patch).delete(delete),
        )
        .route(
            "/api/threads/{thread_id}/state",
            get(get_state).post(post_state),
        )
        .route("/api/threads/{thread_id}/history", post(history))
}

/// The body of `POST /api/threads`. As on the run routes, unknown fields are rejected (422);
/// the LangGraph fields clients send are accepted and ignored: create is idempotent anyway.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    thread_id: Option<String>,
    assistant_id: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    #[serde(
        default,
        rename = "if_exists",
        deserialize_with = "accepted_as::<String, _>"
    )]
    _if_exists: IgnoredAny,
    #[serde(
        default,
        rename = "graph_id",
        deserialize_with = "accepted_as::<String, _>"
    )]
    _graph_id: IgnoredAny,
    #[serde(default, rename = "supersteps")]
    _supersteps: IgnoredAny,
    #[serde(default, rename = "ttl")]
    _ttl: IgnoredAny,
}

/// The records of a new thread (§3.3): the metadata row owned by `owner_id` (without the
/// `owner_id`/`user_id` keys a client may send) and the empty checkpoint at step -1.
pub(super) fn new_thread(
    thread_id: &str,
    owner_id: &str,
    assistant_id: Option<String>,
    mut metadata: Map<String, Value>,
) -> (ThreadRecord, CheckpointRecord) {
    metadata.remove("owner_id");
    metadata.remove("user_id");
    let now = crate::clock::now_iso();
    let mut checkpoint_metadata = Map::new();
    checkpoint_metadata.insert("step".into(), json!(-1));
    checkpoint_metadata.insert("source".into(), json!("input"));
    checkpoint_metadata.insert("writes".into(), Value::Null);
    checkpoint_metadata.insert("parents".into(), json!({}));
    checkpoint_metadata.extend(metadata.clone());
    checkpoint_metadata.insert("created_at".into(), json!(now));
    let thread = ThreadRecord {
        thread_id: thread_id.into(),
        owner_id: owner_id.into(),
        assistant_id,
        status: "idle".into(),
        metadata: Value::Object(metadata),
        display_name: None,
        created_at: now.clone(),
        updated_at: now.clone(),
    };
    let initial = CheckpointRecord {
        thread_id: thread_id.into(),
        checkpoint_id: uuid::Uuid::new_v4().to_string(),
        parent_checkpoint_id: None,
        step: -1,
        values: json!({}),
        metadata: Value::Object(checkpoint_metadata),
        created_at: now,
    };
    (thread, initial)
}

/// 409 while a run is active on the thread: its state must not change under the run.
fn refuse_while_running(runs: &RunManager, thread_id: &str) -> Result<(), ApiError> {
    match runs.active_on(thread_id) {
        Some(run) if !run.is_done() => Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("Thread {thread_id} has an active run"),
        )),
        _ => Ok(()),
    }
}

/// ThreadResponse (§3.2).
pub(super) fn thread_response(thread: &ThreadRecord, values: Value) -> Value {
    json!({
        "thread_id": thread.thread_id,
        "status": thread.status,
        "created_at": thread.created_at,
        "updated_at": thread.updated_at,
        "metadata": thread.metadata,
        "values": values,
        "interrupts": {},
    })
}

async fn latest_values(store: &Store, thread_id: &str) -> Result<Value, ApiError> {
    Ok(store
        .latest_checkpoint(thread_id)
        .await?
        .map(|checkpoint| checkpoint.values)
        .unwrap_or_else(|| json!({})))
}

async fn create(
    State(store): State<Store>,
    user: CurrentUser,
    ApiJson(body): ApiJson<CreateBody>,
) -> Result<Json<Value>, ApiError> {
    let thread_id = body
        .thread_id
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    if !valid_thread_id(&thread_id) {
        return Err(ApiError::validation("thread_id", super::INVALID_THREAD_ID));
    }
    let metadata = body.metadata.unwrap_or_default();
    let (thread, initial) = new_thread(&thread_id, &user.id, body.assistant_id, metadata);
    let (thread, created) = store.create_thread(thread, initial).await?;
    if thread.owner_id != user.id {
        // Someone else's id: answer as if it did not exist rather than reveal it.
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("Thread {thread_id} already exists"),
        ));
    }
    let values = if created {
        json!({})
    } else {
        latest_values(&store, &thread_id).await?
    };
    Ok(Json(thread_response(&thread, values)))
}

async fn get_thread(
    State(store): State<Store>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let thread = owned_thread(&store, &user, &thread_id).await?;
    let values = latest_values(&store, &thread_id).await?;
    Ok(Json(thread_response(&thread, values)))
}

fn state_object(checkpoint: &CheckpointRecord) -> Value {
    json!({
        "values": checkpoint.values,
        "next": [],
        "metadata": checkpoint.metadata,
        "checkpoint": {"id": checkpoint.checkpoint_id, "ts": checkpoint.created_at},
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "created_at": checkpoint.created_at,
        "tasks": [],
    })
}

async fn get_state(
    State(store): State<Store>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    owned_thread(&store, &user, &thread_id).await?;
    let checkpoint = store
        .latest_checkpoint(&thread_id)
        .await?
        .ok_or_else(|| ApiError::thread_not_found(&thread_id))?;
    Ok(Json(state_object(&checkpoint)))
}

/// `POST …/state`. `checkpoint_id` and `checkpoint` are accepted but the update always applies
/// to the latest checkpoint (no time travel here).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StateBody {
    values: Option<Map<String, Value>>,
    #[serde(
        default,
        rename = "checkpoint_id",
        deserialize_with = "accepted_as::<String, _>"
    )]
    _checkpoint_id: IgnoredAny,
    #[serde(default, rename = "checkpoint")]
    _checkpoint: IgnoredAny,
    as_node: Option<String>,
}

/// Applies `values` as an update (messages merge by id, channels through their reducers) and
/// writes a new checkpoint; without `values` it returns the current state.
async fn post_state(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<StateBody>,
) -> Result<Json<Value>, ApiError> {
    owned_thread(&store, &user, &thread_id).await?;
    refuse_while_running(&runs, &thread_id)?;
    let latest = store
        .latest_checkpoint(&thread_id)
        .await?
        .ok_or_else(|| ApiError::thread_not_found(&thread_id))?;
    let Some(values) = body.values else {
        return Ok(Json(state_object(&latest)));
    };
    let mut state = AgentState::from_values(&latest.values)
        .map_err(|err| ApiError::internal("stored state", err))?;
    let mut update = StateUpdate::default();
    for (channel, value) in values {
        if channel == "messages" {
            for (index, message) in value.as_array().into_iter().flatten().enumerate() {
                update
                    .messages
                    .push(Message::from_json(message).map_err(|err| {
                        ApiError::validation("values", format!("messages[{index}]: {err}"))
                    })?);
            }
        } else {
            update.channels.push((channel, value));
        }
    }
    let node = body.as_node.unwrap_or_else(|| "__update__".into());
    let writes = update.to_json();
    state.apply(update);
    let checkpoint = CheckpointRecord {
        thread_id: thread_id.clone(),
        checkpoint_id: uuid::Uuid::new_v4().to_string(),
        parent_checkpoint_id: Some(latest.checkpoint_id.clone()),
        step: latest.step + 1,
        values: state.to_values(),
        metadata: json!({"source": "update", "step": latest.step + 1, "writes": {node: writes}, "parents": {}}),
        created_at: crate::clock::now_iso(),
    };
    store.put_checkpoint(checkpoint.clone()).await?;
    Ok(Json(state_object(&checkpoint)))
}

#[derive(Debug, Deserialize)]
struct HistoryBody {
    limit: Option<i64>,
    before: Option<String>,
}

const DROPPED_HISTORY_METADATA: [&str; 6] = [
    "created_at",
    "updated_at",
    "source",
    "writes",
    "parents",
    "run_durations",
];

async fn history(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<HistoryBody>,
) -> Result<Json<Value>, ApiError> {
    // A thread with runs but no checkpoint (seeded) has no history: `200 []`, not 404.
    super::thread_or_own_runs(&store, &runs, &user, &thread_id).await?;
    let limit = body.limit.unwrap_or(10);
    if !(1..=100).contains(&limit) {
        return Err(ApiError::validation(
            "limit",
            "limit must be between 1 and 100",
        ));
    }
    let checkpoints = store
        .list_checkpoints(&thread_id, limit as usize, body.before)
        .await?;
    let entries = checkpoints
        .iter()
        .enumerate()
        .map(|(index, checkpoint)| history_entry(checkpoint, index == 0))
        .collect();
    Ok(Json(Value::Array(entries)))
}

/// One history entry: `values` keeps `title` and `thread_data` (and `messages` on the newest
/// entry only, stamped with run ids and turn durations); `metadata` drops bookkeeping keys.
fn history_entry(checkpoint: &CheckpointRecord, newest: bool) -> Value {
    let mut values = Map::new();
    for key in ["title", "thread_data"] {
        if let Some(value) = checkpoint.values.get(key) {
            values.insert(key.into(), value.clone());
        }
    }
    if newest && let Some(messages) = checkpoint.values.get("messages").and_then(Value::as_array) {
        values.insert("messages".into(), Value::Array(stamp_runs(messages)));
    }
    let mut metadata = checkpoint.metadata.as_object().cloned().unwrap_or_default();
    for key in DROPPED_HISTORY_METADATA {
        metadata.remove(key);
    }
    json!({
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_checkpoint_id": checkpoint.parent_checkpoint_id,
        "metadata": metadata,
        "values": values,
        "created_at": checkpoint.created_at,
        "next": [],
    })
}

/// Stamps every message with the `run_id` of the human message that opened its run.
fn stamp_runs(messages: &[Value]) -> Vec<Value> {
    let mut current_run: Option<Value> = None;
    messages
        .iter()
        .map(|message| {
            let mut message = message.clone();
            if let Some(run_id) = message.pointer("/additional_kwargs/run_id") {
                current_run = Some(run_id.clone());
            }
            if let (Some(run_id), Some(kwargs)) = (
                &current_run,
                message
                    .get_mut("additional_kwargs")
                    .and_then(Value::as_object_mut),
            ) {
                kwargs.entry("run_id").or_insert(run_id.clone());
            }
            message
        })
        .collect()
}

#[derive(Debug, Deserialize)]
struct SearchBody {
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
    limit: Option<i64>,
    offset: Option<i64>,
    status: Option<String>,
}

async fn search(
    State(store): State<Store>,
    user: CurrentUser,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let limit = body.limit.unwrap_or(100);
    if !(0..=1000).contains(&limit) {
        return Err(ApiError::validation("limit", "limit must be at most 1000"));
    }
    let offset = body.offset.unwrap_or(0).max(0);
    let threads = store
        .search_threads(
            &user.id,
            Value::Object(body.metadata.unwrap_or_default()),
            body.status,
            limit as usize,
            offset as usize,
        )
        .await?;
    let mut out = Vec::with_capacity(threads.len());
    for thread in &threads {
        // A thread list shows titles only: DeerFlow's search answers `values: {"title"}`, not
        // every message of every thread.
        let title = store
            .latest_title(&thread.thread_id)
            .await?
            .or_else(|| thread.display_name.clone().map(Value::String));
        let values = title.map_or_else(|| json!({}), |title| json!({"title": title}));
        out.push(thread_response(thread, values));
    }
    Ok(Json(Value::Array(out)))
}

#[derive(Debug, Deserialize)]
struct PatchBody {
    metadata: Map<String, Value>,
}

async fn patch(
    State(store): State<Store>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiJson(body): ApiJson<PatchBody>,
) -> Result<Json<Value>, ApiError> {
    let thread = owned_thread(&store, &user, &thread_id).await?;
    let mut metadata = thread.metadata.as_object().cloned().unwrap_or_default();
    for (key, value) in body.metadata {
        if key != "owner_id" && key != "user_id" {
            metadata.insert(key, value);
        }
    }
    store
        .set_thread_metadata(
            &thread_id,
            Value::Object(metadata),
            &crate::clock::now_iso(),
        )
        .await?;
    let thread = owned_thread(&store, &user, &thread_id).await?;
    let values = latest_values(&store, &thread_id).await?;
    Ok(Json(thread_response(&thread, values)))
}

/// Deletes the thread, its checkpoints, runs, journal and sandbox folder. A thread with an active
/// run is refused with 409.
async fn delete(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    State(agent): State<Arc<Agent>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    owned_thread(&store, &user, &thread_id).await?;
    refuse_while_running(&runs, &thread_id)?;
    store.delete_thread(&thread_id).await?;
    let folder = agent.sandbox_paths(&user.id, &thread_id);
    if let Some(thread_folder) = folder.user_data.parent() {
        let thread_folder = thread_folder.to_path_buf();
        let _ = tokio::task::spawn_blocking(move || std::fs::remove_dir_all(thread_folder)).await;
    }
    Ok(Json(json!({"success": true, "thread_id": thread_id})))
}
