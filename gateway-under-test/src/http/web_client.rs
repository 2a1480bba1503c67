//! The built web client beside the API (`server.web_dir`): its files from the gateway's own
//! origin, so the page's cookie session and CSRF header work exactly as in production.
//!
//! Every path outside the API is the client's: a file when the folder has it, otherwise
//! `index.html` for a page path (the client routes `/chats/<id>` itself) and 404 for a missing
//! file (`/assets/gone.js` must not come back as HTML). `/api`, everything below it and `/health`
//! always reach the API router, whatever the folder holds, so a client build can never shadow a
//! route or its JSON 404. Client files are public: they pass neither the auth gate nor the CSRF
//! check, which guard the API only.

use std::path::Path;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::services::{ServeDir, ServeFile};

/// The client's folder, and its `index.html` for page paths.
#[derive(Debug, Clone)]
struct ClientFiles {
    files: ServeDir,
    index: ServeFile,
}

/// `api` with the client in `web_dir` served at every path the API does not own.
pub(super) fn beside(api: Router, web_dir: &Path) -> Router {
    let client = ClientFiles {
        files: ServeDir::new(web_dir),
        index: ServeFile::new(web_dir.join("index.html")),
    };
    api.layer(middleware::from_fn_with_state(client, serve))
}

/// `/api`, `/api/…`, `/health` and `/health/…`: the API's, never the client's.
fn is_api_path(path: &str) -> bool {
    ["/api", "/health"].iter().any(|root| {
        path.strip_prefix(root)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    })
}

/// A page of the client rather than a file: the last segment has no extension.
fn is_page_path(path: &str) -> bool {
    !path.rsplit('/').next().unwrap_or_default().contains('.')
}

async fn serve(State(mut client): State<ClientFiles>, request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    if is_api_path(&path) {
        return next.run(request).await;
    }
    // The same request again, for index.html when the path turns out to be a page.
    let mut page_request = Request::new(Body::empty());
    *page_request.method_mut() = request.method().clone();
    *page_request.uri_mut() = request.uri().clone();
    *page_request.headers_mut() = request.headers().clone();
    let served = match client.files.try_call(request).await {
        Ok(response) if response.status() == StatusCode::NOT_FOUND && is_page_path(&path) => client
            .index
            .try_call(page_request)
            .await
            .map(|response| response.map(Body::new)),
        other => other.map(|response| response.map(Body::new)),
    };
    let mut response = match served {
        Ok(response) => response,
        Err(err) => {
            tracing::error!("web client file for {path}: {err}");
            return StatusCode::INTERNAL_SERVER_ERROR.into_response();
        }
    };
    let is_html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("text/html"));
    if is_html {
        // index.html names the content-hashed bundles of one build: a browser must ask again
        // (a cheap 304 when nothing changed), or it keeps loading a replaced build's bundles.
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    }
    tracing::debug!(%path, status = response.status().as_u16(), "web client");
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_paths_are_the_api_and_its_prefix_only() {
        for (path, api) in [
            ("/api", true),
            ("/api/", true),
            ("/api/threads/x", true),
            ("/health", true),
            ("/health/live", true),
            ("/", false),
            ("/apiary", false),
            ("/healthy", false),
            ("/chats/api", false),
            ("/assets/index.js", false),
        ] {
            assert_eq!(is_api_path(path), api, "{path}");
        }
    }

    #[test]
    fn page_paths_have_no_extension() {
        for (path, page) in [
            ("/", true),
            ("/chats/5f0c2a4e-8d1b", true),
            ("/chats/", true),
            ("/assets/index-B_7O.js", false),
            ("/favicon.ico", false),
        ] {
            assert_eq!(is_page_path(path), page, "{path}");
        }
    }
}
