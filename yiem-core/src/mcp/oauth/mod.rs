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
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

mod authorizer;
mod dpop;
mod grants;
mod jose;
mod store;

pub use grants::{IdentityProvider, TokenSource, fixed_token, token_file};
pub use jose::{KeyError, SigningKey};
pub use store::{FileTokenStore, MemoryTokenStore, TokenStore};

pub(crate) use authorizer::{Authorizer, Tries};

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
