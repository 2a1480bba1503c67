//! `cargo xtask recordings`: manage provider-boundary recordings and the `record_replay`
//! configuration (`docs/recording-format.md` §12). A thin layer over `keyless_runner::recordings::RecordingsHome`; it
//! never starts a gateway, so `status` and `off` work even when the configured file is broken.
//!
//! The state directory is `$KEYLESS_STATE_DIR`, else `<repository root>/.harness-state`.
//! Exit codes: 0 success; 1 an error, printed as `error: <message>`; 2 a refused confirmation
//! (or no verb, which prints help).

use std::process::ExitCode;

use keyless_runner::recordings::{RecordingsError, RecordingsHome, terminal_confirmation};
use serde_json::Value;

/// Recordings verbs. Every change takes effect at the next start.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Print the record/replay configuration (mode and file); reads no recording.
    Status {
        /// Print `{"file": …, "mode": …}`.
        #[arg(long)]
        json: bool,
    },
    /// Create a header-only managed recording and switch to record mode.
    Record {
        /// The recording ID (default: `YYYYmmddTHHMMSSZ-<8 hex>`).
        #[arg(long)]
        name: Option<String>,
    },
    /// Check a recording strictly and switch to replay mode.
    Replay {
        /// A managed recording ID, or a path to a 0600 recording file.
        #[arg(value_name = "ID-or-PATH")]
        selector: String,
    },
    /// Switch record/replay off, keeping the configured file.
    Off,
    /// List managed recordings, newest first.
    List {
        /// Print a JSON list of info objects.
        #[arg(long)]
        json: bool,
    },
    /// Print one recording's info object.
    Show {
        /// A managed recording ID, or a path.
        #[arg(value_name = "ID-or-PATH")]
        selector: String,
        /// Print compact JSON.
        #[arg(long)]
        json: bool,
        /// Add `content`: every parsed row, header first (may hold prompts and replies).
        #[arg(long)]
        content: bool,
    },
    /// Delete a managed recording (not the active one).
    Delete {
        /// The managed recording ID.
        #[arg(value_name = "ID")]
        id: String,
        /// Do not ask; required when stdin is not a terminal.
        #[arg(long)]
        yes: bool,
    },
    /// Delete valid, inactive managed recordings not modified for N days.
    Prune {
        /// A positive number of days.
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        older_than_days: i64,
        /// Only report what would be deleted.
        #[arg(long)]
        dry_run: bool,
        /// Do not ask; required when stdin is not a terminal.
        #[arg(long)]
        yes: bool,
    },
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    let home =
        RecordingsHome::from_env(harness::workspace::workspace_root().join(".harness-state"));
    match execute(&home, command) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(err) => {
            eprintln!("error: {err}");
            Ok(ExitCode::from(err.exit_code()))
        }
    }
}

fn execute(home: &RecordingsHome, command: Command) -> Result<(), RecordingsError> {
    match command {
        Command::Status { json } => {
            let status = home.status()?;
            if json {
                println!("{}", status.to_json());
            } else {
                let file = if status.file.is_empty() {
                    "-"
                } else {
                    &status.file
                };
                println!("mode: {}\nfile: {file}", status.mode);
            }
        }
        Command::Record { name } => {
            let recorded = home.record(name.as_deref())?;
            println!("recording {}; takes effect next start", recorded.id);
        }
        Command::Replay { selector } => {
            let stored = home.replay(&selector)?;
            println!("replaying {}; takes effect next start", stored.file);
        }
        Command::Off => {
            home.off()?;
            println!("record/replay disabled; takes effect next start");
        }
        Command::List { json } => {
            let infos = home.list()?;
            if json {
                let list: Vec<Value> = infos.iter().map(|info| info.to_json()).collect();
                println!("{}", Value::Array(list));
            } else {
                for info in &infos {
                    println!("{}", info.recording_id);
                }
            }
        }
        Command::Show {
            selector,
            json,
            content,
        } => {
            let shown = home.show(&selector, content)?.to_json();
            if json {
                println!("{shown}");
            } else {
                println!("{}", pretty(&shown));
            }
        }
        Command::Delete { id, yes } => {
            let deleted = home.delete(&id, &mut terminal_confirmation("delete", yes))?;
            println!("deleted {}", deleted.id);
        }
        Command::Prune {
            older_than_days,
            dry_run,
            yes,
        } => {
            let report = home.prune(
                older_than_days,
                dry_run,
                &mut terminal_confirmation("prune", yes),
            )?;
            println!("{}", pretty(&report.to_json()));
        }
    }
    Ok(())
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}
