//! The `[message_limits]` checks: how large a model answer, a tool call's arguments and a user
//! message may be. Every step checkpoints and streams the state, so an unbounded message is
//! amplified by every later step; the limits keep one run proportionate to what a person can
//! read. Each check names the configuration key that sets it.

use futures::StreamExt;

use crate::messages::{Message, ToolCall};
use crate::models::{ErrorClass, EventStream, ModelError, StreamEvent};

/// The error type of a model answer over `message_limits.model_answer_bytes`.
pub const ANSWER_TOO_LARGE: &str = "ModelAnswerTooLarge";

/// The bytes a model answer adds: its text and the JSON of its tool calls' arguments.
pub fn answer_bytes(message: &Message) -> usize {
    message.text().len()
        + message
            .tool_calls
            .iter()
            .map(tool_call_args_bytes)
            .sum::<usize>()
}

/// The bytes of one tool call's arguments as JSON text.
pub fn tool_call_args_bytes(call: &ToolCall) -> usize {
    call.args.to_string().len()
}

/// Fails an answer over `limit` bytes (0: no limit). The failure is generic, so the LLM error
/// middleware does not retry it and answers with its fallback message.
pub fn check_answer(message: &Message, limit: usize) -> Result<(), ModelError> {
    let size = answer_bytes(message);
    if limit > 0 && size > limit {
        return Err(answer_too_large(size, limit));
    }
    Ok(())
}

/// Ends a model stream with an error as soon as its text and tool-call argument deltas pass
/// `limit` bytes (0: no limit), so an endless answer is neither buffered nor streamed whole.
pub fn limit_stream(events: EventStream, limit: usize) -> EventStream {
    if limit == 0 {
        return events;
    }
    let mut seen = 0_usize;
    let mut failed = false;
    Box::pin(events.filter_map(move |event| {
        let item = if failed {
            None
        } else {
            if let Ok(StreamEvent::TextDelta { delta } | StreamEvent::ToolcallDelta { delta, .. }) =
                &event
            {
                seen = seen.saturating_add(delta.len());
            }
            if seen > limit {
                failed = true;
                Some(Err(answer_too_large(seen, limit)))
            } else {
                Some(event)
            }
        };
        std::future::ready(item)
    }))
}

fn answer_too_large(size: usize, limit: usize) -> ModelError {
    ModelError::new(
        ANSWER_TOO_LARGE,
        format!(
            "the model answer has {size} bytes or more, over the limit of {limit} bytes \
             (message_limits.model_answer_bytes)"
        ),
    )
    .with_class(ErrorClass::Generic)
}

/// The tool error the model sees instead of a result when a call's arguments pass `limit`
/// bytes (0: no limit); `None` when the call may run.
pub fn tool_args_error(call: &ToolCall, limit: usize) -> Option<String> {
    let size = tool_call_args_bytes(call);
    (limit > 0 && size > limit).then(|| {
        format!(
            "Error: the arguments of {} are {size} bytes, over the limit of {limit} bytes \
             (message_limits.tool_call_args_bytes). Send less per call, for example by \
             splitting the content over several calls.",
            call.name
        )
    })
}

/// Why an input message is refused (`None` when it fits): its text passes `limit` bytes
/// (0: no limit).
pub fn user_message_error(message: &Message, limit: usize) -> Option<String> {
    let size = message.text().len();
    (limit > 0 && size > limit).then(|| {
        format!(
            "the message has {size} bytes, over the limit of {limit} bytes \
             (message_limits.user_message_bytes)"
        )
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn call(args: serde_json::Value) -> ToolCall {
        ToolCall {
            name: "write_file".into(),
            args,
            id: "call_1".into(),
        }
    }

    #[test]
    fn each_check_passes_at_its_limit_fails_above_it_and_zero_turns_it_off() {
        let answer = Message::ai("x".repeat(10), vec![call(json!({"c": "yyyy"}))]);
        let size = answer_bytes(&answer);
        assert_eq!(size, 10 + r#"{"c":"yyyy"}"#.len());
        let rows = [(size, true), (size - 1, false), (0, true)];
        for (limit, fits) in rows {
            assert_eq!(
                check_answer(&answer, limit).is_ok(),
                fits,
                "answer, limit {limit}"
            );
            let args = tool_call_args_bytes(&answer.tool_calls[0]);
            let args_limit = if limit == 0 {
                0
            } else {
                args - usize::from(!fits)
            };
            assert_eq!(
                tool_args_error(&answer.tool_calls[0], args_limit).is_none(),
                fits,
                "tool args, limit {args_limit}"
            );
            let human = Message::human("z".repeat(size));
            assert_eq!(
                user_message_error(&human, limit).is_none(),
                fits,
                "user, limit {limit}"
            );
        }
    }

    #[tokio::test]
    async fn a_stream_ends_with_an_error_once_its_deltas_pass_the_limit() {
        let deltas = ["abc", "def", "ghi"].map(|delta| {
            Ok(StreamEvent::TextDelta {
                delta: delta.into(),
            })
        });
        let events: EventStream = Box::pin(futures::stream::iter(deltas));
        let seen: Vec<_> = limit_stream(events, 5).collect().await;
        assert_eq!(seen.len(), 2, "{seen:?}");
        let err = seen[1]
            .as_ref()
            .expect_err("the second delta passes 5 bytes");
        assert_eq!(err.error_type, ANSWER_TOO_LARGE);
        assert!(err.message.contains("message_limits.model_answer_bytes"));
    }
}
