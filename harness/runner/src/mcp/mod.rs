//! The MCP boundary (`docs/replay-and-fixtures.md` §12): the MCP servers a gateway uses
//! (`[mcp.<name>]`), recorded and replayed over the one exchange engine
//! (`replay_core::exchange`) like every boundary besides the chat wire.
//!
//! - `message`: the protocol core: the `Boundary` impl (key, label), the recorded answer and
//!   its rendering with the client's ids;
//! - `serve`: the Streamable HTTP route `/_keyless/mcp/<name>` (replay or record);
//! - `stateless`: the stateless revision (2026-07-28): which requests speak it, and its
//!   `Mcp-Method`/`Mcp-Name` headers checked against the body;
//! - `record`: the relay to the real server (HTTP, or a process per stdio session);
//! - `bridge`: the stdio stand-in (`keyless mcp-stdio`), one line per message to the route;
//! - `contract`: the servers' listed tools, prompts and resources as a golden shape.

mod bridge;
mod contract;
mod message;
mod record;
mod serve;
mod stateless;

pub use bridge::{BridgeError, bridge_stdio};
pub use contract::contract_shape;
pub use message::{
    AnswerForm, Incoming, MISS_ERROR_CODE, McpAnswer, McpBoundary, McpCall, MessageError, Outcome,
    PROTOCOL_VERSION_META, SESSION_HEADER,
};
pub use record::{McpRecordError, McpRecorder, McpUpstream, RELAY_TIME_LIMIT, WriteExchange};
pub use serve::{ActiveExchanges, MCP_ROUTE, McpExchanges, McpServers, McpSource, mcp_router};
pub use stateless::{
    FIRST_MODERN_VERSION, HEADER_MISMATCH_CODE, HeaderMismatch, check_headers, is_modern,
};
