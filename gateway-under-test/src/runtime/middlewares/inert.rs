//! Middlewares of DeerFlow's lead-agent chain whose subsystem this gateway does not have. They
//! run as nodes in DeerFlow's order, so a four-mode stream carries their `updates` frames
//! (`{"<Middleware>.<hook>": null}`), and write nothing (`docs/gateway-contract.md` §7.3):
//!
//! - `DurableContextMiddleware` keeps DeerFlow's durable context (pinned facts that survive
//!   summarisation) in the model's view; there is no summarisation or durable store here.
//! - `TodoMiddleware` (plan mode only) keeps the `todos` channel and its `write_todos` tool in
//!   step; neither exists here (§6.2).
//! - `MemoryMiddleware` queues the finished conversation for DeerFlow's long-term memory; memory
//!   is off (configuration must keep it off).

use async_trait::async_trait;

use crate::runtime::RunFlags;
use crate::runtime::middleware::{Hook, Middleware};

/// DeerFlow's durable context, without a durable store: nodes that write nothing.
#[derive(Debug, Default)]
pub struct DurableContextMiddleware;

#[async_trait]
impl Middleware for DurableContextMiddleware {
    fn name(&self) -> &'static str {
        "DurableContextMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::BeforeModel, Hook::AfterModel]
    }
}

/// DeerFlow's plan-mode to-do list, without the `todos` channel: nodes that write nothing, in
/// plan mode only.
#[derive(Debug, Default)]
pub struct TodoMiddleware;

#[async_trait]
impl Middleware for TodoMiddleware {
    fn name(&self) -> &'static str {
        "TodoMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &Hook::ALL
    }

    fn applies_to(&self, flags: &RunFlags) -> bool {
        flags.is_plan_mode()
    }
}

/// DeerFlow's long-term memory, which is off: an after-agent node that writes nothing.
#[derive(Debug, Default)]
pub struct MemoryMiddleware;

#[async_trait]
impl Middleware for MemoryMiddleware {
    fn name(&self) -> &'static str {
        "MemoryMiddleware"
    }

    fn hooks(&self) -> &'static [Hook] {
        &[Hook::AfterAgent]
    }
}
