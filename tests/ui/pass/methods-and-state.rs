//! Method tools and state together: every extractor order, plain and async methods, keys on methods.
use std::sync::{Arc, Mutex};

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{tool, tool::{ExecutionMode, State, ToolContext}, store::ToolStore};

struct Prefix(&'static str);
struct Suffix(&'static str);

#[derive(Deserialize, JsonSchema)]
struct Args {
    word: String,
}

/// Decorate a word with the store's prefix and suffix.
#[tool]
async fn decorate(State(p): State<Prefix>, ctx: ToolContext, State(s): State<Suffix>, args: Args) -> String {
    format!("{}{}{}@{}", p.0, args.word, s.0, ctx.call_id())
}

#[derive(Default)]
struct Log(Mutex<Vec<String>>);

#[yiem_core::tools]
impl Log {
    /// Log a word.
    #[yiem_core::tool(name = "log-word", parallel, timeout_ms = 500)]
    fn log(&self, State(p): State<Prefix>, args: Args) -> String {
        self.0.lock().unwrap().push(format!("{}{}", p.0, args.word));
        "logged".into()
    }

    /// How many words were logged.
    #[tool]
    async fn logged(&self, ctx: ToolContext) -> String {
        format!("{} ({})", self.0.lock().unwrap().len(), ctx.call_id())
    }
}

fn main() {
    let store = ToolStore::new("s").with_state(Prefix("<")).with_state(Suffix(">"));
    store.register(decorate_tool()).unwrap();
    let names = store.register_methods(Arc::new(Log::default())).unwrap();
    assert_eq!(names, ["log-word", "logged"]);
    let log = store.get("log-word").unwrap();
    assert_eq!(log.execution_mode(), ExecutionMode::Parallel);
    assert_eq!(log.timeout(), Some(std::time::Duration::from_millis(500)));
    store.check().unwrap();
}
