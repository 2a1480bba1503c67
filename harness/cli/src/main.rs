//! The `keyless` command: see `keyless --help` and `docs/testing-your-own-gateway.md`.

use clap::Parser;

fn main() -> std::process::ExitCode {
    keyless::run(keyless::Cli::parse())
}
