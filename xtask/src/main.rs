//! `cargo xtask`: developer commands for this workspace.

use clap::{Parser, Subcommand};

/// Developer commands for the replay workspace.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if cli.command.is_none() {
        use clap::CommandFactory;
        Cli::command().print_help()?;
    }
    Ok(())
}
