//! `yiem`: list, inspect and call the tools linked into this program from a terminal.
//!
//! ```text
//! yiem tools list [--json] [--mcp CMD]...
//! yiem tools schema NAME [--mcp CMD]...
//! yiem tools search [QUERY] [--mcp CMD]...
//! yiem tools call NAME --args JSON [--allow] [--mcp CMD]... [--root DIR] [--tools-dir DIR] [SHELL FLAGS]
//! yiem mcp [--allow TOOL]... [--allow-all] [--skills DIR]
//!          [--http ADDR [--sessions] [--token-env VAR] [--allow-origin ORIGIN]... [--allow-host HOST]...
//!           [--restate-ingress URL]] [--task TOOL]... [--state-key-env VAR] [--restate-serve ADDR]
//!          [--root DIR] [--tools-dir DIR] [SHELL FLAGS]
//! yiem chat [--approve TOOL]... [--allow TOOL]... [--resume FILE] [--mcp CMD]... [--mcp-url URL]... [--otlp URL]
//!           [--root DIR] [--tools-dir DIR] [SHELL FLAGS]
//! ```
//!
//! Shell flags (how `bash` is confined): `--sandbox auto|bubblewrap|landlock`, `--shell-network`,
//! `--shell-hide-host`, `--shell-writable-git`, `--shell-env NAME` (pass one more environment variable
//! to commands, which otherwise get only `PATH`, `HOME`, `LANG` and `TERM`), and `--unsafe-shell` (run
//! unconfined when no sandbox is available, instead of refusing).
//!
//! A tool that needs approval (`bash`, `edit`, `write`, `write_tool`, and any `#[tool(needs_approval)]`)
//! asks first: `tools call` on the terminal (`y` runs it; from a pipe it refuses unless `--allow` is
//! given), `mcp` its client (MCP elicitation; a client that cannot be asked is refused unless the tool is
//! `--allow`ed), `chat` the person at the chat.
//!
//! Exit codes: 0 on success; 1 when the tool returned an error result (its text on stderr, as the tool wrote
//! it) or the call was not approved; 2 on bad input (unknown tool, invalid JSON, arguments of the wrong shape, bad flags), reported as
//! one line on stderr, never a panic.

// clap turns the doc comments below into `--help` text, written for a terminal: `[y]es` and bare URLs there
// are not rustdoc links.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::bare_urls)]
// A write to a closed pipe must not panic: the program writes through `console`'s macros.
#![deny(clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};
use yiem_core::{
    store::{Dialect, ToolStore, register_all_tools},
    tool::{AgentTool, Content},
};

#[macro_use]
mod console;

mod chat;
mod serve;
mod telemetry;
mod tools_search;

yiem_core::link_tools!(yiem_tools);

