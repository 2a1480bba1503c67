//! LangGraph's own API server's dialect (`langgraph dev`, the same API as a LangSmith
//! deployment; `docs/testing-your-own-gateway.md`, "LangGraph's own API server"): no register,
//! cookie or CSRF (an optional static auth header instead), routes at the root, UUID threads,
//! `assistant_id` a graph id of `langgraph.json` (the configured one, else the only graph
//! `POST /assistants/search` lists), the fixture's human message as recorded (its `name` too),
//! `context` only when the fixture has one, and its framing: `metadata` first, no `end` (the body
//! just closes), an `error` frame a failure unless the fixture records a model error. Its lines
//! end in CRLF and its heartbeats are SSE comments (`: heartbeat`): the SSE parser takes both.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use replay_core::{Framing, FramingProblem, Scenario, Turn, first_chars};

use super::api::StreamModes;
use super::dialect::{Begin, Dialect, Protocol, RunContext, first_violation};
use super::error::DriverError;
use super::http::{HttpClient, RunRequest, create_thread};
use super::transcript::RunTranscript;

/// LangGraph's protocol: routes at the root, ready at `/ok`, runs below a thread, each run
/// opened by `metadata` and closed by the body's end ([`framing`]).
pub const PROTOCOL: Protocol = Protocol {
    base_path: "",
    ready_path: "/ok",
    endpoint: None,
    ui_modes: false,
    headers: &[],
    lf_only: false,
    framing,
    named: None,
};

/// The event every run opens with.
const FIRST: &str = "metadata";
/// The event a run fails with.
const ERROR: &str = "error";

/// LangGraph's framing rule: each run's first frame is `metadata`, the body closes cleanly (no
/// `end`), and an `error` frame fails the run unless the fixture records a model error.
fn framing(runs: &[RunTranscript], model_error_recorded: bool) -> Framing {
    first_violation(runs, |transcript| {
        let first = transcript.events.first().map(|event| event.event.clone());
        if first.as_deref() != Some(FIRST) {
            return Some(FramingProblem::First {
                expected: format!("{FIRST:?}"),
                got: first,
            });
        }
        let error = transcript
            .events
            .iter()
            .find(|event| event.event == ERROR)?;
        (!model_error_recorded).then(|| FramingProblem::ErrorFrame {
            frame: ERROR.to_owned(),
            data: first_chars(error.data(), 300).to_owned(),
        })
    })
}

/// LangGraph's API server below `base` (`""`: the root).
#[derive(Debug, Clone)]
pub struct LangGraph {
    base: String,
    assistant: Option<String>,
    assistants: BTreeMap<String, String>,
    /// The graph ids `POST /assistants/search` listed (read when no assistant is configured).
    listed: Vec<String>,
    /// The thread of the conversation begun.
    thread_id: String,
}

impl LangGraph {
    /// The dialect below `base`, its runs going to `assistants[scenario id]`, else `assistant`,
    /// else the only graph the server lists.
    pub fn new(
        base: String,
        assistant: Option<String>,
        assistants: BTreeMap<String, String>,
    ) -> LangGraph {
        LangGraph {
            base,
            assistant,
            assistants,
            listed: Vec::new(),
            thread_id: String::new(),
        }
    }

    fn threads_path(&self) -> String {
        format!("{}/threads", self.base)
    }

    fn search_route(&self) -> String {
        format!("POST {}/assistants/search", self.base)
    }

    /// The run request's body: the human message as the fixture recorded it, the assistant,
    /// the stream modes and the fixture's context when it has one.
    fn run_body(
        &self,
        scenario: &Scenario,
        prompt: &str,
        recorded: &[Turn],
        modes: StreamModes,
    ) -> Result<Value, DriverError> {
        let mut message = json!({"type": "human", "content": prompt});
        if let Some(name) = recorded_human_name(recorded, prompt) {
            message["name"] = json!(name);
        }
        // The web client's limit with its modes, Layer 1's otherwise, as DeerFlow's dialect.
        let recursion_limit = match modes {
            StreamModes::Values => 100,
            StreamModes::Web => 1000,
        };
        let mut body = json!({
            "assistant_id": self.assistant_for(scenario)?,
            "input": {"messages": [message]},
            "config": {"recursion_limit": recursion_limit},
            "stream_mode": modes.modes(),
        });
        // A graph without a context schema gets none: only a fixture that recorded one sends it.
        if scenario.context.as_object().is_some_and(|c| !c.is_empty()) {
            body["context"] = scenario.context.clone();
        }
        Ok(body)
    }

    /// The assistant a scenario's runs go to.
    fn assistant_for(&self, scenario: &Scenario) -> Result<&str, DriverError> {
        let configured = self
            .assistants
            .get(&scenario.id)
            .or(self.assistant.as_ref());
        match (configured, self.listed.as_slice()) {
            (Some(assistant), _) => Ok(assistant),
            (None, [only]) => Ok(only),
            (None, graphs) => Err(DriverError::NoSingleAssistant {
                route: self.search_route(),
                graphs: graphs.to_vec(),
            }),
        }
    }
}

