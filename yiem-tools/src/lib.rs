//! Built-in tools for yiem agents (files, shell, time) and the `yiem` command-line program.
//!
//! The crate is being filled in; see the project's issues for what comes next.
