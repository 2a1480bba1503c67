//! The `[message_limits]` checks: how large a model answer, a tool call's arguments and a user
//! message may be, how many tool calls one answer may run, and how many bytes of tool results
//! one tool step may add. Every step checkpoints and streams the state, so an unbounded message
//! is amplified by every later step; the limits keep one run proportionate to what a person can
//! read. Each check names the configuration key that sets it.
//!
//! **Every field counts** (docs/gateway-contract.md §11.3). An answer's size is not only its
//! text: its reasoning (`reasoning_content`), a `refusal`, the tool calls' names and ids, the
//! invalid tool calls and the provider metadata are all stored, streamed and sent back to the
//! model on every later call, so all of them count against `model_answer_bytes` (a 5 MB tool
//! name became 120 MB of requests when only the arguments counted). The tool step is bounded
//! by the number of calls run (`tool_calls_per_answer`) and by the bytes of results it adds
//! (`tool_result_bytes_per_step`): 2,000 `read_file` calls in one answer streamed 305 MB. A call
//! past either bound is not run, and the model sees a short tool error naming the key, so every
//! call still gets its answer.

use futures::StreamExt;
use model_wire::Event;
use serde_json::Value;

use crate::config::MessageLimitsConfig;
use crate::messages::{Message, ToolCall};
use crate::models::{ErrorClass, EventStream, ModelError, StreamEvent};
use crate::tools::ToolOutput;

/// The error type of a model answer over `message_limits.model_answer_bytes`.
pub const ANSWER_TOO_LARGE: &str = "ModelAnswerTooLarge";

/// The bytes a model answer adds: its content (the text, or the JSON of its blocks), every
/// tool call's name, id and JSON arguments, and the JSON of everything else it carries (the
/// invalid tool calls, `additional_kwargs` such as `reasoning_content` and `refusal`,
/// `response_metadata`, `usage_metadata`, its name and id).
pub fn answer_bytes(message: &Message) -> usize {
    let content = match &message.content {
        Value::String(text) => text.len(),
        other => json_bytes(other),
    };
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|call| call.name.len() + call.id.len() + tool_call_args_bytes(call))
        .sum();
    let extras: usize = message
        .invalid_tool_calls
        .iter()
        .chain(message.additional_kwargs.values())
        .chain(message.response_metadata.values())
        .chain(message.usage_metadata.iter())
        .map(json_bytes)
        .sum();
    let names = [&message.name, &message.id]
        .into_iter()
        .flatten()
        .map(String::len)
        .sum::<usize>();
    content + calls + extras + names
}

