use yiem_core::tool;

struct Counter;

impl Counter {
    /// Count something.
    #[tool]
    async fn count(&self) -> String {
        String::new()
    }
}

fn main() {}
