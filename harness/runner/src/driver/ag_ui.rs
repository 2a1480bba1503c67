//! The AG-UI dialect (`--api ag-ui`, `docs/testing-your-own-gateway.md`, "AG-UI"): each prompt is
//! a `RunAgentInput` POSTed to the agent's endpoint with `Accept: text/event-stream`, and each
//! follow-up carries the messages and state the earlier runs produced, assembled by
//! [`client::Conversation`] as `@ag-ui/client`'s `HttpAgent` assembles them.

pub mod client;
