use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{tool, tool::State};

struct Db;

#[derive(Deserialize, JsonSchema)]
struct QueryArgs {
    table: String,
}

/// Query a table.
#[tool]
async fn query(args: QueryArgs, State(_db): State<Db>) -> String {
    args.table
}

fn main() {}
