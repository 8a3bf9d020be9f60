//! `chat --mcp`, `--mcp-url` and `--mcp-prefix`: the MCP servers whose tools join the agent's.

use yiem_core::ToolStore;
use yiem_core::mcp::McpClient;

use crate::{Failure, bad_input};

/// The MCP servers named on the command line.
pub struct McpServers {
    /// Command lines of servers to start (split at spaces).
    pub commands: Vec<String>,
    /// Streamable-HTTP URLs of servers to connect to.
    pub urls: Vec<String>,
    /// Put before the name of every tool of every server.
    pub prefix: String,
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
            let mut words = line.split_whitespace();
            let Some(program) = words.next() else {
                return Err(bad_input(
                    "--mcp: give a command line, e.g. --mcp 'npx -y some-server'",
                ));
            };
            builders.push(McpClient::command(
                program,
                words.map(str::to_owned).collect::<Vec<_>>(),
            ));
        }
        builders.extend(self.urls.iter().map(McpClient::http));
        let mut clients = Vec::new();
        let mut added = Vec::new();
        for builder in builders {
            let client = runtime
                .block_on(builder.prefix(self.prefix.clone()).connect())
                .map_err(|error| bad_input(error.to_string()))?;
            let names = runtime
                .block_on(client.register(store))
                .map_err(|error| bad_input(format!("{error} (see --mcp-prefix)")))?;
            eprintln!("[MCP server `{}`: {}]", client.name(), names.join(", "));
            added.extend(names);
            clients.push(client);
        }
        Ok((clients, added))
    }
}
