use schemars::JsonSchema;
use serde::Deserialize;
use yiem_core::mcp::{PromptMessage, ResourceBody, Role, prompt, resource};

/// The front page.
#[resource(uri = "docs://readme", mime_type = "text/markdown", title = "Read me")]
async fn readme() -> &'static str {
    "# Docs"
}

/// A page's bytes.
#[resource(uri = "docs://pages/{page}/raw")]
async fn raw(page: u32) -> Result<Vec<u8>, String> {
    Ok(page.to_be_bytes().to_vec())
}

/// A page as JSON.
#[resource(uri = "docs://{section}/{page}", complete(section = sections))]
async fn page(section: String, page: u32) -> ResourceBody {
    ResourceBody::text(format!("{{\"section\":\"{section}\",\"page\":{page}}}")).mime_type("application/json")
}

fn sections(_typed: &str) -> Vec<String> {
    vec!["guide".into(), "api".into()]
}

#[derive(Deserialize, JsonSchema)]
struct Args {
    /// The topic.
    topic: String,
}

/// Explain a topic.
#[prompt(name = "explain", title = "Explain", complete(topic = sections))]
async fn explain_prompt(args: Args) -> Vec<PromptMessage> {
    vec![PromptMessage::new_text(Role::User, format!("Explain {}.", args.topic))]
}

/// Say hello.
#[prompt]
async fn hello() -> Result<String, std::io::Error> {
    Ok("Say hello.".into())
}

fn main() {
    assert_eq!(readme_resource().uri(), "docs://readme");
    assert!(raw_resource().is_template());
    assert!(page_resource().is_template());
    assert_eq!(explain_prompt_prompt().name(), "explain");
    assert_eq!(hello_prompt().name(), "hello");
}
