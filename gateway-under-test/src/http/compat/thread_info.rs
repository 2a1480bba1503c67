//! Per-thread numbers the chat page shows: token usage over the thread's runs, and the upload
//! limits.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::app::{App, WebClientSettings};
use crate::http::ApiError;
use crate::http::guard::CurrentUser;
use crate::http::thread_or_own_runs;
use crate::run_status::RunStatus;
use crate::runtime::runs::RunManager;
use crate::store::{EventQuery, RunRecord, Store};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/threads/{thread_id}/token-usage", get(token_usage))
        .route(
            "/api/threads/{thread_id}/uploads/limits",
            get(upload_limits),
        )
}

/// `{"max_files", "max_file_size", "max_total_size"}` from `[uploads]`.
async fn upload_limits(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    State(settings): State<Arc<WebClientSettings>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    thread_or_own_runs(&store, &runs, &user, &thread_id).await?;
    let limits = &settings.uploads;
    Ok(Json(json!({
        "max_files": limits.max_files,
        "max_file_size": limits.max_file_size,
        "max_total_size": limits.max_total_size,
    })))
}

/// The caller's runs of the thread: in-memory records win over stored ones with the same id.
async fn own_runs(
    store: &Store,
    active: &RunManager,
    user: &CurrentUser,
    thread_id: &str,
) -> Result<Vec<RunRecord>, ApiError> {
    let mut runs: Vec<RunRecord> = active
        .runs_of_thread(thread_id)
        .into_iter()
        .filter(|run| run.owner_id == user.id)
        .collect();
    for stored in store.list_runs(thread_id, &user.id, 10_000).await? {
        if !runs.iter().any(|run| run.run_id == stored.run_id) {
            runs.push(stored);
        }
    }
    Ok(runs)
}

/// The model a run used: `context.model_name` as requested, else the default (first) model.
fn run_model(settings: &WebClientSettings, run: &RunRecord) -> String {
    [
        "/config/context/model_name",
        "/config/configurable/model_name",
    ]
    .iter()
    .find_map(|pointer| run.kwargs.pointer(pointer).and_then(Value::as_str))
    .map(String::from)
    .or_else(|| settings.models.first().map(|model| model.name.clone()))
    .unwrap_or_else(|| "unknown".into())
}

fn counter(run: &RunRecord, name: &str) -> i64 {
    run.counters.get(name).and_then(Value::as_i64).unwrap_or(0)
}

/// Token usage of the thread's finished runs (`success` and `error`, as DeerFlow aggregates):
/// totals, per model (tokens and runs), per caller kind, and `context_usage` from the newest
/// lead-agent model call (`token_count` = its total tokens, `max_context_tokens` from
/// `models[].max_context_tokens`, `percentage` rounded to one decimal; `null` when unknown).
async fn token_usage(
    State(store): State<Store>,
    State(active): State<Arc<RunManager>>,
    State(settings): State<Arc<WebClientSettings>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    thread_or_own_runs(&store, &active, &user, &thread_id).await?;
    let runs: Vec<RunRecord> = own_runs(&store, &active, &user, &thread_id)
        .await?
        .into_iter()
        .filter(|run| matches!(run.status, RunStatus::Success | RunStatus::Error))
        .collect();
    let sum = |name: &str| runs.iter().map(|run| counter(run, name)).sum::<i64>();
    let mut by_model: BTreeMap<String, (i64, i64)> = BTreeMap::new();
    for run in &runs {
        let entry = by_model.entry(run_model(&settings, run)).or_default();
        entry.0 += counter(run, "total_tokens");
        entry.1 += 1;
    }
    let by_model: serde_json::Map<String, Value> = by_model
        .into_iter()
        .map(|(name, (tokens, count))| (name, json!({"tokens": tokens, "runs": count})))
        .collect();
    Ok(Json(json!({
        "thread_id": thread_id,
        "total_tokens": sum("total_tokens"),
        "total_input_tokens": sum("total_input_tokens"),
        "total_output_tokens": sum("total_output_tokens"),
        "total_runs": runs.len(),
        "by_model": by_model,
        "by_caller": {
            "lead_agent": sum("lead_agent_tokens"),
            "subagent": sum("subagent_tokens"),
            "middleware": sum("middleware_tokens"),
        },
        "context_usage": context_usage(&store, &settings, &thread_id, &runs).await?,
    })))
}

async fn context_usage(
    store: &Store,
    settings: &WebClientSettings,
    thread_id: &str,
    runs: &[RunRecord],
) -> Result<Value, ApiError> {
    let rows = store
        .query_events(
            thread_id,
            EventQuery {
                category: Some("message".into()),
                event_types: vec!["llm.ai.response".into()],
                limit: 200,
                ..EventQuery::default()
            },
        )
        .await?;
    let own = |run_id: &str| runs.iter().find(|run| run.run_id == run_id);
    let latest = rows.iter().rev().find_map(|row| {
        let run = own(&row.event.run_id)?;
        if row.event.metadata.get("caller").and_then(Value::as_str) != Some("lead_agent") {
            return None;
        }
        let tokens = row
            .event
            .metadata
            .pointer("/usage/total_tokens")?
            .as_i64()?;
        Some((run, tokens))
    });
    let Some((run, token_count)) = latest else {
        return Ok(
            json!({"token_count": 0, "max_context_tokens": Value::Null, "percentage": Value::Null}),
        );
    };
    let max = settings
        .model(&run_model(settings, run))
        .and_then(|model| model.max_context_tokens);
    let percentage = max
        .filter(|max| *max > 0)
        .map(|max| (token_count as f64 * 1000.0 / max as f64).round() / 10.0);
    Ok(json!({"token_count": token_count, "max_context_tokens": max, "percentage": percentage}))
}
