//! `/api/v1/auth`: register, local login, logout, me, setup status and first-admin
//! initialisation (`docs/gateway-contract.md` §2).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, State};
use axum::http::header::{RETRY_AFTER, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::app::{App, AuthState};
use crate::auth::{
    ACCESS_TOKEN_COOKIE, CookieJarPolicy, HashGateError, Locked, clear_session_cookies, client_ip,
    new_csrf_token, session_cookies, token_id, validate_email, validate_password,
};
use crate::http::guard::{CurrentUser, header, is_https, request_cookie};
use crate::http::{ApiError, ApiJson, form_rejection};
use crate::store::{Store, StoreError, UserRecord};

pub(super) fn routes() -> Router<App> {
    Router::new()
        .route("/api/v1/auth/register", post(register))
        .route("/api/v1/auth/login/local", post(login))
        .route("/api/v1/auth/logout", post(logout))
        .route("/api/v1/auth/me", get(me))
        .route("/api/v1/auth/setup-status", get(setup_status))
        .route("/api/v1/auth/initialize", post(initialize))
        .route("/api/v1/auth/providers", get(providers))
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Deserialize)]
struct RegisterBody {
    email: String,
    password: String,
    #[serde(default = "default_true")]
    remember_me: bool,
}

fn cookie_policy(auth: &AuthState, headers: &HeaderMap) -> CookieJarPolicy {
    CookieJarPolicy::from_request(
        header(headers, "host"),
        is_https(headers).then_some("https"),
        auth.settings.allow_insecure_persistent_cookie,
        auth.settings.token_expiry_days,
    )
}

/// Issues the session and CSRF cookies for `user` on `response`.
fn with_session(
    auth: &AuthState,
    headers: &HeaderMap,
    user: &UserRecord,
    remember_me: bool,
    mut response: Response,
) -> Response {
    let policy = cookie_policy(auth, headers);
    let jwt = auth.jwt.issue(
        &user.id,
        user.token_version,
        crate::clock::epoch_seconds(),
        auth.settings.token_expiry_days,
    );
    for cookie in session_cookies(&policy, &jwt, &new_csrf_token(), remember_me) {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }
    response
}

fn check_credentials_shape(email: &str, password: &str) -> Result<(), ApiError> {
    validate_email(email).map_err(|msg| ApiError::validation("email", msg))?;
    validate_password(password).map_err(|msg| ApiError::validation("password", msg))
}

/// A gated hash's failure: the bound's 503, or a 500 for a task that panicked.
fn hash_gate_error(err: HashGateError) -> ApiError {
    match err {
        HashGateError::Busy(busy) => ApiError::busy(busy.to_string()),
        HashGateError::Task(err) => ApiError::internal("password hashing task", err),
    }
}

async fn hash_password(auth: &Arc<AuthState>, password: String) -> Result<String, ApiError> {
    let hasher = auth.clone();
    auth.hashes
        .run(move || hasher.passwords.hash(&password))
        .await
        .map_err(hash_gate_error)?
        .map_err(|err| ApiError::internal("password hashing", err))
}

async fn create_user(
    auth: &Arc<AuthState>,
    store: &Store,
    email: &str,
    password: String,
    role: &str,
) -> Result<UserRecord, ApiError> {
    let password_hash = hash_password(auth, password).await?;
    let user = UserRecord {
        id: uuid::Uuid::new_v4().to_string(),
        email: email.trim().to_lowercase(),
        password_hash,
        system_role: role.into(),
        token_version: 0,
        needs_setup: false,
        oauth_provider: None,
        created_at: crate::clock::now_iso(),
    };
    match store.create_user(user).await {
        Ok(user) => Ok(user),
        Err(StoreError::Conflict(_)) => Err(ApiError::coded(
            StatusCode::BAD_REQUEST,
            "email_already_exists",
            "Email already registered",
        )),
        Err(err) => Err(err.into()),
    }
}

async fn register(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RegisterBody>,
) -> Result<Response, ApiError> {
    if !auth.settings.registration_enabled {
        return Err(ApiError::coded(
            StatusCode::FORBIDDEN,
            "registration_disabled",
            "Registration is disabled",
        ));
    }
    check_credentials_shape(&body.email, &body.password)?;
    let user = create_user(&auth, &store, &body.email, body.password, "user").await?;
    let response = (
        StatusCode::CREATED,
        Json(CurrentUser::from(&user).to_json()),
    )
        .into_response();
    Ok(with_session(
        &auth,
        &headers,
        &user,
        body.remember_me,
        response,
    ))
}

#[derive(Debug, Deserialize)]
struct LoginForm {
    username: String,
    password: String,
    remember_me: Option<String>,
}