#[derive(Parser)]
#[command(
    name = "yiem",
    version,
    about = "Work with yiem agent tools from the command line"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List, inspect and call the tools linked into this program.
    #[command(subcommand)]
    Tools(ToolsCommand),
    /// Serve every tool over MCP on stdin/stdout (for Claude Desktop, Cursor, IDEs), or over streamable
    /// HTTP with --http. Logs go to stderr.
    ///
    /// A call of a tool that needs approval (bash, edit, write, write_tool) first asks the client's user
    /// (MCP elicitation) and runs only when they confirm; a client that cannot be asked (it did not
    /// declare elicitation, or one of a revision before 2026-07-28 over --http without --sessions) gets
    /// an error result instead, unless the tool is allowed with --allow.
    Mcp {
        /// Calls of this tool run without asking, although it needs approval (repeatable).
        #[arg(long, value_name = "TOOL")]
        allow: Vec<String>,
        /// Calls of every tool run without asking.
        #[arg(long)]
        allow_all: bool,
        /// Serve the Agent Skills in this folder too (MCP's skills extension): each folder in it with a
        /// SKILL.md (YAML frontmatter with `name`, the folder's name, and `description`) and its files.
        /// Read once at start; symlinks are not followed, and a skill over 512 files or 16 MiB is left
        /// out with a warning.
        #[arg(long, value_name = "DIR")]
        skills: Option<PathBuf>,
        #[command(flatten)]
        http: serve::HttpFlags,
        #[command(flatten)]
        tasks: serve::TaskFlags,
        /// The root directory of the file tools and `bash` (default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The directory `write_tool` writes into (default: the root directory).
        #[arg(long)]
        tools_dir: Option<PathBuf>,
        #[command(flatten)]
        shell: ShellFlags,
    },
    /// Chat with an agent that has the built-in tools. In a terminal: a prompt with line editing and
    /// history (a line ending in `\` or Alt-Enter continues the text), a status line while the model works,
    /// Ctrl-C to stop a run, Ctrl-D (or Ctrl-C twice) to leave; from a pipe, one prompt per line of
    /// stdin, plain output. Commands: /tools, /model, /reset, /save FILE, /load FILE, /help, /exit.
    ///
    /// Calls of bash, edit, write and write_tool, of MCP tools not marked read-only, and of tools that
    /// ask for it wait for your answer: [y]es / [n]o / [a]lways / [e]dit (from a pipe, the next line).
    ///
    /// The model comes from the environment: YIEM_PROVIDER=openai (YIEM_BASE_URL, OPENAI_API_KEY),
    /// openai-responses (OpenAI's Responses API: OPENAI_API_KEY, YIEM_BASE_URL optional), anthropic
    /// (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL) or gemini (GEMINI_API_KEY, GEMINI_BASE_URL), with
    /// YIEM_MODEL; YIEM_BASE_URL alone means openai. Without them, an offline scripted model that says how
    /// to configure one. The history is kept in $YIEM_HISTORY, else in yiem/history under the user's data
    /// directory. Exits 1 when the last run ended in a model error (shown as `[error: ...]`).
    Chat {
        /// The root directory of the file tools and `bash` (default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The directory `write_tool` writes into (default: the root directory).
        #[arg(long)]
        tools_dir: Option<PathBuf>,
        #[command(flatten)]
        shell: ShellFlags,
        /// The system prompt.
        #[arg(
            long,
            default_value = "You are a helpful assistant with tools for files and the shell."
        )]
        system: String,
        /// Add the tools of an MCP server started as this command line (split as a shell would:
        /// quote a path with spaces), e.g. `--mcp 'npx -y @modelcontextprotocol/server-everything'`.
        /// Repeatable.
        #[arg(long, value_name = "COMMAND ARGS")]
        mcp: Vec<String>,
        /// Add the tools of an MCP server at this streamable-HTTP URL. Repeatable. A server that asks
        /// for OAuth is signed in to in the browser (the URL is printed; `$BROWSER` opens it), and its
        /// tokens are kept in `yiem/mcp-oauth/` under your data directory, readable by you only.
        #[arg(long, value_name = "URL")]
        mcp_url: Vec<String>,
        /// Put this before the names of every MCP server's tools (so they cannot clash with the built-in
        /// ones), e.g. `--mcp-prefix remote_`.
        #[arg(long, value_name = "PREFIX", default_value = "")]
        mcp_prefix: String,
        /// Take an MCP server's tool whose definition changed since it was first seen (its pin, kept in
        /// `yiem/mcp-pins/` under your data directory), or a tool it added since, and pin it anew;
        /// without this such a tool is shown with what changed and left out.
        #[arg(long)]
        mcp_accept_changes: bool,
        /// Send the session's traces and metrics (OpenTelemetry GenAI spans: invoke_agent, chat,
        /// execute_tool) to this OTLP collector over HTTP/protobuf, e.g. http://localhost:6006 for
        /// Arize Phoenix (default: $OTEL_EXPORTER_OTLP_ENDPOINT, else none). Message and argument text
        /// is left out unless OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true.
        #[arg(long, value_name = "URL")]
        otlp: Option<String>,
        /// Calls of this tool wait for your approval (repeatable; bash, edit, write and write_tool do by
        /// default).
        #[arg(long, value_name = "TOOL")]
        approve: Vec<String>,
        /// Calls of this tool run without asking (repeatable); `--allow all`: no call waits.
        #[arg(long, value_name = "TOOL")]
        allow: Vec<String>,
        /// Continue the conversation saved with `/save FILE`.
        #[arg(long, value_name = "FILE")]
        resume: Option<PathBuf>,
        /// Give the model `run_code`: it writes one JavaScript program that calls many tools (each call
        /// still asks for approval as set), and reads only what the program prints. Destructive tools
        /// are not callable from programs.
        #[arg(long)]
        code_mode: bool,
        /// When the MCP servers' tools are deferred (more than 30 tools in all), `search_tools` ranks
        /// them by meaning as well as words with the sentence-transformers model saved in this folder
        /// (as `yiem tools search --model`). Needs yiem built with `--features embeddings`.
        #[arg(long, value_name = "DIR")]
        tool_model: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum ToolsCommand {
    /// List the tools: name, label, mode and description.
    List {
        /// Print a JSON array with every tool's definition and input schema.
        #[arg(long)]
        json: bool,
        /// With --json: print the request-ready tool list of a provider instead (mcp, openai,
        /// openai-strict, anthropic, gemini).
        #[arg(long, requires = "json", value_parser = parse_dialect)]
        dialect: Option<Dialect>,
        #[command(flatten)]
        servers: McpFlags,
    },
    /// Print a tool's input schema as JSON (the canonical JSON Schema 2020-12).
    Schema {
        /// The tool's name.
        name: String,
        /// Print the tool's definition as that provider takes it (mcp, openai, openai-strict, anthropic,
        /// gemini).
        #[arg(long, value_parser = parse_dialect)]
        dialect: Option<Dialect>,
        #[command(flatten)]
        servers: McpFlags,
    },
    /// The best tools for a query, as the `search_tools` tool ranks deferred tools: over the tools linked
    /// into this program, or over a catalog file (an MCP tools/list result). Without QUERY, one query per
    /// line of stdin. Prints each query's tools with their scores, or JSON lines with --json.
    Search {
        /// The query, in words; without it, queries are read from stdin, one per line.
        query: Option<String>,
        /// How many tools to print per query.
        #[arg(short, long, default_value_t = 5)]
        k: usize,
        /// Search the tools of this file (`{"tools": [...]}` as MCP's tools/list returns, or an array)
        /// instead of the linked ones.
        #[arg(long, value_name = "FILE")]
        catalog: Option<PathBuf>,
        /// The ranking: tuned (what `search_tools` uses) or plain (textbook BM25, to compare).
        #[arg(long, value_enum, default_value_t = tools_search::RankerFlag::Tuned)]
        ranker: tools_search::RankerFlag,
        /// One JSON object per query: {"query", "results": [{"name", "score"}]}.
        #[arg(long)]
        json: bool,
        /// Rank by meaning as well as words, with the sentence-transformers BERT model saved in this
        /// folder (all-MiniLM-L6-v2, say: config.json, model.safetensors, tokenizer.json,
        /// 1_Pooling/config.json), run in this process. Needs yiem built with `--features embeddings`.
        #[arg(long, value_name = "DIR")]
        model: Option<PathBuf>,
        /// Rank by meaning as well as words, with the embedding model run by this command line (split
        /// as a shell would). It reads {"texts": [...]} lines on stdin and answers each with a
        /// {"vectors": [[...], ...]} line (benches/tool-search/embedder/embed.js is one).
        #[arg(long, value_name = "CMD")]
        embed_command: Option<String>,
        /// How long the embedder may take to answer one request (at most 64 texts), in seconds (60 by
        /// default).
        #[arg(long, value_name = "SECONDS")]
        embed_timeout: Option<f64>,
        #[command(flatten)]
        servers: McpFlags,
    },
    /// Call a tool and print the content of its result.
    Call {
        /// The tool's name.
        name: String,
        /// The arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Run the tool without asking even if it needs approval (bash, edit, write, write_tool). Without
        /// it such a call asks on the terminal, and from a pipe it does not run.
        #[arg(long)]
        allow: bool,
        /// The root directory of the file tools and `bash` (default: the current directory).
        #[arg(long)]
        root: Option<PathBuf>,
        /// The directory `write_tool` writes into (default: the `src/tools` this program was built from).
        #[arg(long)]
        tools_dir: Option<PathBuf>,
        #[command(flatten)]
        shell: ShellFlags,

        #[command(flatten)]
        servers: McpFlags,
    },
}

