//! The OAuth extensions of yiem's MCP client (`yiem_core::mcp::oauth`) against a loopback authorization
//! server and MCP server written for these tests (HTTP/1.1 by hand, one request per connection): client
//! credentials with a JWT assertion (its signature verified with the client's public key), workload
//! identity (JWT bearer), DPoP with nonces from both servers, enterprise-managed authorization (an
//! identity provider on a third port issues the ID-JAG); and the ways it goes wrong: an assertion that
//! expired or is meant for another server, metadata naming another issuer, protected-resource metadata
//! naming another resource, an ID-JAG naming another resource, a missing client secret. Each failure is an error naming the server and what was wrong, and the
//! authorization server sees no token request it should not (nothing is sent to a server it was not
//! issued for).
//!
//! The two servers listen on separate loopback ports, so what each one saw is recorded apart.

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use sha2::Digest;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use yiem_core::mcp::oauth::{IdentityProvider, OAuth, SigningKey, fixed_token};
use yiem_core::mcp::{McpClient, McpClientError};
use yiem_core::store::ToolStore;

/// How the test servers behave.
#[derive(Clone, Default)]
struct Setup {
    /// The issuer the metadata names instead of the server's own address.
    issuer_override: Option<String>,
    /// The resource the protected-resource metadata names instead of the MCP server's address.
    resource_override: Option<String>,
    /// The client's public key (PEM) the token endpoint verifies client assertions with.
    client_key: Option<String>,
    /// Tokens are DPoP-bound; with `nonce`, both servers ask for one first.
    dpop: bool,
    nonce: bool,
    /// With `dpop`: the authorization server ignores the proof and issues a bearer token.
    unbound: bool,
    /// The resource the identity provider's ID-JAG names instead of the MCP server's address.
    jag_resource_override: Option<String>,
}

/// One request a server saw.
#[derive(Clone, Debug)]
struct Seen {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn form(&self, key: &str) -> Option<String> {
        reqwest::Url::parse(&format!("x:?{}", self.body))
            .ok()?
            .query_pairs()
            .find(|(name, _)| name == key)
            .map(|(_, value)| value.into_owned())
    }
}

/// The authorization server and the MCP server, with what each saw.
struct Servers {
    auth_url: String,
    mcp_url: String,
    idp_url: String,
    auth_seen: Arc<Mutex<Vec<Seen>>>,
    mcp_seen: Arc<Mutex<Vec<Seen>>>,
    idp_seen: Arc<Mutex<Vec<Seen>>>,
}

impl Servers {
    async fn start(setup: Setup) -> Servers {
        let auth = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let idp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let idp_url = format!("http://127.0.0.1:{}", idp.local_addr().unwrap().port());
        let auth_url = format!("http://127.0.0.1:{}", auth.local_addr().unwrap().port());
        let mcp_url = format!("http://127.0.0.1:{}/mcp", mcp.local_addr().unwrap().port());
        let state = Arc::new(State {
            setup,
            auth_url: auth_url.clone(),
            mcp_url: mcp_url.clone(),
            idp_url: idp_url.clone(),
            issued: Mutex::new(Vec::new()),
        });
        let idp_seen = Arc::new(Mutex::new(Vec::new()));
        serve(idp, Arc::clone(&idp_seen), Arc::clone(&state), Role::Idp);
        let auth_seen = Arc::new(Mutex::new(Vec::new()));
        let mcp_seen = Arc::new(Mutex::new(Vec::new()));
        serve(auth, Arc::clone(&auth_seen), Arc::clone(&state), Role::Auth);
        serve(mcp, Arc::clone(&mcp_seen), state, Role::Mcp);
        Servers {
            auth_url,
            mcp_url,
            idp_url,
            auth_seen,
            mcp_seen,
            idp_seen,
        }
    }

    fn token_requests(&self) -> Vec<Seen> {
        self.auth_seen
            .lock()
            .unwrap()
            .iter()
            .filter(|seen| seen.path == "/token")
            .cloned()
            .collect()
    }

