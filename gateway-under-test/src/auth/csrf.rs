//! CSRF primitives (docs/gateway-contract.md §2.8): the double-submit token and the Origin check.
//!
//! State-changing requests must echo the `csrf_token` cookie in `X-CSRF-Token`; the middleware
//! compares the two with [`tokens_match`]. The four auth routes that create or end a session use
//! [`origin_allowed`] instead, and successful logins set a fresh [`new_csrf_token`].

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rand::RngCore;
use subtle::ConstantTimeEq;

/// Random bytes in a CSRF token; 64 bytes encode to 86 base64url characters.
const TOKEN_BYTES: usize = 64;

/// A fresh CSRF token: 64 random bytes from a cryptographically secure generator, URL-safe
/// base64 without padding, so always 86 characters of `[A-Za-z0-9_-]` (safe in a cookie and a
/// header without quoting).
pub fn new_csrf_token() -> String {
    let mut bytes = [0u8; TOKEN_BYTES];
    rand::thread_rng().fill_bytes(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether the cookie token and the header token are equal, in time independent of where they
/// differ. Two empty strings do *not* match: an empty cookie plus an empty header must not pass
/// the check.
pub fn tokens_match(a: &str, b: &str) -> bool {
    if a.is_empty() || b.is_empty() {
        return false;
    }
    // `ct_eq` on slices returns early only on a length mismatch, and the length of a token is
    // not secret (it is always 86).
    a.as_bytes().ct_eq(b.as_bytes()).into()
}

/// Reduces an origin or URL to `scheme://host[:port]`, the form origins are compared in.
///
/// Scheme and host are lowercased; any path, query or fragment is dropped (so a trailing slash
/// is tolerated); an empty port (`host:`) is dropped. An explicit port is kept even when it is the
/// scheme's default, because browsers never send a default port in `Origin` and configured
/// origins are taken as written. IPv6 hosts keep their brackets (`http://[::1]:8001`).
///
/// Returns `None` for anything that is not an origin: no `scheme://`, an empty or invalid host,
/// a non-numeric or out-of-range port, user info (`user@host`), or the opaque origin `null`.
pub fn normalize_origin(origin: &str) -> Option<String> {
    let (scheme, rest) = origin.trim().split_once("://")?;
    let mut scheme_chars = scheme.chars();
    let scheme_ok = scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !scheme_ok {
        return None;
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    // User info has no place in an origin, and accepting it invites confusion between
    // `https://trusted@evil` and `https://trusted`.
    if authority.contains('@') {
        return None;
    }

    let (host, port) = if let Some(bracketed) = authority.strip_prefix('[') {
        let (address, after) = bracketed.split_once(']')?;
        let valid = !address.is_empty()
            && address
                .chars()
                .all(|c| c.is_ascii_hexdigit() || matches!(c, ':' | '.'));
        if !valid {
            return None;
        }
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?),
        };
        (format!("[{}]", address.to_ascii_lowercase()), port)
    } else {
        let (host, port) = match authority.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        };
        let valid = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
        if !valid {
            return None;
        }
        (host.to_ascii_lowercase(), port)
    };

    let scheme = scheme.to_ascii_lowercase();
    match port.filter(|port| !port.is_empty()) {
        None => Some(format!("{scheme}://{host}")),
        Some(port) => {
            // Digits only: `u16::from_str` would also take a leading `+`.
            if !port.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let port: u16 = port.parse().ok()?;
            Some(format!("{scheme}://{host}:{port}"))
        }
    }
}

