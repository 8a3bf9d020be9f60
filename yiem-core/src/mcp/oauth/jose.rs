//! The JOSE the OAuth extensions need, signed by pure-Rust crypto (`jsonwebtoken` over RustCrypto): a
//! [`SigningKey`] for JWT client assertions (RFC 7523, `private_key_jwt`), and the claims of a JWT read
//! without verifying it (a workload assertion's `exp` and `aud`, checked before it is sent).

use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// A private key that signs this client's JWT assertions: P-256 (`ES256`) or RSA (`RS256`), given as
/// PEM (PKCS#8, or SEC1 for P-256, or PKCS#1 for RSA). Its `Debug` shows the algorithm only.
///
/// ```
/// # #[cfg(feature = "mcp-oauth")] {
/// use yiem_core::mcp::oauth::SigningKey;
/// let error = SigningKey::from_pem("not a key").unwrap_err();
/// assert!(error.to_string().contains("P-256"));
/// # }
/// ```
#[derive(Clone)]
pub struct SigningKey {
    key: EncodingKey,
    algorithm: Algorithm,
    key_id: Option<String>,
}

/// Why a key was refused: not PEM, or not a P-256 or RSA private key.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct KeyError(String);

impl SigningKey {
    /// The key in `pem`: P-256 signs with `ES256`, RSA with `RS256`.
    pub fn from_pem(pem: &str) -> Result<SigningKey, KeyError> {
        use p256::pkcs8::DecodePrivateKey;
        install_crypto();
        let p256 = p256::SecretKey::from_pkcs8_pem(pem)
            .ok()
            .or_else(|| p256::SecretKey::from_sec1_pem(pem).ok());
        if p256.is_some() {
            let key = EncodingKey::from_ec_pem(pem.as_bytes())
                .map_err(|error| KeyError(format!("the P-256 key cannot be used: {error}")))?;
            return Ok(SigningKey {
                key,
                algorithm: Algorithm::ES256,
                key_id: None,
            });
        }
        match EncodingKey::from_rsa_pem(pem.as_bytes()) {
            Ok(key) => Ok(SigningKey {
                key,
                algorithm: Algorithm::RS256,
                key_id: None,
            }),
            Err(_) => Err(KeyError(
                "the signing key is not a P-256 (ES256) or RSA (RS256) private key in PEM"
                    .to_owned(),
            )),
        }
    }

    /// The `kid` put in each assertion's header, for an authorization server that holds several keys
    /// for this client (default: none).
    pub fn key_id(mut self, id: impl Into<String>) -> Self {
        self.key_id = Some(id.into());
        self
    }

    /// A client assertion (RFC 7523 section 2.2): `iss` and `sub` the client ID, `aud` the
    /// authorization server's issuer, valid for 60 s, with a fresh `jti`.
    pub(super) fn client_assertion(
        &self,
        client_id: &str,
        audience: &str,
    ) -> Result<String, String> {
        let now = now();
        let claims = json!({
            "iss": client_id,
            "sub": client_id,
            "aud": audience,
            "iat": now,
            "exp": now + 60,
            "jti": random_id(),
        });
        let mut header = Header::new(self.algorithm);
        header.kid.clone_from(&self.key_id);
        jsonwebtoken::encode(&header, &claims, &self.key)
            .map_err(|error| format!("signing the client assertion failed: {error}"))
    }
}

impl fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SigningKey")
            .field("algorithm", &self.algorithm)
            .field("key_id", &self.key_id)
            .finish_non_exhaustive()
    }
}

/// Selects RustCrypto as `jsonwebtoken`'s provider, whichever of its backends another crate of the
/// build turned on too (with two, it picks none by itself and would panic when signing).
pub(super) fn install_crypto() {
    let _ = jsonwebtoken::crypto::rust_crypto::DEFAULT_PROVIDER.install_default();
}

/// Seconds since the Unix epoch.
pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| elapsed.as_secs())
}

/// 16 random bytes, base64url: a `jti`.
pub(super) fn random_id() -> String {
    use rand_core::RngCore;
    let mut bytes = [0u8; 16];
    rand_core::OsRng.fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// The claims of a compact JWT, read without verifying its signature (the issuer's audience checks it),
/// or `None` when it is not one.
pub(super) fn unverified_claims(jwt: &str) -> Option<Value> {
    let mut parts = jwt.trim().split('.');
    let (_header, payload) = (parts.next()?, parts.next()?);
    parts.next()?;
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).ok()?).ok()
}
