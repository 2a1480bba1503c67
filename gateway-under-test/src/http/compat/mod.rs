//! The routes DeerFlow's web client relies on beyond the LangGraph-style thread and run API:
//! the configuration catalog (models, features, skills, channel providers), per-thread token
//! usage and upload limits, the backward message page, and a run's workspace changes.

mod catalog;
mod messages_page;
mod thread_info;
mod workspace_changes;

use std::collections::HashMap;

use axum::Router;

use crate::app::App;
use crate::http::ApiError;

pub(super) fn routes() -> Router<App> {
    Router::new()
        .merge(catalog::routes())
        .merge(thread_info::routes())
        .merge(messages_page::routes())
        .merge(workspace_changes::routes())
}

/// Query parameters as DeerFlow's FastAPI reads them: every problem is a 422 naming the
/// parameter.
pub(super) struct QueryParams(HashMap<String, String>);

impl QueryParams {
    pub(super) fn new(params: HashMap<String, String>) -> QueryParams {
        QueryParams(params)
    }

    pub(super) fn has(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// An integer within `range`, or `default` when absent.
    pub(super) fn int(
        &self,
        name: &str,
        range: std::ops::RangeInclusive<i64>,
        default: Option<i64>,
    ) -> Result<Option<i64>, ApiError> {
        let Some(raw) = self.0.get(name) else {
            return Ok(default);
        };
        let value: i64 = raw
            .trim()
            .parse()
            .map_err(|_| query_error(name, format!("must be an integer, got {raw:?}")))?;
        if !range.contains(&value) {
            return Err(query_error(
                name,
                format!(
                    "must be between {} and {}, got {value}",
                    range.start(),
                    range.end()
                ),
            ));
        }
        Ok(Some(value))
    }

    /// A boolean (`true`/`false`/`1`/`0`/`yes`/`no`/`on`/`off`, as pydantic reads them), or
    /// `default` when absent.
    pub(super) fn boolean(&self, name: &str, default: bool) -> Result<bool, ApiError> {
        let Some(raw) = self.0.get(name) else {
            return Ok(default);
        };
        match raw.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" | "t" | "y" => Ok(true),
            "false" | "0" | "no" | "off" | "f" | "n" => Ok(false),
            _ => Err(query_error(name, format!("must be a boolean, got {raw:?}"))),
        }
    }
}

/// A 422 in FastAPI's envelope for a query parameter.
pub(super) fn query_error(name: &str, message: impl Into<String>) -> ApiError {
    ApiError::invalid(crate::http::RequestPart::Query, name, message)
}
