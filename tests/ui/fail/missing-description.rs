use yiem_core::tool;

#[tool]
async fn undocumented() -> String {
    String::new()
}

fn main() {}