/// The distinct graph ids of a `POST /assistants/search` answer, sorted.
fn graph_ids(answer: &Value) -> Option<Vec<String>> {
    let mut graphs: Vec<String> = answer
        .as_array()?
        .iter()
        .filter_map(|assistant| assistant.get("graph_id")?.as_str().map(str::to_owned))
        .collect();
    graphs.sort();
    graphs.dedup();
    Some(graphs)
}

/// The `name` the fixture's human message carried for `prompt`, from the recorded turns'
/// canonical conversations (a gateway like DeerFlow's names it `user-input`; the graph then
/// sends that name to the model, and the replay key holds it).
pub fn recorded_human_name<'t>(recorded: &'t [Turn], prompt: &str) -> Option<String> {
    recorded
        .iter()
        .filter_map(|turn: &'t Turn| turn.canonical.as_deref())
        .filter_map(|canonical| serde_json::from_str::<Value>(canonical).ok())
        .find_map(|conversation| {
            conversation.as_array()?.iter().find_map(|message| {
                let human = message.get("type")?.as_str()? == "human"
                    && message.get("content")?.as_str()? == prompt;
                human.then(|| message.get("name")?.as_str().map(str::to_owned))?
            })
        })
}

#[async_trait::async_trait]
impl Dialect for LangGraph {
    async fn open(&mut self, client: &mut HttpClient) -> Result<(), DriverError> {
        if self.assistant.is_some() {
            return Ok(());
        }
        let path = format!("{}/assistants/search", self.base);
        let route = self.search_route();
        let response = client
            .post_json(&path, &json!({"limit": 100, "offset": 0}), 200)
            .await?;
        let answer: Value = response.json().await.map_err(|source| DriverError::Http {
            route: route.clone(),
            source,
        })?;
        self.listed = graph_ids(&answer).ok_or_else(|| DriverError::Unexpected {
            route,
            message: format!("expected a list of assistants, got {answer}"),
        })?;
        Ok(())
    }

    async fn begin(&mut self, start: Begin<'_>) -> Result<(), DriverError> {
        let client = start.client;
        self.thread_id = create_thread(client, &self.threads_path()).await?;
        Ok(())
    }

    fn run_request(&self, run: &RunContext<'_>) -> Result<RunRequest, DriverError> {
        Ok(RunRequest {
            path: format!("{}/{}/runs/stream", self.threads_path(), self.thread_id),
            body: self.run_body(run.scenario, run.prompt, run.recorded, run.modes)?,
            headers: Vec::new(),
        })
    }
}

#[cfg(test)]
mod tests {
    use replay_core::{Answer, Framing, UiMode};

    use super::super::{Api, AuthHeader, DriveOptions, Session};
    use super::*;

    fn turn(canonical: &str) -> Turn {
        Turn {
            caller: Some("lead_agent".into()),
            conversation_hash: None,
            input_hash: "h".into(),
            answer: Answer::Output(json!({"type": "ai", "data": {"content": "ok"}})),
            canonical: Some(canonical.into()),
        }
    }

    fn dialect(assistant: Option<&str>, listed: &[&str]) -> LangGraph {
        LangGraph {
            listed: listed.iter().map(|g| g.to_string()).collect(),
            ..LangGraph::new(String::new(), assistant.map(str::to_owned), BTreeMap::new())
        }
    }

    /// (case, scenario, recorded turns, stream modes, expected message, expected context)
    type Case<'a> = (
        &'a str,
        &'a Scenario,
        &'a [Turn],
        StreamModes,
        Value,
        Option<Value>,
    );

    #[test]
    fn the_run_request_sends_the_human_message_as_recorded_and_context_only_when_recorded() {
        let named = [turn(
            r#"[{"content": "Hi", "name": "user-input", "type": "human"}]"#,
        )];
        let unnamed = [turn(r#"[{"content": "Hi", "type": "human"}]"#)];
        let bare = Scenario {
            context: json!({}),
            ..Scenario::new("s", UiMode::Flash, "Hi")
        };
        let with_context = Scenario::new("s", UiMode::Flash, "Hi");
        // (case, scenario, turns, modes, expected message, expected context)
        let cases: [Case; 4] = [
            (
                "named",
                &bare,
                &named,
                StreamModes::Values,
                json!({"type": "human", "content": "Hi", "name": "user-input"}),
                None,
            ),
            (
                "unnamed",
                &bare,
                &unnamed,
                StreamModes::Values,
                json!({"type": "human", "content": "Hi"}),
                None,
            ),
            (
                "recording",
                &bare,
                &[],
                StreamModes::Web,
                json!({"type": "human", "content": "Hi"}),
                None,
            ),
            (
                "context",
                &with_context,
                &named,
                StreamModes::Values,
                json!({"type": "human", "content": "Hi", "name": "user-input"}),
                Some(UiMode::Flash.context()),
            ),
        ];
        for (case, scenario, turns, modes, message, context) in cases {
            let body = dialect(Some("agent"), &[])
                .run_body(scenario, "Hi", turns, modes)
                .unwrap();
            assert_eq!(body["input"]["messages"], json!([message]), "{case}");
            assert_eq!(body.get("context").cloned(), context, "{case}");
            assert_eq!(body["stream_mode"], json!(modes.modes()), "{case}");
            assert_eq!(body["assistant_id"], "agent", "{case}");
        }
    }

    #[test]
    fn the_assistant_is_the_configured_one_else_the_only_graph_else_an_error_naming_them() {
        let scenario = Scenario::new("review_risk", UiMode::Flash, "Hi");
        let mut mapped = dialect(Some("agent"), &[]);
        mapped
            .assistants
            .insert("review_risk".into(), "review".into());
        let cases = [
            (
                "configured",
                dialect(Some("agent"), &["a", "b"]),
                Ok("agent"),
            ),
            ("per scenario", mapped, Ok("review")),
            ("the only graph", dialect(None, &["agent"]), Ok("agent")),
            (
                "several",
                dialect(None, &["agent", "review"]),
                Err("several graphs (agent, review)"),
            ),
            ("none", dialect(None, &[]), Err("the server lists no graph")),
        ];
        for (case, dialect, expected) in cases {
            match (dialect.assistant_for(&scenario), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{case}"),
                (Err(err), Err(want)) => {
                    let err = err.to_string();
                    assert!(
                        err.contains(want) && err.contains("--assistant"),
                        "{case}: {err}"
                    );
                }
                (got, want) => panic!("{case}: got {got:?}, expected {want:?}"),
            }
        }
    }

    /// A stand-in for LangGraph's API server: one graph, threads, and a run stream as `langgraph
    /// dev` frames it (CRLF lines, a heartbeat comment, no `end`), which answers 401 without the
    /// auth header and echoes the run request in its `values` frame.
    async fn stand_in_server() -> String {
        use axum::http::{HeaderMap, StatusCode};
        use axum::routing::post;
        let stream = |headers: HeaderMap, axum::Json(body): axum::Json<Value>| async move {
            if headers.get("x-api-key").map(|v| v.as_bytes()) != Some(b"sk-test-value") {
                return (StatusCode::UNAUTHORIZED, String::new());
            }
            let run = r#"{"run_id":"r","attempt":1}"#;
            let frames = format!(
                "event: metadata\r\ndata: {run}\r\n\r\n: heartbeat\r\n\r\n\
                 event: values\r\ndata: {body}\r\n\r\n"
            );
            (StatusCode::OK, frames)
        };
        let app = axum::Router::new()
            .route(
                "/assistants/search",
                post(|| async { axum::Json(json!([{"graph_id": "agent", "assistant_id": "1"}])) }),
            )
            .route("/threads", post(|| async { axum::Json(json!({})) }))
            .route("/threads/{id}/runs/stream", post(stream));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        url
    }

    #[tokio::test]
    async fn a_session_drives_a_langgraph_server_with_its_auth_header_and_reads_its_framing() {
        let url = stand_in_server().await;
        let auth =
            AuthHeader::from_value("x-api-key", "KEY_VAR", Some("sk-test-value".into())).unwrap();
        let options = DriveOptions {
            api: Api::Langgraph,
            auth: Some(auth),
            ..DriveOptions::default()
        };
        let scenario = Scenario {
            context: json!({}),
            followups: vec!["Again".into()],
            ..Scenario::new("s", UiMode::Flash, "Hi")
        };
        let recorded = [turn(
            r#"[{"content": "Hi", "name": "user-input", "type": "human"}]"#,
        )];
        let mut session = Session::open(&url, &options).await.unwrap();
        let runs = session.run_scenario(&scenario, &recorded).await.unwrap();
        assert_eq!(runs.len(), 2, "the prompt and the follow-up");
        for run in &runs {
            let events: Vec<&str> = run.events.iter().map(|e| e.event.as_str()).collect();
            assert_eq!(
                events,
                ["metadata", "values"],
                "CRLF frames, the heartbeat skipped"
            );
            assert_eq!(run.api, Api::Langgraph);
            let sent: Value = serde_json::from_str(run.events[1].data()).unwrap();
            assert_eq!(sent["assistant_id"], "agent", "the only graph listed");
        }
        let sent: Value = serde_json::from_str(runs[0].events[1].data()).unwrap();
        assert_eq!(sent["input"]["messages"][0]["name"], "user-input");
        assert_eq!(Api::Langgraph.framing(&runs, false), Framing::Ok);

        let anonymous = DriveOptions {
            api: Api::Langgraph,
            ..DriveOptions::default()
        };
        let mut session = Session::open(&url, &anonymous).await.unwrap();
        let err = session
            .run_scenario(&scenario, &recorded)
            .await
            .unwrap_err();
        assert!(err.to_string().contains("expected 200, got 401"), "{err}");
    }

    #[test]
    fn the_listed_graphs_are_read_from_the_search_answer() {
        let answer = json!([{"graph_id": "review", "assistant_id": "1"},
                            {"graph_id": "agent", "assistant_id": "2"},
                            {"graph_id": "agent", "assistant_id": "3"}]);
        assert_eq!(
            graph_ids(&answer),
            Some(vec!["agent".into(), "review".into()])
        );
        assert_eq!(graph_ids(&json!({"detail": "x"})), None);
    }
}
