//! Session cookies (docs/gateway-contract.md §2.7): builds `Set-Cookie` header values and reads the
//! `Cookie` request header.
//!
//! Every `Set-Cookie` value has its attributes in one fixed order, so responses are stable
//! byte for byte:
//!
//! ```text
//! <name>=<value>[; HttpOnly]; SameSite=<Lax|Strict>; Path=/[; Secure][; Max-Age=<seconds>]
//! ```
//!
//! No `Domain` and no `Expires` attribute is ever written; `Max-Age` alone decides persistence.

use std::net::IpAddr;

/// The session JWT cookie.
pub const ACCESS_TOKEN_COOKIE: &str = "access_token";
/// `"1"` when the session cookies are persistent, `"0"` when they are browser-session cookies.
pub const PERSISTENT_COOKIE: &str = "deerflow_session_persistent";
/// The double-submit CSRF cookie, readable by page scripts.
pub const CSRF_COOKIE: &str = "csrf_token";

/// Seconds in a day, for turning `token_expiry_days` into `Max-Age`.
const SECONDS_PER_DAY: i64 = 86_400;

/// What the request says about how cookies may be set: over https, to a loopback host, and for
/// how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CookieJarPolicy {
    /// The request arrived over https (directly or per `X-Forwarded-Proto`); adds `Secure`.
    pub https: bool,
    /// The `Host` is a loopback address or `localhost`.
    pub loopback_or_localhost: bool,
    /// `auth.allow_insecure_persistent_cookie`: persistent cookies over plain http anywhere.
    pub allow_insecure_persistent: bool,
    /// `Max-Age` of persistent cookies (`token_expiry_days` × 86400).
    pub max_age_seconds: i64,
}

impl CookieJarPolicy {
    /// The policy for one request.
    ///
    /// `forwarded_proto` is the `X-Forwarded-Proto` header; the first comma-separated entry is
    /// the client-facing scheme, and `https` (any case) makes the request https. The gateway
    /// itself serves plain http, so there is no other source of https. Trusting the header from
    /// any peer is harmless: it only makes the client's own cookies stricter or longer-lived.
    ///
    /// `host_header` is the `Host` header; its port is stripped (`localhost:8001`,
    /// `[::1]:8001`). Loopback means an address in 127.0.0.0/8, `::1` (also IPv4-mapped), or
    /// exactly `localhost` (any case).
    pub fn from_request(
        host_header: Option<&str>,
        forwarded_proto: Option<&str>,
        allow_insecure_persistent: bool,
        token_expiry_days: u32,
    ) -> CookieJarPolicy {
        let https = forwarded_proto
            .and_then(|value| value.split(',').next())
            .is_some_and(|scheme| scheme.trim().eq_ignore_ascii_case("https"));
        let loopback_or_localhost = host_header.is_some_and(is_loopback_host);
        CookieJarPolicy {
            https,
            loopback_or_localhost,
            allow_insecure_persistent,
            max_age_seconds: i64::from(token_expiry_days) * SECONDS_PER_DAY,
        }
    }

    /// Whether session cookies get `Max-Age`: `remember_me` and at least one of https, a
    /// loopback host, or the insecure-persistent override.
    pub fn persistent(&self, remember_me: bool) -> bool {
        remember_me && (self.https || self.loopback_or_localhost || self.allow_insecure_persistent)
    }
}

/// Whether a `Host` header names this machine.
fn is_loopback_host(host_header: &str) -> bool {
    let host = host_header.trim();
    let host = if let Some(bracketed) = host.strip_prefix('[') {
        bracketed.split(']').next().unwrap_or_default()
    } else if host.matches(':').count() == 1 {
        host.split(':').next().unwrap_or_default()
    } else {
        // No port, or a bare IPv6 address whose colons are not a port separator.
        host
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.to_canonical().is_loopback())
}

/// One `Set-Cookie` value, attributes in the order documented on the module.
fn set_cookie(
    name: &str,
    value: &str,
    http_only: bool,
    same_site: &str,
    secure: bool,
    max_age: Option<i64>,
) -> String {
    let mut cookie = format!("{name}={value}");
    if http_only {
        cookie.push_str("; HttpOnly");
    }
    cookie.push_str("; SameSite=");
    cookie.push_str(same_site);
    cookie.push_str("; Path=/");
    if secure {
        cookie.push_str("; Secure");
    }
    if let Some(seconds) = max_age {
        cookie.push_str(&format!("; Max-Age={seconds}"));
    }
    cookie
}

