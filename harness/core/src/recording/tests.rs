//! Tests of the recording format as a whole: writing, strict reading, permissions and strict
//! replay (`docs/recording-format.md` §13, the lines that apply to a library without a gateway).
//! Redaction and event-class tables live beside their code in `redact.rs` and `rows.rs`.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;

use super::redact::PLACEHOLDER;
use super::writer::valid_recording_id;
use super::*;

const P: &str = PLACEHOLDER;

fn tempdir() -> TempDir {
    tempfile::tempdir().expect("temp dir")
}

fn mode_of(path: &Path) -> u32 {
    fs::symlink_metadata(path).unwrap().permissions().mode() & 0o7777
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, Permissions::from_mode(mode)).unwrap();
}

/// Writes `text` to a new file with mode 0600.
fn write_private(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
    chmod(&path, 0o600);
    path
}

fn request(content: &str) -> RecordedRequest {
    RecordedRequest::new(
        json!({"api": "openai-completions", "id": "test-model"}),
        json!({"messages": [{"role": "user", "content": content}]}),
        json!({"temperature": 0}),
    )
}

/// An event from its payload, which must be valid.
fn event(payload: Value) -> RecordedEvent {
    RecordedEvent::parse(&payload).unwrap_or_else(|err| panic!("{payload}: {err}"))
}

fn text_events(text: &str) -> Vec<RecordedEvent> {
    vec![
        event(json!({"type": "start"})),
        event(json!({"type": "text_delta", "delta": text})),
        event(json!({"type": "done", "message": {"role": "assistant", "content": text}})),
    ]
}

/// Records one call with `events` and `outcome` through `sink`; returns its index.
fn record_call(
    sink: &RecordingSink,
    request: &RecordedRequest,
    events: &[RecordedEvent],
    outcome: Outcome,
) -> usize {
    let mut call = sink.begin_call(request).unwrap();
    for event in events {
        call.event(event).unwrap();
    }
    let index = call.call_index();
    call.end(outcome).unwrap();
    index
}

fn rows_of(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn call_ends(path: &Path) -> Vec<Value> {
    rows_of(path)
        .into_iter()
        .filter(|row| row["type"] == "call_end")
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Writing

#[test]
fn recorded_recording_file_holds_no_secret_in_plain_text() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let request = RecordedRequest::new(
        json!({
            "id": "gpt-test",
            "headers": {"Authorization": "Bearer sk-modelsecret12345", "X-Trace": "keep-me"},
            "base_url": "https://alice:hunter2pw@llm.example.com/v1?api_key=urlsecret99&region=eu",
        }),
        json!({"messages": [{"role": "user", "content": "please use sk-abcdefgh12345678 ok"}]}),
        json!({
            "api_key": "opt-secret-value-1",
            "headers": {"Cookie": "session=cookiesecret42"},
            "signal": null,
            "on_payload": "callback",
        }),
    );
    record_call(&sink, &request, &text_events("hi"), Outcome::Complete);

    let bytes = fs::read_to_string(&path).unwrap();
    for secret in [
        "sk-modelsecret12345",
        "hunter2pw",
        "alice",
        "urlsecret99",
        "sk-abcdefgh12345678",
        "opt-secret-value-1",
        "cookiesecret42",
    ] {
        assert!(!bytes.contains(secret), "{secret} leaked into {bytes}");
    }
    assert!(bytes.contains(P));
    assert!(bytes.starts_with("{\"format_version\": 3, \"type\": \"header\"}\n"));

    let rows = rows_of(&path);
    assert_eq!(rows[0], json!({"type": "header", "format_version": 3}));
    let row = &rows[1];
    assert_eq!(row["type"], "request");
    assert_eq!(row["options"]["api_key"], P);
    assert_eq!(row["options"]["headers"]["Cookie"], P);
    assert_eq!(row["model"]["headers"]["Authorization"], P);
    assert_eq!(row["model"]["headers"]["X-Trace"], "keep-me");
    assert_eq!(
        row["model"]["base_url"],
        format!("https://{P}@llm.example.com/v1?api_key={P}&region=eu")
    );
    assert_eq!(
        row["context"]["messages"][0]["content"],
        format!("please use {P} ok")
    );
    // Run-time-only options are not recorded.
    let options = row["options"].as_object().unwrap();
    assert!(!options.contains_key("signal") && !options.contains_key("on_payload"));
    let types: Vec<&str> = rows.iter().map(|r| r["type"].as_str().unwrap()).collect();
    assert_eq!(&types[types.len() - 2..], ["event", "call_end"]);
    // And the file reads strictly.
    assert_eq!(
        read_recording(&path, Access::External).unwrap().calls.len(),
        1
    );
}

#[test]
fn event_payloads_are_redacted_before_writing() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let events = [
        event(json!({"type": "text_delta", "delta": "use Bearer abcdef123456 now"})),
        event(json!({"type": "done", "message": {"content": "x", "api_key": "evt-secret-77"}})),
    ];
    let redacted = [
        event(json!({"type": "text_delta", "delta": format!("use {P} now")})),
        event(json!({"type": "done", "message": {"content": "x", "api_key": P}})),
    ];
    let mut call = sink.begin_call(&request("q")).unwrap();
    for (event, redacted) in events.iter().zip(&redacted) {
        assert_eq!(
            &call.event(event).unwrap(),
            redacted,
            "handed back as written"
        );
    }
    call.end(Outcome::Complete).unwrap();
    let bytes = fs::read_to_string(&path).unwrap();
    assert!(!bytes.contains("abcdef123456") && !bytes.contains("evt-secret-77"));
    let recording = read_recording(&path, Access::External).unwrap();
    assert_eq!(recording.calls[0].events, redacted);
}

#[test]
fn rows_are_python_json_with_sorted_keys_and_raw_non_ascii() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let request = RecordedRequest::new(
        json!({"id": "m"}),
        json!({"z": 1, "messages": []}),
        Value::Null,
    );
    let events = [
        RecordedEvent::Start,
        event(json!({"type": "done", "message": {"content": "é 😀", "a": 1.0}})),
    ];
    record_call(&sink, &request, &events, Outcome::Complete);
    let expected = concat!(
        "{\"format_version\": 3, \"type\": \"header\"}\n",
        "{\"call_index\": 0, \"context\": {\"messages\": [], \"z\": 1}, \"model\": {\"id\": \"m\"}, \"options\": null, \"type\": \"request\"}\n",
        "{\"call_index\": 0, \"event\": {\"type\": \"start\"}, \"event_index\": 0, \"type\": \"event\"}\n",
        "{\"call_index\": 0, \"event\": {\"message\": {\"a\": 1.0, \"content\": \"é 😀\"}, \"type\": \"done\"}, \"event_index\": 1, \"type\": \"event\"}\n",
        "{\"call_index\": 0, \"event_count\": 2, \"outcome\": \"complete\", \"type\": \"call_end\"}\n",
    );
    assert_eq!(fs::read_to_string(&path).unwrap(), expected);
}

