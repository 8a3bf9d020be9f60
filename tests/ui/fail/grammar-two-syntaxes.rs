use yiem_core::tool;

/// Save a date.
#[tool(grammar(regex = "[0-9]{4}", lark = "start: /[0-9]{4}/"))]
async fn save_year(year: String) -> String {
    year
}

fn main() {}
