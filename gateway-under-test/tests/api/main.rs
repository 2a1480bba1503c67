//! API tests for `gateway-under-test`: every route over real HTTP on 127.0.0.1, with a scripted
//! model, and the check of the crate's module layers. One binary, one module per topic.

mod vocabulary;

mod auth;
mod binary;
mod compat;
mod concurrency;
mod errors;
mod langgraph_sdk;
mod layers;
mod message_limits;
mod messages_page;
mod providers;
mod runs;
mod scenario;
mod seed;
mod slow_clients;
mod storage;
mod stream_failure;
mod suggestions;
mod threads;
mod web_client;
