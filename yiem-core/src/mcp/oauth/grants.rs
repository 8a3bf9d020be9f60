//! The grants with no person at a browser, beyond rmcp's client secret: client credentials with a JWT
//! assertion (`private_key_jwt`, RFC 7523 section 2.2), workload identity (the JWT-bearer grant, RFC 7523
//! section 2.1, MCP's SEP-1933) and enterprise-managed authorization (an ID token exchanged at the
//! identity provider for an ID-JAG, RFC 8693, redeemed at the MCP server's authorization server: rmcp's
//! `enterprise` module). Each asks the token endpoint that discovery found; the token then lives in the
//! [`TokenStore`](super::TokenStore) like any other.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::BoxFuture;
use super::dpop::TokenRequests;
use super::jose::{now, unverified_claims};

/// The grant type of RFC 7523's JWT bearer grant.
pub(super) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The client assertion type of RFC 7523's client authentication.
const JWT_ASSERTION_TYPE: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// Where a credential this client presents comes from each time it authorizes: a workload's identity
/// token (which the platform rotates), or a person's ID token from the company's identity provider.
///
/// A closure `Fn() -> impl Future<Output = Result<String, String>>` is one; [`fixed_token`] and
/// [`token_file`] are the usual ones.
pub trait TokenSource: Send + Sync + 'static {
    /// The current token, or why there is none.
    fn token(&self) -> BoxFuture<Result<String, String>>;
}

impl<F, Fut> TokenSource for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn token(&self) -> BoxFuture<Result<String, String>> {
        Box::pin(self())
    }
}

/// The same token every time (one obtained elsewhere for this run).
pub fn fixed_token(token: impl Into<String>) -> impl TokenSource {
    let token: Arc<str> = token.into().into();
    move || {
        let token = token.to_string();
        async move { Ok(token) }
    }
}

/// The token in the file at `path`, read afresh each time (a Kubernetes projected service-account
/// token, a cloud's workload identity file), surrounding whitespace removed.
pub fn token_file(path: impl Into<PathBuf>) -> impl TokenSource {
    let path: Arc<PathBuf> = Arc::new(path.into());
    move || {
        let path = Arc::clone(&path);
        async move {
            match tokio::fs::read_to_string(path.as_path()).await {
                Ok(text) if !text.trim().is_empty() => Ok(text.trim().to_owned()),
                Ok(_) => Err(format!("the token file `{}` is empty", path.display())),
                Err(error) => Err(format!(
                    "the token file `{}` cannot be read: {error}",
                    path.display()
                )),
            }
        }
    }
}

/// The company's identity provider, for [`OAuth::enterprise`](super::OAuth::enterprise): its issuer, its
/// token endpoint and this client's ID there.
#[derive(Clone)]
#[must_use]
pub struct IdentityProvider {
    pub(super) issuer: String,
    pub(super) token_endpoint: String,
    pub(super) client_id: String,
    pub(super) client_secret: Option<String>,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("issuer", &self.issuer)
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl IdentityProvider {
    /// The identity provider `issuer`, whose token endpoint is `token_endpoint`, where this client is
    /// registered as `client_id` (a public client unless [`client_secret`](Self::client_secret) is set).
    pub fn new(
        issuer: impl Into<String>,
        token_endpoint: impl Into<String>,
        client_id: impl Into<String>,
    ) -> Self {
        IdentityProvider {
            issuer: issuer.into(),
            token_endpoint: token_endpoint.into(),
            client_id: client_id.into(),
            client_secret: None,
        }
    }

    /// This client's secret at the identity provider (`client_secret_basic`).
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }
}

