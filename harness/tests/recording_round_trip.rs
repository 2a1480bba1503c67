//! The recording format is the core's own (`docs/recording-format.md` §2.2): a recording written
//! before the format had its own typed event reads and writes back byte for byte through
//! `replay_core::recording::RecordedEvent`.
//!
//! No recording file is shipped, so the recordings are made from every shipped fixture
//! (`fixtures/`, `examples/*/fixtures/`): each turn as the two recorders wrote it before the
//! event was typed, in their own producers' forms, spelled here independently of the core's
//! type. The in-process recorder wrote the gateway's stream events (a flat message dump in
//! `done`, a failure with `error_type` and `status`, `null` when none); the model server wrote
//! `model_wire`'s own serde form of the codec's events (still derived there, so this test reads
//! that form as it is) and a fixture's failure the same way. Each recording is read, each call
//! written again through a fresh sink from the typed events alone, and the two files compared.

use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use gateway_under_test::messages::Message;
use model_wire::chat_completions::{Answer as WireAnswer, message_fields};
use replay_core::recording::{
    Access, Outcome, RecordedEvent, RecordedRequest, RecordingSink, read_recording,
};
use replay_core::{Answer, Fixture, RecordedError, to_python_json};
use serde_json::{Value, json};

/// Every shipped fixture.
fn shipped_fixtures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut folders = vec![root.join("fixtures")];
    for example in fs::read_dir(root.join("examples")).expect("examples/") {
        folders.push(example.expect("an example").path().join("fixtures"));
    }
    let mut files: Vec<PathBuf> = folders
        .iter()
        .filter_map(|folder| fs::read_dir(folder).ok())
        .flatten()
        .map(|entry| entry.expect("a fixture").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
}

/// The in-process recorder's events for a recorded answer, as the gateway's serde-derived
/// stream events were written: the message in one piece (`one_chunk_events`), `done` with its
/// flat dump.
fn in_process_events(output: &Value) -> Vec<Value> {
    let message = Message::from_json(output).expect("a fixture output is a message");
    let mut events = vec![json!({"type": "start"})];
    let text = message.text();
    if !text.is_empty() {
        events.push(json!({"type": "text_start"}));
        events.push(json!({"type": "text_delta", "delta": text}));
        events.push(json!({"type": "text_end"}));
    }
    for (index, call) in message.tool_calls.iter().enumerate() {
        events.push(
            json!({"type": "toolcall_start", "index": index, "id": call.id,
                           "name": call.name}),
        );
        events.push(json!({"type": "toolcall_delta", "index": index,
                           "delta": call.args.to_string()}));
        events.push(json!({"type": "toolcall_end", "index": index}));
    }
    events.push(json!({"type": "done", "message": message.to_dump()}));
    events
}

/// The model server's events for a recorded answer: the codec's events in `model_wire`'s own
/// serde form between `start` and `done`.
fn model_server_events(output: &Value) -> Vec<Value> {
    let answer = WireAnswer::from_ai_message(output);
    let mut events = vec![json!({"type": "start"})];
    for event in answer.events() {
        events.push(serde_json::to_value(&event).expect("a codec event is JSON"));
    }
    events.push(json!({"type": "done", "message": Value::Object(message_fields(output))}));
    events
}

/// A recorded failure as both recorders wrote it: `status` always (`null` when none),
/// `in_stream` only when true; and as the model server wrote an unreadable answer: no `status`.
fn failure_events(error: &RecordedError) -> Vec<Vec<Value>> {
    let mut event = json!({"type": "error", "message": error.message,
                           "error_type": error.error_type, "status": error.status});
    if error.in_stream {
        event["in_stream"] = json!(true);
    }
    let without_status = json!({"type": "error", "message": error.message,
                                "error_type": error.error_type});
    vec![
        vec![json!({"type": "start"}), event],
        vec![json!({"type": "start"}), without_status],
    ]
}

