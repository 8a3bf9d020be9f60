//! DPoP (RFC 9449, MCP's SEP-1932): tokens bound to a key this client holds, so a stolen token is useless
//! without it. One fresh P-256 key per [`OAuth`](super::OAuth) configuration, kept in memory only; a
//! proof (a JWT signed by it, with the request's method and URL, a fresh `jti` and, towards the MCP
//! server, the token's hash) goes on every token request and every request to the MCP server, which
//! gets the token with the `DPoP` scheme instead of `Bearer`.
//!
//! Nonces: a server that answers `use_dpop_nonce` with a `DPoP-Nonce` header gets the request again, once,
//! with a proof carrying the nonce, which is kept per server (origin) for the proofs that follow. rmcp's
//! HTTP client does not hand back the headers of a refused request, so for the MCP server the nonce is
//! fetched by a `ping` sent with a fresh proof (a request that changes nothing if it goes through).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{
    OAuthHttpClient, OAuthHttpClientError, OAuthHttpClientFuture, OAuthHttpRequest,
};
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::json;
use sha2::Digest;
use sse_stream::Sse;

use super::TokenStore;
use super::jose::{install_crypto, now, random_id};

/// The header a server names its nonce in.
const NONCE_HEADER: &str = "dpop-nonce";

/// This client's DPoP key and the nonces servers asked for.
pub(super) struct Dpop {
    key: EncodingKey,
    jwk: Jwk,
    /// The last nonce each server (by origin) gave.
    nonces: Mutex<HashMap<String, String>>,
}

impl Dpop {
    /// A fresh P-256 key.
    pub(super) fn new() -> Result<Dpop, String> {
        use p256::pkcs8::EncodePrivateKey;
        install_crypto();
        let secret = p256::SecretKey::random(&mut rand_core::OsRng);
        let der = secret
            .to_pkcs8_der()
            .map_err(|error| format!("the DPoP key cannot be encoded: {error}"))?;
        let key = EncodingKey::from_ec_der(der.as_bytes());
        let jwk = Jwk::from_encoding_key(&key, Algorithm::ES256)
            .map_err(|error| format!("the DPoP key has no public form: {error}"))?;
        Ok(Dpop {
            key,
            jwk,
            nonces: Mutex::new(HashMap::new()),
        })
    }

    /// A proof for one request: `htm` the method, `htu` the URL without query or fragment, `ath` the
    /// access token's SHA-256 when one goes with it, and the server's nonce when it gave one.
    pub(super) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
    ) -> Result<String, String> {
        let mut htu = reqwest::Url::parse(url)
            .map_err(|error| format!("`{url}` is not an address for a DPoP proof: {error}"))?;
        htu.set_query(None);
        htu.set_fragment(None);
        let mut claims = json!({
            "jti": random_id(),
            "htm": method,
            "htu": htu.as_str(),
            "iat": now(),
        });
        if let Some(token) = access_token {
            claims["ath"] = json!(URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes())));
        }
        if let Some(nonce) = self.nonce(&htu) {
            claims["nonce"] = json!(nonce);
        }
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some("dpop+jwt".to_owned());
        header.jwk = Some(self.jwk.clone());
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|error| format!("signing the DPoP proof failed: {error}"))
    }

    fn nonce(&self, url: &reqwest::Url) -> Option<String> {
        let nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        nonces.get(&url.origin().ascii_serialization()).cloned()
    }

    /// Keeps the nonce `url`'s server gave (in a `DPoP-Nonce` header); `true` when it is a new one.
    fn remember(&self, url: &str, headers: &http::HeaderMap) -> bool {
        let (Ok(url), Some(nonce)) = (
            reqwest::Url::parse(url),
            headers.get(NONCE_HEADER).and_then(|v| v.to_str().ok()),
        ) else {
            return false;
        };
        let mut nonces = self.nonces.lock().unwrap_or_else(|p| p.into_inner());
        let previous = nonces.insert(url.origin().ascii_serialization(), nonce.to_owned());
        previous.as_deref() != Some(nonce)
    }
}

/// Whether an OAuth error (a challenge or a token endpoint's answer) asks for a DPoP nonce.
fn asks_for_nonce(text: &str) -> bool {
    text.contains("use_dpop_nonce")
}

