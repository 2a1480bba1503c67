//! Session tokens: HS256 JWTs (docs/gateway-contract.md §2.6), written by hand with `hmac` +
//! `sha2`.
//!
//! A token is `base64url(header) . base64url(claims) . base64url(HMAC-SHA256)`, all without
//! padding. The header is always `{"alg":"HS256","typ":"JWT"}`; the claims are [`Claims`].
//! [`JwtKeys::verify`] refuses any other algorithm (so `alg: none` and algorithm-confusion tokens
//! fail), checks the signature in constant time, and only then looks at `exp`.
//!
//! **Revocation.** Logout revokes the token it was sent with: the store keeps its [`token_id`]
//! until the token's `exp`, and the auth gate refuses revoked tokens. The user's other sessions
//! stay valid; bumping the user's token version (`ver`) would end them all.
//!
//! The secret comes from `auth.jwt_secret` / `AUTH_JWT_SECRET`, or from `<home>/.jwt_secret`, which
//! [`JwtKeys::load_or_create`] generates on first start and reuses afterwards.

use std::fmt;
use std::io::{ErrorKind, Write};
use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::digest::Key;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

type HmacSha256 = Hmac<Sha256>;

/// The only algorithm this gateway signs with or accepts.
const ALGORITHM: &str = "HS256";

/// The file, inside the gateway home, that keeps a generated secret across restarts.
const SECRET_FILE: &str = ".jwt_secret";

/// Seconds in a day, for turning `token_expiry_days` into `exp`.
const SECONDS_PER_DAY: i64 = 86_400;

/// The claims of a session token, serialised in this field order: `sub`, `exp`, `iat`, `ver`,
/// `jti`. The contract lists the first four; `jti` (RFC 7519's token id, random) is ours, so that
/// two tokens issued to one user in the same second differ and logging one out leaves the other.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// The user id.
    pub sub: String,
    /// Expiry, seconds since the Unix epoch. The token is valid while `exp > now`.
    pub exp: i64,
    /// Issue time, seconds since the Unix epoch.
    pub iat: i64,
    /// The user's token version when the token was issued. The auth layer rejects the token once
    /// the user's stored version differs, which is how sessions are revoked.
    pub ver: i64,
    /// A random id (a UUID); absent from tokens issued before it was added, which still verify.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jti: Option<String>,
}

/// Why a token was refused. Maps to the 401 codes `token_expired` / `token_invalid` (§2.9).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    /// The signature is good but `exp` is not after the current time.
    #[error("token expired")]
    Expired,
    /// Malformed, wrong algorithm, bad signature or bad claims.
    #[error("token invalid")]
    Invalid,
}

/// The HS256 signing key. Cheap to clone; never prints the secret.
#[derive(Clone)]
pub struct JwtKeys {
    /// HMAC state already keyed with the secret, cloned for every token so the key schedule runs
    /// once, not per request.
    mac: HmacSha256,
}

impl fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("JwtKeys { secret: <redacted> }")
    }
}

impl JwtKeys {
    /// Keys from raw secret bytes. A configured or generated secret is used as its UTF-8 bytes
    /// (like PyJWT does with a `str` key), so a hex secret file is *not* hex-decoded first.
    pub fn new(secret: &[u8]) -> JwtKeys {
        JwtKeys {
            mac: HmacSha256::new(&hmac_block_key(secret)),
        }
    }