/// `--mcp` and `--mcp-prefix` of the `tools` commands, as `chat` takes them: MCP servers whose tools join
/// the built-in ones.
#[derive(Args, Default)]
struct McpFlags {
    /// Add the tools of an MCP server started as this command line (split as a shell would: quote a
    /// path with spaces), e.g. `--mcp 'python3 my_server.py'`. Repeatable.
    #[arg(long, value_name = "COMMAND ARGS")]
    mcp: Vec<String>,
    /// Put this before the names of every MCP server's tools, e.g. `--mcp-prefix remote_`.
    #[arg(long, value_name = "PREFIX", default_value = "")]
    mcp_prefix: String,
    /// Take an MCP server's tool whose definition changed since it was first seen (its pin, kept in
    /// `yiem/mcp-pins/` under your data directory), or a tool it added since, and pin it anew; without
    /// this such a tool is shown with what changed and left out.
    #[arg(long)]
    mcp_accept_changes: bool,
}

/// The servers of `--mcp`, connected on a runtime of their own with their tools registered into `store`;
/// the runtime and the clients must outlive the command (nothing when no server was named).
type McpConnections = Option<(tokio::runtime::Runtime, Vec<yiem_core::mcp::McpClient>)>;

fn add_mcp_tools(store: &ToolStore, flags: McpFlags) -> Result<McpConnections, Failure> {
    if flags.mcp.is_empty() {
        return Ok(None);
    }
    let runtime = runtime()?;
    let servers = chat::McpServers {
        commands: flags.mcp,
        urls: Vec::new(),
        prefix: flags.mcp_prefix,
        accept_changes: flags.mcp_accept_changes,
    };
    let (clients, _) = servers.connect(&runtime, store)?;
    Ok(Some((runtime, clients)))
}

