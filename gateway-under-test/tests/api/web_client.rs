//! The built web client beside the API (`server.web_dir`): its files and page paths from the
//! gateway's own origin, without a session; the API (`/api`, `/health`) never shadowed by it,
//! still guarded and still answering JSON; nothing outside the folder served.

use std::path::Path;

use reqwest::Method;
use reqwest::header::{CACHE_CONTROL, CONTENT_TYPE};

use crate::vocabulary::*;

const INDEX: &str = "<!doctype html><html><body><div id=\"root\"></div></body></html>";
const BUNDLE: &str = "console.log('client');";

/// A built client in `<folder>/dist`, and a file beside it that must never be served.
fn client_build(folder: &Path) -> std::path::PathBuf {
    let dist = folder.join("dist");
    std::fs::create_dir_all(dist.join("assets")).unwrap();
    std::fs::write(dist.join("index.html"), INDEX).unwrap();
    std::fs::write(dist.join("assets/index-B7c1.js"), BUNDLE).unwrap();
    // A client build that ships an `api` folder must still not shadow the API.
    std::fs::create_dir_all(dist.join("api")).unwrap();
    std::fs::write(dist.join("api/models"), "shadow").unwrap();
    std::fs::write(folder.join("secret.txt"), "outside the web dir").unwrap();
    dist
}

/// What one request must get: status, content type prefix, a piece of the body, and whether the
/// answer says `Cache-Control: no-cache`.
struct Expect {
    method: Method,
    path: &'static str,
    status: u16,
    content_type: &'static str,
    body: &'static str,
    no_cache: bool,
}

fn expect(
    method: Method,
    path: &'static str,
    status: u16,
    content_type: &'static str,
    body: &'static str,
) -> Expect {
    Expect {
        method,
        path,
        status,
        content_type,
        body,
        no_cache: content_type == "text/html",
    }
}