    fn mcp_requests(&self) -> Vec<Seen> {
        self.mcp_seen.lock().unwrap().clone()
    }
}

struct State {
    setup: Setup,
    auth_url: String,
    mcp_url: String,
    idp_url: String,
    /// The access tokens issued, with the DPoP key thumbprint-free binding: the proof key's `x`.
    issued: Mutex<Vec<(String, Option<String>)>>,
}

#[derive(Clone, Copy)]
enum Role {
    Auth,
    Mcp,
    Idp,
}

const AUTH_NONCE: &str = "as-nonce-1";
const MCP_NONCE: &str = "rs-nonce-1";

fn serve(listener: TcpListener, seen: Arc<Mutex<Vec<Seen>>>, state: Arc<State>, role: Role) {
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let seen = Arc::clone(&seen);
            let state = Arc::clone(&state);
            tokio::spawn(async move {
                let Some(request) = read_request(&mut stream).await else {
                    return;
                };
                seen.lock().unwrap().push(request.clone());
                let (status, headers, body) = match role {
                    Role::Auth => state.auth(&request),
                    Role::Mcp => state.mcp(&request),
                    Role::Idp => state.idp(&request),
                };
                let mut head = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes()).await;
                let _ = stream.write_all(body.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
}

async fn read_request(stream: &mut tokio::net::TcpStream) -> Option<Seen> {
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    let head = String::from_utf8_lossy(&buffer[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let (method, path) = (first.next()?.to_owned(), first.next()?.to_owned());
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buffer[end + 4..].to_vec();
    while body.len() < length {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Some(Seen {
        method,
        path,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

type Answer = (u16, Vec<(String, String)>, String);

fn json_answer(status: u16, body: Value) -> Answer {
    (status, Vec::new(), body.to_string())
}

/// The claims and header of a compact JWT, unverified.
fn parts(jwt: &str) -> Option<(Value, Value)> {
    let mut parts = jwt.split('.');
    let header = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
    let claims = URL_SAFE_NO_PAD.decode(parts.next()?).ok()?;
    Some((
        serde_json::from_slice(&header).ok()?,
        serde_json::from_slice(&claims).ok()?,
    ))
}

/// Checks a DPoP proof for `method` on `url` (and `token`), with `nonce` when one is wanted; the proof
/// key's `x` coordinate, or why not. The signature is checked with the key in the proof.
fn check_proof(
    proof: Option<&str>,
    method: &str,
    url: &str,
    token: Option<&str>,
    nonce: Option<&str>,
) -> Result<String, String> {
    let proof = proof.ok_or("no DPoP proof")?;
    let (header, claims) = parts(proof).ok_or("the proof is not a JWT")?;
    if header["typ"] != "dpop+jwt" || header["alg"] != "ES256" {
        return Err(format!("bad proof header {header}"));
    }
    let jwk: jsonwebtoken::jwk::Jwk =
        serde_json::from_value(header["jwk"].clone()).map_err(|e| e.to_string())?;
    let key = jsonwebtoken::DecodingKey::from_jwk(&jwk).map_err(|e| e.to_string())?;
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.required_spec_claims.clear();
    validation.validate_exp = false;
    jsonwebtoken::decode::<Value>(proof, &key, &validation)
        .map_err(|e| format!("the proof's signature: {e}"))?;
    if claims["htm"] != method || claims["htu"] != url || claims["jti"].as_str().is_none() {
        return Err(format!("bad proof claims {claims}"));
    }
    if let Some(token) = token {
        let ath = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes()));
        if claims["ath"] != ath.as_str() {
            return Err("the proof's `ath` is not the token's hash".to_owned());
        }
    }
    if let Some(nonce) = nonce
        && claims["nonce"] != nonce
    {
        return Err("use_dpop_nonce".to_owned());
    }
    Ok(header["jwk"]["x"].as_str().unwrap_or_default().to_owned())
}

impl State {
    fn issuer(&self) -> String {
        self.setup
            .issuer_override
            .clone()
            .unwrap_or_else(|| self.auth_url.clone())
    }

    fn auth(&self, request: &Seen) -> Answer {
        match request.path.as_str() {
            "/.well-known/oauth-authorization-server" => json_answer(
                200,
                json!({
                    "issuer": self.issuer(),
                    "authorization_endpoint": format!("{}/authorize", self.auth_url),
                    "token_endpoint": format!("{}/token", self.auth_url),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["client_credentials", "urn:ietf:params:oauth:grant-type:jwt-bearer"],
                    "token_endpoint_auth_methods_supported": ["private_key_jwt", "none"],
                    "dpop_signing_alg_values_supported": ["ES256"],
                }),
            ),
            "/token" => self.token(request),
            _ => json_answer(404, json!({"error": "not_found"})),
        }
    }

    fn token(&self, request: &Seen) -> Answer {
        let refuse = |error: &str, description: String| {
            json_answer(
                400,
                json!({"error": error, "error_description": description}),
            )
        };
        // An ID-JAG carries its resource inside; every other grant names it (RFC 8707).
        let id_jag = request
            .form("assertion")
            .and_then(|assertion| parts(&assertion))
            .is_some_and(|(header, _)| header["typ"] == "oauth-id-jag+jwt");
        if !id_jag && request.form("resource").as_deref() != Some(self.mcp_url.as_str()) {
            return refuse(
                "invalid_target",
                "the resource is not the MCP server".into(),
            );
        }
        let mut bound = None;
        if self.setup.dpop {
            let nonce = self.setup.nonce.then_some(AUTH_NONCE);
            let url = format!("{}/token", self.auth_url);
            match check_proof(request.header("dpop"), "POST", &url, None, nonce) {
                Ok(x) => bound = Some(x),
                Err(why) if why == "use_dpop_nonce" => {
                    let (status, mut headers, body) =
                        refuse("use_dpop_nonce", "a nonce is needed".into());
                    headers.push(("DPoP-Nonce".into(), AUTH_NONCE.into()));
                    return (status, headers, body);
                }
                Err(why) => return refuse("invalid_dpop_proof", why),
            }
        }
        match request.form("grant_type").as_deref() {
            Some("client_credentials") => {
                let Some(public) = &self.setup.client_key else {
                    return refuse("unauthorized_client", "no key registered".into());
                };
                let assertion = request.form("client_assertion").unwrap_or_default();
                let key = jsonwebtoken::DecodingKey::from_ec_pem(public.as_bytes()).unwrap();
                let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
                validation.set_audience(&[self.issuer()]);
                validation.set_issuer(&["machine-client"]);
                if let Err(error) = jsonwebtoken::decode::<Value>(&assertion, &key, &validation) {
                    return refuse("invalid_client", format!("the assertion: {error}"));
                }
            }
            Some("urn:ietf:params:oauth:grant-type:jwt-bearer") => {
                let Some(assertion) = request.form("assertion") else {
                    return refuse("invalid_request", "no assertion".into());
                };
                // An ID-JAG (enterprise-managed) comes with this client's secret, and must name this
                // server and the MCP server.
                if let Some((header, claims)) = parts(&assertion)
                    && header["typ"] == "oauth-id-jag+jwt"
                {
                    let basic = format!(
                        "Basic {}",
                        base64::engine::general_purpose::STANDARD.encode("mcp-client:mcp-secret")
                    );
                    if request.header("authorization") != Some(basic.as_str()) {
                        return refuse("invalid_client", "no client_secret_basic".into());
                    }
                    if claims["aud"] != self.issuer().as_str()
                        || claims["resource"] != self.mcp_url.as_str()
                    {
                        return refuse("invalid_grant", format!("the ID-JAG names {claims}"));
                    }
                }
            }
            other => return refuse("unsupported_grant_type", format!("{other:?}")),
        }
        if self.setup.unbound {
            bound = None;
        }
        let token = format!("at-{}", self.issued.lock().unwrap().len() + 1);
        self.issued
            .lock()
            .unwrap()
            .push((token.clone(), bound.clone()));
        json_answer(
            200,
            json!({
                "access_token": token,
                "token_type": if bound.is_some() { "DPoP" } else { "Bearer" },
                "expires_in": 3600,
            }),
        )
    }

    /// The identity provider's token exchange: an ID token for an ID-JAG.
    fn idp(&self, request: &Seen) -> Answer {
        if request.path != "/token"
            || request.form("grant_type").as_deref()
                != Some("urn:ietf:params:oauth:grant-type:token-exchange")
            || request.form("subject_token").as_deref() != Some("the-id-token")
        {
            return json_answer(400, json!({"error": "invalid_request"}));
        }
        let (private, _) = key_pair();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let claims = json!({
            "iss": self.idp_url,
            "sub": "person@example.com",
            "aud": request.form("audience"),
            "resource": self.setup.jag_resource_override.clone().unwrap_or_else(|| self.mcp_url.clone()),
            "client_id": "mcp-client",
            "jti": format!("jag-{now}"),
            "iat": now,
            "exp": now + 300,
        });
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = Some("oauth-id-jag+jwt".to_owned());
        let jag = jsonwebtoken::encode(
            &header,
            &claims,
            &jsonwebtoken::EncodingKey::from_ec_pem(private.as_bytes()).unwrap(),
        )
        .unwrap();
        json_answer(
            200,
            json!({
                "access_token": jag,
                "issued_token_type": "urn:ietf:params:oauth:token-type:id-jag",
                "token_type": "N_A",
                "expires_in": 300,
            }),
        )
    }

    fn mcp(&self, request: &Seen) -> Answer {
        let metadata = format!(
            "{}/.well-known/oauth-protected-resource/mcp",
            self.mcp_url.trim_end_matches("/mcp")
        );
        if request.path == "/.well-known/oauth-protected-resource/mcp" {
            return json_answer(
                200,
                json!({
                    "resource": self.setup.resource_override.clone().unwrap_or_else(|| self.mcp_url.clone()),
                    "authorization_servers": [self.auth_url],
                }),
            );
        }
        if request.method != "POST" {
            return json_answer(405, json!({}));
        }
        let scheme = if self.setup.dpop && !self.setup.unbound {
            "DPoP"
        } else {
            "Bearer"
        };
        let challenge = |extra: &str| {
            (
                401,
                vec![(
                    "WWW-Authenticate".to_owned(),
                    format!("{scheme} {extra}resource_metadata=\"{metadata}\""),
                )],
                json!({"error": "unauthorized"}).to_string(),
            )
        };
        let presented = request
            .header("authorization")
            .and_then(|value| value.strip_prefix(&format!("{scheme} ")))
            .map(str::to_owned);
        let Some(token) = presented else {
            return challenge("");
        };
        let binding = self
            .issued
            .lock()
            .unwrap()
            .iter()
            .find(|(issued, _)| *issued == token)
            .map(|(_, bound)| bound.clone());
        let Some(bound) = binding else {
            return challenge("error=\"invalid_token\", ");
        };
        if self.setup.dpop && !self.setup.unbound {
            let nonce = self.setup.nonce.then_some(MCP_NONCE);
            match check_proof(
                request.header("dpop"),
                "POST",
                &self.mcp_url,
                Some(&token),
                nonce,
            ) {
                Ok(x) if Some(&x) == bound.as_ref() => {}
                Err(why) if why == "use_dpop_nonce" => {
                    let (status, mut headers, body) = challenge("error=\"use_dpop_nonce\", ");
                    headers.push(("DPoP-Nonce".into(), MCP_NONCE.into()));
                    return (status, headers, body);
                }
                _ => return challenge("error=\"invalid_token\", "),
            }
        }
        let message: Value = serde_json::from_str(&request.body).unwrap_or_default();
        let Some(id) = message.get("id").cloned() else {
            return (202, Vec::new(), String::new());
        };
        let result = match message["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "loopback", "version": "1.0.0"},
            }),
            Some("tools/list") => {
                json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]})
            }
            Some("ping") => json!({}),
            _ => {
                return json_answer(
                    200,
                    json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "method not found"}}),
                );
            }
        };
        json_answer(200, json!({"jsonrpc": "2.0", "id": id, "result": result}))
    }
}

