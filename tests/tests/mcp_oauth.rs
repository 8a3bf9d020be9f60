//! yiem's MCP client with OAuth (`yiem_core::mcp::oauth`), against a server written with the official
//! Python SDK that is its own authorization server (`tests/python/mcp_oauth_server.py`, the SDK's
//! `/authorize`, `/token` and `/register` over an in-memory provider): discovery from the 401, dynamic
//! registration, PKCE, the browser step answered by the test, a step-up on 403 `insufficient_scope`, a
//! refresh after the server stops accepting a token; and the ways it goes wrong: a redirect with another
//! `state`, a token endpoint that never answers or answers garbage, a refresh that keeps failing,
//! metadata naming an authorization server at a cloud metadata host, and tokens in logs.
//!
//! Everything listens on 127.0.0.1; the browser is a reqwest client that does not follow redirects.

use std::io::Write;
use std::path::PathBuf;
use std::process::Child;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};
use yiem_core::mcp::oauth::{MemoryTokenStore, OAuth, TokenStore};
use yiem_core::mcp::{McpClient, McpClientError};
use yiem_core::{
    exec::{CancellationToken, ToolCall, ToolExecutor},
    store::ToolStore,
};
use yiem_tests::installed::{python_listening, target_dir};
use yiem_tests::poll::free_port;

const REDIRECT_URI: &str = "http://127.0.0.1:1/callback";

/// The Python server on a free loopback port, with its token and event files; killed when dropped.
struct OAuthServer {
    child: Child,
    url: String,
    tokens: PathBuf,
    events: PathBuf,
}

impl Drop for OAuthServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.tokens);
        let _ = std::fs::remove_file(&self.events);
    }
}

impl OAuthServer {
    async fn start(fault: &str) -> OAuthServer {
        let port = free_port();
        let folder = target_dir().join("tmp");
        std::fs::create_dir_all(&folder).unwrap();
        let tokens = folder.join(format!("oauth-tokens-{port}"));
        let events = folder.join(format!("oauth-events-{port}"));
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("python/mcp_oauth_server.py");
        let port_arg = port.to_string();
        let child = python_listening(
            [script.as_os_str(), port_arg.as_ref()],
            [
                ("YIEM_TEST_OAUTH_FAULT".as_ref(), fault.as_ref()),
                ("YIEM_TEST_OAUTH_TOKENS".as_ref(), tokens.as_os_str()),
                ("YIEM_TEST_OAUTH_EVENTS".as_ref(), events.as_os_str()),
            ],
            port,
        )
        .await;
        OAuthServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
            tokens,
            events,
        }
    }

    /// Every authorization code, access token (`at-`) and refresh token (`rt-`) the server issued.
    fn issued_tokens(&self) -> Vec<String> {
        read_lines(&self.tokens)
    }

    /// The authorizations, code exchanges and refreshes the server saw, in order.
    fn events(&self) -> Vec<String> {
        read_lines(&self.events)
    }
}

fn read_lines(path: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The browser: fetches the authorization URL and hands back where it redirects; records each URL.
#[derive(Clone, Default)]
struct Browser {
    visited: Arc<Mutex<Vec<String>>>,
}

impl Browser {
    fn visited(&self) -> Vec<String> {
        self.visited.lock().unwrap().clone()
    }

    /// Answers the authorization step; `rewrite` changes the redirect before it is handed back.
    fn handler(
        &self,
        rewrite: fn(String) -> String,
    ) -> impl Fn(
        String,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<String, String>> + Send>,
    > + Send
    + Sync
    + 'static {
        let visited = Arc::clone(&self.visited);
        move |url: String| {
            visited.lock().unwrap().push(url.clone());
            Box::pin(async move {
                let browser = reqwest::Client::builder()
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|error| error.to_string())?;
                let response = browser
                    .get(&url)
                    .send()
                    .await
                    .map_err(|error| error.to_string())?;
                let location = response
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|value| value.to_str().ok())
                    .ok_or_else(|| {
                        format!(
                            "no redirect from the authorization server ({})",
                            response.status()
                        )
                    })?;
                Ok(rewrite(location.to_owned()))
            })
        }
    }
}

/// What every test starts from: the Python server with `fault` (see `python/mcp_oauth_server.py`), a
/// browser and an empty token store.
async fn start(fault: &str) -> (OAuthServer, Browser, MemoryTokenStore) {
    (
        OAuthServer::start(fault).await,
        Browser::default(),
        MemoryTokenStore::new(),
    )
}

fn oauth(browser: &Browser, store: &MemoryTokenStore) -> OAuth {
    OAuth::authorization_code(REDIRECT_URI, browser.handler(|redirect| redirect))
        .token_store(store.clone())
        .authorization_timeout(Duration::from_secs(60))
}

async fn call(store: &ToolStore, name: &str) -> (bool, String) {
    let batch = ToolExecutor::new()
        .execute(
            store,
            vec![ToolCall::new("c1", name, json!({}))],
            &CancellationToken::new(),
        )
        .await;
    let message = batch.messages.into_iter().next().unwrap();
    (message.is_error(), message.text_content())
}

