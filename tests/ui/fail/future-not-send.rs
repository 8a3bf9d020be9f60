use std::rc::Rc;

use yiem_core::tool;

/// Holds an `Rc` across an await.
#[tool]
async fn local() -> String {
    let shared = Rc::new(String::from("not Send"));
    tokio::task::yield_now().await;
    shared.to_string()
}

fn main() {}
