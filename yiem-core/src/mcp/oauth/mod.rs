//! OAuth 2.1 for MCP servers reached over HTTP, as the MCP authorization spec describes it, on rmcp's
//! `auth` support (no OAuth of yiem's own). Needs the `mcp-oauth` feature.
//!
//! Give [`McpClientBuilder::oauth`](super::McpClientBuilder::oauth) an [`OAuth`] and the client
//! authorizes when the server asks:
//!
//! ```no_run
//! use yiem_core::mcp::McpClient;
//! use yiem_core::mcp::oauth::OAuth;
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let oauth = OAuth::authorization_code("http://127.0.0.1:8976/callback", |url: String| async move {
//!     println!("open {url} and paste the address you are sent back to");
//!     let mut redirected = String::new();
//!     std::io::stdin().read_line(&mut redirected).map_err(|error| error.to_string())?;
//!     Ok(redirected.trim().to_owned())
//! });
//! let client = McpClient::http("https://mcp.example.com/mcp").oauth(oauth).connect().await?;
//! # Ok(()) }
//! ```
//!
//! # What happens
//!
//! - **Discovery**: a request answered `401` starts it. The `WWW-Authenticate` challenge's
//!   `resource_metadata` (RFC 9728 protected-resource metadata, else its well-known locations) names the
//!   authorization server, whose RFC 8414 or OpenID Connect metadata gives the endpoints; servers of the
//!   2025-03-26 revision without metadata get the default `/authorize`, `/token` and `/register`.
//! - **Client identity**, in the spec's order: a pre-registered [`client_id`](OAuth::client_id); a client
//!   ID metadata document ([`client_metadata_url`](OAuth::client_metadata_url)) when the authorization
//!   server supports them; dynamic client registration otherwise.
//! - **Authorization code with PKCE (S256)**, the `resource` parameter (RFC 8707) on every token request,
//!   scopes from the challenge, else the protected resource's `scopes_supported` (or
//!   [`scopes`](OAuth::scopes) when set). The [`AuthorizationHandler`] shows the URL to the user and
//!   returns the address the browser was sent back to; its `state` must be the one sent (else the code
//!   is refused) and its `iss`, when present, the authorization server's. The URL is handed over only
//!   when it is `https:` (or `http:` on a loopback host), never `javascript:`, `file:` or another
//!   machine's `http:`; and a code is exchanged only when the browser came back to the redirect URI
//!   itself (its scheme, host, port and path).
//! - **Machine clients**: [`OAuth::client_credentials`] takes a token with the `client_credentials`
//!   grant, with no person involved; [`OAuth::client_credentials_jwt`] authenticates it with a JWT this
//!   client signs (`private_key_jwt`); [`OAuth::jwt_bearer`] redeems a workload's identity token
//!   (SEP-1933); [`OAuth::enterprise`] exchanges a person's ID token from the company's identity
//!   provider for an ID-JAG and that for a token (enterprise-managed authorization).
//! - **DPoP** ([`OAuth::dpop`], RFC 9449): tokens bound to a key of this client, a proof on every
//!   request, the servers' nonces sent back.
//! - **Tokens** live in the [`TokenStore`] (in memory unless set): refreshed shortly before they
//!   expire and once when the server answers `401`; a refresh that fails for good means authorizing
//!   again, once per request.
//! - **Step-up**: a `403` with `error="insufficient_scope"` authorizes once more for the union of the
//!   scopes held and the scopes asked for, then retries the request once; a second refusal is an
//!   error, not a loop.
//!
//! Every authorization (discovery, registration, the person at the browser, the token exchange) is
//! bounded by [`authorization_timeout`](OAuth::authorization_timeout), and each request to the
//! authorization server by rmcp's 30 s. Codes and tokens are never logged: the store's `Debug` shows
//! no content, yiem's errors name the server and the step, never a code or a token, and rmcp's own
//! `DEBUG` log of the code it exchanges is dropped. [`FileTokenStore`] keeps the credentials at `0600`
//! in a folder only the user can write, and refuses one that others can.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationCallback, AuthorizationManager, AuthorizationRequest,
    AuthorizationSession, ClientCredentialsConfig, CredentialStore, OAuthHttpClient,
    OAuthTokenResponse, StoredCredentials, WWWAuthenticateParams,
};

use super::error::McpClientError;

mod dpop;
mod grants;
mod jose;

pub use grants::{IdentityProvider, TokenSource, fixed_token, token_file};
pub use jose::{KeyError, SigningKey};

use dpop::{Dpop, ResourceRequests, TokenRequests};

/// How long one authorization may take unless set otherwise: discovery, registration, the person at
/// the browser and the token exchange together.
pub const DEFAULT_AUTHORIZATION_TIMEOUT: Duration = Duration::from_secs(300);

/// A boxed future, as [`AuthorizationHandler`] returns.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The "open this URL, give me the code" step of the authorization code flow: show `url` to the
/// person (open a browser, print it) and return the full address the authorization server redirected
/// the browser to (the redirect URI with `code`, `state` and perhaps `iss`), or why not.
///
/// A closure `Fn(String) -> impl Future<Output = Result<String, String>>` is one.
pub trait AuthorizationHandler: Send + Sync + 'static {
    /// Shows `url` and returns the address the browser came back to.
    fn authorize(&self, url: String) -> BoxFuture<Result<String, String>>;
}

