//! `keyless test`'s reporters, side by side over the runner's events
//! ([`keyless_runner::schedule::Event`]): the progress bar (on a terminal), the table or the
//! JSON lines on standard output with each failure's lines on standard error, and the JUnit
//! cases (`--junit`). The row itself (its columns, its JSON fields) is written in one place, the
//! runner's `suite` ([`table_line`], [`json_line`]); this module adds what the run wrote beside it
//! (the pending golden, the diff, the gateway log).

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use keyless_runner::schedule::{Event, FixtureOutcome, Judged, OutcomeKind, Reporter};
use keyless_runner::{
    goldens::{find_pending, pending_diff},
    suite::{json_line, problem_lines, table_header, table_line},
};
use replay_core::{MissingGolden, Voice};
use serde_json::{Value, json};

use crate::junit::{Case, Failed};
use crate::output::{err, err_diff, out};

/// A line a fixture's outcome prints.
enum Printed {
    Out(String),
    Err(String),
    /// A golden's diff, on standard error (coloured on a terminal).
    Diff(String),
}

/// Every reporter of a run, each told every event in turn.
pub struct Reporters {
    progress: Progress,
    /// The table (`None`: JSON lines instead).
    lines: Lines,
    /// The JUnit cases (`--junit`), if asked.
    junit: Option<JunitCases>,
    /// The fixtures' ages held to `--max-age` (and whether that fails the run), if asked.
    ages: Option<Ages>,
}

/// `--max-age`: each loaded fixture's age, from its provenance, against the limit; older ones
/// are warned of (or, with `--max-age-fail`, errors that fail the run).
struct Ages {
    limit: crate::age::MaxAge,
    fail: bool,
    too_old: bool,
}

impl Ages {
    fn report(&mut self, event: &Event<'_>) {
        let Event::FixturesLoaded { paths, fixtures } = event else {
            return;
        };
        let ages = crate::age::check(paths, fixtures, self.limit, chrono::Utc::now());
        let kind = if self.fail { "error" } else { "warning" };
        for line in &ages.too_old {
            err(format!("{kind}: {line}"));
        }
        for line in &ages.unknown {
            err(format!("warning: {line}"));
        }
        self.too_old = self.fail && !ages.too_old.is_empty();
    }
}

impl Reporters {
    /// The reporters of a run of `fixtures`: JSON lines when `as_json`, else the table; the
    /// JUnit cases with `junit`.
    pub fn new(fixtures: &[PathBuf], as_json: bool, junit: bool, golden: &Path) -> Reporters {
        Reporters {
            progress: Progress::new(fixtures, as_json),
            lines: Lines { as_json },
            junit: junit.then(|| JunitCases::new(fixtures, golden)),
            ages: None,
        }
    }

    /// Holds the fixtures to `max_age` (the limit, and whether passing it fails the run).
    pub fn max_age(mut self, max_age: Option<(crate::age::MaxAge, bool)>) -> Reporters {
        self.ages = max_age.map(|(limit, fail)| Ages {
            limit,
            fail,
            too_old: false,
        });
        self
    }

    /// Whether a fixture was older than `--max-age` with `--max-age-fail`.
    pub fn too_old(&self) -> bool {
        self.ages.as_ref().is_some_and(|ages| ages.too_old)
    }

    /// The JUnit cases in fixture order.
    pub fn into_cases(self) -> Vec<Case> {
        self.progress.bar.finish_and_clear();
        self.junit.map(|junit| junit.cases).unwrap_or_default()
    }
}

impl Reporter for Reporters {
    fn report(&mut self, event: &Event<'_>) -> ControlFlow<()> {
        if let Some(ages) = &mut self.ages {
            ages.report(event);
        }
        self.progress.report(event);
        if let Some(junit) = &mut self.junit {
            junit.report(event);
        }
        let lines = &mut self.lines;
        self.progress.bar.suspend(|| lines.report(event))
    }
}

/// The progress line on a terminal: how many fixtures finished, which run now.
struct Progress {
    bar: ProgressBar,
    /// The fixtures running now, by index.
    running: std::collections::BTreeMap<usize, String>,
}

