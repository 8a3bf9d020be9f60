use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::tool;

#[derive(Deserialize, JsonSchema)]
struct Query {
    sql: String,
}

/// Run a query.
#[tool(grammar(lark = "start: /SELECT .+/"))]
async fn run_sql(query: Query) -> String {
    query.sql
}

fn main() {}
