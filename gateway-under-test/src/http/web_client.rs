//! The built web client beside the API (`server.web_dir`): its files from the gateway's own
//! origin, so the page's cookie session and CSRF header work exactly as in production.
//!
//! Every path outside the API is the client's: a file when the folder has it, otherwise
//! `index.html` for a page path (the client routes `/chats/<id>` itself) and 404 for a missing
//! file (`/assets/gone.js` must not come back as HTML). `/api`, everything below it and `/health`
//! always reach the API router, whatever the folder holds, so a client build can never shadow a
//! route or its JSON 404. Client files are public: they pass neither the auth gate nor the CSRF
//! check, which guard the API only.
//!
//! **Only the folder's own, visible files** (docs/gateway-contract.md §1.5). A path with a
//! segment that starts with `.` (`/.env`, `/.git/config`, `..`), an empty segment inside it
//! (`//assets`), a segment longer than 255 bytes, or that is not UTF-8 once decoded is answered
//! the JSON 404 without touching the disk; a file that resolves (through a symlink) outside the
//! folder is a 404 too. Directories are never redirected to `<path>/` (`ServeDir` would send
//! `//assets` to the protocol-relative `//assets/`, another host); a page path answers
//! `index.html` instead.

use std::path::{Path, PathBuf};

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use tower_http::services::{ServeDir, ServeFile};

/// The longest file name most file systems accept; a longer segment cannot name a file.
const MAX_SEGMENT_BYTES: usize = 255;

/// The client's folder, and its `index.html` for page paths.
#[derive(Debug, Clone)]
struct ClientFiles {
    files: ServeDir,
    index: ServeFile,
    /// The folder, symlinks resolved: every served file must resolve inside it.
    root: PathBuf,
}

/// `api` with the client in `web_dir` served at every path the API does not own.
pub(super) fn beside(api: Router, web_dir: &Path) -> Router {
    let client = ClientFiles {
        files: ServeDir::new(web_dir).append_index_html_on_directories(false),
        index: ServeFile::new(web_dir.join("index.html")),
        root: std::fs::canonicalize(web_dir).unwrap_or_else(|_| web_dir.to_path_buf()),
    };
    api.layer(middleware::from_fn_with_state(client, serve))
}

/// The path relative to the folder, decoded, when it may name one of its files: no hidden or
/// parent segment, no empty segment inside, none over [`MAX_SEGMENT_BYTES`], valid UTF-8.
fn visible_relative_path(path: &str) -> Option<String> {
    let decoded = percent_encoding::percent_decode_str(path)
        .decode_utf8()
        .ok()?;
    let relative = decoded.strip_prefix('/')?;
    let segments: Vec<&str> = relative.split('/').collect();
    let last = segments.len() - 1;
    let fine = segments.iter().enumerate().all(|(index, segment)| {
        let empty_inside = segment.is_empty() && index != last;
        !empty_inside
            && !segment.starts_with('.')
            && !segment.contains('\\')
            && segment.len() <= MAX_SEGMENT_BYTES
    });
    fine.then(|| relative.to_string())
}

/// Whether `relative` resolves, through symlinks, to a place outside `root`. A path that does
/// not exist escapes nothing (the file server answers it 404).
async fn escapes(root: &Path, relative: &str) -> bool {
    match tokio::fs::canonicalize(root.join(relative)).await {
        Ok(real) => !real.starts_with(root),
        Err(_) => false,
    }
}

/// The JSON 404 of the API, for a path the client may not serve.
fn not_found() -> Response {
    crate::http::ApiError::new(StatusCode::NOT_FOUND, "Not Found").into_response()
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
    let Some(relative) = visible_relative_path(&path) else {
        return not_found();
    };
    if escapes(&client.root, &relative).await {
        tracing::warn!(%path, "web client path resolves outside server.web_dir");
        return not_found();
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
            return crate::http::ApiError::internal(&format!("web client file for {path}"), err)
                .into_response();
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

    /// Finding 9 of issue 21: dotfiles were served, `//assets` was redirected to a
    /// protocol-relative URL, and a name over 255 bytes was an empty 500.
    #[test]
    fn web_dir_paths_name_only_visible_files_of_the_folder() {
        let long = format!("/{}", "a".repeat(256));
        for (path, allowed) in [
            ("/", Some("")),
            ("/assets/index.js", Some("assets/index.js")),
            ("/chats/", Some("chats/")),
            ("/a%20b.txt", Some("a b.txt")),
            ("/.env", None),
            ("/.git/config", None),
            ("/assets/.hidden.js", None),
            ("/%2e%2e/secret", None),
            ("//assets", None),
            ("/assets//x.js", None),
            ("/a%5c..%5csecret", None),
            ("/%ff", None),
            (long.as_str(), None),
        ] {
            assert_eq!(visible_relative_path(path).as_deref(), allowed, "{path}");
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
