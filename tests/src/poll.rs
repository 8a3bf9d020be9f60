//! Waiting on what another process does: [`wait_until`] polls a condition under a generous bound, for
//! the few facts a test can only observe from outside (a marker file, a port that listens).

use std::time::Duration;

/// Polls `ready` every 20 ms until it holds or `limit` passes (a generous bound for slow machines);
/// whether it held.
pub async fn wait_until(ready: impl Fn() -> bool, limit: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if ready() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ready()
}