    /// Keys for a gateway whose home folder is `home`.
    ///
    /// Uses `configured` when it is `Some` and not blank. Otherwise reads `<home>/.jwt_secret`
    /// (surrounding whitespace trimmed). When that file is missing or blank, generates 32 random
    /// bytes, writes them hex-encoded to the file (creating `home` if needed, mode 0600 on unix)
    /// and uses that, so tokens survive a restart.
    pub fn load_or_create(home: &Path, configured: Option<&str>) -> std::io::Result<JwtKeys> {
        if let Some(secret) = configured.filter(|secret| !secret.trim().is_empty()) {
            return Ok(JwtKeys::new(secret.as_bytes()));
        }
        let path = home.join(SECRET_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) if !text.trim().is_empty() => return Ok(JwtKeys::new(text.trim().as_bytes())),
            Ok(_) => {}
            Err(err) if err.kind() == ErrorKind::NotFound => {}
            Err(err) => return Err(err),
        }
        std::fs::create_dir_all(home)?;
        let mut bytes = [0u8; 32];
        rand::thread_rng().fill_bytes(&mut bytes);
        let secret = hex::encode(bytes);
        write_private_file(&path, secret.as_bytes())?;
        Ok(JwtKeys::new(secret.as_bytes()))
    }

    /// Signs a token for `user_id`, valid from `now_epoch` for `lifetime_days` days.
    pub fn issue(
        &self,
        user_id: &str,
        token_version: i64,
        now_epoch: i64,
        lifetime_days: u32,
    ) -> String {
        let exp =
            now_epoch.saturating_add(i64::from(lifetime_days).saturating_mul(SECONDS_PER_DAY));
        // Built as a `Value` (rather than `serde_json::to_vec(&Claims)`) because its `Display`
        // cannot fail; `preserve_order` keeps the documented key order.
        let claims = serde_json::json!({
            "sub": user_id,
            "exp": exp,
            "iat": now_epoch,
            "ver": token_version,
            "jti": uuid::Uuid::new_v4().to_string(),
        });
        let header = serde_json::json!({"alg": ALGORITHM, "typ": "JWT"});
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string()),
        );
        let mut mac = self.mac.clone();
        mac.update(signing_input.as_bytes());
        let signature = URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
        format!("{signing_input}.{signature}")
    }

    /// Checks a token and returns its claims.
    ///
    /// Order matters: header algorithm, then signature (constant time), then claims, then expiry,
    /// so an attacker learns nothing about `exp` from a forged token: anything unsigned is
    /// [`JwtError::Invalid`]. `Expired` means `exp <= now_epoch`.
    pub fn verify(&self, token: &str, now_epoch: i64) -> Result<Claims, JwtError> {
        let mut parts = token.split('.');
        let (Some(header), Some(payload), Some(signature), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(JwtError::Invalid);
        };

        let header_json: Map<String, Value> = decode_json(header)?;
        if header_json.get("alg").and_then(Value::as_str) != Some(ALGORITHM) {
            return Err(JwtError::Invalid);
        }
        // RFC 7515 §4.1.11: a `crit` extension we do not understand makes the token unusable.
        if header_json.contains_key("crit") {
            return Err(JwtError::Invalid);
        }

        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| JwtError::Invalid)?;
        let mut mac = self.mac.clone();
        mac.update(header.as_bytes());
        mac.update(b".");
        mac.update(payload.as_bytes());
        mac.verify_slice(&signature)
            .map_err(|_| JwtError::Invalid)?;

        let claims: Claims = decode_json(payload)?;
        if claims.exp <= now_epoch {
            return Err(JwtError::Expired);
        }
        Ok(claims)
    }
}

/// The id under which a session token is revoked: the lowercase hex SHA-256 of the whole token,
/// so that the token itself is never stored.
pub fn token_id(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// Decodes one base64url segment as JSON; any failure is `Invalid`.
fn decode_json<T: serde::de::DeserializeOwned>(segment: &str) -> Result<T, JwtError> {
    let bytes = URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| JwtError::Invalid)?;
    serde_json::from_slice(&bytes).map_err(|_| JwtError::Invalid)
}

/// The secret as an HMAC-SHA256 block key (RFC 2104 §2: longer keys are hashed, shorter ones
/// zero-padded to the 64-byte block). Doing this here lets us use the infallible
/// `KeyInit::new` instead of `new_from_slice`, whose `Result` can never be `Err` for HMAC but
/// would otherwise need an `expect`.
fn hmac_block_key(secret: &[u8]) -> Key<HmacSha256> {
    let mut block = Key::<HmacSha256>::default();
    let hashed;
    let source: &[u8] = if secret.len() > block.len() {
        hashed = Sha256::digest(secret);
        &hashed
    } else {
        secret
    };
    for (dst, src) in block.iter_mut().zip(source) {
        *dst = *src;
    }
    block
}

