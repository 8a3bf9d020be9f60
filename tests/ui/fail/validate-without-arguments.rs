use yiem_core::tool;

fn check(_: &()) -> Result<(), String> {
    Ok(())
}

/// Report the time.
#[tool(validate = check)]
async fn now() -> String {
    String::new()
}

fn main() {}