impl Progress {
    fn new(fixtures: &[PathBuf], as_json: bool) -> Progress {
        let shown = !as_json && std::io::stderr().is_terminal();
        let bar = ProgressBar::with_draw_target(
            Some(fixtures.len() as u64),
            if shown {
                ProgressDrawTarget::stderr()
            } else {
                ProgressDrawTarget::hidden()
            },
        );
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {pos}/{len} fixtures {wide_msg}",
        ) {
            bar.set_style(style);
        }
        if shown {
            bar.enable_steady_tick(Duration::from_millis(200));
        }
        Progress {
            bar,
            running: std::collections::BTreeMap::new(),
        }
    }

    fn report(&mut self, event: &Event<'_>) {
        match event {
            Event::FixtureStarted { index, name } => {
                self.running.insert(*index, (*name).to_owned());
            }
            Event::FixtureEnded { index } => {
                self.running.remove(index);
                self.bar.inc(1);
            }
            _ => return,
        }
        let running: Vec<&str> = self.running.values().map(String::as_str).collect();
        self.bar
            .set_message(format!("running: {}", running.join(", ")));
    }
}

/// The table (or JSON lines) on standard output, and each fixture's lines on standard error.
struct Lines {
    as_json: bool,
}

impl Lines {
    fn report(&mut self, event: &Event<'_>) -> ControlFlow<()> {
        let mut closed = false;
        match event {
            Event::GatewayAtUrl {
                url,
                model_base_url,
            } if !self.as_json => {
                closed = out(format!(
                    "gateway at {url}; its model must be at {model_base_url}"
                ))
                .is_err();
            }
            Event::RunStarted if !self.as_json => closed = out(table_header()).is_err(),
            Event::FixtureFinished { outcome, .. } => {
                if let Some(note) = &outcome.note {
                    err(note);
                }
                for printed in printed(outcome, self.as_json) {
                    match printed {
                        Printed::Out(line) => closed |= out(line).is_err(),
                        Printed::Err(line) => err(line),
                        Printed::Diff(diff) => err_diff(&diff),
                    }
                }
                if self.as_json {
                    closed |= out(outcome_json(outcome).to_string()).is_err();
                }
            }
            _ => {}
        }
        if closed {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }
}

/// What `outcome` prints after its note, in order: the table row (unless `as_json`), and for a
/// failure its problems, the pending golden, the golden's diff and the gateway log.
fn printed(outcome: &FixtureOutcome, as_json: bool) -> Vec<Printed> {
    let path = outcome.path.display();
    let judged = match &outcome.kind {
        OutcomeKind::Broken { message, after } => {
            // The error names the fixture already (`HarnessError` does).
            let mut printed = vec![Printed::Err(format!("error: {message}"))];
            for problem in after {
                printed.push(Printed::Err(format!("{path}: after its run: {problem}")));
            }
            return printed;
        }
        OutcomeKind::Judged(judged) => judged,
    };
    let Judged {
        run,
        verdict,
        pending,
        diff,
        errors,
    } = judged.as_ref();
    let mut printed: Vec<Printed> = (errors.iter())
        .map(|error| Printed::Err(format!("keyless: {error}")))
        .collect();
    if !as_json {
        printed.push(Printed::Out(table_line(run, verdict)));
        if let Some(dropped) = run.dropped() {
            printed.push(Printed::Out(format!("{path}: {dropped}")));
        }
    }
    if outcome.passed() {
        return printed;
    }
    if verdict.replayed_cleanly() {
        for problem in problem_lines(run, verdict) {
            printed.push(Printed::Err(problem));
        }
    } else {
        // The report says every problem, each miss with its diagnostic, and the transcripts.
        printed.push(Printed::Err(run.report(verdict)));
    }
    if let Some(pending) = pending {
        printed.push(Printed::Err(format!(
            "{}: golden {}: the new one is {} (keyless review shows it; keyless accept {} accepts it)",
            run.fixture_path.display(),
            verdict.golden.as_str(),
            pending.display(),
            run.stem()
        )));
    }
    if let Some(diff) = diff {
        let mut text = diff.text.clone();
        if diff.left_out > 0 {
            text.push_str(&format!(
                "… {} more diff lines not shown (keyless review shows them all)\n",
                diff.left_out
            ));
        }
        printed.push(Printed::Diff(text));
    }
    if let Some(log) = &outcome.log {
        printed.push(Printed::Err(format!(
            "{}: gateway log: {}",
            run.fixture_path.display(),
            log.display()
        )));
    }
    printed
}

/// `outcome` as one JSON line: the runner's row ([`json_line`]) and what the run wrote beside
/// it, or a fixture that could not run with its error.
fn outcome_json(outcome: &FixtureOutcome) -> Value {
    let log = json!(outcome.log.as_ref().map(|p| p.display().to_string()));
    let judged = match &outcome.kind {
        OutcomeKind::Broken { message, .. } => {
            return json!({
                "fixture": outcome.path.display().to_string(),
                "error": message,
                "gateway_log": log,
            });
        }
        OutcomeKind::Judged(judged) => judged,
    };
    let verdict = &judged.verdict;
    let mut line = json_line(&judged.run, verdict);
    line["pending_golden"] = json!(judged.pending.as_ref().map(|p| p.display().to_string()));
    line["golden_diff"] = json!(judged.diff.as_ref().map(|diff| json!({
        "diff": diff.text,
        "lines_left_out": diff.left_out,
    })));
    line["gateway_log"] = log;
    line["unused_failure"] = json!(verdict.unused_failure.as_ref().map(ToString::to_string));
    line["golden_refusal"] = json!(verdict.golden_refusal);
    line
}

/// The JUnit cases (`--junit`), one per fixture in fixture order.
struct JunitCases {
    names: Vec<String>,
    /// The classname of each: its folder, relative to the current folder when inside it.
    folders: Vec<String>,
    golden: PathBuf,
    cases: Vec<Case>,
}

impl JunitCases {
    fn new(fixtures: &[PathBuf], golden: &Path) -> JunitCases {
        let cwd = std::env::current_dir().unwrap_or_default();
        JunitCases {
            names: fixtures
                .iter()
                .map(|path| keyless_runner::goldens::stem_of(path))
                .collect(),
            folders: (fixtures.iter())
                .map(|path| {
                    let folder = path.parent().unwrap_or(Path::new(""));
                    (folder.strip_prefix(&cwd).unwrap_or(folder))
                        .display()
                        .to_string()
                })
                .collect(),
            golden: golden.to_path_buf(),
            cases: Vec::new(),
        }
    }

