//! Waiting on what another process does: [`wait_until`] polls a condition under a generous bound, for
//! the few facts a test can only observe from outside (a marker file, a port that [`listens`]), and
//! [`free_port`] for the servers those processes start.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::time::Duration;

/// A loopback port nobody listens on now, and one this process has not handed out before: two tests
/// running at once never get the same port for their servers (the system may offer a port again as soon
/// as the listener that found it is closed, before the first test's server has bound it).
pub fn free_port() -> u16 {
    static GIVEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .expect("a free loopback port")
            .port();
        if given.insert(port) {
            return port;
        }
    }
}

/// Whether something accepts connections at `address` (waiting at most 200 ms for it).
pub fn listens(address: SocketAddr) -> bool {
    TcpStream::connect_timeout(&address, Duration::from_millis(200)).is_ok()
}

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
