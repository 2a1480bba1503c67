//! `keyless drift` (issue 43): has the provider moved since a fixture was recorded? Each fixture's
//! scenario (its prompt and follow-ups) is recorded again against the real upstream through the
//! same gateway, into a temporary folder, never over the committed fixture; the fresh fixture is
//! compared with the committed one ([`replay_core::compare_fixtures`]: calls, tool calls, the
//! provider stream's terms) and replayed through the gateway against the committed golden (its
//! shapes), and each fixture is classified identical, benign or breaking.
//!
//! The recording and the replay are this same binary's `keyless record` and `keyless test`, run
//! with the same configuration file (`--config`), so everything `keyless.toml` configures for a
//! recording (the gateway, its dialect, the `[record]` upstream and key, and any table a later
//! keyless adds) comes along without drift knowing it; only the folders are redirected.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Output};

use anyhow::Context;
use keyless_runner::goldens::stem_of;
use keyless_runner::suite::fixture_files;
use replay_core::{
    Drift, DriftChange, DriftClass, Fixture, SHARED_FILE_MODE, compare_fixtures, write_atomically,
};
use serde_json::Value;

use crate::Folders;
use crate::config::ConfigError;
use crate::output::{err, one_line, out};

/// Arguments of `drift`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  OPENAI_API_KEY=… keyless drift                    # every fixture, against [record] upstream
  keyless drift --fixture write_read_file.flash     # one fixture (repeatable)
  keyless drift --upstream https://my-proxy.example/v1 --json
  keyless drift --report drift.md                   # also a Markdown report (for an issue)
  keyless drift --update                            # take the benign re-recordings

