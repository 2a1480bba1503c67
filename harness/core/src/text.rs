//! Cutting text for messages: the first N characters (not bytes) of a string, so a cut never
//! splits a character and a limit means what a reader counts.

use std::borrow::Cow;

/// The first `limit` characters of `text`, or all of it when it is shorter.
pub fn first_chars(text: &str, limit: usize) -> &str {
    match text.char_indices().nth(limit) {
        Some((end, _)) => &text[..end],
        None => text,
    }
}

/// The first `limit` characters of `text`, followed by `…` when anything was cut.
pub fn shorten(text: &str, limit: usize) -> Cow<'_, str> {
    let prefix = first_chars(text, limit);
    if prefix.len() < text.len() {
        Cow::Owned(format!("{prefix}…"))
    } else {
        Cow::Borrowed(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_count_characters_not_bytes() {
        let cases = [
            ("short", 10, "short", "short"),
            ("exactly", 7, "exactly", "exactly"),
            ("ééééé", 3, "ééé", "ééé…"),
            ("", 0, "", ""),
            ("abc", 0, "", "…"),
        ];
        for (text, limit, first, short) in cases {
            assert_eq!(first_chars(text, limit), first, "{text:?} {limit}");
            assert_eq!(shorten(text, limit), short, "{text:?} {limit}");
        }
    }
}
