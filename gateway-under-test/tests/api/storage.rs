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
pub(crate) fn database_bytes(home: &std::path::Path) -> u64 {
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

/// Rows of `table` whose `column` holds `marker`.
fn rows_holding(home: &std::path::Path, table: &str, column: &str, marker: &str) -> i64 {
    let conn = rusqlite::Connection::open(home.join("db").join("deerflow.db")).expect("open");
    conn.query_row(
        &format!("SELECT count(*) FROM {table} WHERE instr({column}, ?1) > 0"),
        [marker],
        |row| row.get(0),
    )
    .expect("count")
}

/// Finding 11 of issue 21: every message was stored three times, in `checkpoint_messages`, in
/// its checkpoint's `writes` and in the run journal. The journal and the writes now name the
/// stored message, and still read as they were written.
#[tokio::test]
async fn every_message_is_stored_once_not_again_in_the_checkpoint_writes_and_the_journal() {
    let gateway = spawn_gateway_configured(|_| {}).await;
    let (client, thread_id) = gateway.client_with_thread().await;
    let marker = "stored-once-marker";
    gateway.model.push([
        tool_call(
            "write_file",
            json!({"description": "part", "path": "/mnt/user-data/outputs/a.txt",
                   "content": marker}),
            "call_1",
        ),
        answer("done"),
    ]);
    let mut body = crate::vocabulary::run_body("write it", ultra_context());
    body["stream_mode"] = json!(["updates", "messages-tuple"]);
    let transcript = client.stream_run(&thread_id, body).await;
    assert_eq!(
        transcript.events().last(),
        Some(&"end"),
        "{}",
        transcript.raw
    );

    let home = gateway.home.path();
    let copies = [
        ("checkpoints", "metadata_json"),
        ("checkpoints", "values_json"),
        ("run_events", "content"),
    ]
    .map(|(table, column)| (table, column, rows_holding(home, table, column, marker)));
    assert_eq!(
        copies.map(|(table, column, rows)| (table, column, (rows > 0))),
        [
            ("checkpoints", "metadata_json", false),
            ("checkpoints", "values_json", false),
            ("run_events", "content", false),
        ],
        "copies of the answer outside checkpoint_messages: {copies:?}"
    );
    assert!(rows_holding(home, "checkpoint_messages", "body", marker) > 0);

    // The journal still reads as written (the writes' round trip is the store's test).
    let run_id = transcript.run_id();
    let (status, events) = client
        .get(&format!("/api/threads/{thread_id}/runs/{run_id}/events"))
        .await;
    assert_eq!(status, 200, "{events}");
    let rows = events.as_array().expect("rows");
    let of = |event_type: &str| {
        rows.iter()
            .find(|row| row["event_type"] == event_type)
            .unwrap_or_else(|| panic!("no {event_type} row in {events}"))
    };
    let response = of("llm.ai.response");
    assert_eq!(
        response["content"]["tool_calls"][0]["args"]["content"],
        marker
    );
    let result = of("llm.tool.result");
    assert_eq!(result["content"]["type"], "tool");
    assert_eq!(
        result["content"]["id"],
        serde_json::Value::Null,
        "journaled before it had an id"
    );
}
