//! Resumes a saved run of the large-catalog scenario (`yiem_tests::catalog`) in a process of its own:
//! reads the run (as `AgentRun::to_json` wrote it) from stdin, goes on with it (no decisions), and prints
//! as JSON the stop, the final text, the tools each request of this process offered and the run's loaded
//! tools. A bad run prints the error and exits 1.

use std::io::Read;
use std::sync::Arc;

use yiem_core::agent::{AgentRun, RunLimits};
use yiem_tests::catalog;

#[tokio::main]
async fn main() {
    let mut saved = String::new();
    std::io::stdin()
        .read_to_string(&mut saved)
        .expect("stdin holds the saved run");
    let run = match AgentRun::from_json(&saved) {
        Ok(run) => run,
        Err(error) => {
            println!("{}", serde_json::json!({"error": error.to_string()}));
            std::process::exit(1);
        }
    };
    let model = Arc::new(catalog::model());
    let agent = catalog::agent(Arc::clone(&model), Some(run));
    agent.set_limits(RunLimits::default());
    match agent
        .resume(Vec::<(String, yiem_core::agent::Decision)>::new())
        .await
    {
        Ok(outcome) => println!(
            "{}",
            serde_json::json!({
                "stop": outcome.stop,
                "text": outcome.text(),
                "offered": catalog::offered(&model),
                "loaded": agent.run_state().loaded_tools(),
            })
        ),
        Err(error) => {
            println!("{}", serde_json::json!({"error": error.to_string()}));
            std::process::exit(1);
        }
    }
}
