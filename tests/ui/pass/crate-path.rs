//! `crate = "..."` for a runtime re-exported under another path.
mod runtime {
    pub use yiem_core as yiem;
}

use runtime::yiem::tool;

/// Report the time.
#[tool(crate = "runtime::yiem")]
async fn now() -> &'static str {
    "12:00"
}

fn main() {
    assert_eq!(now_tool().name(), "now");
}
