//! The one adapter that binds the generic core to `gateway-under-test`: the replay, recording,
//! strict-replay and blocked `ChatModel`s, the hermetic configuration, booting the gateway
//! in-process, and starting its binary as a separate process whose model is at the wire.

pub mod activation;
pub(crate) mod boot;
pub mod hermetic;
pub mod process;
pub(crate) mod recording_model;
pub(crate) mod replay_model;

pub use boot::{BootError, Extensions};
