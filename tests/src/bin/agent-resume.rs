//! Resumes a saved agent run in a process of its own: reads the run (as `AgentRun::to_json` wrote it)
//! from stdin, the decisions (a JSON array of `[call_id, decision]`) from the first argument, resumes the
//! scenario agent of `yiem_tests::resumable`, and prints the outcome as JSON: the stop, the final text, the
//! added messages and the commands `shell` ran here. A bad state or decision prints the error and exits 1.

use std::io::Read;

use yiem_core::agent::{AgentRun, Decision};
use yiem_tests::resumable;

#[tokio::main]
async fn main() {
    let mut saved = String::new();
    std::io::stdin()
        .read_to_string(&mut saved)
        .expect("stdin holds the saved run");
    let decisions: Vec<(String, Decision)> =
        serde_json::from_str(&std::env::args().nth(1).unwrap_or_else(|| "[]".into()))
            .expect("the first argument is a JSON array of [call_id, decision]");
    let run = match AgentRun::from_json(&saved) {
        Ok(run) => run,
        Err(error) => {
            println!("{}", serde_json::json!({"error": error.to_string()}));
            std::process::exit(1);
        }
    };
    let agent = resumable::agent(Some(run));
    match agent.resume(decisions).await {
        Ok(outcome) => println!(
            "{}",
            serde_json::json!({
                "stop": outcome.stop,
                "text": outcome.text(),
                "messages": outcome.messages,
                "shell_ran": *resumable::SHELL_RAN.lock().unwrap(),
            })
        ),
        Err(error) => {
            println!("{}", serde_json::json!({"error": error.to_string()}));
            std::process::exit(1);
        }
    }
}
