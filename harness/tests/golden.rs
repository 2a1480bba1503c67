//! Layer 1 goldens: two tests per fixture in `fixtures/` (adding a fixture file adds them).
//!
//! `golden` replays its fixture through the real gateway in-process with the values-only run
//! request and asserts, in order: the first event is `metadata` and the last `end`; the replay
//! model missed nothing (the error middleware hides misses from the stream, so the ledger is the
//! gate); and the shape sequence equals the insta snapshot `golden/<stem>.snap`. The first two
//! come from the run's verdict.
//!
//! `web_golden` drives the same fixture as DeerFlow's web client does (`keyless_runner::session::WebClient`: its
//! page requests and its run request with the stream modes `messages-tuple`, `values`,
//! `updates`, `custom`) and asserts: the flow passes its checks; the `values` frames are exactly
//! those of the values-only golden (other modes must not change them); and the web reduction
//! (message tuples by type and keys, a run of streamed chunks as one entry, updates by node name) equals `golden/<stem>.web.snap`; and
//! the thread's final messages, normalised, equal `golden/<stem>.messages.snap` (values, not
//! only shapes).
//!
//! Goldens are asserted with insta itself, so a new or changed shape is written as
//! `golden/<stem>.snap.new` for `cargo insta review`; under `CI=true` insta never writes, so a
//! changed shape fails.
//!
//! The binary also runs `web_client.rs`'s test per fixture (one binary linking the gateway, not
//! two).

mod web_client;

use std::path::Path;

use harness::in_process::{InProcess, run as run_fixture, web_options};
use harness::web_flow::{messages_document, messages_stem};
use harness::workspace::{golden_dir, read_golden};
use keyless_runner::runtime;
use serde_json::{Value, json};
use web_client::web_client_flow;

/// Compares `document` with `golden/<stem>.snap`; the error names the file and carries `report`.
fn assert_golden(
    what: &str,
    fixture_stem: &str,
    stem: &str,
    document: String,
    report: impl FnOnce() -> String,
) -> datatest_stable::Result<()> {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(golden_dir());
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(format!("fixture: fixtures/{fixture_stem}.json"));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_snapshot!(stem, document));
    }));
    if outcome.is_err() {
        return Err(format!(
            "{what} of fixtures/{fixture_stem}.json differs from golden/{stem}.snap (review with `cargo insta review`)\n\n{}",
            report()
        )
        .into());
    }
    Ok(())
}

fn golden(path: &Path) -> datatest_stable::Result<()> {
    let run = runtime()?.block_on(run_fixture(path))?;
    let verdict = run.verdict();
    if !verdict.replayed_cleanly() {
        return Err(run.report(&verdict).into());
    }
    let stem = run.stem();
    assert_golden("the SSE shape", &stem, &stem, run.golden_document(), || {
        run.report(&verdict)
    })
}

fn web_golden(path: &Path) -> datatest_stable::Result<()> {
    let run = runtime()?.block_on(keyless_runner::run(
        &mut InProcess::default(),
        path,
        &web_options(),
    ))?;
    let verdict = run.verdict();
    if !verdict.replayed_cleanly() {
        return Err(run.report(&verdict).into());
    }
    let fixture_stem = run.stem();
    let expected: Vec<Value> = serde_json::from_str::<Value>(&read_golden(&fixture_stem)?)
        .ok()
        .and_then(|document| document["events"].as_array().cloned())
        .ok_or_else(|| format!("golden/{fixture_stem}.snap: not a golden document"))?
        .into_iter()
        .filter(|event| event["event"] == "values")
        .collect();
    let actual: Vec<Value> = run
        .shapes()
        .into_iter()
        .filter(|shape| shape.event.as_deref() == Some("values"))
        .map(|shape| json!({"event": shape.event, "keys": shape.keys}))
        .collect();
    if actual != expected {
        return Err(format!(
            "with the web client's stream modes, the `values` frames of fixtures/{fixture_stem}.json differ from golden/{fixture_stem}.snap: other modes must not change them\n\n{}",
            run.report(&verdict)
        )
        .into());
    }
    assert_golden(
        "the web SSE shape",
        &fixture_stem,
        &run.golden_stem(),
        run.golden_document(),
        || run.report(&verdict),
    )?;
    assert_golden(
        "the final messages (values, normalised)",
        &fixture_stem,
        &messages_stem(&run),
        messages_document(&run),
        || run.report(&verdict),
    )
}

datatest_stable::harness! {
    { test = golden, root = "fixtures", pattern = r"^.*\.json$" },
    { test = web_golden, root = "fixtures", pattern = r"^.*\.json$" },
    { test = web_client_flow, root = "fixtures", pattern = r"^.*\.json$" },
}
