use yiem_core::{tool, tools};

struct Counter(u64);

#[tools]
impl Counter {
    /// Count one more.
    #[tool]
    async fn bump(&mut self) -> String {
        self.0 += 1;
        self.0.to_string()
    }
}

fn main() {}