/// How `bash` is confined (see `yiem_tools::ShellPolicy`).
#[derive(Args)]
struct ShellFlags {
    /// The sandbox `bash` runs commands in.
    #[arg(long, value_enum, default_value_t = SandboxFlag::Auto)]
    sandbox: SandboxFlag,
    /// Let `bash` commands use the network.
    #[arg(long)]
    shell_network: bool,
    /// Hide the host's files from `bash` but for the system directories (bubblewrap only).
    #[arg(long)]
    shell_hide_host: bool,
    /// Let `bash` commands write to `.git` inside the root (bubblewrap only).
    #[arg(long)]
    shell_writable_git: bool,
    /// Pass this environment variable of yiem's to `bash` commands (repeatable); they get only PATH,
    /// HOME, LANG and TERM otherwise, never an API key or token.
    #[arg(long = "shell-env", value_name = "NAME")]
    shell_env: Vec<String>,
    /// Run `bash` commands unconfined when no sandbox is available, instead of refusing them.
    #[arg(long)]
    unsafe_shell: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum SandboxFlag {
    /// bubblewrap, else Landlock + seccomp.
    Auto,
    /// bubblewrap only.
    Bubblewrap,
    /// Landlock + seccomp only.
    Landlock,
}

impl ShellFlags {
    /// The shell policy these flags ask for: the store's state, for `bash` and `write_tool`.
    fn policy(&self) -> yiem_tools::ShellPolicy {
        yiem_tools::ShellPolicy {
            sandbox: match self.sandbox {
                SandboxFlag::Auto => yiem_tools::SandboxKind::Auto,
                SandboxFlag::Bubblewrap => yiem_tools::SandboxKind::Bubblewrap,
                SandboxFlag::Landlock => yiem_tools::SandboxKind::Landlock,
            },
            network: self.shell_network,
            host_files: if self.shell_hide_host {
                yiem_tools::HostFiles::Hidden
            } else {
                yiem_tools::HostFiles::ReadOnly
            },
            writable_git: self.shell_writable_git,
            allow_unconfined: self.unsafe_shell,
            env: self.shell_env.clone(),
            ..yiem_tools::ShellPolicy::default()
        }
    }
}

/// Why a command failed; each kind has its exit code.
enum Failure {
    /// Unknown tool, invalid JSON, wrong argument types, bad flags: exit 2, one line.
    BadInput(String),
    /// The tool ran and returned an error result: exit 1, the result's text as the tool wrote it.
    ToolError(String),
    /// Anything else (the runtime would not start, stdout is gone): exit 1, one line.
    Internal(String),
    /// A call that needs approval did not get it: exit 1, one line.
    NotApproved(String),
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure::BadInput(message.into())
}

/// The command line `line` given to `flag`, split into a program and its arguments as a shell would (a
/// path with spaces is quoted). The errors show `example` (a command line) and `spaced` (one with a
/// quoted path), and echo `line` safe for the terminal.
fn command_words(
    flag: &str,
    line: &str,
    example: &str,
    spaced: &str,
) -> Result<(String, Vec<String>), Failure> {
    let Some(words) = shlex::split(line) else {
        return Err(bad_input(format!(
            "{flag} {}: a quote is not closed; quote a path with spaces as a shell would, e.g. {flag} \
             \"{spaced}\"",
            chat::safe::line(line)
        )));
    };
    let mut words = words.into_iter();
    let Some(program) = words.next() else {
        return Err(bad_input(format!(
            "{flag}: give a command line, e.g. {flag} '{example}'"
        )));
    };
    Ok((program, words.collect()))
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // --help and --version.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            let rendered = error.render().to_string();
            let first = rendered
                .lines()
                .find(|line| !line.trim().is_empty())
                .unwrap_or("invalid command line");
            return fail(bad_input(format!("{first} (see `yiem --help`)")));
        }
    };
    let outcome = run(cli);
    // Spans and metrics still buffered go to the collector before the program ends.
    telemetry::shutdown();
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => fail(failure),
    }
}

