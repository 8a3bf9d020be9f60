use yiem_core::tool;

/// Save a date.
#[tool(grammar(regex = " "))]
async fn save_year(year: String) -> String {
    year
}

fn main() {}
