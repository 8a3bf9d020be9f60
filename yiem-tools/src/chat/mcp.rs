//! `chat --mcp`, `--mcp-url` and `--mcp-prefix`: the MCP servers whose tools join the agent's. A server at
//! a URL that asks for OAuth is authorized in the browser ([`super::oauth`]).

use yiem_core::mcp::{DriftPolicy, McpClient, ToolDrift, ToolPins};
use yiem_core::store::ToolStore;

use crate::{Failure, bad_input, command_words};

/// The MCP servers named on the command line.
pub struct McpServers {
    /// Command lines of servers to start (split at spaces).
    pub commands: Vec<String>,
    /// Streamable-HTTP URLs of servers to connect to.
    pub urls: Vec<String>,
    /// Put before the name of every tool of every server.
    pub prefix: String,
    /// Take a tool whose definition changed since it was pinned, or a new one, and pin it anew
    /// (`--mcp-accept-changes`); without it such a tool is shown and left out.
    pub accept_changes: bool,
}

/// The pins of the server started as, or reached at, `key`: kept beside its tokens, in
/// `yiem/mcp-pins/` under the data directory (in memory when there is none). Each drift is shown with
/// its diff (escaped) and taken only with `accept`.
fn pins(key: &str, accept: bool) -> ToolPins {
    let pins = match super::oauth::data_file("mcp-pins", key) {
        Some(file) => ToolPins::file(file),
        None => ToolPins::memory(),
    };
    pins.policy(DriftPolicy::ask(move |drift: ToolDrift| {
        let verdict = if accept {
            "taken and pinned anew (--mcp-accept-changes)"
        } else {
            "left out; run again with --mcp-accept-changes to take it"
        };
        say_err!("[{drift}\n{verdict}]");
        async move { accept }
    }))
}

impl McpServers {
    /// Connects to every server and registers its tools into `store`; returns the clients, which must
    /// outlive the chat, and the names of the tools they added.
    pub fn connect(
        self,
        runtime: &tokio::runtime::Runtime,
        store: &ToolStore,
    ) -> Result<(Vec<McpClient>, Vec<String>), Failure> {
        let mut builders = Vec::new();
        for line in &self.commands {
            let (program, arguments) = command_words(
                "--mcp",
                line,
                "npx -y some-server",
                "'/my tools/server' --flag",
            )?;
            builders
                .push(McpClient::command(program, arguments).pins(pins(line, self.accept_changes)));
        }
        for url in &self.urls {
            let oauth = super::oauth::for_server(url).map_err(|error| {
                bad_input(format!(
                    "--mcp-url {}: cannot listen on a loopback port for the OAuth redirect: {error}",
                    super::safe::line(url)
                ))
            })?;
            builders.push(
                McpClient::http(url)
                    .oauth(oauth)
                    .pins(pins(url, self.accept_changes)),
            );
        }
        let mut clients = Vec::new();
        let mut added = Vec::new();
        for builder in builders {
            let client = runtime
                .block_on(
                    builder
                        .prefix(self.prefix.clone())
                        .ask_through_calls()
                        .connect(),
                )
                .map_err(|error| bad_input(error.to_string()))?;
            let names = runtime
                .block_on(client.register(store))
                .map_err(|error| bad_input(format!("{error} (see --mcp-prefix)")))?;
            say_err!("[MCP server `{}`: {}]", client.name(), names.join(", "));
            for left in client.left_out() {
                say_err!(
                    "[MCP server `{}` left out `{}`: {}]",
                    super::safe::line(client.name()),
                    super::safe::line(&left.name),
                    super::safe::line(&left.reason)
                );
            }
            added.extend(names);
            clients.push(client);
        }
        Ok((clients, added))
    }
}

/// The policy that needs no thought: with more than 30 tools in all, the MCP servers' tools are deferred
/// (now and after their servers' list changes) and `search_tools` is added, so the model finds them by
/// searching (with `search`'s ranking) instead of reading every definition in every request.
pub fn defer_when_large(
    store: &ToolStore,
    clients: &[McpClient],
    mcp_tools: &[String],
    search: &yiem_core::catalog::ToolSearch,
) {
    match yiem_core::catalog::defer_when_large(store, mcp_tools, None, search) {
        Ok(0) => {}
        Ok(deferred) => {
            for client in clients {
                client.set_defer_loading(true);
            }
            say_err!(
                "[{deferred} MCP tools are deferred: the model finds them with {}]",
                yiem_core::catalog::SEARCH_TOOLS
            );
        }
        Err(error) => say_err!(
            "[tool search left out: {}]",
            super::safe::line(&error.to_string())
        ),
    }
}
