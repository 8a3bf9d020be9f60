//! The client side of the MCP conformance suite (`@modelcontextprotocol/conformance`), written with
//! yiem's public client API only: `McpClient` over streamable HTTP, OAuth from `yiem_core::mcp::oauth`,
//! elicitation through `McpClientBuilder::elicitation`, and calls through a `ToolExecutor`.
//!
//! The suite runs it once per scenario as `mcp_conformance_client URL`, with the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO` and its context (JSON) in `MCP_CONFORMANCE_CONTEXT`:
//!
//! ```text
//! npx @modelcontextprotocol/conformance client --command target/debug/examples/mcp_conformance_client \
//!     --scenario auth/metadata-default
//! ```
//!
//! The browser step of the authorization code flow is answered as a browser would: the authorization
//! URL is fetched without following the redirect, and the redirect's address is given back (the suite's
//! authorization server approves at once). Every scenario runs within 25 s, before the suite's own limit.

use std::process::ExitCode;
use std::time::Duration;

use serde_json::{Map, Value, json};
use yiem_core::ask::{Elicitation, ElicitationAnswer};
use yiem_core::mcp::McpClient;
use yiem_core::mcp::oauth::{IdentityProvider, OAuth, SigningKey, fixed_token};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};

/// The client ID metadata document the suite's authorization servers accept as is.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";
/// Where the suite's authorization servers redirect to (never listened on: the redirect is read).
const REDIRECT_URI: &str = "http://localhost:3000/callback";

#[tokio::main]
async fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::INFO)
        .init();
    let Some(url) = std::env::args().nth(1) else {
        eprintln!(
            "usage: mcp_conformance_client SERVER_URL (scenario in MCP_CONFORMANCE_SCENARIO)"
        );
        return ExitCode::from(2);
    };
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let context: Value = std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or(Value::Null);
    match tokio::time::timeout(Duration::from_secs(25), run(&scenario, &url, &context)).await {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("scenario `{scenario}` failed: {error}");
            ExitCode::FAILURE
        }
        Err(_) => {
            eprintln!("scenario `{scenario}` did not finish within 25 s");
            ExitCode::FAILURE
        }
    }
}

async fn run(scenario: &str, url: &str, context: &Value) -> Result<(), String> {
    let mut client = McpClient::http(url)
        .name("conformance")
        .connect_timeout(Duration::from_secs(20));
    if scenario.starts_with("auth/") {
        client = client.oauth(oauth(scenario, context)?);
    }
    if scenario.starts_with("elicitation") {
        // Accept with nothing filled in: the client applies the schema's defaults (SEP-1034).
        client =
            client.elicitation(|_: Elicitation| async { ElicitationAnswer::Accept(Map::new()) });
    }
    let client = client.connect().await.map_err(|error| error.to_string())?;
    let store = ToolStore::new("conformance");
    if let Some(mode) = scenario.strip_prefix("sep-2640-client-") {
        return skills(&client, &store, mode).await;
    }
    client
        .register(&store)
        .await
        .map_err(|error| error.to_string())?;

    let calls: Vec<(String, Value)> = match context.get("toolCalls").and_then(Value::as_array) {
        Some(listed) => listed
            .iter()
            .map(|call| {
                let name = call["name"].as_str().unwrap_or_default().to_owned();
                (name, call.get("arguments").cloned().unwrap_or(json!({})))
            })
            .collect(),
        None if scenario == "initialize" || scenario == "json-schema-ref-no-deref" => Vec::new(),
        // The tool's schema as yiem keeps it, echoed back: 2020-12 keywords must survive.
        None if scenario == "json-schema-2020-12-preservation" => {
            let focal = store
                .get("json_schema_2020_12_tool")
                .ok_or("the server does not list `json_schema_2020_12_tool`")?;
            vec![(
                "json_schema_echo".to_owned(),
                json!({ "schema": focal.input_schema() }),
            )]
        }
        None => store
            .tools()
            .iter()
            .map(|tool| (tool.name().to_owned(), arguments_for(tool.input_schema())))
            .collect(),
    };
    let calls = calls
        .into_iter()
        .enumerate()
        .map(|(index, (name, arguments))| ToolCall::new(format!("call-{index}"), name, arguments))
        .collect();
    let batch = ToolExecutor::new()
        .execute(&store, calls, &CancellationToken::new())
        .await;
    let mut refused = None;
    for message in &batch.messages {
        let text = message.text_content();
        eprintln!(
            "{} -> {}{}",
            message.tool_name,
            if message.is_error() { "error: " } else { "" },
            text.escape_debug()
        );
        if message.is_error() && text.contains("refused access") {
            refused = Some(text);
        }
    }
    // A call refused for authorization fails the scenario; a tool's own error result does not.
    match refused {
        Some(text) => Err(text),
        None => Ok(()),
    }
}