/// A fresh P-256 key pair: the private key for the client, the public one for the server (PEM).
fn key_pair() -> (String, String) {
    use p256::pkcs8::{EncodePrivateKey, EncodePublicKey};
    let secret = p256::SecretKey::random(&mut rand_core::OsRng);
    let private = secret
        .to_pkcs8_pem(p256::pkcs8::LineEnding::LF)
        .unwrap()
        .to_string();
    let public = secret
        .public_key()
        .to_public_key_pem(p256::pkcs8::LineEnding::LF)
        .unwrap();
    (private, public)
}

/// A workload JWT for `audience`, expiring `lifetime` seconds from now (negative: already expired).
fn workload_jwt(audience: &str, lifetime: i64) -> String {
    let (private, _) = key_pair();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let claims = json!({"iss": "https://idp.example", "sub": "workload", "aud": audience, "exp": now + lifetime, "iat": now});
    jsonwebtoken::encode(
        &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256),
        &claims,
        &jsonwebtoken::EncodingKey::from_ec_pem(private.as_bytes()).unwrap(),
    )
    .unwrap()
}

async fn connect(servers: &Servers, oauth: OAuth) -> Result<McpClient, McpClientError> {
    McpClient::http(&servers.mcp_url)
        .name("loopback")
        .oauth(oauth)
        .connect()
        .await
}