/// Connects with OAuth, registers the tools, and checks the token reaches the server.
async fn authorized(
    server: &OAuthServer,
    browser: &Browser,
    store: &MemoryTokenStore,
) -> (McpClient, ToolStore) {
    let client = McpClient::http(&server.url)
        .name("python-oauth")
        .oauth(oauth(browser, store))
        .connect()
        .await
        .expect("the client authorizes and connects");
    let tools = ToolStore::new("agent");
    client.register(&tools).await.expect("the tools are listed");
    (client, tools)
}

/// Everything yiem, rmcp, reqwest and hyper log at any level, in all tests of this binary.
fn captured_logs() -> Arc<Mutex<Vec<u8>>> {
    static LOGS: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    LOGS.get_or_init(|| {
        let logs = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&logs);
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(move || Sink(Arc::clone(&sink)))
            .init();
        logs
    })
    .clone()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_python_sdk_server_is_discovered_authorized_with_pkce_stepped_up_and_refreshed() {
    let (server, browser, store) = start("").await;
    let (_client, tools) = authorized(&server, &browser, &store).await;

    // Discovery, registration, PKCE and the resource parameter, as the authorization URL shows them;
    // the first grant lacked `mcp:write`, so the client stepped up once, for the union.
    let visited = browser.visited();
    assert_eq!(
        visited.len(),
        2,
        "one authorization and one step-up: {visited:?}"
    );
    for url in &visited {
        assert!(url.contains("code_challenge_method=S256"), "{url}");
        assert!(url.contains("resource=http%3A%2F%2F127.0.0.1"), "{url}");
    }
    assert!(
        visited[1].contains("mcp%3Aread") && visited[1].contains("mcp%3Awrite"),
        "{}",
        visited[1]
    );
    assert_eq!(
        call(&tools, "whoami").await,
        (false, "mcp:read mcp:write".to_owned())
    );

    // The server stops accepting the token: the next call refreshes once and goes through.
    assert_eq!(call(&tools, "expire").await, (false, "expired".to_owned()));
    assert_eq!(
        call(&tools, "whoami").await,
        (false, "mcp:read mcp:write".to_owned())
    );
    let events = server.events();
    assert_eq!(
        events.iter().filter(|event| *event == "refresh").count(),
        1,
        "{events:?}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|event| event.starts_with("authorize"))
            .count(),
        2,
        "no new authorization after the refresh: {events:?}"
    );
    // The store holds the refreshed credentials, as JSON.
    let stored: Value = serde_json::from_str(&store.load().unwrap().unwrap()).unwrap();
    let latest = server
        .issued_tokens()
        .into_iter()
        .rev()
        .find(|token| token.starts_with("at-"));
    assert_eq!(
        stored["token_response"]["access_token"].as_str(),
        latest.as_deref()
    );
}

#[tokio::test]
async fn codes_and_tokens_never_appear_in_the_logs() {
    let logs = captured_logs();
    let (server, browser, store) = start("").await;
    let (_client, tools) = authorized(&server, &browser, &store).await;
    call(&tools, "expire").await;
    let (is_error, text) = call(&tools, "whoami").await;
    assert!(!is_error, "{text}");
    let issued = server.issued_tokens();
    assert!(
        issued.len() >= 4,
        "access and refresh tokens were issued: {issued:?}"
    );
    assert!(
        issued
            .iter()
            .any(|code| !code.starts_with("at-") && !code.starts_with("rt-")),
        "authorization codes were issued: {issued:?}"
    );
    let logs = String::from_utf8_lossy(&logs.lock().unwrap()).into_owned();
    assert!(
        logs.contains("python-oauth") || logs.contains("127.0.0.1"),
        "the logs were captured"
    );
    for secret in issued {
        assert!(
            !logs.contains(&secret),
            "a code or token is in the logs: {secret}"
        );
    }
}

/// Connects to `server` with `oauth` and returns the error it ends in.
async fn connect_refused(server: &OAuthServer, oauth: OAuth) -> McpClientError {
    let connected = McpClient::http(&server.url)
        .name("python-oauth")
        .oauth(oauth)
        .connect()
        .await;
    match connected {
        Ok(_) => panic!("the client connected"),
        Err(error) => error,
    }
}

/// Connects to `server` with `oauth` and returns the text of the authorization error it ends in.
async fn authorization_refused(server: &OAuthServer, oauth: OAuth) -> String {
    let error = connect_refused(server, oauth).await;
    let message = error.to_string();
    assert!(
        matches!(error, McpClientError::Authorization { .. }),
        "{message}"
    );
    message
}

