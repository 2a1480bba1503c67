//! Bounded, linear reads of a model provider's answer, shared by the gateway's provider and the
//! harness's recording proxy (both read an upstream they do not control):
//!
//! - [`whole_lines`] re-cuts a byte stream at line ends, so an SSE parser sees every line once,
//!   whole. Without it a long `data:` line arriving in many pieces is re-parsed from its start on
//!   every piece (`eventsource-stream` keeps the incomplete line and parses it again), which is
//!   quadratic. Only the new bytes of each piece are searched for a line end, so the cut is
//!   linear; a line longer than the limit is a [`LineTooLong`] error and ends the stream.
//! - [`decoded_lines`] is [`whole_lines`] read as a browser reads an event stream: every SSE line
//!   end (CRLF, CR alone, LF) made LF first, each whole line decoded as `TextDecoder` does (an
//!   invalid UTF-8 sequence becomes U+FFFD instead of failing the stream).
//! - [`read_capped`] reads a body up to a limit and says whether that was all of it; the rest is
//!   never received into memory (dropping the source closes the connection).
//!
//! Both read only when polled and own their source, so dropping them stops the read at once.
//!
//! [`upstream`] is the rest of that shared HTTP edge, in `reqwest`'s terms: the loopback rule,
//! the redirect policy, the transport failures' classes and a failed answer read within a bound.
//!
//! [`eventstream`] is AWS's binary event stream (Bedrock Converse's streamed answers): the one
//! frame reader, and the frame writers the model server answers with.

use std::pin::Pin;

use futures::{Stream, StreamExt};

pub mod eventstream;
pub mod upstream;

/// A line longer than the limit, with no line end in sight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a stream line is longer than {limit} bytes")]
pub struct LineTooLong {
    /// The limit, in bytes.
    pub limit: usize,
}

/// The byte stream re-cut at line ends: each item ends with `\n` (but the last, which is what
/// followed the last line end), so a parser sees each line once. A line longer than `limit`
/// bytes ends the stream with [`LineTooLong`] (through `E::from`); a source error ends it with
/// that error.
pub fn whole_lines<S, B, E>(bytes: S, limit: usize) -> impl Stream<Item = Result<Vec<u8>, E>>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: From<LineTooLong> + Send + 'static,
{
    struct Lines<S> {
        source: Pin<Box<S>>,
        /// Bytes after the last line end seen (no `\n` among them).
        partial: Vec<u8>,
        ended: bool,
    }
    let state = Lines {
        source: Box::pin(bytes),
        partial: Vec::new(),
        ended: false,
    };
    futures::stream::unfold(state, move |mut state| async move {
        loop {
            if state.ended {
                return None;
            }
            match state.source.next().await {
                Some(Ok(piece)) => {
                    let piece = piece.as_ref();
                    match piece.iter().rposition(|&byte| byte == b'\n') {
                        Some(end) => {
                            let mut lines = std::mem::take(&mut state.partial);
                            lines.extend_from_slice(&piece[..=end]);
                            state.partial.extend_from_slice(&piece[end + 1..]);
                            return Some((Ok(lines), state));
                        }
                        None if state.partial.len() + piece.len() > limit => {
                            state.ended = true;
                            return Some((Err(E::from(LineTooLong { limit })), state));
                        }
                        None => state.partial.extend_from_slice(piece),
                    }
                }
                Some(Err(err)) => {
                    state.ended = true;
                    return Some((Err(err), state));
                }
                None => {
                    state.ended = true;
                    let rest = std::mem::take(&mut state.partial);
                    if !rest.is_empty() {
                        return Some((Ok(rest), state));
                    }
                    return None;
                }
            }
        }
    })
}

/// The byte stream with every line end SSE knows (CRLF, a CR alone, LF) as one LF, as
/// `eventsource-parser` and a browser's `EventSource` split lines. A CRLF split over two pieces
/// is still one line end: whether the last byte seen was a CR is carried to the next piece.
fn lf_line_ends<S, B, E>(bytes: S) -> impl Stream<Item = Result<Vec<u8>, E>>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let mut after_cr = false;
    bytes.map(move |piece| {
        piece.map(|piece| {
            let piece = piece.as_ref();
            let mut out = Vec::with_capacity(piece.len());
            for &byte in piece {
                match byte {
                    b'\n' if after_cr => {}
                    b'\r' => out.push(b'\n'),
                    _ => out.push(byte),
                }
                after_cr = byte == b'\r';
            }
            out
        })
    })
}

/// [`whole_lines`] of the stream with its line ends made LF (CRLF and a CR alone), each item
/// decoded as UTF-8 the way `TextDecoder` (`fatal: false`) decodes it: an invalid sequence is
/// U+FFFD, the rest read on. Each item is whole lines, so no character is split between two.
pub fn decoded_lines<S, B, E>(bytes: S, limit: usize) -> impl Stream<Item = Result<String, E>>
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: From<LineTooLong> + Send + 'static,
{
    whole_lines(lf_line_ends(bytes), limit).map(|lines| {
        lines.map(|lines| {
            String::from_utf8(lines)
                .unwrap_or_else(|err| String::from_utf8_lossy(err.as_bytes()).into_owned())
        })
    })
}