impl<F, Fut> AuthorizationHandler for F
where
    F: Fn(String) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<String, String>> + Send + 'static,
{
    fn authorize(&self, url: String) -> BoxFuture<Result<String, String>> {
        Box::pin(self(url))
    }
}

/// Where one server's OAuth credentials are kept between requests and runs: the client ID, the access
/// and refresh tokens, the granted scopes and the issuer, as one JSON document yiem reads and writes
/// whole. Implement it over a keychain or a secrets service; [`MemoryTokenStore`] and
/// [`FileTokenStore`] come with yiem.
///
/// The methods are called from async code and should return quickly.
pub trait TokenStore: Send + Sync + 'static {
    /// The document last saved, if any.
    fn load(&self) -> std::io::Result<Option<String>>;
    /// Replaces the document.
    fn save(&self, credentials: &str) -> std::io::Result<()>;
    /// Forgets the document.
    fn clear(&self) -> std::io::Result<()>;
}

/// Credentials kept in memory, lost when the process ends (the default). Clones share the document.
#[derive(Clone, Default)]
pub struct MemoryTokenStore {
    document: Arc<Mutex<Option<String>>>,
}

impl MemoryTokenStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }
}

impl fmt::Debug for MemoryTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryTokenStore").finish_non_exhaustive()
    }
}

impl TokenStore for MemoryTokenStore {
    fn load(&self) -> std::io::Result<Option<String>> {
        Ok(self
            .document
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone())
    }

    fn save(&self, credentials: &str) -> std::io::Result<()> {
        *self.document.lock().unwrap_or_else(|p| p.into_inner()) = Some(credentials.to_owned());
        Ok(())
    }

    fn clear(&self) -> std::io::Result<()> {
        *self.document.lock().unwrap_or_else(|p| p.into_inner()) = None;
        Ok(())
    }
}

/// Credentials in one file, readable and writable by its owner only (mode 0600 on Unix), in a folder
/// only its owner can write. A document is written whole to a fresh temporary file beside it, created
/// exclusively (so a link planted at its name is never followed) and renamed over it, so a crash never
/// leaves half a document.
///
/// A folder that others can write (its mode has the group or other write bit, as `/tmp` and a folder
/// made `0777` do) is refused, on load and on save, with an error saying how to fix it: whoever can
/// write the folder can replace the tokens or read the next ones through a link. yiem does not change
/// the mode of a folder it did not create.
#[derive(Clone)]
pub struct FileTokenStore {
    path: PathBuf,
}

impl FileTokenStore {
    /// A store at `path` (its folder is created, owner-only, when the first document is saved).
    pub fn new(path: impl Into<PathBuf>) -> Self {
        FileTokenStore { path: path.into() }
    }

    /// The file's path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

impl fmt::Debug for FileTokenStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileTokenStore")
            .field("path", &self.path)
            .finish()
    }
}

impl TokenStore for FileTokenStore {
    fn load(&self) -> std::io::Result<Option<String>> {
        super::private_file::read(&self.path, "tokens")
    }

    fn save(&self, credentials: &str) -> std::io::Result<()> {
        super::private_file::write(&self.path, "tokens", credentials)
    }

    fn clear(&self) -> std::io::Result<()> {
        super::private_file::remove(&self.path)
    }
}

#[derive(Clone)]
enum Grant {
    AuthorizationCode {
        redirect_uri: String,
        handler: Arc<dyn AuthorizationHandler>,
    },
    ClientCredentials {
        client_id: String,
        client_secret: String,
    },
    /// The extensions' grants, which yiem asks the token endpoint for itself (boxed: a signing key
    /// is large, and the client's configuration holds an `OAuth`).
    Machine(Box<Machine>),
}

/// The grants with no person that rmcp's manager does not make ([`grants`]).
#[derive(Clone)]
enum Machine {
    ClientCredentialsJwt {
        client_id: String,
        key: SigningKey,
    },
    JwtBearer {
        assertion: Arc<dyn TokenSource>,
    },
    Enterprise {
        idp: IdentityProvider,
        id_token: Arc<dyn TokenSource>,
    },
}

/// How an [`McpClient`](super::McpClient) authorizes with an HTTP server that asks for OAuth. Start with
/// [`OAuth::authorization_code`] (a person authorizes in a browser) or [`OAuth::client_credentials`]
/// (a machine client); see the [module docs](self).
#[derive(Clone)]
#[must_use]
pub struct OAuth {
    grant: Grant,
    client_id: Option<String>,
    client_secret: Option<String>,
    client_metadata_url: Option<String>,
    client_name: String,
    scopes: Vec<String>,
    store: Arc<dyn TokenStore>,
    authorization_timeout: Duration,
    dpop: bool,
}

