//! The web client's flow over every shipped fixture (adding a fixture file adds a test): replay
//! it while making the requests DeerFlow's chat page makes, in its order (`keyless_runner::session::WebClient`),
//! and assert what a browser needs: every request 2xx, no replay miss, every recorded turn used
//! (the suggestions turn included), suggestions shown, and the page's message history holding
//! each prompt after the runs.

use std::path::Path;

use harness::in_process::{InProcess, web_options};
use keyless_runner::runtime;
use serde_json::Value;

/// One fixture's test; `golden.rs` lists it in the binary's datatest harness.
pub(crate) fn web_client_flow(path: &Path) -> datatest_stable::Result<()> {
    let runtime = runtime()?;
    let run = runtime.block_on(keyless_runner::run(
        &mut InProcess::default(),
        path,
        &web_options(),
    ))?;
    run.check()?;
    let answer = |suffix: &str| {
        run.exchanges
            .iter()
            .rev()
            .find(|exchange| exchange.path.ends_with(suffix) || exchange.path.contains(suffix))
            .map(|exchange| exchange.body.clone())
            .ok_or_else(|| format!("no request to …{suffix}\n\n{}", run.report(&run.verdict())))
    };
    let suggestions = answer("/suggestions")?;
    if suggestions["suggestions"]
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        return Err(format!(
            "no suggestions were shown: {suggestions}\n\n{}",
            run.report(&run.verdict())
        )
        .into());
    }
    let page = answer("/messages/page")?;
    let humans: Vec<String> = page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|row| row["event_type"] == "llm.human.input")
        .map(|row| text_of(&row["content"]["content"]))
        .collect();
    let fixture = &run.fixture;
    let prompts: Vec<String> = std::iter::once(&fixture.scenario.prompt)
        .chain(&fixture.scenario.followups)
        .cloned()
        .collect();
    if humans != prompts {
        return Err(format!(
            "the message page after the runs shows the prompts {humans:?}, expected {prompts:?}\n\n{}",
            run.report(&run.verdict())
        )
        .into());
    }
    Ok(())
}

/// The text of a message's content: the string, or its text blocks joined.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|block| block["text"].as_str())
            .collect(),
        _ => String::new(),
    }
}
