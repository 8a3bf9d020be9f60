use yiem_core::tool;

/// A name no provider accepts.
#[tool]
async fn a_tool_whose_name_is_far_too_long_for_any_provider_to_accept_it_at_all() -> String {
    String::new()
}

fn main() {}
