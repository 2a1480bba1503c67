//! `keyless test` with a recorded HTTP API (`[http.<name>]`, issue 40), as a user runs it: the
//! scripted gateway searches through `{http_url:tavily}` on every run, the upstream is never
//! reachable, and the recorded exchange answers it. A changed query and an exchange nobody asks
//! for each fail the run, named.

use harness::workspace::workspace_root;
use serde_json::{Value, json};

use super::{UserRepo, said, toml_string};

/// A Tavily search of `query` as the scripted gateway sends it, answered with one result.
fn exchange(query: &str) -> Value {
    json!({
        "boundary": "http",
        "caller": "tavily",
        "label": "POST /search",
        "request": {"method": "POST", "path": "/search",
            "body": {"json": {"api_key": "[secret removed]", "query": query}}},
        "answer": {"status": 200, "headers": {"content-type": "application/json"},
            "body": [json!({"query": query, "results": [{"title": "Sunny in Paris"}]}).to_string()]},
    })
}

impl UserRepo {
    /// One chat fixture whose run searches `query` (recorded), through the scripted gateway
    /// with `GW_SEARCH={http_url:tavily}` when `searching`; the golden of a clean run accepted.
    fn searching(&self, query: &str, searching: bool) {
        let fixtures = self.path().join("fixtures");
        std::fs::remove_dir_all(&fixtures).unwrap();
        std::fs::create_dir_all(&fixtures).unwrap();
        let hello = workspace_root().join("examples/ai-sdk-chat/web/fixtures/hello.chat.json");
        let mut fixture: Value =
            serde_json::from_str(&std::fs::read_to_string(hello).unwrap()).unwrap();
        fixture["exchanges"] = json!({"version": 1, "recorded": [exchange(query)]});
        std::fs::write(fixtures.join("search.chat.json"), fixture.to_string()).unwrap();
        let gateway = workspace_root().join("harness/cli/tests/keyless/scripted_gateway.py");
        let search = if searching {
            "GW_SEARCH={http_url:tavily} "
        } else {
            ""
        };
        let command = format!("{search}exec python3 '{}'", gateway.display());
        std::fs::write(
            self.path().join("keyless.toml"),
            format!(
                "gateway_cmd = {}\nready = \"/\"\napi = \"langgraph\"\n\n[http.tavily]\n\
                 upstream = \"http://127.0.0.1:9\"\n",
                toml_string(&command)
            ),
        )
        .unwrap();
    }
}

#[test]
fn a_recorded_search_replays_through_keyless_test_and_a_changed_or_unasked_one_fails_named() {
    let repo = UserRepo::new();
    repo.searching("Hello!", true);
    let first = repo.keyless(&["test"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "no golden yet: {}",
        said(&first)
    );
    let accepted = repo.keyless(&["accept"]);
    assert!(accepted.status.success(), "{}", said(&accepted));
    let clean = repo.keyless(&["test"]);
    assert!(clean.status.success(), "{}", said(&clean));
    let cases = [
        (
            "Hello there!",
            true,
            "http miss: `POST /search` from `tavily` has no recorded answer",
        ),
        (
            "Hello there!",
            true,
            "first differing field: body.json.query: recorded \"Hello there!\", now \"Hello!\"",
        ),
        (
            "Hello!",
            false,
            "recorded http exchange 0 `POST /search` from `tavily` was never asked for",
        ),
    ];
    for (query, searching, expected) in cases {
        repo.searching(query, searching);
        let output = repo.keyless(&["test"]);
        assert_eq!(output.status.code(), Some(1), "{}", said(&output));
        assert!(
            said(&output).contains(expected),
            "{}\nexpected: {expected}",
            said(&output)
        );
    }
    let unknown = std::fs::read_to_string(repo.path().join("keyless.toml"))
        .unwrap()
        .replace("exec python3", "GW_SEARCH={http_url:brave} exec python3");
    std::fs::write(repo.path().join("keyless.toml"), unknown).unwrap();
    let output = repo.keyless(&["test"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "a usage error: {}",
        said(&output)
    );
    assert!(
        said(&output).contains("gateway_cmd: {http_url:brave} names no boundary configured in"),
        "{}",
        said(&output)
    );
}

/// The forward-proxy mode through `keyless test`: the scripted gateway searches
/// `https://api.tavily.com` itself (Python's `urllib`, no base URL changed), reaching it only
/// through the `HTTPS_PROXY` and the run's CA keyless gives it; the recorded exchange answers
/// (the upstream is never reachable here), and a search of a host not in `[proxy] hosts` fails
/// the run naming the host.
#[test]
fn a_search_through_the_forward_proxy_replays_and_an_unlisted_host_fails_named() {
    let repo = UserRepo::new();
    repo.searching("Hello!", true);
    let proxied = |search: &str| {
        let gateway = workspace_root().join("harness/cli/tests/keyless/scripted_gateway.py");
        let command = format!("GW_SEARCH={search} exec python3 '{}'", gateway.display());
        std::fs::write(
            repo.path().join("keyless.toml"),
            format!(
                "gateway_cmd = {}\nready = \"/\"\napi = \"langgraph\"\n\n[http.tavily]\n\
                 upstream = \"https://api.tavily.com\"\n\n[proxy]\nhosts = [\"api.tavily.com\"]\n",
                toml_string(&command)
            ),
        )
        .unwrap();
    };
    proxied("https://api.tavily.com");
    let first = repo.keyless(&["test"]);
    assert_eq!(
        first.status.code(),
        Some(1),
        "no golden yet: {}",
        said(&first)
    );
    let accepted = repo.keyless(&["accept"]);
    assert!(accepted.status.success(), "{}", said(&accepted));
    for run in 0..2 {
        let clean = repo.keyless(&["test"]);
        assert!(clean.status.success(), "run {run}: {}", said(&clean));
    }
    proxied("https://api.search.brave.com");
    let output = repo.keyless(&["test"]);
    assert_eq!(output.status.code(), Some(1), "{}", said(&output));
    assert!(
        said(&output).contains(
            "CONNECT api.search.brave.com:443: the host \"api.search.brave.com\" is not listed in [proxy] hosts"
        ),
        "{}",
        said(&output)
    );
}
