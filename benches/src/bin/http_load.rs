//! The HTTP load test (issue 16; not run by CI): 1,000 concurrent `tools/call` requests on loopback, each
//! on its own connection, started together behind a barrier, against yiem's `McpHttpServer` and against
//! the same tool in rmcp's own `#[tool_router]` server behind rmcp's `StreamableHttpService` on hyper —
//! both stateless, JSON responses, in this process, in the same run, rounds alternating. Every answer is
//! checked (`42 (answer)`, not an error); a request that fails or is answered wrongly counts as lost.
//!
//! ```sh
//! cd benches && cargo run --release --bin http_load -- 10   # rounds per server (default 10)
//! ```
//!
//! Prints requests/s (1,000 / the round's wall time, the median round) and the p50/p99 latency of all
//! requests (connect to last byte), as Markdown rows for BENCHMARKS.md.

use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Barrier;
use yiem_benches::http::{self, RmcpHttp, rmcp_server, yiem_server};

const CONCURRENT: usize = 1000;

/// One `tools/call` on a fresh connection: its latency, or why it failed.
async fn call(address: &str, id: usize) -> Result<Duration, String> {
    let started = Instant::now();
    let stream = TcpStream::connect(address)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(connection);
    http::call(&mut sender, address, id).await?;
    Ok(started.elapsed())
}

/// One round: `CONCURRENT` calls released together. The wall time, the latencies, the failures.
async fn round(address: &str) -> (Duration, Vec<Duration>, Vec<String>) {
    let barrier = Arc::new(Barrier::new(CONCURRENT + 1));
    let tasks: Vec<_> = (0..CONCURRENT)
        .map(|id| {
            let (barrier, address) = (Arc::clone(&barrier), address.to_owned());
            tokio::spawn(async move {
                barrier.wait().await;
                call(&address, id).await
            })
        })
        .collect();
    barrier.wait().await;
    let started = Instant::now();
    let (mut latencies, mut failures) = (Vec::new(), Vec::new());
    for task in tasks {
        match task.await {
            Ok(Ok(latency)) => latencies.push(latency),
            Ok(Err(error)) => failures.push(error),
            Err(error) => failures.push(error.to_string()),
        }
    }
    (started.elapsed(), latencies, failures)
}

#[derive(Default)]
struct Tally {
    walls: Vec<Duration>,
    latencies: Vec<Duration>,
    failures: Vec<String>,
}

impl Tally {
    fn row(&mut self, name: &str) -> String {
        self.walls.sort();
        self.latencies.sort();
        let wall = self.walls[self.walls.len() / 2];
        let at = |q: f64| {
            self.latencies
                [((self.latencies.len() as f64 * q) as usize).min(self.latencies.len() - 1)]
        };
        format!(
            "| {name} | {} | {} | {:.0} | {:.1} ms | {:.1} ms |",
            self.latencies.len() + self.failures.len(),
            self.failures.len(),
            CONCURRENT as f64 / wall.as_secs_f64(),
            at(0.50).as_secs_f64() * 1e3,
            at(0.99).as_secs_f64() * 1e3,
        )
    }
}

#[tokio::main]
async fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .map_or(10, |n| n.parse().expect("rounds: a number"));
    let servers = [
        ("yiem `McpHttpServer`", yiem_server().await),
        (
            "rmcp `#[tool_router]` + `StreamableHttpService`",
            rmcp_server(RmcpHttp::PerRequest).await,
        ),
    ];
    let mut tallies: Vec<Tally> = servers.iter().map(|_| Tally::default()).collect();
    // A warm-up round each, not counted.
    for (_, address) in &servers {
        let _ = round(address).await;
    }
    for _ in 0..rounds {
        for ((_, address), tally) in servers.iter().zip(&mut tallies) {
            let (wall, latencies, failures) = round(address).await;
            tally.walls.push(wall);
            tally.latencies.extend(latencies);
            tally.failures.extend(failures);
        }
    }
    println!("| server | calls | lost or failed | requests/s (median round) | p50 | p99 |");
    println!("|---|---:|---:|---:|---:|---:|");
    for ((name, _), tally) in servers.iter().zip(&mut tallies) {
        println!("{}", tally.row(name));
        if let Some(first) = tally.failures.first() {
            eprintln!("{name}: first failure: {first}");
        }
    }
}
