//! How a failed HTTP answer is worded by the two callers of a real provider (the gateway's
//! providers and the harness's recording proxy), kept free of HTTP types so this crate stays a
//! codec: [`client_error_text`], what the provider's Python client says; [`recorded_error_text`],
//! what the recording proxy writes. Its class is the wire's
//! ([`Wire::http_error_class`](crate::Wire::http_error_class)); the rest of that edge (the
//! loopback rule, the redirect policy, transport failures, the bounded read) needs `reqwest`'s
//! types and is `transport`'s `upstream` module.

use serde_json::Value;

use crate::chat_completions::{cut, error_message};
use crate::pyrepr::python_str;

/// The longest provider error detail kept in a client's error text, in characters.
pub const ERROR_DETAIL_LIMIT: usize = 500;

/// The text the Python clients (openai-python's `_make_status_error_from_response`, and
/// `anthropic`, which words it alike) give a failed answer: `Error code: <status> - <the parsed
/// JSON body>` (its Python `str`), the trimmed text of a body that is not JSON, or `Error code:
/// <status>` for an empty one; the body's part cut to [`ERROR_DETAIL_LIMIT`] characters. A body
/// cut at the read cap (`whole` false) no longer parses, so the client's rule for a text body
/// (the text alone) would drop the status: it says both instead.
pub fn client_error_text(status: u16, body: &str, whole: bool) -> String {
    let text = body.trim();
    match serde_json::from_str::<Value>(text) {
        Err(_) if !whole => format!("Error code: {status} - {}", cut(text, ERROR_DETAIL_LIMIT)),
        Ok(json) => format!(
            "Error code: {status} - {}",
            cut(&python_str(&json), ERROR_DETAIL_LIMIT)
        ),
        Err(_) if text.is_empty() => format!("Error code: {status}"),
        Err(_) => cut(text, ERROR_DETAIL_LIMIT),
    }
}

/// The text the recording proxy records for a failed answer: `Error code: <status> - <the
/// provider's message>` (the body's error message, [`error_message`], else its trimmed text,
/// else `no error detail`), marked when the body was cut at the read cap. Unlike
/// [`client_error_text`] it keeps the provider's message, not the body's repr: the model server
/// answers the text after `Error code: <status> - ` as the message of the wire's own error body
/// (`docs/replay-and-fixtures.md` §11), so the gateway words it again as its client would.
pub fn recorded_error_text(status: u16, body: &str, whole: bool) -> String {
    let detail = serde_json::from_str::<Value>(body)
        .ok()
        .and_then(|json| error_message(&json))
        .or_else(|| Some(body.trim().to_owned()).filter(|body| !body.is_empty()))
        .unwrap_or_else(|| "no error detail".to_owned());
    let cut = if whole {
        ""
    } else {
        " [cut at the read limit]"
    };
    format!("Error code: {status} - {detail}{cut}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_answer_is_worded_as_the_client_words_it_and_as_the_proxy_records_it() {
        let json = r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#;
        let table = [
            (
                json,
                true,
                "Error code: 429 - {'error': {'message': 'slow down', 'type': 'rate_limit_error'}}",
                "Error code: 429 - slow down",
            ),
            (
                "  upstream broke  ",
                true,
                "upstream broke",
                "Error code: 429 - upstream broke",
            ),
            (
                "",
                true,
                "Error code: 429",
                "Error code: 429 - no error detail",
            ),
            (
                "{\"error\": {\"mess",
                false,
                "Error code: 429 - {\"error\": {\"mess",
                "Error code: 429 - {\"error\": {\"mess [cut at the read limit]",
            ),
        ];
        for (body, whole, client, recorded) in table {
            assert_eq!(client_error_text(429, body, whole), client, "{body}");
            assert_eq!(recorded_error_text(429, body, whole), recorded, "{body}");
        }
    }
}