/// The tools listed, once connected.
async fn listed(client: &McpClient) -> Vec<String> {
    let store = ToolStore::new("agent");
    client.register(&store).await.expect("the tools are listed");
    store.tools().iter().map(|t| t.name().to_owned()).collect()
}

fn refusal(result: Result<McpClient, McpClientError>) -> String {
    match result {
        Ok(_) => panic!("the client connected"),
        Err(error) => {
            eprintln!("refused: {error}");
            error.to_string()
        }
    }
}

#[tokio::test]
async fn a_client_signing_its_own_assertion_gets_a_token_the_authorization_server_verified() {
    let (private, public) = key_pair();
    let servers = Servers::start(Setup {
        client_key: Some(public),
        ..Setup::default()
    })
    .await;
    let key = SigningKey::from_pem(&private).unwrap();
    let client = connect(
        &servers,
        OAuth::client_credentials_jwt("machine-client", key),
    )
    .await
    .expect("the client authorizes with its signed assertion");
    assert_eq!(listed(&client).await, ["echo"]);
    let requests = servers.token_requests();
    assert_eq!(requests.len(), 1, "one token request");
    assert_eq!(
        requests[0].form("client_assertion_type").as_deref(),
        Some("urn:ietf:params:oauth:client-assertion-type:jwt-bearer")
    );
    assert_eq!(
        requests[0].form("client_secret"),
        None,
        "no secret is shared"
    );
    // The access token went to the MCP server only, never back to the authorization server.
    assert!(
        servers
            .auth_seen
            .lock()
            .unwrap()
            .iter()
            .all(|seen| seen.header("authorization").is_none())
    );
    assert!(
        servers
            .mcp_requests()
            .iter()
            .any(|seen| seen.header("authorization") == Some("Bearer at-1"))
    );
}