/// The Origin check of the auth routes: whether the request's `Origin` header value `origin`
/// equals the request's own origin (`request_origin`, built by the caller from the scheme and
/// the `Host` header) or one of `cors_origins`, all compared after [`normalize_origin`].
///
/// `*` entries in `cors_origins` are ignored (as for CORS, §1.2), as are entries that do not
/// normalise. An `origin` that does not normalise (including `null`) is refused. Callers let a
/// request *without* an `Origin` header pass before calling this.
pub fn origin_allowed(origin: &str, request_origin: &str, cors_origins: &[String]) -> bool {
    let Some(origin) = normalize_origin(origin) else {
        return false;
    };
    let allowed = |candidate: &str| normalize_origin(candidate).is_some_and(|c| c == origin);
    allowed(request_origin)
        || cors_origins
            .iter()
            .map(|entry| entry.trim())
            .filter(|entry| *entry != "*")
            .any(allowed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_86_url_safe_characters_and_differ() {
        let a = new_csrf_token();
        let b = new_csrf_token();
        assert_eq!(a.len(), 86);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_'),
            "{a}"
        );
        assert_eq!(URL_SAFE_NO_PAD.decode(&a).unwrap().len(), 64);
        assert_ne!(a, b);
    }

    #[test]
    fn tokens_match_only_when_equal_and_non_empty() {
        let token = new_csrf_token();
        assert!(tokens_match(&token, &token.clone()));
        assert!(!tokens_match(&token, &new_csrf_token()));
        assert!(!tokens_match(&token, &token[..85]));
        assert!(!tokens_match("abc", "abd"));
        assert!(!tokens_match("", ""));
        assert!(!tokens_match(&token, ""));
    }

    #[test]
    fn normalize_origin_reduces_to_scheme_host_port() {
        let cases = [
            ("http://localhost:3000", Some("http://localhost:3000")),
            ("HTTP://LocalHost:3000/", Some("http://localhost:3000")),
            (
                "https://example.com/path?q=1#f",
                Some("https://example.com"),
            ),
            ("https://example.com:443", Some("https://example.com:443")),
            ("  https://example.com  ", Some("https://example.com")),
            ("http://example.com:", Some("http://example.com")),
            ("http://[::1]:8001/x", Some("http://[::1]:8001")),
            ("http://[FE80::1]", Some("http://[fe80::1]")),
            ("http://127.0.0.1:8001", Some("http://127.0.0.1:8001")),
            ("null", None),
            ("", None),
            ("example.com", None),
            ("://example.com", None),
            ("1http://example.com", None),
            ("http://", None),
            ("http://:80", None),
            ("http://example.com:abc", None),
            ("http://example.com:+80", None),
            ("http://example.com:70000", None),
            ("http://user@example.com", None),
            ("http://exa mple.com", None),
            ("http://[::1", None),
            ("http://[::1]x", None),
            ("http://a:1:2", None),
        ];
        for (input, expected) in cases {
            assert_eq!(normalize_origin(input).as_deref(), expected, "{input}");
        }
    }

    fn origins(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn origin_allowed_cases() {
        let own = "http://127.0.0.1:8001";
        let configured = origins(&["http://localhost:3000/", "*"]);
        // The request's own origin.
        assert!(origin_allowed("http://127.0.0.1:8001", own, &[]));
        assert!(origin_allowed("http://127.0.0.1:8001/", own, &configured));
        // A configured origin, with trailing slash / path / case differences.
        assert!(origin_allowed("http://localhost:3000", own, &configured));
        assert!(origin_allowed(
            "HTTP://LOCALHOST:3000/app",
            own,
            &configured
        ));
        // Anything else.
        assert!(!origin_allowed("http://evil.example", own, &configured));
        assert!(!origin_allowed("http://localhost:3001", own, &configured));
        assert!(!origin_allowed("https://localhost:3000", own, &configured));
        // `*` is ignored rather than allowing everything.
        assert!(!origin_allowed(
            "http://evil.example",
            own,
            &origins(&["*"])
        ));
        assert!(!origin_allowed(
            "http://evil.example",
            own,
            &origins(&[" * "])
        ));
        // Opaque and malformed origins are refused.
        assert!(!origin_allowed("null", own, &configured));
        assert!(!origin_allowed("", "", &[]));
    }
}
