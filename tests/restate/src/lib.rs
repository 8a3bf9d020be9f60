//! Shared by the durable-agent tests and the `restate-agent` binary: the scenario ([`durable`]) and the
//! Restate server and service processes the tests start ([`server`]).

pub mod durable;
pub mod server;