impl fmt::Debug for OAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let grant = match &self.grant {
            Grant::AuthorizationCode { .. } => "authorization_code",
            Grant::ClientCredentials { .. } => "client_credentials",
            Grant::Machine(machine) => match **machine {
                Machine::ClientCredentialsJwt { .. } => "client_credentials (private_key_jwt)",
                Machine::JwtBearer { .. } => "jwt-bearer",
                Machine::Enterprise { .. } => "enterprise-managed (ID-JAG)",
            },
        };
        f.debug_struct("OAuth")
            .field("grant", &grant)
            .field("client_id", &self.client_id)
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("dpop", &self.dpop)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    fn with_grant(grant: Grant) -> Self {
        OAuth {
            grant,
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "yiem".to_owned(),
            scopes: Vec::new(),
            store: Arc::new(MemoryTokenStore::new()),
            authorization_timeout: DEFAULT_AUTHORIZATION_TIMEOUT,
            dpop: false,
        }
    }

    /// The authorization code flow with PKCE: `handler` shows the authorization URL to a person and
    /// returns the address the browser is sent back to, which starts with `redirect_uri` (a loopback
    /// address such as `http://127.0.0.1:8976/callback` for a program on the user's machine).
    pub fn authorization_code(
        redirect_uri: impl Into<String>,
        handler: impl AuthorizationHandler,
    ) -> Self {
        Self::with_grant(Grant::AuthorizationCode {
            redirect_uri: redirect_uri.into(),
            handler: Arc::new(handler),
        })
    }

    /// The `client_credentials` grant, for a client acting on its own behalf with a secret issued by
    /// the authorization server (`client_secret_post`).
    pub fn client_credentials(
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self::with_grant(Grant::ClientCredentials {
            client_id: client_id.into(),
            client_secret: client_secret.into(),
        })
    }

    /// The `client_credentials` grant authenticated by a JWT this client signs with `key`
    /// (`private_key_jwt`, RFC 7523): the authorization server holds the public key, no secret is
    /// shared. Each assertion names the client as `iss` and `sub` and the authorization server's
    /// issuer as `aud`, and is valid for 60 s.
    pub fn client_credentials_jwt(client_id: impl Into<String>, key: SigningKey) -> Self {
        Self::with_grant(Grant::Machine(Box::new(Machine::ClientCredentialsJwt {
            client_id: client_id.into(),
            key,
        })))
    }

    /// Workload identity federation (MCP's SEP-1933): the JWT bearer grant (RFC 7523) with the
    /// identity token the platform gives this workload (`assertion`, asked for at each authorization),
    /// and [`client_id`](Self::client_id) when the authorization server wants one. An assertion that
    /// has expired, or whose `aud` is not the authorization server's issuer or token endpoint, is
    /// refused before it is sent; a refusal by the server is an error, never retried with another grant.
    pub fn jwt_bearer(assertion: impl TokenSource) -> Self {
        Self::with_grant(Grant::Machine(Box::new(Machine::JwtBearer {
            assertion: Arc::new(assertion),
        })))
    }

    /// Enterprise-managed authorization (ID-JAG): the person's ID token from the company's identity
    /// provider (`id_token`, asked for at each authorization) is exchanged there (RFC 8693) for an
    /// identity assertion for this MCP server's authorization server, which redeems it (JWT bearer
    /// grant) for an access token. This client's ID and secret at that authorization server are
    /// [`client_id`](Self::client_id) and [`client_secret`](Self::client_secret)
    /// (`client_secret_basic`). rmcp's `enterprise` module does both exchanges and checks the
    /// assertion's claims (type, audience, resource, client).
    pub fn enterprise(idp: IdentityProvider, id_token: impl TokenSource) -> Self {
        Self::with_grant(Grant::Machine(Box::new(Machine::Enterprise {
            idp,
            id_token: Arc::new(id_token),
        })))
    }

    /// Sender-constrained tokens with DPoP (RFC 9449, MCP's SEP-1932): a proof signed by a fresh
    /// P-256 key of this client goes with every token request and every request to the server, and
    /// nonces the servers ask for are sent back (default: off). Not with [`enterprise`](Self::enterprise).
    pub fn dpop(mut self, on: bool) -> Self {
        self.dpop = on;
        self
    }

    /// A client ID registered with the authorization server beforehand (no registration is made).
    pub fn client_id(mut self, client_id: impl Into<String>) -> Self {
        self.client_id = Some(client_id.into());
        self
    }

    /// The secret of a pre-registered [`client_id`](Self::client_id), for a confidential client.
    pub fn client_secret(mut self, secret: impl Into<String>) -> Self {
        self.client_secret = Some(secret.into());
        self
    }

    /// The HTTPS URL of this client's metadata document (a client ID metadata document), used as the
    /// client ID by authorization servers that support them.
    pub fn client_metadata_url(mut self, url: impl Into<String>) -> Self {
        self.client_metadata_url = Some(url.into());
        self
    }

    /// The name given at dynamic client registration (default: `yiem`).
    pub fn client_name(mut self, name: impl Into<String>) -> Self {
        self.client_name = name.into();
        self
    }

    /// The scopes to ask for at the first authorization, instead of those the server's challenge or
    /// metadata name.
    pub fn scopes(mut self, scopes: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.scopes = scopes.into_iter().map(Into::into).collect();
        self
    }

    /// Where the credentials are kept (default: a [`MemoryTokenStore`]).
    pub fn token_store(mut self, store: impl TokenStore) -> Self {
        self.store = Arc::new(store);
        self
    }

    /// How long one authorization may take (default: [`DEFAULT_AUTHORIZATION_TIMEOUT`]).
    pub fn authorization_timeout(mut self, limit: Duration) -> Self {
        self.authorization_timeout = limit;
        self
    }
}

/// rmcp's credential store over a [`TokenStore`].
struct StoreAdapter(Arc<dyn TokenStore>);

fn store_error(error: std::io::Error) -> AuthError {
    AuthError::CredentialStoreError(error.to_string())
}

#[async_trait::async_trait]
impl CredentialStore for StoreAdapter {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let Some(document) = self.0.load().map_err(store_error)? else {
            return Ok(None);
        };
        // A document yiem cannot read (another version's, damaged) means authorizing again.
        Ok(serde_json::from_str(&document).ok())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let document = serde_json::to_string(&credentials)
            .map_err(|error| AuthError::CredentialStoreError(error.to_string()))?;
        self.0.save(&document).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.0.clear().map_err(store_error)
    }
}

