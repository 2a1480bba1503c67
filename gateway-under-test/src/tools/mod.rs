//! The agent's tools: the sandbox's virtual-path mapping and the file tools `ls`, `read_file` and
//! `write_file`, with the exact success and error strings of `docs/gateway-contract.md` §8.
//!
//! Layout: [`paths`] maps virtual paths onto the thread's host folders; `beneath` resolves and
//! opens them beneath the thread's `user-data` folder at the operating-system level (regular
//! files only, no hard-linked files for writing); [`read_tracker`] holds the read-before-write
//! memory; [`tool_meta`] the metadata stamped on every tool message; `ls`, `read_file` and
//! `write_file` are one submodule each; `args` and `output` hold the argument schema and parsing, and the output
//! shaping, they share.
//!
//! Conventions shared by the three tools (the contract leaves them open, §14):
//!
//! - **Refusals name the virtual path.** A path outside the three roots (`workspace`, `uploads`,
//!   `outputs`), a `..` segment, a relative path, a read-only or unmounted mount
//!   (`/mnt/skills/…`), a symlink leading out of the roots (a root itself replaced by one
//!   included) is refused with the tool's
//!   permission message: `Error: Permission denied: <path>` for `ls`,
//!   `Error: Permission denied reading file: <path>` for `read_file`,
//!   `Error: Permission denied writing to file: <path>` for `write_file`, where `<path>` is the
//!   path exactly as the model supplied it. Host paths never appear in tool output.
//! - **Special files and hard links.** Reading or writing a FIFO, socket or device appends
//!   ` (not a regular file)` to the permission text; writing a file with more than one hard link
//!   appends ` (it has other hard links)`. Neither ever blocks.
//! - **Bad arguments** produce `Error: Missing required argument '<name>'` or
//!   `Error: Argument '<name>' must be <kind>`; an empty `path` gives
//!   `Error: Argument 'path' must not be empty`.
//! - **Long errors.** Any `Error: …` text longer than 2000 characters keeps its head and tail and
//!   replaces the middle with `\n... [<N> chars omitted] ...\n`, so that the whole text is exactly
//!   2000 characters.
//! - **Blocking I/O** runs on tokio's blocking pool (`spawn_blocking`), never on the runtime's
//!   worker threads.

mod args;
mod beneath;
mod ls;
mod output;
pub mod paths;
mod read_file;
pub mod read_tracker;
pub mod tool_meta;
mod write_file;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::Value;

use crate::config::ToolLimitsConfig;
use crate::models::ToolSpec;

pub use ls::LsTool;
pub use paths::PathError;
pub use read_file::ReadFileTool;
pub use tool_meta::{ToolOutput, tool_message};
pub use write_file::WriteFileTool;

/// The host folders behind `/mnt/user-data/{workspace,uploads,outputs}` for one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxPaths {
    /// Host folder of `/mnt/user-data` (the common parent).
    pub user_data: PathBuf,
    /// Host folder of `/mnt/user-data/workspace`.
    pub workspace: PathBuf,
    /// Host folder of `/mnt/user-data/uploads`.
    pub uploads: PathBuf,
    /// Host folder of `/mnt/user-data/outputs`.
    pub outputs: PathBuf,
}

/// Remembers which version of each file the agent last read, for the read-before-write gate.
/// One per gateway instance; keyed by host path (host paths are per thread). A version is the
/// SHA-256 of the file's bytes (see [`read_tracker`]).
#[derive(Debug, Default)]
pub struct ReadTracker {
    /// Canonical host path → version last read. A plain mutex: every critical section is a
    /// single map operation, never held across I/O or an `.await`.
    versions: Mutex<HashMap<PathBuf, String>>,
}

/// What a tool call can see.
#[derive(Debug, Clone, Copy)]
pub struct ToolContext<'a> {
    /// The thread's sandbox folders.
    pub paths: &'a SandboxPaths,
    /// Size limit and read-before-write switch.
    pub limits: &'a ToolLimitsConfig,
    /// The read-before-write memory.
    pub reads: &'a ReadTracker,
}

/// A tool the agent can call. Failures are returned as the tool's text (`Error: …`), never as
/// Rust errors: the model reads them.
#[async_trait]
pub trait Tool: Send + Sync + std::fmt::Debug {
    /// Name, description and argument schema, as bound to the model.
    fn spec(&self) -> ToolSpec;
    /// Runs the tool with the model's arguments and returns the tool message text.
    async fn call(&self, args: &Value, context: ToolContext<'_>) -> String;

    /// Runs the tool and returns its text with the `additional_kwargs` its message carries
    /// (`read_file`'s read mark). The default is [`Tool::call`]'s text alone.
    async fn run(&self, args: &Value, context: ToolContext<'_>) -> ToolOutput {
        ToolOutput::text(self.call(args, context).await)
    }
}

/// Tools by name. Each app owns one; embedding crates may register more.
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolRegistry {
    /// `ls`, `read_file` and `write_file`.
    pub fn with_builtins() -> ToolRegistry {
        let mut registry = ToolRegistry::default();
        registry.register(Arc::new(LsTool));
        registry.register(Arc::new(ReadFileTool));
        registry.register(Arc::new(WriteFileTool));
        registry
    }

    /// Registers (or replaces) a tool under its spec's name.
    pub fn register(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name, tool);
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }
}