#[tokio::test]
async fn an_assertion_signed_by_another_key_is_refused_with_the_servers_reason() {
    let (_, public) = key_pair();
    let (other, _) = key_pair();
    let servers = Servers::start(Setup {
        client_key: Some(public),
        ..Setup::default()
    })
    .await;
    let key = SigningKey::from_pem(&other).unwrap();
    let error = refusal(
        connect(
            &servers,
            OAuth::client_credentials_jwt("machine-client", key),
        )
        .await,
    );
    assert!(
        error.contains("`loopback`") && error.contains("invalid_client"),
        "{error}"
    );
}

#[tokio::test]
async fn a_workload_identity_token_is_exchanged_with_the_jwt_bearer_grant() {
    let servers = Servers::start(Setup::default()).await;
    let jwt = workload_jwt(&servers.auth_url, 300);
    let client = connect(&servers, OAuth::jwt_bearer(fixed_token(jwt.clone())))
        .await
        .expect("the workload authorizes");
    assert_eq!(listed(&client).await, ["echo"]);
    let requests = servers.token_requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].form("grant_type").as_deref(),
        Some("urn:ietf:params:oauth:grant-type:jwt-bearer")
    );
    assert_eq!(requests[0].form("assertion"), Some(jwt));
    // The workload's token never reaches the MCP server.
    assert!(servers.mcp_requests().iter().all(
        |seen| !seen.body.contains("eyJ") && seen.header("authorization") != Some("Bearer eyJ")
    ));
}

