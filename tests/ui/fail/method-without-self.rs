use yiem_core::{tool, tools};

struct Clock;

#[tools]
impl Clock {
    /// Report the time.
    #[tool]
    async fn now() -> String {
        "12:00".into()
    }
}

fn main() {}
