//! Shaping tool output: head truncation with the contract's markers (`docs/gateway-contract.md`
//! §8.2, §8.3), middle shortening of long errors (§8.4), `<Type>: <msg>` for unexpected I/O errors,
//! and running blocking filesystem work off the async runtime.
//!
//! Lengths are counted in Unicode scalar values (`char`s), like Python's `len(str)`.

use std::io;

/// Error texts longer than this are shortened in the middle.
pub(super) const MAX_ERROR_CHARS: usize = 2000;

/// Keeps the first `max_chars` characters of `text` and appends the truncation marker
/// `\n... [truncated: showing first K of N chars. <hint>] ...`, where K = `max_chars` and N is
/// the full length. The marker does not count towards `max_chars`. Text within the limit is
/// returned unchanged.
pub(super) fn truncate_head(text: String, max_chars: usize, hint: &str) -> String {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return text;
    };
    let total = text.chars().count();
    format!(
        "{}\n... [truncated: showing first {max_chars} of {total} chars. {hint}] ...",
        &text[..cut]
    )
}

/// The tool's final text: `Error: …` texts longer than [`MAX_ERROR_CHARS`] are shortened in the
/// middle; anything else passes through.
pub(super) fn finish(text: String) -> String {
    if text.starts_with("Error:") {
        shorten_middle(text, MAX_ERROR_CHARS)
    } else {
        text
    }
}

/// Shortens `text` to exactly `max_chars` characters by replacing its middle with
/// `\n... [N chars omitted] ...\n`, keeping as much head as tail (the head gets the odd one).
/// Text within the limit is returned unchanged.
pub(super) fn shorten_middle(text: String, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text;
    }
    let marker = |omitted: usize| format!("\n... [{omitted} chars omitted] ...\n");
    // The marker's length depends on the number it shows: iterate to the fixed point. The omitted
    // count only grows, and gains a digit at most a few times, so this ends quickly.
    let mut omitted = total - max_chars;
    for _ in 0..8 {
        let kept = max_chars.saturating_sub(marker(omitted).chars().count());
        let next = total - kept;
        if next == omitted {
            break;
        }
        omitted = next;
    }
    let kept = total - omitted;
    let head_chars = kept - kept / 2;
    let tail_chars = kept / 2;
    let head: String = text.chars().take(head_chars).collect();
    let tail: String = text.chars().skip(total - tail_chars).collect();
    format!("{head}{}{tail}", marker(omitted))
}

/// `<Type>: <msg>` for an I/O error, with Python's exception names because the contract's texts
/// come from a Python gateway (`Error: Unexpected error reading file: PermissionError: …`).
/// Rust's I/O error messages never contain the path, so no host path leaks through `<msg>`.
pub(super) fn describe_io_error(error: &io::Error) -> String {
    let type_name = match error.kind() {
        io::ErrorKind::NotFound => "FileNotFoundError",
        io::ErrorKind::PermissionDenied => "PermissionError",
        io::ErrorKind::AlreadyExists => "FileExistsError",
        io::ErrorKind::IsADirectory => "IsADirectoryError",
        io::ErrorKind::NotADirectory => "NotADirectoryError",
        io::ErrorKind::TimedOut => "TimeoutError",
        io::ErrorKind::Interrupted => "InterruptedError",
        _ => "OSError",
    };
    format!("{type_name}: {error}")
}

/// Runs blocking filesystem work on tokio's blocking pool. A panic in the work (a bug, never an
/// expected outcome) comes back as an error text built by `on_panic` instead of unwinding into
/// the agent loop.
pub(super) async fn run_blocking<F>(work: F, on_panic: impl FnOnce(String) -> String) -> String
where
    F: FnOnce() -> String + Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(text) => text,
        Err(join_error) => on_panic(format!("JoinError: {join_error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncate_head_marker_math() {
        let hint = "Use a more specific path to see fewer results";
        // Within the limit: unchanged, even exactly at it.
        assert_eq!(truncate_head("abc".into(), 3, hint), "abc");
        assert_eq!(
            truncate_head("abcdef".into(), 4, hint),
            "abcd\n... [truncated: showing first 4 of 6 chars. \
             Use a more specific path to see fewer results] ..."
        );
        // Characters, not bytes: each `é` is two bytes.
        assert_eq!(
            truncate_head("ééééé".into(), 2, "h"),
            "éé\n... [truncated: showing first 2 of 5 chars. h] ..."
        );
    }

    #[test]
    fn shorten_middle_keeps_head_and_tail_and_the_exact_length() {
        let text = format!("Error: {}", "x".repeat(5000));
        let short = shorten_middle(text.clone(), MAX_ERROR_CHARS);
        assert_eq!(short.chars().count(), MAX_ERROR_CHARS);
        assert!(short.starts_with("Error: xxx"));
        assert!(short.ends_with("xxx"));
        let marker = "\n... [3037 chars omitted] ...\n";
        assert!(short.contains(marker), "{short}");
        // What is kept plus what is omitted is the whole.
        assert_eq!(MAX_ERROR_CHARS - marker.chars().count() + 3037, text.len());
        // Within the limit: unchanged.
        assert_eq!(shorten_middle("Error: short".into(), 20), "Error: short");
    }

    #[test]
    fn shorten_middle_at_digit_boundaries() {
        for total in [2001, 2030, 2031, 2100, 3000, 12_000, 120_000] {
            let text: String = "é".repeat(total);
            let short = shorten_middle(text, MAX_ERROR_CHARS);
            assert_eq!(short.chars().count(), MAX_ERROR_CHARS, "total {total}");
        }
    }

    #[test]
    fn finish_shortens_only_errors() {
        let long = "y".repeat(3000);
        assert_eq!(finish(long.clone()), long);
        assert_eq!(
            finish(format!("Error: {long}")).chars().count(),
            MAX_ERROR_CHARS
        );
    }

    #[test]
    fn io_errors_get_python_type_names() {
        let error = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(describe_io_error(&error).starts_with("PermissionError: "));
        let error = io::Error::other("boom");
        assert_eq!(describe_io_error(&error), "OSError: boom");
    }
}
