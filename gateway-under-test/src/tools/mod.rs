//! The agent's tools: the sandbox's virtual-path mapping and the file tools `ls`, `read_file` and
//! `write_file`, with the exact success and error strings of `gateway-contract.md` §8.
//!
//! API CONTRACT (implemented by the tools helper; signatures are fixed, bodies are `todo!()`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::config::ToolLimitsConfig;
use crate::models::ToolSpec;

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

#[allow(unused_variables)]
impl SandboxPaths {
    /// `<home>/users/<user_id>/threads/<thread_id>/user-data/…`, or
    /// `<home>/threads/<thread_id>/user-data/…` without a user.
    pub fn for_thread(home: &Path, user_id: Option<&str>, thread_id: &str) -> SandboxPaths {
        todo!()
    }

    /// Creates the three folders.
    pub fn create_dirs(&self) -> std::io::Result<()> {
        todo!()
    }

    /// `{"workspace_path", "uploads_path", "outputs_path"}` with host paths: the `thread_data`
    /// state channel.
    pub fn thread_data(&self) -> Value {
        todo!()
    }
}

/// Remembers which version of each file the agent last read, for the read-before-write gate.
/// One per gateway instance; keyed by host path (host paths are per thread).
#[derive(Debug, Default)]
pub struct ReadTracker {
    _private: (),
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
}

/// Tools by name. Each app owns one; embedding crates may register more.
#[derive(Debug, Clone, Default)]
pub struct ToolRegistry {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

#[allow(unused_variables)]
impl ToolRegistry {
    /// `ls`, `read_file` and `write_file`.
    pub fn with_builtins() -> ToolRegistry {
        todo!()
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