/// Refuses a workload assertion that has expired or is meant for another authorization server than
/// `issuer` (whose token endpoint is `token_endpoint`), before it is sent anywhere.
pub(super) fn check_assertion(jwt: &str, issuer: &str, token_endpoint: &str) -> Result<(), String> {
    let claims = unverified_claims(jwt)
        .ok_or("the workload identity assertion is not a JWT (three base64url parts)")?;
    if let Some(expiry) = claims.get("exp").and_then(Value::as_u64) {
        let now = now();
        if expiry <= now {
            return Err(format!(
                "the workload identity assertion expired {} s ago; it was not sent (the token \
                 source must return a fresh one)",
                now - expiry
            ));
        }
    }
    let audiences: Vec<&str> = match claims.get("aud") {
        Some(Value::String(one)) => vec![one.as_str()],
        Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    let trimmed = |text: &str| text.trim_end_matches('/').to_owned();
    let ours = [trimmed(issuer), trimmed(token_endpoint)];
    if !audiences.iter().any(|aud| ours.contains(&trimmed(aud))) {
        return Err(format!(
            "the workload identity assertion is for {} (its `aud`), not for this authorization server \
             `{}`; it was not sent",
            if audiences.is_empty() {
                "no audience".to_owned()
            } else {
                format!("`{}`", audiences.join("`, `").escape_debug())
            },
            issuer.escape_debug()
        ));
    }
    Ok(())
}

/// The form of a client credentials request authenticated by a signed assertion.
pub(super) fn client_assertion_form(assertion: String) -> Vec<(&'static str, String)> {
    vec![
        ("grant_type", "client_credentials".to_owned()),
        ("client_assertion_type", JWT_ASSERTION_TYPE.to_owned()),
        ("client_assertion", assertion),
    ]
}

/// Posts `form` to `endpoint` (with HTTP Basic client authentication when given) and returns the token
/// response, or the authorization server's refusal in words (its `error` and description, bounded).
pub(super) async fn token_request(
    http: &TokenRequests,
    endpoint: &str,
    form: &[(&str, String)],
    basic: Option<(&str, &str)>,
) -> Result<Value, String> {
    use base64::Engine;
    let body = form
        .iter()
        .map(|(key, value)| format!("{key}={}", encode(value)))
        .collect::<Vec<_>>()
        .join("&");
    let mut request = http::Request::post(endpoint)
        .header(
            http::header::CONTENT_TYPE,
            "application/x-www-form-urlencoded",
        )
        .header(http::header::ACCEPT, "application/json");
    if let Some((id, secret)) = basic {
        let pair = format!("{}:{}", encode(id), encode(secret));
        request = request.header(
            http::header::AUTHORIZATION,
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(pair)
            ),
        );
    }
    let request = request
        .body(body.into_bytes())
        .map_err(|error| format!("the token endpoint `{endpoint}` is not an address: {error}"))?;
    let response = http
        .send(request)
        .await
        .map_err(|error| format!("the token request to `{endpoint}` failed: {error}"))?;
    let answer: Option<Value> = serde_json::from_slice(response.body()).ok();
    if response.status().is_success() {
        return match answer {
            Some(token) if token.get("access_token").and_then(Value::as_str).is_some() => Ok(token),
            _ => Err(format!(
                "the token endpoint `{endpoint}` answered {} without an access token",
                response.status()
            )),
        };
    }
    let field = |name: &str| {
        answer
            .as_ref()
            .and_then(|answer| answer.get(name))
            .and_then(Value::as_str)
            .map(|text| text.chars().take(200).collect::<String>())
    };
    Err(format!(
        "the authorization server refused the token request ({}): {}{}",
        response.status(),
        field("error")
            .as_deref()
            .unwrap_or("no OAuth error")
            .escape_debug(),
        field("error_description")
            .map(|text| format!(" ({})", text.escape_debug()))
            .unwrap_or_default()
    ))
}

/// `application/x-www-form-urlencoded` for one key or value.
fn encode(text: &str) -> String {
    reqwest::Url::parse_with_params("x:", [("", text)])
        .ok()
        .and_then(|url| url.query().map(|query| query[1..].to_owned()))
        .unwrap_or_default()
}
