//! CORS, installed only when `auth.cors_origins` is configured: credentials allowed, every method
//! and header allowed, and `Content-Location` exposed so browser clients can read the run id of a
//! stream (`docs/gateway-contract.md` §1.2).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::app::AuthState;
use crate::auth::normalize_origin;
use crate::http::guard::header;

fn allowed_origin(auth: &AuthState, origin: &str) -> bool {
    let Some(origin) = normalize_origin(origin) else {
        return false;
    };
    auth.settings
        .cors_origins
        .iter()
        .filter(|entry| entry.trim() != "*")
        .filter_map(|entry| normalize_origin(entry))
        .any(|entry| entry == origin)
}

/// The CORS layer.
pub async fn cors(State(auth): State<Arc<AuthState>>, request: Request, next: Next) -> Response {
    let origin = header(request.headers(), "origin").map(String::from);
    let Some(origin) = origin.filter(|origin| allowed_origin(&auth, origin)) else {
        return next.run(request).await;
    };
    let preflight = request.method() == Method::OPTIONS
        && request
            .headers()
            .contains_key("access-control-request-method");
    let requested_headers = request
        .headers()
        .get("access-control-request-headers")
        .cloned();
    let mut response = if preflight {
        StatusCode::OK.into_response()
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&origin) {
        headers.insert("access-control-allow-origin", value);
    }
    headers.insert(
        "access-control-allow-credentials",
        HeaderValue::from_static("true"),
    );
    headers.insert(
        "access-control-expose-headers",
        HeaderValue::from_static("Content-Location"),
    );
    headers.append("vary", HeaderValue::from_static("Origin"));
    if preflight {
        headers.insert(
            "access-control-allow-methods",
            HeaderValue::from_static("DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT"),
        );
        if let Some(requested) = requested_headers {
            headers.insert("access-control-allow-headers", requested);
        }
        headers.insert("access-control-max-age", HeaderValue::from_static("600"));
    }
    response
}