#[tokio::test]
async fn a_redirect_with_another_state_is_refused_naming_the_server() {
    let (server, browser, _) = start("").await;
    let oauth = OAuth::authorization_code(
        REDIRECT_URI,
        browser.handler(|redirect| {
            let (before, after) = redirect.split_once("state=").expect("a state");
            let rest = after
                .split_once('&')
                .map(|(_, rest)| format!("&{rest}"))
                .unwrap_or_default();
            format!("{before}state=forged{rest}")
        }),
    );
    let message = authorization_refused(&server, oauth).await;
    assert!(
        message.starts_with("MCP server `python-oauth` refused access"),
        "{message}"
    );
    assert!(message.contains("token exchange failed"), "{message}");
    assert!(
        !server.events().contains(&"token".to_owned()),
        "the code was never sent for a token: {:?}",
        server.events()
    );
}

#[tokio::test]
async fn a_token_endpoint_that_never_answers_is_cut_off_by_the_authorization_timeout() {
    let (server, browser, _) = start("hang-token").await;
    let oauth = OAuth::authorization_code(REDIRECT_URI, browser.handler(|redirect| redirect))
        .authorization_timeout(Duration::from_secs(3));
    let error = connect_refused(&server, oauth).await;
    let message = error.to_string();
    assert!(
        matches!(
            error,
            McpClientError::Limit {
                limit: "authorization_timeout",
                ..
            }
        ),
        "{message}"
    );
    assert!(
        message.contains("`python-oauth`") && message.contains("OAuth::authorization_timeout"),
        "{message}"
    );
}

#[tokio::test]
async fn a_token_endpoint_answering_garbage_is_a_clear_error_naming_the_server() {
    let (server, browser, store) = start("garbage-token").await;
    let message = authorization_refused(&server, oauth(&browser, &store)).await;
    assert!(
        message.contains("`python-oauth`") && message.contains("token exchange failed"),
        "{message}"
    );
    assert_eq!(store.load().unwrap(), None, "nothing was stored");
}

#[tokio::test]
async fn a_refresh_that_keeps_failing_ends_in_one_error_naming_the_server_without_a_loop() {
    let (server, browser, store) = start("refresh-fails").await;
    let (_client, tools) = authorized(&server, &browser, &store).await;
    call(&tools, "expire").await;
    let (is_error, text) = call(&tools, "whoami").await;
    assert!(is_error, "{text}");
    assert!(
        text.contains("`python-oauth`") && text.contains("refresh"),
        "{text}"
    );
    let (is_error, text) = call(&tools, "whoami").await;
    assert!(is_error, "{text}");
    // One refresh per request refused: the first call's, then the reconnection's `server/discover`
    // and its `initialize` fallback. Then the client gives up until the next call.
    let events = server.events();
    let refreshes = events.iter().filter(|event| *event == "refresh").count();
    assert!(
        refreshes <= 3,
        "one refresh per request, no loop: {events:?}"
    );
    assert_eq!(
        events
            .iter()
            .filter(|event| event.starts_with("authorize"))
            .count(),
        2,
        "a failing refresh is not a reason to send the person to the browser again: {events:?}"
    );
}

#[tokio::test]
async fn metadata_naming_an_authorization_server_at_a_cloud_metadata_host_is_refused() {
    let (server, browser, store) = start("foreign-metadata").await;
    let message = authorization_refused(&server, oauth(&browser, &store)).await;
    assert!(
        message.contains("`python-oauth`") && message.contains("discovery failed"),
        "{message}"
    );
    assert!(browser.visited().is_empty(), "no authorization was started");
}

#[tokio::test]
async fn a_code_sent_back_to_another_address_than_the_redirect_uri_is_never_exchanged() {
    for elsewhere in [
        "http://127.0.0.1:1/elsewhere",
        "http://127.0.0.2:1/callback",
        "https://127.0.0.1:1/callback",
        "http://127.0.0.1:2/callback",
    ] {
        let (server, browser, _) = start("").await;
        let handler = browser.handler(|redirect| redirect);
        let moved = move |url: String| {
            let redirected = handler(url);
            async move {
                let redirected = redirected.await?;
                let query = redirected
                    .split_once('?')
                    .map(|(_, query)| query.to_owned());
                Ok(format!("{elsewhere}?{}", query.unwrap_or_default()))
            }
        };
        let oauth = OAuth::authorization_code(REDIRECT_URI, moved);
        let message = authorization_refused(&server, oauth).await;
        assert!(
            message.contains(&format!("the browser came back to `{elsewhere}`"))
                && message.contains("not to the redirect URI `http://127.0.0.1:1/callback`")
                && !message.contains("code="),
            "{message}"
        );
        assert!(
            !server.events().contains(&"token".to_owned()),
            "{elsewhere}: the code was never sent for a token: {:?}",
            server.events()
        );
    }
}

#[tokio::test]
async fn an_authorization_endpoint_that_is_not_https_is_never_handed_to_the_browser_step() {
    let (server, browser, store) = start("javascript-authorize").await;
    let message = authorization_refused(&server, oauth(&browser, &store)).await;
    assert!(
        message.contains("`python-oauth`")
            && message.contains("authorization endpoint is a `javascript:` address"),
        "{message}"
    );
    assert!(browser.visited().is_empty(), "{:?}", browser.visited());
}
