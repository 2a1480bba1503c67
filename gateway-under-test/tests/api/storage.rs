//! How a run's storage and stream grow with its steps (issue: "unbounded amplification of large
//! outputs"). One run writes the same total bytes with `write_file` in 1, 10, 100 or 1,000 tool steps;
//! the database must grow with what was said, not with steps × conversation. The SSE stream in
//! `values` mode carries the whole state at every step by contract, so its growth is measured
//! and printed (`--nocapture`), not bounded; at 1,000 steps it would be gigabytes, so that run
//! streams `updates` and `messages-tuple` instead, which is how a client keeps its stream growing
//! with what was said.

use serde_json::json;

use crate::vocabulary::{answer, spawn_gateway_configured, tool_call, ultra_context};

/// Total bytes written by each run, split evenly over its tool steps.
const TOTAL_CONTENT_BYTES: usize = 200 * 1024;

/// What one step may add to the database besides its messages.
const PER_STEP_BYTES: f64 = 24.0 * 1024.0;

/// The database size with the write-ahead log folded in.
fn database_bytes(home: &std::path::Path) -> u64 {
    let path = home.join("db").join("deerflow.db");
    let conn = rusqlite::Connection::open(&path).expect("open the database");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint the WAL");
    std::fs::metadata(&path).expect("database file").len()
}

#[tokio::test]
async fn storage_grows_with_what_was_said_not_with_steps() {
    for steps in [1_usize, 10, 100, 1000] {
        let gateway =
            spawn_gateway_configured(|config| config.runs.max_recursion_limit = 40_000).await;
        gateway.model.forget_requests();
        let (client, thread_id) = gateway.client_with_thread().await;
        let before = database_bytes(gateway.home.path());
        let chunk = "x".repeat(TOTAL_CONTENT_BYTES / steps);
        gateway.model.push((0..steps).map(|step| {
            tool_call(
                "write_file",
                json!({"description": "part", "path": format!("/mnt/user-data/outputs/{step}.txt"),
                       "content": chunk}),
                &format!("call_{step}"),
            )
        }));
        gateway.model.push([answer("done")]);
        let mut body = crate::vocabulary::run_body("write the parts", ultra_context());
        body["config"]["recursion_limit"] = json!(30 * steps + 100);
        let mode = if steps <= 100 {
            "values"
        } else {
            body["stream_mode"] = json!(["updates", "messages-tuple"]);
            "updates"
        };
        let transcript = client.stream_run(&thread_id, body).await;
        assert_eq!(
            transcript.events().last(),
            Some(&"end"),
            "{}",
            transcript.raw
        );
        assert!(
            !transcript.events().contains(&"error"),
            "{steps} steps: the run failed: {:?}",
            transcript
                .frames
                .iter()
                .filter(|frame| frame.event == "error")
                .map(|frame| &frame.data)
                .collect::<Vec<_>>()
        );

        let (status, state) = client.get(&format!("/api/threads/{thread_id}/state")).await;
        assert_eq!(status, 200, "{state}");
        let message_bytes = state["values"]["messages"].to_string().len() as f64;
        let database = (database_bytes(gateway.home.path()) - before) as f64;
        let sse = transcript.raw.len() as f64;
        eprintln!(
            "{steps:>4} steps: messages {message_bytes:>8} B, database +{database:>9} B \
             ({:.2}×), SSE {sse:>10} B ({:.1}×, {mode})",
            database / message_bytes,
            sse / message_bytes,
        );
        // Linear in what was said plus a constant per step (a checkpoint's other channels and
        // its list of message ids, journal rows); whole-state checkpoints were quadratic
        // (about 40 MB here for 100 steps).
        let bound = 6.0 * message_bytes + PER_STEP_BYTES * steps as f64;
        assert!(
            database <= bound,
            "{steps} steps: the database grew {database} B for {message_bytes} B of messages \
             (bound {bound} B)"
        );
    }
}
