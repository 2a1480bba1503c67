//! `cargo xtask fixtures`: fixture maintenance.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use harness::adapter::Extensions;
use harness::record_run::record_with_stand_in;
use harness::scenarios::shipped;
use harness::workspace::fixtures_dir;
use replay_core::MissingGolden;

use crate::record::{print_summary, write_fixture};

/// Fixture maintenance verbs.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Rebuild the shipped fixtures from the scripted OpenAI-compatible stand-in (no key).
    ///
    /// Each scenario of `harness/src/scenarios.rs` is driven through the real gateway and its
    /// real OpenAI provider, pointed at a local stand-in server that answers from a script; every
    /// model call is recorded into a fixture whose `model` is `scripted-openai-stand-in`. Then
    /// run `cargo test` and `cargo insta review` to accept the goldens.
    StandIn {
        /// Where to write `<scenario>.<mode>.json`.
        #[arg(long, default_value_os_t = fixtures_dir())]
        out: PathBuf,
        /// Only this scenario (repeatable).
        #[arg(long = "only", value_name = "SCENARIO")]
        only: Vec<String>,
    },
    /// Check every fixture: it replays framed and with no miss, its shapes equal its golden, and
    /// which of its turns no replay used (information only). Exits 1 when any check fails, with
    /// a report of why.
    Check,
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::StandIn { out, only } => stand_in(out, only),
        Command::Check => check(),
    }
}

fn stand_in(out: PathBuf, only: Vec<String>) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    let runtime = crate::runtime()?;
    for stand_in in shipped() {
        if !only.is_empty() && !only.contains(&stand_in.scenario.id) {
            continue;
        }
        let name = format!("{}.json", stand_in.scenario.stem());
        println!("{name}: driving the gateway against the stand-in…");
        let recorded = runtime
            .block_on(record_with_stand_in(
                &stand_in.scenario,
                stand_in.replies.clone(),
                Extensions::default(),
            ))
            .with_context(|| format!("recording {name}"))?;
        print_summary(&recorded.summary, &recorded.fixture);
        let path = out.join(&name);
        write_fixture(&path, &recorded.fixture)?;
        println!("  wrote {}", path.display());
    }
    println!("next: cargo test, then cargo insta review to accept the goldens");
    Ok(ExitCode::SUCCESS)
}

fn check() -> anyhow::Result<ExitCode> {
    let files = crate::replay::all_fixtures()?;
    let runtime = crate::runtime()?;
    let mut failed = false;
    for path in files {
        let run = runtime
            .block_on(harness::in_process::run(&path))
            .with_context(|| format!("replaying {}", path.display()))?;
        let verdict = run.verdict();
        let unused: Vec<String> = verdict
            .unused_turns
            .iter()
            .map(|&index| {
                let caller = run.fixture.turns[index]
                    .caller
                    .as_deref()
                    .unwrap_or("(legacy)");
                format!("{index} ({caller})")
            })
            .collect();
        println!(
            "{}: golden {}, misses {}, unused turns [{}]",
            run.stem(),
            verdict.golden.as_str(),
            verdict.misses.len(),
            unused.join(", ")
        );
        if !verdict.passes(MissingGolden::Fails) {
            failed = true;
            eprintln!("{}\n", run.report(&verdict));
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
