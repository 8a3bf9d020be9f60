//! A `#[tool]` that asks the person for a type MCP cannot show as a form (`ctx.elicit::<T>`) is refused
//! when it is registered, naming the type and the field; one that asks for a plain form registers.

use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::{
    ask::{ElicitError, ElicitationAnswer},
    store::{RegistrationError, ToolStore},
    tool,
    tool::ToolContext,
};

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Address {
    street: String,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Shipping {
    /// Where to ship: a nested object, which no MCP form shows.
    address: Address,
}

#[derive(Deserialize, JsonSchema)]
#[allow(dead_code)]
struct Confirm {
    /// Ship now?
    now: bool,
}

/// Ship an order, asking where to.
#[tool]
async fn ship(ctx: ToolContext) -> Result<String, ElicitError> {
    ctx.elicit::<Confirm>("Ship now?").await?;
    match ctx.elicit::<Shipping>("Where to?").await? {
        ElicitationAnswer::Accept(_) => Ok("shipped".into()),
        _ => Ok("not shipped".into()),
    }
}

/// Ship an order after a yes.
#[tool]
async fn ship_now(ctx: ToolContext) -> Result<String, ElicitError> {
    // A type of the body's own cannot be named outside it: it is checked when asked.
    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Local {
        ok: bool,
    }
    ctx.elicit::<Local>("Local?").await?;
    match ctx.elicit::<Confirm>("Ship now?").await? {
        ElicitationAnswer::Accept(_) => Ok("shipped".into()),
        _ => Ok("not shipped".into()),
    }
}

#[test]
fn a_question_mcp_cannot_show_is_refused_at_registration_naming_the_type_and_the_field() {
    let store = ToolStore::new("shop");
    let refused = store.register(ship_tool()).unwrap_err();
    assert!(
        matches!(&refused, RegistrationError::InvalidQuestion { tool, .. } if tool == "ship"),
        "{refused:?}"
    );
    let text = refused.to_string();
    assert!(
        text.starts_with("tool `ship` asks the person for `questions_checked::Shipping`: "),
        "{text}"
    );
    assert!(text.contains("address"), "the field is named: {text}");
    assert!(store.get("ship").is_none());
    // A plain form registers.
    store.register(ship_now_tool()).unwrap();
}

#[test]
fn check_tools_reports_the_question_too() {
    let problems = yiem_core::store::check_tools(&[ship_tool(), ship_now_tool()]).unwrap_err();
    let text = problems.to_string();
    assert!(text.contains("tool `ship`"), "{text}");
    assert!(
        text.contains("asks the person for `questions_checked::Shipping`"),
        "{text}"
    );
    assert!(!text.contains("ship_now"), "{text}");
}