#[tokio::test]
async fn an_expired_workload_assertion_is_refused_before_it_is_sent() {
    let servers = Servers::start(Setup::default()).await;
    let jwt = workload_jwt(&servers.auth_url, -60);
    let error = refusal(connect(&servers, OAuth::jwt_bearer(fixed_token(jwt))).await);
    assert!(
        error.contains("`loopback`") && error.contains("expired") && error.contains("not sent"),
        "{error}"
    );
    assert!(
        servers.token_requests().is_empty(),
        "no token request was made"
    );
}

#[tokio::test]
async fn a_workload_assertion_for_another_server_is_never_sent_to_this_one() {
    let servers = Servers::start(Setup::default()).await;
    let jwt = workload_jwt("https://other.example", 300);
    let error = refusal(connect(&servers, OAuth::jwt_bearer(fixed_token(jwt))).await);
    assert!(
        error.contains("`loopback`") && error.contains("https://other.example"),
        "{error}"
    );
    assert!(
        servers.token_requests().is_empty(),
        "no token request was made"
    );
}

#[tokio::test]
async fn metadata_naming_another_issuer_is_refused_before_any_token_request() {
    let servers = Servers::start(Setup {
        issuer_override: Some("https://attacker.example".into()),
        ..Setup::default()
    })
    .await;
    let jwt = workload_jwt("https://attacker.example", 300);
    let error = refusal(connect(&servers, OAuth::jwt_bearer(fixed_token(jwt))).await);
    assert!(
        error.contains("`loopback`") && error.contains("issuer"),
        "{error}"
    );
    assert!(
        servers.token_requests().is_empty(),
        "no token request was made"
    );
}

#[tokio::test]
async fn protected_resource_metadata_naming_another_resource_is_refused_before_any_token_request() {
    let servers = Servers::start(Setup {
        resource_override: Some("https://evil.example/mcp".into()),
        ..Setup::default()
    })
    .await;
    let jwt = workload_jwt(&servers.auth_url, 300);
    let error = refusal(connect(&servers, OAuth::jwt_bearer(fixed_token(jwt))).await);
    assert!(
        error.contains("`loopback`") && error.contains("resource"),
        "{error}"
    );
    assert!(
        servers.token_requests().is_empty(),
        "no token request was made"
    );
}

#[tokio::test]
async fn dpop_tokens_are_bound_to_the_clients_key_and_sent_with_the_nonces_both_servers_ask_for() {
    let servers = Servers::start(Setup {
        dpop: true,
        nonce: true,
        ..Setup::default()
    })
    .await;
    let jwt = workload_jwt(&servers.auth_url, 300);
    let client = connect(&servers, OAuth::jwt_bearer(fixed_token(jwt)).dpop(true))
        .await
        .expect("the client authorizes with DPoP");
    assert_eq!(listed(&client).await, ["echo"]);
    // The authorization server asked for its nonce once, and got it.
    let tokens = servers.token_requests();
    assert_eq!(tokens.len(), 2, "{tokens:?}");
    assert!(
        tokens[1]
            .header("dpop")
            .is_some_and(|proof| proof.contains('.'))
    );
    // Every request that carried the token used the DPoP scheme with a fresh proof.
    let carried: Vec<Seen> = servers
        .mcp_requests()
        .into_iter()
        .filter(|seen| seen.header("authorization").is_some())
        .collect();
    assert!(!carried.is_empty());
    assert!(
        carried
            .iter()
            .all(|seen| seen.header("authorization") == Some("DPoP at-1"))
    );
    let jtis: std::collections::BTreeSet<String> = carried
        .iter()
        .map(|seen| parts(seen.header("dpop").unwrap()).unwrap().1["jti"].to_string())
        .collect();
    assert_eq!(jtis.len(), carried.len(), "no proof is sent twice");
}

