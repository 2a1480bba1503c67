//! The HTTP edge of a call to a real provider, in `reqwest`'s terms, shared by the gateway's
//! providers (`gateway-under-test/src/models/wire_model/`) and the harness's recording proxy
//! (`harness/runner/src/model_server/record.rs`), so the two callers of a provider they do not
//! control cannot drift apart: which upstream is this machine ([`is_loopback`]), the redirect
//! policy that keeps a key with its origin ([`same_origin_redirects`]), how a transport failure
//! is classed and worded ([`TransportFailure`]), and a failed answer read within a bound
//! ([`read_failed_answer`]). What the failure is called at each wire, and how its text reads,
//! are the codec's (`model_wire::Wire::http_error_class`, `model_wire::edge`).

use reqwest::Url;

use crate::read_capped;

/// True when the URL's host is a loopback address or `localhost` (or a name under
/// `.localhost`): a local server or a test double, which no proxy can reach and where a key
/// crossing in clear crosses no network.
pub fn is_loopback(url: &Url) -> bool {
    url.host_str().is_some_and(is_loopback_host)
}

/// [`is_loopback`] of a host as `Url::host_str` gives it (an IPv6 address bracketed).
pub fn is_loopback_host(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let host = host.to_ascii_lowercase();
            host == "localhost" || host.ends_with(".localhost")
        }
    }
}

/// The redirect policy of every call to a provider: a redirect is followed only within the
/// origin it came from (scheme, host and port), at most 5 times. One to another origin is not
/// followed, at any wire, so the key in whatever header the wire sends it (`Authorization`,
/// `x-api-key`, `x-goog-api-key`) never reaches another host (reqwest's default policy drops
/// `Authorization` there but not the others); the call fails with the 3xx status instead.
pub fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same = attempt
            .previous()
            .last()
            .is_some_and(|from| from.origin() == attempt.url().origin());
        if attempt.previous().len() > 5 {
            attempt.error("more than 5 redirects")
        } else if same {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

/// What kind of transport failure a `reqwest` error is, as the Python clients class it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportFailure {
    /// The call timed out (`APITimeoutError`).
    TimedOut,
    /// The answer had started and broke off, or could not be decoded (`RemoteProtocolError`).
    BrokeOff,
    /// The request could not be built (`ConfigurationError`).
    Unbuildable,
    /// The provider could not be reached (`APIConnectionError`).
    Unreachable,
}

impl TransportFailure {
    /// The kind of `err`; `in_body` says the answer had started, so a broken connection is a
    /// protocol failure rather than a failure to connect.
    pub fn of(err: &reqwest::Error, in_body: bool) -> TransportFailure {
        if err.is_timeout() {
            TransportFailure::TimedOut
        } else if in_body || err.is_body() || err.is_decode() {
            TransportFailure::BrokeOff
        } else if err.is_builder() {
            TransportFailure::Unbuildable
        } else {
            TransportFailure::Unreachable
        }
    }

    /// The exception class the Python clients (and the gateway's error handling) name it by.
    pub fn class(self) -> &'static str {
        match self {
            TransportFailure::TimedOut => "APITimeoutError",
            TransportFailure::BrokeOff => "RemoteProtocolError",
            TransportFailure::Unbuildable => "ConfigurationError",
            TransportFailure::Unreachable => "APIConnectionError",
        }
    }

    /// Its text, around the error's `detail` (which the caller has cleaned of the URL or of
    /// any secret).
    pub fn message(self, detail: &str) -> String {
        match self {
            TransportFailure::TimedOut => format!("Request timed out: {detail}"),
            TransportFailure::BrokeOff => format!("the response broke off: {detail}"),
            TransportFailure::Unbuildable => format!("cannot build the request: {detail}"),
            TransportFailure::Unreachable => format!("Connection error: {detail}"),
        }
    }
}

/// A provider's answer with a failure status, read within a bound.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedAnswer {
    /// The HTTP status.
    pub status: u16,
    /// Bedrock's `x-amzn-errortype` header (the exception's name, e.g.
    /// `ThrottlingException:http://…`), when the answer has one.
    pub amzn_error_type: Option<String>,
    /// The body's first `limit` bytes, as text (an unreadable body reads as an empty one).
    pub body: String,
    /// Whether that is the whole body.
    pub whole: bool,
}

/// Reads a failed answer: its status, Bedrock's error-type header and at most `limit` bytes of
/// its body (the rest is never received into memory).
pub async fn read_failed_answer(response: reqwest::Response, limit: usize) -> FailedAnswer {
    let status = response.status().as_u16();
    let amzn_error_type = response
        .headers()
        .get("x-amzn-errortype")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let (body, whole) = read_capped(response.bytes_stream(), limit)
        .await
        .map(|(bytes, whole)| (String::from_utf8_lossy(&bytes).into_owned(), whole))
        .unwrap_or_else(|_| (String::new(), true));
    FailedAnswer {
        status,
        amzn_error_type,
        body,
        whole,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_this_machine_whatever_their_spelling() {
        let table = [
            ("http://127.0.0.1:8080/v1", true),
            ("http://127.0.0.2/", true),
            ("http://[::1]:9/", true),
            ("http://localhost/", true),
            ("http://LocalHost/", true),
            ("http://api.localhost/", true),
            ("http://10.0.0.1/", false),
            ("http://localhost.example.com/", false),
            ("https://api.openai.com/v1", false),
        ];
        for (url, loopback) in table {
            assert_eq!(is_loopback(&Url::parse(url).unwrap()), loopback, "{url}");
        }
    }
}
