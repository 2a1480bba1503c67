//! The one adapter that binds the generic core to `gateway-under-test`: the replay, recording,
//! strict-replay and blocked `ChatModel`s, the hermetic configuration, booting the gateway
//! in-process, and starting its binary as a separate process whose model is at the wire.

pub mod activation;
pub mod boot;
pub mod hermetic;
pub mod process;
pub mod recording_model;
pub mod replay_model;

pub use boot::{BootError, BootedGateway, Extensions, ModelWiring, boot};
pub use hermetic::{ModelBlock, SCENARIO_MODEL};
pub use replay_model::ReplayChatModel;