/// What one request has already done to get through: authorized, stepped up.
#[derive(Default)]
pub(super) struct Tries {
    authorized: bool,
    stepped_up: bool,
}

/// One server's OAuth state: the HTTP client that puts the token on each request (and refreshes it),
/// and the authorizations made when the server refuses.
pub(super) struct Authorizer {
    server: String,
    url: String,
    config: OAuth,
    client: AuthClient<ResourceRequests>,
    /// The HTTP client for the authorization servers: rmcp's, with DPoP proofs on token requests
    /// when DPoP is on.
    http: Arc<TokenRequests>,
    /// This client's DPoP key, when DPoP is on.
    dpop: Option<Arc<Dpop>>,
    /// One authorization at a time; requests refused meanwhile retry with its outcome.
    authorizing: tokio::sync::Mutex<()>,
    /// Counts completed authorizations, so a request refused before one completed retries instead of
    /// authorizing again.
    generation: AtomicU64,
}

impl Authorizer {
    pub(super) async fn new(
        server: &str,
        url: &str,
        config: OAuth,
    ) -> Result<Authorizer, McpClientError> {
        let failed = |detail: String| McpClientError::Authorization {
            server: server.to_owned(),
            detail,
        };
        let dpop = match config.dpop {
            true => Some(Arc::new(Dpop::new().map_err(failed)?)),
            false => None,
        };
        let plain: Arc<dyn OAuthHttpClient> = Arc::new(
            rmcp::transport::auth::default_oauth_http_client().map_err(|error| {
                failed(format!(
                    "no HTTP client for the authorization server: {error}"
                ))
            })?,
        );
        let http = Arc::new(TokenRequests::new(plain, dpop.clone()).map_err(failed)?);
        let dpop_http: Arc<dyn OAuthHttpClient> = http.clone();
        let mut manager =
            new_manager(server, url, &config, dpop.is_some().then_some(&dpop_http)).await?;
        // Credentials from an earlier run: configure the client they belong to, so they can be used
        // and refreshed. Failing to, the server's 401 starts a new authorization.
        let stored = tokio::time::timeout(
            config.authorization_timeout,
            manager.initialize_from_store(),
        )
        .await;
        match stored {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => {
                tracing::warn!(server, %error, "stored OAuth credentials cannot be used; authorizing again when asked");
            }
            Err(_) => {
                tracing::warn!(
                    server,
                    "the authorization server did not answer in time; authorizing again when asked"
                );
            }
        }
        let resource_requests = ResourceRequests::new(dpop.clone(), Arc::clone(&config.store));
        Ok(Authorizer {
            server: server.to_owned(),
            url: url.to_owned(),
            config,
            client: AuthClient::new(resource_requests, manager),
            http,
            dpop,
            authorizing: tokio::sync::Mutex::new(()),
            generation: AtomicU64::new(0),
        })
    }

    /// The HTTP client for the transport: it carries the token and refreshes it.
    pub(super) fn http_client(&self) -> AuthClient<ResourceRequests> {
        self.client.clone()
    }

