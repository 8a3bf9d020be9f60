use std::rc::Rc;

use yiem_core::{tool, tool::State};

/// Read a counter that is not shared safely.
#[tool]
async fn read_counter(State(counter): State<Rc<u64>>) -> String {
    counter.to_string()
}

fn main() {}
