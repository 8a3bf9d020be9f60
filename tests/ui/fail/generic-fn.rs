use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use yiem_core::tool;

/// Handle anything.
#[tool]
async fn anything<T: DeserializeOwned + JsonSchema>(args: T) -> String {
    let _ = args;
    String::new()
}

fn main() {}
