//! `keyless accept` and `keyless review`: pending goldens (`<name>.snap.new`, insta's format)
//! accepted, one by one or all, or reviewed diff by diff. No Rust toolchain is needed; in a Rust
//! repository `cargo insta review` sees the same files.

use std::io::BufRead;
use std::process::ExitCode;

use keyless_runner::goldens::exists_regular;
use keyless_runner::goldens::{
    Pending, accept_pending, find_pending, pending_diff, reject_pending,
};

use crate::Folders;
use crate::output::{out, prompt};

/// Arguments of `accept`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:
  keyless accept                          # every pending golden
  keyless accept write_read_file.flash    # one")]
pub struct AcceptArgs {
    #[command(flatten)]
    pub folders: Folders,
    /// The fixture whose pending golden to accept (default: all).
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
}

/// Arguments of `review`.
#[derive(Debug, clap::Args)]
#[command(after_help = "Example:
  keyless review      # for each pending golden: its diff, then accept (y), reject (n) or skip (s)")]
pub struct ReviewArgs {
    #[command(flatten)]
    pub folders: Folders,
}

/// Runs `accept`.
pub fn accept(args: AcceptArgs) -> anyhow::Result<ExitCode> {
    let golden = args.folders.resolve()?.golden;
    let chosen: Vec<Pending> = match &args.name {
        Some(name) => vec![find_pending(&golden, name)?],
        None => keyless_runner::goldens::pending(&golden)?,
    };
    if chosen.is_empty() {
        out(format!("no pending goldens in {}", golden.display()))?;
    }
    for one in &chosen {
        accept_pending(one)?;
        out(format!("accepted {}", one.golden_path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `review`: reads one answer per pending golden from standard input.
pub fn review(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let golden = args.folders.resolve()?.golden;
    let all = keyless_runner::goldens::pending(&golden)?;
    if all.is_empty() {
        out(format!("no pending goldens in {}", golden.display()))?;
        return Ok(ExitCode::SUCCESS);
    }
    let stdin = std::io::stdin();
    let mut answers = stdin.lock().lines();
    for (index, one) in all.iter().enumerate() {
        // The diff first: a link or a binary snapshot is refused before anything is asked.
        let diff = pending_diff(one)?;
        out(format!(
            "[{}/{}] {} ({})",
            index + 1,
            all.len(),
            one.stem,
            if exists_regular(&one.golden_path)? {
                "changed"
            } else {
                "new"
            }
        ))?;
        prompt(&diff)?;
        loop {
            prompt(format!(
                "accept {}? [y]es, [n]o (delete it), [s]kip: ",
                one.stem
            ))?;
            let Some(answer) = answers.next().transpose()? else {
                out("\nno answer: the rest stay pending")?;
                return Ok(ExitCode::SUCCESS);
            };
            match answer.trim() {
                "y" | "yes" => {
                    accept_pending(one)?;
                    out(format!("accepted {}", one.golden_path.display()))?;
                }
                "n" | "no" => {
                    reject_pending(one)?;
                    out(format!("rejected: deleted {}", one.new_path.display()))?;
                }
                "s" | "skip" => out(format!("skipped: {} stays pending", one.new_path.display()))?,
                _ => continue,
            }
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}