    /// The count of completed authorizations, read before a request is sent.
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Reacts to a `401` or `403` challenge on a request sent at `generation`: authorizes (or steps
    /// up) once per request, so that the caller retries it; an error when the request already had
    /// its try or authorizing fails.
    pub(super) async fn recover(
        &self,
        challenge: &str,
        generation: u64,
        tries: &mut Tries,
    ) -> Result<(), McpClientError> {
        let _one_at_a_time = self.authorizing.lock().await;
        if self.generation() != generation {
            // Another request authorized meanwhile: retry with its token.
            return Ok(());
        }
        let base = reqwest::Url::parse(&self.url).map_err(|error| self.failed(error))?;
        let params = WWWAuthenticateParams::parse(challenge, &base);
        // A step-up needs an authorization to step up from: a 403 before any token is authorized
        // afresh.
        let holds_token = matches!(self.config.store.load(), Ok(Some(_)));
        let step_up = params.is_insufficient_scope() && holds_token;
        if step_up && tries.stepped_up || !step_up && tries.authorized {
            return Err(McpClientError::Authorization {
                server: self.server.clone(),
                detail: if step_up {
                    format!(
                        "it still refuses with `insufficient_scope` (asking for `{}`) after one \
                         step-up; the account may not be allowed that scope",
                        params.scope.as_deref().unwrap_or("").escape_debug()
                    )
                } else {
                    "it still answers 401 after a new authorization; check that the authorization \
                     server issues tokens for this server (its `resource`)"
                        .to_owned()
                },
            });
        }
        if step_up {
            tries.stepped_up = true;
        } else {
            tries.authorized = true;
        }
        let limit = self.config.authorization_timeout;
        let attempt = async {
            if step_up {
                self.step_up(params.scope.as_deref().unwrap_or_default())
                    .await
            } else {
                self.authorize(challenge).await
            }
        };
        match tokio::time::timeout(limit, attempt).await {
            Ok(Ok(())) => {
                self.generation.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
            Ok(Err(error)) => Err(error),
            Err(_) => Err(McpClientError::Limit {
                server: self.server.clone(),
                limit: "authorization_timeout",
                detail: format!(
                    "authorizing did not complete within {limit:?} (discovery, registration, the \
                     browser step and the token exchange together); raise the limit with \
                     `OAuth::authorization_timeout` if the person needs longer"
                ),
            }),
        }
    }

    fn failed(&self, error: impl fmt::Display) -> McpClientError {
        McpClientError::Authorization {
            server: self.server.clone(),
            detail: error.to_string(),
        }
    }

    /// A new authorization from the challenge: discovery, client identity, the grant.
    async fn authorize(&self, challenge: &str) -> Result<(), McpClientError> {
        let mut manager = self.new_manager().await?;
        let resolution = manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
            .map_err(|error| self.failed(format!("discovery failed: {error}")))?;
        manager.set_metadata(resolution.metadata);
        let manager = match &self.config.grant {
            Grant::AuthorizationCode {
                redirect_uri,
                handler,
            } => {
                let mut request = AuthorizationRequest::new(redirect_uri.clone())
                    .with_client_name(self.config.client_name.clone())
                    .with_challenge(challenge);
                if !self.config.scopes.is_empty() {
                    request = request.with_scopes(self.config.scopes.iter().cloned());
                } else {
                    request = request.with_initial_scope_selection();
                }
                if let Some(id) = &self.config.client_id {
                    request = request.with_preregistered_client(id.clone());
                }
                if let Some(secret) = &self.config.client_secret {
                    request = request.with_client_secret(secret.clone());
                }
                if let Some(url) = &self.config.client_metadata_url {
                    request = request.with_client_metadata_url(url.clone());
                }
                let session = AuthorizationSession::new(manager, request)
                    .await
                    .map_err(|(_, error)| self.failed(format!("registration failed: {error}")))?;
                let url = session.get_authorization_url().to_owned();
                self.check_authorization_url(&url)?;
                let redirected = handler.authorize(url).await.map_err(|reason| {
                    self.failed(format!("the authorization step did not complete: {reason}"))
                })?;
                self.exchange(&session.auth_manager, redirect_uri, &redirected)
                    .await?;
                session.auth_manager
            }
            Grant::ClientCredentials {
                client_id,
                client_secret,
            } => {
                self.client_credentials(
                    manager,
                    client_id,
                    client_secret,
                    &self.config.scopes,
                    Some(challenge),
                )
                .await?
            }
            Grant::Machine(grant) => {
                self.machine(grant, manager, &self.config.scopes, Some(challenge))
                    .await?
            }
        };
        *self.client.auth_manager.lock().await = manager;
        Ok(())
    }

    /// One step-up for `scope` on the current authorization.
    async fn step_up(&self, scope: &str) -> Result<(), McpClientError> {
        let manager = self.client.auth_manager.lock().await;
        match &self.config.grant {
            Grant::AuthorizationCode {
                handler,
                redirect_uri,
            } => {
                let url = if scope.is_empty() {
                    // A challenge that names no scope (some servers only describe it): ask for every
                    // scope held, asked for, or listed by the protected resource.
                    let scopes = manager.select_scopes(None, &[]);
                    let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
                    manager.get_authorization_url(&scopes).await
                } else {
                    manager.request_scope_upgrade(scope).await
                };
                let url = url.map_err(|error| {
                    self.failed(format!("step-up to `{scope}` failed: {error}"))
                })?;
                self.check_authorization_url(&url)?;
                let redirected = handler.authorize(url).await.map_err(|reason| {
                    self.failed(format!(
                        "the step-up to `{scope}` did not complete: {reason}"
                    ))
                })?;
                self.exchange(&manager, redirect_uri, &redirected).await
            }
            Grant::ClientCredentials {
                client_id,
                client_secret,
            } => {
                let mut scopes = manager.get_current_scopes().await;
                scopes.extend(scope.split_whitespace().map(str::to_owned));
                scopes.dedup();
                drop(manager);
                let manager = self.new_manager().await?;
                let manager = self
                    .client_credentials(manager, client_id, client_secret, &scopes, None)
                    .await?;
                *self.client.auth_manager.lock().await = manager;
                Ok(())
            }
            Grant::Machine(grant) => {
                let mut scopes = manager.get_current_scopes().await;
                scopes.extend(scope.split_whitespace().map(str::to_owned));
                scopes.dedup();
                drop(manager);
                let manager = self.new_manager().await?;
                let manager = self.machine(grant, manager, &scopes, None).await?;
                *self.client.auth_manager.lock().await = manager;
                Ok(())
            }
        }
    }

    /// A manager for this server over the configured store.
    async fn new_manager(&self) -> Result<AuthorizationManager, McpClientError> {
        let http: Arc<dyn OAuthHttpClient> = self.http.clone();
        new_manager(
            &self.server,
            &self.url,
            &self.config,
            self.dpop.is_some().then_some(&http),
        )
        .await
    }

    /// The grants with no person ([`grants`]): discovery, then the token request, whose token is
    /// kept in the store for the manager to present.
    async fn machine(
        &self,
        grant: &Machine,
        mut manager: AuthorizationManager,
        scopes: &[String],
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, McpClientError> {
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|error| self.failed(format!("discovery failed: {error}")))?;
        let metadata = resolution.metadata;
        manager.set_metadata(metadata.clone());
        let token_endpoint = metadata.token_endpoint.clone();
        // The issuer discovery checked (RFC 8414); the token endpoint's origin for a server without
        // metadata.
        let issuer = metadata.issuer.clone().unwrap_or_else(|| {
            reqwest::Url::parse(&token_endpoint)
                .map(|url| url.origin().ascii_serialization())
                .unwrap_or_default()
        });
        let mut form: Vec<(&str, String)> = Vec::new();
        let scope = scopes.join(" ");
        let (client_id, token) = match grant {
            Machine::ClientCredentialsJwt { client_id, key } => {
                let assertion = key
                    .client_assertion(client_id, &issuer)
                    .map_err(|error| self.failed(error))?;
                form.extend(grants::client_assertion_form(assertion));
                (client_id.clone(), None)
            }
            Machine::JwtBearer { assertion } => {
                let jwt = assertion.token().await.map_err(|reason| {
                    self.failed(format!("no workload identity assertion: {reason}"))
                })?;
                grants::check_assertion(&jwt, &issuer, &token_endpoint)
                    .map_err(|error| self.failed(error))?;
                form.push(("grant_type", grants::JWT_BEARER.to_owned()));
                form.push(("assertion", jwt));
                if let Some(id) = &self.config.client_id {
                    form.push(("client_id", id.clone()));
                }
                let id = self
                    .config
                    .client_id
                    .clone()
                    .unwrap_or_else(|| "workload".to_owned());
                (id, None)
            }
            Machine::Enterprise { idp, id_token } => {
                let token = self
                    .enterprise(idp, id_token.as_ref(), &issuer, &token_endpoint, scopes)
                    .await?;
                let id = self.config.client_id.clone().unwrap_or_default();
                (id, Some(token))
            }
        };
        let token = match token {
            Some(token) => token,
            None => {
                form.push(("resource", self.url.clone()));
                if !scope.is_empty() {
                    form.push(("scope", scope.clone()));
                }
                grants::token_request(self.http.as_ref(), &token_endpoint, &form, None)
                    .await
                    .map_err(|error| self.failed(error))?
            }
        };
        let granted: Vec<String> = token
            .get("scope")
            .and_then(serde_json::Value::as_str)
            .map_or_else(
                || scopes.to_vec(),
                |text| text.split_whitespace().map(str::to_owned).collect(),
            );
        let response: OAuthTokenResponse = serde_json::from_value(token).map_err(|error| {
            self.failed(format!(
                "the token endpoint's answer is not a token response: {error}"
            ))
        })?;
        let credentials = StoredCredentials::new(
            client_id.clone(),
            Some(response),
            granted,
            Some(jose::now()),
        )
        .with_issuer(metadata.issuer.clone());
        StoreAdapter(Arc::clone(&self.config.store))
            .save(credentials)
            .await
            .map_err(|error| self.failed(format!("the token cannot be stored: {error}")))?;
        // A client ID lets rmcp try a refresh when the token expires (there is none: it answers
        // that authorization is needed, and the server's 401 brings the grant round again).
        let _ = manager.configure_client_id(&client_id);
        Ok(manager)
    }

    /// Enterprise-managed authorization with rmcp's `enterprise` module: the ID token for an ID-JAG
    /// at the identity provider, the ID-JAG for an access token at `issuer`'s token endpoint.
    async fn enterprise(
        &self,
        idp: &IdentityProvider,
        id_token: &dyn TokenSource,
        issuer: &str,
        token_endpoint: &str,
        scopes: &[String],
    ) -> Result<serde_json::Value, McpClientError> {
        use rmcp::transport::auth::enterprise::{
            EmaAuthorizationServer, EmaClientAuthentication, EmaExchangeRequest,
        };
        if self.dpop.is_some() {
            return Err(self.failed(
                "DPoP is not available with enterprise-managed authorization; turn one of them off",
            ));
        }
        let (Some(client_id), Some(secret)) = (&self.config.client_id, &self.config.client_secret)
        else {
            return Err(self.failed(
                "enterprise-managed authorization needs this client's ID and secret at the MCP \
                 server's authorization server: set `OAuth::client_id` and `OAuth::client_secret`",
            ));
        };
        let id_token = id_token.token().await.map_err(|reason| {
            self.failed(format!("no ID token from the identity provider: {reason}"))
        })?;
        let mut identity =
            EmaAuthorizationServer::new(&idp.issuer, &idp.token_endpoint, &idp.client_id);
        if let Some(secret) = &idp.client_secret {
            identity =
                identity.with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                    oauth2::ClientSecret::new(secret.clone()),
                ));
        }
        let resource_server = EmaAuthorizationServer::new(issuer, token_endpoint, client_id)
            .with_client_authentication(EmaClientAuthentication::ClientSecretBasic(
                oauth2::ClientSecret::new(secret.clone()),
            ));
        let token =
            EmaExchangeRequest::new_with_id_token(identity, resource_server, &self.url, &id_token)
                .with_scopes(scopes.iter().cloned())
                .exchange(self.http.as_ref(), self.http.as_ref())
                .await
                .map_err(|error| {
                    self.failed(format!(
                        "enterprise-managed authorization failed (identity provider `{}`): {error}",
                        idp.issuer.escape_debug()
                    ))
                })?;
        let mut scopes: Vec<&str> = token.scopes.iter().map(String::as_str).collect();
        scopes.sort_unstable();
        let mut answer = serde_json::json!({
            "access_token": token.access_token.secret(),
            "token_type": "Bearer",
        });
        if let Some(lifetime) = token.expires_in {
            answer["expires_in"] = serde_json::json!(lifetime.as_secs());
        }
        if !scopes.is_empty() {
            answer["scope"] = serde_json::json!(scopes.join(" "));
        }
        Ok(answer)
    }