/// The authorization server's side: token requests (a form with a `grant_type`) are sent by
/// [`send`](Self::send), with a proof when DPoP is on (retried once with the nonce a `use_dpop_nonce`
/// answer names); rmcp's other requests (discovery, registration) go to rmcp's client unchanged.
pub(super) struct TokenRequests {
    inner: Arc<dyn OAuthHttpClient>,
    dpop: Option<Arc<Dpop>>,
    client: reqwest::Client,
}

/// The most of a token endpoint's answer that is read.
const MAX_TOKEN_RESPONSE: usize = 1 << 20;

impl TokenRequests {
    pub(super) fn new(
        inner: Arc<dyn OAuthHttpClient>,
        dpop: Option<Arc<Dpop>>,
    ) -> Result<TokenRequests, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(std::time::Duration::from_secs(30))
            .build()
            .map_err(|error| format!("no HTTP client for the token endpoint: {error}"))?;
        Ok(TokenRequests {
            inner,
            dpop,
            client,
        })
    }

    /// Sends one token request (no redirects, 30 s, an answer of at most 1 MiB).
    pub(super) async fn send(
        &self,
        request: http::Request<Vec<u8>>,
    ) -> Result<http::Response<Vec<u8>>, OAuthHttpClientError> {
        let url = request.uri().to_string();
        let mut attempts = 0;
        loop {
            attempts += 1;
            let mut outgoing = self
                .client
                .request(request.method().clone(), &url)
                .headers(request.headers().clone())
                .body(request.body().clone());
            if let Some(dpop) = &self.dpop {
                outgoing = outgoing.header("dpop", dpop.proof("POST", &url, None)?);
            }
            let mut response = outgoing.send().await?;
            let mut answer = http::Response::builder().status(response.status());
            for (name, value) in response.headers() {
                answer = answer.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if body.len() + chunk.len() > MAX_TOKEN_RESPONSE {
                    return Err(format!(
                        "the token endpoint answered more than {MAX_TOKEN_RESPONSE} bytes"
                    )
                    .into());
                }
                body.extend_from_slice(&chunk);
            }
            let answer = answer.body(body)?;
            let retry = match &self.dpop {
                Some(dpop) => {
                    dpop.remember(&url, answer.headers())
                        && answer.status() == http::StatusCode::BAD_REQUEST
                        && asks_for_nonce(&String::from_utf8_lossy(answer.body()))
                }
                None => false,
            };
            if !retry || attempts == 2 {
                return Ok(answer);
            }
        }
    }
}

impl OAuthHttpClient for TokenRequests {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let is_token_request = request.request.method() == http::Method::POST
                && request
                    .request
                    .body()
                    .windows(b"grant_type=".len())
                    .any(|window| window == b"grant_type=");
            if is_token_request && self.dpop.is_some() {
                self.send(request.request).await
            } else {
                self.inner.execute(request).await
            }
        })
    }
}

/// The MCP server's side: reqwest, presenting the token as `DPoP` with a fresh proof on each request
/// when DPoP is on and the authorization server bound the token (its `token_type` is `DPoP`), as
/// `Bearer` otherwise (rmcp's own handling): a server that ignored the proof issued a bearer token.
#[derive(Clone)]
pub(crate) struct ResourceRequests {
    inner: reqwest::Client,
    dpop: Option<Arc<Dpop>>,
    store: Arc<dyn TokenStore>,
}

impl ResourceRequests {
    pub(super) fn new(dpop: Option<Arc<Dpop>>, store: Arc<dyn TokenStore>) -> ResourceRequests {
        ResourceRequests {
            inner: reqwest::Client::default(),
            dpop,
            store,
        }
    }

    /// Whether the stored token is DPoP-bound (`token_type` `DPoP`, in any case).
    fn bound(&self) -> bool {
        let Ok(Some(document)) = self.store.load() else {
            return false;
        };
        serde_json::from_str::<serde_json::Value>(&document)
            .ok()
            .and_then(|stored| {
                stored["token_response"]["token_type"]
                    .as_str()
                    .map(|kind| kind.eq_ignore_ascii_case("dpop"))
            })
            .unwrap_or(false)
    }

