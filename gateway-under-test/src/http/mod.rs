//! The HTTP API: routes, the error envelope, and the request layers in DeerFlow's order
//! (`Trace -> CORS -> CSRF -> Auth -> handler`, `docs/gateway-contract.md` §1.1).
//!
//! The router's state is the [`App`]; each handler and layer extracts only the substates it
//! uses (`State<Store>`, `State<Arc<RunManager>>`, `State<Arc<Agent>>`, `State<Arc<AuthState>>`
//! and so on).
//!
//! [`AuthState`]: crate::app::AuthState

mod auth_routes;
mod compat;
mod cors;
mod guard;
mod runs;
#[cfg(feature = "test-seed")]
mod seed;
mod sse;
mod suggestions;
mod threads;
mod web_client;

use std::sync::Arc;

use axum::extract::rejection::{FormRejection, JsonRejection};
use axum::extract::{DefaultBodyLimit, FromRef, FromRequest, FromRequestParts, Query, Request};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router, middleware};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer};
use serde_json::{Value, json};

use crate::app::{App, WebClientSettings};
use crate::body_deadline::BodyDeadlineElapsed;
use crate::runtime::runs::RunManager;
use crate::store::{Store, StoreError, ThreadRecord};

pub use guard::CurrentUser;

/// Builds the router with every route and layer, and the built web client beside the API when
/// `server.web_dir` names one.
pub fn router(app: App) -> Router {
    let web_dir = Arc::<WebClientSettings>::from_ref(&app).web_dir.clone();
    let api = Router::new()
        .route("/health", get(health))
        .merge(auth_routes::routes())
        .merge(threads::routes())
        .merge(runs::routes())
        .merge(suggestions::routes())
        .merge(compat::routes());
    #[cfg(feature = "test-seed")]
    let api = if app.test_seed_route() {
        api.merge(seed::routes())
    } else {
        api
    };
    let api = api
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(
            app.clone(),
            guard::authenticate,
        ))
        .layer(middleware::from_fn_with_state(app.clone(), guard::csrf))
        .layer(middleware::from_fn_with_state(app.clone(), cors::cors))
        .layer(middleware::from_fn(json_errors))
        .layer(middleware::from_fn(trace))
        .with_state(app);
    match web_dir {
        Some(web_dir) => web_client::beside(api, &web_dir),
        None => api,
    }
}

async fn health() -> Json<Value> {
    Json(json!({"status": "healthy", "service": "deer-flow-gateway"}))
}

async fn not_found() -> ApiError {
    ApiError::new(StatusCode::NOT_FOUND, "Not Found")
}

async fn trace(request: Request, next: middleware::Next) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let started = std::time::Instant::now();
    let response = next.run(request).await;
    tracing::debug!(%method, %path, status = response.status().as_u16(), elapsed_ms = started.elapsed().as_millis() as u64, "request");
    response
}

/// An error response: `{"detail": <string or object>}` with a status.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The status code.
    pub status: StatusCode,
    /// The `detail` value.
    pub detail: Value,
}

impl ApiError {
    /// An error whose detail is a message.
    pub fn new(status: StatusCode, detail: impl Into<String>) -> ApiError {
        ApiError {
            status,
            detail: Value::String(detail.into()),
        }
    }

    /// An error whose detail is `{"code", "message"}`.
    pub fn coded(status: StatusCode, code: &str, message: &str) -> ApiError {
        ApiError {
            status,
            detail: json!({"code": code, "message": message}),
        }
    }

    /// `404 Thread <id> not found`.
    pub fn thread_not_found(thread_id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Thread {thread_id} not found"),
        )
    }

    /// A 422 in the manner of FastAPI's validation errors, for a body field.
    pub fn validation(location: &str, message: impl Into<String>) -> ApiError {
        ApiError::invalid(RequestPart::Body, location, message)
    }

    /// A 422 in the manner of FastAPI's validation errors, for `field` of `part`.
    pub fn invalid(part: RequestPart, field: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            detail: json!([{"loc": [part.as_str(), field], "msg": message.into(), "type": "value_error"}]),
        }
    }

    /// A 503 for a bound that frees within moments; its answer says `Retry-After: 1`.
    pub fn busy(detail: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, detail)
    }

    /// A 500 that hides internals from the client and logs them.
    pub fn internal(context: &str, error: impl std::fmt::Display) -> ApiError {
        tracing::error!("{context}: {error}");
        ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "Internal server error")
    }
}

/// Where a request value came from: the first element of a validation error's `loc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestPart {
    /// The JSON body.
    Body,
    /// A path parameter.
    Path,
    /// The query string.
    Query,
}

impl RequestPart {
    /// FastAPI's name for the part.
    pub fn as_str(self) -> &'static str {
        match self {
            RequestPart::Body => "body",
            RequestPart::Path => "path",
            RequestPart::Query => "query",
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> ApiError {
        ApiError::internal("database", error)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(json!({"detail": self.detail}))).into_response();
        // A 503 is always a bound that frees within moments (docs/gateway-contract.md §0).
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from_static("1"),
            );
        }
        response
    }
}

/// A JSON body whose every rejection (syntax, type, unknown field, content type) is a 422 with
/// FastAPI's envelope, as DeerFlow answers.
#[derive(Debug, Clone)]
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        match Json::<T>::from_request(request, state).await {
            Ok(Json(value)) => Ok(ApiJson(value)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return body_too_large();
    }
    if body_timed_out(&rejection) {
        return body_timeout();
    }
    ApiError::validation("json", rejection.body_text())
}

