//! Cutting text for messages: the first N characters (not bytes) of a string, so a cut never
//! splits a character and a limit means what a reader counts; and a cut to a byte budget that
//! says how much it dropped (bounded diagnostics in a ledger).

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

/// `text` cut to at most `max` bytes (at a character boundary), saying how much was cut.
pub(crate) fn cut_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes cut]", &text[..end], text.len() - end)
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