    /// Refuses an authorization URL that is not `https:` (or `http:` on a loopback host, for a server
    /// on the user's machine): the handler opens it in a browser, where `javascript:`, `file:` or
    /// `data:` from a hostile server's metadata would run or read something else.
    fn check_authorization_url(&self, url: &str) -> Result<(), McpClientError> {
        let refused = |why: String| {
            self.failed(format!(
                "the authorization server's authorization endpoint {why}; it is not opened (only \
                 `https:` addresses are, and `http:` ones on this machine)"
            ))
        };
        let parsed = reqwest::Url::parse(url)
            .map_err(|error| refused(format!("is not an address ({error})")))?;
        match parsed.scheme() {
            "https" => Ok(()),
            "http" if is_loopback(&parsed) => Ok(()),
            "http" => Err(refused(format!(
                "is plain `http:` on `{}`, another machine",
                parsed.host_str().unwrap_or_default().escape_debug()
            ))),
            scheme => Err(refused(format!(
                "is a `{}:` address",
                scheme.escape_debug()
            ))),
        }
    }

    /// Refuses an address the browser came back to that is not the redirect URI (its scheme, host,
    /// port and path): a code sent anywhere else was not meant for this client.
    fn check_redirect(&self, redirect_uri: &str, redirected: &str) -> Result<(), McpClientError> {
        let expected = reqwest::Url::parse(redirect_uri).map_err(|error| {
            self.failed(format!(
                "the redirect URI `{}` is not an address ({error})",
                redirect_uri.escape_debug()
            ))
        })?;
        let came = reqwest::Url::parse(redirected).map_err(|error| {
            self.failed(format!(
                "the address the browser came back to is not an authorization response ({error})"
            ))
        })?;
        let at = |url: &reqwest::Url| {
            (
                url.scheme().to_owned(),
                url.host_str().map(str::to_ascii_lowercase),
                url.port_or_known_default(),
                url.path().to_owned(),
            )
        };
        if at(&expected) == at(&came) {
            return Ok(());
        }
        // The address without its query, which holds the code.
        let mut shown = came.clone();
        shown.set_query(None);
        shown.set_fragment(None);
        Err(self.failed(format!(
            "the browser came back to `{}`, not to the redirect URI `{}`; the code was not exchanged",
            shown.as_str().escape_debug(),
            expected.as_str().escape_debug()
        )))
    }

