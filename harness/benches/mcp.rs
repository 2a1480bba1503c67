//! `cargo bench -p harness --bench mcp`: one replayed MCP call, measured with criterion: a
//! `tools/call` POSTed over loopback to the MCP route (`/_keyless/mcp/<name>`), keyed, looked up
//! in the exchange replay and answered as an SSE stream, read whole by the client. The replay
//! is started afresh (untimed) before each call, so every call is a hit. Printed, never
//! asserted: these machines are noisy. The same for a call of the stateless revision
//! (2026-07-28: no session, `Mcp-Method`/`Mcp-Name` headers checked against the body).

use std::path::Path;
use std::sync::Arc;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use keyless_runner::mcp::{
    ActiveExchanges, AnswerForm, McpAnswer, McpBoundary, McpCall, McpServers, McpSource,
    McpUpstream, Outcome, mcp_router,
};
use parking_lot::Mutex;
use replay_core::{Exchange, ExchangeReplay};
use serde_json::{Value, json};

/// The replay the route serves, swapped before each measured call.
#[derive(Debug)]
struct Swapped(Mutex<Arc<ExchangeReplay>>);

impl ActiveExchanges for Swapped {
    fn active(&self) -> Option<Arc<ExchangeReplay>> {
        Some(Arc::clone(&self.0.lock()))
    }
}

fn recorded(method: &str, params: Value, result: Value) -> Exchange {
    let boundary = McpBoundary {
        server: "time".to_owned(),
    };
    let call = McpCall {
        id: json!(1),
        method: method.to_owned(),
        params: Some(params),
    };
    let answer = McpAnswer {
        form: AnswerForm::Sse,
        before: Vec::new(),
        response: Outcome::Result(result),
        status: None,
    };
    boundary.call(&call).answered(answer.to_value())
}

fn replay_of(exchanges: &[Exchange]) -> Arc<ExchangeReplay> {
    Arc::new(ExchangeReplay::new(
        Path::new("bench.flash.json"),
        exchanges.to_vec(),
    ))
}

fn one_call(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a runtime");
    let initialize = recorded(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "mcp", "version": "1"}}),
        json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
            "serverInfo": {"name": "time", "version": "1"}}),
    );
    let arguments = json!({"name": "get_time", "arguments": {"city": "Paris"}});
    let call = recorded(
        "tools/call",
        arguments.clone(),
        json!({"content": [{"type": "text", "text": "Paris: 2026-12-06T10:00:00Z"}],
            "isError": false}),
    );
    let active = Arc::new(Swapped(Mutex::new(replay_of(std::slice::from_ref(
        &initialize,
    )))));
    // The configured server is never reached in replay: a closed port.
    let servers = McpServers::new().with("time", McpUpstream::Url("http://127.0.0.1:9/mcp".into()));
    let active_route: Arc<dyn ActiveExchanges> = active.clone();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .expect("a port");
    let url = format!(
        "http://{}/_keyless/mcp/time",
        listener.local_addr().expect("an address")
    );
    runtime.spawn(async move {
        let source = McpSource::Replay(active_route);
        axum::serve(listener, mcp_router::<()>(Arc::new(servers), source)).await
    });
    let client = reqwest::Client::new();
    let post = |body: Value, session: Option<String>| {
        let mut request = client
            .post(&url)
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        request.send()
    };
    let session = runtime.block_on(async {
        let response = post(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": initialize.request["params"]}),
            None,
        )
        .await
        .expect("initialize answered");
        (response.headers().get("mcp-session-id"))
            .and_then(|v| v.to_str().ok())
            .expect("a session")
            .to_owned()
    });
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": arguments});
    c.bench_function("mcp: one replayed tools/call over loopback (SSE)", |b| {
        b.iter_batched(
            || *active.0.lock() = replay_of(std::slice::from_ref(&call)),
            |()| {
                runtime.block_on(async {
                    let text = post(body.clone(), Some(session.clone()))
                        .await
                        .expect("answered")
                        .text()
                        .await
                        .expect("read");
                    assert!(text.contains("Paris: 2026"), "{text}");
                })
            },
            BatchSize::PerIteration,
        );
    });
    // The stateless revision (2026-07-28): no session, the headers checked against the body.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut stateless_params = arguments.clone();
    stateless_params["_meta"] = meta;
    let stateless_call = recorded(
        "tools/call",
        stateless_params.clone(),
        json!({"content": [{"type": "text", "text": "Paris: 2026-12-06T10:00:00Z"}],
            "isError": false, "resultType": "complete"}),
    );
    let stateless_body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": stateless_params});
    c.bench_function(
        "mcp: one replayed stateless tools/call over loopback (SSE)",
        |b| {
            b.iter_batched(
                || *active.0.lock() = replay_of(std::slice::from_ref(&stateless_call)),
                |()| {
                    runtime.block_on(async {
                        let text = (client.post(&url))
                            .header("accept", "application/json, text/event-stream")
                            .header("mcp-protocol-version", "2026-07-28")
                            .header("mcp-method", "tools/call")
                            .header("mcp-name", "get_time")
                            .json(&stateless_body)
                            .send()
                            .await
                            .expect("answered")
                            .text()
                            .await
                            .expect("read");
                        assert!(text.contains("Paris: 2026"), "{text}");
                    })
                },
                BatchSize::PerIteration,
            );
        },
    );
}

criterion_group!(benches, one_call);
criterion_main!(benches);
