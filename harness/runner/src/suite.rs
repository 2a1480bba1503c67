//! A suite of fixtures as a command reports it: the fixture files of a folder, the note a
//! fixture's `gateway_config` needs for a gateway the harness does not configure, one table line
//! or one JSON object per run (misses with their diagnostics), and an error's chain said once.
//! `keyless test` and `cargo xtask replay` both print through this module.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use replay_core::{Fixture, Framing, Verdict};
use serde_json::{Value, json};

use crate::golden::stem_of;
use crate::layer1::ScenarioRun;

/// The `*.json` files of `dir`, sorted by name. A name that is not UTF-8 keeps its bytes
/// escaped in its stem ([`crate::goldens::escaped_name`]: `%FF`), which names its golden; two files
/// whose stems are the same (`\xFF.flash.json` beside a `%FF.flash.json`) are an error naming
/// both, as neither's golden could be told from the other's.
pub fn fixture_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.is_file() && path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    let mut stems: BTreeMap<String, &PathBuf> = BTreeMap::new();
    for path in &files {
        if let Some(other) = stems.insert(stem_of(path), path) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the fixture files {:?} and {:?} have one name, {:?}, once the bytes that \
                     are not UTF-8 are written %XX: rename one (its golden is named after it)",
                    other.file_name().unwrap_or_default(),
                    path.file_name().unwrap_or_default(),
                    stem_of(path),
                ),
            ));
        }
    }
    Ok(files)
}

/// A fixture's `gateway_config` cannot be applied to a gateway the harness does not boot: the
/// note that says what that gateway must be configured with, if anything.
pub fn gateway_config_note(path: &Path, fixture: &Fixture) -> Option<String> {
    let overrides = fixture.scenario.gateway_config.as_ref()?;
    if overrides.is_null() {
        return None;
    }
    Some(format!(
        "note: {} was recorded with gateway_config {overrides}; the gateway must be configured the same way",
        path.display()
    ))
}

/// The table's header line.
pub fn table_header() -> String {
    format!(
        "{:<22} {:<9} {:>6} {:>10} {:>7} {:<8} {:>7} {:>7}",
        "scenario", "mode", "events", "turns", "misses", "golden", "ms", "age"
    )
}

/// One run's table line: scenario, mode, events, turns used of recorded, misses, golden status,
/// milliseconds, the fixture's age by its provenance (`unknown` without one).
pub fn table_line(run: &ScenarioRun, verdict: &Verdict) -> String {
    let age = (run.fixture.provenance.as_ref())
        .map_or_else(|| "unknown".to_owned(), |p| p.age_label(chrono::Utc::now()));
    format!(
        "{:<22} {:<9} {:>6} {:>10} {:>7} {:<8} {:>7} {:>7}",
        run.fixture.scenario.id,
        run.fixture.scenario.mode.as_str(),
        run.event_count(),
        format!("{}/{}", run.turns_used(), run.fixture.turns.len()),
        verdict.misses.len(),
        verdict.golden.as_str(),
        run.elapsed.as_millis(),
        age,
    )
}

/// One run as a JSON object: what the table shows, the shapes, and everything that explains a
/// failure: each miss with its caller, key and full diagnostic, the model side's other
/// problems, the framing.
pub fn json_line(run: &ScenarioRun, verdict: &Verdict) -> Value {
    let provenance = run.fixture.provenance.as_ref();
    // The run's own misses (the verdict holds the same ones), each in the run's voice, with the
    // earlier miss it is a consequence of and the first differing field.
    let misses: Vec<Value> = (verdict.misses.iter().enumerate())
        .map(|(index, miss)| {
            let field = (miss.nearest.as_ref())
                .and_then(|nearest| nearest.difference.as_ref())
                .map(|difference| difference.path.clone());
            json!({
                "caller": miss.caller,
                "input_hash": miss.input_hash,
                "diagnostic": run.miss_text(index),
                "first_differing_field": field,
                "consequence_of": run.consequence_of(index).map(|earlier| earlier + 1),
            })
        })
        .collect();
    let framing = match &verdict.framing {
        Framing::Ok => json!("ok"),
        Framing::Violated { run, problem } => {
            json!({"violated": {"run": run, "problem": problem.to_string()}})
        }
    };
    // The conversation the dialect's client holds after each run (a dialect that keeps it
    // client-side: the AI SDK's UI messages), for a cross-check against the protocol's client.
    let history: Option<Vec<Value>> = (run.transcripts.iter())
        .map(|transcript| transcript.history.clone())
        .collect();
    let mut line = json!({
        "fixture": run.fixture_path.display().to_string(),
        "scenario": run.fixture.scenario.id,
        "mode": run.fixture.scenario.mode.as_str(),
        "events": run.shapes(),
        "framing": framing,
        "misses": misses,
        "model_errors": (verdict.model_errors.iter()).map(ToString::to_string).collect::<Vec<_>>(),
        "unused_turns": verdict.unused_turns,
        "golden": verdict.golden.as_str(),
        "elapsed_ms": u64::try_from(run.elapsed.as_millis()).unwrap_or(u64::MAX),
        // Issue 43: when the fixture was recorded and how many whole days ago; null without a
        // provenance (an older fixture).
        "recorded_at": provenance.map(|p| p.to_value()["recorded_at"].clone()),
        "age_days": provenance.map(|p| p.age(chrono::Utc::now()).num_days()),
    });
    if let Some(history) = history {
        line["history"] = json!(history);
    }
    if let Some(dropped) = run.dropped() {
        line["ignored_events"] = json!(dropped.0);
    }
    // Issue 42: a fault scenario's faults, each with how often it fired.
    if !run.faults_fired.is_empty() {
        line["faults"] = json!(run.faults_fired);
    }
    line
}

