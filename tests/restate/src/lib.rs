//! Shared by the durable-agent tests and the `restate-agent` binary: the scenario ([`durable`]) and the
//! Restate server and service processes the tests start ([`server`]).

pub mod durable;
pub mod mcp_client;
pub mod server;
pub mod spans;
pub mod tasks;

/// Every Rust snippet of the workspace's README.md, compiled as a doctest (see `build.rs`).
#[doc = include_str!(concat!(env!("OUT_DIR"), "/readme.md"))]
pub mod readme {}