/// The OAuth configuration the suite's context asks for.
/// The skills scenarios (SEP-2640): the server's skills become tools, which lists them and reads no
/// file; then, but for `no-prefetch`, the model's part: each skill is loaded (its `SKILL.md`, verified)
/// and, only if that succeeded, each of its files is read (verified). A skill that fails verification is
/// refused, which is this client doing its job, not failing.
async fn skills(client: &McpClient, store: &ToolStore, mode: &str) -> Result<(), String> {
    let names = client
        .register_skills(store)
        .await
        .map_err(|error| error.to_string())?;
    if mode == "no-prefetch" {
        return Ok(());
    }
    let executor = ToolExecutor::new();
    let cancel = CancellationToken::new();
    let call = |name: &str, arguments: Value| {
        executor.execute(
            store,
            vec![ToolCall::new("call-0", name, arguments)],
            &cancel,
        )
    };
    for name in names {
        let loaded = call(&name, json!({})).await;
        let message = &loaded.messages[0];
        eprintln!("{name} -> {}", message.text_content().escape_debug());
        if message.is_error() {
            continue;
        }
        let schema = store.get(&name).map(|tool| tool.input_schema().clone());
        let files = schema
            .as_ref()
            .and_then(|schema| schema["properties"]["file"]["enum"].as_array())
            .cloned()
            .unwrap_or_default();
        for file in files {
            let read = call(&name, json!({ "file": file })).await;
            eprintln!(
                "{name} {file} -> {}",
                read.messages[0].text_content().escape_debug()
            );
        }
    }
    Ok(())
}

fn oauth(scenario: &str, context: &Value) -> Result<OAuth, String> {
    let text = |key: &str| context.get(key).and_then(Value::as_str).map(str::to_owned);
    let needed = |key: &str| text(key).ok_or(format!("the scenario's context has no `{key}`"));
    match scenario {
        // private_key_jwt: the client ID and its private key (PEM) come with the scenario.
        "auth/client-credentials-jwt" => {
            let key =
                SigningKey::from_pem(&needed("private_key_pem")?).map_err(|e| e.to_string())?;
            return Ok(OAuth::client_credentials_jwt(needed("client_id")?, key));
        }
        // Workload identity: the platform's JWT for this workload, from the context.
        "auth/wif-jwt-bearer" => {
            return Ok(OAuth::jwt_bearer(fixed_token(needed("valid_jwt")?))
                .client_id(needed("client_id")?));
        }
        // Enterprise-managed: the person's ID token from the company's identity provider.
        "auth/enterprise-managed-authorization" => {
            let idp = IdentityProvider::new(
                needed("idp_issuer")?,
                needed("idp_token_endpoint")?,
                needed("idp_client_id")?,
            );
            return Ok(OAuth::enterprise(idp, fixed_token(needed("idp_id_token")?))
                .client_id(needed("client_id")?)
                .client_secret(needed("client_secret")?));
        }
        _ => {}
    }
    if scenario.starts_with("auth/client-credentials") {
        return Ok(OAuth::client_credentials(
            text("client_id").unwrap_or_default(),
            text("client_secret").unwrap_or_default(),
        ));
    }
    let mut oauth = OAuth::authorization_code(REDIRECT_URI, follow_authorization)
        .client_name("yiem conformance client")
        .client_metadata_url(CLIENT_METADATA_URL)
        .authorization_timeout(Duration::from_secs(20));
    if let Some(id) = text("client_id") {
        oauth = oauth.client_id(id);
    }
    if let Some(secret) = text("client_secret") {
        oauth = oauth.client_secret(secret);
    }
    // DPoP-bound tokens, with the nonces the servers ask for (SEP-1932).
    Ok(oauth.dpop(scenario.starts_with("auth/dpop")))
}

/// The browser: fetch the authorization URL, and hand back where it redirects.
async fn follow_authorization(url: String) -> Result<String, String> {
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .map_err(|error| error.to_string())?;
    let response = browser
        .get(&url)
        .send()
        .await
        .map_err(|error| error.to_string())?;
    response
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|location| location.to_str().ok())
        .map(str::to_owned)
        .ok_or_else(|| {
            format!(
                "the authorization server answered {} without a redirect",
                response.status()
            )
        })
}

/// Arguments that satisfy a simple schema: each required property gets a value of its type.
fn arguments_for(schema: &Value) -> Value {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut arguments = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            if !required.contains(&name.as_str()) {
                continue;
            }
            let value = match property["type"].as_str() {
                Some("number") => json!(1.0),
                Some("integer") => json!(1),
                Some("boolean") => json!(true),
                Some("array") => json!([]),
                Some("object") => json!({}),
                _ => json!("test"),
            };
            arguments.insert(name.clone(), value);
        }
    }
    Value::Object(arguments)
}
