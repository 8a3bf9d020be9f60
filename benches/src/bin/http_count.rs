//! The MCP HTTP path per request (issue 28; not run by CI): `tools/call` of `add` over one keep-alive
//! HTTP/1.1 connection on loopback, against yiem's `McpHttpServer` and against rmcp's own
//! `StreamableHttpService` over its `#[tool_router]` server, both stateless with JSON answers (the
//! servers of `http_load`, in `yiem_benches::http`). Each server runs on its own thread with its own
//! current-thread Tokio runtime, so everything it does for a request (hyper, rmcp's service, the tasks it
//! spawns, the tool) runs on that thread; the client runs on the main thread. Every answer is checked.
//!
//! ```sh
//! http_count yiem N            # N calls to yiem's server (for callgrind, see http-callgrind.sh)
//! http_count rmcp N            # the same against rmcp's server (a server built per request)
//! http_count rmcp-shared N     # rmcp's server, one built once and cloned per request
//! http_count rmcp-guarded N    # rmcp-shared behind hyper's header-read time limit, as yiem's server is
//! http_count time N ROUNDS     # requests/s: ROUNDS rounds of N calls per server, each round starting
//!                              # with the next server; yiem over each, the median of the rounds
//! ```
//!
//! `benches/http-callgrind.sh` counts the server thread's instructions per request with
//! `valgrind --tool=callgrind --separate-threads=yes`.

use std::time::Instant;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use yiem_benches::http::{self, RmcpHttp, rmcp_server, yiem_server};

/// The servers, yiem's first.
const SERVERS: [&str; 4] = ["yiem", "rmcp", "rmcp-shared", "rmcp-guarded"];

/// Starts the server `kind` on a thread of its own; returns its address.
fn start(kind: &str) -> String {
    let kind = kind.to_owned();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("{kind}-server"))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let address = match kind.as_str() {
                    "yiem" => yiem_server().await,
                    "rmcp" => rmcp_server(RmcpHttp::PerRequest).await,
                    "rmcp-shared" => rmcp_server(RmcpHttp::Shared).await,
                    "rmcp-guarded" => rmcp_server(RmcpHttp::Guarded).await,
                    other => panic!("unknown server {other}; servers: {}", SERVERS.join(" ")),
                };
                sender.send(address).unwrap();
                std::future::pending::<()>().await
            })
        })
        .unwrap();
    receiver.recv().expect("the server starts")
}

/// One keep-alive connection to `address`.
async fn connect(address: &str) -> SendRequest<Full<Bytes>> {
    let stream = TcpStream::connect(address).await.unwrap();
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(connection);
    sender
}

/// `n` calls, one after another, on `sender`'s connection.
async fn calls(sender: &mut SendRequest<Full<Bytes>>, address: &str, n: usize) {
    for id in 0..n {
        if let Err(error) = http::call(sender, address, id).await {
            panic!("call {id} failed: {error}");
        }
    }
}

fn main() {
    let mut argv = std::env::args().skip(1);
    let usage =
        "usage: http_count (yiem|rmcp|rmcp-shared|rmcp-guarded) N | http_count time N ROUNDS";
    let (Some(mode), Some(n)) = (argv.next(), argv.next()) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let n: usize = n.parse().expect("N: a number");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if mode != "time" {
        let address = start(&mode);
        runtime.block_on(async {
            let mut sender = connect(&address).await;
            calls(&mut sender, &address, n).await;
        });
        return;
    }
    let rounds: usize = argv
        .next()
        .map_or(10, |r| r.parse().expect("ROUNDS: a number"));
    let servers = SERVERS.map(|name| (name, start(name)));
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); servers.len()];
    runtime.block_on(async {
        // A warm-up round each, not counted.
        for (_, address) in &servers {
            calls(&mut connect(address).await, address, n).await;
        }
        // Each round starts with the next server, so that no server always runs first (or always
        // after the same one) when the machine's speed drifts within a round.
        for round in 0..rounds {
            for turn in 0..servers.len() {
                let at = (round + turn) % servers.len();
                let address = &servers[at].1;
                let mut sender = connect(address).await;
                let started = Instant::now();
                calls(&mut sender, address, n).await;
                rates[at].push(n as f64 / started.elapsed().as_secs_f64());
            }
        }
    });
    // yiem's rate over each server's in the same round (the rounds run back to back, so the machine is
    // in much the same state for both): steadier than the ratio of two medians when the load moves.
    let sorted = |mut values: Vec<f64>| {
        values.sort_by(f64::total_cmp);
        values
    };
    println!("| server | requests/s, median | min | max | yiem / server, median of rounds |");
    println!("|---|---:|---:|---:|---:|");
    for ((name, _), server) in servers.iter().zip(&rates) {
        let paired = sorted(
            rates[0]
                .iter()
                .zip(server)
                .map(|(yiem, other)| yiem / other)
                .collect(),
        );
        let server = sorted(server.clone());
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.3} |",
            server[server.len() / 2],
            server[0],
            server[server.len() - 1],
            paired[paired.len() / 2]
        );
    }
}
