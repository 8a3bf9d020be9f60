use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{tool, tool::State};

struct Db;

#[derive(Deserialize, JsonSchema)]
struct Table {
    name: String,
}

#[derive(Deserialize, JsonSchema)]
struct Limit {
    rows: u32,
}

/// Query a table.
#[tool]
async fn query(State(_db): State<Db>, table: Table, limit: Limit) -> String {
    format!("{} {}", table.name, limit.rows)
}

fn main() {}
