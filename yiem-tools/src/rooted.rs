//! File tools bound to a root of their own: [`file_tools`] builds `read`, `write`, `edit`, `ls`, `grep` and
//! `bash` for one directory, so agents with different roots can share a process.

use serde::de::DeserializeOwned;
use serde_json::Value;
use yiem_core::{AgentTool, AgentToolResult, ToolBuilder, ToolContext};

use crate::root::ToolRoot;
use crate::{bash, edit, grep, ls, read, write};

/// `read`, `write`, `edit`, `ls`, `grep` and `bash` working in `root` (sorted by name). They have the names,
/// descriptions, schemas and hints of the registered tools, which use the process's default root
/// ([`set_default_root`](crate::set_default_root), else the current directory) instead.
///
/// ```
/// use yiem_core::ToolStore;
/// use yiem_tools::{ToolRoot, file_tools};
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// std::fs::write(dir.path().join("hello.txt"), "hi").unwrap();
///
/// let mut store = ToolStore::new("agent-in-dir");
/// for tool in file_tools(&ToolRoot::new(dir.path()).unwrap()) {
///     store.register(tool).unwrap();
/// }
/// assert_eq!(store.names(), ["bash", "edit", "grep", "ls", "read", "write"]);
///
/// let read = store.get("read").unwrap();
/// let result = read.execute("c1", serde_json::json!({"path": "hello.txt"})).await;
/// assert_eq!(result.text_content(), "     1\thi");
/// # });
/// ```
pub fn file_tools(root: &ToolRoot) -> Vec<AgentTool> {
    let bash = {
        let root = root.clone();
        like(&bash::bash_tool())
            .handler(move |ctx: ToolContext, raw: Value| {
                let root = root.clone();
                async move {
                    match parse::<bash::BashArgs>("bash", raw) {
                        Ok(args) => bash::bash_in(&root, &ctx, args).await,
                        Err(error) => AgentToolResult::error(error),
                    }
                }
            })
            .build()
            .expect("the bash definition is valid")
    };
    vec![
        bash,
        blocking(&edit::edit_tool(), root, edit::edit_in),
        blocking(&grep::grep_tool(), root, grep::grep_in),
        blocking(&ls::ls_tool(), root, ls::ls_in),
        blocking(&read::read_tool(), root, read::read_in),
        blocking(&write::write_tool(), root, write::write_in),
    ]
}

/// A builder with everything of `template` but its handler.
pub(crate) fn like(template: &AgentTool) -> ToolBuilder {
    let builder = AgentTool::builder(template.name())
        .label(template.label())
        .description(template.description())
        .input_schema(template.input_schema().clone())
        .execution_mode(template.execution_mode())
        .annotations(*template.annotations());
    match template.timeout() {
        Some(limit) => builder.timeout(limit),
        None => builder,
    }
}

/// The typed arguments of `tool` (the JSON was validated against the schema already).
pub(crate) fn parse<A: DeserializeOwned>(tool: &str, raw: Value) -> Result<A, String> {
    serde_json::from_value(raw)
        .map_err(|error| format!("invalid arguments for tool `{tool}`: {error}"))
}

/// `template` running the blocking `run` in `root`, on tokio's blocking threads.
fn blocking<A>(
    template: &AgentTool,
    root: &ToolRoot,
    run: fn(&ToolRoot, A) -> AgentToolResult,
) -> AgentTool
where
    A: DeserializeOwned + Send + 'static,
{
    let root = root.clone();
    let name = template.name().to_owned();
    like(template)
        .handler(move |_ctx: ToolContext, raw: Value| {
            let root = root.clone();
            let name = name.clone();
            async move {
                let args = match parse::<A>(&name, raw) {
                    Ok(args) => args,
                    Err(error) => return AgentToolResult::error(error),
                };
                tokio::task::spawn_blocking(move || run(&root, args))
                    .await
                    .unwrap_or_else(|error| {
                        AgentToolResult::error(format!("tool `{name}` failed: {error}"))
                    })
            }
        })
        .build()
        .expect("a built-in tool definition is valid")
}