/// Reports a failure on stderr: bad input as one line, a tool's error result as the tool wrote it.
fn fail(failure: Failure) -> ExitCode {
    let one_line = |message: &str| {
        let line = message
            .lines()
            .map(str::trim)
            .collect::<Vec<_>>()
            .join("; ");
        format!(
            "yiem: error: {}",
            line.strip_prefix("error: ").unwrap_or(&line)
        )
    };
    let (code, text) = match failure {
        Failure::BadInput(message) => (2, one_line(&message)),
        Failure::Internal(message) | Failure::NotApproved(message) => (1, one_line(&message)),
        Failure::ToolError(text) => (1, text),
    };
    let _ = writeln!(std::io::stderr(), "{}", text.trim_end());
    ExitCode::from(code)
}

fn run(cli: Cli) -> Result<(), Failure> {
    let command = match cli.command {
        Command::Tools(command) => command,
        Command::Mcp {
            allow,
            allow_all,
            skills,
            http,
            tasks,
            root,
            tools_dir,
            shell,
        } => {
            let root = use_root(root)?;
            let tools_dir = tools_dir_or_root(tools_dir, &root)?;
            let approval = serve::McpApproval {
                allow,
                allow_all,
                skills,
            };
            return serve::serve_mcp(
                store(root, tools_dir, shell.policy())?,
                approval,
                http,
                tasks,
            );
        }
        Command::Chat {
            root,
            tools_dir,
            shell,
            system,
            mcp,
            mcp_url,
            mcp_prefix,
            mcp_accept_changes,
            approve,
            allow,
            resume,
            code_mode,
            tool_model,
            otlp,
        } => {
            telemetry::init(telemetry::Telemetry {
                otlp: otlp.as_deref(),
                logs: false,
            })?;
            let root = use_root(root)?;
            let tools_dir = tools_dir_or_root(tools_dir, &root)?;
            return chat::chat(chat::ChatOptions {
                store: store(root, tools_dir, shell.policy())?,
                system,
                servers: chat::McpServers {
                    commands: mcp,
                    urls: mcp_url,
                    prefix: mcp_prefix,
                    accept_changes: mcp_accept_changes,
                },
                approve,
                allow,
                resume,
                code_mode,
                tool_model,
            });
        }
    };
    let mut command = command;
    let servers = match &mut command {
        ToolsCommand::List { servers, .. }
        | ToolsCommand::Schema { servers, .. }
        | ToolsCommand::Search { servers, .. }
        | ToolsCommand::Call { servers, .. } => std::mem::take(servers),
    };
    if let ToolsCommand::Call {
        name,
        args,
        allow,
        root,
        tools_dir,
        shell,
        ..
    } = command
    {
        let root = use_root(root)?;
        let tools_dir = match tools_dir {
            Some(dir) => use_tools_dir(dir)?,
            None => PathBuf::from(yiem_tools::write_tool::BUILT_TOOLS_DIR),
        };
        let store = store(root, tools_dir, shell.policy())?;
        let _servers = add_mcp_tools(&store, servers)?;
        let tool = find(&store, &name)?;
        return call(&store, &tool, &args, allow);
    }
    let store = store(
        use_root(None)?,
        PathBuf::from(yiem_tools::write_tool::BUILT_TOOLS_DIR),
        yiem_tools::ShellPolicy::default(),
    )?;
    let _servers = add_mcp_tools(&store, servers)?;
    match command {
        ToolsCommand::List {
            dialect: Some(dialect),
            ..
        } => {
            let definitions = store
                .definitions(dialect)
                .map_err(|error| bad_input(error.to_string()))?;
            print(&pretty(&definitions))
        }
        ToolsCommand::List {
            json,
            dialect: None,
            ..
        } => {
            let tools = store.tools();
            if json {
                let listing: Vec<Value> = tools.iter().map(tool_json).collect();
                print(&pretty(&Value::Array(listing)))
            } else {
                print(&table(&tools))
            }
        }
        ToolsCommand::Schema { name, dialect, .. } => {
            let tool = find(&store, &name)?;
            match dialect {
                Some(dialect) => {
                    let definition = tool
                        .definition(dialect)
                        .map_err(|error| bad_input(error.to_string()))?;
                    print(&pretty(definition))
                }
                None => print(&pretty(&schema_json(&tool))),
            }
        }
        ToolsCommand::Search {
            query,
            k,
            catalog,
            ranker,
            json,
            model,
            embed_command,
            embed_timeout,
            ..
        } => {
            let tools = match catalog {
                Some(path) => tools_search::catalog(&path)?,
                None => store.tools(),
            };
            if embed_timeout.is_some() && embed_command.is_none() {
                return Err(bad_input(
                    "--embed-timeout is the embedder's: give --embed-command too",
                ));
            }
            let timeout = std::time::Duration::try_from_secs_f64(embed_timeout.unwrap_or(60.0))
                .ok()
                .filter(|timeout| !timeout.is_zero())
                .ok_or_else(|| bad_input("--embed-timeout must be more than 0 seconds"))?;
            let embed = tools_search::EmbedFlags {
                model,
                command: embed_command,
                timeout,
            };
            tools_search::search(&tools, query, k, ranker, json, embed)
        }
        ToolsCommand::Call { .. } => unreachable!("`tools call` was handled above"),
    }
}