#[tokio::test]
async fn the_client_is_served_beside_the_api_and_never_shadows_it() {
    let folder = tempfile::tempdir().unwrap();
    let dist = client_build(folder.path());
    let gateway = spawn_gateway_configured(move |config| config.server.web_dir = Some(dist)).await;
    let client = gateway.client();
    let json = "application/json";
    let cases = [
        expect(Method::GET, "/", 200, "text/html", INDEX),
        expect(Method::HEAD, "/", 200, "text/html", ""),
        expect(Method::GET, "/index.html", 200, "text/html", INDEX),
        // A page path the client routes itself: index.html, not a 404.
        expect(Method::GET, "/chats/5f0c2a4e-8d1b", 200, "text/html", INDEX),
        expect(
            Method::GET,
            "/assets/index-B7c1.js",
            200,
            "text/javascript",
            BUNDLE,
        ),
        // A missing file stays a 404 rather than HTML a script tag would choke on.
        expect(Method::GET, "/assets/index-gone.js", 404, "", ""),
        // Nothing above the folder, however the path is spelled.
        expect(Method::GET, "/..%2fsecret.txt", 404, "", ""),
        expect(Method::GET, "/assets/..%2f..%2fsecret.txt", 404, "", ""),
        expect(Method::POST, "/", 405, "", ""),
        // The API's own answers, whatever the folder holds.
        expect(Method::GET, "/health", 200, json, "healthy"),
        expect(Method::GET, "/api/models", 401, json, "not_authenticated"),
        expect(
            Method::GET,
            "/api/v1/auth/me",
            401,
            json,
            "not_authenticated",
        ),
        expect(Method::GET, "/api", 401, json, "not_authenticated"),
        expect(
            Method::GET,
            "/api/no/such/route",
            401,
            json,
            "not_authenticated",
        ),
    ];
    let mut problems = Vec::new();
    for case in &cases {
        let response = client
            .request(case.method.clone(), case.path)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|value: &reqwest::header::HeaderValue| value.to_str().ok())
                .unwrap_or_default()
                .to_owned()
        };
        let (content_type, cache_control) = (header(CONTENT_TYPE), header(CACHE_CONTROL));
        let body = response.text().await.unwrap_or_default();
        let wrong = status != case.status
            || !content_type.starts_with(case.content_type)
            || !body.contains(case.body)
            || (cache_control == "no-cache") != case.no_cache;
        if wrong {
            problems.push(format!(
                "{} {}: got {status} {content_type:?} cache-control {cache_control:?} {body:?}; \
                 expected {} {:?}{} containing {:?}",
                case.method,
                case.path,
                case.status,
                case.content_type,
                if case.no_cache { " no-cache" } else { "" },
                case.body
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    gateway.stop().await;
}

#[tokio::test]
async fn a_signed_in_page_reaches_the_api_and_an_unknown_route_is_a_json_404() {
    let folder = tempfile::tempdir().unwrap();
    let dist = client_build(folder.path());
    let gateway = spawn_gateway_configured(move |config| config.server.web_dir = Some(dist)).await;
    let client = gateway.registered_client().await;
    let (status, models) = client.get("/api/models").await;
    assert_eq!(status, 200, "{models}");
    assert_eq!(models["models"][0]["name"], "scripted-model", "{models}");
    for path in ["/api/no/such/route", "/api"] {
        let (status, body) = client.get(path).await;
        assert_eq!(
            (status, &body["detail"]),
            (404, &serde_json::json!("Not Found")),
            "{path}: {body}"
        );
    }
    gateway.stop().await;
}

#[tokio::test]
async fn without_a_web_dir_the_gateway_serves_no_page() {
    let gateway = spawn_gateway().await;
    let client = gateway.registered_client().await;
    for path in ["/", "/chats/x", "/index.html"] {
        let (status, body) = client.get(path).await;
        assert_eq!(status, 404, "{path}: {body}");
    }
    gateway.stop().await;
}

/// Finding 9 of issue 21: a planted symlink served a file outside the folder, dotfiles were
/// served, `//assets` was redirected to the protocol-relative `//assets/` (another host), and a
/// name over 255 bytes answered an empty 500. Each is now the JSON 404, and no answer redirects.
#[tokio::test]
async fn web_dir_serves_no_symlink_out_no_dotfile_no_redirect_and_json_for_long_names() {
    let folder = tempfile::tempdir().unwrap();
    let dist = client_build(folder.path());
    std::os::unix::fs::symlink(folder.path().join("secret.txt"), dist.join("leak.txt")).unwrap();
    std::os::unix::fs::symlink(folder.path(), dist.join("up")).unwrap();
    std::fs::write(dist.join(".env"), "KEY=outside the web dir").unwrap();
    std::fs::create_dir_all(dist.join(".git")).unwrap();
    std::fs::write(dist.join(".git/config"), "outside the web dir").unwrap();
    let gateway = spawn_gateway_configured(move |config| config.server.web_dir = Some(dist)).await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let long = format!("/{}.js", "a".repeat(300));
    let paths = [
        "/leak.txt",
        "/up/secret.txt",
        "/.env",
        "/.git/config",
        "//assets",
        "/assets//index-B7c1.js",
        long.as_str(),
    ];
    let mut problems = Vec::new();
    for path in paths {
        let response = no_redirects
            .get(format!("{}{path}", gateway.url()))
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let body = response.text().await.unwrap_or_default();
        if status != 404 || content_type != "application/json" || body.contains("outside") {
            problems.push(format!("{path}: {status} {content_type:?} {body:?}"));
        }
    }
    // `/assets` (a folder) is a page path now, not a redirect.
    let folder_path = no_redirects
        .get(format!("{}/assets", gateway.url()))
        .send()
        .await
        .expect("request");
    if folder_path.status() != 200 {
        problems.push(format!("/assets: {}", folder_path.status()));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    gateway.stop().await;
}