    fn report(&mut self, event: &Event<'_>) {
        let Event::FixtureFinished {
            index,
            outcome,
            time,
        } = event
        else {
            return;
        };
        self.cases.push(Case {
            name: self.names[*index].clone(),
            folder: self.folders[*index].clone(),
            time: *time,
            failed: self.failed(outcome),
            gateway_log: outcome.log.clone(),
        });
    }

    /// Why `outcome` failed: its checks, with what it printed on standard error (its note
    /// aside) and the golden's whole diff; or the error it could not run for.
    fn failed(&self, outcome: &FixtureOutcome) -> Option<Failed> {
        let judged = match &outcome.kind {
            OutcomeKind::Broken { message, .. } => {
                return Some(Failed::Error {
                    message: message.clone(),
                });
            }
            OutcomeKind::Judged(_) if outcome.passed() => return None,
            OutcomeKind::Judged(judged) => judged,
        };
        let lines: Vec<String> = (printed(outcome, true).into_iter())
            .filter_map(|printed| match printed {
                Printed::Err(line) => Some(line),
                // The report carries the whole diff (up to `keyless review`'s bound) instead.
                Printed::Out(_) | Printed::Diff(_) => None,
            })
            .collect();
        let mut text = lines.join("\n");
        let stem = judged.run.stem();
        if judged.pending.is_some()
            && let Ok(found) = find_pending(&self.golden, &stem)
            && let Ok(diff) = pending_diff(&found)
        {
            text.push_str("\n\n");
            text.push_str(&diff);
        }
        Some(Failed::Check {
            message: (judged.verdict)
                .problems_in(MissingGolden::Fails, Voice::Keyless)
                .join("; "),
            text,
        })
    }
}
