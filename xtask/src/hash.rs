//! `cargo xtask hash`: the replay key of a JSON list of messages.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use replay_core::{DEFAULT_CALLER, normalize_caller, replay_key};
use serde_json::{Value, json};

/// Arguments of `hash`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The caller (`lead_agent`, `middleware:title`, `suggest_agent`, `subagent:<name>`); it is
    /// normalised and aliased as the replay model does. Default: `lead_agent`.
    #[arg(long)]
    caller: Option<String>,
    /// A JSON file holding a list of messages: flat LangChain-style dicts (`type`, `content`,
    /// optional `name`, `tool_calls`, `additional_kwargs`, `id`, `tool_call_id`) or the
    /// `{"type", "data"}` form fixtures use.
    #[arg(long)]
    messages: PathBuf,
}

/// Prints `{"caller", "conversation_hash", "input_hash", "canonical"}`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(&args.messages)
        .with_context(|| format!("cannot read {}", args.messages.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("{} is not JSON", args.messages.display()))?;
    let Value::Array(messages) = value else {
        bail!(
            "{}: expected a JSON list of messages",
            args.messages.display()
        );
    };
    for (index, message) in messages.iter().enumerate() {
        if !message.is_object() {
            bail!(
                "{}: message {index} is not an object",
                args.messages.display()
            );
        }
    }
    let caller = normalize_caller(args.caller.as_deref().unwrap_or(DEFAULT_CALLER));
    let key = replay_key(&caller, &messages);
    let out = json!({
        "caller": key.caller,
        "conversation_hash": key.conversation_hash,
        "input_hash": key.input_hash,
        "canonical": key.canonical,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(ExitCode::SUCCESS)
}
