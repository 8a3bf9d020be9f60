//! One server's OAuth state at run time: the [`Authorizer`] that puts the token on each request,
//! authorizes when refused, steps up, and keeps rmcp's authorization log quiet.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rmcp::transport::auth::{
    AuthClient, AuthorizationCallback, AuthorizationManager, AuthorizationMetadata,
    AuthorizationRequest, AuthorizationSession, ClientCredentialsConfig, CredentialStore,
    OAuthHttpClient, OAuthTokenResponse, StoredCredentials, WWWAuthenticateParams,
};

use super::dpop::{Dpop, ResourceRequests, TokenRequests};
use super::store::StoreAdapter;
use super::{Grant, IdentityProvider, Machine, OAuth, TokenSource, grants, jose};
use crate::mcp::error::McpClientError;

/// What one request has already done to get through: authorized, stepped up.
#[derive(Default)]
pub(crate) struct Tries {
    authorized: bool,
    stepped_up: bool,
}

/// One server's OAuth state: the HTTP client that puts the token on each request (and refreshes it),
/// and the authorizations made when the server refuses.
pub(crate) struct Authorizer {
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
    pub(crate) async fn new(
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
    pub(crate) fn http_client(&self) -> AuthClient<ResourceRequests> {
        self.client.clone()
    }

    /// The count of completed authorizations, read before a request is sent.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    /// Reacts to a `401` or `403` challenge on a request sent at `generation`: authorizes (or steps
    /// up) once per request, so that the caller retries it; an error when the request already had
    /// its try or authorizing fails.
    pub(crate) async fn recover(
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
        self.discover(&mut manager, Some(challenge)).await?;
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

    /// Discovery from the server's `challenge` (its resource metadata, then its authorization server's):
    /// the metadata, set on `manager` for the grant that follows. Every grant starts here.
    async fn discover(
        &self,
        manager: &mut AuthorizationManager,
        challenge: Option<&str>,
    ) -> Result<AuthorizationMetadata, McpClientError> {
        let resolution = manager
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|error| self.failed(format!("discovery failed: {error}")))?;
        manager.set_metadata(resolution.metadata.clone());
        Ok(resolution.metadata)
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
        let metadata = self.discover(&mut manager, challenge).await?;
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
        self.discover(&mut manager, challenge).await?;
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
