//! The agent runtime: state and reducers, the middleware mechanism and its built-in chain, the
//! lead-agent loop, run execution and the per-run event stream.

pub mod agent;
pub mod context;
pub mod flags;
pub mod message_limits;
pub mod middleware;
pub mod middlewares;
pub mod prompt;
pub mod runs;
pub mod state;
pub mod stream;

pub use context::{RunContext, StreamModes};
pub use flags::RunFlags;
pub use middleware::{GraphError, Middleware, ModelCall};
pub use state::{AgentState, StateUpdate};