/// The three `Set-Cookie` values of a new session, in this order:
///
/// 1. `access_token=<jwt>; HttpOnly; SameSite=Lax; Path=/[; Secure][; Max-Age=N]`
/// 2. `deerflow_session_persistent=<1|0>` with the same attributes as `access_token`
/// 3. `csrf_token=<token>; SameSite=Strict; Path=/[; Secure][; Max-Age=N]` (not `HttpOnly`: the
///    page script reads it to echo it in `X-CSRF-Token`)
///
/// `Secure` is present when the request was https; `Max-Age` when
/// [`CookieJarPolicy::persistent`] holds for `remember_me`. `jwt` and `csrf_token` must be
/// cookie-safe, which tokens from [`JwtKeys::issue`](super::JwtKeys::issue) and
/// [`new_csrf_token`](super::new_csrf_token) always are.
pub fn session_cookies(
    policy: &CookieJarPolicy,
    jwt: &str,
    csrf_token: &str,
    remember_me: bool,
) -> Vec<String> {
    let persistent = policy.persistent(remember_me);
    let max_age = persistent.then_some(policy.max_age_seconds);
    let flag = if persistent { "1" } else { "0" };
    vec![
        set_cookie(ACCESS_TOKEN_COOKIE, jwt, true, "Lax", policy.https, max_age),
        set_cookie(PERSISTENT_COOKIE, flag, true, "Lax", policy.https, max_age),
        set_cookie(
            CSRF_COOKIE,
            csrf_token,
            false,
            "Strict",
            policy.https,
            max_age,
        ),
    ]
}

/// The three `Set-Cookie` values that delete the session (logout): same names, attributes and
/// order as [`session_cookies`], with an empty value and `Max-Age=0`. Matching attributes
/// (notably `Secure`) keep browsers from refusing the overwrite.
pub fn clear_session_cookies(policy: &CookieJarPolicy) -> Vec<String> {
    vec![
        set_cookie(ACCESS_TOKEN_COOKIE, "", true, "Lax", policy.https, Some(0)),
        set_cookie(PERSISTENT_COOKIE, "", true, "Lax", policy.https, Some(0)),
        set_cookie(CSRF_COOKIE, "", false, "Strict", policy.https, Some(0)),
    ]
}

