//! The stateless revision of MCP (protocol version 2026-07-28 and later, "modern"): no
//! `initialize`, no session; every request carries its protocol version, client info and
//! capabilities in `params._meta`, and on Streamable HTTP mirrors the method and the tool,
//! prompt or resource name into the `Mcp-Method` and `Mcp-Name` headers, which a server must
//! check against the body (`400` and JSON-RPC error `-32020`, `HeaderMismatch`).
//!
//! A request is modern when its `_meta` names a protocol version, or when its
//! `MCP-Protocol-Version` header names a modern one; anything else is the sessionful dialect
//! (2025-03-26 to 2025-11-25), so both are served on one URL, as a dual-era server does.

use std::fmt;

use axum::http::HeaderMap;
use base64::Engine;
use serde_json::Value;

use super::message::McpCall;
#[cfg(test)]
use super::message::PROTOCOL_VERSION_META;

/// The first stateless protocol version: versions are dates, so later ones sort after it.
pub const FIRST_MODERN_VERSION: &str = "2026-07-28";

/// The JSON-RPC error code of a request whose headers disagree with its body.
pub const HEADER_MISMATCH_CODE: i64 = -32020;

const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";

/// Whether `call`, sent with `headers`, speaks the stateless revision.
pub fn is_modern(call: &McpCall, headers: &HeaderMap) -> bool {
    call.meta_version().is_some()
        || header(headers, PROTOCOL_VERSION_HEADER)
            .is_some_and(|version| version.as_str() >= FIRST_MODERN_VERSION)
}

/// A modern request's header that disagrees with its body (or is missing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderMismatch {
    /// The header, as the specification spells it.
    pub header: &'static str,
    /// Its value (decoded), `None` when absent.
    pub sent: Option<String>,
    /// The body's field it mirrors.
    pub field: &'static str,
    /// The field's value, `None` when absent.
    pub body: Option<String>,
}

impl fmt::Display for HeaderMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = |value: &Option<String>| match value {
            Some(value) => format!("`{value}`"),
            None => "absent".to_owned(),
        };
        write!(
            f,
            "header mismatch: {} header {} but the body's {} is {}",
            self.header,
            shown(&self.sent),
            self.field,
            shown(&self.body),
        )
    }
}

/// Checks the headers a modern request mirrors its body into: `MCP-Protocol-Version` against
/// `params._meta`'s version, `Mcp-Method` against `method`, and for `tools/call`, `prompts/get`
/// (`params.name`) and `resources/read` (`params.uri`) `Mcp-Name`, decoded from its
/// `=?base64?…?=` form. The first disagreement is returned.
pub fn check_headers(call: &McpCall, headers: &HeaderMap) -> Result<(), HeaderMismatch> {
    let compare = |header_name: &'static str,
                   spelled: &'static str,
                   field: &'static str,
                   body: Option<String>| {
        let sent = header(headers, header_name);
        if sent.is_some() && sent == body {
            Ok(())
        } else {
            Err(HeaderMismatch {
                header: spelled,
                sent,
                field,
                body,
            })
        }
    };
    compare(
        PROTOCOL_VERSION_HEADER,
        "MCP-Protocol-Version",
        "params._meta[\"io.modelcontextprotocol/protocolVersion\"]",
        call.meta_version().map(str::to_owned),
    )?;
    compare(
        METHOD_HEADER,
        "Mcp-Method",
        "method",
        Some(call.method.clone()),
    )?;
    let named = match call.method.as_str() {
        "tools/call" | "prompts/get" => Some(("name", "params.name")),
        "resources/read" => Some(("uri", "params.uri")),
        _ => None,
    };
    if let Some((key, field)) = named {
        let body = (call.params.as_ref())
            .and_then(|params| params.get(key))
            .and_then(Value::as_str)
            .map(str::to_owned);
        compare(NAME_HEADER, "Mcp-Name", field, body)?;
    }
    Ok(())
}

/// A header's value, decoded from the `=?base64?…?=` sentinel form when it is in it.
fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    let value = headers.get(name)?;
    let text = String::from_utf8_lossy(value.as_bytes()).into_owned();
    let encoded = text
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="));
    match encoded {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .or(Some(text)),
        None => Some(text),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;
    use serde_json::json;

    use super::*;

    fn call(method: &str, params: Value) -> McpCall {
        McpCall {
            id: json!(1),
            method: method.into(),
            params: Some(params),
        }
    }

    type Case<'a> = (&'a McpCall, Vec<(&'static str, &'a str)>, Option<&'a str>);

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    /// Each header checked against its body field, the `Mcp-Name` sentinel decoded, and the
    /// refusal naming the header's value and the body's.
    #[test]
    fn headers_are_checked_against_the_body_naming_both() {
        let meta = json!({PROTOCOL_VERSION_META: "2026-07-28"});
        let get_time = call(
            "tools/call",
            json!({"name": "get_time", "arguments": {}, "_meta": meta}),
        );
        let version = ("mcp-protocol-version", "2026-07-28");
        // (call, headers sent, the refusal expected: `None` when accepted)
        let cases: [Case; 5] = [
            (
                &get_time,
                vec![
                    version,
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "get_time"),
                ],
                None,
            ),
            (
                &get_time,
                vec![
                    version,
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "=?base64?Z2V0X3RpbWU=?="),
                ],
                None,
            ),
            (
                &get_time,
                vec![
                    version,
                    ("mcp-method", "tools/call"),
                    ("mcp-name", "get_date"),
                ],
                Some(
                    "header mismatch: Mcp-Name header `get_date` but the body's params.name is `get_time`",
                ),
            ),
            (
                &get_time,
                vec![version, ("mcp-method", "tools/list")],
                Some(
                    "header mismatch: Mcp-Method header `tools/list` but the body's method is `tools/call`",
                ),
            ),
            (
                &get_time,
                vec![("mcp-method", "tools/call"), ("mcp-name", "get_time")],
                Some(
                    "header mismatch: MCP-Protocol-Version header absent but the body's \
                     params._meta[\"io.modelcontextprotocol/protocolVersion\"] is `2026-07-28`",
                ),
            ),
        ];
        for (index, (call, pairs, expected)) in cases.into_iter().enumerate() {
            let got = check_headers(call, &headers(&pairs))
                .err()
                .map(|e| e.to_string());
            assert_eq!(got.as_deref(), expected, "case {index}");
        }
    }

    /// The `_meta` version or a modern protocol version header makes a request modern; a
    /// 2025 header and no `_meta` version keep it sessionful.
    #[test]
    fn a_request_is_modern_by_its_meta_or_its_version_header() {
        let plain = call("tools/list", json!({}));
        let with_meta = call(
            "tools/list",
            json!({"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}}),
        );
        assert!(is_modern(&with_meta, &HeaderMap::new()));
        assert!(!is_modern(&plain, &HeaderMap::new()));
        let legacy = headers(&[("mcp-protocol-version", "2025-11-25")]);
        assert!(!is_modern(&plain, &legacy));
        let modern = headers(&[("mcp-protocol-version", "2026-07-28")]);
        assert!(is_modern(&plain, &modern));
    }
}
