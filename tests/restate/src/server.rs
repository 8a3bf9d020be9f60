//! A real Restate server for the durable-agent tests: `@restatedev/restate-server` from npm (pinned, in
//! the target directory's npm folder, installed on first use as `.ci/run` installs it up front), started
//! with its data in a fresh temporary folder, on loopback, on free ports; and the `restate-agent` service
//! binary as a subprocess the tests can SIGKILL and start again.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use serde_json::{Value, json};

use yiem_tests::installed::npm_package;
pub use yiem_tests::poll::free_port;
use yiem_tests::poll::{listens, wait_until};

/// The pinned server release (also in `.ci/run`).
pub const RESTATE_SERVER_VERSION: &str = "1.7.12";

/// A generous bound for anything a loaded machine does (a server start, a retry after a crash).
pub const PATIENCE: Duration = Duration::from_secs(90);

/// The server binary the npm package ships for this platform.
pub fn server_binary() -> PathBuf {
    let folder = npm_package("@restatedev/restate-server", RESTATE_SERVER_VERSION);
    let arch = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => panic!("@restatedev/restate-server ships no binary for {other}"),
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    folder
        .join("node_modules/@restatedev")
        .join(format!("restate-server-{os}-{arch}"))
        .join("bin/restate-server")
}

/// A fresh, empty folder under the system's temporary folder, removed with [`TempDir`]'s drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A new folder named for `what`.
    pub fn new(what: &str) -> TempDir {
        static COUNT: AtomicU32 = AtomicU32::new(0);
        let path = std::env::temp_dir().join(format!(
            "yiem-{what}-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("the temporary folder is created");
        TempDir(path)
    }

    /// A path inside the folder.
    pub fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A Restate server, killed on drop.
pub struct RestateServer {
    child: Child,
    /// The ingress, `http://127.0.0.1:<port>`.
    pub ingress: String,
    /// The admin API.
    pub admin: String,
    http: reqwest::Client,
    _data: TempDir,
}

impl RestateServer {
    /// Starts a server and waits until its ingress answers.
    pub async fn start() -> RestateServer {
        let binary = server_binary();
        let data = TempDir::new("restate-server");
        let (fabric, ingress, admin) = (free_port(), free_port(), free_port());
        let log = std::fs::File::create(data.join("server.log")).expect("the log file opens");
        let child = Command::new(&binary)
            .arg("--no-logo")
            .current_dir(&data.0)
            .env("RESTATE_BASE_DIR", &data.0)
            .env("RESTATE_NODE_NAME", "yiem-test")
            .env("RESTATE_LISTEN_MODE", "tcp")
            .env("RESTATE_BIND_ADDRESS", format!("127.0.0.1:{fabric}"))
            .env(
                "RESTATE_ADVERTISED_ADDRESS",
                format!("http://127.0.0.1:{fabric}/"),
            )
            .env(
                "RESTATE_INGRESS__BIND_ADDRESS",
                format!("127.0.0.1:{ingress}"),
            )
            .env("RESTATE_ADMIN__BIND_ADDRESS", format!("127.0.0.1:{admin}"))
            .env("RESTATE_DEFAULT_NUM_PARTITIONS", "2")
            .env("RESTATE_ROCKSDB_TOTAL_MEMORY_SIZE", "256MB")
            .env("RESTATE_DISABLE_TELEMETRY", "true")
            .env("RESTATE_LOG_FORMAT", "compact")
            .env("RESTATE_LOG_DISABLE_ANSI_CODES", "true")
            // A killed service is retried soon, and for long enough on a loaded machine.
            .env("RESTATE_DEFAULT_RETRY_POLICY__INITIAL_INTERVAL", "50ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_INTERVAL", "500ms")
            .env("RESTATE_DEFAULT_RETRY_POLICY__MAX_ATTEMPTS", "1000")
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("{} does not start: {e}", binary.display()));
        let server = RestateServer {
            child,
            ingress: format!("http://127.0.0.1:{ingress}"),
            admin: format!("http://127.0.0.1:{admin}"),
            http: reqwest::Client::new(),
            _data: data,
        };
        let http = server.http.clone();
        let health = format!("{}/restate/health", server.ingress);
        let mut ready = false;
        let deadline = tokio::time::Instant::now() + PATIENCE;
        while tokio::time::Instant::now() < deadline {
            if let Ok(response) = http.get(&health).send().await
                && response.status().is_success()
            {
                ready = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(
            ready,
            "the Restate server did not become healthy: {}",
            server.log()
        );
        server
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self._data.join("server.log")).unwrap_or_default()
    }

    /// Registers the deployment at `uri` (again, after a change: `force`).
    pub async fn register(&self, uri: &str) {
        let response = self
            .http
            .post(format!("{}/deployments", self.admin))
            .json(&json!({"uri": uri, "force": true}))
            .send()
            .await
            .expect("the admin API answers");
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        assert!(status.is_success(), "registering {uri}: {status} {body}");
    }

    /// Calls `handler` of the agent `conversation` and waits for its answer: the status and the body.
    pub async fn call(
        &self,
        conversation: &str,
        handler: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let request = self
            .http
            .post(format!("{}/Agent/{conversation}/{handler}", self.ingress))
            .timeout(PATIENCE);
        let request = match body {
            Some(body) => request.json(&body),
            None => request,
        };
        answer(request.send().await.expect("the ingress answers")).await
    }

    /// Starts a run without waiting for it: the invocation id.
    pub async fn send_prompt(&self, conversation: &str, prompt: &str) -> String {
        let (status, body) = answer(
            self.http
                .post(format!("{}/Agent/{conversation}/start/send", self.ingress))
                .json(&json!({"prompt": prompt}))
                .send()
                .await
                .expect("the ingress answers"),
        )
        .await;
        assert!((200..300).contains(&status), "send: {status} {body}");
        body["invocationId"]
            .as_str()
            .unwrap_or_else(|| panic!("no invocationId in {body}"))
            .to_owned()
    }

    /// Waits for the invocation `id` to finish: its status and answer.
    pub async fn attach(&self, id: &str) -> (u16, Value) {
        let response = self
            .http
            .get(format!("{}/restate/invocation/{id}/attach", self.ingress))
            .timeout(PATIENCE)
            .send()
            .await;
        match response {
            Ok(response) => answer(response).await,
            Err(error) => panic!(
                "invocation {id} did not finish: {error}\n--- server log (warnings) ---\n{}",
                self.warnings()
            ),
        }
    }

    /// The warnings and errors of the server's log.
    pub fn warnings(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log
            .lines()
            .filter(|line| {
                line.contains("WARN") || line.contains("ERROR") || line.contains("error")
            })
            .collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// The `conversation` handler's answer.
    pub async fn conversation(&self, conversation: &str) -> Value {
        let (status, body) = self.call(conversation, "conversation", None).await;
        assert_eq!(status, 200, "conversation: {body}");
        body
    }
}

async fn answer(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap_or_default();
    let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
    (status, body)
}

impl Drop for RestateServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `restate-agent` service binary as a subprocess, killed (SIGKILL) on drop.
pub struct Service {
    child: Child,
    /// Its address, `http://127.0.0.1:<port>`.
    pub uri: String,
}

impl Service {
    /// Starts `binary` listening on `port` with `env`, and waits until it listens.
    pub async fn start(
        binary: &Path,
        port: u16,
        env: &[(&str, &Path)],
        stop_at: Option<&str>,
    ) -> Service {
        let mut command = Command::new(binary);
        command.env("YIEM_RESTATE_LISTEN", format!("127.0.0.1:{port}"));
        for (name, value) in env {
            command.env(name, value);
        }
        if let Some(step) = stop_at {
            command.env("YIEM_RESTATE_STOP_AT", step);
        }
        Service::spawn(command, port).await
    }

    /// Starts `command`, which listens on `port` on loopback, and waits until it listens; its log
    /// goes to `YIEM_RESTATE_SERVICE_LOG` if that is set.
    pub async fn spawn(mut command: Command, port: u16) -> Service {
        command.env("RUST_LOG", "info").stdout(Stdio::null());
        match std::env::var_os("YIEM_RESTATE_SERVICE_LOG") {
            Some(log) => command.stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(log)
                    .expect("the service log opens"),
            ),
            None => command.stderr(Stdio::null()),
        };
        let child = command
            .spawn()
            .unwrap_or_else(|e| panic!("{:?} does not start: {e}", command.get_program()));
        let address: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        assert!(
            wait_until(|| listens(address), PATIENCE).await,
            "the service does not listen on {address}"
        );
        Service {
            child,
            uri: format!("http://127.0.0.1:{port}"),
        }
    }

    /// Kills the process with SIGKILL and waits for it to be gone.
    pub fn kill(mut self) {
        self.child.kill().expect("the service is killed");
        self.child.wait().expect("the service is reaped");
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
