use yiem_core::mcp::resource;

/// One row.
#[resource(uri = "db://{table}/{row}")]
async fn row(table: String) -> String {
    table
}

fn main() {}