fn form_flag(value: Option<&str>) -> bool {
    value.is_none_or(|text| {
        !matches!(
            text.trim().to_lowercase().as_str(),
            "false" | "0" | "no" | "off"
        )
    })
}

async fn login(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Result<Response, ApiError> {
    let Form(form) = form.map_err(form_rejection)?;
    let client = client_ip(
        peer.ip(),
        header(&headers, "x-real-ip"),
        &auth.settings.trusted_proxies,
    );
    let now = std::time::Instant::now;
    // A locked client is answered at once, before it waits for the hash bound.
    if let Err(locked) = auth.lockout.check(&form.username, &client, now()) {
        return Ok(too_many_attempts(locked));
    }
    // A login past the hash bound is refused before it is counted: it checked no password.
    let permit = auth
        .hashes
        .acquire()
        .await
        .map_err(|busy| ApiError::busy(busy.to_string()))?;
    // Counted before the slow hash check, so parallel attempts cannot overshoot the limit.
    let attempt = match auth.lockout.begin(&form.username, &client, now()) {
        Ok(attempt) => attempt,
        Err(locked) => return Ok(too_many_attempts(locked)),
    };
    let user = store.user_by_email(form.username.trim()).await?;
    // An unknown e-mail costs a hash as well, so timing does not tell which accounts exist.
    let (hasher, password, hash) = (
        auth.clone(),
        form.password.clone(),
        user.as_ref().map(|user| user.password_hash.clone()),
    );
    let verified = permit
        .run(move || hasher.passwords.verify_or_dummy(&password, hash.as_deref()))
        .await
        .unwrap_or(false);
    let Some(user) = user.filter(|_| verified) else {
        attempt.failed();
        return Err(ApiError::coded(
            StatusCode::UNAUTHORIZED,
            "invalid_credentials",
            "Incorrect email or password",
        ));
    };
    attempt.succeeded();
    let body = json!({
        "expires_in": i64::from(auth.settings.token_expiry_days) * 86_400,
        "needs_setup": user.needs_setup,
    });
    let remember_me = form_flag(form.remember_me.as_deref());
    Ok(with_session(
        &auth,
        &headers,
        &user,
        remember_me,
        Json(body).into_response(),
    ))
}

/// The lockout's 429, with `Retry-After` in seconds.
fn too_many_attempts(locked: Locked) -> Response {
    let mut response = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many login attempts. Try again later.",
    )
    .into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from(locked.retry_after_seconds()));
    response
}

/// Revokes the session token the logout was sent with, if it is a valid one; logout answers
/// the same either way.
async fn revoke_session(auth: &AuthState, store: &Store, headers: &HeaderMap) {
    let Some(token) = request_cookie(headers, ACCESS_TOKEN_COOKIE) else {
        return;
    };
    let now = crate::clock::epoch_seconds();
    let Ok(claims) = auth.jwt.verify(&token, now) else {
        return;
    };
    let revoked = store
        .revoke_token(&token_id(&token), &claims.sub, claims.exp, now)
        .await;
    if let Err(err) = revoked {
        tracing::error!("logout could not revoke the session token: {err}");
    }
}

async fn logout(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
    headers: HeaderMap,
) -> Response {
    revoke_session(&auth, &store, &headers).await;
    let mut response = Json(json!({"message": "Successfully logged out"})).into_response();
    for cookie in clear_session_cookies(&cookie_policy(&auth, &headers)) {
        if let Ok(value) = HeaderValue::from_str(&cookie) {
            response.headers_mut().append(SET_COOKIE, value);
        }
    }
    response
}

async fn me(user: CurrentUser) -> Json<Value> {
    Json(user.to_json())
}

async fn setup_status(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
) -> Result<Json<Value>, ApiError> {
    let users = store.count_users().await?;
    Ok(Json(json!({
        "needs_setup": users == 0,
        "registration_enabled": auth.settings.registration_enabled,
    })))
}

#[derive(Debug, Deserialize)]
struct InitializeBody {
    email: String,
    password: String,
}

async fn initialize(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
    headers: HeaderMap,
    ApiJson(body): ApiJson<InitializeBody>,
) -> Result<Response, ApiError> {
    if store.count_users().await? > 0 {
        return Err(ApiError::coded(
            StatusCode::CONFLICT,
            "system_already_initialized",
            "The system is already initialized",
        ));
    }
    check_credentials_shape(&body.email, &body.password)?;
    let user = create_user(&auth, &store, &body.email, body.password, "admin").await?;
    let response = (
        StatusCode::CREATED,
        Json(CurrentUser::from(&user).to_json()),
    )
        .into_response();
    Ok(with_session(&auth, &headers, &user, true, response))
}

async fn providers() -> Json<Value> {
    Json(json!({"providers": [{"id": "local", "type": "password"}]}))
}