Each fixture's scenario (prompt, follow-ups) is recorded again through the gateway keyless.toml
starts (as `keyless record` does, with the same keyless.toml: the upstream and key from its
[record] table unless --upstream is given) into a temporary folder, never over the committed
fixture. The fresh recording is compared with the committed one, call by call, and replayed
through the gateway against the committed golden (as `keyless test` does):

  identical  the same calls, tool calls and arguments, stream terms and golden shapes
  benign     only text (or a tool call's argument values) changed; the golden's shapes are equal
  breaking   the call sequence changed (caller order, an extra or a missing call), a tool call's
             name or argument keys changed, the provider's stream used an event type or field
             the recording never had, or the gateway's shapes no longer match the golden

Breaking changes name the call and the field. --json prints one object per fixture per line:
{\"fixture\", \"verdict\", \"changes\": [{\"call\", \"field\", \"recorded\", \"now\"}], \"notes\"}
(call is null for a change of the whole run: the golden, a re-recording that failed).
--update writes the fresh fixture over the committed one (atomically) for the benign ones only,
and their pending goldens as <name>.snap.new (see keyless review); breaking ones stay as they
are.

Exit status: 0 nothing is breaking; 1 a fixture's drift is breaking (or could not be recorded);
2 a usage or configuration error.")]
pub struct Args {
    #[command(flatten)]
    pub folders: Folders,
    /// Only this fixture (its name, e.g. `write_read_file.flash`; repeatable) [default: every
    /// fixture in the fixture folder].
    #[arg(long = "fixture", value_name = "NAME")]
    pub names: Vec<String>,
    /// The upstream's base URL [default: keyless.toml's record.upstream].
    #[arg(long, value_name = "URL")]
    pub upstream: Option<String>,
    /// Print one JSON object per fixture instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the result as a Markdown report to FILE.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Write the fresh fixtures (and pending goldens) of the benign drifts over the committed
    /// ones.
    #[arg(long)]
    pub update: bool,
}

/// One fixture's drift, and where its fresh recording is.
struct Drifted {
    stem: String,
    committed: PathBuf,
    fresh: Option<PathBuf>,
    drift: Drift,
}

/// Runs `drift`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let resolved = args.folders.resolve()?;
    let record = resolved.loaded.file.record.clone().unwrap_or_default();
    let upstream = args.upstream.clone().or(record.upstream).ok_or_else(|| {
        ConfigError(format!(
            "no upstream: give --upstream URL or set [record] upstream in {}",
            resolved.loaded.describe()
        ))
    })?;
    let all = fixture_files(&resolved.fixtures).map_err(|error| {
        ConfigError(format!(
            "cannot list the fixture folder {}: {error}",
            resolved.fixtures.display()
        ))
    })?;
    let stems: Vec<String> = all.iter().map(|path| stem_of(path)).collect();
    if let Some(unknown) = args.names.iter().find(|name| !stems.contains(name)) {
        return Err(ConfigError(format!(
            "no fixture {unknown:?} in {} (fixtures: {})",
            resolved.fixtures.display(),
            stems.join(", ")
        ))
        .into());
    }
    let chosen: Vec<&PathBuf> = (all.iter())
        .filter(|path| args.names.is_empty() || args.names.contains(&stem_of(path)))
        .collect();
    if chosen.is_empty() {
        return Err(ConfigError(format!(
            "no fixtures (*.json) in {} (keyless record makes one)",
            resolved.fixtures.display()
        ))
        .into());
    }
    let keyless = Keyless::new(resolved.loaded.path.clone())?;
    let work = tempfile::Builder::new()
        .prefix("keyless-drift-")
        .tempdir()
        .context("cannot create the temporary folder")?;
    let fixtures = work.path().join("fixtures");
    let golden = work.path().join("golden");
    std::fs::create_dir_all(&fixtures)?;
    std::fs::create_dir_all(&golden)?;
    // Every committed fixture is there, so keyless.toml's [fixture."NAME"] tables name fixtures
    // that exist; the re-recorded ones replace theirs.
    for path in &all {
        std::fs::copy(path, fixtures.join(file_name(path)))?;
    }
    let mut drifted = Vec::new();
    for path in chosen {
        let stem = stem_of(path);
        if !args.json {
            err(format!(
                "keyless drift: recording {stem} again through {upstream}"
            ));
        }
        let snap = resolved.golden.join(format!("{stem}.snap"));
        if snap.is_file() {
            std::fs::copy(&snap, golden.join(format!("{stem}.snap")))?;
        }
        let recorded = record_again(&keyless, path, &upstream, work.path(), &fixtures);
        drifted.push(match recorded {
            Err(NotRecorded::Usage(why)) => return Err(ConfigError(why).into()),
            Ok((committed, fresh_path, fresh)) => Drifted {
                drift: compare_fixtures(&committed, &fresh),
                stem,
                committed: path.clone(),
                fresh: Some(fresh_path),
            },
            Err(NotRecorded::Failed(why)) => Drifted {
                drift: Drift {
                    verdict: DriftClass::Breaking,
                    changes: vec![DriftChange::not_recorded(&why)],
                    notes: Vec::new(),
                },
                stem,
                committed: path.clone(),
                fresh: None,
            },
        });
    }
    let replayed: Vec<&str> = (drifted.iter())
        .filter(|d| d.fresh.is_some())
        .map(|d| d.stem.as_str())
        .collect();
    let mut shapes = replay(&keyless, &fixtures, &golden, &replayed)?;
    for one in drifted.iter_mut().filter(|d| d.fresh.is_some()) {
        let change = shapes.remove(&one.stem).unwrap_or_else(|| {
            Some(DriftChange::golden(
                "no result",
                "keyless test printed no line for this fixture",
            ))
        });
        one.drift.extend(change);
    }
    print(&drifted, args.json)?;
    if let Some(report) = &args.report {
        write_atomically(report, markdown(&drifted).as_bytes(), SHARED_FILE_MODE)
            .with_context(|| format!("cannot write the report {}", report.display()))?;
    }
    if args.update {
        update(&drifted, &golden, &resolved.golden)?;
    }
    let breaking = drifted
        .iter()
        .any(|d| d.drift.verdict == DriftClass::Breaking);
    Ok(if breaking {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn file_name(path: &Path) -> &std::ffi::OsStr {
    path.file_name().unwrap_or(path.as_os_str())
}

/// This same binary, run with the same configuration file.
struct Keyless {
    program: PathBuf,
    config: Option<PathBuf>,
}

impl Keyless {
    fn new(config: Option<PathBuf>) -> anyhow::Result<Keyless> {
        let program = std::env::current_exe().context("cannot find the keyless binary")?;
        Ok(Keyless { program, config })
    }

    /// `keyless <command> --config <file> <args>`, its output captured.
    fn run(&self, command: &str, args: &[&std::ffi::OsStr]) -> anyhow::Result<Output> {
        let mut child = Command::new(&self.program);
        child.arg(command);
        if let Some(config) = &self.config {
            child.arg("--config").arg(config);
        }
        child
            .args(args)
            .output()
            .with_context(|| format!("cannot run keyless {command}"))
    }
}

/// What a command said of its failure, on one line: its `keyless: error:` (up to a backtrace,
/// at most 5 lines), else its last 3 lines of standard error.
fn tail(output: &Output) -> String {
    let text = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let error = lines.iter().position(|l| l.starts_with("keyless: error:"));
    let chosen: Vec<&str> = match error {
        Some(start) => (lines[start..].iter())
            .take_while(|l| !l.to_lowercase().contains("backtrace"))
            .take(5)
            .copied()
            .collect(),
        None => lines[lines.len().saturating_sub(3)..].to_vec(),
    };
    chosen.join(" / ")
}

/// Why a scenario was not recorded again.
enum NotRecorded {
    /// `keyless record` found a usage or configuration error (no key, a bad upstream URL): the
    /// same for every fixture, so drift stops with it (exit 2).
    Usage(String),
    /// This fixture's recording failed: its drift is breaking, with the error as its change.
    Failed(String),
}

impl From<String> for NotRecorded {
    fn from(why: String) -> NotRecorded {
        NotRecorded::Failed(why)
    }
}

/// Records the scenario of the committed fixture at `path` again (`keyless record` into a folder
/// of `work`), and puts the fresh fixture in `fixtures` under the committed one's name: the
/// committed fixture, where the fresh one is, and the fresh one; or why not.
fn record_again(
    keyless: &Keyless,
    path: &Path,
    upstream: &str,
    work: &Path,
    fixtures: &Path,
) -> Result<(Fixture, PathBuf, Fixture), NotRecorded> {
    let committed =
        Fixture::load(path).map_err(|error| format!("the committed fixture: {error}"))?;
    let scenario = &committed.scenario;
    let into = work.join("recorded").join(stem_of(path));
    std::fs::create_dir_all(&into).map_err(|error| error.to_string())?;
    let mut args: Vec<std::ffi::OsString> = vec![
        "--fixtures".into(),
        into.clone().into(),
        "--scenario".into(),
        scenario.id.clone().into(),
        "--mode".into(),
        scenario.mode.as_str().into(),
        "--prompt".into(),
        scenario.prompt.clone().into(),
        "--upstream".into(),
        upstream.into(),
    ];
    for followup in &scenario.followups {
        args.extend(["--followup".into(), followup.into()]);
    }
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let output = keyless
        .run("record", &args)
        .map_err(|error| format!("{error:#}"))?;
    if output.status.code() == Some(2) {
        return Err(NotRecorded::Usage(format!(
            "recording {} again (keyless record): {}",
            stem_of(path),
            tail(&output)
        )));
    }
    if !output.status.success() {
        return Err(NotRecorded::Failed(format!(
            "keyless record exited {}: {}",
            output.status.code().unwrap_or(-1),
            tail(&output)
        )));
    }
    let built = fixture_files(&into)
        .ok()
        .and_then(|files| files.into_iter().next())
        .ok_or_else(|| format!("keyless record built no fixture: {}", tail(&output)))?;
    let fresh = Fixture::load(&built).map_err(|error| format!("the fresh fixture: {error}"))?;
    let placed = fixtures.join(file_name(path));
    std::fs::copy(&built, &placed).map_err(|error| error.to_string())?;
    Ok((committed, placed, fresh))
}

/// Replays the fresh fixtures `stems` through the gateway (`keyless test --json`) against the
/// committed goldens copied into `golden`: each fixture's golden change, `None` when its shapes
/// are the golden's.
fn replay(
    keyless: &Keyless,
    fixtures: &Path,
    golden: &Path,
    stems: &[&str],
) -> anyhow::Result<BTreeMap<String, Option<DriftChange>>> {
    if stems.is_empty() {
        return Ok(BTreeMap::new());
    }
    let mut args: Vec<&std::ffi::OsStr> = vec![
        "--fixtures".as_ref(),
        fixtures.as_os_str(),
        "--golden".as_ref(),
        golden.as_os_str(),
        "--json".as_ref(),
    ];
    args.extend(stems.iter().map(|stem| std::ffi::OsStr::new(*stem)));
    let output = keyless.run("test", &args)?;
    if output.status.code() == Some(2) {
        return Err(ConfigError(format!(
            "replaying the fresh fixtures (keyless test): {}",
            tail(&output)
        ))
        .into());
    }
    let mut shapes = BTreeMap::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(line) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        let stem = stem_of(Path::new(line["fixture"].as_str().unwrap_or_default()));
        shapes.insert(stem, golden_change(&line));
    }
    Ok(shapes)
}

/// What one `keyless test --json` line says of the gateway's shapes: nothing when they are the
/// golden's and the replay was clean, else a golden change saying what.
fn golden_change(line: &Value) -> Option<DriftChange> {
    if let Some(error) = line["error"].as_str() {
        return Some(DriftChange::golden("the replay broke", error));
    }
    let misses = line["misses"].as_array().map_or(0, Vec::len);
    if misses > 0 {
        let first = line["misses"][0]["diagnostic"].as_str().unwrap_or_default();
        let what = format!("the fresh fixture missed {misses} call(s) in replay");
        return Some(DriftChange::golden(&what, first));
    }
    if line["framing"] != "ok" {
        return Some(DriftChange::golden(
            "the stream's framing broke",
            &line["framing"].to_string(),
        ));
    }
    match line["golden"].as_str() {
        Some("ok") => None,
        status => {
            let diff = line["golden_diff"]["diff"].as_str().unwrap_or_default();
            let what = format!("golden {}", status.unwrap_or("unknown"));
            Some(DriftChange::golden(&what, diff))
        }
    }
}

/// A value as a table shows it: text as it is, anything else as JSON; `-` for none. Its first
/// line, and the rest (a golden's diff) to show below it.
fn shown(value: &Value) -> (String, Vec<String>) {
    let text = match value {
        Value::Null => "-".to_owned(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    };
    let mut lines = text.lines().map(|line| one_line(line).into_owned());
    let first = lines.next().unwrap_or_default();
    (first, lines.collect())
}

/// `call N field` or `field` for a change of the whole run.
fn place(change: &DriftChange) -> String {
    match change.call {
        Some(call) => format!("call {call} {}", change.field),
        None => change.field.clone(),
    }
}

/// The table (or JSON lines) on standard output, the notes on standard error.
fn print(drifted: &[Drifted], json: bool) -> anyhow::Result<()> {
    if !json {
        out(format!("{:<36} {:<10} changes", "fixture", "verdict"))?;
    }
    for one in drifted {
        for note in &one.drift.notes {
            err(format!("keyless drift: note: {}: {note}", one.stem));
        }
        if json {
            out(one.drift.to_json_line(&one.stem).to_string())?;
            continue;
        }
        out(format!(
            "{:<36} {:<10} {}",
            one.stem,
            one.drift.verdict.as_str(),
            one.drift.changes.len()
        ))?;
        for change in &one.drift.changes {
            let mark = if change.breaking { "!" } else { " " };
            let (recorded, _) = shown(&change.recorded);
            let (now, below) = shown(&change.now);
            out(format!("  {mark} {}: {recorded} -> {now}", place(change)))?;
            for line in below {
                out(format!("      {line}"))?;
            }
        }
    }
    Ok(())
}

/// The Markdown report (`--report`): a summary, a table, and each fixture's changes.
fn markdown(drifted: &[Drifted]) -> String {
    let count = |class: DriftClass| drifted.iter().filter(|d| d.drift.verdict == class).count();
    let mut text = format!(
        "# keyless drift\n\n{} fixture(s): {} breaking, {} benign, {} identical.\n\n\
         | fixture | verdict | changes |\n|---|---|---|\n",
        drifted.len(),
        count(DriftClass::Breaking),
        count(DriftClass::Benign),
        count(DriftClass::Identical),
    );
    for one in drifted {
        text.push_str(&format!(
            "| `{}` | {} | {} |\n",
            one.stem,
            one.drift.verdict.as_str(),
            one.drift.changes.len()
        ));
    }
    for one in drifted
        .iter()
        .filter(|d| !d.drift.changes.is_empty() || !d.drift.notes.is_empty())
    {
        text.push_str(&format!(
            "\n## `{}`: {}\n\n",
            one.stem,
            one.drift.verdict.as_str()
        ));
        for change in &one.drift.changes {
            let kind = if change.breaking {
                "**breaking**"
            } else {
                "benign"
            };
            let (recorded, _) = shown(&change.recorded);
            let (now, below) = shown(&change.now);
            text.push_str(&format!(
                "- {kind} {}: `{}` → `{}`\n",
                place(change),
                recorded.replace('`', "'"),
                now.replace('`', "'")
            ));
            if !below.is_empty() {
                // Indented under its item; a fence the diff cannot close.
                text.push_str("\n  ````diff\n");
                for line in below {
                    text.push_str(&format!("  {line}\n"));
                }
                text.push_str("  ````\n");
            }
        }
        for note in &one.drift.notes {
            text.push_str(&format!("- note: {note}\n"));
        }
    }
    if count(DriftClass::Breaking) + count(DriftClass::Benign) > 0 {
        text.push_str(
            "\nBreaking: look at what changed, adapt the gateway if it must, record the fixture \
             again (`keyless record --force …`) and review its golden (`keyless review`). \
             Benign: `keyless drift --update` takes the fresh recordings.\n",
        );
    }
    text
}

/// `--update`: each benign drift's fresh fixture over its committed one (atomically), and its
/// pending golden beside the committed goldens.
fn update(drifted: &[Drifted], work_golden: &Path, golden: &Path) -> anyhow::Result<()> {
    for one in drifted
        .iter()
        .filter(|d| d.drift.verdict == DriftClass::Benign)
    {
        let Some(fresh) = &one.fresh else { continue };
        let bytes = std::fs::read(fresh)?;
        write_atomically(&one.committed, &bytes, SHARED_FILE_MODE)
            .with_context(|| format!("cannot update {}", one.committed.display()))?;
        err(format!(
            "keyless drift: updated {}",
            one.committed.display()
        ));
        let pending = work_golden.join(format!("{}.snap.new", one.stem));
        if pending.is_file() {
            std::fs::create_dir_all(golden)?;
            let target = golden.join(format!("{}.snap.new", one.stem));
            write_atomically(&target, &std::fs::read(&pending)?, SHARED_FILE_MODE)?;
            err(format!(
                "keyless drift: pending golden {} (keyless review)",
                target.display()
            ));
        }
    }
    Ok(())
}
