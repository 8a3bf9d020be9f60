use yiem_core::tool;

/// Run a query.
#[tool(grammar(ebnf = "query ::= 'SELECT'"))]
async fn run_sql(query: String) -> String {
    query
}

fn main() {}