/// Every linked tool, with the root of the file tools and `bash`, the shell's policy and the directory of
/// `write_tool` as the store's state.
fn store(
    root: yiem_tools::ToolRoot,
    tools_dir: PathBuf,
    policy: yiem_tools::ShellPolicy,
) -> Result<ToolStore, Failure> {
    let store = ToolStore::new("yiem").with_state(root).with_state(policy);
    let store = store
        .clone()
        .with_state(yiem_tools::write_tool::ToolsDir::new(tools_dir).refusing_names_of(&store));
    register_all_tools(&store).map_err(|error| Failure::Internal(error.to_string()))?;
    Ok(store)
}

/// `--root DIR`, else the current directory: the root directory of the file tools and `bash`.
fn use_root(root: Option<PathBuf>) -> Result<yiem_tools::ToolRoot, Failure> {
    match root {
        Some(root) => yiem_tools::ToolRoot::new(&root)
            .map_err(|error| bad_input(format!("--root: {error}; give an existing directory"))),
        None => yiem_tools::ToolRoot::current_dir().map_err(|error| {
            Failure::Internal(format!(
                "the current directory cannot serve as root: {error}"
            ))
        }),
    }
}

/// `--tools-dir DIR`: where `write_tool` writes.
fn use_tools_dir(dir: PathBuf) -> Result<PathBuf, Failure> {
    if !dir.is_dir() {
        return Err(bad_input(format!(
            "--tools-dir: `{}` is not a directory; give an existing directory",
            dir.display()
        )));
    }
    Ok(dir)
}

