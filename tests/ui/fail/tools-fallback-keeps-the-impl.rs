// One bad key on a method is the only error: the impl is still emitted (so `Notes::len` resolves), and
// so is a `ToolMethods` impl, so registering the instance reports nothing more.
use std::sync::Arc;

use yiem_core::{tool, tools, store::ToolStore};

#[derive(Default)]
struct Notes(Vec<String>);

#[tools]
impl Notes {
    /// How many notes there are.
    #[tool(colour = "blue")]
    fn count(&self) -> String {
        self.len().to_string()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}

fn main() {
    let notes = Arc::new(Notes::default());
    let _ = notes.len();
    let _ = ToolStore::new("a").register_methods(notes);
}
