use std::future::Future;

use yiem_core::tool;

/// Returns a future from a plain fn instead of being async.
#[tool]
fn fetch() -> impl Future<Output = String> {
    async { String::new() }
}

fn main() {}