/// A body's first `limit` bytes, and whether that is all of it. Reading stops at the limit.
pub async fn read_capped<S, B, E>(bytes: S, limit: usize) -> Result<(Vec<u8>, bool), E>
where
    S: Stream<Item = Result<B, E>>,
    B: AsRef<[u8]>,
{
    let mut bytes = std::pin::pin!(bytes);
    let mut body = Vec::new();
    while let Some(chunk) = bytes.next().await {
        let chunk = chunk?;
        let chunk = chunk.as_ref();
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, false));
        }
        body.extend_from_slice(chunk);
    }
    Ok((body, true))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    enum Failed {
        TooLong(LineTooLong),
    }

    impl From<LineTooLong> for Failed {
        fn from(err: LineTooLong) -> Failed {
            Failed::TooLong(err)
        }
    }

    fn pieces(parts: &[&str]) -> impl Stream<Item = Result<Vec<u8>, Failed>> + Send + 'static {
        let owned: Vec<Result<Vec<u8>, Failed>> =
            parts.iter().map(|p| Ok(p.as_bytes().to_vec())).collect();
        futures::stream::iter(owned)
    }

    fn cut(parts: &[&str], limit: usize) -> Vec<Result<String, Failed>> {
        futures::executor::block_on(
            whole_lines(pieces(parts), limit)
                .map(|item| item.map(|bytes| String::from_utf8(bytes).expect("utf-8")))
                .collect(),
        )
    }

    #[test]
    fn lines_are_cut_at_their_ends_and_a_line_past_the_limit_ends_the_stream() {
        /// The pieces, the limit, and the lines (or the error) they are cut into.
        type Case<'a> = (&'a [&'a str], usize, Vec<Result<&'a str, Failed>>);
        let cases: [Case; 4] = [
            (
                &["da", "ta: a\ndata", ": b\n\n"],
                64,
                vec![Ok("data: a\n"), Ok("data: b\n\n")],
            ),
            (&["no end"], 64, vec![Ok("no end")]),
            (
                &["0123", "4567", "89"],
                8,
                vec![Err(Failed::TooLong(LineTooLong { limit: 8 }))],
            ),
            (
                &["ok\n0123", "45678"],
                8,
                vec![Ok("ok\n"), Err(Failed::TooLong(LineTooLong { limit: 8 }))],
            ),
        ];
        for (parts, limit, expected) in cases {
            let expected: Vec<Result<String, Failed>> = expected
                .into_iter()
                .map(|item| item.map(str::to_owned))
                .collect();
            assert_eq!(cut(parts, limit), expected, "{parts:?} at {limit}");
        }
    }

    #[test]
    fn a_capped_read_stops_at_the_limit_and_says_so() {
        let cases: [(&[&str], usize, (&str, bool)); 3] = [
            (&["ab", "cd"], 8, ("abcd", true)),
            (&["ab", "cdef", "gh"], 4, ("abcd", false)),
            (&["abcd"], 4, ("abcd", true)),
        ];
        for (parts, limit, (body, whole)) in cases {
            let read =
                futures::executor::block_on(read_capped(pieces(parts), limit)).expect("read");
            assert_eq!(
                read,
                (body.as_bytes().to_vec(), whole),
                "{parts:?} at {limit}"
            );
        }
    }

    /// Issue 45, finding 11: CR alone and CRLF end lines as LF does, a CRLF split over two
    /// pieces is one line end, and an invalid UTF-8 byte is U+FFFD while a character split over
    /// two pieces is kept whole.
    #[test]
    fn lines_are_decoded_as_a_browser_reads_an_event_stream() {
        /// (case, the pieces, the text read)
        type Case<'a> = (&'a str, &'a [&'a [u8]], &'a str);
        let cases: [Case; 5] = [
            ("LF", &[b"data: a\n\n"], "data: a\n\n"),
            (
                "CR alone",
                &[b"data: a\r\rdata: b\r\r"],
                "data: a\n\ndata: b\n\n",
            ),
            (
                "CRLF split",
                &[b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n"],
                "data: a\n\ndata: b\n\n",
            ),
            (
                "an invalid byte",
                &[b"data: a\xffb\n\n"],
                "data: a\u{fffd}b\n\n",
            ),
            (
                "a character split",
                &[b"data: caf\xc3", b"\xa9\n\n"],
                "data: caf\u{e9}\n\n",
            ),
        ];
        for (case, pieces, expected) in cases {
            let owned: Vec<Result<Vec<u8>, Failed>> =
                pieces.iter().map(|piece| Ok(piece.to_vec())).collect();
            let read: Result<Vec<String>, Failed> = futures::executor::block_on(
                decoded_lines(futures::stream::iter(owned), 64).collect::<Vec<_>>(),
            )
            .into_iter()
            .collect();
            assert_eq!(
                read.map(|lines| lines.concat()),
                Ok(expected.to_owned()),
                "{case}"
            );
        }
    }
}
