//! The CSRF double-submit check and the auth gate (`docs/gateway-contract.md` §2.8–2.10), and the
//! [`CurrentUser`] they establish.

use std::sync::Arc;

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::app::AuthState;
use crate::auth::{JwtError, cookie_value, origin_allowed, token_id, tokens_match};
use crate::http::ApiError;
use crate::store::{Session, Store, UserRecord};

/// The user a request runs as.
#[derive(Debug, Clone, PartialEq)]
pub struct CurrentUser {
    /// User id (`default` for the synthetic user).
    pub id: String,
    /// E-mail.
    pub email: String,
    /// `user` or `admin`.
    pub system_role: String,
    /// Whether setup is pending.
    pub needs_setup: bool,
    /// OAuth provider, if any.
    pub oauth_provider: Option<String>,
}

impl CurrentUser {
    /// The synthetic administrator of auth-disabled mode.
    pub fn synthetic_default() -> CurrentUser {
        CurrentUser {
            id: "default".into(),
            email: "default@test.local".into(),
            system_role: "admin".into(),
            needs_setup: false,
            oauth_provider: None,
        }
    }

    /// UserResponse: `{"id", "email", "system_role", "needs_setup", "oauth_provider"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "email": self.email,
            "system_role": self.system_role,
            "needs_setup": self.needs_setup,
            "oauth_provider": self.oauth_provider,
        })
    }
}

impl From<&UserRecord> for CurrentUser {
    fn from(user: &UserRecord) -> CurrentUser {
        CurrentUser {
            id: user.id.clone(),
            email: user.email.clone(),
            system_role: user.system_role.clone(),
            needs_setup: user.needs_setup,
            oauth_provider: user.oauth_provider.clone(),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for CurrentUser {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<CurrentUser>()
            .cloned()
            .ok_or_else(not_authenticated)
    }
}

fn not_authenticated() -> ApiError {
    ApiError::coded(
        StatusCode::UNAUTHORIZED,
        "not_authenticated",
        "Authentication required",
    )
}

const AUTH_PATHS: [&str; 4] = [
    "/api/v1/auth/login/local",
    "/api/v1/auth/logout",
    "/api/v1/auth/register",
    "/api/v1/auth/initialize",
];

const PUBLIC_PREFIXES: [&str; 7] = [
    "/health",
    "/docs",
    "/redoc",
    "/openapi.json",
    "/api/v1/auth/oauth/",
    "/api/v1/auth/callback/",
    "/api/webhooks/",
];

const PUBLIC_PATHS: [&str; 6] = [
    "/api/v1/auth/login/local",
    "/api/v1/auth/register",
    "/api/v1/auth/logout",
    "/api/v1/auth/setup-status",
    "/api/v1/auth/initialize",
    "/api/v1/auth/providers",
];

fn is_public(path: &str) -> bool {
    PUBLIC_PATHS.contains(&path)
        || PUBLIC_PREFIXES
            .iter()
            .any(|prefix| path.starts_with(prefix))
}

/// The request's own origin, `scheme://host`.
pub fn request_origin(headers: &HeaderMap) -> String {
    let scheme = if is_https(headers) { "https" } else { "http" };
    let host = header(headers, "host").unwrap_or("localhost");
    format!("{scheme}://{host}")
}

/// True when the request came over https (directly or via a proxy's `X-Forwarded-Proto`).
pub fn is_https(headers: &HeaderMap) -> bool {
    header(headers, "x-forwarded-proto").is_some_and(|proto| proto.eq_ignore_ascii_case("https"))
}

/// A header as text.
pub fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

/// A cookie from the request.
pub fn request_cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all("cookie")
        .iter()
        .filter_map(|value| value.to_str().ok())
        .find_map(|cookies| cookie_value(cookies, name))
}

fn forbidden(detail: &str) -> Response {
    ApiError::new(StatusCode::FORBIDDEN, detail).into_response()
}

/// The CSRF layer. It runs before authentication, so an unauthenticated state-changing request
/// without a token gets the CSRF 403, not the 401.
pub async fn csrf(State(auth): State<Arc<AuthState>>, request: Request, next: Next) -> Response {
    let mutating = matches!(
        *request.method(),
        Method::POST | Method::PUT | Method::DELETE | Method::PATCH
    );
    let path = request.uri().path();
    if !mutating
        || auth.settings.auth_disabled_effective()
        || path == "/api/v1/auth/me"
        || path.starts_with("/api/webhooks/")
    {
        return next.run(request).await;
    }
    let headers = request.headers();
    if AUTH_PATHS.contains(&path) {
        if let Some(origin) = header(headers, "origin")
            && !origin_allowed(
                origin,
                &request_origin(headers),
                &auth.settings.cors_origins,
            )
        {
            return forbidden("Cross-site auth request denied.");
        }
        return next.run(request).await;
    }
    let cookie = request_cookie(headers, "csrf_token");
    let sent = header(headers, "x-csrf-token");
    match (cookie, sent) {
        (Some(cookie), Some(sent)) if tokens_match(&cookie, sent) => next.run(request).await,
        (Some(_), Some(_)) => forbidden("CSRF token mismatch."),
        _ => forbidden("CSRF token missing. Include X-CSRF-Token header."),
    }
}

/// The auth gate: resolves the session cookie to a [`CurrentUser`], or answers 401 on a
/// non-public path. In auth-disabled mode a missing or invalid cookie runs as the synthetic user.
pub async fn authenticate(
    State(auth): State<Arc<AuthState>>,
    State(store): State<Store>,
    mut request: Request,
    next: Next,
) -> Response {
    let disabled = auth.settings.auth_disabled_effective();
    let public = is_public(request.uri().path());
    let resolved = match request_cookie(request.headers(), "access_token") {
        None => Err(not_authenticated()),
        Some(token) => resolve_token(&auth, &store, &token).await,
    };
    match resolved {
        Ok(user) => {
            request.extensions_mut().insert(user);
        }
        Err(_) if disabled => {
            request
                .extensions_mut()
                .insert(CurrentUser::synthetic_default());
        }
        Err(_) if public => {}
        Err(error) => return error.into_response(),
    }
    next.run(request).await
}

async fn resolve_token(
    auth: &AuthState,
    store: &Store,
    token: &str,
) -> Result<CurrentUser, ApiError> {
    let claims = auth
        .jwt
        .verify(token, crate::clock::epoch_seconds())
        .map_err(|err| match err {
            JwtError::Expired => ApiError::coded(
                StatusCode::UNAUTHORIZED,
                "token_expired",
                "Token has expired",
            ),
            JwtError::Invalid => {
                ApiError::coded(StatusCode::UNAUTHORIZED, "token_invalid", "Invalid token")
            }
        })?;
    let user = match store.session(&claims.sub, &token_id(token)).await? {
        Session::Active(user) => user,
        Session::Revoked => return Err(revoked()),
        Session::UnknownUser => {
            return Err(ApiError::coded(
                StatusCode::UNAUTHORIZED,
                "user_not_found",
                "User not found",
            ));
        }
    };
    if user.token_version != claims.ver {
        return Err(revoked());
    }
    Ok(CurrentUser::from(&user))
}

fn revoked() -> ApiError {
    ApiError::coded(
        StatusCode::UNAUTHORIZED,
        "token_invalid",
        "Token has been revoked",
    )
}
