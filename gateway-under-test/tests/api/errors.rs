//! Every error a client can provoke has a JSON body with `detail`, and names what was wrong:
//! the framework's own answers (405, a query string that does not parse), a body over the size
//! limit (413), a bad thread id in the path (a path error), unknown fields and assistants (422).

use reqwest::Method;
use serde_json::{Value, json};

use crate::vocabulary::{run_body, spawn_gateway};

struct Case {
    name: &'static str,
    method: Method,
    /// `{thread}` is replaced by a thread of the signed-in user.
    path: &'static str,
    body: Option<Value>,
    status: u16,
    /// Must appear in the JSON text of `detail`.
    detail: &'static str,
}

fn cases() -> Vec<Case> {
    let mut foreign_assistant = run_body("hi", json!({}));
    foreign_assistant["assistant_id"] = json!("someone_else");
    vec![
        Case {
            name: "method not allowed",
            method: Method::DELETE,
            path: "/api/threads/search",
            body: None,
            status: 405,
            detail: "Method Not Allowed",
        },
        Case {
            name: "query string of the wrong type",
            method: Method::GET,
            path: "/api/threads/{thread}/runs?limit=many",
            body: None,
            status: 422,
            detail: r#"["query","query"]"#,
        },
        Case {
            name: "bad thread id in the path",
            method: Method::GET,
            path: "/api/threads/bad%20id/state",
            body: None,
            status: 422,
            detail: r#"["path","thread_id"]"#,
        },
        Case {
            name: "unknown field on thread create",
            method: Method::POST,
            path: "/api/threads",
            body: Some(json!({"metadata": {}, "colour": "blue"})),
            status: 422,
            detail: "unknown field `colour`",
        },
        Case {
            name: "LangGraph's thread-create fields are accepted",
            method: Method::POST,
            path: "/api/threads",
            body: Some(
                json!({"metadata": {}, "if_exists": "do_nothing", "supersteps": [], "graph_id": "lead_agent"}),
            ),
            status: 200,
            detail: "",
        },
        Case {
            name: "unknown assistant",
            method: Method::POST,
            path: "/api/threads/{thread}/runs/wait",
            body: Some(foreign_assistant),
            status: 422,
            detail: "Unknown assistant_id 'someone_else'",
        },
        Case {
            name: "body over the size limit",
            method: Method::POST,
            path: "/api/threads",
            body: Some(json!({"metadata": {"pad": "x".repeat(3 * 1024 * 1024)}})),
            status: 413,
            detail: "limit of 2097152 bytes",
        },
    ]
}

#[tokio::test]
async fn every_provoked_error_is_json_and_names_the_problem() {
    let gateway = spawn_gateway().await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let mut failures = Vec::new();
    for case in cases() {
        let path = case.path.replace("{thread}", &thread_id);
        let mut request = client.request(case.method.clone(), &path);
        if let Some(body) = &case.body {
            request = request.json(body);
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        let detail = serde_json::from_str::<Value>(&text).map(|body| body["detail"].to_string());
        let problem = match detail {
            _ if status != case.status => Some(format!("status {status}, wanted {}", case.status)),
            _ if status < 400 => None,
            Err(_) => Some("the error body is not JSON".to_owned()),
            Ok(detail) if !detail.contains(case.detail) => {
                Some(format!("{:?} is missing from detail", case.detail))
            }
            Ok(_) => None,
        };
        if let Some(problem) = problem {
            failures.push(format!(
                "{}: {} {path}: {problem}; body {text:.300}",
                case.name, case.method
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    gateway.stop().await;
}

/// Finding 14 of issue 21: an oversize login form was a 422, where an oversize JSON body is a
/// 413 naming the limit.
#[tokio::test]
async fn leftovers_an_oversize_login_form_is_413_like_json() {
    let gateway = spawn_gateway().await;
    let password = "x".repeat(3 * 1024 * 1024);
    let response = reqwest::Client::new()
        .post(format!("{}/api/v1/auth/login/local", gateway.url()))
        .form(&[
            ("username", "a@example.com"),
            ("password", password.as_str()),
        ])
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    let body = response.text().await.expect("body");
    assert_eq!(status, 413, "{body:.300}");
    assert!(body.contains("limit of 2097152 bytes"), "{body:.300}");
    gateway.stop().await;
}