/// The bytes of `value` as JSON text; `null` counts nothing.
fn json_bytes(value: &Value) -> usize {
    match value {
        Value::Null => 0,
        Value::String(text) => text.len(),
        other => other.to_string().len(),
    }
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

/// Ends a model stream with an error as soon as what it streamed (text, reasoning, tool-call
/// names, ids and arguments) passes `limit` bytes (0: no limit), so an endless answer is neither
/// buffered nor streamed whole.
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
            seen = seen.saturating_add(event.as_ref().map_or(0, streamed_bytes));
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

/// The bytes of answer one stream event carries.
fn streamed_bytes(event: &StreamEvent) -> usize {
    match event {
        StreamEvent::Delta(
            Event::TextDelta { delta }
            | Event::ThinkingDelta { delta }
            | Event::ToolcallDelta { delta, .. },
        ) => delta.len(),
        StreamEvent::Delta(Event::ToolcallStart { id, name, .. }) => id.len() + name.len(),
        _ => 0,
    }
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

/// What one tool step may still run and add: `tool_calls_per_answer` calls and
/// `tool_result_bytes_per_step` bytes of results (0: no limit), besides each call's
/// `tool_call_args_bytes`.
#[derive(Debug, Clone)]
pub struct ToolStepBudget {
    limits: MessageLimitsConfig,
    /// Calls the answer made.
    answer_calls: usize,
    /// Calls seen so far in this step.
    calls: usize,
    /// Result bytes added so far.
    result_bytes: usize,
}

impl ToolStepBudget {
    /// The budget of a step answering `answer_calls` calls.
    pub fn new(limits: &MessageLimitsConfig, answer_calls: usize) -> ToolStepBudget {
        ToolStepBudget {
            limits: limits.clone(),
            answer_calls,
            calls: 0,
            result_bytes: 0,
        }
    }

    /// The next call, in order: the tool error the model sees instead of a result when it may
    /// not run (past the calls bound, the step's result bytes spent, or its arguments too
    /// large); `None` when it may.
    pub fn refusal(&mut self, call: &ToolCall) -> Option<String> {
        self.calls += 1;
        let calls_limit = self.limits.tool_calls_per_answer;
        if calls_limit > 0 && self.calls > calls_limit {
            return Some(format!(
                "Error: not run: the answer made {} tool calls, over the limit of {calls_limit} \
                 per answer (message_limits.tool_calls_per_answer). Make fewer calls at a time.",
                self.answer_calls
            ));
        }
        let bytes_limit = self.limits.tool_result_bytes_per_step;
        if bytes_limit > 0 && self.result_bytes >= bytes_limit {
            return Some(step_results_error(bytes_limit));
        }
        tool_args_error(call, self.limits.tool_call_args_bytes)
    }

    /// A call's result as the model sees it, with its status: the result itself while the
    /// step's results stay within `tool_result_bytes_per_step`, otherwise a tool error.
    /// A result over the budget loses its `additional_kwargs` with its text (a read mark for
    /// content the model never saw would open the read-before-write gate).
    pub fn result(&mut self, output: ToolOutput) -> (ToolOutput, &'static str) {
        let bytes_limit = self.limits.tool_result_bytes_per_step;
        let total = self.result_bytes.saturating_add(output.text.len());
        if bytes_limit > 0 && total > bytes_limit {
            // Spent: later calls of the step are not run.
            self.result_bytes = bytes_limit;
            return (
                ToolOutput::text(format!(
                    "Error: the result ({} bytes) would take this step's tool results over the \
                     limit of {bytes_limit} bytes (message_limits.tool_result_bytes_per_step). \
                     Ask for less at a time, for example a line range of a file.",
                    output.text.len()
                )),
                "error",
            );
        }
        self.result_bytes = total;
        (output, "success")
    }
}

fn step_results_error(limit: usize) -> String {
    format!(
        "Error: not run: this step's tool results reached the limit of {limit} bytes \
         (message_limits.tool_result_bytes_per_step). Ask for less at a time."
    )
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
        assert_eq!(
            size,
            10 + "write_file".len() + "call_1".len() + r#"{"c":"yyyy"}"#.len()
        );
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

    /// Finding 3 of issue 21: reasoning, a refusal and a tool call's name were not counted.
    #[test]
    fn amplification_every_field_of_an_answer_counts() {
        let plain = answer_bytes(&Message::ai("hi", vec![call(json!({}))]));
        let big = "r".repeat(1000);
        let mut reasoning = Message::ai("hi", vec![call(json!({}))]);
        reasoning
            .additional_kwargs
            .insert("reasoning_content".into(), json!(big));
        let mut refusal = Message::ai("hi", vec![call(json!({}))]);
        refusal
            .additional_kwargs
            .insert("refusal".into(), json!(big));
        let mut named = Message::ai("hi", vec![call(json!({}))]);
        named.tool_calls[0].name.push_str(&big);
        let mut blocks = Message::ai("hi", vec![call(json!({}))]);
        blocks.content =
            json!([{"type": "text", "text": "hi"}, {"type": "reasoning", "text": big}]);
        for (name, message) in [
            ("reasoning", reasoning),
            ("refusal", refusal),
            ("tool name", named),
            ("content blocks", blocks),
        ] {
            assert!(answer_bytes(&message) >= plain + 1000, "{name}");
        }
    }

    #[tokio::test]
    async fn amplification_a_stream_counts_reasoning_and_tool_names() {
        let events = [
            StreamEvent::Delta(Event::ThinkingDelta {
                delta: "abcd".into(),
            }),
            StreamEvent::Delta(Event::ToolcallStart {
                index: 0,
                id: "i".into(),
                name: "nnnn".into(),
            }),
        ]
        .map(Ok);
        let events: EventStream = Box::pin(futures::stream::iter(events));
        let seen: Vec<_> = limit_stream(events, 6).collect().await;
        assert!(
            matches!(&seen[1], Err(err) if err.error_type == ANSWER_TOO_LARGE),
            "{seen:?}"
        );
    }

    /// Finding 3 of issue 21: the calls of one answer and the bytes of one step's results were
    /// unbounded. Past either bound a call gets a tool error naming the key instead of running.
    #[test]
    fn amplification_a_tool_step_is_bounded_in_calls_and_result_bytes() {
        let limits = MessageLimitsConfig {
            tool_calls_per_answer: 3,
            tool_result_bytes_per_step: 10,
            ..MessageLimitsConfig::default()
        };
        let mut budget = ToolStepBudget::new(&limits, 5);
        let call = call(json!({}));
        // (result of the call when it runs, what the model sees: `Ok` status or the key)
        let rows = [
            (Some("123456"), Ok("success")),
            (
                Some("12345"),
                Err("message_limits.tool_result_bytes_per_step"),
            ),
            (None, Err("message_limits.tool_result_bytes_per_step")),
            (None, Err("message_limits.tool_calls_per_answer")),
            (None, Err("message_limits.tool_calls_per_answer")),
        ];
        for (index, (result, expected)) in rows.into_iter().enumerate() {
            let seen = match budget.refusal(&call) {
                Some(refused) => Err(refused),
                None => {
                    let output = ToolOutput::text(result.expect("runs").to_string());
                    let (output, status) = budget.result(output);
                    if status == "success" {
                        Ok(status)
                    } else {
                        Err(output.text)
                    }
                }
            };
            match (seen, expected) {
                (Ok(status), Ok(want)) => assert_eq!(status, want, "call {index}"),
                (Err(text), Err(key)) => assert!(text.contains(key), "call {index}: {text}"),
                (seen, _) => panic!("call {index}: {seen:?}"),
            }
        }
    }

    #[tokio::test]
    async fn a_stream_ends_with_an_error_once_its_deltas_pass_the_limit() {
        let deltas = ["abc", "def", "ghi"].map(|delta| {
            Ok(StreamEvent::Delta(Event::TextDelta {
                delta: delta.into(),
            }))
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
