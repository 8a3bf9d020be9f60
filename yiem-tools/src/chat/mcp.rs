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
            // Its skills become tools that load them on demand (nothing is read until then).
            let skills = runtime
                .block_on(client.register_skills(store))
                .map_err(|error| bad_input(format!("{error} (see --mcp-prefix)")))?;
            for line in offered(runtime, &client) {
                say_err!("{line}");
            }
            for left in client.left_out() {
                say_err!(
                    "[MCP server `{}` left out `{}`: {}]",
                    super::safe::line(client.name()),
                    super::safe::line(&left.name),
                    super::safe::line(&left.reason)
                );
            }
            added.extend(names);
            added.extend(skills);
            clients.push(client);
        }
        Ok((clients, added))
    }
}

/// The most entries of each kind [`offered`] shows.
const SHOWN: usize = 20;

/// What `client`'s server offers besides tools, as lines for the terminal: its resources, resource
/// templates, prompts and skills, at most [`SHOWN`] of each (then how many more), the server's words
/// made safe to print. Nothing for a kind the server does not serve; a listing that fails is said.
fn offered(runtime: &tokio::runtime::Runtime, client: &McpClient) -> Vec<String> {
    use super::safe::line;
    let server = line(client.name());
    let mut lines = Vec::new();
    let mut kind = |title: &str, listed: Result<Vec<String>, yiem_core::mcp::McpClientError>| {
        match listed {
            Ok(entries) if entries.is_empty() => {}
            Ok(entries) => {
                lines.push(format!("[MCP server `{server}` {title}:"));
                for entry in entries.iter().take(SHOWN) {
                    lines.push(format!("  {entry}"));
                }
                if entries.len() > SHOWN {
                    lines.push(format!("  ... and {} more", entries.len() - SHOWN));
                }
                if let Some(last) = lines.last_mut() {
                    last.push(']');
                }
            }
            // A server without the capability answers "method not found": it has none of them.
            Err(error) if error.to_string().contains("-32601") => {}
            Err(error) => lines.push(format!(
                "[MCP server `{server}`: its {title} could not be listed: {}]",
                line(&error.to_string())
            )),
        }
    };
    let described = |name: &str, description: Option<&str>| match description {
        Some(description) if !description.trim().is_empty() => {
            format!("{} — {}", line(name), line(description))
        }
        _ => line(name),
    };
    kind(
        "resources",
        runtime.block_on(client.resources()).map(|resources| {
            resources
                .iter()
                .map(|resource| {
                    let name = format!("{} ({})", resource.uri, resource.name);
                    described(&name, resource.description.as_deref())
                })
                .collect()
        }),
    );
    kind(
        "resource templates",
        runtime
            .block_on(client.resource_templates())
            .map(|templates| {
                templates
                    .iter()
                    .map(|template| {
                        let name = format!("{} ({})", template.uri_template, template.name);
                        described(&name, template.description.as_deref())
                    })
                    .collect()
            }),
    );
    kind(
        "prompts",
        runtime.block_on(client.prompts()).map(|prompts| {
            prompts
                .iter()
                .map(|prompt| {
                    let arguments: Vec<String> = prompt
                        .arguments
                        .iter()
                        .flatten()
                        .map(|argument| match argument.required {
                            Some(true) => argument.name.clone(),
                            _ => format!("{}?", argument.name),
                        })
                        .collect();
                    let name = format!("{}({})", prompt.name, arguments.join(", "));
                    described(&name, prompt.description.as_deref())
                })
                .collect()
        }),
    );
    kind(
        "skills",
        runtime.block_on(client.skills()).map(|skills| {
            skills
                .iter()
                .map(|skill| {
                    let name = format!("{} ({})", skill.frontmatter.name, skill.uri);
                    described(&name, Some(&skill.frontmatter.description))
                })
                .collect()
        }),
    );
    lines
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
