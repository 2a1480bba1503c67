//! `GET /api/threads/{id}/messages/page`: the thread's visible message history, newest page
//! first, for a client that pages backwards by `seq`. It is the web client's only source of
//! history for a thread whose runs have no checkpoint.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use super::{QueryParams, query_error};
use crate::app::App;
use crate::http::guard::CurrentUser;
use crate::http::runs::{row_json, seconds_between};
use crate::http::{ApiError, ApiQuery, thread_or_own_runs};
use crate::runtime::runs::RunManager;
use crate::store::{EventQuery, EventRecord, RunRecord, Store};

pub(super) fn routes() -> Router<App> {
    Router::new().route("/api/threads/{thread_id}/messages/page", get(page))
}

/// How many journal rows one store read fetches while looking for visible rows.
const SCAN_BATCH: usize = 201;

/// `?limit=1..200 (50)&before_seq=≥1` → `{"data", "has_more", "next_before_seq"}`.
///
/// `data` holds the newest `limit` visible message rows before the cursor, in ascending `seq`.
/// Visible: a message row of one of the caller's runs whose `metadata.caller` is not a
/// middleware. Each row gets `feedback: null`; the last visible AI row of each run gets
/// `content.additional_kwargs.turn_duration`, the run's duration in whole seconds (as the
/// per-run messages route, `docs/gateway-contract.md` §4.7). `after_seq` is refused with 422: the
/// page only goes backwards.
async fn page(
    State(store): State<Store>,
    State(active): State<Arc<RunManager>>,
    user: CurrentUser,
    Path(thread_id): Path<String>,
    ApiQuery(params): ApiQuery<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let params = QueryParams::new(params);
    if params.has("after_seq") {
        return Err(query_error(
            "after_seq",
            "after_seq is not supported by this backward-only endpoint",
        ));
    }
    let limit = params.int("limit", 1..=200, Some(50))?.unwrap_or(50) as usize;
    let before_seq = params.int("before_seq", 1..=i64::MAX, None)?;
    thread_or_own_runs(&store, &active, &user, &thread_id).await?;
    let runs: BTreeMap<String, RunRecord> = store
        .list_runs(&thread_id, &user.id, 10_000)
        .await?
        .into_iter()
        .chain(
            active
                .runs_of_thread(&thread_id)
                .into_iter()
                .filter(|run| run.owner_id == user.id),
        )
        .map(|run| (run.run_id.clone(), run))
        .collect();
    let (rows, has_more) = scan(&store, &thread_id, &runs, limit, before_seq).await?;
    let last_ai = last_visible_ai_seq(&store, &thread_id, &runs, &rows).await?;
    let data: Vec<Value> = rows
        .iter()
        .map(|row| {
            let mut json = row_json(&thread_id, row);
            json["feedback"] = Value::Null;
            let duration = runs
                .get(&row.event.run_id)
                .and_then(|run| seconds_between(&run.created_at, &run.updated_at));
            if last_ai.get(&row.event.run_id) == Some(&row.seq)
                && let Some(duration) = duration
                && let Some(kwargs) = json
                    .pointer_mut("/content/additional_kwargs")
                    .and_then(Value::as_object_mut)
            {
                kwargs.insert("turn_duration".into(), json!(duration));
            }
            json
        })
        .collect();
    let next_before_seq = match (has_more, data.first()) {
        (true, Some(first)) => first["seq"].clone(),
        _ => Value::Null,
    };
    Ok(Json(
        json!({"data": data, "has_more": has_more, "next_before_seq": next_before_seq}),
    ))
}

fn is_middleware_row(row: &EventRecord) -> bool {
    row.event
        .metadata
        .get("caller")
        .and_then(Value::as_str)
        .is_some_and(|caller| caller.starts_with("middleware:"))
}

fn visible(row: &EventRecord, runs: &BTreeMap<String, RunRecord>) -> bool {
    runs.contains_key(&row.event.run_id) && !is_middleware_row(row)
}

/// The newest `limit` visible rows before `before_seq` (ascending), and whether older visible
/// rows exist. Reads the journal backwards in batches, so hidden rows never shorten a page.
async fn scan(
    store: &Store,
    thread_id: &str,
    runs: &BTreeMap<String, RunRecord>,
    limit: usize,
    before_seq: Option<i64>,
) -> Result<(Vec<EventRecord>, bool), ApiError> {
    let mut newest_first = Vec::with_capacity(limit + 1);
    let mut cursor = before_seq;
    'batches: loop {
        let batch = store
            .query_events(
                thread_id,
                EventQuery {
                    category: Some("message".into()),
                    before_seq: cursor,
                    limit: SCAN_BATCH,
                    ..EventQuery::default()
                },
            )
            .await?;
        let Some(oldest) = batch.first().map(|row| row.seq) else {
            break;
        };
        let complete = batch.len() < SCAN_BATCH;
        for row in batch.into_iter().rev() {
            if visible(&row, runs) {
                newest_first.push(row);
                if newest_first.len() > limit {
                    break 'batches;
                }
            }
        }
        if complete {
            break;
        }
        cursor = Some(oldest);
    }
    let has_more = newest_first.len() > limit;
    newest_first.truncate(limit);
    newest_first.reverse();
    Ok((newest_first, has_more))
}

/// For each run on the page, the `seq` of its last visible AI row in the whole journal (which
/// may lie on a newer page).
async fn last_visible_ai_seq(
    store: &Store,
    thread_id: &str,
    runs: &BTreeMap<String, RunRecord>,
    rows: &[EventRecord],
) -> Result<HashMap<String, i64>, ApiError> {
    let run_ids: HashSet<&String> = rows.iter().map(|row| &row.event.run_id).collect();
    let mut last = HashMap::new();
    for run_id in run_ids {
        let ai_rows = store
            .query_events(
                thread_id,
                EventQuery {
                    run_id: Some(run_id.clone()),
                    category: Some("message".into()),
                    event_types: vec!["llm.ai.response".into()],
                    ..EventQuery::default()
                },
            )
            .await?;
        if let Some(row) = ai_rows.iter().rev().find(|row| visible(row, runs)) {
            last.insert(run_id.clone(), row.seq);
        }
    }
    Ok(last)
}