    /// The token exchange for the address the browser came back to, which must be the redirect URI.
    /// rmcp logs the code at `DEBUG` while exchanging it: its `DEBUG` and `TRACE` events are dropped
    /// for the exchange (see [`WithoutAuthDebug`]).
    async fn exchange(
        &self,
        manager: &AuthorizationManager,
        redirect_uri: &str,
        redirected: &str,
    ) -> Result<(), McpClientError> {
        use tracing::instrument::WithSubscriber;
        self.check_redirect(redirect_uri, redirected)?;
        let callback = AuthorizationCallback::from_redirect_url(redirected).map_err(|error| {
            self.failed(format!(
                "the address the browser came back to is not an authorization response ({error})"
            ))
        })?;
        manager
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .with_subscriber(WithoutAuthDebug::around_current())
            .await
            .map_err(|error| self.failed(format!("the token exchange failed: {error}")))?;
        Ok(())
    }

    async fn client_credentials(
        &self,
        mut manager: AuthorizationManager,
        client_id: &str,
        client_secret: &str,
        scopes: &[String],
        challenge: Option<&str>,
    ) -> Result<AuthorizationManager, McpClientError> {
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|error| self.failed(format!("discovery failed: {error}")))?;
        manager.set_metadata(resolution.metadata);
        let config = ClientCredentialsConfig::ClientSecret {
            client_id: client_id.to_owned(),
            client_secret: client_secret.to_owned(),
            scopes: scopes.to_vec(),
            resource: Some(self.url.clone()),
        };
        manager
            .validate_client_credentials_metadata(&config)
            .and_then(|()| manager.configure_client_credentials(&config))
            .map_err(|error| self.failed(format!("client credentials refused: {error}")))?;
        manager
            .exchange_client_credentials(&config)
            .await
            .map_err(|error| self.failed(format!("the token exchange failed: {error}")))?;
        Ok(manager)
    }
}

/// Whether `url`'s host is this machine (`localhost`, `127.0.0.0/8`, `::1`).
fn is_loopback(url: &reqwest::Url) -> bool {
    let host = url.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|address| address.is_loopback())
}

/// The current subscriber without rmcp's OAuth `DEBUG` and `TRACE` events (target
/// `rmcp::transport::auth`), which carry the authorization code; everything else goes to it
/// unchanged.
struct WithoutAuthDebug(tracing::Dispatch);

impl WithoutAuthDebug {
    fn around_current() -> tracing::Dispatch {
        tracing::Dispatch::new(WithoutAuthDebug(tracing::dispatcher::get_default(
            tracing::Dispatch::clone,
        )))
    }

    fn hidden(metadata: &tracing::Metadata<'_>) -> bool {
        metadata.target().starts_with("rmcp::transport::auth")
            && *metadata.level() >= tracing::Level::DEBUG
    }
}

impl tracing::Subscriber for WithoutAuthDebug {
    fn register_callsite(
        &self,
        metadata: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if Self::hidden(metadata) {
            tracing::subscriber::Interest::never()
        } else {
            self.0.register_callsite(metadata)
        }
    }

