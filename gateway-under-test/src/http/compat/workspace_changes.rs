//! `GET /api/threads/{id}/runs/{run_id}/workspace-changes`: what a run changed in the thread's
//! sandbox, as the run worker recorded it in the journal (`crate::workspace`).

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::QueryParams;
use crate::app::App;
use crate::http::guard::CurrentUser;
use crate::http::runs::find_run;
use crate::http::{ApiError, ApiQuery, readable_thread};
use crate::runtime::runs::RunManager;
use crate::store::{EventQuery, Store};
use crate::workspace::{EVENT_TYPE, METADATA_KEY};

pub(super) fn routes() -> Router<App> {
    Router::new().route(
        "/api/threads/{thread_id}/runs/{run_id}/workspace-changes",
        get(workspace_changes),
    )
}

/// `?include_files=true&include_diff=true` → `{"version", "available", "summary", "files",
/// "limits"}`. `available` is false, with a zeroed summary, when the run recorded nothing
/// (it changed nothing, or it is still running). `include_files=false` empties `files`;
/// `include_diff=false` blanks every `diff`.
async fn workspace_changes(
    State(store): State<Store>,
    State(runs): State<Arc<RunManager>>,
    user: CurrentUser,
    Path((thread_id, run_id)): Path<(String, String)>,
    ApiQuery(params): ApiQuery<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let params = QueryParams::new(params);
    let include_files = params.boolean("include_files", true)?;
    let include_diff = params.boolean("include_diff", true)?;
    readable_thread(&store, &user, &thread_id).await?;
    find_run(&store, &runs, &user, &thread_id, &run_id).await?;
    let rows = store
        .query_events(
            &thread_id,
            EventQuery {
                run_id: Some(run_id),
                event_types: vec![EVENT_TYPE.into()],
                limit: 10,
                ..EventQuery::default()
            },
        )
        .await?;
    let recorded = rows
        .last()
        .and_then(|row| row.event.metadata.get(METADATA_KEY))
        .and_then(Value::as_object)
        .cloned();
    let Some(mut answer) = recorded else {
        return Ok(Json(not_recorded()));
    };
    answer.insert("available".into(), json!(true));
    if !include_files {
        answer.insert("files".into(), json!([]));
    } else if !include_diff
        && let Some(files) = answer.get_mut("files").and_then(Value::as_array_mut)
    {
        for file in files {
            file["diff"] = json!("");
        }
    }
    Ok(Json(Value::Object(answer)))
}

fn not_recorded() -> Value {
    json!({
        "version": 1,
        "available": false,
        "summary": {"created": 0, "modified": 0, "deleted": 0, "symlink_created": 0,
                    "additions": 0, "deletions": 0, "truncated": false},
        "files": [],
        "limits": {},
    })
}
