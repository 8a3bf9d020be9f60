use yiem_core::{tool, tools};

struct Clock;

trait Named {
    fn name(&self) -> String;
}

#[tools]
impl Named for Clock {
    /// Name the clock.
    #[tool]
    fn name(&self) -> String {
        "clock".into()
    }
}

fn main() {}
