//! The web client's flow in this workspace. The flow itself is the runner's: DeerFlow's chat
//! page as its web client drives it ([`keyless_runner::session::WebClient`], chosen by
//! [`crate::in_process::web_options`]), run through the one run API and judged by the one verdict
//! under the page's policy (every request 2xx, every run framed, no miss, every recorded turn
//! reached, the suggestions turn included; a suggestions prompt that drifts from the recorded
//! one is a miss although the route still answers `200`). This module adds what reads a page's
//! run here: the messages golden (values, not only shapes) and the lead agent's node order.

use serde_json::Value;

use keyless_runner::{RunTranscript, ScenarioRun};
use replay_core::GoldenStatus;

use crate::final_messages::{MESSAGES_GOLDEN_SUFFIX, messages_document as document_of};

/// The suffix of a web golden's stem: `golden/<fixture stem>.web.snap`.
pub use keyless_runner::goldens::WEB_GOLDEN_SUFFIX;

/// The messages golden's stem: `<fixture stem>.messages`.
pub fn messages_stem(run: &ScenarioRun) -> String {
    format!("{}{MESSAGES_GOLDEN_SUFFIX}", run.stem())
}

/// The messages golden document: the thread's messages in the last run's final `values`,
/// normalised ([`crate::final_messages::messages_document`]).
pub fn messages_document(run: &ScenarioRun) -> String {
    let values = (run.transcripts.last())
        .and_then(RunTranscript::final_values)
        .unwrap_or(Value::Null);
    document_of(&values)
}

/// The messages document against the committed `golden/<stem>.messages.snap`.
pub fn messages_status(run: &ScenarioRun) -> GoldenStatus {
    crate::workspace::golden_status(&messages_stem(run), &messages_document(run))
}

/// A four-mode run in the notation of `docs/gateway-contract.md` §5.4: one token per node or
/// message: `<Node>` for an `updates` frame of a node that wrote, `<Node>°` for one that wrote
/// nothing (`null`), `<human>`/`<tool>`/`<ai>` for a `messages` tuple of that type, and `<chunks>`
/// for a run of `AIMessageChunk` tuples. `values`, `custom`, `metadata` and `end` frames are
/// left out.
pub fn node_order(transcript: &RunTranscript) -> Vec<String> {
    let mut tokens: Vec<String> = Vec::new();
    for event in &transcript.events {
        let Some(data) = event.json() else {
            continue;
        };
        match event.event.as_str() {
            "updates" => {
                for (node, writes) in data.as_object().into_iter().flatten() {
                    let mark = if writes.is_null() { "°" } else { "" };
                    tokens.push(format!("{node}{mark}"));
                }
            }
            "messages" => {
                let token = match data[0]["type"].as_str() {
                    Some("AIMessageChunk") => "<chunks>".to_string(),
                    Some(kind) => format!("<{kind}>"),
                    None => "<?>".to_string(),
                };
                if !(token == "<chunks>" && tokens.last() == Some(&token)) {
                    tokens.push(token);
                }
            }
            _ => {}
        }
    }
    tokens
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::in_process::{InProcess, web_options};

    /// DeerFlow's lead-agent node order per mode, as its gateway streams the first run of these
    /// fixtures (`docs/gateway-contract.md` §5.4).
    const DEERFLOW_NODE_ORDER: [(&str, &str); 4] = [
        (
            "write_read_file.flash",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "write_read_file.pro",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent TodoMiddleware.before_agent° LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° TodoMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "write_read_file.ultra",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent TodoMiddleware.before_agent° LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° <tool> tools DurableContextMiddleware.before_model° TodoMiddleware.before_model° <chunks> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° SubagentLimitMiddleware.after_model° TitleMiddleware.after_model° TokenUsageMiddleware.after_model TodoMiddleware.after_model° DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° TodoMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
        (
            "model_error.thinking",
            "ThreadDataMiddleware.before_agent UploadsMiddleware.before_agent SandboxMiddleware.before_agent° <human> DynamicContextMiddleware.before_agent LoopDetectionMiddleware.before_agent° TerminalResponseMiddleware.before_agent° DurableContextMiddleware.before_model° <ai> model SafetyFinishReasonMiddleware.after_model° ModelLengthFinishReasonMiddleware.after_model° TerminalResponseMiddleware.after_model° LoopDetectionMiddleware.after_model° TitleMiddleware.after_model TokenUsageMiddleware.after_model DurableContextMiddleware.after_model° TerminalResponseMiddleware.after_agent° LoopDetectionMiddleware.after_agent° MemoryMiddleware.after_agent° SandboxMiddleware.after_agent°",
        ),
    ];

    #[test]
    fn the_first_run_streams_deerflows_node_order_per_mode() {
        let runtime = keyless_runner::runtime().expect("a runtime");
        for (stem, expected) in DEERFLOW_NODE_ORDER {
            let path = crate::workspace::fixtures_dir().join(format!("{stem}.json"));
            let run = runtime
                .block_on(keyless_runner::run(
                    &mut InProcess::default(),
                    &path,
                    &web_options(),
                ))
                .unwrap_or_else(|err| panic!("{stem}: {err}"));
            let actual = node_order(&run.transcripts[0]).join(" ");
            assert_eq!(actual, expected, "{stem}");
        }
    }
}
