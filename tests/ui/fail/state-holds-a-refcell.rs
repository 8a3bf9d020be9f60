use std::cell::RefCell;

use yiem_core::{tool, tool::State};

/// A connection that is `Send` but not `Sync`, like `rusqlite::Connection`.
struct Connection {
    cache: RefCell<Vec<String>>,
}

/// Read the cache of a connection that is not shared safely.
#[tool]
async fn read_cache(State(db): State<Connection>) -> String {
    db.cache.borrow().join(",")
}

fn main() {}
