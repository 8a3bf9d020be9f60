//! Bytes of one model request with 1,000 tools (the BFCL catalog's first 1,000), all sent vs deferred,
//! for each provider (issue 34): `cargo run --release --bin catalog_request_size`.
//!
//! "deferred" is a request of a run that has found nothing yet: with the local `search_tools` (Chat
//! Completions, Gemini, and Anthropic/Responses with their own search turned off) only the search tool
//! goes; with the provider's own search every deferred definition goes marked `defer_loading`, which
//! the provider keeps out of the model's context.

use yiem_core::catalog::ToolSearchMode;
use yiem_core::catalog::{RequestTools, ToolSearch};
use yiem_core::{
    llm::{
        AnthropicConfig, AnthropicModel, GeminiConfig, GeminiModel, ModelRequest, OpenAiConfig,
        OpenAiModel, OpenAiResponsesConfig, OpenAiResponsesModel,
    },
    message::UserMessage,
    store::ToolStore,
};

fn request(store: &ToolStore) -> ModelRequest {
    let RequestTools {
        tools, deferred, ..
    } = RequestTools::of(store, &[]);
    ModelRequest::new(
        "You are a helpful assistant.",
        vec![UserMessage::text("What's the weather like in Boston?").into()],
    )
    .tools(tools)
    .deferred(deferred)
}

fn main() {
    let tools = yiem_benches::catalog::bfcl_tools(1000);
    let all = ToolStore::new("all");
    let deferred = ToolStore::new("deferred").with_deferred_loading();
    for tool in &tools {
        all.register(tool.clone()).unwrap();
        deferred.register(tool.clone()).unwrap();
    }
    deferred
        .register(ToolSearch::bm25().tool(&deferred))
        .unwrap();
    let size = |body: serde_json::Value| serde_json::to_vec(&body).unwrap().len();
    let anthropic = |search| {
        AnthropicModel::new(AnthropicConfig::new("k", "claude").tool_search(search)).unwrap()
    };
    let responses = |search| {
        OpenAiResponsesModel::new(OpenAiResponsesConfig::new("gpt").tool_search(search)).unwrap()
    };
    let chat = OpenAiModel::new(OpenAiConfig::new("https://api.openai.com/v1", "gpt")).unwrap();
    let gemini = GeminiModel::new(GeminiConfig::new("k", "gemini")).unwrap();
    println!("| provider | all 1,000 sent | deferred | ratio |");
    println!("|---|---|---|---|");
    let rows: Vec<(&str, usize, usize)> = vec![
        (
            "OpenAI Chat Completions (local search_tools)",
            size(chat.request_body(&request(&all)).unwrap()),
            size(chat.request_body(&request(&deferred)).unwrap()),
        ),
        (
            "OpenAI Responses (local search_tools)",
            size(
                responses(ToolSearchMode::Local)
                    .request_body(&request(&all))
                    .unwrap(),
            ),
            size(
                responses(ToolSearchMode::Local)
                    .request_body(&request(&deferred))
                    .unwrap(),
            ),
        ),
        (
            "OpenAI Responses (its own tool_search, defer_loading)",
            size(
                responses(ToolSearchMode::Native)
                    .request_body(&request(&all))
                    .unwrap(),
            ),
            size(
                responses(ToolSearchMode::Native)
                    .request_body(&request(&deferred))
                    .unwrap(),
            ),
        ),
        (
            "Anthropic (local search_tools)",
            size(
                anthropic(ToolSearchMode::Local)
                    .request_body(&request(&all))
                    .unwrap(),
            ),
            size(
                anthropic(ToolSearchMode::Local)
                    .request_body(&request(&deferred))
                    .unwrap(),
            ),
        ),
        (
            "Anthropic (its own tool search, defer_loading)",
            size(
                anthropic(ToolSearchMode::Native)
                    .request_body(&request(&all))
                    .unwrap(),
            ),
            size(
                anthropic(ToolSearchMode::Native)
                    .request_body(&request(&deferred))
                    .unwrap(),
            ),
        ),
        (
            "Gemini (local search_tools)",
            size(gemini.request_body(&request(&all)).unwrap()),
            size(gemini.request_body(&request(&deferred)).unwrap()),
        ),
    ];
    for (provider, all, deferred) in rows {
        println!(
            "| {provider} | {all} | {deferred} | {:.3} |",
            deferred as f64 / all as f64
        );
    }
}
