//! `cargo xtask model-server`: `keyless model-server` (the same arguments and code,
//! `keyless::model_server`), with this workspace's `fixtures/` as the default fixture folder.
//! Point a gateway's OpenAI base URL at it, then drive the gateway with
//! `cargo xtask replay --gateway-url`.

use std::process::ExitCode;

use harness::workspace::fixtures_dir;

/// Arguments of `model-server`: `keyless model-server`'s.
pub type Args = keyless::model_server::Args;

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    if args.folders.config.is_none() && args.folders.fixtures.is_none() {
        args.folders.fixtures = Some(fixtures_dir());
    }
    Ok(keyless::exit_code(keyless::model_server::run(args)))
}