/// The lines a failed run prints beside the table (on stderr): broken framing, each miss's
/// diagnostic, each other model-side problem, a golden refused and why, each prefixed with the
/// fixture.
pub fn problem_lines(run: &ScenarioRun, verdict: &Verdict) -> Vec<String> {
    let fixture = run.fixture_path.display();
    let mut lines = Vec::new();
    match &verdict.framing {
        Framing::Ok => {}
        Framing::Violated { run, problem } => lines.push(format!(
            "{fixture}: the stream is not framed as its API demands: run {run}: {problem}"
        )),
    }
    for index in 0..verdict.misses.len() {
        lines.push(format!("{fixture}: {}\n", run.miss_text(index)));
    }
    for problem in &verdict.model_errors {
        lines.push(format!("{fixture}: {problem}\n"));
    }
    if let Some(refusal) = &verdict.golden_refusal {
        lines.push(format!("{fixture}: golden refused: {refusal}"));
    }
    lines
}

/// An error and its sources, each said once: a source whose text its parent's message already
/// contains (`model server POST …: error sending request …` over reqwest's `error sending
/// request …`) is not repeated.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("{0}")]
    struct Leaf(String);

    #[derive(Debug, thiserror::Error)]
    #[error("{text}")]
    struct Wrapped {
        text: String,
        source: Leaf,
    }

    #[test]
    fn an_error_chain_says_each_cause_once() {
        let cases = [
            (
                "a parent that already says its source",
                "model server POST http://x/_keyless/reset: error sending request",
                "error sending request",
                "model server POST http://x/_keyless/reset: error sending request",
            ),
            (
                "a parent that does not",
                "driving the gateway",
                "connection refused",
                "driving the gateway: connection refused",
            ),
        ];
        for (name, parent, leaf, expected) in cases {
            let error = Wrapped {
                text: parent.into(),
                source: Leaf(leaf.into()),
            };
            assert_eq!(error_chain(&error), expected, "{name}");
        }
    }

    /// Issue 45, finding 12: two fixtures whose names are not UTF-8 are listed both, each
    /// with its own stem; a UTF-8 name that reads as another's escaped one is refused, naming
    /// both files.
    #[cfg(unix)]
    #[test]
    fn non_utf_8_fixture_names_are_listed_with_their_own_stems_unless_two_collide() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        for name in [&b"\xff.flash.json"[..], b"\xfe.flash.json", b"a.flash.json"] {
            std::fs::write(dir.path().join(std::ffi::OsStr::from_bytes(name)), "{}").unwrap();
        }
        let stems: Vec<String> = (fixture_files(dir.path()).unwrap().iter())
            .map(|path| stem_of(path))
            .collect();
        assert_eq!(stems, ["a.flash", "%FE.flash", "%FF.flash"]);

        std::fs::write(dir.path().join("%FF.flash.json"), "{}").unwrap();
        let refused = fixture_files(dir.path()).unwrap_err().to_string();
        for says in ["\"%FF.flash.json\"", "\"\\xFF.flash.json\"", "rename one"] {
            assert!(refused.contains(says), "{says} not in {refused}");
        }
    }
}
