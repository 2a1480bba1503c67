//! A real client nobody here wrote: the official LangGraph Python SDK drives the gateway
//! (create a thread, stream a run in `values` mode, list runs, read the state).
//!
//! `.ci/run` installs `langgraph-sdk` in a virtual environment and points
//! `LANGGRAPH_SDK_PYTHON` at its interpreter. Without that variable the check is skipped with a
//! notice, except under `CI`, where a missing interpreter is a failure.

use std::process::Command;

use crate::vocabulary::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_langgraph_sdk_streams_lists_and_reads_state() {
    let python = match std::env::var("LANGGRAPH_SDK_PYTHON") {
        Ok(python) => python,
        Err(_)
            if std::env::var("CI").is_ok_and(|ci| !ci.is_empty() && ci != "false" && ci != "0") =>
        {
            panic!(
                "CI must set LANGGRAPH_SDK_PYTHON to a Python with langgraph-sdk installed (see .ci/run)"
            )
        }
        Err(_) => {
            eprintln!(
                "skipped: set LANGGRAPH_SDK_PYTHON to run the LangGraph SDK check (.ci/run does)"
            );
            return;
        }
    };
    let gateway = spawn_gateway().await;
    gateway.model.answer_always("Hello, SDK!");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/check_langgraph_sdk.py"
    );
    let url = gateway.url();
    let output =
        tokio::task::spawn_blocking(move || Command::new(python).arg(script).arg(url).output())
            .await
            .expect("join")
            .expect("Failed to start the SDK check's Python");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "SDK check failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        output.status
    );
    println!("{stdout}");
    let summary: serde_json::Value =
        serde_json::from_str(stdout.trim()).expect("one JSON summary line");
    assert_eq!(summary["runs"], serde_json::json!(["success"]));
    gateway.stop().await;
}
