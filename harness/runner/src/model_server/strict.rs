//! Strict recording replay (`Mode::Recording`): a recording made by this server in record mode,
//! served call by call with the core's strict replay, each request compared field by field in
//! its wire's own terms (`WireRequest::recorded`); Chat Completions chunks go back as recorded.

use std::path::Path;
use std::sync::Arc;

use async_trait::async_trait;
use axum::http::StatusCode;
use parking_lot::Mutex;
use serde_json::Value;

use replay_core::DEFAULT_CALLER;
use replay_core::recording::{
    Access, Outcome, Recording, StrictReplayError, StrictReplayer, read_recording,
};

use super::answer;
use super::backend::{Answered, Backend, Call, ResetDone, ResetRefused};
use super::client::ServerState;
use super::problems::Problem;
use super::request::Wire;
use super::shared::ModelServerError;

/// Strict replay of one recording.
#[derive(Debug)]
pub(super) struct StrictReplay {
    recording: Recording,
    /// The replay since the start or the last reset.
    replayer: Mutex<Arc<StrictReplayer>>,
}

impl StrictReplay {
    /// Reads the recording at `path` and checks it was made at the wire (by this server in
    /// record mode), not at a gateway's provider boundary.
    pub(super) fn open(path: &Path) -> Result<StrictReplay, ModelServerError> {
        let recording = read_recording(path, Access::External)?;
        let at_wire = recording.calls.first().is_none_or(|call| {
            call.request
                .model
                .get("api")
                .and_then(Value::as_str)
                .and_then(Wire::from_api)
                .is_some()
        });
        if !at_wire {
            return Err(ModelServerError::NotAWireRecording(path.to_path_buf()));
        }
        let replayer = StrictReplayer::new(recording.clone());
        Ok(StrictReplay {
            recording,
            replayer: Mutex::new(Arc::new(replayer)),
        })
    }

    /// A call the recording holds as failed, answered as the same failure: that is what was
    /// recorded, not a problem of the replay. A failure the provider reported inside its answer
    /// (`in_stream`) is served inside the answer (its recorded chunks, then the error, in a
    /// 200); `None` when the call did not fail while recording.
    fn recorded_failure(&self, call_index: Option<usize>) -> Option<Answered> {
        let call = call_index
            .and_then(|index| self.recording.calls.get(index))
            .filter(|call| call.outcome == Outcome::Error)?;
        let events = call.events.clone();
        let failure = events.iter().find_map(answer::failure)?;
        if failure.in_stream {
            return Some(Answered::Events(events));
        }
        Some(Answered::Failure(failure))
    }
}

#[async_trait]
impl Backend for StrictReplay {
    fn mode(&self) -> &'static str {
        "recording"
    }

    async fn answer(&self, call: Call<'_>) -> Answered {
        let replayer = self.replayer.lock().clone();
        let caller = call.caller.as_deref().unwrap_or(DEFAULT_CALLER);
        match replayer.next_call(&call.request.recorded(caller)) {
            Ok(events) => Answered::Events(events),
            Err(StrictReplayError::Mismatch(mismatch)) => Answered::Problem {
                problem: Problem::Mismatch {
                    message: mismatch.to_string(),
                    call_index: mismatch.call_index,
                    field_path: mismatch.public_path(),
                },
                status: StatusCode::BAD_REQUEST,
                code: "replay_mismatch",
            },
            Err(StrictReplayError::Recording(error)) => self
                .recorded_failure(error.call_index)
                .unwrap_or_else(|| Answered::Problem {
                    problem: Problem::Recording {
                        message: error.to_string(),
                    },
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    code: "replay_recording",
                }),
        }
    }

    fn models(&self) -> Vec<String> {
        self.recording
            .calls
            .iter()
            .filter_map(|call| call.request.model.get("model").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    }

    fn state(&self, problems: Vec<Problem>) -> ServerState {
        ServerState {
            mode: self.mode().into(),
            fixture: None,
            fixtures: Vec::new(),
            served_calls: self.replayer.lock().call_count(),
            unused_turns: Vec::new(),
            recorded_calls: Some(self.recording.calls.len()),
            problems,
            faults: Vec::new(),
            unused_exchanges: Vec::new(),
        }
    }

    fn reset(&self, _wanted: Option<&str>) -> Result<ResetDone, ResetRefused> {
        *self.replayer.lock() = Arc::new(StrictReplayer::new(self.recording.clone()));
        Ok(ResetDone {
            mode: self.mode(),
            fixture: None,
            turns: None,
            calls: Some(self.recording.calls.len()),
        })
    }
}