/// A form body's rejection: 413 over the size limit (as for JSON), 408 when the body stopped
/// arriving, else a 422 naming the form.
pub(crate) fn form_rejection(rejection: FormRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return body_too_large();
    }
    if body_timed_out(&rejection) {
        return body_timeout();
    }
    ApiError::validation("form", rejection.body_text())
}

/// Whether reading the body failed because the request-body timeout or deadline of `serve.rs`
/// fired (`tower_http`'s `TimeoutError` or `BodyDeadlineElapsed` among the rejection's sources).
fn body_timed_out(rejection: &(dyn std::error::Error + 'static)) -> bool {
    std::iter::successors(Some(rejection), |error| error.source()).any(|error| {
        error.is::<tower_http::timeout::TimeoutError>() || error.is::<BodyDeadlineElapsed>()
    })
}

/// The answer to a body that stopped arriving, or arrived too slowly: the client was too slow,
/// and its content was never judged, so 408 rather than a 422 that would blame the content.
fn body_timeout() -> ApiError {
    ApiError::new(
        StatusCode::REQUEST_TIMEOUT,
        "The request body did not arrive within the request-body timeout or deadline",
    )
}

/// The largest request body the gateway reads (axum's default limit, stated here so that the
/// 413 can name it).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

fn body_too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Request body is larger than the limit of {MAX_BODY_BYTES} bytes"),
    )
}

/// A query string whose every rejection is a 422 naming the query, as FastAPI answers (axum's
/// own rejection is a plain-text 400).
#[derive(Debug, Clone)]
pub struct ApiQuery<T>(pub T);

impl<T, S> FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::invalid(
                RequestPart::Query,
                "query",
                rejection.body_text(),
            )),
        }
    }
}

/// Gives every error response a JSON body. Handlers already answer with [`ApiError`]; this
/// catches what the framework answers by itself (405 with an empty body, a path that does not
/// decode, a body that fails before a handler runs), so a client can always parse `detail`.
async fn json_errors(request: Request, next: middleware::Next) -> Response {
    let response = next.run(request).await;
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(_) => String::new(),
    };
    let detail = if text.is_empty() {
        status.canonical_reason().unwrap_or("Error").to_owned()
    } else {
        text
    };
    let mut json = ApiError::new(status, detail).into_response();
    // Keep what the framework said besides the body (`Allow` on a 405, for one).
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            json.headers_mut().insert(name.clone(), value.clone());
        }
    }
    json
}

/// For a request field the contract defines but this gateway ignores: checks the value as an
/// `Option<T>`, so a wrongly typed value is still rejected as DeerFlow rejects it, then drops it.
/// Use it as `#[serde(default, deserialize_with = "accepted_as::<T, _>")]` on an [`IgnoredAny`]
/// field; a field the contract leaves untyped needs only `IgnoredAny`.
pub(crate) fn accepted_as<'de, T, D>(deserializer: D) -> Result<IgnoredAny, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Option::<T>::deserialize(deserializer).map(|_| IgnoredAny)
}

/// `^[A-Za-z0-9_-]{1,64}$`.
pub fn valid_thread_id(thread_id: &str) -> bool {
    (1..=64).contains(&thread_id.len())
        && thread_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The detail for a bad thread id on the run-start path.
pub const INVALID_THREAD_ID: &str =
    "Invalid thread_id: expected 1-64 ASCII letters, digits, hyphens, or underscores";

/// The thread, when it exists and belongs to `user`; otherwise the contract's 404.
pub async fn owned_thread(
    store: &Store,
    user: &CurrentUser,
    thread_id: &str,
) -> Result<ThreadRecord, ApiError> {
    // A readable thread is the user's own or has no row; only the first counts here.
    readable_thread(store, user, thread_id)
        .await?
        .ok_or_else(|| ApiError::thread_not_found(thread_id))
}

/// Passes when the thread belongs to `user` **or has no metadata row** (seeded runs,
/// `docs/gateway-contract.md` §2.11); another user's thread is a 404.
pub async fn readable_thread(
    store: &Store,
    user: &CurrentUser,
    thread_id: &str,
) -> Result<Option<ThreadRecord>, ApiError> {
    if !valid_thread_id(thread_id) {
        return Err(ApiError::invalid(
            RequestPart::Path,
            "thread_id",
            INVALID_THREAD_ID,
        ));
    }
    match store.get_thread(thread_id).await? {
        Some(thread) if thread.owner_id != user.id => Err(ApiError::thread_not_found(thread_id)),
        other => Ok(other),
    }
}

/// Passes when the thread's metadata row belongs to `user`, or when it has no row but `user`
/// has runs on it (seeded threads: runs and journal rows, no checkpoint, no row). Another
/// user's thread, and a thread nobody knows, is the contract's 404. Here, beside
/// [`readable_thread`], because the thread routes and the web client's routes (`compat/`) both
/// ask it.
pub(crate) async fn thread_or_own_runs(
    store: &Store,
    runs: &RunManager,
    user: &CurrentUser,
    thread_id: &str,
) -> Result<(), ApiError> {
    if readable_thread(store, user, thread_id).await?.is_some() {
        return Ok(());
    }
    let has_runs = runs
        .runs_of_thread(thread_id)
        .iter()
        .any(|run| run.owner_id == user.id)
        || !store.list_runs(thread_id, &user.id, 1).await?.is_empty();
    if has_runs {
        Ok(())
    } else {
        Err(ApiError::thread_not_found(thread_id))
    }
}