/// `--tools-dir DIR`, or else the root directory: a server never writes into the source tree this program
/// was built from.
fn tools_dir_or_root(
    dir: Option<PathBuf>,
    root: &yiem_tools::ToolRoot,
) -> Result<PathBuf, Failure> {
    match dir {
        Some(dir) => use_tools_dir(dir),
        None => Ok(root.path().to_path_buf()),
    }
}

/// The multi-threaded runtime the async commands run on.
fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|error| Failure::Internal(format!("cannot start the async runtime: {error}")))
}

fn find(store: &ToolStore, name: &str) -> Result<AgentTool, Failure> {
    store.get(name).ok_or_else(|| {
        bad_input(format!(
            "unknown tool `{name}`; the tools are: {}",
            store.names().join(", ")
        ))
    })
}

/// `--dialect` values: the names `Dialect::as_str` gives.
fn parse_dialect(text: &str) -> Result<Dialect, String> {
    text.parse::<Dialect>().map_err(|error| error.to_string())
}

/// A tool's canonical input schema as the CLI prints it.
fn schema_json(tool: &AgentTool) -> Value {
    tool.input_schema().clone()
}

/// One entry of `yiem tools list --json`.
fn tool_json(tool: &AgentTool) -> Value {
    let hints = tool.annotations();
    json!({
        "name": tool.name(),
        "label": tool.label(),
        "description": tool.description(),
        "mode": tool.execution_mode(),
        "annotations": {
            "read_only": hints.read_only,
            "destructive": hints.destructive,
            "idempotent": hints.idempotent,
            "open_world": hints.open_world,
        },
        "input_schema": schema_json(tool),
    })
}

/// The description on one line, cut at the end of its first sentence or at 100 characters.
fn summary(description: &str) -> String {
    let flat = description.split_whitespace().collect::<Vec<_>>().join(" ");
    // A sentence ends at ". " before a capital letter (so "e.g. `x`" does not end one).
    let end = flat.match_indices(". ").map(|(at, _)| at).find(|&at| {
        flat[at + 2..]
            .chars()
            .next()
            .is_some_and(char::is_uppercase)
    });
    let sentence = end.map_or(flat.as_str(), |end| &flat[..=end]);
    match sentence.char_indices().nth(100) {
        Some((cut, _)) => format!("{}…", &sentence[..cut]),
        None => sentence.to_owned(),
    }
}

