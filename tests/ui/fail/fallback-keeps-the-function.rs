// One bad key is the only error: the function is still emitted (so `now` and `now_tool` resolve) and
// nothing else in this file is reported.
use yiem_core::tool;

/// Report the time.
#[tool(colour = "blue")]
async fn now() -> String {
    String::from("12:00")
}

async fn uses_both() -> String {
    let _tool: yiem_core::tool::AgentTool = now_tool();
    now().await
}

fn main() {
    let _ = uses_both;
}
