//! The constructor gets the function's visibility; raw identifiers lose their `r#`.
mod tools {
    use yiem_core::tool;

    /// Public tool.
    #[tool]
    pub async fn public_tool() -> &'static str {
        "pub"
    }

    /// Crate-visible tool named with a raw identifier.
    #[tool]
    pub(crate) async fn r#type() -> &'static str {
        "type"
    }
}

fn main() {
    assert_eq!(tools::public_tool_tool().name(), "public_tool");
    assert_eq!(tools::type_tool().name(), "type");
}
