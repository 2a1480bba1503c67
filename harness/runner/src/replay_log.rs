//! A replay's log of what it did, written the moment it happens, for a browser suite that reads
//! it while the page is open: one JSON object per line in the log file, appended with a single
//! write each (so a reader polling the file never sees half a line), and every miss also on
//! stderr with its diagnostic. The workspace's replay gateways (Layer 2) and `keyless serve`
//! (`--replay-log`) write it.
//!
//! - `{"event": "hit", "turn": <index in the fixture's turns>, "caller": "<caller>"}`
//! - `{"event": "miss", "caller": "<caller>", "diagnostic": "<the miss message>"}`; a call that
//!   named no caller and met a key with several different answers (an ambiguity,
//!   `docs/replay-and-fixtures.md` §5.6) got no answer either, and is logged the same way with
//!   the ambiguity's diagnostic, so the suite fails on it as on a miss
//! - `{"event": "miss", "kind": "<problem kind>", "diagnostic": "<message>"}`: a model server's
//!   problem that is not the engine's (an unserved route, a request it cannot key, …), written by
//!   [`ReplayLog::problem`]
//!
//! The workspace's browser suite reads the file after each test and at its end
//! (`gateway-under-test/web/tests/e2e/support/replay-log.ts`).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use serde_json::{Value, json};

use replay_core::{Ambiguity, Miss, ReplayObserver, Served};

use crate::model_server::Problem;

/// The observer a replay's engine reports to (and a model server's other problems, through
/// [`ReplayLog::problem`]).
#[derive(Debug)]
pub struct ReplayLog {
    /// Who replays, as stderr lines start (`replay gateway <name>`, `keyless serve`).
    who: String,
    /// The log file and its path, when one is kept.
    file: Option<(PathBuf, Mutex<File>)>,
}

impl ReplayLog {
    /// Misses on stderr only.
    pub fn stderr_only(who: &str) -> ReplayLog {
        ReplayLog {
            who: who.to_owned(),
            file: None,
        }
    }

    /// Misses on stderr, and every event in a new (or emptied) file at `path`. The file is never opened through a symbolic link (a link planted where the log goes
    /// would otherwise have its target truncated).
    pub fn create(who: &str, path: &Path) -> std::io::Result<ReplayLog> {
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)?;
        Ok(ReplayLog {
            who: who.to_owned(),
            file: Some((path.to_path_buf(), Mutex::new(file))),
        })
    }

    /// A model server's problem that its engine did not report (misses and ambiguous answers
    /// reach the log through [`ReplayObserver`], so they are not written twice).
    pub fn problem(&self, problem: &Problem) {
        if matches!(
            problem,
            Problem::Miss { .. } | Problem::AmbiguousAnswer { .. }
        ) {
            return;
        }
        eprintln!("{}: {}: {}", self.who, problem.kind(), problem.message());
        self.append(
            &json!({"event": "miss", "kind": problem.kind(), "diagnostic": problem.message()}),
        );
    }

    fn append(&self, event: &Value) {
        let Some((path, file)) = &self.file else {
            return;
        };
        let mut line = event.to_string();
        line.push('\n');
        if let Err(err) = file.lock().write_all(line.as_bytes()) {
            // The stderr line of a miss still shows; a lost hit only shortens the used turns.
            eprintln!("{}: cannot append to {}: {err}", self.who, path.display());
        }
    }
}

impl ReplayObserver for ReplayLog {
    fn served(&self, served: &Served) {
        self.append(
            &json!({"event": "hit", "turn": served.turn_index, "caller": served.key.caller}),
        );
    }

    fn missed(&self, miss: &Miss) {
        let diagnostic = miss.to_string();
        eprintln!(
            "{}: replay miss (caller {}): {diagnostic}",
            self.who, miss.caller
        );
        self.append(&json!({"event": "miss", "caller": miss.caller, "diagnostic": diagnostic}));
    }

    fn ambiguous(&self, ambiguity: &Ambiguity) {
        let diagnostic = ambiguity.to_string();
        eprintln!(
            "{}: replay ambiguous (caller {}): {diagnostic}",
            self.who, ambiguity.caller
        );
        self.append(
            &json!({"event": "miss", "caller": ambiguity.caller, "diagnostic": diagnostic}),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use replay_core::{Answer, Fixture, ReplayEngine, Scenario, Turn, UiMode, replay_key};
    use std::sync::Arc;

    fn engine_with_one_turn(log: Arc<ReplayLog>) -> (ReplayEngine, Vec<Value>) {
        let messages = vec![json!({"type": "human", "content": "hi", "name": "user-input"})];
        let key = replay_key("suggest_agent", &messages);
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "hi"),
            turns: vec![Turn {
                caller: Some(key.caller),
                conversation_hash: Some(key.conversation_hash),
                input_hash: key.input_hash,
                answer: Answer::Output(
                    json!({"type": "ai", "data": {"content": "[]", "type": "ai"}}),
                ),
                canonical: Some(key.canonical),
            }],
            provenance: None,
            exchanges: Vec::new(),
        };
        let engine = ReplayEngine::new(fixture, "fixtures/s.flash.json")
            .unwrap()
            .with_observer(log);
        (engine, messages)
    }

    fn lines(path: &Path) -> Vec<Value> {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    #[test]
    fn hits_and_misses_are_lines_in_the_file_as_they_happen() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gw.replay.jsonl");
        std::fs::write(&path, "stale line of an earlier run\n").unwrap();
        let log = Arc::new(ReplayLog::create("gw", &path).unwrap());
        let (engine, messages) = engine_with_one_turn(log.clone());
        assert!(lines(&path).is_empty(), "an earlier run's lines are gone");

        engine.lookup("suggest_agent", &messages).unwrap();
        assert_eq!(
            lines(&path),
            [json!({"event": "hit", "turn": 0, "caller": "suggest_agent"})]
        );
        let miss = engine.lookup("suggest_agent", &messages).unwrap_err();
        let written = lines(&path);
        assert_eq!(written.len(), 2, "{written:?}");
        assert_eq!(
            written[1],
            json!({"event": "miss", "caller": "suggest_agent", "diagnostic": miss.to_string()})
        );
        assert!(
            written[1]["diagnostic"]
                .as_str()
                .unwrap()
                .contains("nearest recorded turn for caller 'suggest_agent': turn 0"),
            "{}",
            written[1]
        );
    }

    #[test]
    fn an_ambiguity_is_logged_as_a_call_that_got_no_answer() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("gw.replay.jsonl");
        let log = Arc::new(ReplayLog::create("gw", &path).unwrap());
        let messages = vec![json!({"type": "human", "content": "hi", "name": "user-input"})];
        let key = replay_key("", &messages);
        let turn = |answer: &str| Turn {
            caller: Some(key.caller.clone()),
            conversation_hash: Some(key.conversation_hash.clone()),
            input_hash: key.input_hash.clone(),
            answer: Answer::Output(
                json!({"type": "ai", "data": {"content": answer, "type": "ai"}}),
            ),
            canonical: None,
        };
        let fixture = Fixture {
            scenario: Scenario::new("s", UiMode::Flash, "hi"),
            turns: vec![turn("node a"), turn("node b")],
            provenance: None,
            exchanges: Vec::new(),
        };
        let engine = ReplayEngine::new(fixture, "fixtures/s.flash.json")
            .unwrap()
            .with_observer(log);
        let error = engine.lookup_unnamed(&messages).unwrap_err();
        assert_eq!(
            lines(&path),
            [json!({"event": "miss", "caller": "lead_agent", "diagnostic": error.to_string()})]
        );
    }
}
