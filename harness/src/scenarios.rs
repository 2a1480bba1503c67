//! The scenarios whose fixtures ship in `fixtures/`, with the scripted replies of the
//! OpenAI-compatible stand-in that produced them (`cargo xtask fixtures stand-in`).

use replay_core::{Scenario, UiMode};
use serde_json::json;

use crate::stand_in::{Reply, STAND_IN_MODEL};

/// The write/read-file prompt of `docs/replay-and-fixtures.md` §2.2 (305 characters, one U+2014).
pub const WRITE_READ_FILE_PROMPT: &str = "Using your own file tools directly, create the file /mnt/user-data/outputs/note.txt with exactly this content: hi from replay. Then read that same file back and reply with its exact contents. Do NOT delegate to a subagent and do NOT use the task tool — do it yourself. Do not ask any clarifying questions.";

/// A scenario to record: what to drive and what the stand-in answers, in call order.
#[derive(Debug, Clone, PartialEq)]
pub struct StandInScenario {
    /// What to drive.
    pub scenario: Scenario,
    /// The stand-in's replies, one per model call (lead agent, title, suggestions, …).
    pub replies: Vec<Reply>,
}

fn tool(name: &str, args: serde_json::Value) -> Reply {
    Reply::ToolCalls(vec![(name.to_string(), args)])
}

fn text(content: &str) -> Reply {
    Reply::Text(content.to_string())
}

fn scenario(id: &str, mode: UiMode, prompt: &str) -> Scenario {
    Scenario {
        model: STAND_IN_MODEL.into(),
        ..Scenario::new(id, mode, prompt)
    }
}

/// Every shipped scenario.
pub fn shipped() -> Vec<StandInScenario> {
    let mut scenarios: Vec<StandInScenario> = UiMode::ALL
        .into_iter()
        .map(|mode| StandInScenario {
            scenario: scenario("write_read_file", mode, WRITE_READ_FILE_PROMPT),
            replies: vec![
                tool("write_file", json!({
                    "description": "Create the requested output file with exact content",
                    "path": "/mnt/user-data/outputs/note.txt",
                    "content": "hi from replay.",
                })),
                tool("read_file", json!({
                    "description": "Read the file back to confirm its contents",
                    "path": "/mnt/user-data/outputs/note.txt",
                })),
                text("hi from replay."),
                text("[\"Can you append a second line to the note?\", \"How do I download note.txt?\", \"What other files are in outputs?\"]"),
            ],
        })
        .collect();
    scenarios.push(StandInScenario {
        scenario: Scenario {
            followups: vec!["Now list the files in /mnt/user-data/outputs and tell me what you see.".into()],
            ..scenario(
                "two_run_thread",
                UiMode::Pro,
                "Write a shopping list with milk and eggs to /mnt/user-data/outputs/list.txt, then confirm in one sentence.",
            )
        },
        replies: vec![
            tool("write_file", json!({
                "description": "Save the shopping list",
                "path": "/mnt/user-data/outputs/list.txt",
                "content": "milk\neggs\n",
            })),
            text("I saved your shopping list to /mnt/user-data/outputs/list.txt."),
            // The web client asks for follow-ups after every run, not only after the last.
            text("[\"Read the list back\", \"Add bread to the list\", \"Where is the list saved?\"]"),
            tool("ls", json!({"description": "List the output folder", "path": "/mnt/user-data/outputs"})),
            text("The outputs folder holds one file: list.txt."),
            text("[\"Add bread to the list\", \"Read the list back\", \"Delete the list\"]"),
        ],
    });
    scenarios.push(StandInScenario {
        scenario: Scenario {
            gateway_config: Some(json!({"title": {"model_name": crate::adapter::hermetic::SCENARIO_MODEL}})),
            ..scenario("model_title", UiMode::Flash, "What is the capital of France? Answer in one word.")
        },
        replies: vec![
            text("Paris."),
            text("\"Capital of France\""),
            text("[\"What is the capital of Italy?\", \"How big is Paris?\", \"Tell me about France\"]"),
        ],
    });
    scenarios.push(StandInScenario {
        scenario: scenario("model_error", UiMode::Thinking, "Summarise the attached report in three bullet points."),
        replies: vec![
            Reply::Error {
                status: 400,
                message: "This model's maximum context length is 8192 tokens; the request asked for more.".into(),
            },
            text("[\"Can you try a shorter report?\", \"Which model should I use?\", \"Split the report\"]"),
        ],
    });
    scenarios
}
