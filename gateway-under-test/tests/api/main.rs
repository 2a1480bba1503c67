//! API tests for `gateway-under-test`: every route over real HTTP on 127.0.0.1, with a scripted
//! model. One binary, one module per topic.

mod helpers;

mod auth;
mod binary;
mod concurrency;
mod langgraph_sdk;
mod runs;
mod scenario;
mod seed;
mod slow_clients;
mod suggestions;
mod threads;