    /// `custom` plus the `Authorization: DPoP` and `DPoP` headers for `method` on `uri`.
    fn with_proof(
        dpop: &Dpop,
        method: &str,
        uri: &str,
        token: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> Result<HashMap<HeaderName, HeaderValue>, StreamableHttpError<reqwest::Error>> {
        let proof = dpop
            .proof(method, uri, Some(token))
            .map_err(|error| StreamableHttpError::UnexpectedServerResponse(error.into()))?;
        let value = |text: String| {
            HeaderValue::from_str(&text).map_err(|_| {
                StreamableHttpError::UnexpectedServerResponse(
                    "the access token cannot be sent in a header".into(),
                )
            })
        };
        let mut headers = custom.clone();
        headers.insert(http::header::AUTHORIZATION, value(format!("DPoP {token}"))?);
        headers.insert(HeaderName::from_static("dpop"), value(proof)?);
        Ok(headers)
    }

    /// Asks the server for its nonce with a `ping` and a fresh proof; `true` when it gave a new one.
    async fn fetch_nonce(
        &self,
        dpop: &Dpop,
        uri: &str,
        session_id: Option<&str>,
        token: &str,
        custom: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        let Ok(headers) = Self::with_proof(dpop, "POST", uri, token, custom) else {
            return false;
        };
        let mut request = self
            .inner
            .post(uri)
            .header(http::header::ACCEPT, "application/json, text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": "yiem-dpop-nonce", "method": "ping"}));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        if let Some(session) = session_id {
            request = request.header("mcp-session-id", session);
        }
        match request.send().await {
            Ok(response) => dpop.remember(uri, response.headers()),
            Err(_) => false,
        }
    }

    /// Runs `call` with the DPoP headers for `method` (or unchanged without DPoP or a token); a
    /// `use_dpop_nonce` refusal fetches the server's nonce and runs it once more.
    async fn send<T, F, Fut>(
        &self,
        method: &str,
        uri: &str,
        session_id: Option<&str>,
        token: Option<String>,
        custom: HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> Result<T, StreamableHttpError<reqwest::Error>>
    where
        F: Fn(Option<String>, HashMap<HeaderName, HeaderValue>) -> Fut,
        Fut: Future<Output = Result<T, StreamableHttpError<reqwest::Error>>>,
    {
        let (Some(dpop), Some(token)) = (&self.dpop, token.clone()) else {
            return call(token, custom).await;
        };
        if !self.bound() {
            return call(Some(token), custom).await;
        }
        let outcome = call(None, Self::with_proof(dpop, method, uri, &token, &custom)?).await;
        match outcome {
            Err(StreamableHttpError::AuthRequired(ref refused))
                if asks_for_nonce(&refused.www_authenticate_header)
                    && self
                        .fetch_nonce(dpop, uri, session_id, &token, &custom)
                        .await =>
            {
                call(None, Self::with_proof(dpop, method, uri, &token, &custom)?).await
            }
            outcome => outcome,
        }
    }
}

impl StreamableHttpClient for ResourceRequests {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<Self::Error>> {
        let session = session_id.as_deref();
        self.send(
            "POST",
            &uri,
            session,
            auth_header,
            custom_headers,
            |token, headers| {
                self.inner.post_message_with_response_limits(
                    uri.clone(),
                    message.clone(),
                    session_id.clone(),
                    token,
                    headers,
                    limits,
                )
            },
        )
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<Self::Error>> {
        self.send(
            "DELETE",
            &uri,
            Some(&session_id),
            auth_header,
            custom_headers,
            |token, headers| {
                self.inner
                    .delete_session(uri.clone(), session_id.clone(), token, headers)
            },
        )
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let session = session_id.as_deref();
        self.send(
            "GET",
            &uri,
            session,
            auth_header,
            custom_headers,
            |token, headers| {
                self.inner.get_stream(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    headers,
                )
            },
        )
        .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, StreamableHttpError<Self::Error>> {
        let session = session_id.as_deref();
        self.send(
            "GET",
            &uri,
            session,
            auth_header,
            custom_headers,
            |token, headers| {
                self.inner.get_stream_with_max_sse_event_size(
                    uri.clone(),
                    session_id.clone(),
                    last_event_id.clone(),
                    token,
                    headers,
                    max_sse_event_size,
                )
            },
        )
        .await
    }
}