/// A recording file of `calls`, row by row as the writer lays it out.
fn write_by_hand(path: &Path, calls: &[(Vec<Value>, Outcome)]) {
    let mut text = String::from("{\"format_version\": 3, \"type\": \"header\"}\n");
    let mut row = |value: Value| {
        text.push_str(&to_python_json(&value));
        text.push('\n');
    };
    for (call_index, (events, outcome)) in calls.iter().enumerate() {
        row(
            json!({"call_index": call_index, "context": {"n": call_index}, "model": {"name": "m"},
                   "options": null, "type": "request"}),
        );
        for (event_index, event) in events.iter().enumerate() {
            row(
                json!({"call_index": call_index, "event": event, "event_index": event_index,
                       "type": "event"}),
            );
        }
        row(
            json!({"call_index": call_index, "event_count": events.len(),
                   "outcome": outcome.to_string(), "type": "call_end"}),
        );
    }
    fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut file| std::io::Write::write_all(&mut file, text.as_bytes()))
        .expect("write the recording");
}

#[test]
fn every_shipped_fixture_as_either_recorder_wrote_it_reads_and_writes_back_byte_for_byte() {
    let fixtures = shipped_fixtures();
    assert!(fixtures.len() >= 10, "{fixtures:?}");
    let folder = tempfile::tempdir().expect("tempdir");
    for (n, path) in fixtures.iter().enumerate() {
        let fixture = Fixture::load(path).expect("a shipped fixture loads");
        let mut calls: Vec<(Vec<Value>, Outcome)> = Vec::new();
        for turn in &fixture.turns {
            match &turn.answer {
                Answer::Output(output) => {
                    calls.push((in_process_events(output), Outcome::Complete));
                    calls.push((model_server_events(output), Outcome::Complete));
                }
                Answer::Error(error) => {
                    for events in failure_events(error) {
                        calls.push((events, Outcome::Error));
                    }
                }
            }
        }
        let before = folder.path().join(format!("{n}.before.jsonl"));
        write_by_hand(&before, &calls);
        let recording = read_recording(&before, Access::External)
            .unwrap_or_else(|err| panic!("{}: {err}", path.display()));

        let after = folder.path().join(format!("{n}.after.jsonl"));
        let sink = RecordingSink::open(&after).expect("sink");
        for call in &recording.calls {
            let request = RecordedRequest::new(
                call.request.model.clone(),
                call.request.context.clone(),
                call.request.options.clone(),
            );
            let mut writer = sink.begin_call(&request).expect("begin");
            for event in &call.events {
                let written = writer.event(event).expect("event");
                assert_eq!(
                    &written,
                    event,
                    "{}: a fixture holds no secret",
                    path.display()
                );
            }
            writer.end(call.outcome).expect("end");
        }
        let (before, after) = (
            fs::read_to_string(&before).unwrap(),
            fs::read_to_string(&after).unwrap(),
        );
        for (line, (was, is)) in before.lines().zip(after.lines()).enumerate() {
            assert_eq!(was, is, "{} line {}", path.display(), line + 1);
        }
        assert_eq!(before, after, "{}", path.display());
    }
}

#[test]
fn an_in_stream_false_is_read_and_left_out_when_written() {
    // The one form no recorder wrote that the typed event does not keep byte for byte: a
    // written-out `in_stream: false` means what its absence means, and is written as absence.
    let folder = tempfile::tempdir().expect("tempdir");
    let before = folder.path().join("before.jsonl");
    let event = json!({"type": "error", "message": "m", "error_type": "E", "in_stream": false});
    write_by_hand(&before, &[(vec![event.clone()], Outcome::Error)]);
    let recording = read_recording(&before, Access::External).expect("readable");
    assert_ne!(recording.calls[0].events[0].to_value(), event);
    assert_eq!(
        recording.calls[0].events[0],
        RecordedEvent::parse(&json!({"type": "error", "message": "m", "error_type": "E"})).unwrap()
    );
}