    fn enabled(&self, metadata: &tracing::Metadata<'_>) -> bool {
        !Self::hidden(metadata) && self.0.enabled(metadata)
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        self.0.new_span(span)
    }

    fn record(&self, span: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        self.0.record(span, values);
    }

    fn record_follows_from(&self, span: &tracing::span::Id, follows: &tracing::span::Id) {
        self.0.record_follows_from(span, follows);
    }

    fn event(&self, event: &tracing::Event<'_>) {
        if !Self::hidden(event.metadata()) {
            self.0.event(event);
        }
    }

    fn enter(&self, span: &tracing::span::Id) {
        self.0.enter(span);
    }

    fn exit(&self, span: &tracing::span::Id) {
        self.0.exit(span);
    }

    fn clone_span(&self, span: &tracing::span::Id) -> tracing::span::Id {
        self.0.clone_span(span)
    }

    fn try_close(&self, span: tracing::span::Id) -> bool {
        self.0.try_close(span)
    }
}

/// A manager for `url` over the configured store.
/// With DPoP, the manager's requests go through `dpop_http` (which adds the proofs); otherwise through
/// rmcp's own client, which also filters the addresses discovered metadata names.
async fn new_manager(
    server: &str,
    url: &str,
    config: &OAuth,
    dpop_http: Option<&Arc<dyn OAuthHttpClient>>,
) -> Result<AuthorizationManager, McpClientError> {
    let manager = match dpop_http {
        Some(http) => AuthorizationManager::new_with_oauth_http_client(url, Arc::clone(http)).await,
        None => AuthorizationManager::new(url).await,
    };
    let mut manager = manager.map_err(|error| McpClientError::Authorization {
        server: server.to_owned(),
        detail: format!("`{url}` cannot be used for OAuth: {error}"),
    })?;
    manager.set_credential_store(StoreAdapter(Arc::clone(&config.store)));
    Ok(manager)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_store_keeps_the_document_readable_by_its_owner_only() {
        let folder = std::env::temp_dir().join(format!("yiem-token-store-{}", std::process::id()));
        let store = FileTokenStore::new(folder.join("servers").join("example.json"));
        assert_eq!(store.load().unwrap(), None);
        store.save(r#"{"client_id":"a"}"#).unwrap();
        store.save(r#"{"client_id":"b"}"#).unwrap();
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"client_id":"b"}"#)
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode =
                |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode();
            assert_eq!(mode(store.path()) & 0o777, 0o600);
            assert_eq!(mode(store.path().parent().unwrap()) & 0o777, 0o700);
        }
        store.clear().unwrap();
        assert_eq!(store.load().unwrap(), None);
        std::fs::remove_dir_all(&folder).unwrap();
    }

    /// A fresh folder under the system's temporary folder, for one test.
    #[cfg(unix)]
    fn scratch(test: &str) -> PathBuf {
        let folder =
            std::env::temp_dir().join(format!("yiem-token-store-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        std::fs::create_dir_all(&folder).unwrap();
        folder
    }

    #[cfg(unix)]
    #[test]
    fn a_link_planted_at_the_temporary_files_name_is_not_followed() {
        use std::os::unix::fs::PermissionsExt;
        let folder = scratch("link");
        let tokens = folder.join("tokens");
        std::fs::create_dir(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Someone else's file, readable by all, that a link at the temporary name points to.
        let elsewhere = folder.join("readable-by-all");
        std::fs::write(&elsewhere, "untouched").unwrap();
        std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o644)).unwrap();
        let store = FileTokenStore::new(tokens.join("example.json"));
        let planted = tokens.join(format!("example.json.{}.tmp", std::process::id()));
        std::os::unix::fs::symlink(&elsewhere, &planted).unwrap();
        store.save(r#"{"access_token":"secret"}"#).unwrap();
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "untouched");
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"access_token":"secret"}"#)
        );
        let saved = std::fs::symlink_metadata(store.path()).unwrap();
        assert!(
            saved.file_type().is_file(),
            "the token file is a plain file"
        );
        assert_eq!(saved.permissions().mode() & 0o777, 0o600);
        assert!(!planted.exists() && std::fs::symlink_metadata(&planted).is_err());
        std::fs::remove_dir_all(&folder).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_others_can_write_is_refused_and_nothing_is_written() {
        use std::os::unix::fs::PermissionsExt;
        let folder = scratch("open");
        let tokens = folder.join("tokens");
        std::fs::create_dir(&tokens).unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o777)).unwrap();
        let store = FileTokenStore::new(tokens.join("example.json"));
        let error = store.save(r#"{"access_token":"secret"}"#).unwrap_err();
        assert_eq!(error.kind(), std::io::ErrorKind::PermissionDenied);
        let message = error.to_string();
        assert!(
            message.contains("can be written by others (mode 777)")
                && message.contains("chmod 700"),
            "{message}"
        );
        assert_eq!(
            std::fs::read_dir(&tokens).unwrap().count(),
            0,
            "nothing written"
        );
        // A document planted there is not read either.
        std::fs::write(store.path(), r#"{"access_token":"planted"}"#).unwrap();
        assert_eq!(
            store.load().unwrap_err().kind(),
            std::io::ErrorKind::PermissionDenied
        );
        // Once the folder is the user's alone, the store works.
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o700)).unwrap();
        store.save(r#"{"access_token":"mine"}"#).unwrap();
        assert_eq!(
            store.load().unwrap().as_deref(),
            Some(r#"{"access_token":"mine"}"#)
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
