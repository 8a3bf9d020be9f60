//! A run that waits for a person: the model asks to run `bash`, the run pauses before anything runs,
//! this program shows the call and asks y/n, and the run resumes with the answer. Offline (a scripted
//! model); the paused run is saved as JSON and resumed from it, as another process would.
//!
//! ```sh
//! cargo run --example approval            # asks on the terminal
//! echo y | cargo run --example approval   # stdin is not a terminal: reads the answer from it
//! cargo run --example approval < /dev/null  # no answer: denies
//! ```

use std::io::{BufRead, IsTerminal, Write};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use yiem_core::agent::AgentRun;
use yiem_core::prelude::*;

#[derive(Deserialize, JsonSchema)]
struct BashArgs {
    /// The command line to run with `sh -c`.
    command: String,
}

/// Run a shell command and return what it printed.
#[tool(needs_approval)]
async fn bash(args: BashArgs) -> Result<String, String> {
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(&args.command)
        .output()
        .await
        .map_err(|error| format!("cannot start sh: {error}"))?;
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

fn agent(run: Option<AgentRun>) -> Agent {
    let tools = ToolStore::new("approval");
    tools.register(bash_tool()).expect("one tool");
    // A function of the conversation, as a real model is, so the resumed agent answers where the
    // paused one stopped.
    let model = ScriptedModel::from_fn(|request: &ModelRequest| match request.messages.last() {
        Some(AgentMessage::ToolResult(result)) if result.is_error() => {
            ScriptedTurn::text("I did not run it.")
        }
        Some(AgentMessage::ToolResult(_)) => {
            ScriptedTurn::text("The command ran; see its output above.")
        }
        _ => ScriptedTurn::tool_call("bash", json!({"command": "echo hello from the shell"}))
            .and_text("I'll run a command."),
    });
    let builder = Agent::builder().model(model).tools(tools);
    match run {
        Some(run) => builder.run(run),
        None => builder,
    }
    .build()
}

/// The answer: from the terminal, or the first line of stdin when it is not one; no answer is a no.
fn ask(question: &str) -> bool {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        print!("{question} [y/N] ");
        let _ = std::io::stdout().flush();
    }
    let mut line = String::new();
    let answered = stdin.lock().read_line(&mut line).unwrap_or(0) > 0;
    if !answered {
        println!("(no answer on stdin: denying)");
    }
    matches!(line.trim(), "y" | "Y" | "yes")
}

#[tokio::main]
async fn main() {
    let first = agent(None);
    let outcome = first.prompt("say hello from the shell").await;
    let RunStop::AwaitingApproval { pending } = &outcome.stop else {
        eprintln!(
            "expected the run to wait for approval, it stopped with {:?}",
            outcome.stop
        );
        std::process::exit(1);
    };
    // Save the paused run, as a server would between requests, and go on from the saved copy.
    let saved = first.run_state().to_json();
    let mut decisions = Vec::new();
    for call in pending {
        println!(
            "the model wants to run `{}` with {}",
            call.tool_name, call.arguments
        );
        let decision = if ask("allow it?") {
            Decision::Approve
        } else {
            Decision::deny("the user said no")
        };
        decisions.push((call.call_id.clone(), decision));
    }
    let run = AgentRun::from_json(&saved).expect("a run this program saved");
    let outcome = agent(Some(run))
        .resume(decisions)
        .await
        .expect("decisions for the waiting calls");
    for message in &outcome.messages {
        if let AgentMessage::ToolResult(result) = message {
            let mark = if result.is_error() { "✗" } else { "✓" };
            println!(
                "{mark} {}: {}",
                result.tool_name,
                result.text_content().trim_end()
            );
        }
    }
    println!("assistant: {}", outcome.text());
}