#[test]
fn call_index_continues_across_sinks_on_the_same_file() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let first = RecordingSink::open(&path).unwrap();
    assert_eq!(
        record_call(&first, &request("a"), &[], Outcome::Complete),
        0
    );
    assert_eq!(
        record_call(&first, &request("b"), &[], Outcome::Complete),
        1
    );
    drop(first);
    let second = RecordingSink::open(&path).unwrap();
    assert_eq!(second.path(), path);
    assert_eq!(
        record_call(&second, &request("c"), &[], Outcome::Complete),
        2
    );

    let recording = read_recording(&path, Access::External).unwrap();
    let indexes: Vec<usize> = recording.calls.iter().map(|c| c.call_index).collect();
    assert_eq!(indexes, [0, 1, 2]);
    let headers = recording
        .rows
        .iter()
        .filter(|r| r["type"] == "header")
        .count();
    assert_eq!(headers, 1, "reopening writes no second header");
}

#[test]
fn events_are_written_with_contiguous_event_indexes() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let mut call = sink.begin_call(&request("q")).unwrap();
    for (i, event) in text_events("hello").iter().enumerate() {
        assert_eq!(call.event_count(), i);
        call.event(event).unwrap();
    }
    call.end(Outcome::Complete).unwrap();
    let rows = rows_of(&path);
    let event_indexes: Vec<&Value> = rows
        .iter()
        .filter(|r| r["type"] == "event")
        .map(|r| &r["event_index"])
        .collect();
    assert_eq!(event_indexes, [&json!(0), &json!(1), &json!(2)]);
    assert_eq!(
        call_ends(&path),
        [json!({"call_index": 0, "event_count": 3, "outcome": "complete", "type": "call_end"})]
    );
}

#[test]
fn call_outcomes_from_end_and_from_drop() {
    type Finish = fn(CallWriter);
    let cases: [(&str, Finish, &str); 5] = [
        (
            "end(Complete)",
            |c| c.end(Outcome::Complete).unwrap(),
            "complete",
        ),
        ("end(Error)", |c| c.end(Outcome::Error).unwrap(), "error"),
        ("dropped without end", drop, "abandoned"),
        (
            "set_drop_outcome(Cancelled) then dropped",
            |mut c| {
                c.set_drop_outcome(Outcome::Cancelled);
                drop(c);
            },
            "cancelled",
        ),
        (
            "set_drop_outcome then end wins",
            |mut c| {
                c.set_drop_outcome(Outcome::Cancelled);
                c.end(Outcome::Complete).unwrap();
            },
            "complete",
        ),
    ];
    for (name, finish, expected) in cases {
        let dir = tempdir();
        let path = dir.path().join("rec.jsonl");
        let sink = RecordingSink::open(&path).unwrap();
        let mut call = sink.begin_call(&request("q")).unwrap();
        call.event(&RecordedEvent::Start).unwrap();
        finish(call);
        let ends = call_ends(&path);
        assert_eq!(ends.len(), 1, "{name}: exactly one call_end");
        assert_eq!(ends[0]["outcome"], expected, "{name}");
        assert_eq!(ends[0]["event_count"], 1, "{name}");
        let recording = read_recording(&path, Access::External).unwrap();
        assert_eq!(recording.calls[0].outcome.as_str(), expected, "{name}");
    }
}

#[test]
fn explicit_path_file_is_private_and_parent_mode_is_unchanged() {
    let dir = tempdir();
    let parent = dir.path().join("external");
    fs::create_dir(&parent).unwrap();
    chmod(&parent, 0o751);
    let path = parent.join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    record_call(&sink, &request("q"), &[], Outcome::Complete);
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(mode_of(&parent), 0o751);
    let lock = writer::lock_path_for(&path);
    assert_eq!(lock, parent.join("rec.jsonl.lock"));
    assert_eq!(mode_of(&lock), 0o600);
}

#[test]
fn open_refuses_a_wide_existing_file_and_a_symlink_without_chmod() {
    let dir = tempdir();
    let wide = write_private(dir.path(), "wide.jsonl", "");
    chmod(&wide, 0o644);
    let error = RecordingSink::open(&wide).unwrap_err();
    assert_eq!(
        error.reason,
        format!("recording file must have mode 0600: {}", wide.display())
    );
    assert_eq!(mode_of(&wide), 0o644);
    assert_eq!(fs::read_to_string(&wide).unwrap(), "", "nothing written");

    let target = write_private(dir.path(), "target.jsonl", "");
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let error = RecordingSink::open(&link).unwrap_err();
    assert_eq!(error.reason, "recording file must not be a symlink");
    assert_eq!(fs::read_to_string(&target).unwrap(), "", "target untouched");

    let dangling = dir.path().join("dangling.jsonl");
    std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
    assert!(RecordingSink::open(&dangling).is_err());
    assert!(
        !dir.path().join("nowhere").exists(),
        "no file created through the link"
    );
}

#[test]
fn create_managed_writes_a_private_header_with_metadata_and_never_overwrites() {
    let dir = tempdir();
    let root = dir.path();
    let path = RecordingSink::create_managed(root, "fixture").unwrap();
    assert_eq!(path, root.join("fixture.jsonl"));
    assert_eq!(mode_of(&path), 0o600);

    let recording = read_recording(&path, Access::Managed).unwrap();
    assert!(recording.calls.is_empty());
    let header = recording.header.as_object().unwrap();
    let keys: Vec<&str> = header.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "created_at",
            "format_version",
            "recording_id",
            "redaction_version",
            "type"
        ]
    );
    assert_eq!(recording.recording_id(), Some("fixture"));
    assert_eq!(header["redaction_version"], 1);
    assert_eq!(header["format_version"], 3);
    let created_at = recording.created_at().unwrap();
    let shape = regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$").unwrap();
    assert!(shape.is_match(created_at), "{created_at}");

    // The same ID again (with or without `.jsonl`) is refused, and the file is unchanged.
    let before = fs::read(&path).unwrap();
    for id in ["fixture", "fixture.jsonl"] {
        let error = RecordingSink::create_managed(root, id).unwrap_err();
        assert_eq!(error.reason, "recording already exists");
    }
    assert_eq!(fs::read(&path).unwrap(), before);

    // A sink on the managed file appends calls from index 0 under the existing header.
    let sink = RecordingSink::open(&path).unwrap();
    assert_eq!(record_call(&sink, &request("q"), &[], Outcome::Complete), 0);
    let recording = read_recording(&path, Access::Managed).unwrap();
    assert_eq!(recording.rows[0], Value::Object(header.clone()));
    assert_eq!(recording.calls.len(), 1);
}

