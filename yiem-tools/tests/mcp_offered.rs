//! What an MCP server offers besides tools, as `yiem tools --mcp` and `yiem chat --mcp-url` show it: its
//! resources, resource templates, prompts and skills (on stderr, beside the tools), and its skills as
//! tools that load them. The servers are real: `yiem mcp --skills DIR` as a subprocess, and an
//! `McpHttpServer` on loopback with a context store and skills.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;
use yiem_core::mcp::{
    ContextStore, McpHttpServer, McpPrompt, McpResource, McpServer, PromptMessage, ResourceBody,
    Role, SkillCatalog,
};
use yiem_core::store::ToolStore;

/// A folder of one skill, `demo`, with a file in a subfolder.
fn skills_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let skill = dir.path().join("demo");
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: demo\ndescription: Shows how skills load.\n---\n\nStep one: read `references/NOTES.md`.\n",
    )
    .unwrap();
    std::fs::write(
        skill.join("references/NOTES.md"),
        "The notes of the demo skill.\n",
    )
    .unwrap();
    dir
}

fn yiem(args: &[&str], stdin: &[u8]) -> Output {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_yiem"))
        .args(args)
        .env("XDG_DATA_HOME", data.path())
        .env_remove("YIEM_BASE_URL")
        .env_remove("YIEM_PROVIDER")
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// What yiem said on stderr, without the log lines of a `yiem mcp` it started (which shares it).
fn said(bytes: &[u8]) -> String {
    text(bytes)
        .lines()
        .filter(|line| !line.starts_with("20"))
        .map(|line| format!("{line}\n"))
        .collect()
}

/// `yiem mcp --skills DIR`, as an `--mcp` command line.
fn skills_server(dir: &Path) -> String {
    format!(
        "{} mcp --root {} --skills {}",
        env!("CARGO_BIN_EXE_yiem"),
        dir.display(),
        dir.display()
    )
}

#[test]
fn tools_list_shows_a_servers_skills_and_their_files_and_offers_each_skill_as_a_tool() {
    let dir = skills_dir();
    let output = yiem(
        &[
            "tools",
            "list",
            "--mcp-prefix",
            "r_",
            "--mcp",
            &skills_server(dir.path()),
        ],
        b"",
    );
    let stderr = said(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("resources:\n  skill://demo/SKILL.md (demo) — Shows how skills load.]\n"),
        "{stderr}"
    );
    assert!(
        stderr.contains("skills:\n  demo (skill://demo/SKILL.md) — Shows how skills load.]\n"),
        "{stderr}"
    );
    // `yiem mcp` serves no prompts or templates: nothing is said of them.
    assert!(!stderr.contains("prompts"), "{stderr}");
    let stdout = text(&output.stdout);
    assert!(
        stdout.lines().any(|line| line.starts_with("r_skill_demo")
            && line.contains("Skill `demo`: Shows how skills load.")),
        "{stdout}"
    );
}

#[test]
fn a_skill_tool_loads_the_instructions_then_reads_a_file_verified() {
    let dir = skills_dir();
    let server = skills_server(dir.path());
    let call = |args: &str| {
        yiem(
            &[
                "tools",
                "call",
                "r_skill_demo",
                "--args",
                args,
                "--mcp-prefix",
                "r_",
                "--mcp",
                &server,
            ],
            b"",
        )
    };
    let loaded = call("{}");
    assert!(loaded.status.success(), "{}", text(&loaded.stderr));
    assert_eq!(
        text(&loaded.stdout).trim_end(),
        "# Skill `demo`\n\nShows how skills load.\n\nStep one: read `references/NOTES.md`.\n\n\
         Files of this skill, read on demand by path: references/NOTES.md"
    );
    let read = call(r#"{"file": "references/NOTES.md"}"#);
    assert!(read.status.success(), "{}", text(&read.stderr));
    assert_eq!(text(&read.stdout), "The notes of the demo skill.\n");
    // A path the skill does not list is refused before anything is read.
    let escape = call(r#"{"file": "../demo/SKILL.md"}"#);
    assert_eq!(escape.status.code(), Some(2), "{}", text(&escape.stderr));
}

#[test]
fn chat_shows_a_servers_resources_templates_prompts_and_skills_at_start() {
    let dir = skills_dir();
    let context = ContextStore::new("docs");
    context
        .add_resource(
            McpResource::new("docs://readme", "readme")
                .description("The front door.")
                .read(|_| async { Ok(ResourceBody::text("hello")) }),
        )
        .unwrap();
    context
        .add_resource(
            McpResource::template("docs://pages/{page}", "page")
                .unwrap()
                .description("One page.")
                .read(|_| async { Ok(ResourceBody::text("a page")) }),
        )
        .unwrap();
    context
        .add_prompt(
            McpPrompt::new("review")
                .description("Review a change.")
                .schema(&json!({
                    "type": "object",
                    "properties": {"diff": {"type": "string"}, "tone": {"type": "string"}},
                    "required": ["diff"]
                }))
                .get(|_| async { Ok(vec![PromptMessage::new_text(Role::User, "review it")]) }),
        )
        .unwrap();
    let server = McpServer::new(ToolStore::new("docs"))
        .context(context)
        .skills(SkillCatalog::from_dir(dir.path()).unwrap());
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = runtime.spawn(McpHttpServer::new(server).serve(listener, async {
        let _ = stopped.await;
    }));
    let output = yiem(&["chat", "--mcp-url", &url], b"/exit\n");
    let _ = stop.send(());
    runtime.block_on(serving).unwrap().unwrap();
    let stderr = said(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    for said in [
        format!(
            "[MCP server `{url}` resources:\n  docs://readme (readme) — The front door.\n  skill://demo/SKILL.md (demo) — Shows how skills load.]\n"
        ),
        format!(
            "[MCP server `{url}` resource templates:\n  docs://pages/{{page}} (page) — One page.]\n"
        ),
        format!("[MCP server `{url}` prompts:\n  review(diff, tone?) — Review a change.]\n"),
        format!(
            "[MCP server `{url}` skills:\n  demo (skill://demo/SKILL.md) — Shows how skills load.]\n"
        ),
    ] {
        assert!(stderr.contains(&said), "{said}\nnot in:\n{stderr}");
    }
}
