//! An MCP server over stdio whose tools are the methods of one [`Notes`] instance, with the `Bullet`
//! state of its store: what `tests/tests/state.rs` drives to show method tools over MCP.

use std::sync::Arc;

use yiem_core::store::ToolStore;
use yiem_tests::{Bullet, Notes};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let store = ToolStore::new("notes").with_state(Bullet("* "));
    store.register_methods(Arc::new(Notes::default()))?;
    store.check()?;
    yiem_core::mcp::serve_stdio(store).await?;
    Ok(())
}