/// The `yiem tools list` table: name, label, mode and a one-line summary of the description.
fn table(tools: &[AgentTool]) -> String {
    let rows: Vec<[String; 4]> = tools
        .iter()
        .map(|tool| {
            [
                tool.name().to_owned(),
                tool.label().to_owned(),
                tool.execution_mode().to_string(),
                summary(tool.description()),
            ]
        })
        .collect();
    let header = ["NAME", "LABEL", "MODE", "DESCRIPTION"].map(str::to_owned);
    let mut widths = [0usize; 3];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row.iter()) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter().zip(row.iter()) {
            out.push_str(cell);
            out.push_str(&" ".repeat(width - cell.chars().count() + 2));
        }
        out.push_str(&row[3]);
        out.push('\n');
    }
    out
}

fn call(store: &ToolStore, tool: &AgentTool, raw: &str, allow: bool) -> Result<(), Failure> {
    let value: Value = serde_json::from_str(raw).map_err(|error| {
        bad_input(format!(
            "--args is not valid JSON ({error}); give a JSON object such as '{{\"path\": \"README.md\"}}'"
        ))
    })?;
    // The approval gate: `--allow` is the operator's grant for this call.
    let gate = match allow {
        true => yiem_core::agent::ApprovalPolicy::allow_all(),
        false => yiem_core::agent::ApprovalPolicy::default(),
    };
    let call = yiem_core::exec::ToolCall::new("cli", tool.name(), value.clone());
    if gate.check(&call, tool).is_some() {
        approve_on_terminal(tool.name(), &value)?;
    }
    let runtime = runtime()?;
    let result = runtime.block_on(async {
        tool.try_execute(store.context("cli"), value)
            .await
            .map_err(|error| bad_input(error.to_string()))
    })?;
    let text = render(&result.content);
    if result.is_error {
        return Err(Failure::ToolError(text));
    }
    print(&text)
}

/// Asks the person at the terminal whether `tool` may run with `arguments` (shown escaped, so nothing in
/// them reaches the terminal as a control); `Ok` on `y` or `yes`. From a pipe nobody can be asked: the
/// call is refused, and `--allow` is how to run it.
fn approve_on_terminal(tool: &str, arguments: &Value) -> Result<(), Failure> {
    use std::io::{BufRead, IsTerminal};
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        return Err(Failure::NotApproved(format!(
            "`{tool}` needs approval before it runs, and stdin is not a terminal to ask on; it did not \
             run. Pass --allow to run it without asking"
        )));
    }
    let mut stderr = std::io::stderr().lock();
    let _ = write!(
        stderr,
        "`{tool}` needs your approval to run with these arguments:\n{}\nRun it? [y/N] ",
        chat::safe::json(arguments)
    );
    let _ = stderr.flush();
    let mut answer = String::new();
    stdin
        .lock()
        .read_line(&mut answer)
        .map_err(|error| Failure::Internal(format!("cannot read the answer: {error}")))?;
    match answer.trim().to_ascii_lowercase().as_str() {
        "y" | "yes" => Ok(()),
        _ => Err(Failure::NotApproved(format!(
            "you did not approve `{tool}`; it did not run"
        ))),
    }
}

/// Result content as text: text blocks as they are, images as a one-line placeholder.
fn render(content: &[Content]) -> String {
    let mut out = String::new();
    for block in content {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        match block {
            Content::Text { text } => out.push_str(text),
            Content::Image { data, mime_type } => {
                out.push_str(&format!(
                    "[image: {mime_type}, {} base64 characters]",
                    data.len()
                ));
            }
            other => out.push_str(&other.described_for("this terminal").unwrap_or_default()),
        }
    }
    out
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

/// Prints `text` with a final newline; a closed pipe (`yiem tools list | head`) is not an error.
fn print(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    let outcome = if text.ends_with('\n') {
        stdout.write_all(text.as_bytes())
    } else {
        writeln!(stdout, "{text}")
    };
    match outcome.and_then(|()| stdout.flush()) {
        Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure::Internal(
            format!("cannot write to stdout: {error}"),
        )),
        _ => Ok(()),
    }
}
