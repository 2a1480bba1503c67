//! The test-only `POST /api/test-only/seed-runs` route (`docs/gateway-contract.md` §13): runs with
//! message journal rows but no checkpoint and no thread metadata row. Compiled only with the
//! `test-seed` feature and mounted only when the launcher asks for it.

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::App;
use crate::http::guard::CurrentUser;
use crate::http::{ApiError, ApiJson, INVALID_THREAD_ID, valid_thread_id};
use crate::messages::Message;
use crate::store::{NewEvent, RunRecord, Store};

pub(super) fn routes() -> Router<App> {
    Router::new().route("/api/test-only/seed-runs", post(seed_runs))
}

#[derive(Debug, Deserialize)]
struct SeedMessage {
    role: String,
    content: String,
    id: String,
}

#[derive(Debug, Deserialize)]
struct SeedRun {
    run_id: String,
    created_at: String,
    messages: Vec<SeedMessage>,
}

#[derive(Debug, Deserialize)]
struct SeedBody {
    thread_id: String,
    runs: Vec<SeedRun>,
}

async fn seed_runs(
    State(store): State<Store>,
    user: CurrentUser,
    ApiJson(body): ApiJson<SeedBody>,
) -> Result<Json<Value>, ApiError> {
    if !valid_thread_id(&body.thread_id) {
        return Err(ApiError::validation("thread_id", INVALID_THREAD_ID));
    }
    for run in &body.runs {
        for (index, message) in run.messages.iter().enumerate() {
            if message.role != "human" && message.role != "ai" {
                return Err(ApiError::validation(
                    "runs",
                    format!(
                        "run {} message {index}: role must be 'human' or 'ai'",
                        run.run_id
                    ),
                ));
            }
        }
    }
    for run in &body.runs {
        let record = RunRecord::seeded(&run.run_id, &body.thread_id, &user.id, &run.created_at);
        store.put_run(record).await?;
        let events = run
            .messages
            .iter()
            .map(|seeded| {
                let mut message = if seeded.role == "human" {
                    Message::human(seeded.content.clone())
                } else {
                    Message::ai(seeded.content.clone(), Vec::new())
                };
                message.id = Some(seeded.id.clone());
                NewEvent {
                    run_id: run.run_id.clone(),
                    event_type: if seeded.role == "human" {
                        "llm.human.input"
                    } else {
                        "llm.ai.response"
                    }
                    .into(),
                    category: "message".into(),
                    content: message.to_dump(),
                    message_id: None,
                    metadata: json!({"caller": "lead_agent"}),
                    created_at: run.created_at.clone(),
                }
            })
            .collect();
        // One batch per run keeps `seq` monotonic across runs.
        store.append_events(&body.thread_id, events).await?;
    }
    Ok(Json(
        json!({"ok": true, "thread_id": body.thread_id, "runs": body.runs.len()}),
    ))
}
