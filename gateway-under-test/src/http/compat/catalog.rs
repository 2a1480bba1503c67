//! What the web client reads once per page: the configured models, the feature flags, the
//! skills on disk and the channel providers.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use serde_json::{Value, json};

use crate::app::{App, WebClientSettings};
use crate::http::ApiError;
use crate::http::guard::CurrentUser;
use crate::skills::SkillsCatalog;

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/models", get(models))
        .route("/api/features", get(features))
        .route("/api/skills", get(skills))
        .route("/api/channels/providers", get(channel_providers))
}

/// `{"models": [{"name", "model", "display_name", "description", "supports_thinking",
/// "supports_reasoning_effort"}], "token_usage": {"enabled"}}`, in configuration order. `model`
/// is the provider's model id, or the name when none is configured.
async fn models(State(settings): State<Arc<WebClientSettings>>, _user: CurrentUser) -> Json<Value> {
    let models: Vec<Value> = settings
        .models
        .iter()
        .map(|model| {
            json!({
                "name": model.name,
                "model": model.model,
                "display_name": model.display_name,
                "description": model.description,
                "supports_thinking": model.supports_thinking,
                "supports_reasoning_effort": model.supports_reasoning_effort,
            })
        })
        .collect();
    Json(json!({"models": models, "token_usage": {"enabled": settings.token_usage_enabled}}))
}

/// The feature flags. This gateway has no agents API, browser control or MCP tasks.
async fn features(_user: CurrentUser) -> Json<Value> {
    Json(json!({
        "agents_api": {"enabled": false},
        "browser_control": {"enabled": false},
        "mcp_tasks": {"enabled": false},
    }))
}

/// No messaging channels are implemented.
async fn channel_providers(_user: CurrentUser) -> Json<Value> {
    Json(json!({"enabled": false, "providers": []}))
}

/// `{"skills": [{"name", "description", "license", "category", "enabled", "editable"}]}`, read
/// through the gateway's [`SkillsCatalog`] (docs/gateway-contract.md §4.9).
async fn skills(
    State(catalog): State<Arc<SkillsCatalog>>,
    _user: CurrentUser,
) -> Result<Json<Value>, ApiError> {
    let skills = tokio::task::spawn_blocking(move || catalog.list().0)
        .await
        .map_err(|err| ApiError::internal("listing skills", err))?;
    Ok(Json(json!({ "skills": *skills })))
}