/// Creates `path` with owner-only permissions and writes `contents`.
///
/// A previous (blank) file is removed first so that `create_new` can apply the 0600 mode at
/// creation, rather than after the secret is already on disk with default permissions.
fn write_private_file(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(err) if err.kind() == ErrorKind::NotFound => {}
        Err(err) => return Err(err),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_777_000_000;

    fn keys() -> JwtKeys {
        JwtKeys::new(b"test-secret")
    }

    fn segment(json: &str) -> String {
        URL_SAFE_NO_PAD.encode(json)
    }

    /// Signs an arbitrary header and payload with `keys`, to forge tokens in tests.
    fn sign(keys: &JwtKeys, header: &str, payload: &str) -> String {
        let input = format!("{}.{}", segment(header), segment(payload));
        let mut mac = keys.mac.clone();
        mac.update(input.as_bytes());
        format!(
            "{input}.{}",
            URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
        )
    }

    #[test]
    fn round_trip_returns_the_claims() {
        let token = keys().issue("user-1", 3, NOW, 7);
        let claims = keys().verify(&token, NOW + 10).unwrap();
        let jti = claims.jti.clone().expect("a jti");
        assert_eq!(
            claims,
            Claims {
                sub: "user-1".into(),
                exp: NOW + 7 * 86_400,
                iat: NOW,
                ver: 3,
                jti: Some(jti),
            }
        );
    }

    #[test]
    fn tokens_issued_in_the_same_second_differ() {
        let first = keys().issue("u", 0, NOW, 7);
        let second = keys().issue("u", 0, NOW, 7);
        assert_ne!(first, second);
        assert_ne!(token_id(&first), token_id(&second));
        assert_eq!(token_id(&first).len(), 64);
    }

    #[test]
    fn a_token_without_jti_still_verifies() {
        let payload = format!(r#"{{"sub":"u","exp":{},"iat":{NOW},"ver":0}}"#, NOW + 100);
        let token = sign(&keys(), r#"{"alg":"HS256","typ":"JWT"}"#, &payload);
        assert_eq!(keys().verify(&token, NOW).unwrap().jti, None);
    }

    #[test]
    fn header_and_claims_json_have_the_documented_shape() {
        let token = keys().issue("u", 0, NOW, 1);
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header = URL_SAFE_NO_PAD.decode(parts[0]).unwrap();
        assert_eq!(header, br#"{"alg":"HS256","typ":"JWT"}"#);
        let payload = String::from_utf8(URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        let claims: Claims = serde_json::from_str(&payload).unwrap();
        let jti = claims.jti.clone().expect("a jti");
        assert!(uuid::Uuid::parse_str(&jti).is_ok(), "{jti}");
        assert_eq!(
            payload,
            format!(
                r#"{{"sub":"u","exp":{},"iat":{NOW},"ver":0,"jti":"{jti}"}}"#,
                NOW + 86_400
            )
        );
        assert_eq!(serde_json::to_string(&claims).unwrap(), payload);
    }

    #[test]
    fn hmac_matches_rfc_4231_for_short_and_long_keys() {
        // Test case 2 (short key) and test case 6 (131-byte key, hashed first).
        let cases: [(&[u8], &[u8], &str); 2] = [
            (
                b"Jefe",
                b"what do ya want for nothing?",
                "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
            ),
            (
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First",
                "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
            ),
        ];
        for (key, data, expected) in cases {
            let mut mac = JwtKeys::new(key).mac;
            mac.update(data);
            assert_eq!(hex::encode(mac.finalize().into_bytes()), expected);
        }
    }

    #[test]
    fn a_tampered_signature_or_payload_is_invalid() {
        let token = keys().issue("user-1", 0, NOW, 7);
        let (rest, signature) = token.rsplit_once('.').unwrap();
        let mut sig = URL_SAFE_NO_PAD.decode(signature).unwrap();
        sig[0] ^= 1;
        let tampered = format!("{rest}.{}", URL_SAFE_NO_PAD.encode(&sig));
        assert_eq!(keys().verify(&tampered, NOW), Err(JwtError::Invalid));

        let forged_payload = segment(&format!(
            r#"{{"sub":"admin","exp":{},"iat":{NOW},"ver":0}}"#,
            NOW + 100
        ));
        let parts: Vec<&str> = token.split('.').collect();
        let forged = format!("{}.{forged_payload}.{}", parts[0], parts[2]);
        assert_eq!(keys().verify(&forged, NOW), Err(JwtError::Invalid));

        let truncated = &token[..token.len() - 2];
        assert_eq!(keys().verify(truncated, NOW), Err(JwtError::Invalid));
    }

    #[test]
    fn alg_none_and_other_algorithms_are_invalid() {
        let payload = format!(r#"{{"sub":"u","exp":{},"iat":{NOW},"ver":0}}"#, NOW + 100);
        let none = format!(
            "{}.{}.",
            segment(r#"{"alg":"none","typ":"JWT"}"#),
            segment(&payload)
        );
        assert_eq!(keys().verify(&none, NOW), Err(JwtError::Invalid));
        // Correctly signed with our key, but claiming another algorithm.
        for header in [
            r#"{"alg":"HS512","typ":"JWT"}"#,
            r#"{"alg":"hs256","typ":"JWT"}"#,
            r#"{"typ":"JWT"}"#,
            r#"{"alg":"HS256","crit":["exp"]}"#,
        ] {
            let token = sign(&keys(), header, &payload);
            assert_eq!(
                keys().verify(&token, NOW),
                Err(JwtError::Invalid),
                "{header}"
            );
        }
        // The same forging helper with the right header is accepted, so the checks above are
        // about the header alone.
        let good = sign(&keys(), r#"{"alg":"HS256"}"#, &payload);
        assert!(keys().verify(&good, NOW).is_ok());
    }

    #[test]
    fn garbage_is_invalid() {
        for token in [
            "",
            "abc",
            "a.b",
            "a.b.c",
            "a.b.c.d",
            "...",
            "eyJhbGciOiJIUzI1NiJ9.e30.",
            "not a token at all",
        ] {
            assert_eq!(keys().verify(token, NOW), Err(JwtError::Invalid), "{token}");
        }
        // Signed, but the claims lack `ver`.
        let token = sign(
            &keys(),
            r#"{"alg":"HS256"}"#,
            r#"{"sub":"u","exp":9999999999,"iat":1}"#,
        );
        assert_eq!(keys().verify(&token, NOW), Err(JwtError::Invalid));
    }

    #[test]
    fn an_expired_token_is_expired_exactly_at_exp() {
        let token = keys().issue("u", 0, NOW, 1);
        let exp = NOW + 86_400;
        assert!(keys().verify(&token, exp - 1).is_ok());
        assert_eq!(keys().verify(&token, exp), Err(JwtError::Expired));
        assert_eq!(keys().verify(&token, exp + 1000), Err(JwtError::Expired));
    }

    #[test]
    fn a_token_from_another_secret_is_invalid() {
        let token = JwtKeys::new(b"other-secret").issue("u", 0, NOW, 7);
        assert_eq!(keys().verify(&token, NOW), Err(JwtError::Invalid));
    }

    #[test]
    fn debug_does_not_print_the_secret() {
        let debug = format!("{:?}", JwtKeys::new(b"super-secret-value"));
        assert!(!debug.contains("super-secret-value"), "{debug}");
        assert!(debug.contains("redacted"));
    }

    #[test]
    fn load_or_create_persists_and_reuses_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("nested").join("home");
        let first = JwtKeys::load_or_create(&home, None).unwrap();
        let secret = std::fs::read_to_string(home.join(".jwt_secret")).unwrap();
        assert_eq!(secret.len(), 64);
        assert!(secret.chars().all(|c| c.is_ascii_hexdigit()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(home.join(".jwt_secret"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }

        let token = first.issue("u", 0, NOW, 7);
        let second = JwtKeys::load_or_create(&home, None).unwrap();
        assert!(second.verify(&token, NOW).is_ok());
        assert!(JwtKeys::new(secret.as_bytes()).verify(&token, NOW).is_ok());
        // A blank configured secret counts as unset.
        let blank = JwtKeys::load_or_create(&home, Some("  ")).unwrap();
        assert!(blank.verify(&token, NOW).is_ok());
    }

    #[test]
    fn a_configured_secret_wins_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let generated = JwtKeys::load_or_create(dir.path(), None).unwrap();
        let configured = JwtKeys::load_or_create(dir.path(), Some("configured")).unwrap();
        let token = configured.issue("u", 0, NOW, 7);
        assert!(JwtKeys::new(b"configured").verify(&token, NOW).is_ok());
        assert_eq!(generated.verify(&token, NOW), Err(JwtError::Invalid));
    }

    #[test]
    fn a_blank_secret_file_is_regenerated() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".jwt_secret"), "\n").unwrap();
        let keys = JwtKeys::load_or_create(dir.path(), None).unwrap();
        let secret = std::fs::read_to_string(dir.path().join(".jwt_secret")).unwrap();
        assert_eq!(secret.len(), 64);
        let token = keys.issue("u", 0, NOW, 7);
        assert!(JwtKeys::new(secret.as_bytes()).verify(&token, NOW).is_ok());
    }
}