fn enterprise(servers: &Servers) -> OAuth {
    let idp = IdentityProvider::new(
        &servers.idp_url,
        format!("{}/token", servers.idp_url),
        "desktop-app",
    );
    OAuth::enterprise(idp, fixed_token("the-id-token"))
        .client_id("mcp-client")
        .client_secret("mcp-secret")
}

#[tokio::test]
async fn an_enterprise_id_token_becomes_an_id_jag_and_then_a_token_for_this_server_only() {
    let servers = Servers::start(Setup::default()).await;
    let client = connect(&servers, enterprise(&servers))
        .await
        .expect("the client authorizes through the identity provider");
    assert_eq!(listed(&client).await, ["echo"]);
    // The ID token went to the identity provider only; the ID-JAG to the authorization server only.
    let idp = servers.idp_seen.lock().unwrap().clone();
    assert_eq!(idp.len(), 1);
    assert_eq!(
        idp[0].form("resource").as_deref(),
        Some(servers.mcp_url.as_str())
    );
    assert_eq!(
        idp[0].form("audience").as_deref(),
        Some(servers.auth_url.as_str())
    );
    let tokens = servers.token_requests();
    assert_eq!(tokens.len(), 1);
    assert!(!tokens[0].body.contains("the-id-token"));
    assert!(
        servers
            .mcp_requests()
            .iter()
            .all(|seen| !seen.body.contains("the-id-token") && !seen.body.contains("oauth-id-jag"))
    );
}

#[tokio::test]
async fn an_id_jag_naming_another_resource_is_never_presented_to_the_authorization_server() {
    let servers = Servers::start(Setup {
        jag_resource_override: Some("https://other.example/mcp".into()),
        ..Setup::default()
    })
    .await;
    let error = refusal(connect(&servers, enterprise(&servers)).await);
    assert!(
        error.contains("`loopback`") && error.contains("enterprise-managed authorization failed"),
        "{error}"
    );
    assert!(
        servers.token_requests().is_empty(),
        "the ID-JAG was not redeemed"
    );
}

#[tokio::test]
async fn enterprise_authorization_without_the_clients_secret_says_what_to_set() {
    let servers = Servers::start(Setup::default()).await;
    let idp = IdentityProvider::new(
        &servers.idp_url,
        format!("{}/token", servers.idp_url),
        "desktop-app",
    );
    let error = refusal(
        connect(
            &servers,
            OAuth::enterprise(idp, fixed_token("the-id-token")),
        )
        .await,
    );
    assert!(
        error.contains("`loopback`") && error.contains("OAuth::client_secret"),
        "{error}"
    );
    assert!(
        servers.idp_seen.lock().unwrap().is_empty(),
        "the ID token was not sent"
    );
}

#[tokio::test]
async fn a_bearer_token_issued_despite_the_dpop_proof_is_presented_as_bearer() {
    let servers = Servers::start(Setup {
        dpop: true,
        unbound: true,
        ..Setup::default()
    })
    .await;
    let jwt = workload_jwt(&servers.auth_url, 300);
    let client = connect(&servers, OAuth::jwt_bearer(fixed_token(jwt)).dpop(true))
        .await
        .expect("the client presents the unbound token as a bearer token");
    assert_eq!(listed(&client).await, ["echo"]);
    assert!(
        servers
            .mcp_requests()
            .iter()
            .filter_map(|seen| seen.header("authorization"))
            .all(|value| value == "Bearer at-1")
    );
}