#[test]
fn create_managed_rejects_invalid_ids_and_a_missing_root() {
    let dir = tempdir();
    for id in [
        "",
        ".",
        "..",
        "../x",
        "a/b",
        "-lead",
        "a".repeat(65).as_str(),
        "sp ace",
    ] {
        let error = RecordingSink::create_managed(dir.path(), id).unwrap_err();
        assert_eq!(error.reason, "invalid recording ID", "{id:?}");
    }
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    for id in [
        "a",
        "20260811T134502Z-3f9a0c1b",
        "x.y_z-1",
        "a".repeat(64).as_str(),
    ] {
        assert_eq!(valid_recording_id(id), Some(id), "{id:?}");
    }
    let missing = dir.path().join("missing");
    let error = RecordingSink::create_managed(&missing, "x").unwrap_err();
    assert!(error.reason.starts_with("cannot create: "), "{error}");
    assert!(!missing.exists());
}

/// Runs one thread per sink, each recording `calls` calls at once; returns (index, text) pairs.
fn write_concurrently(sinks: Vec<RecordingSink>, tag: &str, calls: usize) -> Vec<(usize, String)> {
    let barrier = Arc::new(Barrier::new(sinks.len()));
    let handles: Vec<_> = sinks
        .into_iter()
        .enumerate()
        .map(|(worker, sink)| {
            let barrier = Arc::clone(&barrier);
            let tag = tag.to_owned();
            thread::spawn(move || {
                barrier.wait();
                (0..calls)
                    .map(|i| {
                        let text = format!("{tag}{worker}-{i}");
                        let mut call = sink.begin_call(&request(&text)).unwrap();
                        for event in text_events(&text) {
                            call.event(&event).unwrap();
                            thread::yield_now();
                        }
                        let index = call.call_index();
                        call.end(Outcome::Complete).unwrap();
                        (index, text)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect()
}

#[test]
fn concurrent_writers_allocate_contiguous_parseable_calls() {
    // §13's multiprocess test with threads: 3 writers × 5 calls, each writer with its own sink
    // (its own open file descriptions, as a separate process has), so only the `flock` on the
    // lock file keeps them apart. Then 2 threads sharing one sink add 5 calls each.
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let own: Vec<RecordingSink> = (0..3)
        .map(|_| RecordingSink::open(&path).unwrap())
        .collect();
    let mut written = write_concurrently(own, "own", 5);
    written.sort();
    let first: Vec<usize> = written.iter().map(|(index, _)| *index).collect();
    assert_eq!(first, (0..15).collect::<Vec<_>>());

    let shared = RecordingSink::open(&path).unwrap();
    written.extend(write_concurrently(
        vec![shared.clone(), shared],
        "shared",
        5,
    ));
    written.sort();

    let recording = read_recording(&path, Access::External).unwrap();
    let indexes: Vec<usize> = recording.calls.iter().map(|c| c.call_index).collect();
    assert_eq!(indexes, (0..25).collect::<Vec<_>>());
    assert_eq!(written.len(), 25);
    for (index, text) in written {
        let call = &recording.calls[index];
        assert_eq!(
            call.request.context["messages"][0]["content"],
            text.as_str()
        );
        assert_eq!(call.events, text_events(&text), "events of call {index}");
    }
}

#[test]
fn appends_wait_for_the_cross_process_lock() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    // Another "process": an independent open file description holding the flock.
    let holder = File::open(writer::lock_path_for(&path)).unwrap();
    holder.lock().unwrap();
    let worker = thread::spawn(move || record_call(&sink, &request("q"), &[], Outcome::Complete));
    thread::sleep(Duration::from_millis(300));
    assert_eq!(
        rows_of(&path).len(),
        1,
        "nothing is appended while the lock is held"
    );
    holder.unlock().unwrap();
    assert_eq!(worker.join().unwrap(), 0);
    assert_eq!(rows_of(&path).len(), 3);
}

#[test]
fn a_file_cut_off_mid_call_fails_and_reads_again_once_the_tail_is_removed() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    record_call(&sink, &request("a"), &text_events("A"), Outcome::Complete);
    record_call(&sink, &request("b"), &text_events("B"), Outcome::Complete);
    let complete_len = fs::metadata(&path).unwrap().len();
    // A crash: the request and one event reach the file, call_end never does.
    let mut call = sink.begin_call(&request("c")).unwrap();
    call.event(&RecordedEvent::Start).unwrap();
    std::mem::forget(call);

    let error = read_recording(&path, Access::External).unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "recording file {} for call 2: missing call_end",
            path.display()
        )
    );
    // Truncating after the last complete call leaves a valid recording of the first two.
    OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(complete_len)
        .unwrap();
    let recording = read_recording(&path, Access::External).unwrap();
    assert_eq!(recording.calls.len(), 2);
    assert_eq!(recording.calls[1].events, text_events("B"));
}

// ---------------------------------------------------------------------------------------------
// Strict reading

const HEADER: &str = r#"{"format_version": 2, "type": "header"}"#;

fn req_row(call: i64) -> String {
    format!(
        r#"{{"call_index": {call}, "context": {{"messages": []}}, "model": {{"id": "m"}}, "options": null, "type": "request"}}"#
    )
}

fn event_row(call: i64, index: i64, payload: &str) -> String {
    format!(
        r#"{{"call_index": {call}, "event": {payload}, "event_index": {index}, "type": "event"}}"#
    )
}

fn start_row(call: i64, index: i64) -> String {
    event_row(call, index, r#"{"type": "start"}"#)
}

fn end_row(call: i64, count: i64, outcome: &str) -> String {
    format!(
        r#"{{"call_index": {call}, "event_count": {count}, "outcome": "{outcome}", "type": "call_end"}}"#
    )
}

fn lines(rows: &[&str]) -> String {
    let mut text = rows.join("\n");
    text.push('\n');
    text
}

const PATH: &str = "/recordings/r.jsonl";

fn parse_error(text: &str) -> String {
    parse_recording(text, Path::new(PATH))
        .map(|r| format!("unexpectedly valid: {} calls", r.calls.len()))
        .unwrap_or_else(|e| e.to_string())
}

#[test]
fn strict_reader_rejections_name_reason_line_and_call() {
    let (r0, r1) = (req_row(0), req_row(1));
    let (s00, s01) = (start_row(0, 0), start_row(0, 1));
    let (e0_0, e0_1) = (end_row(0, 0, "complete"), end_row(0, 1, "complete"));
    let cases: Vec<(&str, String, String)> = vec![
        (
            "duplicate header",
            lines(&[HEADER, HEADER]),
            "at line 2: duplicate header".into(),
        ),
        (
            "unknown row type",
            lines(&[HEADER, r#"{"call_index": 0, "type": "note"}"#]),
            "at line 2: unknown row type 'note'".into(),
        ),
        (
            "missing row type",
            lines(&[HEADER, r#"{"call_index": 0}"#]),
            "at line 2: unknown row type 'null'".into(),
        ),
        (
            "negative call_index",
            lines(&[HEADER, &req_row(-1)]),
            "at line 2: invalid call_index".into(),
        ),
        (
            "boolean call_index",
            lines(&[
                HEADER,
                &r0.replace("\"call_index\": 0", "\"call_index\": false"),
            ]),
            "at line 2: invalid call_index".into(),
        ),
        (
            "float call_index",
            lines(&[
                HEADER,
                &r0.replace("\"call_index\": 0", "\"call_index\": 0.0"),
            ]),
            "at line 2: invalid call_index".into(),
        ),
        (
            "string call_index",
            lines(&[
                HEADER,
                &r0.replace("\"call_index\": 0", "\"call_index\": \"0\""),
            ]),
            "at line 2: invalid call_index".into(),
        ),
        (
            "request skipping ahead",
            lines(&[HEADER, &r1]),
            "at line 2 for call 1: request call indexes must be contiguous".into(),
        ),
        (
            "duplicate request",
            lines(&[HEADER, &r0, &e0_0, &r0]),
            "at line 4 for call 0: duplicate request".into(),
        ),
        (
            "request without options",
            lines(&[HEADER, &r0.replace("\"options\": null, ", "")]),
            "at line 2 for call 0: request row is missing 'options'".into(),
        ),
        (
            "orphan event",
            lines(&[HEADER, &s00]),
            "at line 2 for call 0: orphan event".into(),
        ),
        (
            "event after call_end",
            lines(&[HEADER, &r0, &e0_0, &s00]),
            "at line 4 for call 0: event after call_end".into(),
        ),
        (
            "event index skipping ahead",
            lines(&[HEADER, &r0, &s01]),
            "at line 3 for call 0: event indexes must be contiguous".into(),
        ),
        (
            "event index repeated",
            lines(&[HEADER, &r0, &s00, &s00]),
            "at line 4 for call 0: event indexes must be contiguous".into(),
        ),
        (
            "boolean event index",
            lines(&[
                HEADER,
                &r0,
                &event_row(0, 0, r#"{"type": "start"}"#)
                    .replace("\"event_index\": 0", "\"event_index\": false"),
            ]),
            "at line 3 for call 0: event indexes must be contiguous".into(),
        ),
        (
            "event payload not an object",
            lines(&[HEADER, &r0, &event_row(0, 0, r#""start""#)]),
            "at line 3 for call 0: event payload must be an object".into(),
        ),
        (
            "unknown event type",
            lines(&[HEADER, &r0, &event_row(0, 0, r#"{"type": "texty"}"#)]),
            "at line 3 for call 0: unknown event type 'texty'".into(),
        ),
        (
            "invalid event class",
            lines(&[
                HEADER,
                &r0,
                &event_row(
                    0,
                    0,
                    r#"{"type": "toolcall_start", "index": 0, "name": "ls"}"#,
                ),
            ]),
            "at line 3 for call 0: invalid 'toolcall_start' event: missing field 'id'".into(),
        ),
        (
            "orphan call_end",
            lines(&[HEADER, &e0_0]),
            "at line 2 for call 0: orphan call_end".into(),
        ),
        (
            "duplicate call_end",
            lines(&[HEADER, &r0, &s00, &e0_1, &e0_1]),
            "at line 5 for call 0: duplicate call_end".into(),
        ),
        (
            "event_count mismatch",
            lines(&[HEADER, &r0, &s00, &end_row(0, 2, "complete")]),
            "at line 4 for call 0: call_end event_count mismatch".into(),
        ),
        (
            "invalid outcome",
            lines(&[HEADER, &r0, &end_row(0, 0, "finished")]),
            "at line 3 for call 0: invalid call_end outcome".into(),
        ),
        (
            "version 2 requires an outcome",
            lines(&[
                HEADER,
                &r0,
                r#"{"call_index": 0, "event_count": 0, "type": "call_end"}"#,
            ]),
            "at line 3 for call 0: invalid call_end outcome".into(),
        ),
        (
            "missing call_end names the first unfinished call",
            lines(&[
                HEADER,
                &r0,
                &e0_0,
                &r1,
                &req_row(2),
                &end_row(2, 0, "complete"),
            ]),
            "for call 1: missing call_end".into(),
        ),
        (
            "invalid JSON",
            lines(&[HEADER, "{\"call_index\": 0,"]),
            "at line 2: invalid JSON: EOF while parsing a value at column 17".into(),
        ),
        (
            "blank lines are skipped but counted",
            format!("{HEADER}\n\n   \n[1]\n"),
            "at line 4: row must be an object".into(),
        ),
        (
            "no header",
            lines(&[&r0, &e0_0]),
            ": has no format header on its first line".into(),
        ),
        (
            "empty file",
            String::new(),
            ": has no format header on its first line".into(),
        ),
        (
            "blank file",
            "\n \n".into(),
            ": has no format header on its first line".into(),
        ),
        (
            "every line is checked before the header",
            lines(&[&r0, "not json"]),
            "at line 2: invalid JSON: expected ident at column 2".into(),
        ),
        (
            "unsupported version",
            lines(&[r#"{"format_version": 4, "type": "header"}"#]),
            ": was written in format version 4; this build replays version 3".into(),
        ),
        (
            "missing version",
            lines(&[r#"{"type": "header"}"#]),
            ": was written in format version null; this build replays version 3".into(),
        ),
        (
            "version as a string",
            lines(&[r#"{"format_version": "2", "type": "header"}"#]),
            ": was written in format version \"2\"; this build replays version 3".into(),
        ),
        (
            "version 1 with structured output",
            lines(&[
                r#"{"format_version": 1, "type": "header"}"#,
                r#"{"call_index": 0, "context": {}, "model": {}, "options": {"response_format": {"type": "json_schema"}, "signal": null}, "type": "request"}"#,
            ]),
            "at line 2 for call 0: format version 1 cannot replay structured response_format"
                .into(),
        ),
    ];
    for (name, text, expected) in cases {
        let expected = if expected.starts_with(':') {
            format!("recording file {PATH}{expected}")
        } else {
            format!("recording file {PATH} {expected}")
        };
        assert_eq!(parse_error(&text), expected, "case: {name}");
    }
}

#[test]
fn strict_reader_accepts_a_valid_file_and_keeps_every_row() {
    let text = lines(&[
        r#"{"created_at": "2026-08-11T13:45:02.123456Z", "format_version": 2, "recording_id": "r", "type": "header"}"#,
        "",
        &req_row(0),
        &req_row(1),
        &start_row(1, 0),
        &start_row(0, 0),
        &end_row(1, 1, "abandoned"),
        &end_row(0, 1, "complete"),
    ]);
    let recording = parse_recording(&text, Path::new(PATH)).unwrap();
    assert_eq!(recording.path, Path::new(PATH));
    assert_eq!(recording.format_version, 2);
    assert_eq!(recording.rows.len(), 7);
    assert_eq!(recording.rows[0], recording.header);
    assert_eq!(recording.recording_id(), Some("r"));
    let summary: Vec<(usize, Outcome, usize, usize)> = recording
        .calls
        .iter()
        .map(|c| (c.call_index, c.outcome, c.events.len(), c.line))
        .collect();
    assert_eq!(
        summary,
        [(0, Outcome::Complete, 1, 3), (1, Outcome::Abandoned, 1, 4)]
    );
    assert_eq!(recording.calls[0].request.options, Value::Null);
}

const V1_ORDINARY: &str = concat!(
    "{\"format_version\": 1, \"type\": \"header\"}\n",
    "{\"call_index\": 0, \"context\": {\"messages\": [{\"content\": \"hello\", \"role\": \"user\"}]}, \"model\": {\"id\": \"m\"}, \"options\": {\"on_payload\": null, \"response_format\": null, \"signal\": null, \"temperature\": 0}, \"type\": \"request\"}\n",
    "{\"call_index\": 0, \"event\": {\"type\": \"start\"}, \"event_index\": 0, \"type\": \"event\"}\n",
    "{\"call_index\": 0, \"event\": {\"message\": {}, \"type\": \"done\"}, \"event_index\": 1, \"type\": \"event\"}\n",
    "{\"call_index\": 0, \"event_count\": 2, \"type\": \"call_end\"}\n",
);

#[test]
fn v1_ordinary_recording_remains_replayable() {
    let dir = tempdir();
    let path = write_private(dir.path(), "v1.jsonl", V1_ORDINARY);
    let replayer = StrictReplayer::load(&path, Access::External).unwrap();
    let call = &replayer.recording().calls[0];
    assert_eq!(replayer.recording().format_version, 1);
    assert_eq!(
        call.outcome,
        Outcome::Complete,
        "missing outcome reads as complete"
    );
    assert_eq!(
        call.request.options,
        json!({"response_format": null, "temperature": 0}),
        "signal and on_payload are dropped"
    );
    // The raw rows are kept as written.
    assert!(
        replayer.recording().rows[1]["options"]
            .get("signal")
            .is_some()
    );

    let incoming = RecordedRequest::new(
        json!({"id": "m"}),
        json!({"messages": [{"role": "user", "content": "hello"}]}),
        json!({"temperature": 0, "response_format": null, "signal": "runtime"}),
    );
    let events = replayer.next_call(&incoming).unwrap();
    assert_eq!(events.len(), 2);
    replayer.assert_consumed().unwrap();
}

#[test]
fn v1_structured_recording_is_rejected_explicitly() {
    let text = V1_ORDINARY.replace(
        "\"response_format\": null",
        "\"response_format\": {\"schema\": {}}",
    );
    let dir = tempdir();
    let path = write_private(dir.path(), "v1.jsonl", &text);
    let message = StrictReplayer::load(&path, Access::External)
        .unwrap_err()
        .to_string();
    let pattern = regex::Regex::new("version 1.*structured").unwrap();
    assert!(pattern.is_match(&message), "{message}");
}

// ---------------------------------------------------------------------------------------------
// Read permissions

fn valid_file(dir: &Path, name: &str) -> PathBuf {
    write_private(
        dir,
        name,
        &lines(&[HEADER, &req_row(0), &end_row(0, 0, "complete")]),
    )
}

#[test]
fn external_replay_rejects_wide_permissions_without_chmod() {
    let dir = tempdir();
    for mode in [0o644, 0o400, 0o640, 0o700, 0o4600] {
        let path = valid_file(dir.path(), &format!("m{mode:o}.jsonl"));
        chmod(&path, mode);
        let error = read_recording(&path, Access::External).unwrap_err();
        assert_eq!(
            error.reason,
            format!("recording file must have mode 0600, found {mode:04o}"),
            "mode {mode:o}"
        );
        assert_eq!(mode_of(&path), mode, "mode {mode:o} left unchanged");
    }
}

#[test]
fn managed_replay_repairs_wide_permissions() {
    let dir = tempdir();
    for mode in [0o644, 0o666, 0o400] {
        let path = valid_file(dir.path(), &format!("m{mode:o}.jsonl"));
        chmod(&path, mode);
        let replayer = StrictReplayer::load(&path, Access::Managed).unwrap();
        assert_eq!(replayer.recorded_calls(), 1);
        assert_eq!(mode_of(&path), 0o600, "mode {mode:o} tightened");
    }
}

#[test]
fn reading_refuses_symlinks_and_non_regular_files() {
    let dir = tempdir();
    let target = valid_file(dir.path(), "target.jsonl");
    chmod(&target, 0o644);
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for access in [Access::Managed, Access::External] {
        let error = read_recording(&link, access).unwrap_err();
        assert_eq!(
            error.reason, "recording file must not be a symlink",
            "{access:?}"
        );
    }
    assert_eq!(
        mode_of(&target),
        0o644,
        "the target is never tightened through a link"
    );

    let folder = dir.path().join("folder.jsonl");
    fs::create_dir(&folder).unwrap();
    let error = read_recording(&folder, Access::Managed).unwrap_err();
    assert_eq!(error.reason, "recording file must be a regular file");

    let error = read_recording(&dir.path().join("absent.jsonl"), Access::External).unwrap_err();
    assert!(error.reason.starts_with("cannot open: "), "{error}");
}

#[test]
fn reading_reports_invalid_utf8_with_its_line() {
    let dir = tempdir();
    let path = dir.path().join("bad.jsonl");
    let mut bytes = format!("{HEADER}\n{}\n", req_row(0)).into_bytes();
    bytes.extend_from_slice(b"{\"x\": \"\xff\"}\n");
    fs::write(&path, bytes).unwrap();
    chmod(&path, 0o600);
    let error = read_recording(&path, Access::External).unwrap_err();
    assert_eq!(
        (error.line, error.reason.as_str()),
        (Some(3), "invalid JSON: invalid UTF-8")
    );
}

// ---------------------------------------------------------------------------------------------
// Strict replay

/// Records `calls` (request text, response text, outcome) and loads a replayer over them.
fn recorded(dir: &Path, calls: &[(&str, &str, Outcome)]) -> StrictReplayer {
    let path = dir.join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    for (question, answer, outcome) in calls {
        record_call(&sink, &request(question), &text_events(answer), *outcome);
    }
    StrictReplayer::load(&path, Access::External).unwrap()
}

fn mismatch(result: Result<Vec<RecordedEvent>, StrictReplayError>) -> ReplayMismatch {
    match result {
        Err(StrictReplayError::Mismatch(mismatch)) => mismatch,
        other => panic!("expected a mismatch, got {other:?}"),
    }
}

#[test]
fn a_two_call_recording_replays_in_order() {
    let dir = tempdir();
    let replayer = recorded(
        dir.path(),
        &[
            ("first", "one", Outcome::Complete),
            ("second", "two", Outcome::Complete),
        ],
    );
    assert_eq!((replayer.call_count(), replayer.recorded_calls()), (0, 2));
    assert_eq!(
        replayer.next_call(&request("first")).unwrap(),
        text_events("one")
    );
    assert_eq!(replayer.call_count(), 1);
    assert_eq!(
        replayer.next_call(&request("second")).unwrap(),
        text_events("two")
    );
    assert_eq!(replayer.call_count(), 2);
    replayer.assert_consumed().unwrap();
}

#[test]
fn replay_names_the_call_and_field_of_the_first_difference() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    record_call(
        &sink,
        &request("hello"),
        &text_events("hi"),
        Outcome::Complete,
    );
    // Hand-edit the recorded prompt.
    let edited = fs::read_to_string(&path)
        .unwrap()
        .replace("\"hello\"", "\"goodbye\"");
    fs::write(&path, edited).unwrap();

    let replayer = StrictReplayer::load(&path, Access::External).unwrap();
    let found = mismatch(replayer.next_call(&request("hello")));
    assert_eq!(found.call_index, 0);
    assert_eq!(found.field_path, "context.messages[0].content");
    assert_eq!(found.recorded, Some(json!("goodbye")));
    assert_eq!(found.incoming, Some(json!("hello")));
    assert_eq!(found.event_index, None);
    let message = found.to_string();
    assert_eq!(
        message,
        "replay mismatch at call 0, field context.messages[0].content"
    );
    assert!(!message.contains("goodbye") && !message.contains("hello"));
    // The same error through the wrapper type.
    let wrapped = replayer.next_call(&request("hello")).unwrap_err();
    assert_eq!(wrapped.to_string(), message);
}

#[test]
fn replay_mismatch_does_not_consume_the_recorded_call() {
    let dir = tempdir();
    let replayer = recorded(dir.path(), &[("right", "ok", Outcome::Complete)]);
    for _ in 0..2 {
        let found = mismatch(replayer.next_call(&request("wrong")));
        assert_eq!(found.call_index, 0);
        assert_eq!(replayer.call_count(), 0);
    }
    assert_eq!(
        replayer.next_call(&request("right")).unwrap(),
        text_events("ok")
    );
    assert_eq!(replayer.call_count(), 1);
}

#[test]
fn running_past_the_end_is_a_call_index_mismatch() {
    let dir = tempdir();
    let replayer = recorded(dir.path(), &[("q", "a", Outcome::Complete)]);
    replayer.next_call(&request("q")).unwrap();
    let found = mismatch(replayer.next_call(&request("q")));
    assert_eq!(
        found,
        ReplayMismatch {
            call_index: 1,
            field_path: "call_index".into(),
            recorded: Some(json!("1 recorded calls")),
            incoming: Some(json!("call 1")),
            event_index: None,
        }
    );
    assert_eq!(
        found.to_string(),
        "replay mismatch at call 1, field call_index"
    );
    assert_eq!(replayer.call_count(), 1);
}

#[test]
fn requests_compare_model_then_context_then_options() {
    let dir = tempdir();
    let replayer = recorded(dir.path(), &[("q", "a", Outcome::Complete)]);
    let base = request("q");
    let with = |model: Option<Value>, context: Option<Value>, options: Option<Value>| {
        RecordedRequest::new(
            model.unwrap_or_else(|| base.model.clone()),
            context.unwrap_or_else(|| base.context.clone()),
            options.unwrap_or_else(|| base.options.clone()),
        )
    };
    let cases = [
        (
            with(
                Some(json!({"id": "other"})),
                Some(json!({})),
                Some(json!(null)),
            ),
            "model.api",
        ),
        (
            with(None, Some(json!({"messages": []})), Some(json!(null))),
            "context.messages[0]",
        ),
        (
            with(None, None, Some(json!({"temperature": 1}))),
            "options.temperature",
        ),
        (with(None, None, Some(json!(null))), "options"),
        (with(Some(json!([1])), None, None), "model"),
    ];
    for (incoming, path) in cases {
        let found = mismatch(replayer.next_call(&incoming));
        assert_eq!(found.field_path, path);
    }
    assert_eq!(replayer.call_count(), 0);
}

#[test]
fn timestamp_fields_are_skipped_at_every_depth_and_only_they_are() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let at = |t: u64, extra: Value| {
        RecordedRequest::new(
            json!({"id": "m", "timestamp": t}),
            json!({"messages": [{"role": "user", "content": "q", "timestamp": t}], "timestamp": t, "timestamps": extra}),
            json!({"timestamp": t}),
        )
    };
    record_call(
        &sink,
        &at(1, json!(1)),
        &text_events("a"),
        Outcome::Complete,
    );
    record_call(
        &sink,
        &at(1, json!(1)),
        &text_events("b"),
        Outcome::Complete,
    );
    let replayer = StrictReplayer::load(&path, Access::External).unwrap();

    assert_eq!(
        replayer.next_call(&at(999, json!(1))).unwrap(),
        text_events("a")
    );
    // A timestamp missing on the incoming side is skipped too.
    let mut without = at(5, json!(1));
    without.context["messages"][0]
        .as_object_mut()
        .unwrap()
        .remove("timestamp");
    without.model.as_object_mut().unwrap().remove("timestamp");
    let found = mismatch(replayer.next_call(&at(5, json!(2))));
    assert_eq!(
        found.field_path, "context.timestamps",
        "only `timestamp` is skipped"
    );
    assert_eq!(replayer.next_call(&without).unwrap(), text_events("b"));
}

#[test]
fn replay_assert_consumed_reports_remaining_calls() {
    let dir = tempdir();
    let replayer = recorded(
        dir.path(),
        &[
            ("a", "1", Outcome::Complete),
            ("b", "2", Outcome::Complete),
            ("c", "3", Outcome::Complete),
        ],
    );
    replayer.next_call(&request("a")).unwrap();
    let found = replayer.assert_consumed().unwrap_err();
    assert_eq!(
        found,
        ReplayMismatch {
            call_index: 1,
            field_path: "remaining_calls".into(),
            recorded: Some(json!("all recorded calls consumed")),
            incoming: Some(json!("2 unconsumed call(s)")),
            event_index: None,
        }
    );
    assert_eq!(
        found.to_string(),
        "replay mismatch at call 1, field remaining_calls; unconsumed calls remain"
    );
}

#[test]
fn a_recorded_call_that_did_not_complete_fails_and_is_consumed() {
    for outcome in [Outcome::Error, Outcome::Cancelled, Outcome::Abandoned] {
        let dir = tempdir();
        let replayer = recorded(
            dir.path(),
            &[("a", "1", outcome), ("b", "2", Outcome::Complete)],
        );
        let error = replayer.next_call(&request("a")).unwrap_err();
        let StrictReplayError::Recording(error) = error else {
            panic!("expected a recording file error, got {error:?}");
        };
        assert_eq!(error.reason, format!("recorded call ended with {outcome}"));
        assert_eq!((error.call_index, error.line), (Some(0), None));
        assert_eq!(replayer.call_count(), 1, "{outcome}: consumed");
        assert_eq!(replayer.next_call(&request("b")).unwrap(), text_events("2"));
    }
}

#[test]
fn replay_mismatch_display_is_bounded_escaped_and_omits_values() {
    let huge = "v".repeat(10_000);
    let make = |path: &str, event_index: Option<usize>| ReplayMismatch {
        call_index: usize::MAX,
        field_path: path.to_owned(),
        recorded: Some(json!(huge)),
        incoming: Some(json!({"schema": huge})),
        event_index,
    };
    let long = format!("context.{}", "k".repeat(2_000));
    let cases: Vec<(&str, ReplayMismatch, String)> = vec![
        (
            "newline escaped",
            make("context.messages[0].a\nb", None),
            format!(
                "replay mismatch at call {}, field context.messages[0].a\\nb",
                usize::MAX
            ),
        ),
        (
            "secret in the path redacted",
            make("model.headers.Bearer sk-abcdefgh12345678", None),
            format!(
                "replay mismatch at call {}, field model.headers.{P}",
                usize::MAX
            ),
        ),
        (
            "quotes, backslashes, control and non-ASCII characters escaped",
            make("a\"b\\c\td\u{1}é😀", Some(7)),
            format!(
                "replay mismatch at call {}, recorded event 7, field a\\\"b\\\\c\\td\\u0001\\u00e9\\ud83d\\ude00",
                usize::MAX
            ),
        ),
        (
            "long path capped at 384 characters with ...",
            make(&long, Some(usize::MAX)),
            format!(
                "replay mismatch at call {}, recorded event {}, field {}...",
                usize::MAX,
                usize::MAX,
                &long[..381]
            ),
        ),
        (
            "the cap never cuts an escape in half",
            make(&format!("{}\n\n\n", "a".repeat(380)), None),
            format!(
                "replay mismatch at call {}, field {}...",
                usize::MAX,
                "a".repeat(380)
            ),
        ),
        (
            "a path of exactly 384 characters is kept whole",
            make(&"p".repeat(384), None),
            format!(
                "replay mismatch at call {}, field {}",
                usize::MAX,
                "p".repeat(384)
            ),
        ),
    ];
    for (name, found, expected) in cases {
        let message = found.to_string();
        assert_eq!(message, expected, "{name}");
        assert!(
            message.chars().count() <= 512,
            "{name}: {} chars",
            message.len()
        );
        assert!(!message.contains('\n'), "{name}");
        assert!(
            !message.contains("vvvv") && !message.contains("schema"),
            "{name}"
        );
        assert!(!message.contains("sk-abcdefgh"), "{name}");
        // The values stay available as fields.
        assert_eq!(found.recorded, Some(json!(huge)));
    }
    // The longest possible message: both indexes at their maximum, a capped path, the suffix.
    let worst = ReplayMismatch {
        field_path: "remaining_calls".into(),
        ..make("", Some(usize::MAX))
    };
    let worst = format!("{worst}").replace("remaining_calls", &"x".repeat(384));
    assert!(worst.len() <= 512, "{}", worst.len());
}

#[test]
fn a_real_mismatch_path_with_a_newline_key_is_escaped() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let odd =
        |v: i64| RecordedRequest::new(json!({"id": "m"}), json!({"odd\nkey": v}), Value::Null);
    record_call(&sink, &odd(1), &text_events("a"), Outcome::Complete);
    let replayer = StrictReplayer::load(&path, Access::External).unwrap();
    let found = mismatch(replayer.next_call(&odd(2)));
    assert_eq!(found.field_path, "context.odd\nkey");
    assert_eq!(
        found.to_string(),
        "replay mismatch at call 0, field context.odd\\nkey"
    );
}

#[test]
fn an_incoming_request_with_a_real_key_matches_the_redacted_recording() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let live = RecordedRequest::new(
        json!({"id": "m", "headers": {"Authorization": "Bearer live-token-abc123"}}),
        json!({"messages": [{"role": "user", "content": "use sk-livekey123456789 and key points"}]}),
        json!({"api_key": "sk-livekey123456789", "signal": "runtime-only"}),
    );
    record_call(&sink, &live, &text_events("ok"), Outcome::Complete);
    let bytes = fs::read_to_string(&path).unwrap();
    assert!(!bytes.contains("sk-livekey123456789") && !bytes.contains("live-token-abc123"));

    let replayer = StrictReplayer::load(&path, Access::External).unwrap();
    assert_eq!(replayer.next_call(&live).unwrap(), text_events("ok"));
}

#[test]
fn structured_schema_changes_fail_at_the_exact_path_before_any_event() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open(&path).unwrap();
    let structured = |answer_type: &str| {
        RecordedRequest::new(
            json!({"id": "m"}),
            json!({"messages": []}),
            json!({"response_format": {"type": "json_schema", "schema": {
                "type": "object", "properties": {"answer": {"type": answer_type}}}}}),
        )
    };
    record_call(
        &sink,
        &structured("string"),
        &text_events("{}"),
        Outcome::Complete,
    );
    let replayer = StrictReplayer::load(&path, Access::External).unwrap();
    assert_eq!(
        replayer.recording().calls[0].request.options,
        structured("string").options,
        "the full response_format is recorded"
    );
    for _ in 0..2 {
        let found = mismatch(replayer.next_call(&structured("integer")));
        assert_eq!(
            found.field_path,
            "options.response_format.schema.properties.answer.type"
        );
        assert!(!found.to_string().contains("integer"));
        assert_eq!(replayer.call_count(), 0);
    }
    replayer.next_call(&structured("string")).unwrap();
    replayer.assert_consumed().unwrap();
}

#[test]
fn concurrent_callers_are_served_each_call_once() {
    let dir = tempdir();
    let calls: Vec<(&str, &str, Outcome)> =
        (0..8).map(|_| ("same", "a", Outcome::Complete)).collect();
    let replayer = Arc::new(recorded(dir.path(), &calls));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let replayer = Arc::clone(&replayer);
            thread::spawn(move || replayer.next_call(&request("same")).is_ok())
        })
        .collect();
    let served = handles
        .into_iter()
        .map(|h| h.join().unwrap())
        .filter(|ok| *ok)
        .count();
    assert_eq!(served, 8);
    assert_eq!(replayer.call_count(), 8);
    assert!(replayer.next_call(&request("same")).is_err());
    replayer.assert_consumed().unwrap();
}

#[test]
fn loading_applies_the_permission_rules() {
    let dir = tempdir();
    let path = valid_file(dir.path(), "rec.jsonl");
    chmod(&path, 0o644);
    let error = StrictReplayer::load(&path, Access::External).unwrap_err();
    assert!(
        error
            .reason
            .starts_with("recording file must have mode 0600")
    );
    assert_eq!(mode_of(&path), 0o644);
    StrictReplayer::load(&path, Access::Managed).unwrap();
    assert_eq!(mode_of(&path), 0o600);
}

/// A request whose third message is an assistant tool call with `arguments` as given.
fn tool_call_request(arguments: &str) -> RecordedRequest {
    RecordedRequest::new(
        json!({"api": "openai-completions", "id": "test-model"}),
        json!({"messages": [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "write it"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "write_file", "arguments": arguments}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "OK"},
        ]}),
        json!({"temperature": 0}),
    )
}

#[test]
fn tool_call_arguments_compare_as_json_values() {
    // As streamed: the model's key order and spacing.
    let recorded = r#"{"path": "/mnt/a.txt", "content": "hi"}"#;
    // (name, incoming arguments, the mismatching field or None)
    let cases = [
        (
            "re-serialised with sorted keys and no spaces (replayed non-streamed)",
            r#"{"content":"hi","path":"/mnt/a.txt"}"#,
            None,
        ),
        ("the same text", recorded, None),
        (
            "a different value",
            r#"{"content":"hi","path":"/mnt/b.txt"}"#,
            Some("context.messages[2].tool_calls[0].function.arguments.path"),
        ),
        (
            "a missing key",
            r#"{"path":"/mnt/a.txt"}"#,
            Some("context.messages[2].tool_calls[0].function.arguments.content"),
        ),
        (
            "text that is not JSON",
            r#"{"path": "/mnt/a.txt""#,
            Some("context.messages[2].tool_calls[0].function.arguments"),
        ),
    ];
    for (name, incoming, expected) in cases {
        let dir = tempdir();
        let path = dir.path().join("rec.jsonl");
        let sink = RecordingSink::open(&path).unwrap();
        record_call(
            &sink,
            &tool_call_request(recorded),
            &text_events("done"),
            Outcome::Complete,
        );
        let replayer = StrictReplayer::load(&path, Access::External).unwrap();
        let result = replayer.next_call(&tool_call_request(incoming));
        match expected {
            None => assert!(result.is_ok(), "{name}: {result:?}"),
            Some(field) => assert_eq!(mismatch(result).public_path(), field, "{name}"),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Remembering what was written

/// A remembering sink holds exactly what the strict reader reads back from its file (keys sorted
/// at every depth, payloads redacted, outcomes from `end` and from drop, the calls a file held
/// before it was opened), so a recorder builds its fixture without reading the file.
#[test]
fn a_remembering_sink_holds_what_the_reader_reads_back() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    // A call written before this sink opened the file.
    record_call(
        &RecordingSink::open(&path).unwrap(),
        &request("earlier"),
        &text_events("before"),
        Outcome::Complete,
    );
    let sink = RecordingSink::open_remembering(&path).unwrap();
    let unsorted = RecordedRequest::new(
        json!({"model": "m", "api": "openai-completions"}),
        json!({"z": 1, "a": {"y": [{"d": 1, "c": 2}], "b": "sk-proj-abcdefghijklmnopqrstuvwx"}}),
        json!({"signal": "x", "temperature": 0.5}),
    );
    let done = json!({"type": "done", "message": {"role": "assistant", "tool_calls": [
        {"name": "ls", "args": {"path": "/", "depth": 1.0}, "id": "c1"}], "content": ""}});
    record_call(
        &sink,
        &unsorted,
        &[event(json!({"type": "start"})), event(done)],
        Outcome::Complete,
    );
    let error = json!({"type": "error", "status": 429, "message": "Error code: 429 - slow"});
    record_call(&sink, &request("q"), &[event(error)], Outcome::Error);
    let mut dropped = sink.begin_call(&request("gone")).unwrap();
    dropped.event(&event(json!({"type": "start"}))).unwrap();
    drop(dropped);
    let read = read_recording(&path, Access::External).unwrap();
    assert_eq!(sink.remembered().unwrap(), read.calls);
    assert_eq!(
        read.calls.len(),
        4,
        "the earlier call and three of this sink"
    );
    // Key order is part of equality here: a fixture is written in its values' order.
    let remembered = serde_json::to_string(&sink.remembered().unwrap()[1].request.context);
    let read_back = serde_json::to_string(&read.calls[1].request.context);
    assert_eq!(remembered.unwrap(), read_back.unwrap());
    assert!(
        RecordingSink::open(&path)
            .unwrap()
            .remembered()
            .unwrap()
            .is_empty(),
        "a sink that does not remember holds nothing"
    );
}

/// A call whose `call_end` is not written yet is the reader's `missing call_end` error.
#[test]
fn a_remembered_call_without_its_end_is_the_reader_s_error() {
    let dir = tempdir();
    let path = dir.path().join("rec.jsonl");
    let sink = RecordingSink::open_remembering(&path).unwrap();
    let open = sink.begin_call(&request("q")).unwrap();
    let from_memory = sink.remembered().expect_err("unfinished").to_string();
    let from_file = read_recording(&path, Access::External)
        .expect_err("unfinished")
        .to_string();
    assert_eq!(from_memory, from_file);
    drop(open);
}

/// Exchanges of the other boundaries (MCP, HTTP, embeddings) go into the same file as `exchange`
/// rows: redacted on the way in, read back in order, carried into the fixture as they are, and
/// refused in a file whose header is older than the row.
#[test]
fn exchange_rows_are_redacted_read_back_in_order_and_built_into_the_fixture() {
    use crate::exchange::{BoundaryKind, ExchangeCall};
    let dir = tempdir();
    let path = dir.path().join("r.jsonl");
    let sink = RecordingSink::open_remembering(&path).expect("open");
    let exchanges = [
        ExchangeCall::new(
            BoundaryKind::Http,
            "tavily",
            "POST /search",
            json!({"body": {"api_key": "tvly-secretsecret123", "query": "Paris"}}),
        )
        .answered(json!({"status": 200, "body": "sunny"})),
        ExchangeCall::new(
            BoundaryKind::Mcp,
            "files",
            "tools/call read",
            json!({"name": "read"}),
        )
        .answered(json!({"result": {"content": []}})),
    ];
    let written: Vec<_> = (exchanges.iter())
        .map(|e| sink.write_exchange(e).expect("written"))
        .collect();
    assert_eq!(written[0].request["body"]["api_key"], json!(P));
    assert_eq!(written[1], exchanges[1]);
    let bytes = fs::read_to_string(&path).unwrap();
    assert!(!bytes.contains("tvly-secretsecret123"), "{bytes}");

    let recording = read_recording(&path, Access::External).expect("reads");
    assert_eq!(recording.exchanges, written);
    assert_eq!(sink.remembered_exchanges(), written);
    let scenario = crate::Scenario::new("s", crate::UiMode::Flash, "p");
    let (fixture, _) = crate::build_fixture(&recording, &scenario).expect("built");
    assert_eq!(fixture.exchanges, written);
    let text = fixture.to_pretty_json();
    let again = crate::Fixture::from_json_str(&text, Path::new("f.json")).expect("loads");
    assert_eq!(again.exchanges, written);
    assert_eq!(again.to_pretty_json(), text);

    let old = write_private(
        dir.path(),
        "old.jsonl",
        &format!(
            "{HEADER}\n{}\n",
            json!({"type": "exchange", "exchange_index": 0, "exchange": written[1]})
        ),
    );
    let err = read_recording(&old, Access::External).expect_err("a v2 file has no exchange rows");
    assert!(
        err.to_string()
            .contains("an exchange row needs format version 3"),
        "{err}"
    );
}