/// The value of cookie `name` in a `Cookie` request header (`"a=1; b=2"`).
///
/// Names are compared exactly; surrounding whitespace and one pair of double quotes around the
/// value are removed. Pieces without `=` are skipped. When the name occurs more than once the
/// last occurrence wins, as in Starlette's cookie parser that DeerFlow uses. An empty value is
/// returned as `Some("")`.
pub fn cookie_value(cookie_header: &str, name: &str) -> Option<String> {
    cookie_header
        // Scanning from the end makes the last occurrence win.
        .rsplit(';')
        .filter_map(|pair| pair.split_once('='))
        .find(|(key, _)| key.trim() == name)
        .map(|(_, value)| {
            let value = value.trim();
            value
                .strip_prefix('"')
                .and_then(|inner| inner.strip_suffix('"'))
                .unwrap_or(value)
                .to_string()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(host: &str, proto: Option<&str>) -> CookieJarPolicy {
        CookieJarPolicy::from_request(Some(host), proto, false, 7)
    }

    #[test]
    fn from_request_detects_https_and_loopback() {
        assert!(policy("x", Some("https")).https);
        assert!(policy("x", Some("HTTPS, http")).https);
        assert!(!policy("x", Some("http, https")).https);
        assert!(!policy("x", None).https);

        for host in [
            "127.0.0.1",
            "127.0.0.1:8001",
            "127.9.8.7:1",
            "localhost",
            "LOCALHOST:3000",
            "[::1]:8001",
            "[::1]",
            "::1",
            "[::ffff:127.0.0.1]:80",
        ] {
            assert!(policy(host, None).loopback_or_localhost, "{host}");
        }
        for host in [
            "testserver",
            "example.com:8001",
            "10.0.0.1",
            "localhost.example.com",
            "[2001:db8::1]:80",
            "",
        ] {
            assert!(!policy(host, None).loopback_or_localhost, "{host}");
        }
        assert!(!CookieJarPolicy::from_request(None, None, false, 7).loopback_or_localhost);
        assert_eq!(policy("x", None).max_age_seconds, 604_800);
        assert_eq!(
            CookieJarPolicy::from_request(None, None, false, 1).max_age_seconds,
            86_400
        );
    }

    #[test]
    fn loopback_http_remember_me_is_persistent_without_secure() {
        let cookies = session_cookies(&policy("127.0.0.1:8001", None), "JWT", "CSRF", true);
        assert_eq!(
            cookies,
            [
                "access_token=JWT; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800",
                "deerflow_session_persistent=1; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800",
                "csrf_token=CSRF; SameSite=Strict; Path=/; Max-Age=604800",
            ]
        );
    }

    #[test]
    fn non_loopback_http_gets_session_cookies() {
        let cookies = session_cookies(&policy("testserver", None), "JWT", "CSRF", true);
        assert_eq!(
            cookies,
            [
                "access_token=JWT; HttpOnly; SameSite=Lax; Path=/",
                "deerflow_session_persistent=0; HttpOnly; SameSite=Lax; Path=/",
                "csrf_token=CSRF; SameSite=Strict; Path=/",
            ]
        );
    }

    #[test]
    fn insecure_override_makes_plain_http_persistent() {
        let policy = CookieJarPolicy::from_request(Some("gateway.lan"), None, true, 7);
        let cookies = session_cookies(&policy, "JWT", "CSRF", true);
        assert!(cookies.iter().all(|c| c.ends_with("; Max-Age=604800")));
        assert!(cookies.iter().all(|c| !c.contains("Secure")));
    }

    #[test]
    fn https_is_secure_and_persistent() {
        let cookies = session_cookies(&policy("example.com", Some("https")), "JWT", "CSRF", true);
        assert_eq!(
            cookies,
            [
                "access_token=JWT; HttpOnly; SameSite=Lax; Path=/; Secure; Max-Age=604800",
                "deerflow_session_persistent=1; HttpOnly; SameSite=Lax; Path=/; Secure; Max-Age=604800",
                "csrf_token=CSRF; SameSite=Strict; Path=/; Secure; Max-Age=604800",
            ]
        );
    }

    #[test]
    fn without_remember_me_there_is_no_max_age() {
        for policy in [
            policy("127.0.0.1", None),
            policy("example.com", Some("https")),
        ] {
            let cookies = session_cookies(&policy, "JWT", "CSRF", false);
            assert!(
                cookies.iter().all(|c| !c.contains("Max-Age")),
                "{cookies:?}"
            );
            assert!(cookies[1].starts_with("deerflow_session_persistent=0;"));
            assert_eq!(cookies[2].contains("; Secure"), policy.https);
        }
    }

    #[test]
    fn the_csrf_cookie_is_strict_and_readable_by_scripts() {
        let cookies = session_cookies(&policy("localhost", None), "JWT", "CSRF", true);
        let csrf = &cookies[2];
        assert!(csrf.starts_with("csrf_token=CSRF;"));
        assert!(csrf.contains("SameSite=Strict"));
        assert!(!csrf.contains("HttpOnly"));
        assert!(cookies[0].contains("HttpOnly") && cookies[0].contains("SameSite=Lax"));
    }

    #[test]
    fn clearing_deletes_all_three_cookies() {
        assert_eq!(
            clear_session_cookies(&policy("localhost", None)),
            [
                "access_token=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0",
                "deerflow_session_persistent=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0",
                "csrf_token=; SameSite=Strict; Path=/; Max-Age=0",
            ]
        );
        let secure = clear_session_cookies(&policy("example.com", Some("https")));
        assert!(secure.iter().all(|c| c.ends_with("; Secure; Max-Age=0")));
    }

    #[test]
    fn cookie_value_parsing() {
        let header = "a=1; access_token=abc.def.ghi;csrf_token = tok ; q=\"quoted\"; flag; e=";
        assert_eq!(cookie_value(header, "a").as_deref(), Some("1"));
        assert_eq!(
            cookie_value(header, "access_token").as_deref(),
            Some("abc.def.ghi")
        );
        assert_eq!(cookie_value(header, "csrf_token").as_deref(), Some("tok"));
        assert_eq!(cookie_value(header, "q").as_deref(), Some("quoted"));
        assert_eq!(cookie_value(header, "e").as_deref(), Some(""));
        assert_eq!(cookie_value(header, "flag"), None);
        assert_eq!(cookie_value(header, "missing"), None);
        assert_eq!(cookie_value(header, "A"), None);
        assert_eq!(cookie_value("", "a"), None);
        assert_eq!(cookie_value("x=a=b", "x").as_deref(), Some("a=b"));
        assert_eq!(cookie_value("x=1; x=2", "x").as_deref(), Some("2"));
        assert_eq!(cookie_value("xa=1; ax=2", "x"), None);
    }
}
